/* gate/criteria.c: the gate's run criteria (gate_eval_run, gate.h): step
 * time, each API's share of the CUDA-active window, GPU idle and new HIGH
 * findings. Per-API p99 alone cannot see time that moves from one API to
 * another (issue 24: a sync added each step made the launches faster and
 * the run 33 % slower); these judge the run as a whole. Pure: two
 * summaries in, criteria out; gate.c prints them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "gate.h"

/* Defaults for every criterion, per-API p99 included (gate.h). */
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
    o->criteria = GATE_C_ALL;
    o->max_step_ratio = 1.1;
    o->max_step_p99_ratio = 1.5;
    o->min_steps = 20;
    o->max_api_ratio = 1.5;
    o->min_api_share = 0.05;
    o->max_idle_rise = 0.10;
}

/* FNV-1a of the names, mixed with the seed. */
uint64_t gate_seed(uint64_t seed, const char *api, const char *kernel)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (const char *p = api; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (const char *p = kernel ? kernel : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

struct crits {
    struct gate_crit *c;
    size_t n, cap;
};

static struct gate_crit *crit_add(struct crits *l, enum gate_ckind kind, const char *name)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct gate_crit *c = realloc(l->c, cap * sizeof(*c));
        if (!c)
            return NULL;
        l->c = c;
        l->cap = cap;
    }
    struct gate_crit *c = &l->c[l->n++];
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    c->name = name;
    return c;
}

static struct gate_crit *not_judged(struct crits *l, enum gate_ckind kind, const char *why)
{
    struct gate_crit *c = crit_add(l, kind, NULL);
    if (c) {
        c->verdict = GATE_NOT_JUDGED;
        c->why = why;
    }
    return c;
}

static double ratio_of(double num, double den)
{
    return den > 0 ? num / den : (num > 0 ? INFINITY : 1.0);
}

/* ---- step time ---- */

/* Does the candidate's step time p99 lie above the baseline's, by their
 * order-statistic bounds (97.5 % each)? The bootstrap alone cannot say: a
 * p99 over 100 steps is the second-longest step, and resamples of it are
 * nearly always one of the longest three, so one slow step in the
 * candidate gave an interval above 1 (cli.gate_steps_rerun, 2 of 20 reruns
 * of the same loop failed: 5.09 ms -> 10.97 ms, CI 1.39-4.37). */
static int p99_apart(const struct summary_steps *b, const struct summary_steps *c)
{
    uint64_t blo, bhi, clo, chi;

    return bootstrap_quantile_bounds(b->samples_ns, b->nsamples, 0.99, 0.975, &blo, &bhi) == 0 &&
           bootstrap_quantile_bounds(c->samples_ns, c->nsamples, 0.99, 0.975, &clo, &chi) == 0 &&
           clo > bhi;
}

/* Step time at probability @p p (0.5 or 0.99) against @p limit. */
static int step_crit(struct crits *l, const struct summary_steps *b, const struct summary_steps *c,
                     const struct gate_opts *o, enum gate_ckind kind)
{
    int p50 = kind == GATE_CK_STEP_P50;
    double limit = p50 ? o->max_step_ratio : o->max_step_p99_ratio;
    struct gate_crit *k = crit_add(l, kind, NULL);
    if (!k)
        return -ENOMEM;
    k->n_base = b->count;
    k->n_new = c->count;
    k->base = (double)(p50 ? b->p50_ns : b->p99_ns);
    k->cand = (double)(p50 ? c->p50_ns : c->p99_ns);
    k->ratio = ratio_of(k->cand, k->base);
    if (b->count < o->min_steps || c->count < o->min_steps) {
        k->verdict = GATE_NOT_JUDGED;
        k->why = "too few steps";
        return 0;
    }
    if (o->use_ci) {
        int rc = bootstrap_ratio_ci(b->samples_ns, b->nsamples, c->samples_ns, c->nsamples,
                                    p50 ? 0.5 : 0.99, o->resamples,
                                    gate_seed(o->seed, "step time", p50 ? "p50" : "p99"), 0.95,
                                    &k->ci_lo, &k->ci_hi);
        if (rc < 0)
            return rc;
        k->has_ci = 1;
    }
    if (!(k->ratio > limit))
        k->verdict = GATE_OK;
    else if (k->has_ci && k->ci_lo <= 1.0)
        k->verdict = GATE_NOISY;
    else if (!p50 && !p99_apart(b, c))
        k->verdict = GATE_NOISY, k->why = "too few steps to bound the p99 (368 or more each)";
    else
        k->verdict = GATE_REGRESSED;
    return 0;
}

