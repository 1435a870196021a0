/* gate/summary.h: per-API (and per API + kernel name) latency summaries of one
 * run, built from a run file or loaded from the small versioned JSON file
 * `cudaspy-analyze summary --save` writes (format in docs/ci.md). The gate
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
#define SUMMARY_VERSION 1
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
};

struct summary {
    char *source;         /* run file the summary was made from */
    struct summary_group *groups; /* per API sorted by name, then kernel (NULL first) */
    size_t n;
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

/** Parse a saved summary. @return 0, CS_E_CORRUPT, CS_E_VERSION, -ENOMEM */
int summary_from_json(json_t *j, const char *source, struct summary **out, struct cs_err *err);

/** The saved form (docs/ci.md). @return new reference, NULL when out of memory */
json_t *summary_to_json(const struct summary *s);

/** The group for @p api and @p kernel (NULL = all calls). @return borrowed or NULL */
const struct summary_group *summary_find(const struct summary *s, const char *api,
                                         const char *kernel);

/** Free. Accepts NULL. */
void summary_free(struct summary *s);

#endif
