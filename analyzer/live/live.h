/* live/live.h: a run file read again and again while its collector writes
 * it (issue 33): the engine under `cudaspy top`, the Prometheus metrics and
 * the flight recorder's triggers. Each sample is a whole analysis
 * (analysis.h) of the run's last seconds as they stand, read without
 * waiting for the collector; the consumers read its docs/json.md object. */
#ifndef CUDASPY_ANALYZER_LIVE_H
#define CUDASPY_ANALYZER_LIVE_H

#include <jansson.h>
#include <stdint.h>

#include "analysis.h"
#include "cudaspy/error.h"

struct live;

/* One sample: the analysis of [since_ns, end_ns) of the run (ns from the
 * run's start), and what the run file said when it was read. */
struct live_sample {
    struct analysis *a;  /* owned by the sample; NULL when nothing is recorded yet */
    json_t *json;        /* analysis_json(a), or NULL with a */
    uint64_t since_ns, end_ns;
    int writing;         /* its collector (on this host) is still writing it */
};

/** Open the run file @p path for live reading (it need not be finished, and
 * may not exist yet: the first sample then fails with CS_E_IO or the open's
 * error). @p o: the analysis options each sample uses (NULL: defaults);
 * since_ns and until_ns are the engine's own. @return 0 or -ENOMEM */
int live_open(const char *path, const struct analysis_opts *o, struct live **out);

/** Analyse the run's last @p window_ns (0: the whole run) as it stands now
 * into @p s (live_sample_clear() it after use). The run's end is now on
 * CLOCK_MONOTONIC while its collector writes it on this host, else the
 * run's recorded end. @return 0, or the run-file error with @p err set */
int live_sample(struct live *l, uint64_t window_ns, struct live_sample *s, struct cs_err *err);

/** Free what @p s holds; safe to call twice. */
void live_sample_clear(struct live_sample *s);

/** The run file's path. */
const char *live_path(const struct live *l);

/** Free. Accepts NULL. */
void live_close(struct live *l);

#endif
