/* analysis.c: analysis_load() and the docs/json.md object (analysis.h).
 * Loads the model (model.c), then derives the latency tables (stats.c), the
 * process breakdown (procs.c), the GPU feed (feed.c) and the findings
 * (chains.c). The text report renders the same JSON (report.c). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cudaspy/api.h"
#include "cudaspy/version.h"
#include "rules/account.h"
#include "rules/chains.h"
#include "rules/feed.h"
#include "rules/gpu.h"
#include "model/aggregates.h"
#include "model/model.h"
#include "model/procs.h"
#include "model/steps.h"
#include "rules/pyline.h"
#include "rules/ranks.h"
#include "rules/steptime.h"
#include "model/memory.h"
#include "model/stats.h"

struct dur_cache;

struct analysis {
    struct model m;
    struct stats_table api, by_pid, by_stream, by_kernel;
    struct aggregates agg; /* size-capped runs: the whole run (model/aggregates.h) */
    struct feed feed;
    struct gpu_truth gpu;
    struct account acct; /* rules/account.h: every ns of the window, once */
    struct memory mem;   /* model/memory.h: device memory over time, failures */
    struct steps steps;
    struct pyline py; /* call sites of the calls with stacks */
    /* The CUDA-active windows (or the user's): the account's whole. Findings'
     * shares and severities take it less the set-up and the wind-down
     * (steady_ns()). */
    uint64_t active_ns;
    json_t *chains;
    struct chains_pre *pre; /* the findings' evidence, gathered beside the account */
    json_t *ranks; /* ranks.c: per-rank tables; its finding joins chains */
    uint64_t api_outer_calls, api_nested_calls;
    struct dur_cache *durs; /* analysis_durations() results */
};

void analysis_opts_init(struct analysis_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->until_ns = UINT64_MAX;
    o->tail_ratio = 3.0;
    o->tail_min_calls = 20;
}

/* Longest analysed window over the runs, and their sum. */
static void walls(const struct model *m, uint64_t *longest, uint64_t *sum)
{
    *longest = *sum = 0;
    for (int i = 0; i < m->nruns; i++) {
        uint64_t w = m->runs[i].win_hi_ns - m->runs[i].win_lo_ns;
        *longest = w > *longest ? w : *longest;
        *sum += w;
    }
}

/* Was any run recorded with `record --duty` (a cost measurement)? */
static int any_duty(const struct model *m)
{
    for (int i = 0; i < m->nruns; i++)
        if (cs_run_meta_u64(m->runs[i].run, "duty_ns", 0))
            return 1;
    return 0;
}

/* Run @p i's CUDA-active window: the union of its selected processes'
 * active windows (procs_active_window: CUDA's start-up is left out),
 * inside the analysed window; the analysed window itself when the user set
 * --since or --until. @p first gets the first call of all. */
static void active_window(const struct model *m, int i, uint64_t *lo, uint64_t *hi,
                          uint64_t *first)
{
    const struct m_run *r = &m->runs[i];

    *first = UINT64_MAX;
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint32_t t = 0; t < m->nthr; t++) {
        const struct m_thread *th = &m->thr[t];
        const struct m_proc *p = &m->proc[th->proc];
        if (th->ncalls == 0 || (int)p->run != i || !p->selected)
            continue;
        if (model_call(m, th->first_call).t_enter_ns < *first)
            *first = model_call(m, th->first_call).t_enter_ns;
    }
    for (uint32_t p = 0; p < m->nproc; p++) {
        uint64_t plo, phi;
        if ((int)m->proc[p].run != i || !m->proc[p].selected)
            continue;
        procs_active_window(m, p, &plo, &phi);
        if (plo >= phi)
            continue;
        *lo = plo < *lo ? plo : *lo;
        *hi = phi > *hi ? phi : *hi;
    }
    if (m->opts.since_ns != 0 || m->opts.until_ns != UINT64_MAX || *lo == UINT64_MAX)
        *lo = r->win_lo_ns, *hi = r->win_hi_ns;
    *lo = *lo < r->win_lo_ns ? r->win_lo_ns : *lo;
    *hi = *hi > r->win_hi_ns ? r->win_hi_ns : *hi;
    *hi = *hi < *lo ? *lo : *hi;
}

static uint64_t active_sum(const struct model *m)
{
    uint64_t sum = 0, lo, hi, first;

    for (int i = 0; i < m->nruns; i++) {
        active_window(m, i, &lo, &hi, &first);
        sum += hi - lo;
    }
    return sum;
}

/* Steps of a single run, inside its CUDA-active window. */
static int find_steps(struct analysis *a)
{
    struct steps_opts so = {.want = a->m.opts.step};
    uint64_t first;

    if (a->m.nruns != 1) {
        memset(&a->steps, 0, sizeof(a->steps));
        a->steps.thr = M_NONE;
        snprintf(a->steps.how, sizeof(a->steps.how), "none: several runs");
        return 0;
    }
    active_window(&a->m, 0, &so.win_lo_ns, &so.win_hi_ns, &first);
    return steps_find(&a->m, &so, &a->steps);
}

