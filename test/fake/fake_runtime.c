/* fake_runtime.c: a fake CUDA runtime, built as libcudart.so.13 and as
 * libcudart_static_fake.a (-DFAKERT_STATIC). It reaches the driver the way
 * the real runtime does: dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"),
 * ask that for "cuGetProcAddress" itself, then resolve every driver function
 * by BASE name, CUDA version and flags (per-thread flag for the _ptsz/_ptds
 * entry points). Kernels are registered with fakert_register_kernel() instead
 * of fatbins. The real libcudart does not link libcuda.so.1 (readelf -d) and
 * loads it this way; cuda.h documents cuGetProcAddress's base names. */
#define __CUDA_API_VERSION_INTERNAL 1 /* declare legacy and _ptsz/_ptds entry points */
#include <cuda_runtime_api.h>
#include <cuda_profiler_api.h>
#include <cudaProfilerTypedefs.h>
#include <cudaTypedefs.h>

#include "fake_dlopen.h"
#include "fakecuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define RT_API __attribute__((visibility("default")))

#ifdef FAKERT_STATIC
#define RT_LAYER "static_runtime"
#else
#define RT_LAYER "runtime"
#endif

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *fn);
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                         size_t shmem, cudaStream_t stream);
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                              void **args, size_t shmem, cudaStream_t stream);

/* ---- driver table: X(field, base, version, per-thread version or 0) ---- */

#define DRV_LIST(X)                                              \
    X(init, cuInit, 2000, 0)                                     \
    X(device_get, cuDeviceGet, 2000, 0)                          \
    X(device_count, cuDeviceGetCount, 2000, 0)                   \
    X(ctx_retain, cuDevicePrimaryCtxRetain, 7000, 0)             \
    X(ctx_set, cuCtxSetCurrent, 4000, 0)                         \
    X(ctx_sync, cuCtxSynchronize, 13000, 0)                      \
    X(mem_alloc, cuMemAlloc, 3020, 0)                            \
    X(mem_free, cuMemFree, 3020, 0)                              \
    X(mem_get_info, cuMemGetInfo, 3020, 0)                       \
    X(host_alloc, cuMemHostAlloc, 2020, 0)                       \
    X(free_host, cuMemFreeHost, 2000, 0)                         \
    X(host_register, cuMemHostRegister, 6050, 0)                 \
    X(host_unregister, cuMemHostUnregister, 4000, 0)             \
    X(alloc_async, cuMemAllocAsync, 11020, 11020)                \
    X(free_async, cuMemFreeAsync, 11020, 11020)                  \
    X(htod, cuMemcpyHtoD, 3020, 7000)                            \
    X(dtoh, cuMemcpyDtoH, 3020, 7000)                            \
    X(dtod, cuMemcpyDtoD, 3020, 7000)                            \
    X(copy, cuMemcpy, 4000, 7000)                                \
    X(htod_async, cuMemcpyHtoDAsync, 3020, 7000)                 \
    X(dtoh_async, cuMemcpyDtoHAsync, 3020, 7000)                 \
    X(dtod_async, cuMemcpyDtoDAsync, 3020, 7000)                 \
    X(copy_async, cuMemcpyAsync, 4000, 7000)                     \
    X(copy_2d_async, cuMemcpy2DAsync, 3020, 7000)                \
    X(memset_d8, cuMemsetD8, 3020, 7000)                         \
    X(launch, cuLaunchKernel, 4000, 7000)                        \
    X(launch_ex, cuLaunchKernelEx, 11060, 11060)                 \
    X(stream_create, cuStreamCreate, 2000, 0)                    \
    X(stream_destroy, cuStreamDestroy, 4000, 0)                  \
    X(stream_sync, cuStreamSynchronize, 2000, 7000)              \
    X(event_create, cuEventCreate, 2000, 0)                      \
    X(event_record, cuEventRecord, 2000, 7000)                   \
    X(event_sync, cuEventSynchronize, 2000, 0)                   \
    X(event_destroy, cuEventDestroy, 4000, 0)                    \
    X(begin_capture, cuStreamBeginCapture, 10010, 10010)         \
    X(end_capture, cuStreamEndCapture, 10000, 10000)             \
    X(graph_instantiate, cuGraphInstantiateWithFlags, 11040, 0)  \
    X(graph_exec_update, cuGraphExecUpdate, 12000, 0)            \
    X(graph_upload, cuGraphUpload, 11010, 11010)                 \
    X(graph_launch, cuGraphLaunch, 10000, 10000)                 \
    X(graph_destroy, cuGraphDestroy, 10000, 0)                   \
    X(graph_exec_destroy, cuGraphExecDestroy, 10000, 0)          \
    X(library_load, cuLibraryLoadData, 12000, 0)                 \
    X(library_get_kernel, cuLibraryGetKernel, 12000, 0)          \
    X(kernel_get_name, cuKernelGetName, 12030, 0)                \
    X(profiler_start, cuProfilerStart, 4000, 0)                  \
    X(profiler_stop, cuProfilerStop, 4000, 0)

