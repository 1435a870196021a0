/* shim.h: what the shim's files share (private to libcudaspy.so). Owns the
 * meaning of the per-thread call state (sequence numbers, runtime nesting,
 * device), the process switches (disabled, inert) and the record helpers
 * every wrapper uses. The ring itself is shim_ring.h's, and so is the
 * storage of both per-thread states (one TLS line, struct shim_thread);
 * the wrappers are shim_driver.c (driver), shim_runtime.c (runtime) and
 * shim_dlsym.c (the gateways). */
#ifndef CUDASPY_SHIM_H
#define CUDASPY_SHIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cudaspy/capture.h"
#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "shim_ring.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_COLD __attribute__((cold, noinline))
#define SHIM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SHIM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(musttail)
#define SHIM_MUSTTAIL __attribute__((musttail))
#endif
#endif
#ifndef SHIM_MUSTTAIL
#define SHIM_MUSTTAIL /* gcc < 15: -O2 emits the jmp; test cli.shim_dlsym_tailcall checks */
#endif

/* Per-thread call state (seq, rt_depth, dev, ...) lives in struct
 * shim_thread, shim_t_, beside the ring's (shim_ring.h): one TLS line. */

/* errno: a wrapper returns with what the real call left in errno, without
 * saving it (a call to __errno_location and two cold lines a record), so
 * nothing it runs after the call may write errno. The inline paths make no
 * system call; every slow path that may (attaching to the collector,
 * naming a kernel, reading the device, a stack, the clock's first read)
 * keeps errno itself. cli.shim_errno checks. */

/* 1 = every wrapper passes through (CUDASPY_DISABLE=1, inside the sampler). */
#define shim_off_ (shim_hot_.off)
#define shim_pid_ (shim_hot_.pid) /* getpid(), reset at fork */
/* CS_CF_STATIC_RT once a runtime we cannot interpose asked for driver
 * functions (shim_dlsym.c), else 0; ORed into every record. */
#define shim_static_rt_ (shim_hot_.static_rt)
/* Calls at least this many clock units long get a native stack (with
 * SHIM_STK_NATIVE), a Python stack (with SHIM_STK_PYTHON). */
#define shim_stack_min_ (shim_hot_.stack_min)
#define shim_py_min_ (shim_hot_.py_min)
#define shim_stacks_ (shim_hot_.stacks)
enum { SHIM_STK_NATIVE = 1, SHIM_STK_PYTHON = 2 };

/* Diagnostic build only (cmake -DCS_SHIM_SELFTIME=ON): every recorded call
 * adds the TSC cycles its wrapper spent outside the real call, and the
 * process prints the total at exit (docs/shim.md). Elsewhere SHIM_ST(...)
 * is nothing. */
#ifdef CS_SHIM_SELFTIME
#include <x86intrin.h>
/* @p api's call: @p pre cycles before the real call, @p post after it */
void shim_st_add(unsigned api, uint64_t pre, uint64_t post);
/* of which the ring push took @p push (shim_rec_end) */
void shim_st_push(unsigned api, uint64_t push);
#define SHIM_ST(...) __VA_ARGS__
#else
#define SHIM_ST(...)
#endif

/** Is this call to be recorded? (not disabled, ring not stopped, not in
 * an off phase of `record --duty` or outside a capture range) */
static inline int shim_recording(void)
{
    return !atomic_load_explicit(&shim_off_, memory_order_relaxed) &&
           !atomic_load_explicit(&shim_ring_off_, memory_order_relaxed) && !shim_ring_paused();
}

/** The wrappers' path for a call not recorded: GPU activity stops too. */
#define SHIM_NOT_RECORDING_()                                                          \
    do {                                                                               \
        if (SHIM_UNLIKELY(atomic_load_explicit(&shim_hot_.gpu_corr, memory_order_relaxed))) \
            shim_gpu_paused_slow();                                                    \
    } while (0)

/** Zero @p r with six 16-byte stores: gcc makes memset() of this size a
 * `rep stos`, whose start-up perf found in every wrapper on the H200. */
