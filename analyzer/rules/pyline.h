/* rules/pyline.h: the lines of the user's code behind the CUDA calls. Calls
 * recorded with a stack (model/pystack.h) are grouped by call site, their
 * innermost Python frame of the user's code (else native frame): latency per site (`--by
 * pyline`), the GPU idle that followed each site's drains (measured where
 * GPU activity covers it, else the host-seen gap of rules/feed.h up to the
 * next enqueue) and the enqueue that ended it. Each finding then names the
 * sites responsible and their share (pyline_annotate). With the collector's
 * samples of host code (docs/python.md, "Host code"), host_bound names the
 * lines the feeding thread ran in its GPU idle gaps instead (rules/pyhost.h).
 * Runs without stacks pay nothing and their reports do not change. */
#ifndef CUDASPY_ANALYZER_PYLINE_H
#define CUDASPY_ANALYZER_PYLINE_H

#include <jansson.h>

#include "feed.h"
#include "gpu.h"
#include "pyhost.h"
#include "model/model.h"
#include "model/pystack.h"

#define PYLINE_SITES 3 /* sites named per finding */

struct pyline_row {
    struct pystack_site site;
    uint64_t call;              /* its slowest outermost call: API and callers */
    uint64_t calls, total_ns, p50_ns, p99_ns, max_ns; /* outermost calls */
    uint64_t idle_ns, gaps;     /* GPU idle after its drains */
    uint64_t loop_idle_ns, loop_gaps; /* of which from the first step on
                                     (struct step_setup) */
    uint64_t starve_ns;         /* of which the feeding thread slept for the pipeline */
    uint32_t next_row;          /* the site whose enqueue ended most of its loop idle, M_NONE */
    uint32_t id;                /* its index before the rows were sorted */
};

struct pyline {
    struct pyline_row *row;     /* by total time, most first */
    uint32_t nrow;
    uint32_t *row_of;           /* per model.cstack entry: its row, M_NONE for nested calls */
    uint64_t idle_ns, starve_ns; /* after every drain, stacked or not */
    uint64_t loop_idle_ns;       /* idle_ns from the first step on: the findings' */
    int idle_measured;          /* some idle came from GPU activity */
    struct pyhost *host;        /* runs with samples: the loop's idle gaps, by the sites
                                   sampled in them on the drain's thread; NULL = none */
};

/** Group the stacked calls of @p m by site. @return 0 or -ENOMEM */
int pyline_compute(struct pyline *p, const struct model *m, const struct feed *f,
                   const struct gpu_truth *g);

/** The "pylines" object of docs/json.md (`--by pyline`). @return new reference */
json_t *pyline_json(const struct pyline *p, const struct model *m);

/** host_bound's "python_sites" from the samples of host code: the sites the
 * feeding thread ran in the loop's GPU idle gaps (those of the first step
 * on), each with its estimated part of that idle (pyhost_sites_json).
 * @return new reference, NULL when the run has no samples in those gaps */
json_t *pyline_host_sites(const struct pyline *p, const struct model *m);

/** Add "python_sites" to each finding of @p chains whose calls have stacks:
 * the sites with most of its time (or of the GPU idle it is about). A
 * finding that has "python_sites" already (its rule named them, say with
 * rules/pyhost.h) keeps them. */
void pyline_annotate(const struct pyline *p, const struct model *m, json_t *chains);

void pyline_exit(struct pyline *p);

#endif
