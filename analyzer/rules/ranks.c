/* rules/ranks.c: per-rank tables and the rank_straggler finding (ranks.h has the
 * method). Only reads the model; the finding's JSON has the keys of every
 * other chain (docs/json.md) plus rank, host_cause, steps, straggled_steps
 * and lost_ns. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "chains.h"
#include "cudaspy/api.h"
#include "cudaspy/grow.h"
#include "fmt.h"
#include "ranks.h"
#include "model/procs.h"
#include "model/stats.h"

#define US 1000ull
#define MS 1000000ull
#define RK_MAX_PROCS 8
#define RK_NOTABLE_NS (100 * US) /* a step counts when skew and loss both reach this */
#define RK_MIN_STEPS 2           /* straggled steps needed for a finding */
#define RK_WARMUP 4              /* sync points left out at the start, at least (2 %) */
#define RK_ALIGN_MAX 4           /* sync points a rank's sequence may be shifted by */
#define RK_ALIGN_SAMPLE 512      /* sync points compared to choose the shift */
#define RK_PAGE_STORM 4          /* page allocation rate x median = storm */
#define RK_PAGE_COST_NS 1000     /* CPU to allocate, zero and fault in one page */
#define RK_PAGE_SHARE 10         /* % of the busy time pages must explain */

/* Where the straggler's syncing thread spent the time it was late. */
enum rk_cause { RK_BUSY, RK_PAGE, RK_PRE_TREE, RK_PRE_EXT, RK_SLEEP, RK_DISK, RK_CUDA, RK_NCAUSE };

static const char *const rk_cause_names[RK_NCAUSE] = {
    "busy", "page_alloc", "preempted_tree", "preempted_external", "sleep", "io_wait", "cuda"};

/* A thread of a rank, not its syncing one, woken by another rank's process
 * at t_ns: the helper thread of a host barrier (gloo) that then wakes the
 * syncing thread. */
struct rk_relay {
    uint32_t tid;
    uint64_t t_ns;
};

struct rk_rank {
    uint32_t rank;
    uint32_t proc[RK_MAX_PROCS], nproc;
    uint32_t thr;       /* syncing thread (model.thr), M_NONE if none */
    uint32_t *thrs, nthrs; /* every thread of its processes */
    uint64_t *sync;     /* outermost sync calls of thr (model.call indices) */
    uint64_t nsync;
    uint64_t first;     /* index in sync of aligned step 0 (align()) */
    uint64_t *wait, *ready; /* per aligned step */
    uint64_t med_wait;
    uint64_t lost_ns, straggled, caused_ns;
    uint64_t cause_ns[RK_NCAUSE];
    uint64_t win_pages, win_ns;  /* page allocations within the late windows */
    uint32_t holder_pid;         /* the process that preempted it most when late */
    uint64_t holder_ns;
    uint64_t worst_step, worst_lost;
    uint64_t first_late, last_late; /* sync points of its first and last straggle */
    struct rk_relay *relay;     /* its other threads' sleeps that a peer ended, by tid, time */
    size_t nrelay, relay_cap;
};

struct rk_ctx {
    const struct model *m;
    uint64_t wall_ns;
    struct rk_rank *r;
    uint32_t n;
    uint32_t *rank_of; /* per model.proc: index in r, M_NONE */
    uint64_t steps;
    uint64_t warmup; /* first sync points left out (start-up: first calls, init) */
};

/* ---- helpers ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t median(const uint64_t *v, uint64_t n)
{
    uint64_t *t = malloc((n ? n : 1) * sizeof(*t)), med;

    if (t == NULL)
        return 0;
    memcpy(t, v, n * sizeof(*t));
    qsort(t, n, sizeof(*t), cmp_u64);
    med = stats_rank(t, n, 500);
    free(t);
    return med;
}

/* ---- grouping ---- */

static struct rk_rank *rank_get(struct rk_ctx *x, uint32_t rank)
{
    for (uint32_t i = 0; i < x->n; i++)
        if (x->r[i].rank == rank)
            return &x->r[i];
    struct rk_rank *r = &x->r[x->n++];
    memset(r, 0, sizeof(*r));
    r->rank = rank;
    r->thr = M_NONE;
    return r;
}