static inline void shim_rec_zero(struct cs_rec_cuda *r)
{
    typedef uint64_t v2 __attribute__((vector_size(16), aligned(8), may_alias));
    const v2 z = {0, 0};
    v2 *w = (v2 *)(void *)r;

    _Static_assert(sizeof(*r) == 6 * sizeof(v2), "a record is six 16-byte stores");
    w[0] = z, w[1] = z, w[2] = z, w[3] = z, w[4] = z, w[5] = z;
}

/** Start a record: entry time, ids, nesting under a runtime call. */
static inline void shim_rec_begin(struct cs_rec_cuda *r, unsigned api, unsigned variant)
{
    struct shim_thread *t = &shim_t_;

    shim_rec_zero(r);
    r->api = (uint16_t)api;
    r->variant = (uint8_t)variant;
    r->device = CS_DEVICE_UNKNOWN;
    r->seq = ++t->seq;
    if (t->rt_depth) {
        r->flags = CS_CF_NESTED;
        r->parent_seq = t->rt_seq;
    } else {
        shim_ring_in_call(1);
    }
    r->t_enter_ns = shim_ring_now();
}

/* ---- one record per runtime call (docs/shim.md, "Folding") ----
 * An outermost runtime call's record takes in the first driver call of its
 * own family it makes (cudaLaunchKernel's cuLaunchKernel): that driver call
 * reads no clock and pushes nothing; it writes what it knows (kernel name,
 * grid, stream) into the runtime record, with its name in drv_api. A
 * launch then costs the shared runtime two clock reads and one record, as
 * it costs a static runtime. CUDASPY_FOLD=0: two records, as before. */

/** enum cs_family of @p api; a constant where @p api is one. */
static inline unsigned shim_fam(unsigned api)
{
    static const uint8_t fam[CS_API_COUNT] = {
#define SHIM_FAM_(name, layer, family, sync) [CS_API_##name] = family,
        CS_API_LIST(SHIM_FAM_)
#undef SHIM_FAM_
    };
    return fam[api];
}

/** Outermost runtime call @p r (begun, on the stack of its wrapper) lets its
 * driver call of family @p fam fold in. */
static inline void shim_fold_open(struct cs_rec_cuda *r, unsigned fam)
{
    struct shim_thread *t = &shim_t_;

    if (shim_hot_.fold) { /* set by the constructor */
        t->fold = r;
        t->fold_fam = fam;
    }
}

/** The runtime record a driver call of family @p fam folds into, taken
 * (only the first such call of the innermost runtime call folds); NULL =
 * the driver call gets a record of its own. */
static inline struct cs_rec_cuda *shim_fold_take(unsigned fam)
{
    struct shim_thread *t = &shim_t_;
    struct cs_rec_cuda *f;

    if (t->rt_depth == 0 || (f = t->fold) == NULL || t->fold_fam != fam || f->seq != t->rt_seq)
        return NULL;
    t->fold = NULL;
    return f;
}

/** Driver call @p api, folded into @p f, returned @p result. */
static inline void shim_fold_end(struct cs_rec_cuda *f, unsigned api, int result)
{
    f->drv_api = (uint16_t)api;
    f->flags |= CS_CF_FOLDED | (result != 0 ? CS_CF_DRV_ERROR : 0);
}

/** Stack id for this call: native frames (@p want SHIM_STK_NATIVE), the
 * thread's Python frames (SHIM_STK_PYTHON); 0 = none. */
uint32_t shim_stack_capture_slow(unsigned want) SHIM_COLD;

/* When a call gets a Python stack (shim_python.c's table, by enum cs_api):
 * every synchronising call, allocation and free, stream capture and graph
 * instantiation (rare: graph_recapture names their line), and the first
 * enqueue after a sync (where a GPU idle stretch ends). */
enum { SHIM_PY_SYNC = 1, SHIM_PY_ALLOC = 2, SHIM_PY_ENQUEUE = 4, SHIM_PY_RARE = 8 };
extern const uint8_t shim_py_when_[CS_API_COUNT] __attribute__((visibility("hidden")));

/** Which stacks record @p r gets; an outermost call only gets a Python stack
 * (a nested driver call's is its runtime call's). */
