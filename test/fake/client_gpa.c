/* client_gpa.c: a cuBLAS-style driver client: dlsym its own
 * "cuGetProcAddress_v2" and resolve a table of driver functions through it
 * by base name and version, then call them. Launches pass a CUfunction from
 * cuKernelGetFunction (cuBLAS) and a CUkernel cast to CUfunction (cuBLASLt).
 * Usage: client_gpa [iterations=4] [kib=64] [pt]
 * "pt" resolves with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM and so
 * calls the _ptsz/_ptds exports. Prints "checksum <hex>". */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_client.h"
#include "fake_dlopen.h"
#include "fakecuda.h"

#include <dlfcn.h>
#include <string.h>

#define NAME "client_gpa"
#define CHECK_CU(call) CLIENT_CHECK(NAME, call)

/* X(field, base, version) */
#define GPA_LIST(X)                                        \
    X(init, cuInit, 2000)                                  \
    X(device_get, cuDeviceGet, 2000)                       \
    X(ctx_retain, cuDevicePrimaryCtxRetain, 7000)          \
    X(ctx_set, cuCtxSetCurrent, 4000)                      \
    X(ctx_sync, cuCtxSynchronize, 13000)                   \
    X(library_load, cuLibraryLoadData, 12000)              \
    X(library_get_kernel, cuLibraryGetKernel, 12000)       \
    X(library_unload, cuLibraryUnload, 12000)              \
    X(kernel_get_function, cuKernelGetFunction, 12000)     \
    X(mem_alloc, cuMemAlloc, 3020)                         \
    X(mem_free, cuMemFree, 3020)                           \
    X(host_alloc, cuMemHostAlloc, 2020)                    \
    X(free_host, cuMemFreeHost, 2000)                      \
    X(alloc_async, cuMemAllocAsync, 11020)                 \
    X(free_async, cuMemFreeAsync, 11020)                   \
    X(htod_async, cuMemcpyHtoDAsync, 3020)                 \
    X(dtoh_async, cuMemcpyDtoHAsync, 3020)                 \
    X(copy_async, cuMemcpyAsync, 4000)                     \
    X(batch_async, cuMemcpyBatchAsync, 13000)              \
    X(memset_async, cuMemsetD8Async, 3020)                 \
    X(copy, cuMemcpy, 4000)                                \
    X(launch, cuLaunchKernel, 4000)                        \
    X(launch_ex, cuLaunchKernelEx, 11060)                  \
    X(stream_create, cuStreamCreate, 2000)                 \
    X(stream_sync, cuStreamSynchronize, 2000)              \
    X(stream_wait_event, cuStreamWaitEvent, 3020)          \
    X(stream_destroy, cuStreamDestroy, 4000)               \
    X(event_create, cuEventCreate, 2000)                   \
    X(event_record, cuEventRecord, 2000)                   \
    X(event_query, cuEventQuery, 2000)                     \
    X(event_destroy, cuEventDestroy, 4000)

static struct {
#define GPA_FIELD(field, base, ver) PFN_##base##_v##ver field;
    GPA_LIST(GPA_FIELD)
#undef GPA_FIELD
} cu;

