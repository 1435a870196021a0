/* fake_cupti.c: a fake libcupti.so.13 for CPU tests: our own code for the
 * part of CUPTI's public activity API that cudaspy's shim uses (cupti.h of
 * the toolkit gives every type and signature), driven by the fake driver's
 * stream timeline through its activity hook (fakecuda.h).
 *
 * Like the real one: activity is global to the process; records go into
 * buffers the client hands out (cuptiActivityRegisterCallbacks) and come
 * back full from a worker thread of the library's own, or at
 * cuptiActivityFlushAll (flag 0: only buffers whose records all ended;
 * CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: every one); an external correlation
 * record (CUSTOM0) precedes the record of work enqueued under a pushed id,
 * only while an API kind (DRIVER, RUNTIME) is on, as the real one writes
 * them with API records (the API records themselves are not written: the
 * shim reads none);
 * timestamps are CLOCK_REALTIME unless the client registers a timestamp
 * callback; one subscriber at a time (cuptiSubscribe); cuptiFinalize
 * detaches and forgets the client's callbacks, and any later call attaches
 * again; a fork child starts detached; attach returns once the worker thread
 * runs. Records are written at enqueue time with the end the timeline
 * gives them.
 *
 * Environment: FAKECUPTI_SUBSCRIBED=1 (another client holds CUPTI: every
 * cuptiSubscribe fails as under a profiler), FAKECUPTI_FAIL=enable|callbacks
 * (that call fails with CUPTI_ERROR_UNKNOWN), FAKECUPTI_FAIL=reattach=K
 * (cuptiActivityRegisterTimestampCallback fails with
 * CUPTI_ERROR_NOT_INITIALIZED in the K attaches after the first, as the
 * real one did on the H200 in torch processes), FAKECUPTI_VERSION=N (what
 * cuptiGetVersion says), FAKECUPTI_LOG=path (one line per attach, detach
 * and enable/disable with its CLOCK_MONOTONIC ns, for tests that check the
 * client's switching),
 * FAKECUPTI_FINALIZE_US=N (cuptiFinalize takes N us more: a costly switch),
 * FAKECUPTI_RECORD_US=N (each enqueue recorded takes N us more). */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define API __attribute__((visibility("default")))
#define EXT_DEPTH 16
#define MAX_FULL 64

struct full_buf {
    uint8_t *buf;
    size_t size, valid;
    uint64_t last_end; /* latest end time of its records (CUPTI's clock) */
};

static struct {
    pthread_mutex_t mu; /* everything below */
    CUpti_BuffersCallbackRequestFunc req;
    CUpti_BuffersCallbackCompleteFunc done;
    CUpti_TimestampCallbackFunc ts;
    int on[CUPTI_ACTIVITY_KIND_COUNT];
    int attached, subscribed;
    unsigned nattach; /* attaches so far */
    uint8_t *cur;
    size_t cur_size, cur_used;
    uint64_t cur_last_end;
    struct full_buf full[MAX_FULL];
    int nfull;
    uint32_t next_corr;
    size_t dropped;
    pthread_t worker;
    int worker_on;
    int worker_up;      /* the worker thread has started running */
    int64_t off;        /* clock_offset(), once off_set */
    int off_set;
    pthread_cond_t up;
    pthread_cond_t wake;  /* the worker's 10 ms wait, cut short by cuptiFinalize */
    FILE *log;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .up = PTHREAD_COND_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER};

static _Thread_local uint64_t ext_stack[EXT_DEPTH];
static _Thread_local int ext_n;