static inline unsigned shim_stack_want(const struct cs_rec_cuda *r, unsigned on)
{
    uint64_t d = r->t_exit_ns - r->t_enter_ns;
    unsigned want = (on & SHIM_STK_NATIVE) && d >= shim_stack_min_ ? SHIM_STK_NATIVE : 0;

    if ((on & SHIM_STK_PYTHON) && !(r->flags & CS_CF_NESTED)) {
        struct shim_thread *t = &shim_t_;
        unsigned w = shim_py_when_[r->api];

        if ((w & (SHIM_PY_SYNC | SHIM_PY_ALLOC | SHIM_PY_RARE)) || d >= shim_py_min_)
            want |= SHIM_STK_PYTHON;
        if (w & SHIM_PY_SYNC) {
            t->py_armed = 1;
        } else if ((w & SHIM_PY_ENQUEUE) && t->py_armed) {
            t->py_armed = 0;
            want |= SHIM_STK_PYTHON;
        }
    }
    return want;
}

/* shim_thread.dev: SHIM_DEV_READ | what a record stores (the ordinal, or
 * CS_DEVICE_UNKNOWN without a context); 0 = not read yet */
#define SHIM_DEV_READ 0x10000u
/** Read the calling thread's device from its current context (one driver
 * call, after a context change only); fills shim_thread.dev. */
uint32_t shim_device_slow(void) SHIM_COLD;
/** Device ordinal of the calling thread's current context, or
 * CS_DEVICE_UNKNOWN. Call only after a driver call succeeded. */
static inline uint16_t shim_device(void)
{
    uint32_t d = shim_t_.dev;

    if (SHIM_UNLIKELY(d == 0))
        d = shim_device_slow();
    return (uint16_t)d;
}
/** getpid(), cached; for calls made before the constructor ran. */
uint32_t shim_pid_slow(void) SHIM_COLD;

/** Finish a record: exit time @p t_exit, result, pid/tid, optional stack. */
static inline void shim_rec_finish(struct cs_rec_cuda *r, int result, uint64_t t_exit)
{
    if (!(r->flags & CS_CF_NESTED))
        shim_ring_in_call(0);
    r->t_exit_ns = t_exit;
    r->result = result;
    r->flags |= shim_static_rt_;
    if (result != 0)
        r->flags |= CS_CF_ERROR;
    else
        r->device = shim_device();
    r->pid = SHIM_LIKELY(shim_pid_ != 0) ? shim_pid_ : shim_pid_slow();
    r->tid = shim_ring_tid();
    unsigned on = atomic_load_explicit(&shim_stacks_, memory_order_relaxed), want;
    if (SHIM_UNLIKELY(on != 0) && (want = shim_stack_want(r, on)) != 0)
        r->stack_id = shim_stack_capture_slow(want);
}

/** Keep finished driver record @p r, made inside a recorded runtime call,
 * for that call's push (shim_rec_end_rt); push the one kept before it. */
static inline void shim_rec_hold(const struct cs_rec_cuda *r)
{
    struct shim_thread *t = &shim_t_;

    if (SHIM_UNLIKELY(t->held_of != 0))
        shim_ring_push_cuda(&t->held);
    t->held = *r;
    t->held_of = r->parent_seq;
}

/* ---- GPU activity (shim_gpu.c, docs/gpu.md) ---- */

/** Constructor: GPU activity mode (CUDASPY_GPU_ACTIVITY), CUDA_INJECTION64_PATH.
 * @return 0, or -1 when this library was loaded only as the driver's
 * injection (not preloaded): the shim must stay out of the process. */
int shim_gpu_init(void);
void shim_gpu_atfork_child(void);
/** Was this library preloaded (LD_PRELOAD), not only loaded as an injection? */
int shim_gpu_preloaded(void);
/** Start, switch or flush CUPTI: a recorded call ended at or after
 * shim_hot.gpu_next. Only at an outermost call's end (CUPTI wants
 * cuptiFinalize at the exit of a CUDA call). */