/* [0] legacy export, [1] per-thread twin (same signature). */
static struct {
    PFN_cuGetProcAddress_v12000 gpa;
    PFN_cuGetProcAddress_v11030 gpa_legacy;
    PFN_cuDriverGetVersion_v2020 driver_version;
#define DRV_FIELD(field, base, ver, ptver) PFN_##base##_v##ver field[2];
    DRV_LIST(DRV_FIELD)
#undef DRV_FIELD
} drv;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static cudaError_t init_rc;
static CUcontext primary_ctx;
static _Thread_local int is_thread_ctx_set;
static _Thread_local CUcontext thread_ctx; /* cudaSetDevice's, else primary_ctx */
static _Thread_local int thread_dev;
static _Thread_local cudaError_t last_error;

static int resolve_one(const char *base, int ver, cuuint64_t flags, void *out)
{
    CUdriverProcAddressQueryResult st;
    return drv.gpa(base, (void **)out, ver, flags, &st) == CUDA_SUCCESS ? 0 : -1;
}

static int resolve_table(void)
{
    int bad = 0;
#define DRV_RESOLVE(field, base, ver, ptver)                                                  \
    bad |= resolve_one(#base, ver, 0, &drv.field[0]);                                         \
    if (ptver)                                                                                \
        bad |= resolve_one(#base, ptver, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,       \
                           &drv.field[1]);                                                    \
    else                                                                                      \
        drv.field[1] = drv.field[0];
    DRV_LIST(DRV_RESOLVE)
#undef DRV_RESOLVE
    return bad ? -1 : 0;
}

/* The gateway: dlsym gives cuGetProcAddress_v2 (or the 4-argument one), which
 * is then asked for "cuGetProcAddress" itself at 12000 and 11030. */
static int find_gateway(void *lib)
{
    void *gpa2 = dlsym(lib, "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult st;
    if (gpa2 == NULL)
        return -1;
    drv.gpa = (PFN_cuGetProcAddress_v12000)gpa2;
    void *again = NULL, *legacy = NULL;
    if (drv.gpa("cuGetProcAddress", &again, 12000, 0, &st) != CUDA_SUCCESS ||
        drv.gpa("cuGetProcAddress", &legacy, 11030, 0, &st) != CUDA_SUCCESS)
        return -1;
    drv.gpa = (PFN_cuGetProcAddress_v12000)again;
    drv.gpa_legacy = (PFN_cuGetProcAddress_v11030)legacy;
    return drv.gpa_legacy("cuDriverGetVersion", (void **)&drv.driver_version, 2020, 0) ==
                   CUDA_SUCCESS
               ? 0
               : -1;
}

static void init_run(void)
{
    int saved = errno, version = 0;
    CUdevice dev;
    void *lib = fake_dlopen_cuda((const void *)init_run, RTLD_NOW);
    init_rc = cudaErrorInsufficientDriver;
    if (lib == NULL || find_gateway(lib) != 0 || resolve_table() != 0)
        goto out;
    if (drv.driver_version(&version) != CUDA_SUCCESS || version < 13000)
        goto out;
    init_rc = cudaErrorInitializationError;
    if (drv.init[0](0) != CUDA_SUCCESS || drv.device_get[0](&dev, 0) != CUDA_SUCCESS ||
        drv.ctx_retain[0](&primary_ctx, dev) != CUDA_SUCCESS)
        goto out;
    init_rc = cudaSuccess;
out:
    errno = saved;
}

static cudaError_t rt_err(cudaError_t rc)
{
    if (rc != cudaSuccess)
        last_error = rc;
    return rc;
}

/* CUresult and cudaError_t agree on every code the fake driver returns. */
static cudaError_t rt_drv(CUresult rc)
{
    return rt_err((cudaError_t)rc);
}

/* Per-entry-point call counters for the expectation file. */
#define RT_LIST(X)                                                                            \
    X(cudaMalloc) X(cudaFree) X(cudaMallocHost) X(cudaHostAlloc) X(cudaFreeHost)             \
    X(cudaHostRegister) X(cudaHostUnregister) X(cudaMallocAsync) X(cudaMallocAsync_ptsz)      \
    X(cudaFreeAsync) X(cudaFreeAsync_ptsz) X(cudaMemcpy) X(cudaMemcpy_ptds)                   \
    X(cudaMemcpyAsync) X(cudaMemcpyAsync_ptsz) X(cudaMemcpy2DAsync) X(cudaMemcpy2DAsync_ptsz) \
    X(cudaMemset) X(cudaMemset_ptds) X(cudaLaunchKernel) X(cudaLaunchKernel_ptsz)             \
    X(__cudaGetKernel) X(__cudaLaunchKernel) X(__cudaLaunchKernel_ptsz)                       \
    X(cudaLaunchKernelExC) X(cudaLaunchKernelExC_ptsz) X(cudaStreamSynchronize)               \
    X(cudaStreamSynchronize_ptsz) X(cudaDeviceSynchronize) X(cudaEventCreate)                 \
    X(cudaEventRecord) X(cudaEventRecord_ptsz) X(cudaEventSynchronize) X(cudaEventDestroy)    \
    X(cudaStreamCreate) X(cudaStreamDestroy) X(cudaStreamBeginCapture)                        \
    X(cudaStreamBeginCapture_ptsz) X(cudaStreamEndCapture) X(cudaStreamEndCapture_ptsz)       \
    X(cudaGraphInstantiate) X(cudaGraphLaunch) X(cudaGraphLaunch_ptsz) X(cudaGraphDestroy)    \
    X(cudaGraphExecDestroy) X(cudaGraphInstantiateWithFlags) X(cudaGraphExecUpdate)          \
    X(cudaGraphUpload) X(cudaGraphUpload_ptsz) X(cudaGetLastError) X(cudaGetErrorString)      \
    X(cudaFuncGetName)                                                                        \
    X(cudaGetDriverEntryPointByVersion) X(cudaGetDriverEntryPointByVersion_ptsz)              \
    X(cudaSetDevice) X(cudaGetDevice) X(cudaGetDeviceCount) X(cudaDriverGetVersion)           \
    X(cudaMemGetInfo) X(cudaProfilerStart) X(cudaProfilerStop)

enum rt_id {
#define RT_ENUM(name) RT_ID_##name,
    RT_LIST(RT_ENUM)
#undef RT_ENUM
    RT_N
};
static const char *const rt_names[RT_N] = {
#define RT_NAME(name) #name,
    RT_LIST(RT_NAME)
#undef RT_NAME
};
static _Atomic uint64_t rt_calls[RT_N];

/* Count the call, initialise once, make the primary context current in
 * this thread. Returns cudaSuccess or the initialisation error. */
static cudaError_t rt_enter(enum rt_id id)
{
    atomic_fetch_add_explicit(&rt_calls[id], 1, memory_order_relaxed);
    pthread_once(&init_once, init_run);
    if (init_rc != cudaSuccess)
        return rt_err(init_rc);
    if (!is_thread_ctx_set) {
        if (drv.ctx_set[0](primary_ctx) != CUDA_SUCCESS)
            return rt_err(cudaErrorInitializationError);
        is_thread_ctx_set = 1;
    }
    return cudaSuccess;
}

#define RT_ENTER(name)                                     \
    do {                                                   \
        cudaError_t enter_rc_ = rt_enter(RT_ID_##name);    \
        if (enter_rc_ != cudaSuccess)                      \
            return enter_rc_;                              \
    } while (0)

RT_API int fakert_expect_write(FILE *f)
{
    char api[128];
    for (int i = 0; i < RT_N; i++) {
        uint64_t n = atomic_load(&rt_calls[i]);
        size_t len = strlen(rt_names[i]);
        const char *variant = "legacy";
        if (n == 0)
            continue;
        if (len > 5 && (strcmp(rt_names[i] + len - 5, "_ptsz") == 0 ||
                        strcmp(rt_names[i] + len - 5, "_ptds") == 0)) {
            variant = rt_names[i] + len - 4;
            len -= 5;
        }
        snprintf(api, sizeof api, "%.*s", (int)len, rt_names[i]);
        fprintf(f, "call %s %s %s %llu\n", RT_LAYER, api, variant, (unsigned long long)n);
    }
    return ferror(f) ? -EIO : 0;
}

/* ---- kernel registry: host stub -> CUkernel; appended, never removed
 * (the libraries stay loaded for the life of the process) ---- */

#define KERNELS_MAX 256
static struct {
    const void *host_fn;
    CUkernel kernel;
    CUlibrary lib;
} kernels[KERNELS_MAX];
static _Atomic int n_kernels;
static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;

static CUkernel kernel_of(const void *host_fn)
{
    int n = atomic_load_explicit(&n_kernels, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (kernels[i].host_fn == host_fn)
            return kernels[i].kernel;
    return NULL;
}

RT_API int fakert_register_kernel(const void *host_fn, const char *name)
{
    CUlibrary lib;
    CUkernel k;
    pthread_once(&init_once, init_run);
    if (init_rc != cudaSuccess)
        return init_rc;
    if (drv.library_load[0](&lib, name, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS ||
        drv.library_get_kernel[0](&k, lib, name) != CUDA_SUCCESS)
        return cudaErrorInvalidKernelImage;
    pthread_mutex_lock(&kernels_lock);
    int n = atomic_load(&n_kernels), rc = cudaErrorMemoryAllocation;
    if (n < KERNELS_MAX) {
        kernels[n].host_fn = host_fn;
        kernels[n].kernel = k;
        kernels[n].lib = lib;
        atomic_store_explicit(&n_kernels, n + 1, memory_order_release);
        rc = cudaSuccess;
    }
    pthread_mutex_unlock(&kernels_lock);
    return rc;
}

/* ---- memory ---- */

RT_API cudaError_t CUDARTAPI cudaMalloc(void **p, size_t n)
{
    RT_ENTER(cudaMalloc);
    if (p == NULL)
        return rt_err(cudaErrorInvalidValue);
    return rt_drv(drv.mem_alloc[0]((CUdeviceptr *)p, n));
}

RT_API cudaError_t CUDARTAPI cudaFree(void *p)
{
    RT_ENTER(cudaFree);
    return rt_drv(drv.mem_free[0]((CUdeviceptr)p));
}

RT_API cudaError_t CUDARTAPI cudaMallocHost(void **p, size_t n)
{
    RT_ENTER(cudaMallocHost);
    return rt_drv(drv.host_alloc[0](p, n, 0));
}

RT_API cudaError_t CUDARTAPI cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    RT_ENTER(cudaHostAlloc);
    return rt_drv(drv.host_alloc[0](p, n, flags));
}

RT_API cudaError_t CUDARTAPI cudaFreeHost(void *p)
{
    RT_ENTER(cudaFreeHost);
    return rt_drv(drv.free_host[0](p));
}

RT_API cudaError_t CUDARTAPI cudaHostRegister(void *p, size_t n, unsigned int flags)
{
    RT_ENTER(cudaHostRegister);
    return rt_drv(drv.host_register[0](p, n, flags));
}

RT_API cudaError_t CUDARTAPI cudaHostUnregister(void *p)
{
    RT_ENTER(cudaHostUnregister);
    return rt_drv(drv.host_unregister[0](p));
}

RT_API cudaError_t CUDARTAPI cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
    RT_ENTER(cudaMallocAsync);
    return rt_drv(drv.alloc_async[0]((CUdeviceptr *)p, n, s));
}

RT_API cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s)
{
    RT_ENTER(cudaMallocAsync_ptsz);
    return rt_drv(drv.alloc_async[1]((CUdeviceptr *)p, n, s));
}

RT_API cudaError_t CUDARTAPI cudaFreeAsync(void *p, cudaStream_t s)
{
    RT_ENTER(cudaFreeAsync);
    return rt_drv(drv.free_async[0]((CUdeviceptr)p, s));
}

RT_API cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *p, cudaStream_t s)
{
    RT_ENTER(cudaFreeAsync_ptsz);
    return rt_drv(drv.free_async[1]((CUdeviceptr)p, s));
}

RT_API cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    RT_ENTER(cudaMemGetInfo);
    return rt_drv(drv.mem_get_info[0](free_bytes, total_bytes));
}