/* Without steps on both sides: the CUDA-active window per outermost launch,
 * a unit of work that a sync added to each step does not change. */
static int unit_crit(struct crits *l, const struct summary_run *b, const struct summary_run *c,
                     const struct gate_opts *o)
{
    struct gate_crit *k = crit_add(l, GATE_CK_UNIT, NULL);
    if (!k)
        return -ENOMEM;
    k->n_base = b->launches;
    k->n_new = c->launches;
    if (!b->launches || !c->launches || !b->window_ns || !c->window_ns) {
        k->verdict = GATE_NOT_JUDGED;
        k->why = "no steps and no launches";
        return 0;
    }
    k->base = (double)b->window_ns / (double)b->launches;
    k->cand = (double)c->window_ns / (double)c->launches;
    k->ratio = ratio_of(k->cand, k->base);
    k->verdict = k->ratio > o->max_step_ratio ? GATE_REGRESSED : GATE_OK;
    return 0;
}

static int steps_crits(struct crits *l, const struct summary *b, const struct summary *c,
                       const struct gate_opts *o)
{
    const struct summary_steps *sb = &b->run.steps, *sc = &c->run.steps;
    int rc;
    if (!sb->source || !sc->source)
        return unit_crit(l, &b->run, &c->run, o);
    if ((rc = step_crit(l, sb, sc, o, GATE_CK_STEP_P50)) < 0)
        return rc;
    return step_crit(l, sb, sc, o, GATE_CK_STEP_P99);
}

/* ---- API time ---- */

int gate_api_selected(const struct gate_opts *o, const char *api)
{
    if (!o->apis)
        return 1;
    for (int i = 0; i < o->napis; i++)
        if (strcmp(o->apis[i], api) == 0)
            return 1;
    return 0;
}

static void api_judge(struct gate_crit *k, const struct summary_group *b,
                      const struct summary_group *c, const struct summary *sb,
                      const struct summary *sc, const struct gate_opts *o)
{
    k->n_base = b ? b->count : 0;
    k->n_new = c ? c->count : 0;
    k->base = b ? (double)b->total_ns : 0;
    k->cand = c ? (double)c->total_ns : 0;
    k->base_share = sb->run.window_ns ? k->base / (double)sb->run.window_ns : 0;
    k->new_share = sc->run.window_ns ? k->cand / (double)sc->run.window_ns : 0;
    k->ratio = ratio_of(k->new_share, k->base_share);
    if (k->ratio > o->max_api_ratio && k->new_share - k->base_share > o->min_api_share)
        k->verdict = GATE_REGRESSED;
    else
        k->verdict = !b ? GATE_ONLY_NEW : !c ? GATE_ONLY_BASE : GATE_OK;
}

static int api_crits(struct crits *l, const struct summary *b, const struct summary *c,
                     const struct gate_opts *o)
{
    for (int side = 0; side < 2; side++) {
        const struct summary *s = side ? c : b, *other = side ? b : c;
        for (size_t i = 0; i < s->n; i++) {
            const struct summary_group *g = &s->groups[i];
            const struct summary_group *h = summary_find(other, g->api, NULL);
            if (g->kernel || !gate_api_selected(o, g->api) || (side && h))
                continue;
            struct gate_crit *k = crit_add(l, GATE_CK_API_TIME, g->api);
            if (!k)
                return -ENOMEM;
            api_judge(k, side ? h : g, side ? g : h, b, c, o);
        }
    }
    return 0;
}