void shim_gpu_tick_slow(void) SHIM_COLD;
/** A call not recorded (paused: record --duty's off phase, outside a
 * capture range) while GPU activity is on (shim_hot.gpu_corr): end the
 * slice now, before the call, as its due time would at the end of the
 * call before, so that CUPTI costs and records nothing until recording
 * resumes (with calls of other threads in flight, CUPTI detaches at the
 * next recorded call's end). In full mode CUPTI stays attached with its
 * kinds off, and they come on again at the first recorded call. */
void shim_gpu_paused_slow(void) SHIM_COLD;
/** Around an enqueue while shim_hot.gpu_corr: tell CUPTI which record
 * enqueues the work (tid << 32 | seq), so its GPU record can name it. */
void shim_gpu_corr_push(const struct cs_rec_cuda *r) __attribute__((noinline));
void shim_gpu_corr_pop(void) __attribute__((noinline));

static inline void shim_gpu_tick(uint64_t t_exit)
{
    if (SHIM_UNLIKELY(t_exit >= atomic_load_explicit(&shim_hot_.gpu_next, memory_order_relaxed)))
        shim_gpu_tick_slow();
}

/** Finish and push a driver record; one made inside a recorded runtime call
 * waits for that call's record (shim_rec_hold): the pair then costs one
 * ring commit and one clock read less. */
static inline void shim_rec_end(struct cs_rec_cuda *r, int result)
{
    shim_rec_finish(r, result, shim_ring_now());
    SHIM_ST(uint64_t st_p0_ = __rdtsc();)
    if (SHIM_LIKELY(!(r->flags & CS_CF_NESTED))) { /* lays out a static runtime's path straight */
        shim_ring_push_cuda(r);
        shim_gpu_tick(r->t_exit_ns);
    } else {
        shim_rec_hold(r);
    }
    SHIM_ST(shim_st_push(r->api, __rdtsc() - st_p0_);)
}

/** Finish and push a runtime record, with the driver record kept, if any,
 * just before it, under one commit. When that driver call was made by this
 * runtime call, its exit is this call's exit too: what the runtime does
 * after it is a return (docs/shim.md), and the clock read it saves is 20 ns
 * on the H200 host. */
static inline void shim_rec_end_rt(struct cs_rec_cuda *r, int result)
{
    struct shim_thread *t = &shim_t_;
    uint32_t of = t->held_of; /* this call's seq, an outer call's, or 0 */

    /* a folded call's driver call ran after the one kept, if any */
    shim_rec_finish(r, result,
                    of == r->seq && !(r->flags & CS_CF_FOLDED) ? t->held.t_exit_ns
                                                                : shim_ring_now());
    SHIM_ST(uint64_t st_p0_ = __rdtsc();)
    if (SHIM_LIKELY(of != 0)) {
        t->held_of = 0;
        shim_ring_push_cuda2(&t->held, r);
    } else {
        shim_ring_push_cuda(r);
    }
    shim_gpu_tick(r->t_exit_ns);
    SHIM_ST(shim_st_push(r->api, __rdtsc() - st_p0_);)
}

/** Normalise a stream handle of a call of @p variant: CU_STREAM_LEGACY -> 0;
 * stream 0 in a per-thread variant, or CU_STREAM_PER_THREAD ->
 * CS_STREAM_PER_THREAD + PTDS. */
static inline void shim_rec_stream_of(struct cs_rec_cuda *r, uint64_t s, unsigned variant)
{
    if (s == 1)
        s = CS_STREAM_LEGACY;
    else if ((s == 0 && variant != CS_VAR_LEGACY) || s == CS_STREAM_PER_THREAD)
        s = CS_STREAM_PER_THREAD;
    if (s == CS_STREAM_PER_THREAD)
        r->flags |= CS_CF_PTDS;
    r->stream = s;
}

/** The same for the call @p r records. */
static inline void shim_rec_stream(struct cs_rec_cuda *r, uint64_t s)
{
    shim_rec_stream_of(r, s, r->variant);
}

/* ---- CUDA argument structs (shim_cudesc.c) ---- */

