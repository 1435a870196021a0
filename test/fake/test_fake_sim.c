/* test_fake_sim.c: unit.fake_sim: in FAKECUDA_SIM=1 mode a sync returns no
 * earlier than the work queued before it ends (a correctness property of the
 * fake, not a speed figure: only lower bounds are checked); an asynchronous
 * copy that a real GPU does by DMA (host side pinned, or device to device)
 * costs its caller no memmove (checked against a memcpy of the same bytes in
 * the same run: a ratio, not a time), and its bytes are in place wherever
 * the host may look. Linked to the fake libcuda.so.1; re-executes itself
 * with the SIM environment set, since the driver reads it when loaded. */
#include <cuda.h>

#include "check.h"

#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#define KERNEL_MS 30
#define COPY_BYTES (8u << 20) /* 8 ms at 1 GB/s */
#define BIG_BYTES (64u << 20) /* above malloc's largest mmap threshold: free() unmaps it */
#define SMALL_BYTES (1u << 20)

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

/* ---- deferred copies (fake_queue.c) ---- */

static void fill(void *p, size_t n, uint64_t seed)
{
    uint64_t *w = p, x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n / 8; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        w[i] = x;
    }
}

/* Host to device from pinned, device to device, device to pinned host, on s:
 * once s is done, dst holds src's bytes. */
static CUresult round_trip(void *dst, CUdeviceptr a, CUdeviceptr b, const void *src, size_t n,
                           CUstream s)
{
    CUresult rc = cuMemcpyHtoDAsync(a, src, n, s);
    if (rc == CUDA_SUCCESS)
        rc = cuMemcpyDtoDAsync(b, a, n, s);
    return rc == CUDA_SUCCESS ? cuMemcpyDtoHAsync(dst, b, n, s) : rc;
}

struct bufs {
    CUdeviceptr a, b;
    void *src, *dst; /* pinned */
    size_t n;
};

