/* model/aggregates.h: the whole of a size-capped run (record --max-size)
 * from its agg database: the latency table of every call the run made,
 * per-run host and GPU totals, and which part of the run still has every
 * record. Runs without aggregates add their model's calls, so a table over
 * a mix of capped and uncapped runs covers all of them. */
#ifndef CUDASPY_ANALYZER_AGGREGATES_H
#define CUDASPY_ANALYZER_AGGREGATES_H

#include <stdint.h>

#include "model.h"
#include "stats.h"

/* Whole-run totals of one capped run, over the windows analysed. */
struct agg_run {
    int capped;                 /* the run has an agg database */
    uint64_t max_size_bytes;    /* meta max_size_bytes */
    uint64_t window_ns;         /* aggregate window */
    uint64_t detail_from_ns;    /* absolute; every record from here on; t0 = nothing evicted */
    uint64_t evicted_blocks, evicted_records, late_records;
    uint64_t calls, nested_calls;
    uint64_t windows;           /* windows with CUDA calls */
    struct cs_agg_host host;    /* summed over processes and windows (pid, t_start: 0) */
    struct cs_agg_gpu gpu;      /* the same */
};

struct aggregates {
    int any;               /* some run is capped: the table below is the whole runs' */
    struct agg_run *run;   /* per model run */
    struct stats_table api; /* STATS_BY_API: count, total, min, max, errors exact;
                              percentiles from the histograms (within 0.4 %) */
};

/** Read the agg rows of every run of @p m in its analysed window (rows by
 * the window they start in; --pid keeps the selected processes) into @p g.
 * When no run is capped, g->any is 0 and the table stays empty.
 * @return 0, -ENOMEM, CS_E_CORRUPT (a row of the wrong size; @p err says which run) */
int aggregates_load(struct aggregates *g, struct model *m, struct cs_err *err);

/** Free. Accepts a zeroed struct. */
void aggregates_exit(struct aggregates *g);

#endif
