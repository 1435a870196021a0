/* accuracy_workload.c: the accuracy corpus of issue 30 (docs/accuracy.md):
 * one planted cause per mode on the fake driver's simulated GPU, each with
 * its own meter of what the cause cost, printed as the truth line that
 * scripts/accuracy.py compares with cudaspy-analyze's findings:
 *   cudaspy-truth: {"case":..,"planted":..,"truth_ns":..,"loop_ns":..,...}
 *   accuracy_workload MODE [seconds=2] [variant]
 * Variant "nocause" runs a meter mode's loop without its cause (workers
 * that keep ahead, no host build, one allocation, no spinners, no reads,
 * free launches...): the step time it saves checks the meter.
 * Each mode does its set-up, then runs its steady loop for about `seconds`
 * (A/B modes: a step count derived from `seconds`, the same with and
 * without the cause). Host work is CPU time (CLOCK_THREAD_CPUTIME_ID), not
 * wall time, so that a preempted thread really takes longer. Kernel times
 * are fixed here (FAKECUDA_KERNEL_US is overwritten): the meters that model
 * the GPU's queue (gpu_note) must know them. Modes and meters:
 *   pipe_fork        4 forked workers (16 ms asleep + 2 ms CPU a batch) feed
 *                    batches over pipes; per batch a pinned copy, 4 x 0.5 ms
 *                    kernels, sync. Truth: time blocked reading the pipes
 *   pipe_thread      the same fed by a helper thread through a queue (3.5 ms
 *                    asleep + 1 ms CPU a batch). Truth: time waiting on it
 *   hostdata         a batch built on the CPU in the main thread (3 ms), a
 *                    pinned copy, 2 x 0.5 ms kernels, a sync every 8 steps.
 *                    Truth: time in the build while the GPU's queue is empty
 *   sync_tiny        a 1 ms kernel, cudaStreamSynchronize, a 5 us kernel,
 *                    1 ms on the CPU. Variant `nosync` drops the sync (A/B)
 *   pageable         0.3 ms on the CPU, a 4 MiB copy from malloc'ed memory
 *                    (2 GB/s, blocks the host), 2 x 1 ms kernels, a sync
 *                    every 8 steps. Variant `pinned` copies from
 *                    cudaMallocHost memory (20 GB/s, asynchronous): the GPU
 *                    bounds it, whatever load slows the host (A/B)
 *   churn            cudaMalloc (2 ms) + 3 x 0.3 ms kernels + sync +
 *                    cudaFree (1 ms). Truth: time inside cudaMalloc/cudaFree
 *   contention_tree  4 x CPUs + 2 forked spinners (each its own session)
 *                    preempt the main thread's 2 ms of CPU a step (then
 *                    3 x 0.3 ms kernels, sync). Truth: the main thread's
 *                    run-queue delay (/proc/thread-self/schedstat), the
 *                    spinners' share of it (by CPU time, against the box's)
 *   contention_external  the same loop without spinners: the scorer starts
 *                    hogs outside the tree. Truth: the same run-queue delay
 *   launch_bound     steps of 600 kernels of 2, 3 or 5 us, each launch taking
 *                    6 us on the CPU (FAKECUDA_LAT_NS) plus 1 us of pacing, a
 *                    sync a step. Truth: loop time minus the kernels' time
 *   backward_thread  the main thread launches a 1 ms forward kernel and
 *                    hands the step to a "backward" thread (autograd's
 *                    device thread) that runs 4 x (1.5 ms CPU, 0.3 ms
 *                    kernel), syncs and wakes it. Truth: that thread's CPU
 *                    stretches while the GPU's queue is empty (host_bound)
 *   epoch_workers    10 epochs; each forks 4 workers that first build a
 *                    table (50 ms of CPU each), then send batches at once;
 *                    per batch a copy, 2 x 1 ms kernels, sync. Truth: time
 *                    from each epoch's start to its first batch, plus the
 *                    waits for the other 3 workers' first batches
 *   dstate           2 x 1 MiB O_DIRECT reads of a 64 MiB file (D state),
 *                    then a 1 ms kernel and a sync. Truth: time blocked in
 *                    the reads (less their time on a CPU and in the run queue)
 *   setup_heavy      ~1 s of set-up (a 256 MiB table, 0.5 s of CPU, 30
 *                    synced 8 MiB parameter copies) then a GPU-bound loop.
 *                    Truth: setup_ns
 *   healthy          4 x 5 ms kernels and a 1 MiB pinned copy a step, sync
 *   two_causes       pipe_fork's workers (slower) feeding pageable copies
 *                    (4 MiB, 2 GB/s). Truths: the pipe wait, and the time
 *                    the pageable copies held the host beyond a pinned copy
 *   retries          a caching allocator near capacity: each step's cudaMalloc
 *                    fails out of memory, the cached block is freed (cudaFree,
 *                    1.5 ms, synchronises) and the allocation retried (1 ms),
 *                    then 3 x 1 ms kernels, sync. Truth: the episodes
 *   oom              steps of 2 x 1 ms kernels with 96 MiB held, then a
 *                    512 MiB cudaMalloc on a 256 MiB device; the program
 *                    prints its truth and _exits (variant abort: aborts)
 *   vmm              expandable segments: 32-63 physical 2 MiB pages mapped a
 *                    step (cuMemCreate/cuMemMap), 2 x 1 ms kernels, sync, all
 *                    but 4 unmapped and released; beside them 8 MiB that a
 *                    library on its own static runtime holds through the
 *                    driver (cuMemAlloc_v2). Truth: none; peak_bytes, lib_bytes
 *   many             2000 allocations, a third freed, 500 more, all freed
 *                    from the last. Truth: none; peak_bytes
 *   graphs           a step's work (a 1 MiB pinned copy, 6 kernels: 9.05 ms on
 *                    the GPU) run eagerly for 20 steps, then captured (1 ms)
 *                    and instantiated (100 ms of CPU: FAKECUDA_LAT_NS) once,
 *                    replayed and synced every step, each step an NVTX range
 *                    "step"; healthy. Prints the graph's nodes and times
 *   recapture        each step the code runs eagerly (9.05 ms), is captured
 *                    anew (1 ms of tracing), instantiated (3 ms, slept:
 *                    FAKECUDA_LAT_NS, so that outside CPU load cannot outgrow
 *                    it) and replayed, as torch.compile does for a new input
 *                    shape. Truth: capture begin to instantiated
 *   hog              spin on one CPU for `seconds` (no CUDA): outside load
 * Every meter leaves out the run-queue delay inside what it times (struct
 * span): an exclusive account gives that slice to CPU contention.
 * setup_ns runs from the first CUDA call to the loop; gpu_ns sums the
 * simulated time of the kernels and copies the loop queued; runq_ns is the
 * main thread's run-queue delay in the loop (what the box's other load took
 * from it, in cases that plant no contention), setup_runq_ns in the set-up. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECT, O_TMPFILE */
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "fake_client.h"
#include "fakecuda.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NAME "accuracy_workload"
#define CHECK_RT(call) CLIENT_CHECK(NAME, call)
#define KIB 1024u
#define MIB (1024u * 1024u)
#define MAX_WORKERS 64
#define PAGEABLE_GBPS "2"

/* ---- kernels: one table for every mode, so the meters know their times ---- */

enum kern { K_LONG, K_MS, K_HALF, K_SMALL, K_BWD, K_TINY, K_T2, K_T3, K_T5, K_N };
static void k_long(void) {}
static void k_ms(void) {}
static void k_half(void) {}
static void k_small(void) {}
static void k_bwd(void) {}
static void k_tiny(void) {}
static void k_t2(void) {}
static void k_t3(void) {}
static void k_t5(void) {}
static const struct {
    void (*fn)(void);
    const char *name;
    uint64_t us;
} kernels[K_N] = {
    {k_long, "k_long", 5000}, {k_ms, "k_ms", 1000},   {k_half, "k_half", 500},
    {k_small, "k_small", 300}, {k_bwd, "k_bwd", 300}, {k_tiny, "k_tiny", 5},
    {k_t2, "k_t2", 2},         {k_t3, "k_t3", 3},     {k_t5, "k_t5", 5},
};