/* cudaProfilerStart/Stop: the driver's, as the real runtime's (torch.cuda.profiler). */
RT_API cudaError_t CUDARTAPI cudaProfilerStart(void)
{
    RT_ENTER(cudaProfilerStart);
    return rt_drv(drv.profiler_start[0]());
}

RT_API cudaError_t CUDARTAPI cudaProfilerStop(void)
{
    RT_ENTER(cudaProfilerStop);
    return rt_drv(drv.profiler_stop[0]());
}

/* ---- copies and memsets ---- */

static cudaError_t memcpy_sync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                               int pt)
{
    CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
    switch (kind) {
    case cudaMemcpyHostToDevice: return rt_drv(drv.htod[pt](d, src, n));
    case cudaMemcpyDeviceToHost: return rt_drv(drv.dtoh[pt](dst, s, n));
    case cudaMemcpyDeviceToDevice: return rt_drv(drv.dtod[pt](d, s, n));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault: return rt_drv(drv.copy[pt](d, s, n));
    default: return rt_err(cudaErrorInvalidMemcpyDirection);
    }
}

static cudaError_t memcpy_async(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                cudaStream_t st, int pt)
{
    CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
    switch (kind) {
    case cudaMemcpyHostToDevice: return rt_drv(drv.htod_async[pt](d, src, n, st));
    case cudaMemcpyDeviceToHost: return rt_drv(drv.dtoh_async[pt](dst, s, n, st));
    case cudaMemcpyDeviceToDevice: return rt_drv(drv.dtod_async[pt](d, s, n, st));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault: return rt_drv(drv.copy_async[pt](d, s, n, st));
    default: return rt_err(cudaErrorInvalidMemcpyDirection);
    }
}

