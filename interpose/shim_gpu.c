/* shim_gpu.c: what the GPU itself ran, through CUPTI's activity API (docs/gpu.md).
 * Owns the CUPTI client of a traced process: finding and loading the
 * program's own libcupti (dlopen, never linked), the driver's injection
 * entry point (InitializeInjection, reached through CUDA_INJECTION64_PATH,
 * which the constructor points at this library), the sampled and full modes,
 * CUPTI's activity buffers, and their conversion into ring entries
 * (CS_ENT_GPU, CS_ENT_GPUCOV). The wrappers' two hooks are in shim.h:
 * the external correlation id around each enqueue, and the tick check at a
 * recorded call's end, from which this file switches CUPTI on and off.
 *
 * Why switch at a call's end: CUPTI keeps costing every launch once it has
 * been enabled, even after cuptiActivityDisable (+0.8 us a launch on the
 * H200), so a slice ends with cuptiFinalize, which CUPTI wants called at the
 * exit of a driver or runtime call. Sampled mode keeps within a budget
 * (CUDASPY_GPU_BUDGET, 0.5 % of the run): after each slice the next period
 * is made long enough for what that slice cost, its switches and the
 * slower pace of its switcher's calls. Nothing here blocks the program on I/O:
 * buffers come from a fixed pool, records go into the shim's rings (a full
 * ring drops and counts), and every failure ends GPU activity for the
 * process with one line on stderr while the CUDA recording goes on. */
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define GPU_NBUF 32u                /* activity buffers in the pool */
#define GPU_BUF_BYTES (1u << 20)    /* each */
#define GPU_FULL_TICK_NS 1000000000ull /* full mode: flush and a coverage span every second */
#define GPU_RETRY_NS 1000000ull     /* a switch that must wait (calls in flight) tries again */
#define GPU_XCORR_SLOTS 65536u      /* correlation id -> enqueuing call, direct-mapped */
#define GPU_PENDING_MAX 8192u       /* GPU records waiting for their correlation */
#define NS_PER_MS 1000000ull
#define GPU_REATTACH_TRIES 3u       /* sampled: slices in a row CUPTI may refuse before we stop */
#define GPU_BUDGET_PPM 5000u        /* sampled: what slices may cost, per million ns of run (0.5 %) */
#define GPU_BUDGET_MAX_PPM 100000u  /* CUDASPY_GPU_BUDGET at most (10 %) */
#define GPU_REC_COST_NS 1700ull     /* CUPTI's cost on a call whose work it recorded (H100/H200:
                                       +1.50..1.82 us a launch inside a slice, docs/gpu.md) */
#define GPU_PERIOD_MAX_NS (60ull * 1000000000ull) /* a budgeted period at most */
#define GPU_PACE_MIN 50u            /* calls before an attach to measure the pace outside slices */
#define GPU_PACE_MIN_IN 8u          /* and inside the slice: fewer are what a costly slice leaves */

enum gpu_phase {
    PH_NONE,   /* not started (no CUDA yet, off, or this is a fork child) */
    PH_IDLE,   /* sampled, between slices: CUPTI detached (gpu.keep: its kinds off) */
    PH_ON,     /* CUPTI attached and recording */
    PH_DETACH, /* slice over, kinds disabled; cuptiFinalize waits for calls in flight */
    PH_DEAD    /* unavailable or failed: never again in this process */
};

/* The CUPTI functions used, resolved from the loaded library. */
struct cupti_fns {
    CUptiResult (*get_version)(uint32_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*register_ts)(CUpti_TimestampCallbackFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*push_ext)(CUpti_ExternalCorrelationKind, uint64_t);
    CUptiResult (*pop_ext)(CUpti_ExternalCorrelationKind, uint64_t *);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*finalize)(void);
};

/* A GPU record whose enqueuing call is not known yet (its external
 * correlation record may come in a later buffer). */
struct pending {
    struct cs_rec_gpu r;
    uint32_t tick; /* gpu.tick when it came */
};

struct xcorr {
    uint32_t corr, epoch;
    uint64_t ext; /* tid << 32 | seq */
};

static struct {
    int mode;                 /* enum cs_gpu_mode */
    uint64_t slice_ns, period_ns;
    uint64_t period_min_ns;   /* sampled: the period when slices cost nothing */
    uint64_t first_ns;        /* sampled: the first slice this long after CUDA's start
                                 (CUDASPY_GPU_FIRST_MS; 0: at once) */
    uint32_t budget_ppm;      /* sampled: slices' share of the run at most; 0 = fixed period */
    uint64_t sw_ns;           /* this slice's switches, timed on the thread that made them */
    uint64_t nrec;            /* this slice's GPU records (under conv) */
    uint64_t paced_ns;        /* this slice's cost by its switcher's pace, or UINT64_MAX */
    struct pace { const void *thr; uint32_t seq; uint64_t ns; } idle_at, on_at;
                              /* a thread's recorded calls at the last detach and at
                                 this slice's attach: its pace outside and inside */
    int keep;                 /* CUDASPY_GPU_SWITCH=kinds: between slices CUPTI stays
                                 attached with its activity kinds off */
    int live;                 /* keep: attached since an earlier slice */
    char other[200];          /* CUDA_INJECTION64_PATH of another tool, if any */
    int preloaded;            /* the shim was preloaded (not only injected) */
    void *lib;
    struct cupti_fns f;
    uint32_t version;
    pid_t pid;                /* the process that started, 0 = none */
    _Atomic int phase;        /* enum gpu_phase */
    _Atomic int busy;         /* one thread switches at a time */
    _Atomic int inflight;     /* enqueues between their push and pop */
    uint32_t epoch;           /* attach count */
    uint32_t attached;        /* attaches that worked */
    uint32_t refused;         /* attaches in a row that failed after one worked */
    uint64_t due_ns;          /* next switch, CLOCK_MONOTONIC */
    uint64_t period_base_ns;  /* sampled: this period's start (its slice starts at a
                                 random point of it, period_place()) */
    uint64_t t_attach_ns, t_on_ns, t_off_ns;
    uint32_t tick;              /* flushes so far: ages the pending records */
    uint64_t ref_units, ref_ns; /* shim clock vs CLOCK_MONOTONIC at start */
    uint8_t *pool;
    _Atomic uint64_t free_bufs; /* bit i: pool buffer i is free */
    _Atomic uint64_t lost;      /* records we could not take (pool empty, pending full) */
    pthread_mutex_t conv;       /* the converter below (CUPTI may deliver on two threads) */
    struct xcorr *xc;
    struct pending *pend;
    uint32_t npend;
    const char *name_key[1024]; /* CUPTI name pointer -> id, cleared at each attach */
    uint32_t name_id[1024];
} gpu = {.conv = PTHREAD_MUTEX_INITIALIZER};

