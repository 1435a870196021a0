/* rules/chains.c: findings (chains.h), side by side. Evidence is gathered by
 * chains_evidence.c, one finding per cause is built by chains_findings.c;
 * here each finding gets what it owns of the account, its what-if, its
 * one-line chain and its JSON, and the findings are ordered by impact (the
 * time each cost), which also sets their severity. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "chains.h"
#include "chains_priv.h"
#include "fmt.h"

const char *const chains_cause_names[C_COUNT] = {
    "data_pipeline_starvation", "cpu_contention_tree", "cpu_contention_external",
    "page_alloc_pressure", "pageable_memcpy", "sync_per_iteration", "alloc_churn",
    "launch_bound", "io_wait", "gpu_bound", "host_bound", "worker_startup",
    "allocator_retries", "oom", "graph_recapture"};

/* The account's cause (account.h) behind each finding: its impact is the
 * time the account's buckets of that cause hold; AC_NONE: not a view of
 * the account (page_alloc_pressure, read from outlier calls; gpu_bound). */
const int chains_cause_acct[C_COUNT] = {
    [C_PIPE] = AC_PIPE,     [C_TREE] = AC_TREE,   [C_EXT] = AC_EXT,       [C_PAGE] = AC_NONE,
    [C_PAGEABLE] = AC_PAGEABLE, [C_SYNC] = AC_SYNC, [C_CHURN] = AC_CHURN, [C_LAUNCH] = AC_LAUNCH,
    [C_IO] = AC_IO,         [C_GPU] = AC_NONE,    [C_HOST] = AC_HOST,     [C_START] = AC_START,
    [C_RETRY] = AC_RETRY,   [C_OOM] = AC_NONE,    [C_RECAPTURE] = AC_RECAPTURE};


/* ---- assembly ---- */

/* Average system CPU busy (permille) over @p m's windows, -1 if none. */
static int run_busy(const struct model *m)
{
    uint64_t bx = 0, bn = 0;

    for (uint64_t i = 0; i < m->nsys; i++) {
        uint64_t d = m->sys[i].t_end_ns - m->sys[i].t_start_ns;
        bx += d * m->sys[i].busy_permille;
        bn += d;
    }
    return bn ? (int)(bx / bn) : -1;
}

/* The chain in one line, as the seed put it ("CPU 100 % -> 1,880 switches ->
 * cudaMemcpyAsync 301 ms -> cudaStreamSync 42 ms"): system, host, CUDA. */
static void chain_line(const struct ctx *x, const struct finding *f, char *buf, size_t n)
{
    const struct stats_row *r = f->row;
    int busy = f->tail && f->tail->busy_ns
                   ? (int)(f->tail->busy_x_ns / f->tail->busy_ns)
                   : run_busy(x->m);
    size_t l = 0;
    char a[32], b[32], name[96];

    buf[0] = '\0';
    if (busy >= 0)
        l += (size_t)snprintf(buf, n, "[SYSTEM] CPU %d %% busy%s -> ", (busy + 5) / 10,
                              f->tail && f->tail->busy_ns ? " during the slow calls" : "");
    if (l < n)
        l += (size_t)snprintf(buf + l, n - l, "[HOST] %s", f->host);
    if (!r && f->cuda[0] && l < n)
        snprintf(buf + l, n - l, " -> [CUDA] %s", f->cuda);
    if (r && l < n)
        snprintf(buf + l, n - l, " -> [CUDA] %s p99 %s (%.1fx p50 %s)",
                 stats_row_name(r, name, sizeof(name)), fmt_ns(a, 32, r->s.p99_ns),
                 r->s.p50_ns ? (double)r->s.p99_ns / (double)r->s.p50_ns : 0.0,
                 fmt_ns(b, 32, r->s.p50_ns));
}


/* The account's buckets the finding's impact is made of. */
static json_t *owns_json(int cause)
{
    json_t *arr = json_array();

    for (int b = 0; chains_cause_acct[cause] != AC_NONE && b < AB_COUNT; b++)
        if (account_owner(b) == chains_cause_acct[cause])
            json_array_append_new(arr, json_string(account_bucket_name(b)));
    return arr;
}

