/* sched_fsm.c: per-thread scheduling state machine, tracked tree and windows.
 * Owns the thread/process/CPU tables built from perf events (docs/sampler.md,
 * "Edges, merging and the state machine"): switch-out/in edges from
 * context_switch records, S/D labels from the sched_switch tracepoint,
 * run-queue starts from sched_waking / sched_wakeup_new, idle and outsiders
 * from CPU-wide records. Everything
 * leaves through collector.h; ring reading and ordering are host.c's. */
#include "sched_fsm.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_tab.h"

enum { TS_UNKNOWN = 0, TS_ON, TS_BLOCKED, TS_RUNNABLE };

#define CLS_NEW 0             /* runnable since fork, never ran */
#define SEG_LOG 4096          /* run segments remembered per CPU (power of two) */
#define SYS_SAMPLES 32        /* /proc/stat readings kept for window rates */
#define PEND_WAKE_NS 1000000  /* a wakeup this close before a switch-out counts */
#define TP_MATCH_NS 200000    /* sched_switch sample to switch-out record */
#define CHK_MIN_NS 20000000   /* compare schedstat only over >= 20 ms of CPU */
#define CHK_SLACK_NS 4000000  /* a tick of schedstat lag */

struct thr {
    uint32_t pid, tid;
    uint8_t state, cls, gap, exited, partial, pend_wake;
    int32_t cpu, in_cpu;          /* CPU of the last switch / last switch-in, -1 */
    uint64_t t_since, t_acct;     /* state start; accounted into windows up to */
    uint64_t t_enqueue;           /* runnable since (0 = unknown) */
    uint64_t t_block_tp;          /* last sched_switch sample (0 = none) */
    uint32_t block_state;
    uint64_t t_pend_wake;
    uint32_t pend_pid, pend_tid, waker_pid, waker_tid;
    uint64_t on_total;            /* on-CPU ns since first seen */
    uint64_t runq_total;          /* run-queue ns seen in events */
    uint64_t chk_perf, chk_sched, chk_rd, chk_runq;
    int chk_valid, rd_valid;
    uint64_t win_idx;             /* last window counted in nthreads */
};

struct proc {
    struct cs_proc row;
    uint32_t nlive;
    int dead;
    int active;                   /* something accrued in the current window */
    struct cs_rec_pwin win;
};

struct seg {
    uint64_t t0, t1;
    uint32_t pid;
};

struct cpu {
    uint32_t in_pid, in_tid;      /* last switched in, any tier */
    uint64_t t_out;               /* last switch-out record (CPU-wide) */
    uint32_t out_next;            /* the tid it switched to */
    int known;
    uint32_t pid, tid;            /* running now (pid 0 = idle) */
    uint64_t t_since, t_acct, t_last;
    struct seg *log;
    unsigned head, n;
};

struct sys_sample {
    uint64_t t;
    struct procfs_sys v;
};

struct chk {
    uint32_t tid;
    uint64_t t, sched_on, run_delay;
};

struct sched_fsm {
    struct sched_fsm_opts o;
    struct sched_tab threads, procs, ext;  /* vals: struct thr *, struct proc *, ns */
    struct cpu *cpus;
    int win_started;
    uint64_t win_start, win_idx;
    uint64_t idle_ns, busy_ns, tree_ns, ext_ns;
    uint32_t win_flags;
    struct sys_sample sys[SYS_SAMPLES];
    unsigned sys_n;
    struct chk *chks;
    size_t nchk, capchk;
    int nlive;
    struct sched_fsm_stats st;
};

static struct thr *thr_get(const struct sched_fsm *s, uint32_t tid)
{
    uint64_t *v = sched_tab_get(&s->threads, tid);

    return v ? (struct thr *)(uintptr_t)*v : NULL;
}

static struct proc *proc_get(const struct sched_fsm *s, uint32_t pid)
{
    uint64_t *v = sched_tab_get(&s->procs, pid);

    return v ? (struct proc *)(uintptr_t)*v : NULL;
}

static struct proc *proc_live(const struct sched_fsm *s, uint32_t pid)
{
    struct proc *p = proc_get(s, pid);

    return p && !p->dead ? p : NULL;
}

int sched_fsm_tracked(const struct sched_fsm *s, uint32_t pid)
{
    return proc_live(s, pid) != NULL;
}

int sched_fsm_live(const struct sched_fsm *s)
{
    return s->nlive;
}

const struct sched_fsm_stats *sched_fsm_stats(const struct sched_fsm *s)
{
    return &s->st;
}

struct sched_fsm *sched_fsm_new(const struct sched_fsm_opts *o)
{
    struct sched_fsm *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->o = *o;
    if (s->o.ncpu < 1)
        s->o.ncpu = 1;
    s->cpus = calloc((size_t)s->o.ncpu, sizeof(*s->cpus));
    if (!s->cpus) {
        free(s);
        return NULL;
    }
    for (int i = 0; i < s->o.ncpu; i++) {
        s->cpus[i].log = calloc(SEG_LOG, sizeof(struct seg));
        if (!s->cpus[i].log) {
            sched_fsm_free(s);
            return NULL;
        }
    }
    return s;
}

static void free_vals(struct sched_tab *t)
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->keys[i])
            free((void *)(uintptr_t)t->vals[i]);
    sched_tab_free(t);
}

