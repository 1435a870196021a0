/* model/procs.c: per-process breakdown and roles (procs.h). A process that made
 * CUDA calls is cuda_main; a process descending from one that never calls
 * CUDA is a worker (DataLoader workers), unless it is torch.compile's
 * compiler pool or below it; the rest are other. */
#include <stdio.h>
#include <string.h>

#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "procs.h"

const char *procs_role_name(int role)
{
    return role == M_ROLE_CUDA_MAIN ? "cuda_main" : role == M_ROLE_WORKER ? "worker" : "other";
}

const char *procs_label(const struct model *m, uint32_t p, char *buf, size_t n)
{
    if (p == M_NONE)
        snprintf(buf, n, "?");
    else
        snprintf(buf, n, "%s (pid %u)", m->proc[p].comm, m->proc[p].pid);
    return buf;
}

const char *procs_comm(const struct model *m, uint32_t run, uint32_t pid)
{
    uint32_t p = model_find_proc(m, run, pid);
    return p == M_NONE ? "?" : m->proc[p].comm;
}

static void add_pwin(struct model *m)
{
    for (uint64_t i = 0; i < m->npwin; i++) {
        const struct cs_rec_pwin *w = &m->pwin[i];
        struct m_proc_stats *s = &m->proc[w->pid].st;
        s->oncpu_ns += w->oncpu_ns;
        s->sleep_ns += w->sleep_ns;
        s->disk_ns += w->disk_ns;
        s->preempt_ns += w->preempt_ns;
        s->runq_ns += w->runq_ns;
        s->vcsw += w->vcsw;
        s->ivcsw += w->ivcsw;
        s->migrations += w->migrations;
        s->page_allocs += w->page_allocs;
        s->minflt += w->minflt;
        s->majflt += w->majflt;
        s->npwin++;
    }
}

/* Without pwin windows (a tier without counters) the off-CPU split comes
 * from the intervals, summed while loading (model.c off_totals). */
static void off_fallback(struct model *m)
{
    for (uint32_t i = 0; i < m->nproc; i++) {
        struct m_proc_stats *s = &m->proc[i].st;
        if (m->proc[i].npwin)
            continue;
        s->sleep_ns = s->off_sleep_ns;
        s->disk_ns = s->off_disk_ns;
        s->preempt_ns = s->off_preempt_ns;
        s->runq_ns = s->off_runq_ns;
        s->vcsw = s->off_vol;
        s->ivcsw = s->off_invol;
    }
}

/* A process of torch.compile's compiler pool (torch/_inductor/compile_worker,
 * which its forked children's command lines keep): it compiles kernels and
 * wakes the CUDA thread with their code, but delivers no batches. */
static int is_compiler(const struct model *m, const struct m_proc *p)
{
    const char *c = p->cmdline_id ? cs_run_string(m->runs[p->run].run, p->cmdline_id) : NULL;

    return c && (strstr(c, "_inductor/compile_worker") || strstr(c, "_inductor.compile_worker"));
}

/* Workers: the descendants of a CUDA process, up to it, none of them a
 * compiler pool's process. */
static void set_roles(struct model *m)
{
    for (uint32_t i = 0; i < m->nproc; i++) {
        struct m_proc *p = &m->proc[i];
        p->role = (p->has_cuda || (p->flags & CS_PF_CUDA)) ? M_ROLE_CUDA_MAIN : M_ROLE_OTHER;
    }
    for (uint32_t i = 0; i < m->nproc; i++) {
        struct m_proc *p = &m->proc[i];
        if (p->role == M_ROLE_CUDA_MAIN || is_compiler(m, p))
            continue;
        for (uint32_t a = p->parent, d = 0; a != M_NONE && d < 4096; a = m->proc[a].parent, d++) {
            if (m->proc[a].role == M_ROLE_CUDA_MAIN) {
                p->role = M_ROLE_WORKER;
                break;
            }
            if (is_compiler(m, &m->proc[a]))
                break;
        }
    }
}


static int is_init(const struct m_call *c)
{
    return cs_api_table[c->api].family == CS_FAM_INIT;
}

static int gives_work(const struct m_call *c)
{
    enum cs_family f = cs_api_table[c->api].family;
    return f == CS_FAM_LAUNCH || f == CS_FAM_COPY || f == CS_FAM_MEMSET;
}

/* Calls that neither give the GPU work, wait for it nor manage its memory:
 * device queries, module and library unloads, context teardown. Those after
 * the last other call are the program's exit (the interpreter unloading
 * CUDA's libraries), not part of its active window. */
static int is_teardown(const struct m_call *c)
{
    enum cs_family f = cs_api_table[c->api].family;
    return f == CS_FAM_OTHER || f == CS_FAM_MODULE || f == CS_FAM_INIT;
}

/* The end of process @p p's start-up: the last exit of a cuInit or context
 * creation that began before @p first_work, its first launch, copy or
 * memset (a second device initialised later does not move it); 0 when it
 * has none. A thread's calls are in entry order: each walk stops early. */