/* The whole that findings' shares and severities use: the active window
 * less the set-up before the first step and the wind-down after the last
 * (once a run: a longer run would dilute them), unless that leaves
 * nothing. */
static uint64_t steady_ns(const struct analysis *a)
{
    uint64_t su = a->acct.ns[AB_SETUP] + a->acct.ns[AB_WIND_DOWN];

    return a->active_ns > su && su ? a->active_ns - su : a->active_ns;
}

/* The latency tables: they read the model alone, as the device memory and
 * the GPU feed do, so they are built beside the steps (all_build()). */
static int tables_build(struct analysis *a)
{
    struct model *m = &a->m;
    int rc;

    if ((rc = stats_table_build(&a->api, m, STATS_BY_API)) < 0)
        return rc;
    if (m->opts.by_pid && (rc = stats_table_build(&a->by_pid, m, STATS_BY_PID)) < 0)
        return rc;
    if (m->opts.by_stream && (rc = stats_table_build(&a->by_stream, m, STATS_BY_STREAM)) < 0)
        return rc;
    if (m->opts.by_kernel && (rc = stats_table_build(&a->by_kernel, m, STATS_BY_KERNEL)) < 0)
        return rc;
    return 0;
}

static int memory_build(struct analysis *a)
{
    return memory_compute(&a->mem, &a->m);
}

struct side {
    struct analysis *a;
    int (*fn)(struct analysis *a);
    pthread_t th;
    int started, rc;
};

static void *side_main(void *arg)
{
    struct side *s = arg;

    s->rc = s->fn(s->a);
    return NULL;
}

static int feed_build(struct analysis *a)
{
    return feed_compute(&a->feed, &a->m);
}

/* The latency tables, the device memory and the GPU feed, each on a thread
 * of its own (or in turn where none can be had), beside the steps; then
 * what needs the steps: the feed's set-up, the GPU's own account. */
static int all_build(struct analysis *a, struct step_setup *su)
{
    struct side s[3] = {{.a = a, .fn = tables_build},
                        {.a = a, .fn = memory_build},
                        {.a = a, .fn = feed_build}};
    int rc;

    for (int i = 0; i < 3; i++)
        s[i].started = pthread_create(&s[i].th, NULL, side_main, &s[i]) == 0;
    rc = find_steps(a);
    for (int i = 0; i < 3; i++) {
        if (s[i].started)
            pthread_join(s[i].th, NULL);
        else
            s[i].rc = s[i].fn(a);
        rc = rc < 0 ? rc : s[i].rc;
    }
    if (rc < 0)
        return rc;
    *su = steps_setup_end(&a->m, &a->steps);
    feed_setup(&a->feed, &a->m, su);
    return gpu_compute(&a->gpu, &a->m, &a->feed, su);
}

static int gather_build(struct analysis *a)
{
    a->pre = chains_gather(&a->m, &a->api, &a->feed, &a->gpu, &a->mem);
    return 0;
}

/* The account and, on a thread beside it, the findings' evidence that needs
 * none (chains_gather()); then the findings. */
static int account_build(struct analysis *a, const struct step_setup *su)
{
    struct side g = {.a = a, .fn = gather_build};
    int rc;

    g.started = pthread_create(&g.th, NULL, side_main, &g) == 0;
    rc = account_compute(&a->acct, &a->m, &a->feed, &a->gpu, &a->steps, su, &a->mem,
                         a->active_ns);
    if (g.started)
        pthread_join(g.th, NULL);
    else
        gather_build(a);
    a->chains = chains_finish(a->pre, &a->acct, steady_ns(a)); /* frees pre */
    a->pre = NULL;
    if (rc < 0)
        return rc;
    return a->chains ? 0 : -ENOMEM;
}

static int derive(struct analysis *a)
{
    struct model *m = &a->m;
    struct step_setup su;
    uint64_t longest, sum;
    int rc;

    procs_compute(m);
    if ((rc = all_build(a, &su)) < 0)
        return rc;
    for (uint32_t i = 0; i < a->api.nrow; i++) {
        if (a->api.row[i].is_nested)
            a->api_nested_calls += a->api.row[i].n;
        else
            a->api_outer_calls += a->api.row[i].n;
    }
    walls(m, &longest, &sum);
    a->active_ns = active_sum(m);
    if ((rc = account_build(a, &su)) < 0)
        return rc;
    rc = ranks_build(m, steady_ns(a), a->chains, &a->ranks);
    if (rc == 0 && (rc = pyline_compute(&a->py, m, &a->feed, &a->gpu)) == 0)
        pyline_annotate(&a->py, m, a->chains);
    if (rc == 0 && any_duty(m)) /* half the scheduling events are missing: no cause holds */
        json_array_clear(a->chains);
    return rc;
}

int analysis_load(const char *const *paths, int n, const struct analysis_opts *o,
                  struct analysis **out, struct cs_err *err)
{
    struct analysis *a = calloc(1, sizeof(*a));
    int rc;