void sched_fsm_free(struct sched_fsm *s)
{
    if (!s)
        return;
    free_vals(&s->threads);
    free_vals(&s->procs);
    sched_tab_free(&s->ext);
    for (int i = 0; i < s->o.ncpu; i++)
        free(s->cpus[i].log);
    free(s->cpus);
    free(s->chks);
    free(s);
}

/* ---- rows ---- */

static void emit_thread_row(struct sched_fsm *s, const struct thr *th, uint64_t start_ns,
                            uint64_t exit_ns, const char *name)
{
    struct cs_thread row;

    memset(&row, 0, sizeof(row));
    row.pid = th->pid;
    row.tid = th->tid;
    row.start_ns = start_ns;
    row.exit_ns = exit_ns;
    if (name)
        snprintf(row.name, sizeof(row.name), "%s", name);
    collector_thread(s->o.c, &row);
}

/* RANK=<n> from /proc/<pid>/environ, best effort. */
static uint32_t read_rank(pid_t pid)
{
    char p[64], buf[65536];
    FILE *f;
    size_t n;

    snprintf(p, sizeof(p), "/proc/%d/environ", (int)pid);
    f = fopen(p, "re");
    if (!f)
        return CS_RANK_NONE;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (strncmp(buf + i, "RANK=", 5) == 0)
            return (uint32_t)strtoul(buf + i + 5, NULL, 10);
    return CS_RANK_NONE;
}

/* Command line of @p pid interned; keeps @p fallback when /proc has none. */
static uint32_t read_cmdline_id(struct sched_fsm *s, pid_t pid, uint32_t fallback)
{
    char buf[4096];
    uint32_t id = fallback;
    int n = procfs_cmdline(pid, buf, sizeof(buf));

    if (n > 0 && collector_intern(s->o.c, buf, (size_t)n, &id) < 0)
        id = fallback;
    return id;
}

static struct thr *thr_add(struct sched_fsm *s, struct proc *p, uint32_t tid)
{
    uint64_t *slot;
    struct thr *th = thr_get(s, tid);

    if (th)
        return th;
    th = calloc(1, sizeof(*th));
    slot = th ? sched_tab_put(&s->threads, tid) : NULL;
    if (!slot) {
        free(th);
        return NULL;
    }
    *slot = (uintptr_t)th;
    th->pid = p->row.pid;
    th->tid = tid;
    th->cpu = th->in_cpu = -1;
    th->win_idx = UINT64_MAX;
    p->nlive++;
    s->st.threads++;
    return th;
}

static void thr_del(struct sched_fsm *s, struct thr *th)
{
    sched_tab_del(&s->threads, th->tid);
    free(th);
}

static struct proc *proc_add(struct sched_fsm *s, uint32_t pid)
{
    struct proc *p = proc_get(s, pid);
    uint64_t *slot;

    if (p && !p->dead)
        return p;
    if (p) { /* pid reused after exit: a new row */
        sched_tab_del(&s->procs, pid);
        free(p);
    }
    p = calloc(1, sizeof(*p));
    slot = p ? sched_tab_put(&s->procs, pid) : NULL;
    if (!slot) {
        free(p);
        return NULL;
    }
    *slot = (uintptr_t)p;
    p->row.pid = pid;
    p->row.exit_status = -1;
    p->row.rank = CS_RANK_NONE;
    p->win.pid = pid;
    s->nlive++;
    s->st.procs++;
    return p;
}

static void seed_thread(struct sched_fsm *s, struct proc *p, pid_t tid, uint64_t t)
{
    struct procfs_stat st;
    struct thr *th;

    if (thr_get(s, (uint32_t)tid) || procfs_stat_read(p->row.pid, tid, &st) < 0)
        return;
    th = thr_add(s, p, (uint32_t)tid);
    if (!th)
        return;
    th->partial = 1; /* the current state started before we looked */
    th->t_since = th->t_acct = t;
    switch (st.state) {
    case 'R': th->state = TS_ON; break;
    case 'D': th->state = TS_BLOCKED; th->cls = CS_OFF_DISK; break;
    case 'S': th->state = TS_BLOCKED; th->cls = CS_OFF_SLEEP; break;
    default: th->state = TS_BLOCKED; th->cls = CS_OFF_OTHER; break;
    }
    emit_thread_row(s, th, procfs_ticks_to_mono_ns(st.start_ticks), 0, st.comm);
}

/* Is @p pid an exited process we know, started at @p start_ns (give or
 * take the 10 ms resolution of /proc start times)? */
static int same_dead_proc(const struct sched_fsm *s, uint32_t pid, uint64_t start_ns)
{
    const struct proc *p = proc_get(s, pid);
    uint64_t d;

    if (!p || !p->dead)
        return 0;
    d = start_ns > p->row.start_ns ? start_ns - p->row.start_ns : p->row.start_ns - start_ns;
    return d <= 20000000ull;
}

/* Is @p pid in /proc and neither a zombie nor dead? Fills @p st. */
static int alive_in_procfs(pid_t pid, struct procfs_stat *st)
{
    return procfs_stat_read(pid, 0, st) == 0 && st->state != 'Z' && st->state != 'X';
}