static uint64_t clock_ns(clockid_t c)
{
    struct timespec t;

    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* How much the client's clock is ahead of CLOCK_MONOTONIC, the driver's
 * (under g.mu): read once per timestamp source and kept, as CUPTI's own
 * conversion is one mapping, so that work one after the other on a stream
 * stays one after the other (two reads of two clocks differ by a few ns
 * each time). The client's read is bracketed by two of ours, and the
 * tightest of a few brackets kept: a preemption between two bare reads once
 * moved every GPU record of a run 279 us late. */
static int64_t clock_offset(void)
{
    uint64_t best = UINT64_MAX;

    for (int i = 0; i < 8 && !g.off_set; i++) {
        uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
        uint64_t client = g.ts ? g.ts() : clock_ns(CLOCK_REALTIME);
        uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
        if (t1 - t0 < best) {
            best = t1 - t0;
            g.off = (int64_t)(client - (t0 + (t1 - t0) / 2));
        }
        if (best < 2000 || i == 7)
            g.off_set = 1;
    }
    return g.off;
}

static void logf_(const char *what, int v)
{
    if (g.log) {
        fprintf(g.log, "%s %d %llu\n", what, v, (unsigned long long)clock_ns(CLOCK_MONOTONIC));
        fflush(g.log);
    }
}

static size_t rec_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
    default: return 0;
    }
}

/* ---- buffers (under g.mu) ---- */

static void retire_current(void)
{
    if (g.cur == NULL)
        return;
    if (g.nfull == MAX_FULL) { /* the client never takes them back: lose the oldest */
        g.dropped++;
        memmove(g.full, g.full + 1, (MAX_FULL - 1) * sizeof(g.full[0]));
        g.nfull--;
    }
    g.full[g.nfull++] = (struct full_buf){g.cur, g.cur_size, g.cur_used, g.cur_last_end};
    g.cur = NULL;
}

/* Room for @p n bytes, from the client. NULL: the record is dropped. */
static void *room(size_t n)
{
    if (g.cur && g.cur_used + n > g.cur_size)
        retire_current();
    if (g.cur == NULL && g.req) {
        size_t max_rec = 0;
        g.req(&g.cur, &g.cur_size, &max_rec);
        g.cur_used = 0;
        g.cur_last_end = 0;
        if (g.cur && g.cur_size < n)
            g.cur = NULL;
    }
    if (g.cur == NULL) {
        g.dropped++;
        return NULL;
    }
    g.cur_used += n;
    return g.cur + g.cur_used - n;
}

/* Hand back, outside the lock, the buffers @p take selected, to @p done
 * (the client's callback, read under the lock). */
static void deliver(CUpti_BuffersCallbackCompleteFunc done, struct full_buf *b, int n)
{
    for (int i = 0; i < n; i++)
        if (done)
            done(NULL, 0, b[i].buf, b[i].size, b[i].valid);
}

/* Move the full buffers (and, when @p all, the current one) whose records
 * ended by @p now (or any, when @p forced) into @p out. */
static int take(struct full_buf *out, int all, int forced, uint64_t now)
{
    int n = 0, keep = 0;

    if (all && g.cur && (forced || g.cur_last_end <= now))
        retire_current();
    for (int i = 0; i < g.nfull; i++) {
        if (forced || g.full[i].last_end <= now)
            out[n++] = g.full[i];
        else
            g.full[keep++] = g.full[i];
    }
    g.nfull = keep;
    return n;
}

/* CUPTI's worker: full buffers go back every 10 ms. */
static void *worker(void *arg)
{
    struct full_buf b[MAX_FULL];
    CUpti_BuffersCallbackCompleteFunc done;
    int n;

    (void)arg;
    pthread_mutex_lock(&g.mu);
    g.worker_up = 1;
    pthread_cond_broadcast(&g.up);
    pthread_mutex_unlock(&g.mu);
    for (;;) {
        struct timespec t;

        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 10000000;
        if (t.tv_nsec >= 1000000000)
            t.tv_sec++, t.tv_nsec -= 1000000000;
        pthread_mutex_lock(&g.mu);
        if (g.worker_on)
            pthread_cond_timedwait(&g.wake, &g.mu, &t);
        if (!g.worker_on) {
            pthread_mutex_unlock(&g.mu);
            return NULL;
        }
        n = take(b, 0, 0, g.ts ? g.ts() : clock_ns(CLOCK_REALTIME));
        done = g.done;
        pthread_mutex_unlock(&g.mu);
        deliver(done, b, n);
    }
}

/* ---- what the driver ran ---- */

/* FAKECUPTI_RECORD_US=N: each enqueue recorded costs its thread N us more,
 * as the real one's activity and API records cost each launch. */
