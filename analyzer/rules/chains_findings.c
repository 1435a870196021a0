/* rules/chains_findings.c: one builder per cause (f_*), each turning the
 * evidence of chains_evidence.c into at most one finding, whose impact is the
 * time its cause cost (the excess, not the calls' whole duration). Text is
 * built here; report.c only lays it out. Ordering and JSON: chains.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "account.h"
#include "chains.h"
#include "chains_priv.h"
#include "cudaspy/api.h"
#include "fmt.h"
#include "graphs.h"
#include "model/procs.h"

/* ---- findings ---- */

/* A view of the account: what its cause owns, with its interval. */
uint64_t chains_owned(const struct ctx *x, int cause, uint64_t *lo, uint64_t *hi)
{
    return account_cause(x->ac, chains_cause_acct[cause], lo, hi);
}

/* A new finding; a view of the account gets the account's impact, the
 * others @p impact. */
static struct finding *fnew(struct ctx *x, int cause, uint64_t impact)
{
    struct finding *f = &x->fnd[cause];

    f->cause = cause;
    f->impact_ns = f->impact_lo_ns = f->impact_hi_ns = impact;
    if (chains_cause_acct[cause] != AC_NONE)
        f->impact_ns = chains_owned(x, cause, &f->impact_lo_ns, &f->impact_hi_ns);
    f->evidence = json_array();
    return f;
}

/* The heavy-tailed API that cause @p k explains most, with its share. */
static const struct tail *tail_for(const struct ctx *x, int k)
{
    const struct tail *best = NULL;

    for (uint32_t i = 0; i < x->t->nrow; i++) {
        const struct tail *t = &x->tails[i];
        if (t->n && t->cause_ns[k] && (!best || t->cause_ns[k] > best->cause_ns[k]))
            best = t;
    }
    return best;
}

static void tail_evidence(struct finding *f, const struct tail *t, int k)
{
    char n[96], a[32], b[32], d[32];

    if (t == NULL)
        return;
    f->tail = t;
    f->row = t->row;
    jaddf(f->evidence,
          "explains %.0f %% of %s outlier time: %" PRIu64 " calls >= p99 %s took %s, %s of it %s",
          pct(t->cause_ns[k], t->out_ns), stats_row_name(t->row, n, sizeof(n)), t->n,
          fmt_ns(a, 32, t->row->s.p99_ns), fmt_ns(b, 32, t->out_ns), fmt_ns(d, 32, t->cause_ns[k]),
          k == C_TREE ? "preempted by the tree's own processes"
          : k == C_EXT ? "preempted by processes outside the tree"
          : k == C_PIPE ? "asleep waiting for worker processes"
          : k == C_IO ? "in uninterruptible (disk) sleep"
                      : "on CPU while page allocations ran at 4x the median rate or more");
    jaddf(f->evidence, "outlier windows: on CPU %.0f %%, preempted %.0f %% (tree %.0f %%, outside "
                       "%.0f %%), asleep %.0f %%, D-state %.0f %%; system CPU %.0f %% busy",
          pct(t->oncpu_ns, t->out_ns), pct(t->cause_ns[C_TREE] + t->cause_ns[C_EXT], t->out_ns),
          pct(t->cause_ns[C_TREE], t->out_ns), pct(t->cause_ns[C_EXT], t->out_ns),
          pct(t->sleep_ns, t->out_ns), pct(t->cause_ns[C_IO], t->out_ns),
          t->busy_ns ? (double)t->busy_x_ns / (double)t->busy_ns / 10.0 : 0.0);
}

/* Processes of @p role in run @p run: workers are counted against that
 * run's CPUs (ranks on different hosts have their own). */
static uint32_t count_role(const struct model *m, int role, uint32_t run)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < m->nproc; i++)
        n += m->proc[i].role == role && m->proc[i].selected && m->proc[i].run == run;
    return n;
}

static uint32_t ncpu(const struct model *m, uint32_t run)
{
    return run < (uint32_t)m->nruns ? m->runs[run].ncpu : 0;
}

static int nholders(const struct ctx *x, int k)
{
    int n = 0;

    for (int i = 0; i < HOLDERS; i++)
        n += x->holders[k][i].n > 0;
    return n;
}

static void holders_evidence(struct finding *f, const struct ctx *x, int k)
{
    const struct model *m = x->m;
    char a[32], b[32];
    uint64_t named = 0;
    int nh = 0;

    for (int i = 0; i < HOLDERS; i++) {
        named += x->holders[k][i].ns;
        nh += x->holders[k][i].n > 0;
    }
    if (contention(x, k) > named + x->run_pre_anon[k] + contention(x, k) / 20)
        jaddf(f->evidence, "the CPU went to many processes: the %d largest holders took %s of it%s",
              nh, fmt_ns(a, 32, named),
              x->run_pre_anon[k] ? ", the holder is unknown for part of the rest" : "");
    else if (x->run_pre_anon[k])
        jaddf(f->evidence, "holder unknown for %s (no switch-in seen on that CPU, or a "
                           "wake-up wait whose CPU last ran a process of the other side)",
              fmt_ns(a, 32, x->run_pre_anon[k]));

    for (int i = 0; i < 4 && x->holders[k][i].n; i++) {
        const struct holder *h = &x->holders[k][i];
        if (h->proc != M_NONE) {
            const struct m_proc *p = &m->proc[h->proc];
            char where[48] = "";
            if (m->nruns > 1 && p->rank != CS_RANK_NONE)
                snprintf(where, sizeof(where), ", rank %u", p->rank);
            else if (m->nruns > 1)
                snprintf(where, sizeof(where), ", run %u", p->run);
            jaddf(f->evidence,
                  "%s (pid %u, %s%s) held the CPU %" PRIu64 " times for %s; it ran %s on CPU, %" PRIu64
                  " context switches, %" PRIu64 " page allocations",
                  p->comm, h->pid, procs_role_name(p->role), where, h->n, fmt_ns(a, 32, h->ns),
                  fmt_ns(b, 32, p->st.oncpu_ns), p->st.vcsw + p->st.ivcsw, p->st.page_allocs);
        } else {
            jaddf(f->evidence, "pid %u (outside the traced tree) held the CPU %" PRIu64
                               " times for %s",
                  h->pid, h->n, fmt_ns(a, 32, h->ns));
        }
    }
}

void chains_f_tree(struct ctx *x)
{
    const struct model *m = x->m;
    uint32_t run = x->holders[0][0].n ? x->holders[0][0].run : 0;
    uint32_t nw = count_role(m, M_ROLE_WORKER, run), nm = count_role(m, M_ROLE_CUDA_MAIN, run);
    uint32_t cpus = ncpu(m, run);
    struct finding *f = fnew(x, C_TREE, contention(x, 0));
    char a[32], b[32];

    jaddf(f->evidence, "CUDA threads preempted %" PRIu64 " times for %s and kept waiting %"
                       PRIu64 " times for %s after a wake-up by processes of their own tree "
                       "(runnable, not running)",
          x->run_pre_n[0], fmt_ns(a, 32, x->run_pre[0]), x->run_wake_n[0],
          fmt_ns(b, 32, x->run_wake[0]));
    holders_evidence(f, x, 0);
    jaddf(f->evidence, "%u worker process(es) + %u CUDA process(es) on %u CPUs%s", nw, nm, cpus,
          m->nruns > 1 ? " (in the run of the largest holder)" : "");
    tail_evidence(f, tail_for(x, C_TREE), C_TREE);
    snprintf(f->summary, sizeof(f->summary),
             "the traced tree's own processes took the CPU from the CUDA thread(s) for %s",
             fmt_ns(a, 32, contention(x, 0)));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " preemptions and delayed wake-ups of the "
             "CUDA thread by %d%s tree process(es), %s", x->run_pre_n[0] + x->run_wake_n[0],
             nholders(x, 0), nholders(x, 0) == HOLDERS ? "+" : "", fmt_ns(a, 32, contention(x, 0)));
    if (cpus && nw + nm > cpus)
        snprintf(f->rec, sizeof(f->rec),
                 "%u worker(s) + main on %u CPUs: use num_workers <= %u (CPUs - 1), or reserve "
                 "a core for the main process (taskset -c 0 for main, the rest for workers); "
                 "make each batch cheaper to build (pre-shuffled index, no per-sample copies)",
                 nw, cpus, cpus > 1 ? cpus - 1 : 1);
    else
        snprintf(f->rec, sizeof(f->rec),
                 "give the CUDA process its own core (taskset/cpuset) and lower the workers' "
                 "priority (nice -n 10) so they stop preempting it");
}

