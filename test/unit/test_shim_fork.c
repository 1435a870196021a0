/* test_shim_fork.c: a client that forks workers with threads, for
 * cli.shim_fork. The parent initialises the (fake) driver and launches a
 * named kernel, then forks N workers; each runs T threads making copies,
 * launches and syncs, writes its expectation file (FAKECUDA_EXPECT with %p)
 * and leaves with _exit(), as Python's DataLoader workers do. Each process's
 * records must match its own expectation: none lost, none duplicated, names
 * defined again in the child's own ring.
 * Usage: test_shim_fork [workers=64] [threads=4] [iterations=50] */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_client.h"
#include "fakecuda.h"

#define CHECK_CU(call) CLIENT_CHECK("test_shim_fork", call)

static CUfunction kernel;
static int iters;

static void *worker_thread(void *arg)
{
    char host[1024] = {0};
    CUdeviceptr d;
    void *params[] = {NULL};

    CUcontext ctx;

    (void)arg;
    /* a new thread has no current context until it sets one */
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuMemAlloc(&d, sizeof(host)));
    for (int i = 0; i < iters; i++) {
        CHECK_CU(cuMemcpyHtoD(d, host, sizeof(host)));
        CHECK_CU(cuLaunchKernel(kernel, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
        CHECK_CU(cuStreamSynchronize(NULL));
    }
    CHECK_CU(cuMemFree(d));
    return NULL;
}

static void worker(int nthreads)
{
    pthread_t t[64];

    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&t[i], NULL, worker_thread, NULL) != 0)
            _exit(3);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    fflush(stdout);
    _exit(fake_expect_write("test_shim_fork", NULL, 0) ? 3 : 0);
}

static void driver_init(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUlibrary lib;
    CUkernel k;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuLibraryLoadData(&lib, "fork_kernel", NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&k, lib, "fork_kernel"));
    kernel = (CUfunction)k;
}

int main(int argc, char **argv)
{
    int nworkers = (int)client_arg(argc, argv, 1, 64);
    int nthreads = (int)client_arg(argc, argv, 2, 4);
    pid_t pids[1024];
    int bad = 0;

    iters = (int)client_arg(argc, argv, 3, 50);
    if (nworkers > 1024 || nthreads > 64)
        return 2;
    driver_init();
    worker_thread(NULL); /* the parent records (and names the kernel) first */
    for (int w = 0; w < nworkers; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            worker(nthreads);
        if (pids[w] < 0)
            return 3;
    }
    for (int w = 0; w < nworkers; w++) {
        int st;
        if (waitpid(pids[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    worker_thread(NULL);
    printf("workers %d failed %d\n", nworkers, bad);
    if (fake_expect_write("test_shim_fork", NULL, 0))
        return 3;
    return bad ? 1 : 0;
}
