/* shim_driver.c: the driver-layer wrappers, one per exact exported name
 * (cuMemcpyHtoDAsync_v2 and cuMemcpyHtoDAsync_v2_ptsz are two wrappers with
 * two real pointers; a variant is never substituted). The wrappers are
 * generated from SHIM_DRV_LIST and exported under the driver's names, so
 * they serve both programs linked with -lcuda (real function found lazily)
 * and pointers handed out by the gateways in shim_dlsym.c (real function
 * bound by shim_driver_bind()). Context changes are wrapped too, unrecorded,
 * so that each thread's device is read again from its new context. What a call means (bytes, direction,
 * stream...) is read from its raw arguments by one ex_<kind>() per family.
 *
 * Every traced driver function takes only integer and pointer arguments and
 * returns CUresult, so on x86-64 and aarch64 a wrapper may take and forward
 * them as uint64_t: 32-bit arguments arrive in 64-bit slots and the callee
 * reads only their low half, exactly as from the original caller. This file
 * does not include cuda.h: its macros (cuMemcpyBatchAsync -> _v2...) would
 * rename table entries; shim_cudesc.c reads the CUDA structs. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "shim.h"

#define SHIM_CUDA_ERROR_NOT_FOUND 500 /* CUDA_ERROR_NOT_FOUND: no real function */