int sched_fsm_seed_proc(struct sched_fsm *s, pid_t pid, uint64_t t_ns, uint32_t flags)
{
    struct procfs_pids tids = {0};
    struct procfs_stat st;
    struct proc *p;

    if (pid == s->o.self)
        return 0;
    p = proc_live(s, (uint32_t)pid);
    if (p) {
        p->row.flags |= flags;
        return collector_proc(s->o.c, &p->row);
    }
    if (!alive_in_procfs(pid, &st))
        return -ESRCH;
    if (same_dead_proc(s, (uint32_t)pid, procfs_ticks_to_mono_ns(st.start_ticks)))
        return 0; /* exited, not yet reaped: still in /proc */
    p = proc_add(s, (uint32_t)pid);
    if (!p)
        return -ENOMEM;
    p->row.ppid = (uint32_t)st.ppid;
    p->row.start_ns = procfs_ticks_to_mono_ns(st.start_ticks);
    p->row.flags = flags;
    memcpy(p->row.comm, st.comm, sizeof(p->row.comm));
    p->row.cmdline_id = read_cmdline_id(s, pid, 0);
    p->row.rank = read_rank(pid);
    collector_proc(s->o.c, &p->row);
    if (procfs_tids(pid, &tids) < 0)
        procfs_pids_add(&tids, pid);
    for (size_t i = 0; i < tids.n; i++)
        seed_thread(s, p, tids.v[i], t_ns);
    procfs_pids_free(&tids);
    return 0;
}

/* ---- accounting into windows ---- */

static void win_touch(struct sched_fsm *s, struct proc *p, struct thr *th)
{
    p->active = 1;
    if (th && th->win_idx != s->win_idx) {
        th->win_idx = s->win_idx;
        p->win.nthreads++;
    }
}

/* Add the time since th->t_acct to the window of its process, by state. */
static void thr_accrue(struct sched_fsm *s, struct thr *th, uint64_t t)
{
    struct proc *p = proc_get(s, th->pid);
    uint64_t dt;

    if (!p || t <= th->t_acct || th->state == TS_UNKNOWN) {
        if (t > th->t_acct)
            th->t_acct = t;
        return;
    }
    dt = t - th->t_acct;
    th->t_acct = t;
    win_touch(s, p, th);
    switch (th->state) {
    case TS_ON: p->win.oncpu_ns += dt; break;
    case TS_RUNNABLE:
        p->win.runq_ns += dt;
        if (th->cls == CS_OFF_PREEMPT)
            p->win.preempt_ns += dt;
        break;
    case TS_BLOCKED:
        if (th->cls == CS_OFF_DISK)
            p->win.disk_ns += dt;
        else
            p->win.sleep_ns += dt;
        break;
    }
}

static void ext_add(struct sched_fsm *s, uint32_t pid, uint64_t dt)
{
    uint64_t *v = sched_tab_put(&s->ext, pid);

    if (v)
        *v += dt;
}

static void cpu_accrue(struct sched_fsm *s, struct cpu *c, uint64_t t)
{
    uint64_t dt;

    if (!c->known || t <= c->t_acct) {
        if (t > c->t_acct)
            c->t_acct = t;
        return;
    }
    dt = t - c->t_acct;
    c->t_acct = t;
    if (c->pid == 0) {
        s->idle_ns += dt;
        return;
    }
    s->busy_ns += dt;
    if (sched_fsm_tracked(s, c->pid)) {
        s->tree_ns += dt;
    } else {
        s->ext_ns += dt;
        ext_add(s, c->pid, dt);
    }
}

/* Who runs on CPU @p c changes at @p t: close the segment, log it. */
static void cpu_switch(struct sched_fsm *s, struct cpu *c, uint64_t t, uint32_t pid, uint32_t tid)
{
    cpu_accrue(s, c, t);
    if (c->known && (c->pid != pid || c->tid != tid)) {
        struct seg *g = &c->log[c->head];

        g->t0 = c->t_since;
        g->t1 = t;
        g->pid = c->pid;
        c->head = (c->head + 1) & (SEG_LOG - 1);
        if (c->n < SEG_LOG)
            c->n++;
    }
    if (!c->known || c->pid != pid || c->tid != tid)
        c->t_since = t;
    c->known = 1;
    c->pid = pid;
    c->tid = tid;
    if (c->t_acct < t)
        c->t_acct = t;
}

/* Process that ran most on CPU @p cpu during [t0, t1], idle excluded. */
static void holder_of(const struct sched_fsm *s, int cpu, uint64_t t0, uint64_t t1, uint32_t *pid,
                      uint32_t *permille)
{
    enum { K = 8 };
    uint32_t pids[K] = {0};
    uint64_t ns[K] = {0};
    const struct cpu *c;
    unsigned best = 0;

    *pid = 0;
    *permille = 0;
    if (cpu < 0 || cpu >= s->o.ncpu || t1 <= t0)
        return;
    c = &s->cpus[cpu];
    for (unsigned i = 0; i <= c->n; i++) {
        struct seg g;
        uint64_t a, b;

        if (i == 0) { /* the open segment */
            if (!c->known)
                continue;
            g.t0 = c->t_since, g.t1 = t1, g.pid = c->pid;
        } else {
            g = c->log[(c->head - i) & (SEG_LOG - 1)];
        }
        if (g.t1 <= t0 && i > 0)
            break;
        a = g.t0 > t0 ? g.t0 : t0;
        b = g.t1 < t1 ? g.t1 : t1;
        if (g.pid == 0 || b <= a)
            continue;
        for (unsigned k = 0; k < K; k++) {
            if (pids[k] == g.pid || pids[k] == 0) {
                pids[k] = g.pid;
                ns[k] += b - a;
                break;
            }
        }
    }
    for (unsigned k = 1; k < K; k++)
        if (ns[k] > ns[best])
            best = k;
    *pid = pids[best];
    *permille = (uint32_t)(ns[best] * 1000 / (t1 - t0));
}