RT_API cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t n,
                                        enum cudaMemcpyKind kind)
{
    RT_ENTER(cudaMemcpy);
    return memcpy_sync(dst, src, n, kind, 0);
}

RT_API cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst, const void *src, size_t n,
                                             enum cudaMemcpyKind kind)
{
    RT_ENTER(cudaMemcpy_ptds);
    return memcpy_sync(dst, src, n, kind, 1);
}

RT_API cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src, size_t n,
                                             enum cudaMemcpyKind kind, cudaStream_t s)
{
    RT_ENTER(cudaMemcpyAsync);
    return memcpy_async(dst, src, n, kind, s, 0);
}

RT_API cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n,
                                                  enum cudaMemcpyKind kind, cudaStream_t s)
{
    RT_ENTER(cudaMemcpyAsync_ptsz);
    return memcpy_async(dst, src, n, kind, s, 1);
}

static cudaError_t memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                   cudaStream_t s, int pt)
{
    int src_host = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
    int dst_host = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
    CUDA_MEMCPY2D c = {.srcPitch = spitch, .dstPitch = dpitch, .WidthInBytes = width,
                       .Height = height};
    if (kind > cudaMemcpyDefault)
        return rt_err(cudaErrorInvalidMemcpyDirection);
    c.srcMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
                      : src_host               ? CU_MEMORYTYPE_HOST
                                               : CU_MEMORYTYPE_DEVICE;
    c.dstMemoryType = kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
                      : dst_host               ? CU_MEMORYTYPE_HOST
                                               : CU_MEMORYTYPE_DEVICE;
    c.srcHost = src;
    c.srcDevice = (CUdeviceptr)src;
    c.dstHost = dst;
    c.dstDevice = (CUdeviceptr)dst;
    return rt_drv(drv.copy_2d_async[pt](&c, s));
}

