/* rules/gpu.c: the GPU timelines of gpu.h. Per process and device: the
 * covered intervals (from the spans the shim wrote, trimmed where work
 * enqueued outside a span may still have been running), the GPU's busy
 * intervals (the union of its kernels, copies and memsets), the idle
 * stretches between them inside the covered intervals, and what the
 * feeding thread did in each stretch (its CUDA calls and off-CPU intervals
 * in the model). Processes without GPU records get the host's lower bound
 * from feed.c. JSON for docs/json.md's "gpu" object. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "gpu.h"
#include "model/procs.h"
#include "model/stats.h"

#define SYNC_NEAR_NS 200000ull /* an idle stretch this soon after a sync follows from it */

struct iv {
    uint64_t a, b;
    uint64_t first, last; /* busy intervals: records that start it and end it */
};

/* Per device, kept for gpu_bins(). */
struct dev_ivs {
    struct iv *cov, *busy;
    uint64_t ncov, nbusy;
};

static struct dev_ivs *ivs_of(const struct gpu_truth *g, const struct gpu_dev *d);

const char *gpu_source_name(int s)
{
    return s == GPU_SRC_EXACT     ? "exact"
           : s == GPU_SRC_SAMPLED ? "sampled"
           : s == GPU_SRC_HOST    ? "host_lower_bound"
                                  : "none";
}

const char *gpu_host_name(int h)
{
    static const char *const names[GH_COUNT] = {
        "host_code", "launch",   "sync",      "allocator", "cuda_other",
        "asleep_pipeline", "asleep", "preempted", "disk", "unknown"};
    return (unsigned)h < GH_COUNT ? names[h] : "unknown";
}

/* ---- small vectors ---- */

static int iv_push(struct iv **v, uint64_t *n, uint64_t *cap, struct iv x)
{
    if (*n == *cap) {
        uint64_t c = *cap ? *cap * 2 : 64;
        struct iv *q = realloc(*v, c * sizeof(*q));
        if (q == NULL)
            return -ENOMEM;
        *v = q;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int cmp_iv(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    return x->a < y->a ? -1 : x->a > y->a;
}

/* Sort and merge overlapping intervals in place. */
static uint64_t iv_merge(struct iv *v, uint64_t n)
{
    uint64_t k = 0;

    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_iv);
    for (uint64_t i = 1; i < n; i++) {
        if (v[i].a <= v[k].b) {
            if (v[i].b > v[k].b)
                v[k].b = v[i].b;
        } else {
            v[++k] = v[i];
        }
    }
    return k + 1;
}

/* Busy intervals closer than this are one run of work: a queue the host
 * keeps fed starts each kernel within a few us of the last. */
#define GPU_FED_GAP_NS 5000ull

/* First interval of @p v (sorted, disjoint) ending after @p t. */
static uint64_t iv_after(const struct iv *v, uint64_t n, uint64_t t)
{
    return M_FIRST_GT(struct iv, v, b, 0, n, t);
}

/* Length of @p v (sorted, disjoint) inside [t0, t1). */
static uint64_t iv_inside(const struct iv *v, uint64_t n, uint64_t t0, uint64_t t1)
{
    uint64_t sum = 0;

    for (uint64_t i = iv_after(v, n, t0); i < n && v[i].a < t1; i++)
        sum += model_overlap(v[i].a, v[i].b, t0, t1);
    return sum;
}

/* ---- a process's calls ---- */

static int is_drain(const struct m_call *c)
{
    unsigned api = c->api;

    return api == CS_API_cuCtxSynchronize || api == CS_API_cuCtxSynchronize_v2 ||
           api == CS_API_cudaDeviceSynchronize || api == CS_API_cuStreamSynchronize ||
           api == CS_API_cudaStreamSynchronize;
}


/* What the host knows about a process's queue: its drains (stream and
 * device syncs, by exit) and its enqueues (by entry), each as [enter, exit]. */
struct marks {
    struct iv *drain, *enq;
    uint64_t nd, ne;
};

static int cmp_iv_b(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    return x->b < y->b ? -1 : x->b > y->b;
}

static int is_enqueue(const struct m_call *c)
{
    int fam = cs_api_table[c->api].family;
    return !(c->flags & CS_CF_CAPTURING) &&
           (fam == CS_FAM_LAUNCH || fam == CS_FAM_COPY || fam == CS_FAM_MEMSET);
}

static int marks_of(const struct model *m, uint32_t p, struct marks *k)
{
    uint64_t capd = 0, cape = 0;

    memset(k, 0, sizeof(*k));
    M_FOR_PROC_CALLS(m, p, t, i) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        struct iv x = {c->t_enter_ns, c->t_exit_ns, i, i};
        if (c->flags & CS_CF_NESTED)
            continue;
        if (is_drain(c) && iv_push(&k->drain, &k->nd, &capd, x) < 0)
            return -ENOMEM;
        if (is_enqueue(c) && iv_push(&k->enq, &k->ne, &cape, x) < 0)
            return -ENOMEM;
    }
    if (k->nd)
        qsort(k->drain, k->nd, sizeof(*k->drain), cmp_iv_b);
    if (k->ne)
        qsort(k->enq, k->ne, sizeof(*k->enq), cmp_iv);
    return 0;
}

static void marks_free(struct marks *k)
{
    free(k->drain);
    free(k->enq);
}

/* Index of the first element of @p v (@p n, sorted by a or b as @p by_b
 * says) whose key is >= @p t. */
static uint64_t first_at(const struct iv *v, uint64_t n, uint64_t t, int by_b)
{
    return by_b ? M_FIRST_GE(struct iv, v, b, 0, n, t) : M_FIRST_GE(struct iv, v, a, 0, n, t);
}

/* Had the GPU nothing of the process's queued at @p t? True when nothing
 * was enqueued before it, or a drain entered after the last enqueue before
 * it returned and returned by then. */
static int drained_at(const struct marks *k, uint64_t t)
{
    uint64_t e = first_at(k->enq, k->ne, t, 0), d = first_at(k->drain, k->nd, t + 1, 1);

    if (e == 0)
        return 1;
    return d > 0 && k->drain[d - 1].a >= k->enq[e - 1].b;
}

/* The thread with the most enqueues of process @p p (the feeding thread
 * when a stretch names none), M_NONE if none. */
static uint32_t main_thread(const struct model *m, uint32_t p)
{
    uint32_t best = M_NONE;
    uint64_t most = 0;

    for (uint32_t t = 0; t < m->nthr; t++) {
        const struct m_thread *th = &m->thr[t];
        uint64_t n = 0;
        if (th->proc != p)
            continue;
        for (uint64_t i = th->first_call; i < th->first_call + th->ncalls; i++) {
            int fam = cs_api_table[model_call(m, i).api].family;
            n += fam == CS_FAM_LAUNCH || fam == CS_FAM_COPY || fam == CS_FAM_MEMSET;
        }
        if (best == M_NONE || n > most)
            best = t, most = n;
    }
    return best;
}

/* ---- covered intervals ---- */

/* The first record of device range [@p first, @p end) starting at or
 * after @p t. */
