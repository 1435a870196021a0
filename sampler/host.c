/* host.c: the host sampler's lifecycle and tiers A and B (perf rings).
 * Owns the tier probe, the perf fds and rings, the cross-CPU merge with a
 * holdback, the 1 Hz schedstat cross-check and the run metadata. The state
 * machine is sched_fsm.c's, tier C is host_poll.c's, libpfm4 is pe_pfm.c's. */
#include "host_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pe_event.h"
#include "pe_pfm.h"
#include "procfs.h"

struct host *host_new(const struct host_opts *o)
{
    struct host *h = calloc(1, sizeof(*h));

    if (!h)
        return NULL;
    h->o = *o;
    if (!h->o.window_ns)
        h->o.window_ns = 10000000ull;
    if (!h->o.offcpu_min_ns)
        h->o.offcpu_min_ns = 100000ull;
    if (!h->o.runq_min_ns)
        h->o.runq_min_ns = 100000ull;
    if (!h->o.page_source)
        h->o.page_source = HOST_PAGES_DEFAULT;
    if (!h->o.page_alloc_period)
        h->o.page_alloc_period = h->o.page_source == HOST_PAGES_FAULTS ? HOST_PAGES_PERIOD_FAULTS
                                                                       : HOST_PAGES_PERIOD_ALLOCS;
    if (!h->o.ring_pages)
        h->o.ring_pages = 512;
    h->stat_fd = h->psi_fd = -1;
    return h;
}