/* ---- one run's state and truth ---- */

struct acc {
    const char *mode, *planted;
    const char *variant; /* argv[3] or "" */
    double secs;
    long nsteps;         /* A/B modes: a fixed step count; else 0 (timed) */
    long steps;
    uint64_t t_cuda_ns;  /* first CUDA call */
    uint64_t rq_cuda_ns; /* run-queue delay then */
    uint64_t t_loop0_ns, t_loop1_ns;
    uint64_t truth_ns, truth2_ns; /* two_causes: truth2 is pageable_memcpy's */
    uint64_t wait_ns;    /* epoch_workers: every wait for a batch, a cross-check */
    uint64_t meter_ns;   /* A/B modes: the in-process estimate, a cross-check */
    uint64_t rq0_ns;     /* run-queue delay at the loop's start */
    uint64_t runq_ns;    /* the main thread's run-queue delay in the loop */
    double tree_share;   /* contention_tree: the spinners' share of runq_ns */
    uint64_t oom_bytes, held_bytes; /* oom: the size asked, what the process held */
    uint64_t peak_bytes; /* vmm, many: the most device memory held */
    uint64_t lib_bytes;  /* vmm: of it, what the library held (cuMemAlloc_v2) */
    long episodes;       /* retries: failed-then-retried allocations */
};

static cudaStream_t stream;
/* Variant "nocause": the same loop without its planted cause, to check a
 * meter against the step time it costs (docs/accuracy.md). */
static int is_nocause;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* @p us microseconds of this thread's CPU time: work, which a thread that
 * other threads preempt takes longer to finish. */
