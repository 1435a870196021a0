/* shim_ring.h: the producer (client) side of the ring hand-off, used by the
 * shim. Owns the process's connection to cudaspy-sampler, its memfd
 * segments and each thread's claimed sub-ring, and lays out the state every
 * recorded call reads, the ring's and the interposer's together (struct
 * shim_hot, struct shim_thread); the protocol itself is
 * include/cudaspy/ring.h (docs/ring.md). Wrapping CUDA calls and filling
 * records is the shim's job (interpose/).
 *
 * Usage (hot path, any thread):
 *     uint64_t t0 = shim_ring_now();  ...real call...  rec.t_exit_ns = shim_ring_now();
 *     shim_ring_push_cuda(&rec);      (attaches on first use; never blocks)
 *     shim_ring_push_cuda2(&a, &b);   (two records, one commit)
 * Names and stacks get process-local ids (from 1) chosen by the shim; push
 * the definition (shim_ring_push_name/_stack) before the first record that
 * uses it. Every function here keeps errno, never writes stdout and, after
 * shim_ring_stop() or a failed attach, does nothing. */
#ifndef CUDASPY_SHIM_RING_H
#define CUDASPY_SHIM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "cudaspy/record.h"
#include "cudaspy/ring.h"

/* Per-thread state, the ring's and the interposer's (shim.h), in one
 * initial-exec TLS block (zero at thread start, no malloc): one GOT entry
 * to find it, and in its first cache line everything a recorded call reads
 * (two GOT entries and two TLS lines before, each cold again after the
 * program's own work: bench/shim_ir.sh). prod.ctl == NULL until the thread
 * claimed a sub-ring. Defined in shim_ring.c. */
struct shim_thread {
    /* ring (this file and shim_ring.c) */
    struct cs_ring_prod prod;
    uint32_t tid;      /* cached gettid(), 0 = not yet */
    /* interposer (shim.h) */
    uint32_t seq;      /* last record sequence number of this thread */
    uint32_t rt_depth; /* runtime wrappers currently on this thread's stack */
    uint32_t dev;      /* device of the current context (shim.h); 0 = not read yet */
    /* second line on: runtime calls and slow paths only */
    uint32_t rt_seq;    /* seq of the innermost runtime call on the stack */
    uint32_t held_of;   /* seq of the runtime call @held was made in; 0 = none */
    uint32_t in_slow;   /* re-entry guard for the ring's slow path */
    uint32_t py_armed;  /* a sync was made: the next enqueue gets a Python stack (shim.h) */
    uint32_t fold_fam;  /* enum cs_family of @fold */
    /* The outermost runtime call's record while its driver call of the same
     * family may still fold into it (shim.h, shim_fold_take); NULL = none. */
    struct cs_rec_cuda *fold;
    /* The last driver record made inside a recorded runtime call, finished
     * but not yet pushed: it goes into the ring with that call's record, in
     * one entry pair (shim.h, shim_rec_end_rt). */
    struct cs_rec_cuda held;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct shim_thread, rt_seq) == 64,
               "what every recorded call reads is the first cache line");

extern __thread struct shim_thread shim_t_
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* How to prefetch the next entry: SHIM_PF_* (CUDASPY_RING_PREFETCH=0: not). */
enum { SHIM_PF_NONE, SHIM_PF_READ, SHIM_PF_WRITE };

/* The read-mostly state every recorded call reads, the ring's and the
 * interposer's (shim.h), in one cache line instead of nine lines on five
 * pages: between two CUDA calls a busy program (Python, the framework)
 * evicts the shim's lines (no gain was measurable so far, on the H200 or
 * the dev VM: bench/results/gpu-2026-11-30-duty). Defined in shim_ring.c;
 * the names below are what the code uses. */