static uint64_t rec_from(const struct model *m, uint64_t first, uint64_t end, uint64_t t)
{
    return M_FIRST_GE(struct m_gpu, m->gpu, t_start_ns, first, end, t);
}

#define MAX_STREAMS 64

/* A sampled slice [on, off] of epoch @p c->epoch on device @p d: work
 * enqueued before it may still run after `on` (unless the host had
 * drained the queue by then; else until the first recorded work, or a
 * drain, shows the GPU past it), and work enqueued after it cannot start
 * before `off`, nor on a stream before that stream's last recorded work
 * ends. @return 0 and the interval, or 1 when nothing of the slice can be
 * trusted. */
static int slice_interval(const struct model *m, const struct gpu_dev *d, const struct m_gcov *c,
                          const struct marks *k, struct iv *out)
{
    uint64_t end = d->first + d->n, first_rec = UINT64_MAX, drain = UINT64_MAX, di;
    uint32_t sid[MAX_STREAMS];
    uint64_t last[MAX_STREAMS], lastmin = UINT64_MAX;
    int ns = 0, many = 0;

    for (uint64_t i = rec_from(m, d->first, end, c->t_start_ns); i < end; i++) {
        const struct m_gpu *g = &m->gpu[i];
        int s;
        if (g->epoch > c->epoch && g->t_start_ns > c->t_end_ns)
            break;
        if (g->epoch != c->epoch)
            continue;
        first_rec = g->t_start_ns < first_rec ? g->t_start_ns : first_rec;
        for (s = 0; s < ns && sid[s] != g->stream_id; s++)
            ;
        if (s == ns && ns < MAX_STREAMS)
            sid[ns] = g->stream_id, last[ns++] = 0;
        else if (s == ns)
            many = 1;
        if (s < ns && g->t_end_ns > last[s])
            last[s] = g->t_end_ns;
    }
    di = first_at(k->drain, k->nd, c->t_start_ns, 1);
    if (di < k->nd && k->drain[di].b <= c->t_end_ns)
        drain = k->drain[di].b;
    out->a = c->t_start_ns;
    if (!drained_at(k, c->t_start_ns)) {
        if (first_rec == UINT64_MAX && drain == UINT64_MAX)
            return 1;
        if ((first_rec < drain ? first_rec : drain) > out->a)
            out->a = first_rec < drain ? first_rec : drain;
    }
    for (int s = 0; s < ns && !many; s++)
        lastmin = last[s] < lastmin ? last[s] : lastmin;
    out->b = c->t_end_ns;
    if (ns && !many && lastmin > out->b)
        out->b = lastmin;
    return out->b > out->a ? 0 : 1;
}

/* The covered intervals of device @p d of process @p p, clipped to the
 * run's window. */
static int dev_covered(const struct model *m, struct gpu_dev *d, uint64_t gfirst, uint64_t gn,
                       const struct marks *k, struct dev_ivs *v)
{
    uint64_t cap = 0, lo, hi;

    procs_active_window(m, d->proc, &lo, &hi); /* CUDA's initialisation is start-up, not idle */
    for (uint64_t i = gfirst; i < gfirst + gn; i++) {
        const struct m_gcov *c = &m->gcov[i];
        struct iv x;
        if (c->flags & (CS_GCF_LOST | CS_GCF_UNAVAIL | CS_GCF_PAUSED))
            continue;
        if (c->mode == CS_GPU_MODE_FULL) {
            x.a = c->t_start_ns, x.b = c->t_end_ns;
            d->source = GPU_SRC_EXACT;
        } else if (slice_interval(m, d, c, k, &x) != 0) {
            continue;
        } else if (d->source < GPU_SRC_SAMPLED) {
            d->source = GPU_SRC_SAMPLED;
        }
        if (x.a < lo)
            x.a = lo;
        if (x.b > hi)
            x.b = hi;
        if (x.b > x.a && iv_push(&v->cov, &v->ncov, &cap, x) < 0)
            return -ENOMEM;
    }
    v->ncov = iv_merge(v->cov, v->ncov);
    return 0;
}

/* The union of the device's records, each interval with the records that
 * start and end it. */
static int dev_busy(const struct model *m, const struct gpu_dev *d, struct dev_ivs *v)
{
    uint64_t cap = 0;

    for (uint64_t i = d->first; i < d->first + d->n; i++) {
        const struct m_gpu *g = &m->gpu[i];
        struct iv *last = v->nbusy ? &v->busy[v->nbusy - 1] : NULL;
        if (last && g->t_start_ns <= last->b) {
            if (g->t_end_ns > last->b)
                last->b = g->t_end_ns, last->last = i;
            continue;
        }
        if (iv_push(&v->busy, &v->nbusy, &cap, (struct iv){g->t_start_ns, g->t_end_ns, i, i}) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* ---- what the feeding thread did ---- */

/* The thread's first outermost call that ends after @p t. */
uint64_t gpu_call_from(const struct model *m, uint32_t t, uint64_t ts)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t lo = model_call_search(m, th->first_call, th->first_call + th->ncalls, ts, 1);

    /* the calls before may still run at ts (outermost ones do not overlap) */
    for (uint64_t k = 0; lo > th->first_call && k < 8; k++) {
        const struct m_call cv = model_call(m, lo - 1), *c = &cv;
        if (c->t_exit_ns <= ts && !(c->flags & CS_CF_NESTED))
            break;
        lo--;
    }
    return lo;
}

static int call_state(const struct m_call *c)
{
    switch (cs_api_table[c->api].family) {
    case CS_FAM_LAUNCH:
    case CS_FAM_COPY:
    case CS_FAM_MEMSET: return GH_LAUNCH;
    case CS_FAM_SYNC: return GH_SYNC;
    case CS_FAM_ALLOC:
    case CS_FAM_FREE: return GH_ALLOC;
    default: return GH_CUDA_OTHER;
    }
}

static int off_state(const struct model *m, uint32_t t, const struct m_off *o, int in_call)
{
    if (o->cls == CS_OFF_PREEMPT)
        return GH_PREEMPT;
    if (o->cls == CS_OFF_DISK)
        return GH_DISK;
    if (in_call >= 0)
        return in_call;
    return feed_pipeline_waker(m, t, o) ? GH_SLEEP_PIPE : GH_SLEEP;
}

/* Add what thread @p t did in [@p a, @p b) to @p by. @return the state
 * with the most time. */
static int attribute(const struct model *m, uint32_t t, uint64_t a, uint64_t b, int host_known,
                     uint64_t *by)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t ci = gpu_call_from(m, t, a), cend = th->first_call + th->ncalls;
    uint64_t oi = model_off_after(m, t, a), oend = th->first_off + th->noff;
    uint64_t x = a, mine[GH_COUNT] = {0};
    int best = host_known ? GH_HOST_CODE : GH_UNKNOWN;

    while (x < b) {
        const struct m_call *c = NULL;
        struct m_call cv;
        const struct m_off *o = NULL;
        uint64_t y = b;
        for (; ci < cend; ci++) { /* each call read once */
            cv = model_call(m, ci);
            if (cv.t_exit_ns > x && !(cv.flags & CS_CF_NESTED))
                break;
        }
        while (oi < oend && m->off[oi].t_end_ns <= x)
            oi++;
        if (ci < cend && cv.t_enter_ns <= x)
            c = &cv, y = c->t_exit_ns < y ? c->t_exit_ns : y;
        else if (ci < cend && cv.t_enter_ns < y)
            y = cv.t_enter_ns;
        if (oi < oend && m->off[oi].t_start_ns <= x)
            o = &m->off[oi], y = o->t_end_ns < y ? o->t_end_ns : y;
        else if (oi < oend && m->off[oi].t_start_ns < y)
            y = m->off[oi].t_start_ns;
        int s = o ? off_state(m, t, o, c ? call_state(c) : -1)
                : c ? call_state(c)
                : host_known ? GH_HOST_CODE
                             : GH_UNKNOWN;
        mine[s] += y - x;
        x = y;
    }
    for (int s = 0; s < GH_COUNT; s++) {
        by[s] += mine[s];
        if (mine[s] > mine[best])
            best = s;
    }
    return best;
}

/* The feeding thread's outermost sync that was running when the GPU went
 * idle at @p a, or had ended at most SYNC_NEAR_NS before: the stretch
 * follows from it (the host waited, then did its work while the GPU had
 * none). */
static int is_sync_call(const struct m_call *c)
{
    return !(c->flags & CS_CF_NESTED) && cs_api_table[c->api].family == CS_FAM_SYNC &&
           cs_api_table[c->api].is_sync;
}

uint64_t gpu_sync_before(const struct model *m, uint32_t t, uint64_t a)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t first = gpu_call_from(m, t, a), end = th->first_call + th->ncalls;

    for (uint64_t i = first; i < end; i++) {
        const struct m_call c = model_call(m, i);
        if (c.t_enter_ns > a)
            break;
        if (is_sync_call(&c) && c.t_exit_ns >= a)
            return i; /* running when the GPU went idle */
    }
    for (uint64_t i = first, k = 0; i > th->first_call && k < 16; i--, k++) {
        const struct m_call cv = model_call(m, i - 1), *c = &cv;
        if (c->flags & CS_CF_NESTED)
            continue;
        if (c->t_exit_ns + SYNC_NEAR_NS < a)
            break;
        if (is_sync_call(c))
            return i - 1;
    }
    return M_CALL_NONE;
}

