/* gate/gate.c: `cudaspy-analyze gate` and `cudaspy-analyze summary`. Evaluates
 * the per-API p99-ratio gate over two summaries (summary.c builds them,
 * measure.c adds the run part, bootstrap.c supplies the confidence
 * interval), takes the run criteria from criteria.c, and writes the verdict
 * as a table, JSON, JUnit XML and Markdown. Exit codes: 0 pass, 1
 * regression, 2 usage or input error, 3 system failure. */
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
#include "measure.h"

#define PROG "cudaspy-analyze"

static const char *const verdict_names[] = {"ok",
                                            "REGRESSED",
                                            "noisy",
                                            "too few calls",
                                            "missing in candidate",
                                            "new in candidate",
                                            "not judged"};

const char *gate_verdict_name(enum gate_verdict v) { return verdict_names[v]; }

/* ---- evaluation ---- */

static int group_selected(const struct gate_opts *o, const struct summary_group *g)
{
    return gate_api_selected(o, g->api) && (!g->kernel || o->by_kernel);
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
    int rc = gate_judge_quantile(b->samples_ns, b->nsamples, c->samples_ns, c->nsamples,
                                 summary_q_prob(o->metric), r->ratio, o->max_ratio,
                                 gate_seed(o->seed, r->api, r->kernel), o, &r->ci_lo, &r->ci_hi,
                                 &r->has_ci, &r->m);
    if (rc < 0)
        return rc;
    double delta_us = ((double)r->new_ns - (double)r->base_ns) / 1000.0;
    r->verdict = delta_us > o->min_delta_us ? (enum gate_verdict)rc : GATE_OK;
    if (r->verdict == GATE_OK)
        r->m.noise = GATE_NOISE_NONE, r->m.settle_n = 0;
    return 0;
}

/* The row of (@p api, @p kernel): against the baseline of the median
 * --metric value, its limit widened by the baselines' spread. */
static int add_row(struct gate_row *rows, size_t *n, const struct summary *const *base,
                   size_t nb, const struct summary_group *c, const char *api, const char *kernel,
                   const struct gate_opts *o)
{
    struct gate_row *r = &rows[(*n)++];
    double v[GATE_MAX_BASES] = {0};
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < nb; i++) {
        const struct summary_group *g = summary_find(base[i], api, kernel);
        v[i] = g ? (double)g->q_ns[o->metric] : NAN;
    }
    int ib = gate_pick_base(v, nb, &r->m.spread, &r->m.nbase);
    const struct summary_group *b = ib < 0 ? NULL : summary_find(base[ib], api, kernel);
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

/* Is (@p api, @p kernel) in any of baselines 0..@p i - 1? */
static int row_seen(const struct summary *const *base, size_t i, const char *api,
                    const char *kernel)
{
    for (size_t j = 0; j < i; j++)
        if (summary_find(base[j], api, kernel))
            return 1;
    return 0;
}

int gate_eval_bases(const struct summary *const *base, size_t nb, const struct summary *cand,
                    const struct gate_opts *o, struct gate_row **rows_out, size_t *n_out)
{
    size_t cap = cand->n + 1, n = 0;
    for (size_t i = 0; i < nb; i++)
        cap += base[i]->n;
    struct gate_row *rows = nb >= 1 && nb <= GATE_MAX_BASES ? calloc(cap, sizeof(*rows)) : NULL;
    int rc = rows ? 0 : nb >= 1 && nb <= GATE_MAX_BASES ? -ENOMEM : -EINVAL;
    for (size_t side = 0; rc == 0 && side <= nb; side++) {
        const struct summary *s = side < nb ? base[side] : cand;
        for (size_t i = 0; rc == 0 && i < s->n; i++) {
            const struct summary_group *g = &s->groups[i];
            if (group_selected(o, g) && !row_seen(base, side < nb ? side : nb, g->api, g->kernel))
                rc = add_row(rows, &n, base, nb, summary_find(cand, g->api, g->kernel), g->api,
                             g->kernel, o);
        }
    }
    if (rc < 0) {
        free(rows);
        return rc;
    }
    *rows_out = rows;
    *n_out = n;
    return 0;
}