struct shim_hot {
    _Atomic int ring_off;            /* 1 = recording stopped */
    uint32_t clock;                  /* CS_CLOCK_*, 0 = undecided */
    _Atomic int off;                 /* 1 = every wrapper passes through */
    uint32_t pid;                    /* getpid(), reset at fork */
    uint64_t stack_min;              /* stack for calls this long; 0 = off */
    _Atomic int ncapturing;          /* streams being captured now */
    _Atomic uint32_t name_epoch;     /* bumped on module/library unload */
    _Atomic uint32_t name_gen;       /* bumped in a fork child */
    uint16_t static_rt;              /* CS_CF_STATIC_RT or 0 */
    uint8_t pfw;                     /* SHIM_PF_* */
    _Atomic uint8_t gpu_corr;        /* 1: enqueues push an external correlation id */
    _Atomic uint64_t gpu_next;       /* a call ending at or after this (clock units) takes
                                        shim_gpu_tick_slow(); UINT64_MAX = never */
    uint64_t py_min;                 /* a call this long gets a Python stack (shim.h) */
    _Atomic uint8_t stacks;          /* SHIM_STK_*: which stacks a call may get; 0 = none */
    uint8_t fold;                    /* 1: runtime calls hold their driver call (shim.h) */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct shim_hot) == 64, "the hot state is one cache line");
extern struct shim_hot shim_hot_ __attribute__((visibility("hidden")));

#define shim_ring_off_   (shim_hot_.ring_off)
#define shim_ring_clock_ (shim_hot_.clock)
#define shim_ring_pfw_   (shim_hot_.pfw)

/* ---- process-wide ---- */

/** 1 while recording; 0 after shim_ring_stop() or a failed attach. */
int shim_ring_enabled(void);

/** Stop recording for this process; prints once to stderr
 * "cudaspy[<pid>]: recording stopped: <why>". Safe from any thread. */
void shim_ring_stop(const char *why);

/** Collector address to use instead of $CUDASPY_SOCK ("@name" = abstract, else
 * a path). Copied. Call before the first event (e.g. after auto-start). */
void shim_ring_set_sock(const char *addr);

/** Hook called by the slow path, under its lock, when no address is known
 * (neither shim_ring_set_sock() nor $CUDASPY_SOCK): it may start a collector
 * and must write its address into @p addr (@p n bytes) and return 0, or
 * return < 0 to leave recording off. */
void shim_ring_set_autostart(int (*fn)(char *addr, size_t n));

/** Hooks for the collector's samples of Python threads (shim_python.c,
 * docs/python.md): @p publish fills each new segment's layout, @p tstate
 * gives a claiming thread's PyThreadState (0 = none). Either may be NULL.
 * Call before the first event. */
void shim_ring_set_py(void (*publish)(struct cs_py_layout *out), uintptr_t (*tstate)(void));

/** CS_CLOCK_* this process stamps records with, decided at the first call
 * (CUDASPY_CLOCK=tsc|mono, else tsc when the kernel's clocksource is tsc,
 * else mono). */
uint32_t shim_ring_clock(void);

/** Records this process dropped because its ring was full (all threads). */
uint64_t shim_ring_dropped(void);

/** Registration epoch: changes each time this process registers with a
 * collector (its first event, and again in a fork child). Process-local
 * name and stack ids sent under an older epoch are unknown to the new
 * registration: compare a cached epoch and push the definitions again. */
uint32_t shim_ring_epoch(void);

/* ---- hot path ---- */

/** shim_ring_now() off its TSC path: CLOCK_MONOTONIC ns, or the first
 * timestamp of a process whose clock is not decided yet (decides it). */
uint64_t shim_ring_now_slow(void) __attribute__((noinline));

/** Timestamp in this process's clock (raw TSC ticks or CLOCK_MONOTONIC ns),
 * for cs_rec_cuda.t_enter_ns / t_exit_ns. No system call. Only the TSC
 * read is inline: clock_gettime's call and spills made every wrapper
 * longer, on the hosts that do not use them. */