static uint32_t rec_thread(const struct model *m, uint64_t rec)
{
    uint64_t c = m->gpu[rec].call;
    return c == M_CALL_NONE ? M_NONE : model_call(m, c).thr;
}

static void top_keep(struct gpu_stretch *top, const struct gpu_stretch *s)
{
    int i = GPU_TOP;

    while (i > 0 && top[i - 1].t1_ns - top[i - 1].t0_ns < s->t1_ns - s->t0_ns) {
        if (i < GPU_TOP)
            top[i] = top[i - 1];
        i--;
    }
    if (i < GPU_TOP)
        top[i] = *s;
}

/* Sampled coverage, the weight of covered interval @p k of @p v in
 * [@p lo, @p hi): the share of the window it stands for (from its start
 * to the next one's, the first from @p lo, the last to @p hi) over its
 * length, or over @p typ, the median length, when it is shorter (cut by
 * CUDA's start-up or the window, it is a small sample, not a heavy one);
 * times @p norm, which makes the weights average 1 over the covered time.
 * A slice runs on to the next recorded call's end, so long calls and host
 * stretches lengthen it: pooled by length, one slice over a program's slow
 * tail outweighed four over its loop (the H200 matmul control read 58 %
 * busy); each period weighs the same instead. Exact coverage: 1. */
