/* gate/gate.c: `cudaspy-analyze gate` and `cudaspy-analyze summary`. Evaluates
 * the p99-ratio gate over two summaries (summary.c builds them, bootstrap.c
 * supplies the confidence interval) and writes the verdict as a table, JSON,
 * JUnit XML and Markdown. Exit codes: 0 pass, 1 regression, 2 usage or
 * input error, 3 system failure. */
#include "gate.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "commands.h"

#define PROG "cudaspy-analyze"

static const char *const verdict_names[] = {"ok", "REGRESSED", "noisy", "too few calls",
                                            "missing in candidate", "new in candidate"};

const char *gate_verdict_name(enum gate_verdict v) { return verdict_names[v]; }

void gate_opts_init(struct gate_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->metric = SUMMARY_P99;
    o->max_ratio = 1.5;
    o->min_delta_us = 50;
    o->min_calls = 100;
    o->use_ci = 1;
    o->resamples = 1000;
    o->seed = 1;
}

/* ---- evaluation ---- */

static int api_selected(const struct gate_opts *o, const char *api)
{
    if (!o->apis)
        return 1;
    for (int i = 0; i < o->napis; i++)
        if (strcmp(o->apis[i], api) == 0)
            return 1;
    return 0;
}

static int group_selected(const struct gate_opts *o, const struct summary_group *g)
{
    return api_selected(o, g->api) && (!g->kernel || o->by_kernel);
}

