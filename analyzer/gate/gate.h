/* gate/gate.h: the CI regression gate: compares a candidate run against one
 * baseline or several (their spread is the run-to-run noise) and decides
 * pass/fail, on a latency statistic per API (and per
 * kernel; gate_eval) and on what the run did as a whole: step time, each
 * API's share of the CUDA-active window, GPU idle, new HIGH findings
 * (gate_eval_run, criteria.c). Both are pure (two summaries in, rows out);
 * gate.c's gate_main and summary_main are the command-line front ends
 * (commands.h). */
#ifndef CUDASPY_ANALYZER_GATE_H
#define CUDASPY_ANALYZER_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "summary.h"

/* gate_opts.criteria: what is judged (--criteria) */
#define GATE_C_STEPS 0x01    /* step time p50 and p99, else time per launch */
#define GATE_C_API_TIME 0x02 /* each API's total time as a share of the window */
#define GATE_C_P99 0x04      /* each API's --metric (gate_eval) */
#define GATE_C_GPU 0x08      /* GPU idle share */
#define GATE_C_FINDINGS 0x10 /* HIGH findings the baseline did not have */
#define GATE_C_ALL 0x1f

#define GATE_MAX_BASES 16 /* baselines one gate compares with (--baseline A B ...) */
#define GATE_KEEP_BASES 5  /* baselines the docs recommend keeping (docs/gate.md) */

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
    unsigned criteria;       /* GATE_C_* bits; default GATE_C_ALL */
    double max_step_ratio;   /* step time p50 (or time per launch): fail above; default 1.1 */
    double max_step_p99_ratio; /* step time p99: fail above; default 1.5 */
    uint64_t min_steps;      /* both runs need this many steps; default 20 */
    double max_api_ratio;    /* API time: fail when its share of the window grows more
                                than this ratio; default 1.5 */
    double min_api_share;    /* ... and by more than this share of the window; default 0.05 */
    double max_idle_rise;    /* GPU idle: fail when its share rises more than this; 0.10 */
};

enum gate_verdict {
    GATE_OK = 0,
    GATE_REGRESSED,  /* the only verdict that fails the gate */
    GATE_NOISY,      /* past the limit, but not the interval's lower bound or not past
                        the limit widened by the baselines' spread (enum gate_noise) */
    GATE_FEW_CALLS,  /* a side has fewer than min_calls calls: not judged */
    GATE_ONLY_BASE,  /* API missing from the candidate */
    GATE_ONLY_NEW,   /* API absent from the baseline */
    GATE_NOT_JUDGED  /* a run criterion one side cannot say (no steps, version 1...) */
};

/* Why a verdict past the limit is noisy, not regressed (issue 36). */
enum gate_noise {
    GATE_NOISE_NONE = 0,
    GATE_NOISE_INTERVAL, /* the ratio is past the limit, its interval's lower bound is not */
    GATE_NOISE_BOUND,    /* too few values to bound the quantile by order statistics */
    GATE_NOISE_SPREAD,   /* past the limit, not past the limit times the baselines' spread */
    GATE_NOISE_FEW       /* API time: too few calls a side for an interval of their mean */
};

/* The limit a verdict was judged against, and what stood between a ratio
 * past the option's limit and a regression. */
struct gate_margin {
    double lo;         /* lower bound of the ratio's interval; the ratio itself without one */
    double limit;      /* the limit applied: the option's, times spread (GPU idle: plus) */
    double spread;     /* largest / smallest baseline value, 1 with one baseline (GPU idle:
                          the difference, in share 0..1, 0 with one baseline) */
    unsigned nbase;    /* baselines that had the value */
    enum gate_noise noise;
    uint64_t settle_n; /* noise INTERVAL or BOUND: values a side (calls, steps) that would
                          settle it, an estimate; 0 when it cannot be said */
};

struct gate_row {
    const char *api, *kernel; /* borrowed from the summaries */
    uint64_t n_base, n_new;   /* calls */
    uint64_t base_ns, new_ns; /* the metric on each side */
    double ratio;             /* new / base */
    double ci_lo, ci_hi;      /* bootstrap interval of the ratio, if has_ci */
    int has_ci;
    struct gate_margin m;
    enum gate_verdict verdict;
};

/* What a run criterion (criteria.c) compares. */
enum gate_ckind {
    GATE_CK_STEP_P50,  /* step time p50 (ns), bootstrap interval */
    GATE_CK_STEP_P99,  /* step time p99 (ns), bootstrap interval */
    GATE_CK_UNIT,      /* CUDA-active window per outermost launch (ns): runs without steps */
    GATE_CK_API_TIME,  /* an API's total time (ns) and its share of the window */
    GATE_CK_GPU_IDLE,  /* GPU idle share of the covered time (0..1) */
    GATE_CK_FINDING    /* a HIGH finding (cause); base/cand 1 when that side has it */
};

/* API time regresses only with this many calls a side (else noisy): fewer
 * have no interval worth the name. A new API is judged by its share alone. */
#define GATE_API_MIN_CALLS 20

/* GPU idle is judged only where GPU activity covered this much of each
 * run: ten of the default sampling's 100 ms slices. */
#define GATE_IDLE_MIN_COVERED_NS 1000000000ull

