/* client_direct.c: links the fake libcuda.so.1 (-lcuda) and calls its
 * exports through the PLT, with cuda.h's own name mapping (cuMemAlloc is
 * cuMemAlloc_v2, cuStreamBeginCapture is cuStreamBeginCapture_v2, ...).
 * Usage: client_direct [iterations=4] [kib=64]. Prints "checksum <hex>". */
#include <cuda.h>

#include "fake_client.h"
#include "fakecuda.h"

#include <string.h>

#define NAME "client_direct"
#define CHECK_CU(call) CLIENT_CHECK(NAME, call)

struct work {
    CUstream s;
    CUfunction relu, norm;
    CUdeviceptr d, d_managed;
    char *h_pin, *h_reg;
    size_t n;
};

static void count_host(void *data)
{
    ++*(int *)data;
}

static uint64_t step(struct work *w, long i, uint64_t h)
{
    void *args[] = {&w->d};
    memset(w->h_reg, (int)i + 1, w->n);
    CHECK_CU(cuMemcpyHtoD(w->d, w->h_reg, w->n));
    CHECK_CU(cuMemsetD8(w->d, (unsigned char)(i * 3), w->n / 4));
    CHECK_CU(cuLaunchKernel(w->relu, 8, 1, 1, 64, 1, 1, 0, w->s, args, NULL));
    CHECK_CU(cuLaunchKernel(w->norm, 8, 1, 1, 64, 1, 1, 0, w->s, args, NULL));
    CHECK_CU(cuMemcpyDtoDAsync(w->d_managed, w->d, w->n, w->s));
    CHECK_CU(cuMemcpyAsync((CUdeviceptr)w->h_pin, w->d_managed, w->n, w->s));
    CHECK_CU(cuStreamSynchronize(w->s));
    CHECK_CU(cuMemcpyDtoH(w->h_reg, w->d, w->n));
    h = client_fnv(h, w->h_pin, w->n);
    return client_fnv(h, w->h_reg, w->n);
}

/* Capture relu + a D2D copy, replay twice; then a host function. */
static void graph(struct work *w)
{
    CUgraph g;
    CUgraphExec ge;
    CUstreamCaptureStatus st;
    int host_calls = 0;
    void *args[] = {&w->d};
    CHECK_CU(cuStreamBeginCapture(w->s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuStreamIsCapturing(w->s, &st));
    if (st != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        CHECK_CU(CUDA_ERROR_ILLEGAL_STATE);
    CHECK_CU(cuLaunchKernel(w->relu, 8, 1, 1, 64, 1, 1, 0, w->s, args, NULL));
    CHECK_CU(cuMemcpyDtoDAsync(w->d_managed, w->d, w->n, w->s));
    CHECK_CU(cuStreamEndCapture(w->s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphLaunch(ge, w->s));
    CHECK_CU(cuGraphLaunch(ge, w->s));
    CHECK_CU(cuLaunchHostFunc(w->s, count_host, &host_calls));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
    if (host_calls != 1)
        CHECK_CU(CUDA_ERROR_UNKNOWN);
}

/* Pinned memory is known to the driver; pageable memory is not. */
static void pointer_kinds(struct work *w)
{
    unsigned int type = 0;
    char page[16];
    CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, w->d));
    if (type != CU_MEMORYTYPE_DEVICE)
        CHECK_CU(CUDA_ERROR_UNKNOWN);
    CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   (CUdeviceptr)w->h_pin));
    if (type != CU_MEMORYTYPE_HOST ||
        cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)page) !=
            CUDA_ERROR_INVALID_VALUE)
        CHECK_CU(CUDA_ERROR_UNKNOWN);
}

/* Virtual memory management: reserve, create, map, use, unmap, release. */
static void vmm(struct work *w)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle mh;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t len = 2 << 20;
    CHECK_CU(cuMemAddressReserve(&va, len, 0, 0, 0));
    CHECK_CU(cuMemCreate(&mh, len, &prop, 0));
    CHECK_CU(cuMemMap(va, len, 0, mh, 0));
    CHECK_CU(cuMemSetAccess(va, len, &acc, 1));
    CHECK_CU(cuMemcpyDtoD(va, w->d, w->n < len ? w->n : len));
    CHECK_CU(cuMemUnmap(va, len));
    CHECK_CU(cuMemRelease(mh));
    CHECK_CU(cuMemAddressFree(va, len));
}

int main(int argc, char **argv)
{
    long iters = client_arg(argc, argv, 1, 4), kib = client_arg(argc, argv, 2, 64);
    struct work w = {.n = (size_t)kib * 1024};
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    size_t free_b, total_b;
    uint64_t h = CLIENT_FNV_INIT;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuModuleLoadData(&mod, "relu_fwd\nlayer_norm"));
    CHECK_CU(cuModuleGetFunction(&w.relu, mod, "relu_fwd"));
    CHECK_CU(cuModuleGetFunction(&w.norm, mod, "layer_norm"));
    CHECK_CU(cuStreamCreate(&w.s, 0));
    CHECK_CU(cuMemAlloc(&w.d, w.n));
    CHECK_CU(cuMemAllocManaged(&w.d_managed, w.n, CU_MEM_ATTACH_GLOBAL));
    CHECK_CU(cuMemAllocHost((void **)&w.h_pin, w.n));
    w.h_reg = malloc(w.n);
    CHECK_CU(cuMemHostRegister(w.h_reg, w.n, 0));
    CHECK_CU(cuMemGetInfo(&free_b, &total_b));
    for (long i = 0; i < iters; i++)
        h = step(&w, i, h);
    graph(&w);
    pointer_kinds(&w);
    vmm(&w);
    CHECK_CU(cuMemHostUnregister(w.h_reg));
    free(w.h_reg);
    CHECK_CU(cuMemFreeHost(w.h_pin));
    CHECK_CU(cuMemFree(w.d_managed));
    CHECK_CU(cuMemFree(w.d));
    CHECK_CU(cuStreamDestroy(w.s));
    CHECK_CU(cuModuleUnload(mod));
    printf("checksum %016llx\n", (unsigned long long)h);
    fflush(stdout);
    return fake_expect_write(NAME, NULL, h) == 0 ? 0 : 3;
}
