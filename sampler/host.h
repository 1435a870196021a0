/* host.h: the host sampler (perf_event tiers A/B, /proc tier C) as seen by
 * the collector's main loop. It follows the traced PID tree, runs the
 * per-thread scheduling state machine and hands records, process and thread
 * rows and metadata to the collector (collector.h). Implemented in host.c
 * with the pe_*.c objects; it never signals, ptraces or slows the tree.
 * Usage: host_new -> host_open -> loop { poll(host_pollfds...); host_drain }
 *        -> host_finish -> host_free */
#ifndef CUDASPY_SAMPLER_HOST_H
#define CUDASPY_SAMPLER_HOST_H

#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector.h"
#include "cudaspy/error.h"

struct host;

/* Page counts come from kmem:mm_page_alloc (every allocation, order-weighted,
 * the kernel's own too) or from the minor-fault software event (one page a
 * fault; a THP fault counts 1, not 512). The tracepoint costs each fault of
 * every process the assembly of its record even when not sampled; on the
 * seed (1.7 M faults in 9 s) it added 0.8-2.6 s of system time to the tree
 * at period 1, minor faults 1 in 16 none measurable (median -0.05 s over 9
 * pairs; bench/results/gpu-2026-11-29-pages). */
enum { HOST_PAGES_ALLOCS = 'a', HOST_PAGES_FAULTS = 'f' };
#define HOST_PAGES_DEFAULT HOST_PAGES_FAULTS
#define HOST_PAGES_PERIOD_FAULTS 16 /* default period of each source */
#define HOST_PAGES_PERIOD_ALLOCS 1

struct host_opts {
    pid_t root;               /* root of the traced tree */
    int launched;             /* 1: we forked root (subreaper); 0: attached */
    int force_tier;           /* 0 = probe; 'A', 'B' or 'C' to force a tier (tests) */
    uint64_t window_ns;       /* per-process counter windows; default 10 ms */
    uint64_t offcpu_min_ns;   /* emit off-CPU intervals at least this long; default 100 us */
    uint64_t runq_min_ns;     /* emit run-queue waits at least this long; default 100 us */
    unsigned page_alloc_period; /* page event sample period; default per source */
    int page_source;          /* what counts pages: HOST_PAGES_ALLOCS or _FAULTS; 0 = default */
    const char *events;       /* libpfm4 names, comma-separated, or NULL */
    unsigned ring_pages;      /* data pages per CPU ring (power of 2); default 512 */
};

/** Allocate with defaults filled in for zero fields. @return NULL on ENOMEM */
struct host *host_new(const struct host_opts *o);

/** Probe the tier, open and enable events, then seed the tracked set from
 * /proc (root and its descendants, including children forked before attach),
 * and write sampler_tier / sampler_tier_reason meta through @p c.
 * @return 0, or a negative code when no tier at all works (@p err says why;
 *         the collector then runs without host data) */
int host_open(struct host *h, struct collector *c, struct cs_err *err);

/** Fill up to @p max pollfds to wait on. @return how many */
int host_pollfds(struct host *h, struct pollfd *fds, int max);

/** Read what is ready, advance the state machines up to @p now_ns minus the
 * merge holdback, emit closed intervals and windows. Call every <= 100 ms. */
int host_drain(struct host *h, uint64_t now_ns);

/** Tell the sampler @p pid belongs to the tree (a shim registered from it). */
void host_add_pid(struct host *h, pid_t pid);

/** Stop (@p paused = 1) or restart every perf event, for the off phases of
 * `record --duty`; tier C's /proc polling goes on. @return 0 or the first
 * ioctl's negative errno. */
int host_pause(struct host *h, int paused);

/** Number of live processes in the tracked tree (0 = the tree is gone). */
int host_live(struct host *h);

/** Drain everything, close open intervals at @p now_ns, emit final windows,
 * write lost-record totals to meta. */
int host_finish(struct host *h, uint64_t now_ns);

/** Close fds, unmap rings, free. Accepts NULL. */
void host_free(struct host *h);

#endif
