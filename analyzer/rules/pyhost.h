/* rules/pyhost.h: the Python lines a CUDA thread ran while it ran host code,
 * from the collector's samples of its stack (model/pystack.h,
 * pystack_samples_in; docs/python.md "Host code"). A rule hands in the
 * stretches it blames on host code (a GPU idle gap on the feeding thread,
 * say) with what each one cost; every stretch's cost is spread over the
 * samples inside it by their share of its time, and the sites (the user's
 * innermost line, pystack_site_frame) add up. A stretch with no sample in
 * it still counts in the whole, so the sites' estimates add up to the cost
 * of every stretch of a sampled thread.
 *
 * Usage: h = pyhost_new(); for each stretch: pyhost_add(h, m, thr, t0, t1,
 *        cost_ns); if (pyhost_samples(h)) sites = pyhost_sites_json(h, m,
 *        total_ns, 3, "GPU idle"); pyhost_free(h). */
#ifndef CUDASPY_ANALYZER_PYHOST_H
#define CUDASPY_ANALYZER_PYHOST_H

#include <jansson.h>
#include <stdint.h>

#include "model/model.h"

struct pyhost;

/** @return a new, empty accumulator, or NULL when out of memory */
struct pyhost *pyhost_new(void);

/** Credit host-code stretch [@p t0_ns, @p t1_ns) of thread @p thr (index in
 * model.thr), in which @p cost_ns of what a finding measures accrued, to
 * the sites sampled in it. A thread without samples at all adds nothing.
 * @return samples in the stretch, or -ENOMEM (the accumulator is then
 * incomplete; pyhost_sites_json() still answers with what it has) */
int64_t pyhost_add(struct pyhost *h, const struct model *m, uint32_t thr, uint64_t t0_ns,
                   uint64_t t1_ns, uint64_t cost_ns);

/** Samples credited so far (0: a finding keeps its other python_sites). */
uint64_t pyhost_samples(const struct pyhost *h);

/** The @p max heaviest sites as a finding's "python_sites" (docs/json.md):
 * each a frame with ns (its estimated part of the cost), share (of
 * @p total_ns, the finding's whole), samples, source "samples", text ("12.0
 * ms of @p what while the host ran data.py:88 in collate (40 %; 37
 * samples)"), via and callers (of its first sample's stack). Sites under 1 %
 * are left out once one is named. @return new reference (an array) */
json_t *pyhost_sites_json(const struct pyhost *h, const struct model *m, uint64_t total_ns,
                          int max, const char *what);

/** Free. Accepts NULL. */
void pyhost_free(struct pyhost *h);

#endif