static void resolve(cuuint64_t flags)
{
    void *lib = fake_dlopen_cuda((const void *)resolve, RTLD_NOW | RTLD_LOCAL);
    PFN_cuGetProcAddress_v12000 gpa =
        lib ? (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    CUdriverProcAddressQueryResult st;
    if (gpa == NULL) {
        fprintf(stderr, "%s: libcuda.so.1: no cuGetProcAddress_v2\n", NAME);
        exit(3);
    }
#define GPA_RESOLVE(field, base, ver) \
    CHECK_CU(gpa(#base, (void **)&cu.field, ver, flags, &st));
    GPA_LIST(GPA_RESOLVE)
#undef GPA_RESOLVE
}

struct work {
    CUstream s;
    CUevent e;
    CUfunction gemm;   /* from cuKernelGetFunction */
    CUkernel gemm_lt;  /* passed as CUfunction */
    CUdeviceptr d_a, d_b;
    char *h_pin;
    size_t n;
};

/* One iteration; returns the checksum of the bytes downloaded. */
static uint64_t step(struct work *w, long i, uint64_t h)
{
    void *args[] = {&w->d_a, &w->d_b};
    CUdeviceptr dsts[2] = {w->d_b, w->d_b + w->n / 2}, srcs[2] = {w->d_a, w->d_a + w->n / 2};
    size_t sizes[2] = {w->n / 2, w->n / 2};
    CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    size_t attr_idx = 0;
    CUlaunchConfig cfg = {.gridDimX = 32, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256,
                          .blockDimY = 1, .blockDimZ = 1, .hStream = w->s};
    memset(w->h_pin, (int)i + 9, w->n);
    CHECK_CU(cu.htod_async(w->d_a, w->h_pin, w->n, w->s));
    CHECK_CU(cu.memset_async(w->d_a, (unsigned char)i, w->n / 8, w->s));
    CHECK_CU(cu.launch(w->gemm, 16, 16, 1, 128, 1, 1, 0, w->s, args, NULL));
    CHECK_CU(cu.launch_ex(&cfg, (CUfunction)w->gemm_lt, args, NULL));
    CHECK_CU(cu.batch_async(dsts, srcs, sizes, 2, &attr, &attr_idx, 1, w->s));
    CHECK_CU(cu.event_record(w->e, w->s));
    CHECK_CU(cu.stream_wait_event(w->s, w->e, 0));
    CHECK_CU(cu.dtoh_async(w->h_pin, w->d_b, w->n, w->s));
    CHECK_CU(cu.stream_sync(w->s));
    while (cu.event_query(w->e) == CUDA_ERROR_NOT_READY)
        ;
    return client_fnv(h, w->h_pin, w->n);
}

/* Stream-ordered scratch buffer and unified copies, then a context sync. */
static uint64_t scratch(struct work *w, uint64_t h)
{
    CUdeviceptr d_tmp;
    char *page = malloc(w->n);
    CHECK_CU(cu.alloc_async(&d_tmp, w->n, w->s));
    CHECK_CU(cu.copy_async(d_tmp, w->d_b, w->n, w->s));
    CHECK_CU(cu.free_async(d_tmp, w->s));
    CHECK_CU(cu.copy((CUdeviceptr)page, w->d_b, w->n));
    CHECK_CU(cu.ctx_sync(NULL));
    h = client_fnv(h, page, w->n);
    free(page);
    return h;
}

int main(int argc, char **argv)
{
    long iters = client_arg(argc, argv, 1, 4), kib = client_arg(argc, argv, 2, 64);
    int is_pt = argc > 3 && strcmp(argv[3], "pt") == 0;
    struct work w = {.n = (size_t)kib * 1024};
    CUdevice dev;
    CUcontext ctx;
    CUlibrary lib;
    CUkernel k;
    uint64_t h = CLIENT_FNV_INIT;
    resolve(is_pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0);
    CHECK_CU(cu.init(0));
    CHECK_CU(cu.device_get(&dev, 0));
    CHECK_CU(cu.ctx_retain(&ctx, dev));
    CHECK_CU(cu.ctx_set(ctx));
    CHECK_CU(cu.library_load(&lib, "sm90_xmma_gemm_f16 cublasLt_splitk", NULL, NULL, 0, NULL,
                             NULL, 0));
    CHECK_CU(cu.library_get_kernel(&k, lib, "sm90_xmma_gemm_f16"));
    CHECK_CU(cu.kernel_get_function(&w.gemm, k));
    CHECK_CU(cu.library_get_kernel(&w.gemm_lt, lib, "cublasLt_splitk"));
    CHECK_CU(cu.stream_create(&w.s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cu.event_create(&w.e, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cu.mem_alloc(&w.d_a, w.n));
    CHECK_CU(cu.mem_alloc(&w.d_b, w.n));
    CHECK_CU(cu.host_alloc((void **)&w.h_pin, w.n, 0));
    for (long i = 0; i < iters; i++)
        h = step(&w, i, h);
    h = scratch(&w, h);
    CHECK_CU(cu.free_host(w.h_pin));
    CHECK_CU(cu.mem_free(w.d_b));
    CHECK_CU(cu.mem_free(w.d_a));
    CHECK_CU(cu.event_destroy(w.e));
    CHECK_CU(cu.stream_destroy(w.s));
    CHECK_CU(cu.library_unload(lib));
    printf("checksum %016llx\n", (unsigned long long)h);
    fflush(stdout);
    return fake_expect_write(NAME, NULL, h) == 0 ? 0 : 3;
}
