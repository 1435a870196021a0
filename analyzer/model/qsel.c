/* model/qsel.c: exact order statistics in passes (qsel.h). Owns the bucket
 * counts and the few values collected per asked rank; the values themselves
 * are the caller's, replayed once per pass. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qsel.h"

/* log-linear buckets: values below 64 one each, then 64 per power of two */
#define LOG_BUCKETS 3776

static unsigned log_bucket(uint64_t v)
{
    unsigned e;

    if (v < 64)
        return (unsigned)v;
    e = 63u - (unsigned)__builtin_clzll(v);
    return (e - 6) * 64 + (unsigned)(v >> (e - 6));
}

/* Lowest value and width (a power of two) of log bucket @p b. */
static void log_range(unsigned b, uint64_t *lo, uint64_t *width)
{
    unsigned e = b / 64 + 5;

    if (b < 64) {
        *lo = b;
        *width = 1;
        return;
    }
    *lo = (uint64_t)(b % 64 + 64) << (e - 6);
    *width = 1ull << (e - 6);
}

int qsel_init(struct qsel *q)
{
    memset(q, 0, sizeof(*q));
    return 0;
}

/* The kept values into buckets, once there are too many to keep. */
static int to_buckets(struct qsel *q)
{
    if ((q->hist = calloc(LOG_BUCKETS, sizeof(*q->hist))) == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < q->nsmall; i++)
        q->hist[log_bucket(q->small[i])]++;
    free(q->small);
    q->small = NULL;
    q->nsmall = q->cap_small = 0;
    return 0;
}

/* A first-pass value: kept while the series is short, else bucketed. */
static void first_add(struct qsel *q, uint64_t v)
{
    if (q->hist == NULL && q->nsmall == QSEL_SMALL && to_buckets(q) < 0)
        q->err = -ENOMEM;
    if (q->hist) {
        q->hist[log_bucket(v)]++;
        return;
    }
    if (q->nsmall == q->cap_small) {
        uint32_t cap = q->cap_small ? 2 * q->cap_small : 16;
        uint64_t *p = realloc(q->small, cap * sizeof(*p));
        if (p == NULL) {
            q->err = -ENOMEM;
            return;
        }
        q->small = p;
        q->cap_small = cap;
    }
    q->small[q->nsmall++] = v;
}

void qsel_add(struct qsel *q, uint64_t v)
{
    if (q->pass == 0) {
        q->n++;
        first_add(q, v);
        return;
    }
    for (int k = 0; k < q->nrank; k++) {
        struct qsel_rank *r = &q->r[k];
        if (r->done || v - r->lo >= r->width) /* below lo wraps above width */
            continue;
        if (r->hist)
            r->hist[(v - r->lo) >> r->shift]++;
        else if (r->v && r->nv < r->cap)
            r->v[r->nv++] = v;
    }
}

int qsel_want(struct qsel *q, uint64_t rank)
{
    struct qsel_rank *r;

    if (q->pass != 0 || q->nrank == QSEL_MAX || q->n == 0)
        return -EINVAL;
    r = &q->r[q->nrank];
    memset(r, 0, sizeof(*r));
    r->rank = rank < 1 ? 1 : rank > q->n ? q->n : rank;
    return q->nrank++;
}

/* What a pass found for one rank: the (sub-)bucket holding it. */
struct found {
    uint64_t lo, width, below, count;
};

/* The bucket of @p n counts (bucket i is [lo + i * 2^shift, ...)) holding
 * the rank of @p r; log buckets when @p shift is -1. */
static struct found find(const struct qsel_rank *r, const uint64_t *hist, size_t n, int shift,
                         uint64_t lo, uint64_t below)
{
    struct found f = {0, 1, below, 0};

    for (size_t i = 0; i < n; i++) {
        if (f.below + hist[i] < r->rank) {
            f.below += hist[i];
            continue;
        }
        f.count = hist[i];
        if (shift < 0)
            log_range((unsigned)i, &f.lo, &f.width);
        else
            f.lo = lo + ((uint64_t)i << shift), f.width = 1ull << shift;
        return f;
    }
    return f; /* not reached when the passes saw the same values */
}