static double cov_weight(const struct dev_ivs *v, uint64_t k, uint64_t lo, uint64_t hi,
                         uint64_t typ)
{
    uint64_t from = k == 0 ? lo : v->cov[k].a, to = k + 1 < v->ncov ? v->cov[k + 1].a : hi;
    uint64_t len = v->cov[k].b - v->cov[k].a;

    len = len > typ ? len : typ;
    return len == 0 || to <= from ? 0.0 : (double)(to - from) / (double)len;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The weights of @p v's intervals into @p w (cov_weight, normalised);
 * all 1 for exact coverage, or when there is no memory to weigh. */
static void cov_weights(const struct gpu_dev *d, const struct dev_ivs *v, uint64_t lo,
                        uint64_t hi, double *w)
{
    uint64_t *len = d->source == GPU_SRC_SAMPLED ? malloc(v->ncov * sizeof(*len) + 1) : NULL;
    double covered = 0, weighed = 0;

    for (uint64_t k = 0; k < v->ncov; k++)
        w[k] = 1.0;
    if (len == NULL || v->ncov == 0) {
        free(len);
        return;
    }
    for (uint64_t k = 0; k < v->ncov; k++)
        len[k] = v->cov[k].b - v->cov[k].a;
    qsort(len, v->ncov, sizeof(*len), cmp_u64);
    for (uint64_t k = 0; k < v->ncov; k++) {
        w[k] = cov_weight(v, k, lo, hi, len[v->ncov / 2]);
        covered += (double)(v->cov[k].b - v->cov[k].a);
        weighed += w[k] * (double)(v->cov[k].b - v->cov[k].a);
    }
    for (uint64_t k = 0; k < v->ncov; k++)
        w[k] = weighed > 0 ? w[k] * covered / weighed : 1.0;
    free(len);
}

static uint64_t weigh(uint64_t ns, double w)
{
    return (uint64_t)((double)ns * w + 0.5);
}

/* Host code of idle stretch @p s before @p setup_end. */
static uint64_t setup_host(const struct model *m, const struct gpu_stretch *s, int host_known,
                           uint64_t setup_end)
{
    uint64_t pre[GH_COUNT] = {0};

    attribute(m, s->thr, s->t0_ns, s->t1_ns < setup_end ? s->t1_ns : setup_end, host_known, pre);
    return pre[GH_HOST_CODE];
}

/* Walk the covered intervals of @p d (window [@p lo, @p hi)) in time
 * order: each idle stretch and busy piece, with its interval's cov_weight
 * and, for a stretch, the feeding thread the records around it name. */
static void walk(const struct model *m, const struct gpu_dev *d, const struct dev_ivs *v,
                 uint64_t lo, uint64_t hi, gpu_walk_fn *fn, void *arg)
{
    double *wk = malloc(v->ncov * sizeof(*wk) + 1);

    if (wk)
        cov_weights(d, v, lo, hi, wk);
    for (uint64_t k = 0; k < v->ncov; k++) {
        uint64_t cb = v->cov[k].b, x = v->cov[k].a;
        uint64_t j = iv_after(v->busy, v->nbusy, x);
        struct gpu_piece pc = {.cov = k, .w = wk ? wk[k] : 1.0, .cov_t0_ns = x, .cov_t1_ns = cb};
        for (;;) {
            int more = j < v->nbusy && v->busy[j].a < cb;
            uint64_t y = more ? v->busy[j].a : cb;
            if (y > x) { /* an idle stretch [x, y) */
                pc.t0_ns = x, pc.t1_ns = y, pc.busy = 0;
                pc.thr = more ? rec_thread(m, v->busy[j].first) : M_NONE;
                pc.next_call = more ? m->gpu[v->busy[j].first].call : M_CALL_NONE;
                if (pc.thr == M_NONE && j > 0)
                    pc.thr = rec_thread(m, v->busy[j - 1].last);
                fn(arg, &pc);
            }
            if (!more)
                break;
            pc.t0_ns = v->busy[j].a > x ? v->busy[j].a : x;
            pc.t1_ns = v->busy[j].b < cb ? v->busy[j].b : cb;
            pc.busy = 1, pc.thr = M_NONE, pc.next_call = M_CALL_NONE;
            if (pc.t1_ns > pc.t0_ns)
                fn(arg, &pc);
            x = v->busy[j].b;
            j++;
            if (x >= cb)
                break;
        }
    }
    free(wk);
}

/* What dev_idle() keeps between the pieces of walk(). */
struct idle_walk {
    const struct model *m;
    struct gpu_dev *d;
    const struct dev_ivs *v;
    uint32_t fallback;
    int host_known;
    uint64_t setup_end, last_sync, budget, last_cov;
};

static void idle_piece(void *arg, const struct gpu_piece *pc)
{
    struct idle_walk *iw = arg;
    const struct model *m = iw->m;
    struct gpu_dev *d = iw->d;
    uint64_t x = pc->t0_ns, y = pc->t1_ns, mine[GH_COUNT] = {0};
    struct gpu_stretch s = {x, y, pc->thr, GH_UNKNOWN};
    double w = pc->w;

    if (pc->cov != iw->last_cov) {
        iw->last_cov = pc->cov;
        d->covered_ns += iw->v->cov[pc->cov].b - iw->v->cov[pc->cov].a;
    }
    if (pc->busy) {
        d->busy_ns += weigh(y - x, w);
        return;
    }
    if (s.thr == M_NONE)
        s.thr = iw->fallback;
    if (s.thr != M_NONE)
        s.state = (uint8_t)attribute(m, s.thr, x, y, iw->host_known, mine);
    else
        mine[GH_UNKNOWN] += y - x;
    for (int h = 0; h < GH_COUNT; h++)
        d->by[h] += weigh(mine[h], w);
    d->stretches++;
    if (y - x < GPU_SHORT_NS) {
        d->short_stretches++;
        d->host_short_ns += weigh(mine[GH_HOST_CODE], w);
    } else if (s.thr != M_NONE) {
        uint64_t sc = gpu_sync_before(m, s.thr, x), host = mine[GH_HOST_CODE];
        if (x < iw->setup_end) /* a stretch the set-up ends inside: its part */
            d->setup_host_ns += weigh(y <= iw->setup_end
                                          ? host
                                          : setup_host(m, &s, iw->host_known, iw->setup_end),
                                      w);
        if (sc != iw->last_sync && sc != M_CALL_NONE) {
            iw->last_sync = sc;
            iw->budget = iv_inside(iw->v->busy, iw->v->nbusy, model_call(m, sc).t_enter_ns,
                                   model_call(m, sc).t_exit_ns);
        }
        if (sc != M_CALL_NONE) {
            uint64_t loss = host < iw->budget ? host : iw->budget;
            d->sync_loss_ns += weigh(loss, w);
            iw->budget -= loss;
        }
    }
    top_keep(d->top, &s);
    if (s.state == GH_HOST_CODE && x >= iw->setup_end &&
        y - x > d->host_top.t1_ns - d->host_top.t0_ns)
        d->host_top = s;
}

/* The idle stretches of @p d inside its covered intervals (window
 * [@p lo, @p hi)), each attributed to what the feeding thread did; what is
 * measured in each interval counts with its cov_weight. */
static void dev_idle(const struct model *m, struct gpu_dev *d, const struct dev_ivs *v,
                     uint32_t fallback, int host_known, uint64_t lo, uint64_t hi,
                     uint64_t setup_end)
{
    struct idle_walk iw = {m, d, v, fallback, host_known, setup_end, M_CALL_NONE, 0, UINT64_MAX};

    walk(m, d, v, lo, hi, idle_piece, &iw);
}

void gpu_walk(const struct gpu_truth *g, const struct model *m, const struct gpu_dev *d,
              uint64_t lo, uint64_t hi, gpu_walk_fn *fn, void *arg)
{
    walk(m, d, ivs_of(g, d), lo, hi, fn, arg);
}

uint64_t gpu_busy_inside(const struct gpu_truth *g, const struct gpu_dev *d, uint64_t t0,
                         uint64_t t1)
{
    const struct dev_ivs *v = ivs_of(g, d);

    return iv_inside(v->busy, v->nbusy, t0, t1);
}

/* ---- per-device statistics of the records ---- */

struct ev {
    uint64_t t;
    int8_t dk, dc, dp; /* kernels, copies, copies from pageable memory: starting (+1)
                          or ending (-1) */
};

static int cmp_ev(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->dk + x->dc + x->dp) - (y->dk + y->dc + y->dp); /* ends first */
}

/* Bytes a second of PCIe link "GENxWIDTH" (128b/130b from gen 3 on,
 * 8b/10b before), 0 if unreadable. */
static double link_bps(const char *s)
{
    static const double gts[] = {0, 2.5, 5, 8, 16, 32, 64};
    unsigned g = 0, w = 0;

    if (sscanf(s, "%ux%u", &g, &w) != 2 || g == 0 || g >= sizeof(gts) / sizeof(gts[0]) || w == 0)
        return 0;
    return gts[g] * 1e9 * w * (g >= 3 ? 128.0 / 130.0 : 0.8) / 8.0;
}

/* The slowest link of meta gpu_pcie_max ("5x16,5x16", NVML's devices in
 * its order: which is this process's is not known, so the slowest), at
 * GPU_PCIE_EFF, into d. */
static void link_rate(const struct model *m, struct gpu_dev *d)
{
    const char *v = cs_run_meta(m->runs[m->proc[d->proc].run].run, "gpu_pcie_max");
    char buf[256], *save = NULL;

    if (v == NULL || snprintf(buf, sizeof(buf), "%s", v) >= (int)sizeof(buf))
        return;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        double bps = link_bps(t) * GPU_PCIE_EFF;
        if (bps > 0 && (d->pinned_bps == 0 || bps < d->pinned_bps)) {
            d->pinned_bps = bps;
            d->pinned_src = GPU_PINNED_LINK;
            snprintf(d->pinned_link, sizeof(d->pinned_link), "%s", t);
        }
    }
}

double gpu_pinned_share(const struct gpu_dev *d)
{
    double keep;

    if (d->pinned_bps <= 0 || d->steady_pageable_ns == 0)
        return 0.0;
    keep = (double)d->steady_pageable_bytes / d->pinned_bps * 1e9 / (double)d->steady_pageable_ns;
    return keep < 1.0 ? keep : 1.0;
}