/* Per-row seed: the same row gets the same resamples whatever else is selected. */
static uint64_t row_seed(uint64_t seed, const char *api, const char *kernel)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (const char *p = api; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (const char *p = kernel ? kernel : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

static int judge(struct gate_row *r, const struct summary_group *b, const struct summary_group *c,
                 const struct gate_opts *o)
{
    r->n_base = b->count;
    r->n_new = c->count;
    r->base_ns = b->q_ns[o->metric];
    r->new_ns = c->q_ns[o->metric];
    r->ratio = r->base_ns ? (double)r->new_ns / (double)r->base_ns : (r->new_ns ? INFINITY : 1.0);
    if (b->count < o->min_calls || c->count < o->min_calls) {
        r->verdict = GATE_FEW_CALLS;
        return 0;
    }
    if (o->use_ci) {
        int rc = bootstrap_ratio_ci(b->samples_ns, b->nsamples, c->samples_ns, c->nsamples,
                                    summary_q_prob(o->metric), o->resamples,
                                    row_seed(o->seed, r->api, r->kernel), 0.95, &r->ci_lo,
                                    &r->ci_hi);
        if (rc < 0)
            return rc;
        r->has_ci = 1;
    }
    double delta_us = ((double)r->new_ns - (double)r->base_ns) / 1000.0;
    if (!(r->ratio > o->max_ratio && delta_us > o->min_delta_us))
        r->verdict = GATE_OK;
    else if (r->has_ci && r->ci_lo <= 1.0)
        r->verdict = GATE_NOISY;
    else
        r->verdict = GATE_REGRESSED;
    return 0;
}

static int add_row(struct gate_row *rows, size_t *n, const struct summary_group *b,
                   const struct summary_group *c, const struct gate_opts *o)
{
    struct gate_row *r = &rows[(*n)++];
    memset(r, 0, sizeof(*r));
    const struct summary_group *g = b ? b : c;
    r->api = g->api;
    r->kernel = g->kernel;
    if (b && c)
        return judge(r, b, c, o);
    r->verdict = b ? GATE_ONLY_BASE : GATE_ONLY_NEW;
    r->n_base = b ? b->count : 0;
    r->n_new = c ? c->count : 0;
    r->base_ns = b ? b->q_ns[o->metric] : 0;
    r->new_ns = c ? c->q_ns[o->metric] : 0;
    return 0;
}

int gate_eval(const struct summary *base, const struct summary *cand, const struct gate_opts *o,
              struct gate_row **rows_out, size_t *n_out)
{
    struct gate_row *rows = calloc(base->n + cand->n + 1, sizeof(*rows));
    size_t n = 0;
    int rc = rows ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < base->n; i++) {
        const struct summary_group *b = &base->groups[i];
        if (group_selected(o, b))
            rc = add_row(rows, &n, b, summary_find(cand, b->api, b->kernel), o);
    }
    for (size_t i = 0; rc == 0 && i < cand->n; i++) {
        const struct summary_group *c = &cand->groups[i];
        if (group_selected(o, c) && !summary_find(base, c->api, c->kernel))
            rc = add_row(rows, &n, NULL, c, o);
    }
    if (rc < 0) {
        free(rows);
        return rc;
    }
    *rows_out = rows;
    *n_out = n;
    return 0;
}

/* ---- output ---- */

struct gate_result {
    const struct gate_opts *o;
    struct gate_row *rows;
    size_t n;
    size_t nfail, nfew, nnoisy;
};

static void row_label(const struct gate_row *r, char *buf, size_t len)
{
    if (r->kernel)
        snprintf(buf, len, "%s [%s]", r->api, r->kernel);
    else
        snprintf(buf, len, "%s", r->api);
}

static void row_note(const struct gate_result *g, const struct gate_row *r, char *buf, size_t len)
{
    const struct gate_opts *o = g->o;
    switch (r->verdict) {
    case GATE_FEW_CALLS:
        snprintf(buf, len, "not judged: %llu/%llu calls, need %llu on both sides",
                 (unsigned long long)r->n_base, (unsigned long long)r->n_new,
                 (unsigned long long)o->min_calls);
        break;
    case GATE_NOISY:
        snprintf(buf, len, "over thresholds but 95%% CI [%.2f, %.2f] includes 1", r->ci_lo,
                 r->ci_hi);
        break;
    case GATE_REGRESSED:
        snprintf(buf, len, "%s %.2fx baseline (+%.1f us), limit %.2fx and +%.1f us",
                 summary_q_name(o->metric), r->ratio,
                 ((double)r->new_ns - (double)r->base_ns) / 1000.0, o->max_ratio,
                 o->min_delta_us);
        break;
    default:
        buf[0] = '\0';
    }
}

static void fmt_ci(const struct gate_row *r, char *buf, size_t len)
{
    if (r->has_ci)
        snprintf(buf, len, "[%.2f, %.2f]", r->ci_lo, r->ci_hi);
    else
        snprintf(buf, len, "-");
}

static void print_table(const struct gate_result *g, FILE *f)
{
    const struct gate_opts *o = g->o;
    char label[512], ci[64], note[256];
    int w = 24;
    for (size_t i = 0; i < g->n; i++) {
        row_label(&g->rows[i], label, sizeof(label));
        if ((int)strlen(label) > w)
            w = (int)strlen(label);
    }
    fprintf(f, "%-*s %9s %9s %12s %12s %7s  %-14s %s\n", w, "API", "base n", "new n", "base us",
            "new us", "ratio", "95% CI", "verdict");
    for (size_t i = 0; i < g->n; i++) {
        const struct gate_row *r = &g->rows[i];
        row_label(r, label, sizeof(label));
        fmt_ci(r, ci, sizeof(ci));
        row_note(g, r, note, sizeof(note));
        fprintf(f, "%-*s %9llu %9llu %12.1f %12.1f %6.2fx  %-14s %s%s%s\n", w, label,
                (unsigned long long)r->n_base, (unsigned long long)r->n_new, r->base_ns / 1000.0,
                r->new_ns / 1000.0, r->ratio, ci, gate_verdict_name(r->verdict),
                note[0] ? ": " : "", note);
    }
    fprintf(f, "gate: %s: %zu compared on %s, %zu regressed, %zu noisy, %zu with too few calls "
               "(limits: ratio %.2f, +%.1f us, %llu calls)\n",
            g->nfail ? "FAIL" : "pass", g->n, summary_q_name(o->metric), g->nfail, g->nnoisy,
            g->nfew, o->max_ratio, o->min_delta_us, (unsigned long long)o->min_calls);
}

static json_t *row_json(const struct gate_result *g, const struct gate_row *r)
{
    char note[256];
    row_note(g, r, note, sizeof(note));
    json_t *o = json_object();
    json_object_set_new(o, "api", json_string(r->api));
    json_object_set_new(o, "kernel", r->kernel ? json_string(r->kernel) : json_null());
    json_object_set_new(o, "base_calls", json_integer((json_int_t)r->n_base));
    json_object_set_new(o, "new_calls", json_integer((json_int_t)r->n_new));
    json_object_set_new(o, "base_ns", json_integer((json_int_t)r->base_ns));
    json_object_set_new(o, "new_ns", json_integer((json_int_t)r->new_ns));
    json_object_set_new(o, "ratio", isfinite(r->ratio) ? json_real(r->ratio) : json_null());
    json_object_set_new(o, "ci", r->has_ci ? json_pack("[f,f]", r->ci_lo, r->ci_hi) : json_null());
    json_object_set_new(o, "verdict", json_string(gate_verdict_name(r->verdict)));
    json_object_set_new(o, "failed", json_boolean(r->verdict == GATE_REGRESSED));
    json_object_set_new(o, "note", json_string(note));
    return o;
}

static json_t *result_json(const struct gate_result *g)
{
    const struct gate_opts *o = g->o;
    json_t *rows = json_array();
    for (size_t i = 0; i < g->n; i++)
        json_array_append_new(rows, row_json(g, &g->rows[i]));
    return json_pack("{s:s, s:s, s:{s:f, s:f, s:I, s:b, s:i, s:I}, s:I, s:I, s:I, s:o}",
                     "verdict", g->nfail ? "fail" : "pass", "metric", summary_q_name(o->metric),
                     "limits", "max_ratio", o->max_ratio, "min_delta_us", o->min_delta_us,
                     "min_calls", (json_int_t)o->min_calls, "ci", o->use_ci, "resamples",
                     (int)o->resamples, "seed", (json_int_t)o->seed, "regressed",
                     (json_int_t)g->nfail, "noisy", (json_int_t)g->nnoisy, "too_few_calls",
                     (json_int_t)g->nfew, "rows", rows);
}

static void xml_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                fputc(*s, f);
        }
    }
}