RT_API cudaError_t CUDARTAPI cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                               size_t spitch, size_t width, size_t height,
                                               enum cudaMemcpyKind kind, cudaStream_t s)
{
    RT_ENTER(cudaMemcpy2DAsync);
    return memcpy_2d_async(dst, dpitch, src, spitch, width, height, kind, s, 0);
}

RT_API cudaError_t CUDARTAPI cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                                    size_t spitch, size_t width, size_t height,
                                                    enum cudaMemcpyKind kind, cudaStream_t s)
{
    RT_ENTER(cudaMemcpy2DAsync_ptsz);
    return memcpy_2d_async(dst, dpitch, src, spitch, width, height, kind, s, 1);
}

RT_API cudaError_t CUDARTAPI cudaMemset(void *p, int value, size_t n)
{
    RT_ENTER(cudaMemset);
    return rt_drv(drv.memset_d8[0]((CUdeviceptr)p, (unsigned char)value, n));
}

RT_API cudaError_t CUDARTAPI cudaMemset_ptds(void *p, int value, size_t n)
{
    RT_ENTER(cudaMemset_ptds);
    return rt_drv(drv.memset_d8[1]((CUdeviceptr)p, (unsigned char)value, n));
}

/* ---- launches: the CUkernel goes to cuLaunchKernel cast to CUfunction ---- */

