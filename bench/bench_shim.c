/* bench_shim.c: what libcudaspy.so adds to each intercepted call, on the fake
 * driver with zero latency (so the driver's own cost is a few ns). Runs
 * itself as a child in four modes, interleaved round after round: plain
 * (no preload), disabled (LD_PRELOAD, CUDASPY_DISABLE=1), recording
 * (cudaspy record: collector running, full records) and paused (cudaspy
 * record --capture signal, never started: every call outside a capture
 * range, what issue 33 holds to the disabled cost; BENCH_CAPTURE=MODE
 * another --capture mode, e.g. steps:1000000-1000001, whose step range is
 * the bench's NVTX push). Each child times
 * batches of calls per operation and reports the median ns per call; the
 * figure is the median over rounds of (mode - plain).
 * With EVICT_KB > 0 every call is timed alone, after the child has written
 * EVICT_KB of other memory (outside the timing): the shim's lines are cold
 * then, as in a real program, where the interpreter and the framework run
 * between two CUDA calls; the hot loop alone flatters the shim.
 * Usage: bench_shim [ROUNDS=5] [BATCHES=200] [CALLS_PER_BATCH=1000] [EVICT_KB=0]
 *        bench_shim --calls OP N [EVICT_KB]: only N calls of operation OP
 *        (0-3, the order of the report), for instruction and cache-miss
 *        counts under valgrind (bench/shim_ir.sh)
 * Built with the toolkit's nvtx3 headers, it also times an NVTX push/pop
 * pair and a mark: the shim records them through NVTX's injection, which
 * `cudaspy record` sets up; without a tool they cost a pointer test. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cudaspy/runfile.h"
#include "fakecuda.h"

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define BENCH_NVTX 1
#endif

#ifndef BENCH_SRC_DIR
#define BENCH_SRC_DIR "."
#endif
#define MAX_ROUNDS 64
#define MAX_BATCHES 4096
#define WARM_CALLS 40000 /* > records of one 1 MiB sub-ring (CUDASPY_RING_KB default) */

enum mode { MODE_PLAIN, MODE_DISABLED, MODE_RECORD, MODE_PAUSED, MODE_N };
static const char *const mode_names[MODE_N] = {"plain", "disabled", "record", "paused"};

/* ---------------- child: time the calls ---------------- */

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*sync_fn)(CUstream);

struct ops {
    launch_fn launch;
    htod_fn htod;
    sync_fn sync;
    CUfunction f;
    CUdeviceptr d;
    void *pinned;
};

static void rt_stub(void) {}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n ? v[n / 2] : 0;
}

/* Resolve through cuGetProcAddress, as the runtime does. */
static void *gpa(const char *name)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    return cuGetProcAddress(name, &p, 12000, 0, &st) == CUDA_SUCCESS ? p : NULL;
}

static int ops_init(struct ops *o)
{
    CUdevice dev;
    CUcontext ctx;
    CUlibrary lib;
    CUkernel k;

    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) ||
        cuLibraryLoadData(&lib, "bench_kernel", NULL, NULL, 0, NULL, NULL, 0) ||
        cuLibraryGetKernel(&k, lib, "bench_kernel") || cuMemAlloc(&o->d, 64) ||
        cuMemAllocHost(&o->pinned, 64) || fakert_register_kernel((const void *)rt_stub,
                                                                  "bench_rt_kernel"))
        return -1;
    o->f = (CUfunction)k;
    o->launch = (launch_fn)gpa("cuLaunchKernel");
    o->htod = (htod_fn)gpa("cuMemcpyHtoDAsync");
    o->sync = (sync_fn)gpa("cuStreamSynchronize");
    return o->launch && o->htod && o->sync ? 0 : -1;
}