void chains_f_ext(struct ctx *x)
{
    struct finding *f = fnew(x, C_EXT, contention(x, 1));
    char a[32], b[32], pids[128] = "";
    size_t l = 0;

    jaddf(f->evidence, "CUDA threads preempted %" PRIu64 " times for %s and kept waiting %"
                       PRIu64 " times for %s after a wake-up by processes outside the traced tree",
          x->run_pre_n[1], fmt_ns(a, 32, x->run_pre[1]), x->run_wake_n[1],
          fmt_ns(b, 32, x->run_wake[1]));
    holders_evidence(f, x, 1);
    for (int i = 0; i < 3 && x->holders[1][i].n; i++)
        l += (size_t)snprintf(pids + l, sizeof(pids) - l, "%s%u", i ? ", " : "",
                              x->holders[1][i].pid);
    tail_evidence(f, tail_for(x, C_EXT), C_EXT);
    snprintf(f->summary, sizeof(f->summary),
             "processes outside the traced tree (pid %s) took the CPU from the CUDA thread(s) "
             "for %s", pids[0] ? pids : "?", fmt_ns(a, 32, contention(x, 1)));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " preemptions and delayed wake-ups of the "
             "CUDA thread by %d%s outside process(es), %s", x->run_pre_n[1] + x->run_wake_n[1],
             nholders(x, 1), nholders(x, 1) == HOLDERS ? "+" : "", fmt_ns(a, 32, contention(x, 1)));
    snprintf(f->rec, sizeof(f->rec),
             "move pid %s off the CPUs this job uses (cpuset/taskset), renice them (nice -n 19) "
             "or stop them while training", pids[0] ? pids : "?");
}

void chains_f_io(struct ctx *x)
{
    struct finding *f = fnew(x, C_IO, x->run_disk);
    char a[32];

    jaddf(f->evidence, "CUDA threads in uninterruptible (D) sleep %" PRIu64 " times for %s",
          x->run_disk_n, fmt_ns(a, 32, x->run_disk));
    tail_evidence(f, tail_for(x, C_IO), C_IO);
    snprintf(f->summary, sizeof(f->summary), "the CUDA thread(s) waited %s on disk or other "
             "uninterruptible I/O", fmt_ns(a, 32, x->run_disk));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " uninterruptible (D) waits, %s",
             x->run_disk_n, fmt_ns(a, 32, x->run_disk));
    snprintf(f->rec, sizeof(f->rec),
             "keep the data on local NVMe, in the page cache or /dev/shm; read ahead in worker "
             "processes instead of the main thread; checkpoint asynchronously");
}

void chains_f_page(struct ctx *x)
{
    const struct tail *t = tail_for(x, C_PAGE);
    struct finding *f;
    char a[32];

    if (t == NULL || t->pa_hot_n < 3)
        return;
    f = fnew(x, C_PAGE, t->excess_ns ? (uint64_t)((double)t->excess_ns *
                                                  (double)t->cause_ns[C_PAGE] / (double)t->out_ns)
                                     : 0);
    jaddf(f->evidence, "%" PRIu64 " of %" PRIu64 " outlier calls ran while their process "
                       "allocated pages at >= 4x its median rate",
          t->pa_hot_n, t->n);
    jaddf(f->evidence, "%" PRIu64 " page allocations in the outlier windows (%.0f per second)",
          t->pa_win_allocs, t->pa_win_ns ? (double)t->pa_win_allocs * 1e9 / (double)t->pa_win_ns : 0.0);
    tail_evidence(f, t, C_PAGE);
    snprintf(f->summary, sizeof(f->summary), "slow calls coincide with bursts of page "
             "allocations (%" PRIu64 " of %" PRIu64 " outliers)", t->pa_hot_n, t->n);
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " page allocations during %" PRIu64
             " slow calls", t->pa_win_allocs, t->n);
    snprintf(f->rec, sizeof(f->rec),
             "allocate host buffers once and reuse them (pinned staging buffers, a preallocated "
             "batch tensor); avoid per-batch tensor creation and copies in collate; check for "
             "transparent-hugepage compaction (/sys/kernel/mm/transparent_hugepage)");
    (void)a;
}

/* The process's GPU activity when it has some (sampled or exact), else
 * NULL: then only the host's lower bound (feed.c) is known. */
static const struct gpu_proc *measured(const struct ctx *x, uint32_t proc)
{
    const struct gpu_proc *gp = x->g ? gpu_find(x->g, proc) : NULL;

    return gp && gp->source >= GPU_SRC_SAMPLED ? gp : NULL;
}

/* Host state @p h's share of the process's GPU idle, over its window. */
static uint64_t idle_in(const struct ctx *x, uint32_t proc, int h)
{
    const struct gpu_proc *gp = measured(x, proc);

    return gp ? gpu_estimate(gp, gp->by[h]) : 0;
}

/* "measured in 9.8 % of the window (sampled)" or "exactly (full)". */
static const char *basis(const struct gpu_proc *gp, char *buf, size_t n)
{
    if (gp->source == GPU_SRC_EXACT && gp->covered_ns * 100 >= gp->window_ns * 98)
        snprintf(buf, n, "measured on the GPU over the whole window");
    else
        snprintf(buf, n, "measured on the GPU in the %.1f %% of the window that GPU activity "
                 "covered (%s), scaled to the window", pct(gp->covered_ns, gp->window_ns),
                 gpu_source_name(gp->source));
    return buf;
}

static uint64_t pipe_wait(const struct ctx *x, const struct feed_proc *fp)
{
    return measured(x, fp->proc) ? idle_in(x, fp->proc, GH_SLEEP_PIPE) : fp->split.sleep_worker_ns;
}

/* GPU idle after the set-up: the account's idle buckets where GPU activity
 * measured it, else the feed's gaps (a lower bound). */
static uint64_t proc_idle(const struct ctx *x, const struct feed_proc *fp)
{
    return measured(x, fp->proc) ? account_idle(x->ac, fp->proc) : fp->idle_ns;
}