    *out = NULL;
    if (a == NULL)
        return -ENOMEM;
    rc = model_load(&a->m, paths, n, o, err);
    if (rc == 0)
        rc = aggregates_load(&a->agg, &a->m, err);
    if (rc == 0 && (rc = derive(a)) < 0) {
        if (rc == -ENOENT)
            cs_err_set(err, rc, "--step: %s", a->steps.how);
        else
            cs_err_set(err, rc, "analysis: %s", cs_strerror(rc));
    }
    if (rc < 0) {
        analysis_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* ---- JSON ---- */

static const char *tier_of(const struct m_run *r)
{
    const char *t = cs_run_meta(r->run, "sampler_tier");
    return t && *t ? t : "none";
}

static int run_empty(const struct m_run *r)
{
    for (unsigned k = 1; k < CS_REC_KIND_COUNT; k++)
        if (r->counts[k])
            return 0;
    return 1;
}

/* What run @p r lacks, one phrase each, appended to @p list. */
static void missing_of(const struct model *m, int i, json_t *list)
{
    const struct m_run *r = &m->runs[i];
    char pre[300] = "";
    char buf[1024];
    unsigned long long duty_ms = cs_run_meta_u64(r->run, "duty_ns", 0) / 1000000;

    if (m->nruns > 1)
        snprintf(pre, sizeof(pre), "%s: ", r->path);
#define MISSING(...)                                                                           \
    do {                                                                                       \
        snprintf(buf, sizeof(buf), __VA_ARGS__);                                               \
        json_array_append_new(list, json_string(buf));                                         \
    } while (0)
    if (run_empty(r)) {
        MISSING("%sempty run: no records at all", pre);
        return;
    }
    if (r->counts[CS_REC_CUDA] == 0)
        MISSING("%sno CUDA calls (was libcudaspy.so preloaded into a CUDA program?)", pre);
    if (duty_ms)
        MISSING("%shalf the run: recorded in phases of %llu ms on, %llu ms off (record --duty); "
                "calls cover the on phases only, and no finding is made: the perf events "
                "paused too, so waits and their causes are incomplete",
                pre, duty_ms, duty_ms);
    if (r->is_capture && r->ncapture == 0)
        MISSING("%sno capture range was recorded (record --delay, --duration, --capture): "
                "nothing to analyse", pre);
    else if (r->is_kept)
        MISSING("%s%.2f s between the window the trigger kept (record --keep-on '%s') and the "
                "tail was evicted: the analysis spans both, and splits that time as it splits "
                "the recorded one", pre, (double)model_capture_gap_ns(r) / 1e9,
                cs_run_meta(r->run, "flight_keep_on") ? cs_run_meta(r->run, "flight_keep_on")
                                                      : "?");
    else if (model_capture_gap_ns(r))
        MISSING("%s%.2f s between the %u capture ranges was not recorded: the analysis spans "
                "them all, and splits that time as it splits the recorded one",
                pre, (double)model_capture_gap_ns(r) / 1e9, r->ncapture);
    if (strcmp(tier_of(r), "none") == 0) {
        const char *why = cs_run_meta(r->run, "sampler_tier_reason");
        MISSING("%sno host data (sampler tier none%s%s)", pre, why && *why ? ": " : "",
                why && *why ? why : "");
        return;
    }
    if (r->counts[CS_REC_OFFCPU] == 0)
        MISSING("%sno off-CPU intervals (causes of slow calls cannot be decomposed)", pre);
    if (r->counts[CS_REC_PWIN] == 0)
        MISSING("%sno per-process windows (no CPU, switch or page-allocation counters)", pre);
    if (r->counts[CS_REC_SYSWIN] == 0)
        MISSING("%sno system windows (system CPU use and outside processes unknown)", pre);
#undef MISSING
}

static json_t *json_missing(const struct model *m)
{
    json_t *list = json_array();

    for (int i = 0; i < m->nruns; i++)
        missing_of(m, i, list);
    return list;
}

static json_t *counts_json(const struct m_run *r)
{
    static const char *const names[CS_REC_KIND_COUNT] = {
        NULL, "cuda", "offcpu", "runq", "pwin", "syswin", "counter", "lost", "gpu", "gpucov",
        "nvtx", "pysample"};
    json_t *o = json_object();

    for (unsigned k = 1; k < CS_REC_KIND_COUNT; k++)
        if (k != CS_REC_PYSAMPLE || r->counts[k]) /* only runs that have them */
            json_object_set_new(o, names[k], json_integer((json_int_t)r->counts[k]));
    return o;
}

static int run_degraded(const struct m_run *r)
{
    return r->lost_perf || r->lost_shim || cs_run_meta_u64(r->run, "cuda_dropped", 0) ||
           cs_run_meta_u64(r->run, "host_lost", 0) ||
           cs_run_meta_u64(r->run, "clean_shutdown", 1) == 0;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Meta @p key of run @p r as a JSON integer, null when the run has none
 * (collector_cpu_ns: a collector that died, an older run; duty_ns: a run
 * recorded without --duty). */
static json_t *meta_int_json(const struct m_run *r, const char *key)
{
    return cs_run_meta(r->run, key) ? json_integer((json_int_t)cs_run_meta_u64(r->run, key, 0))
                                    : json_null();
}

/* Initialisation calls (cuInit, primary context) of run @p i's process
 * with the first CUDA call: how long CUDA took to start. */
static uint64_t cuda_init_ns(const struct model *m, uint64_t first)
{
    for (uint32_t t = 0; t < m->nthr; t++)
        if (m->thr[t].ncalls && model_call(m, m->thr[t].first_call).t_enter_ns == first)
            return m->proc[m->thr[t].proc].st.init_ns; /* procs_compute() summed them */
    return 0;
}

/* Start-up (the traced command's start to its first CUDA call, CUDA's
 * initialisation) and the CUDA-active window of run @p i, into @p o. */
static void startup_json(json_t *o, const struct model *m, int i)
{
    const struct m_run *r = &m->runs[i];
    uint64_t lo, hi, first, start = r->t0_ns;

    active_window(m, i, &lo, &hi, &first);
    for (uint32_t p = 0; p < m->nproc; p++)
        if (m->proc[p].run == (uint32_t)i && (m->proc[p].flags & CS_PF_ROOT) &&
            m->proc[p].start_ns > start)
            start = m->proc[p].start_ns;
    json_object_set_new(o, "startup_ns",
                        json_integer(first != UINT64_MAX && first > start
                                         ? (json_int_t)(first - start) : 0));
    json_object_set_new(o, "cuda_init_ns",
                        json_integer(first != UINT64_MAX ? (json_int_t)cuda_init_ns(m, first) : 0));
    json_object_set_new(o, "active_start_ns", json_integer((json_int_t)(lo - r->t0_ns)));
    json_object_set_new(o, "active_ns", json_integer((json_int_t)(hi - lo)));
}

/* host_lost meta is the collector's total; lost records are its detail. */
static json_t *file_json(const struct model *m, int i)
{
    const struct m_run *r = &m->runs[i];
    const char *cmd = cs_run_meta(r->run, "cmdline");
    const char *host = cs_run_meta(r->run, "host");
    const char *why = cs_run_meta(r->run, "sampler_tier_reason");
    json_t *o;

    o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:I, s:I, s:I, s:b, "
                     "s:b, s:b, s:o, s:i}",
                     "path", r->path, "command", cmd ? cmd : "", "host", host ? host : "",
                     "t_start_ns", (json_int_t)r->t0_ns, "t_end_ns", (json_int_t)r->t_end_ns,
                     "duration_ns", (json_int_t)(r->t_end_ns - r->t0_ns), "window_start_ns",
                     (json_int_t)(r->win_lo_ns - r->t0_ns), "window_end_ns",
                     (json_int_t)(r->win_hi_ns - r->t0_ns), "sampler_tier", tier_of(r),
                     "sampler_tier_reason", why ? why : "", "cuda_dropped",
                     (json_int_t)cs_run_meta_u64(r->run, "cuda_dropped", 0), "host_lost",
                     (json_int_t)max_u64(cs_run_meta_u64(r->run, "host_lost", 0), r->lost_perf),
                     "shim_lost", (json_int_t)r->lost_shim, "clean_shutdown",
                     (int)cs_run_meta_u64(r->run, "clean_shutdown", 1), "degraded",
                     run_degraded(r), "empty", run_empty(r), "counts", counts_json(r), "ncpu",
                     (int)r->ncpu);
    startup_json(o, m, i);
    /* the collector's CPU time: what tracing cost outside the traced tree */
    json_object_set_new(o, "collector_cpu_ns", meta_int_json(r, "collector_cpu_ns"));
    json_object_set_new(o, "duty_ns", meta_int_json(r, "duty_ns"));
    return o;
}

/* A run recorded in capture ranges (docs/capture.md): what was asked, the
 * ranges (ns from the run's start) and what the hull holds unrecorded. */
static json_t *capture_json(const struct m_run *r)
{
    const char *mode = cs_run_meta(r->run, r->is_kept ? "flight_keep_on" : "capture");
    json_t *o = json_object(), *ranges = json_array();
    uint64_t recorded = 0;

    for (uint32_t i = 0; i < r->ncapture; i++) {
        uint64_t t0 = r->capture[2 * i], t1 = r->capture[2 * i + 1];
        json_array_append_new(ranges, json_pack("[I, I]", (json_int_t)(t0 - r->t0_ns),
                                                (json_int_t)(t1 - r->t0_ns)));
        recorded += t1 - t0;
    }
    json_object_set_new(o, "mode", json_string(mode ? mode : ""));
    if (r->is_kept) /* a size-capped run's trigger: the kept window, then the tail */
        json_object_set_new(o, "keep_on", json_true());
    json_object_set_new(o, "ranges", ranges);
    json_object_set_new(o, "recorded_ns", json_integer((json_int_t)recorded));
    json_object_set_new(o, "not_recorded_ns", json_integer((json_int_t)model_capture_gap_ns(r)));
    return o;
}

/* A size-capped run (record --max-size): which part has every record, and
 * the whole run's totals from its aggregates. */
static json_t *flight_json(const struct analysis *a, int i)
{
    const struct agg_run *g = &a->agg.run[i];
    const struct m_run *r = &a->m.runs[i];
    const struct cs_agg_host *h = &g->host;
    json_t *o = json_object();

    json_object_set_new(o, "max_size_bytes", json_integer((json_int_t)g->max_size_bytes));
    json_object_set_new(o, "window_ns", json_integer((json_int_t)g->window_ns));
    json_object_set_new(o, "detail_from_ns", json_integer((json_int_t)(g->detail_from_ns - r->t0_ns)));
    json_object_set_new(o, "detail_to_ns", json_integer((json_int_t)(r->win_hi_ns - r->t0_ns)));
    json_object_set_new(o, "evicted_blocks", json_integer((json_int_t)g->evicted_blocks));
    json_object_set_new(o, "evicted_records", json_integer((json_int_t)g->evicted_records));
    json_object_set_new(o, "late_records", json_integer((json_int_t)g->late_records));
    json_object_set_new(o, "outermost_calls", json_integer((json_int_t)g->calls));
    json_object_set_new(o, "nested_calls", json_integer((json_int_t)g->nested_calls));
    json_object_set_new(
        o, "host",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:I, s:I, s:I}",
                  "oncpu_ns", (json_int_t)h->oncpu_ns, "sleep_ns", (json_int_t)h->sleep_ns,
                  "disk_ns", (json_int_t)h->disk_ns, "preempted_ns", (json_int_t)h->preempt_ns,
                  "runq_delay_ns", (json_int_t)h->runq_ns, "offcpu_ns", "sleep",
                  (json_int_t)h->off_ns[CS_OFF_SLEEP], "disk", (json_int_t)h->off_ns[CS_OFF_DISK],
                  "preempted", (json_int_t)h->off_ns[CS_OFF_PREEMPT], "blocked",
                  (json_int_t)h->off_ns[CS_OFF_BLOCKED], "other",
                  (json_int_t)h->off_ns[CS_OFF_OTHER], "offcpu_intervals",
                  (json_int_t)(h->off_count[1] + h->off_count[2] + h->off_count[3] +
                               h->off_count[4] + h->off_count[5]),
                  "runq_waits", (json_int_t)h->runq_waits, "runq_wait_ns",
                  (json_int_t)h->runq_wait_ns));
    json_object_set_new(
        o, "gpu",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "kernels",
                  (json_int_t)g->gpu.count[CS_GPU_KERNEL], "kernel_ns",
                  (json_int_t)g->gpu.dur_ns[CS_GPU_KERNEL], "copies",
                  (json_int_t)g->gpu.count[CS_GPU_MEMCPY], "copy_ns",
                  (json_int_t)g->gpu.dur_ns[CS_GPU_MEMCPY], "memsets",
                  (json_int_t)g->gpu.count[CS_GPU_MEMSET], "memset_ns",
                  (json_int_t)g->gpu.dur_ns[CS_GPU_MEMSET]));
    return o;
}

