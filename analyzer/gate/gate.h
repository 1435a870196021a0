/* gate/gate.h: the CI regression gate: compares a latency statistic per API (and
 * per kernel) of a candidate run against a baseline and decides pass/fail.
 * gate_eval() is pure (two summaries in, rows out); gate.c's gate_main and
 * summary_main are the command-line front ends (commands.h). */
#ifndef CUDASPY_ANALYZER_GATE_H
#define CUDASPY_ANALYZER_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "summary.h"

struct gate_opts {
    int metric;             /* enum summary_q; default SUMMARY_P99 */
    double max_ratio;       /* fail above this new/base ratio; default 1.5 */
    double min_delta_us;    /* ... and above this absolute increase; default 50 */
    uint64_t min_calls;     /* both sides need this many calls; default 100 */
    int by_kernel;          /* also compare per (API, kernel name) */
    int use_ci;             /* bootstrap CI; a CI that includes 1 never fails; default 1 */
    unsigned resamples;     /* bootstrap resamples; default 1000 */
    uint64_t seed;          /* bootstrap seed; default 1 */
    const char *const *apis; /* only these APIs (NULL = all) */
    int napis;
};

enum gate_verdict {
    GATE_OK = 0,
    GATE_REGRESSED,  /* the only verdict that fails the gate */
    GATE_NOISY,      /* over both thresholds but the CI of the ratio includes 1 */
    GATE_FEW_CALLS,  /* a side has fewer than min_calls calls: not judged */
    GATE_ONLY_BASE,  /* API missing from the candidate */
    GATE_ONLY_NEW    /* API absent from the baseline */
};

struct gate_row {
    const char *api, *kernel; /* borrowed from the summaries */
    uint64_t n_base, n_new;   /* calls */
    uint64_t base_ns, new_ns; /* the metric on each side */
    double ratio;             /* new / base */
    double ci_lo, ci_hi;      /* bootstrap interval of the ratio, if has_ci */
    int has_ci;
    enum gate_verdict verdict;
};

/** Defaults for every field. */
void gate_opts_init(struct gate_opts *o);

/** Compare @p base and @p cand. @return 0 or -ENOMEM; *rows (malloc'd, caller
 * frees; borrows names from the summaries) and *n get the comparison. */
int gate_eval(const struct summary *base, const struct summary *cand, const struct gate_opts *o,
              struct gate_row **rows, size_t *n);

/** Short name of @p v ("ok", "REGRESSED", ...). */
const char *gate_verdict_name(enum gate_verdict v);

#endif
