/* host_poll.c: tier C, no perf_event at all: poll
 * /proc/<pid>/task/<tid>/{schedstat,stat,status} through kept-open fds every
 * 100 ms and turn deltas into pwin records flagged CS_HF_POLLED. Owns the
 * polled-thread table; rows and syswin go through sched_fsm.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_int.h"
#include "procfs.h"

struct pthr {
    uint32_t pid, tid;
    int fd[3];                  /* schedstat, stat, status */
    struct procfs_schedstat ss;
    uint64_t vol, invol, minflt, majflt;
    char state;
    int valid;                  /* previous values set */
};

struct host_poll {
    struct pthr *t;
    size_t n, cap;
    struct procfs_pids procs;   /* tracked, alive */
    uint64_t t_last;
};

static const char *const poll_files[3] = {"schedstat", "stat", "status"};

static void pthr_close(struct pthr *t)
{
    for (int i = 0; i < 3; i++)
        if (t->fd[i] >= 0)
            close(t->fd[i]);
}

static int has_thread(const struct host_poll *p, uint32_t tid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->t[i].tid == tid)
            return 1;
    return 0;
}

/* Threads found after the first sweep were born after attach: their
 * counters started at zero, so a zero baseline keeps what they did before
 * we saw them. Threads of the first sweep start from what they show now. */
static int add_thread(struct host_poll *p, pid_t pid, pid_t tid, int first)
{
    struct pthr *t;

    if (has_thread(p, (uint32_t)tid))
        return 0;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        struct pthr *v = realloc(p->t, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        p->t = v;
        p->cap = cap;
    }
    t = &p->t[p->n];
    memset(t, 0, sizeof(*t));
    t->pid = (uint32_t)pid;
    t->tid = (uint32_t)tid;
    for (int i = 0; i < 3; i++)
        t->fd[i] = procfs_task_open(pid, tid, poll_files[i]);
    if (t->fd[0] < 0 || t->fd[1] < 0 || t->fd[2] < 0) {
        pthr_close(t);
        return 0;
    }
    t->valid = !first;
    p->n++;
    return 0;
}

/* New processes and threads of the tree since the last sweep. */
static void rescan(struct host *h, uint64_t t, int first)
{
    struct host_poll *p = h->poll;
    struct procfs_pids tree = {0};

    procfs_tree(h->o.root, getpid(), &tree);
    for (size_t i = 0; i < tree.n; i++) {
        struct procfs_pids tids = {0};
        pid_t pid = tree.v[i];

        if (!procfs_pids_has(&p->procs, pid)) {
            uint32_t fl = pid == h->o.root ? CS_PF_ROOT : 0;

            if (first && !(h->o.launched && pid == h->o.root))
                fl |= CS_PF_PREATTACH;
            if (sched_fsm_seed_proc(h->s, pid, t, fl) < 0 || procfs_pids_add(&p->procs, pid) < 0)
                continue;
        }
        if (procfs_tids(pid, &tids) == 0)
            for (size_t k = 0; k < tids.n; k++)
                add_thread(p, pid, tids.v[k], first);
        procfs_pids_free(&tids);
    }
    procfs_pids_free(&tree);
}

/* Read one thread; @return 0, or <0 once it is gone. */
static int sweep_thread(struct pthr *t, struct cs_rec_pwin *w, uint64_t dt)
{
    char buf[2048];
    struct procfs_schedstat ss;
    struct procfs_stat st;
    uint64_t vol, invol, off;

    if (procfs_pread(t->fd[0], buf, sizeof(buf)) <= 0 || procfs_schedstat_parse(buf, &ss) < 0 ||
        procfs_pread(t->fd[1], buf, sizeof(buf)) <= 0 || procfs_stat_parse(buf, &st) < 0 ||
        procfs_pread(t->fd[2], buf, sizeof(buf)) <= 0 ||
        procfs_status_ctxt(buf, &vol, &invol) < 0)
        return -ESRCH;
    if (t->valid && w) {
        uint64_t on = ss.oncpu_ns - t->ss.oncpu_ns, rd = ss.run_delay_ns - t->ss.run_delay_ns;

        w->oncpu_ns += on;
        w->runq_ns += rd;
        w->vcsw += (uint32_t)(vol - t->vol);
        w->ivcsw += (uint32_t)(invol - t->invol);
        w->minflt += (uint32_t)(st.minflt - t->minflt);
        w->majflt += (uint32_t)(st.majflt - t->majflt);
        w->nthreads++;
        off = dt > on + rd ? dt - on - rd : 0; /* blocked: labelled by the state now */
        if (st.state == 'D')
            w->disk_ns += off;
        else
            w->sleep_ns += off;
    }
    t->ss = ss;
    t->vol = vol;
    t->invol = invol;
    t->minflt = st.minflt;
    t->majflt = st.majflt;
    t->state = st.state;
    t->valid = 1;
    return 0;
}