static void write_junit(const struct gate_result *g, FILE *f)
{
    char label[512], note[256];
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites>\n<testsuite name=\"cudaspy-gate\" tests=\"%zu\" failures=\"%zu\" "
               "skipped=\"%zu\">\n", g->n, g->nfail, g->nfew);
    for (size_t i = 0; i < g->n; i++) {
        const struct gate_row *r = &g->rows[i];
        row_label(r, label, sizeof(label));
        row_note(g, r, note, sizeof(note));
        fprintf(f, "  <testcase classname=\"cudaspy.gate\" name=\"");
        xml_escape(f, label);
        fprintf(f, " %s\">", summary_q_name(g->o->metric));
        if (r->verdict == GATE_REGRESSED || r->verdict == GATE_FEW_CALLS) {
            fprintf(f, r->verdict == GATE_REGRESSED ? "<failure message=\"" : "<skipped message=\"");
            xml_escape(f, note);
            fprintf(f, "\"/>");
        }
        fprintf(f, "</testcase>\n");
    }
    fprintf(f, "</testsuite>\n</testsuites>\n");
}

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '|')
            fputs("\\|", f);
        else if (*s != '`' && *s != '\n')
            fputc(*s, f);
}

static void write_markdown(const struct gate_result *g, FILE *f)
{
    const char *m = summary_q_name(g->o->metric);
    char label[512], ci[64], note[256];
    fprintf(f, "### cudaspy gate: %s\n\n", g->nfail ? "FAIL" : "pass");
    fprintf(f, "%zu compared on %s: %zu regressed, %zu noisy, %zu with too few calls. "
               "Limits: ratio > %.2f and > +%.1f us, at least %llu calls.\n\n",
            g->n, m, g->nfail, g->nnoisy, g->nfew, g->o->max_ratio, g->o->min_delta_us,
            (unsigned long long)g->o->min_calls);
    fprintf(f, "| API | base n | new n | base %s (us) | new %s (us) | ratio | 95%% CI | verdict |\n",
            m, m);
    fprintf(f, "|---|---:|---:|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < g->n; i++) {
        const struct gate_row *r = &g->rows[i];
        row_label(r, label, sizeof(label));
        fmt_ci(r, ci, sizeof(ci));
        row_note(g, r, note, sizeof(note));
        fprintf(f, "| `");
        md_cell(f, label);
        fprintf(f, "` | %llu | %llu | %.1f | %.1f | %.2fx | %s | %s%s%s |\n",
                (unsigned long long)r->n_base, (unsigned long long)r->n_new, r->base_ns / 1000.0,
                r->new_ns / 1000.0, r->ratio, ci,
                r->verdict == GATE_REGRESSED ? "**REGRESSED**" : gate_verdict_name(r->verdict),
                note[0] ? ": " : "", note);
    }
}

/* Write with @p fn into @p path. @return 0 or 3 (after printing why) */
static int write_file(const char *path, const struct gate_result *g,
                      void (*fn)(const struct gate_result *, FILE *))
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, PROG ": %s: cannot create (%s)\n", path, strerror(errno));
        return 3;
    }
    fn(g, f);
    if (fclose(f) != 0) {
        fprintf(stderr, PROG ": %s: write failed (%s)\n", path, strerror(errno));
        return 3;
    }
    return 0;
}