static int dev_stats(const struct model *m, struct gpu_dev *d, uint64_t setup_end,
                     uint64_t wind)
{
    uint64_t pin_b = 0, pin_ns = 0;
    struct ev *e = malloc((2 * d->n + 1) * sizeof(*e));
    uint64_t *dur = malloc((d->n + 1) * sizeof(*dur)), nk = 0, ne = 0;
    int k = 0, c = 0, pg = 0;

    if (e == NULL || dur == NULL) {
        free(e);
        free(dur);
        return -ENOMEM;
    }
    for (uint64_t i = d->first; i < d->first + d->n; i++) {
        const struct m_gpu *g = &m->gpu[i];
        int isk = g->kind == CS_GPU_KERNEL, isc = g->kind == CS_GPU_MEMCPY;
        int isp = isc && ((g->gflags & CS_GF_PAGEABLE) ||
                          (g->call != M_CALL_NONE && (model_call(m, g->call).flags & CS_CF_PAGEABLE)));
        d->kernels += isk;
        d->copies += isc;
        if (isp && g->t_start_ns >= setup_end && g->t_start_ns < wind)
            d->steady_pageable_bytes += g->bytes;
        if (isc && !isp && g->bytes >= (1u << 20) &&
            (g->dir == CS_DIR_HTOD || g->dir == CS_DIR_DTOH)) {
            pin_b += g->bytes;
            pin_ns += g->t_end_ns - g->t_start_ns;
        }
        d->memsets += g->kind == CS_GPU_MEMSET;
        if (isk)
            dur[nk++] = g->t_end_ns - g->t_start_ns;
        if (!isk && !isc)
            continue;
        e[ne++] = (struct ev){g->t_start_ns, (int8_t)isk, (int8_t)isc, (int8_t)isp};
        e[ne++] = (struct ev){g->t_end_ns, (int8_t)-isk, (int8_t)-isc, (int8_t)-isp};
    }
    qsort(e, ne, sizeof(*e), cmp_ev);
    for (uint64_t i = 0; i + 1 < ne + (ne == 0); i++) {
        uint64_t span, late;
        k += e[i].dk, c += e[i].dc, pg += e[i].dp;
        span = e[i + 1].t - e[i].t;
        late = model_overlap(e[i].t, e[i + 1].t, setup_end, wind);
        d->kernel_ns += k > 0 ? span : 0;
        d->copy_ns += c > 0 ? span : 0;
        d->concurrent_ns += k > 1 ? span : 0;
        d->overlap_ns += k > 0 && c > 0 ? span : 0;
        d->pageable_ns += k == 0 && c > 0 && pg == c ? span : 0;
        d->steady_kernel_ns += k > 0 ? late : 0;
        d->steady_copy_ns += c > 0 ? late : 0;
        d->steady_overlap_ns += k > 0 && c > 0 ? late : 0;
        d->steady_pageable_ns += k == 0 && c > 0 && pg == c ? late : 0;
    }
    stats_sort(dur, nk, NULL);
    d->kernel_p50_ns = stats_rank(dur, nk, 500);
    if (pin_ns) {
        d->pinned_bps = (double)pin_b * 1e9 / (double)pin_ns;
        d->pinned_src = GPU_PINNED_RUN;
    } else {
        link_rate(m, d);
    }
    free(e);
    free(dur);
    return 0;
}

/* ---- processes ---- */

static void note(struct gpu_truth *g, const struct model *m, uint32_t p, const char *what,
                 uint32_t n, uint32_t reason_id)
{
    char buf[512];
    const struct m_proc *pr = &m->proc[p];
    const char *why = reason_id ? cs_run_string(m->runs[pr->run].run, reason_id) : "";

    if (n > 1)
        snprintf(buf, sizeof(buf), "%s (pid %u): GPU activity %s %u times%s%s", pr->comm,
                 pr->pid, what, n, why[0] ? ": " : "", why);
    else
        snprintf(buf, sizeof(buf), "%s (pid %u): GPU activity %s%s%s", pr->comm, pr->pid, what,
                 why[0] ? ": " : "", why);
    json_array_append_new(g->notes, json_string(buf));
}

/* Notes of process @p p's spans: unavailable, paused, lost. */
static void proc_notes(struct gpu_truth *g, const struct model *m, uint32_t p, uint64_t first,
                       uint64_t n)
{
    uint32_t paused = 0, lost = 0, why_paused = 0;

    for (uint64_t i = first; i < first + n; i++) {
        const struct m_gcov *c = &m->gcov[i];
        if (c->flags & CS_GCF_UNAVAIL)
            note(g, m, p, "off", 1, c->reason_id);
        if (c->flags & CS_GCF_PAUSED)
            paused++, why_paused = c->reason_id;
        lost += (c->flags & CS_GCF_LOST) != 0;
    }
    if (paused)
        note(g, m, p, "paused", paused, why_paused);
    if (lost)
        note(g, m, p, lost > 1 ? "spans lost records, not used," : "span lost records, not used,",
             lost, 0);
}

static int add_dev(struct gpu_truth *g, uint32_t *cap, struct dev_ivs **v)
{
    if (g->nd == *cap) {
        uint32_t c = *cap ? *cap * 2 : 8;
        struct gpu_dev *q = realloc(g->d, c * sizeof(*q));
        struct dev_ivs *w = q ? realloc(*v, c * sizeof(*w)) : NULL;
        if (q)
            g->d = q;
        if (w == NULL)
            return -ENOMEM;
        *v = w;
        *cap = c;
    }
    memset(&g->d[g->nd], 0, sizeof(g->d[0]));
    memset(&(*v)[g->nd], 0, sizeof((*v)[0]));
    return 0;
}

/* The host lower bound (feed.c) for a process without GPU records. */
static void proc_from_feed(struct gpu_proc *gp, const struct feed *f)
{
    const struct feed_proc *fp = feed_find(f, gp->proc);
    uint64_t idle;

    gp->source = GPU_SRC_HOST;
    gp->covered_ns = gp->window_ns;
    if (fp == NULL)
        return;
    idle = fp->idle_ns < gp->window_ns ? fp->idle_ns : gp->window_ns;
    gp->busy_ns = gp->window_ns - idle;
    gp->idle_ns = idle;
    gp->by[GH_HOST_CODE] = fp->split.oncpu_ns > fp->gap_incall_ns
                               ? fp->split.oncpu_ns - fp->gap_incall_ns : 0;
    gp->by[GH_CUDA_OTHER] = fp->split.oncpu_ns - gp->by[GH_HOST_CODE];
    gp->by[GH_SLEEP_PIPE] = fp->split.sleep_worker_ns;
    gp->by[GH_SLEEP] = fp->split.sleep_ns - fp->split.sleep_worker_ns + fp->split.other_ns;
    gp->by[GH_PREEMPT] = fp->split.preempt_ns;
    gp->by[GH_DISK] = fp->split.disk_ns;
}

static int proc_compute(struct gpu_truth *g, const struct model *m, const struct feed *f,
                        uint32_t p, uint64_t *gi, uint64_t *ci, uint32_t *cap,
                        struct dev_ivs **v)
{
    struct gpu_proc *gp = &g->p[g->np++];
    uint64_t lo, hi, cfirst = *ci, cn = 0;
    struct marks k;
    const struct m_run *run = &m->runs[m->proc[p].run];
    int host_known = run->counts[CS_REC_OFFCPU] > 0;
    uint32_t fallback = main_thread(m, p);
    int rc = 0;

