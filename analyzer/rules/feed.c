/* rules/feed.c: GPU feed (feed.h). Walks each CUDA process's outermost calls in
 * time order (its threads merged), tracking per stream whether work is
 * queued; a drain (stream or device sync, synchronous copy) that leaves
 * nothing queued starts a known-idle gap that the next enqueue ends. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "feed.h"
#include "model/procs.h"
#include "model/qsel.h"
#include "model/stats.h"

/* ---- what a thread did in an interval ---- */

static void waker_add(struct feed_split *s, uint32_t proc, uint32_t pid, uint64_t ns)
{
    int small = 0;

    for (int i = 0; i < FEED_WAKERS; i++) {
        if (s->waker[i].ns && s->waker[i].pid == pid && s->waker[i].proc == proc) {
            s->waker[i].ns += ns;
            return;
        }
        if (s->waker[i].ns < s->waker[small].ns)
            small = i;
    }
    /* full: the smallest entry gives way (top-k is approximate past k wakers) */
    if (s->waker[small].ns < ns || s->waker[small].ns == 0)
        s->waker[small] = (struct feed_waker){proc, pid, ns};
}

int feed_pipeline_waker(const struct model *m, uint32_t thr, const struct m_off *o)
{
    const struct m_thread *th = &m->thr[thr];
    uint32_t w;

    if (o->waker_pid == 0)
        return 0;
    w = model_find_proc(m, m->proc[th->proc].run, o->waker_pid);
    if (w == M_NONE)
        return 0;
    if (m->proc[w].role == M_ROLE_WORKER)
        return 1;
    return w == th->proc && o->waker_tid && o->waker_tid != th->tid;
}

void feed_split_add(struct feed_split *s, const struct model *m, uint32_t thr, uint64_t t0,
                    uint64_t t1)
{
    const struct m_thread *th = &m->thr[thr];
    const struct m_proc *p = &m->proc[th->proc];
    uint64_t end = th->first_off + th->noff, off = 0;

    for (uint64_t i = model_off_after(m, thr, t0); i < end && m->off[i].t_start_ns < t1; i++) {
        const struct m_off *o = &m->off[i];
        uint64_t d = model_overlap(o->t_start_ns, o->t_end_ns, t0, t1);
        off += d;
        if (o->cls == CS_OFF_PREEMPT) {
            s->preempt_ns += d;
        } else if (o->cls == CS_OFF_DISK) {
            s->disk_ns += d;
        } else if (o->cls == CS_OFF_SLEEP || o->cls == CS_OFF_BLOCKED) {
            uint32_t w = o->waker_pid ? model_find_proc(m, p->run, o->waker_pid) : M_NONE;
            s->sleep_ns += d;
            if (feed_pipeline_waker(m, thr, o))
                s->sleep_worker_ns += d;
            if (o->waker_pid)
                waker_add(s, w, o->waker_pid, d);
        } else {
            s->other_ns += d;
        }
    }
    s->oncpu_ns += (t1 - t0) > off ? (t1 - t0) - off : 0;
}

/* ---- per-process walk ---- */

struct walk_stream {
    uint64_t stream;
    uint32_t fs;        /* index in feed.s */
    int pending;        /* work queued since the last drain */
    uint64_t drained_at;
};

struct walk {
    struct feed *f;
    const struct model *m;
    struct feed_proc *fp;
    struct walk_stream *st;
    uint32_t nst, cap;
    uint32_t pending;       /* streams with queued work */
    uint64_t idle_since;    /* context drained at, 0 = not known idle */
    uint64_t drain_call;    /* the call that drained it */
    uint64_t ci;            /* the call step() is at */
    int any_enqueue;
};

static struct walk_stream *walk_stream(struct walk *w, uint64_t stream)
{
    for (uint32_t i = 0; i < w->nst; i++)
        if (w->st[i].stream == stream)
            return &w->st[i];
    if (w->nst == w->cap) {
        uint32_t cap = w->cap ? w->cap * 2 : 8;
        void *q = realloc(w->st, cap * sizeof(*w->st));
        if (q == NULL)
            return NULL;
        w->st = q;
        w->cap = cap;
    }
    if (w->f->ns == w->f->cap_s) {
        uint32_t cap = w->f->cap_s ? w->f->cap_s * 2 : 16;
        void *q = realloc(w->f->s, cap * sizeof(*w->f->s));
        if (q == NULL)
            return NULL;
        w->f->s = q;
        w->f->cap_s = cap;
    }
    memset(&w->f->s[w->f->ns], 0, sizeof(w->f->s[0]));
    w->f->s[w->f->ns].proc = w->fp->proc;
    w->f->s[w->f->ns].stream = stream;
    w->st[w->nst] = (struct walk_stream){stream, w->f->ns++, 0, 0};
    return &w->st[w->nst++];
}