static inline uint64_t shim_ring_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(__atomic_load_n(&shim_ring_clock_, __ATOMIC_RELAXED) == CS_CLOCK_TSC, 1))
        return __rdtsc();
#endif
    return shim_ring_now_slow();
}

/** 1 while the collector has recording paused (`record --duty` off phase):
 * the word on this thread's sub-ring head line; 0 before it has one. */
static inline int shim_ring_paused(void)
{
    const struct cs_subring *ctl = shim_t_.prod.ctl;

    return ctl && atomic_load_explicit(&ctl->paused, memory_order_relaxed);
}

/** Tell the collector this thread is inside an outermost CUDA call (1) or
 * runs host code (0): the sub-ring's in_call word, on the head line the
 * commit writes anyway; nothing before the thread has a ring. */
static inline void shim_ring_in_call(uint32_t v)
{
    struct cs_subring *ctl = shim_t_.prod.ctl;

    if (ctl)
        atomic_store_explicit(&ctl->in_call, v, memory_order_relaxed);
}

/** Publish this thread's PyThreadState @p ts for the collector's samples
 * (slow path: a Python walk). */
static inline void shim_ring_py_tstate(uintptr_t ts)
{
    struct cs_subring *ctl = shim_t_.prod.ctl;

    if (ctl && atomic_load_explicit(&ctl->py_tstate, memory_order_relaxed) != ts)
        atomic_store_explicit(&ctl->py_tstate, ts, memory_order_relaxed);
}

/** Connect and register the process if needed, claim a sub-ring for this
 * thread (pushing its name as a CS_ENT_THREAD entry). @return the producer,
 * or NULL when recording is off (nothing to do then). */
struct cs_ring_prod *shim_ring_attach_slow(void) __attribute__((cold, noinline));

/** Cached gettid() of the calling thread (reset in a fork child). */
uint32_t shim_ring_tid_slow(void) __attribute__((cold, noinline));
static inline uint32_t shim_ring_tid(void)
{
    uint32_t t = shim_t_.tid;
    return __builtin_expect(t != 0, 1) ? t : shim_ring_tid_slow();
}

#define SHIM_ENT_CUDA (sizeof(struct cs_ring_ent) + sizeof(struct cs_rec_cuda))

/** Start fetching, for writing, the cache lines of the next @p n (1 or 2)
 * entries, at @p q, as many as the push just made: the collector read them
 * last, from another core, and a store that has to wait for them holds up
 * every later store of the thread, the driver's own included. Issued after
 * a push, the transfer overlaps the program's work until its next CUDA
 * call. Never faults (past the end of the ring, where the next entry will
 * start at 0 instead, it fetches nothing useful). */
static inline void shim_ring_prefetch_next(const uint8_t *q, unsigned n)
{
    const size_t last = n * SHIM_ENT_CUDA - 1;
    uint8_t how = __atomic_load_n(&shim_ring_pfw_, __ATOMIC_RELAXED);

#if defined(__x86_64__)
    if (__builtin_expect(how == SHIM_PF_WRITE, 1)) {
        __asm__ volatile("prefetchw %0" : : "m"(q[0]));
        __asm__ volatile("prefetchw %0" : : "m"(q[64]));
        if (n > 1) {
            __asm__ volatile("prefetchw %0" : : "m"(q[128]));
            __asm__ volatile("prefetchw %0" : : "m"(q[192]));
        }
        __asm__ volatile("prefetchw %0" : : "m"(q[last]));
        return;
    }
#endif
    if (how == SHIM_PF_READ) {
        __builtin_prefetch(q, 1, 3);
        __builtin_prefetch(q + 64, 1, 3);
        if (n > 1) {
            __builtin_prefetch(q + 128, 1, 3);
            __builtin_prefetch(q + 192, 1, 3);
        }
        __builtin_prefetch(q + last, 1, 3);
    }
}