int gate_eval(const struct summary *base, const struct summary *cand, const struct gate_opts *o,
              struct gate_row **rows_out, size_t *n_out)
{
    return gate_eval_bases(&base, 1, cand, o, rows_out, n_out);
}

/* ---- output ---- */

struct gate_result {
    const struct gate_opts *o;
    size_t nbases;          /* baselines compared with */
    struct gate_row *rows;
    size_t n;
    size_t nfail, nfew, nnoisy;
    struct gate_crit *crit; /* run criteria (criteria.c) */
    size_t ncrit, ncfail, ncnoisy, ncskip;
};

static void write_junit_run(const struct gate_result *g, FILE *f);

/* What the baselines say of run-to-run noise, one line (issue 36). */
static const char *baselines_line(const struct gate_result *g)
{
    static char buf[200];
    if (g->nbases < 2)
        snprintf(buf, sizeof(buf), "baselines: 1: run-to-run noise unknown; keep %d baseline "
                 "runs (--baseline A B C D E, docs/gate.md)", GATE_KEEP_BASES);
    else
        snprintf(buf, sizeof(buf), "baselines: %zu: each limit widened by their run-to-run "
                 "spread", g->nbases);
    return buf;
}

static int gate_failed(const struct gate_result *g)
{
    return g->nfail || g->ncfail;
}

/* The compared values of criterion @p c, in its unit. */
static void crit_values(const struct gate_crit *c, char *b, char *n, size_t len)
{
    switch (c->kind) {
    case GATE_CK_API_TIME:
        snprintf(b, len, "%.1f%%", c->base_share * 100.0);
        snprintf(n, len, "%.1f%%", c->new_share * 100.0);
        break;
    case GATE_CK_GPU_IDLE:
        snprintf(b, len, "%.1f%%", c->base * 100.0);
        snprintf(n, len, "%.1f%%", c->cand * 100.0);
        break;
    case GATE_CK_FINDING:
        snprintf(b, len, "%s", c->name && c->base ? "HIGH" : "-");
        snprintf(n, len, "%s", c->name && c->cand ? "HIGH" : "-");
        break;
    default:
        snprintf(b, len, "%.3f ms", c->base / 1e6);
        snprintf(n, len, "%.3f ms", c->cand / 1e6);
    }
    if (c->verdict == GATE_NOT_JUDGED && c->kind != GATE_CK_STEP_P50 &&
        c->kind != GATE_CK_STEP_P99) { /* too few steps: their times still say something */
        snprintf(b, len, "-");
        snprintf(n, len, "-");
    }
}

static void crit_ratio(const struct gate_crit *c, char *buf, size_t len)
{
    if (c->kind == GATE_CK_FINDING || c->verdict == GATE_NOT_JUDGED)
        snprintf(buf, len, "-");
    else if (c->kind == GATE_CK_GPU_IDLE)
        snprintf(buf, len, "%+.0fpt",
                 fabs(c->cand - c->base) < 0.005 ? 0.0 : (c->cand - c->base) * 100.0);
    else if (!isfinite(c->ratio))
        snprintf(buf, len, "new");
    else
        snprintf(buf, len, "%.2fx", c->ratio);
}

static void crit_ci(const struct gate_crit *c, char *buf, size_t len)
{
    if (c->has_ci)
        snprintf(buf, len, "[%.2f, %.2f]", c->ci_lo, c->ci_hi);
    else
        snprintf(buf, len, "-");
}