/* X(exported name, CS_API id name, variant, argument count, kind) */
#define SHIM_PTSZ(X, name, n, kind) \
    X(name, name, LEGACY, n, kind) X(name##_ptsz, name, PTSZ, n, kind)
#define SHIM_PTDS(X, name, n, kind) \
    X(name, name, LEGACY, n, kind) X(name##_ptds, name, PTDS, n, kind)
#define SHIM_ONE(X, name, n, kind) X(name, name, LEGACY, n, kind)

#define SHIM_DRV_LIST(X)                                 \
    SHIM_PTSZ(X, cuLaunchKernel, 11, launch)             \
    SHIM_PTSZ(X, cuLaunchKernelEx, 4, launch_ex)         \
    SHIM_PTSZ(X, cuLaunchCooperativeKernel, 10, launch)  \
    SHIM_PTSZ(X, cuLaunchHostFunc, 3, host_fn)           \
    SHIM_PTSZ(X, cuGraphLaunch, 2, graph)                \
    SHIM_PTSZ(X, cuMemcpyHtoDAsync_v2, 4, htod)          \
    SHIM_PTSZ(X, cuMemcpyDtoHAsync_v2, 4, dtoh)          \
    SHIM_PTSZ(X, cuMemcpyDtoDAsync_v2, 4, dtod)          \
    SHIM_PTSZ(X, cuMemcpyAsync, 4, copy_any)             \
    SHIM_PTSZ(X, cuMemcpyPeerAsync, 6, peer)             \
    SHIM_PTSZ(X, cuMemcpy2DAsync_v2, 2, copy_2d)         \
    SHIM_PTSZ(X, cuMemcpy3DAsync_v2, 2, copy_3d)         \
    SHIM_PTSZ(X, cuMemcpyBatchAsync, 9, batch)           \
    SHIM_PTSZ(X, cuMemcpyBatchAsync_v2, 8, batch)        \
    SHIM_PTDS(X, cuMemcpyHtoD_v2, 3, htod)               \
    SHIM_PTDS(X, cuMemcpyDtoH_v2, 3, dtoh)               \
    SHIM_PTDS(X, cuMemcpyDtoD_v2, 3, dtod)               \
    SHIM_PTDS(X, cuMemcpy, 3, copy_any)                  \
    SHIM_PTDS(X, cuMemcpyPeer, 5, peer)                  \
    SHIM_PTDS(X, cuMemcpy2D_v2, 1, copy_2d)              \
    SHIM_PTDS(X, cuMemcpy3D_v2, 1, copy_3d)              \
    SHIM_PTDS(X, cuMemsetD8_v2, 3, memset8)              \
    SHIM_PTDS(X, cuMemsetD16_v2, 3, memset16)            \
    SHIM_PTDS(X, cuMemsetD32_v2, 3, memset32)            \
    SHIM_PTSZ(X, cuMemsetD8Async, 4, memset8)            \
    SHIM_PTSZ(X, cuMemsetD16Async, 4, memset16)          \
    SHIM_PTSZ(X, cuMemsetD32Async, 4, memset32)          \
    SHIM_PTSZ(X, cuStreamSynchronize, 1, stream_arg0)    \
    SHIM_ONE(X, cuCtxSynchronize, 0, none)               \
    SHIM_ONE(X, cuCtxSynchronize_v2, 1, aux_arg0)        \
    SHIM_ONE(X, cuEventSynchronize, 1, aux_arg0)         \
    SHIM_PTSZ(X, cuStreamWaitEvent, 3, wait_event)       \
    SHIM_ONE(X, cuMemAlloc_v2, 2, alloc)                 \
    SHIM_ONE(X, cuMemFree_v2, 1, aux_arg0)               \
    SHIM_PTSZ(X, cuMemAllocAsync, 3, alloc_async)              \
    SHIM_PTSZ(X, cuMemFreeAsync, 2, free_async)          \
    SHIM_PTSZ(X, cuMemAllocFromPoolAsync, 4, alloc_async)      \
    SHIM_ONE(X, cuMemAllocHost_v2, 2, alloc_host)        \
    SHIM_ONE(X, cuMemHostAlloc, 3, alloc_host)           \
    SHIM_ONE(X, cuMemFreeHost, 1, unpin)                 \
    SHIM_ONE(X, cuMemAllocManaged, 3, alloc)             \
    SHIM_ONE(X, cuMemAllocPitch_v2, 5, alloc_pitch)      \
    SHIM_ONE(X, cuMemCreate, 4, alloc)                   \
    SHIM_ONE(X, cuMemMap, 5, range)                      \
    SHIM_ONE(X, cuMemRelease, 1, aux_arg0)               \
    SHIM_ONE(X, cuMemUnmap, 2, range)                    \
    SHIM_ONE(X, cuMemHostRegister_v2, 3, pin)            \
    SHIM_ONE(X, cuMemHostUnregister, 1, unpin)           \
    SHIM_PTSZ(X, cuStreamBeginCapture_v2, 2, capture_begin) \
    SHIM_PTSZ(X, cuStreamEndCapture, 2, capture_end)     \
    SHIM_ONE(X, cuModuleUnload, 1, unload)               \
    SHIM_ONE(X, cuLibraryUnload, 1, unload)              \
    SHIM_ONE(X, cuMemGetInfo_v2, 2, meminfo)             \
    SHIM_ONE(X, cuGraphInstantiateWithFlags, 3, graph_inst) \
    SHIM_PTSZ(X, cuGraphInstantiateWithParams, 3, graph_inst) \
    SHIM_ONE(X, cuGraphExecUpdate_v2, 3, aux_arg0)       \
    SHIM_PTSZ(X, cuGraphUpload, 2, graph_upload)

/* Initialisation: wrapped where the gateways hand out pointers, but not
 * exported: a program may look cuInit up with dlsym(RTLD_DEFAULT) to learn
 * whether a driver is loaded, and must get the same answer as without us. */
#define SHIM_INIT_LIST(X)                                \
    SHIM_ONE(X, cuInit, 1, none)                         \
    SHIM_ONE(X, cuDevicePrimaryCtxRetain, 2, none)

/* Context changes: not recorded, but the calling thread's device is read
 * again at its next record. X(exported name, argument count) */
#define SHIM_CTX_LIST(X)                                 \
    X(cuCtxSetCurrent, 1) X(cuCtxPushCurrent_v2, 1)      \
    X(cuCtxPopCurrent_v2, 1) X(cuCtxDestroy_v2, 1)       \
    X(cuCtxCreate_v2, 3) X(cuCtxCreate_v3, 5) X(cuCtxCreate_v4, 4)

/* The profiler API: not recorded; the calls bound the capture ranges of
 * record --capture cudaProfilerApi (shim_capture.c). X(exported name, on) */
#define SHIM_PROF_LIST(X) X(cuProfilerStart, 1) X(cuProfilerStop, 0)

enum shim_drv_index {
#define SHIM_IDX_(name, base, var, n, kind) SHIM_IDX_##name,
#define SHIM_CTX_IDX_(name, n) SHIM_IDX_##name,
    SHIM_DRV_LIST(SHIM_IDX_)
    SHIM_INIT_LIST(SHIM_IDX_)
    SHIM_CTX_LIST(SHIM_CTX_IDX_)
    SHIM_PROF_LIST(SHIM_CTX_IDX_)
#undef SHIM_IDX_
#undef SHIM_CTX_IDX_
    SHIM_NDRV
};

/* Each wrapper's real function (0 until found or bound). */
static _Atomic(uintptr_t) shim_drv_real[SHIM_NDRV];

/* ---- argument lists: P<n> declares, A<n> forwards, L<n> lists with a trailing comma ---- */
#define P0 void
#define P1 uint64_t a0
#define P2 P1, uint64_t a1
#define P3 P2, uint64_t a2
#define P4 P3, uint64_t a3
#define P5 P4, uint64_t a4
#define P6 P5, uint64_t a5
#define P7 P6, uint64_t a6
#define P8 P7, uint64_t a7
#define P9 P8, uint64_t a8
#define P10 P9, uint64_t a9
#define P11 P10, uint64_t a10
#define A0
#define A1 a0
#define A2 A1, a1
#define A3 A2, a2
#define A4 A3, a3
#define A5 A4, a4
#define A6 A5, a5
#define A7 A6, a6
#define A8 A7, a7
#define A9 A8, a8
#define A10 A9, a9
#define A11 A10, a10
#define L0
#define L1 a0,
#define L2 L1 a1,
#define L3 L2 a2,
#define L4 L3 a3,
#define L5 L4 a4,
#define L6 L5 a5,
#define L7 L6 a6,
#define L8 L7 a7,
#define L9 L8 a8,
#define L10 L9 a9,
#define L11 L10 a10,

/* ---- what each family's arguments mean (a = raw arguments, after the call) ---- */

static inline uint64_t deref_u64(uint64_t p, int rc)
{
    return (rc == 0 && p) ? *(const uint64_t *)(uintptr_t)p : 0;
}

/* Written out, not looped: with constant indexes the compiler keeps the
 * wrapper's argument array in registers instead of storing it. */
static inline void grid_block(struct cs_rec_cuda *r, const uint64_t *g, const uint64_t *b)
{
    r->grid[0] = (uint32_t)g[0], r->grid[1] = (uint32_t)g[1], r->grid[2] = (uint32_t)g[2];
    r->block[0] = (uint16_t)b[0], r->block[1] = (uint16_t)b[1], r->block[2] = (uint16_t)b[2];
}

/* A launch made inside a runtime launch hands its name to it (it waits
 * in shim_t_.held), which then needs no lookup of its own. */
static inline void kernel_name(struct cs_rec_cuda *r, uint64_t f, int rc, const void *real)
{
    if (rc != 0 || f == 0)
        return;
    r->name_id = shim_name_driver(f, real);
    if (r->name_id)
        r->flags |= CS_CF_HAS_NAME;
}

/* Before the real call: start loading what the record will need after it;
 * a launch's grid, block and stream, which are inputs, go into the record
 * now, so that they need not be kept across the call. */
static inline void drv_pre(struct cs_rec_cuda *r, unsigned api, unsigned var, const uint64_t *a)
{
    if (api == CS_API_cuLaunchKernel || api == CS_API_cuLaunchCooperativeKernel) {
        shim_name_prefetch(a[0]);
        grid_block(r, a + 1, a + 4);
        shim_rec_stream_of(r, a[8], var);
    } else if (api == CS_API_cuLaunchKernelEx) {
        shim_name_prefetch(a[1]);
    }
}

/* Stream argument @p s of an async call, or the implicit stream of a
 * synchronous one (legacy 0, or the per-thread stream in a _ptds call). */
static inline void call_stream(struct cs_rec_cuda *r, int n, int pos, const uint64_t *a)
{
    shim_rec_stream(r, pos < n ? a[pos] : 0);
}

static inline void ex_launch(struct cs_rec_cuda *r, const uint64_t *a, int n, int rc,
                             const void *real)
{
    (void)n; /* grid, block, stream: drv_pre() */
    kernel_name(r, a[0], rc, real);
}

static inline void ex_launch_ex(struct cs_rec_cuda *r, const uint64_t *a, int n, int rc,
                                const void *real)
{
    (void)n;
    shim_desc_launch(r, a[0]);
    kernel_name(r, a[1], rc, real);
}

#define EX_ARGS struct cs_rec_cuda *r, const uint64_t *a, int n, int rc, const void *real
#define EX_UNUSED (void)a, (void)n, (void)rc, (void)real

static inline void ex_host_fn(EX_ARGS)
{
    EX_UNUSED;
    shim_rec_stream(r, a[0]);
}

static inline void ex_graph(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
    shim_rec_stream(r, a[1]);
}

static inline void ex_htod(EX_ARGS)
{
    EX_UNUSED;
    shim_rec_host(r, CS_DIR_HTOD, a[2], a[1]);
    call_stream(r, n, 3, a);
}

static inline void ex_dtoh(EX_ARGS)
{
    EX_UNUSED;
    shim_rec_host(r, CS_DIR_DTOH, a[2], a[0]);
    call_stream(r, n, 3, a);
}

static inline void ex_dtod(EX_ARGS)
{
    EX_UNUSED;
    r->dir = CS_DIR_DTOD;
    r->bytes = a[2];
    call_stream(r, n, 3, a);
}

/* Unified-address copy: the driver decides the direction. Either side may be
 * host memory; pinned when one of them is in a known pinned range. */
static inline void ex_copy_any(EX_ARGS)
{
    EX_UNUSED;
    r->dir = CS_DIR_DEFAULT;
    r->bytes = a[2];
    if (shim_pinned_flag(a[1]) == CS_CF_PINNED) {
        r->flags |= CS_CF_PINNED;
        r->aux = a[1];
    } else if (shim_pinned_flag(a[0]) == CS_CF_PINNED) {
        r->flags |= CS_CF_PINNED;
        r->aux = a[0];
    }
    call_stream(r, n, 3, a);
}

static inline void ex_peer(EX_ARGS)
{
    EX_UNUSED;
    r->dir = CS_DIR_PEER;
    r->bytes = a[4];
    call_stream(r, n, 5, a);
}

static inline void ex_copy_2d(EX_ARGS)
{
    EX_UNUSED;
    shim_desc_copy(r, a[0], 2);
    call_stream(r, n, 1, a);
}

static inline void ex_copy_3d(EX_ARGS)
{
    EX_UNUSED;
    shim_desc_copy(r, a[0], 3);
    call_stream(r, n, 1, a);
}

/* cuMemcpyBatchAsync(dsts, srcs, sizes, count, ..., stream): stream is the
 * last argument (9 for the 12.8 form with failIdx, 8 for the 13.0 _v2);
 * aux is the number of copies in the batch. */
static inline void ex_batch(EX_ARGS)
{
    const size_t *sizes = (const size_t *)(uintptr_t)a[2];

    EX_UNUSED;
    r->dir = CS_DIR_DEFAULT;
    r->aux = a[3];
    for (uint64_t i = 0; sizes && i < a[3] && i < (1u << 20); i++)
        r->bytes += sizes[i];
    shim_rec_stream(r, a[n - 1]);
}

static inline void memset_n(struct cs_rec_cuda *r, const uint64_t *a, int n, unsigned width)
{
    r->bytes = a[2] * width;
    call_stream(r, n, 3, a);
}

static inline void ex_memset8(EX_ARGS) { EX_UNUSED; memset_n(r, a, n, 1); }
static inline void ex_memset16(EX_ARGS) { EX_UNUSED; memset_n(r, a, n, 2); }
static inline void ex_memset32(EX_ARGS) { EX_UNUSED; memset_n(r, a, n, 4); }

static inline void ex_stream_arg0(EX_ARGS)
{
    EX_UNUSED;
    shim_rec_stream(r, a[0]);
}

static inline void ex_none(EX_ARGS) { (void)r; EX_UNUSED; }

static inline void ex_aux_arg0(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
}

static inline void ex_wait_event(EX_ARGS)
{
    EX_UNUSED;
    shim_rec_stream(r, a[0]);
    r->aux = a[1];
}

/* The device's free and total memory, read by the shim itself
 * (docs/memory.md): once a process, after its first device allocation
 * succeeded, and after each that failed out of memory. Off the hot path:
 * an allocation tests one word. */
#define SHIM_CUDA_ERROR_OUT_OF_MEMORY 2
static _Atomic uint32_t mem_read_pid; /* the process that has its first reading */
static void shim_mem_read_slow(int alloc_rc) SHIM_COLD;

static inline void mem_note(int rc)
{
    if (SHIM_UNLIKELY(rc == SHIM_CUDA_ERROR_OUT_OF_MEMORY ||
                      (rc == 0 && atomic_load_explicit(&mem_read_pid, memory_order_relaxed) !=
                                      shim_pid_)))
        shim_mem_read_slow(rc);
}

/* (ptr out, bytes, ...): cuMemAlloc_v2, cuMemAllocManaged, cuMemCreate
 * (handle out); the _async forms end with the stream. */
static inline void ex_alloc(EX_ARGS)
{
    EX_UNUSED;
    r->bytes = a[1];
    r->aux = deref_u64(a[0], rc);
    mem_note(rc);
}

/* cuMemGetInfo_v2(free out, total out) */
static inline void ex_meminfo(EX_ARGS)
{
    EX_UNUSED;
    r->bytes = deref_u64(a[0], rc);
    r->aux = deref_u64(a[1], rc);
}

static inline void ex_alloc_async(EX_ARGS)
{
    ex_alloc(r, a, n, rc, real);
    shim_rec_stream(r, a[n - 1]);
}

static inline void ex_free_async(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
    shim_rec_stream(r, a[1]);
}

static inline void ex_alloc_host(EX_ARGS)
{
    EX_UNUSED;
    r->bytes = a[1];
    r->aux = deref_u64(a[0], rc);
    if (r->aux)
        shim_pinned_add(r->aux, a[1]);
}

static inline void ex_alloc_pitch(EX_ARGS)
{
    EX_UNUSED;
    r->aux = deref_u64(a[0], rc);
    r->bytes = deref_u64(a[1], rc) * a[3];
    mem_note(rc);
}

static inline void ex_range(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
    r->bytes = a[1];
}

static inline void ex_pin(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
    r->bytes = a[1];
    if (rc == 0)
        shim_pinned_add(a[0], a[1]);
}

static inline void ex_unpin(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
    if (rc == 0)
        r->bytes = shim_pinned_del(a[0]);
}

static inline void ex_capture_begin(EX_ARGS)
{
    EX_UNUSED;
    shim_rec_stream(r, a[0]);
    if (rc == 0)
        shim_capture_begin(shim_capture_key(r->stream));
}

static inline void ex_capture_end(EX_ARGS)
{
    EX_UNUSED;
    shim_rec_stream(r, a[0]);
    r->aux = deref_u64(a[1], rc);
    shim_capture_end(shim_capture_key(r->stream));
}

/* (exec out, graph, ...): aux is the executable graph made, bytes the
 * graph's handle (what was captured: a new one each capture). */
static inline void ex_graph_inst(EX_ARGS)
{
    EX_UNUSED;
    r->aux = deref_u64(a[0], rc);
    r->bytes = a[1];
}

static inline void ex_graph_upload(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
    shim_rec_stream(r, a[1]);
}

static inline void ex_unload(EX_ARGS)
{
    EX_UNUSED;
    r->aux = a[0];
    if (rc == 0)
        shim_name_invalidate();
}

/* ---- the wrappers ---- */

/* Kinds that put work on a stream, and so get an external correlation id
 * while GPU activity is recorded (a compile-time 1 or 0 per wrapper). */
#define SHIM_ENQ_launch 1
#define SHIM_ENQ_launch_ex 1
#define SHIM_ENQ_graph 1
#define SHIM_ENQ_htod 1
#define SHIM_ENQ_dtoh 1
#define SHIM_ENQ_dtod 1
#define SHIM_ENQ_copy_any 1
#define SHIM_ENQ_peer 1
#define SHIM_ENQ_copy_2d 1
#define SHIM_ENQ_copy_3d 1
#define SHIM_ENQ_batch 1
#define SHIM_ENQ_memset8 1
#define SHIM_ENQ_memset16 1
#define SHIM_ENQ_memset32 1
#define SHIM_ENQ_host_fn 0
#define SHIM_ENQ_stream_arg0 0
#define SHIM_ENQ_none 0
#define SHIM_ENQ_aux_arg0 0
#define SHIM_ENQ_wait_event 0
#define SHIM_ENQ_alloc 0
#define SHIM_ENQ_alloc_async 0
#define SHIM_ENQ_free_async 0
#define SHIM_ENQ_alloc_host 0
#define SHIM_ENQ_unpin 0
#define SHIM_ENQ_alloc_pitch 0
#define SHIM_ENQ_range 0
#define SHIM_ENQ_pin 0
#define SHIM_ENQ_capture_begin 0
#define SHIM_ENQ_capture_end 0
#define SHIM_ENQ_unload 0
#define SHIM_ENQ_meminfo 0
#define SHIM_ENQ_graph_inst 0
#define SHIM_ENQ_graph_upload 0

static void *shim_drv_resolve_slow(int i) SHIM_COLD;

#define SHIM_FN_TYPE_(n) typedef int (*shim_fn##n)(P##n);
SHIM_FN_TYPE_(0) SHIM_FN_TYPE_(1) SHIM_FN_TYPE_(2) SHIM_FN_TYPE_(3) SHIM_FN_TYPE_(4)
SHIM_FN_TYPE_(5) SHIM_FN_TYPE_(6) SHIM_FN_TYPE_(7) SHIM_FN_TYPE_(8) SHIM_FN_TYPE_(9)
SHIM_FN_TYPE_(10) SHIM_FN_TYPE_(11)

/* Call the real function exactly once with the caller's arguments; record
 * around it; hand back its result and errno unchanged (nothing a wrapper
 * does after the call writes errno: shim.h). */
#define SHIM_WRAP_(name, base, var, n, kind)                                          \
    SHIM_EXPORT int shim_w_##name(P##n) __asm__(#name);                               \
    SHIM_WRAP_BODY_(name, base, var, n, kind)
#define SHIM_WRAP_HIDDEN_(name, base, var, n, kind)                                   \
    static int shim_w_##name(P##n);                                                   \
    SHIM_WRAP_BODY_(name, base, var, n, kind)
#define SHIM_WRAP_BODY_(name, base, var, n, kind)                                     \
    int shim_w_##name(P##n)                                                           \
    {                                                                                 \
        SHIM_ST(uint64_t st0_ = __rdtsc(), st1_, st2_;)                               \
        shim_fn##n real = (shim_fn##n)atomic_load_explicit(                          \
            &shim_drv_real[SHIM_IDX_##name], memory_order_acquire);                   \
        struct cs_rec_cuda r, *f;                                                     \
        int rc;                                                                       \
        if (SHIM_UNLIKELY(real == NULL)) {                                            \
            real = (shim_fn##n)shim_drv_resolve_slow(SHIM_IDX_##name);                \
            if (real == NULL)                                                         \
                return SHIM_CUDA_ERROR_NOT_FOUND;                                     \
        }                                                                             \
        if ((f = shim_fold_take(shim_fam(CS_API_##base))) != NULL) {                  \
            SHIM_CALL_(base, var, n, kind, f); /* its runtime call is recording */    \
            shim_fold_end(f, CS_API_##base, rc);                                      \
            return rc;                                                                \
        }                                                                             \
        if (SHIM_UNLIKELY(!shim_recording())) {                                       \
            SHIM_NOT_RECORDING_();                                                    \
            return real(A##n);                                                        \
        }                                                                             \
        shim_rec_begin(&r, CS_API_##base, CS_VAR_##var);                              \
        SHIM_CALL_(base, var, n, kind, &r);                                           \
        shim_rec_capture(&r);                                                         \
        shim_rec_end(&r, rc);                                                         \
        SHIM_ST(shim_st_add(r.api, st1_ - st0_, __rdtsc() - st2_);)                   \
        return rc;                                                                    \
    }
/* The real call, and what it means, into record @p rp (its own, or the
 * runtime record it folds into). */
#define SHIM_CALL_(base, var, n, kind, rp)                                            \
    do {                                                                              \
        const uint64_t a[] = {L##n 0};                                                \
        drv_pre(rp, CS_API_##base, CS_VAR_##var, a);                                  \
        const int corr_ = SHIM_ENQ_##kind && SHIM_UNLIKELY(atomic_load_explicit(       \
                              &shim_hot_.gpu_corr, memory_order_relaxed)) &&           \
                          shim_t_.rt_depth == 0; /* else the runtime call pushed */    \
        if (corr_)                                                                    \
            shim_gpu_corr_push(rp);                                                   \
        SHIM_ST(st1_ = __rdtsc();)                                                    \
        rc = real(A##n);                                                              \
        SHIM_ST(st2_ = __rdtsc();)                                                    \
        if (corr_)                                                                    \
            shim_gpu_corr_pop();                                                      \
        ex_##kind(rp, a, n, rc, (const void *)real);                                  \
    } while (0)
SHIM_DRV_LIST(SHIM_WRAP_)
SHIM_INIT_LIST(SHIM_WRAP_HIDDEN_)
#undef SHIM_WRAP_
#undef SHIM_WRAP_HIDDEN_
#undef SHIM_WRAP_BODY_
#undef SHIM_CALL_

/* An unrecorded call and what it means: @p pre before the real call, @p post
 * after it (rc holds its result). */
#define SHIM_BARE_WRAP_(name, n, pre, post)                                           \
    SHIM_EXPORT int shim_w_##name(P##n) __asm__(#name);                               \
    int shim_w_##name(P##n)                                                           \
    {                                                                                 \
        shim_fn##n real = (shim_fn##n)atomic_load_explicit(                          \
            &shim_drv_real[SHIM_IDX_##name], memory_order_acquire);                   \
        int rc;                                                                       \
        if (SHIM_UNLIKELY(real == NULL)) {                                            \
            real = (shim_fn##n)shim_drv_resolve_slow(SHIM_IDX_##name);                \
            if (real == NULL)                                                         \
                return SHIM_CUDA_ERROR_NOT_FOUND;                                     \
        }                                                                             \
        pre;                                                                          \
        rc = real(A##n);                                                              \
        post;                                                                         \
        return rc;                                                                    \
    }

/* A context change: forget the thread's device, then the real call. */
#define SHIM_CTX_WRAP_(name, n) SHIM_BARE_WRAP_(name, n, shim_t_.dev = 0, (void)rc)
SHIM_CTX_LIST(SHIM_CTX_WRAP_)
#undef SHIM_CTX_WRAP_

/* The profiler API: a range of --capture cudaProfilerApi opens when
 * cuProfilerStart has succeeded and closes before cuProfilerStop. */
#define SHIM_PROF_WRAP_(name, on)                                                     \
    SHIM_BARE_WRAP_(name, 0, if (!(on)) shim_capture_profiler(0),                     \
                    if ((on) && rc == 0) shim_capture_profiler(1))
SHIM_PROF_LIST(SHIM_PROF_WRAP_)
#undef SHIM_PROF_WRAP_
#undef SHIM_BARE_WRAP_

static const struct {
    const char *name;
    void *wrapper;
} shim_drv_table[SHIM_NDRV] = {
#define SHIM_ROW_(name, base, var, n, kind) [SHIM_IDX_##name] = {#name, (void *)shim_w_##name},
#define SHIM_CTX_ROW_(name, n) SHIM_ROW_(name, , , n, )
    SHIM_DRV_LIST(SHIM_ROW_)
    SHIM_INIT_LIST(SHIM_ROW_)
    SHIM_CTX_LIST(SHIM_CTX_ROW_)
    SHIM_PROF_LIST(SHIM_CTX_ROW_)
#undef SHIM_ROW_
#undef SHIM_CTX_ROW_
};

static void *shim_drv_resolve_slow(int i)
{
    void *p = shim_find_driver_slow(shim_drv_table[i].name);
    uintptr_t expect = 0;

    if (p == NULL) {
        static _Atomic int once;
        shim_log_once(&once, "real driver function not found; returning CUDA_ERROR_NOT_FOUND");
        return NULL;
    }
    if (!atomic_compare_exchange_strong(&shim_drv_real[i], &expect, (uintptr_t)p))
        return (void *)expect;
    return p;
}

/* A tracer-made record (CS_CF_TRACER, seq 0) of the real cuMemGetInfo_v2,
 * after an allocation that returned @p alloc_rc. errno as it was. */
static void shim_mem_read_slow(int alloc_rc)
{
    typedef int (*meminfo_fn)(uint64_t *free_bytes, uint64_t *total_bytes);
    meminfo_fn real = (meminfo_fn)atomic_load_explicit(
        &shim_drv_real[SHIM_IDX_cuMemGetInfo_v2], memory_order_acquire);
    uint64_t fr = 0, tot = 0;
    struct cs_rec_cuda r;
    int e = errno;

    if (alloc_rc == 0)
        atomic_store_explicit(&mem_read_pid, shim_pid_, memory_order_relaxed);
    if (real == NULL && (real = (meminfo_fn)shim_drv_resolve_slow(
                             SHIM_IDX_cuMemGetInfo_v2)) == NULL) {
        errno = e;
        return;
    }
    shim_rec_zero(&r);
    r.api = CS_API_cuMemGetInfo_v2;
    r.flags = CS_CF_TRACER | shim_static_rt_;
    r.t_enter_ns = shim_ring_now();
    r.result = real(&fr, &tot);
    r.t_exit_ns = shim_ring_now();
    r.bytes = r.result == 0 ? fr : 0;
    r.aux = r.result == 0 ? tot : 0;
    r.grid[0] = (uint32_t)alloc_rc; /* why: 0 the first allocation, 2 one out of memory */
    r.device = alloc_rc == 0                     ? shim_device()
               : (shim_t_.dev & SHIM_DEV_READ) ? (uint16_t)shim_t_.dev
                                               : CS_DEVICE_UNKNOWN;
    r.pid = SHIM_LIKELY(shim_pid_ != 0) ? shim_pid_ : shim_pid_slow();
    r.tid = shim_ring_tid();
    shim_ring_push_cuda(&r);
    errno = e;
}

int shim_driver_index(const char *name)
{
    for (int i = 0; i < SHIM_NDRV; i++)
        if (strcmp(shim_drv_table[i].name, name) == 0)
            return i;
    return -1;
}

void *shim_driver_bind(int i, void *real)
{
    uintptr_t expect = 0;

    if (atomic_compare_exchange_strong(&shim_drv_real[i], &expect, (uintptr_t)real) ||
        expect == (uintptr_t)real)
        return shim_drv_table[i].wrapper;
    return NULL;
}

/* ---- the calling thread's device ---- */

typedef int (*shim_ctx_get_device_fn)(int *dev);
static _Atomic(uintptr_t) ctx_get_device; /* real cuCtxGetDevice, 1 = none */

uint32_t shim_device_slow(void)
{
    uintptr_t f = atomic_load_explicit(&ctx_get_device, memory_order_acquire);
    int dev = -1, err = errno;

    if (f == 0) {
        void *p = shim_find_driver_slow("cuCtxGetDevice");
        f = p ? (uintptr_t)p : 1;
        atomic_store_explicit(&ctx_get_device, f, memory_order_release);
    }
    if (f != 1 && ((shim_ctx_get_device_fn)f)(&dev) == 0 && dev >= 0 && dev < 0xffff)
        shim_t_.dev = SHIM_DEV_READ | (uint32_t)dev;
    else
        shim_t_.dev = SHIM_DEV_READ | CS_DEVICE_UNKNOWN;
    errno = err;
    return shim_t_.dev;
}
