/* flight.c: the flight recorder (flight_rec.h). Owns the in-memory aggregates
 * of the windows still receiving records and the eviction budget; the agg
 * database and the deletion of blocks are store/runfile_write.c's (cs_store_put_agg,
 * cs_store_evict), when to call us is the collector's.
 *
 * Aggregates are exact counts and sums; latency is a log-linear histogram
 * (include/cudaspy/flight.h). A window stays in memory for RETAIN_WINDOWS
 * after the newest window seen; a record arriving later than that (a call
 * that lasted longer) is counted in the oldest window still held, and in
 * meta flight_late_records, so run totals stay exact. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/flight.h"
#include "flight_rec.h"

#define RETAIN_WINDOWS 60
#define OCTAVES        (CS_HIST_BUCKETS / CS_HIST_SUB)

struct fl_ent {
    uint64_t win_ns; /* window start */
    uint32_t pid, sub;
    uint8_t kind;    /* enum cs_agg_kind */
    uint8_t dirty;   /* changed since staged */
    union {
        struct cs_agg_cuda cuda;
        struct cs_agg_host host;
        struct cs_agg_gpu gpu;
    } u;
    uint32_t *oct[OCTAVES]; /* CUDA: 128 bucket counts per octave, on first use */
};

struct flight {
    uint64_t max_bytes, t0_ns, window_ns;
    uint64_t newest_win_ns; /* newest window a record fell in */
    uint64_t oldest_win_ns; /* oldest window still held (late records go here) */
    uint64_t late;          /* records counted in a later window than theirs */
    uint64_t grow_max;      /* most bytes one commit staged (budget's slack) */
    uint64_t extra;         /* more slack, added each time the file nears the cap */
    struct fl_ent **ent;
    size_t nent, cap;
    uint32_t *hash; /* index + 1 into ent, 0 = empty; nhash a power of two */
    size_t nhash;
    struct cs_bucket_buf {
        struct cs_agg_bucket *b;
        size_t cap;
    } out;
};

struct flight *flight_new(uint64_t max_bytes, uint64_t t0_ns)
{
    struct flight *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return NULL;
    f->max_bytes = max_bytes;
    f->t0_ns = f->newest_win_ns = f->oldest_win_ns = t0_ns;
    f->window_ns = CS_FLIGHT_WINDOW_NS;
    return f;
}