static void print_criteria(const struct gate_result *g, FILE *f)
{
    char label[300], b[64], n[64], ratio[32], ci[64], note[300];
    int w = 24;
    for (size_t i = 0; i < g->ncrit; i++) {
        gate_crit_label(&g->crit[i], label, sizeof(label));
        if ((int)strlen(label) > w)
            w = (int)strlen(label);
    }
    fprintf(f, "%-*s %12s %12s %7s  %-14s %s\n", w, "criterion", "base", "new", "ratio",
            "95% CI", "verdict");
    for (size_t i = 0; i < g->ncrit; i++) {
        const struct gate_crit *c = &g->crit[i];
        gate_crit_label(c, label, sizeof(label));
        crit_values(c, b, n, sizeof(b));
        crit_ratio(c, ratio, sizeof(ratio));
        crit_ci(c, ci, sizeof(ci));
        gate_crit_note(c, g->o, note, sizeof(note));
        fprintf(f, "%-*s %12s %12s %7s  %-14s %s: %s\n", w, label, b, n, ratio, ci,
                gate_verdict_name(c->verdict), note);
    }
    fprintf(f, "run: %zu criteria, %zu regressed, %zu noisy, %zu not judged (limits: step time "
               "p50 %.2fx, p99 %.2fx; API time %.2fx and +%.1f%% of the window; GPU idle "
               "+%.0f points)\n\n",
            g->ncrit, g->ncfail, g->ncnoisy, g->ncskip, g->o->max_step_ratio,
            g->o->max_step_p99_ratio, g->o->max_api_ratio, g->o->min_api_share * 100.0,
            g->o->max_idle_rise * 100.0);
}

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
    case GATE_NOISY: {
        char why[200];
        snprintf(buf, len, "over thresholds; %s", gate_noise_note(&r->m, "calls", why,
                                                                  sizeof(why)));
        break;
    }
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
    if (g->ncrit)
        print_criteria(g, f);
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
            gate_failed(g) ? "FAIL" : "pass", g->n, summary_q_name(o->metric), g->nfail, g->nnoisy,
            g->nfew, o->max_ratio, o->min_delta_us, (unsigned long long)o->min_calls);
    fprintf(f, "%s\n", baselines_line(g));
}

static const char *const noise_names[] = {NULL, "interval", "bound", "spread", "few"};

/* "limit", "spread", "lower_bound" and "noise" of a judged row or criterion. */
static void margin_json(json_t *o, const struct gate_margin *m, int judged)
{
    if (!judged)
        return;
    json_object_set_new(o, "limit", isfinite(m->limit) ? json_real(m->limit) : json_null());
    json_object_set_new(o, "spread", isfinite(m->spread) ? json_real(m->spread) : json_null());
    json_object_set_new(o, "lower_bound", isfinite(m->lo) ? json_real(m->lo) : json_null());
    json_object_set_new(o, "noise", m->noise ? json_string(noise_names[m->noise]) : json_null());
    json_object_set_new(o, "settle_n", m->settle_n ? json_integer((json_int_t)m->settle_n)
                                                   : json_null());
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
    margin_json(o, &r->m, r->verdict != GATE_FEW_CALLS && r->verdict != GATE_ONLY_BASE &&
                              r->verdict != GATE_ONLY_NEW);
    return o;
}

static const char *const ckind_names[] = {"step_p50", "step_p99",  "time_per_launch",
                                          "api_time", "gpu_idle", "high_finding"};

json_t *gate_crit_json(const struct gate_crit *c, const struct gate_opts *opts)
{
    char note[300];
    json_t *o = json_object();
    json_object_set_new(o, "criterion", json_string(ckind_names[c->kind]));
    json_object_set_new(o, "name", c->name ? json_string(c->name) : json_null());
    json_object_set_new(o, "base", json_real(c->base));
    json_object_set_new(o, "new", json_real(c->cand));
    if (c->kind == GATE_CK_API_TIME) {
        json_object_set_new(o, "base_share", json_real(c->base_share));
        json_object_set_new(o, "new_share", json_real(c->new_share));
    }
    if (c->kind != GATE_CK_FINDING && c->kind != GATE_CK_GPU_IDLE) {
        json_object_set_new(o, "base_n", json_integer((json_int_t)c->n_base));
        json_object_set_new(o, "new_n", json_integer((json_int_t)c->n_new));
    }
    json_object_set_new(o, "ratio", isfinite(c->ratio) ? json_real(c->ratio) : json_null());
    json_object_set_new(o, "ci", c->has_ci ? json_pack("[f,f]", c->ci_lo, c->ci_hi) : json_null());
    json_object_set_new(o, "verdict", json_string(gate_verdict_name(c->verdict)));
    json_object_set_new(o, "failed", json_boolean(c->verdict == GATE_REGRESSED));
    json_object_set_new(o, "note", json_string(gate_crit_note(c, opts, note, sizeof(note))));
    margin_json(o, &c->m, c->verdict != GATE_NOT_JUDGED && c->kind != GATE_CK_FINDING &&
                              c->m.limit > 0);
    return o;
}

