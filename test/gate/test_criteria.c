/* test_criteria.c: unit.gate_criteria: the gate's run criteria (criteria.c)
 * on synthetic version 2 summaries: a new API over its share of the window
 * fails and a small one does not, both limits of the API time, step time
 * with its interval, too few steps, time per launch without steps, GPU
 * idle, new HIGH findings, --criteria, and a version 1 baseline that holds
 * none of it (issue 24); the noisy verdict of a lower bound short of the
 * limit, per-API p99 included, several baselines, and step time from the
 * GPU's side where the host runs ahead of the GPU, else the host's (issue 36). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../analyzer/gate/bootstrap.h"
#include "../../analyzer/gate/gate.h"
#include "check.h"

/* What one synthetic run holds. */
struct run {
    uint64_t window_ns, launches;
    uint64_t step_ns;   /* each step this long, +-2 %; 0 = no steps */
    unsigned nsteps;
    double tail_x;      /* > 0: the slowest 8 % of steps this many times longer */
    double gpu_idle;    /* < 0: no GPU activity */
    const char *high;   /* comma-separated HIGH finding causes, or NULL */
    const char *apis;   /* "name=total_ns,..." */
    uint64_t gpu_covered_ns; /* gpu.covered_ns, 0: absent (an older summary) */
    uint64_t gpu_step_ns; /* > 0: gpu_steps, nsteps - 1 of this, +-2 % */
    uint64_t host_p50_ns; /* their host_p50_ns */
};

static json_t *steps_json(const struct run *r)
{
    if (!r->step_ns)
        return json_null();
    uint64_t *v = malloc(r->nsteps * sizeof(*v));
    json_t *smp = json_array();
    for (unsigned i = 0; i < r->nsteps; i++) /* ascending, 0.98x .. 1.02x */
        v[i] = r->step_ns * (980 + 40 * i / r->nsteps) / 1000;
    for (unsigned i = r->nsteps - r->nsteps * 8 / 100; r->tail_x > 0 && i < r->nsteps; i++)
        v[i] = (uint64_t)((double)v[i] * r->tail_x);
    for (unsigned i = 0; i < r->nsteps; i++)
        json_array_append_new(smp, json_integer((json_int_t)v[i]));
    json_t *o = json_pack("{s:s, s:s, s:i, s:I, s:I, s:o}", "source", "inferred", "how", "test",
                          "count", (int)r->nsteps, "p50_ns",
                          (json_int_t)v[(r->nsteps + 1) / 2 - 1], "p99_ns",
                          (json_int_t)v[(unsigned)ceil(0.99 * r->nsteps) - 1], "samples_ns", smp);
    free(v);
    return o;
}

static json_t *list_json(const char *csv)
{
    json_t *a = json_array();
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", csv ? csv : "");
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(t));
    return a;
}

/* One group per "name=total[/count]" of @p apis: count (200) calls of
 * total/count each. */
static json_t *groups_json(const char *apis)
{
    json_t *gs = json_array();
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", apis);
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        *eq = '\0';
        char *slash = strchr(eq + 1, '/');
        int count = slash ? atoi(slash + 1) : 200;
        json_int_t total = strtoll(eq + 1, NULL, 10), d = total / count;
        json_array_append_new(
            gs, json_pack("{s:s, s:n, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:[I]}", "api", t,
                          "kernel", "count", count, "min_ns", d, "max_ns", d, "p50_ns", d,
                          "p90_ns", d, "p99_ns", d, "p999_ns", d, "total_ns", total,
                          "samples_ns", d));
    }
    return gs;
}

