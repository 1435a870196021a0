/* flight_rec.h: the flight recorder of a size-capped run (record --max-size,
 * CUDASPY_MAX_SIZE), driven by the collector. It counts every block the
 * collector stages into per-window aggregates (struct cs_agg_*, the agg
 * database), writes them in the commit that writes the blocks, and after
 * each commit evicts the oldest blocks once the file's live data passes
 * the cap's budget. Runs on the collector's thread only.
 * Usage: flight_new -> flight_open -> { [flight_block per staged block];
 *        flight_stage; flight_evict; cs_store_commit[_start] } -> flight_free */
#ifndef CUDASPY_SAMPLER_FLIGHT_REC_H
#define CUDASPY_SAMPLER_FLIGHT_REC_H

#include <stdint.h>

#include "cudaspy/record.h"
#include "cudaspy/runfile.h"

struct flight;

/** A recorder capping the run file at @p max_bytes, with aggregate windows
 * of CS_FLIGHT_WINDOW_NS from @p t0_ns. @return NULL when out of memory. */
struct flight *flight_new(uint64_t max_bytes, uint64_t t0_ns);

/** Create the agg database of @p st and stage the cap's meta keys
 * (max_size_bytes, flight_window_ns). @return 0 or the store's error. */
int flight_open(struct flight *f, struct cs_store *st);

/** Count the @p h->n records of a block being staged into their windows. */
void flight_block(struct flight *f, const struct cs_blk_hdr *h, const void *recs);

/** Before a commit: stage the windows that changed since the last one, and
 * forget windows long closed. @return 0, -ENOMEM */
int flight_stage(struct flight *f, struct cs_store *st);

/** Before each commit, after flight_stage: take what the evictions after
 * the earlier commits did (a file nearing the cap widens the slack) and set
 * the budget that the next commit evicts to, in the thread that commits:
 * the oldest blocks go while the live data exceeds the cap less room for
 * the commits that cannot reuse freed pages yet. @return 0 or the error of
 * an eviction that failed */
int flight_evict(struct flight *f, struct cs_store *st);

/** Free. Accepts NULL. */
void flight_free(struct flight *f);

#endif
