/* rules/chains.c: findings (chains.h). Two sources of evidence:
 *  - tails: each outlier call (>= p99 of a heavy-tailed API) is decomposed
 *    within its own [t_enter, t_exit] window, never over the whole run;
 *  - the run: preemption, D-state and worker waits of the CUDA threads, the
 *    GPU feed, copies, allocations, syncs and launches.
 * CPU contention counts both the CUDA threads' preemptions and their waits
 * in the run queue after a wake-up (runq records), each by its holder.
 * Each cause becomes at most one finding; its impact is the time it cost
 * (the excess, not the calls' whole duration), which sets the severity and
 * the order. Text is built here; report.c only lays it out. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "chains.h"
#include "cudaspy/api.h"
#include "cudaspy/runfile.h"
#include "model/procs.h"

#define MS 1000000ull
#define HOLDERS 16
#define fmt_ns chains_fmt_ns /* short names for their many uses here */
#define jaddf chains_jaddf
#define TOP_EX 3

enum cause {
    C_PIPE, C_TREE, C_EXT, C_PAGE, C_PAGEABLE, C_SYNC, C_CHURN, C_LAUNCH, C_IO, C_GPU, C_HOST,
    C_START, C_COUNT
};

static const char *const cause_names[C_COUNT] = {
    "data_pipeline_starvation", "cpu_contention_tree", "cpu_contention_external",
    "page_alloc_pressure", "pageable_memcpy", "sync_per_iteration", "alloc_churn",
    "launch_bound", "io_wait", "gpu_bound", "host_bound", "worker_startup"};

/* The account's cause (account.h) behind each finding: its impact is the
 * time the account's buckets of that cause hold; AC_NONE: not a view of
 * the account (page_alloc_pressure, read from outlier calls; gpu_bound). */
static const int cause_acct[C_COUNT] = {
    [C_PIPE] = AC_PIPE,     [C_TREE] = AC_TREE,   [C_EXT] = AC_EXT,       [C_PAGE] = AC_NONE,
    [C_PAGEABLE] = AC_PAGEABLE, [C_SYNC] = AC_SYNC, [C_CHURN] = AC_CHURN, [C_LAUNCH] = AC_LAUNCH,
    [C_IO] = AC_IO,         [C_GPU] = AC_NONE,    [C_HOST] = AC_HOST,     [C_START] = AC_START};

/* A process that held the CPU while a CUDA thread waited for it. */
struct holder {
    uint32_t run, pid, proc;
    uint64_t ns, n;
};

/* The calls that show a cause best: the most cause time first. */
struct examples {
    uint64_t call[TOP_EX];
    uint64_t ns[TOP_EX];
};

/* Outlier decomposition of one heavy-tailed API. */
struct tail {
    const struct stats_row *row;
    uint64_t n, out_ns, excess_ns;
    uint64_t cause_ns[C_COUNT]; /* C_TREE, C_EXT, C_PIPE (sleep woken by worker), C_IO, C_PAGE */
    uint64_t oncpu_ns, sleep_ns, other_ns;
    uint64_t busy_x_ns, busy_ns; /* syswin busy permille x overlap, overlap */
    uint64_t pa_hot_n, pa_win_allocs, pa_win_ns;
    struct examples ex[C_COUNT];
};

struct finding {
    int cause;
    uint64_t impact_ns;
    uint64_t impact_lo_ns, impact_hi_ns; /* 95 % interval (sampled GPU activity) */
    const struct tail *tail; /* the API whose tail this cause explains most, or NULL */
    const struct stats_row *row;
    json_t *evidence, *timeline, *examples;
    char summary[512], rec[640];
    char host[256]; /* the [HOST] link of the one-line chain */
    char cuda[256]; /* its [CUDA] link when no API row says it */
};

struct ctx {
    const struct model *m;
    struct stats_table *t;
    const struct feed *f;
    const struct gpu_truth *g;
    const struct account *ac;
    uint64_t wall_ns; /* severities' whole: the CUDA-active windows (or the
                         user's) less the set-up and the wind-down (analysis.c
                         steady_ns()) */
    struct tail *tails;
    uint64_t *pa_median; /* per process: page allocations per second, median window */
    struct holder holders[2][HOLDERS]; /* [0] tree, [1] outside; over the whole run */
    uint64_t run_pre[2], run_pre_n[2], run_disk, run_disk_n;
    uint64_t run_pre_anon[2]; /* preempted or kept waiting, no holder known */
    uint64_t run_wake[2], run_wake_n[2]; /* runnable after a wake-up, not running */
    struct examples run_ex[C_COUNT];
    struct finding fnd[C_COUNT];
};

/* ---- small helpers ---- */

const char *chains_fmt_ns(char *buf, size_t n, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, n, "%" PRIu64 " ns", ns);
    else if (ns < MS)
        snprintf(buf, n, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000 * MS)
        snprintf(buf, n, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.2f s", (double)ns / 1e9);
    return buf;
}