/* ---- GPU idle and findings ---- */

static int gpu_crit(struct crits *l, const struct summary_run *b, const struct summary_run *c,
                    const struct gate_opts *o)
{
    if (!b->gpu_source || !c->gpu_source)
        return not_judged(l, GATE_CK_GPU_IDLE,
                          !b->gpu_source && !c->gpu_source ? "no GPU activity recorded"
                          : !b->gpu_source ? "no GPU activity in the baseline"
                                           : "no GPU activity in the candidate")
                   ? 0 : -ENOMEM;
    struct gate_crit *k = crit_add(l, GATE_CK_GPU_IDLE, NULL);
    if (!k)
        return -ENOMEM;
    k->base = b->gpu_idle;
    k->cand = c->gpu_idle;
    k->ratio = ratio_of(k->cand, k->base);
    k->verdict = k->cand - k->base > o->max_idle_rise ? GATE_REGRESSED : GATE_OK;
    return 0;
}

static int has_high(const struct summary_run *r, const char *cause)
{
    for (size_t i = 0; i < r->nhigh; i++)
        if (strcmp(r->high[i], cause) == 0)
            return 1;
    return 0;
}

/* One criterion per HIGH finding of either side; one "none" line if neither has any. */
static int finding_crits(struct crits *l, const struct summary_run *b, const struct summary_run *c)
{
    for (int side = 0; side < 2; side++) {
        const struct summary_run *s = side ? c : b;
        for (size_t i = 0; i < s->nhigh; i++) {
            if (side && has_high(b, s->high[i]))
                continue;
            struct gate_crit *k = crit_add(l, GATE_CK_FINDING, s->high[i]);
            if (!k)
                return -ENOMEM;
            k->base = has_high(b, s->high[i]);
            k->cand = has_high(c, s->high[i]);
            k->verdict = k->cand && !k->base ? GATE_REGRESSED : GATE_OK;
        }
    }
    if (b->nhigh == 0 && c->nhigh == 0) {
        struct gate_crit *k = crit_add(l, GATE_CK_FINDING, NULL);
        if (!k)
            return -ENOMEM;
        k->verdict = GATE_OK;
    }
    return 0;
}

int gate_eval_run(const struct summary *base, const struct summary *cand,
                  const struct gate_opts *o, struct gate_crit **out, size_t *n)
{
    struct crits l = {0};
    int rc = 0;
    int both = base->has_run && cand->has_run;
    const char *why = !base->has_run && !cand->has_run ? "no run measures (version 1 summaries)"
                      : !base->has_run ? "the baseline has no run measures (version 1 summary)"
                                       : "the candidate has no run measures (version 1 summary)";
    static const struct {
        unsigned bit;
        enum gate_ckind kind;
    } crit_bits[] = {{GATE_C_STEPS, GATE_CK_STEP_P50},
                     {GATE_C_API_TIME, GATE_CK_API_TIME},
                     {GATE_C_GPU, GATE_CK_GPU_IDLE},
                     {GATE_C_FINDINGS, GATE_CK_FINDING}};
    for (size_t i = 0; rc == 0 && i < sizeof(crit_bits) / sizeof(crit_bits[0]); i++) {
        if (!(o->criteria & crit_bits[i].bit))
            continue;
        if (!both) {
            rc = not_judged(&l, crit_bits[i].kind, why) ? 0 : -ENOMEM;
            continue;
        }
        switch (crit_bits[i].kind) {
        case GATE_CK_STEP_P50: rc = steps_crits(&l, base, cand, o); break;
        case GATE_CK_API_TIME: rc = api_crits(&l, base, cand, o); break;
        case GATE_CK_GPU_IDLE: rc = gpu_crit(&l, &base->run, &cand->run, o); break;
        default: rc = finding_crits(&l, &base->run, &cand->run); break;
        }
    }
    if (rc < 0) {
        free(l.c);
        return rc;
    }
    *out = l.c;
    *n = l.n;
    return 0;
}