void chains_f_pipe(struct ctx *x)
{
    const struct model *m = x->m;
    uint64_t idle = 0, wait = 0, gaps = 0;
    const struct feed_proc *worst = NULL;
    const struct gpu_proc *gp;
    struct finding *f;
    uint32_t nw = 0, cpus = 0;
    char a[32], b[32], d[32], how[200];

    for (uint32_t i = 0; i < x->f->np; i++) {
        const struct feed_proc *fp = &x->f->p[i];
        if (!m->proc[fp->proc].selected)
            continue;
        idle += proc_idle(x, fp);
        gaps += fp->gaps;
        wait += pipe_wait(x, fp);
        if (!worst || pipe_wait(x, fp) > pipe_wait(x, worst))
            worst = fp;
    }
    if (worst == NULL)
        return;
    gp = measured(x, worst->proc);
    nw = count_role(m, M_ROLE_WORKER, m->proc[worst->proc].run);
    cpus = ncpu(m, m->proc[worst->proc].run);
    f = fnew(x, C_PIPE, 0);
    wait = f->impact_ns;
    if (gp) {
        uint64_t slept = wait - (x->ac->ns[AB_DATA_RECV] < wait ? x->ac->ns[AB_DATA_RECV] : wait);
        jaddf(f->evidence, "GPU idle %s (%s)", fmt_ns(a, 32, idle), basis(gp, how, sizeof(how)));
        jaddf(f->evidence, "of it the feeding thread slept %s until the data pipeline (worker "
                           "processes or a helper thread) woke it (%.0f %% of the idle time)",
              fmt_ns(b, 32, slept), pct(slept, idle));
    } else {
        jaddf(f->evidence, "GPU idle >= %s in %" PRIu64 " gaps between a sync that drained the "
                           "streams and the next enqueue",
              fmt_ns(a, 32, idle), gaps);
        jaddf(f->evidence, "in those gaps the feeding thread slept %s until the data pipeline "
                           "(worker processes or a helper thread) woke it (%.0f %% of the idle "
                           "time)",
              fmt_ns(b, 32, wait), pct(wait, idle));
    }
    for (int i = 0; i < FEED_WAKERS && worst->split.waker[i].ns; i++) {
        const struct feed_waker *w = &worst->split.waker[i];
        if (w->proc == M_NONE ||
            (m->proc[w->proc].role != M_ROLE_WORKER && w->proc != worst->proc))
            continue;
        if (w->proc == worst->proc)
            jaddf(f->evidence, "woken by other threads of its own process (pid %u, a helper "
                               "such as the pin-memory thread): %s",
                  w->pid, fmt_ns(a, 32, w->ns));
        else
            jaddf(f->evidence, "woken by %s (pid %u): %s; it ran %s on CPU, %" PRIu64
                               " page allocations",
                  m->proc[w->proc].comm, w->pid, fmt_ns(a, 32, w->ns),
                  fmt_ns(d, 32, m->proc[w->proc].st.oncpu_ns), m->proc[w->proc].st.page_allocs);
    }
    if (x->ac->ns[AB_DATA_RECV])
        jaddf(f->evidence, "of it the main thread spent %s on CPU in the DataLoader's receive "
                           "path (a worker's batch read and unpickled: sampled Python stacks)",
              fmt_ns(a, 32, x->ac->ns[AB_DATA_RECV]));
    tail_evidence(f, tail_for(x, C_PIPE), C_PIPE);
    if (nw) {
        snprintf(f->summary, sizeof(f->summary),
                 "the GPU sat idle %s while the main thread waited for its %u worker(s) to "
                 "deliver batches", fmt_ns(a, 32, wait), nw);
        snprintf(f->host, sizeof(f->host), "main thread %s %s waiting on %u worker(s) / "
                 "helper threads", x->ac->ns[AB_DATA_RECV] ? "asleep or receiving" : "asleep",
                 fmt_ns(b, 32, wait), nw);
    } else {
        snprintf(f->summary, sizeof(f->summary),
                 "the GPU sat idle %s while the main thread waited for helper threads of its "
                 "own process", fmt_ns(a, 32, wait));
        snprintf(f->host, sizeof(f->host), "main thread asleep %s waiting on its own helper "
                 "threads", fmt_ns(b, 32, wait));
    }
    if (gp)
        snprintf(f->cuda, sizeof(f->cuda), "GPU idle %s (%s), %s of it waiting for data",
                 fmt_ns(a, 32, idle), gpu_source_name(gp->source), fmt_ns(b, 32, wait));
    else
        snprintf(f->cuda, sizeof(f->cuda), "GPU idle >= %s in %" PRIu64 " gaps after syncs",
                 fmt_ns(a, 32, idle), gaps);
    if (nw == 0)
        snprintf(f->rec, sizeof(f->rec),
                 "find what the helper thread waits for before it wakes the main thread (a "
                 "data-loading or pin-memory thread, or a collective's thread such as gloo's: "
                 "then see rank_straggler); move that work off the step's critical path");
    else if (cpus && nw + 1 >= cpus)
        snprintf(f->rec, sizeof(f->rec),
                 "%u workers already fill %u CPUs: make batches cheaper to produce (for an "
                 "in-memory dataset index tensors directly with a pre-shuffled index instead of "
                 "a DataLoader; avoid per-sample collate copies); persistent_workers=True, "
                 "pin_memory=True", nw, cpus);
    else
        snprintf(f->rec, sizeof(f->rec),
                 "feed faster: raise num_workers (now %u, up to %u on %u CPUs), "
                 "prefetch_factor, persistent_workers=True, pin_memory=True; or move "
                 "preprocessing to the GPU", nw, cpus > 1 ? cpus - 1 : 1, cpus);
    f->examples = json_array();
    f->timeline = json_array();
    for (int i = 0; i < FEED_TOP_GAPS && worst->starved[i].t1_ns; i++) {
        const struct feed_gap *g = &worst->starved[i];
        const struct m_call cv = model_call(m, g->next_call), *c = &cv;
        if (i == 0) {
            chains_tl_system(f->timeline, m, model_call_proc(m, c)->run, g->t0_ns, g->t1_ns);
            chains_tl_call(f->timeline, m, g->drain_call, NULL);
            chains_tl_host(f->timeline, m, c->thr, g->t0_ns, g->t1_ns);
            chains_tl_add(f->timeline, m, model_call_proc(m, c)->run, c->t_enter_ns, "[CUDA]",
                   "%s: next enqueue, GPU idle %s since the sync returned",
                   chains_api_name(c, a, 32),
                   fmt_ns(b, 32, g->t1_ns - g->t0_ns));
        }
        json_array_append_new(f->examples, chains_gap_json(m, g));
    }    f->timeline = chains_tl_sorted(f->timeline);
}

/* What the account left of the GPU's pageable copy time to a copy from
 * pinned memory (gpu_pinned_share), on the first device that copied. */
static void pinned_evidence(const struct ctx *x, struct finding *f)
{
    char a[32], b[32], r[32];

    for (uint32_t i = 0; x->g && i < x->g->nd; i++) {
        const struct gpu_dev *d = &x->g->d[i];
        double keep = gpu_pinned_share(d);
        uint64_t kept = (uint64_t)((double)d->steady_pageable_ns * keep);
        if (d->steady_pageable_ns == 0)
            continue;
        snprintf(r, sizeof(r), "%.1f GB/s", d->pinned_bps / 1e9);
        if (d->pinned_src == GPU_PINNED_NONE)
            jaddf(f->evidence, "the GPU's recorded copies from pageable memory took %s; what "
                               "pinned memory would still take of it is not known (no pinned copy in the run, "
                               "no PCIe link from NVML): all of it counted, an upper bound",
                  fmt_ns(a, 32, d->steady_pageable_ns));
        else
            jaddf(f->evidence, "the GPU's recorded copies from pageable memory took %s; from "
                               "pinned memory the transfer would still take %s (%s: %s), not "
                               "counted",
                  fmt_ns(a, 32, d->steady_pageable_ns), fmt_ns(b, 32, kept), r,
                  d->pinned_src == GPU_PINNED_RUN ? "the run's own pinned copies"
                                                  : "the PCIe link NVML reports");
        return;
    }
}

/* Copies of 64 KiB or more from pageable memory. The driver stages them
 * through a pinned buffer on the calling thread, so their cost is on-CPU
 * time; off-CPU time inside them belongs to other causes. The excess is that
 * on-CPU time minus what the same bytes cost in this run's pinned copy calls.
 * With no pinned copy to compare: all of it for async calls (from pinned
 * memory they return once enqueued), half of it for synchronous ones (they
 * would still wait for the transfer). */