static int cmp_rank(const void *a, const void *b)
{
    const struct rk_rank *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int group(struct rk_ctx *x)
{
    const struct model *m = x->m;

    x->r = calloc(m->nproc + 1, sizeof(*x->r));
    x->rank_of = malloc((m->nproc + 1) * sizeof(*x->rank_of));
    if (x->r == NULL || x->rank_of == NULL)
        return -ENOMEM;
    for (uint32_t p = 0; p < m->nproc; p++) {
        const struct m_proc *pr = &m->proc[p];
        if (!pr->selected || !pr->has_cuda || pr->rank == CS_RANK_NONE)
            continue;
        struct rk_rank *r = rank_get(x, pr->rank);
        if (r->nproc < RK_MAX_PROCS)
            r->proc[r->nproc++] = p;
    }
    qsort(x->r, x->n, sizeof(*x->r), cmp_rank);
    for (uint32_t p = 0; p < m->nproc; p++)
        x->rank_of[p] = M_NONE;
    for (uint32_t i = 0; i < x->n; i++)
        for (uint32_t k = 0; k < x->r[i].nproc; k++)
            x->rank_of[x->r[i].proc[k]] = i;
    return 0;
}

/* The thread of rank @p ri with the most step syncs, and those syncs. */
static int pick_thread(struct rk_ctx *x, uint32_t ri)
{
    const struct model *m = x->m;
    struct rk_rank *r = &x->r[ri];
    uint64_t best = 0;

    if ((r->thrs = malloc((m->nthr + 1) * sizeof(*r->thrs))) == NULL)
        return -ENOMEM;
    for (uint32_t t = 0; t < m->nthr; t++) {
        uint64_t n = 0;
        if (x->rank_of[m->thr[t].proc] != ri)
            continue;
        r->thrs[r->nthrs++] = t;
        n = model_thread_step_syncs(m, t);
        if (n > best)
            best = n, r->thr = t;
    }
    if (best == 0)
        return 0;
    if ((r->sync = malloc(best * sizeof(*r->sync))) == NULL)
        return -ENOMEM;
    const struct m_thread *th = &m->thr[r->thr];
    for (uint64_t i = th->first_call; i < th->first_call + th->ncalls; i++) {
        const struct m_call c = model_call(m, i);
        if (model_is_step_sync(&c))
            r->sync[r->nsync++] = i;
    }
    return 0;
}

/* The sync call of rank @p r at aligned step @p k. */
static struct m_call sync_at(const struct model *m, const struct rk_rank *r, uint64_t k)
{
    return model_call(m, r->sync[r->first + k]);
}

/* Median distance between the returns of rank @p a's syncs and rank @p b's,
 * with b shifted by @p d sync points (over the first RK_ALIGN_SAMPLE). */
static uint64_t align_cost(const struct model *m, const struct rk_rank *a,
                           const struct rk_rank *b, int d)
{
    uint64_t v[RK_ALIGN_SAMPLE], n = 0;

    for (uint64_t k = d < 0 ? (uint64_t)-d : 0; n < RK_ALIGN_SAMPLE && k < a->nsync; k++) {
        uint64_t kb = k + (uint64_t)(int64_t)d;
        if (kb >= b->nsync)
            break;
        uint64_t ta = model_call(m, a->sync[k]).t_exit_ns, tb = model_call(m, b->sync[kb]).t_exit_ns;
        v[n++] = ta > tb ? ta - tb : tb - ta;
    }
    return n < RK_ALIGN_SAMPLE / 4 ? UINT64_MAX : median(v, n);
}

/* Ranks that made a few more syncs while setting up than the others would
 * pair step k with k+1 ever after: shift each rank by the offset (up to
 * RK_ALIGN_MAX sync points) whose sync returns lie closest to rank 0's, as
 * a collective returns on every rank at about the same time. */
static void align(struct rk_ctx *x)
{
    int lo = 0;

    for (uint32_t i = 1; i < x->n; i++) {
        uint64_t best = UINT64_MAX;
        for (int o = -RK_ALIGN_MAX; o <= RK_ALIGN_MAX; o++) {
            uint64_t c = align_cost(x->m, &x->r[0], &x->r[i], o);
            if (c < best)
                best = c, x->r[i].first = (uint64_t)(int64_t)o;
        }
        int o = (int)(int64_t)x->r[i].first;
        lo = o < lo ? o : lo;
    }
    x->r[0].first = (uint64_t)-lo;
    for (uint32_t i = 1; i < x->n; i++)
        x->r[i].first += (uint64_t)-lo;
    x->steps = UINT64_MAX;
    for (uint32_t i = 0; i < x->n; i++) {
        const struct rk_rank *r = &x->r[i];
        uint64_t left = r->nsync > r->first ? r->nsync - r->first : 0;
        x->steps = left < x->steps ? left : x->steps;
    }
}

/* ---- per-step waits ---- */

/* Whether @p waker, who woke a thread of run @p run, is a process of
 * another rank than @p self. Ranks may sit in different run files of one
 * host (one file per rank): every run of the sleeper's host is searched, as
 * its pids are one namespace; only a pid that host does not know is looked
 * for on the other hosts (hosts simulated on one machine, docs/multihost.md). */
static int woken_by_peer(const struct rk_ctx *x, uint32_t self, uint32_t run, uint32_t waker)
{
    const struct model *m = x->m;
    uint32_t dom = m->runs[run].clk.domain;
    int known = 0;

    for (int pass = 0; waker && pass < 2 && !known; pass++)
        for (int r = 0; r < m->nruns; r++) {
            if ((m->runs[r].clk.domain == dom) != (pass == 0))
                continue;
            uint32_t p = model_find_proc(m, (uint32_t)r, waker);
            if (p != M_NONE && x->rank_of[p] != M_NONE && x->rank_of[p] != self)
                return 1;
            known |= p != M_NONE;
        }
    return 0;
}

static int cmp_relay(const void *a, const void *b)
{
    const struct rk_relay *x = a, *y = b;

    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

/* Did a peer wake thread @p tid of rank @p r within [t0, t1]? */
static int relay_woken(const struct rk_rank *r, uint32_t tid, uint64_t t0, uint64_t t1)
{
    size_t lo = 0, hi = r->nrelay;

    while (lo < hi) { /* first entry >= (tid, t0) */
        size_t mid = (lo + hi) / 2;
        const struct rk_relay *e = &r->relay[mid];
        if (e->tid < tid || (e->tid == tid && e->t_ns < t0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nrelay && r->relay[lo].tid == tid && r->relay[lo].t_ns <= t1;
}

/* Whether waker @p pid/@p tid is another thread of rank @p ri than its
 * syncing one, itself woken by a peer during [t0, t1]. */
static int woken_by_relay(const struct rk_ctx *x, uint32_t ri, uint32_t run, uint32_t pid,
                          uint32_t tid, uint64_t t0, uint64_t t1)
{
    const struct rk_rank *r = &x->r[ri];
    uint32_t p = pid ? model_find_proc(x->m, run, pid) : M_NONE;

    return p != M_NONE && x->rank_of[p] == ri && tid != x->m->thr[r->thr].tid &&
           relay_woken(r, tid, t0, t1);
}

/* Time rank @p ri's syncing thread slept in [t0, t1) woken by another
 * rank's process, or by a thread of its own that a peer had just woken (a
 * barrier run by a helper thread, as gloo's). */
static uint64_t peer_sleep(const struct rk_ctx *x, uint32_t ri, uint64_t t0, uint64_t t1)
{
    const struct model *m = x->m;
    uint32_t t = x->r[ri].thr, run = m->proc[m->thr[t].proc].run;
    uint64_t end = m->thr[t].first_off + m->thr[t].noff, sum = 0;

    for (uint64_t i = model_off_after(m, t, t0); i < end && m->off[i].t_start_ns < t1; i++) {
        const struct m_off *o = &m->off[i];
        if (o->cls != CS_OFF_SLEEP && o->cls != CS_OFF_BLOCKED)
            continue;
        if (woken_by_peer(x, ri, run, o->waker_pid) ||
            woken_by_relay(x, ri, run, o->waker_pid, o->waker_tid, o->t_start_ns, o->t_end_ns))
            sum += model_overlap(o->t_start_ns, o->t_end_ns, t0, t1);
    }
    return sum;
}

/* One off-CPU record of run @p run: keep it if a peer woke a thread of a
 * rank other than its syncing thread. */
static int relay_add(struct rk_ctx *x, uint32_t run, const struct cs_rec_offcpu *o)
{
    uint32_t p, ri;
    struct rk_rank *r;

    if (o->cls != CS_OFF_SLEEP && o->cls != CS_OFF_BLOCKED)
        return 0;
    p = model_find_proc(x->m, run, o->pid);
    ri = p != M_NONE ? x->rank_of[p] : M_NONE;
    if (ri == M_NONE || x->r[ri].thr == M_NONE || o->tid == x->m->thr[x->r[ri].thr].tid ||
        !woken_by_peer(x, ri, run, o->waker_pid))
        return 0;
    r = &x->r[ri];
    if (cs_grow((void **)&r->relay, &r->relay_cap, r->nrelay + 1, sizeof(*r->relay)) < 0)
        return -ENOMEM;
    r->relay[r->nrelay++] = (struct rk_relay){o->tid, clocks_time(x->m, run, o->t_end_ns)};
    return 0;
}

static int relay_block(uint32_t run, const void *recs, uint32_t n, void *arg)
{
    int rc = 0;

    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = relay_add(arg, run, (const struct cs_rec_offcpu *)recs + i);
    return rc;
}

/* The model keeps off-CPU intervals of CUDA threads only: read the other
 * threads' from the run files, once. */
static int relays(struct rk_ctx *x)
{
    int rc = model_scan(x->m, CS_REC_OFFCPU, relay_block, x);

    for (uint32_t i = 0; rc == 0 && i < x->n; i++)
        if (x->r[i].nrelay)
            qsort(x->r[i].relay, x->r[i].nrelay, sizeof(struct rk_relay), cmp_relay);
    return rc;
}

static int waits(struct rk_ctx *x, uint32_t ri)
{
    const struct model *m = x->m;
    struct rk_rank *r = &x->r[ri];

    r->wait = calloc(x->steps + 1, sizeof(*r->wait));
    r->ready = calloc(x->steps + 1, sizeof(*r->ready));
    if (r->wait == NULL || r->ready == NULL)
        return -ENOMEM;
    for (uint64_t k = 0; k < x->steps; k++) {
        const struct m_call cv = sync_at(m, r, k), *c = &cv;
        uint64_t prev = r->first + k ? model_call(m, r->sync[r->first + k - 1]).t_exit_ns
                                     : c->t_enter_ns;
        uint64_t ps = peer_sleep(x, ri, prev, c->t_enter_ns);
        r->wait[k] = model_dur(c) + ps;
        r->ready[k] = c->t_enter_ns - ps;
    }
    r->med_wait = median(r->wait, x->steps);
    return 0;
}

/* ---- the straggler's host cause ---- */

/* Keep the process that preempted the straggler longest (a running max
 * over intervals: cheap, and right whenever one holder dominates). */
static void holder_note(struct rk_rank *s, uint32_t pid, uint64_t ns)
{
    if (pid == 0)
        return;
    if (pid == s->holder_pid)
        s->holder_ns += ns;
    else if (ns > s->holder_ns)
        s->holder_pid = pid, s->holder_ns = ns;
}

/* The runnable tail of sleep or D interval @p o inside [a, b): woken, kept
 * off the CPU by other processes, which cost the straggler that time just
 * as a preemption would (chains_evidence.c's wake-up waits). Counted as
 * preemption by the outside's share of the CPU meanwhile. @return its start, or @p b
 * when no system window says who had the CPU. */
static uint64_t wake_wait(const struct rk_ctx *x, struct rk_rank *s, const struct m_off *o,
                          uint64_t a, uint64_t b)
{
    const struct model *m = x->m;
    uint32_t p = m->thr[s->thr].proc;
    uint64_t w0 = o->t_end_ns - (o->runq_ns < o->t_end_ns - o->t_start_ns
                                     ? o->runq_ns : o->t_end_ns - o->t_start_ns);
    double share;

    w0 = w0 > a ? w0 : a;
    if (w0 >= b || (share = procs_ext_share(m, m->proc[p].run, p, w0, b)) < 0)
        return b;
    s->cause_ns[RK_PRE_EXT] += (uint64_t)((double)(b - w0) * share);
    s->cause_ns[RK_PRE_TREE] += (b - w0) - (uint64_t)((double)(b - w0) * share);
    return w0;
}

/* Decompose the straggler @p s's window [t0, t1) of one late step.
 * Preemption counts wherever it happens, and so does waiting for a CPU
 * after a wake-up; sleep and D state inside its own CUDA calls are CUDA
 * time (a sync waiting for its GPU), outside them host waits; the rest of
 * the window it was on CPU. */
static void late_window(struct rk_ctx *x, struct rk_rank *s, uint64_t t0, uint64_t t1)
{
    const struct model *m = x->m;
    uint32_t t = s->thr;
    uint64_t end = m->thr[t].first_off + m->thr[t].noff, off = 0, pre_in = 0;
    uint64_t cuda = model_calls_inside(m, t, t0, t1);

    for (uint64_t i = model_off_after(m, t, t0); i < end && m->off[i].t_start_ns < t1; i++) {
        const struct m_off *o = &m->off[i];
        uint64_t a = o->t_start_ns > t0 ? o->t_start_ns : t0;
        uint64_t b = o->t_end_ns < t1 ? o->t_end_ns : t1;
        uint64_t in, ns, w0;
        if (b <= a)
            continue;
        if (o->cls == CS_OFF_PREEMPT) {
            ns = b - a;
            s->cause_ns[o->flags & CS_HF_HOLDER_IN_TREE ? RK_PRE_TREE : RK_PRE_EXT] += ns;
            pre_in += model_calls_inside(m, t, a, b);
            holder_note(s, o->holder_pid, ns);
            off += ns;
            continue;
        }
        w0 = wake_wait(x, s, o, a, b);
        pre_in += model_calls_inside(m, t, w0, b);
        off += b - w0;
        in = model_calls_inside(m, t, a, w0);
        ns = w0 - a > in ? w0 - a - in : 0;
        s->cause_ns[o->cls == CS_OFF_DISK ? RK_DISK : RK_SLEEP] += ns;
        off += ns;
    }
    cuda = cuda > pre_in ? cuda - pre_in : 0;
    s->cause_ns[RK_CUDA] += cuda;
    s->cause_ns[RK_BUSY] += t1 - t0 > off + cuda ? t1 - t0 - off - cuda : 0;
    s->win_pages += (uint64_t)procs_win_sum(m, m->thr[t].proc, t0, t1, PW_PAGES);
    s->win_ns += t1 - t0;
}

/* What rank @p r lost at step @p k to a straggler ready at @p late: its
 * wait beyond its median, but no more than it waited for the straggler (a
 * rank woken late, or slow on its own, lost that time to something else). */
static uint64_t lost_at(const struct rk_rank *r, uint64_t k, uint64_t late)
{
    uint64_t beyond = r->wait[k] > r->med_wait ? r->wait[k] - r->med_wait : 0;
    uint64_t skew = late > r->ready[k] ? late - r->ready[k] : 0;
    return beyond < skew ? beyond : skew;
}

/* One aligned step: who was ready last, what the others lost. */
static void step(struct rk_ctx *x, uint64_t k)
{
    uint32_t si = 0;
    uint64_t second = 0, lost = 0;

    for (uint32_t i = 1; i < x->n; i++)
        if (x->r[i].thr != M_NONE && x->r[i].ready[k] > x->r[si].ready[k])
            si = i;
    for (uint32_t i = 0; i < x->n; i++)
        if (i != si && x->r[i].ready[k] > second)
            second = x->r[i].ready[k];
    struct rk_rank *s = &x->r[si];
    for (uint32_t i = 0; i < x->n; i++)
        if (i != si)
            lost += lost_at(&x->r[i], k, s->ready[k]);
    if (s->ready[k] < second + RK_NOTABLE_NS || lost < RK_NOTABLE_NS)
        return;
    for (uint32_t i = 0; i < x->n; i++)
        if (i != si)
            x->r[i].lost_ns += lost_at(&x->r[i], k, s->ready[k]);
    if (s->straggled++ == 0)
        s->first_late = k;
    s->last_late = k;
    s->caused_ns += lost;
    if (lost > s->worst_lost)
        s->worst_lost = lost, s->worst_step = k;
    late_window(x, s, second, s->ready[k]);
}

/* ---- per-rank table ---- */

static uint64_t page_rate_median(const struct model *m, uint32_t p)
{
    const struct m_proc *pr = &m->proc[p];
    uint64_t *v = malloc((pr->npwin ? pr->npwin : 1) * sizeof(*v)), med;

    if (v == NULL)
        return 0;
    for (uint64_t i = 0; i < pr->npwin; i++) {
        const struct cs_rec_pwin *w = &m->pwin[pr->first_pwin + i];
        uint64_t len = w->t_end_ns > w->t_start_ns ? w->t_end_ns - w->t_start_ns : 1;
        v[i] = (uint64_t)((double)w->page_allocs * 1e9 / (double)len);
    }
    med = median(v, pr->npwin);
    free(v);
    return med;
}

static json_t *api_rows(const struct rk_ctx *x, const struct rk_rank *r)
{
    const struct model *m = x->m;
    json_t *arr = json_array();
    char name[96];

    for (unsigned api = 1; api < CS_API_COUNT; api++) {
        uint64_t n = 0, cap = 0, *v = NULL;
        struct stats_summary s;
        if (cs_api_table[api].family != CS_FAM_SYNC || !cs_api_table[api].is_sync)
            continue;
        for (uint32_t j = 0; j < r->nthrs; j++) {
            uint32_t t = r->thrs[j];
            for (uint64_t i = 0; i < m->thr[t].ncalls; i++) {
                const struct m_call cv = model_call(m, m->thr[t].first_call + i), *c = &cv;
                if (c->api != api || (c->flags & CS_CF_NESTED))
                    continue;
                if (n == cap) {
                    uint64_t *q = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*v));
                    if (q == NULL)
                        break;
                    v = q;
                }
                v[n++] = model_dur(c);
            }
        }
        if (n) {
            stats_sort(v, n, NULL);
            stats_summarize(v, n, &s);
            snprintf(name, sizeof(name), "%s", cs_api_table[api].name);
            json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "api", name,
                                                 "count", (json_int_t)n, "total_ns",
                                                 (json_int_t)s.total_ns, "p50_ns",
                                                 (json_int_t)s.p50_ns, "p99_ns",
                                                 (json_int_t)s.p99_ns, "max_ns",
                                                 (json_int_t)s.max_ns));
        }
        free(v);
    }
    return arr;
}

static json_t *rank_json(const struct rk_ctx *x, const struct rk_rank *r)
{
    const struct model *m = x->m;
    json_t *pids = json_array(), *apis = api_rows(x, r), *o;
    uint64_t calls = 0, cuda = 0, oncpu = 0, sleep = 0, disk = 0, pre = 0, sync = 0;
    unsigned devs = 0;
    size_t i;
    json_t *a;

    for (uint32_t k = 0; k < r->nproc; k++) {
        const struct m_proc_stats *s = &m->proc[r->proc[k]].st;
        json_array_append_new(pids, json_integer(m->proc[r->proc[k]].pid));
        calls += s->cuda_calls, cuda += s->cuda_ns, oncpu += s->oncpu_ns;
        sleep += s->sleep_ns, disk += s->disk_ns, pre += s->preempt_ns;
        devs |= m->proc[r->proc[k]].devices;
    }
    json_array_foreach(apis, i, a)
        sync += (uint64_t)json_integer_value(json_object_get(a, "total_ns"));
    o = json_pack("{s:i, s:o, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "rank",
                  (int)r->rank, "pids", pids, "run", (int)m->proc[r->proc[0]].run, "device",
                  devs ? __builtin_ctz(devs) : -1,
                  "cuda_calls", (json_int_t)calls, "cuda_ns", (json_int_t)cuda, "sync_ns",
                  (json_int_t)sync, "oncpu_ns", (json_int_t)oncpu, "offcpu_ns",
                  (json_int_t)(sleep + disk + pre), "sleep_ns", (json_int_t)sleep, "disk_ns",
                  (json_int_t)disk, "preempted_ns", (json_int_t)pre);
    const char *host = cs_run_meta(m->runs[m->proc[r->proc[0]].run].run, "host");
    if (host)
        json_object_set_new(o, "host", json_string(host));
    json_object_set_new(o, "steps", json_integer((json_int_t)(r->thr == M_NONE ? 0 : x->steps)));
    json_object_set_new(o, "skipped_syncs", json_integer((json_int_t)r->first));
    json_object_set_new(o, "median_wait_ns", json_integer((json_int_t)r->med_wait));
    json_object_set_new(o, "lost_ns", json_integer((json_int_t)r->lost_ns));
    json_object_set_new(o, "straggled_steps", json_integer((json_int_t)r->straggled));
    json_object_set_new(o, "caused_ns", json_integer((json_int_t)r->caused_ns));
    json_object_set_new(o, "apis", apis);
    return o;
}

/* ---- the finding ---- */

static int top_cause(const struct rk_ctx *x, const struct rk_rank *s)
{
    int best = RK_BUSY;
    uint64_t med;

    for (int k = 0; k < RK_NCAUSE; k++)
        if (s->cause_ns[k] > s->cause_ns[best])
            best = k;
    if (best != RK_BUSY || s->win_ns == 0)
        return best;
    /* a storm only if it is a storm against the run's median and the
       pages could have cost a real share of the busy time: 180 pages in
       8 s of a spinning rank is not why it was late */
    if (s->win_pages < 64 ||
        s->win_pages * RK_PAGE_COST_NS * 100 < s->cause_ns[RK_BUSY] * RK_PAGE_SHARE)
        return best;
    med = page_rate_median(x->m, s->proc[0]);
    double rate = (double)s->win_pages * 1e9 / (double)s->win_ns;
    return rate >= (double)(med ? med : 1) * RK_PAGE_STORM ? RK_PAGE : best;
}

static const char *rank_pid_label(const struct rk_ctx *x, const struct rk_rank *r, char *buf,
                                  size_t n)
{
    const struct m_proc *p = &x->m->proc[r->proc[0]];
    const char *host = clocks_host(x->m, p->run);

    snprintf(buf, n, "%s%spid %u %s", host ? host : "", host ? ", " : "", p->pid, p->comm);
    return buf;
}

static void cause_text(const struct rk_ctx *x, const struct rk_rank *s, int cause, char *what,
                       size_t wn, char *rec, size_t rn)
{
    char a[32], hb[64] = "";
    uint64_t per = s->straggled ? s->cause_ns[cause == RK_PAGE ? RK_BUSY : cause] / s->straggled : 0;
    uint32_t hp = s->holder_pid ? model_find_proc(x->m, x->m->proc[s->proc[0]].run, s->holder_pid)
                                : M_NONE;

    if (s->holder_pid)
        snprintf(hb, sizeof(hb), " by pid %u (%s)", s->holder_pid,
                 hp != M_NONE ? x->m->proc[hp].comm : "outside the traced tree");
    fmt_ns(a, sizeof(a), per);
    switch (cause) {
    case RK_PAGE:
        snprintf(what, wn, "on CPU allocating pages (%s per late step)", a);
        snprintf(rec, rn, "pre-allocate and reuse host buffers on rank %u (pinned, or a caching "
                 "allocator); avoid fresh large mallocs per step", s->rank);
        break;
    case RK_PRE_TREE:
    case RK_PRE_EXT:
        snprintf(what, wn, "kept off the CPU%s: preempted or not run after a wake-up (%s per "
                 "late step)", hb, a);
        snprintf(rec, rn, "give rank %u's process its own CPUs (taskset/cpuset per rank, "
                 "OMP_NUM_THREADS, fewer data-loader workers) or move the competing process "
                 "away", s->rank);
        break;
    case RK_SLEEP:
        snprintf(what, wn, "asleep outside CUDA calls (%s per late step)", a);
        snprintf(rec, rn, "find what rank %u waits for before its step (data loading, a lock, "
                 "I/O on a socket): prefetch it or make it asynchronous", s->rank);
        break;
    case RK_DISK:
        snprintf(what, wn, "in uninterruptible (D) waits (%s per late step)", a);
        snprintf(rec, rn, "rank %u blocks on disk I/O before its step: stage its data in "
                 "memory or prefetch it", s->rank);
        break;
    case RK_CUDA:
        snprintf(what, wn, "inside its own CUDA calls (%s per late step)", a);
        snprintf(rec, rn, "rank %u's own GPU work or driver calls take longer: compare its "
                 "device (clocks, thermal, other tenants) and its share of the work", s->rank);
        break;
    default:
        snprintf(what, wn, "on CPU (%s per late step)", a);
        snprintf(rec, rn, "move rank %u's extra host work off the step's critical path "
                 "(background thread, fewer or faster data-loader steps) or balance the work "
                 "and data loading across ranks", s->rank);
    }
}

static void evidence(const struct rk_ctx *x, const struct rk_rank *s, json_t *ev)
{
    char a[32], b[32], c[32], d[32], e[32], f[32], l[64];

    jaddf(ev, "%" PRIu64 " sync points aligned over %u ranks (the k-th host sync of each rank's "
              "syncing thread; the first %" PRIu64 " left out as warm-up); rank %u was ready last in %"
              PRIu64 " of them by %s or more",
          x->steps, x->n, x->warmup, s->rank, s->straggled, fmt_ns(a, sizeof(a), RK_NOTABLE_NS));
    for (uint32_t i = 0; i < x->n; i++) {
        const struct rk_rank *r = &x->r[i];
        if (r == s || r->thr == M_NONE)
            continue;
        jaddf(ev, "rank %u (%s) lost %s waiting beyond its median wait of %s per step",
              r->rank, rank_pid_label(x, r, l, sizeof(l)), fmt_ns(b, sizeof(b), r->lost_ns),
              fmt_ns(c, sizeof(c), r->med_wait));
    }
    jaddf(ev, "rank %u's syncing thread in its late windows (%s in all): on CPU %s, in CUDA "
              "calls %s, preempted %s (tree %s), asleep %s, D %s",
          s->rank, fmt_ns(a, sizeof(a), s->win_ns), fmt_ns(b, sizeof(b), s->cause_ns[RK_BUSY]),
          fmt_ns(c, sizeof(c), s->cause_ns[RK_CUDA]),
          fmt_ns(l, sizeof(l), s->cause_ns[RK_PRE_TREE] + s->cause_ns[RK_PRE_EXT]),
          fmt_ns(d, sizeof(d), s->cause_ns[RK_PRE_TREE]),
          fmt_ns(e, sizeof(e), s->cause_ns[RK_SLEEP]), fmt_ns(f, sizeof(f), s->cause_ns[RK_DISK]));
    jaddf(ev, "page allocations of rank %u in those windows: %" PRIu64 " (%.0f/s; median "
              "window %" PRIu64 "/s)",
          s->rank, s->win_pages, s->win_ns ? (double)s->win_pages * 1e9 / (double)s->win_ns : 0,
          page_rate_median(x->m, s->proc[0]));
}


/* Timeline and examples of the worst step straggled by @p s. */
static void worst_step(const struct rk_ctx *x, const struct rk_rank *s, json_t *tl, json_t *ex)
{
    const struct model *m = x->m;
    uint64_t k = s->worst_step;
    uint32_t run = m->proc[s->proc[0]].run;
    char a[32], b[32], n[96];

    for (uint32_t i = 0; i < x->n; i++) {
        const struct rk_rank *r = &x->r[i];
        const struct m_call cv = sync_at(m, r, k), *c = &cv;
        const struct m_proc *p = model_call_proc(m, c);
        cs_api_display(c->api, c->variant, n, sizeof(n));
        if (r == s) {
            chains_tl_add(tl, m, run, c->t_enter_ns, "[CUDA]", "rank %u (pid %u) enters %s of step %"
                   PRIu64 " last", r->rank, p->pid, n, k);
            continue;
        }
        chains_tl_add(tl, m, run, r->ready[k], "[HOST]", "rank %u (pid %u) ready for step %" PRIu64
               ", waits for its peers", r->rank, p->pid, k);
        chains_tl_add(tl, m, run, c->t_exit_ns, "[CUDA]", "rank %u's %s returns: waited %s (median %s)",
               r->rank, n, fmt_ns(a, sizeof(a), r->wait[k]), fmt_ns(b, sizeof(b), r->med_wait));
        uint64_t lost = r->wait[k] > r->med_wait ? r->wait[k] - r->med_wait : 0;
        json_array_append_new(
            ex, json_pack("{s:I, s:f, s:I, s:s, s:i, s:i, s:I, s:s}", "t_ns",
                          (json_int_t)chains_rel(m, run, c->t_enter_ns), "t_s",
                          (double)chains_rel(m, run, c->t_enter_ns) / 1e9, "dur_ns",
                          (json_int_t)model_dur(c), "api", n, "pid", (int)p->pid, "tid",
                          (int)m->thr[c->thr].tid, "cause_ns", (json_int_t)lost, "note",
                          "waited for the straggling rank"));
    }
}

static int cmp_tl(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "t_ns"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "t_ns"));
    return x < y ? -1 : x > y;
}