static uint64_t init_end(const struct model *m, uint32_t p, uint64_t first_work)
{
    uint64_t end = 0;

    for (uint32_t t = 0; t < m->nthr; t++) {
        const struct m_thread *th = &m->thr[t];
        for (uint64_t i = th->first_call; th->proc == p && i < th->first_call + th->ncalls; i++) {
            const struct m_call cv = model_call(m, i), *c = &cv;
            if (c->t_enter_ns >= first_work)
                break;
            if (is_init(c) && c->t_exit_ns > end)
                end = c->t_exit_ns;
        }
    }
    return end;
}

/* Outermost call @p c of process @p p in its totals. */
static void add_call(struct m_proc *p, const struct m_call *c)
{
    if (c->flags & CS_CF_NESTED)
        return;
    p->has_cuda = 1;
    p->st.cuda_calls++;
    p->st.cuda_ns += model_dur(c);
    if (is_init(c))
        p->st.init_ns += model_dur(c);
}

/* Process @p p's active window (procs_active_window() says what it is) and
 * its calls' totals, from its calls: one pass over them (at scale, each
 * one more costs seconds) and the start of each thread's. */
static void active_of(struct model *m, uint32_t p, uint64_t *lo, uint64_t *hi)
{
    const struct m_run *r = &m->runs[m->proc[p].run];
    uint64_t ie, first_work = UINT64_MAX, last_any = 0;

    *lo = UINT64_MAX;
    *hi = 0;
    M_FOR_PROC_CALLS(m, p, t, i) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        add_call(&m->proc[p], c);
        if (gives_work(c) && c->t_enter_ns < first_work)
            first_work = c->t_enter_ns;
        if (!is_init(c) && !(c->flags & CS_CF_NESTED) && c->t_enter_ns < *lo)
            *lo = c->t_enter_ns;
        if (c->t_exit_ns > last_any)
            last_any = c->t_exit_ns;
        if (!is_teardown(c) && c->t_exit_ns > *hi)
            *hi = c->t_exit_ns;
    }
    if (*hi == 0)
        *hi = last_any;
    ie = init_end(m, p, first_work);
    if (ie != 0 && (*lo == UINT64_MAX || *lo < ie))
        *lo = ie;
    if (*lo < r->win_lo_ns)
        *lo = r->win_lo_ns;
    if (*hi > r->win_hi_ns)
        *hi = r->win_hi_ns;
    if (*hi < *lo)
        *hi = *lo;
}

void procs_compute(struct model *m)
{
    for (uint32_t p = 0; p < m->nproc; p++)
        active_of(m, p, &m->proc[p].active_lo_ns, &m->proc[p].active_hi_ns);
    add_pwin(m);
    off_fallback(m);
    set_roles(m); /* from has_cuda */
}

/* See procs.h: the window procs_compute() found. */
void procs_active_window(const struct model *m, uint32_t p, uint64_t *lo, uint64_t *hi)
{
    *lo = m->proc[p].active_lo_ns;
    *hi = m->proc[p].active_hi_ns;
}

double procs_win_sum(const struct model *m, uint32_t p, uint64_t t0, uint64_t t1,
                     enum procs_win what)
{
    const struct m_proc *pr = &m->proc[p];
    uint64_t end = pr->first_pwin + pr->npwin;
    double sum = 0;

    for (uint64_t i = model_pwin_after(m, p, t0); i < end && m->pwin[i].t_start_ns < t1; i++) {
        const struct cs_rec_pwin *w = &m->pwin[i];
        uint64_t len = w->t_end_ns - w->t_start_ns;
        double v = what == PW_FAULTS  ? (double)w->minflt + (double)w->majflt
                   : what == PW_ONCPU ? (double)w->oncpu_ns
                                      : (double)w->page_allocs;
        if (len)
            sum += v * (double)model_overlap(w->t_start_ns, w->t_end_ns, t0, t1) / (double)len;
    }
    return sum;
}

double procs_ext_share(const struct model *m, uint32_t run, uint32_t p, uint64_t t0,
                       uint64_t t1)
{
    uint64_t end = m->runs[run].first_sys + m->runs[run].nsys;
    double tree = 0, ext = 0, own = procs_win_sum(m, p, t0, t1, PW_ONCPU);

    for (uint64_t i = model_sys_after(m, run, t0); i < end && m->sys[i].t_start_ns < t1; i++) {
        const struct cs_rec_syswin *w = &m->sys[i];
        uint64_t len = w->t_end_ns - w->t_start_ns;
        double f = len ? (double)model_overlap(w->t_start_ns, w->t_end_ns, t0, t1) / (double)len
                       : 0.0;
        tree += f * (double)w->tree_oncpu_ns;
        ext += f * (double)w->ext_oncpu_ns;
    }
    tree = tree > own ? tree - own : 0;
    return tree + ext > 0 ? ext / (tree + ext) : -1.0;
}
