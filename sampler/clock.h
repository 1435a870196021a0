/* clock.h: TSC to CLOCK_MONOTONIC conversion for records the shim stamps
 * with raw rdtsc (CS_CLOCK_TSC). The collector takes (tsc, monotonic) pairs
 * at start and about every second; conversion interpolates from the newest
 * pair with the slope measured since the first one. */
#ifndef CUDASPY_SAMPLER_CLOCK_H
#define CUDASPY_SAMPLER_CLOCK_H

#include <stdint.h>

struct clock_cal {
    uint64_t tsc0, ns0;   /* first pair */
    uint64_t tsc1, ns1;   /* newest pair */
    double ns_per_tick;   /* slope; 0 until a second pair exists far enough apart */
    double first_guess;   /* from a short busy-wait at init, used before that */
};

/** CLOCK_MONOTONIC now, in ns. */
uint64_t clock_mono_ns(void);

/** Take the first pair (and a rough slope from a ~2 ms measurement). */
void clock_cal_init(struct clock_cal *c);

/** Take a new pair; call about once a second. */
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
