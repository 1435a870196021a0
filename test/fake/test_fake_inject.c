/* test_fake_inject.c: unit.fake_inject: FAKECUDA_FAIL makes the Nth call of
 * one export fail with the given CUresult and errno EDOM, leaving other calls
 * alone; the fake runtime passes the failure on as a cudaError_t;
 * FAKECUDA_LAT_NS delays the named export. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "check.h"
#include "fake_dlopen.h"

#include <dlfcn.h>
#include <errno.h>

static PFN_cuMemAlloc_v3020 mem_alloc;
static PFN_cuMemFree_v3020 mem_free;
static PFN_cuStreamQuery_v2000 stream_query;
static PFN_cuMemsetD8_v3020 memset_d8;

static int test_nth_call_fails_with_code_and_edom(void)
{
    CUdeviceptr d[4];
    errno = 0;
    CHECK_EQ(mem_alloc(&d[0], 64), CUDA_SUCCESS);
    CHECK_EQ(mem_alloc(&d[1], 64), CUDA_SUCCESS);
    CHECK_EQ(errno, 0);
    CHECK_EQ(mem_alloc(&d[2], 64), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(errno, EDOM);
    CHECK_EQ(mem_alloc(&d[3], 64), CUDA_SUCCESS);
    CHECK_EQ(mem_free(d[0]), CUDA_SUCCESS);
    CHECK_EQ(mem_free(d[1]), CUDA_SUCCESS);
    CHECK_EQ(mem_free(d[3]), CUDA_SUCCESS);
    return 0;
}

static int test_every_call_fails_with_star(void)
{
    char buf[8];
    CHECK_EQ(memset_d8((CUdeviceptr)buf, 1, sizeof buf), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(memset_d8((CUdeviceptr)buf, 1, sizeof buf), CUDA_ERROR_INVALID_VALUE);
    return 0;
}

/* The 4th and 5th cuMemAlloc_v2 of the process come from cudaMalloc. */
static int test_runtime_passes_failure_on(void)
{
    void *p = NULL;
    CHECK_EQ(cudaMalloc(&p, 64), cudaSuccess);
    CHECK_EQ(cudaFree(p), cudaSuccess);
    errno = 0;
    CHECK_EQ(cudaMalloc(&p, 64), cudaErrorMemoryAllocation);
    CHECK_EQ(errno, EDOM);
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    return 0;
}

static int test_latency_delays_the_call(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK_EQ(stream_query(NULL), CUDA_SUCCESS);
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long ns = (b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
    CHECK(ns >= 2000000);
    return 0;
}

int main(void)
{
    setenv("FAKECUDA_FAIL", "cuMemAlloc_v2@3=2,cuMemAlloc_v2@6=2,cuMemsetD8_v2@*=1", 1);
    setenv("FAKECUDA_LAT_NS", "cuStreamQuery=2000000", 1);
    void *lib = fake_dlopen_cuda((const void *)test_latency_delays_the_call, RTLD_NOW);
    if (lib == NULL)
        return 1;
    mem_alloc = (PFN_cuMemAlloc_v3020)dlsym(lib, "cuMemAlloc_v2");
    mem_free = (PFN_cuMemFree_v3020)dlsym(lib, "cuMemFree_v2");
    stream_query = (PFN_cuStreamQuery_v2000)dlsym(lib, "cuStreamQuery");
    memset_d8 = (PFN_cuMemsetD8_v3020)dlsym(lib, "cuMemsetD8_v2");
    if (mem_alloc == NULL || mem_free == NULL || stream_query == NULL || memset_d8 == NULL)
        return 1;
    /* Order matters: call numbers count across tests. */
    RUN(test_nth_call_fails_with_code_and_edom);
    RUN(test_every_call_fails_with_star);
    RUN(test_runtime_passes_failure_on);
    RUN(test_latency_delays_the_call);
    return check_status();
}