static struct summary *mk(const struct run *r, int version)
{
    struct summary *s = NULL;
    struct cs_err err = {{0}};
    json_t *j = json_pack("{s:s, s:i, s:s, s:o}", "format", SUMMARY_FORMAT, "version", version,
                          "source", "t.json", "groups", groups_json(r->apis));
    if (version >= 2) {
        json_object_set_new(j, "window_ns", json_integer((json_int_t)r->window_ns));
        json_object_set_new(j, "launches", json_integer((json_int_t)r->launches));
        json_object_set_new(j, "steps", steps_json(r));
        if (r->gpu_step_ns) {
            struct run g = *r;
            g.step_ns = r->gpu_step_ns, g.nsteps = r->nsteps - 1;
            json_t *gs = steps_json(&g);
            json_object_set_new(gs, "host_p50_ns", json_integer((json_int_t)r->host_p50_ns));
            json_object_set_new(j, "gpu_steps", gs);
        }
        json_object_set_new(j, "gpu", r->gpu_idle < 0 ? json_null()
                                                      : json_pack("{s:s, s:f}", "source",
                                                                  "sampled", "idle_fraction",
                                                                  r->gpu_idle));
        if (r->gpu_covered_ns && r->gpu_idle >= 0)
            json_object_set_new(json_object_get(j, "gpu"), "covered_ns",
                                json_integer((json_int_t)r->gpu_covered_ns));
        json_object_set_new(j, "high_findings", list_json(r->high));
    } else {
        for (size_t i = 0; i < json_array_size(json_object_get(j, "groups")); i++)
            json_object_del(json_array_get(json_object_get(j, "groups"), i), "total_ns");
    }
    if (summary_from_json(j, "t.json", &s, &err) < 0)
        fprintf(stderr, "test_criteria: %s\n", err.msg);
    json_decref(j);
    return s;
}

/* The last judgement: the criteria borrow names from the summaries. */
static struct gate_crit *crit;
static size_t ncrit;
static struct summary *sb, *sc, *more[3]; /* more: baselines after the first */

static void judged_free(void)
{
    free(crit);
    summary_free(sb);
    summary_free(sc);
    for (size_t i = 0; i < 3; i++)
        summary_free(more[i]), more[i] = NULL;
    crit = NULL;
    sb = sc = NULL;
}

/* Judge @p b against @p c with the defaults (and @p criteria bits if non-0). */
static int judge(const struct run *b, const struct run *c, int bver, unsigned criteria)
{
    struct gate_opts o;
    judged_free();
    sb = mk(b, bver);
    sc = mk(c, 2);
    gate_opts_init(&o);
    if (criteria)
        o.criteria = criteria;
    return sb && sc ? gate_eval_run(sb, sc, &o, &crit, &ncrit) : -1;
}

/* The criterion of @p kind (and @p name, if not NULL), or NULL. */
static const struct gate_crit *find(enum gate_ckind kind, const char *name)
{
    for (size_t i = 0; i < ncrit; i++)
        if (crit[i].kind == kind && (!name || (crit[i].name && !strcmp(crit[i].name, name))))
            return &crit[i];
    return NULL;
}

static const char *note(const struct gate_crit *c)
{
    static char buf[300];
    struct gate_opts o;
    gate_opts_init(&o);
    return gate_crit_note(c, &o, buf, sizeof(buf));
}

static const struct run base = {.window_ns = 300000000, .launches = 200, .step_ns = 3000000,
                                .nsteps = 100, .gpu_idle = 0.70, .high = "host_bound",
                                .apis = "cudaLaunchKernel=3000000,cudaMemcpyAsync=6000000"};

/* Issue 24: a sync each step, 3 ms -> 4 ms a step, launches no slower. */
static int test_new_sync_fails_on_step_time_and_share(void)
{
    struct run c = base;
    c.window_ns = 400000000;
    c.step_ns = 4000000;
    c.apis = "cudaLaunchKernel=3000000,cudaMemcpyAsync=6000000,cudaStreamSynchronize=100000000";
    CHECK_OK(judge(&base, &c, 2, 0));
    const struct gate_crit *k = find(GATE_CK_STEP_P50, NULL);
    CHECK(k != NULL);
    CHECK_EQ(k->verdict, GATE_REGRESSED);
    CHECK(k->has_ci && k->ci_lo > 1.2);
    CHECK_STR(note(k), "+33% (3.00 ms -> 4.00 ms, CI 1.33-1.34)");
    k = find(GATE_CK_API_TIME, "cudaStreamSynchronize");
    CHECK(k != NULL);
    CHECK_EQ(k->verdict, GATE_REGRESSED);
    CHECK_STR(note(k), "new: 25% of the window");
    k = find(GATE_CK_API_TIME, "cudaLaunchKernel");
    CHECK_EQ(k->verdict, GATE_OK); /* its share shrank */
    return 0;
}

