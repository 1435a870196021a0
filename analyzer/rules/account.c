/* rules/account.c: the one account of account.h. Per feeding process and
 * device it walks the window once: the set-up before the first step is one
 * bucket; after it, where GPU activity was recorded, each busy piece and
 * each idle stretch of the covered time (gpu_walk); elsewhere the host's
 * lower bound, the feed's gaps (feed.h). Inside an idle stretch every
 * feeding thread's state is followed at once (its CUDA calls and off-CPU
 * intervals) and the nanosecond goes to the state that explains the wait
 * best: a thread launching or running host code before one asleep, so that
 * a main thread asleep while autograd's thread launches the backward is
 * the launches, not a data wait. Sampled coverage is scaled to the window
 * with a ratio estimator over the slices, which also gives each bucket's
 * 95 % interval. Findings read it through account_cause(). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "graphs.h"
#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "model/procs.h"
#include "model/qsel.h"
#include "model/pystack.h"
#include "model/stats.h"

/* What one feeding thread did at a moment, in the order that decides which
 * thread the GPU waited for (a lower value explains the wait better). */
enum st {
    ST_GRAPH, ST_GRAPH_ONCE, ST_LAUNCH, ST_PAGEABLE, ST_HOST, ST_RETRY, ST_ALLOC, ST_OTHER,
    ST_PRE_TREE, ST_PRE_EXT, ST_PRE_ANY, ST_DISK, ST_SYNC, ST_DATA, ST_START, ST_SLEEP,
    ST_FEEDWAIT, ST_UNKNOWN, ST_COUNT
};

static const int st_bucket[ST_COUNT] = {
    AB_GRAPH,       AB_GRAPH_ONCE,  AB_LAUNCH,      AB_PAGEABLE,  AB_HOST_CODE,   AB_ALLOC_RETRY,
    AB_ALLOC,       AB_CUDA_OTHER,
    AB_PREEMPT_TREE, AB_PREEMPT_EXT, AB_PREEMPT_TREE, AB_DISK,     AB_SYNC,
    AB_DATA_WAIT,   AB_WORKER_START, AB_SLEEP,      AB_SLEEP,     AB_UNKNOWN};

static const char *const bucket_names[AB_COUNT] = {
    "setup",        "wind_down",     "gpu_compute",  "gpu_copy",     "gpu_copy_pageable",
    "gpu_both",     "gpu_busy_or_unseen",
    "gpu_queued",   "host_code",     "data_recv",    "host_framework", "launch_pace",
    "sync_serial",  "sync",
    "launch",       "pageable_copy", "allocator",    "cuda_other",    "asleep_data",
    "worker_startup", "asleep",      "preempted_tree", "preempted_external", "disk",
    "unknown",      "no_cuda",       "alloc_retry",   "graph_build",   "graph_build_once"};

static const char *const cause_names[AC_COUNT] = {
    "data_pipeline_starvation", "worker_startup", "host_bound",   "sync_per_iteration",
    "launch_bound",             "pageable_memcpy", "alloc_churn", "cpu_contention_tree",
    "cpu_contention_external",  "io_wait",         "allocator_retries", "graph_recapture"};

static const int owner[AB_COUNT] = {
    [AB_SETUP] = AC_NONE,       [AB_WIND_DOWN] = AC_NONE,     [AB_GPU_COMPUTE] = AC_NONE,
    [AB_GPU_COPY] = AC_NONE,    [AB_GPU_BOTH] = AC_NONE,      [AB_GPU_UNSEEN] = AC_NONE,
    [AB_GPU_PAGEABLE] = AC_PAGEABLE, [AB_GPU_QUEUED] = AC_NONE,
    [AB_HOST_CODE] = AC_HOST,   [AB_DATA_RECV] = AC_PIPE,     [AB_HOST_FRAMEWORK] = AC_LAUNCH,
    [AB_HOST_PACE] = AC_LAUNCH, [AB_SYNC_SERIAL] = AC_SYNC,
    [AB_SYNC] = AC_NONE,        [AB_LAUNCH] = AC_LAUNCH,      [AB_PAGEABLE] = AC_PAGEABLE,
    [AB_ALLOC] = AC_CHURN,      [AB_CUDA_OTHER] = AC_NONE,    [AB_DATA_WAIT] = AC_PIPE,
    [AB_WORKER_START] = AC_START, [AB_SLEEP] = AC_NONE,       [AB_PREEMPT_TREE] = AC_TREE,
    [AB_PREEMPT_EXT] = AC_EXT,  [AB_DISK] = AC_IO,            [AB_UNKNOWN] = AC_NONE,
    [AB_NO_CUDA] = AC_NONE,     [AB_ALLOC_RETRY] = AC_RETRY,  [AB_GRAPH] = AC_RECAPTURE,
    [AB_GRAPH_ONCE] = AC_NONE};

const char *account_bucket_name(int b)
{
    return (unsigned)b < AB_COUNT ? bucket_names[b] : "unknown";
}

const char *account_cause_name(int c)
{
    return (unsigned)c < AC_COUNT ? cause_names[c] : "none";
}

int account_owner(int b)
{
    return (unsigned)b < AB_COUNT ? owner[b] : AC_NONE;
}

static int cmp_u64(const void *a, const void *b);

/* ---- the walk's state ---- */

struct actx {
    const struct model *m;
    const struct feed *f;
    const struct gpu_truth *g;
    const struct memory *mem; /* the allocator's retry episodes, or NULL */
    struct account *ac;
    uint64_t *first_wake;    /* per process: when it first woke a feeding thread */
    uint64_t *births;        /* start times of the feeding process's workers, sorted */
    size_t nbirth;
    int recreates;           /* a worker started after another had delivered a
                                batch: workers are started anew (DataLoader epochs
                                without persistent_workers), every generation's
                                first batches are their start-up */
    struct acct *a;          /* the account being built */
    const struct gpu_dev *d; /* its device (measured), or NULL */
    int host_known;
    int lb_launch;           /* lower bound: launches outside the gaps are the pace */
    /* the covered interval being walked */
    uint64_t cov;
    double w, cur[AB_COUNT], cur_len;
    uint64_t last_sync;
    double budget;         /* GPU time the syncs waited for, not yet set against host work */
    size_t bi;             /* the next step whose start ends the budget */
    /* the steps of this process, if it has them */
    const struct steps *s;
    size_t si;
    struct graph_builds gb; /* CUDA graph builds (graphs.h); none when out of memory */
};

/* One feeding thread's position in its calls, off-CPU intervals, the
 * allocator's retry episodes and graph builds. */
struct tcur {
    uint32_t t;
    uint64_t ci, cend, oi, oend, gi, gend;
    uint64_t ci_read;  /* the call in cv, read once for the state changes in it */
    struct m_call cv;
    const struct mem_episode *ep;
    size_t ei, nep;
};