static void cpu_work_us(double us)
{
    uint64_t end = cpu_ns() + (uint64_t)(us * 1e3);
    volatile uint64_t x = 1;
    while (cpu_ns() < end)
        for (int i = 0; i < 256; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The calling thread's time on a CPU (@p run) and its run-queue delay so
 * far (schedstat's first two fields). The file stays open per thread; a
 * pread at 0 reads it afresh. @return the delay */
static uint64_t schedstat_ns(uint64_t *run)
{
    static _Thread_local int fd = -1;
    char buf[128];
    unsigned long long r = 0, delay = 0;
    ssize_t n;
    if (fd < 0)
        fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || (n = pread(fd, buf, sizeof buf - 1, 0)) <= 0 ||
        (buf[n] = 0, sscanf(buf, "%llu %llu", &r, &delay)) != 2) {
        fprintf(stderr, "%s: /proc/thread-self/schedstat: cannot read\n", NAME);
        exit(3);
    }
    if (run)
        *run = r;
    return delay;
}

static uint64_t runq_delay_ns(void)
{
    return schedstat_ns(NULL);
}

/* A stretch of the calling thread's time. The meters count its wall time
 * less the run-queue delay in it: waiting for a CPU that other threads
 * hold is CPU contention's share of the time, whatever the thread was
 * about to do. */
struct span {
    uint64_t t0_ns, t1_ns;
    uint64_t rq0_ns, rq_ns; /* run-queue delay at t0; in the span */
};

static struct span span_begin(void)
{
    struct span s = {.rq0_ns = runq_delay_ns()};
    s.t0_ns = now_ns();
    return s;
}

/* Ends @p s; returns its wall time less its run-queue delay. */
static uint64_t span_end(struct span *s)
{
    s->t1_ns = now_ns();
    s->rq_ns = runq_delay_ns() - s->rq0_ns;
    return s->t1_ns - s->t0_ns > s->rq_ns ? s->t1_ns - s->t0_ns - s->rq_ns : 0;
}

/* The part of span @p s the GPU had nothing queued, less that part's share
 * of the run-queue delay (spread evenly over the span). */
static uint64_t span_idle(const struct span *s, uint64_t idle_ns)
{
    uint64_t wall = s->t1_ns - s->t0_ns;
    return wall && s->rq_ns < wall ? (uint64_t)((double)idle_ns * (double)(wall - s->rq_ns) / wall)
                                   : 0;
}

static void loop_begin(struct acc *a)
{
    a->rq0_ns = runq_delay_ns();
    a->t_loop0_ns = now_ns();
}

static void loop_end(struct acc *a)
{
    a->t_loop1_ns = now_ns();
    a->runq_ns = runq_delay_ns() - a->rq0_ns;
}

/* Steps left: a fixed count for A/B modes, else until `secs` have passed. */
static int loop_more(const struct acc *a)
{
    if (a->nsteps > 0)
        return a->steps < a->nsteps;
    return now_ns() < a->t_loop0_ns + (uint64_t)(a->secs * 1e9);
}

/* ---- the simulated GPU's queue, as the fake keeps it (fake_stream.c):
 * work starts when it is queued or when the work before it ends. One
 * stream; the threads that queue on it take turns. ---- */

static uint64_t gpu_until_ns, gpu_busy_ns;

static void gpu_note(uint64_t t_ns, uint64_t dur_ns)
{
    uint64_t start = t_ns > gpu_until_ns ? t_ns : gpu_until_ns;
    gpu_until_ns = start + dur_ns;
    gpu_busy_ns += dur_ns;
}

/* The part of [t0, t1] when nothing was queued on the GPU. */
static uint64_t gpu_idle_in(uint64_t t0, uint64_t t1)
{
    uint64_t from = t0 > gpu_until_ns ? t0 : gpu_until_ns;
    return t1 > from ? t1 - from : 0;
}

static void launch(enum kern k, int n)
{
    static void *arg;
    void *args[] = {&arg};
    dim3 grid = {64, 1, 1}, block = {128, 1, 1};
    for (int i = 0; i < n; i++) {
        uint64_t t = now_ns();
        CHECK_RT(cudaLaunchKernel((const void *)kernels[k].fn, grid, block, args, 0, stream));
        gpu_note(t, kernels[k].us * 1000u);
    }
}

static double env_gbps(const char *name, double dflt)
{
    const char *v = getenv(name);
    return v && atof(v) > 0 ? atof(v) : dflt;
}

static uint64_t copy_ns(size_t bytes, int is_pinned)
{
    double gbps = is_pinned ? env_gbps("FAKECUDA_PINNED_GBPS", 20)
                            : env_gbps("FAKECUDA_PAGEABLE_GBPS", 10);
    return (uint64_t)((double)bytes / gbps);
}

/* An HtoD copy. Pageable: the fake copies the bytes first (on the CPU),
 * then queues the transfer and sleeps until it is done. Pinned: it only
 * queues the transfer (the bytes move later, off this call: fake_queue.c). */
static void copy_h2d(void *d, const void *h, size_t bytes, int is_pinned)
{
    CHECK_RT(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
    uint64_t t1 = now_ns();
    gpu_note(is_pinned ? t1 : t1 - copy_ns(bytes, 0), copy_ns(bytes, is_pinned));
}

/* copy_h2d, returning how long the call held the host: its wall time less
 * its run-queue delay (other threads' CPU time). *cpu (if not NULL) gets
 * its CPU time (a pageable copy's memmove). */
static uint64_t copy_h2d_held(void *d, const void *h, size_t bytes, int is_pinned, uint64_t *cpu)
{
    uint64_t rq = runq_delay_ns(), c = cpu_ns(), t = now_ns();
    copy_h2d(d, h, bytes, is_pinned);
    uint64_t rq_ns = runq_delay_ns() - rq, wall = now_ns() - t;
    if (cpu)
        *cpu = cpu_ns() - c;
    return wall > rq_ns ? wall - rq_ns : 0;
}

/* copy_h2d, returning how long the call slept: the time it held the host
 * less its CPU time. */
static uint64_t copy_h2d_asleep(void *d, const void *h, size_t bytes, int is_pinned)
{
    uint64_t cpu, held = copy_h2d_held(d, h, bytes, is_pinned, &cpu);
    return held > cpu ? held - cpu : 0;
}

static void sync_stream(void)
{
    CHECK_RT(cudaStreamSynchronize(stream));
}

static void *host_alloc(size_t bytes, int is_pinned)
{
    void *h = NULL;
    if (is_pinned)
        CHECK_RT(cudaMallocHost(&h, bytes));
    else if ((h = malloc(bytes)) == NULL)
        CHECK_RT(cudaErrorMemoryAllocation);
    memset(h, 1, bytes);
    return h;
}

static void host_free(void *h, int is_pinned)
{
    if (is_pinned)
        CHECK_RT(cudaFreeHost(h));
    else
        free(h);
}

static void *dev_alloc(size_t bytes)
{
    void *d = NULL;
    CHECK_RT(cudaMalloc(&d, bytes));
    CHECK_RT(cudaMemset(d, 0, bytes)); /* first-touch faults out of the loop */
    sync_stream();
    return d;
}

/* ---- forked workers ---- */

static pid_t workers[MAX_WORKERS];
static int nworkers;

static void workers_kill(void)
{
    for (int i = 0; i < nworkers; i++)
        kill(workers[i], SIGKILL);
}

static void workers_reap(void)
{
    for (int i = 0; i < nworkers; i++) {
        int st;
        while (waitpid(workers[i], &st, 0) < 0 && errno == EINTR)
            ;
    }
    nworkers = 0;
}

/* fork(); the child dies with the main process and never returns to main. */
static pid_t fork_worker(void)
{
    pid_t pid = nworkers < MAX_WORKERS ? fork() : -1;
    if (pid < 0)
        CHECK_RT(cudaErrorUnknown);
    if (pid > 0)
        workers[nworkers++] = pid;
    else
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    return pid;
}

/* Reads n bytes; returns how long it waited (the blocked read and all,
 * less its run-queue delay: span_end). */
static uint64_t read_all(int fd, void *p, size_t n)
{
    struct span s = span_begin();
    for (char *c = p; n > 0;) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            CHECK_RT(cudaErrorUnknown);
        c += r;
        n -= (size_t)r;
    }
    return span_end(&s);
}

/* A data worker: per batch, sleep_us asleep ("reading storage") and cpu_us
 * on the CPU ("decoding"), then the batch down the pipe, until the reader
 * is gone. */
static void pipe_worker(int fd, size_t bytes, long sleep, double cpu)
{
    unsigned char *b = malloc(bytes);
    if (b == NULL)
        _exit(3);
    for (uint64_t i = 0;; i++) {
        sleep_us(sleep);
        cpu_work_us(cpu);
        memset(b, (int)(i & 0xff), bytes);
        if (client_write_all(fd, b, bytes) != 0)
            _exit(0);
    }
}

/* Starts n pipe_workers; their read ends go to fds. */
static void pipe_workers_start(int *fds, int n, size_t bytes, long sleep, double cpu)
{
    for (int w = 0; w < n; w++) {
        int p[2];
        if (pipe(p) != 0)
            CHECK_RT(cudaErrorUnknown);
        if (fork_worker() == 0) {
            close(p[0]);
            pipe_worker(p[1], bytes, sleep, cpu);
        }
        close(p[1]);
        fds[w] = p[0];
    }
}

static void pipe_workers_stop(int *fds, int n)
{
    for (int w = 0; w < n; w++)
        close(fds[w]);
    workers_kill();
    workers_reap();
}

/* ---- modes ---- */

static void run_pipe_fork(struct acc *a)
{
    const size_t bytes = 64 * KIB;
    int fds[4];
    void *h = host_alloc(bytes, 1), *d = dev_alloc(bytes);
    pipe_workers_start(fds, 4, bytes, is_nocause ? 0 : 16000, is_nocause ? 0 : 2000);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        a->truth_ns += read_all(fds[a->steps % 4], h, bytes);
        copy_h2d(d, h, bytes, 1);
        launch(K_HALF, 4);
        sync_stream();
    }
    loop_end(a);
    pipe_workers_stop(fds, 4);
    CHECK_RT(cudaFree(d));
    host_free(h, 1);
}

/* pipe_thread's queue: a helper thread produces batch buffers into a ring
 * of QDEPTH; the main thread consumes them. */
#define QDEPTH 2
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *buf[QDEPTH];
    long head, tail; /* produced, consumed */
    int is_done;
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *producer(void *arg)
{
    size_t bytes = *(size_t *)arg;
    for (long i = 0;; i++) {
        if (!is_nocause) {
            sleep_us(3500);
            cpu_work_us(1000);
        }
        pthread_mutex_lock(&q.mu);
        while (q.head - q.tail == QDEPTH && !q.is_done)
            pthread_cond_wait(&q.cv, &q.mu);
        if (q.is_done) {
            pthread_mutex_unlock(&q.mu);
            return NULL;
        }
        memset(q.buf[q.head % QDEPTH], (int)(i & 0xff), bytes);
        q.head++;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
    }
}

/* Copies the next batch to h; returns how long it waited for it. */
static uint64_t queue_pop(void *h, size_t bytes)
{
    struct span s = span_begin();
    pthread_mutex_lock(&q.mu);
    while (q.head == q.tail)
        pthread_cond_wait(&q.cv, &q.mu);
    uint64_t waited = span_end(&s);
    memcpy(h, q.buf[q.tail % QDEPTH], bytes);
    q.tail++;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    return waited;
}

static void run_pipe_thread(struct acc *a)
{
    static size_t bytes = 64 * KIB;
    pthread_t th;
    void *h = host_alloc(bytes, 1), *d = dev_alloc(bytes);
    for (int i = 0; i < QDEPTH; i++)
        q.buf[i] = host_alloc(bytes, 0);
    if (pthread_create(&th, NULL, producer, &bytes) != 0)
        CHECK_RT(cudaErrorUnknown);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        a->truth_ns += queue_pop(h, bytes);
        copy_h2d(d, h, bytes, 1);
        launch(K_HALF, 4);
        sync_stream();
    }
    loop_end(a);
    pthread_mutex_lock(&q.mu);
    q.is_done = 1;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    pthread_join(th, NULL);
    for (int i = 0; i < QDEPTH; i++)
        free(q.buf[i]);
    CHECK_RT(cudaFree(d));
    host_free(h, 1);
}

/* hostdata's batch: decoded and augmented on the CPU into fresh pages,
 * then staged in pinned memory. Returns the time it ran while the GPU had
 * nothing queued. */
static uint64_t build_batch(void *staging, size_t bytes, long step)
{
    struct span s = span_begin();
    unsigned char *b = malloc(bytes);
    if (b == NULL)
        CHECK_RT(cudaErrorMemoryAllocation);
    memset(b, (int)(step & 0xff), bytes);
    cpu_work_us(is_nocause ? 0 : 3000);
    memcpy(staging, b, bytes);
    free(b);
    span_end(&s);
    return span_idle(&s, gpu_idle_in(s.t0_ns, s.t1_ns));
}

static void run_hostdata(struct acc *a)
{
    const size_t bytes = 512 * KIB;
    void *h = host_alloc(bytes, 1), *d = dev_alloc(bytes);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        a->truth_ns += build_batch(h, bytes, a->steps);
        /* one staging buffer: the fake copies at enqueue (real code would
         * double-buffer it) */
        copy_h2d(d, h, bytes, 1);
        launch(K_HALF, 2);
        if (a->steps % 8 == 7)
            sync_stream();
    }
    sync_stream();
    loop_end(a);
    CHECK_RT(cudaFree(d));
    host_free(h, 1);
}

/* A/B: a->variant "nosync" drops the sync that serialises the host's 1 ms
 * with the 1 ms kernel. meter_ns: time in the sync. */