static int bufs_new(struct bufs *x, size_t n, uint64_t seed)
{
    x->n = n;
    CHECK_EQ(cuMemAlloc(&x->a, n), CUDA_SUCCESS);
    CHECK_EQ(cuMemAlloc(&x->b, n), CUDA_SUCCESS);
    CHECK_EQ(cuMemHostAlloc(&x->src, n, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemHostAlloc(&x->dst, n, 0), CUDA_SUCCESS);
    fill(x->src, n, seed);
    memset(x->dst, 0, n);
    return 0;
}

static int bufs_free(struct bufs *x)
{
    CHECK_EQ(cuMemFree(x->a), CUDA_SUCCESS);
    CHECK_EQ(cuMemFree(x->b), CUDA_SUCCESS);
    CHECK_EQ(cuMemFreeHost(x->src), CUDA_SUCCESS);
    CHECK_EQ(cuMemFreeHost(x->dst), CUDA_SUCCESS);
    return 0;
}

/* The real driver queues a DMA and returns: the fake must not memmove 64 MiB
 * in the call. Each round times a memcpy of the same (faulted-in) bytes. */
static int test_pinned_async_copy_returns_before_a_memcpy_would(void)
{
    CUdeviceptr d;
    unsigned char *pin, *ref = malloc(BIG_BYTES);
    CUstream s;
    long long copy_ns = LLONG_MAX, call_ns = LLONG_MAX;
    CHECK(ref != NULL);
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemAlloc(&d, BIG_BYTES), CUDA_SUCCESS);
    CHECK_EQ(cuMemHostAlloc((void **)&pin, BIG_BYTES, 0), CUDA_SUCCESS);
    fill(pin, BIG_BYTES, 1);
    memset((void *)d, 0, BIG_BYTES);
    memset(ref, 0, BIG_BYTES);
    for (int i = 0; i < 3; i++) {
        pin[i] ^= 0xff; /* new bytes each round */
        long long t = now_ns();
        memcpy(ref, pin, BIG_BYTES);
        t = now_ns() - t;
        copy_ns = t < copy_ns ? t : copy_ns;
        t = now_ns();
        CHECK_EQ(cuMemcpyHtoDAsync(d, pin, BIG_BYTES, s), CUDA_SUCCESS);
        t = now_ns() - t;
        call_ns = t < call_ns ? t : call_ns;
        CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
        CHECK(memcmp((void *)d, ref, BIG_BYTES) == 0);
    }
    fprintf(stderr, "     64 MiB: cuMemcpyHtoDAsync from pinned %lld ns, memcpy %lld ns\n", call_ns,
            copy_ns);
    CHECK(call_ns * 10 < copy_ns);
    CHECK_EQ(cuMemFreeHost(pin), CUDA_SUCCESS);
    CHECK_EQ(cuMemFree(d), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    free(ref);
    return 0;
}

static int test_pinned_round_trip_in_place_after_stream_sync(void)
{
    struct bufs x;
    CUstream s;
    CHECK_EQ(bufs_new(&x, BIG_BYTES, 2), 0);
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    CHECK_EQ(round_trip(x.dst, x.a, x.b, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK(memcmp(x.dst, x.src, x.n) == 0);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return bufs_free(&x);
}

static int test_pinned_round_trip_in_place_after_event_sync(void)
{
    struct bufs x;
    CUstream s;
    CUevent e;
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 3), 0);
    CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuEventCreate(&e, 0), CUDA_SUCCESS);
    CHECK_EQ(round_trip(x.dst, x.a, x.b, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuEventRecord(e, s), CUDA_SUCCESS);
    CHECK_EQ(cuEventSynchronize(e), CUDA_SUCCESS);
    CHECK(memcmp(x.dst, x.src, x.n) == 0);
    CHECK_EQ(cuEventDestroy(e), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return bufs_free(&x);
}

static int test_pinned_round_trip_in_place_when_queries_report_done(void)
{
    struct bufs x;
    CUstream s;
    CUevent e;
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 4), 0);
    CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuEventCreate(&e, 0), CUDA_SUCCESS);
    CHECK_EQ(round_trip(x.dst, x.a, x.b, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuEventRecord(e, s), CUDA_SUCCESS);
    while (cuEventQuery(e) == CUDA_ERROR_NOT_READY)
        usleep(200);
    CHECK_EQ(cuEventQuery(e), CUDA_SUCCESS);
    CHECK(memcmp(x.dst, x.src, x.n) == 0);
    fill(x.src, x.n, 5);
    CHECK_EQ(round_trip(x.dst, x.a, x.b, x.src, x.n, s), CUDA_SUCCESS);
    while (cuStreamQuery(s) == CUDA_ERROR_NOT_READY)
        usleep(200);
    CHECK(memcmp(x.dst, x.src, x.n) == 0);
    CHECK_EQ(cuEventDestroy(e), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return bufs_free(&x);
}

static int test_pinned_round_trip_in_place_after_ctx_sync(void)
{
    struct bufs x;
    CUstream s;
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 6), 0);
    CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(round_trip(x.dst, x.a, x.b, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    CHECK(memcmp(x.dst, x.src, x.n) == 0);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return bufs_free(&x);
}

/* A synchronous copy runs on the legacy stream, which waits for blocking
 * streams: it reads what their deferred copies wrote. */
static int test_sync_copy_reads_deferred_copy_of_blocking_stream(void)
{
    struct bufs x;
    CUstream s;
    unsigned char *page = malloc(SMALL_BYTES);
    CHECK(page != NULL);
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 7), 0);
    CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyHtoDAsync(x.a, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyDtoH(page, x.a, x.n), CUDA_SUCCESS);
    CHECK(memcmp(page, x.src, x.n) == 0);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    free(page);
    return bufs_free(&x);
}

/* A pageable copy is done in its call: on a stream that waited for an event
 * of another (non-blocking) stream, it sees that stream's deferred copy. */
