/* model/clocks.h: the runs of several hosts on one timeline (issue 32,
 * docs/multihost.md). Runs whose meta host and boot_id agree share one
 * CLOCK_MONOTONIC (a clock domain); the first run's domain is the
 * reference. Every other domain is aligned in two stages:
 *  1. coarse: its clock pairs (meta clock_pairs, PTP where every domain has
 *     it, else CLOCK_REALTIME) against the reference's, a line fitted to
 *     each so a drifting clock is followed;
 *  2. fine: the collectives the ranks share. A collective ends at nearly
 *     the same moment on every rank, so do the host syncs that wait for it:
 *     the k-th outermost sync of the domain's busiest syncing thread is
 *     paired with the reference's k-th (the sequence may be shifted by a
 *     few sync points: set-up syncs), the differences of the tightest half
 *     are fitted with a line, offset and drift, and its standard error is
 *     the uncertainty.
 * The model's times are then moved onto the reference's timeline, so
 * every later stage (steps, stragglers, exports) sees one clock. */
#ifndef CUDASPY_ANALYZER_CLOCKS_H
#define CUDASPY_ANALYZER_CLOCKS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

struct cs_err;
struct model;

enum m_clock_how {
    M_CLOCK_SAME = 0,    /* the reference domain */
    M_CLOCK_REALTIME,    /* stage 1 only, on CLOCK_REALTIME */
    M_CLOCK_PTP,         /* stage 1 only, on PTP */
    M_CLOCK_COLLECTIVES, /* refined on collectives */
};

/* How run's times were moved: t' = t + off_ns + rate * (t - t0_ns). */
struct m_clock {
    uint32_t domain;   /* index of the first run of its domain */
    uint8_t how;       /* enum m_clock_how */
    uint8_t coarse_ptp; /* stage 1 used PTP */
    uint64_t t0_ns;    /* the run's own start, where off_ns holds */
    int64_t off_ns;
    double rate;       /* ns per ns (1e-6 = 1 ppm) */
    int64_t coarse_ns; /* stage 1's offset at t0_ns */
    double coarse_rate;
    uint64_t unc_ns;   /* 1-sigma uncertainty of off_ns; 0 unknown */
    uint64_t spread_ns; /* the kept differences' half range */
    uint64_t points;   /* sync points paired */
    int64_t lag;       /* this domain's sync k is the reference's k - lag */
};

/** Align the clock domains of @p m (model_load() calls it last) and move
 * every time of the model. @return 0 or -ENOMEM */
int clocks_align(struct model *m);

/** @p t_ns moved as @p k says. */
uint64_t clocks_shift(const struct m_clock *k, uint64_t t_ns);

/** The clocks of @p n runs (model_load()'s alignment, none of the rest of
 * the model) into @p out. @return 0, a run-file error (@p err), -ENOMEM */
int clocks_of_runs(const char *const *paths, int n, struct m_clock *out, struct cs_err *err);

/** A time of run @p run as the model has it (the records that stages read
 * from the run files themselves, model_scan()). */
uint64_t clocks_time(const struct model *m, uint32_t run, uint64_t t_ns);

/** The host of run @p run when the runs of @p m span several clock domains
 * (a name worth printing), else NULL. @return borrowed */
const char *clocks_host(const struct model *m, uint32_t run);

/** The "hosts" array of docs/json.md: one object per clock domain, NULL when
 * every run shares one. */
json_t *clocks_json(const struct model *m);

/** The HOSTS section of the text report from the report object @p j. */
void clocks_print(FILE *f, const json_t *j);

#endif
