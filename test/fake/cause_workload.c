/* cause_workload.c: one planted cause per mode, on the simulated GPU of the
 * fake driver (FAKECUDA_SIM=1, set here unless already set), for the
 * analyzer's tests on real recordings (test/analyzer/real_cause.sh).
 *   cause_workload MODE [seconds=3]
 *     tree      4 x CPUs + 2 forked workers spin on the CPUs while the main
 *               process prepares each step on the CPU (2 ms), launches and
 *               syncs. Each worker starts its own session: with autogroup
 *               scheduling (CONFIG_SCHED_AUTOGROUP) a session shares one
 *               CPU share, and the box's other sessions would take half the
 *               CPUs from one session whatever its number of workers
 *     external  the same main loop, no workers: the test starts `hog`s
 *               outside the traced tree
 *     starve    2 forked workers "read" each batch from slow storage (10 ms
 *               asleep) and send it over a pipe; the main process waits on
 *               the pipe while its stream is idle (2 ms of kernels a step)
 *     pageable  a 12 MiB cudaMemcpyAsync from malloc'ed memory every step,
 *               then 4 x 0.5 ms kernels (the staging, ~1.5 ms on the CPU,
 *               stays near a scheduler slice: longer bursts are preempted
 *               as much as they run on a box that other sessions load)
 *     churn     cudaMalloc/cudaFree of 64 MiB every step (2 ms + 1 ms,
 *               slept: FAKECUDA_LAT_NS)
 *     sync      a 300 us kernel and a cudaStreamSynchronize every launch,
 *               400 us of CPU work between them
 *     clean     GPU-bound: 4 x 5 ms kernels and a 1 MiB pinned copy a step
 *     syncstep  set-up: 32 parameters copied and synced one by one (a
 *               model's .to(device)); then steps of a 1 ms kernel, a sync
 *               (PyTorch's loss.item()), a 5 us kernel at once (acc +=
 *               loss), then 1 ms on the CPU before the next step: the host
 *               lower bound sees only the 5 us gap
 *     hostdata  each batch built in the main thread (3 ms on the CPU,
 *               fresh pages), copied from pinned memory and run (1 ms of
 *               kernels); a sync every 16 steps only
 *     duty      a known duty cycle: a 6 ms kernel and its sync, then 4 ms
 *               of host work: the GPU is busy 60 % of the time
 *     slowhost  250 ms on the CPU a step, then 2 x 5 ms of kernels and a
 *               sync: the GPU busy 4 %, idle for whole sampled slices
 *     steps     gate pairs (test/gate/gate_steps.sh): a fixed number of
 *               steps (CAUSE_STEPS, else `seconds` / 3 ms): read a batch from one of 4 forked
 *               data workers (each 6 ms asleep a batch: they keep ahead),
 *               3 ms on the CPU, a pinned copy and 2 x 0.5 ms of kernels,
 *               no sync (the GPU keeps up): 3 ms a step
 *     steps_sync      the same with a cudaStreamSynchronize each step:
 *               4 ms a step (issue 24's candidate)
 *     steps_slowdata  the same with 1 data worker: 6 ms a step
 *     ahead     the host runs ahead of the GPU (a loop without a sync, as
 *               issue 36's .item()-free loop): CAUSE_STEPS steps (else
 *               300), each an NVTX range "train_step" of 150 us on the
 *               CPU and 2 kernels of 0.5 ms, one sync at the end: host
 *               steps of 150 us, GPU steps of 1 ms; exits 77 without nvtx3
 *     ahead_slowhost  the same at 450 us a host step: the GPU's unchanged
 *     ahead_slowgpu   the same with the second kernel 1 ms: GPU steps 1.5 ms
 *     nvtx      each step an NVTX range "train_step" (real nvtx3 headers; the
 *               shim's injection records it) holding "forward" and
 *               "backward": 0.5 ms on the CPU, 1 to 3 launches (step % 3),
 *               a sync every 4th step only, so the calls do not repeat
 *               with the step; exits 77 when built without nvtx3
 *     hog       spin on one CPU for `seconds` (no CUDA): the outside load
 * Runs for about `seconds`, then prints "<mode>: <steps> steps in <s> s". */
#include <cuda_runtime_api.h>

