/* model/aggregates.c: the agg database of size-capped runs (aggregates.h).
 * Owns reading and checking agg rows and turning their histograms into a
 * latency table; the rows' layout is record.h's, the buckets flight.h's,
 * writing them sampler/flight.c's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregates.h"
#include "cudaspy/flight.h"
#include "cudaspy/runfile.h"

/* One API slot (api x variant x nested) while rows are read. */
struct agg_slot {
    uint64_t count, total_ns, min_ns, max_ns, errors;
    uint64_t *hist; /* CS_HIST_BUCKETS counts, on first use */
};

struct agg_load {
    struct model *m;
    struct aggregates *g;
    struct agg_slot *slot; /* STATS_API_SLOTS */
    uint32_t run;
    uint64_t lo_ns, hi_ns; /* rows of windows overlapping [lo, hi) */
};

static uint32_t slot_of(unsigned api, unsigned variant, unsigned nested)
{
    return ((uint32_t)api * 3 + (variant < 3 ? variant : 0)) * 2 + !!nested;
}

static struct agg_slot *slot_get(struct agg_load *l, unsigned api, unsigned variant,
                                 unsigned nested)
{
    struct agg_slot *s = &l->slot[slot_of(api, variant, nested)];

    if (s->hist == NULL) {
        if ((s->hist = calloc(CS_HIST_BUCKETS, sizeof(*s->hist))) == NULL)
            return NULL;
        s->min_ns = UINT64_MAX;
    }
    return s;
}

static void slot_add(struct agg_slot *s, uint64_t count, uint64_t total, uint64_t min,
                     uint64_t max, uint64_t errors)
{
    s->count += count;
    s->total_ns += total;
    s->min_ns = min < s->min_ns ? min : s->min_ns;
    s->max_ns = max > s->max_ns ? max : s->max_ns;
    s->errors += errors;
}

static int bad_row(struct agg_load *l, const char *what, size_t vlen, struct cs_err *err)
{
    return cs_err_set(err, CS_E_CORRUPT, "%s: corrupt run file (agg: %s row of %zu bytes)",
                      l->m->runs[l->run].path, what, vlen);
}

static int row_cuda(struct agg_load *l, const void *val, size_t vlen, struct cs_err *err)
{
    const struct cs_agg_cuda *a = val;
    const struct cs_agg_bucket *b = (const void *)(a + 1);
    struct agg_slot *s;

    if (vlen < sizeof(*a) || vlen != sizeof(*a) + (size_t)a->nbuckets * sizeof(*b) ||
        a->api >= CS_API_COUNT)
        return bad_row(l, "CUDA", vlen, err);
    if ((s = slot_get(l, a->api, a->variant, a->nested)) == NULL)
        return cs_err_set(err, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < a->nbuckets; i++) {
        if (b[i].index >= CS_HIST_BUCKETS)
            return bad_row(l, "CUDA", vlen, err);
        s->hist[b[i].index] += b[i].count;
    }
    slot_add(s, a->count, a->total_ns, a->min_ns, a->max_ns, a->errors);
    l->g->run[l->run].calls += a->nested ? 0 : a->count;
    l->g->run[l->run].nested_calls += a->nested ? a->count : 0;
    return 0;
}

static void host_add(struct cs_agg_host *d, const struct cs_agg_host *h)
{
    d->oncpu_ns += h->oncpu_ns;
    d->sleep_ns += h->sleep_ns;
    d->disk_ns += h->disk_ns;
    d->preempt_ns += h->preempt_ns;
    d->runq_ns += h->runq_ns;
    for (int c = 0; c < 6; c++) {
        d->off_ns[c] += h->off_ns[c];
        d->off_count[c] += h->off_count[c];
    }
    d->runq_wait_ns += h->runq_wait_ns;
    d->runq_waits += h->runq_waits;
}

/* Is process @p pid of this run part of the analysis (--pid)? */
static int pid_selected(const struct agg_load *l, uint32_t pid)
{
    uint32_t p;

    if (l->m->opts.pid == 0)
        return 1;
    p = model_find_proc(l->m, l->run, pid);
    return p != M_NONE && l->m->proc[p].selected;
}

static int on_row(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                  struct cs_err *err)
{
    struct agg_load *l = arg;
    struct agg_run *r = &l->g->run[l->run];
    const uint8_t *k = key;
    uint64_t t;

    if (klen != CS_AGG_KEY_BYTES)
        return bad_row(l, "key", klen, err);
    t = cs_be64_get(k);
    if (t >= l->hi_ns || t + r->window_ns <= l->lo_ns || !pid_selected(l, cs_be32_get(k + 9)))
        return 0;
    switch (k[8]) {
    case CS_AGG_CUDA:
        return row_cuda(l, val, vlen, err);
    case CS_AGG_HOST:
        if (vlen != sizeof(struct cs_agg_host))
            return bad_row(l, "host", vlen, err);
        host_add(&r->host, val);
        return 0;
    case CS_AGG_GPU: {
        const struct cs_agg_gpu *gp = val;
        if (vlen != sizeof(*gp))
            return bad_row(l, "GPU", vlen, err);
        for (int i = 0; i < 4; i++) {
            r->gpu.count[i] += gp->count[i];
            r->gpu.dur_ns[i] += gp->dur_ns[i];
        }
        return 0;
    }
    default:
        return 0; /* a kind this reader does not know */
    }
}

/* Calls of runs without aggregates: every call of the model, as the exact
 * table would count it. */
