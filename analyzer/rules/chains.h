/* rules/chains.h: findings, each a causal chain from a host cause to the CUDA calls
 * it slowed. Heavy-tailed APIs (enough calls, p99/p50 at least tail_ratio)
 * have their outlier calls (>= p99) decomposed, each within its own
 * [t_enter, t_exit] window: on CPU, preempted (by whom), asleep (woken by
 * whom), uninterruptible; the system and page-allocation rates of that window
 * against the run's median. Rules over the whole run add pipeline
 * starvation, pageable copies, per-iteration syncs, allocation churn,
 * launch-bound loops, host-bound loops and the healthy GPU-bound case; where
 * a process has GPU activity (gpu.h), GPU idle is measured, not bounded.
 * Severity follows the impact: HIGH >= 10 % of the CUDA-active window (or
 * the user's --since/--until), MEDIUM >= 2 %, else LOW. */
#ifndef CUDASPY_ANALYZER_CHAINS_H
#define CUDASPY_ANALYZER_CHAINS_H

#include <jansson.h>

#include "account.h"
#include "feed.h"
#include "gpu.h"
#include "model/memory.h"
#include "model/model.h"
#include "model/stats.h"

enum chain_sev { CHAIN_LOW = 0, CHAIN_MEDIUM = 1, CHAIN_HIGH = 2 };

/** Build the "chains" array of docs/json.md, sorted by impact, at most
 * opts.top entries (0 = all). @p t is the per-API table (its rows' p99_gate
 * are set here). @p wall_ns is the whole that severities and percentages
 * use: the CUDA-active windows, or the user's, less the set-up and the
 * wind-down (analysis.c's steady_ns()). @p mem: device memory and its
 * failures (oom, allocator_retries), may be NULL. @return new reference */
json_t *chains_build(const struct model *m, struct stats_table *t, const struct feed *f,
                     const struct gpu_truth *g, const struct account *ac,
                     const struct memory *mem, uint64_t wall_ns);

/** chains_build() in two parts, the first needing no account, so that it
 * runs beside account_compute() (issue 36 point 4: at 200 M calls the
 * outliers are a pass over every call): the outlier calls and the whole
 * run's waits, gathered (@p t's rows get their p99_gate; NULL: no memory),
 * then the findings, with @p ac and @p wall_ns, which frees @p p.
 * @return new reference */
struct chains_pre;
struct chains_pre *chains_gather(const struct model *m, struct stats_table *t,
                                 const struct feed *f, const struct gpu_truth *g,
                                 const struct memory *mem);
json_t *chains_finish(struct chains_pre *p, const struct account *ac, uint64_t wall_ns);

/** "HIGH", "MEDIUM", "LOW". */
const char *chains_sev_name(int sev);

/** Nanoseconds of @p t after run @p run's start (0 if earlier). */
uint64_t chains_rel(const struct model *m, uint32_t run, uint64_t t);

/** Append a timeline entry {t_ns, t_s, layer, text} at absolute time @p t,
 * relative to run @p run's start; @p fmt formats the text (at most 511 bytes). */
void chains_tl_add(json_t *tl, const struct model *m, uint32_t run, uint64_t t, const char *layer,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/** Severity for @p impact_ns out of @p wall_ns. */
int chains_severity(uint64_t impact_ns, uint64_t wall_ns);

#endif