/* See qsel.h. Quickselect with Hoare's partition around the middle
 * element: linear on average; a bucket's values are near-uniform, a step
 * time series near-sorted. */
uint64_t qsel_kth(uint64_t *v, uint64_t n, uint64_t k)
{
    uint64_t lo = 0, hi = n - 1;

    while (lo < hi) {
        uint64_t pivot = v[lo + (hi - lo) / 2], i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                uint64_t x = v[i];
                v[i++] = v[j];
                v[j] = x;
                if (j-- == 0)
                    break;
            }
        }
        /* now v[lo..j] <= pivot <= v[i..hi], and v[j+1..i-1] == pivot */
        if (k <= j && j != UINT64_MAX)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* Rank @p r's answer, or the bucket to look at next, from the last pass. */
static struct found step(struct qsel *q, struct qsel_rank *r)
{
    struct found f = {r->lo, r->width, r->below, 0};

    if (q->pass == 0)
        return find(r, q->hist, LOG_BUCKETS, -1, 0, 0);
    if (r->hist)
        return find(r, r->hist, (size_t)(r->width >> r->shift), (int)r->shift, r->lo, r->below);
    if (r->rank - r->below - 1 < r->nv)
        f.lo = qsel_kth(r->v, r->nv, r->rank - r->below - 1);
    f.width = 1; /* answered */
    return f;
}

static unsigned log2_u64(uint64_t x)
{
    return 63u - (unsigned)__builtin_clzll(x);
}

/* Point @p r at bucket @p f for the next pass: answered when one value
 * wide, else collect its values when few, else split it again. */
static int narrow(struct qsel_rank *r, struct found f)
{
    r->lo = f.lo;
    r->width = f.width;
    r->below = f.below;
    r->nv = 0;
    if (f.width == 1) {
        r->done = 1;
        r->value = f.lo;
        return 0;
    }
    if (f.count <= QSEL_COLLECT_MAX) {
        r->cap = f.count;
        r->v = malloc((f.count ? f.count : 1) * sizeof(*r->v));
        return r->v ? 0 : -ENOMEM;
    }
    r->shift = log2_u64(f.width) > QSEL_SUB_BITS ? log2_u64(f.width) - QSEL_SUB_BITS : 0;
    r->hist = calloc((size_t)(f.width >> r->shift), sizeof(*r->hist));
    return r->hist ? 0 : -ENOMEM;
}

static void rank_release(struct qsel_rank *r)
{
    free(r->hist);
    free(r->v);
    r->hist = NULL;
    r->v = NULL;
}

/* A short series, kept whole: every rank from it, no other pass. */
static void answer_small(struct qsel *q)
{
    for (int k = 0; k < q->nrank; k++) {
        q->r[k].value = qsel_kth(q->small, q->nsmall, q->r[k].rank - 1);
        q->r[k].done = 1;
    }
}

int qsel_next(struct qsel *q)
{
    struct found f[QSEL_MAX];
    int more = 0, rc = 0;

    if (q->err < 0)
        return q->err;
    if (q->pass == 0 && q->hist == NULL) {
        answer_small(q);
        q->pass++;
        return 0;
    }

    for (int k = 0; k < q->nrank; k++)
        if (!q->r[k].done)
            f[k] = step(q, &q->r[k]);
    for (int k = 0; k < q->nrank && rc == 0; k++) {
        if (q->r[k].done)
            continue;
        rank_release(&q->r[k]);
        rc = narrow(&q->r[k], f[k]);
        more |= !q->r[k].done;
    }
    q->pass++;
    return rc < 0 ? rc : more;
}

uint64_t qsel_value(const struct qsel *q, int k)
{
    return k >= 0 && k < q->nrank ? q->r[k].value : 0;
}

void qsel_exit(struct qsel *q)
{
    for (int k = 0; k < q->nrank; k++)
        rank_release(&q->r[k]);
    free(q->hist);
    free(q->small);
    memset(q, 0, sizeof(*q));
}
