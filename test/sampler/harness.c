/* harness.c: in-process host sampler runs over the workload tree and the
 * comparisons the host tests share (harness.h). */
#include "harness.h"

#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procfs.h"

static void drain_until_done(struct hrun *r, struct host *h, struct wl *w)
{
    uint64_t deadline = procfs_now_ns() + 50000000000ull;
    int status, root_done = 0;

    while ((r->nrep < w->nexpect || !root_done) && procfs_now_ns() < deadline) {
        struct pollfd fds[64];
        int n = host_pollfds(h, fds, 64);

        poll(fds, (nfds_t)n, 50);
        host_drain(h, procfs_now_ns());
        wl_read(w, r->rep, HRUN_MAX_REP, &r->nrep);
        if (!root_done && waitpid(w->root, &status, WNOHANG) == w->root)
            root_done = 1;
    }
    for (int i = 0; i < 3; i++) {
        usleep(20000);
        host_drain(h, procfs_now_ns());
    }
}

/* Steal time of all CPUs so far, ns (counted in USER_HZ ticks). */
static uint64_t sys_steal_ns(void)
{
    struct procfs_sys s;
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);

    memset(&s, 0, sizeof(s));
    if (fd >= 0) {
        procfs_sys_read(fd, -1, &s);
        close(fd);
    }
    return s.steal * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

int hrun_tree(struct hrun *r, struct host_opts o, int scale, int linger_ms)
{
    return hrun_tree_hook(r, o, scale, linger_ms, NULL, NULL);
}

int hrun_tree_hook(struct hrun *r, struct host_opts o, int scale, int linger_ms,
                   int (*after_open)(void *arg), void *arg)
{
    struct cs_err err = {{0}};
    struct wl w;
    struct host *h;
    uint64_t steal;

    memset(r, 0, sizeof(*r));
    r->c = fake_collector_new();
    if (wl_start(&w, scale, linger_ms) < 0) {
        fprintf(stderr, "hrun: cannot start the workload\n");
        return -1;
    }
    r->root = o.root = w.root;
    r->nexpect = w.nexpect;
    h = host_new(&o);
    if (!h || host_open(h, r->c, &err) < 0) {
        fprintf(stderr, "hrun: host_open: %s\n", err.msg);
        kill(w.root, SIGKILL);
        host_free(h);
        return -1;
    }
    if (after_open && after_open(arg) < 0) {
        fprintf(stderr, "hrun: the after-open hook failed\n");
        kill(w.root, SIGKILL);
        host_free(h);
        return -1;
    }
    steal = sys_steal_ns();
    wl_go(&w);
    drain_until_done(r, h, &w);
    r->steal_ns = sys_steal_ns() - steal;
    host_finish(h, procfs_now_ns());
    host_free(h);
    close(w.report_r);
    if (r->nrep != r->nexpect) {
        fprintf(stderr, "hrun: %d reports, want %d\n", r->nrep, r->nexpect);
        return -1;
    }
    return 0;
}

uint64_t hrun_off(const struct hrun *r, uint32_t tid, uint64_t t0, uint64_t t1, uint64_t *vol,
                  uint64_t *invol)
{
    const struct cs_rec_offcpu *o;
    uint64_t off = 0;

    *vol = *invol = 0;
    for (size_t i = 0; (o = fake_rec(r->c, CS_REC_OFFCPU, i)) != NULL; i++) {
        uint64_t a = o->t_start_ns > t0 ? o->t_start_ns : t0;
        uint64_t b = o->t_end_ns < t1 ? o->t_end_ns : t1;

        if (o->tid != tid)
            continue;
        if (b > a)
            off += b - a;
        if (o->t_start_ns >= t0 && o->t_start_ns <= t1)
            *(o->cls == CS_OFF_PREEMPT ? invol : vol) += 1;
    }
    return off;
}

/* perf counts over [t0a, t1]; switches inside the two snapshot brackets
 * [t0a, t0] and [t1a, t1] may or may not be in the status deltas. */
int hrun_counts_agree(const struct hrun *r, const struct wl_report *w, int preempt)
{
    uint64_t v, i, va, ia, vb, ib, got, amb, want;

    hrun_off(r, w->tid, w->t0a, w->t1, &v, &i);
    hrun_off(r, w->tid, w->t0a, w->t0, &va, &ia);
    hrun_off(r, w->tid, w->t1a, w->t1, &vb, &ib);
    got = preempt ? i : v;
    amb = preempt ? ia + ib : va + vb;
    want = preempt ? w->invol1 - w->invol0 : w->vol1 - w->vol0;
    if (want + amb + want / 100 < got || got + want / 100 < want) {
        fprintf(stderr, "tid %u %s: %s perf %llu (+-%llu) status %llu\n", w->tid, w->comm,
                preempt ? "invol" : "vol", (unsigned long long)got, (unsigned long long)amb,
                (unsigned long long)want);
        return 0;
    }
    return 1;
}

int hrun_on_cpu_agrees(const struct hrun *r, const struct wl_report *w, unsigned span_div,
                       uint64_t per_switch_ns, struct hrun_on_cpu *acc)
{
    uint64_t v, iv, span = w->t1 - w->t0, cpu = w->cpu1 - w->cpu0;
    uint64_t on = span - hrun_off(r, w->tid, w->t0, w->t1, &v, &iv);
    uint64_t slack = span / span_div + (v + iv) * per_switch_ns;

    acc->n++;
    if (hrun_near(on, cpu, 0, slack))
        return 1;
    fprintf(stderr, "tid %u %s: on %llu/%llu us, slack %llu us (%llu switches)\n", w->tid,
            w->comm, (unsigned long long)on / 1000, (unsigned long long)cpu / 1000,
            (unsigned long long)slack / 1000, (unsigned long long)(v + iv));
    if (on > cpu) {
        acc->ahead++;
        acc->ahead_ns += on - cpu - slack;
    } else {
        acc->wrong++;
    }
    return 0;
}

int hrun_on_cpu_verdict(const struct hrun *r, const struct hrun_on_cpu *acc)
{
    uint64_t tick = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
    uint64_t budget = r->steal_ns + tick * (uint64_t)sysconf(_SC_NPROCESSORS_ONLN);

    if (!acc->wrong && acc->ahead_ns <= budget)
        return 1;
    fprintf(stderr,
            "hrun: on-CPU: of %d threads %d behind their clock, %d ahead by %llu us, "
            "steal allows %llu us\n",
            acc->n, acc->wrong, acc->ahead, (unsigned long long)acc->ahead_ns / 1000,
            (unsigned long long)budget / 1000);
    return 0;
}

int hrun_near(uint64_t got, uint64_t want, double pct, uint64_t slack)
{
    double d = fabs((double)got - (double)want);

    return d <= (double)want * pct / 100.0 + (double)slack;
}