static int test_small_new_api_is_listed_not_failed(void)
{
    struct run c = base;
    c.apis = "cudaLaunchKernel=3000000,cudaMemcpyAsync=6000000,cudaEventRecord=3000000";
    CHECK_OK(judge(&base, &c, 2, 0));
    const struct gate_crit *k = find(GATE_CK_API_TIME, "cudaEventRecord");
    CHECK(k != NULL);
    CHECK_EQ(k->verdict, GATE_ONLY_NEW);
    CHECK_STR(note(k), "new: 1% of the window");
    return 0;
}

static int test_api_time_needs_both_the_ratio_and_the_share(void)
{
    struct run b = base, c = base;
    b.apis = "a=6000000,b=30000000,c=120000000"; /* 2 %, 10 %, 40 % of 300 ms */
    c.apis = "a=12000000,b=48000000,c=150000000"; /* 4 %, 16 %, 50 % */
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_API_TIME, "a")->verdict, GATE_OK);        /* 2x, +2 points */
    CHECK_EQ(find(GATE_CK_API_TIME, "b")->verdict, GATE_REGRESSED); /* 1.6x, +6 points */
    CHECK_EQ(find(GATE_CK_API_TIME, "c")->verdict, GATE_OK);        /* 1.25x, +10 points */
    CHECK_STR(note(find(GATE_CK_API_TIME, "b")), "10.0% -> 16.0% of the window");
    c.apis = "b=30000000"; /* a and c gone: never a regression */
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_API_TIME, "c")->verdict, GATE_ONLY_BASE);
    return 0;
}

static int test_same_steps_pass(void)
{
    CHECK_OK(judge(&base, &base, 2, 0));
    for (size_t i = 0; i < ncrit; i++)
        CHECK(crit[i].verdict != GATE_REGRESSED && crit[i].verdict != GATE_NOT_JUDGED);
    CHECK_EQ(find(GATE_CK_STEP_P99, NULL)->verdict, GATE_OK);
    return 0;
}

/* The host runs ahead of the GPU (host steps 1 ms, the GPU's 3 ms): the
 * host's steps doubling with the GPU's unchanged is no regression; with a
 * host paced by the GPU the host's steps decide (issue 36). */
static int test_gpu_steps_where_the_host_runs_ahead(void)
{
    struct run b = base, c = base;
    b.step_ns = b.host_p50_ns = 1000000, b.gpu_step_ns = 3000000;
    c.step_ns = c.host_p50_ns = 2000000, c.gpu_step_ns = 3000000;
    CHECK_OK(judge(&b, &c, 2, 0));
    const struct gate_crit *k = find(GATE_CK_STEP_P50, GATE_STEPS_GPU);
    CHECK(k != NULL);
    CHECK_EQ(k->verdict, GATE_OK);
    c.gpu_step_ns = 4000000; /* the GPU's steps 33 % slower */
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_STEP_P50, GATE_STEPS_GPU)->verdict, GATE_REGRESSED);
    c.nsteps = 15; /* ahead, but too few steps on the GPU's side: not judged */
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_STEP_P50, NULL)->verdict, GATE_NOT_JUDGED);
    CHECK(strstr(note(find(GATE_CK_STEP_P50, NULL)), "runs ahead of the GPU") != NULL);
    c.nsteps = b.nsteps;
    b.step_ns = b.host_p50_ns = c.gpu_step_ns = b.gpu_step_ns; /* paced: not ahead */
    c.step_ns = c.host_p50_ns = 4000000;
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK(find(GATE_CK_STEP_P50, GATE_STEPS_GPU) == NULL);
    CHECK_EQ(find(GATE_CK_STEP_P50, NULL)->verdict, GATE_REGRESSED);
    return 0;
}

static int test_few_steps_are_not_judged(void)
{
    struct run c = base;
    c.nsteps = 10;
    c.step_ns = 6000000;
    CHECK_OK(judge(&base, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_STEP_P50, NULL)->verdict, GATE_NOT_JUDGED);
    CHECK_STR(note(find(GATE_CK_STEP_P50, NULL)), "too few steps");
    return 0;
}

/* A slow tail over 100 steps: the bootstrap's interval lies above 1, but
 * 100 steps cannot bound a p99, so it is noisy; over 2000 it regresses. */