/* ---- small helpers ---- */

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CUPTI stamps its records with this (CLOCK_REALTIME by default): GPU times
 * then need no mapping of ours. */
static uint64_t CUPTIAPI ts_callback(void)
{
    return mono_ns();
}

static const char *cupti_err(CUptiResult rc)
{
    const char *s = NULL;

    if (gpu.f.result_string == NULL || gpu.f.result_string(rc, &s) != CUPTI_SUCCESS || !s)
        return "unknown error";
    return s;
}

/* Shim clock units for CLOCK_MONOTONIC time @p ns (TSC ticks or ns),
 * from the rate seen since the start: a hint for the wrappers' check,
 * which the slow path verifies against the real clock. */
static uint64_t units_at(uint64_t ns)
{
    uint64_t now_u = shim_ring_now(), now_ns = mono_ns();
    double rate = 1.0;

    if (ns <= now_ns)
        return now_u;
    if (now_ns > gpu.ref_ns + 1000000 && now_u > gpu.ref_units)
        rate = (double)(now_u - gpu.ref_units) / (double)(now_ns - gpu.ref_ns);
    return now_u + (uint64_t)((double)(ns - now_ns) * rate);
}

static void set_due(uint64_t ns)
{
    gpu.due_ns = ns;
    atomic_store_explicit(&shim_hot_.gpu_next, ns == UINT64_MAX ? UINT64_MAX : units_at(ns),
                          memory_order_relaxed);
}

/* ---- ring entries ---- */

/* Process-local id of CUPTI's kernel name @p s (its pointer is stable while
 * CUPTI is attached: the cache is cleared at each attach). */
static uint32_t name_of(const char *s)
{
    uint32_t i = (uint32_t)(((uintptr_t)s >> 4) * 0x9e3779b1u) >> 22;

    if (s == NULL)
        return 0;
    if (gpu.name_key[i] != s) {
        gpu.name_id[i] = shim_name_intern_slow(s, strnlen(s, 4096), 0, CS_NAME_KERNEL);
        gpu.name_key[i] = s;
    } else {
        shim_name_touch(gpu.name_id[i]);
    }
    return gpu.name_id[i];
}

static void push_gpu(const struct cs_rec_gpu *r)
{
    if (shim_ring_push_raw(CS_ENT_GPU, r, sizeof(*r)) == -ENOSPC)
        atomic_fetch_add_explicit(&gpu.lost, 1, memory_order_relaxed);
}

/* A coverage span [on, off] of the current epoch; @p why (flags
 * UNAVAIL/PAUSED) is sent as a name. */
static void push_cov(uint64_t attach, uint64_t on, uint64_t off, uint64_t detach, uint16_t flags,
                     uint32_t dropped, const char *why)
{
    struct cs_rec_gpucov c = {0};

    c.t_attach_ns = attach;
    c.t_start_ns = on;
    c.t_end_ns = off;
    c.t_detach_ns = detach;
    c.pid = shim_pid_;
    c.epoch = gpu.epoch;
    c.mode = (uint16_t)gpu.mode;
    c.flags = flags;
    c.dropped = dropped;
    c.cupti_version = gpu.version;
    if (why)
        c.reason_id = shim_name_intern_slow(why, strlen(why), 0, CS_NAME_MODULE);
    shim_ring_push_raw(CS_ENT_GPUCOV, &c, sizeof(c));
}

/* GPU activity is off for good in this process: one stderr line, and a
 * coverage record saying why (the analyzer reports it). */
static void give_up(const char *why)
{
    char msg[300];
    uint64_t now = mono_ns();

    atomic_store(&gpu.phase, PH_DEAD);
    atomic_store_explicit(&shim_hot_.gpu_corr, 0, memory_order_relaxed);
    set_due(UINT64_MAX);
    snprintf(msg, sizeof(msg), "GPU activity off: %s; CUDA calls are still recorded", why);
    shim_log(msg);
    push_cov(now, now, now, now, CS_GCF_UNAVAIL, 0, why);
}

/* ---- CUPTI's buffers ---- */

static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    uint64_t f = atomic_load(&gpu.free_bufs);

    *max_records = 0;
    while (f) {
        unsigned i = (unsigned)__builtin_ctzll(f);
        if (atomic_compare_exchange_weak(&gpu.free_bufs, &f, f & ~(1ull << i))) {
            *buf = gpu.pool + (size_t)i * GPU_BUF_BYTES;
            *size = GPU_BUF_BYTES;
            return;
        }
    }
    /* pool empty: CUPTI drops the records and counts them (the slice is lost) */
    *buf = NULL;
    *size = 0;
}

static void buf_release(uint8_t *buf)
{
    size_t i = (size_t)(buf - gpu.pool) / GPU_BUF_BYTES;

    if (gpu.pool && buf >= gpu.pool && i < GPU_NBUF)
        atomic_fetch_or(&gpu.free_bufs, 1ull << i);
}