/* gate_crit.name of step time judged on the GPU's side (summary gpu_steps). */
#define GATE_STEPS_GPU "gpu"
/* The host runs ahead of the GPU when its step p50 is under this share of
 * the GPU's over the same steps (a host paced by the GPU: about 1). */
#define GATE_AHEAD 0.8

struct gate_crit {
    enum gate_ckind kind;
    const char *name;         /* API or finding cause, borrowed from the summaries;
                                 GATE_STEPS_GPU for step time on the GPU's side; or NULL */
    uint64_t n_base, n_new;   /* steps, launches or calls behind the values */
    double base, cand;        /* the compared values (unit: see enum gate_ckind) */
    double base_share, new_share; /* GATE_CK_API_TIME: share of each side's window */
    double ratio;             /* cand / base (API time: of the shares); INFINITY when new */
    double ci_lo, ci_hi;      /* bootstrap interval of the ratio, if has_ci */
    int has_ci;
    const char *why;          /* GATE_NOT_JUDGED: why (one phrase, static) */
    struct gate_margin m;
    enum gate_verdict verdict;
};

/** Defaults for every field. */
void gate_opts_init(struct gate_opts *o);

/** Seed of the bootstrap of the row or criterion named @p api and @p kernel:
 * the same row gets the same resamples whatever else is selected. */
uint64_t gate_seed(uint64_t seed, const char *api, const char *kernel);

/** Judge the run criteria @p o->criteria selects between @p base and @p cand
 * (summaries without a run part: each criterion reads "not judged").
 * @return 0 or -ENOMEM; *crit (malloc'd, caller frees; borrows names from
 * the summaries) and *n get them. */
int gate_eval_run(const struct summary *base, const struct summary *cand,
                  const struct gate_opts *o, struct gate_crit **crit, size_t *n);

/** The same against @p nbase (>= 1) baselines: each criterion compares the
 * candidate with the baseline of the median value (the lower one of an even
 * count) and widens its limit by the baselines' spread (docs/gate.md,
 * "Several baselines"). A HIGH finding of any baseline is not new. */
int gate_eval_run_bases(const struct summary *const *base, size_t nbase,
                        const struct summary *cand, const struct gate_opts *o,
                        struct gate_crit **crit, size_t *n);

/** Judge the ratio @p ratio of quantile @p p between ascending samples @p a
 * (baseline) and @p b (candidate) against @p limit, with @p m->spread and
 * @p m->nbase set by the caller: the bootstrap interval (unless --no-ci)
 * into *ci_lo, *ci_hi, *has_ci, the order-statistic bound into @p m->lo.
 * Regressed only when the ratio and its lower bound are past limit x
 * spread. @return the verdict, or -ENOMEM / -EINVAL (empty side) */
int gate_judge_quantile(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, double p,
                        double ratio, double limit, uint64_t seed, const struct gate_opts *o,
                        double *ci_lo, double *ci_hi, int *has_ci, struct gate_margin *m);

/** Lower median of @p k values @p v (NaN: that baseline lacks the value):
 * its index, or -1 when every one is NaN; *spread gets largest / smallest
 * (1 when fewer than 2 are there; INFINITY when the smallest is 0 and the
 * largest is not) and *nbase how many are there. */
int gate_pick_base(const double *v, size_t k, double *spread, unsigned *nbase);

/** Why noisy verdict @p m is not a regression, in words ("the interval's
 * lower bound 1.20x is not past the limit 1.50x: about 1400 calls a side
 * would settle it"), into @p buf; "" when @p m is not noisy. @p unit names
 * the values ("calls", "steps"). */
const char *gate_noise_note(const struct gate_margin *m, const char *unit, char *buf, size_t len);

/** "step time p50", "API time cuStreamSynchronize", ... into @p buf. */
const char *gate_crit_label(const struct gate_crit *c, char *buf, size_t len);

/** The verdict in words, with the numbers ("+48% (2.10 ms -> 3.11 ms, CI
 * 1.45-1.51)", "new: 31% of the window"), into @p buf. */
const char *gate_crit_note(const struct gate_crit *c, const struct gate_opts *o, char *buf,
                           size_t len);

/** Compare @p base and @p cand. @return 0 or -ENOMEM; *rows (malloc'd, caller
 * frees; borrows names from the summaries) and *n get the comparison. */
int gate_eval(const struct summary *base, const struct summary *cand, const struct gate_opts *o,
              struct gate_row **rows, size_t *n);

/** The same against @p nbase (>= 1) baselines: each row compares with the
 * baseline of the median --metric value, its limit widened by their spread. */
int gate_eval_bases(const struct summary *const *base, size_t nbase, const struct summary *cand,
                    const struct gate_opts *o, struct gate_row **rows, size_t *n);

/** Criterion @p c as in `gate --json` criteria[] (docs/gate.md), with the
 * limits of @p o in its note. @return new reference */
json_t *gate_crit_json(const struct gate_crit *c, const struct gate_opts *o);

/** Short name of @p v ("ok", "REGRESSED", ...). */
const char *gate_verdict_name(enum gate_verdict v);

/** Whether --api selects @p api (every API when it was not given). */
int gate_api_selected(const struct gate_opts *o, const char *api);

#endif