static const char *fmt_bw(char *buf, size_t n, uint64_t bytes, uint64_t ns);

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void chains_jaddf(json_t *arr, const char *fmt, ...)
{
    char buf[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_array_append_new(arr, json_string(buf));
}

uint64_t chains_rel(const struct model *m, uint32_t run, uint64_t t)
{
    uint64_t t0 = m->runs[run].t0_ns;
    return t > t0 ? t - t0 : 0;
}

void chains_tl_add(json_t *tl, const struct model *m, uint32_t run, uint64_t t, const char *layer,
                   const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    uint64_t r = chains_rel(m, run, t);

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_array_append_new(tl, json_pack("{s:I, s:f, s:s, s:s}", "t_ns", (json_int_t)r, "t_s",
                                        (double)r / 1e9, "layer", layer, "text", buf));
}

static void ex_keep(struct examples *e, uint64_t call, uint64_t ns)
{
    int i = TOP_EX;

    if (ns == 0)
        return;
    while (i > 0 && e->ns[i - 1] < ns) {
        if (i < TOP_EX) {
            e->ns[i] = e->ns[i - 1];
            e->call[i] = e->call[i - 1];
        }
        i--;
    }
    if (i < TOP_EX) {
        e->ns[i] = ns;
        e->call[i] = call;
    }
}

static void holder_add(struct holder *h, uint32_t run, uint32_t pid, uint32_t proc, uint64_t ns)
{
    int small = 0;

    for (int i = 0; i < HOLDERS; i++) {
        if (h[i].n && h[i].run == run && h[i].pid == pid) {
            h[i].ns += ns;
            h[i].n++;
            return;
        }
        if (h[i].ns < h[small].ns)
            small = i;
    }
    if (h[small].n == 0 || h[small].ns < ns)
        h[small] = (struct holder){run, pid, proc, ns, 1};
}

static int cmp_holder(const void *a, const void *b)
{
    const struct holder *x = a, *y = b;
    return x->ns > y->ns ? -1 : x->ns < y->ns;
}

static const char *api_name(const struct m_call *c, char *buf, size_t n)
{
    return cs_api_display((enum cs_api)c->api, (enum cs_variant)c->variant, buf, n);
}

/* ---- outliers, each in its own window ---- */

/* Page allocations per second of each process's median pwin window. */
static int pa_medians(struct ctx *x)
{
    const struct model *m = x->m;
    uint64_t *v;

    x->pa_median = calloc(m->nproc + 1, sizeof(*x->pa_median));
    if (x->pa_median == NULL)
        return -1;
    for (uint32_t p = 0; p < m->nproc; p++) {
        const struct m_proc *pr = &m->proc[p];
        if (!pr->has_cuda || pr->npwin == 0)
            continue;
        if ((v = malloc(pr->npwin * sizeof(*v))) == NULL)
            return -1;
        for (uint64_t i = 0; i < pr->npwin; i++) {
            const struct cs_rec_pwin *w = &m->pwin[pr->first_pwin + i];
            uint64_t len = w->t_end_ns > w->t_start_ns ? w->t_end_ns - w->t_start_ns : 1;
            v[i] = (uint64_t)((double)w->page_allocs * 1e9 / (double)len);
        }
        stats_sort(v, pr->npwin, NULL);
        x->pa_median[p] = stats_rank(v, pr->npwin, 500);
        free(v);
    }
    return 0;
}

static double pa_in(const struct model *m, uint32_t p, uint64_t t0, uint64_t t1)
{
    return procs_win_sum(m, p, t0, t1, PW_PAGES);
}

static void sys_in(const struct model *m, uint32_t run, uint64_t t0, uint64_t t1, uint64_t *bx,
                   uint64_t *bn)
{
    uint64_t end = m->runs[run].first_sys + m->runs[run].nsys;

    for (uint64_t i = model_sys_after(m, run, t0); i < end && m->sys[i].t_start_ns < t1; i++) {
        uint64_t d = model_overlap(m->sys[i].t_start_ns, m->sys[i].t_end_ns, t0, t1);
        *bx += d * m->sys[i].busy_permille;
        *bn += d;
    }
}

static void outlier(struct ctx *x, struct tail *tl, uint64_t ci)
{
    const struct model *m = x->m;
    const struct m_call *c = &m->call[ci];
    const struct m_thread *th = &m->thr[c->thr];
    const struct m_proc *p = &m->proc[th->proc];
    uint64_t t0 = c->t_enter_ns, t1 = c->t_exit_ns, dur = t1 - t0, off = 0;
    uint64_t cz[C_COUNT] = {0}, end = th->first_off + th->noff;

    tl->n++;
    tl->out_ns += dur;
    tl->excess_ns += dur > tl->row->s.p50_ns ? dur - tl->row->s.p50_ns : 0;
    for (uint64_t i = model_off_after(m, c->thr, t0); i < end && m->off[i].t_start_ns < t1; i++) {
        const struct m_off *o = &m->off[i];
        uint64_t d = model_overlap(o->t_start_ns, o->t_end_ns, t0, t1);
        off += d;
        if (o->cls == CS_OFF_PREEMPT) {
            cz[(o->flags & CS_HF_HOLDER_IN_TREE) ? C_TREE : C_EXT] += d;
        } else if (o->cls == CS_OFF_DISK) {
            cz[C_IO] += d;
        } else if (o->cls == CS_OFF_SLEEP || o->cls == CS_OFF_BLOCKED) {
            tl->sleep_ns += d;
            if (feed_pipeline_waker(m, c->thr, o))
                cz[C_PIPE] += d;
        } else {
            tl->other_ns += d;
        }
    }
    tl->oncpu_ns += dur > off ? dur - off : 0;
    sys_in(m, p->run, t0, t1, &tl->busy_x_ns, &tl->busy_ns);
    if (p->npwin && dur) {
        double a = pa_in(m, th->proc, t0, t1), rate = a * 1e9 / (double)dur;
        tl->pa_win_allocs += (uint64_t)a;
        tl->pa_win_ns += dur;
        if (a >= 64 && rate >= 4.0 * (double)x->pa_median[th->proc]) {
            tl->pa_hot_n++;
            cz[C_PAGE] = dur > off ? dur - off : 0; /* allocation work is done on CPU */
        }
    }
    for (int k = 0; k < C_COUNT; k++) {
        tl->cause_ns[k] += cz[k];
        ex_keep(&tl->ex[k], ci, cz[k]);
    }
    ex_keep(&tl->ex[C_GPU], ci, dur); /* C_GPU slot: worst calls overall */
}

static int heavy(const struct analysis_opts *o, struct stats_row *r)
{
    if (r->is_nested || r->s.count < o->tail_min_calls || r->s.p50_ns == 0)
        return 0;
    return (double)r->s.p99_ns >= o->tail_ratio * (double)r->s.p50_ns;
}

static int tails(struct ctx *x)
{
    const struct model *m = x->m;

    x->tails = calloc(x->t->nrow + 1, sizeof(*x->tails));
    if (x->tails == NULL || pa_medians(x) < 0)
        return -1;
    for (uint32_t i = 0; i < x->t->nrow; i++) {
        struct stats_row *r = &x->t->row[i];
        r->p99_gate = heavy(&m->opts, r) ? r->s.p99_ns : 0;
        x->tails[i].row = r;
    }
    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call *c = &m->call[i];
        const struct stats_row *r;
        if (c->flags & CS_CF_NESTED || !m->proc[m->thr[c->thr].proc].selected)
            continue;
        r = stats_table_row(x->t, c);
        if (r && r->p99_gate && model_dur(c) >= r->p99_gate)
            outlier(x, &x->tails[r - x->t->row], i);
    }
    return 0;
}