static json_t *json_run(const struct analysis *a)
{
    const struct model *m = &a->m;
    json_t *files = json_array(), *o;
    uint64_t longest, sum, ncuda = 0, nhost = 0;
    int degraded = 0, empty = 1;
    unsigned ncpu = 0;

    for (int i = 0; i < m->nruns; i++) {
        const struct m_run *r = &m->runs[i];
        json_array_append_new(files, file_json(m, i));
        if (a->agg.run[i].capped)
            json_object_set_new(json_array_get(files, (size_t)i), "flight", flight_json(a, i));
        if (r->is_capture)
            json_object_set_new(json_array_get(files, (size_t)i), "capture", capture_json(r));
        degraded |= run_degraded(r);
        empty &= run_empty(r);
        ncuda += r->counts[CS_REC_CUDA];
        for (unsigned k = CS_REC_OFFCPU; k <= CS_REC_LOST; k++)
            nhost += r->counts[k];
        ncpu = r->ncpu > ncpu ? r->ncpu : ncpu;
    }
    walls(m, &longest, &sum);
    o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:i, s:b, s:b, s:i, s:o}", "command",
                  m->nruns ? json_string_value(json_object_get(json_array_get(files, 0),
                                                               "command"))
                           : "",
                  "duration_ns", (json_int_t)longest, "wall_ns", (json_int_t)sum, "cuda_records",
                  (json_int_t)ncuda, "host_records", (json_int_t)nhost, "ncpu", (int)ncpu,
                  "degraded", degraded, "empty", empty, "nruns", m->nruns, "files", files);
    json_object_set_new(o, "tool_version", json_string(CS_VERSION));
    json_object_set_new(o, "active_ns", json_integer((json_int_t)a->active_ns));
    json_object_set_new(o, "outermost_calls", json_integer((json_int_t)a->api_outer_calls));
    json_object_set_new(o, "nested_calls", json_integer((json_int_t)a->api_nested_calls));
    return o;
}