void chains_f_pageable(struct ctx *x)
{
    const struct model *m = x->m;
    uint64_t pg_b = 0, pg_ns = 0, pg_cpu = 0, pg_n = 0, pin_b = 0, pin_ns = 0, ex_ = 0;
    uint64_t pg_cpu_sync = 0;
    struct examples e = {{0}, {0}};
    struct finding *f;
    char a[32], b[32], d[32], n[96];

    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        if (c->flags & CS_CF_NESTED || cs_api_table[c->api].family != CS_FAM_COPY ||
            model_bytes(c) < 65536 || !model_call_proc(m, c)->selected)
            continue;
        if (c->flags & CS_CF_PAGEABLE) {
            struct feed_split sp = {0};
            feed_split_add(&sp, m, c->thr, c->t_enter_ns, c->t_exit_ns);
            pg_b += model_bytes(c);
            pg_ns += model_dur(c);
            pg_cpu += sp.oncpu_ns;
            pg_cpu_sync += cs_api_table[c->api].is_sync ? sp.oncpu_ns : 0;
            pg_n++;
            chains_ex_keep(&e, i, sp.oncpu_ns);
        } else if (c->flags & CS_CF_PINNED) {
            pin_b += model_bytes(c);
            pin_ns += model_dur(c);
        }
    }
    if (pg_n == 0)
        return;
    if (pin_b) {
        uint64_t expect = (uint64_t)((double)pg_b * (double)pin_ns / (double)pin_b);
        ex_ = pg_cpu > expect ? pg_cpu - expect : 0;
    } else {
        ex_ = pg_cpu - pg_cpu_sync / 2;
    }
    f = fnew(x, C_PAGEABLE, ex_);
    jaddf(f->evidence, "GPU idle %s while the feeding thread staged pageable copies",
          fmt_ns(a, 32, f->impact_ns));
    jaddf(f->evidence, "%" PRIu64 " copies of >= 64 KiB from pageable host memory: %.1f MiB in "
                       "%s (%s), %s of it on CPU staging the data",
          pg_n, (double)pg_b / 1048576.0, fmt_ns(a, 32, pg_ns), fmt_bw(b, 32, pg_b, pg_ns),
          fmt_ns(d, 32, pg_cpu));
    if (pin_b)
        jaddf(f->evidence, "pinned copy calls in the same run: %.1f MiB in %s (%s, %.1fx the "
                           "pageable rate)",
              (double)pin_b / 1048576.0, fmt_ns(a, 32, pin_ns), fmt_bw(b, 32, pin_b, pin_ns),
              pg_b && pin_ns ? ((double)pin_b / (double)pin_ns) / ((double)pg_b / (double)pg_ns)
                             : 0.0);
    else
        jaddf(f->evidence, "no pinned copy to compare; excess estimated as the on-CPU time of "
                           "the async calls (%s) and half that of the synchronous ones (%s)",
              fmt_ns(a, 32, pg_cpu - pg_cpu_sync), fmt_ns(b, 32, pg_cpu_sync));
    pinned_evidence(x, f);
    jaddf(f->evidence, "async copies from pageable memory are staged by the driver and block "
                       "the calling thread");
    f->row = e.ns[0] ? stats_table_row_at(x->t, m, e.call[0]) : NULL;
    snprintf(f->summary, sizeof(f->summary), "%.1f MiB copied from pageable memory (%s) cost %s "
             "more than pinned copies would", (double)pg_b / 1048576.0,
             fmt_bw(a, 32, pg_b, pg_ns), fmt_ns(b, 32, f->impact_ns));
    snprintf(f->host, sizeof(f->host), "%.1f MiB staged from pageable memory on the CPU, %s",
             (double)pg_b / 1048576.0, fmt_ns(d, 32, pg_cpu));
    snprintf(f->rec, sizeof(f->rec),
             "allocate the host buffers pinned (cudaMallocHost/cudaHostAlloc, "
             "DataLoader(pin_memory=True), tensor.pin_memory()) or register them once with "
             "cudaHostRegister; %s then returns at once and overlaps with compute",
             f->row ? stats_row_name(f->row, n, sizeof(n)) : "the copy");
    f->examples = chains_ex_json(m, &e);
    if (e.ns[0])
        f->timeline = chains_tl_for_call(x, x->t, e.call[0]);
}

static int is_churn_api(unsigned api)
{
    int fam = cs_api_table[api].family;
    return fam == CS_FAM_ALLOC || fam == CS_FAM_FREE;
}

void chains_f_churn(struct ctx *x)
{
    const struct model *m = x->m;
    uint64_t na = 0, nf = 0, ns = 0, bytes = 0;
    struct examples e = {{0}, {0}};
    struct finding *f;
    char a[32];
    double secs = (double)x->wall_ns / 1e9;

    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        if (c->flags & CS_CF_NESTED || !is_churn_api(c->api) || !model_call_proc(m, c)->selected)
            continue;
        if (cs_api_table[c->api].family == CS_FAM_ALLOC) {
            na++;
            bytes += model_bytes(c);
        } else {
            nf++;
        }
        ns += model_dur(c);
        chains_ex_keep(&e, i, model_dur(c));
    }
    if (na + nf == 0 || secs <= 0)
        return;
    f = fnew(x, C_CHURN, ns);
    jaddf(f->evidence, "GPU idle %s while the feeding thread was inside the allocator",
          fmt_ns(a, 32, f->impact_ns));
    jaddf(f->evidence, "%" PRIu64 " allocations + %" PRIu64 " frees (%.0f per second), %s "
                       "inside them",
          na, nf, (double)(na + nf) / secs, fmt_ns(a, 32, ns));
    jaddf(f->evidence, "%.1f MiB allocated in all (%.1f MiB per allocation)",
          (double)bytes / 1048576.0, na ? (double)bytes / 1048576.0 / (double)na : 0.0);
    jaddf(f->evidence, "cudaFree and cuMemFree synchronise the device before returning");
    f->row = e.ns[0] ? stats_table_row_at(x->t, m, e.call[0]) : NULL;
    snprintf(f->summary, sizeof(f->summary), "device memory is allocated and freed %.0f times "
             "per second, %s in the allocator", (double)(na + nf) / secs, fmt_ns(a, 32, ns));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " allocations + %" PRIu64 " frees, %.0f per "
             "second", na, nf, (double)(na + nf) / secs);
    snprintf(f->rec, sizeof(f->rec),
             "allocate once and reuse the buffers across steps, or use the stream-ordered "
             "allocator (cudaMallocAsync/cudaFreeAsync with a memory pool) or a caching "
             "allocator; in PyTorch avoid torch.cuda.empty_cache() in the loop");
    f->examples = chains_ex_json(m, &e);
    if (e.ns[0])
        f->timeline = chains_tl_for_call(x, x->t, e.call[0]);
}

/* ---- graph_recapture (issue 31) ---- */

/* Where process @p proc's steady state starts: its account's set-up end. */
static uint64_t steady_from(const struct account *ac, uint32_t proc)
{
    for (uint32_t i = 0; i < ac->na; i++)
        if (ac->a[i].proc == proc)
            return ac->a[i].setup_end_ns;
    return UINT64_MAX;
}

/* Graph builds after the set-up (graphs.h): those that did not pay for
 * themselves, and those that did (amortised, not counted). */
struct rebuilds {
    uint64_t captures, insts, capture_ns, inst_ns, builds;
    uint64_t once, once_ns; /* amortised builds */
    struct examples e;      /* the builds' captures and instantiations, longest first */
    /* the eager runs before the captures (graphs_warmup) */
    uint64_t *wu;           /* pairs: first launch, capture's begin (model.call) */
    size_t nwu, capwu;
    uint64_t wu_launches, wu_host_ns, wu_gpu_ns;
    uint64_t code, code_ns; /* stretches of torch's graph code with no build (warm-ups) */
};

/* Build @p bi's warm-up, if found, joins rb->wu. */
static void warmup_add(const struct model *m, const struct graph_builds *gb, size_t bi,
                       struct rebuilds *rb)
{
    uint64_t first, cap = gb->b[bi].capture;
    size_t n = graphs_warmup(m, gb, bi, &first);

    if (n == 0)
        return;
    if (rb->nwu == rb->capwu) {
        size_t c = rb->capwu ? rb->capwu * 2 : 64;
        uint64_t *q = realloc(rb->wu, c * 2 * sizeof(*q));
        if (q == NULL)
            return;
        rb->wu = q, rb->capwu = c;
    }
    rb->wu[2 * rb->nwu] = first, rb->wu[2 * rb->nwu + 1] = cap;
    rb->nwu++;
    rb->wu_launches += n;
    rb->wu_host_ns += model_call(m, cap).t_enter_ns - model_call(m, first).t_enter_ns;
}