static void tcur_init(const struct actx *x, struct tcur *k, uint32_t t, uint64_t at)
{
    const struct model *m = x->m;
    const struct m_thread *th = &m->thr[t];

    k->ep = x->mem ? memory_episodes(x->mem, t, &k->nep) : NULL;
    k->nep = k->ep ? k->nep : 0;
    for (k->ei = 0; k->ei < k->nep && k->ep[k->ei].t1_ns <= at; k->ei++)
        ;
    k->t = t;
    k->ci = gpu_call_from(m, t, at);
    k->ci_read = UINT64_MAX;
    k->cend = th->first_call + th->ncalls;
    k->oi = model_off_after(m, t, at);
    k->oend = th->first_off + th->noff;
    k->gi = k->gend = 0;
    if (x->gb.sfirst == NULL)
        return;
    k->gi = x->gb.sfirst[t], k->gend = x->gb.sfirst[t + 1];
    while (k->gi < k->gend && x->gb.s[k->gi].t1_ns <= at)
        k->gi++;
}

/* Is thread @p k building a graph at @p at (graphs.h: a capture and its
 * instantiation, or torch's code warming up or recording a shape)?
 * ST_GRAPH, ST_GRAPH_ONCE (a build that paid for itself), else ST_COUNT;
 * moves *y to the stretch's end, or to the next one's start. */
static int in_build(const struct actx *x, struct tcur *k, uint64_t at, uint64_t *y)
{
    const struct graph_span *b;

    while (k->gi < k->gend && x->gb.s[k->gi].t1_ns <= at)
        k->gi++;
    if (k->gi == k->gend)
        return ST_COUNT;
    b = &x->gb.s[k->gi];
    if (b->t0_ns > at) {
        *y = b->t0_ns < *y ? b->t0_ns : *y;
        return ST_COUNT;
    }
    *y = b->t1_ns < *y ? b->t1_ns : *y;
    return b->is_amortised ? ST_GRAPH_ONCE : ST_GRAPH;
}

static int is_feeder_tid(const struct acct *a, const struct model *m, uint32_t tid)
{
    for (uint32_t i = 0; i < a->nfeed; i++)
        if (m->thr[a->feeder[i]].tid == tid)
            return 1;
    return 0;
}

static int call_st(const struct m_call *c)
{
    switch (cs_api_table[c->api].family) {
    case CS_FAM_COPY: return (c->flags & CS_CF_PAGEABLE) ? ST_PAGEABLE : ST_LAUNCH;
    case CS_FAM_LAUNCH:
    case CS_FAM_MEMSET: return ST_LAUNCH;
    case CS_FAM_SYNC: return ST_SYNC;
    case CS_FAM_ALLOC:
    case CS_FAM_FREE: return ST_ALLOC;
    default: return ST_OTHER; /* capture and graph calls: their builds decide (in_build) */
    }
}

/* Asleep outside CUDA calls: who ended the sleep says what it waited for.
 * A data-loader worker (its first delivery: the worker's start-up), a
 * helper thread of the process (pin memory, a queue's feeder), another
 * feeding thread (then that thread's own state explains the wait). */
static int wake_st(const struct actx *x, uint32_t t, const struct m_off *o)
{
    const struct model *m = x->m;
    const struct m_thread *th = &m->thr[t];
    uint32_t w;

    if (o->waker_pid == 0)
        return ST_SLEEP;
    w = model_find_proc(m, m->proc[th->proc].run, o->waker_pid);
    if (w == M_NONE)
        return ST_SLEEP;
    if (m->proc[w].role == M_ROLE_WORKER) /* a worker's first batch, workers started anew */
        return x->first_wake[w] == o->t_end_ns && x->recreates ? ST_START : ST_DATA;
    if (w == th->proc && o->waker_tid && o->waker_tid != th->tid)
        return is_feeder_tid(x->a, m, o->waker_tid) ? ST_FEEDWAIT : ST_DATA;
    return ST_SLEEP;
}

static int tstate_calls(const struct actx *x, struct tcur *k, uint64_t at, uint64_t *until);

/* Inside one of thread @p k's retry episodes at @p at: the whole episode
 * is the retry's (its frees, their syncs, the host code between them),
 * until its end into @p until; else the next one's start bounds @p until. */
static int in_episode(struct tcur *k, uint64_t at, uint64_t *until)
{
    while (k->ei < k->nep && k->ep[k->ei].t1_ns <= at)
        k->ei++;
    if (k->ei == k->nep)
        return 0;
    if (k->ep[k->ei].t0_ns <= at) {
        *until = k->ep[k->ei].t1_ns;
        return 1;
    }
    *until = k->ep[k->ei].t0_ns < *until ? k->ep[k->ei].t0_ns : *until;
    return 0;
}

/* Between two capture ranges of thread @p k's run at @p at, nothing was
 * recorded (docs/capture.md): 1, with the next range's start in @p until;
 * else 0, the next gap's start bounding @p until. */
static int in_capture_gap(const struct actx *x, const struct tcur *k, uint64_t at,
                          uint64_t *until)
{
    const struct m_run *r = &x->m->runs[x->m->proc[x->m->thr[k->t].proc].run];

    for (uint32_t i = 1; i < r->ncapture; i++) {
        uint64_t g0 = r->capture[2 * i - 1], g1 = r->capture[2 * i];
        if (at < g0) {
            *until = g0 < *until ? g0 : *until;
            return 0;
        }
        if (at < g1) {
            *until = g1;
            return 1;
        }
    }
    return 0;
}

/* Thread @p k's state at @p x, and when it next changes into @p until. */
static int tstate(const struct actx *x, struct tcur *k, uint64_t at, uint64_t *until)
{
    uint64_t ep_until = UINT64_MAX, gap_until = UINT64_MAX;
    int st;

    if (in_capture_gap(x, k, at, &gap_until)) {
        *until = gap_until;
        return ST_UNKNOWN;
    }
    if (in_episode(k, at, &ep_until)) {
        *until = ep_until < gap_until ? ep_until : gap_until;
        return ST_RETRY;
    }
    st = tstate_calls(x, k, at, until);
    *until = ep_until < *until ? ep_until : *until;
    *until = gap_until < *until ? gap_until : *until;
    return st;
}