/** Grid, block and stream of the CUlaunchConfig at @p cfg (may be 0). */
void shim_desc_launch(struct cs_rec_cuda *r, uint64_t cfg);
/** Bytes, direction, host side of the CUDA_MEMCPY2D (@p dims 2) or
 * CUDA_MEMCPY3D (@p dims 3) at @p desc (may be 0). */
void shim_desc_copy(struct cs_rec_cuda *r, uint64_t desc, int dims);

/* ---- gateways and resolution (shim_dlsym.c) ---- */

typedef void *(*shim_dlsym_fn)(void *, const char *);
extern shim_dlsym_fn shim_real_dlsym_ __attribute__((visibility("hidden")));
shim_dlsym_fn shim_dlsym_init_slow(void) SHIM_COLD;

/** Is @p p inside libcudaspy.so? */
int shim_is_self(const void *p);

/** Slow path: the wrapper for driver pointer @p p (by its exact exported
 * name), or @p p itself when it is not a traced function. */
void *shim_wrap_slow(void *p) SHIM_COLD;

/** Lazily find the real driver symbol @p name for an exported wrapper:
 * real dlsym(RTLD_NEXT), else libcuda.so.1 if loaded. @return NULL if none. */
void *shim_find_driver_slow(const char *name) SHIM_COLD;

/** Same for runtime symbols (RTLD_NEXT, else a loaded libcudart.so*). */
void *shim_find_runtime_slow(const char *name) SHIM_COLD;

/* ---- driver table (shim_driver.c) ---- */

/** Index of exported driver name @p name in the wrapper table, or -1. */
int shim_driver_index(const char *name);
/** Wrapper of table entry @p i; publishes @p real as its real function
 * unless another one is already there. @return the wrapper, or NULL when
 * entry @p i already forwards to a different function. */
void *shim_driver_bind(int i, void *real);

/* ---- names (shim_names.c) ---- */

#define SHIM_NAME_SLOTS 65536u /* per cache; power of two (BSS: touched pages only) */
struct shim_name_slot {
    _Atomic uint64_t key; /* handle, 0 = empty */
    _Atomic uint64_t val; /* epoch, sent mark and id (shim_names.c) */
};
struct shim_name_cache {
    struct shim_name_slot slot[SHIM_NAME_SLOTS];
};
/* The driver handles' cache, for shim_name_prefetch(). */
extern struct shim_name_cache shim_name_drv_ __attribute__((visibility("hidden")));

static inline uint32_t shim_name_slot_of(uint64_t h)
{
    return (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> 32) & (SHIM_NAME_SLOTS - 1);
}

/** Start loading the cache line that names driver handle @p f, before the
 * launch that is about to run: after it, the lookup finds it in cache
 * rather than waiting on memory. Never faults. */
static inline void shim_name_prefetch(uint64_t f)
{
    __builtin_prefetch(&shim_name_drv_.slot[shim_name_slot_of(f)], 0, 3);
}

/* A slot's value: epoch << 32 | sent << 24 | id. sent is the low byte of
 * the name generation (shim_hot.name_gen) when this process last defined
 * id in its ring, so that a hit reads one cache line (a launch's lookup
 * missed in cache on the H200). Only a name defined exactly 256 fork
 * generations up would pass for sent. */
#define SHIM_NAME_VAL(epoch, sent, id) \
    ((uint64_t)(epoch) << 32 | ((uint64_t)(sent) & 0xffu) << 24 | (id))
#define SHIM_NAME_VAL_EPOCH(v) ((uint32_t)((v) >> 32))
#define SHIM_NAME_VAL_SENT(v)  ((uint32_t)(v) >> 24)
#define SHIM_NAME_VAL_ID(v)    ((uint32_t)(v) & 0xffffffu)

/** Was slot value @p v cached since the last module/library unload? */
static inline int shim_name_val_current(uint64_t v)
{
    uint32_t epoch = atomic_load_explicit(&shim_hot_.name_epoch, memory_order_relaxed);

    return SHIM_NAME_VAL_EPOCH(v) == epoch;
}

/** Is the name in slot value @p v defined in this process's ring (not only
 * in a parent's, before a fork)? */