/* ---- windows ---- */

/* Integral of a /proc/stat counter over [ws, we] from the kept readings. */
static double sys_delta(const struct sched_fsm *s, size_t off, uint64_t ws, uint64_t we)
{
    double sum = 0;

    for (unsigned i = 1; i < s->sys_n; i++) {
        const struct sys_sample *a = &s->sys[i - 1], *b = &s->sys[i];
        uint64_t va, vb, lo, hi;

        memcpy(&va, (const char *)&a->v + off, 8);
        memcpy(&vb, (const char *)&b->v + off, 8);
        lo = a->t > ws ? a->t : ws;
        hi = b->t < we ? b->t : we;
        if (hi <= lo || b->t <= a->t || vb < va)
            continue;
        sum += (double)(vb - va) * (double)(hi - lo) / (double)(b->t - a->t);
    }
    return sum;
}

#define SYS_DELTA(s, field, ws, we) sys_delta(s, offsetof(struct procfs_sys, field), ws, we)

static uint16_t permille(double part, double whole)
{
    if (whole <= 0)
        return 0;
    return (uint16_t)(part * 1000.0 / whole + 0.5);
}

static void top3(struct sched_fsm *s, struct cs_rec_syswin *w)
{
    for (size_t i = 0; i < s->ext.cap; i++) {
        uint32_t pid = s->ext.keys[i];
        uint64_t ns = s->ext.vals[i];

        if (!pid)
            continue;
        for (int k = 0; k < 3; k++) {
            if (ns > w->top_ns[k]) {
                for (int j = 2; j > k; j--) {
                    w->top_ns[j] = w->top_ns[j - 1];
                    w->top_pid[j] = w->top_pid[j - 1];
                }
                w->top_ns[k] = ns;
                w->top_pid[k] = pid;
                break;
            }
        }
    }
    sched_tab_clear(&s->ext);
}

static void emit_syswin(struct sched_fsm *s, uint64_t ws, uint64_t we)
{
    struct cs_rec_syswin w;
    double total = sys_delta(s, offsetof(struct procfs_sys, total), ws, we);

    memset(&w, 0, sizeof(w));
    w.t_start_ns = ws;
    w.t_end_ns = we;
    w.ncpu = (uint16_t)s->o.ncpu;
    if (s->o.cpuwide && s->idle_ns + s->busy_ns > 0) {
        w.busy_permille = permille((double)s->busy_ns, (double)(s->idle_ns + s->busy_ns));
    } else {
        double idle = sys_delta(s, offsetof(struct procfs_sys, idle), ws, we) +
                      sys_delta(s, offsetof(struct procfs_sys, iowait), ws, we);
        w.busy_permille = total > 0 ? (uint16_t)(1000 - permille(idle, total)) : 0;
    }
    w.steal_permille = permille(SYS_DELTA(s, steal, ws, we), total);
    w.iowait_permille = permille(SYS_DELTA(s, iowait, ws, we), total);
    w.psi_some_us = (uint64_t)(SYS_DELTA(s, psi_some_us, ws, we) + 0.5);
    if (s->sys_n) {
        w.procs_running = s->sys[s->sys_n - 1].v.procs_running;
        w.procs_blocked = s->sys[s->sys_n - 1].v.procs_blocked;
    }
    w.tree_oncpu_ns = s->tree_ns;
    w.ext_oncpu_ns = s->ext_ns;
    top3(s, &w);
    collector_emit(s->o.c, CS_REC_SYSWIN, 0, &w);
    s->idle_ns = s->busy_ns = s->tree_ns = s->ext_ns = 0;
}

/* Forget exited processes once their last window is out, so windows cost
 * O(live processes) however many have come and gone. */
static void drop_dead(struct sched_fsm *s, const uint32_t *pids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct proc *p = proc_get(s, pids[i]);

        sched_tab_del(&s->procs, pids[i]);
        free(p);
    }
}

static void emit_pwins(struct sched_fsm *s, uint64_t ws, uint64_t we)
{
    uint32_t dead[64];
    size_t ndead = 0;

    for (size_t i = 0; i < s->procs.cap; i++) {
        struct proc *p;

        if (!s->procs.keys[i])
            continue;
        p = (struct proc *)(uintptr_t)s->procs.vals[i];
        if (p->active) {
            p->win.t_start_ns = ws;
            p->win.t_end_ns = we;
            p->win.flags |= s->win_flags;
            collector_emit(s->o.c, CS_REC_PWIN, p->win.pid, &p->win);
        } else if (p->dead && p->nlive == 0 && ndead < 64) {
            dead[ndead++] = p->row.pid;
        }
        memset(&p->win, 0, sizeof(p->win));
        p->win.pid = p->row.pid;
        p->active = 0;
    }
    drop_dead(s, dead, ndead);
}

static void flush_window(struct sched_fsm *s, uint64_t we)
{
    uint64_t ws = s->win_start;

    for (size_t i = 0; i < s->threads.cap; i++)
        if (s->threads.keys[i])
            thr_accrue(s, (struct thr *)(uintptr_t)s->threads.vals[i], we);
    for (int c = 0; c < s->o.ncpu; c++)
        cpu_accrue(s, &s->cpus[c], we);
    emit_pwins(s, ws, we);
    emit_syswin(s, ws, we);
    s->win_flags = 0;
    s->win_start = we;
    s->win_idx++;
}