static void run_sync_tiny(struct acc *a)
{
    int is_sync = strcmp(a->variant, "nosync") != 0;
    a->nsteps = (long)(a->secs * 1000.0 / 2.0);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        launch(K_MS, 1);
        if (is_sync) {
            uint64_t t = now_ns();
            sync_stream(); /* loss.item() */
            a->meter_ns += now_ns() - t;
        }
        launch(K_TINY, 1); /* acc += loss, on the GPU */
        cpu_work_us(1000);
    }
    sync_stream();
    loop_end(a);
}

/* A/B: a->variant "pinned" copies from cudaMallocHost memory, which the
 * GPU copies while the host prepares the next batch; pageable memory holds
 * the host until the copy is done. meter_ns: the time the copies held the
 * host asleep (what the lost overlap costs is the A/B's to say). */
static void run_pageable(struct acc *a)
{
    const size_t bytes = 4 * MIB;
    int is_pinned = strcmp(a->variant, "pinned") == 0;
    void *d = dev_alloc(bytes);
    unsigned char *h = host_alloc(bytes, is_pinned);
    a->nsteps = (long)(a->secs * 1000.0 / 4.2);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        cpu_work_us(300);
        memset(h, (int)(a->steps & 0xff), bytes / 4); /* collate */
        a->meter_ns += copy_h2d_asleep(d, h, bytes, is_pinned);
        launch(K_MS, 2);
        if (a->steps % 8 == 7)
            sync_stream();
    }
    sync_stream();
    loop_end(a);
    host_free(h, is_pinned);
    CHECK_RT(cudaFree(d));
}

/* nocause: one allocation kept for the loop, as a caching allocator does. */
static void run_churn(struct acc *a)
{
    void *d = NULL;
    if (is_nocause)
        CHECK_RT(cudaMalloc(&d, 64 * MIB));
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        struct span s = span_begin();
        if (!is_nocause)
            CHECK_RT(cudaMalloc(&d, 64 * MIB));
        a->truth_ns += span_end(&s);
        launch(K_SMALL, 3);
        sync_stream(); /* as cudaFree does on a real driver */
        s = span_begin();
        if (!is_nocause)
            CHECK_RT(cudaFree(d));
        a->truth_ns += span_end(&s);
    }
    loop_end(a);
    if (is_nocause)
        CHECK_RT(cudaFree(d));
}

/* PyTorch's caching allocator near the device's capacity (issue 31): each
 * step needs a block the cache cannot serve (sizes alternate) and the
 * device cannot fit beside the block the cache holds, so cudaMalloc fails
 * out of memory; the allocator frees its cached block (cudaFree
 * synchronises the device) and tries again. The new block stays cached.
 * Truth: the episodes, from the failed cudaMalloc to the retry's return.
 * nocause: a device large enough, so both sizes stay cached and reused.
 * twice: PyTorch's two stages: the cache also holds an 8 MiB block, which
 * alone is freed first (release_available_cached_blocks) and the retry
 * fails again; then the big block (release_cached_blocks), and the second
 * retry succeeds. A fresh 8 MiB block is allocated after each step.
 * queued: 2 x 1 ms kernels are queued before the allocation, as in a
 * forward pass: the first free's sync waits for them, and only the
 * episode's time with nothing queued on the GPU is the truth. */
static void run_retries(struct acc *a)
{
    void *weights = dev_alloc(64 * MIB), *cache[2] = {NULL, NULL}, *small = NULL;
    int is_twice = strcmp(a->variant, "twice") == 0, is_queued = strcmp(a->variant, "queued") == 0;
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        size_t want = (a->steps % 2 ? 136 : 128) * MIB;
        void **mine = &cache[a->steps % 2], **other = &cache[1 - a->steps % 2];
        if (is_queued)
            launch(K_MS, 2);
        struct span s = span_begin();
        cudaError_t rc = *mine ? cudaSuccess : cudaMalloc(mine, want);
        if (rc == cudaErrorMemoryAllocation && small) {
            (void)cudaGetLastError();
            CHECK_RT(cudaFree(small));
            small = NULL;
            rc = cudaMalloc(mine, want);
        }
        if (rc == cudaErrorMemoryAllocation && *other) {
            (void)cudaGetLastError(); /* as PyTorch clears the error before retrying */
            CHECK_RT(cudaFree(*other));
            *other = NULL;
            rc = cudaMalloc(mine, want);
            uint64_t whole = span_end(&s);
            a->truth_ns += is_queued ? span_idle(&s, gpu_idle_in(s.t0_ns, s.t1_ns)) : whole;
            a->episodes++;
        }
        CHECK_RT(rc);
        if (is_twice && small == NULL)
            CHECK_RT(cudaMalloc(&small, 8 * MIB));
        launch(K_MS, is_queued ? 1 : 3);
        sync_stream();
    }
    loop_end(a);
    for (int i = 0; i < 2; i++)
        if (cache[i])
            CHECK_RT(cudaFree(cache[i]));
    if (small)
        CHECK_RT(cudaFree(small));
    CHECK_RT(cudaFree(weights));
}

/* PyTorch's expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True):
 * one reserved range that grows by 2 MiB physical pages (cuMemCreate,
 * cuMemMap, cuMemSetAccess) and shrinks again (cuMemUnmap, cuMemRelease),
 * the driver reached through cudaGetDriverEntryPointByVersion as PyTorch
 * reaches it. Step k maps 32 + k % 32 pages, runs 2 x 1 ms kernels, syncs
 * and gives back all but 4. Truth: 0 ns (healthy); peak_bytes, the most
 * physical memory held, which the report's peak must equal. */
#define VMM_PAGE (2 * MIB)
#define VMM_PAGES 64
struct vmm_api {
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*addr_free)(CUdeviceptr, size_t);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                    unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
};

#define VMM_LIB_BYTES (8 * MIB) /* a library's own device memory (run_vmm) */

static void vmm_get(const char *name, void **fn)
{
    enum cudaDriverEntryPointQueryResult st;
    CHECK_RT(cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &st));
    if (*fn == NULL || st != cudaDriverEntryPointSuccess)
        CHECK_RT(cudaErrorSymbolNotFound);
}

#define CHECK_CU(call) CHECK_RT((cudaError_t)(call))

static void run_vmm(struct acc *a)
{
    struct vmm_api v;
    CUmemGenericAllocationHandle h[VMM_PAGES];
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUdeviceptr va, lib;
    int mapped = 0;
    vmm_get("cuMemAddressReserve", (void **)&v.reserve);
    vmm_get("cuMemAddressFree", (void **)&v.addr_free);
    vmm_get("cuMemCreate", (void **)&v.create);
    vmm_get("cuMemRelease", (void **)&v.release);
    vmm_get("cuMemMap", (void **)&v.map);
    vmm_get("cuMemUnmap", (void **)&v.unmap);
    vmm_get("cuMemSetAccess", (void **)&v.access);
    vmm_get("cuMemAlloc", (void **)&v.alloc); /* cuMemAlloc_v2 at version 12000 */
    vmm_get("cuMemFree", (void **)&v.free);
    CHECK_CU(v.reserve(&va, VMM_PAGES * VMM_PAGE, 0, 0, 0));
    CHECK_CU(v.alloc(&lib, VMM_LIB_BYTES));
    a->lib_bytes = VMM_LIB_BYTES;
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        for (int want = 32 + (int)(a->steps % 32); mapped < want; mapped++) {
            CUdeviceptr at = va + (CUdeviceptr)mapped * VMM_PAGE;
            CHECK_CU(v.create(&h[mapped], VMM_PAGE, &prop, 0));
            CHECK_CU(v.map(at, VMM_PAGE, 0, h[mapped], 0));
            CHECK_CU(v.access(at, VMM_PAGE, &acc, 1));
        }
        a->peak_bytes = (uint64_t)mapped * VMM_PAGE + VMM_LIB_BYTES > a->peak_bytes
                            ? (uint64_t)mapped * VMM_PAGE + VMM_LIB_BYTES : a->peak_bytes;
        launch(K_MS, 2);
        sync_stream();
        for (; mapped > 4; mapped--) {
            CHECK_CU(v.unmap(va + (CUdeviceptr)(mapped - 1) * VMM_PAGE, VMM_PAGE));
            CHECK_CU(v.release(h[mapped - 1]));
        }
    }
    loop_end(a);
    for (; mapped > 0; mapped--) {
        CHECK_CU(v.unmap(va + (CUdeviceptr)(mapped - 1) * VMM_PAGE, VMM_PAGE));
        CHECK_CU(v.release(h[mapped - 1]));
    }
    CHECK_CU(v.addr_free(va, VMM_PAGES * VMM_PAGE));
    CHECK_CU(v.free(lib));
}