/* ---- the whole run: CUDA threads' preemption and D-state ---- */

/* Index of the call of thread @p t running at @p ts, or M_NONE-ish ~0. */
static uint64_t call_at(const struct model *m, uint32_t t, uint64_t ts)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t lo = M_FIRST_GT(struct m_call, m->call, t_enter_ns, th->first_call,
                             th->first_call + th->ncalls, ts); /* first call entered after ts */
    for (uint64_t i = lo; i > th->first_call; i--) { /* outermost call containing ts */
        const struct m_call *c = &m->call[i - 1];
        if (c->t_exit_ns > ts && !(c->flags & CS_CF_NESTED))
            return i - 1;
        if (ts - c->t_enter_ns > 10000 * MS)
            break;
    }
    return ~0ull;
}

static void run_host(struct ctx *x)
{
    const struct model *m = x->m;

    for (uint32_t t = 0; t < m->nthr; t++) {
        const struct m_thread *th = &m->thr[t];
        const struct m_proc *p = &m->proc[th->proc];
        const struct m_run *r = &m->runs[p->run];
        if (th->ncalls == 0 || !p->selected)
            continue;
        for (uint64_t i = th->first_off; i < th->first_off + th->noff; i++) {
            const struct m_off *o = &m->off[i];
            uint64_t d = model_overlap(o->t_start_ns, o->t_end_ns, r->win_lo_ns, r->win_hi_ns);
            uint64_t ci;
            int k;
            if (o->cls == CS_OFF_DISK) {
                x->run_disk += d;
                x->run_disk_n++;
                if ((ci = call_at(m, t, o->t_start_ns)) != ~0ull)
                    ex_keep(&x->run_ex[C_IO], ci, d);
                continue;
            }
            if (o->cls != CS_OFF_PREEMPT)
                continue;
            k = (o->flags & CS_HF_HOLDER_IN_TREE) ? 0 : 1;
            x->run_pre[k] += d;
            x->run_pre_n[k]++;
            if (o->holder_pid)
                holder_add(x->holders[k], p->run, o->holder_pid,
                           model_find_proc(m, p->run, o->holder_pid), d);
            else
                x->run_pre_anon[k] += d;
            if ((ci = call_at(m, t, o->t_start_ns)) != ~0ull)
                ex_keep(&x->run_ex[k ? C_EXT : C_TREE], ci, d);
        }
    }
}

/* ---- the whole run: CUDA threads' wake-up delays ---- */

/* Whether thread @p t's off-CPU interval that ended at @p t_run was a
 * preemption: its run-queue wait is counted with the preemptions. */
static int ended_preempted(const struct model *m, uint32_t t, uint64_t t_run)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t i = model_off_after(m, t, t_run ? t_run - 1 : 0);

    return i < th->first_off + th->noff && m->off[i].t_start_ns <= t_run &&
           m->off[i].cls == CS_OFF_PREEMPT;
}

/* The outside process with the most CPU in the system window around
 * @p t, 0 if none. */
static uint32_t ext_top(const struct model *m, uint32_t run, uint64_t t)
{
    uint64_t i = model_sys_after(m, run, t);

    if (i < m->runs[run].first_sys + m->runs[run].nsys && m->sys[i].t_start_ns <= t)
        return m->sys[i].top_pid[0];
    return 0;
}

/* One run-queue wait: when a CUDA thread was woken (it sleeps in syncs,
 * pipes, locks) but other processes kept the CPUs, they cost it the wait
 * just as a preemption would. The wait is split between the tree and the
 * outside by their shares of the CPU meanwhile (system windows). Holders
 * named: in the tree, the process that ran on that CPU just before it
 * (prev_pid) when it is a tree process; outside, the outside process with
 * the most CPU in that window (prev_pid is often a short-lived kernel
 * thread or the sampler, not who kept the CPU); else unknown. */
static void wake_rec(struct ctx *x, uint32_t run, const struct cs_rec_runq *r)
{
    const struct model *m = x->m;
    const struct m_run *mr = &m->runs[run];
    uint64_t d = model_overlap(r->t_enqueue_ns, r->t_run_ns, mr->win_lo_ns, mr->win_hi_ns), ci;
    uint32_t p = model_find_proc(m, run, r->pid), t, hp;
    double share;

    if (d == 0 || p == M_NONE || !m->proc[p].selected)
        return;
    t = m_hash_get(m->thr_ix, (uint64_t)p << 32 | r->tid);
    if (t == M_NONE || m->thr[t].ncalls == 0 || ended_preempted(m, t, r->t_run_ns))
        return;
    hp = r->prev_pid ? model_find_proc(m, run, r->prev_pid) : M_NONE;
    share = procs_ext_share(m, run, p, r->t_enqueue_ns, r->t_run_ns);
    if (share < 0 && r->prev_pid == 0)
        return; /* no way to tell who had the CPU */
    if (share < 0)
        share = hp == M_NONE;
    ci = call_at(m, t, r->t_enqueue_ns);
    for (int k = 0; k < 2; k++) {
        uint64_t part = (uint64_t)((double)d * (k ? share : 1.0 - share));
        uint32_t who = k ? ext_top(m, run, r->t_run_ns) : hp != M_NONE ? r->prev_pid : 0;
        if (part == 0)
            continue;
        x->run_wake[k] += part;
        x->run_wake_n[k] += part * 2 >= d;
        if (who)
            holder_add(x->holders[k], run, who, k ? model_find_proc(m, run, who) : hp, part);
        else
            x->run_pre_anon[k] += part;
        if (ci != ~0ull)
            ex_keep(&x->run_ex[k ? C_EXT : C_TREE], ci, part);
    }
}