static json_t *result_json(const struct gate_result *g)
{
    const struct gate_opts *o = g->o;
    json_t *rows = json_array(), *crit = json_array(), *r;
    for (size_t i = 0; i < g->n; i++)
        json_array_append_new(rows, row_json(g, &g->rows[i]));
    for (size_t i = 0; i < g->ncrit; i++)
        json_array_append_new(crit, gate_crit_json(&g->crit[i], g->o));
    r = json_pack("{s:s, s:s, s:{s:f, s:f, s:I, s:b, s:i, s:I}, s:I, s:I, s:I, s:o}",
                     "verdict", gate_failed(g) ? "fail" : "pass", "metric",
                     summary_q_name(o->metric),
                     "limits", "max_ratio", o->max_ratio, "min_delta_us", o->min_delta_us,
                     "min_calls", (json_int_t)o->min_calls, "ci", o->use_ci, "resamples",
                     (int)o->resamples, "seed", (json_int_t)o->seed, "regressed",
                     (json_int_t)g->nfail, "noisy", (json_int_t)g->nnoisy, "too_few_calls",
                     (json_int_t)g->nfew, "rows", rows);
    json_t *lim = json_object_get(r, "limits");
    json_object_set_new(lim, "max_step_ratio", json_real(o->max_step_ratio));
    json_object_set_new(lim, "max_step_p99_ratio", json_real(o->max_step_p99_ratio));
    json_object_set_new(lim, "min_steps", json_integer((json_int_t)o->min_steps));
    json_object_set_new(lim, "max_api_ratio", json_real(o->max_api_ratio));
    json_object_set_new(lim, "min_api_share", json_real(o->min_api_share));
    json_object_set_new(lim, "max_idle_rise", json_real(o->max_idle_rise));
    json_object_set_new(r, "run_regressed", json_integer((json_int_t)g->ncfail));
    json_object_set_new(r, "baselines", json_integer((json_int_t)g->nbases));
    json_object_set_new(r, "criteria", crit);
    return r;
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
    fprintf(f, "</testsuite>\n");
    write_junit_run(g, f);
    fprintf(f, "</testsuites>\n");
}

/* The run criteria: a second testsuite, one testcase each. */
static void write_junit_run(const struct gate_result *g, FILE *f)
{
    char label[300], note[300];
    fprintf(f, "<testsuite name=\"cudaspy-gate-run\" tests=\"%zu\" failures=\"%zu\" "
               "skipped=\"%zu\">\n", g->ncrit, g->ncfail, g->ncskip);
    for (size_t i = 0; i < g->ncrit; i++) {
        const struct gate_crit *c = &g->crit[i];
        gate_crit_label(c, label, sizeof(label));
        gate_crit_note(c, g->o, note, sizeof(note));
        fprintf(f, "  <testcase classname=\"cudaspy.gate.run\" name=\"");
        xml_escape(f, label);
        fprintf(f, "\">");
        if (c->verdict == GATE_REGRESSED || c->verdict == GATE_NOT_JUDGED) {
            fprintf(f, c->verdict == GATE_REGRESSED ? "<failure message=\""
                                                     : "<skipped message=\"");
            xml_escape(f, note);
            fprintf(f, "\"/>");
        }
        fprintf(f, "</testcase>\n");
    }
    fprintf(f, "</testsuite>\n");
}

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '|')
            fputs("\\|", f);
        else if (*s != '`' && *s != '\n')
            fputc(*s, f);
}

/* The run criteria: one row each. */
static void write_markdown_run(const struct gate_result *g, FILE *f)
{
    char label[300], b[64], n[64], ratio[32], ci[64], note[300];
    fprintf(f, "Run: %zu criteria, %zu regressed, %zu noisy, %zu not judged.\n\n", g->ncrit,
            g->ncfail, g->ncnoisy, g->ncskip);
    fprintf(f, "| criterion | base | new | ratio | 95%% CI | verdict |\n");
    fprintf(f, "|---|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < g->ncrit; i++) {
        const struct gate_crit *c = &g->crit[i];
        crit_values(c, b, n, sizeof(b));
        crit_ratio(c, ratio, sizeof(ratio));
        crit_ci(c, ci, sizeof(ci));
        fprintf(f, "| ");
        md_cell(f, gate_crit_label(c, label, sizeof(label)));
        fprintf(f, " | %s | %s | %s | %s | %s: ", b, n, ratio, ci,
                c->verdict == GATE_REGRESSED ? "**REGRESSED**" : gate_verdict_name(c->verdict));
        md_cell(f, gate_crit_note(c, g->o, note, sizeof(note)));
        fprintf(f, " |\n");
    }
    fprintf(f, "\n");
}