/* What a finding's share is of: the window less the once-a-run parts. */
static const char *share_of(const struct account *ac)
{
    int su = ac->ns[AB_SETUP] > 0, wd = ac->ns[AB_WIND_DOWN] > 0;

    return su && wd ? "the active window between the set-up and the wind-down"
           : su     ? "the active window after the set-up"
           : wd     ? "the active window before the wind-down"
                    : "the active window";
}

/* What the step would be without the cause: its owned time taken out of
 * each measured step (account_whatif), the mean (throughput) and the
 * median; else, with fewer than 3 measured steps, both shortened by the
 * impact's share of the window. null without steps. */
static json_t *whatif_json(const struct ctx *x, const struct finding *f)
{
    struct acct_whatif w = {0};
    uint64_t n = x->ac->nstep;
    const char *how = "steps";
    char a[32], b[32], c[32], d[32], line[200];

    if (chains_cause_acct[f->cause] == AC_NONE || n == 0)
        return json_null();
    if (!account_whatif(x->ac, chains_cause_acct[f->cause], &w)) {
        uint64_t *dur = malloc(n * sizeof(*dur)), sum = 0;
        double keep = x->wall_ns ? 1.0 - (double)f->impact_ns / (double)x->wall_ns : 1.0;
        if (dur == NULL)
            return json_null();
        steps_durations(x->ac->steps, dur);
        for (uint64_t i = 0; i < n; i++)
            sum += dur[i];
        w.p50_ns = dur[(n - 1) / 2];
        w.mean_ns = sum / n;
        free(dur);
        w.p50_fixed_ns = (uint64_t)((double)w.p50_ns * keep);
        w.mean_fixed_ns = (uint64_t)((double)w.mean_ns * keep);
        w.steps = n;
        how = "window";
    }
    double gain = w.mean_ns ? 100.0 * (double)(w.mean_ns - w.mean_fixed_ns) / (double)w.mean_ns : 0;
    snprintf(line, sizeof(line), "if fixed: step mean %s -> %s (-%.*f %%), p50 %s -> %s",
             fmt_ns(a, 32, w.mean_ns), fmt_ns(b, 32, w.mean_fixed_ns), gain < 10 ? 1 : 0, gain,
             fmt_ns(c, 32, w.p50_ns), fmt_ns(d, 32, w.p50_fixed_ns));
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:s}", "step_mean_ns", (json_int_t)w.mean_ns,
                     "step_mean_fixed_ns", (json_int_t)w.mean_fixed_ns, "step_p50_ns",
                     (json_int_t)w.p50_ns, "step_p50_fixed_ns", (json_int_t)w.p50_fixed_ns,
                     "steps", (json_int_t)w.steps, "from", how, "text", line);
}