/* Many live allocations freed out of order (issue 31): 2000 cudaMalloc of
 * 4 KiB + 256 B x i, every third freed, 500 more, then all freed from the
 * last; a kernel and a sync between the rounds. Truth: 0 ns; peak_bytes,
 * what the workload held at most, which the report's peak must equal
 * (every free found by its pointer, however the replay's table collides). */
#define MANY 2500
static void run_many(struct acc *a)
{
    static void *p[MANY];
    uint64_t held = 0;
    size_t sz[MANY];
    int n = 0;
    loop_begin(a);
    for (; n < 2000; n++) {
        sz[n] = 4 * KIB + 256 * (size_t)n;
        CHECK_RT(cudaMalloc(&p[n], sz[n]));
        held += sz[n];
    }
    a->peak_bytes = held;
    for (int i = 0; i < n; i += 3) {
        CHECK_RT(cudaFree(p[i]));
        p[i] = NULL;
        held -= sz[i];
    }
    launch(K_MS, 1);
    sync_stream();
    for (; n < MANY; n++) {
        sz[n] = 4 * KIB + 256 * (size_t)n;
        CHECK_RT(cudaMalloc(&p[n], sz[n]));
        held += sz[n];
        a->peak_bytes = held > a->peak_bytes ? held : a->peak_bytes;
    }
    while (n-- > 0)
        if (p[n])
            CHECK_RT(cudaFree(p[n]));
    a->steps = 1;
    loop_end(a);
}

/* A program that dies of out-of-memory (issue 31): steps of a kernel and a
 * sync with 96 MiB held, then one cudaMalloc of 512 MiB on a 256 MiB
 * device (FAKECUDA_MEM_LIMIT). It prints its truth line and leaves at once
 * with _exit (variant "abort": abort()), as a Python program that
 * torch.cuda.OutOfMemoryError ends does, without freeing anything.
 * Truth: 0 ns (the finding is HIGH whatever its impact); oom_bytes the
 * size asked, held_bytes what the process held. */
static void run_oom(struct acc *a)
{
    void *weights = dev_alloc(96 * MIB), *big = NULL;
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        launch(K_MS, 2);
        sync_stream();
    }
    loop_end(a);
    if (cudaMalloc(&big, 512 * MIB) != cudaErrorMemoryAllocation) {
        fprintf(stderr, "%s: oom: cudaMalloc of 512 MiB did not fail\n", NAME);
        exit(3);
    }
    (void)weights;
    a->oom_bytes = 512 * MIB;
    a->held_bytes = 96 * MIB;
}

/* The CPU-contention loop: 2 ms of CPU work, 3 short kernels, sync.
 * Truth: the main thread's run-queue delay over the loop. */
static void cpu_steps(struct acc *a)
{
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        cpu_work_us(2000);
        launch(K_SMALL, 3);
        sync_stream();
    }
    loop_end(a);
    a->truth_ns = a->runq_ns;
}

/* The nice value of this process's autogroup, or 0 without autogroups. */
static int autogroup_nice(void)
{
    int nice = 0;
    FILE *f = fopen("/proc/self/autogroup", "r");
    if (f != NULL) {
        if (fscanf(f, "%*s nice %d", &nice) != 1)
            nice = 0;
        fclose(f);
    }
    return nice;
}

/* A spinner in a session of its own, whose autogroup gets the main
 * process's weight (the scorer may have raised it: shield.sh). With
 * autogroup scheduling each session gets a CPU share, so the main process
 * loses CPU to its spinners more than to the box's other sessions. */
static void spinner(int nice)
{
    FILE *f;
    setsid();
    if (nice != 0 && (f = fopen("/proc/self/autogroup", "w")) != NULL) {
        fprintf(f, "%d\n", nice);
        fclose(f);
    }
    for (;;) /* SIGKILLed by the parent */
        cpu_work_us(1000);
}

/* CPU time the forked workers have had (their schedstat's first field). */
static uint64_t workers_cpu_ns(void)
{
    uint64_t sum = 0;
    for (int i = 0; i < nworkers; i++) {
        char path[64];
        unsigned long long run = 0;
        FILE *f;
        snprintf(path, sizeof path, "/proc/%d/schedstat", (int)workers[i]);
        if ((f = fopen(path, "r")) != NULL) {
            if (fscanf(f, "%llu", &run) == 1)
                sum += run;
            fclose(f);
        }
    }
    return sum;
}

/* The spinners keep every CPU busy, so while the main thread waits for
 * one, the CPUs are the spinners' or the box's other load's. The truth is
 * the spinners' share of its run-queue delay, in proportion to the CPU
 * time each side had in the loop (the other side's: what the CPUs gave
 * that neither the spinners nor the main thread took). tree_share_pct
 * says how much of the delay that is: ~100 on a quiet box. */
static void run_contention_tree(struct acc *a)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN), n = is_nocause ? 0 : 4 * ncpu + 2;
    int nice = autogroup_nice();
    for (long w = 0; w < n && w < MAX_WORKERS; w++)
        if (fork_worker() == 0)
            spinner(nice);
    uint64_t spin0 = workers_cpu_ns(), own0 = cpu_ns();
    cpu_steps(a);
    double spin = (double)(workers_cpu_ns() - spin0), own = (double)(cpu_ns() - own0);
    double others = (double)ncpu * (double)(a->t_loop1_ns - a->t_loop0_ns) - own;
    a->tree_share = n == 0 ? 0 : others > spin ? spin / others : 1;
    a->truth_ns = (uint64_t)((double)a->runq_ns * a->tree_share);
    workers_kill();
    workers_reap();
}

static void run_contention_external(struct acc *a)
{
    cpu_steps(a);
}

/* Launch cost: FAKECUDA_LAT_NS makes each cuLaunchKernel spin 6 us, more
 * than the 2-5 us kernels run; the GPU idles between them. The GPU's busy
 * time is the kernels' sum (they never overlap), so truth = loop - gpu,
 * less the run-queue delay (the GPU idles then too, for contention). */
static void run_launch_bound(struct acc *a)
{
    static const enum kern cycle[] = {K_T2, K_T3, K_T5};
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        for (int i = 0; i < 600; i++) {
            launch(cycle[i % 3], 1);
            cpu_work_us(is_nocause ? 0 : 1); /* the framework's dispatch between ops */
        }
        sync_stream();
    }
    loop_end(a);
    uint64_t idle = (a->t_loop1_ns - a->t_loop0_ns) - gpu_busy_ns;
    a->truth_ns = idle > a->runq_ns ? idle - a->runq_ns : 0;
}

/* backward_thread: the main thread hands each step's backward pass to this
 * thread and sleeps until it is done, as autograd's engine does. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long todo, done;
    int is_exit;
    uint64_t idle_ns; /* its CPU stretches while the GPU had nothing queued */
} bw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void backward_pass(void)
{
    for (int i = 0; i < 4; i++) {
        struct span s = span_begin();
        cpu_work_us(is_nocause ? 0 : 1500); /* autograd's Python hooks, grad bookkeeping */
        span_end(&s);
        bw.idle_ns += span_idle(&s, gpu_idle_in(s.t0_ns, s.t1_ns));
        launch(K_BWD, 1);
    }
    sync_stream();
}

