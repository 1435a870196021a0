/* fault_client.c: the traced program of the fault.* tests, a fake-driver
 * client (linked -lcuda against test/fake's libcuda.so.1) with three modes:
 *
 *   fault_client loop COUNTFILE [ITERS]
 *       launch + synchronize in a loop (forever when ITERS is 0 or absent);
 *       after each call returns, stores in COUNTFILE (a shared mapping of
 *       struct fault_count) how many loop calls completed and when the last
 *       one returned (CLOCK_MONOTONIC ns), so a test that SIGKILLs it can
 *       tell what the run file should hold. Prints a checksum at the end.
 *   fault_client forkcall
 *       one thread sits inside cuStreamSynchronize (give it latency with
 *       FAKECUDA_LAT_NS) while the main thread forks; the child makes CUDA
 *       calls of its own and exits. Exits 4 if anything hangs for 30 s.
 *   fault_client threads N ITERS
 *       N threads (up to 1000) make ITERS launch + synchronize pairs each;
 *       writes the fake's expectation file (FAKECUDA_EXPECT).
 * Exit 0 on success, 3 on a failed call (one line on stderr). */
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_client.h"
#include "fakecuda.h"
#include "fault_count.h"

#define NAME "fault_client"
#define CHECK_CU(call) CLIENT_CHECK(NAME, call)
#define THREADS_MAX 1000

static CUcontext ctx;
static CUfunction kernel;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void driver_init(void)
{
    CUdevice dev;
    CUmodule mod;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuModuleLoadData(&mod, "fault_step"));
    CHECK_CU(cuModuleGetFunction(&kernel, mod, "fault_step"));
}

static void step(void)
{
    CHECK_CU(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK_CU(cuStreamSynchronize(NULL));
}

static struct fault_count *count_map(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    void *p;

    if (fd < 0 || ftruncate(fd, 0) < 0 || ftruncate(fd, sizeof(struct fault_count)) < 0)
        return NULL;
    p = mmap(NULL, sizeof(struct fault_count), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static int mode_loop(const char *path, long iters)
{
    struct fault_count *c = count_map(path);
    uint64_t sum = CLIENT_FNV_INIT;

    if (c == NULL)
        return 3;
    driver_init();
    c->pid = (uint32_t)getpid();
    __atomic_store_n(&c->is_ready, 1, __ATOMIC_RELEASE);
    for (long i = 0; iters == 0 || i < iters; i++) {
        CHECK_CU(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        c->t_last_ns = now_ns();
        __atomic_store_n(&c->calls, c->calls + 1, __ATOMIC_RELEASE);
        CHECK_CU(cuStreamSynchronize(NULL));
        c->t_last_ns = now_ns();
        __atomic_store_n(&c->calls, c->calls + 1, __ATOMIC_RELEASE);
        sum = client_fnv(sum, &i, sizeof(i));
    }
    printf("calls %llu\nchecksum %016llx\n", (unsigned long long)c->calls,
           (unsigned long long)sum);
    return 0;
}

static void *sync_thread(void *arg)
{
    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuStreamSynchronize(NULL)); /* slow: FAKECUDA_LAT_NS */
    return NULL;
}

static int mode_forkcall(void)
{
    struct timespec pause = {0, 50 * 1000000};
    pthread_t t;
    pid_t pid;
    int st;

    alarm(30); /* a deadlock ends as SIGALRM, not as a hung test */
    driver_init();
    if (pthread_create(&t, NULL, sync_thread, NULL) != 0)
        return 3;
    nanosleep(&pause, NULL); /* the thread is inside the call now */
    pid = fork();
    if (pid == 0) {
        alarm(30);
        CHECK_CU(cuCtxSetCurrent(ctx));
        step();
        _exit(fake_expect_write(NAME, NULL, 0) ? 3 : 0);
    }
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, NAME ": forked child failed (status 0x%x)\n", pid < 0 ? 0 : st);
        return 4;
    }
    pthread_join(t, NULL);
    step();
    printf("forkcall ok\n");
    return fake_expect_write(NAME, NULL, 0) ? 3 : 0;
}

static long thread_iters;

static void *loop_thread(void *arg)
{
    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (long i = 0; i < thread_iters; i++)
        step();
    return NULL;
}

static int mode_threads(long n, long iters)
{
    static pthread_t t[THREADS_MAX];
    pthread_attr_t attr;
    long made = 0;

    if (n > THREADS_MAX)
        return 2;
    thread_iters = iters;
    driver_init();
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (; made < n; made++)
        if (pthread_create(&t[made], &attr, loop_thread, NULL) != 0)
            break;
    for (long i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    printf("threads %ld of %ld\n", made, n);
    if (made != n)
        return 3;
    return fake_expect_write(NAME, NULL, 0) ? 3 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "loop") == 0)
        return mode_loop(argv[2], argc > 3 ? strtol(argv[3], NULL, 10) : 0);
    if (argc >= 2 && strcmp(argv[1], "forkcall") == 0)
        return mode_forkcall();
    if (argc >= 4 && strcmp(argv[1], "threads") == 0)
        return mode_threads(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10));
    fprintf(stderr, "usage: " NAME " loop COUNTFILE [ITERS] | forkcall | threads N ITERS\n");
    return 2;
}