static json_t *row_json(const struct model *m, const struct stats_row *r, enum stats_by by)
{
    char name[96];
    const struct cs_api_info *in = &cs_api_table[r->api];
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "api",
        stats_row_name(r, name, sizeof(name)), "layer",
        in->layer == CS_LAYER_RUNTIME ? "runtime" : "driver", "family",
        cs_family_name((enum cs_family)in->family), "nested", r->is_nested, "count",
        (json_int_t)r->s.count, "total_ns", (json_int_t)r->s.total_ns, "mean_ns",
        (json_int_t)r->s.mean_ns, "min_ns", (json_int_t)r->s.min_ns, "p50_ns",
        (json_int_t)r->s.p50_ns, "p90_ns", (json_int_t)r->s.p90_ns, "p99_ns",
        (json_int_t)r->s.p99_ns, "p999_ns", (json_int_t)r->s.p999_ns, "max_ns",
        (json_int_t)r->s.max_ns, "errors", (json_int_t)r->errors);

    if (by == STATS_BY_PID || by == STATS_BY_STREAM) {
        json_object_set_new(o, "pid", json_integer(m->proc[r->proc].pid));
        json_object_set_new(o, "run", json_integer(m->proc[r->proc].run));
    }
    if (by == STATS_BY_STREAM)
        json_object_set_new(o, "stream", json_integer((json_int_t)r->stream));
    if (by == STATS_BY_KERNEL)
        json_object_set_new(o, "kernel",
                            json_string(cs_run_string(m->runs[r->name_run].run, r->name_id)));
    return o;
}

