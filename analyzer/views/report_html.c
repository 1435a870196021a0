/* views/report_html.c: `cudaspy-analyze report --html OUT.html RUN`, one
 * self-contained page (inline CSS/JS/SVG from html_assets.h, no network).
 * Builds the page's data: analysis_json() for the summary, account, findings
 * and process table, plus what only this page needs, aggregated into fixed bins
 * so 10 M events cost the same page size as 10 k: log-scale latency
 * histograms per API (summary.c durations) and a timeline of CUDA activity,
 * off-CPU time and CPU use per process, and the latency per Python line
 * when calls have stacks. The JS in html_assets.h draws it. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "cudaspy/version.h"
#include "html_assets.h"
#include "model/memory.h"
#include "gate/summary.h"

#define PROG "cudaspy-analyze"
#define HTML_HIST_BINS 48   /* log-spaced latency bins per API */
#define HTML_HIST_APIS 12   /* histograms drawn, most total time first */
#define HTML_HIST_MIN 10    /* calls an API needs for a histogram */
#define HTML_TL_BINS 400    /* timeline columns */
#define HTML_TL_PROCS 32    /* processes tracked on the timeline */

/* ---- latency histograms ---- */

static json_t *hist_json(const struct summary_group *g)
{
    double lo = g->min_ns ? (double)g->min_ns : 1.0, hi = (double)g->max_ns;
    if (hi <= lo)
        hi = lo * 1.01;
    double step = log(hi / lo) / HTML_HIST_BINS;
    uint64_t counts[HTML_HIST_BINS] = {0};
    for (size_t i = 0; i < g->count; i++) {
        double v = g->all_ns[i] ? (double)g->all_ns[i] : 1.0;
        int b = (int)(log(v / lo) / step);
        counts[b < 0 ? 0 : b >= HTML_HIST_BINS ? HTML_HIST_BINS - 1 : b]++;
    }
    json_t *bins = json_array();
    for (int b = 0; b < HTML_HIST_BINS; b++)
        json_array_append_new(bins, json_integer((json_int_t)counts[b]));
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:o}", "api", g->api, "count",
                     (json_int_t)g->count, "p50_ns", (json_int_t)g->q_ns[SUMMARY_P50], "p99_ns",
                     (json_int_t)g->q_ns[SUMMARY_P99], "min_ns", (json_int_t)g->min_ns, "max_ns",
                     (json_int_t)g->max_ns, "lo_ns", lo, "hi_ns", hi, "bins", bins);
}

static uint64_t group_total(const struct summary_group *g)
{
    uint64_t t = 0;
    for (size_t i = 0; i < g->count; i++)
        t += g->all_ns[i];
    return t;
}

static int cmp_total(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return (x < y) - (x > y);
}

/* Histograms of the APIs with the most total time. */
static int hists_json(struct cs_run *r, const char *path, json_t **out, struct cs_err *err)
{
    struct summary *s;
    int rc = summary_from_run(r, path, 1, 1, &s, err);
    if (rc < 0)
        return rc;
    uint64_t(*order)[2] = calloc(s->n + 1, sizeof(*order));
    size_t n = 0;
    for (size_t i = 0; order && i < s->n; i++)
        if (!s->groups[i].kernel && s->groups[i].count >= HTML_HIST_MIN) {
            order[n][0] = group_total(&s->groups[i]);
            order[n++][1] = i;
        }
    if (!order) {
        summary_free(s);
        return cs_err_set(err, -ENOMEM, "out of memory");
    }
    qsort(order, n, sizeof(*order), cmp_total);
    *out = json_array();
    for (size_t i = 0; i < n && i < HTML_HIST_APIS; i++)
        json_array_append_new(*out, hist_json(&s->groups[order[i][1]]));
    free(order);
    summary_free(s);
    return 0;
}

/* ---- timeline ---- */

enum { TL_CUDA, TL_PREEMPT, TL_OFF, TL_NSERIES };
static const char *const tl_names[TL_NSERIES] = {"cuda", "preempted", "offcpu"};

struct tl_proc {
    uint32_t pid;
    double v[TL_NSERIES][HTML_TL_BINS]; /* ns in state per bin, summed over threads */
};

struct timeline {
    uint64_t t0, t1, bin_ns;
    double cpu[HTML_TL_BINS], cpu_w[HTML_TL_BINS]; /* busy permille * ns, ns */
    struct tl_proc *p;
    size_t np;
};