static cudaError_t launch(CUkernel k, dim3 g, dim3 b, void **args, size_t shmem,
                          cudaStream_t s, int pt)
{
    if (k == NULL)
        return rt_err(cudaErrorInvalidDeviceFunction);
    return rt_drv(drv.launch[pt]((CUfunction)k, g.x, g.y, g.z, b.x, b.y, b.z,
                                 (unsigned int)shmem, s, args, NULL));
}

RT_API cudaError_t CUDARTAPI cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args,
                                              size_t shmem, cudaStream_t s)
{
    RT_ENTER(cudaLaunchKernel);
    return launch(kernel_of(fn), g, b, args, shmem, s, 0);
}

RT_API cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void *fn, dim3 g, dim3 b, void **args,
                                                   size_t shmem, cudaStream_t s)
{
    RT_ENTER(cudaLaunchKernel_ptsz);
    return launch(kernel_of(fn), g, b, args, shmem, s, 1);
}

RT_API cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *k, const void *fn)
{
    RT_ENTER(__cudaGetKernel);
    if (k == NULL || (*k = kernel_of(fn)) == NULL)
        return rt_err(cudaErrorInvalidDeviceFunction);
    return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args,
                                                size_t shmem, cudaStream_t s)
{
    RT_ENTER(__cudaLaunchKernel);
    return launch(k, g, b, args, shmem, s, 0);
}

RT_API cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **args,
                                                     size_t shmem, cudaStream_t s)
{
    RT_ENTER(__cudaLaunchKernel_ptsz);
    return launch(k, g, b, args, shmem, s, 1);
}

static cudaError_t launch_ex(const cudaLaunchConfig_t *c, const void *fn, void **args, int pt)
{
    CUkernel k = kernel_of(fn);
    if (c == NULL || k == NULL)
        return rt_err(c == NULL ? cudaErrorInvalidValue : cudaErrorInvalidDeviceFunction);
    CUlaunchConfig dc = {.gridDimX = c->gridDim.x, .gridDimY = c->gridDim.y,
                         .gridDimZ = c->gridDim.z, .blockDimX = c->blockDim.x,
                         .blockDimY = c->blockDim.y, .blockDimZ = c->blockDim.z,
                         .sharedMemBytes = (unsigned int)c->dynamicSmemBytes,
                         .hStream = c->stream};
    return rt_drv(drv.launch_ex[pt](&dc, (CUfunction)k, args, NULL));
}

