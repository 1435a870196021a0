/* model/memory.c: memory.h's replay. Reads the CUDA records again
 * (model_scan: the model keeps neither results, pointers nor devices),
 * keeps the few that allocate, free, fail or read the device's memory,
 * sorts them by return and replays them per process and device. Sites are
 * named only when written out (memory_json). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "cudaspy/grow.h"
#include "cudaspy/record.h"
#include "memory.h"

#define OOM 2 /* CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation */
#define RETRY_WITHIN_NS 10000000000ull /* a retry comes within 10 s of its failure */
#define READ_NEAR_NS 50000000ull       /* a reading goes with a failure within 50 ms */

enum ev_kind { EV_ALLOC, EV_FREE, EV_FAIL, EV_READ };

/* One record that matters here. */
struct ev {
    uint64_t t0_ns, t1_ns;
    uint64_t key;   /* pointer or handle */
    uint64_t bytes; /* allocations: the size; readings: free bytes */
    uint64_t total; /* readings: total bytes */
    uint32_t proc, tid, stack_id, run;
    uint16_t device, api;
    uint8_t kind, nested, tracer;
    uint8_t why; /* readings: enum mem_why */
    uint32_t track; /* allocations: memory.tr, set by the first pass */
};

struct scan {
    const struct model *m;
    struct ev *ev;
    size_t n, cap;
    uint32_t run;
};

/* Device allocations: not pinned host memory, not cuMemMap (which places
 * physical memory cuMemCreate already counted). */
static int is_dev_alloc(unsigned api)
{
    switch (api) {
    case CS_API_cuMemAlloc_v2: case CS_API_cuMemAllocAsync: case CS_API_cuMemAllocFromPoolAsync:
    case CS_API_cuMemAllocManaged: case CS_API_cuMemAllocPitch_v2: case CS_API_cuMemCreate:
    case CS_API_cudaMalloc: case CS_API_cudaMallocAsync:
        return 1;
    default:
        return 0;
    }
}

static int is_dev_free(unsigned api)
{
    return api == CS_API_cuMemFree_v2 || api == CS_API_cuMemFreeAsync ||
           api == CS_API_cuMemRelease || api == CS_API_cudaFree || api == CS_API_cudaFreeAsync;
}

static int kind_of(const struct cs_rec_cuda *r)
{
    if (r->api == CS_API_cuMemGetInfo_v2 || r->api == CS_API_cudaMemGetInfo)
        return r->result == 0 && !(r->flags & CS_CF_NESTED && !(r->flags & CS_CF_TRACER))
                   ? EV_READ
                   : -1;
    if (is_dev_alloc(r->api)) {
        if (r->result == 0)
            return r->aux ? EV_ALLOC : -1;
        return r->result == OOM && !(r->flags & CS_CF_NESTED) ? EV_FAIL : -1;
    }
    return is_dev_free(r->api) && r->result == 0 && r->aux ? EV_FREE : -1;
}

int memory_wants(const struct cs_rec_cuda *r)
{
    return kind_of(r) >= 0;
}

static int scan_block(uint32_t run, const void *recs, uint32_t n, void *arg)
{
    struct scan *s = arg;
    const struct cs_rec_cuda *r = recs;
    const struct m_run *mr = &s->m->runs[run];

    for (uint32_t i = 0; i < n; i++, r++) {
        int k = kind_of(r);
        uint32_t p;
        uint64_t t0 = clocks_time(s->m, run, r->t_enter_ns), t1 = clocks_time(s->m, run, r->t_exit_ns);
        if (k < 0 || t0 < mr->win_lo_ns || t0 >= mr->win_hi_ns)
            continue;
        p = model_find_proc(s->m, run, r->pid);
        if (p == M_NONE || !s->m->proc[p].selected)
            continue;
        if (cs_grow((void **)&s->ev, &s->cap, s->n + 1, sizeof(*s->ev)) < 0)
            return -ENOMEM;
        s->ev[s->n++] = (struct ev){
            .t0_ns = t0, .t1_ns = t1 < t0 ? t0 : t1,
            .key = r->aux, .bytes = r->bytes, .total = k == EV_READ ? r->aux : 0, .proc = p,
            .tid = r->tid, .stack_id = r->stack_id, .run = run, .device = r->device,
            .api = r->api, .kind = (uint8_t)k, .nested = !!(r->flags & CS_CF_NESTED),
            .tracer = !!(r->flags & CS_CF_TRACER),
            .why = !(r->flags & CS_CF_TRACER) ? MEM_READ_PROGRAM
                   : r->grid[0] == 0          ? MEM_READ_FIRST
                                              : MEM_READ_OOM};
    }
    return 0;
}