static int test_p99_needs_steps_to_regress(void)
{
    struct run b = base, c = base;
    c.tail_x = 2.2;
    CHECK_OK(judge(&b, &c, 2, 0));
    const struct gate_crit *k = find(GATE_CK_STEP_P99, NULL);
    CHECK(k->has_ci && k->ci_lo > 1.0);
    CHECK_EQ(k->verdict, GATE_NOISY);
    CHECK_EQ(k->m.noise, GATE_NOISE_BOUND);
    CHECK(strstr(note(k), "; too few steps to bound it by order statistics: 368 or more a side "
                          "would settle it") != NULL);
    CHECK_EQ(find(GATE_CK_STEP_P50, NULL)->verdict, GATE_OK);
    b.nsteps = c.nsteps = 2000;
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_STEP_P99, NULL)->verdict, GATE_REGRESSED);
    return 0;
}

static int test_without_steps_time_per_launch(void)
{
    struct run b = base, c = base;
    b.step_ns = 0;
    c.window_ns = 400000000; /* the same 200 launches in 4/3 the time */
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK(find(GATE_CK_STEP_P50, NULL) == NULL);
    const struct gate_crit *k = find(GATE_CK_UNIT, NULL);
    CHECK(k != NULL);
    CHECK_EQ(k->verdict, GATE_REGRESSED);
    CHECK_STR(note(k), "+33% (1.50 ms -> 2.00 ms)");
    return 0;
}

static int test_gpu_idle_rise(void)
{
    struct run c = base;
    c.gpu_idle = 0.85;
    CHECK_OK(judge(&base, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_GPU_IDLE, NULL)->verdict, GATE_REGRESSED);
    CHECK_STR(note(find(GATE_CK_GPU_IDLE, NULL)), "70% -> 85% of the covered time (+15 points)");
    c.gpu_idle = 0.75;
    CHECK_OK(judge(&base, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_GPU_IDLE, NULL)->verdict, GATE_OK);
    c.gpu_idle = -1;
    CHECK_OK(judge(&base, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_GPU_IDLE, NULL)->verdict, GATE_NOT_JUDGED);
    CHECK_STR(note(find(GATE_CK_GPU_IDLE, NULL)), "no GPU activity in the candidate");
    struct run b = base; /* issue 36: 0.3 s covered a side is a moment, not the run */
    c.gpu_idle = 0.85;
    b.gpu_covered_ns = c.gpu_covered_ns = 300000000;
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_GPU_IDLE, NULL)->verdict, GATE_NOT_JUDGED);
    b.gpu_covered_ns = c.gpu_covered_ns = 1200000000;
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_GPU_IDLE, NULL)->verdict, GATE_REGRESSED);
    return 0;
}

/* Issue 36: an API called once a run (cuInit 0.0 % -> 5.5 % of the window
 * in one of 20 identical recordings under load) has no interval: noisy,
 * and 20 calls a side would settle it; with 200 calls it regresses. */
static int test_api_time_with_few_calls_is_noisy(void)
{
    struct run b = base, c = base;
    b.apis = "cuInit=300000/1,cudaLaunchKernel=3000000";
    c.apis = "cuInit=16500000/1,cudaLaunchKernel=3000000";
    CHECK_OK(judge(&b, &c, 2, 0));
    const struct gate_crit *k = find(GATE_CK_API_TIME, "cuInit");
    CHECK_EQ(k->verdict, GATE_NOISY);
    CHECK(strstr(note(k), "too few calls to bound their time: 20 or more a side") != NULL);
    b.apis = "cuInit=300000,cudaLaunchKernel=3000000";
    c.apis = "cuInit=16500000,cudaLaunchKernel=3000000";
    CHECK_OK(judge(&b, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_API_TIME, "cuInit")->verdict, GATE_REGRESSED);
    return 0;
}

static int test_new_high_finding_fails(void)
{
    struct run c = base;
    c.high = "host_bound,sync_per_iteration";
    CHECK_OK(judge(&base, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_FINDING, "host_bound")->verdict, GATE_OK);
    CHECK_EQ(find(GATE_CK_FINDING, "sync_per_iteration")->verdict, GATE_REGRESSED);
    c.high = NULL; /* a finding gone is no regression */
    CHECK_OK(judge(&base, &c, 2, 0));
    CHECK_EQ(find(GATE_CK_FINDING, "host_bound")->verdict, GATE_OK);
    CHECK_STR(note(find(GATE_CK_FINDING, "host_bound")), "gone from candidate");
    return 0;
}