static CUresult op_call(const struct ops *o, int op)
{
    static void *params[] = {NULL};
    static const dim3 g = {1, 1, 1}, b = {32, 1, 1};

    switch (op) {
    case 0: return o->launch(o->f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
    case 1: return o->htod(o->d, o->pinned, 4, NULL);
    case 2: return o->sync(NULL);
#ifdef BENCH_NVTX
    case 4: /* one range, as torch.cuda.nvtx.range around a step */
        nvtxRangePushA("bench_range");
        nvtxRangePop();
        return CUDA_SUCCESS;
    case 5: nvtxMarkA("bench_mark"); return CUDA_SUCCESS;
#endif
    default: return (CUresult)cudaLaunchKernel((const void *)rt_stub, g, b, params, 0, NULL);
    }
}

/* NVTX operations (the shim's injection, docs/shim.md "NVTX") come last:
 * bench/shim_ir.sh numbers the CUDA ones. */
static const char *const op_names[] = {"cuLaunchKernel", "cuMemcpyHtoDAsync_v2",
                                       "cuStreamSynchronize", "cudaLaunchKernel",
                                       "nvtxRangePushA+Pop", "nvtxMarkA"};
#ifdef BENCH_NVTX
#define N_OPS 6
#else
#define N_OPS 4
#endif

/* @p n calls of @p op back to back; ns they took, -1 on a failed call. */
static int64_t hot_calls(const struct ops *o, int op, int n)
{
    uint64_t t0 = now_ns();

    for (int i = 0; i < n; i++)
        if (op_call(o, op) != CUDA_SUCCESS)
            return -1;
    return (int64_t)(now_ns() - t0);
}

/* Run 64 KiB of straight-line code: the instruction cache holds none of
 * the shim's afterwards, as after a framework's own code between calls. */
static void __attribute__((noinline)) code_sweep(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile(".rept 65536\n\tnop\n\t.endr");
#elif defined(__aarch64__)
    __asm__ volatile(".rept 16384\n\tnop\n\t.endr");
#endif
}

/* @p n calls of @p op, each after writing @p evict bytes of @p buf (and
 * with @p code, running code_sweep()); ns spent in the calls alone, -1 on a
 * failed call. */
static int64_t cold_calls(const struct ops *o, int op, int n, volatile uint8_t *buf, size_t evict,
                          int code)
{
    uint64_t in = 0;

    for (int i = 0; i < n; i++) {
        uint64_t t0;
        for (size_t j = 0; j < evict; j += 64)
            buf[j]++;
        if (code)
            code_sweep();
        t0 = now_ns();
        if (op_call(o, op) != CUDA_SUCCESS)
            return -1;
        in += now_ns() - t0;
    }
    return (int64_t)in;
}

/* Child: "<op> <median ns per call>" per operation on stdout. */
static int child(int batches, int calls, size_t evict)
{
    static double ns[MAX_BATCHES];
    struct ops o;
    struct timespec pause = {0, 1000000}; /* ~1 M records/s: the collector keeps up */
    volatile uint8_t *buf = evict ? calloc(evict, 1) : NULL;

    if (ops_init(&o) < 0 || (evict && buf == NULL)) {
        fprintf(stderr, "bench_shim: fake driver setup failed\n");
        return 3;
    }
    /* Past the sub-ring's first lap: in a long run every record goes to a
     * line written (and read by the collector) before, never to fresh memory. */
    for (int i = 0; i < WARM_CALLS; i++) {
        if (op_call(&o, 0) != CUDA_SUCCESS)
            return 3;
        if (i % 200 == 199) /* let the collector keep up: no drop */
            nanosleep(&pause, NULL);
    }
    for (int op = 0; op < N_OPS; op++) {
        for (int b = 0; b < batches; b++) {
            int64_t in = evict ? cold_calls(&o, op, calls, buf, evict, 0)
                               : hot_calls(&o, op, calls);
            if (in < 0)
                return 3;
            ns[b] = (double)in / calls;
            nanosleep(&pause, NULL);
        }
        printf("%s %.2f\n", op_names[op], median(ns, batches));
    }
    return 0;
}

/* Child of bench/shim_ir.sh: @p n calls of @p op, back to back or each
 * after writing @p evict bytes of other memory and running 64 KiB of code. */
static int calls_only(int op, int n, size_t evict)
{
    volatile uint8_t *buf = evict ? calloc(evict, 1) : NULL;
    struct ops o;

    if (op < 0 || op >= N_OPS || n < 0 || (evict && buf == NULL) || ops_init(&o) < 0)
        return 3;
    return (evict ? cold_calls(&o, op, n, buf, evict, 1) : hot_calls(&o, op, n)) < 0 ? 3 : 0;
}

/* ---------------- parent: run the modes, interleaved ---------------- */

struct bench {
    char dir[4096];  /* where bench_shim, libcudaspy.so and cudaspy live */
    char run[4200];  /* run file of the recording mode */
    int batches, calls, evict_kb;
    double v[MODE_N][N_OPS][MAX_ROUNDS];
    uint64_t dropped;
};

static int self_dir(char *dir, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", dir, n - 1);
    char *slash;

    if (len <= 0)
        return -1;
    dir[len] = '\0';
    slash = strrchr(dir, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return 0;
}

static void child_exec(const struct bench *b, enum mode m, int out_fd)
{
    char self[4200], shim[4200], launcher[4200], nb[16], nc[16], ne[16];

    snprintf(self, sizeof(self), "%s/bench_shim", b->dir);
    snprintf(shim, sizeof(shim), "%s/libcudaspy.so", b->dir);
    snprintf(launcher, sizeof(launcher), "%s/cudaspy", b->dir);
    snprintf(nb, sizeof(nb), "%d", b->batches);
    snprintf(nc, sizeof(nc), "%d", b->calls);
    snprintf(ne, sizeof(ne), "%d", b->evict_kb);
    dup2(out_fd, 1);
    unsetenv("LD_PRELOAD");
    unsetenv("CUDASPY_SOCK");
    unsetenv("CUDASPY_DISABLE");
    if (m == MODE_DISABLED) {
        setenv("LD_PRELOAD", shim, 1);
        setenv("CUDASPY_DISABLE", "1", 1);
    }
    if (m == MODE_RECORD)
        execl(launcher, "cudaspy", "record", "-o", b->run, "--no-host", "-q", "--", self,
              "--child", nb, nc, ne, (char *)NULL);
    else if (m == MODE_PAUSED)
        execl(launcher, "cudaspy", "record", "-o", b->run, "--no-host", "-q", "--capture",
              getenv("BENCH_CAPTURE") ? getenv("BENCH_CAPTURE") : "signal", "--", self,
              "--child", nb, nc, ne, (char *)NULL);
    else
        execl(self, "bench_shim", "--child", nb, nc, ne, (char *)NULL);
    _exit(127);
}

/* Run one mode once; parse the child's lines into b->v[m][*][round]. */
static int run_mode(struct bench *b, enum mode m, int round)
{
    int fds[2], st;
    char line[256], name[128];
    double ns;
    FILE *f;
    pid_t pid;

    if (pipe(fds) < 0)
        return -errno;
    pid = fork();
    if (pid == 0)
        child_exec(b, m, fds[1]);
    close(fds[1]);
    f = fdopen(fds[0], "r");
    while (f && fgets(line, sizeof(line), f))
        for (int op = 0; op < N_OPS; op++)
            if (sscanf(line, "%127s %lf", name, &ns) == 2 && strcmp(name, op_names[op]) == 0)
                b->v[m][op][round] = ns;
    if (f)
        fclose(f);
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_shim: %s round %d: child failed\n", mode_names[m], round);
        return -1;
    }
    return 0;
}

static void run_dropped(struct bench *b)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err;

    if (r && cs_run_open(r, b->run, &err) == 0)
        b->dropped += cs_run_meta_u64(r, "cuda_dropped", 0);
    cs_run_free(r);
}