static void gap_add(uint64_t *idle, uint64_t *gaps, uint64_t *max, uint64_t *max_at, uint64_t t0,
                    uint64_t t1)
{
    *idle += t1 - t0;
    (*gaps)++;
    if (t1 - t0 > *max) {
        *max = t1 - t0;
        *max_at = t0;
    }
}

static void drain(struct walk *w, struct walk_stream *s, uint64_t t)
{
    if (s->pending) {
        s->pending = 0;
        w->pending--;
        w->f->s[s->fs].drains++;
    }
    s->drained_at = t;
}

static void after_drain(struct walk *w, const struct m_call *c)
{
    if (w->pending == 0 && w->any_enqueue && w->idle_since == 0) {
        w->idle_since = c->t_exit_ns;
        w->drain_call = w->ci;
    }
}

/* Keeps the @p n largest gaps by @p key, largest first. */
static void top_gap(struct feed_gap *top, const struct feed_gap *g, int by_sleep)
{
    uint64_t k = by_sleep ? g->sleep_worker_ns : g->t1_ns - g->t0_ns;
    int i = FEED_TOP_GAPS;

    if (by_sleep && k == 0)
        return;
    while (i > 0) {
        const struct feed_gap *p = &top[i - 1];
        uint64_t pk = by_sleep ? p->sleep_worker_ns : p->t1_ns - p->t0_ns;
        if (p->t1_ns && pk >= k)
            break;
        if (i < FEED_TOP_GAPS)
            top[i] = top[i - 1];
        i--;
    }
    if (i < FEED_TOP_GAPS)
        top[i] = *g;
}

/* Keeps gap @p g for rules/pyline.c and rules/account.c. @return 0 or -ENOMEM */
static int gap_keep(struct feed *f, const struct feed_gap *g)
{
    if (f->ngap == f->cap_gap) {
        uint64_t cap = f->cap_gap ? f->cap_gap * 2 : 256;
        struct feed_gap *q = realloc(f->gap, cap * sizeof(*q));
        if (q == NULL)
            return -ENOMEM;
        f->gap = q;
        f->cap_gap = cap;
    }
    f->gap[f->ngap++] = *g;
    return 0;
}

static int ctx_gap(struct walk *w, const struct m_call *c)
{
    struct feed_proc *fp = w->fp;
    struct feed_gap g = {w->idle_since, c->t_enter_ns, w->drain_call, w->ci, 0};
    uint64_t before = fp->split.sleep_worker_ns;

    gap_add(&fp->idle_ns, &fp->gaps, &fp->max_gap_ns, &fp->max_gap_at_ns, g.t0_ns, g.t1_ns);
    fp->short_gaps += g.t1_ns - g.t0_ns < 1000000;
    fp->relaunch_ns += model_dur(c);
    feed_split_add(&fp->split, w->m, c->thr, g.t0_ns, g.t1_ns);
    fp->gap_incall_ns += model_calls_inside(w->m, c->thr, g.t0_ns, g.t1_ns);
    g.sleep_worker_ns = fp->split.sleep_worker_ns - before;
    top_gap(fp->longest, &g, 0);
    top_gap(fp->starved, &g, 1);
    return gap_keep(w->f, &g);
}

static int enqueue(struct walk *w, const struct m_call *c)
{
    struct walk_stream *s = walk_stream(w, c->stream);
    struct feed_stream *fs;

    if (s == NULL)
        return -ENOMEM;
    fs = &w->f->s[s->fs];
    fs->enqueues++;
    if (!s->pending && s->drained_at && c->t_enter_ns > s->drained_at)
        gap_add(&fs->idle_ns, &fs->gaps, &fs->max_gap_ns, &fs->max_gap_at_ns, s->drained_at,
                c->t_enter_ns);
    if (w->idle_since && c->t_enter_ns > w->idle_since && ctx_gap(w, c) < 0)
        return -ENOMEM;
    w->idle_since = 0;
    w->any_enqueue = 1;
    if (!s->pending) {
        s->pending = 1;
        w->pending++;
    }
    s->drained_at = 0;
    if (cs_api_table[c->api].is_sync) { /* synchronous copy or memset */
        drain(w, s, c->t_exit_ns);
        after_drain(w, c);
    }
    return 0;
}