static int wake_block(uint32_t run, const void *recs, uint32_t n, void *arg)
{
    for (uint32_t i = 0; i < n; i++)
        wake_rec(arg, run, (const struct cs_rec_runq *)recs + i);
    return 0;
}

/* The runq records of every run (the model does not keep them). */
static void run_wake(struct ctx *x)
{
    model_scan(x->m, CS_REC_RUNQ, wake_block, x);
}

/* Contention of kind @p k (0 tree, 1 outside): preemptions + wake-up waits. */
static uint64_t contention(const struct ctx *x, int k)
{
    return x->run_pre[k] + x->run_wake[k];
}

/* ---- timelines and examples ---- */

static int cmp_tl(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "t_ns"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "t_ns"));
    return x < y ? -1 : x > y;
}

static json_t *tl_sorted(json_t *tl)
{
    size_t n = json_array_size(tl);
    json_t **v = malloc((n + 1) * sizeof(*v)), *out = json_array();

    for (size_t i = 0; v && i < n; i++)
        v[i] = json_incref(json_array_get(tl, i));
    if (v)
        qsort(v, n, sizeof(*v), cmp_tl);
    for (size_t i = 0; v && i < n; i++)
        json_array_append_new(out, v[i]);
    free(v);
    json_decref(tl);
    return out;
}

static void tl_system(json_t *tl, const struct model *m, uint32_t run, uint64_t t0, uint64_t t1)
{
    uint64_t end = m->runs[run].first_sys + m->runs[run].nsys, bx = 0, bn = 0, ext = 0;
    uint32_t top = 0, running = 0;
    uint64_t top_ns = 0, first = 0;

    for (uint64_t i = model_sys_after(m, run, t0); i < end && m->sys[i].t_start_ns < t1; i++) {
        const struct cs_rec_syswin *s = &m->sys[i];
        uint64_t d = model_overlap(s->t_start_ns, s->t_end_ns, t0, t1);
        if (bn == 0)
            first = s->t_start_ns;
        bx += d * s->busy_permille;
        bn += d;
        ext += s->ext_oncpu_ns;
        running = s->procs_running > running ? s->procs_running : running;
        if (s->top_pid[0] && s->top_ns[0] > top_ns) {
            top = s->top_pid[0];
            top_ns = s->top_ns[0];
        }
    }
    if (bn == 0)
        return;
    char a[32], b[32];
    chains_tl_add(tl, m, run, first > t0 ? first : t0, "[SYSTEM]",
           "CPU %.0f %% busy on %u CPUs, %u runnable; outside the tree %s of CPU (most: pid %u, "
           "%s)",
           (double)bx / (double)bn / 10.0, m->runs[run].ncpu, running, fmt_ns(a, 32, ext), top,
           fmt_ns(b, 32, top_ns));
}

static void tl_host(json_t *tl, const struct model *m, uint32_t thr, uint64_t t0, uint64_t t1)
{
    const struct m_thread *th = &m->thr[thr];
    const struct m_proc *p = &m->proc[th->proc];
    uint64_t end = th->first_off + th->noff;
    int shown = 0;
    char a[32], who[64];

    for (uint64_t i = model_off_after(m, thr, t0); i < end && m->off[i].t_start_ns < t1; i++) {
        const struct m_off *o = &m->off[i];
        uint64_t d = model_overlap(o->t_start_ns, o->t_end_ns, t0, t1);
        uint32_t other = o->cls == CS_OFF_PREEMPT ? o->holder_pid : o->waker_pid;
        if (shown++ == 6)
            break;
        if (model_find_proc(m, p->run, other) == M_NONE)
            snprintf(who, sizeof(who), "pid %u (%s)", other,
                     o->cls == CS_OFF_PREEMPT && !(o->flags & CS_HF_HOLDER_IN_TREE)
                         ? "outside the tree" : "not in the process table");
        else if (o->cls != CS_OFF_PREEMPT && other == p->pid && o->waker_tid)
            snprintf(who, sizeof(who), "%s (pid %u tid %u)", procs_comm(m, p->run, other), other,
                     o->waker_tid);
        else
            snprintf(who, sizeof(who), "%s (pid %u)", procs_comm(m, p->run, other), other);
        if (o->cls == CS_OFF_PREEMPT)
            chains_tl_add(tl, m, p->run, o->t_start_ns, "[HOST]",
                   "%s tid %u preempted %s; CPU held by %s", p->comm, th->tid,
                   fmt_ns(a, 32, d), other ? who : "an unknown process");
        else if (o->cls == CS_OFF_DISK)
            chains_tl_add(tl, m, p->run, o->t_start_ns, "[HOST]",
                   "%s tid %u in uninterruptible sleep (D) %s", p->comm, th->tid,
                   fmt_ns(a, 32, d));
        else
            chains_tl_add(tl, m, p->run, o->t_start_ns, "[HOST]", "%s tid %u asleep %s; woken by %s",
                   p->comm, th->tid, fmt_ns(a, 32, d), other ? who : "an unknown thread");
    }
}

static void tl_call(json_t *tl, const struct model *m, uint64_t ci, const struct stats_row *row)
{
    const struct m_call *c = &m->call[ci];
    const struct m_proc *p = model_call_proc(m, c);
    char n[96], a[32], b[32];

    chains_tl_add(tl, m, p->run, c->t_enter_ns, "[CUDA]", "%s entered (pid %u tid %u)",
           api_name(c, n, sizeof(n)), p->pid, m->thr[c->thr].tid);
    if (row && row->s.p50_ns)
        chains_tl_add(tl, m, p->run, c->t_exit_ns, "[CUDA]", "%s returned after %s (%.0fx p50 %s)", n,
               fmt_ns(a, 32, model_dur(c)), (double)model_dur(c) / (double)row->s.p50_ns,
               fmt_ns(b, 32, row->s.p50_ns));
    else
        chains_tl_add(tl, m, p->run, c->t_exit_ns, "[CUDA]", "%s returned after %s", n,
               fmt_ns(a, 32, model_dur(c)));
}

