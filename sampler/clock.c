/* clock.c: the TSC calibration of clock.h. Owns the (tsc, monotonic)
 * pairs; deciding which records need conversion is the collector's job. */
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "clock.h"

uint64_t clock_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t read_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return clock_mono_ns();
#endif
}

uint64_t clock_bracket(int tries, uint64_t tight_ns, void (*read)(void *arg, void *val),
                       void *arg, void *best, void *tmp, size_t size)
{
    uint64_t width = UINT64_MAX, mid = 0;

    for (int i = 0; i < tries && width > tight_ns; i++) {
        uint64_t a = clock_mono_ns(), b;
        read(arg, tmp);
        b = clock_mono_ns();
        if (b - a < width) {
            width = b - a;
            mid = a + (b - a) / 2;
            memcpy(best, tmp, size);
        }
    }
    return mid;
}

static void read_tsc_into(void *arg, void *val)
{
    (void)arg;
    *(uint64_t *)val = read_tsc();
}

/* One pair: the TSC read between two clock reads, the tightest of 5. */
static void take_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t tmp;

    *tsc = 0;
    *ns = clock_bracket(5, 0, read_tsc_into, NULL, tsc, &tmp, sizeof(tmp));
}

void clock_cal_init(struct clock_cal *c)
{
    uint64_t t = 0, n = 0;

    *c = (struct clock_cal){0}; /* the history ring too: a caller's struct may hold garbage */
    take_pair(&c->tsc0, &c->ns0);
    do
        take_pair(&t, &n);
    while (n - c->ns0 < 2000000);
    c->first_guess = t > c->tsc0 ? (double)(n - c->ns0) / (double)(t - c->tsc0) : 1.0;
    c->tsc1 = t;
    c->ns1 = n;
    c->ns_per_tick = 0;
    c->seg[0] = (struct clock_seg){t, n, c->first_guess};
    c->nseg = 1;
}

/* Start a segment at the newest pair's tick: where the last segment's line
 * is there, with a slope that meets the measured clock one more interval
 * as long later. The correction is capped at 1 % of the slope, so time
 * always runs forward; a first guess far off takes a few intervals. */
static void seg_start(struct clock_cal *c)
{
    const struct clock_seg *last = &c->seg[(c->nseg - 1) % CLOCK_SEGS];
    double slope = c->ns_per_tick > 0 ? c->ns_per_tick : c->first_guess, fix;
    uint64_t at = clock_seg_ns(last, c->tsc1);

    if (c->tsc1 <= last->tsc)
        return;
    fix = ((double)(int64_t)(c->ns1 - at)) / (double)(c->tsc1 - last->tsc);
    if (fix > slope / 100)
        fix = slope / 100;
    if (fix < -slope / 100)
        fix = -slope / 100;
    c->seg[c->nseg % CLOCK_SEGS] = (struct clock_seg){c->tsc1, at, slope + fix};
    c->nseg++;
}

/* The slope from the newest pair back to the latest one at least a second
 * older, or to the first pair while the run is younger: long enough that
 * the pairs' own noise (tens of ns) does not matter, short enough to follow
 * NTP's slewing of CLOCK_MONOTONIC. */
void clock_cal_update(struct clock_cal *c)
{
    uint64_t bt = c->tsc0, bn = c->ns0;

    take_pair(&c->tsc1, &c->ns1);
    for (unsigned k = 1; k <= CLOCK_HIST && k <= c->hn; k++) {
        unsigned i = (c->hn - k) % CLOCK_HIST;
        if (c->ns1 - c->hns[i] >= 1000000000ull) {
            bt = c->htsc[i], bn = c->hns[i];
            break;
        }
    }
    c->htsc[c->hn % CLOCK_HIST] = c->tsc1;
    c->hns[c->hn % CLOCK_HIST] = c->ns1;
    c->hn++;
    if (c->ns1 - bn >= 20000000 && c->tsc1 > bt)
        c->ns_per_tick = (double)(c->ns1 - bn) / (double)(c->tsc1 - bt);
    seg_start(c);
}

uint64_t clock_tsc_hz(const struct clock_cal *c)
{
    double slope = c->ns_per_tick > 0 ? c->ns_per_tick : c->first_guess;

    return slope > 0 ? (uint64_t)(1e9 / slope) : 0;
}
