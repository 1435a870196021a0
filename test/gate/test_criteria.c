/* test_criteria.c: unit.gate_criteria: the gate's run criteria (criteria.c)
 * on synthetic version 2 summaries: a new API over its share of the window
 * fails and a small one does not, both limits of the API time, step time
 * with its interval, too few steps, time per launch without steps, GPU
 * idle, new HIGH findings, --criteria, and a version 1 baseline that holds
 * none of it (issue 24). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* One group per "name=total" of @p apis: 200 calls of total/200 each. */
static json_t *groups_json(const char *apis)
{
    json_t *gs = json_array();
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", apis);
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        *eq = '\0';
        json_int_t total = strtoll(eq + 1, NULL, 10), d = total / 200;
        json_array_append_new(
            gs, json_pack("{s:s, s:n, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:[I]}", "api", t,
                          "kernel", "count", 200, "min_ns", d, "max_ns", d, "p50_ns", d,
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
        json_object_set_new(j, "gpu", r->gpu_idle < 0 ? json_null()
                                                      : json_pack("{s:s, s:f}", "source",
                                                                  "sampled", "idle_fraction",
                                                                  r->gpu_idle));
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
static struct summary *sb, *sc;

static void judged_free(void)
{
    free(crit);
    summary_free(sb);
    summary_free(sc);
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
    CHECK(strstr(note(k), "; too few steps to bound the p99") != NULL);
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

int main(void)
{
    RUN(test_new_sync_fails_on_step_time_and_share);
    RUN(test_small_new_api_is_listed_not_failed);
    RUN(test_api_time_needs_both_the_ratio_and_the_share);
    RUN(test_same_steps_pass);
    RUN(test_few_steps_are_not_judged);
    RUN(test_p99_needs_steps_to_regress);
    RUN(test_without_steps_time_per_launch);
    RUN(test_gpu_idle_rise);
    RUN(test_new_high_finding_fails);
    RUN(test_criteria_selects);
    RUN(test_version_1_baseline_judges_nothing_else);
    judged_free();
    return check_status();
}
