/* test_shim_kernels.c: a client with many distinct kernels (PyTorch loads
 * thousands), for cli.shim_{record,preload}_kernels: every launch must still
 * carry its name, so the shim's name cache must not run out. Loads one fake
 * library of N kernels and launches each twice, half of them through the
 * CUkernel handle (as runtimes do) and half through a CUfunction.
 * Usage: test_shim_kernels [kernels=10000] */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_client.h"
#include "fakecuda.h"

#define NAME "test_shim_kernels"
#define CHECK_CU(call) CLIENT_CHECK(NAME, call)

int main(int argc, char **argv)
{
    long n = client_arg(argc, argv, 1, 10000);
    char *image = malloc((size_t)n * 16 + 1), *p = image, kname[32];
    CUdevice dev;
    CUcontext ctx;
    CUlibrary lib;
    void *params[] = {NULL};

    if (image == NULL)
        return 3;
    for (long i = 0; i < n; i++)
        p += sprintf(p, "kern_%ld ", i);
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    for (int round = 0; round < 2; round++)
        for (long i = 0; i < n; i++) {
            CUkernel k;
            CUfunction f;
            snprintf(kname, sizeof(kname), "kern_%ld", i);
            CHECK_CU(cuLibraryGetKernel(&k, lib, kname));
            if (i % 2)
                CHECK_CU(cuKernelGetFunction(&f, k));
            else
                f = (CUfunction)k;
            CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        }
    CHECK_CU(cuCtxSynchronize());
    printf("kernels %ld launches %ld\n", n, 2 * n);
    free(image);
    return fake_expect_write(NAME, NULL, 0) ? 3 : 0;
}