static int cmp_pair(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The GPU time of the work the warm-ups' calls enqueued. */
static void warmup_gpu(const struct model *m, struct rebuilds *rb)
{
    if (rb->nwu == 0)
        return;
    qsort(rb->wu, rb->nwu, 2 * sizeof(*rb->wu), cmp_pair);
    for (uint64_t i = 0; i < m->ngpu; i++) {
        uint64_t c = m->gpu[i].call;
        size_t lo = 0, hi = rb->nwu;
        if (c == M_CALL_NONE)
            continue;
        while (lo < hi) { /* the last range starting at or before c */
            size_t mid = (lo + hi) / 2;
            if (rb->wu[2 * mid] <= c)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && c < rb->wu[2 * (lo - 1) + 1])
            rb->wu_gpu_ns += m->gpu[i].t_end_ns - m->gpu[i].t_start_ns;
    }
}

static void rebuild_add(const struct model *m, struct rebuilds *rb, const struct graph_build *b)
{
    rb->builds++;
    if (b->capture != M_CALL_NONE) {
        rb->captures++;
        rb->capture_ns += b->capture_ns;
        chains_ex_keep(&rb->e, b->capture, b->capture_ns);
    }
    if (b->inst != M_CALL_NONE) {
        rb->insts++;
        rb->inst_ns += model_call_dur(m, b->inst);
        chains_ex_keep(&rb->e, b->inst, model_call_dur(m, b->inst));
    }
}

/* @return -ENOMEM, else 0 */
static int rebuilds_count(const struct ctx *x, struct rebuilds *rb)
{
    const struct model *m = x->m;
    struct graph_builds gb;

    if (graphs_builds(m, &gb) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < gb.n; i++) {
        const struct graph_build *b = &gb.b[i];
        uint32_t p = m->thr[b->thr].proc;
        if (!m->proc[p].selected || b->t0_ns < steady_from(x->ac, p))
            continue;
        if (b->is_amortised) {
            rb->once++, rb->once_ns += b->t1_ns - b->t0_ns;
        } else {
            rebuild_add(m, rb, b);
            warmup_add(m, &gb, i, rb);
        }
    }
    for (size_t i = 0; i < gb.ns; i++) {
        const struct graph_span *sp = &gb.s[i];
        uint32_t p = m->thr[sp->thr].proc;
        if (m->proc[p].selected && sp->t0_ns >= steady_from(x->ac, p) && !sp->has_build &&
            !sp->is_amortised)
            rb->code++, rb->code_ns += sp->t1_ns - sp->t0_ns;
    }
    warmup_gpu(m, rb);
    graphs_exit(&gb);
    return 0;
}

void chains_f_recapture(struct ctx *x)
{
    struct rebuilds rb = {0};
    struct finding *f;
    uint64_t n = x->ac->nstep;
    double per = n ? 1.0 / (double)n : 1e9 / (double)(x->wall_ns ? x->wall_ns : 1);
    const char *unit = n ? "step" : "second";
    char a[32], b[32];

    if (rebuilds_count(x, &rb) < 0 || rb.builds + rb.code == 0) {
        free(rb.wu);
        return;
    }
    free(rb.wu);
    f = fnew(x, C_RECAPTURE, rb.capture_ns + rb.inst_ns);
    jaddf(f->evidence, "GPU idle %s while a feeding thread built CUDA graphs (from a stream "
                       "capture's begin to the end of the instantiation after it, and "
                       "while torch's CUDA-graph code warmed up or recorded a shape: "
                       "cudagraph trees, torch.cuda.graph)",
          fmt_ns(a, 32, f->impact_ns));
    if (rb.code)
        jaddf(f->evidence, "%" PRIu64 " stretches of torch's CUDA-graph code with no capture "
                           "in them (%s from their first CUDA call to their last): the eager "
                           "warm-up of a new shape",
              rb.code, fmt_ns(a, 32, rb.code_ns));
    jaddf(f->evidence, "after the set-up: %" PRIu64 " stream captures (%s) and %" PRIu64
                       " graph instantiations or updates (%s), %.2f and %.2f per %s",
          rb.captures, fmt_ns(a, 32, rb.capture_ns), rb.insts, fmt_ns(b, 32, rb.inst_ns),
          (double)rb.captures * per, (double)rb.insts * per, unit);
    if (rb.nwu)
        jaddf(f->evidence, "before %zu of the captures the same kernels ran eagerly first (the "
                           "warm-up of a new shape: %" PRIu64 " launches, %s of GPU time, %s "
                           "from their first launch to the capture); their GPU idle is in the "
                           "impact where torch's CUDA-graph code ran them",
              rb.nwu, rb.wu_launches, fmt_ns(a, 32, rb.wu_gpu_ns), fmt_ns(b, 32, rb.wu_host_ns));
    if (rb.once)
        jaddf(f->evidence, "not counted: %" PRIu64 " build(s) launched %d times or more each "
                           "(%s): they paid for themselves",
              rb.once, GRAPHS_AMORTISED, fmt_ns(a, 32, rb.once_ns));
    jaddf(f->evidence, "a graph captured once and replayed costs one launch a step; each new "
                       "capture also runs the captured code eagerly first (warm-up) and "
                       "instantiates anew");
    f->row = rb.e.ns[0] ? stats_table_row_at(x->t, x->m, rb.e.call[0]) : NULL;
    snprintf(f->summary, sizeof(f->summary), "CUDA graphs are captured and instantiated again "
             "and again after the set-up (%.2f captures and %.2f instantiations per %s), "
             "%s building them",
             (double)rb.captures * per, (double)rb.insts * per, unit,
             fmt_ns(a, 32, rb.capture_ns + rb.inst_ns));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " captures + %" PRIu64 " instantiations "
             "after the set-up", rb.captures, rb.insts);
    snprintf(f->rec, sizeof(f->rec),
             "capture once and replay: keep the input shapes static (pad batches to a few "
             "bucket sizes, DataLoader(drop_last=True)); with torch.compile(mode="
             "\"reduce-overhead\") a new shape records new CUDA graphs, so mark the varying "
             "dimension dynamic (torch._dynamo.mark_dynamic) or, where shapes must vary, "
             "compile with mode=\"max-autotune-no-cudagraphs\"");
    f->examples = chains_ex_json(x->m, &rb.e);
    if (rb.e.ns[0])
        f->timeline = chains_tl_for_call(x, x->t, rb.e.call[0]);
}

/* The outermost synchronisation API with the most calls: what a per-step
 * sync finding is about (the call that drained the longest gap may be a
 * memset or a copy). */
static const struct stats_row *busiest_sync_row(const struct stats_table *t)
{
    const struct stats_row *best = NULL;

    for (uint32_t i = 0; i < t->nrow; i++) {
        const struct stats_row *r = &t->row[i];
        if (r->is_nested || cs_api_table[r->api].family != CS_FAM_SYNC)
            continue;
        if (best == NULL || r->n > best->n)
            best = r;
    }
    return best;
}

/* Measured (gpu.h): the host work done right after a sync while the GPU
 * waited, up to the GPU work that sync waited for: what ran one after the
 * other and would overlap without the sync. Host lower bound: syncs about
 * as many as launches, with short gaps after them: the GPU idle after them
 * plus the launches that ended it. */
static uint64_t sync_share(const struct ctx *x, const struct feed_proc *fp)
{
    const struct gpu_proc *gp = measured(x, fp->proc);

    if (!x->m->proc[fp->proc].selected || fp->syncs < 20)
        return 0;
    if (gp)
        return gpu_estimate(gp, gp->sync_loss_ns);
    if (fp->syncs < 100 || fp->launches == 0 || fp->syncs * 2 < fp->launches ||
        fp->short_gaps * 2 < fp->gaps)
        return 0;
    return fp->idle_ns + fp->relaunch_ns - fp->setup_idle_ns - fp->setup_relaunch_ns;
}