static void spin_record_cost(void)
{
    static _Atomic long cached = -1; /* read by every enqueuing thread */
    long us = atomic_load_explicit(&cached, memory_order_relaxed);
    uint64_t until;

    if (us < 0) {
        const char *v = getenv("FAKECUPTI_RECORD_US");
        us = v ? strtol(v, NULL, 10) : 0;
        atomic_store_explicit(&cached, us, memory_order_relaxed);
    }
    if (us <= 0)
        return;
    until = clock_ns(CLOCK_MONOTONIC) + (uint64_t)us * 1000;
    while (clock_ns(CLOCK_MONOTONIC) < until)
        ;
}

static void on_activity(const struct fakecuda_act *a)
{
    int kind = a->kind == FAKECUDA_ACT_KERNEL ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
               : a->kind == FAKECUDA_ACT_COPY ? CUPTI_ACTIVITY_KIND_MEMCPY
                                              : CUPTI_ACTIVITY_KIND_MEMSET;
    uint64_t start, end;
    int64_t off;
    uint32_t corr;

    pthread_mutex_lock(&g.mu);
    if (!g.attached || !g.on[kind]) {
        pthread_mutex_unlock(&g.mu);
        return;
    }
    corr = ++g.next_corr;
    off = clock_offset();
    start = a->start_ns + (uint64_t)off;
    end = a->end_ns + (uint64_t)off;
    /* as the real one (H100, CUDA 13): an external correlation record goes
     * with an API record, so none without an API kind on */
    if (g.on[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION] && ext_n > 0 &&
        (g.on[CUPTI_ACTIVITY_KIND_DRIVER] || g.on[CUPTI_ACTIVITY_KIND_RUNTIME])) {
        CUpti_ActivityExternalCorrelation *x = room(sizeof(*x));
        if (x) {
            memset(x, 0, sizeof(*x));
            x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
            x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
            x->externalId = ext_stack[ext_n - 1];
            x->correlationId = corr;
        }
    }
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        CUpti_ActivityKernel10 *k = room(sizeof(*k));
        if (k) {
            memset(k, 0, sizeof(*k));
            k->kind = kind;
            k->start = start, k->end = end, k->completed = end;
            k->deviceId = a->device, k->streamId = a->stream_id, k->contextId = 1;
            k->correlationId = corr;
            k->name = a->name;
            k->graphId = a->graph_id, k->graphNodeId = a->graph_node_id;
        }
    } else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        CUpti_ActivityMemcpy6 *m = room(sizeof(*m));
        static const uint8_t kinds[] = {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                        CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
                                        CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
                                        CUPTI_ACTIVITY_MEMCPY_KIND_HTOH};
        if (m) {
            memset(m, 0, sizeof(*m));
            m->kind = kind;
            m->copyKind = a->copy_dir >= 0 && a->copy_dir < 4 ? kinds[a->copy_dir] : 0;
            if (a->copy_dir == 0 || a->copy_dir == 1) { /* the host side's memory kind */
                uint8_t hk = a->host_pageable ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
                                              : CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
                if (a->copy_dir == 0)
                    m->srcKind = hk, m->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
                else
                    m->dstKind = hk, m->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
            }
            m->bytes = a->bytes;
            m->start = start, m->end = end;
            m->deviceId = a->device, m->streamId = a->stream_id, m->contextId = 1;
            m->correlationId = corr;
            m->graphId = a->graph_id, m->graphNodeId = a->graph_node_id;
        }
    } else {
        CUpti_ActivityMemset4 *m = room(sizeof(*m));
        if (m) {
            memset(m, 0, sizeof(*m));
            m->kind = kind;
            m->bytes = a->bytes;
            m->start = start, m->end = end;
            m->deviceId = a->device, m->streamId = a->stream_id, m->contextId = 1;
            m->correlationId = corr;
            m->graphId = a->graph_id, m->graphNodeId = a->graph_node_id;
        }
    }
    if (end > g.cur_last_end)
        g.cur_last_end = end;
    pthread_mutex_unlock(&g.mu);
    spin_record_cost();
}