static struct tl_proc *tl_proc(struct timeline *t, uint32_t pid)
{
    for (size_t i = 0; i < t->np; i++)
        if (t->p[i].pid == pid)
            return &t->p[i];
    if (t->np == HTML_TL_PROCS)
        return NULL; /* more processes than rows: the table still has them all */
    t->p[t->np].pid = pid;
    return &t->p[t->np++];
}

/* Spread [s, e) over the bins of @p v, in ns. */
static void tl_add(const struct timeline *t, double *v, uint64_t s, uint64_t e, double w)
{
    if (s < t->t0)
        s = t->t0;
    if (e > t->t1)
        e = t->t1;
    while (s < e) {
        uint64_t b = (s - t->t0) / t->bin_ns, bend = t->t0 + (b + 1) * t->bin_ns;
        uint64_t x = e < bend ? e : bend;
        if (b < HTML_TL_BINS)
            v[b] += (double)(x - s) * w;
        s = x;
    }
}

static void tl_record(struct timeline *t, unsigned kind, const void *rec)
{
    if (kind == CS_REC_CUDA) {
        const struct cs_rec_cuda *c = rec;
        struct tl_proc *p = (c->flags & (CS_CF_NESTED | CS_CF_TRACER)) ? NULL : tl_proc(t, c->pid);
        if (p)
            tl_add(t, p->v[TL_CUDA], c->t_enter_ns, c->t_exit_ns, 1);
    } else if (kind == CS_REC_OFFCPU) {
        const struct cs_rec_offcpu *o = rec;
        struct tl_proc *p = tl_proc(t, o->pid);
        if (p)
            tl_add(t, p->v[o->cls == CS_OFF_PREEMPT ? TL_PREEMPT : TL_OFF], o->t_start_ns,
                   o->t_end_ns, 1);
    } else if (kind == CS_REC_SYSWIN) {
        const struct cs_rec_syswin *w = rec;
        tl_add(t, t->cpu, w->t_start_ns, w->t_end_ns, w->busy_permille / 10.0);
        tl_add(t, t->cpu_w, w->t_start_ns, w->t_end_ns, 1);
    }
}

static int tl_scan(struct timeline *t, struct cs_run *r, unsigned kind, struct cs_err *err)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(r, kind, t->t0, t->t1, &cur);
    if (rc < 0)
        return cs_err_set(err, rc, "cannot read records (%s)", cs_strerror(rc));
    while ((rc = cs_cursor_next(cur, &h, &recs, err)) == 1)
        for (uint32_t i = 0; h->kind == kind && i < h->n; i++)
            tl_record(t, kind, (const char *)recs + (size_t)i * h->rec_size);
    cs_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

static json_t *series_json(const double *v, double scale)
{
    json_t *a = json_array();
    for (int b = 0; b < HTML_TL_BINS; b++)
        json_array_append_new(a, json_real(round(v[b] * scale * 1000.0) / 1000.0));
    return a;
}

static json_t *tl_json(const struct timeline *t, struct cs_run *r)
{
    json_t *procs = json_array(), *cpu = json_array();
    for (int b = 0; b < HTML_TL_BINS; b++)
        json_array_append_new(cpu, t->cpu_w[b] > 0 ? json_real(round(t->cpu[b] / t->cpu_w[b]))
                                                    : json_null());
    for (size_t i = 0; i < t->np; i++) {
        json_t *o = json_object();
        size_t n;
        const struct cs_proc *pr = cs_run_procs(r, &n);
        const char *comm = "?";
        for (size_t k = 0; k < n; k++)
            if (pr[k].pid == t->p[i].pid)
                comm = pr[k].comm;
        json_object_set_new(o, "pid", json_integer(t->p[i].pid));
        json_object_set_new(o, "comm", json_string(comm));
        for (int s = 0; s < TL_NSERIES; s++) /* average threads in the state */
            json_object_set_new(o, tl_names[s], series_json(t->p[i].v[s], 1.0 / (double)t->bin_ns));
        json_array_append_new(procs, o);
    }
    return json_pack("{s:I, s:I, s:i, s:o, s:o}", "dur_ns", (json_int_t)(t->t1 - t->t0), "bin_ns",
                     (json_int_t)t->bin_ns, "nbins", HTML_TL_BINS, "cpu_busy", cpu, "procs",
                     procs);
}