static inline int shim_name_val_sent(uint64_t v)
{
    uint32_t gen = atomic_load_explicit(&shim_hot_.name_gen, memory_order_relaxed);

    return SHIM_NAME_VAL_SENT(v) == (gen & 0xffu);
}

/** shim_name_driver() past a hit in the handle's own slot. */
uint32_t shim_name_driver_slow(uint64_t f, const void *real_launch) SHIM_COLD;

/** Process-local kernel-name id of driver handle @p f (CUfunction or
 * CUkernel), 0 if unknown. @p real_launch locates the driver. Inline: the
 * launch that just ran usually finds its kernel in its own slot. */
static inline uint32_t shim_name_driver(uint64_t f, const void *real_launch)
{
    const struct shim_name_slot *s = &shim_name_drv_.slot[shim_name_slot_of(f)];

    if (SHIM_LIKELY(atomic_load_explicit(&s->key, memory_order_acquire) == f)) {
        uint64_t v = atomic_load_explicit(&s->val, memory_order_acquire);

        if (SHIM_LIKELY(shim_name_val_current(v) && shim_name_val_sent(v)))
            return SHIM_NAME_VAL_ID(v);
    }
    return shim_name_driver_slow(f, real_launch);
}
/** Same for a runtime host stub or cudaKernel_t. */
uint32_t shim_name_runtime(uint64_t stub, const void *real_launch);
/** Forget every cached name (a module or library was unloaded). */
void shim_name_invalidate(void);
/** Process-local id for string @p s (kind enum cs_name_kind), sent once per
 * process. 0 when recording is off or the table is full. */
uint32_t shim_name_intern_slow(const char *s, size_t len, uint64_t handle,
                               uint32_t kind) SHIM_COLD;
/** Define name @p id again if this process has not sent it yet (fork child). */
void shim_name_touch(uint32_t id);
/** Define name @p id again, in this thread's ring: a definition that uses
 * it (a stack) follows there, and the collector may drain the ring holding
 * the first definition later. */
void shim_name_define(uint32_t id);

/* ---- what the shim remembers (shim_track.c) ---- */

/** Pinned host range [p, p+n) allocated or registered through CUDA. */
void shim_pinned_add(uint64_t p, uint64_t n);
/** Forget the range starting at @p p. @return its length, 0 if unknown. */
uint64_t shim_pinned_del(uint64_t p);
/** CS_CF_PINNED if @p p lies in a known pinned range, else CS_CF_PAGEABLE
 * (0 when the table is being rewritten right now). Lock-free. */
uint16_t shim_pinned_flag(uint64_t p);

/** A copy with a known host side: its pointer and whether it is pinned. */
static inline void shim_rec_host(struct cs_rec_cuda *r, unsigned dir, uint64_t bytes,
                                 uint64_t host)
{
    r->dir = (uint8_t)dir;
    r->bytes = bytes;
    r->aux = host;
    r->flags |= shim_pinned_flag(host);
}

/** Capture key of a normalised stream: the per-thread default stream is a
 * different stream in every thread. */
static inline uint64_t shim_capture_key(uint64_t stream)
{
    return stream == CS_STREAM_PER_THREAD ? stream | (uint64_t)shim_ring_tid() << 32 : stream;
}

void shim_capture_begin(uint64_t stream);
void shim_capture_end(uint64_t stream);
#define shim_ncapturing_ (shim_hot_.ncapturing)
int shim_capture_has_slow(uint64_t stream);
/** Mark @p r CS_CF_CAPTURING if its stream is being captured. */
static inline void shim_rec_capture(struct cs_rec_cuda *r)
{
    if (SHIM_UNLIKELY(atomic_load_explicit(&shim_ncapturing_, memory_order_relaxed) > 0) &&
        shim_capture_has_slow(shim_capture_key(r->stream)))
        r->flags |= CS_CF_CAPTURING;
}

/* ---- capture ranges the program bounds (shim_capture.c, docs/capture.md) ---- */

/* enum cs_capture_kind (cudaspy/capture.h) when the program bounds the
 * ranges, else CS_CAPTURE_NONE; set by the constructor (CUDASPY_CAPTURE) */
extern int shim_cap_mode_;