static void *backward_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&bw.mu);
    for (;;) {
        while (bw.todo == bw.done && !bw.is_exit)
            pthread_cond_wait(&bw.cv, &bw.mu);
        if (bw.is_exit)
            break;
        pthread_mutex_unlock(&bw.mu);
        backward_pass();
        pthread_mutex_lock(&bw.mu);
        bw.done++;
        pthread_cond_broadcast(&bw.cv);
    }
    pthread_mutex_unlock(&bw.mu);
    return NULL;
}

static void backward_run(void)
{
    pthread_mutex_lock(&bw.mu);
    bw.todo++;
    pthread_cond_broadcast(&bw.cv);
    while (bw.done < bw.todo)
        pthread_cond_wait(&bw.cv, &bw.mu);
    pthread_mutex_unlock(&bw.mu);
}

static void run_backward_thread(struct acc *a)
{
    pthread_t th;
    if (pthread_create(&th, NULL, backward_thread, NULL) != 0)
        CHECK_RT(cudaErrorUnknown);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        cpu_work_us(200); /* forward: the ops' dispatch */
        launch(K_MS, 1);
        backward_run(); /* loss.backward() */
    }
    loop_end(a);
    pthread_mutex_lock(&bw.mu);
    bw.is_exit = 1;
    pthread_cond_broadcast(&bw.cv);
    pthread_mutex_unlock(&bw.mu);
    pthread_join(th, NULL);
    a->truth_ns = bw.idle_ns;
}

/* An epoch's worker: builds its table (start-up), then sends batches w,
 * w + 4, ... of the epoch's n at once, and leaves. */
static void epoch_worker(int fd, int w, long n, size_t bytes)
{
    unsigned char *b = malloc(bytes);
    cpu_work_us(is_nocause ? 0 : 50000);
    if (b == NULL)
        _exit(3);
    for (long i = w; i < n; i += 4) {
        memset(b, (int)(i & 0xff), bytes);
        if (client_write_all(fd, b, bytes) != 0)
            _exit(3);
    }
    _exit(0);
}

/* One epoch of @p n steps with 4 new workers; returns what their start-up
 * cost: the wait from the epoch's start to its first batch, and the waits
 * for the other workers' first batches (on 2 CPUs two of them finish their
 * table 50 ms after the others). */
static uint64_t epoch(struct acc *a, long n, void *h, void *d, size_t bytes)
{
    struct span s = span_begin();
    uint64_t first = 0;
    int fds[4];
    for (int w = 0; w < 4; w++) {
        int p[2];
        if (pipe(p) != 0)
            CHECK_RT(cudaErrorUnknown);
        if (fork_worker() == 0) {
            close(p[0]);
            epoch_worker(p[1], w, n, bytes);
        }
        close(p[1]);
        fds[w] = p[0];
    }
    for (long i = 0; i < n; i++, a->steps++) {
        uint64_t waited = read_all(fds[i % 4], h, bytes);
        a->wait_ns += waited;
        if (i == 0)
            first = span_end(&s);
        else if (i < 4)
            first += waited;
        copy_h2d(d, h, bytes, 1);
        launch(K_MS, 2);
        sync_stream();
    }
    for (int w = 0; w < 4; w++)
        close(fds[w]);
    workers_reap();
    return first;
}

static void run_epoch_workers(struct acc *a)
{
    const size_t bytes = 64 * KIB;
    long per_epoch = (long)(a->secs * 25.0);
    void *h = host_alloc(bytes, 1), *d = dev_alloc(bytes);
    if (per_epoch < 4)
        per_epoch = 4;
    loop_begin(a);
    for (int e = 0; e < 10; e++)
        a->truth_ns += epoch(a, per_epoch, h, d, bytes);
    loop_end(a);
    CHECK_RT(cudaFree(d));
    host_free(h, 1);
}

/* dstate's file: 64 MiB written and synced, opened again with O_DIRECT so
 * that every read waits for the disk in D state. Unlinked from the start.
 * ACCURACY_IO_DIR names its directory (default /var/tmp). On a tmpfs or
 * ramfs (which may take O_DIRECT) a read is a memcpy, no D state: exit 77. */
static int io_file_open(size_t size)
{
    const char *dir = getenv("ACCURACY_IO_DIR") ? getenv("ACCURACY_IO_DIR") : "/var/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR, 0600), dfd;
    char path[64];
    unsigned char *b = malloc(MIB);
    if (fd < 0 || b == NULL) {
        fprintf(stderr, "%s: %s: cannot create a temporary file (%s)\n", NAME, dir,
                strerror(errno));
        exit(3);
    }
    memset(b, 7, MIB);
    for (size_t off = 0; off < size; off += MIB)
        if (client_write_all(fd, b, MIB) != 0)
            CHECK_RT(cudaErrorUnknown);
    fsync(fd);
    free(b);
    struct statfs fs;
    if (fstatfs(fd, &fs) == 0 && (fs.f_type == 0x01021994 || fs.f_type == 0x858458f6)) {
        fprintf(stderr, "%s: %s: a tmpfs or ramfs, not a disk\n", NAME, dir);
        exit(77);
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    dfd = open(path, O_RDONLY | O_DIRECT);
    if (dfd < 0) {
        fprintf(stderr, "%s: %s: no O_DIRECT reads here (%s)\n", NAME, dir, strerror(errno));
        exit(77);
    }
    close(fd);
    return dfd;
}

static void run_dstate(struct acc *a)
{
    const size_t fsize = 64 * MIB, blk = MIB;
    int fd = io_file_open(fsize);
    void *buf = NULL;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    if (posix_memalign(&buf, 4096, blk) != 0)
        CHECK_RT(cudaErrorMemoryAllocation);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        for (int i = 0; i < (is_nocause ? 0 : 2); i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            off_t off = (off_t)((seed >> 33) % (fsize / blk) * blk);
            uint64_t run0, run1, rq0 = schedstat_ns(&run0), t0 = now_ns(), t1, rq1;
            if (pread(fd, buf, blk, off) != (ssize_t)blk)
                CHECK_RT(cudaErrorUnknown);
            t1 = now_ns();
            rq1 = schedstat_ns(&run1);
            /* off CPU and not waiting for one: blocked on the disk */
            if (t1 - t0 > (rq1 - rq0) + (run1 - run0))
                a->truth_ns += t1 - t0 - (rq1 - rq0) - (run1 - run0);
        }
        launch(K_MS, 1);
        sync_stream();
    }
    loop_end(a);
    free(buf);
    close(fd);
}

/* The GPU-bound step of setup_heavy and healthy: a pinned copy and
 * 4 x 5 ms kernels, sync. */
static void gpu_steps(struct acc *a)
{
    void *h = host_alloc(MIB, 1), *d = dev_alloc(MIB);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        cpu_work_us(100);
        copy_h2d(d, h, MIB, 1);
        launch(K_LONG, 4);
        sync_stream();
    }
    loop_end(a);
    CHECK_RT(cudaFree(d));
    host_free(h, 1);
}

/* Set-up as a training script does it: the dataset's table, then the
 * model's parameters copied one by one, each synced (.to(device)). */
static void run_setup_heavy(struct acc *a)
{
    const size_t n = 32u * MIB; /* 256 MiB of uint64 */
    uint64_t *table = malloc(n * sizeof *table), s = 88172645463325252ull;
    void *d = dev_alloc(8 * MIB);
    if (table == NULL)
        CHECK_RT(cudaErrorMemoryAllocation);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        table[i] = s;
    }
    cpu_work_us(500000); /* tokenising, index building */
    for (int p = 0; p < 30; p++) {
        CHECK_RT(cudaMemcpy(d, table + (size_t)p * MIB, 8 * MIB, cudaMemcpyHostToDevice));
        sync_stream();
    }
    gpu_busy_ns = 0; /* gpu_ns counts the loop */
    gpu_steps(a);
    free(table);
    CHECK_RT(cudaFree(d));
}