static int test_criteria_selects(void)
{
    struct run c = base;
    c.gpu_idle = 0.99;
    CHECK_OK(judge(&base, &c, 2, GATE_C_STEPS | GATE_C_P99));
    CHECK(find(GATE_CK_GPU_IDLE, NULL) == NULL);
    CHECK(find(GATE_CK_API_TIME, NULL) == NULL);
    CHECK(find(GATE_CK_STEP_P50, NULL) != NULL);
    CHECK_OK(judge(&base, &c, 2, GATE_C_P99));
    CHECK_EQ(ncrit, 0);
    return 0;
}

/* A version 1 baseline still loads; it holds only what p99 needs. */
static int test_version_1_baseline_judges_nothing_else(void)
{
    struct run c = base;
    c.step_ns = 9000000;
    CHECK_OK(judge(&base, &c, 1, 0));
    CHECK_EQ(ncrit, 4); /* steps, API time, GPU idle, findings */
    for (size_t i = 0; i < ncrit; i++) {
        CHECK_EQ(crit[i].verdict, GATE_NOT_JUDGED);
        CHECK_STR(crit[i].why, "the baseline has no run measures (version 1 summary)");
    }
    return 0;
}

/* Ascending durations of @p n calls around @p ns (+-2 %), the slowest 3 %
 * @p tail_x times longer. */
static void calls(uint64_t *v, size_t n, uint64_t ns, double tail_x)
{
    for (size_t i = 0; i < n; i++)
        v[i] = ns * (980 + 40 * i / n) / 1000;
    for (size_t i = n - n * 3 / 100; i < n; i++)
        v[i] = (uint64_t)((double)v[i] * tail_x);
}

/* Issue 36: the p99 of 400 syncs went 1.23 -> 2.78 ms between two
 * recordings of the same workload under CPU load and failed the gate. The
 * per-API p99 now takes the step time p99's order-statistic bound: under
 * 368 calls a side it cannot regress, and says how many would settle it. */
static int test_api_p99_with_too_few_calls_is_noisy(void)
{
    static uint64_t a[2000], b[2000];
    struct gate_opts o;
    struct gate_margin m = {.spread = 1, .nbase = 1};
    double lo, hi, ratio;
    int has_ci = 0;
    char buf[200];
    gate_opts_init(&o);
    calls(a, 300, 1000000, 1.2);
    calls(b, 300, 1000000, 2.6);
    ratio = (double)bootstrap_quantile(b, 300, 0.99) / (double)bootstrap_quantile(a, 300, 0.99);
    CHECK(ratio > o.max_ratio);
    CHECK_EQ(gate_judge_quantile(a, 300, b, 300, 0.99, ratio, o.max_ratio, 1, &o, &lo, &hi,
                                 &has_ci, &m), GATE_NOISY);
    CHECK(has_ci && lo > 1.0); /* the bootstrap alone would have failed it */
    CHECK_EQ(m.noise, GATE_NOISE_BOUND);
    CHECK_EQ(m.settle_n, 368);
    CHECK_STR(gate_noise_note(&m, "calls", buf, sizeof(buf)),
              "too few calls to bound it by order statistics: 368 or more a side would settle it");
    /* the same tail over 2000 calls a side is a regression */
    calls(a, 2000, 1000000, 1.2);
    calls(b, 2000, 1000000, 2.6);
    CHECK_EQ(gate_judge_quantile(a, 2000, b, 2000, 0.99, ratio, o.max_ratio, 1, &o, &lo, &hi,
                                 &has_ci, &m), GATE_REGRESSED);
    CHECK(m.lo > o.max_ratio);
    return 0;
}

/* A ratio past the limit whose lower bound is not: noisy, with an estimate
 * of the calls that would settle it. */
static int test_lower_bound_short_of_the_limit_is_noisy(void)
{
    static uint64_t a[50], b[50];
    struct gate_opts o;
    struct gate_margin m = {.spread = 1, .nbase = 1};
    double lo, hi;
    int has_ci = 0;
    char buf[200];
    gate_opts_init(&o);
    for (size_t i = 0; i < 50; i++) /* 1.0 .. 2.0 ms against 1.2 .. 2.4 ms */
        a[i] = 1000000 + 20000 * i, b[i] = 1200000 + 24000 * i;
    CHECK_EQ(gate_judge_quantile(a, 50, b, 50, 0.5, 1.2, 1.1, 1, &o, &lo, &hi, &has_ci, &m),
             GATE_NOISY);
    CHECK_EQ(m.noise, GATE_NOISE_INTERVAL);
    CHECK(m.lo < 1.1 && m.settle_n > 50);
    CHECK(strncmp(gate_noise_note(&m, "steps", buf, sizeof(buf)),
                  "the interval's lower bound ", 27) == 0);
    CHECK(strstr(buf, " steps a side would settle it") != NULL);
    return 0;
}