static json_t *finding_json(const struct ctx *x, const struct finding *f)
{
    const struct model *m = x->m;
    const struct stats_row *r = f->row;
    char n[96] = "";
    json_t *ex = f->examples, *tl = f->timeline;

    if (ex == NULL) {
        const struct examples *e = f->tail ? &f->tail->ex[f->cause] : &x->run_ex[f->cause];
        if (f->tail == NULL && e->ns[0] == 0)
            e = &x->run_ex[f->cause];
        ex = chains_ex_json(m, e);
        if (tl == NULL && e->ns[0])
            tl = chains_tl_for_call(x, x->t, e->call[0]);
    } else {
        json_incref(ex);
    }
    if (tl == NULL)
        tl = json_array();
    else if (tl == f->timeline)
        json_incref(tl);
    if (r)
        stats_row_name(r, n, sizeof(n));
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:I, s:f, s:f, s:s, s:O, s:o, s:o, s:s}", "severity",
        chains_sev_name(f->cause == C_GPU   ? CHAIN_LOW
                        : f->cause == C_OOM ? CHAIN_HIGH /* whatever it cost: the run died */
                                            : chains_severity(f->impact_lo_ns, x->wall_ns)),
        "cause", chains_cause_names[f->cause], "api", n, "count", (json_int_t)(r ? r->s.count : 0),
        "p50_ns", (json_int_t)(r ? r->s.p50_ns : 0), "p99_ns", (json_int_t)(r ? r->s.p99_ns : 0),
        "ratio", r && r->s.p50_ns ? (double)r->s.p99_ns / (double)r->s.p50_ns : 0.0, "impact_ns",
        (json_int_t)f->impact_ns, "impact_pct", pct(f->impact_ns, x->wall_ns), "outlier_share",
        f->tail && f->tail->out_ns ? (double)f->tail->cause_ns[f->cause] / (double)f->tail->out_ns
                                   : 0.0,
        "summary", f->summary, "evidence", f->evidence, "timeline", tl, "examples", ex,
        "recommendation", f->rec);
    char line[768];
    chain_line(x, f, line, sizeof(line));
    json_object_set_new(o, "chain", json_string(line));
    json_object_set_new(o, "impact_lo_ns", json_integer((json_int_t)f->impact_lo_ns));
    json_object_set_new(o, "impact_hi_ns", json_integer((json_int_t)f->impact_hi_ns));
    json_object_set_new(o, "owns", owns_json(f->cause));
    json_object_set_new(o, "if_fixed", whatif_json(x, f));
    json_object_set_new(o, "share_of", json_string(share_of(x->ac)));
    if (f->detail)
        json_object_update(o, f->detail);
    return o;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct finding *x = *(const struct finding *const *)a;
    const struct finding *y = *(const struct finding *const *)b;
    if ((x->cause == C_OOM) != (y->cause == C_OOM)) /* an error the program saw comes first */
        return x->cause == C_OOM ? -1 : 1;
    if (x->impact_ns != y->impact_ns)
        return x->impact_ns > y->impact_ns ? -1 : 1;
    return x->cause - y->cause;
}

/* Causes below this share of the active window are not reported (gpu_bound aside). */
static int worth(const struct ctx *x, uint64_t ns)
{
    return ns > 0 && ns * 200 >= x->wall_ns; /* 0.5 % */
}

/* The account's GPU idle that the feeding threads' state explains (not
 * the set-up, GPU busy, a GPU-side gap or time outside every process);
 * with no GPU activity measured, the whole window. */
static uint64_t host_idle(const struct ctx *x)
{
    uint64_t idle = 0;

    if (x->ac == NULL || x->ac->source < GPU_SRC_SAMPLED)
        return x->wall_ns;
    for (int b = AB_HOST_CODE; b < AB_COUNT; b++)
        idle += b == AB_NO_CUDA ? 0 : x->ac->ns[b];
    return idle < x->wall_ns ? idle : x->wall_ns;
}

/* page_alloc_pressure is read from outlier calls, not the account: it
 * gets at most what the account's findings leave of the GPU's idle time
 * (a slow call while the GPU has work queued costs nothing), so that the
 * impacts never add up past it. */
static void page_cap(struct ctx *x)
{
    struct finding *f = &x->fnd[C_PAGE];
    uint64_t taken = 0, idle = host_idle(x);

    if (f->evidence == NULL)
        return;
    for (int k = 0; k < C_COUNT; k++)
        if (x->fnd[k].evidence && chains_cause_acct[k] != AC_NONE)
            taken += x->fnd[k].impact_ns;
    if (f->impact_ns + taken > idle)
        f->impact_ns = idle > taken ? idle - taken : 0;
    f->impact_lo_ns = f->impact_hi_ns = f->impact_ns;
}

/* What chains_gather() hands chains_finish(). */
struct chains_pre {
    struct ctx x;
    int ok; /* the outliers were gathered (else: no findings, as before) */
};