/* tstate() outside a retry episode. */
static int tstate_calls(const struct actx *x, struct tcur *k, uint64_t at, uint64_t *until)
{
    const struct model *m = x->m;
    const struct m_call *c = NULL;
    struct m_call cv;
    const struct m_off *o = NULL;
    uint64_t y = UINT64_MAX;
    int build;

    for (; k->ci < k->cend; k->ci++) { /* each call read once */
        if (k->ci != k->ci_read)
            k->cv = model_call(m, k->ci), k->ci_read = k->ci;
        cv = k->cv;
        if (cv.t_exit_ns > at && !(cv.flags & CS_CF_NESTED))
            break;
    }
    while (k->oi < k->oend && m->off[k->oi].t_end_ns <= at)
        k->oi++;
    if (k->ci < k->cend && cv.t_enter_ns <= at)
        c = &cv, y = c->t_exit_ns;
    else if (k->ci < k->cend)
        y = cv.t_enter_ns;
    if (k->oi < k->oend && m->off[k->oi].t_start_ns <= at) {
        o = &m->off[k->oi];
        y = o->t_end_ns < y ? o->t_end_ns : y;
    } else if (k->oi < k->oend && m->off[k->oi].t_start_ns < y) {
        y = m->off[k->oi].t_start_ns;
    }
    build = in_build(x, k, at, &y); /* its launches and host code are the capture's */
    *until = y;
    if (o == NULL)
        return build != ST_COUNT ? build : c ? call_st(c) : x->host_known ? ST_HOST : ST_UNKNOWN;
    if (o->cls == CS_OFF_PREEMPT)
        return (o->flags & CS_HF_HOLDER_IN_TREE) ? ST_PRE_TREE : ST_PRE_EXT;
    if (o->cls == CS_OFF_DISK)
        return ST_DISK;
    if (o->runq_ns && o->runq_ns < o->t_end_ns - o->t_start_ns) {
        uint64_t woke = o->t_end_ns - o->runq_ns; /* runnable from here: kept off the CPU */
        if (at >= woke)
            return ST_PRE_ANY;
        *until = woke < *until ? woke : *until;
    }
    return build != ST_COUNT ? build : c ? call_st(c) : wake_st(x, k->t, o);
}

/* Add [t0, t1) in state @p st to @p mine; preemption by an unknown holder
 * is split between the tree and the outside by their CPU shares then. */
static void put(const struct actx *x, int st, uint64_t t0, uint64_t t1, double *mine)
{
    if (st == ST_PRE_ANY) {
        const struct m_proc *p = &x->m->proc[x->a->proc];
        double share = procs_ext_share(x->m, p->run, x->a->proc, t0, t1);
        share = share < 0 ? 0.0 : share;
        mine[AB_PREEMPT_EXT] += share * (double)(t1 - t0);
        mine[AB_PREEMPT_TREE] += (1.0 - share) * (double)(t1 - t0);
        return;
    }
    mine[st_bucket[st]] += (double)(t1 - t0);
}

/* Walk [@p t0, @p t1) of every feeding thread at once into @p mine; @p only
 * set: keep only the states it lists (outside the lower bound's gaps). */
static void states(const struct actx *x, uint64_t t0, uint64_t t1, double *mine,
                   const unsigned char *only)
{
    struct tcur k[ACCT_FEEDERS];
    uint32_t n = x->a->nfeed;
    uint64_t at = t0;

    for (uint32_t i = 0; i < n; i++)
        tcur_init(x, &k[i], x->a->feeder[i], t0);
    while (at < t1) {
        int best = ST_COUNT;
        uint64_t nxt = t1, u;
        for (uint32_t i = 0; i < n; i++) {
            int s = tstate(x, &k[i], at, &u);
            best = s < best ? s : best;
            nxt = u < nxt ? u : nxt;
        }
        if (n == 0)
            best = ST_UNKNOWN;
        nxt = nxt > at ? nxt : at + 1;
        if (only == NULL || only[best])
            put(x, best, at, nxt, mine);
        else
            mine[AB_GPU_UNSEEN] += (double)(nxt - at);
        at = nxt;
    }
}

/* ---- steps ---- */

/* Spread what the causes own of [@p t0, @p t1) (@p mine, @p len long) over
 * the steps it overlaps, in proportion. */
static void steps_put(struct actx *x, uint64_t t0, uint64_t t1, const double *mine)
{
    const struct steps *s = x->s;
    double len = (double)(t1 - t0);

    if (s == NULL || x->ac->step == NULL || t1 <= t0)
        return;
    while (x->si < s->n && s->s[x->si].t_end_ns <= t0)
        x->si++;
    for (size_t i = x->si; i < s->n && s->s[i].t_start_ns < t1; i++) {
        double part = (double)model_overlap(s->s[i].t_start_ns, s->s[i].t_end_ns, t0, t1) / len;
        for (int b = 0; b < AB_COUNT; b++) {
            int c = owner[b];
            double v;
            if (b == AB_GPU_COMPUTE && mine[b] > 0) {
                v = (double)x->ac->step[i].busy + mine[b] * part;
                x->ac->step[i].busy = v > 4e9 ? 4000000000u : (uint32_t)v;
            }
            if (c == AC_NONE || mine[b] <= 0)
                continue;
            v = (double)x->ac->step[i].own[c] + mine[b] * part;
            x->ac->step[i].own[c] = v > 4e9 ? 4000000000u : (uint32_t)v;
        }
    }
}

/* Steps wholly inside [@p t0, @p t1) are measured. */
static void steps_cover(struct actx *x, uint64_t t0, uint64_t t1)
{
    const struct steps *s = x->s;
    size_t i;

    if (s == NULL || x->ac->step == NULL)
        return;
    i = M_FIRST_GE(struct m_step, s->s, t_start_ns, 0, s->n, t0);
    for (; i < s->n && s->s[i].t_end_ns <= t1; i++)
        x->ac->step[i].measured = 1;
}

/* ---- measured: the covered time ---- */

static uint64_t busy_of(const struct acct *a)
{
    return a->ns[AB_GPU_COMPUTE] + a->ns[AB_GPU_COPY] + a->ns[AB_GPU_PAGEABLE] +
           a->ns[AB_GPU_BOTH];
}

/* Its time off the GPU after the set-up (the lower bound's unseen time too). */
static uint64_t off_gpu(const struct acct *a)
{
    return a->steady_hi_ns - a->setup_end_ns - busy_of(a);
}


/* The covered interval walked so far enters the moments. */
static void cov_flush(struct actx *x)
{
    struct acct *a = x->a;
    double xk = x->w * x->cur_len;

    if (x->cur_len <= 0)
        return;
    a->sx += xk;
    a->sxx += xk * xk;
    for (int b = 0; b < AB_COUNT; b++) {
        double yk = x->w * x->cur[b];
        a->sy[b] += yk;
        a->syy[b] += yk * yk;
        a->sxy[b] += xk * yk;
    }
    a->nk++;
    memset(x->cur, 0, sizeof(x->cur));
    x->cur_len = 0;
}

/* Host work in @p mine that the GPU work syncs waited for would have
 * hidden, had the host not waited: it moves to AB_SYNC_SERIAL, host code
 * first, then launches, while the budget lasts. */
