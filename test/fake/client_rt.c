/* client_rt.c: a runtime-API client of the fake runtime, built three ways
 * (client_rt_shared, client_rt_static, client_rt_ptds). Usage:
 *   client_rt [iterations=4] [kib=64]
 * Prints "checksum <hex>" (identical traced or not) and, with
 * FAKECUDA_EXPECT=path, writes the expectation file. */
#include <cuda_runtime_api.h>

#include "fake_client.h"
#include "fakecuda.h"

#include <string.h>

#ifndef CLIENT_NAME
#define CLIENT_NAME "client_rt"
#endif
#define CHECK_RT(call) CLIENT_CHECK(CLIENT_NAME, call)

/* nvcc's <<<>>> path (crt/device_functions.h), which C code must declare. */
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *fn);
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **args,
                                              size_t shmem, cudaStream_t s);
#define LAUNCH_STUB __cudaLaunchKernel_ptsz
#else
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args,
                                         size_t shmem, cudaStream_t s);
#define LAUNCH_STUB __cudaLaunchKernel
#endif

/* Host stubs: only their addresses matter. */
static void vec_add(void) {}
static void scale(void) {}
static void reduce_sum(void) {}

static const dim3 grid = {64, 1, 1}, block = {256, 1, 1};

/* What nvcc generates for kernel<<<grid, block, 0, s>>>(args). */
static void launch_chevrons(const void *fn, void **args, cudaStream_t s)
{
    static cudaKernel_t handle;
    if (handle == NULL)
        CHECK_RT(__cudaGetKernel(&handle, fn));
    CHECK_RT(LAUNCH_STUB(handle, grid, block, args, 0, s));
}

struct bufs {
    size_t n;
    char *d_a, *d_b, *h_pin, *h_alloc, *h_page, *h_reg;
};

static void bufs_open(struct bufs *b, size_t n)
{
    b->n = n;
    CHECK_RT(cudaMalloc((void **)&b->d_a, n));
    CHECK_RT(cudaMalloc((void **)&b->d_b, n));
    CHECK_RT(cudaMallocHost((void **)&b->h_pin, n));
    CHECK_RT(cudaHostAlloc((void **)&b->h_alloc, n, cudaHostAllocDefault));
    b->h_page = malloc(n);
    b->h_reg = malloc(n);
    if (b->h_page == NULL || b->h_reg == NULL)
        CHECK_RT(cudaErrorMemoryAllocation);
    CHECK_RT(cudaHostRegister(b->h_reg, n, cudaHostRegisterDefault));
    for (size_t i = 0; i < n; i++)
        b->h_pin[i] = (char)(i * 7 + 1);
}

static void bufs_close(struct bufs *b)
{
    CHECK_RT(cudaHostUnregister(b->h_reg));
    free(b->h_reg);
    free(b->h_page);
    CHECK_RT(cudaFreeHost(b->h_alloc));
    CHECK_RT(cudaFreeHost(b->h_pin));
    CHECK_RT(cudaFree(b->d_b));
    CHECK_RT(cudaFree(b->d_a));
}

/* One step: pageable and pinned uploads, memset, two launches, D2D, event
 * and stream syncs, downloads; folds the downloaded bytes into h. */