struct chains_pre *chains_gather(const struct model *m, struct stats_table *t,
                                 const struct feed *f, const struct gpu_truth *g,
                                 const struct memory *mem)
{
    struct chains_pre *p = calloc(1, sizeof(*p));
    struct ctx *x;

    if (p == NULL)
        return NULL;
    x = &p->x;
    x->m = m;
    x->t = t;
    x->f = f;
    x->g = g;
    x->mem = mem;
    if (chains_tails(x) < 0)
        return p;
    chains_run_host(x);
    chains_run_wake(x);
    for (int k = 0; k < 2; k++)
        qsort(x->holders[k], HOLDERS, sizeof(x->holders[k][0]), chains_cmp_holder);
    p->ok = 1;
    return p;
}

json_t *chains_build(const struct model *m, struct stats_table *t, const struct feed *f,
                     const struct gpu_truth *g, const struct account *ac,
                     const struct memory *mem, uint64_t wall_ns)
{
    return chains_finish(chains_gather(m, t, f, g, mem), ac, wall_ns);
}

json_t *chains_finish(struct chains_pre *p, const struct account *ac, uint64_t wall_ns)
{
    struct ctx *x = p ? &p->x : NULL;
    const struct model *m = x ? x->m : NULL;
    struct finding *order[C_COUNT];
    json_t *arr = json_array();
    int n = 0;

    if (x == NULL || arr == NULL || !p->ok)
        goto out;
    x->ac = ac;
    x->wall_ns = wall_ns;
    for (int k = 0; k < C_COUNT; k++) {
        static void (*const build[C_COUNT])(struct ctx *) = {
            [C_PIPE] = chains_f_pipe,   [C_TREE] = chains_f_tree,
            [C_EXT] = chains_f_ext,     [C_PAGEABLE] = chains_f_pageable,
            [C_SYNC] = chains_f_sync,   [C_CHURN] = chains_f_churn,
            [C_LAUNCH] = chains_f_launch, [C_IO] = chains_f_io,
            [C_HOST] = chains_f_host, [C_START] = chains_f_start,
            [C_RETRY] = chains_f_retry, [C_RECAPTURE] = chains_f_recapture};
        if (build[k] && worth(x, chains_owned(x, k, NULL, NULL)))
            build[k](x);
    }
    chains_f_page(x);
    page_cap(x);
    chains_f_oom(x);
    for (int k = 0; k < C_COUNT; k++) {
        struct finding *fd = &x->fnd[k];
        if (fd->evidence && k != C_OOM && !worth(x, fd->impact_ns)) {
            json_decref(fd->evidence);
            json_decref(fd->examples);
            json_decref(fd->timeline);
            json_decref(fd->detail);
            memset(fd, 0, sizeof(*fd));
        }
    }
    chains_f_gpu(x);
    for (int k = 0; k < C_COUNT; k++)
        if (x->fnd[k].evidence)
            order[n++] = &x->fnd[k];
    qsort(order, (size_t)n, sizeof(order[0]), cmp_finding);
    for (int i = 0; i < n && (m->opts.top <= 0 || i < m->opts.top); i++)
        json_array_append_new(arr, finding_json(x, order[i]));
out:
    if (x) {
        for (int k = 0; k < C_COUNT; k++) {
            json_decref(x->fnd[k].evidence);
            json_decref(x->fnd[k].examples);
            json_decref(x->fnd[k].timeline);
            json_decref(x->fnd[k].detail);
        }
        free(x->tails);
        free(x->pa_median);
        free(p);
    }
    return arr;
}

const char *chains_sev_name(int sev)
{
    return sev == CHAIN_HIGH ? "HIGH" : sev == CHAIN_MEDIUM ? "MEDIUM" : "LOW";
}

int chains_severity(uint64_t impact_ns, uint64_t wall_ns)
{
    if (wall_ns == 0)
        return CHAIN_LOW;
    if (impact_ns * 10 >= wall_ns)
        return CHAIN_HIGH;
    if (impact_ns * 50 >= wall_ns)
        return CHAIN_MEDIUM;
    return CHAIN_LOW;
}