static uint8_t copy_dir(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CS_DIR_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CS_DIR_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CS_DIR_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CS_DIR_HTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CS_DIR_PEER;
    default: return CS_DIR_DEFAULT;
    }
}

/* Our record for CUPTI's @p a, or 0 when it is not a kind we keep. */
static int convert(const CUpti_Activity *a, struct cs_rec_gpu *r)
{
    memset(r, 0, sizeof(*r));
    r->pid = shim_pid_;
    r->epoch = gpu.epoch;
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || a->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const CUpti_ActivityKernel10 *k = (const void *)a;
        r->kind = CS_GPU_KERNEL;
        r->t_start_ns = k->start, r->t_end_ns = k->end;
        r->device = (uint16_t)k->deviceId, r->stream_id = k->streamId;
        r->corr_id = k->correlationId;
        r->name_id = name_of(k->name);
        r->graph_id = k->graphId, r->graph_node_id = k->graphNodeId;
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const CUpti_ActivityMemcpy6 *m = (const void *)a;
        r->kind = CS_GPU_MEMCPY;
        r->t_start_ns = m->start, r->t_end_ns = m->end;
        r->device = (uint16_t)m->deviceId, r->stream_id = m->streamId;
        r->corr_id = m->correlationId;
        r->bytes = m->bytes;
        r->graph_id = m->graphId, r->graph_node_id = m->graphNodeId;
        r->dir = copy_dir(m->copyKind);
        if ((r->dir == CS_DIR_HTOD ? m->srcKind : r->dir == CS_DIR_DTOH ? m->dstKind : 0) ==
            CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
            r->flags |= CS_GF_PAGEABLE;
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const CUpti_ActivityMemset4 *m = (const void *)a;
        r->kind = CS_GPU_MEMSET;
        r->t_start_ns = m->start, r->t_end_ns = m->end;
        r->device = (uint16_t)m->deviceId, r->stream_id = m->streamId;
        r->corr_id = m->correlationId;
        r->bytes = m->bytes;
        r->graph_id = m->graphId, r->graph_node_id = m->graphNodeId;
    } else {
        return 0;
    }
    return 1;
}

static struct xcorr *xslot(uint32_t corr)
{
    return &gpu.xc[corr & (GPU_XCORR_SLOTS - 1)];
}

/* Name the call that enqueued @p r if its correlation is known. */
static int resolve(struct cs_rec_gpu *r)
{
    const struct xcorr *x = xslot(r->corr_id);

    if (x->corr != r->corr_id || x->epoch != r->epoch || x->ext == 0)
        return 0;
    r->api_tid = (uint32_t)(x->ext >> 32);
    r->api_seq = (uint32_t)x->ext;
    r->flags |= CS_GF_CORR;
    return 1;
}

/* Push the pending records that resolve now; those that came @p age
 * flushes ago or more go unresolved (0: none; 1: from before the last
 * flush; 2 after a forced flush: every one). */
static void pending_drain(uint32_t age)
{
    uint32_t keep = 0;

    for (uint32_t i = 0; i < gpu.npend; i++) {
        struct pending *p = &gpu.pend[i];
        if (resolve(&p->r) || (age && gpu.tick - p->tick >= (age == 2 ? 0u : age)))
            push_gpu(&p->r);
        else
            gpu.pend[keep++] = *p;
    }
    gpu.npend = keep;
}

static void take(struct cs_rec_gpu *r)
{
    if (resolve(r) || gpu.pend == NULL) {
        push_gpu(r);
        return;
    }
    if (gpu.npend == GPU_PENDING_MAX) { /* no room to wait */
        push_gpu(r);
        return;
    }
    gpu.pend[gpu.npend].tick = gpu.tick;
    gpu.pend[gpu.npend++].r = *r;
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                  size_t valid)
{
    CUpti_Activity *a = NULL;
    struct cs_rec_gpu r;
    int err = errno;

    (void)ctx, (void)stream, (void)size;
    pthread_mutex_lock(&gpu.conv);
    while (buf && gpu.f.next_record(buf, valid, &a) == CUPTI_SUCCESS) {
        if (a->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            const CUpti_ActivityExternalCorrelation *x = (const void *)a;
            if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 && gpu.xc)
                *xslot(x->correlationId) =
                    (struct xcorr){x->correlationId, gpu.epoch, x->externalId};
        } else if (convert(a, &r)) {
            gpu.nrec++;
            take(&r);
        }
    }
    pending_drain(0);
    pthread_mutex_unlock(&gpu.conv);
    if (buf)
        buf_release(buf);
    errno = err;
}

/* ---- switching CUPTI on and off ---- */

/* CUPTI writes an external correlation record only for an API record (H100,
 * CUDA 13: none at all without the API kinds, 200 of 1006 records named with
 * the driver's, 406 with the runtime's and the id pushed around the runtime
 * call, whose correlation id a kernel it launched carries): so the API kinds
 * are on too, and their records are dropped as they come (convert). */
static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                           CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                           CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                           CUPTI_ACTIVITY_KIND_DRIVER,
                                           CUPTI_ACTIVITY_KIND_RUNTIME};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void kinds_off(void)
{
    for (size_t i = 0; i < NKINDS; i++)
        gpu.f.disable(kinds[i]);
}

static void CUPTIAPI no_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                 const void *data)
{
    (void)u, (void)d, (void)id, (void)data;
}

/* Is CUPTI held by another client (torch.profiler, Nsight)? A subscriber
 * slot is the one thing CUPTI says is taken; we never keep one, so that a
 * profiler started later gets it. */
static int held_by_other(void)
{
    CUpti_SubscriberHandle h;
    CUptiResult rc = gpu.f.subscribe(&h, no_callback, NULL);

    if (rc == CUPTI_SUCCESS) {
        gpu.f.unsubscribe(h);
        return 0;
    }
    return rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? 1 : -1;
}

/* Attach and enable. @return 0; 1 = another client holds CUPTI (skip this
 * slice); < 0 = failed (@p why says how). */