static uint64_t step(struct bufs *b, cudaStream_t s, cudaEvent_t e, int i, uint64_t h)
{
    size_t n = b->n;
    void *args[] = {&b->d_a, &b->d_b};
    memset(b->h_page, i + 3, n);
    CHECK_RT(cudaMemcpy(b->d_a, b->h_page, n, cudaMemcpyHostToDevice));
    CHECK_RT(cudaMemcpyAsync(b->d_b, b->h_pin, n, cudaMemcpyHostToDevice, s));
    CHECK_RT(cudaMemset(b->d_b + n / 2, i & 0xff, n / 4));
    launch_chevrons((const void *)vec_add, args, s);
    CHECK_RT(cudaLaunchKernel((const void *)scale, grid, block, args, 0, s));
    CHECK_RT(cudaMemcpyAsync(b->d_a, b->d_b, n / 2, cudaMemcpyDeviceToDevice, s));
    CHECK_RT(cudaEventRecord(e, s));
    CHECK_RT(cudaEventSynchronize(e));
    CHECK_RT(cudaMemcpyAsync(b->h_reg, b->d_a, n, cudaMemcpyDeviceToHost, s));
    CHECK_RT(cudaMemcpyAsync(b->h_alloc, b->d_b, n, cudaMemcpyDefault, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaMemcpy(b->h_page, b->d_b, n, cudaMemcpyDeviceToHost));
    h = client_fnv(h, b->h_reg, n);
    h = client_fnv(h, b->h_alloc, n);
    return client_fnv(h, b->h_page, n);
}

/* Stream-ordered allocation, a 2D upload and a cudaLaunchKernelExC launch. */
static void extras(struct bufs *b, cudaStream_t s)
{
    char *d_tmp;
    size_t w = b->n / 8;
    void *args[] = {&d_tmp};
    cudaLaunchConfig_t cfg = {.gridDim = grid, .blockDim = block, .stream = s};
    CHECK_RT(cudaMallocAsync((void **)&d_tmp, b->n, s));
    CHECK_RT(cudaMemcpy2DAsync(d_tmp, w * 2, b->h_pin, w, w, 4, cudaMemcpyHostToDevice, s));
    CHECK_RT(cudaLaunchKernelExC(&cfg, (const void *)reduce_sum, args));
    CHECK_RT(cudaFreeAsync(d_tmp, s));
}

/* Capture vec_add, scale and a D2D copy; replay the graph `replays` times. */
static void graph(struct bufs *b, cudaStream_t s, int replays)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    void *args[] = {&b->d_a, &b->d_b};
    CHECK_RT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    launch_chevrons((const void *)vec_add, args, s);
    CHECK_RT(cudaLaunchKernel((const void *)scale, grid, block, args, 0, s));
    CHECK_RT(cudaMemcpyAsync(b->d_b, b->d_a, b->n, cudaMemcpyDeviceToDevice, s));
    CHECK_RT(cudaStreamEndCapture(s, &g));
    CHECK_RT(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < replays; r++)
        CHECK_RT(cudaGraphLaunch(ge, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaGraphExecDestroy(ge));
    CHECK_RT(cudaGraphDestroy(g));
}

static void check_names(void)
{
    const char *name = NULL;
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CHECK_RT(cudaFuncGetName(&name, (const void *)vec_add));
    printf("kernel name %s\n", name);
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 12000, cudaEnableDefault, &st));
    if (fn == NULL || st != cudaDriverEntryPointSuccess)
        CHECK_RT(cudaErrorSymbolNotFound);
}

int main(int argc, char **argv)
{
    long iters = client_arg(argc, argv, 1, 4), kib = client_arg(argc, argv, 2, 64);
    struct bufs b;
    cudaStream_t s;
    cudaEvent_t e;
    uint64_t h = CLIENT_FNV_INIT;
    CHECK_RT(fakert_register_kernel((const void *)vec_add, "vec_add"));
    CHECK_RT(fakert_register_kernel((const void *)scale, "scale"));
    CHECK_RT(fakert_register_kernel((const void *)reduce_sum, "reduce_sum"));
    CHECK_RT(cudaSetDevice(0));
    bufs_open(&b, (size_t)kib * 1024);
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_RT(cudaEventCreate(&e));
    for (int i = 0; i < iters; i++)
        h = step(&b, s, e, i, h);
    extras(&b, s);
    graph(&b, s, 3);
    CHECK_RT(cudaDeviceSynchronize());
    check_names();
    CHECK_RT(cudaEventDestroy(e));
    CHECK_RT(cudaStreamDestroy(s));
    bufs_close(&b);
    CHECK_RT(cudaGetLastError());
    printf("checksum %016llx\n", (unsigned long long)h);
    fflush(stdout);
    return fake_expect_write(CLIENT_NAME, fakert_expect_write, h) == 0 ? 0 : 3;
}