    memset(gp, 0, sizeof(*gp));
    gp->proc = p;
    procs_active_window(m, p, &lo, &hi);
    gp->window_ns = hi - lo;
    while (*ci < m->ngcov && m->gcov[*ci].proc < p)
        (*ci)++;
    cfirst = *ci;
    while (*ci < m->ngcov && m->gcov[*ci].proc == p)
        (*ci)++, cn++;
    proc_notes(g, m, p, cfirst, cn);
    while (*gi < m->ngpu && m->gpu[*gi].proc < p)
        (*gi)++;
    /* the marks copy every enqueue and drain: only devices below read them */
    memset(&k, 0, sizeof(k));
    if (*gi < m->ngpu && m->gpu[*gi].proc == p && (rc = marks_of(m, p, &k)) < 0) {
        marks_free(&k);
        return rc;
    }
    while (rc == 0 && *gi < m->ngpu && m->gpu[*gi].proc == p) {
        struct gpu_dev *d;
        struct dev_ivs *dv;
        if ((rc = add_dev(g, cap, v)) < 0)
            break;
        d = &g->d[g->nd];
        dv = &(*v)[g->nd];
        d->proc = p;
        d->device = m->gpu[*gi].device;
        d->first = *gi;
        while (*gi < m->ngpu && m->gpu[*gi].proc == p && m->gpu[*gi].device == d->device)
            (*gi)++;
        d->n = *gi - d->first;
        g->nd++;
        rc = dev_covered(m, d, cfirst, cn, &k, dv);
        if (rc == 0)
            rc = dev_busy(m, d, dv);
        if (rc == 0)
            rc = dev_stats(m, d, g->setup.proc == p ? g->setup.end_ns : 0,
                           g->setup.proc == p ? g->setup.wind_ns : UINT64_MAX);
        if (rc < 0)
            break;
        dev_idle(m, d, dv, fallback, host_known, lo, hi,
                 g->setup.proc == p ? g->setup.end_ns : 0);
        gp->ndev++;
        gp->covered_ns += d->covered_ns;
        gp->busy_ns += d->busy_ns;
        gp->host_short_ns += d->host_short_ns;
        gp->sync_loss_ns += d->sync_loss_ns;
        gp->setup_host_ns += d->setup_host_ns;
        for (int s = 0; s < GH_COUNT; s++)
            gp->by[s] += d->by[s];
        gp->source = d->source > gp->source ? d->source : gp->source;
    }
    marks_free(&k);
    if (rc < 0)
        return rc;
    gp->idle_ns = gp->covered_ns > gp->busy_ns ? gp->covered_ns - gp->busy_ns : 0;
    if (gp->covered_ns == 0) {
        memset(gp->by, 0, sizeof(gp->by));
        gp->host_short_ns = gp->sync_loss_ns = gp->setup_host_ns = 0;
        gp->busy_ns = 0;
        proc_from_feed(gp, f);
    }
    return 0;
}

int gpu_compute(struct gpu_truth *g, const struct model *m, const struct feed *f,
                const struct step_setup *su)
{
    uint64_t gi = 0, ci = 0;
    uint32_t cap = 0;
    struct dev_ivs *v = NULL;
    int rc = 0;

    memset(g, 0, sizeof(*g));
    g->setup = *su;
    g->notes = json_array();
    g->p = calloc(m->nproc + 1, sizeof(*g->p));
    if (g->p == NULL || g->notes == NULL)
        return -ENOMEM;
    for (uint32_t p = 0; p < m->nproc && rc == 0; p++) {
        if (!m->proc[p].has_cuda || !m->proc[p].selected)
            continue;
        rc = proc_compute(g, m, f, p, &gi, &ci, &cap, &v);
        if (rc == 0 && g->p[g->np - 1].source > g->source)
            g->source = g->p[g->np - 1].source;
    }
    g->priv = v;
    return rc;
}

const struct gpu_proc *gpu_find(const struct gpu_truth *g, uint32_t proc)
{
    for (uint32_t i = 0; i < g->np; i++)
        if (g->p[i].proc == proc)
            return &g->p[i];
    return NULL;
}

uint64_t gpu_estimate(const struct gpu_proc *gp, uint64_t measured)
{
    if (gp == NULL || gp->covered_ns == 0)
        return 0;
    if (gp->covered_ns >= gp->window_ns)
        return measured;
    return (uint64_t)((double)measured * (double)gp->window_ns / (double)gp->covered_ns);
}

static struct dev_ivs *ivs_of(const struct gpu_truth *g, const struct gpu_dev *d)
{
    return &((struct dev_ivs *)g->priv)[d - g->d];
}

void gpu_bins(const struct gpu_truth *g, const struct model *m, uint32_t proc, uint64_t t0,
              uint64_t t1, int nbins, double *out)
{
    double *cov = calloc((size_t)nbins + 1, sizeof(*cov));
    uint64_t w = t1 > t0 ? t1 - t0 : 1;

    (void)m;
    for (int b = 0; b < nbins; b++)
        out[b] = 0;
    for (uint32_t i = 0; cov && i < g->nd; i++) {
        const struct gpu_dev *d = &g->d[i];
        const struct dev_ivs *v = ivs_of(g, d);
        if (proc != M_NONE && d->proc != proc)
            continue;
        for (int b = 0; b < nbins; b++) {
            uint64_t a = t0 + w * (uint64_t)b / (uint64_t)nbins;
            uint64_t z = t0 + w * (uint64_t)(b + 1) / (uint64_t)nbins;
            for (uint64_t k = iv_after(v->cov, v->ncov, a); k < v->ncov && v->cov[k].a < z; k++) {
                uint64_t ca = v->cov[k].a > a ? v->cov[k].a : a;
                uint64_t cb = v->cov[k].b < z ? v->cov[k].b : z;
                if (cb <= ca)
                    continue;
                cov[b] += (double)(cb - ca);
                out[b] += (double)iv_inside(v->busy, v->nbusy, ca, cb);
            }
        }
    }
    for (int b = 0; b < nbins; b++)
        out[b] = cov && cov[b] > 0 ? out[b] / cov[b] : -1.0;
    free(cov);
}

/* Idle of one device's covered span [t_ns, end) up to the start of its
 * first run of work of GPU_SHORT_NS or more (busy intervals less than
 * GPU_FED_GAP_NS apart: a fed queue); already in such a run at t_ns: none. */
static uint64_t idle_until_work(const struct dev_ivs *v, uint64_t t_ns, uint64_t end)
{
    uint64_t idle = 0, t = t_ns, run = 0;

    for (uint64_t b = iv_after(v->busy, v->nbusy, t_ns); b < v->nbusy && t < end; b++) {
        const struct iv *w = &v->busy[b];
        if (b == 0 || w->a > v->busy[b - 1].b + GPU_FED_GAP_NS)
            run = w->a;
        if (w->a > t)
            idle += (w->a < end ? w->a : end) - t;
        if (w->b - run >= GPU_SHORT_NS)
            return idle;
        t = w->b > t ? w->b : t;
    }
    return idle + (end > t ? end - t : 0);
}