/* Did run @p run count its page allocations from minor faults (the
 * sampler's default since 2026-11-29)? Then they are its faults too. */
static int pages_from_faults(const struct model *m, uint32_t run)
{
    const char *src = cs_run_meta(m->runs[run].run, "host_page_source");

    return src && strcmp(src, "minor-faults") == 0;
}

/* Page allocations of the call's process during the call, when notable. */
static void tl_pages(json_t *tl, const struct ctx *x, const struct m_call *c)
{
    const struct model *m = x->m;
    uint32_t p = m->thr[c->thr].proc;
    uint64_t dur = model_dur(c);
    double a = dur && m->proc[p].npwin ? pa_in(m, p, c->t_enter_ns, c->t_exit_ns) : 0;
    double rate = dur ? a * 1e9 / (double)dur : 0;

    if (a < 64)
        return;
    if (pages_from_faults(m, m->proc[p].run)) /* the same count twice: say it once */
        chains_tl_add(tl, m, m->proc[p].run, c->t_enter_ns, "[HOST]",
               "%s (pid %u) took %.0f page faults during the call (%.0f per second, %.1fx its "
               "median rate)", m->proc[p].comm, m->proc[p].pid, a, rate,
               x->pa_median[p] ? rate / (double)x->pa_median[p] : 0.0);
    else
        chains_tl_add(tl, m, m->proc[p].run, c->t_enter_ns, "[HOST]",
               "%s (pid %u) allocated %.0f pages during the call (%.0f per second, %.1fx its "
               "median rate) and took %.0f page faults", m->proc[p].comm, m->proc[p].pid, a, rate,
               x->pa_median[p] ? rate / (double)x->pa_median[p] : 0.0,
               procs_win_sum(m, p, c->t_enter_ns, c->t_exit_ns, PW_FAULTS));
}

/* The full timeline around the worst example call: system, host, CUDA. */
static json_t *tl_for_call(const struct ctx *x, const struct stats_table *t, uint64_t ci)
{
    const struct model *m = x->m;
    json_t *tl = json_array();
    const struct m_call *c = &m->call[ci];

    tl_system(tl, m, model_call_proc(m, c)->run, c->t_enter_ns, c->t_exit_ns);
    tl_pages(tl, x, c);
    tl_host(tl, m, c->thr, c->t_enter_ns, c->t_exit_ns);
    tl_call(tl, m, ci, stats_table_row(t, c));
    return tl_sorted(tl);
}

/* What thread of call @p ci did in its window, in a few words. */
static void call_note(const struct model *m, uint64_t ci, char *buf, size_t n)
{
    struct feed_split s = {0};
    const struct m_call *c = &m->call[ci];
    char a[32], b[32], d[32], e[32];

    feed_split_add(&s, m, c->thr, c->t_enter_ns, c->t_exit_ns);
    snprintf(buf, n, "on CPU %s, preempted %s, asleep %s, D %s", fmt_ns(a, 32, s.oncpu_ns),
             fmt_ns(b, 32, s.preempt_ns), fmt_ns(d, 32, s.sleep_ns), fmt_ns(e, 32, s.disk_ns));
    if (model_bytes(c) && cs_api_table[c->api].family == CS_FAM_COPY) {
        size_t l = strlen(buf);
        char bw[32];
        snprintf(buf + l, n - l, "; %.1f MiB %s at %s", (double)model_bytes(c) / 1048576.0,
                 c->flags & CS_CF_PAGEABLE ? "pageable" : c->flags & CS_CF_PINNED ? "pinned" : "",
                 fmt_bw(bw, sizeof(bw), model_bytes(c), model_dur(c)));
    }
}

static json_t *ex_json(const struct model *m, const struct examples *e)
{
    json_t *arr = json_array();
    char n[96], note[256];

    for (int i = 0; i < TOP_EX && e->ns[i]; i++) {
        const struct m_call *c = &m->call[e->call[i]];
        const struct m_proc *p = model_call_proc(m, c);
        uint64_t r = chains_rel(m, p->run, c->t_enter_ns);
        call_note(m, e->call[i], note, sizeof(note));
        json_array_append_new(
            arr, json_pack("{s:I, s:f, s:I, s:s, s:i, s:i, s:I, s:s}", "t_ns", (json_int_t)r, "t_s",
                           (double)r / 1e9, "dur_ns", (json_int_t)model_dur(c), "api",
                           api_name(c, n, sizeof(n)), "pid", (int)p->pid, "tid",
                           (int)m->thr[c->thr].tid, "cause_ns", (json_int_t)e->ns[i], "note",
                           note));
    }
    return arr;
}

/* A GPU-idle gap as an example: the enqueue it delayed, the gap's length. */
static json_t *gap_json(const struct model *m, const struct feed_gap *g)
{
    const struct m_call *c = &m->call[g->next_call];
    const struct m_proc *p = model_call_proc(m, c);
    uint64_t r = chains_rel(m, p->run, g->t0_ns);
    struct feed_split s = {0};
    char n[96], note[256], a[32], b[32], d[32];
    int top = 0;

    feed_split_add(&s, m, c->thr, g->t0_ns, g->t1_ns);
    for (int i = 1; i < FEED_WAKERS; i++)
        top = s.waker[i].ns > s.waker[top].ns ? i : top;
    snprintf(note, sizeof(note), "GPU idle %s before this enqueue: asleep %s, woken by %s (pid %u); "
             "on CPU %s", fmt_ns(a, 32, g->t1_ns - g->t0_ns), fmt_ns(b, 32, s.sleep_ns),
             s.waker[top].proc == M_NONE ? "?" : m->proc[s.waker[top].proc].comm,
             s.waker[top].pid, fmt_ns(d, 32, s.oncpu_ns));
    return json_pack("{s:I, s:f, s:I, s:s, s:i, s:i, s:I, s:s}", "t_ns", (json_int_t)r, "t_s",
                     (double)r / 1e9, "dur_ns", (json_int_t)(g->t1_ns - g->t0_ns), "api",
                     api_name(c, n, sizeof(n)), "pid", (int)p->pid, "tid",
                     (int)m->thr[c->thr].tid, "cause_ns", (json_int_t)g->sleep_worker_ns, "note",
                     note);
}