static int test_event_wait_orders_deferred_copy_before_pageable_copy(void)
{
    struct bufs x;
    CUstream a, b;
    CUevent e;
    unsigned char *page = calloc(1, SMALL_BYTES);
    CHECK(page != NULL);
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 8), 0);
    CHECK_EQ(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuEventCreate(&e, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyHtoDAsync(x.a, x.src, x.n, a), CUDA_SUCCESS);
    CHECK_EQ(cuEventRecord(e, a), CUDA_SUCCESS);
    CHECK_EQ(cuStreamWaitEvent(b, e, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyDtoHAsync(page, x.a, x.n, b), CUDA_SUCCESS);
    CHECK(memcmp(page, x.src, x.n) == 0);
    CHECK_EQ(cuEventDestroy(e), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(a), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(b), CUDA_SUCCESS);
    free(page);
    return bufs_free(&x);
}

/* Copies and memsets on one stream land in the order they were issued. */
static int test_async_memset_lands_after_earlier_copy(void)
{
    struct bufs x;
    CUstream s;
    unsigned char *dst;
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 9), 0);
    CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyHtoDAsync(x.a, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuMemsetD8Async(x.a, 0x5a, x.n / 2, s), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyDtoHAsync(x.dst, x.a, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    dst = x.dst;
    CHECK(dst[0] == 0x5a && dst[x.n / 2 - 1] == 0x5a);
    CHECK(memcmp(dst + x.n / 2, (unsigned char *)x.src + x.n / 2, x.n / 2) == 0);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return bufs_free(&x);
}

struct host_check {
    const struct bufs *x;
    int is_equal;
};

static void CUDA_CB host_compare(void *data)
{
    struct host_check *h = data;
    h->is_equal = memcmp(h->x->dst, h->x->src, h->x->n) == 0;
}

static int test_host_func_sees_deferred_copies_before_it(void)
{
    struct bufs x;
    struct host_check h = {&x, 0};
    CUstream s;
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 10), 0);
    CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(round_trip(x.dst, x.a, x.b, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuLaunchHostFunc(s, host_compare, &h), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK(h.is_equal);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return bufs_free(&x);
}

/* A launched graph's copies are deferred like the same copies issued alone. */
static int test_graph_replay_copies_land_in_order(void)
{
    struct bufs x;
    CUstream s;
    CUgraph g;
    CUgraphExec ge;
    CHECK_EQ(bufs_new(&x, SMALL_BYTES, 11), 0);
    CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CHECK_EQ(round_trip(x.dst, x.a, x.b, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    CHECK_EQ(cuGraphInstantiate(&ge, g, 0), CUDA_SUCCESS);
    CHECK_EQ(cuGraphLaunch(ge, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK(memcmp(x.dst, x.src, x.n) == 0);
    fill(x.src, x.n, 12);
    CHECK_EQ(cuGraphLaunch(ge, s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK(memcmp(x.dst, x.src, x.n) == 0);
    CHECK_EQ(cuGraphExecDestroy(ge), CUDA_SUCCESS);
    CHECK_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return bufs_free(&x);
}

/* Freeing or unregistering memory that queued copies still touch runs them
 * first: freed 64 MiB blocks are unmapped, so a late memmove would crash. */
static int test_free_runs_deferred_copies_first(void)
{
    struct bufs x;
    CUstream s;
    unsigned char *reg = malloc(BIG_BYTES);
    CHECK(reg != NULL);
    CHECK_EQ(bufs_new(&x, BIG_BYTES, 13), 0);
    CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CHECK_EQ(cuMemHostRegister(reg, BIG_BYTES, 0), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyHtoDAsync(x.a, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyDtoHAsync(reg, x.a, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuMemHostUnregister(reg), CUDA_SUCCESS);
    CHECK(memcmp(reg, x.src, x.n) == 0);
    CHECK_EQ(cuMemcpyHtoDAsync(x.b, x.src, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(cuMemcpyDtoHAsync(x.dst, x.b, x.n, s), CUDA_SUCCESS);
    CHECK_EQ(bufs_free(&x), 0);
    free(reg);
    CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
    return 0;
}

/* Threads issue and sync round trips on their own streams while others run
 * the queue (cuCtxSynchronize runs every thread's items): each sees its own
 * bytes, and TSan sees the queue's locking. */
#define N_THREADS 4
#define THREAD_ROUNDS 40

static void *thread_round_trips(void *arg)
{
    long id = (long)arg, bad = 0;
    struct bufs x;
    CUstream s;
    if (bufs_new(&x, 256u << 10, (uint64_t)id) != 0 ||
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return (void *)1;
    for (int r = 0; r < THREAD_ROUNDS; r++) {
        fill(x.src, x.n, (uint64_t)(id * 1000 + r));
        bad |= round_trip(x.dst, x.a, x.b, x.src, x.n, s) != CUDA_SUCCESS;
        bad |= (r % 4 == 3 ? cuCtxSynchronize() : cuStreamSynchronize(s)) != CUDA_SUCCESS;
        bad |= memcmp(x.dst, x.src, x.n) != 0;
    }
    bad |= cuStreamDestroy(s) != CUDA_SUCCESS || bufs_free(&x) != 0;
    return (void *)bad;
}

static int test_threads_see_their_own_round_trips(void)
{
    pthread_t t[N_THREADS];
    for (long i = 0; i < N_THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, thread_round_trips, (void *)i), 0);
    for (int i = 0; i < N_THREADS; i++) {
        void *bad;
        CHECK_EQ(pthread_join(t[i], &bad), 0);
        CHECK_EQ((long)bad, 0);
    }
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
    RUN(test_pinned_async_copy_returns_before_a_memcpy_would);
    RUN(test_pinned_round_trip_in_place_after_stream_sync);
    RUN(test_pinned_round_trip_in_place_after_event_sync);
    RUN(test_pinned_round_trip_in_place_when_queries_report_done);
    RUN(test_pinned_round_trip_in_place_after_ctx_sync);
    RUN(test_sync_copy_reads_deferred_copy_of_blocking_stream);
    RUN(test_event_wait_orders_deferred_copy_before_pageable_copy);
    RUN(test_async_memset_lands_after_earlier_copy);
    RUN(test_host_func_sees_deferred_copies_before_it);
    RUN(test_graph_replay_copies_land_in_order);
    RUN(test_free_runs_deferred_copies_first);
    RUN(test_threads_see_their_own_round_trips);
    return check_status();
}