static void run_healthy(struct acc *a)
{
    gpu_steps(a);
}

/* Slower workers than pipe_fork's (24 ms + 2 ms a batch) feeding pageable
 * copies. truth: the pipe wait; truth2: the time the pageable copies held
 * the host (the memmove, then the sleep), less the pinned transfer that the
 * synced loop would wait for instead (a pinned copy costs the host no
 * memmove: the fake moves its bytes later, fake_queue.c). */
static void run_two_causes(struct acc *a)
{
    const size_t bytes = 64 * KIB, big = 4 * MIB;
    int fds[4];
    void *h = host_alloc(bytes, 1), *d = dev_alloc(big);
    unsigned char *pg = host_alloc(big, 0);
    uint64_t pinned = copy_ns(big, 1);
    pipe_workers_start(fds, 4, bytes, 24000, 2000);
    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        a->truth_ns += read_all(fds[a->steps % 4], h, bytes);
        memcpy(pg, h, bytes); /* collate into the pageable batch */
        uint64_t held = copy_h2d_held(d, pg, big, 0, NULL);
        a->truth2_ns += held > pinned ? held - pinned : 0;
        launch(K_HALF, 2);
        sync_stream();
    }
    loop_end(a);
    pipe_workers_stop(fds, 4);
    host_free(pg, 0);
    CHECK_RT(cudaFree(d));
    host_free(h, 1);
}

/* ---- CUDA graphs (issue 31) ---- */

/* The graph both graph modes capture: a 1 MiB pinned copy, then kernels.
 * Node times on the simulated GPU are the kernel table's and copy_ns(). */
static const enum kern graph_kernels[] = {K_LONG, K_MS, K_MS, K_MS, K_HALF, K_HALF};
#define GRAPH_NK (sizeof(graph_kernels) / sizeof(graph_kernels[0]))
#define GRAPH_COPY_BYTES (1u * MIB)

struct graph_bufs {
    void *d, *h;
};

static long graph_launches, graph_eager;
#define GRAPH_EAGER 20 /* steps run eagerly before the capture, as torch.compile's warm-up */

/* Capture the graph on `stream` and instantiate it; *build_ns (if not
 * NULL) gets the time from the capture's begin to the instantiation's end
 * less its run-queue delay. Captured work does not run: no gpu_note. */
static cudaGraphExec_t graph_build(const struct graph_bufs *b, double trace_us, uint64_t *build_ns)
{
    static void *arg;
    void *args[] = {&arg};
    dim3 grid = {64, 1, 1}, block = {128, 1, 1};
    cudaGraph_t g;
    cudaGraphExec_t e;
    struct span s = span_begin();

    CHECK_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    cpu_work_us(trace_us); /* the framework tracing the code it captures */
    CHECK_RT(cudaMemcpyAsync(b->d, b->h, GRAPH_COPY_BYTES, cudaMemcpyHostToDevice, stream));
    for (size_t i = 0; i < GRAPH_NK; i++)
        CHECK_RT(cudaLaunchKernel((const void *)kernels[graph_kernels[i]].fn, grid, block, args,
                                  0, stream));
    CHECK_RT(cudaStreamEndCapture(stream, &g));
    CHECK_RT(cudaGraphInstantiateWithFlags(&e, g, 0));
    if (build_ns)
        *build_ns += span_end(&s);
    CHECK_RT(cudaGraphDestroy(g));
    CHECK_RT(cudaGraphUpload(e, stream));
    return e;
}

static uint64_t graph_gpu_ns(void)
{
    uint64_t ns = copy_ns(GRAPH_COPY_BYTES, 1);
    for (size_t i = 0; i < GRAPH_NK; i++)
        ns += kernels[graph_kernels[i]].us * 1000u;
    return ns;
}

/* One replay: the fake runs the nodes one after the other on `stream`. */
static void graph_replay(cudaGraphExec_t e, long *launches)
{
    uint64_t t = now_ns();
    CHECK_RT(cudaGraphLaunch(e, stream));
    gpu_note(t, graph_gpu_ns());
    ++*launches;
}

/* What the graph holds and how long each node runs on the simulated GPU,
 * for the tests that check kernel counts and GPU busy against it. */
static void graph_print(long launches)
{
    printf("%s: graph node 0 memcpy_htod %u bytes %llu ns\n", NAME, GRAPH_COPY_BYTES,
           (unsigned long long)copy_ns(GRAPH_COPY_BYTES, 1));
    for (size_t i = 0; i < GRAPH_NK; i++)
        printf("%s: graph node %zu %s %llu ns\n", NAME, i + 1, kernels[graph_kernels[i]].name,
               (unsigned long long)kernels[graph_kernels[i]].us * 1000u);
    printf("%s: graph launches %ld, gpu %llu ns a launch; eager steps %ld\n", NAME, launches,
           (unsigned long long)graph_gpu_ns(), graph_eager);
}

/* The graph's work issued node by node, as an eager step runs it. */
static void graph_run_eager(const struct graph_bufs *b)
{
    copy_h2d(b->d, b->h, GRAPH_COPY_BYTES, 1);
    for (size_t i = 0; i < GRAPH_NK; i++)
        launch(graph_kernels[i], 1);
    graph_eager++;
}

/* Healthy, as torch.compile(mode="reduce-overhead") on a static shape:
 * GRAPH_EAGER steps run eagerly, the next captures the step (1 ms of
 * tracing) and instantiates it (100 ms of CPU: FAKECUDA_LAT_NS, a large
 * model's), then every step replays it; a sync a step. NVTX ranges make
 * the steps, so the build falls inside them, after the set-up: it costs as
 * much as a MEDIUM finding would own, but it paid for itself. */
static void run_graphs(struct acc *a)
{
    struct graph_bufs b = {dev_alloc(GRAPH_COPY_BYTES), host_alloc(GRAPH_COPY_BYTES, 1)};
    cudaGraphExec_t e = NULL;

    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        nvtxRangePushA("step"); /* the steps start at the first: the build is inside them */
        if (a->steps < GRAPH_EAGER) {
            graph_run_eager(&b);
        } else {
            if (e == NULL)
                e = graph_build(&b, 1000, &a->meter_ns);
            graph_replay(e, &graph_launches);
        }
        sync_stream();
        nvtxRangePop();
    }
    loop_end(a);
    CHECK_RT(cudaGraphExecDestroy(e));
    host_free(b.h, 1);
    CHECK_RT(cudaFree(b.d));
}

/* Planted graph_recapture: each step a new shape, as torch.compile's
 * reduce-overhead mode sees it: the code runs eagerly once (warm-up), is
 * captured (1 ms of tracing), instantiated (3 ms, slept: FAKECUDA_LAT_NS)
 * and replayed. Truth: from each capture's begin to its instantiation's end.
 * nocause: captured once in the set-up, as a static shape is. */
static void run_recapture(struct acc *a)
{
    struct graph_bufs b = {dev_alloc(GRAPH_COPY_BYTES), host_alloc(GRAPH_COPY_BYTES, 1)};
    cudaGraphExec_t e = is_nocause ? graph_build(&b, 1000, NULL) : NULL;

    loop_begin(a);
    for (; loop_more(a); a->steps++) {
        if (!is_nocause) {
            graph_run_eager(&b); /* the warm-up run */
            sync_stream();
            e = graph_build(&b, 1000, &a->truth_ns);
        }
        graph_replay(e, &graph_launches);
        sync_stream();
        if (!is_nocause)
            CHECK_RT(cudaGraphExecDestroy(e));
    }
    loop_end(a);
    if (is_nocause)
        CHECK_RT(cudaGraphExecDestroy(e));
    host_free(b.h, 1);
    CHECK_RT(cudaFree(b.d));
}