/** Constructor: the mode in CUDASPY_CAPTURE. */
void shim_capture_init(void);
/** A fork child: the counts go on, the lock is free. */
void shim_capture_atfork_child(void);
/** cuProfilerStart (@p on 1) or cuProfilerStop returned or is called. */
void shim_capture_profiler(int on) SHIM_COLD;
/** The NVTX range that bounds the ranges (nvtx:, steps:); "" (steps:):
 * the first range the program pushes at the top; NULL in other modes. */
const char *shim_capture_range_name(void);
/** A push of that range at @p t (@p top: at depth 0 of its domain).
 * @return 1 when its pop is to be reported (it is inside a range) */
int shim_capture_nvtx_push(uint64_t t, int top) SHIM_COLD;
/** The pop of a range shim_capture_nvtx_push() returned 1 for, at @p t. */
void shim_capture_nvtx_pop(uint64_t t) SHIM_COLD;

/* ---- NVTX ranges (shim_nvtx.c, docs/shim.md) ---- */

/** Constructor: let NVTX find this library (NVTX_INJECTION64_PATH, when
 * unset and @p preloaded). @return 0, or -1 when this library was loaded
 * only as NVTX's injection (not preloaded): the shim must stay out. */
#ifndef CS_SHIM_NO_NVTX
int shim_nvtx_init(int preloaded);
void shim_nvtx_atfork_child(void);
#else /* built without the nvtx3 headers */
static inline int shim_nvtx_init(int preloaded) { return (void)preloaded, 0; }
static inline void shim_nvtx_atfork_child(void) {}
#endif

/* ---- Python stacks (shim_python.c, docs/python.md) ---- */

#define SHIM_PY_FRAMES 32  /* Python frames kept, innermost first */
#define SHIM_PY_HOPS 4096  /* frames walked at most (C entry frames included) */
/* A frame as the walk finds it: resolved only for a stack not seen before. */
struct shim_py_raw {
    uintptr_t code;  /* the code object */
    int64_t instr;   /* instruction index in code units; < 0 = not started */
};
/** Constructor: the interpreter of this process, if any, and its layout
 * (CUDASPY_PYTHON=0: none); sets SHIM_STK_PYTHON. One notice when the
 * interpreter is one we cannot read. */
void shim_python_init(void);
/** This thread's Python frames, innermost first, at most @p max. @return how many. */
int shim_py_walk(struct shim_py_raw *raw, int max);
/** Frame @p r as a CS_FRAME_PYTHON frame (interns file and function). */
void shim_py_frame(const struct shim_py_raw *r, struct cs_frame *f);
/** Load address of the interpreter's object (where native frames stop), 0 = unknown. */
uintptr_t shim_py_base(void);
/** The layout a ring segment publishes for the collector's samples of host
 * code (include/cudaspy/pyframe.h) into @p out; all zero when there are to
 * be none (no Python we read, CUDASPY_PYTHON=0, CUDASPY_PYSAMPLE_HZ=0). */
void shim_py_publish(struct cs_py_layout *out);
/** The calling thread's PyThreadState for those samples, once a walk has
 * proved the layout; 0 = none (slow path: a ring claim). */
uintptr_t shim_py_tstate(void);

/* ---- process (shim_main.c, shim_start.c, shim_stack.c) ---- */

/** One stderr line "cudaspy[pid]: <msg>", no stdio. */
void shim_log(const char *msg);
/** shim_log() the first time a site reaches it (@p once: that site's flag). */
static inline void shim_log_once(_Atomic int *once, const char *msg)
{
    if (!atomic_exchange_explicit(once, 1, memory_order_relaxed))
        shim_log(msg);
}
/** Start cudaspy-sampler for this process tree (constructor). @return 0 or <0. */
int shim_start_collector(void);
/** Fork hooks of the files that keep per-process state. */
void shim_names_atfork_child(void);
void shim_stack_atfork_child(void);
void shim_stack_init(void);
/* One mutex for every slow-path table update. Never held across a dl*()
 * call, a CUDA call or a ring push; taken around fork(). */
void shim_lock(void);
void shim_unlock(void);

#endif