void chains_f_sync(struct ctx *x)
{
    const struct model *m = x->m;
    const struct feed_proc *worst = NULL;
    const struct gpu_proc *gp;
    struct finding *f;
    char a[32], b[32], how[200];

    for (uint32_t i = 0; i < x->f->np; i++) {
        const struct feed_proc *fp = &x->f->p[i];
        if (!m->proc[fp->proc].selected)
            continue;
        if (!worst || sync_share(x, fp) > sync_share(x, worst) ||
            (sync_share(x, fp) == sync_share(x, worst) && fp->syncs > worst->syncs))
            worst = fp;
    }
    if (worst == NULL || worst->syncs == 0)
        return;
    gp = measured(x, worst->proc);
    f = fnew(x, C_SYNC, 0);
    jaddf(f->evidence, "%" PRIu64 " syncs for %" PRIu64 " kernel launches (one per %.1f "
                       "launches), %s waiting in them",
          worst->syncs, worst->launches, (double)worst->launches / (double)worst->syncs,
          fmt_ns(a, 32, worst->sync_ns));
    if (gp) {
        jaddf(f->evidence, "after a sync returned, the GPU sat idle while the feeding thread "
                           "ran its next work on the CPU: %s (%s) that would have overlapped "
                           "the GPU work the sync waited for",
              fmt_ns(b, 32, f->impact_ns), basis(gp, how, sizeof(how)));
        snprintf(f->summary, sizeof(f->summary), "the host synchronises every step (%" PRIu64
                 " syncs): it cannot run ahead, so its own work and the GPU's take turns "
                 "(%s of GPU idle)", worst->syncs, fmt_ns(a, 32, f->impact_ns));
        snprintf(f->host, sizeof(f->host), "%" PRIu64 " syncs, then host work while the GPU "
                 "waits: %s", worst->syncs, fmt_ns(a, 32, f->impact_ns));
    } else {
        jaddf(f->evidence, "after each drain the GPU sat idle until the next enqueue returned: "
                           "%s over %" PRIu64 " gaps (%" PRIu64 " under 1 ms)",
              fmt_ns(b, 32, f->impact_ns), worst->gaps, worst->short_gaps);
        if (worst->setup_idle_ns)
            jaddf(f->evidence, "not counted: %s of it in the set-up before the first step "
                               "(once a run: see steps.setup)",
                  fmt_ns(b, 32, worst->setup_idle_ns + worst->setup_relaunch_ns));
        if (worst->syncs * 2 >= worst->launches)
            snprintf(f->summary, sizeof(f->summary), "the host synchronises after almost every "
                     "launch (%" PRIu64 " syncs, %" PRIu64 " launches), so the GPU drains and "
                     "waits for each next launch", worst->syncs, worst->launches);
        else
            snprintf(f->summary, sizeof(f->summary), "the host synchronises %" PRIu64 " times "
                     "(one per %.1f launches) and then works while the GPU has nothing: %s that "
                     "would have overlapped the GPU work the syncs waited for", worst->syncs,
                     (double)worst->launches / (double)worst->syncs, fmt_ns(a, 32, f->impact_ns));
        snprintf(f->host, sizeof(f->host), "%" PRIu64 " syncs for %" PRIu64 " launches, GPU "
                 "idle %s after them", worst->syncs, worst->launches,
                 fmt_ns(a, 32, f->impact_ns));
    }
    snprintf(f->rec, sizeof(f->rec),
             "remove the per-step synchronisation: no .item(), .cpu(), print() or "
             "torch.cuda.synchronize() of GPU values inside the loop; accumulate on the GPU and "
             "read once per N steps; order streams with events (cudaStreamWaitEvent) instead");
    f->examples = json_array();
    for (int i = 0; i < FEED_TOP_GAPS && worst->longest[i].t1_ns; i++) {
        struct examples e = {{worst->longest[i].drain_call}, {1}};
        json_t *one = chains_ex_json(m, &e);
        json_array_extend(f->examples, one);
        json_decref(one);
    }
    if (worst->longest[0].t1_ns) {
        const struct feed_gap *g = &worst->longest[0];
        const struct m_call cv = model_call(m, g->next_call), *c = &cv;
        f->timeline = json_array();
        chains_tl_call(f->timeline, m, g->drain_call,
                       stats_table_row_at(x->t, m, g->drain_call));
        chains_tl_add(f->timeline, m, model_call_proc(m, c)->run, c->t_enter_ns, "[CUDA]",
               "%s enqueued after the GPU sat idle %s", chains_api_name(c, a, 32),
               fmt_ns(b, 32, g->t1_ns - g->t0_ns));
        f->timeline = chains_tl_sorted(f->timeline);
    }
    f->row = busiest_sync_row(x->t);
}

/* Median kernel of the process's first device with GPU activity, 0 if none. */
static uint64_t kernel_p50(const struct ctx *x, uint32_t proc)
{
    for (uint32_t i = 0; x->g && i < x->g->nd; i++)
        if (x->g->d[i].proc == proc && x->g->d[i].kernels)
            return x->g->d[i].kernel_p50_ns;
    return 0;
}

/* launch_bound from the GPU's own timeline. */
static void launch_measured(struct ctx *x, struct finding *f, const struct feed_proc *fp,
                            const struct gpu_proc *gp, uint64_t span)
{
    uint64_t k50 = kernel_p50(x, fp->proc), every = fp->launch_p50_ns + fp->launch_gap_p50_ns;
    uint64_t lost = f->impact_ns;
    char a[32], b[32], d[32], how[200];

    jaddf(f->evidence, "%" PRIu64 " launches in %s (%.0f per second); the median kernel runs "
                       "%s on the GPU, the host issues one every %s (launch call %s + gap %s)",
          fp->launches, fmt_ns(a, 32, span), (double)fp->launches * 1e9 / (double)span,
          fmt_ns(b, 32, k50), fmt_ns(d, 32, every), fmt_ns(a, 32, fp->launch_p50_ns),
          fmt_ns(b, 32, fp->launch_gap_p50_ns));
    jaddf(f->evidence, "GPU busy %.0f %%; idle %s while the host was inside launch calls or "
                       "between launches (%s)",
          pct(gp->busy_ns, gp->covered_ns), fmt_ns(a, 32, lost), basis(gp, how, sizeof(how)));
    if (x->ac->ns[AB_HOST_FRAMEWORK])
        jaddf(f->evidence, "of it %s while the framework's own Python ran between launches "
                           "(torch's modules, autograd, optimizers: sampled Python stacks): "
                           "per-op overhead",
              fmt_ns(a, 32, x->ac->ns[AB_HOST_FRAMEWORK]));
    snprintf(f->summary, sizeof(f->summary), "launch-bound: kernels of %s on the GPU, one "
             "launched every %s, so the GPU waits %.0f %% of the time for the next launch",
             fmt_ns(a, 32, k50), fmt_ns(b, 32, every), pct(gp->idle_ns, gp->covered_ns));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " launches at %.0f per second, %s each",
             fp->launches, (double)fp->launches * 1e9 / (double)span,
             fmt_ns(a, 32, fp->launch_p50_ns));
    snprintf(f->cuda, sizeof(f->cuda), "GPU busy %.0f %% (%s), kernels of %s",
             pct(gp->busy_ns, gp->covered_ns), gpu_source_name(gp->source), fmt_ns(a, 32, k50));
    snprintf(f->rec, sizeof(f->rec),
             "launch fewer, larger kernels: capture the step in a CUDA graph (cudaGraphLaunch; "
             "torch.compile(mode=\"reduce-overhead\")), fuse elementwise kernels, raise the "
             "batch size");
}