/* By return; at one time a reading after the allocation it follows. */
static int cmp_ev(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;

    if (x->t1_ns != y->t1_ns)
        return x->t1_ns < y->t1_ns ? -1 : 1;
    if ((x->kind == EV_READ) != (y->kind == EV_READ))
        return x->kind == EV_READ ? 1 : -1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

/* The tracer reads the device's memory inside the allocation call that
 * prompted it (the allocation has returned, its wrapper has not): its
 * reading belongs at that call's return, after the allocation. */
static void readings_at_return(struct ev *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind != EV_READ || !ev[i].tracer)
            continue;
        for (size_t k = i + 1; k < n && k < i + 64; k++) {
            const struct ev *c = &ev[k];
            if (c->tid == ev[i].tid && c->proc == ev[i].proc && c->t0_ns <= ev[i].t0_ns &&
                (c->kind == EV_ALLOC || c->kind == EV_FAIL)) {
                ev[i].t1_ns = c->t1_ns;
                break;
            }
        }
    }
    qsort(ev, n, sizeof(*ev), cmp_ev);
}

/* ---- the replay ---- */

/* A live allocation. */
struct live {
    uint64_t key, bytes;
    uint32_t track;
    struct pystack_ref ref;
    uint16_t api;   /* the outermost call's (a runtime call's, if its driver call had a
                       record of its own) */
    uint8_t nested;
};

struct replay {
    const struct model *m;
    struct memory *mm;
    struct live *live;
    size_t nlive, cap_live;
    struct m_hash *ix;     /* (proc, key) -> index in live */
    uint16_t *dev_of_proc; /* the device of each process's last allocation */
    size_t at;             /* the event being replayed */
};

/* A freed allocation's value in replay.ix: a tombstone, since m_hash has
 * no delete and an empty slot (M_NONE) would end other keys' probes. */
#define LIVE_DEAD (M_NONE - 1)

static int is_live(uint32_t i)
{
    return i != M_NONE && i != LIVE_DEAD;
}

static uint64_t live_key(uint32_t proc, uint64_t key)
{
    return (key ^ ((uint64_t)proc * 0x9e3779b97f4a7c15ull)) | 1; /* never 0 */
}

static int track_of(struct replay *x, uint32_t proc, uint16_t device, uint32_t *out)
{
    struct memory *mm = x->mm;
    struct mem_track *t;

    for (size_t i = 0; i < mm->ntr; i++) {
        if (mm->tr[i].proc == proc && mm->tr[i].device == device) {
            *out = (uint32_t)i;
            return 0;
        }
    }
    t = realloc(mm->tr, (mm->ntr + 1) * sizeof(*t));
    if (t == NULL)
        return -ENOMEM;
    mm->tr = t;
    memset(&t[mm->ntr], 0, sizeof(*t));
    t[mm->ntr].proc = proc;
    t[mm->ntr].pid = x->m->proc[proc].pid;
    t[mm->ntr].device = device;
    *out = (uint32_t)mm->ntr++;
    return 0;
}

static int point(struct mem_track *t, uint64_t at, uint64_t held)
{
    if (t->npt && t->pt[t->npt - 1].t_ns == at) {
        t->pt[t->npt - 1].held_bytes = held;
        return 0;
    }
    if (cs_grow((void **)&t->pt, &t->cap_pt, t->npt + 1, sizeof(*t->pt)) < 0)
        return -ENOMEM;
    t->pt[t->npt++] = (struct mem_point){at, held};
    return 0;
}

static uint64_t held_now(const struct mem_track *t)
{
    return t->npt ? t->pt[t->npt - 1].held_bytes : 0;
}

/* The live allocations of track @p tr grouped by stack, largest first. */
static void holders(const struct replay *x, uint32_t tr, struct mem_holder *top)
{
    memset(top, 0, MEM_TOP * sizeof(*top));
    for (size_t i = 0; i < x->nlive; i++) {
        const struct live *l = &x->live[i];
        struct mem_holder h = {l->ref, l->bytes, 1};
        int j;
        if (l->track != tr)
            continue;
        for (j = 0; j < MEM_TOP && top[j].bytes; j++)
            if (top[j].ref.run == l->ref.run && top[j].ref.id == l->ref.id)
                break;
        if (j < MEM_TOP && top[j].bytes) {
            h = top[j];
            h.bytes += l->bytes, h.n++;
        } else if (j == MEM_TOP) {
            if (l->bytes <= top[MEM_TOP - 1].bytes)
                continue;
            j = MEM_TOP - 1;
        }
        for (; j > 0 && top[j - 1].bytes < h.bytes; j--) /* keep the order */
            top[j] = top[j - 1];
        top[j] = h;
    }
}