/* fork(): the child does not inherit the session (its worker thread is
 * not there; a lock that thread held would never be released): it starts
 * detached, and the driver's hook, still set, finds nothing to record. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g.mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&g.mu);
}

static void fork_child(void)
{
    pthread_cond_init(&g.wake, NULL); /* the parent's worker may have been waiting on it */
    g.attached = 0;
    g.worker_on = 0;
    g.worker_up = 0;
    pthread_cond_init(&g.up, NULL);
    g.subscribed = 0;
    memset(g.on, 0, sizeof(g.on));
    g.req = NULL, g.done = NULL, g.ts = NULL;
    g.off_set = 0;
    g.cur = NULL;
    g.nfull = 0;
    pthread_mutex_unlock(&g.mu);
}

__attribute__((constructor)) static void fake_cupti_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Any call attaches CUPTI to the driver (the real one attaches lazily too). */
static void attach(void)
{
    fakecuda_act_hook_fn hook;
    void *drv;

    if (g.attached)
        return;
    if (g.log == NULL && getenv("FAKECUPTI_LOG"))
        g.log = fopen(getenv("FAKECUPTI_LOG"), "a");
    drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    hook = drv ? (fakecuda_act_hook_fn)dlsym(drv, "fakecuda_act_hook") : NULL;
    if (hook)
        hook(on_activity);
    g.attached = 1;
    g.nattach++;
    g.next_corr = 0;
    g.worker_on = 1;
    g.worker_up = 0;
    if (pthread_create(&g.worker, NULL, worker, NULL) != 0)
        g.worker_on = 0;
    /* Back only once the thread runs: a thread still starting may hold
     * its allocator's lock (ASan's takes one), and a fork then would hand
     * the child that lock held for ever. */
    while (g.worker_on && !g.worker_up)
        pthread_cond_wait(&g.up, &g.mu);
    logf_("attach", 1);
}

static int failing(const char *what)
{
    const char *f = getenv("FAKECUPTI_FAIL");

    return f && strcmp(f, what) == 0;
}

/* FAKECUPTI_FAIL=reattach=K: is this (under g.mu) one of the K attaches
 * after the first? */
static int refusing(void)
{
    const char *f = getenv("FAKECUPTI_FAIL");

    return f && strncmp(f, "reattach=", 9) == 0 && g.nattach >= 2 &&
           g.nattach <= 1 + strtoul(f + 9, NULL, 10);
}

#define ENTER()                                  \
    do {                                         \
        pthread_mutex_lock(&g.mu);               \
        attach();                                \
    } while (0)
#define LEAVE(rc)                                \
    do {                                         \
        pthread_mutex_unlock(&g.mu);             \
        return (rc);                             \
    } while (0)

/* ---- the API ---- */

