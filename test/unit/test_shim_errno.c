/* test_shim_errno.c: a client linked directly with (fake) libcuda, for
 * cli.shim_*_direct and cli.shim_errno. It reaches the driver three ways:
 * the exported symbols (PLT, what -lcuda programs do), cuGetProcAddress_v2,
 * and dlsym on libcuda.so.1 (Triton's and cuBLAS's way). Every call's
 * result and the errno it left (errno is set to 4242 before) go to stdout,
 * so a run with the shim must print exactly what a run without it prints,
 * also when FAKECUDA_FAIL injects errors (which set errno to EDOM) and when
 * FAKECUDA_ERRNO makes every driver call leave its own errno (then a call
 * the shim makes for itself, e.g. for the first launch's kernel name,
 * would show). Usage: test_shim_errno [iterations=3] */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_client.h"
#include "fakecuda.h"

#define ERRNO_MARK 4242

static uint64_t sum = CLIENT_FNV_INIT;

/* Print "<what> rc=<rc> errno=<errno>" and fold it into the checksum. */
static void show(const char *what, int rc)
{
    int e = errno;
    char line[160];
    int n = snprintf(line, sizeof(line), "%s rc=%d errno=%d\n", what, rc, e);

    fputs(line, stdout);
    sum = client_fnv(sum, line, (size_t)n);
}

#define CALL(what, call)                                                             \
    do {                                                                             \
        errno = ERRNO_MARK;                                                          \
        int rc_ = (int)(call);                                                       \
        show(what, rc_);                                                             \
    } while (0)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*sync_fn)(CUstream);

static void exported(char *host, size_t n, CUfunction f)
{
    CUdeviceptr d = 0;

    CALL("export cuMemAlloc_v2", cuMemAlloc(&d, n));
    CALL("export cuMemcpyHtoD_v2", cuMemcpyHtoD(d, host, n));
    CALL("export cuMemsetD8_v2", cuMemsetD8(d, 7, n));
    CALL("export cuLaunchKernel", cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CALL("export cuMemcpyDtoH_v2", cuMemcpyDtoH(host, d, n));
    CALL("export cuCtxSynchronize", cuCtxSynchronize());
    CALL("export cuMemFree_v2", cuMemFree(d));
}

static void via_gpa(char *host, size_t n)
{
    void *p = NULL;
    CUdeviceptr d = 0;
    CUdriverProcAddressQueryResult st;

    CALL("gpa lookup cuMemAlloc", cuGetProcAddress("cuMemAlloc", &p, 12000, 0, &st));
    if (p)
        CALL("gpa cuMemAlloc_v2", ((alloc_fn)p)(&d, n));
    p = NULL;
    CALL("gpa lookup cuMemcpyHtoDAsync",
         cuGetProcAddress("cuMemcpyHtoDAsync", &p, 12000, 0, &st));
    if (p)
        CALL("gpa cuMemcpyHtoDAsync_v2", ((htod_fn)p)(d, host, n, NULL));
    CALL("export cuMemFree_v2", cuMemFree(d));
}

static void via_dlsym(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    sync_fn f = lib ? (sync_fn)dlsym(lib, "cuStreamSynchronize") : NULL;

    if (f)
        CALL("dlsym cuStreamSynchronize", f(NULL));
    if (lib)
        dlclose(lib);
}

int main(int argc, char **argv)
{
    int iters = (int)client_arg(argc, argv, 1, 3);
    size_t n = 4096;
    char *host = calloc(1, n);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;

    if (host == NULL)
        return 3;
    CLIENT_CHECK("test_shim_errno", cuInit(0));
    CLIENT_CHECK("test_shim_errno", cuDeviceGet(&dev, 0));
    CLIENT_CHECK("test_shim_errno", cuDevicePrimaryCtxRetain(&ctx, dev));
    CLIENT_CHECK("test_shim_errno", cuCtxSetCurrent(ctx));
    CLIENT_CHECK("test_shim_errno", cuModuleLoadData(&mod, "errno_probe"));
    CLIENT_CHECK("test_shim_errno", cuModuleGetFunction(&f, mod, "errno_probe"));
    for (int i = 0; i < iters; i++) {
        exported(host, n, f);
        via_gpa(host, n);
        via_dlsym();
    }
    CLIENT_CHECK("test_shim_errno", cuModuleUnload(mod));
    printf("checksum %016llx\n", (unsigned long long)sum);
    fflush(stdout);
    free(host);
    return fake_expect_write("test_shim_errno", NULL, sum) ? 3 : 0;
}