static json_t *table_json(const struct model *m, const struct stats_table *t)
{
    json_t *arr = json_array();

    for (uint32_t i = 0; i < t->nrow; i++)
        json_array_append_new(arr, row_json(m, &t->row[i], t->by));
    return arr;
}

/* The device ordinals in mask @p d, ascending. */
static json_t *devices_json(uint16_t d)
{
    json_t *a = json_array();

    for (int i = 0; i < 16; i++)
        if (d & (1u << i))
            json_array_append_new(a, json_integer(i));
    return a;
}

static json_t *proc_json(const struct model *m, uint32_t i)
{
    const struct m_proc *p = &m->proc[i];
    const struct m_proc_stats *s = &p->st;
    json_t *o = json_pack(
        "{s:i, s:i, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "pid", (int)p->pid, "ppid", (int)p->ppid, "comm", p->comm, "role",
        procs_role_name(p->role), "run", (int)p->run, "cuda_calls", (json_int_t)s->cuda_calls,
        "cuda_ns", (json_int_t)s->cuda_ns, "oncpu_ns", (json_int_t)s->oncpu_ns, "offcpu_ns",
        (json_int_t)(s->sleep_ns + s->disk_ns + s->preempt_ns), "sleep_ns",
        (json_int_t)s->sleep_ns, "disk_ns", (json_int_t)s->disk_ns, "preempted_ns",
        (json_int_t)s->preempt_ns, "runq_delay_ns", (json_int_t)s->runq_ns, "max_stall_ns",
        (json_int_t)s->max_stall_ns, "ctx_switches", (json_int_t)(s->vcsw + s->ivcsw),
        "page_allocs", (json_int_t)s->page_allocs, "page_faults",
        (json_int_t)(s->minflt + s->majflt));

    json_object_set_new(o, "vcsw", json_integer((json_int_t)s->vcsw));
    json_object_set_new(o, "ivcsw", json_integer((json_int_t)s->ivcsw));
    json_object_set_new(o, "major_faults", json_integer((json_int_t)s->majflt));
    json_object_set_new(o, "migrations", json_integer((json_int_t)s->migrations));
    json_object_set_new(o, "max_stall_at_ns",
                        json_integer(s->max_stall_ns ? (json_int_t)(s->max_stall_at_ns -
                                                                    m->runs[p->run].t0_ns)
                                                     : 0));
    json_object_set_new(o, "cmdline", json_string(cs_run_string(m->runs[p->run].run,
                                                                p->cmdline_id)));
    if (p->rank != CS_RANK_NONE)
        json_object_set_new(o, "rank", json_integer(p->rank));
    json_object_set_new(o, "devices", devices_json(p->devices));
    json_object_set_new(o, "exited", json_boolean(p->flags & CS_PF_EXITED));
    return o;
}

