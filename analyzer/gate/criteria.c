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

/* ---- the margin of a verdict (issue 36) ---- */

int gate_pick_base(const double *v, size_t k, double *spread, unsigned *nbase)
{
    double lo = INFINITY, hi = -INFINITY;
    unsigned n = 0;
    int best = -1;
    for (size_t i = 0; i < k; i++) {
        if (isnan(v[i]))
            continue;
        n++;
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    /* the lower median: the value with (n - 1) / 2 others below it */
    for (size_t i = 0; best < 0 && i < k; i++) {
        unsigned below = 0, same = 0;
        for (size_t j = 0; j < k && !isnan(v[i]); j++) {
            below += !isnan(v[j]) && v[j] < v[i];
            same += j < i && v[j] == v[i];
        }
        if (!isnan(v[i]) && below + same == (n - 1) / 2)
            best = (int)i;
    }
    *nbase = n;
    *spread = n < 2 || hi == lo ? 1.0 : lo > 0 ? hi / lo : INFINITY;
    return best;
}

/* The verdict of @p ratio against @p limit widened by m->spread, with the
 * interval's lower bound m->lo: past both, regressed; past the limit only,
 * noisy (and why). */
static enum gate_verdict margin_verdict(struct gate_margin *m, double ratio, double limit)
{
    m->limit = limit * m->spread;
    m->noise = GATE_NOISE_NONE;
    if (!(ratio > limit))
        return GATE_OK;
    if (!(ratio > m->limit))
        return m->noise = GATE_NOISE_SPREAD, GATE_NOISY;
    if (!(m->lo > m->limit))
        return m->noise = GATE_NOISE_INTERVAL, GATE_NOISY;
    return GATE_REGRESSED;
}

/* Fewest values whose order statistics bound quantile @p p at 97.5 % both
 * ways: the largest is above a p99 only 1 - 0.99^n of the time (368). */
static uint64_t bound_values(double p)
{
    double up = ceil(log(0.025) / log(p)), down = ceil(log(0.025) / log1p(-p));
    return (uint64_t)(up > down ? up : down);
}

/* Values a side that would bring the lower bound @p lo past @p limit: its
 * distance below the ratio, in log ratio, shrinks as 1 / sqrt(n). */
static uint64_t settle_values(double ratio, double lo, double limit, size_t n)
{
    if (!(lo > 0) || !(ratio > limit) || !isfinite(ratio))
        return 0;
    double k = log(ratio / lo) / log(ratio / limit), need = ceil((double)n * k * k);
    return need > 1e12 ? 0 : (uint64_t)need;
}

/* Quantile bounds of both sides (97.5 % each): the ratio is at least
 * clo / bhi with 95 % probability. @return 0, or -ERANGE (too few values) */
static int ratio_bound(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, double p,
                       double *lo)
{
    uint64_t blo, bhi, clo, chi;
    if (bootstrap_quantile_bounds(a, na, p, 0.975, &blo, &bhi) < 0 ||
        bootstrap_quantile_bounds(b, nb, p, 0.975, &clo, &chi) < 0)
        return -ERANGE;
    *lo = ratio_of((double)clo, (double)bhi);
    return 0;
}

/* The bootstrap alone cannot bound a tail: a p99 over 100 steps is the
 * second-longest step, and resamples of it are nearly always one of the
 * longest three, so one slow step in the candidate gave an interval above 1
 * (cli.gate_steps_rerun, 2 of 20 reruns of the same loop failed: 5.09 ms ->
 * 10.97 ms, CI 1.39-4.37); nor a per-API p99 (issue 36: 400 syncs under CPU
 * load, 1.23 -> 2.78 ms, CI 1.20-3.32). So the lower bound is also the
 * order statistics', whichever is lower. */
int gate_judge_quantile(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, double p,
                        double ratio, double limit, uint64_t seed, const struct gate_opts *o,
                        double *ci_lo, double *ci_hi, int *has_ci, struct gate_margin *m)
{
    double os_lo = 0;
    int bounded = 1;
    m->lo = ratio;
    m->settle_n = 0;
    if (o->use_ci) {
        int rc = bootstrap_ratio_ci(a, na, b, nb, p, o->resamples, seed, 0.95, ci_lo, ci_hi);
        if (rc < 0)
            return rc;
        *has_ci = 1;
        bounded = ratio_bound(a, na, b, nb, p, &os_lo) == 0;
        m->lo = !bounded ? 0 : *ci_lo < os_lo ? *ci_lo : os_lo;
    }
    enum gate_verdict v = margin_verdict(m, ratio, limit);
    if (v == GATE_NOISY && m->noise == GATE_NOISE_INTERVAL && !bounded)
        m->noise = GATE_NOISE_BOUND, m->settle_n = bound_values(p);
    else if (v == GATE_NOISY && m->noise == GATE_NOISE_INTERVAL)
        m->settle_n = settle_values(ratio, m->lo, m->limit, na < nb ? na : nb);
    return (int)v;
}

const char *gate_noise_note(const struct gate_margin *m, const char *unit, char *buf, size_t len)
{
    char settle[96] = "";
    if (m->settle_n)
        snprintf(settle, sizeof(settle), ": about %llu %s a side would settle it",
                 (unsigned long long)m->settle_n, unit);
    switch (m->noise) {
    case GATE_NOISE_INTERVAL:
        snprintf(buf, len, "the interval's lower bound %.2fx is not past the limit %.2fx%s", m->lo,
                 m->limit, settle);
        break;
    case GATE_NOISE_BOUND:
        snprintf(buf, len, "too few %s to bound it by order statistics: %llu or more a side "
                 "would settle it", unit, (unsigned long long)m->settle_n);
        break;
    case GATE_NOISE_SPREAD:
        snprintf(buf, len, "within the run-to-run spread of %u baselines (%.2fx): limit %.2fx",
                 m->nbase, m->spread, m->limit);
        break;
    case GATE_NOISE_FEW:
        snprintf(buf, len, "too few %s to bound their time: %llu or more a side would settle it",
                 unit, (unsigned long long)m->settle_n);
        break;
    default:
        buf[0] = '\0';
    }
    return buf;
}

/* ---- step time ---- */

/* The steps of @p r on the GPU's side (@p gpu) or the host's. */
static const struct summary_steps *side_steps(const struct summary_run *r, int gpu)
{
    return gpu ? &r->gpu_steps : &r->steps;
}

/* Step time at probability @p p (0.5 or 0.99) against @p limit, from the
 * baseline of the median value, on the GPU's side (@p gpu) or the host's. */
static int step_crit(struct crits *l, const struct summary *const *bases, size_t nb,
                     const struct summary_run *cr, int gpu, const struct gate_opts *o,
                     enum gate_ckind kind)
{
    int p50 = kind == GATE_CK_STEP_P50;
    double limit = p50 ? o->max_step_ratio : o->max_step_p99_ratio;
    double v[GATE_MAX_BASES] = {0};
    const struct summary_steps *c = side_steps(cr, gpu);
    struct gate_crit *k = crit_add(l, kind, gpu ? GATE_STEPS_GPU : NULL);
    if (!k)
        return -ENOMEM;
    for (size_t i = 0; i < nb; i++)
        v[i] = (double)(p50 ? side_steps(&bases[i]->run, gpu)->p50_ns
                            : side_steps(&bases[i]->run, gpu)->p99_ns);
    const struct summary_steps *b =
        side_steps(&bases[gate_pick_base(v, nb, &k->m.spread, &k->m.nbase)]->run, gpu);
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
    int rc = gate_judge_quantile(b->samples_ns, b->nsamples, c->samples_ns, c->nsamples,
                                 p50 ? 0.5 : 0.99, k->ratio, limit,
                                 gate_seed(o->seed, "step time", p50 ? "p50" : "p99"), o,
                                 &k->ci_lo, &k->ci_hi, &k->has_ci, &k->m);
    if (rc < 0)
        return rc;
    k->verdict = (enum gate_verdict)rc;
    return 0;
}

/* Without steps on both sides: the CUDA-active window per outermost launch,
 * a unit of work that a sync added to each step does not change. No
 * interval: its lower bound is the ratio. */
static int unit_crit(struct crits *l, const struct summary *const *bases, size_t nb,
                     const struct summary_run *c, const struct gate_opts *o)
{
    struct gate_crit *k = crit_add(l, GATE_CK_UNIT, NULL);
    double v[GATE_MAX_BASES] = {0};
    if (!k)
        return -ENOMEM;
    for (size_t i = 0; i < nb; i++) {
        const struct summary_run *r = &bases[i]->run;
        v[i] = r->launches && r->window_ns ? (double)r->window_ns / (double)r->launches : NAN;
    }
    int ib = gate_pick_base(v, nb, &k->m.spread, &k->m.nbase);
    const struct summary_run *b = &bases[ib < 0 ? 0 : ib]->run;
    k->n_base = b->launches;
    k->n_new = c->launches;
    if (ib < 0 || !c->launches || !c->window_ns) {
        k->verdict = GATE_NOT_JUDGED;
        k->why = "no steps and no launches";
        return 0;
    }
    k->base = v[ib];
    k->cand = (double)c->window_ns / (double)c->launches;
    k->ratio = ratio_of(k->cand, k->base);
    k->m.lo = k->ratio;
    k->verdict = margin_verdict(&k->m, k->ratio, o->max_step_ratio);
    return 0;
}

/* The host runs ahead of the GPU in @p r: over the steps GPU activity
 * recorded, the host's p50 is under GATE_AHEAD of the GPU's. */
static int host_ahead(const struct summary_run *r)
{
    const struct summary_steps *g = &r->gpu_steps;
    return g->count && g->host_p50_ns && (double)g->host_p50_ns < GATE_AHEAD * (double)g->p50_ns;
}

/* Step time on the GPU's side where the host runs ahead of the GPU in any
 * run (its enqueue cadence until the launch queue fills, which differs
 * between reruns of the same loop where the GPU's does not) and every run
 * has --min-steps recorded by GPU activity (with fewer: not judged); else
 * on the host's, which
 * counts every step (sampled GPU activity records a tenth of them, in a
 * few slices that one burst of outside load can cover: a GPU paced by the
 * host is better judged on the host's side). */
static int steps_crits(struct crits *l, const struct summary *const *b, size_t nb,
                       const struct summary *c, const struct gate_opts *o)
{
    int gpu = c->run.gpu_steps.count >= o->min_steps, ahead = host_ahead(&c->run), rc;
    for (size_t i = 0; i < nb; i++) {
        if (!b[i]->run.steps.source || !c->run.steps.source)
            return unit_crit(l, b, nb, &c->run, o);
        gpu = gpu && b[i]->run.gpu_steps.count >= o->min_steps;
        ahead = ahead || host_ahead(&b[i]->run);
    }
    int blind = ahead && !gpu; /* the host's steps mislead, the GPU's are too few */
    gpu = gpu && ahead;
    if ((rc = step_crit(l, b, nb, &c->run, gpu, o, GATE_CK_STEP_P50)) < 0 ||
        (rc = step_crit(l, b, nb, &c->run, gpu, o, GATE_CK_STEP_P99)) < 0)
        return rc;
    for (size_t i = l->n - 2; blind && i < l->n; i++) {
        l->c[i].verdict = GATE_NOT_JUDGED;
        l->c[i].why = "the host runs ahead of the GPU, and GPU activity recorded too few "
                      "steps (record with --gpu-activity full, or more steps)";
    }
    return 0;
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

/* The interval of API time's ratio of shares: the bootstrap of the ratio
 * of the calls' mean durations, scaled to the ratio. The total is count x
 * mean, and a few calls that overslept under load can double a share
 * (issue 36: cudaEventSynchronize 7.8 % -> 15.3 % of the window between
 * two recordings of the same workload). */
static int api_interval(struct gate_crit *k, const struct summary_group *b,
                        const struct summary_group *c, const struct gate_opts *o)
{
    double lo, hi, mb = 0, mc = 0;
    if (!o->use_ci || !b || !c || !isfinite(k->ratio) || !b->nsamples || !c->nsamples)
        return 0;
    int rc = bootstrap_mean_ratio_ci(b->samples_ns, b->nsamples, c->samples_ns, c->nsamples,
                                     o->resamples, gate_seed(o->seed, "API time", b->api), 0.95,
                                     &lo, &hi);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < b->nsamples; i++)
        mb += (double)b->samples_ns[i] / (double)b->nsamples;
    for (size_t i = 0; i < c->nsamples; i++)
        mc += (double)c->samples_ns[i] / (double)c->nsamples;
    if (!(mb > 0 && mc > 0))
        return 0;
    k->ci_lo = k->ratio * lo / (mc / mb);
    k->ci_hi = k->ratio * hi / (mc / mb);
    k->has_ci = 1;
    k->m.lo = k->ci_lo;
    return 0;
}

/* API time of the group @p c against baseline group @p b (NULL: new),
 * shares of their runs' windows; the margin's spread set by the caller. */
static int api_judge(struct gate_crit *k, const struct summary_group *b,
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
    k->m.lo = k->ratio;
    k->m.limit = o->max_api_ratio * k->m.spread;
    int rc = api_interval(k, b, c, o);
    if (rc < 0)
        return rc;
    k->verdict = k->new_share - k->base_share > o->min_api_share
                     ? margin_verdict(&k->m, k->ratio, o->max_api_ratio) : GATE_OK;
    if (k->verdict == GATE_NOISY && k->m.noise == GATE_NOISE_INTERVAL)
        k->m.settle_n = settle_values(k->ratio, k->m.lo, k->m.limit,
                                      b->nsamples < c->nsamples ? b->nsamples : c->nsamples);
    /* a call or two a run (cuInit: 0.0 % -> 5.5 % of the window in one of
     * 20 identical recordings under CPU load) has no interval to bound */
    if (k->verdict == GATE_REGRESSED && b && c && o->use_ci &&
        (b->count < GATE_API_MIN_CALLS || c->count < GATE_API_MIN_CALLS)) {
        k->verdict = GATE_NOISY;
        k->m.noise = GATE_NOISE_FEW;
        k->m.settle_n = GATE_API_MIN_CALLS;
    }
    if (k->verdict == GATE_OK)
        k->verdict = !b ? GATE_ONLY_NEW : !c ? GATE_ONLY_BASE : GATE_OK;
    return 0;
}

/* Share of its run's window the API @p api takes in @p s (NaN: not in it). */
static double api_share(const struct summary *s, const char *api)
{
    const struct summary_group *g = summary_find(s, api, NULL);
    if (!g)
        return NAN;
    return s->run.window_ns ? (double)g->total_ns / (double)s->run.window_ns : 0;
}

/* Was @p api seen before, in baselines 0..@p i - 1 or (candidate) in any? */
static int api_seen(const struct summary *const *b, size_t i, const char *api)
{
    for (size_t j = 0; j < i; j++)
        if (summary_find(b[j], api, NULL))
            return 1;
    return 0;
}

static int api_crit(struct crits *l, const struct summary *const *b, size_t nb,
                    const struct summary *c, const struct gate_opts *o, const char *api)
{
    double v[GATE_MAX_BASES] = {0};
    struct gate_crit *k = crit_add(l, GATE_CK_API_TIME, api);
    if (!k)
        return -ENOMEM;
    for (size_t i = 0; i < nb; i++)
        v[i] = api_share(b[i], api);
    int ib = gate_pick_base(v, nb, &k->m.spread, &k->m.nbase);
    const struct summary *sb = b[ib < 0 ? 0 : ib];
    return api_judge(k, ib < 0 ? NULL : summary_find(sb, api, NULL), summary_find(c, api, NULL),
                     sb, c, o);
}

/* One row per API of any baseline or the candidate, each once. */
static int api_crits(struct crits *l, const struct summary *const *b, size_t nb,
                     const struct summary *c, const struct gate_opts *o)
{
    int rc = 0;
    for (size_t side = 0; rc == 0 && side <= nb; side++) {
        const struct summary *s = side < nb ? b[side] : c;
        for (size_t i = 0; rc == 0 && i < s->n; i++) {
            const struct summary_group *g = &s->groups[i];
            if (g->kernel || !gate_api_selected(o, g->api) || api_seen(b, side, g->api))
                continue;
            rc = api_crit(l, b, nb, c, o, g->api);
        }
    }
    return rc;
}

/* ---- GPU idle and findings ---- */

/* Too little GPU time covered in @p r to judge its idle share: its few
 * slices are a moment of the run, and one burst of outside load moved
 * the idle share of a 0.3 s run 20 points (2 of 20 identical pairs, CI
 * under load). 0 (an older summary) is judged as before. */
static int short_cover(const struct summary_run *r)
{
    return r->gpu_covered_ns && r->gpu_covered_ns < GATE_IDLE_MIN_COVERED_NS;
}

/* The rise of the idle share; the limit widened by the baselines' spread
 * in points (largest less smallest), not a ratio: idle shares near 0 would
 * make any ratio huge. */
static int gpu_crit(struct crits *l, const struct summary *const *b, size_t nb,
                    const struct summary_run *c, const struct gate_opts *o)
{
    double v[GATE_MAX_BASES] = {0}, lo = 1, hi = 0, ratio_spread;
    for (size_t i = 0; i < nb; i++) {
        v[i] = b[i]->run.gpu_source ? b[i]->run.gpu_idle : NAN;
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    unsigned n;
    int ib = gate_pick_base(v, nb, &ratio_spread, &n);
    if (ib < 0 || !c->gpu_source)
        return not_judged(l, GATE_CK_GPU_IDLE,
                          ib < 0 && !c->gpu_source ? "no GPU activity recorded"
                          : ib < 0                 ? "no GPU activity in the baseline"
                                                   : "no GPU activity in the candidate")
                   ? 0 : -ENOMEM;
    if (short_cover(c) || short_cover(&b[ib]->run))
        return not_judged(l, GATE_CK_GPU_IDLE, "too little GPU activity recorded: under 1 s "
                                               "a side (sampled: runs under 10 s)")
                   ? 0 : -ENOMEM;
    struct gate_crit *k = crit_add(l, GATE_CK_GPU_IDLE, NULL);
    if (!k)
        return -ENOMEM;
    k->base = v[ib];
    k->cand = c->gpu_idle;
    k->ratio = ratio_of(k->cand, k->base);
    k->m.nbase = n;
    k->m.spread = n < 2 ? 0 : hi - lo;
    k->m.limit = o->max_idle_rise + k->m.spread;
    k->m.lo = k->cand - k->base;
    k->verdict = !(k->m.lo > o->max_idle_rise) ? GATE_OK
                 : !(k->m.lo > k->m.limit)      ? (k->m.noise = GATE_NOISE_SPREAD, GATE_NOISY)
                                                : GATE_REGRESSED;
    return 0;
}

static int has_high(const struct summary_run *r, const char *cause)
{
    for (size_t i = 0; i < r->nhigh; i++)
        if (strcmp(r->high[i], cause) == 0)
            return 1;
    return 0;
}

/* Has any of @p nb baselines @p cause at HIGH? */
static int any_high(const struct summary *const *b, size_t nb, const char *cause)
{
    for (size_t i = 0; i < nb; i++)
        if (has_high(&b[i]->run, cause))
            return 1;
    return 0;
}

/* One criterion per HIGH finding of any side; one "none" line if none has
 * any. A cause some baseline had at HIGH is not new: it crosses the line
 * from run to run. */
static int finding_crits(struct crits *l, const struct summary *const *b, size_t nb,
                         const struct summary_run *c)
{
    size_t nhigh = c->nhigh;
    for (size_t side = 0; side <= nb; side++) {
        const struct summary_run *s = side < nb ? &b[side]->run : c;
        nhigh += side < nb ? s->nhigh : 0;
        for (size_t i = 0; i < s->nhigh; i++) {
            if (any_high(b, side, s->high[i]))
                continue;
            struct gate_crit *k = crit_add(l, GATE_CK_FINDING, s->high[i]);
            if (!k)
                return -ENOMEM;
            k->base = any_high(b, nb, s->high[i]);
            k->cand = has_high(c, s->high[i]);
            k->verdict = k->cand && !k->base ? GATE_REGRESSED : GATE_OK;
        }
    }
    if (nhigh == 0) {
        struct gate_crit *k = crit_add(l, GATE_CK_FINDING, NULL);
        if (!k)
            return -ENOMEM;
        k->verdict = GATE_OK;
    }
    return 0;
}

/* Why the run criteria cannot be judged: a side without the run part. */
static const char *no_run_why(const struct summary *const *b, size_t nb, const struct summary *c)
{
    int base_has = 1;
    for (size_t i = 0; i < nb; i++)
        base_has &= b[i]->has_run;
    return !base_has && !c->has_run ? "no run measures (version 1 summaries)"
           : !base_has              ? "the baseline has no run measures (version 1 summary)"
           : !c->has_run            ? "the candidate has no run measures (version 1 summary)"
                                    : NULL;
}

int gate_eval_run_bases(const struct summary *const *base, size_t nbase,
                        const struct summary *cand, const struct gate_opts *o,
                        struct gate_crit **out, size_t *n)
{
    struct crits l = {0};
    int rc = 0;
    const char *why = no_run_why(base, nbase, cand);
    static const struct {
        unsigned bit;
        enum gate_ckind kind;
    } crit_bits[] = {{GATE_C_STEPS, GATE_CK_STEP_P50},
                     {GATE_C_API_TIME, GATE_CK_API_TIME},
                     {GATE_C_GPU, GATE_CK_GPU_IDLE},
                     {GATE_C_FINDINGS, GATE_CK_FINDING}};
    if (nbase < 1 || nbase > GATE_MAX_BASES)
        return -EINVAL;
    for (size_t i = 0; rc == 0 && i < sizeof(crit_bits) / sizeof(crit_bits[0]); i++) {
        if (!(o->criteria & crit_bits[i].bit))
            continue;
        if (why) {
            rc = not_judged(&l, crit_bits[i].kind, why) ? 0 : -ENOMEM;
            continue;
        }
        switch (crit_bits[i].kind) {
        case GATE_CK_STEP_P50: rc = steps_crits(&l, base, nbase, cand, o); break;
        case GATE_CK_API_TIME: rc = api_crits(&l, base, nbase, cand, o); break;
        case GATE_CK_GPU_IDLE: rc = gpu_crit(&l, base, nbase, &cand->run, o); break;
        default: rc = finding_crits(&l, base, nbase, &cand->run); break;
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

int gate_eval_run(const struct summary *base, const struct summary *cand,
                  const struct gate_opts *o, struct gate_crit **out, size_t *n)
{
    return gate_eval_run_bases(&base, 1, cand, o, out, n);
}

/* ---- words ---- */

const char *gate_crit_label(const struct gate_crit *c, char *buf, size_t len)
{
    switch (c->kind) {
    case GATE_CK_STEP_P50:
    case GATE_CK_STEP_P99:
        snprintf(buf, len, "step time %s%s", c->kind == GATE_CK_STEP_P50 ? "p50" : "p99",
                 c->name ? " (GPU)" : "");
        break;
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
    snprintf(buf, len, "%+.0f%% (%s -> %s%s)", whole((c->ratio - 1.0) * 100.0),
             fmt_time(c->base, a, sizeof(a)), fmt_time(c->cand, b, sizeof(b)), ci);
}

/* "; " and why a noisy criterion did not regress, after @p buf. */
static void noise_add(const struct gate_crit *c, char *buf, size_t len)
{
    char why[200];
    size_t n = strlen(buf);
    if (c->verdict != GATE_NOISY || n >= len)
        return;
    if (c->kind == GATE_CK_GPU_IDLE)
        snprintf(why, sizeof(why), "within the run-to-run spread of %u baselines (%.0f points): "
                 "limit +%.0f points", c->m.nbase, c->m.spread * 100.0, c->m.limit * 100.0);
    else
        gate_noise_note(&c->m, c->kind == GATE_CK_UNIT ? "launches"
                             : c->kind == GATE_CK_API_TIME ? "calls" : "steps", why, sizeof(why));
    if (why[0])
        snprintf(buf + n, len - n, "; %s", why);
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
    noise_add(c, buf, len);
    return buf;
}