int host_keep_fd(struct host *h, int fd)
{
    if (h->nfds == h->capfds) {
        size_t cap = h->capfds ? 2 * h->capfds : 64;
        int *v = realloc(h->fds, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        h->fds = v;
        h->capfds = cap;
    }
    h->fds[h->nfds++] = fd;
    return 0;
}

void host_reason(struct host *h, const char *fmt, ...)
{
    size_t n = strlen(h->reason);
    va_list ap;

    if (n && n + 2 < sizeof(h->reason)) {
        memcpy(h->reason + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(h->reason + n, sizeof(h->reason) - n, fmt, ap);
    va_end(ap);
}

/* errno names for the reason strings ("EACCES"), or "errno N". */
static const char *errname(int rc)
{
    static char buf[32];
    const char *n = strerrorname_np(-rc);

    if (n)
        return n;
    snprintf(buf, sizeof(buf), "errno %d", -rc);
    return buf;
}

static void raise_nofile(void)
{
    struct rlimit r;

    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

/* ---- tier A: CPU-wide events, one ring per CPU ---- */

static void leader_attr(struct perf_event_attr *a, unsigned pages, int per_task)
{
    pe_event_attr(a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
    a->context_switch = 1;
    a->task = 1;
    a->comm = 1;
    a->comm_exec = 1;
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)((uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) / 4);
    if (per_task) {
        a->inherit = 1;
        a->exclude_kernel = 1;
        a->exclude_hv = 1;
    }
}

static int probe_tier_a(void)
{
    struct perf_event_attr a;
    int fd;

    leader_attr(&a, 1, 0);
    fd = pe_event_open(&a, -1, 0);
    if (fd >= 0)
        close(fd);
    return fd < 0 ? fd : 0;
}

static int probe_tier_b(pid_t root)
{
    struct perf_event_attr a;
    int fd;

    leader_attr(&a, 1, 1);
    fd = pe_event_open(&a, root, 0);
    if (fd >= 0)
        close(fd);
    return fd < 0 ? fd : 0;
}

/* Open one event redirected into CPU @p cpu's ring and register its role. */
static int open_member(struct host *h, struct perf_event_attr *a, int cpu, enum pe_role role,
                       const char *filter)
{
    uint64_t id;
    int fd = pe_event_open(a, -1, cpu), rc;

    if (fd < 0)
        return fd;
    rc = host_keep_fd(h, fd);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    if ((filter && (rc = pe_event_set_filter(fd, filter)) < 0) ||
        (rc = pe_event_set_output(fd, h->cpus[cpu].leader)) < 0 ||
        (rc = pe_event_id(fd, &id)) < 0)
        return rc;
    return pe_decode_add(&h->dec, id, role, (uint32_t)a->sample_period);
}

struct member {
    const char *name;
    enum pe_role role;
    uint32_t type;
    int64_t config;
    uint32_t period;
    int raw;
    const char *filter;
};

/* The events of a tier A ring besides the leader; config -1 = unavailable. */
static int members(const struct host *h, struct member *m)
{
    const struct pe_tracefs *t = &h->tf;
    unsigned pp = h->o.page_alloc_period;
    int n = 0;

    m[n++] = (struct member){"sched:sched_switch", PE_ROLE_TP_SWITCH, PERF_TYPE_TRACEPOINT,
                             t->id_switch, 1, 1, "prev_state & 255"};
    m[n++] = (struct member){"sched:sched_waking", PE_ROLE_TP_WAKING, PERF_TYPE_TRACEPOINT,
                             t->id_waking, 1, 1, NULL};
    m[n++] = (struct member){"sched:sched_wakeup_new", PE_ROLE_TP_WAKENEW, PERF_TYPE_TRACEPOINT,
                             t->id_wakeup_new, 1, 1, NULL};
    if (h->o.page_source == HOST_PAGES_ALLOCS)
        m[n++] = (struct member){"kmem:mm_page_alloc", PE_ROLE_PAGE_ALLOC, PERF_TYPE_TRACEPOINT,
                                 t->id_page_alloc, pp, 1, NULL};
    m[n++] = (struct member){"minor-faults", PE_ROLE_FAULT_MIN, PERF_TYPE_SOFTWARE,
                             PERF_COUNT_SW_PAGE_FAULTS_MIN, pp, 0, NULL};
    m[n++] = (struct member){"major-faults", PE_ROLE_FAULT_MAJ, PERF_TYPE_SOFTWARE,
                             PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1, 0, NULL};
    return n;
}

static int open_cpu_ring(struct host *h, int cpu, struct perf_event_attr *a, pid_t pid)
{
    struct host_cpu *hc = &h->cpus[cpu];
    int fd = pe_event_open(a, pid, cpu), rc;

    if (fd < 0)
        return fd;
    rc = host_keep_fd(h, fd);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    hc->leader = fd;
    return pe_ring_open(&hc->ring, fd, h->o.ring_pages);
}

/* Open the members on every CPU; one that fails on CPU 0 is left out
 * everywhere (and said in the reason), one that fails later is fatal. */
static int open_members(struct host *h, int *has_switch_tp, int *has_wake_tp)
{
    struct member m[8];
    int n = members(h, m);

    *has_switch_tp = *has_wake_tp = 0;
    for (int i = 0; i < n; i++) {
        struct perf_event_attr a;
        int rc = 0;

        if (m[i].config < 0) {
            host_reason(h, "%s: off (no tracefs id)", m[i].name);
            continue;
        }
        pe_event_attr(&a, m[i].type, (uint64_t)m[i].config);
        a.sample_period = m[i].period;
        if (m[i].raw)
            a.sample_type |= PERF_SAMPLE_RAW;
        else /* our own id in every sample: see find_read_id in pe_decode.c */
            a.sample_type |= PERF_SAMPLE_READ;
        for (int c = 0; c < h->ncpu && rc == 0; c++)
            rc = open_member(h, &a, c, m[i].role, m[i].filter);
        if (rc < 0) {
            host_reason(h, "%s: off (%s)", m[i].name, errname(rc));
            continue;
        }
        if (m[i].role == PE_ROLE_TP_SWITCH)
            *has_switch_tp = 1;
        if (m[i].role == PE_ROLE_TP_WAKING)
            *has_wake_tp = 1;
    }
    return 0;
}

/* Every perf fd on (@p on 1) or off. @return 0 or the first ioctl's error
 * (the others are still tried). */
static int switch_all(struct host *h, int on)
{
    int rc = 0;

    for (size_t i = 0; i < h->nfds; i++) {
        int r = on ? pe_event_enable(h->fds[i]) : pe_event_disable(h->fds[i]);
        if (r < 0 && rc == 0)
            rc = r;
    }
    return rc;
}

static int new_sched(struct host *h, int cpuwide, int has_block_tp, int has_wake_tp)
{
    struct sched_fsm_opts so = {
        .c = h->c,
        .window_ns = h->o.window_ns,
        .offcpu_min_ns = h->o.offcpu_min_ns,
        .runq_min_ns = h->o.runq_min_ns,
        .ncpu = h->ncpu,
        .cpuwide = cpuwide,
        .has_block_tp = has_block_tp,
        .has_wake_tp = has_wake_tp,
        .pages_from_faults = h->o.page_source == HOST_PAGES_FAULTS,
        .self = getpid(),
    };

    h->s = sched_fsm_new(&so);
    return h->s ? 0 : -ENOMEM;
}

/* Track the root and its descendants found in /proc now; @p at_attach marks
 * them CS_PF_PREATTACH (the launched root excepted). */
static int seed_tree(struct host *h, int at_attach)
{
    struct procfs_pids tree = {0};
    uint64_t t = procfs_now_ns();
    int rc = procfs_tree(h->o.root, getpid(), &tree);

    for (size_t i = 0; rc == 0 && i < tree.n; i++) {
        uint32_t fl = tree.v[i] == h->o.root ? CS_PF_ROOT : 0;

        if (at_attach && !(h->o.launched && tree.v[i] == h->o.root))
            fl |= CS_PF_PREATTACH;
        rc = sched_fsm_seed_proc(h->s, tree.v[i], t, fl);
        if (rc == -ESRCH)
            rc = 0;
    }
    procfs_pids_free(&tree);
    return rc;
}

/* The rings missed task records (paused, or lost): /proc says which
 * processes joined the tree since (seeded as at the start) and which of
 * ours are gone (they exit now). */
static void resync_tree(struct host *h)
{
    sched_fsm_drop_gone(h->s, procfs_now_ns());
    seed_tree(h, 0);
}

static int open_tier_a(struct host *h)
{
    struct perf_event_attr a;
    int has_tp = 0, has_wake = 0, rc = pe_tracefs_load(&h->tf);

    if (rc < 0)
        host_reason(h, "tracefs: %s (running without tracepoints)", errname(rc));
    h->dec.tf = &h->tf;
    leader_attr(&a, h->o.ring_pages, 0);
    for (int c = 0; c < h->ncpu; c++) {
        rc = open_cpu_ring(h, c, &a, -1);
        if (rc < 0)
            return rc;
    }
    if ((rc = open_members(h, &has_tp, &has_wake)) < 0 ||
        (rc = new_sched(h, 1, has_tp, has_wake)) < 0)
        return rc;
    for (int c = 0; c < h->ncpu; c++)
        h->cpus[c].t_last = procfs_now_ns(); /* no record is earlier */
    /* Enable first, then seed: no fork can fall between the two. */
    if ((rc = switch_all(h, 1)) < 0)
        return rc;
    h->t_enabled = procfs_now_ns();
    return seed_tree(h, 1);
}

/* ---- tier B: per-task, CPU-bound events on every thread of the tree ---- */

/* Attach one thread on every CPU; the first fd per CPU owns the ring. */
static int attach_thread(struct host *h, pid_t tid)
{
    struct perf_event_attr a;
    unsigned pages = geteuid() == 0 ? h->o.ring_pages : 64;

    if (pages > h->o.ring_pages)
        pages = h->o.ring_pages;
    leader_attr(&a, pages, 1);
    for (int c = 0; c < h->ncpu; c++) {
        struct host_cpu *hc = &h->cpus[c];
        int fd, rc;

        if (hc->leader < 0) {
            unsigned keep = h->o.ring_pages;

            h->o.ring_pages = pages;
            rc = open_cpu_ring(h, c, &a, tid);
            h->o.ring_pages = keep;
            if (rc < 0)
                return rc;
            continue;
        }
        fd = pe_event_open(&a, tid, c);
        if (fd < 0)
            return fd;
        if ((rc = host_keep_fd(h, fd)) < 0) {
            close(fd);
            return rc;
        }
        if ((rc = pe_event_set_output(fd, hc->leader)) < 0)
            return rc;
    }
    return 0;
}

static void drain_rings(struct host *h);

/* A pid the rings already announced with FORK is inherited: skip it. */
static int forked_in_rings(const struct host *h, pid_t pid)
{
    for (size_t i = 0; i < h->npend; i++)
        if (h->pend[i].kind == PE_EV_FORK && h->pend[i].pid == (uint32_t)pid)
            return 1;
    return 0;
}

/* Attach every thread of every process of the tree; rescan until stable. */
static int attach_tree(struct host *h, struct procfs_pids *done)
{
    for (int round = 0; round < 4; round++) {
        struct procfs_pids tree = {0};
        size_t before = done->n;
        int rc = procfs_tree(h->o.root, getpid(), &tree);

        for (size_t i = 0; rc == 0 && i < tree.n; i++) {
            struct procfs_pids tids = {0};

            if (procfs_pids_has(done, tree.v[i]) || (round && forked_in_rings(h, tree.v[i])))
                continue;
            rc = procfs_pids_add(done, tree.v[i]);
            if (rc == 0 && procfs_tids(tree.v[i], &tids) == 0)
                for (size_t k = 0; rc == 0 && k < tids.n; k++)
                    rc = attach_thread(h, tids.v[k]);
            if (rc == -ESRCH)
                rc = 0;
            procfs_pids_free(&tids);
        }
        procfs_pids_free(&tree);
        if (rc < 0)
            return rc;
        if ((rc = switch_all(h, 1)) < 0)
            return rc;
        if (done->n == before)
            break;
        drain_rings(h);
    }
    return 0;
}

static int open_tier_b(struct host *h)
{
    struct procfs_pids done = {0};
    int rc;

    h->dec.tf = &h->tf;
    if ((rc = new_sched(h, 0, 0, 0)) < 0)
        return rc;
    rc = attach_tree(h, &done);
    procfs_pids_free(&done);
    if (rc < 0)
        return rc;
    h->t_enabled = procfs_now_ns();
    return seed_tree(h, 1);
}

/* ---- merge and process ---- */

static int push_ev(struct host *h, const struct pe_ev *ev)
{
    if (h->npend == h->cappend) {
        size_t cap = h->cappend ? 2 * h->cappend : 4096;
        struct pe_ev *v = realloc(h->pend, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        h->pend = v;
        h->cappend = cap;
    }
    h->pend[h->npend] = *ev;
    h->pend[h->npend].seq = h->seq++;
    h->npend++;
    return 0;
}

/* A fault sample's time is in the clock of the first event the kernel
 * prepared it for, maybe another perf user's (pe_decode.c, find_read_id):
 * keep it only between the ring's previous record and @p now, so the merge
 * neither holds it past the end nor puts it before the switch that brought
 * its thread in. The other records set the bound. */
static void ring_time(struct host_cpu *hc, struct pe_ev *ev, uint64_t now)
{
    if (ev->kind != PE_EV_FAULT_MIN && ev->kind != PE_EV_FAULT_MAJ) {
        if (ev->t_ns > hc->t_last)
            hc->t_last = ev->t_ns;
        return;
    }
    if (ev->t_ns < hc->t_last || ev->t_ns > now)
        ev->t_ns = hc->t_last;
}

static void drain_rings(struct host *h)
{
    for (int c = 0; c < h->ncpu; c++) {
        struct pe_ring *r = &h->cpus[c].ring;
        const struct perf_event_header *hd;
        struct pe_ev ev;
        uint64_t now;

        if (!r->base)
            continue;
        pe_ring_begin(r);
        now = procfs_now_ns(); /* after the head snapshot: no record is later */
        while ((hd = pe_ring_next(r)) != NULL) {
            if (!pe_decode(&h->dec, hd, (uint16_t)c, &ev))
                continue;
            ring_time(&h->cpus[c], &ev, now);
            if (push_ev(h, &ev) < 0)
                break;
        }
        pe_ring_end(r);
    }
}

static int ev_cmp(const void *a, const void *b)
{
    const struct pe_ev *x = a, *y = b;

    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Feed sched every pending event older than @p cutoff, in time order. */
static void process_until(struct host *h, uint64_t cutoff)
{
    size_t i = 0;

    qsort(h->pend, h->npend, sizeof(h->pend[0]), ev_cmp);
    while (i < h->npend && h->pend[i].t_ns <= cutoff)
        sched_fsm_event(h->s, &h->pend[i++]);
    memmove(h->pend, h->pend + i, (h->npend - i) * sizeof(h->pend[0]));
    h->npend -= i;
    sched_fsm_advance(h->s, cutoff);
}

static void sys_sample(struct host *h, uint64_t t)
{
    struct procfs_sys sys;

    if (h->stat_fd >= 0 && procfs_sys_read(h->stat_fd, h->psi_fd, &sys) == 0)
        sched_fsm_sys_sample(h->s, t, &sys);
}

static void check_thread(void *arg, uint32_t pid, uint32_t tid)
{
    struct host *h = arg;
    struct procfs_schedstat ss;
    char buf[128];
    int fd = procfs_task_open((pid_t)pid, (pid_t)tid, "schedstat");
    uint64_t t = procfs_now_ns();

    if (fd < 0)
        return;
    if (procfs_pread(fd, buf, sizeof(buf)) > 0 && procfs_schedstat_parse(buf, &ss) == 0)
        sched_fsm_check(h->s, tid, t, &ss);
    close(fd);
}

int host_drain(struct host *h, uint64_t now_ns)
{
    uint64_t t = procfs_now_ns();

    if (!h->s || h->finished)
        return 0;
    if (h->tier == 'C') {
        host_poll_drain(h, t, 0);
        return 0;
    }
    if (now_ns && now_ns < t)
        t = now_ns;
    drain_rings(h);
    sys_sample(h, t);
    if (t > HOST_HOLDBACK_NS)
        process_until(h, t - HOST_HOLDBACK_NS);
    /* A LOST record may have swallowed FORK or EXIT records. */
    if (sched_fsm_stats(h->s)->lost_spans != h->lost_spans_seen) {
        h->lost_spans_seen = sched_fsm_stats(h->s)->lost_spans;
        resync_tree(h);
    }
    if (t - h->t_check >= HOST_CHECK_NS) {
        h->t_check = t;
        sched_fsm_foreach_thread(h->s, check_thread, h);
    }
    if (h->pfm)
        pe_pfm_read(h->pfm, t);
    return 0;
}

/* ---- lifecycle ---- */

static void close_perf(struct host *h)
{
    for (int c = 0; c < h->ncpu; c++) {
        pe_ring_close(&h->cpus[c].ring);
        h->cpus[c].leader = -1;
        h->cpus[c].t_last = 0;
    }
    for (size_t i = 0; i < h->nfds; i++)
        close(h->fds[i]);
    h->nfds = 0;
    h->npend = 0;
    pe_decode_reset(&h->dec);
    sched_fsm_free(h->s);
    h->s = NULL;
}

static int alloc_cpus(struct host *h)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    h->ncpu = n > 0 ? (int)n : 1;
    h->cpus = calloc((size_t)h->ncpu, sizeof(*h->cpus));
    if (!h->cpus)
        return -ENOMEM;
    for (int c = 0; c < h->ncpu; c++)
        h->cpus[c].leader = -1;
    return 0;
}

/* Try tier @p tier; on failure undo it and say why in the reason. */
static int try_tier(struct host *h, char tier)
{
    int rc;

    if (tier == 'A') {
        rc = probe_tier_a();
        if (rc == 0)
            rc = open_tier_a(h);
    } else if (tier == 'B') {
        rc = probe_tier_b(h->o.root);
        if (rc == 0)
            rc = open_tier_b(h);
    } else {
        rc = host_poll_open(h);
    }
    if (rc < 0) {
        host_reason(h, "tier %c: %s (%s)", tier, errname(rc),
                    tier == 'A'   ? "cpu-wide context_switch dummy"
                    : tier == 'B' ? "per-task context_switch dummy, exclude_kernel"
                                  : "/proc polling");
        close_perf(h);
        return rc;
    }
    h->tier = tier;
    return 0;
}

static void write_open_meta(struct host *h)
{
    char t[2] = {h->tier, 0};

    collector_meta(h->c, "sampler_tier", t);
    collector_meta(h->c, "sampler_tier_reason", h->reason[0] ? h->reason : "ok");
    collector_meta(h->c, "host_busy_source", h->tier == 'A' ? "perf-idle" : "proc-stat");
    collector_meta_u64(h->c, "host_window_ns", h->o.window_ns);
    collector_meta_u64(h->c, "host_page_alloc_period", h->o.page_alloc_period);
    collector_meta(h->c, "host_page_source",
                   h->o.page_source == HOST_PAGES_ALLOCS ? "kmem:mm_page_alloc" : "minor-faults");
    collector_meta_u64(h->c, "host_ncpu", (uint64_t)h->ncpu);
}

static int open_pfm(struct host *h, struct cs_err *err)
{
    int rc;

    if (!h->o.events || !h->o.events[0])
        return 0;
    if (h->tier == 'C')
        return cs_err_set(err, CS_E_USAGE, "--events needs perf_event (tier %c)", h->tier);
    rc = pe_pfm_open(&h->pfm, h->o.events, h->c, err);
    if (rc < 0)
        return rc;
    sched_fsm_foreach_thread(h->s, pe_pfm_attach_cb, h->pfm);
    return pe_pfm_status(h->pfm, err);
}

int host_open(struct host *h, struct collector *c, struct cs_err *err)
{
    const char *order = h->o.force_tier == 'B' ? "B" : h->o.force_tier == 'C' ? "C"
                        : h->o.force_tier == 'A' ? "A" : "ABC";
    int rc = -ENODEV;

    h->c = c;
    if (h->o.root <= 0)
        return cs_err_set(err, CS_E_USAGE, "host sampler: no root pid");
    if (h->o.force_tier)
        host_reason(h, "forced tier %c", h->o.force_tier);
    if ((rc = alloc_cpus(h)) < 0)
        return cs_err_set(err, rc, "host sampler: out of memory");
    raise_nofile();
    h->stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    h->psi_fd = open("/proc/pressure/cpu", O_RDONLY | O_CLOEXEC);
    for (const char *t = order; *t && (rc = try_tier(h, *t)) < 0; t++)
        ;
    if (rc < 0)
        return cs_err_set(err, rc, "host sampler: no tier works (%s)", h->reason);
    write_open_meta(h);
    rc = open_pfm(h, err);
    if (rc < 0)
        return rc;
    h->t_check = procfs_now_ns();
    return 0;
}

int host_pollfds(struct host *h, struct pollfd *fds, int max)
{
    int n = 0;

    for (int c = 0; h->cpus && c < h->ncpu && n < max; c++) {
        if (h->cpus[c].ring.base) {
            fds[n].fd = h->cpus[c].leader;
            fds[n].events = POLLIN;
            fds[n].revents = 0;
            n++;
        }
    }
    return n;
}

void host_add_pid(struct host *h, pid_t pid)
{
    if (h->s && !sched_fsm_tracked(h->s, (uint32_t)pid))
        sched_fsm_seed_proc(h->s, pid, procfs_now_ns(), 0);
}

/* While paused, the rings made no fork, exit or comm record: on restart,
 * look in /proc again. */
int host_pause(struct host *h, int paused)
{
    int rc = switch_all(h, !paused);

    if (!paused && h->s)
        resync_tree(h);
    return rc;
}

int host_live(struct host *h)
{
    return h->s ? sched_fsm_live(h->s) : 0;
}

static uint64_t read_lost_totals(struct host *h)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < h->nfds; i++) {
        uint64_t lost = 0;

        if (pe_event_read(h->fds[i], NULL, &lost) == 0)
            sum += lost;
    }
    return sum;
}

static void write_finish_meta(struct host *h, uint64_t read_lost)
{
    const struct sched_fsm_stats *st = sched_fsm_stats(h->s);

    collector_meta_u64(h->c, "host_lost", st->lost > read_lost ? st->lost : read_lost);
    collector_meta_u64(h->c, "host_lost_records", st->lost);
    collector_meta_u64(h->c, "host_lost_read", read_lost);
    collector_meta_u64(h->c, "host_lost_spans", st->lost_spans);
    collector_meta_u64(h->c, "host_events", st->events);
    collector_meta_u64(h->c, "host_checks", st->checks);
    collector_meta_u64(h->c, "host_diverged", st->diverged);
    collector_meta_u64(h->c, "host_wake_unknown", st->wake_unknown);
    collector_meta_u64(h->c, "host_block_tp", st->block_tp);
    collector_meta_u64(h->c, "host_block_unlabelled", st->block_unlabelled);
    collector_meta_u64(h->c, "host_runq_schedstat_ns", st->runq_schedstat_ns);
    collector_meta_u64(h->c, "host_runq_perf_ns", st->runq_perf_ns);
    collector_meta_u64(h->c, "host_procs", st->procs);
    collector_meta_u64(h->c, "host_threads", st->threads);
}

int host_finish(struct host *h, uint64_t now_ns)
{
    uint64_t t, lost = 0;

    if (!h->s || h->finished)
        return 0;
    if (h->tier != 'C')
        for (size_t i = 0; i < h->nfds; i++)
            pe_event_disable(h->fds[i]);
    /* After the disable no record can be later than t. */
    t = procfs_now_ns();
    if (now_ns > t)
        t = now_ns;
    if (h->tier == 'C') {
        host_poll_drain(h, t, 1);
    } else {
        drain_rings(h);
        sys_sample(h, t);
        process_until(h, t);
        if (h->pfm)
            pe_pfm_read(h->pfm, t);
        lost = read_lost_totals(h);
    }
    if (h->tier != 'C') /* tier C emitted its windows while polling */
        sched_fsm_finish(h->s, t);
    write_finish_meta(h, lost);
    h->finished = 1;
    return 0;
}

void host_free(struct host *h)
{
    if (!h)
        return;
    pe_pfm_free(h->pfm);
    host_poll_free(h->poll);
    close_perf(h);
    if (h->stat_fd >= 0)
        close(h->stat_fd);
    if (h->psi_fd >= 0)
        close(h->psi_fd);
    free(h->cpus);
    free(h->fds);
    free(h->pend);
    free(h);
}
