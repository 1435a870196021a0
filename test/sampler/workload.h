/* workload.h: the process tree the host sampler tests trace. A root with
 * children and grandchildren forked before and after attach that spin,
 * sleep, ping-pong over pipes, touch a known number of pages and run
 * threads. Every working thread reports its own ground truth (clock,
 * /proc status counts, schedstat, thread CPU time) over a pipe. */
#ifndef CUDASPY_TEST_WORKLOAD_H
#define CUDASPY_TEST_WORKLOAD_H

#include <stdint.h>
#include <sys/types.h>

enum wl_kind { WL_SLEEP = 1, WL_SPIN, WL_PING, WL_PAGES, WL_THREAD };

/* One thread's ground truth, measured by itself around its work. */
struct wl_report {
    uint32_t pid, tid, ppid, kind;
    uint32_t preattach;          /* forked before the sampler attached */
    char comm[16];
    uint64_t t0, t1;             /* CLOCK_MONOTONIC right after each snapshot */
    uint64_t t0a, t1a;           /* ... and right before it: a switch inside
                                    [t0a, t0] or [t1a, t1] may or may not be
                                    in the status deltas */
    uint64_t cpu0, cpu1;         /* CLOCK_THREAD_CPUTIME_ID */
    uint64_t ss_on0, ss_on1, ss_rd0, ss_rd1; /* schedstat on-CPU, run delay */
    uint64_t vol0, vol1, invol0, invol1;     /* status ctxt switches */
    uint64_t pages;              /* pages touched (WL_PAGES) */
};

#define WL_PAGES_K 8192          /* pages the page worker touches */

struct wl {
    pid_t root;
    int go_w;                    /* write WL_WAITERS bytes to start */
    int report_r;                /* struct wl_report stream, non-blocking */
    int nexpect;                 /* reports to expect */
    int scale;                   /* 1 = full, smaller = faster */
};

/** Fork the tree; returns once the pre-attach part is forked and waiting.
 * Every process lingers @p linger_ms asleep after its report, so pollers
 * see its final counters. @return 0 or -errno */
int wl_start(struct wl *w, int scale, int linger_ms);

/** Let the tree run. */
void wl_go(struct wl *w);

/** Read reports that are ready into @p out (capacity @p max, count @p n). */
void wl_read(struct wl *w, struct wl_report *out, int max, int *n);

#endif