static void write_markdown(const struct gate_result *g, FILE *f)
{
    const char *m = summary_q_name(g->o->metric);
    char label[512], ci[64], note[256];
    fprintf(f, "### cudaspy gate: %s\n\n%s\n\n", gate_failed(g) ? "FAIL" : "pass",
            baselines_line(g));
    if (g->ncrit)
        write_markdown_run(g, f);
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
    "Usage: cudaspy-analyze gate --baseline BASE [BASE...] [options] RUN\n"
    "\n"
    "Compare RUN against BASE and fail on regressions. BASE and RUN are run files\n"
    "or summaries saved by `cudaspy-analyze summary --save`. Each criterion\n"
    "regresses only when its ratio and the lower bound of the ratio's interval are\n"
    "past its limit; past the limit alone it reads `noisy` and passes. With several\n"
    "baselines (keep 5), each criterion compares with the median one and its limit\n"
    "is multiplied by their spread, largest / smallest. Criteria (docs/gate.md):\n"
    "  steps      step time p50 and p99 grow more than --max-step-ratio and\n"
    "             --max-step-p99-ratio; without steps on both sides, the\n"
    "             CUDA-active window per launch (p50 limit)\n"
    "  api-time   an API's total time, as a share of the CUDA-active window, grows\n"
    "             more than --max-api-ratio AND by more than --min-api-share\n"
    "             (APIs new in RUN included)\n"
    "  p99        an API's --metric grows by more than --max-p99-ratio AND by more\n"
    "             than --min-delta-us, and both runs have --min-calls calls\n"
    "  gpu-idle   the GPU's idle share rises more than --max-idle-rise points\n"
    "             (when both runs recorded GPU activity)\n"
    "  findings   a HIGH finding the baseline did not have\n"
    "A version 1 summary holds only what p99 needs: the others read `not judged`.\n"
    "\n"
    "Options:\n"
    "  --baseline BASE...    baseline run files or saved summaries (required; up to\n"
    "                        16: every argument before RUN is one)\n"
    "  --criteria LIST       judge only these (steps,api-time,p99,gpu-idle,findings)\n"
    "  --max-step-ratio R    step time p50 (or time per launch): fail above R (1.1)\n"
    "  --max-step-p99-ratio R  step time p99: fail above R (default 1.5)\n"
    "  --min-steps N         judge step time only with N steps on both sides (20)\n"
    "  --step NAME           a step is NVTX range NAME (none: no steps); default: a\n"
    "                        range that tiles the run, else inferred from the calls\n"
    "  --max-api-ratio R     API time: fail when its share grows more than R (1.5)\n"
    "  --min-api-share PCT   ... and by more than PCT % of the window (default 5)\n"
    "  --max-idle-rise PTS   GPU idle: fail on a rise above PTS points (default 10)\n"
    "  --metric STAT         p50, p90, p99 (default) or p99.9\n"
    "  --max-p99-ratio R     fail above new/base ratio R (default 1.5)\n"
    "  --min-delta-us D      ... and above an increase of D microseconds (default 50)\n"
    "  --min-calls N         judge only APIs with N calls on both sides (default 100)\n"
    "  --api NAME[,NAME]     only these APIs (repeatable; an unknown name is an error)\n"
    "  --by-kernel           also one row per (API, kernel name)\n"
    "  --no-ci               no intervals; fail on the ratios alone\n"
    "  --resamples N         bootstrap resamples (default 1000)\n"
    "  --seed S              bootstrap seed (default 1)\n"
    "  --json                JSON verdict on stdout instead of the table\n"
    "  --junit FILE          also write JUnit XML (a testcase per criterion and API)\n"
    "  --markdown FILE       also write a Markdown table (for a CI step summary)\n"
    "\n"
    "Exit status: 0 pass, 1 regression, 2 usage or input error (missing, corrupt or\n"
    "wrong-version run file or summary), 3 system failure.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy-analyze summary --save base.json base.lmdb\n"
    "  cudaspy-analyze gate --baseline base.json --markdown gate.md new.lmdb\n"
    "  cudaspy-analyze gate --baseline base.json --step train_step new.lmdb\n"
    "  cudaspy-analyze gate --baseline b1.json b2.json b3.json b4.json b5.json new.lmdb\n"
    "  cudaspy-analyze gate --baseline base.lmdb --api cuStreamSynchronize --metric p99.9 new.lmdb\n";

static const char summary_usage[] =
    "Usage: cudaspy-analyze summary [--save FILE] [--samples N] [--step NAME] RUN\n"
    "\n"
    "Write the gate summary of RUN as JSON (format version 2), to FILE or stdout:\n"
    "per API and kernel the call count, total time, exact p50/p90/p99/p99.9 and N\n"
    "down-sampled durations (default 1000); the CUDA-active window, the launches,\n"
    "the step times (exact p50/p99 and N samples), the GPU idle share and the HIGH\n"
    "findings. `gate --baseline FILE` reads it; the format is in docs/gate.md.\n"
    "--step NAME: a step is the NVTX range NAME (none: no steps), as for gate.\n"
    "\n"
    "Exit status: 0 ok, 2 usage or input error, 3 system failure.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy-analyze summary --save base.json base.lmdb\n";


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
       OPT_RES, OPT_SEED, OPT_JSON, OPT_JUNIT, OPT_MD, OPT_SAVE, OPT_SAMPLES, OPT_HELP,
       OPT_CRIT, OPT_STEP, OPT_STEP99, OPT_MINSTEPS, OPT_APIR, OPT_APISHARE, OPT_IDLE,
       OPT_STEPNAME };

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
    {"criteria", required_argument, 0, OPT_CRIT},
    {"max-step-ratio", required_argument, 0, OPT_STEP},
    {"max-step-p99-ratio", required_argument, 0, OPT_STEP99},
    {"min-steps", required_argument, 0, OPT_MINSTEPS},
    {"max-api-ratio", required_argument, 0, OPT_APIR},
    {"min-api-share", required_argument, 0, OPT_APISHARE},
    {"max-idle-rise", required_argument, 0, OPT_IDLE},
    {"step", required_argument, 0, OPT_STEPNAME},
    {"help", no_argument, 0, OPT_HELP},             {0, 0, 0, 0}};

