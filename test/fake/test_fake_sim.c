/* test_fake_sim.c: unit.fake_sim: in FAKECUDA_SIM=1 mode a sync returns no
 * earlier than the work queued before it ends (a correctness property of the
 * fake, not a speed figure: only lower bounds are checked). Linked to the fake
 * libcuda.so.1; re-executes itself with the SIM environment set, since the
 * driver reads it when loaded. */
#include <cuda.h>

#include "check.h"

#include <unistd.h>

#define KERNEL_MS 30
#define COPY_BYTES (8u << 20) /* 8 ms at 1 GB/s */

static CUfunction slow, tiny;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static CUresult launch(CUfunction f, CUstream s)
{
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

static int test_stream_sync_waits_for_queued_kernels(void)
{
    CUstream s;
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    long long t0 = now_ns();
    CHECK_EQ(launch(slow, s), CUDA_SUCCESS);
    CHECK_EQ(launch(slow, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK(now_ns() - t0 >= 2 * KERNEL_MS * 1000000ll);
    CHECK_EQ(cuStreamQuery(s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return 0;
}

static int test_event_sync_waits_for_work_before_record(void)
{
    CUstream s;
    CUevent e;
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    CHECK_EQ(cuEventCreate(&e, 0), CUDA_SUCCESS);
    long long t0 = now_ns();
    CHECK_EQ(launch(slow, s), CUDA_SUCCESS);
    CHECK_EQ(cuEventRecord(e, s), CUDA_SUCCESS);
    CHECK_EQ(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    CHECK_EQ(cuEventSynchronize(e), CUDA_SUCCESS);
    CHECK(now_ns() - t0 >= KERNEL_MS * 1000000ll);
    CHECK_EQ(cuEventQuery(e), CUDA_SUCCESS);
    CHECK_EQ(cuEventDestroy(e), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return 0;
}

static int test_ctx_sync_waits_for_every_stream(void)
{
    CUstream a, b;
    CHECK_EQ(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    long long t0 = now_ns();
    CHECK_EQ(launch(tiny, a), CUDA_SUCCESS);
    CHECK_EQ(launch(slow, b), CUDA_SUCCESS);
    CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    CHECK(now_ns() - t0 >= KERNEL_MS * 1000000ll);
    CHECK_EQ(cuStreamQuery(b), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(a), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(b), CUDA_SUCCESS);
    return 0;
}

static int test_legacy_stream_waits_for_blocking_streams(void)
{
    CUstream s;
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    long long t0 = now_ns();
    CHECK_EQ(launch(slow, s), CUDA_SUCCESS);
    CHECK_EQ(launch(tiny, NULL), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(NULL), CUDA_SUCCESS);
    CHECK(now_ns() - t0 >= KERNEL_MS * 1000000ll);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return 0;
}

static int test_pageable_async_copy_blocks_for_copy_time(void)
{
    CUdeviceptr d;
    char *page = calloc(1, COPY_BYTES);
    CUstream s;
    CHECK(page != NULL);
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemAlloc(&d, COPY_BYTES), CUDA_SUCCESS);
    long long t0 = now_ns();
    CHECK_EQ(cuMemcpyHtoDAsync(d, page, COPY_BYTES, s), CUDA_SUCCESS);
    CHECK(now_ns() - t0 >= 8000000ll);
    CHECK_EQ(cuMemFree(d), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    free(page);
    return 0;
}

static int test_pinned_async_copy_is_stream_ordered(void)
{
    CUdeviceptr d;
    void *pin;
    CUstream s;
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemAlloc(&d, COPY_BYTES), CUDA_SUCCESS);
    CHECK_EQ(cuMemHostAlloc(&pin, COPY_BYTES, 0), CUDA_SUCCESS);
    long long t0 = now_ns();
    CHECK_EQ(cuMemcpyHtoDAsync(d, pin, COPY_BYTES, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK(now_ns() - t0 >= 8000000ll);
    CHECK_EQ(cuMemFreeHost(pin), CUDA_SUCCESS);
    CHECK_EQ(cuMemFree(d), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return 0;
}

int main(int argc, char **argv)
{
    CUmodule mod;
    CUdevice dev;
    CUcontext ctx;
    (void)argc;
    if (getenv("FAKECUDA_SIM") == NULL) {
        setenv("FAKECUDA_SIM", "1", 1);
        setenv("FAKECUDA_KERNEL_US", "slow_kernel=30000,*=5", 1);
        setenv("FAKECUDA_PAGEABLE_GBPS", "1", 1);
        setenv("FAKECUDA_PINNED_GBPS", "1", 1);
        execv("/proc/self/exe", argv);
        return 1;
    }
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) ||
        cuModuleLoadData(&mod, "slow_kernel tiny_kernel") != CUDA_SUCCESS ||
        cuModuleGetFunction(&slow, mod, "slow_kernel") != CUDA_SUCCESS ||
        cuModuleGetFunction(&tiny, mod, "tiny_kernel") != CUDA_SUCCESS)
        return 1;
    RUN(test_stream_sync_waits_for_queued_kernels);
    RUN(test_event_sync_waits_for_work_before_record);
    RUN(test_ctx_sync_waits_for_every_stream);
    RUN(test_legacy_stream_waits_for_blocking_streams);
    RUN(test_pageable_async_copy_blocks_for_copy_time);
    RUN(test_pinned_async_copy_is_stream_ordered);
    return check_status();
}