static void tl_sort(json_t *tl)
{
    size_t n = json_array_size(tl);
    json_t **v = malloc((n ? n : 1) * sizeof(*v));

    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(tl, i));
    qsort(v, n, sizeof(*v), cmp_tl);
    json_array_clear(tl);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(tl, v[i]);
    free(v);
}

static json_t *finding(const struct rk_ctx *x, const struct rk_rank *s)
{
    const struct model *m = x->m;
    json_t *ev = json_array(), *tl = json_array(), *ex = json_array();
    int cause = top_cause(x, s);
    char what[256], rec[512], summary[640], a[32], l[64];
    const struct rk_rank *w = &x->r[s == &x->r[0] ? 1 : 0]; /* a waiting rank, for the api */
    const struct m_call wcv = sync_at(m, w, s->worst_step), *wc = &wcv;
    char api[96];
    uint64_t p50 = w->med_wait;

    cause_text(x, s, cause, what, sizeof(what), rec, sizeof(rec));
    evidence(x, s, ev);
    worst_step(x, s, tl, ex);
    tl_sort(tl);
    cs_api_display(wc->api, wc->variant, api, sizeof(api));
    snprintf(summary, sizeof(summary), "rank %u (%s) arrived last at %" PRIu64 " of %" PRIu64
             " sync points (about one in %" PRIu64 "), %s; the other ranks lost %s waiting for it",
             s->rank, rank_pid_label(x, s, l, sizeof(l)), s->straggled, x->steps,
             s->straggled > 1 ? (s->last_late - s->first_late) / (s->straggled - 1) : 1, what,
             fmt_ns(a, sizeof(a), s->caused_ns));
    char full_rec[700];
    snprintf(full_rec, sizeof(full_rec), "%s; the others lost %s waiting", rec, a);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:I, s:f, s:f, s:s, s:o, s:o, s:o, s:s}", "severity",
        chains_sev_name(chains_severity(s->caused_ns, x->wall_ns)), "cause", "rank_straggler",
        "api", api, "count", (json_int_t)x->steps, "p50_ns", (json_int_t)p50, "p99_ns",
        (json_int_t)w->wait[s->worst_step], "ratio",
        p50 ? (double)w->wait[s->worst_step] / (double)p50 : 0.0, "impact_ns",
        (json_int_t)s->caused_ns, "impact_pct",
        x->wall_ns ? 100.0 * (double)s->caused_ns / (double)x->wall_ns : 0.0, "outlier_share",
        0.0, "summary", summary, "evidence", ev, "timeline", tl, "examples", ex,
        "recommendation", full_rec);
    char line[768], tot[32];
    snprintf(line, sizeof(line), "[HOST] rank %u %s -> [CUDA] rank %u's %s waits %s at its worst "
             "step (median %s); %s lost in all", s->rank, what, w->rank, api,
             fmt_ns(a, sizeof(a), w->wait[s->worst_step]), fmt_ns(l, sizeof(l), p50),
             fmt_ns(tot, sizeof(tot), s->caused_ns));
    json_object_set_new(o, "chain", json_string(line));
    json_object_set_new(o, "rank", json_integer(s->rank));
    if (clocks_host(x->m, x->m->proc[s->proc[0]].run))
        json_object_set_new(o, "host", json_string(clocks_host(x->m, x->m->proc[s->proc[0]].run)));
    json_object_set_new(o, "host_cause", json_string(rk_cause_names[cause]));
    json_object_set_new(o, "steps", json_integer((json_int_t)x->steps));
    json_object_set_new(o, "straggled_steps", json_integer((json_int_t)s->straggled));
    json_object_set_new(o, "lost_ns", json_integer((json_int_t)s->caused_ns));
    json_object_set_new(o, "host_cause_ns", json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I}", "busy", (json_int_t)s->cause_ns[RK_BUSY],
        "preempted_tree", (json_int_t)s->cause_ns[RK_PRE_TREE], "preempted_external",
        (json_int_t)s->cause_ns[RK_PRE_EXT], "sleep", (json_int_t)s->cause_ns[RK_SLEEP],
        "io_wait", (json_int_t)s->cause_ns[RK_DISK], "cuda", (json_int_t)s->cause_ns[RK_CUDA]));
    return o;
}