struct gate_cli {
    struct gate_opts o;
    const char **apis;
    const char *bases[GATE_MAX_BASES]; /* --baseline, then RUNs before the last */
    size_t nbases;
    const char *run, *junit, *markdown, *step;
    int json, help;
    size_t samples;
};

/* --criteria LIST into @p bits. @return 0 or -1 (unknown name) */
static int parse_criteria(char *arg, unsigned *bits)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"steps", GATE_C_STEPS}, {"api-time", GATE_C_API_TIME}, {"p99", GATE_C_P99},
                 {"gpu-idle", GATE_C_GPU}, {"findings", GATE_C_FINDINGS}, {"all", GATE_C_ALL}};
    *bits = 0;
    for (char *save, *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < sizeof(names) / sizeof(names[0]) && strcmp(names[i].name, t) != 0)
            i++;
        if (i == sizeof(names) / sizeof(names[0]))
            return -1;
        *bits |= names[i].bit;
    }
    return *bits ? 0 : -1;
}

/* A run-criterion limit into @p c. @return 0 or 2 after a usage message */
static int gate_limit(struct gate_cli *c, int opt, char *arg)
{
    double v;
    if (opt == OPT_CRIT)
        return parse_criteria(arg, &c->o.criteria) < 0
                   ? cmd_usage_error("gate", "--criteria: expected a list of steps, api-time, "
                                         "p99, gpu-idle, findings")
                   : 0;
    if (parse_num(arg, &v) < 0 || (opt == OPT_MINSTEPS && (v != floor(v) || v > 1e15)))
        return cmd_usage_error("gate", "expected a positive number");
    switch (opt) {
    case OPT_STEP: c->o.max_step_ratio = v; break;
    case OPT_STEP99: c->o.max_step_p99_ratio = v; break;
    case OPT_MINSTEPS: c->o.min_steps = (uint64_t)v; break;
    case OPT_APIR: c->o.max_api_ratio = v; break;
    case OPT_APISHARE: c->o.min_api_share = v / 100.0; break;
    default: c->o.max_idle_rise = v / 100.0; break;
    }
    return 0;
}