/* Allocation @p e into the live set, on track @p tr. @return 1 added, 0 the
 * pointer is live already (the runtime call and its driver call: one
 * allocation), -ENOMEM */
static int live_add(struct replay *x, const struct ev *e, uint32_t tr)
{
    uint64_t k = live_key(e->proc, e->key);
    uint32_t i = m_hash_get(x->ix, k);

    if (is_live(i)) {
        if (x->live[i].nested && !e->nested) /* the runtime call around it returned */
            x->live[i].api = e->api, x->live[i].nested = 0;
        return 0;
    }
    if (cs_grow((void **)&x->live, &x->cap_live, x->nlive + 1, sizeof(*x->live)) < 0 ||
        m_hash_put(x->ix, k, (uint32_t)x->nlive) < 0)
        return -ENOMEM;
    x->live[x->nlive++] = (struct live){e->key,    e->bytes, tr, {e->run, e->stack_id},
                                        e->api, e->nested};
    return 1;
}

/* Free @p e out of the live set into *@p gone. @return 1, or 0 when its
 * pointer is not live (freed twice, runtime and driver; allocated before
 * the window) */
static int live_del(struct replay *x, const struct ev *e, struct live *gone)
{
    uint64_t k = live_key(e->proc, e->key);
    uint32_t i = m_hash_get(x->ix, k);
    struct live *l;

    if (!is_live(i))
        return 0;
    l = &x->live[i];
    *gone = *l;
    m_hash_put(x->ix, k, LIVE_DEAD); /* its slot exists: no allocation */
    if (i != x->nlive - 1) { /* the last one takes its place */
        *l = x->live[x->nlive - 1];
        m_hash_put(x->ix, live_key(x->mm->tr[l->track].proc, l->key), i);
    }
    x->nlive--;
    return 1;
}

static int on_alloc(struct replay *x, struct ev *e)
{
    struct mem_track *t;
    uint32_t tr;
    int rc;

    if (e->device != CS_DEVICE_UNKNOWN)
        x->dev_of_proc[e->proc] = e->device;
    if (track_of(x, e->proc, x->dev_of_proc[e->proc], &tr) < 0)
        return -ENOMEM;
    e->track = tr;
    if ((rc = live_add(x, e, tr)) <= 0)
        return rc;
    t = &x->mm->tr[tr];
    t->nalloc++;
    t->alloc_bytes += e->bytes;
    if (point(t, e->t1_ns, held_now(t) + e->bytes) < 0)
        return -ENOMEM;
    if (held_now(t) > t->peak_bytes) {
        t->peak_bytes = held_now(t);
        t->peak_ns = e->t1_ns;
        t->peak_ev = x->at;
    }
    return 0;
}

static int on_free(struct replay *x, struct ev *e)
{
    struct mem_track *t;
    struct live l;

    if (!live_del(x, e, &l))
        return 0;
    t = &x->mm->tr[l.track];
    t->nfree++;
    return point(t, e->t1_ns, held_now(t) - l.bytes);
}

static int on_read(struct replay *x, struct ev *e)
{
    uint16_t d = e->device != CS_DEVICE_UNKNOWN ? e->device : x->dev_of_proc[e->proc];
    struct mem_track *t;
    uint32_t tr;

    if (track_of(x, e->proc, d, &tr) < 0)
        return -ENOMEM;
    t = &x->mm->tr[tr];
    if (cs_grow((void **)&t->rd, &t->cap_rd, t->nrd + 1, sizeof(*t->rd)) < 0)
        return -ENOMEM;
    t->rd[t->nrd++] = (struct mem_reading){e->t1_ns, e->bytes, e->total, held_now(t), e->why};
    return 0;
}

static uint32_t thr_of(const struct model *m, uint32_t proc, uint32_t tid)
{
    for (uint32_t t = 0; t < m->nthr; t++)
        if (m->thr[t].proc == proc && m->thr[t].tid == tid)
            return t;
    return M_NONE;
}