static void serial(struct actx *x, double *mine)
{
    static const int from[] = {AB_HOST_CODE, AB_LAUNCH};

    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]) && x->budget > 0; i++) {
        double loss = mine[from[i]] < x->budget ? mine[from[i]] : x->budget;
        mine[from[i]] -= loss;
        mine[AB_SYNC_SERIAL] += loss;
        x->budget -= loss;
    }
}

/* The GPU work sync @p sc waited for joins the budget that host work after
 * it may use up; a step's start ends the budget (work of one step cannot
 * hide the next one's host work), as does a new process. */
static void budget_add(struct actx *x, uint64_t sc, uint64_t ns)
{
    if (sc == x->last_sync || sc == M_CALL_NONE)
        return;
    x->last_sync = sc;
    x->budget += (double)ns;
}

static void budget_step(struct actx *x, uint64_t t)
{
    const struct steps *s = x->s;

    while (s && x->bi < s->n && s->s[x->bi].t_start_ns <= t) {
        x->bi++;
        x->budget = 0;
    }
}

/* Was a worker of the feeding process started in [@p t0, @p t1)? The host
 * code and waits of such a stretch are its start-up: a DataLoader's
 * iterator forking its workers, then waiting for their first batches. */
static int births_in(const struct actx *x, uint64_t t0, uint64_t t1)
{
    size_t i = model_search(x->births, sizeof(uint64_t), 0, 0, x->nbirth, t0, 0);

    return i < x->nbirth && x->births[i] < t1;
}

/* Those of a stretch's host work and waits go to AB_WORKER_START. */
static void births_take(const struct actx *x, uint64_t t0, uint64_t t1, double *mine)
{
    static const int from[] = {AB_HOST_CODE, AB_DATA_WAIT, AB_SLEEP, AB_HOST_PACE};

    if (!births_in(x, t0, t1))
        return;
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
        mine[AB_WORKER_START] += mine[from[i]];
        mine[from[i]] = 0;
    }
}

/* An idle stretch [t0, t1): what the feeders did, then what a sync before
 * it and the stretch's length say of the host work in it. */
static void idle_stretch(struct actx *x, const struct gpu_piece *pc, uint64_t t0, uint64_t t1,
                         double *mine)
{
    const struct model *m = x->m;
    const struct m_call ncv = pc->next_call != M_CALL_NONE ? model_call(m, pc->next_call)
                                                           : (struct m_call){0},
                        *nc = pc->next_call != M_CALL_NONE ? &ncv : NULL;
    uint32_t thr = pc->thr != M_NONE ? pc->thr : x->a->nfeed ? x->a->feeder[0] : M_NONE;
    uint64_t sc;

    if (nc && nc->t_exit_ns <= pc->t0_ns) { /* its next work was queued: a GPU-side gap */
        mine[AB_GPU_QUEUED] += (double)(t1 - t0);
        return;
    }
    states(x, t0, t1, mine, NULL);
    budget_step(x, t0);
    sc = thr != M_NONE ? gpu_sync_before(m, thr, pc->t0_ns) : M_CALL_NONE;
    if (sc != M_CALL_NONE)
        budget_add(x, sc, gpu_busy_inside(x->g, x->d, model_call(m, sc).t_enter_ns,
                                          model_call(m, sc).t_exit_ns));
    if (sc != M_CALL_NONE || x->budget > 0)
        serial(x, mine);
    if (pc->t1_ns - pc->t0_ns < GPU_SHORT_NS) {
        mine[AB_HOST_PACE] += mine[AB_HOST_CODE];
        mine[AB_HOST_CODE] = 0;
    }
    births_take(x, pc->t0_ns, pc->t1_ns, mine);
}

static void piece(void *arg, const struct gpu_piece *pc)
{
    struct actx *x = arg;
    struct acct *a = x->a;
    uint64_t t0 = pc->t0_ns > a->setup_end_ns ? pc->t0_ns : a->setup_end_ns, t1 = pc->t1_ns;
    double mine[AB_COUNT] = {0};

    if (pc->cov != x->cov) {
        cov_flush(x);
        x->cov = pc->cov;
        x->w = pc->w;
        steps_cover(x, pc->cov_t0_ns, pc->cov_t1_ns);
    }
    if (t1 > a->steady_hi_ns)
        t1 = a->steady_hi_ns;
    if (t1 <= t0)
        return;
    if (pc->busy)
        mine[AB_GPU_COMPUTE] = (double)(t1 - t0);
    else
        idle_stretch(x, pc, t0, t1, mine);
    for (int b = 0; b < AB_COUNT; b++)
        x->cur[b] += mine[b];
    x->cur_len += (double)(t1 - t0);
    a->covered_ns += t1 - t0;
    steps_put(x, t0, t1, mine);
}

/* GPU busy split by what ran: kernels alone, copies alone (from pageable
 * memory apart: at the staging buffer's pace, which pinned memory would
 * not have), both at once; the device's own union times after the set-up,
 * applied to the estimated busy. */
static void busy_split(struct acct *a, const struct gpu_dev *d)
{
    static const int to[] = {AB_GPU_COPY, AB_GPU_PAGEABLE, AB_GPU_BOTH};
    uint64_t ov = d->steady_overlap_ns;
    uint64_t k = d->steady_kernel_ns > ov ? d->steady_kernel_ns - ov : 0;
    uint64_t c = d->steady_copy_ns > ov ? d->steady_copy_ns - ov : 0;
    uint64_t pg = d->steady_pageable_ns < c ? d->steady_pageable_ns : c;
    /* what pinned memory would still spend on the transfer is a copy's, not the cause's */
    pg = (uint64_t)((double)pg * (1.0 - gpu_pinned_share(d)));
    double sum = (double)(k + c + ov), f[3], rest = 1.0;
    uint64_t busy = a->ns[AB_GPU_COMPUTE], lo = a->lo[AB_GPU_COMPUTE], hi = a->hi[AB_GPU_COMPUTE];

    if (sum <= 0)
        return;
    f[0] = (double)(c - pg) / sum, f[1] = (double)pg / sum, f[2] = (double)ov / sum;
    for (int i = 0; i < 3; i++) {
        a->ns[to[i]] = (uint64_t)((double)busy * f[i]);
        a->lo[to[i]] = (uint64_t)((double)lo * f[i]);
        a->hi[to[i]] = (uint64_t)((double)hi * f[i]);
        a->ns[AB_GPU_COMPUTE] -= a->ns[to[i]];
        rest -= f[i];
    }
    a->lo[AB_GPU_COMPUTE] = (uint64_t)((double)lo * rest);
    a->hi[AB_GPU_COMPUTE] = (uint64_t)((double)hi * rest);
}

/* The buckets from the moments: each the ratio of its measured time to the
 * covered time, times the window after the set-up; its interval from the
 * ratio estimator's variance over the covered intervals, with the finite
 * population correction (exact coverage: no width). */