static int attach(char *why, size_t n)
{
    CUptiResult rc;

    if (held_by_other() == 1) {
        gpu.live = 0; /* the other client may re-register or finalize: start afresh */
        return 1;
    }
    gpu.epoch++;
    if (!gpu.live)
        memset(gpu.name_key, 0, sizeof(gpu.name_key));
    if (gpu.live) {
        /* still attached (gpu.keep): only the kinds were off */
    } else if ((rc = gpu.f.register_ts(ts_callback)) != CUPTI_SUCCESS ||
               (rc = gpu.f.register_callbacks(buf_request, buf_complete)) != CUPTI_SUCCESS) {
        snprintf(why, n, "CUPTI would not take callbacks (%s)", cupti_err(rc));
        return -1;
    }
    for (size_t i = 0; i < NKINDS; i++) {
        if ((rc = gpu.f.enable(kinds[i])) != CUPTI_SUCCESS) {
            snprintf(why, n, "cuptiActivityEnable(%d) failed (%s)", (int)kinds[i], cupti_err(rc));
            kinds_off();
            return -1;
        }
    }
    gpu.live = gpu.keep;
    atomic_store_explicit(&shim_hot_.gpu_corr, 1, memory_order_relaxed);
    return 0;
}

/* Hand what CUPTI holds of this epoch to the rings (@p forced: also the
 * buffers not yet full and the records still waiting for their enqueuing
 * call). @return CS_GCF_LOST when some of it is lost (CUPTI dropped records,
 * the pool ran dry), else 0; *dropped gets CUPTI's count. */
static uint16_t flush_epoch(uint32_t *dropped, int forced)
{
    size_t d = 0;

    gpu.f.flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    pthread_mutex_lock(&gpu.conv);
    gpu.tick++;
    pending_drain(forced ? 2 : 1);
    pthread_mutex_unlock(&gpu.conv);
    gpu.f.dropped(NULL, 0, &d);
    *dropped = (uint32_t)(d > UINT32_MAX ? UINT32_MAX : d);
    return d || atomic_exchange(&gpu.lost, 0) ? CS_GCF_LOST : 0;
}

/* Another client took CUPTI over while we had it (torch.profiler started):
 * leave CUPTI alone (disabling or finalizing would end its session too),
 * stop for good, and say that the span is lost. */
static void stolen(uint64_t now)
{
    push_cov(gpu.t_attach_ns, gpu.t_on_ns, now, now, CS_GCF_LOST, 0, NULL);
    atomic_store_explicit(&shim_hot_.gpu_corr, 0, memory_order_relaxed);
    atomic_store(&gpu.phase, PH_DEAD);
    set_due(UINT64_MAX);
    shim_log("GPU activity off: another CUPTI client (a profiler) started; leaving CUPTI to it");
}

/* Sampled mode: CUPTI refused to attach again after an earlier slice
 * worked (seen on the H200 in torch processes: CUPTI_ERROR_NOT_INITIALIZED
 * from cuptiActivityRegisterTimestampCallback after a cuptiFinalize). Skip
 * this slice, reset CUPTI with another cuptiFinalize and try again a period
 * later; @return 0, or -1 after GPU_REATTACH_TRIES refusals in a row. */
static int refused(uint64_t now, const char *why)
{
    static _Atomic int said;
    char msg[300];

    if (gpu.mode != CS_GPU_MODE_SAMPLED || gpu.attached == 0 ||
        ++gpu.refused >= GPU_REATTACH_TRIES)
        return -1;
    snprintf(msg, sizeof(msg), "GPU activity: a slice skipped: %s; trying again", why);
    shim_log_once(&said, msg);
    if (atomic_load(&gpu.inflight) == 0)
        gpu.f.finalize();
    gpu.live = 0;
    push_cov(now, now, now, now, CS_GCF_PAUSED, 0, why);
    set_due(now + gpu.period_ns);
    return 0;
}

/* Where the calling thread's recorded calls stand now (shim.h: seq counts them). */
static struct pace pace_now(uint64_t ns)
{
    return (struct pace){&shim_t_, shim_t_.seq, ns};
}

/* What the slice ending at @p off cost in time, measured: the calls of the
 * thread that switched it on came slower inside it than between the last
 * detach and its attach (a GPU-bound program, whose calls wait for the
 * GPU, pays nothing and shows nothing). UINT64_MAX when it cannot be told:
 * another thread, the first slice, too few calls on either side. Inside,
 * a few are enough: the costlier the slice, the fewer calls it holds (a
 * 1 ms recording cost beside two busy loops left under 50 in 100 ms, and
 * the budget then took the slice for a cheap one). */
static uint64_t pace_cost(uint64_t off)
{
    const struct pace *a = &gpu.idle_at, *b = &gpu.on_at;
    uint32_t n_out = b->seq - a->seq, n_in = shim_t_.seq - b->seq;
    double out, in;

    if (a->thr != &shim_t_ || b->thr != &shim_t_ || n_out < GPU_PACE_MIN ||
        n_in < GPU_PACE_MIN_IN || b->ns <= a->ns || off <= b->ns)
        return UINT64_MAX;
    out = (double)(b->ns - a->ns) / n_out;
    in = (double)(off - b->ns) / n_in;
    return in > out ? (uint64_t)((in - out) * n_in) : 0;
}

/* A slice (sampled) or the whole run (full) begins: attach, or try again a
 * period later while another client holds CUPTI. */
