/* gate/measure.h: the run part of a gate summary (format 2): what the run
 * did as a whole, read from its analysis (analysis.h) and its steps
 * (model/steps.h). summary.c keeps and saves it; criteria.c judges it. */
#ifndef CUDASPY_ANALYZER_MEASURE_H
#define CUDASPY_ANALYZER_MEASURE_H

#include <jansson.h>
#include <stddef.h>

#include "analysis.h"
#include "cudaspy/error.h"
#include "summary.h"

/** Analyse run file @p path and fill @p s->run (CUDA-active window,
 * outermost launches, steps with at most @p max_samples samples, GPU idle
 * share, HIGH finding causes); sets @p s->has_run. @p step names the NVTX
 * range of a step, "none", or NULL for the default (model/steps.h).
 * @return 0, -ENOENT (no such range), the analysis's run-file error or
 *         -ENOMEM, with @p err set */
int measure_run(const char *path, size_t max_samples, const char *step, struct summary *s,
                struct cs_err *err);

/** The same from an analysis already loaded, @p a, and its JSON @p j
 * (borrowed): what the MCP server holds. @return 0 or -ENOMEM */
int measure_analysis(const struct analysis *a, json_t *j, size_t max_samples, struct summary *s);

#endif
