/* analysis.h: the analyzer's model of one or more runs, shared by the
 * report, the gate, the exports and the MCP server. analysis.c loads the
 * runs (exact statistics over every call, per-process breakdown, GPU feed,
 * causal chains); the others only read it. Its JSON form is the contract in
 * docs/json.md. */
#ifndef CUDASPY_ANALYZER_ANALYSIS_H
#define CUDASPY_ANALYZER_ANALYSIS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "cudaspy/error.h"
#include "cudaspy/runfile.h"

struct analysis_opts {
    uint32_t pid;          /* 0 = every process */
    uint64_t since_ns;     /* window, relative to run start; 0 */
    uint64_t until_ns;     /* UINT64_MAX = to the end */
    int top;               /* findings to keep; 0 = all */
    double tail_ratio;     /* heavy tail: p99/p50 at least this; default 3 */
    unsigned tail_min_calls; /* and at least this many calls; default 20 */
    int by_stream, by_kernel, by_pid; /* extra latency tables */
    int by_pyline;         /* latency per call site (rules/pyline.h) */
    const char *step;      /* --step: NVTX range name, "none", NULL = default (steps.h) */
    int live;              /* read a run its collector still writes as it stands,
                              without waiting for the collector (live/live.h) */
};

struct analysis;

/** Defaults for every field. */
void analysis_opts_init(struct analysis_opts *o);

/** Open and analyse @p n run files (processes of different files kept apart).
 * @return 0, or the run-file error (CS_E_TRUNCATED, ...) with @p err saying
 *         which file and what */
int analysis_load(const char *const *paths, int n, const struct analysis_opts *o,
                  struct analysis **out, struct cs_err *err);

/** The whole analysis as the docs/json.md object. @return new reference */
json_t *analysis_json(const struct analysis *a);

/** Human report to @p out; colours only if @p color. */
void analysis_print(const struct analysis *a, FILE *out, int color);

/** Durations (ns, ascending) of every outermost call of API @p api (display
 * name, e.g. "cuStreamSynchronize") in process @p pid (0 = all) with kernel
 * name @p kernel (NULL = any). @return borrowed array valid until
 * analysis_free(), NULL if none; *n gets the count. */
const uint64_t *analysis_durations(const struct analysis *a, const char *api, uint32_t pid,
                                   const char *kernel, size_t *n);

/** Opened runs (for exports and timelines). @return borrowed */
struct cs_run *analysis_run(const struct analysis *a, int i);
int analysis_nruns(const struct analysis *a);

/** Run start (CLOCK_MONOTONIC ns) of run @p i: times in JSON are relative to it. */
uint64_t analysis_t0(const struct analysis *a, int i);

/** GPU busy share (0..1) in each of @p nbins equal bins of [@p t0, @p t1)
 * (absolute ns) of run @p run's process @p pid (0: the busiest GPU of any
 * process, bin by bin), from the spans GPU activity covered; -1 for a bin
 * with no coverage. @return the source ("exact", "sampled",
 * "host_lower_bound" or "none"): with no GPU records every bin is -1. */
const char *analysis_gpu_bins(const struct analysis *a, int run, uint32_t pid, uint64_t t0,
                              uint64_t t1, int nbins, double *out);

/** Latency and GPU idle per call site, as docs/json.md's "pylines" (rows
 * empty when no call has a stack). @return new reference */
json_t *analysis_pylines(const struct analysis *a);

struct steps;

/** The steps found (model/steps.h; source STEPS_NONE when none), the pid
 * and tid of the thread they were found on into @p pid, @p tid.
 * @return borrowed */
const struct steps *analysis_steps(const struct analysis *a, uint32_t *pid, uint32_t *tid);

/** The steps' durations as the GPU ran them (steps_gpu_durations) into
 * @p out, and the host's of the same steps into @p host (NULL, or room for
 * the steps' count too). @return how many */
size_t analysis_step_gpu_durations(const struct analysis *a, uint64_t *out, uint64_t *host);

/** The set-up before the first step (steps_setup), absolute ns.
 * @return 1, or 0 when there is none */
int analysis_setup(const struct analysis *a, uint64_t *t0, uint64_t *t1);

/** Feeding process @p i of the account (rules/account.h; the order of
 * docs/json.md's account.processes): its pid, device and CUDA-active window
 * [*t0, *t1) in absolute ns. @return 1, or 0 when @p i is past the last */
int analysis_account_window(const struct analysis *a, size_t i, uint32_t *pid, uint16_t *device,
                            uint64_t *t0, uint64_t *t1);

struct memory;

/** Device memory per process and device over time (model/memory.h).
 * @return borrowed */
const struct memory *analysis_memory(const struct analysis *a);

/** Free. Accepts NULL. */
void analysis_free(struct analysis *a);

#endif