/* One more baseline. @return 0 or 2 after a usage message */
static int add_base(struct gate_cli *c, const char *path)
{
    if (c->nbases == GATE_MAX_BASES)
        return cmd_usage_error("gate", "--baseline: at most 16 baselines");
    c->bases[c->nbases++] = path;
    return 0;
}

/* One option into @p c. @return 0 or 2 after a usage message */
static int gate_opt(struct gate_cli *c, int opt, char *arg)
{
    double v;
    if (opt >= OPT_CRIT && opt <= OPT_IDLE)
        return gate_limit(c, opt, arg);
    switch (opt) {
    case OPT_BASE: return add_base(c, arg);
    case OPT_METRIC:
        if ((c->o.metric = summary_q_parse(arg)) < 0)
            return cmd_usage_error("gate", "--metric: expected p50, p90, p99 or p99.9");
        return 0;
    case OPT_RATIO:
        if (parse_num(arg, &c->o.max_ratio) < 0)
            return cmd_usage_error("gate", "--max-p99-ratio: expected a positive number");
        return 0;
    case OPT_DELTA:
        if (parse_num(arg, &c->o.min_delta_us) < 0)
            return cmd_usage_error("gate", "--min-delta-us: expected a number of microseconds");
        return 0;
    case OPT_CALLS:
    case OPT_RES:
    case OPT_SEED:
    case OPT_SAMPLES:
        /* 2^53: past it a double holds no exact whole number, and casting
         * one past UINT64_MAX (or UINT_MAX for resamples) is undefined */
        if (parse_num(arg, &v) < 0 || v != floor(v) || v > 9007199254740992.0 ||
            (opt == OPT_RES && (v < 10 || v > UINT_MAX)) || (opt == OPT_SAMPLES && v < 1))
            return cmd_usage_error("gate", "expected a whole number (resamples >= 10, samples >= 1)");
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
    case OPT_STEPNAME: c->step = arg; return 0;
    case OPT_HELP: c->help = 1; return 0;
    default: return cmd_usage_error("gate", "unknown option");
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
            return cmd_usage_error("gate", optopt ? "option needs an argument" : "unknown option");
        if ((rc = gate_opt(c, opt, optarg)) != 0)
            return rc;
    }
    if (c->help)
        return 0;
    c->o.apis = c->apis;
    if (!c->nbases)
        return cmd_usage_error("gate", "--baseline BASE is required");
    if (optind > argc - 1)
        return cmd_usage_error("gate", "expected a RUN (run file or summary)");
    /* `--baseline A B C RUN`: the arguments before the last are baselines */
    for (rc = 0; rc == 0 && optind < argc - 1; optind++)
        rc = add_base(c, argv[optind]);
    c->run = argv[argc - 1];
    return rc;
}

/* Load @p path as a summary, with the run part of a run file when
 * @p measure. @return 0, or an exit code after a message */
static int load_side(const struct gate_cli *c, const char *path, int measure, struct summary **s)
{
    struct cs_err err = {{0}};
    int rc = summary_load(path, c->samples, s, &err);
    if (rc == 0 && measure && (*s)->is_run &&
        (rc = measure_run(path, c->samples, c->step, *s, &err)) < 0) {
        summary_free(*s);
        *s = NULL;
    }
    if (rc == 0)
        return 0;
    fprintf(stderr, PROG ": %s\n", err.msg[0] ? err.msg : cs_strerror(rc));
    return (rc == -ENOMEM || rc == -EIO) ? 3 : 2;
}