static void estimate(struct acct *a)
{
    uint64_t wn = a->steady_hi_ns - a->setup_end_ns, sum = 0;
    double n = (double)a->nk, f = wn ? (double)a->covered_ns / (double)wn : 1.0;
    int big = AB_GPU_COMPUTE;

    f = f > 1.0 ? 1.0 : f;
    for (int b = AB_GPU_COMPUTE; b < AB_COUNT; b++) {
        double r = a->sx > 0 ? a->sy[b] / a->sx : 0.0, se;
        a->ns[b] = (uint64_t)(r * (double)wn + 0.5);
        sum += a->ns[b];
        big = a->ns[b] > a->ns[big] ? b : big;
        if (f >= 0.999) {
            a->lo[b] = a->hi[b] = a->ns[b];
            continue;
        }
        if (n < 2) { /* one slice says nothing of its spread */
            a->lo[b] = 0, a->hi[b] = wn;
            continue;
        }
        se = (a->syy[b] - 2 * r * a->sxy[b] + r * r * a->sxx) * n / (n - 1) / (a->sx * a->sx);
        se = sqrt(se > 0 ? se * (1.0 - f) : 0.0);
        a->lo[b] = r - 1.96 * se > 0 ? (uint64_t)((r - 1.96 * se) * (double)wn) : 0;
        a->hi[b] = r + 1.96 * se < 1 ? (uint64_t)((r + 1.96 * se) * (double)wn) : wn;
    }
    if (sum != wn) /* rounding: the largest bucket absorbs it */
        a->ns[big] = a->ns[big] + wn > sum ? a->ns[big] + wn - sum : 0;
    a->lo[big] = a->lo[big] < a->ns[big] ? a->lo[big] : a->ns[big];
    a->hi[big] = a->hi[big] > a->ns[big] ? a->hi[big] : a->ns[big];
}

/* The busy buckets a cause owns (copies from pageable memory), spread
 * over the steps by their GPU busy time. */
static void steps_busy_owned(struct actx *x)
{
    const struct acct *a = x->a;
    uint64_t busy = busy_of(a);
    double f = busy ? (double)a->ns[AB_GPU_PAGEABLE] / (double)busy : 0.0;

    if (x->s == NULL || x->ac->step == NULL || f <= 0)
        return;
    for (size_t i = 0; i < x->ac->nstep; i++) {
        double v = (double)x->ac->step[i].own[AC_PAGEABLE] + f * (double)x->ac->step[i].busy;
        x->ac->step[i].own[AC_PAGEABLE] = v > 4e9 ? 4000000000u : (uint32_t)v;
    }
}

static void measured(struct actx *x, const struct gpu_dev *d)
{
    struct acct *a = x->a;
    uint64_t plo, phi;

    procs_active_window(x->m, a->proc, &plo, &phi);
    x->d = d;
    x->cov = UINT64_MAX;
    gpu_walk(x->g, x->m, d, plo, phi, piece, x);
    cov_flush(x);
    estimate(a);
    busy_split(a, d);
    steps_busy_owned(x);
}

/* ---- the host's lower bound ---- */

/* What counts outside the gaps: the host states a lower bound cannot tie
 * to GPU idle but that cost the feeder its time all the same. */
static void lb_only(const struct actx *x, unsigned char *only)
{
    memset(only, 0, ST_COUNT);
    only[ST_PAGEABLE] = only[ST_ALLOC] = only[ST_RETRY] = only[ST_DISK] = only[ST_GRAPH] = 1;
    only[ST_GRAPH_ONCE] = 1;
    only[ST_PRE_TREE] = only[ST_PRE_EXT] = only[ST_PRE_ANY] = 1;
    only[ST_LAUNCH] = (unsigned char)x->lb_launch;
}

/* Launch calls take most of the busy span back to back, or the host issues
 * many in a tight loop and almost never waits (feed.h): the launch cost
 * sets the pace even where no gap shows it. */
static int lb_launch_paced(const struct feed_proc *fp)
{
    uint64_t span = fp->busy_last_ns - fp->busy_first_ns;

    if (fp->launches < 1000 || span == 0)
        return 0;
    return (fp->launch_ns * 10 >= span * 3 && fp->launch_gap_p50_ns <= 2 * fp->launch_p50_ns &&
            fp->idle_ns * 10 <= span) ||
           (fp->launches >= 10000 && fp->launch_gap_p50_ns < 1000000 &&
            fp->sync_ns * 20 <= span);
}

/* A gap [t0, t1) after drain @p g, up to the end of the enqueue that ends
 * it: the feeders' states; host work in it, up to the time the drains
 * waited (the GPU's work then, at most), is the syncs' (it would overlap). */
static void lb_gap(struct actx *x, const struct feed_gap *g, uint64_t t0, uint64_t t1,
                   double *mine)
{
    const struct m_call dcv = model_call(x->m, g->drain_call), *dc = &dcv;

    states(x, t0, t1, mine, NULL);
    budget_step(x, t0);
    budget_add(x, g->drain_call, dc->t_exit_ns - dc->t_enter_ns);
    serial(x, mine);
    births_take(x, t0, t1, mine);
}

static void lower_bound(struct actx *x)
{
    struct acct *a = x->a;
    const struct feed *f = x->f;
    const struct feed_proc *fp = feed_find(f, a->proc);
    unsigned char only[ST_COUNT];
    double mine[AB_COUNT] = {0};
    uint64_t at = a->setup_end_ns, gi = 0;

    x->lb_launch = fp ? lb_launch_paced(fp) : 0;
    lb_only(x, only);
    while (gi < f->ngap && x->m->thr[model_call(x->m, f->gap[gi].next_call).thr].proc != a->proc)
        gi++;
    for (; gi < f->ngap && at < a->steady_hi_ns; gi++) {
        const struct feed_gap *g = &f->gap[gi];
        uint64_t end = model_call(x->m, g->next_call).t_exit_ns; /* the enqueue: still idle */
        uint64_t g0 = g->t0_ns > at ? g->t0_ns : at;
        uint64_t g1 = end < a->steady_hi_ns ? end : a->steady_hi_ns;
        double part[AB_COUNT] = {0};
        if (x->m->thr[model_call(x->m, g->next_call).thr].proc != a->proc)
            break;
        if (g1 <= g0)
            continue;
        states(x, at, g0, part, only);
        lb_gap(x, g, g0, g1, part);
        for (int b = 0; b < AB_COUNT; b++)
            mine[b] += part[b];
        steps_put(x, at, g1, part);
        at = g1;
    }
    if (at < a->steady_hi_ns) {
        double part[AB_COUNT] = {0};
        states(x, at, a->steady_hi_ns, part, only);
        for (int b = 0; b < AB_COUNT; b++)
            mine[b] += part[b];
        steps_put(x, at, a->steady_hi_ns, part);
    }
    steps_cover(x, a->setup_end_ns, a->steady_hi_ns);
    {
        uint64_t wn = a->steady_hi_ns - a->setup_end_ns, sum = 0;
        for (int b = AB_GPU_COMPUTE; b < AB_COUNT; b++) {
            a->ns[b] = (uint64_t)(mine[b] + 0.5);
            sum += a->ns[b];
        }
        a->ns[AB_GPU_UNSEEN] = a->ns[AB_GPU_UNSEEN] + wn > sum ? a->ns[AB_GPU_UNSEEN] + wn - sum : 0;
        for (int b = AB_GPU_COMPUTE; b < AB_COUNT; b++)
            a->lo[b] = a->hi[b] = a->ns[b];
    }
    a->covered_ns = a->steady_hi_ns - a->setup_end_ns;
}