/* rank_straggler is measured across ranks, not read from the account:
 * its impact is capped at what the other findings leave of the window, so
 * that the impacts never add up past it (its lost_ns stays as measured). */
static void cap_impact(const json_t *chains, json_t *f, uint64_t wall_ns)
{
    double taken = 0, pct = json_number_value(json_object_get(f, "impact_pct"));
    const json_t *c;
    size_t i;

    json_array_foreach(chains, i, c)
        taken += json_number_value(json_object_get(c, "impact_pct"));
    if (pct + taken <= 100.0 || wall_ns == 0)
        return;
    pct = taken < 100.0 ? 100.0 - taken : 0.0;
    json_object_set_new(f, "impact_pct", json_real(pct));
    json_object_set_new(f, "impact_ns", json_integer((json_int_t)(pct / 100.0 * (double)wall_ns)));
}

static void insert_finding(json_t *chains, json_t *f, int top)
{
    json_int_t imp = json_integer_value(json_object_get(f, "impact_ns"));
    size_t i = 0;

    while (i < json_array_size(chains) &&
           json_integer_value(json_object_get(json_array_get(chains, i), "impact_ns")) >= imp)
        i++;
    json_array_insert_new(chains, i, f);
    if (top > 0 && json_array_size(chains) > (size_t)top)
        json_array_remove(chains, json_array_size(chains) - 1);
}

