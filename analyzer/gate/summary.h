/* gate/summary.h: per-API (and per API + kernel name) latency summaries of one
 * run, built from a run file or loaded from the small versioned JSON file
 * `cudaspy-analyze summary --save` writes (format in docs/gate.md), and, from
 * format 2 on, what the run did as a whole (steps, CUDA-active window, GPU
 * idle, HIGH findings: measure.c fills these from the analysis). The gate
 * compares two of them; the HTML report draws histograms from the full
 * durations a run-built summary keeps. */
#ifndef CUDASPY_ANALYZER_SUMMARY_H
#define CUDASPY_ANALYZER_SUMMARY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cudaspy/error.h"
#include "cudaspy/runfile.h"

#define SUMMARY_FORMAT "cudaspy-gate-summary"
#define SUMMARY_VERSION 2     /* written when the run measures are there */
#define SUMMARY_VERSION_MIN 1 /* oldest still read: per-API groups only */
#define SUMMARY_SAMPLES_DEFAULT 1000

/* The four statistics a summary keeps exactly. */
enum summary_q { SUMMARY_P50, SUMMARY_P90, SUMMARY_P99, SUMMARY_P999, SUMMARY_NQ };

struct summary_group {
    char *api;            /* display name without _ptsz/_ptds, e.g. "cuStreamSynchronize" */
    char *kernel;         /* kernel name, NULL = every call of the API */
    uint64_t count;       /* calls */
    uint64_t q_ns[SUMMARY_NQ]; /* exact nearest-rank quantiles over every call */
    uint64_t min_ns, max_ns;
    uint64_t *samples_ns; /* ascending, down-sampled evenly in rank (<= max_samples) */
    size_t nsamples;
    uint64_t *all_ns;     /* every duration, ascending; NULL when loaded from JSON */
    uint64_t total_ns;    /* sum of every duration (format 2; 0 in version 1 files) */
};

/* The steps of a run (model/steps.h), as the gate keeps them. */
struct summary_steps {
    char *source;         /* "nvtx" or "inferred"; NULL: the run has no steps */
    char *how;            /* how they were found, one line */
    uint64_t count;       /* steps */
    uint64_t p50_ns, p99_ns; /* exact nearest-rank quantiles of every step's duration */
    uint64_t host_p50_ns; /* gpu_steps: the host's p50 of the same steps (0: unknown) */
    uint64_t *samples_ns; /* ascending, down-sampled evenly in rank as a group's */
    size_t nsamples;
};

/* What the run did as a whole (format 2): the gate's run criteria. */
struct summary_run {
    uint64_t window_ns;   /* CUDA-active window (analysis "run.active_ns") */
    uint64_t launches;    /* outermost launch calls in it: the unit of work */
    struct summary_steps steps;
    struct summary_steps gpu_steps; /* the same steps as the GPU ran them
                                       (steps_gpu_durations); source NULL: none */
    char *gpu_source;     /* "exact" or "sampled"; NULL: no GPU activity recorded */
    double gpu_idle;      /* share (0..1) of the covered time the GPU sat idle */
    uint64_t gpu_covered_ns; /* the time GPU activity covered (0: unknown, an older summary) */
    char **high;          /* causes of the HIGH findings, sorted */
    size_t nhigh;
};

struct summary {
    char *source;         /* run file the summary was made from */
    struct summary_group *groups; /* per API sorted by name, then kernel (NULL first) */
    size_t n;
    int is_run;           /* built from a run file (measure.c can add the run part) */
    int has_run;          /* run is filled (format 2); 0: per-API groups only */
    struct summary_run run;
};

/** Probability of statistic @p q (0.5, 0.9, 0.99, 0.999). */
double summary_q_prob(enum summary_q q);

/** Statistic named "p50", "p90", "p99" or "p99.9". @return it, or -1. */
int summary_q_parse(const char *name);

/** Name of @p q ("p99.9"). */
const char *summary_q_name(enum summary_q q);

/** Summarise every recorded CUDA call of open run @p r (nested calls too:
 * each API's own latency), keeping at most @p max_samples samples per group
 * and, if @p keep_all, every duration. @p source names the file.
 * @return 0, -ENOMEM, or the cursor's error with @p err set */
int summary_from_run(struct cs_run *r, const char *source, size_t max_samples, int keep_all,
                     struct summary **out, struct cs_err *err);

/** Open @p path as a run file or, if it starts with '{', as a saved summary.
 * @return 0, the run-file error, CS_E_CORRUPT (not a valid summary),
 *         CS_E_VERSION (summary of another version), -ENOENT...; @p err says
 *         what and where */
int summary_load(const char *path, size_t max_samples, struct summary **out,
                 struct cs_err *err);

/** Parse a saved summary (version 1 or 2). @return 0, CS_E_CORRUPT,
 * CS_E_VERSION, -ENOMEM */
int summary_from_json(json_t *j, const char *source, struct summary **out, struct cs_err *err);

/** The saved form (docs/gate.md): version 2 when @p s has the run part,
 * else version 1. @return new reference, NULL when out of memory */
json_t *summary_to_json(const struct summary *s);

/** The group for @p api and @p kernel (NULL = all calls). @return borrowed or NULL */
const struct summary_group *summary_find(const struct summary *s, const char *api,
                                         const char *kernel);

/** Set the steps of @p s (@p gpu: their GPU side, run.gpu_steps; else
 * run.steps) from @p n durations (ns, ascending, consumed: freed on every
 * path), keeping @p max_samples samples. @p source and @p how are copied.
 * @return 0 or -ENOMEM */
int summary_set_steps(struct summary *s, int gpu, const char *source, const char *how,
                      uint64_t *v, size_t n, size_t max_samples);

/** Free. Accepts NULL. */
void summary_free(struct summary *s);

#endif