static int test_pick_base_is_the_lower_median(void)
{
    double v[] = {3, NAN, 1, 2, 4}, spread;
    unsigned n;
    CHECK_EQ(gate_pick_base(v, 5, &spread, &n), 2 + 1); /* 2 (index 3): lower of 2 and 3 */
    CHECK_EQ(n, 4);
    CHECK(spread == 4.0);
    CHECK_EQ(gate_pick_base(v, 1, &spread, &n), 0);
    CHECK(spread == 1.0);
    double none[] = {NAN, NAN};
    CHECK_EQ(gate_pick_base(none, 2, &spread, &n), -1);
    return 0;
}

/* Judge @p c against @p nb baselines @p b with the defaults. */
static int judge_bases(const struct run *b, size_t nb, const struct run *c)
{
    struct summary *s[4];
    struct gate_opts o;
    judged_free();
    gate_opts_init(&o);
    for (size_t i = 0; i < nb; i++)
        s[i] = mk(&b[i], 2);
    sc = mk(c, 2);
    int rc = gate_eval_run_bases((const struct summary *const *)s, nb, sc, &o, &crit, &ncrit);
    /* the criteria borrow names: keep the summaries until the next judge */
    sb = s[0];
    for (size_t i = 1; i < nb; i++)
        more[i - 1] = s[i];
    return rc;
}

/* Issue 36: three baselines 3.0, 3.3 and 3.6 ms a step (1.2x apart): a
 * candidate at 3.9 ms is past 1.1x the median but not 1.1 x 1.2 = 1.32x;
 * at 4.5 ms (1.36x) it regresses. A HIGH finding of any baseline is not new. */
static int test_baselines_spread_widens_the_limit(void)
{
    struct run b[3] = {base, base, base}, c = base;
    b[1].step_ns = 3300000, b[2].step_ns = 3600000;
    b[2].high = "host_bound,sync_per_iteration";
    c.step_ns = 3900000;
    c.high = "host_bound,sync_per_iteration";
    CHECK_OK(judge_bases(b, 3, &c));
    const struct gate_crit *k = find(GATE_CK_STEP_P50, NULL);
    CHECK_EQ(k->verdict, GATE_NOISY);
    CHECK_EQ(k->m.noise, GATE_NOISE_SPREAD);
    CHECK_EQ(k->m.nbase, 3);
    CHECK(fabs(k->base - 3300000) < 1e5); /* the median baseline */
    CHECK(strstr(note(k), "; within the run-to-run spread of 3 baselines (1.20x): limit 1.32x"));
    CHECK_EQ(find(GATE_CK_FINDING, "sync_per_iteration")->verdict, GATE_OK);
    c.step_ns = 4500000;
    CHECK_OK(judge_bases(b, 3, &c));
    CHECK_EQ(find(GATE_CK_STEP_P50, NULL)->verdict, GATE_REGRESSED);
    return 0;
}

int main(void)
{
    RUN(test_new_sync_fails_on_step_time_and_share);
    RUN(test_small_new_api_is_listed_not_failed);
    RUN(test_api_time_needs_both_the_ratio_and_the_share);
    RUN(test_same_steps_pass);
    RUN(test_few_steps_are_not_judged);
    RUN(test_gpu_steps_where_the_host_runs_ahead);
    RUN(test_p99_needs_steps_to_regress);
    RUN(test_without_steps_time_per_launch);
    RUN(test_gpu_idle_rise);
    RUN(test_api_time_with_few_calls_is_noisy);
    RUN(test_new_high_finding_fails);
    RUN(test_criteria_selects);
    RUN(test_version_1_baseline_judges_nothing_else);
    RUN(test_api_p99_with_too_few_calls_is_noisy);
    RUN(test_lower_bound_short_of_the_limit_is_noisy);
    RUN(test_pick_base_is_the_lower_median);
    RUN(test_baselines_spread_widens_the_limit);
    judged_free();
    return check_status();
}