/* ---- findings ---- */

/* A view of the account: what its cause owns, with its interval. */
static uint64_t owned(const struct ctx *x, int cause, uint64_t *lo, uint64_t *hi)
{
    return account_cause(x->ac, cause_acct[cause], lo, hi);
}

/* A new finding; a view of the account gets the account's impact, the
 * others @p impact. */
static struct finding *fnew(struct ctx *x, int cause, uint64_t impact)
{
    struct finding *f = &x->fnd[cause];

    f->cause = cause;
    f->impact_ns = f->impact_lo_ns = f->impact_hi_ns = impact;
    if (cause_acct[cause] != AC_NONE)
        f->impact_ns = owned(x, cause, &f->impact_lo_ns, &f->impact_hi_ns);
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

static void f_tree(struct ctx *x)
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

static void f_ext(struct ctx *x)
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

static void f_io(struct ctx *x)
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

static void f_page(struct ctx *x)
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

static void f_pipe(struct ctx *x)
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
        const struct m_call *c = &m->call[g->next_call];
        if (i == 0) {
            tl_system(f->timeline, m, model_call_proc(m, c)->run, g->t0_ns, g->t1_ns);
            tl_call(f->timeline, m, g->drain_call, NULL);
            tl_host(f->timeline, m, c->thr, g->t0_ns, g->t1_ns);
            chains_tl_add(f->timeline, m, model_call_proc(m, c)->run, c->t_enter_ns, "[CUDA]",
                   "%s: next enqueue, GPU idle %s since the sync returned", api_name(c, a, 32),
                   fmt_ns(b, 32, g->t1_ns - g->t0_ns));
        }
        json_array_append_new(f->examples, gap_json(m, g));
    }    f->timeline = tl_sorted(f->timeline);
}