/* Fill the CS_ENT_CUDA entry at @p e with @p r; the byte after it. */
static inline uint8_t *shim_ring_put_cuda(struct cs_ring_ent *e, const struct cs_rec_cuda *r)
{
    e->len = (uint32_t)SHIM_ENT_CUDA;
    e->type = CS_ENT_CUDA;
    e->aux = 0;
    memcpy(e + 1, r, sizeof(*r));
    return (uint8_t *)e + SHIM_ENT_CUDA;
}

/** Copy @p a, then @p b unless it is NULL, into this thread's sub-ring as
 * consecutive entries under one commit, or count them as drops when it is
 * full. Attaches on first use. No locks, no malloc, no system calls after
 * attach. For records of calls made while recording (shim_recording(),
 * checked before the call): a ring stopped during the call is still mapped,
 * so it takes them without a second check, whether anyone reads it or not. */
static inline void shim_ring_push_cuda2(const struct cs_rec_cuda *a, const struct cs_rec_cuda *b)
{
    struct cs_ring_prod *p = &shim_t_.prod;
    const unsigned n = b ? 2 : 1;
    struct cs_ring_ent *e;
    const uint8_t *next;
    uint64_t end;

    if (__builtin_expect(p->ctl == NULL, 0)) {
        p = shim_ring_attach_slow();
        if (p == NULL)
            return;
    }
    e = cs_ring_reserve(p, (uint32_t)(n * SHIM_ENT_CUDA));
    if (__builtin_expect(e == NULL, 0)) {
        atomic_fetch_add_explicit(&p->ctl->dropped, n, memory_order_relaxed);
        return;
    }
    end = p->pending;
    next = p->data + (end & (p->size - 1));
    e = (struct cs_ring_ent *)(void *)shim_ring_put_cuda(e, a);
    if (b)
        shim_ring_put_cuda(e, b);
    cs_ring_publish(p, end);
    shim_ring_prefetch_next(next, n);
}

/** Copy @p r into this thread's sub-ring (shim_ring_push_cuda2 of one). */
static inline void shim_ring_push_cuda(const struct cs_rec_cuda *r)
{
    shim_ring_push_cuda2(r, NULL);
}

/* ---- definitions (slow path is fine; they attach on first use) ---- */

/** Define process-local name @p local_id (>= 1) = @p len bytes of @p name
 * (no NUL needed; names longer than a quarter of the sub-ring are cut).
 * @p kind is enum cs_name_kind, @p handle what it came from.
 * @return 0, -ENOSPC (ring full: counted as a drop, retry later) or
 *         -ENOTCONN (recording off) */
int shim_ring_push_name(uint32_t local_id, uint64_t handle, uint32_t kind, const char *name,
                        size_t len);

/** Define process-local stack @p local_id (>= 1) = @p n frames (module_id in
 * each frame is a process-local CS_NAME_MODULE id). Returns as push_name. */
int shim_ring_push_stack(uint32_t local_id, const struct cs_frame *f, uint32_t n);

/** Push one entry of @p type with @p len bytes of @p body (at most a quarter
 * of the sub-ring) from any thread, attaching it if needed (CUPTI's threads
 * do). @return 0, -ENOSPC (ring full: counted as a drop) or -ENOTCONN */
int shim_ring_push_raw(uint16_t type, const void *body, size_t len);

/** The program opened (@p on 1) or closed a capture range at @p t (this
 * process's clock): every sub-ring of the process, and those it maps
 * later, record (or not) from now on, and a CS_ENT_CAPTURE entry tells the
 * collector, in order with this thread's records. Slow path. */
void shim_ring_capture(int on, uint64_t t);

/** Name the calling thread in the run (up to 15 bytes of @p name). The slow
 * path already sends the name the thread had when it attached; call this
 * after a rename. Returns as push_name. */
int shim_ring_push_thread(const char *name);

#endif