int gpu_idle_after(const struct gpu_truth *g, uint32_t proc, uint64_t t_ns, uint64_t until_ns,
                   uint64_t *idle_ns)
{
    uint64_t best = UINT64_MAX;
    int covered = 0;

    for (uint32_t i = 0; i < g->nd; i++) {
        const struct gpu_dev *d = &g->d[i];
        const struct dev_ivs *v;
        uint64_t k, idle;
        if (d->proc != proc || d->source < GPU_SRC_SAMPLED)
            continue;
        v = ivs_of(g, d);
        k = iv_after(v->cov, v->ncov, t_ns);
        if (k == v->ncov || v->cov[k].a > t_ns)
            continue; /* not covered at t_ns */
        covered = 1;
        idle = idle_until_work(v, t_ns, v->cov[k].b < until_ns ? v->cov[k].b : until_ns);
        best = idle < best ? idle : best;
    }
    *idle_ns = covered ? best : 0;
    return covered;
}

/* ---- JSON ---- */

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static json_t *by_json(const uint64_t *by, const struct gpu_proc *gp)
{
    json_t *o = json_object();

    for (int s = 0; s < GH_COUNT; s++)
        json_object_set_new(o, gpu_host_name(s),
                            json_integer((json_int_t)(gp ? gpu_estimate(gp, by[s]) : by[s])));
    return o;
}

static json_t *stretch_json(const struct model *m, const struct gpu_dev *d,
                            const struct gpu_stretch *s)
{
    const struct m_run *r = &m->runs[m->proc[d->proc].run];

    return json_pack("{s:I, s:I, s:s, s:i}", "t_ns", (json_int_t)(s->t0_ns - r->t0_ns), "dur_ns",
                     (json_int_t)(s->t1_ns - s->t0_ns), "host_state", gpu_host_name(s->state),
                     "tid", s->thr == M_NONE ? 0 : (int)m->thr[s->thr].tid);
}

static json_t *dev_json(const struct model *m, const struct gpu_dev *d)
{
    const struct m_proc *p = &m->proc[d->proc];
    uint64_t idle = d->covered_ns > d->busy_ns ? d->covered_ns - d->busy_ns : 0;
    json_t *top = json_array();
    json_t *o = json_pack(
        "{s:i, s:i, s:i, s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "pid", (int)p->pid,
        "run", (int)p->run, "device", (int)d->device, "source", gpu_source_name(d->source),
        "busy_pct", pct(d->busy_ns, d->covered_ns), "covered_ns", (json_int_t)d->covered_ns,
        "busy_ns", (json_int_t)d->busy_ns, "idle_ns", (json_int_t)idle, "kernels",
        (json_int_t)d->kernels, "copies", (json_int_t)d->copies, "memsets",
        (json_int_t)d->memsets, "kernel_ns", (json_int_t)d->kernel_ns, "kernel_p50_ns",
        (json_int_t)d->kernel_p50_ns);

    json_object_set_new(o, "concurrent_kernels_pct", json_real(pct(d->concurrent_ns, d->kernel_ns)));
    json_object_set_new(o, "copy_compute_overlap_pct", json_real(pct(d->overlap_ns, d->copy_ns)));
    json_object_set_new(o, "idle_by_host_state", by_json(d->by, NULL));
    json_object_set_new(o, "idle_after_sync_ns", json_integer((json_int_t)d->sync_loss_ns));
    json_object_set_new(o, "idle_short_host_ns", json_integer((json_int_t)d->host_short_ns));
    for (int i = 0; i < GPU_TOP && d->top[i].t1_ns; i++)
        json_array_append_new(top, stretch_json(m, d, &d->top[i]));
    json_object_set_new(o, "longest_idle", top);
    return o;
}

struct kagg {
    uint32_t run, name;
    uint64_t n, ns;
};

static int cmp_kagg_ns(const void *a, const void *b)
{
    const struct kagg *x = a, *y = b;
    return x->ns != y->ns ? (x->ns > y->ns ? -1 : 1) : (x->n > y->n ? -1 : x->n < y->n);
}

static int cmp_kagg_n(const void *a, const void *b)
{
    const struct kagg *x = a, *y = b;
    return x->n != y->n ? (x->n > y->n ? -1 : 1) : (x->ns > y->ns ? -1 : x->ns < y->ns);
}

static json_t *kagg_json(const struct model *m, const struct kagg *k, uint32_t n, uint32_t max)
{
    json_t *arr = json_array();

    for (uint32_t i = 0; i < n && i < max; i++)
        json_array_append_new(
            arr, json_pack("{s:s, s:I, s:I, s:I}", "kernel",
                           k[i].name ? cs_run_string(m->runs[k[i].run].run, k[i].name) : "?",
                           "count", (json_int_t)k[i].n, "total_ns", (json_int_t)k[i].ns,
                           "mean_ns", (json_int_t)(k[i].n ? k[i].ns / k[i].n : 0)));
    return arr;
}

/* Every recorded kernel (@p graphs_only: those a graph replay ran) by
 * name into *out (the caller frees it). @return how many names */
static uint32_t kagg_build(const struct model *m, int graphs_only, struct kagg **out)
{
    struct m_hash *ix = m_hash_new();
    struct kagg *k = NULL;
    uint32_t n = 0, cap = 0;

    for (uint64_t i = 0; ix && i < m->ngpu; i++) {
        const struct m_gpu *g = &m->gpu[i];
        uint32_t run = m->proc[g->proc].run, j;
        if (g->kind != CS_GPU_KERNEL || (graphs_only && g->graph_id == 0))
            continue;
        j = m_hash_get(ix, (uint64_t)run << 32 | g->name_id);
        if (j == M_NONE) {
            if (n == cap) {
                struct kagg *q = realloc(k, (cap = cap ? cap * 2 : 64) * sizeof(*q));
                if (q == NULL)
                    break;
                k = q;
            }
            if (m_hash_put(ix, (uint64_t)run << 32 | g->name_id, n) < 0)
                break;
            k[n] = (struct kagg){run, g->name_id, 0, 0};
            j = n++;
        }
        k[j].n++;
        k[j].ns += g->t_end_ns - g->t_start_ns;
    }
    m_hash_free(ix);
    *out = k;
    return k ? n : 0;
}

/* Top kernels by GPU time and by count over every recorded kernel. */
static void kernels_json(json_t *o, const struct model *m)
{
    struct kagg *k = NULL;
    uint32_t n = kagg_build(m, 0, &k);

    if (k)
        qsort(k, n, sizeof(*k), cmp_kagg_ns);
    json_object_set_new(o, "top_kernels_by_time", kagg_json(m, k, n, 10));
    if (k)
        qsort(k, n, sizeof(*k), cmp_kagg_n);
    json_object_set_new(o, "top_kernels_by_count", kagg_json(m, k, n, 10));
    free(k);
}

json_t *gpu_graph_kernels_json(const struct model *m)
{
    struct kagg *k = NULL;
    uint32_t n = kagg_build(m, 1, &k);
    json_t *arr;

    if (k)
        qsort(k, n, sizeof(*k), cmp_kagg_ns);
    arr = kagg_json(m, k, n, UINT32_MAX);
    free(k);
    return arr;
}

