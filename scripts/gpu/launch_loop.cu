/* launch_loop.cu: the launch-overhead benchmark of issue 3: an empty kernel
 * launched back to back, with nothing else in the loop. The shim's cost is
 * largest here, since every launch is a recorded call (two with the shared
 * runtime: the runtime call and the driver call nested in it).
 *   launch_loop [launches=100000] [repeats=7]
 * Runs the loop `repeats` times after a warm-up and prints each time per
 * launch, then `elapsed:` = the median loop time in seconds and
 * `us_per_launch:` = the median per launch. Built twice by gpu-check.sh:
 * the nvcc default (static runtime) and -cudart shared. */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

/* One loop of @p n launches and a final sync; seconds. */
static double one_loop(long n)
{
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i++)
        empty_kernel<<<1, 1>>>();
    check(cudaDeviceSynchronize(), "sync");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    std::vector<double> t;

    if (n <= 0 || reps <= 0 || reps > 1000) {
        fprintf(stderr, "usage: launch_loop [launches>0] [repeats 1-1000]\n");
        return 2;
    }
    check(cudaFree(0), "init");
    one_loop(n / 10 + 1); /* warm-up: module load, queues */
    for (int r = 0; r < reps; r++) {
        t.push_back(one_loop(n));
        printf("loop %d: %.4f us/launch\n", r, t.back() * 1e6 / n);
    }
    std::sort(t.begin(), t.end());
    double med = t[t.size() / 2];
    printf("result: %ld launches x %d\n", n, reps);
    printf("us_per_launch: %.4f\n", med * 1e6 / n);
    printf("elapsed: %.6f\n", med);
    return 0;
}