static void eval_checks(struct sched_fsm *s, uint64_t t);

void sched_fsm_advance(struct sched_fsm *s, uint64_t t)
{
    if (!s->win_started) {
        s->win_start = t - t % s->o.window_ns;
        s->win_started = 1;
    }
    while (t >= s->win_start + s->o.window_ns)
        flush_window(s, s->win_start + s->o.window_ns);
    eval_checks(s, t);
}

/* ---- events ---- */

static uint8_t class_of_state(uint32_t st)
{
    st &= 0xff;
    if (st & 0x02)
        return CS_OFF_DISK;
    if (st & (0x01 | 0x80)) /* S, or I (idle wait, counted as sleep) */
        return CS_OFF_SLEEP;
    return CS_OFF_OTHER;
}

static uint32_t sat32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void emit_offcpu(struct sched_fsm *s, struct thr *th, uint64_t t)
{
    struct cs_rec_offcpu r;

    memset(&r, 0, sizeof(r));
    r.t_start_ns = th->t_since;
    r.t_end_ns = t;
    r.pid = th->pid;
    r.tid = th->tid;
    r.cls = th->cls;
    r.cpu = (uint16_t)(th->cpu < 0 ? 0 : th->cpu);
    r.runq_ns = th->t_enqueue ? sat32(t - th->t_enqueue) : 0;
    if (th->cls == CS_OFF_PREEMPT && s->o.cpuwide) {
        holder_of(s, th->cpu, th->t_since, t, &r.holder_pid, &r.holder_permille);
        if (r.holder_pid && sched_fsm_tracked(s, r.holder_pid))
            r.flags |= CS_HF_HOLDER_IN_TREE;
    } else if (th->cls != CS_OFF_PREEMPT) {
        r.waker_pid = th->waker_pid;
        r.waker_tid = th->waker_tid;
    }
    if (th->gap)
        r.flags |= CS_HF_DEGRADED;
    collector_emit(s->o.c, CS_REC_OFFCPU, th->pid, &r);
}

static void emit_runq(struct sched_fsm *s, struct thr *th, const struct pe_ev *ev)
{
    struct cs_rec_runq r;

    memset(&r, 0, sizeof(r));
    r.t_enqueue_ns = th->t_enqueue;
    r.t_run_ns = ev->t_ns;
    r.pid = th->pid;
    r.tid = th->tid;
    r.prev_pid = (ev->flags & PE_F_CPUWIDE) ? (uint32_t)ev->b : 0;
    r.cpu = ev->cpu;
    r.flags = th->gap ? CS_HF_DEGRADED : 0;
    collector_emit(s->o.c, CS_REC_RUNQ, th->pid, &r);
}

/* A thread we have not seen before, of a tracked process. */
static struct thr *thr_find(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct thr *th = thr_get(s, ev->tid);
    struct proc *p;

    if (th || ev->tid == 0 || ev->tid == UINT32_MAX || ev->pid == UINT32_MAX)
        return th;
    p = proc_live(s, ev->pid);
    if (!p)
        return NULL;
    th = thr_add(s, p, ev->tid);
    if (th) {
        th->t_since = th->t_acct = ev->t_ns;
        emit_thread_row(s, th, 0, 0, NULL);
    }
    return th;
}

/* The kernel starts charging a thread when it is picked, before the
 * context switch; perf's switch-in record comes after it. When the CPU's
 * last switch-out named this thread as next, that record's time is the
 * better edge (µs per switch, which adds up at high switch rates). */
static uint64_t switch_in_edge(const struct sched_fsm *s, const struct pe_ev *ev)
{
    const struct cpu *c = &s->cpus[ev->cpu];

    if (s->o.cpuwide && c->out_next == ev->tid && c->t_out <= ev->t_ns &&
        ev->t_ns - c->t_out < PEND_WAKE_NS)
        return c->t_out;
    return ev->t_ns;
}

static void on_switch_in(struct sched_fsm *s, const struct pe_ev *ev_in)
{
    struct pe_ev evb = *ev_in, *ev = &evb;
    struct cpu *cp = &s->cpus[ev->cpu];
    struct thr *th;
    struct proc *p;

    if (ev->b == UINT32_MAX) /* prev already dead */
        ev->b = 0;
    if (s->o.cpuwide)
        cpu_switch(s, cp, ev->t_ns, ev->pid, ev->tid);
    cp->in_pid = ev->pid;
    cp->in_tid = ev->tid;
    ev->t_ns = switch_in_edge(s, ev);
    cp->out_next = 0;
    th = thr_find(s, ev);
    if (!th || th->exited)
        return;
    p = proc_get(s, th->pid);
    thr_accrue(s, th, ev->t_ns);
    if (th->state == TS_BLOCKED && !th->t_enqueue)
        s->st.wake_unknown++;
    if ((th->state == TS_BLOCKED || th->state == TS_RUNNABLE) && !th->partial) {
        if (th->cls != CLS_NEW && ev->t_ns - th->t_since >= s->o.offcpu_min_ns)
            emit_offcpu(s, th, ev->t_ns);
        if (th->t_enqueue && ev->t_ns - th->t_enqueue >= s->o.runq_min_ns)
            emit_runq(s, th, ev);
    }
    if (th->t_enqueue && ev->t_ns > th->t_enqueue)
        th->runq_total += ev->t_ns - th->t_enqueue;
    if (p && th->in_cpu >= 0 && th->in_cpu != ev->cpu) {
        p->win.migrations++;
        win_touch(s, p, th);
    }
    th->state = TS_ON;
    th->t_since = ev->t_ns;
    th->cpu = th->in_cpu = ev->cpu;
    th->t_enqueue = 0;
    th->gap = th->partial = th->pend_wake = 0;
    th->waker_pid = th->waker_tid = 0;
}

