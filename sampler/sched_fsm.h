/* sched_fsm.h: the per-thread scheduling state machine and the windows.
 * Consumes decoded perf events (pe_decode.h) in global time order, keeps the
 * tracked process tree, and emits off-CPU intervals, run-queue waits,
 * per-process and system windows, lost spans, process and thread rows
 * through the collector (collector.h). Reading rings is host.c's job.
 * Usage: sched_fsm_new -> sched_fsm_seed_proc... -> loop { sched_fsm_event...;
 *        sched_fsm_advance } -> sched_fsm_finish -> sched_fsm_free */
#ifndef CUDASPY_SAMPLER_SCHED_FSM_H
#define CUDASPY_SAMPLER_SCHED_FSM_H

#include <stdint.h>
#include <sys/types.h>

#include "collector.h"
#include "pe_decode.h"
#include "procfs.h"

struct sched_fsm;

struct sched_fsm_opts {
    struct collector *c;
    uint64_t window_ns;     /* pwin/syswin length */
    uint64_t offcpu_min_ns; /* emit off-CPU intervals at least this long */
    uint64_t runq_min_ns;   /* emit run-queue waits at least this long */
    int ncpu;
    int cpuwide;            /* CPU-wide switch records: holders, idle, outsiders */
    int has_block_tp;       /* sched_switch labels S/D */
    int has_wake_tp;        /* sched_waking: run-queue waits after sleeps */
    int pages_from_faults;  /* count a minor fault as a page allocation */
    pid_t self;             /* never tracked */
};

/* Totals for meta and tests. */
struct sched_fsm_stats {
    uint64_t events;        /* events consumed */
    uint64_t lost;          /* records lost (LOST records) */
    uint64_t lost_spans;    /* LOST records */
    uint64_t checks;        /* schedstat comparisons made */
    uint64_t diverged;      /* of which disagreed */
    uint64_t procs, threads;
    uint64_t wake_unknown;  /* switch-ins after a block with no wakeup seen */
    uint64_t block_tp;      /* sched_switch samples of tracked threads */
    uint64_t block_unlabelled; /* voluntary switch-outs the tracepoint missed */
    uint64_t runq_schedstat_ns, runq_perf_ns; /* run delay over the cross-checks */
};

/** @return NULL on ENOMEM */
struct sched_fsm *sched_fsm_new(const struct sched_fsm_opts *o);
void sched_fsm_free(struct sched_fsm *s);

/** Track @p pid (seen in /proc at @p t_ns) and its current threads; flags
 * CS_PF_* (ROOT, PREATTACH). Emits its process and thread rows.
 * @return 0 (also when already tracked), -ESRCH (gone), -ENOMEM */
int sched_fsm_seed_proc(struct sched_fsm *s, pid_t pid, uint64_t t_ns, uint32_t flags);

/** Is @p pid (tgid) tracked and alive? */
int sched_fsm_tracked(const struct sched_fsm *s, uint32_t pid);

/** Consume one event; events must come in time order. */
void sched_fsm_event(struct sched_fsm *s, const struct pe_ev *ev);

/** Close windows that end at or before @p t_ns. */
void sched_fsm_advance(struct sched_fsm *s, uint64_t t_ns);

/** Feed a /proc/stat + PSI reading taken at @p t_ns (syswin). */
void sched_fsm_sys_sample(struct sched_fsm *s, uint64_t t_ns, const struct procfs_sys *sys);

/** Queue a schedstat reading of @p tid taken at @p t_ns; it is compared with
 * the perf-derived on-CPU time once events up to @p t_ns are consumed. */
void sched_fsm_check(struct sched_fsm *s, uint32_t tid, uint64_t t_ns,
                     const struct procfs_schedstat *ss);

/** Call @p fn for every live tracked thread. */
void sched_fsm_foreach_thread(struct sched_fsm *s,
                              void (*fn)(void *arg, uint32_t pid, uint32_t tid), void *arg);

/** Live tracked processes. */
int sched_fsm_live(const struct sched_fsm *s);

/** Tier C: process @p pid is gone (seen at @p t_ns); emits its row. */
void sched_fsm_proc_gone(struct sched_fsm *s, uint32_t pid, uint64_t t_ns);

/** Mark exited, at @p t_ns, every tracked process that /proc no longer
 * shows alive: its exit record was never made (perf events paused). */
void sched_fsm_drop_gone(struct sched_fsm *s, uint64_t t_ns);

/** Tier C: emit one syswin over [@p ws, @p we] from the /proc/stat readings. */
void sched_fsm_sys_window(struct sched_fsm *s, uint64_t ws, uint64_t we);

/** Close open intervals at @p t_ns and emit the last windows. */
void sched_fsm_finish(struct sched_fsm *s, uint64_t t_ns);

const struct sched_fsm_stats *sched_fsm_stats(const struct sched_fsm *s);

#endif