/* The GPU busy lane: per bin, the busiest GPU's share of the covered
 * time (null: no coverage in the bin), and where it comes from. */
static json_t *gpu_lane(const struct analysis *a, const struct timeline *t)
{
    double v[HTML_TL_BINS];
    const char *src = analysis_gpu_bins(a, 0, 0, t->t0, t->t1, HTML_TL_BINS, v);
    json_t *arr = json_array();

    for (int b = 0; b < HTML_TL_BINS; b++)
        json_array_append_new(arr, v[b] < 0 ? json_null() : json_real(round(v[b] * 1000.0) / 10.0));
    return json_pack("{s:s, s:o}", "source", src, "busy_pct", arr);
}

static int timeline_json(const struct analysis *a, struct cs_run *r, uint64_t t0, json_t **out,
                         struct cs_err *err)
{
    static const unsigned kinds[] = {CS_REC_CUDA, CS_REC_OFFCPU, CS_REC_SYSWIN};
    struct timeline *t = calloc(1, sizeof(*t));
    struct tl_proc *p = calloc(HTML_TL_PROCS, sizeof(*p));
    int rc = (t && p) ? 0 : cs_err_set(err, -ENOMEM, "out of memory");
    if (rc == 0) {
        t->p = p;
        t->t0 = t0;
        t->t1 = cs_run_meta_u64(r, "t_end_ns", 0);
        if (t->t1 <= t0)
            t->t1 = t0 + 1000000000ull;
        t->bin_ns = (t->t1 - t0 + HTML_TL_BINS - 1) / HTML_TL_BINS;
    }
    for (size_t k = 0; rc == 0 && k < sizeof(kinds) / sizeof(kinds[0]); k++)
        rc = tl_scan(t, r, kinds[k], err);
    if (rc == 0 && (*out = tl_json(t, r)) != NULL)
        json_object_set_new(*out, "gpu", gpu_lane(a, t));
    free(p);
    free(t);
    return rc;
}

/* ---- device memory ---- */

#define HTML_MEM_POINTS 2000 /* points drawn per process and GPU, at most */

/* Per process and GPU: the "memory" row of the JSON, with its held bytes
 * over time as [t_ns, bytes] points (every k-th, the peak kept). */
static json_t *memory_page_json(const struct analysis *a)
{
    const struct memory *mm = analysis_memory(a);
    json_t *rows = json_array(), *j = analysis_json(a);
    json_t *procs = json_object_get(json_object_get(j, "memory"), "processes");
    uint64_t t0 = analysis_t0(a, 0);

    for (size_t i = 0; i < mm->ntr; i++) {
        const struct mem_track *t = &mm->tr[i];
        json_t *row = json_deep_copy(json_array_get(procs, i)), *pts = json_array();
        size_t k = t->npt / HTML_MEM_POINTS + 1;
        for (size_t p = 0; p < t->npt; p++) {
            uint64_t at = t->pt[p].t_ns > t0 ? t->pt[p].t_ns - t0 : 0;
            if (p % k == 0 || t->pt[p].t_ns == t->peak_ns || p == t->npt - 1)
                json_array_append_new(pts, json_pack("[I, I]", (json_int_t)at,
                                                     (json_int_t)t->pt[p].held_bytes));
        }
        json_object_set_new(row, "points", pts);
        json_array_append_new(rows, row);
    }
    json_decref(j);
    return rows;
}

/* ---- page ---- */

static json_t *meta_json(struct cs_run *r, const char *path)
{
    static const char *const keys[] = {"host", "cmdline", "sampler_tier", "sampler_tier_reason",
                                       "clean_shutdown", "cuda_dropped", "host_lost",
                                       "tool_version"};
    json_t *o = json_object();
    json_object_set_new(o, "file", json_string(path));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v = cs_run_meta(r, keys[i]);
        if (v)
            json_object_set_new(o, keys[i], json_string(v));
    }
    return o;
}

/* The JSON inside <script type="application/json">: '<' only occurs in
 * strings, where \u003c is the same character, so "</script>" and "<!--"
 * can never end the block. */
static void put_script_json(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '<')
            fputs("\\u003c", f);
        else
            fputc(*s, f);
}

