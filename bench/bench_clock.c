/* bench_clock.c: what one clock read costs on this host, the floor of every
 * record the shim writes (two reads per call: entry and exit). rdtsc is what
 * the shim uses where the kernel's clocksource is tsc; clock_gettime
 * (CLOCK_MONOTONIC, vDSO) where it is not. On a virtual machine either may
 * cost far more than on bare metal. Prints the median of ROUNDS timed loops
 * of READS reads each.
 * Usage: bench_clock [ROUNDS=7] [READS=5000000] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define MAX_ROUNDS 64

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

/* ns per read of clock @p which (0 = rdtsc, 1 = clock_gettime) over @p n reads */
static double time_reads(int which, long n)
{
    uint64_t t0 = now_ns(), acc = 0;

    for (long i = 0; i < n; i++) {
#if defined(__x86_64__) || defined(__i386__)
        if (which == 0) {
            acc += __rdtsc();
            continue;
        }
#endif
        acc += now_ns();
    }
    sink = acc;
    return (double)(now_ns() - t0) / (double)n;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_reads(int which, int rounds, long n)
{
    double v[MAX_ROUNDS];

    for (int r = 0; r < rounds; r++)
        v[r] = time_reads(which, n);
    qsort(v, (size_t)rounds, sizeof(v[0]), cmp_d);
    return v[rounds / 2];
}

static void print_clocksource(void)
{
    char buf[64] = "?";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

    if (f) {
        if (fscanf(f, "%63s", buf) != 1)
            buf[0] = '?', buf[1] = '\0';
        fclose(f);
    }
    printf("bench_clock: clocksource %s\n", buf);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    long n = argc > 2 ? atol(argv[2]) : 5000000;

    if (rounds < 1 || rounds > MAX_ROUNDS || n < 1) {
        fprintf(stderr, "usage: bench_clock [ROUNDS 1..%d] [READS >= 1]\n", MAX_ROUNDS);
        return 2;
    }
    print_clocksource();
#if defined(__x86_64__) || defined(__i386__)
    printf("bench_clock: rdtsc: %.1f ns per read (median of %d x %ld)\n",
           median_reads(0, rounds, n), rounds, n);
#endif
    printf("bench_clock: clock_gettime(CLOCK_MONOTONIC): %.1f ns per read (median of %d x %ld)\n",
           median_reads(1, rounds, n), rounds, n);
    return 0;
}
