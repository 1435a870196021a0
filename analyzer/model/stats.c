/* model/stats.c: exact percentiles (radix sort + nearest rank) and the latency
 * tables. A table keeps no call's duration: its exact percentiles come from
 * passes over the model's calls (qsel.c), so building one costs a few
 * kilobytes a row, not 8 bytes a call (model.c keeps the calls themselves). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "qsel.h"
#include "stats.h"

int stats_sort(uint64_t *v, size_t n, uint64_t *tmp)
{
    uint64_t *buf = tmp, *src = v, *dst, all_or = 0, all_and = ~0ull;
    size_t *count; /* the sort's own: tables and rules are built on two threads */

    if (n < 2)
        return 0;
    if ((count = malloc(65536 * sizeof(*count))) == NULL)
        return -ENOMEM;
    if (buf == NULL && (buf = malloc(n * sizeof(*buf))) == NULL) {
        free(count);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        all_or |= v[i];
        all_and &= v[i];
    }
    dst = buf;
    for (int shift = 0; shift < 64; shift += 16) {
        size_t sum = 0;
        if ((((all_or ^ all_and) >> shift) & 0xffff) == 0)
            continue; /* every value has the same digit here */
        memset(count, 0, 65536 * sizeof(*count));
        for (size_t i = 0; i < n; i++)
            count[(src[i] >> shift) & 0xffff]++;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xffff]++] = src[i];
        uint64_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != v)
        memcpy(v, src, n * sizeof(*v));
    if (tmp == NULL)
        free(buf);
    free(count);
    return 0;
}

uint64_t stats_rank_of(uint64_t n, unsigned permille)
{
    uint64_t r = ((uint64_t)permille * n + 999) / 1000; /* ceil(q * n) */

    return r < 1 ? 1 : r > n ? n : r;
}

uint64_t stats_rank(const uint64_t *v, size_t n, unsigned permille)
{
    return n == 0 ? 0 : v[stats_rank_of(n, permille) - 1];
}

void stats_summarize(const uint64_t *v, size_t n, struct stats_summary *s)
{
    memset(s, 0, sizeof(*s));
    s->count = n;
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        s->total_ns += v[i];
    s->min_ns = v[0];
    s->max_ns = v[n - 1];
    s->mean_ns = s->total_ns / n;
    s->p50_ns = stats_rank(v, n, 500);
    s->p90_ns = stats_rank(v, n, 900);
    s->p99_ns = stats_rank(v, n, 990);
    s->p999_ns = stats_rank(v, n, 999);
}

/* ---- tables ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    return x ^ (x >> 33);
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;

    while (*s)
        h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
    return h;
}

static const char *kernel_name(const struct model *m, const struct m_call *c)
{
    return cs_run_string(m->runs[model_call_proc(m, c)->run].run, model_name_id(c));
}

static uint64_t api_key(const struct m_call *c)
{
    return (uint64_t)c->api | (uint64_t)c->variant << 16 | (uint64_t)!!(c->flags & CS_CF_NESTED)
                                                               << 20;
}

/* Hash key of call @p c's row in a table split by @p by; the row's fields
 * are checked on lookup, so a rare collision only costs a probe. */
static uint64_t row_key(const struct model *m, const struct m_call *c, enum stats_by by)
{
    uint64_t k = api_key(c);

    switch (by) {
    case STATS_BY_PID:
        return k | (uint64_t)m->thr[c->thr].proc << 32;
    case STATS_BY_STREAM:
        return mix64(k ^ mix64(c->stream) ^ (uint64_t)m->thr[c->thr].proc << 40);
    case STATS_BY_KERNEL:
        return mix64(k ^ fnv(kernel_name(m, c)));
    default:
        return k;
    }
}

static int row_matches(const struct model *m, const struct stats_row *r, const struct m_call *c,
                       enum stats_by by)
{
    if (r->api != c->api || r->variant != c->variant || r->is_nested != !!(c->flags & CS_CF_NESTED))
        return 0;
    switch (by) {
    case STATS_BY_PID:
        return r->proc == m->thr[c->thr].proc;
    case STATS_BY_STREAM:
        return r->proc == m->thr[c->thr].proc && r->stream == c->stream;
    case STATS_BY_KERNEL: /* one row per name, across runs */
        return strcmp(cs_run_string(m->runs[r->name_run].run, r->name_id),
                      kernel_name(m, c)) == 0;
    default:
        return 1;
    }
}

