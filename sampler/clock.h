/* clock.h: TSC to CLOCK_MONOTONIC conversion for records the shim stamps
 * with raw rdtsc (CS_CLOCK_TSC). The collector takes (tsc, monotonic) pairs
 * at start and every 100 ms: CLOCK_MONOTONIC is slewed by NTP and the TSC is
 * not, and GPU times come in CLOCK_MONOTONIC (CUPTI), so a record must land
 * within a fraction of a microsecond of where the other clock puts it.
 * The conversion is continuous and increasing: each pair starts a segment
 * where the last one's line got to (not at the pair itself, whose small
 * error would make time jump back and two calls of one thread overlap),
 * with the slope of the last second corrected to reach the measured clock
 * by the next pair. Records are converted by the segment of their own
 * time, so one drained late lands as one drained at once. */
#ifndef CUDASPY_SAMPLER_CLOCK_H
#define CUDASPY_SAMPLER_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#define CLOCK_HIST 16 /* recent pairs kept for the slope (1.6 s at 100 ms) */
#define CLOCK_SEGS 16 /* conversion segments kept (1.6 s of late records) */

/* A piece of the conversion: ns = ns + (tick - tsc) * slope from tsc on. */
struct clock_seg {
    uint64_t tsc, ns;
    double slope;
};

struct clock_cal {
    uint64_t tsc0, ns0;   /* first pair */
    uint64_t tsc1, ns1;   /* newest pair */
    double ns_per_tick;   /* measured slope; 0 until two pairs are far enough apart */
    double first_guess;   /* from a short busy-wait at init, used before that */
    uint64_t htsc[CLOCK_HIST], hns[CLOCK_HIST]; /* recent pairs, a ring */
    unsigned hn;          /* pairs ever put in the ring */
    struct clock_seg seg[CLOCK_SEGS]; /* a ring, the newest at (nseg - 1) */
    unsigned nseg;        /* segments ever started (>= 1 after init) */
};

/** CLOCK_MONOTONIC now, in ns. */
uint64_t clock_mono_ns(void);

/** Read something between two CLOCK_MONOTONIC reads, up to @p tries times
 * (stopping at a bracket of @p tight_ns or less), and keep the tightest: a
 * preemption between the reads would move the pair. @p read fills the
 * @p size bytes at its second argument on each try; @p best gets the
 * tightest try's (@p tmp is a scratch slot of the same size). Returns the
 * middle of that bracket, the monotonic time @p best goes with. */
uint64_t clock_bracket(int tries, uint64_t tight_ns, void (*read)(void *arg, void *val),
                       void *arg, void *best, void *tmp, size_t size);

/** Take the first pair (and a rough slope from a ~2 ms measurement). */
void clock_cal_init(struct clock_cal *c);

/** Take a new pair; call every 100 ms or so. */
void clock_cal_update(struct clock_cal *c);

static inline uint64_t clock_seg_ns(const struct clock_seg *s, uint64_t tsc)
{
    return (uint64_t)((int64_t)s->ns + (int64_t)((double)(int64_t)(tsc - s->tsc) * s->slope));
}

/** Convert raw TSC ticks to CLOCK_MONOTONIC ns: by the newest segment that
 * starts at or before @p tsc (the oldest kept one before them all). */
static inline uint64_t clock_tsc_to_ns(const struct clock_cal *c, uint64_t tsc)
{
    unsigned kept = c->nseg < CLOCK_SEGS ? c->nseg : CLOCK_SEGS;
    const struct clock_seg *s = &c->seg[(c->nseg - 1) % CLOCK_SEGS];

    for (unsigned k = 1; k < kept && tsc < s->tsc; k++)
        s = &c->seg[(c->nseg - 1 - k) % CLOCK_SEGS];
    return clock_seg_ns(s, tsc);
}

/** Ticks per second of the current calibration (0 if unknown). */
uint64_t clock_tsc_hz(const struct clock_cal *c);

#endif
