/* demo_workload.c: the workload `make demo` traces: a training loop on the
 * simulated GPU of the fake driver (FAKECUDA_SIM=1, set here unless already
 * set), fed like a PyTorch DataLoader with fork workers.
 *   demo_workload [workers] [steps=1600] [rows=2097152]
 *       4 forked workers gather random rows of a 2M x 100 float array into
 *       freshly allocated batches and send them over pipes; the main process
 *       copies each batch from pageable memory, launches mlp_fwd_1..3 and
 *       synchronises. Workers and main compete for the CPUs: the GPU starves.
 *   demo_workload direct [steps=1600] [rows]
 *       control: the main process slices the array itself (contiguous rows,
 *       no workers, no copies into new buffers).
 * Prints what it ran, the time per step, a checksum of the batches and the
 * accuracy corpus's truth line (docs/accuracy.md): the time the main process
 * waited on the workers' pipes, its run-queue delay in the loop, and its
 * set-up from the first CUDA call to the first step. */
#include <cuda_runtime_api.h>

#include "fake_client.h"
#include "fakecuda.h"

#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NAME "demo_workload"
#define CHECK_RT(call) CLIENT_CHECK(NAME, call)

#define ROW_FLOATS 100
#define BATCH_ROWS 1024
#define BATCH_BYTES (BATCH_ROWS * ROW_FLOATS * sizeof(float))
#define N_WORKERS 4

static float *table; /* n_rows x ROW_FLOATS, shared copy-on-write with workers */
static size_t n_rows = 2u << 20;

static void mlp_fwd_1(void) {}
static void mlp_fwd_2(void) {}
static void mlp_fwd_3(void) {}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void fill_table(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    size_t n = n_rows * ROW_FLOATS;
    table = malloc(n * sizeof *table);
    if (table == NULL)
        CHECK_RT(cudaErrorMemoryAllocation);
    for (size_t i = 0; i < n; i++)
        table[i] = (float)(xorshift(&s) >> 40) * (1.0f / (1 << 24));
}

/* Augmentation passes over each row: enough CPU a batch (about 15 ms) that
 * 4 workers on 2 CPUs deliver a batch far slower than the GPU runs one
 * (2.5 ms): the GPU starves for data, the demo's point. */
#define AUGMENT_PASSES 4

/* A worker's per-batch work: gather random rows into a fresh buffer and
 * "augment" them (normalise each row), as a Dataset.__getitem__ + collate. */
static float *make_batch(uint64_t *seed)
{
    float *b = malloc(BATCH_BYTES); /* above the mmap threshold: fresh pages each time */
    if (b == NULL)
        return NULL;
    for (int r = 0; r < BATCH_ROWS; r++) {
        const float *src = table + (xorshift(seed) % n_rows) * ROW_FLOATS;
        float *dst = b + (size_t)r * ROW_FLOATS, sum = 0, sq = 0;
        for (int c = 0; c < ROW_FLOATS; c++) {
            float v = logf(1.0f + src[c]) * expf(-src[c] * 0.5f);
            dst[c] = v;
            sum += v;
            sq += v * v;
        }
        float mean = sum / ROW_FLOATS, sd = sqrtf(sq / ROW_FLOATS - mean * mean + 1e-6f);
        for (int k = 0; k < AUGMENT_PASSES; k++)
            for (int c = 0; c < ROW_FLOATS; c++)
                dst[c] = tanhf((dst[c] - mean) / sd) * (1.0f - 0.01f * (float)k);
    }
    return b;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The main thread's run-queue delay so far (schedstat's second field), 0
 * where the kernel has no schedstat. */
static double runq_delay_s(void)
{
    unsigned long long run = 0, delay = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%llu %llu", &run, &delay) != 2)
        delay = 0;
    fclose(f);
    return (double)delay / 1e9;
}

/* Seconds the main process waited in read() on the workers' pipes, less
 * its run-queue delay there (the workers' CPU time: contention's share). */
static double pipe_wait_s;

static int read_all(int fd, void *p, size_t n)
{
    double t0 = now_s(), rq0 = runq_delay_s();
    int rc = 0;
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r <= 0) {
            rc = -1;
            break;
        }
        c += r;
        n -= (size_t)r;
    }
    pipe_wait_s += (now_s() - t0) - (runq_delay_s() - rq0);
    return rc;
}

/* Worker w produces batches w, w + N_WORKERS, ... of `steps`; leaves with _exit. */
static void worker(int w, int fd, long steps)
{
    uint64_t seed = 0x1234567ull + (uint64_t)w * 7919;
    for (long i = w; i < steps; i += N_WORKERS) {
        float *b = make_batch(&seed);
        if (b == NULL || client_write_all(fd, b, BATCH_BYTES) != 0)
            _exit(3);
        free(b);
    }
    _exit(0);
}

static void start_workers(int fds[N_WORKERS], long steps)
{
    for (int w = 0; w < N_WORKERS; w++) {
        int p[2];
        if (pipe(p) != 0)
            CHECK_RT(cudaErrorUnknown);
        fcntl(p[1], F_SETPIPE_SZ, 2 * (int)BATCH_BYTES); /* prefetch about 2 batches */
        pid_t pid = fork();
        if (pid < 0)
            CHECK_RT(cudaErrorUnknown);
        if (pid == 0) {
            close(p[0]);
            worker(w, p[1], steps);
        }
        close(p[1]);
        fds[w] = p[0];
    }
}

struct trainer {
    cudaStream_t s;
    float *d_batch, *d_act;
};