/* Label a voluntary switch-out: S/D from the tracepoint, or "blocked". */
static uint8_t block_class(const struct sched_fsm *s, const struct thr *th)
{
    if (!s->o.has_block_tp)
        return CS_OFF_BLOCKED;
    if (th->t_block_tp && th->t_block_tp >= th->t_since)
        return class_of_state(th->block_state);
    return CS_OFF_BLOCKED;
}

/* The thread leaves the CPU at @p ev: preempted (runnable) or blocked,
 * labelled S/D when the tracepoint allows, runnable at once when a wakeup
 * raced with the switch-out. */
static void leave_cpu(struct sched_fsm *s, struct thr *th, const struct pe_ev *ev)
{
    th->partial = th->state != TS_ON ? 1 : 0; /* we missed its switch-in */
    th->cpu = ev->cpu;
    if (ev->flags & PE_F_PREEMPT) {
        th->state = TS_RUNNABLE;
        th->cls = CS_OFF_PREEMPT;
        th->t_enqueue = ev->t_ns;
    } else {
        th->state = TS_BLOCKED;
        th->cls = block_class(s, th);
        if (th->cls == CS_OFF_BLOCKED && s->o.has_block_tp)
            s->st.block_unlabelled++;
        th->t_enqueue = 0;
        if (th->pend_wake && ev->t_ns - th->t_pend_wake <= PEND_WAKE_NS) {
            th->state = TS_RUNNABLE; /* woken while still switching out */
            th->t_enqueue = ev->t_ns;
            th->waker_pid = th->pend_pid;
            th->waker_tid = th->pend_tid;
        }
    }
    th->t_since = ev->t_ns; /* after block_class, which compares with the switch-in */
    th->pend_wake = 0;
    th->t_block_tp = 0;
}

static void on_switch_out(struct sched_fsm *s, const struct pe_ev *ev_out)
{
    struct pe_ev evb = *ev_out, *ev = &evb;
    struct cpu *cp = &s->cpus[ev->cpu];
    struct thr *th;
    struct proc *p;

    if (ev->tid == UINT32_MAX) { /* a dead thread's last switch: ids are gone */
        ev->tid = cp->in_tid;
        ev->pid = cp->in_pid;
    }
    if (s->o.cpuwide) {
        cpu_switch(s, cp, ev->t_ns, (uint32_t)ev->b, (uint32_t)ev->a);
        cp->t_out = ev->t_ns;
        cp->out_next = (uint32_t)ev->a;
    }
    th = thr_find(s, ev);
    if (!th)
        return;
    p = proc_get(s, th->pid);
    thr_accrue(s, th, ev->t_ns);
    if (th->state == TS_ON && ev->t_ns >= th->t_since)
        th->on_total += ev->t_ns - th->t_since;
    if (th->exited) { /* the last switch-out of a dead thread */
        thr_del(s, th);
        return;
    }
    if (p) {
        *((ev->flags & PE_F_PREEMPT) ? &p->win.ivcsw : &p->win.vcsw) += 1;
        win_touch(s, p, th);
    }
    leave_cpu(s, th, ev);
}

static void on_wake(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct thr *th = thr_get(s, (uint32_t)ev->a);
    int known = !(ev->flags & PE_F_IRQ) && ev->pid != 0;

    if (!th)
        return;
    if (ev->kind == PE_EV_WAKE_NEW) {
        if (th->state == TS_RUNNABLE && th->cls == CLS_NEW)
            th->t_enqueue = ev->t_ns;
        return;
    }
    if (th->state == TS_ON) {
        th->pend_wake = 1;
        th->t_pend_wake = ev->t_ns;
        th->pend_pid = known ? ev->pid : 0;
        th->pend_tid = known ? ev->tid : 0;
        return;
    }
    if (th->state != TS_BLOCKED)
        return;
    thr_accrue(s, th, ev->t_ns);
    th->state = TS_RUNNABLE;
    th->t_enqueue = ev->t_ns;
    th->waker_pid = known ? ev->pid : 0;
    th->waker_tid = known ? ev->tid : 0;
}

static void on_block_tp(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct thr *th = thr_get(s, ev->tid);

    if (!th)
        return;
    s->st.block_tp++;
    /* On this kernel the sample lands just after perf's switch-out record
     * of the same switch; older ones write it just before. Take both. */
    if (th->state == TS_BLOCKED && th->cls == CS_OFF_BLOCKED && ev->t_ns >= th->t_since &&
        ev->t_ns - th->t_since <= TP_MATCH_NS) {
        th->cls = class_of_state((uint32_t)ev->a);
        if (s->st.block_unlabelled)
            s->st.block_unlabelled--;
        return;
    }
    th->t_block_tp = ev->t_ns;
    th->block_state = (uint32_t)ev->a;
}

