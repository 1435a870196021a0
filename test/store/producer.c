/* producer.c: a stand-in traced program for the collector tests and the
 * store benchmark. Pushes synthetic cs_rec_cuda records through the real
 * ring client (interpose/shim_ring.c) from P forked processes x T threads;
 * record k of a thread has seq k (from 1), so a reader can check that every
 * (pid, tid, seq) landed exactly once.
 *
 *   producer [-p PROCS] [-t THREADS] [-n RECORDS] [-m MODE] [-r PER_MS] [-T SECONDS] [-D]
 *   MODE: exit (return normally, default), _exit (no cleanup at all),
 *         kill (SIGKILL itself), forever (push until killed or -T),
 *         fork (push N, fork a child that pushes N, push N more),
 *         churn (threads one after another: each must reuse the first
 *                segment's sub-rings; exit 4 if a second segment appears)
 *   -D: synthetic durations (the flight recorder's accuracy test): record k
 *         lasts dur_of(k) ns, 1 us to 1 ms, skewed to the short end, and
 *         every fifth is a cuStreamSynchronize; run with CUDASPY_CLOCK=mono
 *         so that the stamps are nanoseconds
 * Exits 5 if a push changed errno.
 *   PER_MS: pace each thread to about this many records per millisecond
 *   SECONDS: every process dies of SIGALRM after this long, whoever forgot
 *         to kill it (0: never; forever mode's default is 120)
 * Prints "produced <records> dropped <drops>" per process to stdout. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cudaspy/api.h"
#include "shim_ring.h"

struct prod_args {
    int procs, threads;
    long n, per_ms;
    const char *mode;
    long limit_s; /* -T; -1: the mode's default */
    int synth;    /* -D */
};

static struct prod_args A = {1, 1, 1000, 0, "exit", -1, 0};

/* -D: a duration that depends only on k. */
static uint64_t dur_of(long k)
{
    uint64_t x = (uint64_t)k * 0x9e3779b97f4a7c15ull;

    x = (x ^ (x >> 29)) % 1000;
    return 1000 + x * x;
}
static pthread_barrier_t done_bar;

static const char kernel_name[] = "test_kernel_with_a_name";
static _Atomic int errno_bad;
static void pace(long pushed, long per_ms, struct timespec *t0);

/* Push records seq first..last from the calling thread. */
static void push_range(long first, long last, int forever, struct timespec *t0)
{
    struct cs_rec_cuda r;

    memset(&r, 0, sizeof(r));
    r.pid = (uint32_t)getpid();
    r.tid = shim_ring_tid();
    r.api = 1;
    r.name_id = 1;
    r.stack_id = 1;
    r.flags = CS_CF_HAS_NAME;
    for (long k = first; forever || k <= last; k++) {
        r.seq = (uint32_t)k;
        r.t_enter_ns = shim_ring_now();
        r.bytes = (uint64_t)k;
        r.t_exit_ns = shim_ring_now();
        if (A.synth) {
            r.t_exit_ns = r.t_enter_ns + dur_of(k);
            r.api = k % 5 ? CS_API_cuLaunchKernel : CS_API_cuStreamSynchronize;
        }
        errno = 4242;
        shim_ring_push_cuda(&r);
        if (errno != 4242)
            errno_bad = 1;
        pace(k, A.per_ms, t0);
    }
}

static void pace(long pushed, long per_ms, struct timespec *t0)
{
    struct timespec now;
    long ms;

    if (per_ms <= 0 || pushed % per_ms)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
    if (pushed / per_ms > ms) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
}

static void *thread_main(void *arg)
{
    struct timespec t0;
    char name[16];

    snprintf(name, sizeof(name), "prod-%ld", (long)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    push_range(1, A.n, strcmp(A.mode, "forever") == 0, &t0);
    if (strcmp(A.mode, "churn") != 0)
        pthread_barrier_wait(&done_bar);
    return NULL;
}

/* Ring segments mapped in this process. */
static int count_segments(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;

    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, "memfd:cudaspy-ring") != NULL;
    if (f)
        fclose(f);
    return n;
}

/* fork mode: the child must register its own ring, never use ours. */
static void fork_main(void)
{
    struct timespec t0;
    pid_t pid;
    int st;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    push_range(1, A.n, 0, &t0);
    pid = fork();
    if (pid == 0) {
        push_range(1, A.n, 0, &t0);
        _exit(errno_bad ? 5 : 0);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        exit(6);
    push_range(A.n + 1, 2 * A.n, 0, &t0);
    exit(errno_bad ? 5 : 0);
}

/* churn mode: threads one after another give their sub-rings back. */
static void churn_main(void)
{
    for (int i = 0; i < A.threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, thread_main, (void *)(intptr_t)i);
        pthread_join(t, NULL);
    }
    exit(errno_bad ? 5 : count_segments() == 1 ? 0 : 4);
}

/* One traced process: define name 1 and stack 1, run the threads. */
static void proc_main(void)
{
    struct cs_frame f[2] = {{0x1234, 1, 0}, {0x5678, 1, 0}};
    pthread_t th[256];

    alarm((unsigned)A.limit_s); /* fork() clears the parent's alarm */
    pthread_barrier_init(&done_bar, NULL, (unsigned)A.threads + 1);
    shim_ring_push_name(1, 0xabc, CS_NAME_KERNEL, kernel_name, strlen(kernel_name));
    shim_ring_push_stack(1, f, 2);
    if (strcmp(A.mode, "fork") == 0)
        fork_main();
    if (strcmp(A.mode, "churn") == 0)
        churn_main();
    for (int i = 0; i < A.threads; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i);
    if (strcmp(A.mode, "forever") == 0)
        for (;;)
            pause();
    pthread_barrier_wait(&done_bar); /* every thread pushed its records */
    printf("produced %ld dropped %llu\n", A.n * A.threads,
           (unsigned long long)shim_ring_dropped());
    fflush(stdout);
    if (strcmp(A.mode, "kill") == 0)
        raise(SIGKILL); /* threads still parked: killed mid-stream */
    if (strcmp(A.mode, "_exit") == 0) {
        for (int i = 0; i < A.threads; i++)
            pthread_detach(th[i]); /* not a leak for TSan: we leave on purpose */
        _exit(0);
    }
    for (int i = 0; i < A.threads; i++)
        pthread_join(th[i], NULL);
    exit(errno_bad ? 5 : 0);
}

int main(int argc, char **argv)
{
    int opt, fail = 0;

    while ((opt = getopt(argc, argv, "p:t:n:m:r:T:D")) != -1) {
        switch (opt) {
        case 'p': A.procs = atoi(optarg); break;
        case 't': A.threads = atoi(optarg); break;
        case 'n': A.n = atol(optarg); break;
        case 'm': A.mode = optarg; break;
        case 'r': A.per_ms = atol(optarg); break;
        case 'T': A.limit_s = atol(optarg); break;
        case 'D': A.synth = 1; break;
        default: return 2;
        }
    }
    if (A.limit_s < 0)
        A.limit_s = strcmp(A.mode, "forever") == 0 ? 120 : 0;
    if (A.threads < 1 || A.threads > 256 || A.procs < 1 || A.limit_s > 86400)
        return 2;
    alarm((unsigned)A.limit_s);
    for (int p = 0; p < A.procs; p++) {
        pid_t pid = fork();
        if (pid == 0)
            proc_main();
        if (pid < 0)
            return 3;
    }
    for (int p = 0; p < A.procs; p++) {
        int st;
        if (wait(&st) < 0 || (WIFEXITED(st) && WEXITSTATUS(st) != 0))
            fail = 1;
    }
    return fail;
}