/* ---- command line ---- */

static const char gate_usage[] =
    "Usage: cudaspy-analyze gate --baseline BASE [options] RUN\n"
    "\n"
    "Compare the per-API latency of RUN against BASE and fail on tail regressions.\n"
    "BASE and RUN are run files or summaries saved by `cudaspy-analyze summary --save`.\n"
    "An API regresses when its metric grows by more than --max-p99-ratio AND by more\n"
    "than --min-delta-us, both runs have --min-calls calls, and the 95% bootstrap\n"
    "confidence interval of the ratio excludes 1.\n"
    "\n"
    "Options:\n"
    "  --baseline BASE       baseline run file or saved summary (required)\n"
    "  --metric STAT         p50, p90, p99 (default) or p99.9\n"
    "  --max-p99-ratio R     fail above new/base ratio R (default 1.5)\n"
    "  --min-delta-us D      ... and above an increase of D microseconds (default 50)\n"
    "  --min-calls N         judge only APIs with N calls on both sides (default 100)\n"
    "  --api NAME[,NAME]     only these APIs (repeatable; an unknown name is an error)\n"
    "  --by-kernel           also one row per (API, kernel name)\n"
    "  --no-ci               no bootstrap; fail on the thresholds alone\n"
    "  --resamples N         bootstrap resamples (default 1000)\n"
    "  --seed S              bootstrap seed (default 1)\n"
    "  --json                JSON verdict on stdout instead of the table\n"
    "  --junit FILE          also write JUnit XML (one testcase per API)\n"
    "  --markdown FILE       also write a Markdown table (for a CI step summary)\n"
    "\n"
    "Exit status: 0 pass, 1 regression, 2 usage or input error (missing, corrupt or\n"
    "wrong-version run file or summary), 3 system failure.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy-analyze summary --save base.json base.lmdb\n"
    "  cudaspy-analyze gate --baseline base.json --markdown gate.md new.lmdb\n"
    "  cudaspy-analyze gate --baseline base.lmdb --api cuStreamSynchronize --metric p99.9 new.lmdb\n";

static const char summary_usage[] =
    "Usage: cudaspy-analyze summary [--save FILE] [--samples N] RUN\n"
    "\n"
    "Write the latency summary of RUN (per API and kernel: call count, exact\n"
    "p50/p90/p99/p99.9 and N down-sampled durations, default 1000) as JSON, to\n"
    "FILE or stdout. `gate --baseline FILE` reads it; the format is in docs/ci.md.\n"
    "\n"
    "Exit status: 0 ok, 2 usage or input error, 3 system failure.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy-analyze summary --save base.json base.lmdb\n";

static int usage_error(const char *cmd, const char *what)
{
    fprintf(stderr, PROG ": %s: %s\nTry '" PROG " %s --help'\n", cmd, what, cmd);
    return 2;
}

static int parse_num(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return (errno || end == s || *end || *v < 0) ? -1 : 0;
}

/* Split comma lists of --api into @p list (strings borrowed from argv, edited in place). */
static int add_apis(char *arg, const char ***list, int *n)
{
    for (char *save, *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char **l = realloc(*list, (*n + 1) * sizeof(**list));
        if (!l)
            return -ENOMEM;
        l[(*n)++] = t;
        *list = l;
    }
    return 0;
}

enum { OPT_BASE = 256, OPT_METRIC, OPT_RATIO, OPT_DELTA, OPT_CALLS, OPT_API, OPT_BYK, OPT_NOCI,
       OPT_RES, OPT_SEED, OPT_JSON, OPT_JUNIT, OPT_MD, OPT_SAVE, OPT_SAMPLES, OPT_HELP };

static const struct option gate_longopts[] = {
    {"baseline", required_argument, 0, OPT_BASE},  {"metric", required_argument, 0, OPT_METRIC},
    {"max-p99-ratio", required_argument, 0, OPT_RATIO},
    {"max-ratio", required_argument, 0, OPT_RATIO},
    {"min-delta-us", required_argument, 0, OPT_DELTA},
    {"min-calls", required_argument, 0, OPT_CALLS}, {"api", required_argument, 0, OPT_API},
    {"by-kernel", no_argument, 0, OPT_BYK},         {"no-ci", no_argument, 0, OPT_NOCI},
    {"resamples", required_argument, 0, OPT_RES},   {"seed", required_argument, 0, OPT_SEED},
    {"json", no_argument, 0, OPT_JSON},             {"junit", required_argument, 0, OPT_JUNIT},
    {"markdown", required_argument, 0, OPT_MD},     {"samples", required_argument, 0, OPT_SAMPLES},
    {"help", no_argument, 0, OPT_HELP},             {0, 0, 0, 0}};