static int add_uncapped(struct agg_load *l)
{
    const struct model *m = l->m;

    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        uint64_t d = model_dur(c);
        struct agg_slot *s;
        if (l->g->run[model_call_proc(m, c)->run].capped)
            continue;
        if ((s = slot_get(l, c->api, c->variant, c->flags & CS_CF_NESTED)) == NULL)
            return -ENOMEM;
        s->hist[cs_hist_index(d)]++;
        slot_add(s, 1, d, d, d, !!(c->flags & CS_CF_ERROR));
    }
    return 0;
}

/* Nearest-rank percentile @p permille of a histogram of @p n values: the
 * midpoint of the bucket holding rank ceil(q * n), kept inside [min, max]. */
static uint64_t hist_rank(const struct agg_slot *s, unsigned permille)
{
    uint64_t r = ((uint64_t)permille * s->count + 999) / 1000, seen = 0, v = s->max_ns;

    r = r < 1 ? 1 : r;
    for (uint32_t i = 0; i < CS_HIST_BUCKETS; i++) {
        seen += s->hist[i];
        if (seen >= r) {
            v = cs_hist_lo(i) + (cs_hist_width(i) - 1) / 2;
            break;
        }
    }
    return v < s->min_ns ? s->min_ns : v > s->max_ns ? s->max_ns : v;
}

static int table_from_slots(struct stats_table *t, const struct agg_slot *slot)
{
    memset(t, 0, sizeof(*t));
    memset(t->api_ix, 0xff, sizeof(t->api_ix));
    t->by = STATS_BY_API;
    if ((t->row = calloc(STATS_API_SLOTS, sizeof(*t->row))) == NULL)
        return -ENOMEM;
    t->cap = STATS_API_SLOTS;
    for (uint32_t i = 0; i < STATS_API_SLOTS; i++) {
        const struct agg_slot *s = &slot[i];
        struct stats_row *r = &t->row[t->nrow];
        if (s->count == 0)
            continue;
        r->api = (uint16_t)(i / 6);
        r->variant = (uint8_t)(i / 2 % 3);
        r->is_nested = (uint8_t)(i % 2);
        r->proc = M_NONE;
        r->errors = s->errors;
        r->n = s->count;
        r->s = (struct stats_summary){.count = s->count, .total_ns = s->total_ns,
                                      .min_ns = s->min_ns, .max_ns = s->max_ns,
                                      .mean_ns = s->total_ns / s->count,
                                      .p50_ns = hist_rank(s, 500), .p90_ns = hist_rank(s, 900),
                                      .p99_ns = hist_rank(s, 990), .p999_ns = hist_rank(s, 999)};
        t->nrow++;
    }
    if (t->nrow)
        qsort(t->row, t->nrow, sizeof(*t->row), stats_row_cmp);
    for (uint32_t i = 0; i < t->nrow; i++)
        t->api_ix[slot_of(t->row[i].api, t->row[i].variant, t->row[i].is_nested)] = i;
    return 0;
}

/* The meta of run @p i and its rows. */
static int load_run(struct agg_load *l, uint32_t i, struct cs_err *err)
{
    struct m_run *mr = &l->m->runs[i];
    struct agg_run *r = &l->g->run[i];

    if (!(r->capped = cs_run_has_agg(mr->run)))
        return 0;
    l->g->any = 1;
    r->max_size_bytes = cs_run_meta_u64(mr->run, "max_size_bytes", 0);
    r->window_ns = cs_run_meta_u64(mr->run, "flight_window_ns", CS_FLIGHT_WINDOW_NS);
    r->detail_from_ns = cs_run_meta_u64(mr->run, "flight_detail_from_ns", 0);
    if (r->detail_from_ns < mr->t0_ns)
        r->detail_from_ns = mr->t0_ns;
    r->evicted_blocks = cs_run_meta_u64(mr->run, "flight_evicted_blocks", 0);
    r->evicted_records = cs_run_meta_u64(mr->run, "flight_evicted_records", 0);
    r->late_records = cs_run_meta_u64(mr->run, "flight_late_records", 0);
    l->run = i;
    l->lo_ns = mr->t0_ns + l->m->opts.since_ns;
    l->hi_ns = l->m->opts.until_ns > UINT64_MAX - mr->t0_ns ? UINT64_MAX
                                                            : mr->t0_ns + l->m->opts.until_ns;
    return cs_run_agg_each(mr->run, on_row, l, err);
}

int aggregates_load(struct aggregates *g, struct model *m, struct cs_err *err)
{
    struct agg_load l = {.m = m, .g = g};
    int rc = 0;

    memset(g, 0, sizeof(*g));
    g->run = calloc(m->nruns ? (size_t)m->nruns : 1, sizeof(*g->run));
    l.slot = calloc(STATS_API_SLOTS, sizeof(*l.slot));
    if (g->run == NULL || l.slot == NULL)
        rc = -ENOMEM;
    for (int i = 0; rc == 0 && i < m->nruns; i++)
        rc = load_run(&l, (uint32_t)i, err);
    if (rc == 0 && g->any && (rc = add_uncapped(&l)) == 0)
        rc = table_from_slots(&g->api, l.slot);
    for (uint32_t i = 0; l.slot && i < STATS_API_SLOTS; i++)
        free(l.slot[i].hist);
    free(l.slot);
    return rc;
}

void aggregates_exit(struct aggregates *g)
{
    free(g->run);
    if (g->api.row)
        stats_table_exit(&g->api);
    memset(g, 0, sizeof(*g));
}