static void turn_on(uint64_t now)
{
    static _Atomic int said;
    char why[200];
    int rc;

    gpu.t_attach_ns = now;
    if (now >= gpu.period_base_ns + gpu.period_ns) /* the first, or late: a period from here */
        gpu.period_base_ns = now;
    rc = attach(why, sizeof(why));
    if (rc < 0) {
        if (refused(now, why) < 0)
            give_up(why);
        return;
    }
    if (rc == 1) {
        shim_log_once(&said, "GPU activity paused: another CUPTI client (a profiler) is active");
        push_cov(now, now, now, now, CS_GCF_PAUSED, 0, "another CUPTI client is active");
        set_due(now + (gpu.mode == CS_GPU_MODE_SAMPLED ? gpu.period_ns : GPU_FULL_TICK_NS));
        return;
    }
    gpu.t_on_ns = mono_ns();
    pthread_mutex_lock(&gpu.conv);
    gpu.nrec = 0;
    pthread_mutex_unlock(&gpu.conv);
    gpu.sw_ns = gpu.attached ? gpu.t_on_ns - now : 0; /* the first attach is CUPTI's set-up */
    gpu.on_at = pace_now(gpu.t_on_ns);
    gpu.paced_ns = UINT64_MAX;
    gpu.attached++;
    gpu.refused = 0;
    atomic_store(&gpu.phase, PH_ON);
    set_due(gpu.t_on_ns + (gpu.mode == CS_GPU_MODE_SAMPLED ? gpu.slice_ns : GPU_FULL_TICK_NS));
}

/* Sampled mode within a budget: the next period long enough that what
 * this slice cost the program (its switches, timed on the thread that made
 * them, and the slower pace of that thread's calls inside it, else CUPTI's
 * usual cost on each call whose work it recorded) is at most budget_ppm of
 * the period; never shorter than the configured period. */
static void budget_period(void)
{
    uint64_t cost, p;

    if (gpu.budget_ppm == 0)
        return;
    cost = gpu.sw_ns;
    if (gpu.paced_ns != UINT64_MAX) {
        cost += gpu.paced_ns;
    } else { /* nrec is the converting thread's, under conv */
        pthread_mutex_lock(&gpu.conv);
        cost += gpu.nrec * GPU_REC_COST_NS;
        pthread_mutex_unlock(&gpu.conv);
    }
    p = cost / gpu.budget_ppm * 1000000ull;
    gpu.period_ns = p < gpu.period_min_ns ? gpu.period_min_ns
                    : p > GPU_PERIOD_MAX_NS ? GPU_PERIOD_MAX_NS : p;
}

/* A random offset below @p n (0 for n 0): splitmix64 of the clock and pid,
 * only ever a slice's placement, so no state to share after a fork. */
static uint64_t period_place(uint64_t now, uint64_t n)
{
    uint64_t z = now ^ ((uint64_t)getpid() << 32);

    if (n == 0)
        return 0;
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) % n;
}

/* The next slice's start: a random point of the next period, so that the
 * slices see every phase of a program's step (slices a fixed period apart
 * see one phase only where the step divides the period, and the ratio
 * estimate is then off by more than its interval says), or now if that
 * point has passed. The periods stay a period apart, so coverage holds. */
static void due_next_period(void)
{
    uint64_t now, room, t;

    budget_period();
    now = mono_ns();
    gpu.idle_at = pace_now(now);
    gpu.period_base_ns += gpu.period_ns;
    room = gpu.period_ns > gpu.slice_ns ? gpu.period_ns - gpu.slice_ns : 0;
    t = gpu.period_base_ns + period_place(now, room);
    set_due(t > now ? t : now);
}

/* gpu.keep, the slice is over and its kinds are off: hand its records to
 * the rings and wait for the next slice attached (no cuptiFinalize, so no
 * attach that CUPTI may refuse). */
static void keep_idle(void)
{
    uint32_t dropped = 0;
    uint64_t t0 = mono_ns();
    uint16_t lost = flush_epoch(&dropped, 1);

    gpu.sw_ns += mono_ns() - t0;
    push_cov(gpu.t_attach_ns, gpu.t_on_ns, gpu.t_off_ns, mono_ns(), lost, dropped, NULL);
    atomic_store(&gpu.phase, PH_IDLE);
    due_next_period();
}

/* Sampled mode, the slice is over: stop enqueues from pushing ids and
 * disable; then (now, or at a later tick) detach (gpu.keep: stay attached). */
static void turn_off(uint64_t now)
{
    if (held_by_other() == 1) {
        stolen(now);
        return;
    }
    atomic_store_explicit(&shim_hot_.gpu_corr, 0, memory_order_relaxed);
    gpu.paced_ns = pace_cost(now);
    kinds_off();
    gpu.t_off_ns = now;
    gpu.sw_ns += mono_ns() - now;
    if (gpu.keep) {
        keep_idle();
        return;
    }
    atomic_store(&gpu.phase, PH_DETACH);
}

/* cuptiFinalize once no enqueue is between its push and pop (a pop after
 * it would attach CUPTI again); until then, a tick every millisecond. */
static void detach(uint64_t now)
{
    uint32_t dropped = 0;
    uint64_t t0;
    uint16_t lost;

    if (atomic_load(&gpu.inflight) != 0) {
        atomic_store_explicit(&shim_hot_.gpu_next, units_at(now + GPU_RETRY_NS),
                              memory_order_relaxed);
        return;
    }
    t0 = mono_ns();
    lost = flush_epoch(&dropped, 1);
    gpu.f.finalize();
    gpu.sw_ns += mono_ns() - t0;
    /* detached: CUPTI forgets the buffers it still held (empty ones) */
    atomic_store(&gpu.free_bufs, GPU_NBUF >= 64 ? ~0ull : (1ull << GPU_NBUF) - 1);
    push_cov(gpu.t_attach_ns, gpu.t_on_ns, gpu.t_off_ns, mono_ns(), lost, dropped, NULL);
    atomic_store(&gpu.phase, PH_IDLE);
    due_next_period();
}

/* Full mode, every second: hand CUPTI's completed buffers to the rings and
 * extend the covered span. */