RT_API cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *fn,
                                                 void **args)
{
    RT_ENTER(cudaLaunchKernelExC);
    return launch_ex(c, fn, args, 0);
}

RT_API cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c,
                                                      const void *fn, void **args)
{
    RT_ENTER(cudaLaunchKernelExC_ptsz);
    return launch_ex(c, fn, args, 1);
}

/* A device entry function is looked up; anything else is taken as a
 * cudaKernel_t, as the real cudaFuncGetName documents. */
RT_API cudaError_t CUDARTAPI cudaFuncGetName(const char **name, const void *fn)
{
    RT_ENTER(cudaFuncGetName);
    CUkernel k = kernel_of(fn);
    if (name == NULL || fn == NULL)
        return rt_err(cudaErrorInvalidValue);
    return rt_drv(drv.kernel_get_name[0](name, k ? k : (CUkernel)fn));
}

/* ---- synchronisation, streams, events ---- */

RT_API cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t s)
{
    RT_ENTER(cudaStreamSynchronize);
    return rt_drv(drv.stream_sync[0](s));
}

RT_API cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t s)
{
    RT_ENTER(cudaStreamSynchronize_ptsz);
    return rt_drv(drv.stream_sync[1](s));
}

RT_API cudaError_t CUDARTAPI cudaDeviceSynchronize(void)
{
    RT_ENTER(cudaDeviceSynchronize);
    return rt_drv(drv.ctx_sync[0](thread_ctx ? thread_ctx : primary_ctx));
}

RT_API cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *s)
{
    RT_ENTER(cudaStreamCreate);
    return rt_drv(drv.stream_create[0](s, 0));
}

RT_API cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s)
{
    RT_ENTER(cudaStreamDestroy);
    return rt_drv(drv.stream_destroy[0](s));
}

RT_API cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *e)
{
    RT_ENTER(cudaEventCreate);
    return rt_drv(drv.event_create[0](e, 0));
}

RT_API cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    RT_ENTER(cudaEventRecord);
    return rt_drv(drv.event_record[0](e, s));
}

RT_API cudaError_t CUDARTAPI cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s)
{
    RT_ENTER(cudaEventRecord_ptsz);
    return rt_drv(drv.event_record[1](e, s));
}

RT_API cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e)
{
    RT_ENTER(cudaEventSynchronize);
    return rt_drv(drv.event_sync[0](e));
}

RT_API cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e)
{
    RT_ENTER(cudaEventDestroy);
    return rt_drv(drv.event_destroy[0](e));
}

/* ---- capture and graphs ---- */

RT_API cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t s,
                                                    enum cudaStreamCaptureMode mode)
{
    RT_ENTER(cudaStreamBeginCapture);
    return rt_drv(drv.begin_capture[0](s, (CUstreamCaptureMode)mode));
}

RT_API cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t s,
                                                         enum cudaStreamCaptureMode mode)
{
    RT_ENTER(cudaStreamBeginCapture_ptsz);
    return rt_drv(drv.begin_capture[1](s, (CUstreamCaptureMode)mode));
}

RT_API cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    RT_ENTER(cudaStreamEndCapture);
    return rt_drv(drv.end_capture[0](s, g));
}

RT_API cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *g)
{
    RT_ENTER(cudaStreamEndCapture_ptsz);
    return rt_drv(drv.end_capture[1](s, g));
}

RT_API cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g,
                                                  unsigned long long flags)
{
    RT_ENTER(cudaGraphInstantiate);
    return rt_drv(drv.graph_instantiate[0](e, g, flags));
}

RT_API cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g,
                                                           unsigned long long flags)
{
    RT_ENTER(cudaGraphInstantiateWithFlags);
    return rt_drv(drv.graph_instantiate[0](e, g, flags));
}

RT_API cudaError_t CUDARTAPI cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g,
                                                 cudaGraphExecUpdateResultInfo *info)
{
    RT_ENTER(cudaGraphExecUpdate);
    return rt_drv(drv.graph_exec_update[0](e, g, (CUgraphExecUpdateResultInfo *)info));
}