/* ---- the mode table and the truth line ---- */

struct mode {
    const char *name, *planted;
    const char *lat_ns; /* FAKECUDA_LAT_NS, or NULL */
    int is_lat_sleep;   /* FAKECUDA_LAT_MODE=sleep */
    void (*run)(struct acc *a);
};

static const struct mode modes[] = {
    {"pipe_fork", "data_pipeline_starvation", NULL, 0, run_pipe_fork},
    {"pipe_thread", "data_pipeline_starvation", NULL, 0, run_pipe_thread},
    {"hostdata", "host_bound", NULL, 0, run_hostdata},
    {"sync_tiny", "sync_per_iteration", NULL, 0, run_sync_tiny},
    {"pageable", "pageable_memcpy", NULL, 0, run_pageable},
    {"churn", "alloc_churn", "cuMemAlloc_v2=2000000,cuMemFree_v2=1000000", 1, run_churn},
    {"contention_tree", "cpu_contention_tree", NULL, 0, run_contention_tree},
    {"contention_external", "cpu_contention_external", NULL, 0, run_contention_external},
    {"launch_bound", "launch_bound", "cuLaunchKernel=6000", 0, run_launch_bound},
    {"backward_thread", "host_bound", NULL, 0, run_backward_thread},
    {"epoch_workers", "worker_startup", NULL, 0, run_epoch_workers},
    {"dstate", "io_wait", NULL, 0, run_dstate},
    {"setup_heavy", "setup", NULL, 0, run_setup_heavy},
    {"healthy", "none", NULL, 0, run_healthy},
    {"two_causes", "data_pipeline_starvation", NULL, 0, run_two_causes},
    {"retries", "allocator_retries", "cuMemAlloc_v2=1000000,cuMemFree_v2=1500000", 1,
     run_retries},
    {"oom", "oom", NULL, 0, run_oom},
    {"vmm", "none", NULL, 0, run_vmm},
    {"many", "none", NULL, 0, run_many},
    {"graphs", "none", "cuGraphInstantiateWithFlags=100000000", 0, run_graphs},
    {"recapture", "graph_recapture", "cuGraphInstantiateWithFlags=3000000", 1, run_recapture},
};

static void print_truth(const struct acc *a)
{
    uint64_t loop = a->t_loop1_ns - a->t_loop0_ns, setup = a->t_loop0_ns - a->t_cuda_ns;
    uint64_t truth = strcmp(a->planted, "setup") == 0 ? setup : a->truth_ns;
    printf("%s: %s%s%s: %ld steps in %.2f s\n", NAME, a->mode, *a->variant ? " " : "", a->variant,
           a->steps, (double)loop / 1e9);
    printf("cudaspy-truth: {\"case\":\"%s\",\"planted\":\"%s\",\"truth_ns\":%llu,"
           "\"loop_ns\":%llu,\"steps\":%ld,\"setup_ns\":%llu,\"gpu_ns\":%llu,"
           "\"runq_ns\":%llu,\"setup_runq_ns\":%llu",
           a->mode, a->planted, (unsigned long long)truth, (unsigned long long)loop, a->steps,
           (unsigned long long)setup, (unsigned long long)gpu_busy_ns,
           (unsigned long long)a->runq_ns, (unsigned long long)(a->rq0_ns - a->rq_cuda_ns));
    if (a->nsteps > 0)
        printf(",\"variant\":\"%s\",\"meter_ns\":%llu", a->variant,
               (unsigned long long)a->meter_ns);
    if (a->wait_ns)
        printf(",\"wait_ns\":%llu", (unsigned long long)a->wait_ns);
    if (a->tree_share > 0)
        printf(",\"tree_share_pct\":%.1f", a->tree_share * 100);
    if (a->peak_bytes)
        printf(",\"peak_bytes\":%llu", (unsigned long long)a->peak_bytes);
    if (a->lib_bytes)
        printf(",\"lib_bytes\":%llu", (unsigned long long)a->lib_bytes);
    if (a->episodes)
        printf(",\"episodes\":%ld", a->episodes);
    if (a->oom_bytes)
        printf(",\"oom_bytes\":%llu,\"held_bytes\":%llu", (unsigned long long)a->oom_bytes,
               (unsigned long long)a->held_bytes);
    if (graph_launches)
        printf(",\"graph_launches\":%ld,\"graph_gpu_ns\":%llu,\"graph_eager\":%ld,"
               "\"graph_build_ns\":%llu", graph_launches, (unsigned long long)graph_gpu_ns(),
               graph_eager, (unsigned long long)a->meter_ns);
    if (strcmp(a->mode, "two_causes") == 0)
        printf(",\"causes\":[{\"planted\":\"data_pipeline_starvation\",\"truth_ns\":%llu},"
               "{\"planted\":\"pageable_memcpy\",\"truth_ns\":%llu}]",
               (unsigned long long)a->truth_ns, (unsigned long long)a->truth2_ns);
    printf("}\n");
    fflush(stdout);
}

/* FAKECUDA_KERNEL_US from the kernel table (overwritten: the meters use it). */
static void set_env(const struct mode *m)
{
    char us[512];
    size_t len = 0;
    for (int k = 0; k < K_N; k++)
        len += (size_t)snprintf(us + len, sizeof us - len, "%s%s=%llu", k ? "," : "",
                                kernels[k].name, (unsigned long long)kernels[k].us);
    setenv("FAKECUDA_SIM", "1", 1);
    setenv("FAKECUDA_KERNEL_US", us, 1);
    setenv("FAKECUDA_PAGEABLE_GBPS", PAGEABLE_GBPS, 0);
    if (m->run == run_retries && !is_nocause) /* 64 MiB + 2 blocks of 128-136 MiB: no fit */
        setenv("FAKECUDA_MEM_LIMIT", "335544320", 1); /* 320 MiB */
    if (m->run == run_oom)
        setenv("FAKECUDA_MEM_LIMIT", "268435456", 1); /* 256 MiB */
    if (m->lat_ns && !is_nocause) {
        setenv("FAKECUDA_LAT_NS", m->lat_ns, 0);
        setenv("FAKECUDA_LAT_MODE", m->is_lat_sleep ? "sleep" : "busy", 0);
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: %s MODE [seconds=2] [variant]\nmodes:", NAME);
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        fprintf(stderr, " %s", modes[i].name);
    fprintf(stderr, " hog\nvariants: sync_tiny nosync, pageable pinned, else nocause (the "
                    "loop without its cause)\n");
    return 2;
}

int main(int argc, char **argv)
{
    const struct mode *m = NULL;
    struct acc a = {.variant = argc > 3 ? argv[3] : ""};
    a.secs = argc > 2 ? atof(argv[2]) : 2.0;
    if (argc < 2 || !(a.secs > 0))
        return usage();
    if (strcmp(argv[1], "hog") == 0) {
        cpu_work_us(a.secs * 1e6);
        return 0;
    }
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            m = &modes[i];
    if (m == NULL)
        return usage();
    a.mode = m->name, a.planted = m->planted;
    is_nocause = strcmp(a.variant, "nocause") == 0;
    set_env(m);
    a.rq_cuda_ns = runq_delay_ns();
    a.t_cuda_ns = now_ns();
    for (int k = 0; k < K_N; k++)
        CHECK_RT(fakert_register_kernel((const void *)kernels[k].fn, kernels[k].name));
    CHECK_RT(cudaStreamCreate(&stream));
    m->run(&a);
    if (a.oom_bytes) { /* died of it: no clean-up */
        print_truth(&a);
        if (strcmp(a.variant, "abort") == 0)
            abort();
        _exit(0);
    }
    if (graph_launches)
        graph_print(graph_launches);
    CHECK_RT(cudaStreamDestroy(stream));
    print_truth(&a);
    return 0;
}
