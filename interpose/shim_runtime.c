/* shim_runtime.c: the runtime-layer wrappers, for what the driver call does
 * not carry (the memcpy kind, host stubs and cudaKernel_t names, the runtime
 * call's own duration). Only programs that bind to a shared libcudart reach
 * them; a static runtime loses nothing but these records, because the driver
 * layer (shim_driver.c) sees its calls. Driver calls made inside a runtime
 * wrapper are marked CS_CF_NESTED with the runtime record's seq, so no
 * statistic counts a call twice, or fold into its record (shim.h). Real functions come from the next object
 * (RTLD_NEXT), else from a loaded libcudart.so*. */
#include <stdatomic.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "shim.h"

#define RT_ARGS(...) __VA_OPT__(, ) __VA_ARGS__ /* extractor arguments after (r, rc, real) */

/* X(exported name, CS_API id name, variant, (parameters), (arguments)) */
#define RT_PTSZ(X, name, params, args) \
    X(name, name, LEGACY, params, args) X(name##_ptsz, name, PTSZ, params, args)
#define RT_PTDS(X, name, params, args) \
    X(name, name, LEGACY, params, args) X(name##_ptds, name, PTDS, params, args)
#define RT_ONE(X, name, params, args) X(name, name, LEGACY, params, args)

#define RT_LAUNCH_P (const void *f, dim3 g, dim3 b, void **a, size_t m, cudaStream_t s)
#define RT_LAUNCH_A (f, g, b, a, m, s)

#define RT_INST_P (cudaGraphExec_t * e, cudaGraph_t g, unsigned long long fl)
#define RT_INST_A (e, g, fl)

#define SHIM_RT_LIST(X)                                                                   \
    RT_PTSZ(X, __cudaLaunchKernel, RT_LAUNCH_P, RT_LAUNCH_A)                              \
    RT_PTSZ(X, cudaLaunchKernel, RT_LAUNCH_P, RT_LAUNCH_A)                                \
    RT_PTSZ(X, cudaLaunchKernelExC, (const cudaLaunchConfig_t *c, const void *f, void **a), \
            (c, f, a))                                                                    \
    RT_PTSZ(X, cudaGraphLaunch, (cudaGraphExec_t g, cudaStream_t s), (g, s))              \
    RT_PTSZ(X, cudaMemcpyAsync,                                                           \
            (void *d, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s),  \
            (d, src, n, k, s))                                                            \
    RT_PTDS(X, cudaMemcpy, (void *d, const void *src, size_t n, enum cudaMemcpyKind k),   \
            (d, src, n, k))                                                               \
    RT_PTSZ(X, cudaMemcpy2DAsync,                                                         \
            (void *d, size_t dp, const void *src, size_t sp, size_t w, size_t h,          \
             enum cudaMemcpyKind k, cudaStream_t s),                                      \
            (d, dp, src, sp, w, h, k, s))                                                 \
    RT_PTSZ(X, cudaStreamSynchronize, (cudaStream_t s), (s))                              \
    RT_ONE(X, cudaDeviceSynchronize, (void), ())                                          \
    RT_ONE(X, cudaEventSynchronize, (cudaEvent_t e), (e))                                 \
    RT_ONE(X, cudaMalloc, (void **p, size_t n), (p, n))                                   \
    RT_ONE(X, cudaFree, (void *p), (p))                                                   \
    RT_ONE(X, cudaMallocHost, (void **p, size_t n), (p, n))                               \
    RT_ONE(X, cudaHostAlloc, (void **p, size_t n, unsigned int fl), (p, n, fl))           \
    RT_ONE(X, cudaFreeHost, (void *p), (p))                                               \
    RT_ONE(X, cudaHostRegister, (void *p, size_t n, unsigned int fl), (p, n, fl))         \
    RT_ONE(X, cudaHostUnregister, (void *p), (p))                                         \
    RT_PTSZ(X, cudaMallocAsync, (void **p, size_t n, cudaStream_t s), (p, n, s))          \
    RT_PTSZ(X, cudaFreeAsync, (void *p, cudaStream_t s), (p, s))                          \
    RT_ONE(X, cudaMemGetInfo, (size_t *fr, size_t *tot), (fr, tot))                       \
    RT_PTSZ(X, cudaStreamBeginCapture, (cudaStream_t s, enum cudaStreamCaptureMode md),   \
            (s, md))                                                                      \
    RT_PTSZ(X, cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t *g), (s, g))            \
    RT_ONE(X, cudaGraphInstantiate, RT_INST_P, RT_INST_A)                                 \
    RT_ONE(X, cudaGraphInstantiateWithFlags, RT_INST_P, RT_INST_A)                        \
    RT_PTSZ(X, cudaGraphInstantiateWithParams,                                            \
            (cudaGraphExec_t * e, cudaGraph_t g, cudaGraphInstantiateParams *p), (e, g, p)) \
    RT_ONE(X, cudaGraphExecUpdate,                                                        \
           (cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo *i), (e, g, i)) \
    RT_PTSZ(X, cudaGraphUpload, (cudaGraphExec_t e, cudaStream_t s), (e, s))

enum shim_rt_index {
#define RT_IDX_(name, base, var, params, args) RT_IDX_##name,
    SHIM_RT_LIST(RT_IDX_)
#undef RT_IDX_
    RT_N
};

static _Atomic(uintptr_t) rt_real[RT_N];

/* ---- extractors: (record, result, real function, the call's arguments) ---- */

#define RX struct cs_rec_cuda *r, cudaError_t rc, const void *real
#define RX_UNUSED (void)rc, (void)real

static inline uint64_t u64(const void *p) { return (uint64_t)(uintptr_t)p; }

static void launch_dims(struct cs_rec_cuda *r, dim3 g, dim3 b, cudaStream_t s)
{
    r->grid[0] = g.x, r->grid[1] = g.y, r->grid[2] = g.z;
    r->block[0] = (uint16_t)b.x, r->block[1] = (uint16_t)b.y, r->block[2] = (uint16_t)b.z;
    shim_rec_stream(r, u64(s));
}

/* The name of the driver launch this call made, when it made one (the same
 * kernel, named by the driver, folded in or kept); else the runtime's own
 * for @p f. */
static void launch_name(struct cs_rec_cuda *r, cudaError_t rc, const void *real, const void *f)
{
    if (rc != cudaSuccess || f == NULL || (r->flags & CS_CF_HAS_NAME))
        return;
    if (shim_t_.held_of == r->seq && (shim_t_.held.flags & CS_CF_HAS_NAME))
        r->name_id = shim_t_.held.name_id;
    else
        r->name_id = shim_name_runtime(u64(f), real);
    if (r->name_id)
        r->flags |= CS_CF_HAS_NAME;
}

static void rtx___cudaLaunchKernel(RX, const void *f, dim3 g, dim3 b, void **a, size_t m,
                                   cudaStream_t s)
{
    (void)a, (void)m;
    if (!(r->flags & CS_CF_FOLDED)) /* else the driver's launch filled them in */
        launch_dims(r, g, b, s);
    launch_name(r, rc, real, f);
}
#define rtx_cudaLaunchKernel rtx___cudaLaunchKernel

static void rtx_cudaLaunchKernelExC(RX, const cudaLaunchConfig_t *c, const void *f, void **a)
{
    (void)a;
    if (c && !(r->flags & CS_CF_FOLDED))
        launch_dims(r, c->gridDim, c->blockDim, c->stream);
    launch_name(r, rc, real, f);
}

static void rtx_cudaGraphLaunch(RX, cudaGraphExec_t g, cudaStream_t s)
{
    RX_UNUSED;
    r->aux = u64(g);
    shim_rec_stream(r, u64(s));
}

static void copy_kind(struct cs_rec_cuda *r, void *d, const void *src, size_t n,
                      enum cudaMemcpyKind k)
{
    static const uint8_t dir[] = {CS_DIR_HTOH, CS_DIR_HTOD, CS_DIR_DTOH, CS_DIR_DTOD,
                                  CS_DIR_DEFAULT};
    r->dir = (unsigned)k < sizeof(dir) ? dir[k] : CS_DIR_NONE;
    r->bytes = n;
    if (r->dir == CS_DIR_HTOD || r->dir == CS_DIR_DTOH) {
        r->aux = u64(r->dir == CS_DIR_HTOD ? src : d);
        r->flags |= shim_pinned_flag(r->aux);
    }
}

static void rtx_cudaMemcpyAsync(RX, void *d, const void *src, size_t n, enum cudaMemcpyKind k,
                                cudaStream_t s)
{
    RX_UNUSED;
    copy_kind(r, d, src, n, k);
    shim_rec_stream(r, u64(s));
}

static void rtx_cudaMemcpy(RX, void *d, const void *src, size_t n, enum cudaMemcpyKind k)
{
    RX_UNUSED;
    copy_kind(r, d, src, n, k);
    shim_rec_stream(r, 0);
}

static void rtx_cudaMemcpy2DAsync(RX, void *d, size_t dp, const void *src, size_t sp,
                                  size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t s)
{
    RX_UNUSED;
    (void)dp, (void)sp;
    copy_kind(r, d, src, w * h, k);
    shim_rec_stream(r, u64(s));
}

static void rtx_cudaStreamSynchronize(RX, cudaStream_t s)
{
    RX_UNUSED;
    shim_rec_stream(r, u64(s));
}

static void rtx_cudaDeviceSynchronize(RX) { (void)r, RX_UNUSED; }

static void rtx_cudaEventSynchronize(RX, cudaEvent_t e)
{
    RX_UNUSED;
    r->aux = u64(e);
}

static void rtx_cudaMalloc(RX, void **p, size_t n)
{
    RX_UNUSED;
    r->bytes = n;
    r->aux = (rc == cudaSuccess && p) ? u64(*p) : 0;
}

static void rtx_cudaFree(RX, void *p)
{
    RX_UNUSED;
    r->aux = u64(p);
}
#define rtx_cudaFreeHost rtx_cudaFree

static void rtx_cudaMallocHost(RX, void **p, size_t n)
{
    rtx_cudaMalloc(r, rc, real, p, n);
    if (r->aux)
        shim_pinned_add(r->aux, n);
}

static void rtx_cudaHostAlloc(RX, void **p, size_t n, unsigned int fl)
{
    (void)fl;
    rtx_cudaMallocHost(r, rc, real, p, n);
}

static void rtx_cudaHostRegister(RX, void *p, size_t n, unsigned int fl)
{
    RX_UNUSED;
    (void)fl;
    r->aux = u64(p);
    r->bytes = n;
    if (rc == cudaSuccess)
        shim_pinned_add(r->aux, n);
}

static void rtx_cudaHostUnregister(RX, void *p)
{
    RX_UNUSED;
    r->aux = u64(p);
    if (rc == cudaSuccess)
        r->bytes = shim_pinned_del(r->aux);
}

static void rtx_cudaMallocAsync(RX, void **p, size_t n, cudaStream_t s)
{
    rtx_cudaMalloc(r, rc, real, p, n);
    shim_rec_stream(r, u64(s));
}

static void rtx_cudaFreeAsync(RX, void *p, cudaStream_t s)
{
    RX_UNUSED;
    r->aux = u64(p);
    shim_rec_stream(r, u64(s));
}

/* free bytes in bytes, total in aux (as cuMemGetInfo_v2, which folds in) */
static void rtx_cudaMemGetInfo(RX, size_t *fr, size_t *tot)
{
    RX_UNUSED;
    r->bytes = rc == cudaSuccess && fr ? *fr : 0;
    r->aux = rc == cudaSuccess && tot ? *tot : 0;
}

/* Capture and graphs: the driver call each makes folds in with what it
 * knows (stream, graph handles); these fill in what a call that made none
 * (an error before it) still says. */
static void rtx_cudaStreamBeginCapture(RX, cudaStream_t s, enum cudaStreamCaptureMode md)
{
    RX_UNUSED;
    (void)md;
    if (!(r->flags & CS_CF_FOLDED))
        shim_rec_stream(r, u64(s));
}

static void rtx_cudaStreamEndCapture(RX, cudaStream_t s, cudaGraph_t *g)
{
    RX_UNUSED;
    if (!(r->flags & CS_CF_FOLDED))
        shim_rec_stream(r, u64(s));
    r->aux = rc == cudaSuccess && g ? u64(*g) : 0;
}

static void graph_made(struct cs_rec_cuda *r, cudaError_t rc, cudaGraphExec_t *e, cudaGraph_t g)
{
    r->aux = rc == cudaSuccess && e ? u64(*e) : 0;
    r->bytes = u64(g);
}

static void rtx_cudaGraphInstantiate(RX, cudaGraphExec_t *e, cudaGraph_t g, unsigned long long fl)
{
    (void)real, (void)fl;
    graph_made(r, rc, e, g);
}
#define rtx_cudaGraphInstantiateWithFlags rtx_cudaGraphInstantiate

static void rtx_cudaGraphInstantiateWithParams(RX, cudaGraphExec_t *e, cudaGraph_t g,
                                               cudaGraphInstantiateParams *p)
{
    (void)real, (void)p;
    graph_made(r, rc, e, g);
}

static void rtx_cudaGraphExecUpdate(RX, cudaGraphExec_t e, cudaGraph_t g,
                                    cudaGraphExecUpdateResultInfo *i)
{
    RX_UNUSED;
    (void)i;
    r->aux = u64(e);
    r->bytes = u64(g);
}

static void rtx_cudaGraphUpload(RX, cudaGraphExec_t e, cudaStream_t s)
{
    RX_UNUSED;
    r->aux = u64(e);
    if (!(r->flags & CS_CF_FOLDED))
        shim_rec_stream(r, u64(s));
}

/* ---- the wrappers ---- */

static void *rt_resolve_slow(int i) SHIM_COLD;

/* Does runtime API @p api put work on a stream (a constant per wrapper)? */
#define SHIM_RT_ENQ(api)                                                               \
    (shim_fam(api) == CS_FAM_LAUNCH || shim_fam(api) == CS_FAM_COPY ||                 \
     shim_fam(api) == CS_FAM_MEMSET)

/* Nesting: driver records made while this call runs point at its seq; the
 * first driver call of its family folds into its record instead, when it
 * is outermost (shim.h). errno: as the driver wrappers (shim.h). */
#define SHIM_RT_WRAP_(name, base, var, params, args)                                   \
    SHIM_EXPORT cudaError_t shim_r_##name params __asm__(#name);                       \
    cudaError_t shim_r_##name params                                                   \
    {                                                                                  \
        SHIM_ST(uint64_t st0_ = __rdtsc(), st1_, st2_;)                                \
        cudaError_t(*real) params = (cudaError_t(*) params)atomic_load_explicit(       \
            &rt_real[RT_IDX_##name], memory_order_acquire);                            \
        struct shim_thread *t = &shim_t_;                                              \
        struct cs_rec_cuda r;                                                          \
        cudaError_t rc;                                                                \
        uint32_t outer;                                                                \
        if (SHIM_UNLIKELY(real == NULL)) {                                             \
            real = (cudaError_t(*) params)rt_resolve_slow(RT_IDX_##name);              \
            if (real == NULL)                                                          \
                return cudaErrorInitializationError;                                   \
        }                                                                              \
        if (SHIM_UNLIKELY(!shim_recording())) {                                        \
            SHIM_NOT_RECORDING_();                                                     \
            return real args;                                                          \
        }                                                                              \
        shim_rec_begin(&r, CS_API_##base, CS_VAR_##var);                               \
        outer = t->rt_seq;                                                             \
        t->rt_depth++;                                                                 \
        t->rt_seq = r.seq;                                                             \
        if (outer == 0)                                                                \
            shim_fold_open(&r, shim_fam(CS_API_##base));                               \
        /* a kernel the runtime launches carries the runtime call's CUPTI  \
         * correlation id, so the id is pushed here, not in the driver */  \
        const int corr_ = outer == 0 && SHIM_RT_ENQ(CS_API_##base) &&                  \
                          SHIM_UNLIKELY(atomic_load_explicit(&shim_hot_.gpu_corr,      \
                                                             memory_order_relaxed));   \
        if (corr_)                                                                     \
            shim_gpu_corr_push(&r);                                                    \
        SHIM_ST(st1_ = __rdtsc();)                                                     \
        rc = real args;                                                                \
        SHIM_ST(st2_ = __rdtsc();)                                                     \
        if (corr_)                                                                     \
            shim_gpu_corr_pop();                                                       \
        t->rt_depth--;                                                                 \
        t->rt_seq = outer;                                                             \
        t->fold = NULL;                                                                \
        rtx_##base(&r, rc, (const void *)real RT_ARGS args);                           \
        shim_rec_capture(&r);                                                          \
        shim_rec_end_rt(&r, (int)rc);                                                  \
        SHIM_ST(shim_st_add(r.api, st1_ - st0_, __rdtsc() - st2_);)                    \
        return rc;                                                                     \
    }
SHIM_RT_LIST(SHIM_RT_WRAP_)
#undef SHIM_RT_WRAP_

static const char *const rt_names[RT_N] = {
#define RT_NAME_(name, base, var, params, args) [RT_IDX_##name] = #name,
    SHIM_RT_LIST(RT_NAME_)
#undef RT_NAME_
};

static void *rt_resolve_slow(int i)
{
    void *p = shim_find_runtime_slow(rt_names[i]);
    uintptr_t expect = 0;

    if (p == NULL) {
        static _Atomic int once;
        shim_log_once(&once,
                      "real runtime function not found; returning cudaErrorInitializationError");
        return NULL;
    }
    if (!atomic_compare_exchange_strong(&rt_real[i], &expect, (uintptr_t)p))
        return (void *)expect;
    return p;
}