/* ---- words ---- */

const char *gate_crit_label(const struct gate_crit *c, char *buf, size_t len)
{
    switch (c->kind) {
    case GATE_CK_STEP_P50: snprintf(buf, len, "step time p50"); break;
    case GATE_CK_STEP_P99: snprintf(buf, len, "step time p99"); break;
    case GATE_CK_UNIT: snprintf(buf, len, "time per launch"); break;
    case GATE_CK_API_TIME: snprintf(buf, len, "API time %s", c->name ? c->name : "(all)"); break;
    case GATE_CK_GPU_IDLE: snprintf(buf, len, "GPU idle"); break;
    case GATE_CK_FINDING:
        snprintf(buf, len, "HIGH finding %s", c->name ? c->name : "(none)");
        break;
    }
    return buf;
}

/* @p ns as "812 us", "2.10 ms" or "1.25 s". */
static const char *fmt_time(double ns, char *buf, size_t len)
{
    if (ns >= 1e9)
        snprintf(buf, len, "%.2f s", ns / 1e9);
    else if (ns >= 1e6)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.1f us", ns / 1e3);
    return buf;
}

/* @p x rounded to a whole number, never "-0". */
static double whole(double x)
{
    return fabs(x) < 0.5 ? 0.0 : x;
}

static void time_note(const struct gate_crit *c, char *buf, size_t len)
{
    char a[32], b[32], ci[48] = "";
    if (c->has_ci)
        snprintf(ci, sizeof(ci), ", CI %.2f-%.2f", c->ci_lo, c->ci_hi);
    snprintf(buf, len, "%+.0f%% (%s -> %s%s)%s%s", whole((c->ratio - 1.0) * 100.0),
             fmt_time(c->base, a, sizeof(a)), fmt_time(c->cand, b, sizeof(b)), ci,
             c->why ? "; " : "", c->why ? c->why : "");
}

const char *gate_crit_note(const struct gate_crit *c, const struct gate_opts *o, char *buf,
                           size_t len)
{
    (void)o;
    if (c->verdict == GATE_NOT_JUDGED && c->why) {
        snprintf(buf, len, "%s", c->why);
        return buf;
    }
    switch (c->kind) {
    case GATE_CK_STEP_P50:
    case GATE_CK_STEP_P99:
    case GATE_CK_UNIT:
        time_note(c, buf, len);
        break;
    case GATE_CK_API_TIME:
        if (c->verdict == GATE_ONLY_NEW || (c->verdict == GATE_REGRESSED && c->n_base == 0))
            snprintf(buf, len, "new: %.0f%% of the window", c->new_share * 100.0);
        else if (c->verdict == GATE_ONLY_BASE)
            snprintf(buf, len, "gone: was %.0f%% of the window", c->base_share * 100.0);
        else
            snprintf(buf, len, "%.1f%% -> %.1f%% of the window", c->base_share * 100.0,
                     c->new_share * 100.0);
        break;
    case GATE_CK_GPU_IDLE:
        snprintf(buf, len, "%.0f%% -> %.0f%% of the covered time (%+.0f points)",
                 c->base * 100.0, c->cand * 100.0, whole((c->cand - c->base) * 100.0));
        break;
    case GATE_CK_FINDING:
        snprintf(buf, len, "%s", !c->name ? "none on either side"
                                 : c->cand && !c->base ? "new in candidate"
                                 : c->cand              ? "in both runs"
                                                        : "gone from candidate");
        break;
    }
    return buf;
}
