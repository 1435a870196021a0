/* clock.h: TSC to CLOCK_MONOTONIC conversion for records the shim stamps
 * with raw rdtsc (CS_CLOCK_TSC). The collector takes (tsc, monotonic) pairs
 * at start and every 100 ms; conversion interpolates from the newest pair
 * with the slope of the last second or so (since the first pair at first):
 * CLOCK_MONOTONIC is slewed by NTP and the TSC is not, and GPU times come
 * in CLOCK_MONOTONIC (CUPTI), so a record must land within a fraction of a
 * microsecond of where the other clock puts it. */
#ifndef CUDASPY_SAMPLER_CLOCK_H
#define CUDASPY_SAMPLER_CLOCK_H

#include <stdint.h>

#define CLOCK_HIST 16 /* recent pairs kept for the slope (1.6 s at 100 ms) */

struct clock_cal {
    uint64_t tsc0, ns0;   /* first pair */
    uint64_t tsc1, ns1;   /* newest pair */
    double ns_per_tick;   /* slope; 0 until a second pair exists far enough apart */
    double first_guess;   /* from a short busy-wait at init, used before that */
    uint64_t htsc[CLOCK_HIST], hns[CLOCK_HIST]; /* recent pairs, a ring */
    unsigned hn;          /* pairs ever put in the ring */
};

/** CLOCK_MONOTONIC now, in ns. */
uint64_t clock_mono_ns(void);

/** Take the first pair (and a rough slope from a ~2 ms measurement). */
void clock_cal_init(struct clock_cal *c);

/** Take a new pair; call every 100 ms or so. */
void clock_cal_update(struct clock_cal *c);

/** Convert raw TSC ticks to CLOCK_MONOTONIC ns. */
static inline uint64_t clock_tsc_to_ns(const struct clock_cal *c, uint64_t tsc)
{
    double slope = c->ns_per_tick > 0 ? c->ns_per_tick : c->first_guess;
    double d = (double)(int64_t)(tsc - c->tsc1) * slope;

    return (uint64_t)((int64_t)c->ns1 + (int64_t)d);
}

/** Ticks per second of the current calibration (0 if unknown). */
uint64_t clock_tsc_hz(const struct clock_cal *c);

#endif