static int is_ctx_sync(unsigned api)
{
    return api == CS_API_cuCtxSynchronize || api == CS_API_cuCtxSynchronize_v2 ||
           api == CS_API_cudaDeviceSynchronize;
}

static int is_stream_sync(unsigned api)
{
    return api == CS_API_cuStreamSynchronize || api == CS_API_cudaStreamSynchronize;
}

static int step(struct walk *w, const struct m_call *c)
{
    const struct cs_api_info *in = &cs_api_table[c->api];
    struct feed_proc *fp = w->fp;

    if (in->family == CS_FAM_LAUNCH || in->family == CS_FAM_COPY || in->family == CS_FAM_MEMSET) {
        if (c->flags & CS_CF_CAPTURING)
            return 0;
        fp->enqueues++;
        if (fp->busy_first_ns == 0)
            fp->busy_first_ns = c->t_enter_ns;
        if (in->family == CS_FAM_LAUNCH) {
            fp->launches++;
            fp->launch_ns += model_dur(c);
        }
        return enqueue(w, c);
    }
    if (in->family != CS_FAM_SYNC || !in->is_sync)
        return 0;
    fp->syncs++;
    fp->sync_ns += model_dur(c);
    if (is_ctx_sync(c->api)) {
        for (uint32_t i = 0; i < w->nst; i++)
            drain(w, &w->st[i], c->t_exit_ns);
    } else if (is_stream_sync(c->api)) {
        struct walk_stream *s = walk_stream(w, c->stream);
        if (s == NULL)
            return -ENOMEM;
        drain(w, s, c->t_exit_ns);
    } else {
        return 0;
    }
    after_drain(w, c);
    return 0;
}

/* Merges the process's threads by t_enter: a CUDA process has few calling
 * threads, so picking the smallest head each step is cheap. */
static int walk_proc(struct walk *w, const uint32_t *thr, uint32_t nthr, uint64_t *pos)
{
    for (;;) {
        struct m_call best = {0};
        uint32_t bi = M_NONE;
        for (uint32_t i = 0; i < nthr; i++) {
            const struct m_thread *t = &w->m->thr[thr[i]];
            if (pos[i] == t->first_call + t->ncalls)
                continue;
            const struct m_call c = model_call(w->m, pos[i]);
            if (bi == M_NONE || c.t_enter_ns < best.t_enter_ns) {
                best = c;
                bi = i;
            }
        }
        if (bi == M_NONE)
            return 0;
        w->ci = pos[bi]++;
        if (best.t_exit_ns > w->fp->busy_last_ns)
            w->fp->busy_last_ns = best.t_exit_ns;
        if (!(best.flags & CS_CF_NESTED) && step(w, &best) < 0)
            return -ENOMEM;
    }
}

/* One pass over the process's outermost launches: each duration into
 * @p dur, each launch-to-launch host gap into @p gap (the first
 * launches + 1 of each, in thread order, as the counts were made). */
static void launch_pass(const struct feed_proc *fp, const struct model *m, const uint32_t *thr,
                        uint32_t nthr, struct qsel *dur, struct qsel *gap)
{
    uint64_t nd = 0, ng = 0;

    for (uint32_t i = 0; i < nthr; i++) {
        const struct m_thread *t = &m->thr[thr[i]];
        uint64_t prev_exit = UINT64_MAX; /* the launch before, UINT64_MAX: none */
        for (uint64_t k = t->first_call; k < t->first_call + t->ncalls; k++) {
            const struct m_call cv = model_call(m, k), *c = &cv;
            if (c->flags & CS_CF_NESTED)
                continue;
            int is_launch = cs_api_table[c->api].family == CS_FAM_LAUNCH;
            if (is_launch && nd++ <= fp->launches)
                qsel_add(dur, model_dur(c));
            if (is_launch && prev_exit != UINT64_MAX && ng++ <= fp->launches)
                qsel_add(gap, c->t_enter_ns > prev_exit ? c->t_enter_ns - prev_exit : 0);
            prev_exit = is_launch ? c->t_exit_ns : UINT64_MAX;
        }
    }
}

