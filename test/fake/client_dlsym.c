/* client_dlsym.c: a Triton-style driver client: dlopen("libcuda.so.1") and
 * dlsym each driver function by its exact export name, then call through
 * the pointers. Usage: client_dlsym [iterations=4] [kib=64]
 * Prints "checksum <hex>"; FAKECUDA_EXPECT=path writes the expectation file. */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_client.h"
#include "fake_dlopen.h"
#include "fakecuda.h"

#include <dlfcn.h>
#include <string.h>

#define NAME "client_dlsym"
#define CHECK_CU(call) CLIENT_CHECK(NAME, call)

static struct {
    PFN_cuInit_v2000 init;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuDevicePrimaryCtxRetain_v7000 ctx_retain;
    PFN_cuCtxSetCurrent_v4000 ctx_set;
    PFN_cuModuleLoadData_v2000 module_load;
    PFN_cuModuleGetFunction_v2000 module_get_function;
    PFN_cuModuleUnload_v2000 module_unload;
    PFN_cuFuncGetName_v12030 func_get_name;
    PFN_cuMemAlloc_v3020 mem_alloc;
    PFN_cuMemFree_v3020 mem_free;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuMemsetD32_v3020 memset_d32;
    PFN_cuLaunchKernelEx_v11060 launch_ex;
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamSynchronize_v2000 stream_sync;
    PFN_cuStreamDestroy_v4000 stream_destroy;
} cu;

/* Exact export names, as Triton's launcher and cuBLAS's tables use. */
static void load(void)
{
    void *lib = fake_dlopen_cuda((const void *)load, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "%s: libcuda.so.1: %s\n", NAME, dlerror());
        exit(3);
    }
    const struct {
        const char *name;
        void *slot;
    } syms[] = {
        {"cuInit", &cu.init}, {"cuDeviceGet", &cu.device_get},
        {"cuDevicePrimaryCtxRetain", &cu.ctx_retain}, {"cuCtxSetCurrent", &cu.ctx_set},
        {"cuModuleLoadData", &cu.module_load}, {"cuModuleGetFunction", &cu.module_get_function},
        {"cuModuleUnload", &cu.module_unload}, {"cuFuncGetName", &cu.func_get_name},
        {"cuMemAlloc_v2", &cu.mem_alloc}, {"cuMemFree_v2", &cu.mem_free},
        {"cuMemcpyHtoD_v2", &cu.htod}, {"cuMemcpyDtoH_v2", &cu.dtoh},
        {"cuMemsetD32_v2", &cu.memset_d32}, {"cuLaunchKernelEx", &cu.launch_ex},
        {"cuLaunchKernel", &cu.launch}, {"cuStreamCreate", &cu.stream_create},
        {"cuStreamSynchronize", &cu.stream_sync}, {"cuStreamDestroy_v2", &cu.stream_destroy},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(lib, syms[i].name);
        if (p == NULL) {
            fprintf(stderr, "%s: %s: not exported\n", NAME, syms[i].name);
            exit(3);
        }
        memcpy(syms[i].slot, &p, sizeof p);
    }
}

int main(int argc, char **argv)
{
    long iters = client_arg(argc, argv, 1, 4), n = client_arg(argc, argv, 2, 64) * 1024;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction add, softmax;
    CUstream s;
    CUdeviceptr d;
    const char *name;
    uint64_t h = CLIENT_FNV_INIT;
    char *buf = malloc((size_t)n);
    load();
    CHECK_CU(cu.init(0));
    CHECK_CU(cu.device_get(&dev, 0));
    CHECK_CU(cu.ctx_retain(&ctx, dev));
    CHECK_CU(cu.ctx_set(ctx));
    CHECK_CU(cu.module_load(&mod, "add_kernel softmax_kernel"));
    CHECK_CU(cu.module_get_function(&add, mod, "add_kernel"));
    CHECK_CU(cu.module_get_function(&softmax, mod, "softmax_kernel"));
    CHECK_CU(cu.func_get_name(&name, add));
    printf("kernel name %s\n", name);
    CHECK_CU(cu.stream_create(&s, 0));
    CHECK_CU(cu.mem_alloc(&d, (size_t)n));
    CUlaunchConfig cfg = {.gridDimX = 128, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
                          .blockDimY = 1, .blockDimZ = 1, .hStream = s};
    void *args[] = {&d};
    for (long i = 0; i < iters; i++) {
        memset(buf, (int)i + 5, (size_t)n);
        CHECK_CU(cu.htod(d, buf, (size_t)n));
        CHECK_CU(cu.memset_d32(d, (unsigned)i * 0x01010101u, (size_t)n / 16));
        CHECK_CU(cu.launch_ex(&cfg, add, args, NULL));
        CHECK_CU(cu.launch(softmax, 64, 1, 1, 256, 1, 1, 0, s, args, NULL));
        CHECK_CU(cu.stream_sync(s));
        CHECK_CU(cu.dtoh(buf, d, (size_t)n));
        h = client_fnv(h, buf, (size_t)n);
    }
    CHECK_CU(cu.mem_free(d));
    CHECK_CU(cu.stream_destroy(s));
    CHECK_CU(cu.module_unload(mod));
    free(buf);
    printf("checksum %016llx\n", (unsigned long long)h);
    fflush(stdout);
    return fake_expect_write(NAME, NULL, h) == 0 ? 0 : 3;
}