/* ---- entry ---- */

static int analyse(struct rk_ctx *x)
{
    int rc;

    x->steps = UINT64_MAX;
    for (uint32_t i = 0; i < x->n; i++) {
        if ((rc = pick_thread(x, i)) < 0)
            return rc;
        if (x->r[i].thr != M_NONE && x->r[i].nsync < x->steps)
            x->steps = x->r[i].nsync;
    }
    for (uint32_t i = 0; i < x->n; i++)
        if (x->r[i].thr == M_NONE)
            x->steps = 0;
    if (x->n < 2 || x->steps == UINT64_MAX || x->steps < 10) {
        x->steps = x->steps == UINT64_MAX ? 0 : x->steps;
        return 0;
    }
    align(x);
    if (x->steps < 10)
        return 0;
    if ((rc = relays(x)) < 0)
        return rc;
    for (uint32_t i = 0; i < x->n; i++)
        if ((rc = waits(x, i)) < 0)
            return rc;
    x->warmup = x->steps / 50 > RK_WARMUP ? x->steps / 50 : RK_WARMUP;
    for (uint64_t k = x->warmup; k < x->steps; k++)
        step(x, k);
    return 1;
}

int ranks_build(const struct model *m, uint64_t wall_ns, json_t *chains, json_t **ranks_out)
{
    struct rk_ctx x = {.m = m, .wall_ns = wall_ns};
    json_t *arr = json_array();
    int rc = arr ? group(&x) : -ENOMEM;

    if (rc == 0)
        rc = analyse(&x);
    if (rc == 1) {
        struct rk_rank *s = &x.r[0];
        for (uint32_t i = 1; i < x.n; i++)
            if (x.r[i].caused_ns > s->caused_ns)
                s = &x.r[i];
        if (s->straggled >= RK_MIN_STEPS && s->caused_ns * 200 >= wall_ns) {
            json_t *f = finding(&x, s);
            cap_impact(chains, f, wall_ns);
            insert_finding(chains, f, m->opts.top);
        }
        rc = 0;
    }
    for (uint32_t i = 0; rc == 0 && i < x.n; i++)
        json_array_append_new(arr, rank_json(&x, &x.r[i]));
    for (uint32_t i = 0; i < x.n; i++)
        free(x.r[i].sync), free(x.r[i].wait), free(x.r[i].ready), free(x.r[i].thrs),
            free(x.r[i].relay);
    free(x.r);
    free(x.rank_of);
    if (rc < 0) {
        json_decref(arr);
        arr = NULL;
    }
    *ranks_out = arr;
    return rc;
}