/* A misspelt --api must not pass silently. @return 0 or 2 after a message */
static int check_apis(const struct gate_opts *o, struct summary *const *b, size_t nb,
                      const struct summary *c)
{
    for (int i = 0; i < o->napis; i++) {
        size_t j = 0;
        while (j < nb && !summary_find(b[j], o->apis[i], NULL))
            j++;
        if (j < nb || summary_find(c, o->apis[i], NULL))
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
    for (size_t i = 0; i < g->ncrit; i++) {
        g->ncfail += g->crit[i].verdict == GATE_REGRESSED;
        g->ncnoisy += g->crit[i].verdict == GATE_NOISY;
        g->ncskip += g->crit[i].verdict == GATE_NOT_JUDGED;
    }
}

/* Append "; " and the reason of regression @p what to @p line. */
static void reason_add(char *line, size_t len, const char *what)
{
    size_t n = strlen(line);
    snprintf(line + n, len - n, "%s%s", n ? "; " : "", what);
}

/* The one-line reason: every regressed criterion and API, in order. */
static void fail_line(const struct gate_result *g, FILE *f)
{
    char line[2048] = "", what[640], note[300], label[300];
    for (size_t i = 0; i < g->ncrit; i++) {
        const struct gate_crit *c = &g->crit[i];
        if (c->verdict != GATE_REGRESSED)
            continue;
        gate_crit_note(c, g->o, note, sizeof(note));
        if (c->kind == GATE_CK_API_TIME)
            snprintf(what, sizeof(what), "%s %s", c->name, note);
        else if (c->kind == GATE_CK_FINDING)
            snprintf(what, sizeof(what), "new HIGH finding %s", c->name);
        else
            snprintf(what, sizeof(what), "%s %s", gate_crit_label(c, label, sizeof(label)), note);
        reason_add(line, sizeof(line), what);
    }
    for (size_t i = 0; i < g->n; i++) {
        const struct gate_row *r = &g->rows[i];
        if (r->verdict != GATE_REGRESSED)
            continue;
        row_label(r, label, sizeof(label));
        snprintf(what, sizeof(what), "%s %s %.2fx", label, summary_q_name(g->o->metric), r->ratio);
        reason_add(line, sizeof(line), what);
    }
    fprintf(f, PROG ": gate: FAIL: %s\n", line);
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
    if (!rc && gate_failed(g)) {
        fail_line(g, stderr);
        if (g->nbases < 2)
            fprintf(stderr, "hint: run-to-run noise is unknown with one baseline; keep %d "
                    "(--baseline A B C D E RUN; docs/gate.md)\n", GATE_KEEP_BASES);
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
    struct summary *base[GATE_MAX_BASES] = {0}, *cand = NULL;
    struct gate_result g = {.o = &c.o};
    int rc = gate_parse(&c, argc, argv);
    if (rc == 0 && c.help) {
        fputs(gate_usage, stdout);
        goto out;
    }
    int measure = (c.o.criteria & ~GATE_C_P99) != 0;
    for (size_t i = 0; rc == 0 && i < c.nbases; i++)
        rc = load_side(&c, c.bases[i], measure, &base[i]);
    if (rc || (rc = load_side(&c, c.run, measure, &cand)) ||
        (rc = check_apis(&c.o, base, c.nbases, cand)))
        goto out;
    const struct summary *const *bases = (const struct summary *const *)base;
    g.nbases = c.nbases;
    if (gate_eval_run_bases(bases, c.nbases, cand, &c.o, &g.crit, &g.ncrit) < 0 ||
        ((c.o.criteria & GATE_C_P99) &&
         gate_eval_bases(bases, c.nbases, cand, &c.o, &g.rows, &g.n) < 0)) {
        fprintf(stderr, PROG ": gate: out of memory\n");
        rc = 3;
        goto out;
    }
    count_verdicts(&g);
    rc = gate_report(&c, &g);
out:
    free(g.rows);
    free(g.crit);
    for (size_t i = 0; i < GATE_MAX_BASES; i++)
        summary_free(base[i]);
    summary_free(cand);
    free(c.apis);
    return rc;
}

static int summary_parse(struct gate_cli *c, const char **save, int argc, char **argv)
{
    static const struct option lo[] = {{"save", required_argument, 0, OPT_SAVE},
                                       {"samples", required_argument, 0, OPT_SAMPLES},
                                       {"step", required_argument, 0, OPT_STEPNAME},
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
            return cmd_usage_error("summary", optopt ? "option needs an argument" : "unknown option");
        if ((rc = gate_opt(c, opt == 'h' ? OPT_HELP : opt, optarg)) != 0)
            return rc;
    }
    if (!c->help && optind != argc - 1)
        return cmd_usage_error("summary", "expected exactly one RUN");
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
    if (rc || (rc = load_side(&c, c.run, 1, &s)))
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