/* ---- processes ---- */

/* Threads of @p a's process that enqueued GPU work: those with at least a
 * hundredth of the busiest one's enqueues (a thread that copies once a
 * minute feeds nothing), at most ACCT_FEEDERS. */
static void feeders(const struct model *m, struct acct *a)
{
    uint64_t cnt[ACCT_FEEDERS] = {0}, most = 0;
    uint32_t n = 0;

    for (uint32_t t = 0; t < m->nthr; t++) {
        const struct m_thread *th = &m->thr[t];
        uint64_t e = 0;
        if (th->proc != a->proc)
            continue;
        for (uint64_t i = th->first_call; i < th->first_call + th->ncalls; i++) {
            const struct m_call cv = model_call(m, i), *c = &cv;
            int fam = cs_api_table[c->api].family;
            e += !(c->flags & (CS_CF_NESTED | CS_CF_CAPTURING)) &&
                 (fam == CS_FAM_LAUNCH || fam == CS_FAM_COPY || fam == CS_FAM_MEMSET);
        }
        if (e == 0)
            continue;
        if (n < ACCT_FEEDERS) {
            a->feeder[n] = t, cnt[n++] = e;
        } else {
            uint32_t low = 0;
            for (uint32_t i = 1; i < n; i++)
                low = cnt[i] < cnt[low] ? i : low;
            if (e > cnt[low])
                a->feeder[low] = t, cnt[low] = e;
        }
        most = e > most ? e : most;
    }
    a->nfeed = 0;
    for (uint32_t i = 0; i < n; i++)
        if (cnt[i] * 100 >= most)
            a->feeder[a->nfeed++] = a->feeder[i];
}

/* When each worker process first woke one of the feeding threads of @p a;
 * into @p recreates whether a worker started after another had delivered. */
static void first_wakes(const struct model *m, const struct acct *a, uint64_t *fw,
                        int *recreates)
{
    uint64_t first = UINT64_MAX;

    for (uint32_t i = 0; i < a->nfeed; i++) {
        const struct m_thread *th = &m->thr[a->feeder[i]];
        for (uint64_t k = th->first_off; k < th->first_off + th->noff; k++) {
            const struct m_off *o = &m->off[k];
            uint32_t w;
            if (o->waker_pid == 0 || o->cls == CS_OFF_PREEMPT)
                continue;
            w = model_find_proc(m, m->proc[th->proc].run, o->waker_pid);
            if (w == M_NONE || m->proc[w].role != M_ROLE_WORKER)
                continue;
            fw[w] = o->t_end_ns < fw[w] ? o->t_end_ns : fw[w];
            first = o->t_end_ns < first ? o->t_end_ns : first;
        }
    }
    *recreates = 0;
    for (uint32_t p = 0; p < m->nproc && first != UINT64_MAX; p++)
        if (m->proc[p].role == M_ROLE_WORKER && fw[p] != UINT64_MAX && m->proc[p].start_ns > first)
            *recreates = 1;
}

/* The start times of the worker processes of @p a's process (its children
 * or theirs), sorted, into x->births (none when out of memory). */
static void births(const struct model *m, const struct acct *a, struct actx *x)
{
    x->nbirth = 0;
    for (uint32_t p = 0; p < m->nproc; p++) {
        uint32_t up = m->proc[p].parent;
        for (int d = 0; d < 4 && up != M_NONE && up != a->proc; d++)
            up = m->proc[up].parent;
        if (m->proc[p].role != M_ROLE_WORKER || up != a->proc || m->proc[p].start_ns == 0)
            continue;
        uint64_t *q = realloc(x->births, (x->nbirth + 1) * sizeof(*q));
        if (q == NULL)
            return;
        x->births = q;
        x->births[x->nbirth++] = m->proc[p].start_ns;
    }
    if (x->nbirth > 1)
        qsort(x->births, x->nbirth, sizeof(*x->births), cmp_u64);
}

static int acct_add(struct account *ac, uint32_t *cap)
{
    if (ac->na == *cap) {
        uint32_t c = *cap ? *cap * 2 : 8;
        struct acct *q = realloc(ac->a, c * sizeof(*q));
        if (q == NULL)
            return -ENOMEM;
        ac->a = q;
        *cap = c;
    }
    memset(&ac->a[ac->na], 0, sizeof(ac->a[0]));
    return 0;
}

/* Host code whose samples show a DataLoader's receive path or the
 * framework's own Python goes to AB_DATA_RECV and AB_HOST_FRAMEWORK, in
 * the samples' proportions (at least ACCT_PY_MIN of them), in the steps
 * too. */
#define ACCT_PY_MIN 10

/* A feeder's Python samples taken while it ran host code (on CPU outside
 * CUDA calls), counted by their role (pystack_ref_role) into n. */
struct py_count {
    const struct actx *x;
    struct tcur k;
    uint64_t n[PYSTACK_ROLE_COUNT];
};

static void py_sample(void *arg, const struct m_pysample *smp)
{
    struct py_count *c = arg;
    uint64_t u;

    if (tstate(c->x, &c->k, smp->t_ns, &u) == ST_HOST)
        c->n[pystack_ref_role(c->x->m, pystack_ref_of_sample(c->x->m, smp))]++;
}

/* The samples of every feeder's host code between the set-up and the
 * wind-down, GPU busy or not (GPU activity is often sampled too sparsely
 * for the samples inside its idle stretches alone to say much), by role
 * into @p n. @return their number */
static uint64_t py_counts(const struct actx *x, const struct acct *a, uint64_t *n)
{
    struct py_count c = {.x = x};

    for (uint32_t i = 0; i < a->nfeed; i++) {
        tcur_init(x, &c.k, a->feeder[i], a->setup_end_ns);
        pystack_samples_in(x->m, a->feeder[i], a->setup_end_ns, a->steady_hi_ns, py_sample, &c);
    }
    memcpy(n, c.n, sizeof(c.n));
    return c.n[0] + c.n[1] + c.n[2] + c.n[3];
}

