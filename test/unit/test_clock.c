/* test_clock.c: the TSC calibration (sampler/clock.h) on this machine's
 * real clocks. Its conversion must be increasing across the segments each
 * pair starts (two calls of one thread must not come out overlapping), must
 * give a record converted late the time it would have got at once, and
 * must stay within a few microseconds of CLOCK_MONOTONIC. */
#include <stdio.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "check.h"
#include "clock.h"

static uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return clock_mono_ns();
#endif
}

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Across 40 updates 25 ms apart: a tick just before each update converts
 * the same after it, and the first tick after it converts later. */
static int test_continuous_and_late_records_agree(void)
{
    struct clock_cal c;

    clock_cal_init(&c);
    for (int i = 0; i < 40; i++) {
        uint64_t before, b0, b1, after;
        pause_ms(25);
        before = ticks();
        b0 = clock_tsc_to_ns(&c, before);
        clock_cal_update(&c);
        b1 = clock_tsc_to_ns(&c, before);
        after = ticks();
        CHECK(b0 == b1);
        CHECK(clock_tsc_to_ns(&c, after) >= b1);
        /* across the new segment's start, tick by tick */
        CHECK(clock_tsc_to_ns(&c, c.tsc1) >= clock_tsc_to_ns(&c, c.tsc1 - 1));
    }
    CHECK(c.nseg == 41);
    return 0;
}

/* After a second of pairs the conversion is within 5 us of the clock. */
static int test_close_to_monotonic(void)
{
    struct clock_cal c;
    int64_t worst = 0;

    clock_cal_init(&c);
    for (int i = 0; i < 12; i++) {
        pause_ms(100);
        clock_cal_update(&c);
    }
    for (int i = 0; i < 20; i++) {
        uint64_t a = clock_mono_ns(), t = ticks(), b = clock_mono_ns();
        int64_t d = (int64_t)clock_tsc_to_ns(&c, t) - (int64_t)(a + (b - a) / 2);
        if (b - a > 2000)
            continue; /* preempted between the reads */
        d = d < 0 ? -d : d;
        worst = d > worst ? d : worst;
        pause_ms(5);
    }
    printf("worst distance from CLOCK_MONOTONIC: %lld ns\n", (long long)worst);
    CHECK(worst < 5000);
    return 0;
}

int main(void)
{
    RUN(test_continuous_and_late_records_agree);
    RUN(test_close_to_monotonic);
    return check_status();
}
