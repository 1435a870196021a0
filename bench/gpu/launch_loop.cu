/* launch_loop.cu: the launch-overhead benchmark of issue 3: an empty kernel
 * launched back to back, with nothing else in the loop. The shim's cost is
 * largest here, since every launch is a recorded call (two with the shared
 * runtime: the runtime call and the driver call nested in it).
 *   launch_loop [launches=100000] [repeats=7]
 * Runs the loop `repeats` times after a warm-up and prints each time per
 * launch, then `elapsed:` = the median loop time in seconds and
 * `us_per_launch:` = the median per launch. Built twice by gpu-check.sh:
 * the nvcc default (static runtime) and -cudart shared.
 * With $CS_STEP_LOG set, every CHUNK (500) launches of the timed loops is a
 * "step": the file gets CLOCK_MONOTONIC ns at the first loop's start, then at
 * each step's end, as ddp.py's step log, for the in-run measure of
 * `cudaspy record --duty` (bench/gpu/collect.py). No sync ends a step: a
 * step is the host's time to enqueue its launches, as in the plain loop. */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include <cuda_runtime.h>

__global__ void empty_kernel() {}

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "launch_loop: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

enum { CHUNK = 500 };
static std::vector<long long> steps; /* reserved up front when logging */

static long long mono_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One loop of @p n launches and a final sync; seconds. @p log: note each
 * CHUNK's end in steps. */
static double one_loop(long n, bool log)
{
    auto t0 = std::chrono::steady_clock::now();
    if (log && steps.empty())
        steps.push_back(mono_ns());
    for (long i = 0; i < n; i += CHUNK) {
        for (long j = i; j < n && j < i + CHUNK; j++)
            empty_kernel<<<1, 1>>>();
        if (log)
            steps.push_back(mono_ns());
    }
    check(cudaDeviceSynchronize(), "sync");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    const char *log = getenv("CS_STEP_LOG");
    std::vector<double> t;

    if (n <= 0 || reps <= 0 || reps > 1000) {
        fprintf(stderr, "usage: launch_loop [launches>0] [repeats 1-1000]\n");
        return 2;
    }
    check(cudaFree(0), "init");
    if (log && *log)
        steps.reserve((size_t)reps * (n / CHUNK + 2) + 1);
    one_loop(n / 10 + 1, false); /* warm-up: module load, queues */
    for (int r = 0; r < reps; r++) {
        t.push_back(one_loop(n, log && *log));
        printf("loop %d: %.4f us/launch\n", r, t.back() * 1e6 / n);
    }
    std::sort(t.begin(), t.end());
    double med = t[t.size() / 2];
    printf("result: %ld launches x %d\n", n, reps);
    printf("us_per_launch: %.4f\n", med * 1e6 / n);
    printf("elapsed: %.6f\n", med);
    if (log && *log) {
        FILE *f = fopen(log, "w");
        if (f == NULL) {
            perror(log);
            return 1;
        }
        for (long long x : steps)
            fprintf(f, "%lld\n", x);
        if (fclose(f) != 0) {
            perror(log);
            return 1;
        }
    }
    return 0;
}