/* Bandwidth of @p bytes in @p ns, in GB/s or MB/s. */
static const char *fmt_bw(char *buf, size_t n, uint64_t bytes, uint64_t ns)
{
    double gbs = ns ? (double)bytes / (double)ns : 0.0;

    if (gbs >= 1.0)
        snprintf(buf, n, "%.2f GB/s", gbs);
    else
        snprintf(buf, n, "%.1f MB/s", gbs * 1e3);
    return buf;
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
static void f_pageable(struct ctx *x)
{
    const struct model *m = x->m;
    uint64_t pg_b = 0, pg_ns = 0, pg_cpu = 0, pg_n = 0, pin_b = 0, pin_ns = 0, ex_ = 0;
    uint64_t pg_cpu_sync = 0;
    struct examples e = {{0}, {0}};
    struct finding *f;
    char a[32], b[32], d[32], n[96];

    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call *c = &m->call[i];
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
            ex_keep(&e, i, sp.oncpu_ns);
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
    f->row = e.ns[0] ? stats_table_row(x->t, &m->call[e.call[0]]) : NULL;
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
    f->examples = ex_json(m, &e);
    if (e.ns[0])
        f->timeline = tl_for_call(x, x->t, e.call[0]);
}

static int is_churn_api(unsigned api)
{
    int fam = cs_api_table[api].family;
    return fam == CS_FAM_ALLOC || fam == CS_FAM_FREE;
}

static void f_churn(struct ctx *x)
{
    const struct model *m = x->m;
    uint64_t na = 0, nf = 0, ns = 0, bytes = 0;
    struct examples e = {{0}, {0}};
    struct finding *f;
    char a[32];
    double secs = (double)x->wall_ns / 1e9;

    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call *c = &m->call[i];
        if (c->flags & CS_CF_NESTED || !is_churn_api(c->api) || !model_call_proc(m, c)->selected)
            continue;
        if (cs_api_table[c->api].family == CS_FAM_ALLOC) {
            na++;
            bytes += model_bytes(c);
        } else {
            nf++;
        }
        ns += model_dur(c);
        ex_keep(&e, i, model_dur(c));
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
    f->row = e.ns[0] ? stats_table_row(x->t, &m->call[e.call[0]]) : NULL;
    snprintf(f->summary, sizeof(f->summary), "device memory is allocated and freed %.0f times "
             "per second, %s in the allocator", (double)(na + nf) / secs, fmt_ns(a, 32, ns));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " allocations + %" PRIu64 " frees, %.0f per "
             "second", na, nf, (double)(na + nf) / secs);
    snprintf(f->rec, sizeof(f->rec),
             "allocate once and reuse the buffers across steps, or use the stream-ordered "
             "allocator (cudaMallocAsync/cudaFreeAsync with a memory pool) or a caching "
             "allocator; in PyTorch avoid torch.cuda.empty_cache() in the loop");
    f->examples = ex_json(m, &e);
    if (e.ns[0])
        f->timeline = tl_for_call(x, x->t, e.call[0]);
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

static void f_sync(struct ctx *x)
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
        json_t *one = ex_json(m, &e);
        json_array_extend(f->examples, one);
        json_decref(one);
    }
    if (worst->longest[0].t1_ns) {
        const struct feed_gap *g = &worst->longest[0];
        const struct m_call *c = &m->call[g->next_call];
        f->timeline = json_array();
        tl_call(f->timeline, m, g->drain_call, stats_table_row(x->t, &m->call[g->drain_call]));
        chains_tl_add(f->timeline, m, model_call_proc(m, c)->run, c->t_enter_ns, "[CUDA]",
               "%s enqueued after the GPU sat idle %s", api_name(c, a, 32),
               fmt_ns(b, 32, g->t1_ns - g->t0_ns));
        f->timeline = tl_sorted(f->timeline);
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

static void f_launch(struct ctx *x)
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

static void f_host(struct ctx *x)
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
        tl_host(f->timeline, m, st->thr, st->t0_ns, st->t1_ns);
        chains_tl_add(f->timeline, m, p->run, st->t0_ns, "[HOST]",
                      "%s tid %u ran host code; the GPU waited %s", p->comm, m->thr[st->thr].tid,
                      fmt_ns(a, 32, st->t1_ns - st->t0_ns));
        chains_tl_add(f->timeline, m, p->run, st->t1_ns, "[CUDA]", "next GPU work started");
        f->timeline = tl_sorted(f->timeline);
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
static void f_gpu(struct ctx *x)
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
static void f_start(struct ctx *x)
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

/* ---- assembly ---- */

/* Average system CPU busy (permille) over @p m's windows, -1 if none. */
static int run_busy(const struct model *m)
{
    uint64_t bx = 0, bn = 0;

    for (uint64_t i = 0; i < m->nsys; i++) {
        uint64_t d = m->sys[i].t_end_ns - m->sys[i].t_start_ns;
        bx += d * m->sys[i].busy_permille;
        bn += d;
    }
    return bn ? (int)(bx / bn) : -1;
}

/* The chain in one line, as the seed put it ("CPU 100 % -> 1,880 switches ->
 * cudaMemcpyAsync 301 ms -> cudaStreamSync 42 ms"): system, host, CUDA. */
static void chain_line(const struct ctx *x, const struct finding *f, char *buf, size_t n)
{
    const struct stats_row *r = f->row;
    int busy = f->tail && f->tail->busy_ns
                   ? (int)(f->tail->busy_x_ns / f->tail->busy_ns)
                   : run_busy(x->m);
    size_t l = 0;
    char a[32], b[32], name[96];

    buf[0] = '\0';
    if (busy >= 0)
        l += (size_t)snprintf(buf, n, "[SYSTEM] CPU %d %% busy%s -> ", (busy + 5) / 10,
                              f->tail && f->tail->busy_ns ? " during the slow calls" : "");
    if (l < n)
        l += (size_t)snprintf(buf + l, n - l, "[HOST] %s", f->host);
    if (!r && f->cuda[0] && l < n)
        snprintf(buf + l, n - l, " -> [CUDA] %s", f->cuda);
    if (r && l < n)
        snprintf(buf + l, n - l, " -> [CUDA] %s p99 %s (%.1fx p50 %s)",
                 stats_row_name(r, name, sizeof(name)), fmt_ns(a, 32, r->s.p99_ns),
                 r->s.p50_ns ? (double)r->s.p99_ns / (double)r->s.p50_ns : 0.0,
                 fmt_ns(b, 32, r->s.p50_ns));
}


/* The account's buckets the finding's impact is made of. */
static json_t *owns_json(int cause)
{
    json_t *arr = json_array();

    for (int b = 0; cause_acct[cause] != AC_NONE && b < AB_COUNT; b++)
        if (account_owner(b) == cause_acct[cause])
            json_array_append_new(arr, json_string(account_bucket_name(b)));
    return arr;
}

/* What a finding's share is of: the window less the once-a-run parts. */
static const char *share_of(const struct account *ac)
{
    int su = ac->ns[AB_SETUP] > 0, wd = ac->ns[AB_WIND_DOWN] > 0;

    return su && wd ? "the active window between the set-up and the wind-down"
           : su     ? "the active window after the set-up"
           : wd     ? "the active window before the wind-down"
                    : "the active window";
}

/* What the step would be without the cause: its owned time taken out of
 * each measured step (account_whatif), the mean (throughput) and the
 * median; else, with fewer than 3 measured steps, both shortened by the
 * impact's share of the window. null without steps. */
static json_t *whatif_json(const struct ctx *x, const struct finding *f)
{
    struct acct_whatif w = {0};
    uint64_t n = x->ac->nstep;
    const char *how = "steps";
    char a[32], b[32], c[32], d[32], line[200];

    if (cause_acct[f->cause] == AC_NONE || n == 0)
        return json_null();
    if (!account_whatif(x->ac, cause_acct[f->cause], &w)) {
        uint64_t *dur = malloc(n * sizeof(*dur)), sum = 0;
        double keep = x->wall_ns ? 1.0 - (double)f->impact_ns / (double)x->wall_ns : 1.0;
        if (dur == NULL)
            return json_null();
        steps_durations(x->ac->steps, dur);
        for (uint64_t i = 0; i < n; i++)
            sum += dur[i];
        w.p50_ns = dur[(n - 1) / 2];
        w.mean_ns = sum / n;
        free(dur);
        w.p50_fixed_ns = (uint64_t)((double)w.p50_ns * keep);
        w.mean_fixed_ns = (uint64_t)((double)w.mean_ns * keep);
        w.steps = n;
        how = "window";
    }
    double gain = w.mean_ns ? 100.0 * (double)(w.mean_ns - w.mean_fixed_ns) / (double)w.mean_ns : 0;
    snprintf(line, sizeof(line), "if fixed: step mean %s -> %s (-%.*f %%), p50 %s -> %s",
             fmt_ns(a, 32, w.mean_ns), fmt_ns(b, 32, w.mean_fixed_ns), gain < 10 ? 1 : 0, gain,
             fmt_ns(c, 32, w.p50_ns), fmt_ns(d, 32, w.p50_fixed_ns));
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:s}", "step_mean_ns", (json_int_t)w.mean_ns,
                     "step_mean_fixed_ns", (json_int_t)w.mean_fixed_ns, "step_p50_ns",
                     (json_int_t)w.p50_ns, "step_p50_fixed_ns", (json_int_t)w.p50_fixed_ns,
                     "steps", (json_int_t)w.steps, "from", how, "text", line);
}