static int cmp_proc_ix(const void *a, const void *b, void *arg)
{
    const struct model *m = arg;
    const struct m_proc *x = &m->proc[*(const uint32_t *)a], *y = &m->proc[*(const uint32_t *)b];
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    if (x->role != y->role)
        return x->role == M_ROLE_CUDA_MAIN ? -1 : y->role == M_ROLE_CUDA_MAIN ? 1
                                                  : x->role == M_ROLE_WORKER   ? -1
                                                                                : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static json_t *json_procs(const struct model *m)
{
    json_t *arr = json_array();
    uint32_t *ix = malloc((m->nproc ? m->nproc : 1) * sizeof(*ix)), n = 0;

    if (ix == NULL)
        return arr;
    for (uint32_t i = 0; i < m->nproc; i++)
        if (m->proc[i].selected)
            ix[n++] = i;
    qsort_r(ix, n, sizeof(*ix), cmp_proc_ix, (void *)m);
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(arr, proc_json(m, ix[i]));
    free(ix);
    return arr;
}

/* Driver calls folded into runtime records (shim.h): each pair with its
 * count, most first; NULL when there are none. */
static json_t *folded_json(const struct model *m)
{
    json_t *arr;
    uint32_t ix[64], n = 0;

    for (uint32_t i = 0; m->fold && i < (uint32_t)CS_API_COUNT * CS_API_COUNT; i++)
        if (m->fold[i] && n < sizeof(ix) / sizeof(ix[0]))
            ix[n++] = i;
    if (n == 0)
        return NULL;
    for (uint32_t i = 1; i < n; i++) /* insertion sort: count, most first, then ids */
        for (uint32_t j = i; j > 0 && m->fold[ix[j]] > m->fold[ix[j - 1]]; j--) {
            uint32_t t = ix[j];
            ix[j] = ix[j - 1], ix[j - 1] = t;
        }
    arr = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:I}", "runtime",
                                             cs_api_table[ix[i] / CS_API_COUNT].name, "driver",
                                             cs_api_table[ix[i] % CS_API_COUNT].name, "count",
                                             (json_int_t)m->fold[ix[i]]));
    return arr;
}

json_t *analysis_json(const struct analysis *a)
{
    json_t *folded = folded_json(&a->m);

    json_t *o = json_object();

    json_object_set_new(o, "run", json_run(a));
    json_object_set_new(o, "missing", json_missing(&a->m));
    if (a->agg.any) { /* the whole run's table; the exact one covers the detailed part */
        json_object_set_new(o, "apis", table_json(&a->m, &a->agg.api));
        json_object_set_new(o, "apis_source", json_string("aggregates"));
        json_object_set_new(o, "apis_detail", table_json(&a->m, &a->api));
    } else {
        json_object_set_new(o, "apis", table_json(&a->m, &a->api));
    }
    if (folded)
        json_object_set_new(o, "folded_driver_calls", folded);
    if (a->m.opts.by_pid)
        json_object_set_new(o, "apis_by_pid", table_json(&a->m, &a->by_pid));
    if (a->m.opts.by_stream)
        json_object_set_new(o, "apis_by_stream", table_json(&a->m, &a->by_stream));
    if (a->m.opts.by_kernel)
        json_object_set_new(o, "apis_by_kernel", table_json(&a->m, &a->by_kernel));
    if (a->m.opts.by_kernel) /* a graph launch names no kernel: its GPU records do */
        json_object_set_new(o, "kernels_in_graphs", gpu_graph_kernels_json(&a->m));
    if (a->m.opts.by_pyline)
        json_object_set_new(o, "pylines", pyline_json(&a->py, &a->m));
    json_object_set_new(o, "processes", json_procs(&a->m));
    json_object_set_new(o, "gpu_feed", feed_json(&a->feed, &a->m));
    json_object_set_new(o, "gpu", gpu_json(&a->gpu, &a->m));
    json_object_set_new(o, "account", account_json(&a->acct, &a->m));
    json_object_set_new(o, "memory", memory_json(&a->mem, &a->m));
    json_object_set_new(o, "steps", steptime_json(&a->steps, &a->m, &a->gpu, a->chains,
                                                  a->m.nruns ? a->m.runs[0].t0_ns : 0));
    json_object_set_new(o, "chains", json_deep_copy(a->chains));
    if (json_array_size(a->ranks))
        json_object_set_new(o, "ranks", json_deep_copy(a->ranks));
    json_t *hosts = clocks_json(&a->m);
    if (hosts)
        json_object_set_new(o, "hosts", hosts);
    return o;
}

/* ---- durations ---- */

/* analysis_durations() takes a const analysis but caches what it sorts: the
 * cache is the one mutable part, and its arrays live until analysis_free(). */
struct dur_cache {
    struct dur_cache *next;
    char api[96];
    uint32_t pid;
    char *kernel;
    uint64_t *v;
    size_t n;
};

static int call_matches(const struct model *m, const struct m_call *c, enum cs_api api,
                        enum cs_variant v, uint32_t pid, const char *kernel)
{
    const struct m_proc *p;

    if (c->api != api || c->variant != v || (c->flags & CS_CF_NESTED))
        return 0;
    p = model_call_proc(m, c);
    if (pid && p->pid != pid)
        return 0;
    if (kernel && strcmp(cs_run_string(m->runs[p->run].run, model_name_id(c)), kernel) != 0)
        return 0;
    return 1;
}

