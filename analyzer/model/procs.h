/* model/procs.h: the per-process breakdown: role in the tree, CUDA calls and time,
 * on/off-CPU split, run-queue delay, longest stall, context switches, page
 * allocations and faults. Reads the model's pwin windows (counters summed
 * over a process's threads) and off-CPU intervals; fills m_proc.st. Also
 * the windows' sums over any span, and the outside's share of the CPU, that
 * the rules read. */
#ifndef CUDASPY_ANALYZER_PROCS_H
#define CUDASPY_ANALYZER_PROCS_H

#include "model.h"

/** Fill role and st of every process of @p m. */
void procs_compute(struct model *m);

/** "cuda_main", "worker" or "other". */
const char *procs_role_name(int role);

/** Name of process @p p for messages: "python (pid 4711)" into @p buf. */
const char *procs_label(const struct model *m, uint32_t p, char *buf, size_t n);

/** comm of (@p run, @p pid), "?" if the process is not in the run. */
const char *procs_comm(const struct model *m, uint32_t run, uint32_t pid);

/** Process @p p's active window, clipped to its run's window: from the end
 * of its start-up (cuInit and context creation begun before its first
 * launch, copy or memset) or its first outermost call after that, to the
 * exit of its last call that gives the GPU work, waits for it or manages
 * its memory (unloads and queries at exit are teardown; a process with
 * only those ends at its last call); an empty window (*lo == *hi) when it
 * made no call.
 * Computed once by procs_compute(), which must have run. */
void procs_active_window(const struct model *m, uint32_t p, uint64_t *lo, uint64_t *hi);

/* What procs_win_sum() adds up from a process's pwin windows. */
enum procs_win { PW_PAGES, PW_FAULTS, PW_ONCPU };

/** Page allocations, minor + major faults or on-CPU ns of process @p p
 * within [@p t0, @p t1), pro rata of each window. */
double procs_win_sum(const struct model *m, uint32_t p, uint64_t t0, uint64_t t1,
                     enum procs_win what);

/** Share (0..1) of the CPU time that processes outside the traced tree used
 * in [@p t0, @p t1) on the host of run @p run, from its system windows; the
 * waiting process @p p's own CPU time is not the tree's. -1: no window. */
double procs_ext_share(const struct model *m, uint32_t run, uint32_t p, uint64_t t0,
                       uint64_t t1);

#endif