/* Host code's share by role, past the user's (PYSTACK_ROLE_LOADER on). */
#define PY_ROLES (PYSTACK_ROLE_COUNT - 1)

static void py_split(struct actx *x, struct acct *a)
{
    static const int to[PY_ROLES] = {AB_DATA_RECV, AB_HOST_FRAMEWORK, AB_GRAPH},
                     cause[PY_ROLES] = {AC_PIPE, AC_LAUNCH, AC_RECAPTURE};
    uint64_t pyn[PYSTACK_ROLE_COUNT], n = py_counts(x, a, pyn);
    uint64_t ns = a->ns[AB_HOST_CODE], lo = a->lo[AB_HOST_CODE], hi = a->hi[AB_HOST_CODE];
    double f[PY_ROLES];

    if (n < ACCT_PY_MIN)
        return;
    for (int i = 0; i < PY_ROLES; i++) {
        uint64_t mv;
        f[i] = (double)pyn[i + 1] / (double)n;
        mv = (uint64_t)((double)ns * f[i] + 0.5);
        mv = mv < a->ns[AB_HOST_CODE] ? mv : a->ns[AB_HOST_CODE];
        a->ns[to[i]] += mv;
        a->lo[to[i]] += (uint64_t)((double)lo * f[i]);
        a->hi[to[i]] += (uint64_t)((double)hi * f[i]);
        a->ns[AB_HOST_CODE] -= mv;
    }
    a->lo[AB_HOST_CODE] = (uint64_t)((double)lo * (1.0 - f[0] - f[1] - f[2]));
    a->hi[AB_HOST_CODE] = (uint64_t)((double)hi * (1.0 - f[0] - f[1] - f[2]));
    for (size_t s = 0; x->s && s < x->ac->nstep; s++) {
        uint32_t host = x->ac->step[s].own[AC_HOST];
        for (int i = 0; i < PY_ROLES; i++) {
            uint32_t mv = (uint32_t)((double)host * f[i]);
            x->ac->step[s].own[AC_HOST] -= mv;
            x->ac->step[s].own[cause[i]] += mv;
        }
    }
}

static void acct_one(struct actx *x, struct acct *a, const struct gpu_dev *d,
                     const struct step_setup *su)
{
    const struct model *m = x->m;
    const struct m_run *run = &m->runs[m->proc[a->proc].run];

    procs_active_window(m, a->proc, &a->lo_ns, &a->hi_ns);
    a->hi_ns = a->hi_ns > a->lo_ns ? a->hi_ns : a->lo_ns;
    a->setup_end_ns = a->lo_ns;
    if (su->proc == a->proc && su->end_ns > a->lo_ns)
        a->setup_end_ns = su->end_ns < a->hi_ns ? su->end_ns : a->hi_ns;
    a->ns[AB_SETUP] = a->lo[AB_SETUP] = a->hi[AB_SETUP] = a->setup_end_ns - a->lo_ns;
    a->steady_hi_ns = a->hi_ns;
    if (su->proc == a->proc && su->wind_ns > a->setup_end_ns && su->wind_ns < a->hi_ns)
        a->steady_hi_ns = su->wind_ns;
    a->ns[AB_WIND_DOWN] = a->lo[AB_WIND_DOWN] = a->hi[AB_WIND_DOWN] = a->hi_ns - a->steady_hi_ns;
    feeders(m, a);
    first_wakes(m, a, x->first_wake, &x->recreates);
    births(m, a, x);
    x->a = a;
    x->host_known = run->counts[CS_REC_OFFCPU] > 0;
    x->s = x->ac->steps && x->ac->steps->thr != M_NONE &&
                   m->thr[x->ac->steps->thr].proc == a->proc && x->ac->step &&
                   (d == NULL || d->device == a->device)
               ? x->ac->steps
               : NULL;
    x->si = x->bi = 0;
    x->budget = 0;
    x->last_sync = M_CALL_NONE;
    memset(x->cur, 0, sizeof(x->cur));
    x->cur_len = 0;
    if (d && d->source >= GPU_SRC_SAMPLED) {
        a->source = d->source;
        measured(x, d);
        if (a->covered_ns > 0) {
            py_split(x, a);
            return;
        }
        memset(a->ns + AB_GPU_COMPUTE, 0, sizeof(a->ns[0]) * (AB_COUNT - AB_GPU_COMPUTE));
    }
    a->source = GPU_SRC_HOST;
    lower_bound(x);
    py_split(x, a);
}

/* Processes whose windows overlap ran side by side (the ranks of a job):
 * the one with the most time not on the GPU stands for them, so that a
 * cause of every rank counts once, not once a rank. */