/* Median launch duration and launch-to-launch host gap, per thread: exact,
 * from passes over the calls (model/qsel.h), nothing kept per launch. */
static int launch_medians(struct feed_proc *fp, const struct model *m, const uint32_t *thr,
                          uint32_t nthr)
{
    struct qsel dur, gap;
    int rc = qsel_init(&dur), kd = -1, kg = -1;

    if (rc == 0 && (rc = qsel_init(&gap)) < 0)
        qsel_exit(&dur);
    if (rc < 0)
        return rc;
    launch_pass(fp, m, thr, nthr, &dur, &gap);
    if (dur.n)
        kd = qsel_want(&dur, stats_rank_of(dur.n, 500));
    if (gap.n)
        kg = qsel_want(&gap, stats_rank_of(gap.n, 500));
    for (;;) {
        int more_d = qsel_next(&dur), more_g = qsel_next(&gap);
        rc = more_d < 0 ? more_d : more_g < 0 ? more_g : 0;
        if (rc < 0 || (more_d == 0 && more_g == 0))
            break;
        launch_pass(fp, m, thr, nthr, &dur, &gap);
    }
    fp->launch_p50_ns = kd < 0 ? 0 : qsel_value(&dur, kd);
    fp->launch_gap_p50_ns = kg < 0 ? 0 : qsel_value(&gap, kg);
    qsel_exit(&dur);
    qsel_exit(&gap);
    return rc;
}

static int feed_proc_compute(struct feed *f, const struct model *m, uint32_t p,
                             const uint32_t *thr, uint32_t nthr)
{
    struct walk w = {.f = f, .m = m, .fp = &f->p[f->np]};
    uint64_t *pos = malloc(nthr * sizeof(*pos));
    int rc;

    if (pos == NULL)
        return -ENOMEM;
    memset(w.fp, 0, sizeof(*w.fp));
    w.fp->proc = p;
    for (uint32_t i = 0; i < nthr; i++)
        pos[i] = m->thr[thr[i]].first_call;
    rc = walk_proc(&w, thr, nthr, pos);
    if (rc == 0)
        rc = launch_medians(w.fp, m, thr, nthr);
    free(pos);
    free(w.st);
    if (rc == 0)
        f->np++;
    return rc;
}

int feed_compute(struct feed *f, const struct model *m)
{
    uint32_t *thr = malloc((m->nthr + 1) * sizeof(*thr));
    int rc = 0;

    memset(f, 0, sizeof(*f));
    f->p = calloc(m->nproc + 1, sizeof(*f->p));
    if (thr == NULL || f->p == NULL) {
        free(thr);
        return -ENOMEM;
    }
    for (uint32_t p = 0; p < m->nproc && rc == 0; p++) {
        uint32_t n = 0;
        if (!m->proc[p].has_cuda)
            continue;
        for (uint32_t t = 0; t < m->nthr; t++) /* O(procs x threads): both are small */
            if (m->thr[t].proc == p && m->thr[t].ncalls)
                thr[n++] = t;
        rc = feed_proc_compute(f, m, p, thr, n);
    }
    free(thr);
    return rc;
}

void feed_setup(struct feed *f, const struct model *m, const struct step_setup *su)
{
    for (uint32_t i = 0; i < f->np; i++)
        f->p[i].setup_idle_ns = f->p[i].setup_relaunch_ns = 0;
    for (uint64_t i = 0; i < f->ngap; i++) {
        const struct feed_gap *g = &f->gap[i];
        const struct m_call c = model_call(m, g->next_call);
        struct feed_proc *fp;
        if (m->thr[c.thr].proc != su->proc || g->t0_ns >= su->end_ns)
            continue;
        if ((fp = (struct feed_proc *)feed_find(f, su->proc)) == NULL)
            continue;
        fp->setup_idle_ns += g->t1_ns - g->t0_ns;
        fp->setup_relaunch_ns += model_dur(&c);
    }
}

const struct feed_proc *feed_find(const struct feed *f, uint32_t proc)
{
    for (uint32_t i = 0; i < f->np; i++)
        if (f->p[i].proc == proc)
            return &f->p[i];
    return NULL;
}

/* ---- JSON ---- */

