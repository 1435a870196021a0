/* capture_workload.c: a training loop that bounds its own capture ranges,
 * for cli.capture_program (test/cli/capture_program.sh, issue 33): each
 * step is a top-level NVTX range "step" holding LAUNCHES launches and a
 * sync; every 4th step also runs an "eval" range of 2 launches; steps PA
 * to PB are wrapped in cudaProfilerStart/Stop (inside their "step"
 * ranges); steps SA to SB sleep SLOW_US instead of STEP_US (the slow
 * window a flight recorder's trigger must keep, cli.flight_keep). Prints
 * the truth the test checks a run against, one line:
 *   capture_workload: steps N launches L evals_at 4 profiler PA-PB slow SA-SB at T0-T1
 * (T0, T1: CLOCK_MONOTONIC ns, the run file's clock, of step SA's start and
 * step SB's end)
 * Usage: capture_workload STEPS LAUNCHES PA PB [STEP_US=2000 [SA SB SLOW_US]] */
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fake_client.h"
#include "fakecuda.h"

#define NAME "capture_workload"
#define CHECK_RT(call) CLIENT_CHECK(NAME, call)

static void k_step(void) {}
static void k_eval(void) {}

static void launch(void (*fn)(void), int n, cudaStream_t s)
{
    dim3 grid = {1, 1, 1}, block = {32, 1, 1};
    void *args[1] = {0};

    for (int i = 0; i < n; i++)
        CHECK_RT(cudaLaunchKernel((const void *)fn, grid, block, args, 0, s));
}

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pause_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};

    nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
    cudaStream_t s;
    int steps, launches, pa, pb, sa = 0, sb = 0;
    long step_us, slow_us = 0;
    uint64_t slow_t0 = 0, slow_t1 = 0;

    if (argc < 5) {
        fprintf(stderr, "usage: " NAME " STEPS LAUNCHES PA PB [STEP_US [SA SB SLOW_US]]\n");
        return 2;
    }
    steps = atoi(argv[1]), launches = atoi(argv[2]), pa = atoi(argv[3]), pb = atoi(argv[4]);
    step_us = argc > 5 ? atol(argv[5]) : 2000;
    if (argc > 8)
        sa = atoi(argv[6]), sb = atoi(argv[7]), slow_us = atol(argv[8]);
    CHECK_RT(fakert_register_kernel((const void *)k_step, "k_step"));
    CHECK_RT(fakert_register_kernel((const void *)k_eval, "k_eval"));
    CHECK_RT(cudaStreamCreate(&s));
    for (int i = 1; i <= steps; i++) {
        if (i == sa)
            slow_t0 = now_ns();
        nvtxRangePushA("step");
        if (i == pa)
            CHECK_RT(cudaProfilerStart());
        launch(k_step, launches, s);
        if (i % 4 == 0) {
            nvtxRangePushA("eval");
            launch(k_eval, 2, s);
            nvtxRangePop();
        }
        CHECK_RT(cudaStreamSynchronize(s));
        pause_us(i >= sa && i <= sb ? slow_us : step_us);
        if (i == pb)
            CHECK_RT(cudaProfilerStop());
        nvtxRangePop();
        if (i == sb)
            slow_t1 = now_ns();
    }
    CHECK_RT(cudaStreamDestroy(s));
    printf(NAME ": steps %d launches %d evals_at 4 profiler %d-%d slow %d-%d at %" PRIu64 "-%" PRIu64
                "\n", steps, launches, pa, pb, sa, sb, slow_t0, slow_t1);
    return 0;
}