static struct stats_row *row_new(struct stats_table *t, const struct model *m,
                                 const struct m_call *c)
{
    struct stats_row *r;

    if (t->nrow == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        void *q = realloc(t->row, cap * sizeof(*t->row));
        if (q == NULL)
            return NULL;
        t->row = q;
        t->cap = cap;
    }
    r = &t->row[t->nrow++];
    memset(r, 0, sizeof(*r));
    r->api = c->api;
    r->variant = c->variant;
    r->is_nested = !!(c->flags & CS_CF_NESTED);
    r->proc = t->by == STATS_BY_API ? M_NONE : m->thr[c->thr].proc;
    r->stream = t->by == STATS_BY_STREAM ? c->stream : 0;
    r->name_run = model_call_proc(m, c)->run;
    r->name_id = t->by == STATS_BY_KERNEL ? model_name_id(c) : 0;
    return r;
}

static uint32_t api_slot(const struct m_call *c)
{
    return ((uint32_t)c->api * 3 + (c->variant < 3 ? c->variant : 0)) * 2 +
           !!(c->flags & CS_CF_NESTED);
}

static struct stats_row *row_find(struct stats_table *t, const struct model *m,
                                  const struct m_call *c, int create)
{
    uint64_t k;

    if (t->by == STATS_BY_API) {
        uint32_t s = api_slot(c);
        if (t->api_ix[s] != M_NONE)
            return &t->row[t->api_ix[s]];
        if (!create || row_new(t, m, c) == NULL)
            return NULL;
        t->api_ix[s] = t->nrow - 1;
        return &t->row[t->nrow - 1];
    }
    for (k = row_key(m, c, t->by);; k++) {
        uint32_t i = m_hash_get(t->ix, k);
        if (i == M_NONE)
            break;
        if (row_matches(m, &t->row[i], c, t->by))
            return &t->row[i];
    }
    if (!create)
        return NULL;
    struct stats_row *r = row_new(t, m, c);
    if (r == NULL || m_hash_put(t->ix, k, t->nrow - 1) < 0)
        return NULL;
    return r;
}

int stats_row_cmp(const void *a, const void *b)
{
    const struct stats_row *x = a, *y = b;
    if (x->is_nested != y->is_nested)
        return x->is_nested - y->is_nested;
    if (x->s.total_ns != y->s.total_ns)
        return x->s.total_ns > y->s.total_ns ? -1 : 1;
    return x->api - y->api;
}

/* Rows move when sorted; only the per-API table is looked up afterwards. */
static void reindex(struct stats_table *t)
{
    struct m_call c = {0};

    for (uint32_t i = 0; t->by == STATS_BY_API && i < t->nrow; i++) {
        c.api = t->row[i].api;
        c.variant = t->row[i].variant;
        c.flags = t->row[i].is_nested ? CS_CF_NESTED : 0;
        t->api_ix[api_slot(&c)] = i;
    }
}

static int skip(const struct stats_table *t, const struct m_call *c)
{
    if (t->by == STATS_BY_KERNEL && model_name_id(c) == 0)
        return 1;
    return t->by == STATS_BY_STREAM && cs_api_table[c->api].family == CS_FAM_ALLOC;
}

/* Every row's series of durations, replayed into qsel: per pass, each
 * call's row is found again rather than remembered (4 bytes a call). */
struct build {
    struct stats_table *t;
    struct model *m;
    struct qsel *q; /* one per row */
    uint32_t nq;
};

/* Row @p r's series, started with the row. @return NULL when out of memory */
static struct qsel *row_qsel(struct build *b, const struct stats_row *r)
{
    uint32_t i = (uint32_t)(r - b->t->row);

    if (i >= b->nq) {
        struct qsel *q = realloc(b->q, (size_t)b->t->cap * sizeof(*q));
        if (q == NULL)
            return NULL;
        memset(q + b->nq, 0, (size_t)(b->t->cap - b->nq) * sizeof(*q));
        b->q = q;
        b->nq = b->t->cap;
    }
    return &b->q[i]; /* zeroed: an empty series, as qsel_init() makes */
}