static void representatives(struct account *ac)
{
    uint32_t *ord = malloc((ac->na + 1) * sizeof(*ord));
    uint64_t end = 0;
    uint32_t best = 0, n = ac->na;

    if (ord == NULL) {
        for (uint32_t i = 0; i < n; i++)
            ac->a[i].is_rep = i == 0;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        ord[i] = i;
    for (uint32_t i = 1; i < n; i++) /* few processes: insertion sort by start */
        for (uint32_t j = i; j > 0 && ac->a[ord[j]].lo_ns < ac->a[ord[j - 1]].lo_ns; j--) {
            uint32_t t = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = t;
        }
    for (uint32_t i = 0; i < n; i++) {
        const struct acct *a = &ac->a[ord[i]];
        uint64_t idle = off_gpu(a), bidle = off_gpu(&ac->a[best]);
        if (i > 0 && a->lo_ns >= end) { /* a new group */
            ac->a[best].is_rep = 1;
            best = ord[i];
        } else if (i == 0 || idle > bidle) {
            best = ord[i];
        }
        end = a->hi_ns > end ? a->hi_ns : end;
    }
    if (n)
        ac->a[best].is_rep = 1;
    free(ord);
}

static void totals(struct account *ac)
{
    uint64_t sum = 0;

    for (uint32_t i = 0; i < ac->na; i++) {
        const struct acct *a = &ac->a[i];
        if (!a->is_rep)
            continue;
        for (int b = 0; b < AB_COUNT; b++) {
            ac->ns[b] += a->ns[b];
            ac->lo[b] += a->lo[b];
            ac->hi[b] += a->hi[b];
            sum += a->ns[b];
        }
        ac->source = a->source > ac->source ? a->source : ac->source;
    }
    if (ac->window_ns > sum)
        ac->ns[AB_NO_CUDA] = ac->lo[AB_NO_CUDA] = ac->hi[AB_NO_CUDA] = ac->window_ns - sum;
    else
        ac->window_ns = sum;
}

int account_compute(struct account *ac, const struct model *m, const struct feed *f,
                    const struct gpu_truth *g, const struct steps *s,
                    const struct step_setup *su, const struct memory *mem, uint64_t wall_ns)
{
    struct actx x = {.m = m, .f = f, .g = g, .mem = mem, .ac = ac};
    uint32_t cap = 0;
    int rc = 0;

    memset(ac, 0, sizeof(*ac));
    ac->window_ns = wall_ns;
    ac->steps = s;
    if (s && s->n) {
        ac->step = calloc(s->n, sizeof(*ac->step));
        ac->nstep = ac->step ? s->n : 0;
    }
    x.first_wake = malloc((m->nproc + 1) * sizeof(*x.first_wake));
    if (x.first_wake == NULL)
        return -ENOMEM;
    for (uint32_t p = 0; p < m->nproc; p++)
        x.first_wake[p] = UINT64_MAX;
    if (graphs_builds(m, &x.gb) < 0) /* without them graph work counts as what it is */
        memset(&x.gb, 0, sizeof(x.gb));
    for (uint32_t p = 0; p < m->nproc && rc == 0; p++) {
        int any = 0;
        if (!m->proc[p].has_cuda || !m->proc[p].selected)
            continue;
        for (uint32_t i = 0; g && i < g->nd && rc == 0; i++) {
            if (g->d[i].proc != p || g->d[i].source < GPU_SRC_SAMPLED)
                continue;
            if ((rc = acct_add(ac, &cap)) == 0) {
                ac->a[ac->na].proc = p;
                ac->a[ac->na].device = g->d[i].device;
                acct_one(&x, &ac->a[ac->na++], &g->d[i], su);
                any = 1;
            }
        }
        if (!any && rc == 0 && (rc = acct_add(ac, &cap)) == 0) {
            ac->a[ac->na].proc = p;
            acct_one(&x, &ac->a[ac->na++], NULL, su);
        }
    }
    free(x.first_wake);
    free(x.births);
    graphs_exit(&x.gb);
    if (rc < 0)
        return rc;
    representatives(ac);
    totals(ac);
    return 0;
}

uint64_t account_idle(const struct account *ac, uint32_t proc)
{
    uint64_t idle = 0;

    for (uint32_t i = 0; i < ac->na; i++)
        if (ac->a[i].proc == proc)
            idle += off_gpu(&ac->a[i]) - ac->a[i].ns[AB_GPU_UNSEEN];
    return idle;
}

uint64_t account_cause(const struct account *ac, int c, uint64_t *lo, uint64_t *hi)
{
    uint64_t sum = 0, l = 0, h = 0;

    for (int b = 0; b < AB_COUNT; b++) {
        if (owner[b] != c)
            continue;
        sum += ac->ns[b];
        l += ac->lo[b];
        h += ac->hi[b];
    }
    if (lo)
        *lo = l < sum ? l : sum;
    if (hi)
        *hi = h > sum ? h : sum;
    return sum;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int account_whatif(const struct account *ac, int c, struct acct_whatif *w)
{
    const struct steps *s = ac->steps;
    uint64_t *now, *fixed;
    double sum = 0, sum_fixed = 0;
    size_t n = 0;

    if (s == NULL || ac->step == NULL || (unsigned)c >= AC_COUNT)
        return 0;
    now = malloc(2 * (ac->nstep + 1) * sizeof(*now));
    if (now == NULL)
        return 0;
    fixed = now + ac->nstep + 1;
    for (size_t i = 0; i < ac->nstep; i++) {
        uint64_t d = s->s[i].t_end_ns - s->s[i].t_start_ns, own = ac->step[i].own[c];
        if (!ac->step[i].measured)
            continue;
        now[n] = d;
        fixed[n] = own < d ? d - own : 0;
        sum += (double)now[n];
        sum_fixed += (double)fixed[n++];
    }
    if (n >= 3) {
        w->p50_ns = qsel_kth(now, n, (n - 1) / 2); /* per finding: no sort of every step */
        w->p50_fixed_ns = qsel_kth(fixed, n, (n - 1) / 2);
        w->mean_ns = (uint64_t)(sum / (double)n);
        w->mean_fixed_ns = (uint64_t)(sum_fixed / (double)n);
        w->steps = n;
    }
    free(now);
    return n >= 3;
}

/* ---- JSON ---- */

static json_t *buckets_json(const uint64_t *ns, const uint64_t *lo, const uint64_t *hi,
                            uint64_t whole)
{
    json_t *arr = json_array();

    for (int b = 0; b < AB_COUNT; b++) {
        int c = owner[b];
        if (ns[b] == 0 && hi[b] == 0)
            continue;
        json_array_append_new(
            arr, json_pack("{s:s, s:I, s:f, s:I, s:I, s:s?}", "name", bucket_names[b], "ns",
                           (json_int_t)ns[b], "pct",
                           whole ? 100.0 * (double)ns[b] / (double)whole : 0.0, "lo_ns",
                           (json_int_t)lo[b], "hi_ns", (json_int_t)hi[b], "owner",
                           c == AC_NONE ? NULL : cause_names[c]));
    }
    return arr;
}

static uint64_t sum_of(const uint64_t *ns)
{
    uint64_t s = 0;

    for (int b = 0; b < AB_COUNT; b++)
        s += ns[b];
    return s;
}

json_t *account_json(const struct account *ac, const struct model *m)
{
    json_t *procs = json_array();

    for (uint32_t i = 0; i < ac->na; i++) {
        const struct acct *a = &ac->a[i];
        uint64_t w = a->hi_ns - a->lo_ns;
        json_array_append_new(
            procs, json_pack("{s:i, s:i, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:i, s:o}", "pid",
                             (int)m->proc[a->proc].pid, "device", (int)a->device, "source",
                             gpu_source_name(a->source), "represents", a->is_rep, "window_ns",
                             (json_int_t)w, "setup_ns", (json_int_t)a->ns[AB_SETUP],
                             "wind_down_ns", (json_int_t)a->ns[AB_WIND_DOWN], "covered_ns",
                             (json_int_t)a->covered_ns, "sum_ns", (json_int_t)sum_of(a->ns),
                             "feeders", (int)a->nfeed, "buckets",
                             buckets_json(a->ns, a->lo, a->hi, w)));
    }
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:o, s:o}", "source",
                     gpu_source_name(ac->source), "window_ns", (json_int_t)ac->window_ns,
                     "setup_ns", (json_int_t)ac->ns[AB_SETUP], "wind_down_ns",
                     (json_int_t)ac->ns[AB_WIND_DOWN], "sum_ns", (json_int_t)sum_of(ac->ns),
                     "buckets", buckets_json(ac->ns, ac->lo, ac->hi, ac->window_ns), "processes",
                     procs);
}

void account_exit(struct account *ac)
{
    free(ac->a);
    free(ac->step);
    memset(ac, 0, sizeof(*ac));
}