static struct dur_cache *dur_compute(const struct analysis *a, const char *name, uint32_t pid,
                                     const char *kernel)
{
    enum cs_variant v = CS_VAR_LEGACY;
    enum cs_api api = cs_api_lookup(name, &v);
    struct dur_cache *d = calloc(1, sizeof(*d));
    size_t cap = 0;

    if (d == NULL)
        return NULL;
    snprintf(d->api, sizeof(d->api), "%s", name);
    d->pid = pid;
    d->kernel = kernel ? strdup(kernel) : NULL;
    for (uint64_t i = 0; api != CS_API_NONE && i < a->m.ncall; i++) {
        const struct m_call cv = model_call(&a->m, i), *c = &cv;
        if (!call_matches(&a->m, c, api, v, pid, kernel))
            continue;
        if (d->n == cap) {
            cap = cap ? cap * 2 : 256;
            uint64_t *q = realloc(d->v, cap * sizeof(*q));
            if (q == NULL)
                break;
            d->v = q;
        }
        d->v[d->n++] = model_dur(c);
    }
    stats_sort(d->v, d->n, NULL);
    return d;
}

const uint64_t *analysis_durations(const struct analysis *a, const char *api, uint32_t pid,
                                   const char *kernel, size_t *n)
{
    struct analysis *mut = (struct analysis *)a;
    struct dur_cache *d;

    *n = 0;
    if (api == NULL)
        return NULL;
    for (d = mut->durs; d; d = d->next)
        if (strcmp(d->api, api) == 0 && d->pid == pid &&
            ((!d->kernel && !kernel) || (d->kernel && kernel && !strcmp(d->kernel, kernel))))
            break;
    if (d == NULL) {
        if ((d = dur_compute(a, api, pid, kernel)) == NULL)
            return NULL;
        d->next = mut->durs;
        mut->durs = d;
    }
    *n = d->n;
    return d->n ? d->v : NULL;
}

const char *analysis_gpu_bins(const struct analysis *a, int run, uint32_t pid, uint64_t t0,
                              uint64_t t1, int nbins, double *out)
{
    double *one = calloc((size_t)nbins + 1, sizeof(*one));

    for (int b = 0; b < nbins; b++)
        out[b] = -1.0;
    for (uint32_t i = 0; one && i < a->gpu.np; i++) {
        uint32_t p = a->gpu.p[i].proc;
        if ((int)a->m.proc[p].run != run || a->gpu.p[i].source < GPU_SRC_SAMPLED ||
            (pid && a->m.proc[p].pid != pid))
            continue;
        gpu_bins(&a->gpu, &a->m, p, t0, t1, nbins, one);
        for (int b = 0; b < nbins; b++) /* processes side by side: the busiest */
            if (one[b] > out[b])
                out[b] = one[b];
    }
    free(one);
    return gpu_source_name(a->gpu.source);
}

struct cs_run *analysis_run(const struct analysis *a, int i)
{
    return i >= 0 && i < a->m.nruns ? a->m.runs[i].run : NULL;
}

int analysis_nruns(const struct analysis *a)
{
    return a->m.nruns;
}

uint64_t analysis_t0(const struct analysis *a, int i)
{
    return i >= 0 && i < a->m.nruns ? a->m.runs[i].t0_ns : 0;
}

json_t *analysis_pylines(const struct analysis *a)
{
    return pyline_json(&a->py, &a->m);
}

const struct steps *analysis_steps(const struct analysis *a, uint32_t *pid, uint32_t *tid)
{
    const struct m_thread *t = a->steps.thr != M_NONE ? &a->m.thr[a->steps.thr] : NULL;

    *pid = t ? a->m.proc[t->proc].pid : 0;
    *tid = t ? t->tid : 0;
    return &a->steps;
}

size_t analysis_step_gpu_durations(const struct analysis *a, uint64_t *out, uint64_t *host)
{
    return steps_gpu_durations(&a->m, &a->steps, out, host);
}

int analysis_setup(const struct analysis *a, uint64_t *t0, uint64_t *t1)
{
    return steps_setup(&a->m, &a->steps, t0, t1);
}

const struct memory *analysis_memory(const struct analysis *a)
{
    return &a->mem;
}

int analysis_account_window(const struct analysis *a, size_t i, uint32_t *pid, uint16_t *device,
                            uint64_t *t0, uint64_t *t1)
{
    const struct acct *p = i < a->acct.na ? &a->acct.a[i] : NULL;

    if (p == NULL)
        return 0;
    *pid = a->m.proc[p->proc].pid;
    *device = p->device;
    *t0 = p->lo_ns;
    *t1 = p->hi_ns;
    return 1;
}

void analysis_free(struct analysis *a)
{
    if (a == NULL)
        return;
    while (a->durs) {
        struct dur_cache *d = a->durs;
        a->durs = d->next;
        free(d->kernel);
        free(d->v);
        free(d);
    }
    stats_table_exit(&a->api);
    aggregates_exit(&a->agg);
    stats_table_exit(&a->by_pid);
    stats_table_exit(&a->by_stream);
    stats_table_exit(&a->by_kernel);
    feed_exit(&a->feed);
    gpu_exit(&a->gpu);
    account_exit(&a->acct);
    memory_exit(&a->mem);
    steps_free(&a->steps);
    pyline_exit(&a->py);
    json_decref(a->chains);
    json_decref(a->ranks);
    model_exit(&a->m);
    free(a);
}