static void header(int argc, char **argv)
{
    char commit[64] = "unknown", host[256] = "unknown";
    FILE *f = popen("git -C '" BENCH_SRC_DIR "' rev-parse --short HEAD 2>/dev/null", "r");

    if (f) {
        if (fscanf(f, "%63s", commit) != 1)
            snprintf(commit, sizeof(commit), "unknown");
        pclose(f);
    }
    gethostname(host, sizeof(host) - 1);
    printf("# cudaspy-bench commit=%s host=%s cmd=\"bench_shim", commit, host);
    for (int i = 1; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\"\n");
}

static void report(struct bench *b, int rounds)
{
    double d[MAX_ROUNDS];
    long n = (long)rounds * b->batches * b->calls;

    for (int op = 0; op < N_OPS; op++) {
        char subj[64];
        snprintf(subj, sizeof(subj), "shim.%s", op_names[op]);
        for (int r = 0; r < rounds; r++)
            d[r] = b->v[MODE_PLAIN][op][r];
        printf("%-30s plain_p50       %8.1f  ns     n=%ld\n", subj, median(d, rounds), n);
        for (int r = 0; r < rounds; r++)
            d[r] = b->v[MODE_DISABLED][op][r] - b->v[MODE_PLAIN][op][r];
        printf("%-30s disabled_added  %8.1f  ns     n=%ld rounds=%d interleaved\n", subj,
               median(d, rounds), n, rounds);
        for (int r = 0; r < rounds; r++)
            d[r] = b->v[MODE_RECORD][op][r] - b->v[MODE_PLAIN][op][r];
        printf("%-30s overhead_p50    %8.1f  ns     n=%ld rounds=%d interleaved "
               "dropped=%llu\n",
               subj, median(d, rounds), n, rounds, (unsigned long long)b->dropped);
        for (int r = 0; r < rounds; r++)
            d[r] = b->v[MODE_PAUSED][op][r] - b->v[MODE_PLAIN][op][r];
        printf("%-30s paused_added    %8.1f  ns     n=%ld rounds=%d interleaved\n", subj,
               median(d, rounds), n, rounds);
    }
}

