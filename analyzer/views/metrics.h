/* views/metrics.h: the Prometheus text exposition (version 0.0.4) of a run
 * (metrics_text.c), for the server in metrics.c and its --once. */
#ifndef CUDASPY_ANALYZER_METRICS_H
#define CUDASPY_ANALYZER_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "live/live.h"

struct metrics_text;

/** A new exposition state (the counters it served, which never go back).
 * @return NULL when out of memory */
struct metrics_text *metrics_text_new(void);

/** Free. Accepts NULL. */
void metrics_text_free(struct metrics_text *m);

/* What one exposition is made of. */
struct metrics_in {
    const char *path;                 /* the run file ("" while not known) */
    const struct live_sample *run;    /* the whole run (its JSON): counters; NULL if none */
    const struct live_sample *window; /* the last window (its JSON): gauges; NULL if none */
    const uint64_t *step_ns;          /* the whole run's step durations, ascending */
    size_t nsteps;
    pid_t collector;                  /* its collector while it writes the run, else 0 */
    double run_cost_s, window_cost_s; /* what the samples took */
};

/** Render @p in as the exposition. Counters are the whole run's, each held
 * at its highest value served so far (a later analysis of a run still
 * written may find fewer steps, the anchor re-inferred). @return a new
 * NUL-terminated text (free() it) with its length in *@p n, or NULL */
char *metrics_text_render(struct metrics_text *m, const struct metrics_in *in, size_t *n);

#endif