static void full_tick(uint64_t now)
{
    uint32_t dropped = 0;
    uint16_t lost;

    if (held_by_other() == 1) {
        stolen(now);
        return;
    }
    lost = flush_epoch(&dropped, 0);
    push_cov(gpu.t_attach_ns, gpu.t_on_ns, now, now, lost, dropped, NULL);
    gpu.t_on_ns = gpu.t_attach_ns = now;
    set_due(now + GPU_FULL_TICK_NS);
}

static void gpu_start(void);

void shim_gpu_tick_slow(void)
{
    uint64_t now;
    int ph;

    if (shim_t_.rt_depth != 0 || atomic_exchange(&gpu.busy, 1))
        return; /* inside a runtime call (its end checks again), or switching */
    ph = atomic_load(&gpu.phase);
    if (ph == PH_NONE && (gpu.mode == CS_GPU_MODE_OFF || !gpu.preloaded)) {
        set_due(UINT64_MAX);
    } else if (ph == PH_NONE) {
        gpu_start(); /* the driver did not inject us: start at the first call */
    } else if (gpu.pid != (pid_t)shim_pid_) { /* a fork child: CUPTI is its parent's */
        atomic_store(&gpu.phase, PH_DEAD);
        atomic_store_explicit(&shim_hot_.gpu_corr, 0, memory_order_relaxed);
        set_due(UINT64_MAX);
    } else if (ph == PH_DETACH) {
        detach(mono_ns());
    } else if ((now = mono_ns()) < gpu.due_ns) {
        set_due(gpu.due_ns); /* an early hint: aim again */
    } else if (ph == PH_IDLE) {
        turn_on(now);
    } else if (ph == PH_ON && gpu.mode == CS_GPU_MODE_SAMPLED) {
        turn_off(now);
        if (atomic_load(&gpu.phase) == PH_DETACH)
            detach(now);
    } else if (ph == PH_ON) {
        full_tick(now);
    } else {
        set_due(UINT64_MAX);
    }
    atomic_store(&gpu.busy, 0);
}

void shim_gpu_paused_slow(void)
{
    uint64_t now;

    if (shim_t_.rt_depth != 0 || atomic_exchange(&gpu.busy, 1))
        return;
    if (atomic_load(&gpu.phase) == PH_ON && gpu.pid == (pid_t)shim_pid_) {
        now = mono_ns();
        if (gpu.mode == CS_GPU_MODE_FULL) { /* stay attached: CUPTI may refuse a new attach */
            int keep = gpu.keep;
            gpu.keep = 1;
            turn_off(now);
            gpu.keep = keep;
            if (atomic_load(&gpu.phase) == PH_IDLE) {
                gpu.live = 1;
                set_due(now); /* on again at the first recorded call */
            }
        } else {
            turn_off(now);
            if (atomic_load(&gpu.phase) == PH_DETACH) /* between two calls of this thread */
                detach(now);
        }
    }
    atomic_store(&gpu.busy, 0);
}

/* ---- external correlation (shim.h) ---- */

void shim_gpu_corr_push(const struct cs_rec_cuda *r)
{
    atomic_fetch_add_explicit(&gpu.inflight, 1, memory_order_acquire);
    gpu.f.push_ext(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                   (uint64_t)shim_ring_tid() << 32 | r->seq);
}

