/* rules/steptime.h: the per-step report (docs/json.md "steps"): step time
 * percentiles over every step, and for each step its CUDA time, GPU busy
 * share (where GPU activity covered it) and what the step's thread did
 * otherwise (host code, asleep, preempted, D-state); the slowest steps
 * name the findings whose examples fall inside them. */
#ifndef CUDASPY_ANALYZER_STEPTIME_H
#define CUDASPY_ANALYZER_STEPTIME_H

#include <jansson.h>

#include "gpu.h"
#include "model/steps.h"

#define STEPTIME_ROWS 1000 /* rows kept: every step up to this, else evenly spaced */
#define STEPTIME_WORST 5

/** The "steps" object for steps @p s of model @p m (times relative to
 * run @p t0_ns), with GPU truth @p g and findings @p chains (borrowed).
 * @return new reference, NULL when out of memory */
json_t *steptime_json(const struct steps *s, const struct model *m, const struct gpu_truth *g,
                      const json_t *chains, uint64_t t0_ns);

#endif