RT_API cudaError_t CUDARTAPI cudaGraphUpload(cudaGraphExec_t e, cudaStream_t s)
{
    RT_ENTER(cudaGraphUpload);
    return rt_drv(drv.graph_upload[0](e, s));
}

RT_API cudaError_t CUDARTAPI cudaGraphUpload_ptsz(cudaGraphExec_t e, cudaStream_t s)
{
    RT_ENTER(cudaGraphUpload_ptsz);
    return rt_drv(drv.graph_upload[1](e, s));
}

RT_API cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
    RT_ENTER(cudaGraphLaunch);
    return rt_drv(drv.graph_launch[0](e, s));
}

RT_API cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t e, cudaStream_t s)
{
    RT_ENTER(cudaGraphLaunch_ptsz);
    return rt_drv(drv.graph_launch[1](e, s));
}

RT_API cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t g)
{
    RT_ENTER(cudaGraphDestroy);
    return rt_drv(drv.graph_destroy[0](g));
}

RT_API cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t e)
{
    RT_ENTER(cudaGraphExecDestroy);
    return rt_drv(drv.graph_exec_destroy[0](e));
}

/* ---- errors, devices, entry points ---- */

RT_API cudaError_t CUDARTAPI cudaGetLastError(void)
{
    atomic_fetch_add_explicit(&rt_calls[RT_ID_cudaGetLastError], 1, memory_order_relaxed);
    cudaError_t rc = last_error;
    last_error = cudaSuccess;
    return rc;
}

RT_API const char *CUDARTAPI cudaGetErrorString(cudaError_t rc)
{
    atomic_fetch_add_explicit(&rt_calls[RT_ID_cudaGetErrorString], 1, memory_order_relaxed);
    switch (rc) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    default: return "unrecognized error code";
    }
}

static cudaError_t entry_point(const char *symbol, void **fn, unsigned int version,
                               unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
    CUdriverProcAddressQueryResult dst;
    CUresult rc = drv.gpa(symbol, fn, (int)version, flags, &dst);
    if (st)
        *st = (enum cudaDriverEntryPointQueryResult)dst;
    return rt_drv(rc);
}

RT_API cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
    const char *symbol, void **fn, unsigned int version, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st)
{
    RT_ENTER(cudaGetDriverEntryPointByVersion);
    return entry_point(symbol, fn, version, flags, st);
}

/* As cuda.h's inline _ptsz gateway: no stream flag means per-thread. */
RT_API cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **fn, unsigned int version, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st)
{
    RT_ENTER(cudaGetDriverEntryPointByVersion_ptsz);
    if ((flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)) == 0)
        flags |= cudaEnablePerThreadDefaultStream;
    return entry_point(symbol, fn, version, flags, st);
}

RT_API cudaError_t CUDARTAPI cudaSetDevice(int dev)
{
    CUdevice d;
    CUcontext c;

    RT_ENTER(cudaSetDevice);
    if (drv.device_get[0](&d, dev) != CUDA_SUCCESS || drv.ctx_retain[0](&c, d) != CUDA_SUCCESS)
        return rt_err(cudaErrorInvalidDevice);
    if (drv.ctx_set[0](c) != CUDA_SUCCESS)
        return rt_err(cudaErrorInitializationError);
    thread_ctx = c;
    thread_dev = dev;
    return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI cudaGetDevice(int *dev)
{
    RT_ENTER(cudaGetDevice);
    if (dev == NULL)
        return rt_err(cudaErrorInvalidValue);
    *dev = thread_dev;
    return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
    RT_ENTER(cudaGetDeviceCount);
    if (count == NULL)
        return rt_err(cudaErrorInvalidValue);
    return rt_drv(drv.device_count[0](count));
}

RT_API cudaError_t CUDARTAPI cudaDriverGetVersion(int *version)
{
    RT_ENTER(cudaDriverGetVersion);
    if (version == NULL)
        return rt_err(cudaErrorInvalidValue);
    return rt_drv(drv.driver_version(version));
}