/* One training step on the simulated GPU: upload, three layers, sync. */
static void train_step(struct trainer *t, const float *batch)
{
    void *args[] = {&t->d_batch, &t->d_act};
    dim3 grid = {BATCH_ROWS / 128, 1, 1}, block = {128, 1, 1};
    CHECK_RT(cudaMemcpyAsync(t->d_batch, batch, BATCH_BYTES, cudaMemcpyHostToDevice, t->s));
    CHECK_RT(cudaLaunchKernel((const void *)mlp_fwd_1, grid, block, args, 0, t->s));
    CHECK_RT(cudaLaunchKernel((const void *)mlp_fwd_2, grid, block, args, 0, t->s));
    CHECK_RT(cudaLaunchKernel((const void *)mlp_fwd_3, grid, block, args, 0, t->s));
    CHECK_RT(cudaStreamSynchronize(t->s));
}

static uint64_t run_workers(struct trainer *t, long steps)
{
    int fds[N_WORKERS];
    uint64_t h = CLIENT_FNV_INIT;
    start_workers(fds, steps);
    for (long i = 0; i < steps; i++) {
        float *batch = malloc(BATCH_BYTES);
        if (batch == NULL || read_all(fds[i % N_WORKERS], batch, BATCH_BYTES) != 0)
            CHECK_RT(cudaErrorUnknown);
        train_step(t, batch);
        h = client_fnv(h, batch, 64);
        free(batch);
    }
    for (int w = 0; w < N_WORKERS; w++) {
        int st;
        close(fds[w]);
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            CHECK_RT(cudaErrorUnknown);
    }
    return h;
}

static uint64_t run_direct(struct trainer *t, long steps)
{
    uint64_t h = CLIENT_FNV_INIT;
    for (long i = 0; i < steps; i++) {
        size_t row = (size_t)i * BATCH_ROWS % (n_rows - BATCH_ROWS + 1);
        const float *batch = table + row * ROW_FLOATS;
        train_step(t, batch);
        h = client_fnv(h, batch, 64);
    }
    return h;
}

/* The truth line of the accuracy corpus (scripts/accuracy.py): the workers
 * cost the main process the time it waited on their pipes and the time they
 * kept it from the CPU (run-queue delay) in the loop; gpu_ns is the
 * simulated kernel and copy time (pageable copies, 10 GB/s by default). */
static void print_truth(int is_direct, double loop_s, double setup_s, double runq_s, long steps)
{
    const char *kus = getenv("FAKECUDA_KERNEL_US"), *gbps = getenv("FAKECUDA_PAGEABLE_GBPS");
    double step_gpu_s = (1200 + 900 + 400) / 1e6 + BATCH_BYTES / ((gbps ? atof(gbps) : 10) * 1e9);
    if (kus && strcmp(kus, "mlp_fwd_1=1200,mlp_fwd_2=900,mlp_fwd_3=400") != 0)
        step_gpu_s = 0; /* other kernel times: unknown here */
    printf("cudaspy-truth: {\"case\":\"demo\",\"planted\":\"%s\",\"truth_ns\":%.0f,"
           "\"loop_ns\":%.0f,\"steps\":%ld,\"setup_ns\":%.0f,\"gpu_ns\":%.0f",
           is_direct ? "none" : "data_pipeline_starvation", is_direct ? 0 : pipe_wait_s * 1e9,
           loop_s * 1e9, steps, setup_s * 1e9, step_gpu_s * (double)steps * 1e9);
    /* the run-queue delay (the workers' CPU against the main's) is information:
     * who held the CPU, tree or outside, cannot be told from in here */
    printf(",\"runq_ns\":%.0f}\n", runq_s * 1e9);
}

int main(int argc, char **argv)
{
    int is_direct = argc > 1 && strcmp(argv[1], "direct") == 0;
    long steps = client_arg(argc, argv, 2, 1600);
    struct trainer t;
    n_rows = (size_t)client_arg(argc, argv, 3, (long)n_rows);
    if (n_rows < BATCH_ROWS)
        n_rows = BATCH_ROWS;
    setenv("FAKECUDA_SIM", "1", 0);
    setenv("FAKECUDA_KERNEL_US", "mlp_fwd_1=1200,mlp_fwd_2=900,mlp_fwd_3=400", 0);
    printf("%s: simulated GPU (fake driver), %s, %ld steps of %d x %d floats\n", NAME,
           is_direct ? "direct slicing in the main process" : "4 fork workers over pipes",
           steps, BATCH_ROWS, ROW_FLOATS);
    fflush(stdout);
    double t_cuda = now_s();
    CHECK_RT(fakert_register_kernel((const void *)mlp_fwd_1, "mlp_fwd_1"));
    CHECK_RT(fakert_register_kernel((const void *)mlp_fwd_2, "mlp_fwd_2"));
    CHECK_RT(fakert_register_kernel((const void *)mlp_fwd_3, "mlp_fwd_3"));
    CHECK_RT(cudaStreamCreate(&t.s));
    CHECK_RT(cudaMalloc((void **)&t.d_batch, BATCH_BYTES));
    CHECK_RT(cudaMalloc((void **)&t.d_act, BATCH_BYTES));
    fill_table();
    double t0 = now_s(), rq0 = runq_delay_s();
    uint64_t h = is_direct ? run_direct(&t, steps) : run_workers(&t, steps);
    double secs = now_s() - t0;
    CHECK_RT(cudaFree(t.d_act));
    CHECK_RT(cudaFree(t.d_batch));
    CHECK_RT(cudaStreamDestroy(t.s));
    printf("%s: %ld steps in %.1f s (%.2f ms/step)\n", NAME,
           steps, secs, secs * 1e3 / (double)steps);
    printf("checksum %016llx\n", (unsigned long long)h);
    print_truth(is_direct, secs, t0 - t_cuda, runq_delay_s() - rq0, steps);
    return fake_expect_write(NAME, fakert_expect_write, h) == 0 ? 0 : 3;
}