static json_t *finding_json(const struct ctx *x, const struct finding *f)
{
    const struct model *m = x->m;
    const struct stats_row *r = f->row;
    char n[96] = "";
    json_t *ex = f->examples, *tl = f->timeline;

    if (ex == NULL) {
        const struct examples *e = f->tail ? &f->tail->ex[f->cause] : &x->run_ex[f->cause];
        if (f->tail == NULL && e->ns[0] == 0)
            e = &x->run_ex[f->cause];
        ex = ex_json(m, e);
        if (tl == NULL && e->ns[0])
            tl = tl_for_call(x, x->t, e->call[0]);
    } else {
        json_incref(ex);
    }
    if (tl == NULL)
        tl = json_array();
    else if (tl == f->timeline)
        json_incref(tl);
    if (r)
        stats_row_name(r, n, sizeof(n));
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:I, s:f, s:f, s:s, s:O, s:o, s:o, s:s}", "severity",
        chains_sev_name(f->cause == C_GPU ? CHAIN_LOW : chains_severity(f->impact_lo_ns, x->wall_ns)),
        "cause", cause_names[f->cause], "api", n, "count", (json_int_t)(r ? r->s.count : 0),
        "p50_ns", (json_int_t)(r ? r->s.p50_ns : 0), "p99_ns", (json_int_t)(r ? r->s.p99_ns : 0),
        "ratio", r && r->s.p50_ns ? (double)r->s.p99_ns / (double)r->s.p50_ns : 0.0, "impact_ns",
        (json_int_t)f->impact_ns, "impact_pct", pct(f->impact_ns, x->wall_ns), "outlier_share",
        f->tail && f->tail->out_ns ? (double)f->tail->cause_ns[f->cause] / (double)f->tail->out_ns
                                   : 0.0,
        "summary", f->summary, "evidence", f->evidence, "timeline", tl, "examples", ex,
        "recommendation", f->rec);
    char line[768];
    chain_line(x, f, line, sizeof(line));
    json_object_set_new(o, "chain", json_string(line));
    json_object_set_new(o, "impact_lo_ns", json_integer((json_int_t)f->impact_lo_ns));
    json_object_set_new(o, "impact_hi_ns", json_integer((json_int_t)f->impact_hi_ns));
    json_object_set_new(o, "owns", owns_json(f->cause));
    json_object_set_new(o, "if_fixed", whatif_json(x, f));
    json_object_set_new(o, "share_of", json_string(share_of(x->ac)));
    return o;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct finding *x = *(const struct finding *const *)a;
    const struct finding *y = *(const struct finding *const *)b;
    if (x->impact_ns != y->impact_ns)
        return x->impact_ns > y->impact_ns ? -1 : 1;
    return x->cause - y->cause;
}

/* Causes below this share of the active window are not reported (gpu_bound aside). */
static int worth(const struct ctx *x, uint64_t ns)
{
    return ns > 0 && ns * 200 >= x->wall_ns; /* 0.5 % */
}

/* page_alloc_pressure is read from outlier calls, not the account: it
 * gets at most what the account's findings leave of the window, so that
 * the impacts never add up past it. */
static void page_cap(struct ctx *x)
{
    struct finding *f = &x->fnd[C_PAGE];
    uint64_t taken = 0;

    if (f->evidence == NULL)
        return;
    for (int k = 0; k < C_COUNT; k++)
        if (x->fnd[k].evidence && cause_acct[k] != AC_NONE)
            taken += x->fnd[k].impact_ns;
    if (f->impact_ns + taken > x->wall_ns)
        f->impact_ns = x->wall_ns > taken ? x->wall_ns - taken : 0;
    f->impact_lo_ns = f->impact_hi_ns = f->impact_ns;
}

json_t *chains_build(const struct model *m, struct stats_table *t, const struct feed *f,
                     const struct gpu_truth *g, const struct account *ac, uint64_t wall_ns)
{
    struct ctx *x = calloc(1, sizeof(*x));
    struct finding *order[C_COUNT];
    json_t *arr = json_array();
    int n = 0;

    if (x == NULL || arr == NULL)
        goto out;
    x->m = m;
    x->t = t;
    x->f = f;
    x->g = g;
    x->ac = ac;
    x->wall_ns = wall_ns;
    if (tails(x) < 0)
        goto out;
    run_host(x);
    run_wake(x);
    for (int k = 0; k < 2; k++)
        qsort(x->holders[k], HOLDERS, sizeof(x->holders[k][0]), cmp_holder);
    for (int k = 0; k < C_COUNT; k++) {
        static void (*const build[C_COUNT])(struct ctx *) = {
            [C_PIPE] = f_pipe, [C_TREE] = f_tree,     [C_EXT] = f_ext,     [C_PAGEABLE] = f_pageable,
            [C_SYNC] = f_sync, [C_CHURN] = f_churn,   [C_LAUNCH] = f_launch, [C_IO] = f_io,
            [C_HOST] = f_host, [C_START] = f_start};
        if (build[k] && worth(x, owned(x, k, NULL, NULL)))
            build[k](x);
    }
    f_page(x);
    page_cap(x);
    for (int k = 0; k < C_COUNT; k++) {
        struct finding *fd = &x->fnd[k];
        if (fd->evidence && !worth(x, fd->impact_ns)) {
            json_decref(fd->evidence);
            json_decref(fd->examples);
            json_decref(fd->timeline);
            memset(fd, 0, sizeof(*fd));
        }
    }
    f_gpu(x);
    for (int k = 0; k < C_COUNT; k++)
        if (x->fnd[k].evidence)
            order[n++] = &x->fnd[k];
    qsort(order, (size_t)n, sizeof(order[0]), cmp_finding);
    for (int i = 0; i < n && (m->opts.top <= 0 || i < m->opts.top); i++)
        json_array_append_new(arr, finding_json(x, order[i]));
out:
    if (x) {
        for (int k = 0; k < C_COUNT; k++) {
            json_decref(x->fnd[k].evidence);
            json_decref(x->fnd[k].examples);
            json_decref(x->fnd[k].timeline);
        }
        free(x->tails);
        free(x->pa_median);
        free(x);
    }
    return arr;
}

const char *chains_sev_name(int sev)
{
    return sev == CHAIN_HIGH ? "HIGH" : sev == CHAIN_MEDIUM ? "MEDIUM" : "LOW";
}

int chains_severity(uint64_t impact_ns, uint64_t wall_ns)
{
    if (wall_ns == 0)
        return CHAIN_LOW;
    if (impact_ns * 10 >= wall_ns)
        return CHAIN_HIGH;
    if (impact_ns * 50 >= wall_ns)
        return CHAIN_MEDIUM;
    return CHAIN_LOW;
}