static struct cs_rec_pwin *win_of(struct cs_rec_pwin *wins, const struct host_poll *p,
                                  uint32_t pid)
{
    for (size_t i = 0; i < p->procs.n; i++)
        if ((uint32_t)p->procs.v[i] == pid)
            return &wins[i];
    return NULL;
}

/* Sweep every thread; emit one pwin per live process; retire the gone. */
static void sweep(struct host *h, uint64_t t)
{
    struct host_poll *p = h->poll;
    struct cs_rec_pwin *wins = calloc(p->procs.n ? p->procs.n : 1, sizeof(*wins));
    uint64_t dt = p->t_last ? t - p->t_last : 0;
    size_t k = 0;

    for (size_t i = 0; i < p->n; i++) {
        struct cs_rec_pwin *w = wins ? win_of(wins, p, p->t[i].pid) : NULL;

        if (sweep_thread(&p->t[i], p->t_last ? w : NULL, dt) < 0)
            pthr_close(&p->t[i]);
        else
            p->t[k++] = p->t[i];
    }
    p->n = k;
    for (size_t i = 0; wins && i < p->procs.n; i++) {
        wins[i].pid = (uint32_t)p->procs.v[i];
        wins[i].t_start_ns = p->t_last;
        wins[i].t_end_ns = t;
        wins[i].flags = CS_HF_POLLED;
        if (p->t_last && wins[i].nthreads)
            collector_emit(h->c, CS_REC_PWIN, wins[i].pid, &wins[i]);
    }
    free(wins);
}

static void retire_gone(struct host *h, uint64_t t)
{
    struct host_poll *p = h->poll;
    size_t k = 0;

    for (size_t i = 0; i < p->procs.n; i++) {
        int alive = 0;

        for (size_t j = 0; j < p->n && !alive; j++)
            alive = p->t[j].pid == (uint32_t)p->procs.v[i];
        if (alive)
            p->procs.v[k++] = p->procs.v[i];
        else
            sched_fsm_proc_gone(h->s, (uint32_t)p->procs.v[i], t);
    }
    p->procs.n = k;
}

int host_poll_open(struct host *h)
{
    struct sched_fsm_opts so = {.c = h->c, .window_ns = h->o.window_ns, .ncpu = h->ncpu,
                            .self = getpid()};
    uint64_t t = procfs_now_ns();
    struct procfs_sys sys;

    h->poll = calloc(1, sizeof(*h->poll));
    h->s = sched_fsm_new(&so);
    if (!h->poll || !h->s)
        return -ENOMEM;
    rescan(h, t, 1);
    if (h->poll->procs.n == 0)
        return -ESRCH;
    sweep(h, t);
    h->poll->t_last = t;
    if (h->stat_fd >= 0 && procfs_sys_read(h->stat_fd, h->psi_fd, &sys) == 0)
        sched_fsm_sys_sample(h->s, t, &sys);
    return 0;
}

void host_poll_drain(struct host *h, uint64_t now_ns, int force)
{
    struct host_poll *p = h->poll;
    struct procfs_sys sys;

    if (!p || (!force && now_ns - p->t_last < HOST_POLL_NS))
        return;
    rescan(h, now_ns, 0);
    sweep(h, now_ns);
    retire_gone(h, now_ns);
    if (h->stat_fd >= 0 && procfs_sys_read(h->stat_fd, h->psi_fd, &sys) == 0)
        sched_fsm_sys_sample(h->s, now_ns, &sys);
    sched_fsm_sys_window(h->s, p->t_last, now_ns);
    p->t_last = now_ns;
}

void host_poll_free(struct host_poll *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        pthr_close(&p->t[i]);
    free(p->t);
    procfs_pids_free(&p->procs);
    free(p);
}