void chains_f_launch(struct ctx *x)
{
    const struct feed_proc *worst = NULL;
    struct finding *f;
    char a[32], b[32], d[32];

    for (uint32_t i = 0; i < x->f->np; i++) {
        const struct feed_proc *fp = &x->f->p[i];
        if (x->m->proc[fp->proc].selected && (!worst || fp->launches > worst->launches))
            worst = fp;
    }
    if (worst == NULL || worst->launches == 0)
        return;
    uint64_t span = worst->busy_last_ns - worst->busy_first_ns;
    int keeps_up = worst->idle_ns * 10 <= span; /* back to back, else host-paced */
    const struct gpu_proc *gp = measured(x, worst->proc);
    f = fnew(x, C_LAUNCH, 0);
    if (gp) {
        launch_measured(x, f, worst, gp, span);
        return;
    }
    jaddf(f->evidence, "%" PRIu64 " launches in %s (%.0f per second); %s (%.0f %%) of that time "
                       "inside launch calls",
          worst->launches, fmt_ns(a, 32, span), (double)worst->launches * 1e9 / (double)span,
          fmt_ns(b, 32, worst->launch_ns), pct(worst->launch_ns, span));
    jaddf(f->evidence, "median launch call %s, median host gap between launches %s: the host "
                       "issues kernels back to back",
          fmt_ns(a, 32, worst->launch_p50_ns), fmt_ns(b, 32, worst->launch_gap_p50_ns));
    if (keeps_up)
        jaddf(f->evidence, "known GPU idle only %s (%.1f %% of the busy span): the GPU is fed "
                           "as fast as the host can launch",
              fmt_ns(d, 32, worst->idle_ns), pct(worst->idle_ns, span));
    else
        jaddf(f->evidence, "known GPU idle %s (%.1f %% of the busy span): the GPU finishes each "
                           "batch of kernels and waits for the host's next launches",
              fmt_ns(d, 32, worst->idle_ns), pct(worst->idle_ns, span));
    snprintf(f->summary, sizeof(f->summary), "launch-bound: %" PRIu64 " small kernels at %.0f "
             "per second, the host's launch cost sets the pace", worst->launches,
             (double)worst->launches * 1e9 / (double)span);
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " launches at %.0f per second, %s each",
             worst->launches, (double)worst->launches * 1e9 / (double)span,
             fmt_ns(a, 32, worst->launch_p50_ns));
    snprintf(f->cuda, sizeof(f->cuda),
             keeps_up ? "GPU idle only %.1f %% of the busy span: it runs as fast as kernels "
                        "are launched"
                      : "GPU idle %.1f %% of the busy span, waiting for the host's launches",
             pct(worst->idle_ns, span));
    snprintf(f->rec, sizeof(f->rec),
             "launch fewer, larger kernels: capture the step in a CUDA graph (cudaGraphLaunch; "
             "torch.compile(mode=\"reduce-overhead\")), fuse elementwise kernels, raise the "
             "batch size");
}

/* GPU idle while the feeding thread ran host code in stretches of
 * GPU_SHORT_NS or more, less what the syncs before them explain
 * (sync_per_iteration's) and the set-up before the first step (a one-off,
 * the STEPS line's). Only from the GPU's own timeline: the host's lower
 * bound (GPU FEED) cannot tell host work the GPU waited for from host work
 * it overlapped, and other rules already read its gaps. */
static uint64_t host_share(const struct ctx *x, const struct feed_proc *fp)
{
    const struct gpu_proc *gp = measured(x, fp->proc);
    uint64_t h, other;

    if (!x->m->proc[fp->proc].selected || gp == NULL)
        return 0;
    h = gp->by[GH_HOST_CODE];
    other = gp->host_short_ns + gp->sync_loss_ns + gp->setup_host_ns;
    return h > other ? gpu_estimate(gp, h - other) : 0;
}

/* The process's longest idle stretch spent on host code, NULL if none. */
static const struct gpu_stretch *host_stretch(const struct ctx *x, uint32_t proc,
                                              const struct gpu_dev **dev)
{
    for (uint32_t i = 0; x->g && i < x->g->nd; i++) {
        const struct gpu_dev *d = &x->g->d[i];
        if (d->proc != proc || d->host_top.t1_ns == 0 || d->host_top.thr == M_NONE)
            continue;
        *dev = d;
        return &d->host_top;
    }
    return NULL;
}

static void host_text(struct finding *f, uint64_t own, uint32_t nw);
static void host_lower_bound(struct ctx *x, struct finding *f, const struct feed_proc *fp,
                             uint32_t nw);

void chains_f_host(struct ctx *x)
{
    const struct model *m = x->m;
    const struct feed_proc *worst = NULL;
    const struct gpu_proc *gp;
    const struct gpu_stretch *st;
    const struct gpu_dev *dev = NULL;
    struct finding *f;
    uint64_t own;
    uint32_t nw;
    char a[32], b[32], how[200];

    for (uint32_t i = 0; i < x->f->np; i++) {
        const struct feed_proc *fp = &x->f->p[i];
        if (m->proc[fp->proc].selected &&
            (!worst || host_share(x, fp) > host_share(x, worst)))
            worst = fp;
    }
    if (worst == NULL)
        return;
    gp = measured(x, worst->proc);
    nw = count_role(m, M_ROLE_WORKER, m->proc[worst->proc].run);
    f = fnew(x, C_HOST, 0);
    own = f->impact_ns;
    if (gp == NULL) {
        host_lower_bound(x, f, worst, nw);
        return;
    }
    jaddf(f->evidence, "GPU idle %s while the CUDA thread ran host code outside CUDA calls, in "
                       "idle stretches of %s or more (%s)",
          fmt_ns(a, 32, own), fmt_ns(b, 32, GPU_SHORT_NS), basis(gp, how, sizeof(how)));
    jaddf(f->evidence, "GPU busy %.0f %% of the covered time; its idle time by what the feeding "
                       "thread did: host code %.0f %%, launches %.0f %%, syncs %.0f %%, asleep "
                       "%.0f %%, preempted %.0f %%",
          pct(gp->busy_ns, gp->covered_ns), pct(gp->by[GH_HOST_CODE], gp->idle_ns),
          pct(gp->by[GH_LAUNCH], gp->idle_ns), pct(gp->by[GH_SYNC], gp->idle_ns),
          pct(gp->by[GH_SLEEP] + gp->by[GH_SLEEP_PIPE], gp->idle_ns),
          pct(gp->by[GH_PREEMPT], gp->idle_ns));
    if (nw == 0)
        jaddf(f->evidence, "no worker process: the data, if any, is loaded in the main process");
    if (gp->setup_host_ns) {
        uint64_t lo, hi, su = gpu_estimate(gp, gp->setup_host_ns);
        procs_active_window(m, worst->proc, &lo, &hi);
        if (x->g->setup.end_ns > lo && su > x->g->setup.end_ns - lo)
            su = x->g->setup.end_ns - lo; /* scaled from a few slices: no more than it lasted */
        jaddf(f->evidence, "not counted: %s of GPU idle on host code before the first step "
                           "(set-up, once a run: see steps.setup)",
              fmt_ns(a, 32, su));
    }
    host_text(f, own, nw);
    snprintf(f->cuda, sizeof(f->cuda), "GPU busy %.0f %% (%s)", pct(gp->busy_ns, gp->covered_ns),
             gpu_source_name(gp->source));
    if ((st = host_stretch(x, worst->proc, &dev)) != NULL) {
        const struct m_proc *p = &m->proc[worst->proc];
        f->timeline = json_array();
        chains_tl_add(f->timeline, m, p->run, st->t0_ns, "[CUDA]",
                      "GPU %u of %s (pid %u) ran out of work", dev->device, p->comm, p->pid);
        chains_tl_host(f->timeline, m, st->thr, st->t0_ns, st->t1_ns);
        chains_tl_add(f->timeline, m, p->run, st->t0_ns, "[HOST]",
                      "%s tid %u ran host code; the GPU waited %s", p->comm, m->thr[st->thr].tid,
                      fmt_ns(a, 32, st->t1_ns - st->t0_ns));
        chains_tl_add(f->timeline, m, p->run, st->t1_ns, "[CUDA]", "next GPU work started");
        f->timeline = chains_tl_sorted(f->timeline);
    }
}