int main(int argc, char **argv)
{
    static struct bench b;
    int rounds;

    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--calls") == 0)
        return calls_only(atoi(argv[2]), atoi(argv[3]), argc == 5 ? (size_t)atoi(argv[4]) << 10 : 0);
    if (argc >= 2 && strcmp(argv[1], "--child") == 0)
        return child(argc > 2 ? atoi(argv[2]) : 200, argc > 3 ? atoi(argv[3]) : 1000,
                     argc > 4 ? (size_t)atoi(argv[4]) << 10 : 0);
    rounds = argc > 1 ? atoi(argv[1]) : 5;
    b.batches = argc > 2 ? atoi(argv[2]) : 200;
    b.calls = argc > 3 ? atoi(argv[3]) : 1000;
    b.evict_kb = argc > 4 ? atoi(argv[4]) : 0;
    if (rounds < 1 || rounds > MAX_ROUNDS || b.batches < 1 || b.batches > MAX_BATCHES ||
        b.calls < 1 || b.evict_kb < 0 || b.evict_kb > (1 << 20) ||
        self_dir(b.dir, sizeof(b.dir)) < 0) {
        fprintf(stderr, "usage: bench_shim [ROUNDS<=64] [BATCHES<=4096] [CALLS] [EVICT_KB]\n");
        return 2;
    }
    snprintf(b.run, sizeof(b.run), "/tmp/bench_shim.%d.lmdb", (int)getpid());
    header(argc, argv);
    fflush(stdout);
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < MODE_N; m++) {
            if (run_mode(&b, (enum mode)m, r) < 0)
                return 3;
            if (m == MODE_RECORD)
                run_dropped(&b);
        }
    report(&b, rounds);
    unlink(b.run);
    char lock[4300];
    snprintf(lock, sizeof(lock), "%s-lock", b.run);
    unlink(lock);
    return 0;
}