API CUptiResult cuptiGetVersion(uint32_t *version)
{
    const char *v = getenv("FAKECUPTI_VERSION");

    if (version == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetResultString(CUptiResult rc, const char **str)
{
    if (str == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *str = rc == CUPTI_SUCCESS                                     ? "CUPTI_SUCCESS"
           : rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
           : rc == CUPTI_ERROR_INVALID_PARAMETER                  ? "CUPTI_ERROR_INVALID_PARAMETER"
           : rc == CUPTI_ERROR_NOT_INITIALIZED                    ? "CUPTI_ERROR_NOT_INITIALIZED"
                                                                  : "CUPTI_ERROR_UNKNOWN";
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *user)
{
    const char *held = getenv("FAKECUPTI_SUBSCRIBED");

    (void)cb, (void)user;
    if (sub == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    ENTER();
    if (g.subscribed || (held && strcmp(held, "1") == 0))
        LEAVE(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    g.subscribed = 1;
    *sub = (CUpti_SubscriberHandle)&g;
    LEAVE(CUPTI_SUCCESS);
}

API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
    ENTER();
    if (sub != (CUpti_SubscriberHandle)&g || !g.subscribed)
        LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    g.subscribed = 0;
    LEAVE(CUPTI_SUCCESS);
}

API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                               CUpti_BuffersCallbackCompleteFunc done)
{
    if (req == NULL || done == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (failing("callbacks"))
        return CUPTI_ERROR_UNKNOWN;
    ENTER();
    g.req = req;
    g.done = done;
    LEAVE(CUPTI_SUCCESS);
}

API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
    if (fn == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    ENTER();
    if (refusing())
        LEAVE(CUPTI_ERROR_NOT_INITIALIZED);
    g.ts = fn;
    g.off_set = 0;
    LEAVE(CUPTI_SUCCESS);
}

static CUptiResult set_kind(CUpti_ActivityKind k, int on)
{
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT || (rec_size(k) == 0 && k != CUPTI_ACTIVITY_KIND_KERNEL))
        return CUPTI_ERROR_INVALID_KIND;
    if (on && failing("enable"))
        return CUPTI_ERROR_UNKNOWN;
    ENTER();
    g.on[k] = on;
    logf_(on ? "enable" : "disable", (int)k);
    LEAVE(CUPTI_SUCCESS);
}

API CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
    return set_kind(k, 1);
}

API CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
    return set_kind(k, 0);
}

API CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    uint8_t *p;
    size_t n;

    if (buf == NULL || rec == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p = *rec ? (uint8_t *)*rec + rec_size((*rec)->kind) : buf;
    if (p + sizeof(CUpti_Activity) > buf + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    n = rec_size(((CUpti_Activity *)(void *)p)->kind);
    if (n == 0 || p + n > buf + valid)
        return CUPTI_ERROR_INVALID_KIND;
    *rec = (CUpti_Activity *)(void *)p;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    struct full_buf b[MAX_FULL + 1];
    CUpti_BuffersCallbackCompleteFunc done;
    int n;

    ENTER();
    n = take(b, 1, (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0,
             g.ts ? g.ts() : clock_ns(CLOCK_REALTIME));
    done = g.done;
    pthread_mutex_unlock(&g.mu);
    deliver(done, b, n);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
    (void)ctx, (void)stream;
    if (dropped == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    ENTER();
    *dropped = g.dropped;
    g.dropped = 0;
    LEAVE(CUPTI_SUCCESS);
}

API CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                       uint64_t id)
{
    if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || ext_n == EXT_DEPTH)
        return CUPTI_ERROR_INVALID_PARAMETER;
    ENTER();
    pthread_mutex_unlock(&g.mu);
    ext_stack[ext_n++] = id;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                      uint64_t *last)
{
    if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    ENTER();
    pthread_mutex_unlock(&g.mu);
    if (ext_n == 0)
        return CUPTI_ERROR_QUEUE_EMPTY;
    ext_n--;
    if (last)
        *last = ext_stack[ext_n];
    return CUPTI_SUCCESS;
}

/* Detach: work in flight is forgotten with the client's buffers (the
 * client flushes first), and so are its callbacks. */
API CUptiResult cuptiFinalize(void)
{
    const char *f;
    pthread_t w;
    int join;
    void *drv;
    fakecuda_act_hook_fn hook;

    pthread_mutex_lock(&g.mu);
    if (!g.attached) {
        pthread_mutex_unlock(&g.mu);
        return CUPTI_SUCCESS;
    }
    drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    hook = drv ? (fakecuda_act_hook_fn)dlsym(drv, "fakecuda_act_hook") : NULL;
    if (hook)
        hook(NULL);
    join = g.worker_on;
    w = g.worker;
    g.worker_on = 0;
    pthread_cond_signal(&g.wake);
    g.attached = 0;
    memset(g.on, 0, sizeof(g.on));
    g.req = NULL, g.done = NULL, g.ts = NULL;
    g.off_set = 0;
    g.cur = NULL;
    g.nfull = 0;
    logf_("detach", 1);
    pthread_mutex_unlock(&g.mu);
    if (join)
        pthread_join(w, NULL);
    if ((f = getenv("FAKECUPTI_FINALIZE_US")) != NULL)
        usleep((useconds_t)strtoul(f, NULL, 10));
    return CUPTI_SUCCESS;
}