/* host_bound's summary, host link and fix. */
static void host_text(struct finding *f, uint64_t own, uint32_t nw)
{
    char a[32];

    snprintf(f->summary, sizeof(f->summary), "host-bound: the GPU waited %s while the CUDA "
             "thread computed on the CPU between its launches (Python, data loading or "
             "preprocessing in the main thread)", fmt_ns(a, 32, own));
    snprintf(f->host, sizeof(f->host), "CUDA thread on CPU outside CUDA calls %s while the GPU "
             "waited", fmt_ns(a, 32, own));
    if (nw == 0)
        snprintf(f->rec, sizeof(f->rec),
                 "move data loading and preprocessing out of the training loop's thread: "
                 "DataLoader(num_workers > 0, pin_memory=True, persistent_workers=True), or do "
                 "the preprocessing on the GPU; overlap what is left with GPU work (no sync "
                 "before it), or capture the step in a CUDA graph (torch.compile)");
    else
        snprintf(f->rec, sizeof(f->rec),
                 "the main thread's own work between steps keeps the GPU waiting although %u "
                 "workers feed it: move it (metrics, logging, Python bookkeeping) off the "
                 "step's critical path, overlap it with GPU work (no sync before it), or "
                 "capture the step in a CUDA graph (torch.compile(mode=\"reduce-overhead\"))",
                 nw);
}

/* host_bound without GPU activity: host code between a sync's return and
 * the next enqueue, when the GPU is known to have had nothing. */
static void host_lower_bound(struct ctx *x, struct finding *f, const struct feed_proc *fp,
                             uint32_t nw)
{
    char a[32], b[32];

    jaddf(f->evidence, "GPU idle %s while the CUDA thread ran host code between a sync's return "
                       "and its next enqueue (host lower bound: no GPU activity recorded)",
          fmt_ns(a, 32, f->impact_ns));
    jaddf(f->evidence, "%" PRIu64 " such gaps, GPU idle >= %s in all",
          fp->gaps, fmt_ns(b, 32, fp->idle_ns));
    if (nw == 0)
        jaddf(f->evidence, "no worker process: the data, if any, is loaded in the main process");
    host_text(f, f->impact_ns, nw);
    snprintf(f->cuda, sizeof(f->cuda), "GPU idle >= %s after syncs", fmt_ns(a, 32, fp->idle_ns));
    (void)x;
}

static int any_above_low(const struct ctx *x)
{
    for (int k = 0; k < C_COUNT; k++)
        if (x->fnd[k].evidence && chains_severity(x->fnd[k].impact_lo_ns, x->wall_ns) > CHAIN_LOW)
            return 1;
    return 0;
}

/* Healthy, seen on the GPU: busy 90 % of the covered time or more. */
static void f_gpu_measured(struct ctx *x, uint64_t busy, uint64_t covered)
{
    struct finding *f;

    if (busy * 10 < covered * 9 || any_above_low(x))
        return;
    f = fnew(x, C_GPU, 0);
    jaddf(f->evidence, "GPU busy %.1f %% of the time GPU activity covered (%s)",
          pct(busy, covered), gpu_source_name(x->g->source));
    jaddf(f->evidence, "no host cause above the thresholds (preemption %.1f %%, D-state %.1f %% "
                       "of the active window)",
          pct(contention(x, 0) + contention(x, 1), x->wall_ns), pct(x->run_disk, x->wall_ns));
    snprintf(f->summary, sizeof(f->summary), "GPU-bound: the GPU is busy %.0f %% of the time; "
             "the host keeps it fed", pct(busy, covered));
    snprintf(f->host, sizeof(f->host), "the host keeps the GPU fed");
    snprintf(f->cuda, sizeof(f->cuda), "GPU busy %.0f %% (%s)", pct(busy, covered),
             gpu_source_name(x->g->source));
    snprintf(f->rec, sizeof(f->rec),
             "nothing to fix on the host: profile the kernels (Nsight Compute, nsys) — mixed "
             "precision, larger fused kernels, better occupancy");
}

/* Healthy: the host mostly waits for the GPU and is otherwise on CPU. */
void chains_f_gpu(struct ctx *x)
{
    const struct model *m = x->m;
    uint64_t sync = 0, busy = 0, covered = 0;
    const struct feed_proc *worst = NULL;
    struct finding *f;
    char a[32];

    for (uint32_t i = 0; i < x->f->np; i++) {
        const struct gpu_proc *gp = measured(x, x->f->p[i].proc);
        if (gp && m->proc[gp->proc].selected)
            busy += gp->busy_ns, covered += gp->covered_ns;
    }
    if (covered) {
        f_gpu_measured(x, busy, covered);
        return;
    }

    for (uint32_t i = 0; i < x->f->np; i++) {
        const struct feed_proc *fp = &x->f->p[i];
        if (!m->proc[fp->proc].selected)
            continue;
        sync += fp->sync_ns;
        if (!worst || fp->sync_ns > worst->sync_ns)
            worst = fp;
    }
    if (worst == NULL || sync * 10 < x->wall_ns * 4 || any_above_low(x))
        return;
    f = fnew(x, C_GPU, 0);
    jaddf(f->evidence, "%s (%.0f %% of the active window) in synchronisation, waiting for the GPU",
          fmt_ns(a, 32, sync), pct(sync, x->wall_ns));
    jaddf(f->evidence, "no host cause above the thresholds (preemption %.1f %%, worker waits, "
                       "D-state %.1f %% of the active window)",
          pct(contention(x, 0) + contention(x, 1), x->wall_ns), pct(x->run_disk, x->wall_ns));
    snprintf(f->summary, sizeof(f->summary), "GPU-bound: the host spends %.0f %% of the run "
             "waiting for the GPU and is on CPU otherwise", pct(sync, x->wall_ns));
    snprintf(f->host, sizeof(f->host), "host waits %s in syncs for the GPU", fmt_ns(a, 32, sync));
    snprintf(f->cuda, sizeof(f->cuda), "the GPU sets the pace (%.0f %% of the active window in syncs)",
             pct(sync, x->wall_ns));
    snprintf(f->rec, sizeof(f->rec),
             "nothing to fix on the host: profile the kernels (Nsight Compute, nsys) — mixed "
             "precision, larger fused kernels, better occupancy");
}

/* DataLoader workers started anew (each epoch, persistent_workers=False):
 * the feeding thread waited for each worker's first batch. */
void chains_f_start(struct ctx *x)
{
    const struct model *m = x->m;
    uint32_t nw = 0, late = 0, run = 0;
    uint64_t first_step = x->ac->steps && x->ac->steps->n ? x->ac->steps->s[0].t_start_ns : 0;
    struct finding *f = fnew(x, C_START, 0);
    char a[32];

    for (uint32_t p = 0; p < m->nproc; p++) {
        if (m->proc[p].role != M_ROLE_WORKER || !m->proc[p].selected)
            continue;
        nw++;
        late += first_step && m->proc[p].start_ns > first_step;
        run = m->proc[p].run;
    }
    jaddf(f->evidence, "GPU idle %s while the feeding thread waited for the first batch of a "
                       "worker process (its start-up: fork, imports, dataset set-up)",
          fmt_ns(a, 32, f->impact_ns));
    jaddf(f->evidence, "%u worker process(es) in the run, %u of them started after the first "
                       "step", nw, late);
    snprintf(f->summary, sizeof(f->summary), "data-loader workers are started anew during the "
             "run (%u of %u after the first step): the GPU waited %s for their first batches",
             late, nw, fmt_ns(a, 32, f->impact_ns));
    snprintf(f->host, sizeof(f->host), "%u worker start-ups, %s waiting for first batches", late,
             fmt_ns(a, 32, f->impact_ns));
    snprintf(f->rec, sizeof(f->rec),
             "keep the workers between epochs: DataLoader(persistent_workers=True); make the "
             "workers' start cheap (no dataset loading in __init__ or worker_init_fn, "
             "multiprocessing_context='fork'); more workers do not help this");
    (void)run;
}