static void on_fork(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct proc *parent = proc_live(s, (uint32_t)ev->a), *p;
    struct thr *th;

    if (!parent || ev->pid == (uint32_t)s->o.self)
        return;
    p = parent;
    if (ev->pid != ev->a) { /* a new process */
        p = proc_live(s, ev->pid);
        if (!p) {
            p = proc_add(s, ev->pid);
            if (!p)
                return;
            p->row.ppid = (uint32_t)ev->a;
            p->row.start_ns = ev->t_ns;
            memcpy(p->row.comm, parent->row.comm, sizeof(p->row.comm));
            p->row.cmdline_id = read_cmdline_id(s, (pid_t)ev->pid, parent->row.cmdline_id);
            p->row.rank = parent->row.rank;
            collector_proc(s->o.c, &p->row);
        }
    }
    if (thr_get(s, ev->tid))
        return;
    th = thr_add(s, p, ev->tid);
    if (!th)
        return;
    th->state = TS_RUNNABLE;
    th->cls = CLS_NEW;
    th->t_since = th->t_acct = th->t_enqueue = ev->t_ns;
    emit_thread_row(s, th, ev->t_ns, 0, p->row.comm);
}

static void proc_exit(struct sched_fsm *s, struct proc *p, uint64_t t)
{
    p->row.exit_ns = t;
    p->row.flags |= CS_PF_EXITED;
    p->dead = 1;
    s->nlive--;
    collector_proc(s->o.c, &p->row);
}

static void on_exit_ev(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct thr *th = thr_get(s, ev->tid);
    struct proc *p = proc_live(s, ev->pid);

    if (!th || th->exited || !p)
        return;
    thr_accrue(s, th, ev->t_ns);
    th->exited = 1;
    emit_thread_row(s, th, 0, ev->t_ns, NULL);
    if (p->nlive > 0)
        p->nlive--;
    if (p->nlive == 0)
        proc_exit(s, p, ev->t_ns);
    /* It is running do_exit: its last switch-out removes it. */
    if (th->state != TS_ON) {
        th->state = TS_ON;
        th->t_since = ev->t_ns;
    }
}

static void on_comm(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct proc *p = proc_live(s, ev->pid);
    struct thr *th = thr_get(s, ev->tid);

    if (!p)
        return;
    if (ev->flags & PE_F_EXEC) {
        p->row.exec_ns = ev->t_ns;
        p->row.flags |= CS_PF_EXEC;
        snprintf(p->row.comm, sizeof(p->row.comm), "%s", ev->comm);
        p->row.cmdline_id = read_cmdline_id(s, (pid_t)ev->pid, p->row.cmdline_id);
        collector_proc(s->o.c, &p->row);
    }
    else if (ev->tid == ev->pid) { /* the leader's name is the process comm */
        snprintf(p->row.comm, sizeof(p->row.comm), "%s", ev->comm);
        collector_proc(s->o.c, &p->row);
    }
    if (th)
        emit_thread_row(s, th, 0, 0, ev->comm);
}

static void on_lost(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct cs_rec_lost r;
    struct cpu *c = &s->cpus[ev->cpu];

    memset(&r, 0, sizeof(r));
    r.t_start_ns = c->t_last ? c->t_last : ev->t_ns;
    r.t_end_ns = ev->t_ns;
    r.source = ev->cpu;
    r.what = 1;
    r.count = ev->a;
    collector_emit(s->o.c, CS_REC_LOST, 0, &r);
    s->st.lost += ev->a;
    s->st.lost_spans++;
    s->win_flags |= CS_HF_DEGRADED;
    for (size_t i = 0; i < s->threads.cap; i++) {
        struct thr *th = (struct thr *)(uintptr_t)s->threads.vals[i];

        if (s->threads.keys[i] && th->cpu == (int32_t)ev->cpu)
            th->gap = 1;
    }
}

static void on_count(struct sched_fsm *s, const struct pe_ev *ev)
{
    struct proc *p = proc_live(s, ev->pid);

    if (!p)
        return;
    switch (ev->kind) {
    case PE_EV_PAGE_ALLOC: p->win.page_allocs += (uint32_t)ev->a; break;
    case PE_EV_FAULT_MIN:
        p->win.minflt += (uint32_t)ev->a;
        if (s->o.pages_from_faults)
            p->win.page_allocs += (uint32_t)ev->a;
        break;
    case PE_EV_FAULT_MAJ: p->win.majflt += (uint32_t)ev->a; break;
    }
    p->active = 1;
}

void sched_fsm_event(struct sched_fsm *s, const struct pe_ev *ev)
{
    if (ev->cpu >= s->o.ncpu)
        return;
    sched_fsm_advance(s, ev->t_ns);
    s->st.events++;
    switch (ev->kind) {
    case PE_EV_SWITCH_IN: on_switch_in(s, ev); break;
    case PE_EV_SWITCH_OUT: on_switch_out(s, ev); break;
    case PE_EV_WAKE:
    case PE_EV_WAKE_NEW: on_wake(s, ev); break;
    case PE_EV_BLOCK: on_block_tp(s, ev); break;
    case PE_EV_FORK: on_fork(s, ev); break;
    case PE_EV_EXIT: on_exit_ev(s, ev); break;
    case PE_EV_COMM: on_comm(s, ev); break;
    case PE_EV_LOST: on_lost(s, ev); break;
    default: on_count(s, ev); break;
    }
    if (ev->kind != PE_EV_LOST)
        s->cpus[ev->cpu].t_last = ev->t_ns;
}