int flight_open(struct flight *f, struct cs_store *st)
{
    int rc = cs_store_agg_open(st);

    if (rc == 0)
        rc = cs_store_put_meta_u64(st, "max_size_bytes", f->max_bytes);
    if (rc == 0)
        rc = cs_store_put_meta_u64(st, "flight_window_ns", f->window_ns);
    if (rc == 0)
        rc = cs_store_put_meta_u64(st, "flight_detail_from_ns", 0);
    return rc;
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static uint64_t ent_hash(uint64_t win, uint8_t kind, uint32_t pid, uint32_t sub)
{
    return mix(win ^ mix((uint64_t)pid << 32 | sub) ^ (uint64_t)kind << 56);
}

static int rehash(struct flight *f, size_t nhash)
{
    uint32_t *h = calloc(nhash, sizeof(*h));

    if (h == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < f->nent; i++) {
        const struct fl_ent *e = f->ent[i];
        size_t j = ent_hash(e->win_ns, e->kind, e->pid, e->sub) & (nhash - 1);
        while (h[j])
            j = (j + 1) & (nhash - 1);
        h[j] = (uint32_t)i + 1;
    }
    free(f->hash);
    f->hash = h;
    f->nhash = nhash;
    return 0;
}

static void ent_init(struct fl_ent *e, struct flight *f)
{
    switch (e->kind) {
    case CS_AGG_CUDA:
        e->u.cuda.t_start_ns = e->win_ns;
        e->u.cuda.window_ns = f->window_ns;
        e->u.cuda.pid = e->pid;
        e->u.cuda.api = (uint16_t)(e->sub >> 16);
        e->u.cuda.variant = (uint8_t)(e->sub >> 8);
        e->u.cuda.nested = (uint8_t)e->sub;
        e->u.cuda.min_ns = UINT64_MAX;
        break;
    case CS_AGG_HOST:
        e->u.host.t_start_ns = e->win_ns;
        e->u.host.window_ns = f->window_ns;
        e->u.host.pid = e->pid;
        break;
    default:
        e->u.gpu.t_start_ns = e->win_ns;
        e->u.gpu.window_ns = f->window_ns;
        e->u.gpu.pid = e->pid;
        e->u.gpu.device = (uint16_t)e->sub;
    }
}

/* The window of a record starting at @p t_ns; windows already forgotten
 * give the oldest one held. */
static uint64_t window_of(struct flight *f, uint64_t t_ns)
{
    uint64_t w = t_ns <= f->t0_ns ? f->t0_ns
                                  : f->t0_ns + (t_ns - f->t0_ns) / f->window_ns * f->window_ns;

    if (w < f->oldest_win_ns) {
        f->late++;
        return f->oldest_win_ns;
    }
    if (w > f->newest_win_ns)
        f->newest_win_ns = w;
    return w;
}

/* The aggregate of (@p t_ns's window, kind, pid, sub), created on first use. */
static struct fl_ent *ent_get(struct flight *f, uint64_t t_ns, uint8_t kind, uint32_t pid,
                              uint32_t sub)
{
    uint64_t win = window_of(f, t_ns);
    size_t j = 0;
    struct fl_ent *e;

    if (f->nent * 2 >= f->nhash && rehash(f, f->nhash ? f->nhash * 2 : 256) < 0)
        return NULL;
    for (j = ent_hash(win, kind, pid, sub) & (f->nhash - 1); f->hash[j];
         j = (j + 1) & (f->nhash - 1)) {
        e = f->ent[f->hash[j] - 1];
        if (e->win_ns == win && e->kind == kind && e->pid == pid && e->sub == sub)
            return e;
    }
    if (f->nent == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 64;
        struct fl_ent **q = realloc(f->ent, cap * sizeof(*q));
        if (q == NULL)
            return NULL;
        f->ent = q;
        f->cap = cap;
    }
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return NULL;
    e->win_ns = win;
    e->kind = kind;
    e->pid = pid;
    e->sub = sub;
    ent_init(e, f);
    f->ent[f->nent++] = e;
    f->hash[j] = (uint32_t)f->nent; /* the table is at most half full: j is free */
    return e;
}

static void add_cuda(struct flight *f, const struct cs_rec_cuda *r)
{
    if (r->flags & CS_CF_TRACER) /* the tracer's own memory reading: not the program's */
        return;
    uint64_t d = r->t_exit_ns > r->t_enter_ns ? r->t_exit_ns - r->t_enter_ns : 0;
    uint8_t variant = r->variant < 3 ? r->variant : 0;
    uint32_t sub = (uint32_t)r->api << 16 | (uint32_t)variant << 8 | !!(r->flags & CS_CF_NESTED);
    struct fl_ent *e = ent_get(f, r->t_enter_ns, CS_AGG_CUDA, r->pid, sub);
    uint32_t i = cs_hist_index(d);
    struct cs_agg_cuda *a;

    if (e == NULL)
        return;
    if (e->oct[i / CS_HIST_SUB] == NULL &&
        (e->oct[i / CS_HIST_SUB] = calloc(CS_HIST_SUB, sizeof(uint32_t))) == NULL)
        return;
    e->oct[i / CS_HIST_SUB][i % CS_HIST_SUB]++;
    a = &e->u.cuda;
    a->count++;
    a->total_ns += d;
    a->min_ns = d < a->min_ns ? d : a->min_ns;
    a->max_ns = d > a->max_ns ? d : a->max_ns;
    a->errors += !!(r->flags & CS_CF_ERROR);
    e->dirty = 1;
}

static void add_host(struct flight *f, unsigned kind, const void *rec)
{
    uint64_t t[2];
    uint32_t pid;
    struct fl_ent *e;

    memcpy(t, rec, sizeof(t));
    memcpy(&pid, (const uint8_t *)rec + 16, sizeof(pid)); /* offcpu, runq, pwin: pid at 16 */
    if ((e = ent_get(f, t[0], CS_AGG_HOST, pid, 0)) == NULL)
        return;
    if (kind == CS_REC_OFFCPU) {
        const struct cs_rec_offcpu *o = rec;
        unsigned c = o->cls < 6 ? o->cls : CS_OFF_OTHER;
        e->u.host.off_ns[c] += o->t_end_ns - o->t_start_ns;
        e->u.host.off_count[c]++;
    } else if (kind == CS_REC_RUNQ) {
        e->u.host.runq_wait_ns += t[1] - t[0];
        e->u.host.runq_waits++;
    } else {
        const struct cs_rec_pwin *w = rec;
        e->u.host.oncpu_ns += w->oncpu_ns;
        e->u.host.sleep_ns += w->sleep_ns;
        e->u.host.disk_ns += w->disk_ns;
        e->u.host.preempt_ns += w->preempt_ns;
        e->u.host.runq_ns += w->runq_ns;
    }
    e->dirty = 1;
}

static void add_gpu(struct flight *f, const struct cs_rec_gpu *g)
{
    struct fl_ent *e = ent_get(f, g->t_start_ns, CS_AGG_GPU, g->pid, g->device);
    unsigned k = g->kind < 4 ? g->kind : 0;

    if (e == NULL)
        return;
    e->u.gpu.count[k]++;
    e->u.gpu.dur_ns[k] += g->t_end_ns > g->t_start_ns ? g->t_end_ns - g->t_start_ns : 0;
    e->dirty = 1;
}

void flight_block(struct flight *f, const struct cs_blk_hdr *h, const void *recs)
{
    unsigned rs = cs_rec_size(h->kind);
    const uint8_t *p = recs;

    for (uint32_t i = 0; i < h->n; i++, p += rs) {
        switch (h->kind) {
        case CS_REC_CUDA: {
            struct cs_rec_cuda r;
            memcpy(&r, p, sizeof(r));
            add_cuda(f, &r);
            break;
        }
        case CS_REC_OFFCPU:
        case CS_REC_RUNQ:
        case CS_REC_PWIN: {
            uint64_t rec[12]; /* the largest of the three: pwin, 96 bytes */
            memcpy(rec, p, rs);
            add_host(f, h->kind, rec);
            break;
        }
        case CS_REC_GPU: {
            struct cs_rec_gpu g;
            memcpy(&g, p, sizeof(g));
            add_gpu(f, &g);
            break;
        }
        default:
            return; /* other kinds are not aggregated */
        }
    }
}

static void agg_key(uint8_t *k, const struct fl_ent *e)
{
    cs_be64_put(k, e->win_ns);
    k[8] = e->kind;
    cs_be32_put(k + 9, e->pid);
    cs_be32_put(k + 13, e->sub);
}

/* A CUDA aggregate with its non-empty buckets, into f->out. */
static int stage_cuda(struct flight *f, struct cs_store *st, struct fl_ent *e, const uint8_t *k)
{
    size_t n = 0, need = sizeof(struct cs_agg_cuda) / sizeof(struct cs_agg_bucket);

    for (unsigned o = 0; o < OCTAVES; o++)
        for (unsigned i = 0; e->oct[o] && i < CS_HIST_SUB; i++)
            need += e->oct[o][i] != 0;
    if (need > f->out.cap) {
        void *q = realloc(f->out.b, need * 2 * sizeof(*f->out.b));
        if (q == NULL)
            return -ENOMEM;
        f->out.b = q;
        f->out.cap = need * 2;
    }
    n = sizeof(struct cs_agg_cuda) / sizeof(struct cs_agg_bucket);
    for (unsigned o = 0; o < OCTAVES; o++)
        for (unsigned i = 0; e->oct[o] && i < CS_HIST_SUB; i++)
            if (e->oct[o][i])
                f->out.b[n++] = (struct cs_agg_bucket){o * CS_HIST_SUB + i, e->oct[o][i]};
    e->u.cuda.nbuckets = (uint32_t)(n - sizeof(struct cs_agg_cuda) / sizeof(*f->out.b));
    memcpy(f->out.b, &e->u.cuda, sizeof(e->u.cuda));
    return cs_store_put_agg(st, k, CS_AGG_KEY_BYTES, f->out.b, n * sizeof(*f->out.b));
}

static void ent_free(struct fl_ent *e)
{
    for (unsigned o = 0; o < OCTAVES; o++)
        free(e->oct[o]);
    free(e);
}

/* Forget windows RETAIN_WINDOWS behind the newest (all staged already). */
static int retire(struct flight *f)
{
    uint64_t keep = f->newest_win_ns - f->t0_ns > RETAIN_WINDOWS * f->window_ns
                        ? f->newest_win_ns - RETAIN_WINDOWS * f->window_ns
                        : f->t0_ns;
    size_t n = 0;

    if (keep <= f->oldest_win_ns)
        return 0;
    f->oldest_win_ns = keep;
    for (size_t i = 0; i < f->nent; i++) {
        if (f->ent[i]->win_ns < keep && !f->ent[i]->dirty)
            ent_free(f->ent[i]);
        else
            f->ent[n++] = f->ent[i];
    }
    f->nent = n;
    return rehash(f, f->nhash ? f->nhash : 256);
}

int flight_stage(struct flight *f, struct cs_store *st)
{
    uint8_t k[CS_AGG_KEY_BYTES];
    int rc = 0;

    for (size_t i = 0; i < f->nent && rc == 0; i++) {
        struct fl_ent *e = f->ent[i];
        if (!e->dirty)
            continue;
        agg_key(k, e);
        if (e->kind == CS_AGG_CUDA)
            rc = stage_cuda(f, st, e, k);
        else if (e->kind == CS_AGG_HOST)
            rc = cs_store_put_agg(st, k, sizeof(k), &e->u.host, sizeof(e->u.host));
        else
            rc = cs_store_put_agg(st, k, sizeof(k), &e->u.gpu, sizeof(e->u.gpu));
        e->dirty = rc != 0;
    }
    if (rc == 0)
        rc = cs_store_put_meta_u64(st, "flight_late_records", f->late);
    if (rc == 0)
        rc = retire(f);
    if (cs_store_pending(st) > f->grow_max)
        f->grow_max = cs_store_pending(st);
    return rc;
}

/* Live data the file may hold after an eviction: the cap less what the
 * next two commits write before the freed pages can be reused (LMDB hands
 * a freed page out again from the second transaction after the one that
 * freed it), less 1/16 for page rounding and branch pages copied on write;
 * never below a quarter of the cap. */
static uint64_t budget(const struct flight *f)
{
    uint64_t slack = 3 * (f->grow_max + f->grow_max / 8) + f->max_bytes / 16 + f->extra;

    return slack < f->max_bytes / 4 * 3 ? f->max_bytes - slack : f->max_bytes / 4;
}

int flight_evict(struct flight *f, struct cs_store *st)
{
    struct cs_evict ev;
    int rc = cs_store_evict_result(st, &ev);

    if (rc < 0)
        return rc;
    /* free pages too scattered for the next blocks (a block needs a run of
     * contiguous pages) make the file grow all the same: once it passes
     * 7/8 of the cap, keep an eighth more free */
    if (rc == 1 && ev.file_bytes > f->max_bytes / 8 * 7 && f->extra < f->max_bytes / 2)
        f->extra += f->max_bytes / 8;
    cs_store_evict_after(st, budget(f));
    return 0;
}

void flight_free(struct flight *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->nent; i++)
        ent_free(f->ent[i]);
    free(f->ent);
    free(f->hash);
    free(f->out.b);
    free(f);
}
