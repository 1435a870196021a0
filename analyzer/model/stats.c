/* model/stats.c: exact percentiles (radix sort + nearest rank) and the latency
 * tables. Every call's duration is kept, so a table costs 8 bytes per call
 * while it is built, in the model's scratch memory (model.c keeps the calls
 * themselves); a built table keeps only each row's summary. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "stats.h"

int stats_sort(uint64_t *v, size_t n, uint64_t *tmp)
{
    uint64_t *buf = tmp, *src = v, *dst, all_or = 0, all_and = ~0ull;
    static size_t count[65536]; /* not reentrant: the analyzer sorts on one thread */

    if (n < 2)
        return 0;
    if (buf == NULL && (buf = malloc(n * sizeof(*buf))) == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        all_or |= v[i];
        all_and &= v[i];
    }
    dst = buf;
    for (int shift = 0; shift < 64; shift += 16) {
        size_t sum = 0;
        if ((((all_or ^ all_and) >> shift) & 0xffff) == 0)
            continue; /* every value has the same digit here */
        memset(count, 0, sizeof(count));
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
    return 0;
}

uint64_t stats_rank(const uint64_t *v, size_t n, unsigned permille)
{
    uint64_t r;

    if (n == 0)
        return 0;
    r = ((uint64_t)permille * n + 999) / 1000; /* ceil(q * n) */
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return v[r - 1];
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

/* Two passes: count the calls of each row, then fill each row's slice of
 * one scratch array (10 M durations are never copied by a growing realloc,
 * and the pages the feed's scratch already faulted in are reused). */
int stats_table_build(struct stats_table *t, struct model *m, enum stats_by by)
{
    uint64_t max_n = 0, total = 0, *buf;
    struct stats_row *r;

    memset(t, 0, sizeof(*t));
    memset(t->api_ix, 0xff, sizeof(t->api_ix));
    t->by = by;
    if ((t->ix = m_hash_new()) == NULL)
        return -ENOMEM;
    for (uint64_t i = 0; i < m->ncall; i++) {
        if (skip(t, &m->call[i]))
            continue;
        if ((r = row_find(t, m, &m->call[i], 1)) == NULL)
            return -ENOMEM;
        r->cap++;
    }
    for (uint32_t i = 0; i < t->nrow; i++) {
        total += t->row[i].cap;
        max_n = t->row[i].cap > max_n ? t->row[i].cap : max_n;
    }
    /* the rows' durations, then the radix sort's buffer */
    if ((buf = model_scratch(m, (total + max_n + 1) * sizeof(*buf))) == NULL)
        return -ENOMEM;
    for (uint64_t i = 0, off = 0; i < t->nrow; off += t->row[i].cap, i++)
        t->row[i].dur = buf + off;
    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call *c = &m->call[i];
        if (skip(t, c))
            continue;
        r = row_find(t, m, c, 0);
        r->dur[r->n++] = model_dur(c);
        r->errors += !!(c->flags & CS_CF_ERROR);
    }
    for (uint32_t i = 0; i < t->nrow; i++) {
        stats_sort(t->row[i].dur, t->row[i].n, buf + total);
        stats_summarize(t->row[i].dur, t->row[i].n, &t->row[i].s);
        t->row[i].dur = NULL; /* the scratch is the next user's */
    }
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