#include "fake_client.h"
#include "fakecuda.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NAME "cause_workload"
#define CHECK_RT(call) CLIENT_CHECK(NAME, call)
#define MIB (1024u * 1024u)
#define MAX_WORKERS 64

static void k_small(void) {}
static void k_step(void) {}
static void k_long(void) {}
static void k_tiny(void) {}

struct mode {
    const char *name;
    const char *kernel_us; /* FAKECUDA_KERNEL_US */
    const char *lat_ns;    /* FAKECUDA_LAT_NS (slept), or NULL */
    void (*run)(double deadline, long *steps);
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Host work of @p us microseconds on the CPU (a batch being prepared). */
static void spin_us(double us)
{
    double end = now_s() + us / 1e6;
    volatile uint64_t x = 1;
    while (now_s() < end)
        for (int i = 0; i < 256; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
}

static cudaStream_t stream;

static void launch(const void *k, int n, void *dbuf)
{
    void *args[] = {&dbuf};
    dim3 grid = {64, 1, 1}, block = {128, 1, 1};
    for (int i = 0; i < n; i++)
        CHECK_RT(cudaLaunchKernel(k, grid, block, args, 0, stream));
}

/* ---- forked workers ---- */

static pid_t workers[MAX_WORKERS];
static int nworkers;

static void workers_stop(void)
{
    for (int i = 0; i < nworkers; i++) {
        int st;
        kill(workers[i], SIGKILL);
        waitpid(workers[i], &st, 0);
    }
    nworkers = 0;
}

static pid_t fork_worker(void)
{
    pid_t pid = fork();
    if (pid < 0)
        CHECK_RT(cudaErrorUnknown);
    if (pid > 0)
        workers[nworkers++] = pid;
    else
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a main that failed */
    return pid;
}

/* ---- modes ---- */

/* Until @p deadline: spin @p spin us on the CPU, launch @p kernel @p n
 * times, sync. */
static void run_steps(double deadline, long *steps, long spin, const void *kernel, int n)
{
    void *d = NULL;
    CHECK_RT(cudaMalloc(&d, MIB));
    for (; now_s() < deadline; (*steps)++) {
        spin_us(spin);
        launch(kernel, n, d);
        CHECK_RT(cudaStreamSynchronize(stream));
    }
    CHECK_RT(cudaFree(d));
}

/* Prepare on the CPU, launch three short kernels, sync: the CPU work is
 * what other processes can take away from the main thread. */
static void run_cpu_steps(double deadline, long *steps)
{
    run_steps(deadline, steps, 2000, (const void *)k_small, 3);
}

static void run_tree(double deadline, long *steps)
{
    long n = 4 * sysconf(_SC_NPROCESSORS_ONLN) + 2;
    for (long w = 0; w < n && w < MAX_WORKERS; w++)
        if (fork_worker() == 0) {
            setsid();
            while (now_s() < deadline + 5) /* SIGKILLed by the parent long before */
                spin_us(1000);
            _exit(0);
        }
    run_cpu_steps(deadline, steps);
    workers_stop();
}

static void starve_worker(int fd, int w, size_t bytes)
{
    unsigned char *b = malloc(bytes);
    struct timespec io = {0, 10 * 1000 * 1000};
    for (uint64_t i = (uint64_t)w;; i += 2) {
        nanosleep(&io, NULL); /* the batch comes from slow storage */
        if (b == NULL)
            _exit(3);
        memset(b, (int)(i & 0xff), bytes);
        for (size_t off = 0; off < bytes;) {
            ssize_t n = write(fd, b + off, bytes - off);
            if (n <= 0)
                _exit(0); /* the reader is gone */
            off += (size_t)n;
        }
    }
}

static void read_all(int fd, void *p, size_t n)
{
    for (char *c = p; n > 0;) {
        ssize_t r = read(fd, c, n);
        if (r <= 0)
            CHECK_RT(cudaErrorUnknown);
        c += r;
        n -= (size_t)r;
    }
}

static void run_starve(double deadline, long *steps)
{
    const size_t bytes = 256 * 1024;
    int fds[2];
    void *h = NULL, *d = NULL;
    CHECK_RT(cudaMallocHost(&h, bytes));
    CHECK_RT(cudaMalloc(&d, bytes));
    for (int w = 0; w < 2; w++) {
        int p[2];
        if (pipe(p) != 0)
            CHECK_RT(cudaErrorUnknown);
        if (fork_worker() == 0) {
            close(p[0]);
            starve_worker(p[1], w, bytes);
        }
        close(p[1]);
        fds[w] = p[0];
    }
    for (; now_s() < deadline; (*steps)++) {
        read_all(fds[*steps % 2], h, bytes);
        CHECK_RT(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
        launch((const void *)k_step, 4, d);
        CHECK_RT(cudaStreamSynchronize(stream));
    }
    close(fds[0]);
    close(fds[1]);
    workers_stop();
    CHECK_RT(cudaFree(d));
    CHECK_RT(cudaFreeHost(h));
}

static void run_pageable(double deadline, long *steps)
{
    const size_t bytes = 12 * MIB;
    unsigned char *h = malloc(bytes);
    void *d = NULL;
    if (h == NULL)
        CHECK_RT(cudaErrorMemoryAllocation);
    memset(h, 1, bytes);
    CHECK_RT(cudaMalloc(&d, bytes));
    CHECK_RT(cudaMemset(d, 0, bytes)); /* its first-touch page faults out of the copies */
    for (; now_s() < deadline; (*steps)++) {
        CHECK_RT(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
        launch((const void *)k_step, 4, d);
        CHECK_RT(cudaStreamSynchronize(stream));
    }
    CHECK_RT(cudaFree(d));
    free(h);
}

static void run_churn(double deadline, long *steps)
{
    for (; now_s() < deadline; (*steps)++) {
        void *d = NULL;
        CHECK_RT(cudaMalloc(&d, 64 * MIB));
        launch((const void *)k_step, 3, d);
        CHECK_RT(cudaStreamSynchronize(stream));
        CHECK_RT(cudaFree(d));
    }
}

static void run_sync(double deadline, long *steps)
{
    run_steps(deadline, steps, 400, (const void *)k_step, 1);
}

static void run_clean(double deadline, long *steps)
{
    void *h = NULL, *d = NULL;
    CHECK_RT(cudaMallocHost(&h, MIB));
    CHECK_RT(cudaMalloc(&d, MIB));
    memset(h, 2, MIB);
    for (; now_s() < deadline; (*steps)++) {
        CHECK_RT(cudaMemcpyAsync(d, h, MIB, cudaMemcpyHostToDevice, stream));
        launch((const void *)k_long, 4, d);
        CHECK_RT(cudaStreamSynchronize(stream));
    }
    CHECK_RT(cudaFree(d));
    CHECK_RT(cudaFreeHost(h));
}

static void run_syncstep(double deadline, long *steps)
{
    static char param[4096];
    void *d = NULL;
    CHECK_RT(cudaMalloc(&d, MIB));
    for (int i = 0; i < 32; i++) { /* not steps: the syncs' segments differ */
        CHECK_RT(cudaMemcpyAsync(d, param, sizeof(param), cudaMemcpyHostToDevice, stream));
        CHECK_RT(cudaStreamSynchronize(stream));
    }
    for (; now_s() < deadline; (*steps)++) {
        launch((const void *)k_long, 1, d);
        CHECK_RT(cudaStreamSynchronize(stream)); /* loss.item() */
        launch((const void *)k_tiny, 1, d);      /* acc += loss, on the GPU */
        spin_us(1000);                            /* the host's own work */
    }
    CHECK_RT(cudaFree(d));
}

static void run_hostdata(double deadline, long *steps)
{
    const size_t bytes = 512 * 1024;
    void *h = NULL, *d = NULL;
    CHECK_RT(cudaMallocHost(&h, bytes));
    CHECK_RT(cudaMalloc(&d, bytes));
    for (; now_s() < deadline; (*steps)++) {
        unsigned char *b = malloc(bytes); /* decode and augment: fresh pages */
        if (b == NULL)
            CHECK_RT(cudaErrorMemoryAllocation);
        memset(b, (int)(*steps & 0xff), bytes);
        spin_us(3000);
        memcpy(h, b, bytes);
        free(b);
        /* one staging buffer: the fake copies at enqueue (real code would
         * double-buffer it) */
        CHECK_RT(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
        launch((const void *)k_step, 2, d);
        if (*steps % 16 == 15)
            CHECK_RT(cudaStreamSynchronize(stream));
    }
    CHECK_RT(cudaStreamSynchronize(stream));
    CHECK_RT(cudaFree(d));
    CHECK_RT(cudaFreeHost(h));
}

static void run_duty(double deadline, long *steps)
{
    run_steps(deadline, steps, 4000, (const void *)k_long, 1);
}

static void run_slowhost(double deadline, long *steps)
{
    run_steps(deadline, steps, 250000, (const void *)k_long, 2);
}

/* Gate pairs: @p n steps fed by @p nw data workers; a sync each step if
 * @p sync. Step time is host-bound (3 ms) unless a sync serialises the
 * kernels (+1 ms) or the workers fall behind. */
static void gate_steps(long n, int nw, int sync, long *steps)
{
    const size_t bytes = 64 * 1024; /* one pipe buffer: a worker keeps one batch ahead */
    int fds[4];
    void *h = NULL, *d = NULL;
    CHECK_RT(cudaMallocHost(&h, bytes));
    CHECK_RT(cudaMalloc(&d, bytes));
    for (int w = 0; w < nw; w++) {
        int p[2];
        if (pipe(p) != 0)
            CHECK_RT(cudaErrorUnknown);
        if (fork_worker() == 0) {
            struct timespec io = {0, 6 * 1000 * 1000};
            unsigned char *b = malloc(bytes);
            close(p[0]);
            if (b == NULL)
                _exit(3);
            for (uint64_t i = 0;; i++) { /* the first batch at once: no wait at start */
                memset(b, (int)(i & 0xff), bytes);
                for (size_t off = 0; off < bytes;) {
                    ssize_t k = write(p[1], b + off, bytes - off);
                    if (k <= 0)
                        _exit(0); /* the reader is gone */
                    off += (size_t)k;
                }
                nanosleep(&io, NULL);
            }
        }
        close(p[1]);
        fds[w] = p[0];
    }
    for (; *steps < n; (*steps)++) {
        read_all(fds[*steps % nw], h, bytes);
        spin_us(3000);
        CHECK_RT(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
        launch((const void *)k_step, 1, d);
        launch((const void *)k_small, 1, d);
        if (sync)
            CHECK_RT(cudaStreamSynchronize(stream));
    }
    for (int w = 0; w < nw; w++)
        close(fds[w]);
    workers_stop();
    CHECK_RT(cudaFree(d));
    CHECK_RT(cudaFreeHost(h));
}

/* The step count: CAUSE_STEPS, else the seconds the baseline takes at 3 ms
 * a step (seconds are whole: a gate pair of 0.4 s runs sets CAUSE_STEPS). */
static long gate_nsteps(double deadline)
{
    const char *env = getenv("CAUSE_STEPS");
    double n = env && atol(env) > 0 ? (double)atol(env) : (deadline - now_s()) * 1000.0 / 3.0;
    return n < 1 ? 1 : (long)(n + 0.5);
}

static void run_gsteps(double deadline, long *steps)
{
    gate_steps(gate_nsteps(deadline), 4, 0, steps);
}

static void run_gsteps_sync(double deadline, long *steps)
{
    gate_steps(gate_nsteps(deadline), 4, 1, steps);
}

static void run_gsteps_slowdata(double deadline, long *steps)
{
    gate_steps(gate_nsteps(deadline), 1, 0, steps);
}

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>

static void run_nvtx(double deadline, long *steps)
{
    for (; now_s() < deadline; (*steps)++) {
        nvtxRangePushA("train_step");
        nvtxRangePushA("forward");
        spin_us(500);
        launch((const void *)k_step, 1 + (int)(*steps % 3), NULL);
        nvtxRangePop();
        nvtxRangePushA("backward");
        if (*steps % 4 == 3)
            CHECK_RT(cudaStreamSynchronize(stream));
        nvtxRangePop();
        nvtxRangePop();
    }
}
/* @p n steps (NVTX ranges) of @p host_us on the CPU and two kernels, no
 * sync but the last. */
static void ahead_steps(long n, double host_us, long *steps)
{
    void *d = NULL;
    CHECK_RT(cudaMalloc(&d, MIB));
    for (; *steps < n; (*steps)++) {
        nvtxRangePushA("train_step");
        spin_us(host_us);
        launch((const void *)k_step, 1, d);
        launch((const void *)k_small, 1, d);
        nvtxRangePop();
    }
    CHECK_RT(cudaStreamSynchronize(stream));
    CHECK_RT(cudaFree(d));
}

static long ahead_nsteps(void)
{
    const char *env = getenv("CAUSE_STEPS");
    return env && atol(env) > 0 ? atol(env) : 300;
}

static void run_ahead(double deadline, long *steps)
{
    (void)deadline;
    ahead_steps(ahead_nsteps(), 150, steps);
}

static void run_ahead_slowhost(double deadline, long *steps)
{
    (void)deadline;
    ahead_steps(ahead_nsteps(), 450, steps);
}

#else
static void run_nvtx(double deadline, long *steps)
{
    (void)deadline, (void)steps;
    fprintf(stderr, "%s: built without nvtx3 headers\n", NAME);
    exit(77);
}

static void run_ahead(double deadline, long *steps)
{
    run_nvtx(deadline, steps);
}

static void run_ahead_slowhost(double deadline, long *steps)
{
    run_nvtx(deadline, steps);
}
#endif

static const struct mode modes[] = {
    {"tree", "k_small=200", NULL, run_tree},
    {"external", "k_small=200", NULL, run_cpu_steps},
    {"starve", "k_step=500", NULL, run_starve},
    {"pageable", "k_step=500", NULL, run_pageable},
    {"churn", "k_step=300", "cuMemAlloc_v2=2000000,cuMemFree_v2=1000000", run_churn},
    {"sync", "k_step=300", NULL, run_sync},
    {"clean", "k_long=5000", NULL, run_clean},
    {"syncstep", "k_long=1000,k_tiny=5", NULL, run_syncstep},
    {"hostdata", "k_step=500", NULL, run_hostdata},
    {"duty", "k_long=6000", NULL, run_duty},
    {"slowhost", "k_long=5000", NULL, run_slowhost},
    {"steps", "k_step=500,k_small=500", NULL, run_gsteps},
    {"steps_sync", "k_step=500,k_small=500", NULL, run_gsteps_sync},
    {"steps_slowdata", "k_step=500,k_small=500", NULL, run_gsteps_slowdata},
    {"nvtx", "k_step=300", NULL, run_nvtx},
    {"ahead", "k_step=500,k_small=500", NULL, run_ahead},
    {"ahead_slowhost", "k_step=500,k_small=500", NULL, run_ahead_slowhost},
    {"ahead_slowgpu", "k_step=500,k_small=1000", NULL, run_ahead},
};

static int usage(void)
{
    fprintf(stderr, "usage: %s tree|external|starve|pageable|churn|sync|clean|syncstep|"
                    "hostdata|duty|slowhost|steps|steps_sync|steps_slowdata|nvtx|ahead|"
                    "ahead_slowhost|ahead_slowgpu|hog "
                    "[seconds=3]\n", NAME);
    return 2;
}

int main(int argc, char **argv)
{
    const struct mode *m = NULL;
    double secs = (double)client_arg(argc, argv, 2, 3), t0;
    long steps = 0;

    if (argc < 2)
        return usage();
    if (strcmp(argv[1], "hog") == 0) {
        spin_us(secs * 1e6);
        return 0;
    }
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            m = &modes[i];
    if (m == NULL)
        return usage();
    setenv("FAKECUDA_SIM", "1", 0);
    setenv("FAKECUDA_KERNEL_US", m->kernel_us, 0);
    if (m->lat_ns) {
        setenv("FAKECUDA_LAT_NS", m->lat_ns, 0);
        setenv("FAKECUDA_LAT_MODE", "sleep", 0);
    }
    CHECK_RT(fakert_register_kernel((const void *)k_small, "k_small"));
    CHECK_RT(fakert_register_kernel((const void *)k_step, "k_step"));
    CHECK_RT(fakert_register_kernel((const void *)k_long, "k_long"));
    CHECK_RT(fakert_register_kernel((const void *)k_tiny, "k_tiny"));
    CHECK_RT(cudaStreamCreate(&stream));
    t0 = now_s();
    m->run(t0 + secs, &steps);
    CHECK_RT(cudaStreamDestroy(stream));
    printf("%s: %s: %ld steps in %.2f s\n", NAME, m->name, steps, now_s() - t0);
    return 0;
}