/* The first pass: rows made, counts, totals, extremes, errors. */
static int first_pass(struct build *b)
{
    struct stats_table *t = b->t;
    struct stats_row *r;
    struct qsel *q;

    for (uint64_t i = 0; i < b->m->ncall; i++) {
        const struct m_call cv = model_call(b->m, i), *c = &cv;
        uint64_t d = model_dur(c);
        if (skip(t, c))
            continue;
        if ((r = row_find(t, b->m, c, 1)) == NULL || (q = row_qsel(b, r)) == NULL)
            return -ENOMEM;
        if (r->n++ == 0 || d < r->s.min_ns)
            r->s.min_ns = d;
        r->s.max_ns = d > r->s.max_ns ? d : r->s.max_ns;
        r->s.total_ns += d;
        r->errors += !!(c->flags & CS_CF_ERROR);
        qsel_add(q, d);
    }
    return 0;
}

/* Later passes, until every row's percentiles are exact. */
static int rank_passes(struct build *b)
{
    static const unsigned permille[4] = {500, 900, 990, 999};
    struct stats_table *t = b->t;
    int more = 0, rc = 0;

    for (uint32_t i = 0; i < t->nrow; i++)
        for (int k = 0; k < 4 && t->row[i].n; k++)
            qsel_want(&b->q[i], stats_rank_of(t->row[i].n, permille[k]));
    do {
        more = 0;
        for (uint32_t i = 0; i < t->nrow && rc >= 0; i++)
            if ((rc = qsel_next(&b->q[i])) > 0)
                more = 1;
        if (rc < 0)
            return rc;
        for (uint64_t i = 0; more && i < b->m->ncall; i++) {
            const struct m_call cv = model_call(b->m, i), *c = &cv;
            if (!skip(t, c))
                qsel_add(&b->q[row_find(t, b->m, c, 0) - t->row], model_dur(c));
        }
    } while (more);
    return 0;
}

/* The row's summary from the first pass and the ranks the passes found. */
static void row_finish(struct stats_row *r, const struct qsel *q)
{
    r->s.count = r->n;
    if (r->n == 0)
        return;
    r->s.mean_ns = r->s.total_ns / r->n;
    r->s.p50_ns = qsel_value(q, 0);
    r->s.p90_ns = qsel_value(q, 1);
    r->s.p99_ns = qsel_value(q, 2);
    r->s.p999_ns = qsel_value(q, 3);
}

/* Exact percentiles without the durations: one pass counts (and buckets
 * them, qsel.c), usually one more finds each percentile's value. */
int stats_table_build(struct stats_table *t, struct model *m, enum stats_by by)
{
    struct build b = {t, m, NULL, 0};
    int rc;

    memset(t, 0, sizeof(*t));
    memset(t->api_ix, 0xff, sizeof(t->api_ix));
    t->by = by;
    if ((t->ix = m_hash_new()) == NULL)
        return -ENOMEM;
    rc = first_pass(&b);
    if (rc == 0)
        rc = rank_passes(&b);
    for (uint32_t i = 0; i < t->nrow; i++) {
        if (rc == 0)
            row_finish(&t->row[i], &b.q[i]);
        qsel_exit(&b.q[i]);
    }
    free(b.q);
    if (rc < 0)
        return rc;
    if (t->nrow)
        qsort(t->row, t->nrow, sizeof(*t->row), stats_row_cmp);
    reindex(t);
    return 0;
}

const struct stats_row *stats_table_row(const struct stats_table *t, const struct m_call *c)
{
    uint32_t i;

    if (t->by != STATS_BY_API)
        return NULL;
    i = t->api_ix[api_slot(c)];
    return i == M_NONE ? NULL : &t->row[i];
}

const struct stats_row *stats_table_row_at(const struct stats_table *t, const struct model *m,
                                           uint64_t ci)
{
    const struct m_call c = model_call(m, ci);

    return stats_table_row(t, &c);
}

void stats_table_exit(struct stats_table *t)
{
    free(t->row);
    m_hash_free(t->ix);
    memset(t, 0, sizeof(*t));
}

const char *stats_row_name(const struct stats_row *r, char *buf, size_t n)
{
    return cs_api_display((enum cs_api)r->api, (enum cs_variant)r->variant, buf, n);
}
