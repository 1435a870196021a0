/* rules/ranks.h: the multi-rank view (issue 10, docs/multigpu.md). Processes that
 * carry a rank (RANK from their environment, cs_proc.rank) are grouped by
 * rank: per-rank latency of the sync APIs and host breakdown (the "ranks"
 * array of docs/json.md), and the cross-rank finding `rank_straggler`.
 *
 * Method: each rank's step points are the outermost host syncs of its
 * busiest syncing thread; the k-th sync of every rank is the same step.
 * A rank's wait at step k is its sync's duration plus the time it slept,
 * since its previous sync, woken by another rank's process (a host barrier,
 * as a pipe or a socket); its ready time is the sync's entry minus that
 * sleep. The rank ready last is the step's straggler; the others' waits
 * beyond their own median are the time they lost. The straggler's host cause
 * is what its syncing thread did between the previous rank's ready time and
 * its own: on CPU (busy, or a page-allocation storm), preempted (by whom),
 * asleep, in D state, or inside its own CUDA calls. */
#ifndef CUDASPY_ANALYZER_RANKS_H
#define CUDASPY_ANALYZER_RANKS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"

/** Build the "ranks" array of @p m (empty when no process has a rank) into
 * @p ranks_out and, when two or more ranks straggle measurably, insert a
 * `rank_straggler` finding into @p chains (sorted by impact_ns, at most
 * opts.top entries). @p wall_ns is the whole of the finding's severity and
 * share, as chains_build()'s: the CUDA-active windows (or the user's) less
 * the set-up and the wind-down. @return 0 or -ENOMEM */
int ranks_build(const struct model *m, uint64_t wall_ns, json_t *chains, json_t **ranks_out);

/** The RANKS section of the text report from the report object @p j (does
 * nothing when j has no ranks). */
void ranks_print(FILE *f, const json_t *j, int color);

#endif
