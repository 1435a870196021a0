/* model/steps.h: the program's steps (training iterations, served batches):
 * from the user's NVTX range, or inferred from the repeating structure of
 * the busiest CUDA thread's calls. steps.c finds them; analysis.c reports
 * them (per step: CUDA time, GPU busy, host state mix) and the gate judges
 * their time. */
#ifndef CUDASPY_ANALYZER_STEPS_H
#define CUDASPY_ANALYZER_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum steps_source {
    STEPS_NONE = 0,     /* no steps (--step none, or nothing repeats) */
    STEPS_NVTX = 1,     /* an NVTX range: each occurrence is a step */
    STEPS_INFERRED = 2  /* the period of a repeating call (no NVTX, or none tiles) */
};

/* One step: [t_start, t_end) on thread thr (model.thr index). */
struct m_step {
    uint64_t t_start_ns, t_end_ns;
    uint32_t thr;
    uint32_t pad;
};

struct steps {
    enum steps_source source;
    char how[200];      /* one line: how they were found ("NVTX range \"step\"
                           (500 of 500 top-level ranges)", "inferred: every
                           cuStreamSynchronize on thread 1234 (7 calls a step)") */
    char name[96];      /* the range name, or the anchor call ("cuStreamSynchronize") */
    uint32_t thr;       /* thread whose steps these are, M_NONE if none */
    struct m_step *s;   /* by start time */
    size_t n;
    double cv;          /* regularity: stddev / mean of step time (0 = perfectly regular) */
    uint64_t work_end_ns; /* inferred: the return of the thread's last call that gave
                             the GPU work or waited for it (what comes after, frees
                             and exit, is wind-down); 0 for NVTX steps */
};

/* What steps_find() looks for. */
struct steps_opts {
    const char *want;   /* NULL: default (the most frequent top-level NVTX range
                           that tiles the active window, else inferred);
                           "none": no steps; else an NVTX range name */
    uint64_t win_lo_ns, win_hi_ns; /* active window (absolute ns) steps must lie in */
};

/** Find the steps of model @p m (its first run). @return 0 (out->source
 * STEPS_NONE with out->how saying why when there are none), -ENOENT (a
 * range @p o->want names was not recorded; out->how says so), -ENOMEM */
int steps_find(const struct model *m, const struct steps_opts *o, struct steps *out);

/** Step durations (ns, ascending) into @p out (room for s->n). */
void steps_durations(const struct steps *s, uint64_t *out);

/** Step durations as the GPU ran them (ns, ascending) into @p out (room for
 * s->n): from the GPU start of the first work a step enqueued to that of
 * the next step's, for each pair of steps whose first work the same CUPTI
 * slice recorded (struct m_gpu.epoch: every enqueue between them was
 * recorded). The host's own step time runs ahead of the GPU while the
 * launch queue fills, so two runs of the same loop can differ there and
 * not here (issue 36). @p host (NULL, or room for s->n) gets the host's
 * durations of the same steps, ascending. @return how many; 0 without GPU
 * activity */
size_t steps_gpu_durations(const struct model *m, const struct steps *s, uint64_t *out,
                           uint64_t *host);

/* Where the program's set-up ends: its time before the first step, in the
 * process whose thread the steps are on. GPU idle there while that thread
 * ran host code (loading a dataset, building the model) is a one-off a
 * longer run amortises; the rules count it apart from the steps' own. */
struct step_setup {
    uint32_t proc;               /* M_NONE: no steps, no set-up */
    uint64_t end_ns;             /* the first step's start */
    uint64_t wind_ns;            /* where the wind-down after the steps begins:
                                    inferred steps, the later of the last step's end
                                    and the thread's last work (steps.work_end_ns);
                                    NVTX, the last step's end and one median step
                                    more (the last range starts a step of its own);
                                    UINT64_MAX: none (no steps, or --until cut
                                    the run's end) */
};

/** Where the set-up of @p s ends (M_NONE when there are no steps, or the
 * analysis window starts later than the run: --since cuts a step, not a
 * set-up). */
struct step_setup steps_setup_end(const struct model *m, const struct steps *s);

/** The set-up before the first step: from the first CUDA call of the steps'
 * process (procs_active_window: procs_compute() must have run) to the first
 * step, into @p t0, @p t1 (absolute ns). @return 1, or 0 when there are no
 * steps, the first step comes first or --since cut the run's start */
int steps_setup(const struct model *m, const struct steps *s, uint64_t *t0, uint64_t *t1);

/** "nvtx", "inferred" or "none", as in JSON and saved gate summaries. */
const char *steps_source_name(enum steps_source s);

/** Free what steps_find() took. Accepts a zeroed struct. */
void steps_free(struct steps *s);

#endif