struct gate_cli {
    struct gate_opts o;
    const char **apis;
    const char *baseline, *run, *junit, *markdown;
    int json, help;
    size_t samples;
};

/* One option into @p c. @return 0 or 2 after a usage message */
static int gate_opt(struct gate_cli *c, int opt, char *arg)
{
    double v;
    switch (opt) {
    case OPT_BASE: c->baseline = arg; return 0;
    case OPT_METRIC:
        if ((c->o.metric = summary_q_parse(arg)) < 0)
            return usage_error("gate", "--metric: expected p50, p90, p99 or p99.9");
        return 0;
    case OPT_RATIO:
        if (parse_num(arg, &c->o.max_ratio) < 0)
            return usage_error("gate", "--max-p99-ratio: expected a positive number");
        return 0;
    case OPT_DELTA:
        if (parse_num(arg, &c->o.min_delta_us) < 0)
            return usage_error("gate", "--min-delta-us: expected a number of microseconds");
        return 0;
    case OPT_CALLS:
    case OPT_RES:
    case OPT_SEED:
    case OPT_SAMPLES:
        /* 2^53: past it a double holds no exact whole number, and casting
         * one past UINT64_MAX (or UINT_MAX for resamples) is undefined */
        if (parse_num(arg, &v) < 0 || v != floor(v) || v > 9007199254740992.0 ||
            (opt == OPT_RES && (v < 10 || v > UINT_MAX)) || (opt == OPT_SAMPLES && v < 1))
            return usage_error("gate", "expected a whole number (resamples >= 10, samples >= 1)");
        if (opt == OPT_CALLS)
            c->o.min_calls = (uint64_t)v;
        else if (opt == OPT_RES)
            c->o.resamples = (unsigned)v;
        else if (opt == OPT_SEED)
            c->o.seed = (uint64_t)v;
        else
            c->samples = (size_t)v;
        return 0;
    case OPT_API:
        return add_apis(arg, &c->apis, &c->o.napis) < 0 ? 3 : 0;
    case OPT_BYK: c->o.by_kernel = 1; return 0;
    case OPT_NOCI: c->o.use_ci = 0; return 0;
    case OPT_JSON: c->json = 1; return 0;
    case OPT_JUNIT: c->junit = arg; return 0;
    case OPT_MD: c->markdown = arg; return 0;
    case OPT_HELP: c->help = 1; return 0;
    default: return usage_error("gate", "unknown option");
    }
}

static int gate_parse(struct gate_cli *c, int argc, char **argv)
{
    int opt, rc;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", gate_longopts, NULL)) != -1) {
        if (opt == 'h')
            opt = OPT_HELP;
        if (opt == '?' || opt == ':')
            return usage_error("gate", optopt ? "option needs an argument" : "unknown option");
        if ((rc = gate_opt(c, opt, optarg)) != 0)
            return rc;
    }
    if (c->help)
        return 0;
    c->o.apis = c->apis;
    if (!c->baseline)
        return usage_error("gate", "--baseline BASE is required");
    if (optind != argc - 1)
        return usage_error("gate", "expected exactly one RUN (run file or summary)");
    c->run = argv[optind];
    return 0;
}

/* Load @p path as a summary. @return 0, or an exit code after a message */
static int load_side(const char *path, size_t samples, struct summary **s)
{
    struct cs_err err = {{0}};
    int rc = summary_load(path, samples, s, &err);
    if (rc == 0)
        return 0;
    fprintf(stderr, PROG ": %s\n", err.msg[0] ? err.msg : cs_strerror(rc));
    return (rc == -ENOMEM || rc == -EIO) ? 3 : 2;
}

/* A misspelt --api must not pass silently. @return 0 or 2 after a message */
static int check_apis(const struct gate_opts *o, const struct summary *b, const struct summary *c)
{
    for (int i = 0; i < o->napis; i++) {
        if (summary_find(b, o->apis[i], NULL) || summary_find(c, o->apis[i], NULL))
            continue;
        fprintf(stderr, PROG ": gate: --api %s: no such API in either run\n", o->apis[i]);
        return 2;
    }
    return 0;
}