/* ---- text ---- */

void ranks_print(FILE *f, const json_t *j, int color)
{
    const json_t *ranks = json_object_get(j, "ranks"), *r, *a;
    char b[8][32];
    size_t i, k;

    if (json_array_size(ranks) == 0)
        return;
    fprintf(f, "\n%sRANKS%s (step = k-th host sync of each rank; wait = sync + sleep woken by "
               "a peer)\n", color ? "\033[1m" : "", color ? "\033[0m" : "");
    int hosts = json_array_size(json_object_get(j, "hosts")) > 0; /* several: name them */
    fprintf(f, "  %4s %-16s %9s %9s %9s %9s %9s %7s %9s %9s %6s\n", "rank",
            hosts ? "host:pids" : "pids", "cuda", "sync t", "on-CPU", "off-CPU", "preempt",
            "steps", "med wait", "lost", "late");
    json_array_foreach(ranks, i, r) {
        char pids[64] = "";
        size_t l = 0;
        const char *host = json_string_value(json_object_get(r, "host"));
        if (hosts)
            l = (size_t)snprintf(pids, sizeof(pids), "%s:", host ? host : "?");
        json_array_foreach(json_object_get(r, "pids"), k, a)
            l += (size_t)snprintf(pids + l, l < sizeof(pids) ? sizeof(pids) - l : 0, "%s%d",
                                  k ? "," : "", (int)json_integer_value(a));
#define RI(key) ((uint64_t)json_integer_value(json_object_get(r, key)))
        fprintf(f, "  %4d %-16s %9" PRIu64 " %9s %9s %9s %9s %7" PRIu64 " %9s %9s %6" PRIu64 "\n",
                (int)RI("rank"), pids, RI("cuda_calls"), fmt_ns(b[0], 32, RI("sync_ns")),
                fmt_ns(b[1], 32, RI("oncpu_ns")), fmt_ns(b[2], 32, RI("offcpu_ns")),
                fmt_ns(b[3], 32, RI("preempted_ns")), RI("steps"),
                fmt_ns(b[4], 32, RI("median_wait_ns")), fmt_ns(b[5], 32, RI("lost_ns")),
                RI("straggled_steps"));
    }
    fprintf(f, "  %4s %-28s %9s %9s %9s %9s\n", "rank", "sync api", "count", "p50", "p99", "max");
    json_array_foreach(ranks, i, r)
        json_array_foreach(json_object_get(r, "apis"), k, a)
            fprintf(f, "  %4d %-28s %9" PRIu64 " %9s %9s %9s\n", (int)RI("rank"),
                    json_string_value(json_object_get(a, "api")),
                    (uint64_t)json_integer_value(json_object_get(a, "count")),
                    fmt_ns(b[0], 32, (uint64_t)json_integer_value(json_object_get(a, "p50_ns"))),
                    fmt_ns(b[1], 32, (uint64_t)json_integer_value(json_object_get(a, "p99_ns"))),
                    fmt_ns(b[2], 32, (uint64_t)json_integer_value(json_object_get(a, "max_ns"))));
#undef RI
}
