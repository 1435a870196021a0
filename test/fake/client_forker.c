/* client_forker.c: fork N worker processes of T threads each; every thread,
 * and the parent, makes driver calls (linked -lcuda, through the PLT).
 * Workers leave with _exit, as Python's fork workers do.
 * Usage: client_forker [workers=4] [threads=2] [iterations=50]
 * Prints "processes P", "driver calls <workload calls summed over all
 * processes>" (5 x iterations per thread), "launches <sum>" and
 * "checksum <hex>"; with FAKECUDA_EXPECT containing
 * "%p" every process writes its own expectation file. */
#include <cuda.h>

#include "fake_client.h"
#include "fakecuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME "client_forker"
#define CHECK_CU(call) CLIENT_CHECK(NAME, call)

static CUcontext ctx;
static CUfunction kernel;
static long iters;

/* Five driver calls per iteration: alloc, upload, launch, sync, free. */
static void *thread_main(void *arg)
{
    char buf[256];
    memset(buf, (int)(intptr_t)arg, sizeof buf);
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (long i = 0; i < iters; i++) {
        CUdeviceptr d;
        CHECK_CU(cuMemAlloc(&d, sizeof buf));
        CHECK_CU(cuMemcpyHtoD(d, buf, sizeof buf));
        CHECK_CU(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        CHECK_CU(cuStreamSynchronize(NULL));
        CHECK_CU(cuMemFree(d));
    }
    return NULL;
}

static void run_threads(long n)
{
    pthread_t t[64];
    n = n > 64 ? 64 : n;
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i) != 0)
            CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY);
    for (long i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* This process's calls of the five workload exports, and its launches,
 * from the fake driver's own counters (an interposer's own helper calls,
 * such as cuFuncGetName, are not among them). */
static void totals(uint64_t out[2])
{
    static const char *const names[] = {"cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuLaunchKernel",
                                         "cuStreamSynchronize", "cuMemFree_v2"};
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    fakecuda_calls_fn calls = lib ? (fakecuda_calls_fn)dlsym(lib, "fakecuda_calls") : NULL;
    out[0] = 0;
    for (size_t i = 0; calls && i < sizeof names / sizeof names[0]; i++)
        out[0] += calls(names[i]);
    out[1] = calls ? calls("cuLaunchKernel") : 0;
}

static void worker(int fd, long threads)
{
    uint64_t t[2];
    run_threads(threads);
    totals(t);
    fake_expect_write(NAME, NULL, t[0]);
    if (write(fd, t, sizeof t) != (ssize_t)sizeof t)
        _exit(3);
    _exit(0);
}

/* Forks the workers, runs the parent's own thread, collects totals. */
static int fork_all(long workers, long threads, uint64_t sum[2])
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    for (long w = 0; w < workers; w++) {
        pid_t pid = fork();
        if (pid < 0)
            return -1;
        if (pid == 0) {
            close(fds[0]);
            worker(fds[1], threads);
        }
    }
    close(fds[1]);
    thread_main(NULL);
    int bad = 0;
    for (long w = 0; w < workers; w++) {
        uint64_t t[2];
        if (read(fds[0], t, sizeof t) != (ssize_t)sizeof t)
            bad = 1;
        else
            sum[0] += t[0], sum[1] += t[1];
    }
    for (long w = 0; w < workers; w++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad = 1;
    }
    close(fds[0]);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    long workers = client_arg(argc, argv, 1, 4), threads = client_arg(argc, argv, 2, 2);
    CUdevice dev;
    CUmodule mod;
    uint64_t sum[2] = {0, 0}, mine[2];
    iters = client_arg(argc, argv, 3, 50);
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuModuleLoadData(&mod, "worker_step"));
    CHECK_CU(cuModuleGetFunction(&kernel, mod, "worker_step"));
    fflush(stdout);
    if (fork_all(workers, threads, sum) != 0) {
        fprintf(stderr, "%s: a worker failed\n", NAME);
        return 3;
    }
    totals(mine);
    CHECK_CU(cuModuleUnload(mod));
    printf("processes %ld\ndriver calls %llu\nlaunches %llu\n", workers + 1,
           (unsigned long long)(sum[0] + mine[0]), (unsigned long long)(sum[1] + mine[1]));
    printf("checksum %016llx\n", (unsigned long long)(sum[1] + mine[1]));
    fflush(stdout);
    return fake_expect_write(NAME, NULL, mine[0]) == 0 ? 0 : 3;
}