static int on_fail(struct replay *x, struct ev *e)
{
    struct memory *mm = x->mm;
    struct mem_fail *f;
    uint32_t tr;

    if (track_of(x, e->proc, x->dev_of_proc[e->proc], &tr) < 0)
        return -ENOMEM;
    if (cs_grow((void **)&mm->fail, &mm->cap_fail, mm->nfail + 1, sizeof(*mm->fail)) < 0)
        return -ENOMEM;
    f = &mm->fail[mm->nfail++];
    memset(f, 0, sizeof(*f));
    f->t_ns = e->t0_ns, f->t_end_ns = e->t1_ns;
    f->proc = e->proc;
    f->thr = thr_of(x->m, e->proc, e->tid);
    f->device = mm->tr[tr].device;
    f->api = e->api;
    f->bytes = e->bytes;
    f->held_bytes = held_now(&mm->tr[tr]);
    f->ref = (struct pystack_ref){e->run, e->stack_id};
    f->track = tr;
    f->ev = x->at;
    mm->tr[tr].nfail++;
    return 0;
}

static int replay(struct replay *x, struct ev *ev, size_t n)
{
    static int (*const on[])(struct replay *, struct ev *) = {
        [EV_ALLOC] = on_alloc, [EV_FREE] = on_free, [EV_FAIL] = on_fail, [EV_READ] = on_read};

    for (x->at = 0; x->at < n; x->at++)
        if (on[ev[x->at].kind](x, &ev[x->at]) < 0)
            return -ENOMEM;
    for (size_t i = 0; i < x->mm->ntr; i++)
        x->mm->tr[i].end_bytes = held_now(&x->mm->tr[i]);
    return 0;
}

/* ---- failures: their readings and their episodes ---- */

/* The reading taken with failure @p f: the first of its process and
 * device from the call on, else the last before. */
static void fail_reading(struct memory *mm, struct mem_fail *f)
{
    for (size_t i = 0; i < mm->ntr; i++) {
        const struct mem_track *t = &mm->tr[i];
        if (t->proc != f->proc || t->device != f->device)
            continue;
        for (size_t k = 0; k < t->nrd; k++) {
            if (t->rd[k].t_ns > f->t_end_ns + READ_NEAR_NS)
                break;
            f->free_bytes = t->rd[k].free_bytes, f->total_bytes = t->rd[k].total_bytes;
            f->has_free = 1;
            if (t->rd[k].t_ns >= f->t_ns)
                break;
        }
    }
}

/* Failure @p f, event @p i of @p ev: the same thread's next outermost
 * allocations; further failures of the same size are the same episode,
 * and a success of that size ends it. Frees meanwhile are counted. */
static void fail_episode(struct memory *mm, struct mem_fail *f, const struct ev *ev, size_t n,
                         size_t i)
{
    uint32_t tid = ev[i].tid, proc = ev[i].proc;

    for (size_t k = i + 1; k < n && ev[k].t0_ns < f->t_end_ns + RETRY_WITHIN_NS; k++) {
        const struct ev *e = &ev[k];
        if (e->tid != tid || e->proc != proc || e->nested)
            continue;
        if (e->kind == EV_FREE) {
            f->nfree++;
        } else if (e->kind == EV_FAIL && e->bytes == f->bytes) {
            for (size_t j = 0; j < mm->nfail; j++) /* a later attempt of this episode */
                if (mm->fail[j].proc == proc && mm->fail[j].t_ns == e->t0_ns)
                    mm->fail[j].chained = 1;
        } else if (e->kind == EV_ALLOC) {
            f->retried = e->bytes == f->bytes;
            f->retry_end_ns = f->retried ? e->t1_ns : 0;
            return;
        } else if (e->kind == EV_FAIL) {
            return;
        }
    }
}

static int cmp_ep(const void *a, const void *b)
{
    const struct mem_episode *x = a, *y = b;

    if (x->thr != y->thr)
        return x->thr < y->thr ? -1 : 1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

static int episodes(struct memory *mm, const struct ev *ev, size_t n)
{
    size_t fi = 0;

    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == EV_FAIL)
            fail_episode(mm, &mm->fail[fi++], ev, n, i);
    mm->ep = calloc(mm->nfail + 1, sizeof(*mm->ep));
    if (mm->ep == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < mm->nfail; i++) {
        struct mem_fail *f = &mm->fail[i];
        fail_reading(mm, f);
        if (f->chained || !f->retried || f->thr == M_NONE)
            continue;
        mm->ep[mm->nep++] = (struct mem_episode){f->thr, f->t_ns, f->retry_end_ns};
        for (size_t t = 0; t < mm->ntr; t++)
            if (mm->tr[t].proc == f->proc && mm->tr[t].device == f->device)
                mm->tr[t].nretry++;
    }
    if (mm->nep)
        qsort(mm->ep, mm->nep, sizeof(*mm->ep), cmp_ep);
    return 0;
}

/* ---- who held the memory ---- */

