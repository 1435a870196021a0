/* harness.h: runs the host sampler in-process over the workload tree
 * (workload.h) into the in-memory collector, and the comparisons the
 * host tests share. Test-only. */
#ifndef CUDASPY_TEST_HARNESS_H
#define CUDASPY_TEST_HARNESS_H

#include <stdint.h>
#include <sys/types.h>

#include "fake_collector.h"
#include "host.h"
#include "workload.h"

#define HRUN_MAX_REP 32

struct hrun {
    struct collector *c;
    struct wl_report rep[HRUN_MAX_REP];
    int nrep, nexpect;
    pid_t root;
    uint64_t steal_ns;           /* /proc/stat steal, all CPUs, over the run */
};

/** Trace the workload tree (scale, linger_ms: see wl_start) to its end with
 * options @p o (root filled in). @return 0, or -1 with a message on stderr */
int hrun_tree(struct hrun *r, struct host_opts o, int scale, int linger_ms);

/** hrun_tree, calling @p after_open(@p arg) once the sampler's events are
 * enabled and before the tree runs; it returns 0 or -1 (then so does this). */
int hrun_tree_hook(struct hrun *r, struct host_opts o, int scale, int linger_ms,
                   int (*after_open)(void *arg), void *arg);

/** Off-CPU ns of @p tid clipped to [t0, t1]; switch-outs that began there. */
uint64_t hrun_off(const struct hrun *r, uint32_t tid, uint64_t t0, uint64_t t1, uint64_t *vol,
                  uint64_t *invol);

/** Do perf's voluntary (@p preempt 0) or involuntary switch counts of report
 * @p w agree with its /proc status deltas? Prints the numbers when not. */
int hrun_counts_agree(const struct hrun *r, const struct wl_report *w, int preempt);

/* A vCPU the hypervisor takes away leaves the guest's threads on CPU but
 * stops their CPU clocks (paravirt steal accounting), so perf's on-CPU time
 * runs ahead of the thread clock on a host that steals. A stolen ns puts at
 * most one thread ahead (the one on that vCPU), so the threads' excesses
 * together stay within the run's steal: seen on the 2-CPU VM as 2.8 ms on
 * one ping thread, and on CI as 125 ms over three threads of a run that
 * stole 320 ms. */
struct hrun_on_cpu {
    int n, ahead, wrong;         /* threads judged; ahead of, off their clock */
    uint64_t ahead_ns;           /* their excess beyond the slack, summed */
};

/** Does perf's on-CPU time of report @p w (its span less its off-CPU
 * records) match the thread's CPU clock within span / @p span_div plus
 * @p per_switch_ns for every switch? Adds the answer to @p acc and prints
 * the numbers when not. @return 1 yes, 0 no */
int hrun_on_cpu_agrees(const struct hrun *r, const struct wl_report *w, unsigned span_div,
                       uint64_t per_switch_ns, struct hrun_on_cpu *acc);

/** Judge a run's answers: no thread behind its clock, and the excess of
 * those ahead within the run's steal (to the tick, per CPU).
 * @return 1 pass, 0 fail (printed) */
int hrun_on_cpu_verdict(const struct hrun *r, const struct hrun_on_cpu *acc);

/** |got - want| <= pct % of want + slack */
int hrun_near(uint64_t got, uint64_t want, double pct, uint64_t slack);

#endif
