/* rules/chains_evidence.c: the evidence findings are made of. Two sources:
 *  - tails: each outlier call (>= p99 of a heavy-tailed API) is decomposed
 *    within its own [t_enter, t_exit] window, never over the whole run;
 *  - the run: preemption, D-state and worker waits of the CUDA threads, the
 *    GPU feed, copies, allocations, syncs and launches.
 * CPU contention counts both the CUDA threads' preemptions and their waits
 * in the run queue after a wake-up (runq records), each by its holder. Also
 * the timelines and examples a finding shows. Findings: chains_findings.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chains.h"
#include "chains_priv.h"
#include "cudaspy/api.h"
#include "cudaspy/runfile.h"
#include "fmt.h"
#include "model/procs.h"

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

void chains_ex_keep(struct examples *e, uint64_t call, uint64_t ns)
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

int chains_cmp_holder(const void *a, const void *b)
{
    const struct holder *x = a, *y = b;
    return x->ns > y->ns ? -1 : x->ns < y->ns;
}

const char *chains_api_name(const struct m_call *c, char *buf, size_t n)
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
    const struct m_call cv = model_call(m, ci), *c = &cv;
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
        chains_ex_keep(&tl->ex[k], ci, cz[k]);
    }
    chains_ex_keep(&tl->ex[C_GPU], ci, dur); /* C_GPU slot: worst calls overall */
}

static int heavy(const struct analysis_opts *o, struct stats_row *r)
{
    if (r->is_nested || r->s.count < o->tail_min_calls || r->s.p50_ns == 0)
        return 0;
    return (double)r->s.p99_ns >= o->tail_ratio * (double)r->s.p50_ns;
}

int chains_tails(struct ctx *x)
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
        const struct m_call cv = model_call(m, i), *c = &cv;
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
    uint64_t lo = model_call_search(m, th->first_call, th->first_call + th->ncalls, ts,
                                    1); /* first call entered after ts */
    for (uint64_t i = lo; i > th->first_call; i--) { /* outermost call containing ts */
        const struct m_call cv = model_call(m, i - 1), *c = &cv;
        if (c->t_exit_ns > ts && !(c->flags & CS_CF_NESTED))
            return i - 1;
        if (ts - c->t_enter_ns > 10000 * MS)
            break;
    }
    return ~0ull;
}

void chains_run_host(struct ctx *x)
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
                    chains_ex_keep(&x->run_ex[C_IO], ci, d);
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
                chains_ex_keep(&x->run_ex[k ? C_EXT : C_TREE], ci, d);
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
    struct cs_rec_runq q = *r; /* on the model's clock (clocks.h) */

    q.t_enqueue_ns = clocks_time(m, run, r->t_enqueue_ns);
    q.t_run_ns = clocks_time(m, run, r->t_run_ns);
    r = &q;
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
            chains_ex_keep(&x->run_ex[k ? C_EXT : C_TREE], ci, part);
    }
}

static int wake_block(uint32_t run, const void *recs, uint32_t n, void *arg)
{
    for (uint32_t i = 0; i < n; i++)
        wake_rec(arg, run, (const struct cs_rec_runq *)recs + i);
    return 0;
}

/* The runq records of every run (the model does not keep them). */
void chains_run_wake(struct ctx *x)
{
    model_scan(x->m, CS_REC_RUNQ, wake_block, x);
}

/* Contention of kind @p k (0 tree, 1 outside): preemptions + wake-up waits. */
uint64_t contention(const struct ctx *x, int k)
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

json_t *chains_tl_sorted(json_t *tl)
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

void chains_tl_system(json_t *tl, const struct model *m, uint32_t run, uint64_t t0, uint64_t t1)
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

void chains_tl_host(json_t *tl, const struct model *m, uint32_t thr, uint64_t t0, uint64_t t1)
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
            chains_tl_add(tl, m, p->run, o->t_start_ns, "[HOST]",
                          "%s tid %u asleep %s; woken by %s",
                   p->comm, th->tid, fmt_ns(a, 32, d), other ? who : "an unknown thread");
    }
}

void chains_tl_call(json_t *tl, const struct model *m, uint64_t ci, const struct stats_row *row)
{
    const struct m_call cv = model_call(m, ci), *c = &cv;
    const struct m_proc *p = model_call_proc(m, c);
    char n[96], a[32], b[32];

    chains_tl_add(tl, m, p->run, c->t_enter_ns, "[CUDA]", "%s entered (pid %u tid %u)",
           chains_api_name(c, n, sizeof(n)), p->pid, m->thr[c->thr].tid);
    if (row && row->s.p50_ns)
        chains_tl_add(tl, m, p->run, c->t_exit_ns, "[CUDA]",
                      "%s returned after %s (%.0fx p50 %s)", n,
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
json_t *chains_tl_for_call(const struct ctx *x, const struct stats_table *t, uint64_t ci)
{
    const struct model *m = x->m;
    json_t *tl = json_array();
    const struct m_call cv = model_call(m, ci), *c = &cv;

    chains_tl_system(tl, m, model_call_proc(m, c)->run, c->t_enter_ns, c->t_exit_ns);
    tl_pages(tl, x, c);
    chains_tl_host(tl, m, c->thr, c->t_enter_ns, c->t_exit_ns);
    chains_tl_call(tl, m, ci, stats_table_row(t, c));
    return chains_tl_sorted(tl);
}

/* What thread of call @p ci did in its window, in a few words. */
static void call_note(const struct model *m, uint64_t ci, char *buf, size_t n)
{
    struct feed_split s = {0};
    const struct m_call cv = model_call(m, ci), *c = &cv;
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

json_t *chains_ex_json(const struct model *m, const struct examples *e)
{
    json_t *arr = json_array();
    char n[96], note[256];

    for (int i = 0; i < TOP_EX && e->ns[i]; i++) {
        const struct m_call cv = model_call(m, e->call[i]), *c = &cv;
        const struct m_proc *p = model_call_proc(m, c);
        uint64_t r = chains_rel(m, p->run, c->t_enter_ns);
        call_note(m, e->call[i], note, sizeof(note));
        json_array_append_new(
            arr, json_pack("{s:I, s:f, s:I, s:s, s:i, s:i, s:I, s:s}", "t_ns", (json_int_t)r, "t_s",
                           (double)r / 1e9, "dur_ns", (json_int_t)model_dur(c), "api",
                           chains_api_name(c, n, sizeof(n)), "pid", (int)p->pid, "tid",
                           (int)m->thr[c->thr].tid, "cause_ns", (json_int_t)e->ns[i], "note",
                           note));
    }
    return arr;
}

/* A GPU-idle gap as an example: the enqueue it delayed, the gap's length. */
json_t *chains_gap_json(const struct model *m, const struct feed_gap *g)
{
    const struct m_call cv = model_call(m, g->next_call), *c = &cv;
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
                     chains_api_name(c, n, sizeof(n)), "pid", (int)p->pid, "tid",
                     (int)m->thr[c->thr].tid, "cause_ns", (json_int_t)g->sleep_worker_ns, "note",
                     note);
}