/* ---- /proc feeds ---- */

void sched_fsm_sys_sample(struct sched_fsm *s, uint64_t t, const struct procfs_sys *sys)
{
    if (s->sys_n == SYS_SAMPLES) {
        memmove(s->sys, s->sys + 1, (SYS_SAMPLES - 1) * sizeof(s->sys[0]));
        s->sys_n--;
    }
    s->sys[s->sys_n].t = t;
    s->sys[s->sys_n].v = *sys;
    s->sys_n++;
}

void sched_fsm_check(struct sched_fsm *s, uint32_t tid, uint64_t t,
                     const struct procfs_schedstat *ss)
{
    if (s->nchk == s->capchk) {
        size_t cap = s->capchk ? 2 * s->capchk : 256;
        struct chk *v = realloc(s->chks, cap * sizeof(*v));

        if (!v)
            return;
        s->chks = v;
        s->capchk = cap;
    }
    s->chks[s->nchk++] = (struct chk){tid, t, ss->oncpu_ns, ss->run_delay_ns};
}

/* Run delay: schedstat against the waits perf saw end (both count a wait
 * at its switch-in), summed for meta. Without wakeup events (tier B) perf
 * sees only preempted waits: the rest goes into the current window. */
static void runq_check(struct sched_fsm *s, struct thr *th, const struct chk *k)
{
    struct proc *p = proc_get(s, th->pid);
    uint64_t d_rd, d_known;

    if (th->rd_valid && k->run_delay >= th->chk_rd && th->runq_total >= th->chk_runq) {
        d_rd = k->run_delay - th->chk_rd;
        d_known = th->runq_total - th->chk_runq;
        s->st.runq_schedstat_ns += d_rd;
        s->st.runq_perf_ns += d_known;
        if (!s->o.has_wake_tp && d_rd > d_known && p) {
            p->win.runq_ns += d_rd - d_known;
            win_touch(s, p, th);
        }
    }
    th->rd_valid = 1;
    th->chk_rd = k->run_delay;
    th->chk_runq = th->runq_total;
}

static void check_one(struct sched_fsm *s, const struct chk *k)
{
    struct thr *th = thr_get(s, k->tid);
    struct proc *p;
    uint64_t perf_on, dp, ds, diff;

    if (!th)
        return;
    runq_check(s, th, k);
    /* schedstat of a running thread lags up to a tick (4 ms at HZ=250):
     * compare only readings taken while the thread was off CPU. */
    if (th->state == TS_ON || th->state == TS_UNKNOWN)
        return;
    perf_on = th->on_total;
    if (th->chk_valid && k->sched_on >= th->chk_sched && perf_on >= th->chk_perf) {
        dp = perf_on - th->chk_perf;
        ds = k->sched_on - th->chk_sched;
        if (dp < CHK_MIN_NS && ds < CHK_MIN_NS)
            return; /* too little CPU yet: keep the baseline */
        s->st.checks++;
        diff = dp > ds ? dp - ds : ds - dp;
        if (diff > ds / 20 + CHK_SLACK_NS) {
            s->st.diverged++;
            p = proc_get(s, th->pid);
            if (p)
                p->win.flags |= CS_HF_DIVERGED;
        }
    }
    th->chk_valid = 1;
    th->chk_perf = perf_on;
    th->chk_sched = k->sched_on;
}

static void eval_checks(struct sched_fsm *s, uint64_t t)
{
    size_t i = 0;

    while (i < s->nchk && s->chks[i].t <= t)
        check_one(s, &s->chks[i++]);
    if (i) {
        memmove(s->chks, s->chks + i, (s->nchk - i) * sizeof(s->chks[0]));
        s->nchk -= i;
    }
}

void sched_fsm_foreach_thread(struct sched_fsm *s,
                              void (*fn)(void *arg, uint32_t pid, uint32_t tid), void *arg)
{
    for (size_t i = 0; i < s->threads.cap; i++) {
        struct thr *th = (struct thr *)(uintptr_t)s->threads.vals[i];

        if (s->threads.keys[i] && !th->exited)
            fn(arg, th->pid, th->tid);
    }
}

void sched_fsm_finish(struct sched_fsm *s, uint64_t t)
{
    sched_fsm_advance(s, t);
    eval_checks(s, UINT64_MAX);
    if (t > s->win_start)
        flush_window(s, t);
}

void sched_fsm_proc_gone(struct sched_fsm *s, uint32_t pid, uint64_t t_ns)
{
    struct proc *p = proc_live(s, pid);

    if (p)
        proc_exit(s, p, t_ns);
}

void sched_fsm_drop_gone(struct sched_fsm *s, uint64_t t_ns)
{
    for (size_t i = 0; i < s->procs.cap; i++) {
        struct proc *p = (struct proc *)(uintptr_t)s->procs.vals[i];
        struct procfs_stat st;

        if (s->procs.keys[i] && !p->dead && !alive_in_procfs((pid_t)p->row.pid, &st))
            proc_exit(s, p, t_ns);
    }
}

void sched_fsm_sys_window(struct sched_fsm *s, uint64_t ws, uint64_t we)
{
    emit_syswin(s, ws, we);
}