static void count_verdicts(struct gate_result *g)
{
    for (size_t i = 0; i < g->n; i++) {
        g->nfail += g->rows[i].verdict == GATE_REGRESSED;
        g->nfew += g->rows[i].verdict == GATE_FEW_CALLS;
        g->nnoisy += g->rows[i].verdict == GATE_NOISY;
    }
}

static int gate_report(const struct gate_cli *c, struct gate_result *g)
{
    int rc = 0;
    if (c->json) {
        json_t *j = result_json(g);
        if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) < 0)
            rc = 3;
        fputc('\n', stdout);
        json_decref(j);
    } else {
        print_table(g, stdout);
    }
    if (!rc && c->junit)
        rc = write_file(c->junit, g, write_junit);
    if (!rc && c->markdown)
        rc = write_file(c->markdown, g, write_markdown);
    if (!rc && g->nfail) {
        for (size_t i = 0; i < g->n; i++)
            if (g->rows[i].verdict == GATE_REGRESSED)
                fprintf(stderr, PROG ": gate: %s%s%s: %s regressed (%.1f -> %.1f us, %.2fx)\n",
                        g->rows[i].api, g->rows[i].kernel ? " " : "",
                        g->rows[i].kernel ? g->rows[i].kernel : "", summary_q_name(c->o.metric),
                        g->rows[i].base_ns / 1000.0, g->rows[i].new_ns / 1000.0, g->rows[i].ratio);
        rc = 1;
    }
    return rc;
}

int gate_main(int argc, char **argv)
{
    struct gate_cli c = {.samples = SUMMARY_SAMPLES_DEFAULT};
    gate_opts_init(&c.o);
    struct summary *base = NULL, *cand = NULL;
    struct gate_result g = {.o = &c.o};
    int rc = gate_parse(&c, argc, argv);
    if (rc == 0 && c.help) {
        fputs(gate_usage, stdout);
        goto out;
    }
    if (rc || (rc = load_side(c.baseline, c.samples, &base)) ||
        (rc = load_side(c.run, c.samples, &cand)) || (rc = check_apis(&c.o, base, cand)))
        goto out;
    if (gate_eval(base, cand, &c.o, &g.rows, &g.n) < 0) {
        fprintf(stderr, PROG ": gate: out of memory\n");
        rc = 3;
        goto out;
    }
    count_verdicts(&g);
    rc = gate_report(&c, &g);
out:
    free(g.rows);
    summary_free(base);
    summary_free(cand);
    free(c.apis);
    return rc;
}

static int summary_parse(struct gate_cli *c, const char **save, int argc, char **argv)
{
    static const struct option lo[] = {{"save", required_argument, 0, OPT_SAVE},
                                       {"samples", required_argument, 0, OPT_SAMPLES},
                                       {"help", no_argument, 0, OPT_HELP},
                                       {0, 0, 0, 0}};
    int opt, rc;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (opt == OPT_SAVE) {
            *save = optarg;
            continue;
        }
        if (opt == '?' || opt == ':')
            return usage_error("summary", optopt ? "option needs an argument" : "unknown option");
        if ((rc = gate_opt(c, opt == 'h' ? OPT_HELP : opt, optarg)) != 0)
            return rc;
    }
    if (!c->help && optind != argc - 1)
        return usage_error("summary", "expected exactly one RUN");
    c->run = c->help ? NULL : argv[optind];
    return 0;
}

int summary_main(int argc, char **argv)
{
    struct gate_cli c = {.samples = SUMMARY_SAMPLES_DEFAULT};
    const char *save = NULL;
    struct summary *s = NULL;
    json_t *j = NULL;
    int rc = summary_parse(&c, &save, argc, argv);
    if (rc == 0 && c.help) {
        fputs(summary_usage, stdout);
        return 0;
    }
    if (rc || (rc = load_side(c.run, c.samples, &s)))
        goto out;
    if (!(j = summary_to_json(s))) {
        rc = 3;
        goto out;
    }
    if (save ? json_dump_file(j, save, JSON_COMPACT) < 0 : json_dumpf(j, stdout, JSON_COMPACT) < 0) {
        fprintf(stderr, PROG ": %s: cannot write summary (%s)\n", save ? save : "stdout",
                strerror(errno));
        rc = 3;
    } else if (!save) {
        fputc('\n', stdout);
    }
out:
    json_decref(j);
    summary_free(s);
    free(c.apis);
    return rc;
}