/* The live allocations of track @p tr summed by allocating API, most first
 * (MEM_APIS kept; zero-filled past the last). */
static void by_api(const struct replay *x, uint32_t tr, struct mem_api_held *out)
{
    memset(out, 0, MEM_APIS * sizeof(*out));
    for (size_t i = 0; i < x->nlive; i++) {
        const struct live *l = &x->live[i];
        int j;
        if (l->track != tr)
            continue;
        for (j = 0; j < MEM_APIS && out[j].api && out[j].api != l->api; j++)
            ;
        if (j == MEM_APIS)
            continue; /* a fifth API: rare, left out */
        out[j].api = l->api;
        out[j].bytes += l->bytes;
        for (; j > 0 && out[j - 1].bytes < out[j].bytes; j--) {
            struct mem_api_held t = out[j - 1];
            out[j - 1] = out[j], out[j] = t;
        }
    }
}

/* The largest holders at each track's peak and at the failures that need
 * them, from a second pass over the events: holders() walks the live set,
 * so doing it at every new peak of a growing program would be quadratic. */
static int tops(struct replay *x, const struct ev *ev, size_t n)
{
    struct memory *mm = x->mm;
    size_t fi = 0;
    struct live gone;

    m_hash_free(x->ix);
    x->nlive = 0;
    if ((x->ix = m_hash_new()) == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct ev *e = &ev[i];
        if (e->kind == EV_ALLOC) {
            if (live_add(x, e, e->track) < 0)
                return -ENOMEM;
        } else if (e->kind == EV_FREE) {
            live_del(x, e, &gone);
        } else if (e->kind == EV_FAIL) {
            struct mem_fail *f = &mm->fail[fi++];
            if (!f->retried || fi <= MEM_FAIL_TOPS)
                holders(x, f->track, f->top);
        }
        for (size_t t = 0; t < mm->ntr; t++)
            if (mm->tr[t].peak_ev == i && mm->tr[t].peak_bytes) {
                holders(x, (uint32_t)t, mm->tr[t].top);
                by_api(x, (uint32_t)t, mm->tr[t].by_api);
            }
    }
    return 0;
}

/* The records the model kept while loading (model.mrec), else the calls'
 * table read once more. */
static int memory_scan(const struct model *m, struct scan *s)
{
    const struct cs_rec_cuda *r = m->mrec;
    int rc = 0;

    if (m->mrec_over)
        return model_scan(m, CS_REC_CUDA, scan_block, s);
    for (int i = 0; i < m->nruns && rc == 0; i++) {
        for (uint64_t n = m->runs[i].nmrec; n > 0 && rc == 0;) {
            uint32_t k = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
            rc = scan_block((uint32_t)i, r, k, s);
            r += k, n -= k;
        }
    }
    return rc;
}

int memory_compute(struct memory *mm, const struct model *m)
{
    struct scan s = {.m = m};
    struct replay x = {.m = m, .mm = mm};
    int rc;

    memset(mm, 0, sizeof(*mm));
    if ((rc = memory_scan(m, &s)) < 0)
        goto out;
    if (s.n) {
        qsort(s.ev, s.n, sizeof(*s.ev), cmp_ev);
        readings_at_return(s.ev, s.n);
    }
    x.ix = m_hash_new();
    x.dev_of_proc = calloc(m->nproc + 1, sizeof(*x.dev_of_proc));
    rc = x.ix && x.dev_of_proc ? replay(&x, s.ev, s.n) : -ENOMEM;
    if (rc == 0)
        rc = episodes(mm, s.ev, s.n);
    if (rc == 0)
        rc = tops(&x, s.ev, s.n);
out:
    free(s.ev);
    free(x.live);
    free(x.dev_of_proc);
    if (x.ix)
        m_hash_free(x.ix);
    if (rc < 0)
        memory_exit(mm);
    return rc;
}

const struct mem_episode *memory_episodes(const struct memory *mm, uint32_t thr, size_t *n)
{
    size_t i = 0, j;

    while (i < mm->nep && mm->ep[i].thr < thr)
        i++;
    for (j = i; j < mm->nep && mm->ep[j].thr == thr; j++)
        ;
    *n = j - i;
    return j > i ? &mm->ep[i] : NULL;
}

void memory_exit(struct memory *mm)
{
    for (size_t i = 0; i < mm->ntr; i++) {
        free(mm->tr[i].pt);
        free(mm->tr[i].rd);
    }
    free(mm->tr);
    free(mm->fail);
    free(mm->ep);
    memset(mm, 0, sizeof(*mm));
}