static int cmp_waker(const void *a, const void *b)
{
    const struct feed_waker *x = a, *y = b;
    return x->ns > y->ns ? -1 : x->ns < y->ns;
}

static json_t *split_json(const struct feed_split *s, const struct model *m)
{
    struct feed_waker w[FEED_WAKERS];
    json_t *arr = json_array();

    memcpy(w, s->waker, sizeof(w));
    qsort(w, FEED_WAKERS, sizeof(w[0]), cmp_waker);
    for (int i = 0; i < FEED_WAKERS && w[i].ns; i++)
        json_array_append_new(
            arr, json_pack("{s:i, s:s, s:s, s:I}", "pid", (int)w[i].pid, "comm",
                           w[i].proc == M_NONE ? "?" : m->proc[w[i].proc].comm, "role",
                           w[i].proc == M_NONE ? "outside" : procs_role_name(m->proc[w[i].proc].role),
                           "ns", (json_int_t)w[i].ns));
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "oncpu_ns", (json_int_t)s->oncpu_ns,
                     "sleep_ns", (json_int_t)s->sleep_ns, "preempted_ns",
                     (json_int_t)s->preempt_ns, "disk_ns", (json_int_t)s->disk_ns, "other_ns",
                     (json_int_t)s->other_ns, "sleep_woken_by_workers_ns",
                     (json_int_t)s->sleep_worker_ns, "wakers", arr);
}

static json_t *proc_json(const struct feed_proc *fp, const struct model *m)
{
    const struct m_proc *p = &m->proc[fp->proc];
    const struct m_run *r = &m->runs[p->run];
    uint64_t wall = r->win_hi_ns - r->win_lo_ns;
    json_t *o = json_pack("{s:i, s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I}",
                          "pid", (int)p->pid, "run", (int)p->run, "comm", p->comm, "enqueues",
                          (json_int_t)fp->enqueues, "launches", (json_int_t)fp->launches,
                          "syncs", (json_int_t)fp->syncs, "sync_ns", (json_int_t)fp->sync_ns,
                          "idle_ns", (json_int_t)fp->idle_ns, "gaps", (json_int_t)fp->gaps,
                          "idle_pct", wall ? 100.0 * (double)fp->idle_ns / (double)wall : 0.0,
                          "max_gap_ns", (json_int_t)fp->max_gap_ns, "max_gap_at_ns",
                          (json_int_t)(fp->max_gap_ns ? fp->max_gap_at_ns - r->t0_ns : 0),
                          "launch_ns", (json_int_t)fp->launch_ns);

    json_object_set_new(o, "launch_p50_ns", json_integer((json_int_t)fp->launch_p50_ns));
    json_object_set_new(o, "launch_gap_p50_ns", json_integer((json_int_t)fp->launch_gap_p50_ns));
    json_object_set_new(o, "feeding_thread", split_json(&fp->split, m));
    return o;
}

static json_t *stream_json(const struct feed_stream *s, const struct model *m)
{
    const struct m_proc *p = &m->proc[s->proc];

    return json_pack("{s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "pid", (int)p->pid, "run",
                     (int)p->run, "stream", (json_int_t)s->stream, "enqueues",
                     (json_int_t)s->enqueues, "drains", (json_int_t)s->drains, "idle_ns",
                     (json_int_t)s->idle_ns, "gaps", (json_int_t)s->gaps, "max_gap_ns",
                     (json_int_t)s->max_gap_ns, "max_gap_at_ns",
                     (json_int_t)(s->max_gap_ns ? s->max_gap_at_ns - m->runs[p->run].t0_ns : 0));
}

json_t *feed_json(const struct feed *f, const struct model *m)
{
    json_t *procs = json_array(), *streams = json_array();

    for (uint32_t i = 0; i < f->np; i++)
        if (m->proc[f->p[i].proc].selected)
            json_array_append_new(procs, proc_json(&f->p[i], m));
    for (uint32_t i = 0; i < f->ns; i++)
        if (m->proc[f->s[i].proc].selected && f->s[i].enqueues)
            json_array_append_new(streams, stream_json(&f->s[i], m));
    return json_pack("{s:o, s:o}", "processes", procs, "streams", streams);
}

void feed_exit(struct feed *f)
{
    free(f->p);
    free(f->s);
    free(f->gap);
    memset(f, 0, sizeof(*f));
}
