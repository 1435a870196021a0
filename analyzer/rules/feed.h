/* rules/feed.h: how well the host fed the GPU, from host-side facts only. A
 * synchronisation that returned means the streams it covers were drained;
 * until the next enqueue on such a stream the GPU had nothing queued there.
 * The sum of those gaps is a lower bound of GPU idle time, per stream and
 * per process (context: every stream with work drained). For each gap, the
 * thread that made the next enqueue (the feeding thread) is followed through
 * its off-CPU intervals: on CPU, sleeping (and who woke it), preempted,
 * uninterruptible. Event syncs are not counted as drains (which stream an
 * event covers is not recorded). */
#ifndef CUDASPY_ANALYZER_FEED_H
#define CUDASPY_ANALYZER_FEED_H

#include <jansson.h>

#include "model/model.h"
#include "model/steps.h"

#define FEED_WAKERS 4

struct feed_waker {
    uint32_t proc; /* index in model.proc, M_NONE if outside the runs */
    uint32_t pid;
    uint64_t ns;
};

/* What the feeding threads did during a set of gaps. */
struct feed_split {
    uint64_t oncpu_ns, sleep_ns, preempt_ns, disk_ns, other_ns;
    uint64_t sleep_worker_ns; /* asleep, woken by the pipeline (feed_pipeline_waker) */
    struct feed_waker waker[FEED_WAKERS]; /* most sleep time woken first */
};

/* One known-idle gap of a context: from the drain's return to the enqueue. */
struct feed_gap {
    uint64_t t0_ns, t1_ns;
    uint64_t drain_call, next_call; /* indices in model.call */
    uint64_t sleep_worker_ns;       /* feeding thread asleep, woken by a worker */
};

#define FEED_TOP_GAPS 3

struct feed_stream {
    uint32_t proc;
    uint64_t stream;
    uint64_t enqueues, drains;
    uint64_t idle_ns, gaps, max_gap_ns, max_gap_at_ns;
};

struct feed_proc {
    uint32_t proc;
    uint64_t enqueues, launches, syncs, sync_ns, launch_ns;
    uint64_t idle_ns, gaps, max_gap_ns, max_gap_at_ns; /* whole context idle */
    uint64_t short_gaps;            /* gaps under 1 ms */
    uint64_t relaunch_ns;           /* duration of the enqueue calls that ended the gaps */
    uint64_t gap_incall_ns;         /* feeding thread inside other CUDA calls in the gaps
                                       (allocations, copies that do not enqueue) */
    uint64_t setup_idle_ns, setup_relaunch_ns; /* idle_ns and relaunch_ns of the gaps
                                       begun in the set-up (model/steps.h) */
    struct feed_gap longest[FEED_TOP_GAPS];  /* longest gaps, longest first */
    struct feed_gap starved[FEED_TOP_GAPS];  /* most worker-wait, most first */
    uint64_t launch_gap_p50_ns;     /* exit of a launch to the next launch, same thread */
    uint64_t launch_p50_ns;         /* launch call duration */
    uint64_t busy_first_ns, busy_last_ns; /* first enqueue, last call exit */
    struct feed_split split;
};

struct feed {
    struct feed_proc *p;
    uint32_t np;
    struct feed_stream *s;
    uint32_t ns, cap_s;
    struct feed_gap *gap; /* every context gap, by process and time (rules/pyline.c
                             names their lines, rules/account.c splits them) */
    uint64_t ngap, cap_gap;
};

/** Compute the feed of every process with CUDA calls. @return 0 or -ENOMEM */
int feed_compute(struct feed *f, const struct model *m);

/** What the gaps begun in the set-up @p su count apart (setup_idle_ns,
 * setup_relaunch_ns): the steps are found beside feed_compute(), not
 * before it. */
void feed_setup(struct feed *f, const struct model *m, const struct step_setup *su);

/** Feed of process @p proc, NULL if it made no CUDA calls. */
const struct feed_proc *feed_find(const struct feed *f, uint32_t proc);

/** Whether sleep interval @p o of thread @p thr ended because the data
 * pipeline delivered: woken by a worker process, or by another thread of
 * the same process (a helper such as PyTorch's pin-memory thread). */
int feed_pipeline_waker(const struct model *m, uint32_t thr, const struct m_off *o);

/** Add what thread @p thr did in [@p t0, @p t1) to @p s. */
void feed_split_add(struct feed_split *s, const struct model *m, uint32_t thr, uint64_t t0,
                    uint64_t t1);

/** The "gpu_feed" object of docs/json.md. */
json_t *feed_json(const struct feed *f, const struct model *m);

void feed_exit(struct feed *f);

#endif