static int write_page(FILE *f, json_t *data)
{
    char *txt = json_dumps(data, JSON_COMPACT);
    if (!txt)
        return -ENOMEM;
    fputs(html_head, f);
    fputs("<script type=\"application/json\" id=\"cudaspy-data\">", f);
    put_script_json(f, txt);
    fputs("</script>\n", f);
    fputs(html_tail, f);
    free(txt);
    return ferror(f) ? -EIO : 0;
}

static int build_data(struct analysis *a, const char *path, json_t **out, struct cs_err *err)
{
    struct cs_run *r = analysis_run(a, 0);
    json_t *hists = NULL, *tl = NULL;
    int rc = hists_json(r, path, &hists, err);
    if (rc == 0)
        rc = timeline_json(a, r, analysis_t0(a, 0), &tl, err);
    if (rc < 0) {
        json_decref(hists);
        return rc;
    }
    *out = json_pack("{s:s, s:o, s:o, s:o, s:o}", "generator", "cudaspy " CS_VERSION, "meta",
                     meta_json(r, path), "analysis", analysis_json(a), "hist", hists, "timeline",
                     tl);
    if (*out == NULL)
        return cs_err_set(err, -ENOMEM, "out of memory");
    json_t *mem = memory_page_json(a);
    if (json_array_size(mem)) /* only for runs that allocate device memory */
        json_object_set(*out, "memory", mem);
    json_decref(mem);
    json_t *py = analysis_pylines(a); /* only for runs with stacks: the page is otherwise as it was */
    if (json_array_size(json_object_get(py, "rows")))
        json_object_set(*out, "pylines", py);
    json_decref(py);
    return 0;
}

static const char html_usage[] =
    "Usage: cudaspy-analyze report --html OUT.html RUN\n"
    "\n"
    "Write one self-contained HTML page (no network access needed) with the run\n"
    "summary, the account of the CUDA-active window (a bar and a table of its\n"
    "buckets, which sum to the window), the findings, latency histograms of the\n"
    "12 APIs with the most time (at least 10 calls each), a timeline of GPU busy\n"
    "time (from GPU activity), CUDA activity against CPU use and off-CPU time per\n"
    "process, the steps, and the process table.\n"
    "\n"
    "Exit status: 0 ok, 2 usage or input error, 3 system failure.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy-analyze report --html report.html run.lmdb\n";

static int usage_error(const char *what)
{
    return cmd_usage_error("report", what);
}

static int html_parse(int argc, char **argv, const char **out, const char **run)
{
    static const struct option lo[] = {{"html", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (opt == 'o')
            *out = optarg;
        else if (opt == 'h')
            return fputs(html_usage, stdout) < 0 ? 3 : -1;
        else
            return usage_error(optopt ? "option needs an argument" : "unknown option for --html");
    }
    if (!*out)
        return usage_error("--html OUT.html is required");
    if (optind != argc - 1)
        return usage_error("expected exactly one RUN");
    *run = argv[optind];
    return 0;
}

static int exit_code(int rc) { return rc == -ENOMEM || rc == -EIO || rc == -ENOSPC ? 3 : 2; }

int html_main(int argc, char **argv)
{
    const char *out = NULL, *run = NULL;
    struct analysis_opts o;
    struct analysis *a = NULL;
    struct cs_err err = {{0}};
    json_t *data = NULL;
    int rc = html_parse(argc, argv, &out, &run);
    if (rc)
        return rc < 0 ? 0 : rc;
    analysis_opts_init(&o);
    rc = analysis_load(&run, 1, &o, &a, &err);
    if (rc == 0)
        rc = build_data(a, run, &data, &err);
    if (rc < 0) {
        fprintf(stderr, PROG ": %s%s%s\n", strncmp(err.msg, run, strlen(run)) ? run : "",
                strncmp(err.msg, run, strlen(run)) ? ": " : "", err.msg[0] ? err.msg : cs_strerror(rc));
        analysis_free(a);
        return exit_code(rc);
    }
    FILE *f = fopen(out, "w");
    rc = f ? write_page(f, data) : -errno;
    if (f && fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc < 0)
        fprintf(stderr, PROG ": %s: cannot write (%s)\n", out, strerror(-rc));
    json_decref(data);
    analysis_free(a);
    return rc < 0 ? 3 : 0;
}