void shim_gpu_corr_pop(void)
{
    uint64_t id;

    gpu.f.pop_ext(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
    atomic_fetch_sub_explicit(&gpu.inflight, 1, memory_order_release);
}

/* ---- finding and loading CUPTI ---- */

struct find {
    char path[4096];
    const char *needle;
};

static int phdr_find(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find *f = arg;
    const char *base = strrchr(info->dlpi_name, '/');

    (void)size;
    base = base ? base + 1 : info->dlpi_name;
    if (f->path[0] == '\0' && strncmp(base, f->needle, strlen(f->needle)) == 0)
        snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
    return 0;
}

/* Path of a loaded object whose file name starts with @p needle, or "". */
static void loaded(const char *needle, char *out, size_t n)
{
    struct find f = {.needle = needle};

    dl_iterate_phdr(phdr_find, &f);
    snprintf(out, n, "%s", f.path);
}

static void *try_open(const char *dir, const char *rel)
{
    char p[4200];

    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    return access(p, R_OK) == 0 ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
}

/* CUPTI in directory @p dir (libcupti.so.13, then .12). */
static void *open_in(const char *dir)
{
    void *h = try_open(dir, "libcupti.so.13");

    return h ? h : try_open(dir, "libcupti.so.12");
}

/* CUPTI beside the loaded object whose file name starts with @p needle. */
static void *open_beside(const char *needle)
{
    char path[4096];
    const char *slash;

    loaded(needle, path, sizeof(path));
    if (path[0] == '\0' || (slash = strrchr(path, '/')) == NULL)
        return NULL;
    path[slash - path] = '\0';
    return open_in(path);
}

/* The program's own CUPTI: CUDASPY_CUPTI; one already loaded (PyTorch
 * loads its wheel's); beside the loaded CUDA runtime (the Python wheels) or
 * driver (distribution packages); the toolkit; the loader's search path.
 * Never a second copy next to a loaded one: CUPTI is one per process. */
static void *cupti_open(char *why, size_t n)
{
    static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    static const char *const subdirs[] = {"extras/CUPTI/lib64", "lib64", "lib",
                                          "targets/x86_64-linux/lib"};
    const char *env = getenv("CUDASPY_CUPTI"), *home = getenv("CUDA_HOME");
    char path[4096], dir[4096];
    void *h = NULL;

    if (env && *env) {
        if ((h = dlopen(env, RTLD_NOW | RTLD_LOCAL)) == NULL)
            snprintf(why, n, "CUDASPY_CUPTI=%s does not load", env);
        return h;
    }
    loaded("libcupti.so", path, sizeof(path));
    if (path[0])
        return dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if ((h = open_beside("libcudart.so")) == NULL) {
        loaded("libcudart.so", path, sizeof(path)); /* CUDA 12 wheels: nvidia/cuda_runtime/lib */
        if (path[0] && strrchr(path, '/')) {         /* beside nvidia/cuda_cupti/lib */
            snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
            h = try_open(dir, "../../cuda_cupti/lib/libcupti.so.12");
        }
    }
    if (!h)
        h = open_beside("libcuda.so");
    for (int r = 0; !h && r < 2; r++) {
        const char *root = r == 0 ? home : "/usr/local/cuda";
        for (size_t s = 0; !h && root && *root && s < sizeof(subdirs) / sizeof(*subdirs); s++) {
            snprintf(dir, sizeof(dir), "%s/%s", root, subdirs[s]);
            h = open_in(dir);
        }
    }
    for (size_t i = 0; !h && i < sizeof(names) / sizeof(*names); i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        snprintf(why, n, "no CUPTI library found (set CUDASPY_CUPTI to libcupti.so's path)");
    return h;
}

#define FN(field, sym) {(void **)&gpu.f.field, #sym}
static int cupti_resolve(char *why, size_t n)
{
    const struct {
        void **slot;
        const char *name;
    } tab[] = {FN(get_version, cuptiGetVersion), FN(result_string, cuptiGetResultString),
               FN(register_callbacks, cuptiActivityRegisterCallbacks),
               FN(register_ts, cuptiActivityRegisterTimestampCallback),
               FN(enable, cuptiActivityEnable), FN(disable, cuptiActivityDisable),
               FN(next_record, cuptiActivityGetNextRecord), FN(flush_all, cuptiActivityFlushAll),
               FN(dropped, cuptiActivityGetNumDroppedRecords),
               FN(push_ext, cuptiActivityPushExternalCorrelationId),
               FN(pop_ext, cuptiActivityPopExternalCorrelationId),
               FN(subscribe, cuptiSubscribe), FN(unsubscribe, cuptiUnsubscribe),
               FN(finalize, cuptiFinalize)};
    shim_dlsym_fn real = __atomic_load_n(&shim_real_dlsym_, __ATOMIC_ACQUIRE);

    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        *tab[i].slot = real ? real(gpu.lib, tab[i].name) : NULL;
        if (*tab[i].slot == NULL) {
            snprintf(why, n, "CUPTI lacks %s", tab[i].name);
            return -1;
        }
    }
    return 0;
}
#undef FN

/* Record layouts are the CUDA 13 headers': refuse a CUPTI whose records
 * may be laid out otherwise. */
static int cupti_version_ok(char *why, size_t n)
{
    if (gpu.f.get_version(&gpu.version) != CUPTI_SUCCESS)
        gpu.version = 0;
    if (gpu.version / 10000 == CUPTI_API_VERSION / 10000)
        return 0;
    snprintf(why, n, "CUPTI API version %u: its record layouts are unknown to this cudaspy "
             "(built for %u)", gpu.version, (unsigned)CUPTI_API_VERSION);
    return -1;
}

static int pool_init(void)
{
    size_t bytes = (size_t)GPU_NBUF * GPU_BUF_BYTES + GPU_XCORR_SLOTS * sizeof(struct xcorr) +
                   GPU_PENDING_MAX * sizeof(struct pending);
    uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (m == MAP_FAILED)
        return -1;
    gpu.pool = m;
    gpu.xc = (struct xcorr *)(void *)(m + (size_t)GPU_NBUF * GPU_BUF_BYTES);
    gpu.pend = (struct pending *)(void *)(gpu.xc + GPU_XCORR_SLOTS);
    atomic_store(&gpu.free_bufs, GPU_NBUF >= 64 ? ~0ull : (1ull << GPU_NBUF) - 1);
    return 0;
}

/* At exit (before the CUDA runtime tears down: registered after it): the
 * last records and the last span. Never in a fork child. */
static void gpu_atexit(void)
{
    uint32_t dropped = 0;
    uint64_t now;
    int ph = atomic_load(&gpu.phase);
    uint16_t lost;

    if (gpu.pid != getpid() || (ph != PH_ON && ph != PH_DETACH) || atomic_exchange(&gpu.busy, 1))
        return;
    now = mono_ns();
    if (ph == PH_ON && held_by_other() == 1) {
        stolen(now);
        return;
    }
    atomic_store_explicit(&shim_hot_.gpu_corr, 0, memory_order_relaxed);
    set_due(UINT64_MAX);
    kinds_off();
    lost = flush_epoch(&dropped, 1);
    push_cov(gpu.t_attach_ns, gpu.t_on_ns, ph == PH_ON ? now : gpu.t_off_ns, mono_ns(), lost,
             dropped, NULL);
    atomic_store(&gpu.phase, PH_DEAD);
}

/* Load CUPTI and switch it on, inside the driver's cuInit (injection) or
 * at the end of the first recorded call. */
static void gpu_start(void)
{
    char why[256] = "";

    gpu.pid = getpid();
    gpu.ref_units = shim_ring_now();
    gpu.ref_ns = mono_ns();
    atomic_store(&gpu.phase, PH_IDLE);
    if (gpu.other[0]) {
        snprintf(why, sizeof(why), "CUDA_INJECTION64_PATH names another tool (%s)", gpu.other);
        give_up(why);
        return;
    }
    if ((gpu.lib = cupti_open(why, sizeof(why))) == NULL || cupti_resolve(why, sizeof(why)) < 0 ||
        cupti_version_ok(why, sizeof(why)) < 0) {
        give_up(why);
        return;
    }
    if (pool_init() < 0) {
        give_up("no memory for CUPTI's buffers");
        return;
    }
    atexit(gpu_atexit);
    if (gpu.mode == CS_GPU_MODE_SAMPLED && gpu.first_ns) /* CUPTI untouched until then */
        set_due(mono_ns() + gpu.first_ns);
    else
        turn_on(mono_ns());
}

/* The driver's injection entry point (CUDA_INJECTION64_PATH): called once
 * by cuInit. Does nothing unless this library is the preloaded shim and
 * recording is on. @return 1 (success: the driver goes on either way). */
SHIM_EXPORT int InitializeInjection(void);
int InitializeInjection(void)
{
    int err = errno;

    if (gpu.mode != CS_GPU_MODE_OFF && gpu.preloaded && !atomic_load(&shim_off_) &&
        shim_ring_enabled() && !atomic_exchange(&gpu.busy, 1)) {
        if (atomic_load(&gpu.phase) == PH_NONE)
            gpu_start();
        atomic_store(&gpu.busy, 0);
    }
    errno = err;
    return 1;
}

/* ---- configuration (the constructor) ---- */

/* Is the library that holds this code named in LD_PRELOAD? */
static int preloaded(const char *self)
{
    const char *pre = getenv("LD_PRELOAD"), *base = strrchr(self, '/');
    size_t bl;

    base = base ? base + 1 : self;
    bl = strlen(base);
    for (const char *p = pre; p && *p;) {
        size_t l = strcspn(p, ": ");
        const char *b = p + l;
        while (b > p && b[-1] != '/')
            b--;
        if ((size_t)(p + l - b) == bl && memcmp(b, base, bl) == 0)
            return 1;
        p += l + (p[l] != '\0');
    }
    return 0;
}

/* "SLICE/PERIOD" in ms (CUDASPY_GPU_SAMPLE); bad values keep the defaults.
 * @return 1 when set: a period asked for is kept, not budgeted. */
static int parse_sample(const char *s)
{
    char *end;
    unsigned long a, b;

    if (s == NULL || *s == '\0')
        return 0;
    a = strtoul(s, &end, 10);
    if (*end != '/')
        return 0;
    b = strtoul(end + 1, &end, 10);
    if (*end != '\0' || a == 0 || b < a || b > 3600000)
        return 0;
    gpu.slice_ns = a * NS_PER_MS;
    gpu.period_ns = b * NS_PER_MS;
    return 1;
}

/* CUDASPY_GPU_BUDGET: percent of the run that slices may cost (0 = a fixed
 * period), "0.5" or "2"; @p dflt when unset or bad (one warning). */
static uint32_t parse_budget(const char *s, uint32_t dflt)
{
    char *end;
    double pct;

    if (s == NULL || *s == '\0')
        return dflt;
    pct = strtod(s, &end);
    if (end == s || *end != '\0' || !(pct >= 0) || pct * 10000 > GPU_BUDGET_MAX_PPM) {
        shim_log("warning: CUDASPY_GPU_BUDGET is not a percent from 0 to 10; the default kept");
        return dflt;
    }
    return (uint32_t)(pct * 10000 + 0.5);
}

int shim_gpu_init(void)
{
    const char *m = getenv("CUDASPY_GPU_ACTIVITY"), *inj = getenv("CUDA_INJECTION64_PATH");
    char self[4096], injr[4096];
    Dl_info di;

    atomic_store_explicit(&shim_hot_.gpu_next, UINT64_MAX, memory_order_relaxed);
    gpu.mode = CS_GPU_MODE_SAMPLED;
    gpu.slice_ns = 100 * NS_PER_MS;
    gpu.period_ns = 1000 * NS_PER_MS;
    if (m && strcmp(m, "off") == 0)
        gpu.mode = CS_GPU_MODE_OFF;
    else if (m && strcmp(m, "full") == 0)
        gpu.mode = CS_GPU_MODE_FULL;
    else if (m && *m && strcmp(m, "sampled") != 0)
        shim_log("CUDASPY_GPU_ACTIVITY must be sampled, full or off; using sampled");
    gpu.budget_ppm = parse_budget(getenv("CUDASPY_GPU_BUDGET"),
                                  parse_sample(getenv("CUDASPY_GPU_SAMPLE")) ? 0 : GPU_BUDGET_PPM);
    gpu.period_min_ns = gpu.period_ns;
    if ((m = getenv("CUDASPY_GPU_FIRST_MS")) != NULL)
        gpu.first_ns = strtoull(m, NULL, 10) * NS_PER_MS;
    gpu.keep = (m = getenv("CUDASPY_GPU_SWITCH")) != NULL && strcmp(m, "kinds") == 0;
    if (!dladdr((void *)shim_gpu_init, &di) || di.dli_fname == NULL ||
        realpath(di.dli_fname, self) == NULL)
        return 0;
    if (inj && *inj && realpath(inj, injr) != NULL) /* the same file, however named */
        inj = injr;
    gpu.preloaded = preloaded(self);
    if (!gpu.preloaded) /* loaded by the driver as an injection only: stay out */
        return inj && strcmp(inj, self) == 0 ? -1 : 0;
    if (gpu.mode == CS_GPU_MODE_OFF)
        return 0;
    if (inj && *inj && strcmp(inj, self) != 0)
        snprintf(gpu.other, sizeof(gpu.other), "%.*s", (int)sizeof(gpu.other) - 1, inj);
    else if (!inj || !*inj)
        setenv("CUDA_INJECTION64_PATH", self, 1);
    /* the first recorded call's end starts CUPTI if cuInit did not */
    atomic_store_explicit(&shim_hot_.gpu_next, 0, memory_order_relaxed);
    return 0;
}

int shim_gpu_preloaded(void) { return gpu.preloaded; }

/* A fork child: CUPTI, if started, is its parent's (shim_gpu_tick_slow
 * checks the pid too, for threads that race the fork). */
void shim_gpu_atfork_child(void)
{
    if (atomic_load(&gpu.phase) != PH_NONE) {
        atomic_store(&gpu.phase, PH_DEAD);
        atomic_store_explicit(&shim_hot_.gpu_corr, 0, memory_order_relaxed);
        atomic_store_explicit(&shim_hot_.gpu_next, UINT64_MAX, memory_order_relaxed);
    }
    atomic_store(&gpu.busy, 0);
    atomic_store(&gpu.inflight, 0);
}