static int cmp_u64_asc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Distinct values of @p v (sorted in place). */
static uint64_t distinct(uint64_t *v, uint64_t n)
{
    uint64_t d = 0;

    qsort(v, n, sizeof(*v), cmp_u64_asc);
    for (uint64_t i = 0; i < n; i++)
        d += i == 0 || v[i] != v[i - 1];
    return d;
}

/* What graph replays ran (docs/json.md gpu.graphs): records by kind, their
 * GPU time, the graphs, nodes and launches they came from. */
static json_t *graphs_json(const struct model *m)
{
    uint64_t cnt[4] = {0}, ns = 0, n = 0, *ids = malloc((m->ngpu + 1) * 3 * sizeof(*ids));
    uint64_t *nodes, *calls, nl = 0;

    if (ids == NULL)
        return json_null();
    nodes = ids + m->ngpu + 1, calls = nodes + m->ngpu + 1;
    for (uint64_t i = 0; i < m->ngpu; i++) {
        const struct m_gpu *g = &m->gpu[i];
        if (g->graph_id == 0)
            continue;
        cnt[g->kind < 4 ? g->kind : 0]++;
        ns += g->t_end_ns - g->t_start_ns;
        ids[n] = (uint64_t)g->proc << 32 | g->graph_id;
        nodes[n++] = g->graph_node_id ^ (uint64_t)g->proc << 48;
        if (g->call != M_CALL_NONE)
            calls[nl++] = g->call;
    }
    json_t *o = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "kernels", (json_int_t)cnt[CS_GPU_KERNEL], "copies",
        (json_int_t)cnt[CS_GPU_MEMCPY], "memsets", (json_int_t)cnt[CS_GPU_MEMSET], "gpu_ns",
        (json_int_t)ns, "graphs", (json_int_t)distinct(ids, n), "nodes",
        (json_int_t)distinct(nodes, n), "launches", (json_int_t)distinct(calls, nl));
    free(ids);
    return o;
}

/* Calls before an attach and inside its slice to compare their pace: as
 * the shim counts them (shim_gpu.c GPU_PACE_MIN, GPU_PACE_MIN_IN), so a
 * costly slice, which holds few calls, still shows its cost. */
#define PACE_MIN_OUT 50
#define PACE_MIN_IN 8

/* Calls of thread @p t that entered in [@p lo, @p hi). */
static uint64_t calls_in(const struct model *m, uint32_t t, uint64_t lo, uint64_t hi)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t a = model_call_search(m, th->first_call, th->first_call + th->ncalls, lo, 0);
    uint64_t b = model_call_search(m, a, th->first_call + th->ncalls, hi, 0);

    return b - a;
}

/* How much slower slice @p c made its process: the busiest thread of the
 * slice, its calls' pace inside [on, off) against the stretch from the
 * process's previous detach to this attach, times its calls inside (the
 * shim's own measure, shim_gpu.c pace_cost). 0 when it cannot be told
 * (the process's first slice, too few calls). */
static uint64_t slice_slowdown(const struct model *m, const struct m_gcov *c, uint64_t prev_detach)
{
    uint64_t best = 0, out = 0;
    double p_in, p_out;

    if (prev_detach == 0 || prev_detach >= c->t_attach_ns || c->t_end_ns <= c->t_start_ns)
        return 0;
    for (uint32_t t = 0; t < m->nthr; t++) {
        uint64_t n;
        if (m->thr[t].proc != c->proc ||
            (n = calls_in(m, t, c->t_start_ns, c->t_end_ns)) <= best)
            continue;
        best = n;
        out = calls_in(m, t, prev_detach, c->t_attach_ns);
    }
    if (best < PACE_MIN_IN || out < PACE_MIN_OUT)
        return 0;
    p_in = (double)(c->t_end_ns - c->t_start_ns) / (double)best;
    p_out = (double)(c->t_attach_ns - prev_detach) / (double)out;
    return p_in > p_out ? (uint64_t)((p_in - p_out) * (double)best) : 0;
}

/* What sampling cost the program: the slices recorded, the time their
 * attaches and detaches took on the threads that made them, and how much
 * slower their busiest threads' calls came inside them (docs/gpu.md,
 * "Sampled slices keep within a budget"). */
static void slices_json(json_t *o, const struct model *m)
{
    uint64_t n = 0, sw = 0, slow = 0, prev_detach = 0;
    uint32_t prev_proc = UINT32_MAX;

    for (uint64_t i = 0; i < m->ngcov; i++) {
        const struct m_gcov *c = &m->gcov[i];
        if (c->proc != prev_proc)
            prev_detach = 0, prev_proc = c->proc;
        if (c->mode != CS_GPU_MODE_SAMPLED || (c->flags & (CS_GCF_UNAVAIL | CS_GCF_PAUSED)))
            continue;
        n++;
        sw += (c->t_start_ns - c->t_attach_ns) + (c->t_detach_ns - c->t_end_ns);
        slow += slice_slowdown(m, c, prev_detach);
        prev_detach = c->t_detach_ns;
    }
    json_object_set_new(o, "slices", json_integer((json_int_t)n));
    json_object_set_new(o, "switch_ns", json_integer((json_int_t)sw));
    json_object_set_new(o, "slowdown_ns", json_integer((json_int_t)slow));
}

json_t *gpu_json(const struct gpu_truth *g, const struct model *m)
{
    uint64_t window = 0, covered = 0, busy = 0, idle_est = 0, idle_meas = 0, by[GH_COUNT] = {0};
    json_t *devs = json_array(), *o, *byo = json_object();

    for (uint32_t i = 0; i < g->np; i++) {
        const struct gpu_proc *gp = &g->p[i];
        window += gp->window_ns;
        covered += gp->covered_ns;
        busy += gp->busy_ns;
        idle_meas += gp->idle_ns;
        idle_est += gpu_estimate(gp, gp->idle_ns);
        for (int s = 0; s < GH_COUNT; s++)
            by[s] += gpu_estimate(gp, gp->by[s]);
    }
    for (int s = 0; s < GH_COUNT; s++)
        json_object_set_new(byo, gpu_host_name(s), json_integer((json_int_t)by[s]));
    for (uint32_t i = 0; i < g->nd; i++)
        json_array_append_new(devs, dev_json(m, &g->d[i]));
    o = json_pack("{s:s, s:f, s:I, s:I, s:I, s:f, s:I, s:o, s:o, s:O}", "source",
                  gpu_source_name(g->source), "busy_pct", pct(busy, covered), "idle_ns",
                  (json_int_t)idle_est, "window_ns", (json_int_t)window, "covered_ns",
                  (json_int_t)covered, "coverage_pct", pct(covered, window), "idle_measured_ns",
                  (json_int_t)idle_meas, "idle_by_host_state", byo, "devices", devs, "notes",
                  g->notes);
    kernels_json(o, m);
    slices_json(o, m);
    json_object_set_new(o, "graphs", graphs_json(m));
    return o;
}

void gpu_exit(struct gpu_truth *g)
{
    struct dev_ivs *v = g->priv;

    for (uint32_t i = 0; v && i < g->nd; i++) {
        free(v[i].cov);
        free(v[i].busy);
    }
    free(v);
    free(g->d);
    free(g->p);
    json_decref(g->notes);
    memset(g, 0, sizeof(*g));
}
