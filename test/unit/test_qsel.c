/* test_qsel.c: analyzer/model/qsel.c: the value at a rank, found in passes,
 * against sorting every value (qsort), on random series with ties, edge
 * ranks (1, n, the percentile ranks) and buckets too full to collect, so
 * the refining passes run. Prints its seed (CS_TEST_SEED). */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "model/qsel.h"
#include "unit/u64.h"

static unsigned seed;

/* Values of shape @p shape: full 64-bit, small with many ties, durations
 * (a few µs with a long tail), constant, near the top of the range. */
static uint64_t value(uint64_t *s, int shape)
{
    switch (shape) {
    case 0: return rnd(s);
    case 1: return rnd(s) % 100;
    case 2: return 4000 + rnd(s) % 3000 + (rnd(s) % 100 == 0 ? rnd(s) % 100000000 : 0);
    case 3: return 123456789;
    default: return UINT64_MAX - rnd(s) % 5;
    }
}

/* Ranks of @p v (@p n values, sorted) through qsel, each checked against
 * the sorted copy. */
static int check_ranks(const uint64_t *v, const uint64_t *sorted, size_t n, const uint64_t *rank,
                       int nrank)
{
    struct qsel q;
    int k[QSEL_MAX], rc, passes = 1;

    CHECK_OK(qsel_init(&q));
    for (size_t i = 0; i < n; i++)
        qsel_add(&q, v[i]);
    CHECK_EQ(q.n, n);
    for (int i = 0; i < nrank; i++)
        CHECK((k[i] = qsel_want(&q, rank[i])) >= 0);
    while ((rc = qsel_next(&q)) > 0 && passes++ < 10)
        for (size_t i = 0; i < n; i++)
            qsel_add(&q, v[i]);
    CHECK_EQ(rc, 0);
    for (int i = 0; i < nrank; i++)
        CHECK(qsel_value(&q, k[i]) == sorted[rank[i] - 1]);
    qsel_exit(&q);
    return 0;
}

static int test_ranks_match_sorting(void)
{
    uint64_t s = seed;

    for (int round = 0; round < 300; round++) {
        size_t n = 1 + rnd(&s) % (round < 150 ? 40 : 50000);
        int shape = (int)(rnd(&s) % 5);
        uint64_t *v = malloc(n * sizeof(*v)), *sorted = malloc(n * sizeof(*sorted));
        uint64_t rank[QSEL_MAX] = {1, n, 1 + rnd(&s) % n, (990 * (uint64_t)n + 999) / 1000};
        CHECK(v && sorted);
        for (size_t i = 0; i < n; i++)
            v[i] = sorted[i] = value(&s, shape);
        qsort(sorted, n, sizeof(*sorted), cmp_u64);
        if (check_ranks(v, sorted, n, rank, QSEL_MAX) < 0) {
            fprintf(stderr, "round %d: n %zu shape %d\n", round, n, shape);
            return -1;
        }
        free(v);
        free(sorted);
    }
    return 0;
}

/* qsel_kth() on an array sorted, reversed, shuffled and near-sorted (as a
 * step time series is), with ties: the sorted array's value at k. */
static int test_kth_matches_sorting(void)
{
    uint64_t s = seed;

    for (int round = 0; round < 400; round++) {
        size_t n = 1 + rnd(&s) % (round < 200 ? 20 : 20000);
        int order = round % 4;
        uint64_t *v = malloc(n * sizeof(*v)), *sorted = malloc(n * sizeof(*sorted));
        uint64_t k[4] = {0, n - 1, (n - 1) / 2, rnd(&s) % n};
        CHECK(v && sorted);
        for (size_t i = 0; i < n; i++)
            sorted[i] = value(&s, (int)(rnd(&s) % 5));
        qsort(sorted, n, sizeof(*sorted), cmp_u64);
        for (int j = 0; j < 4; j++) {
            for (size_t i = 0; i < n; i++)
                v[i] = order == 1 ? sorted[n - 1 - i] : sorted[i];
            for (size_t i = n - 1; order >= 2 && i > 0; i--) { /* shuffled, or a few swaps */
                size_t o = rnd(&s) % (i + 1);
                uint64_t x = v[i];
                if (order == 3 && rnd(&s) % 50)
                    continue;
                v[i] = v[o], v[o] = x;
            }
            if (qsel_kth(v, n, k[j]) != sorted[k[j]]) {
                fprintf(stderr, "round %d: n %zu order %d k %" PRIu64 "\n", round, n, order,
                        k[j]);
                CHECK(0);
            }
        }
        free(v);
        free(sorted);
    }
    return 0;
}

/* More than QSEL_COLLECT_MAX values in one first-pass bucket (all within
 * 2^20 of 2^40, many equal): the passes split it rather than collect it. */
static int test_full_bucket_is_refined(void)
{
    size_t n = QSEL_COLLECT_MAX + QSEL_COLLECT_MAX / 2;
    uint64_t s = seed, *v = malloc(n * sizeof(*v)), *sorted = malloc(n * sizeof(*sorted));
    uint64_t rank[QSEL_MAX] = {1, n / 2, n - 1, n};

    CHECK(v && sorted);
    for (size_t i = 0; i < n; i++)
        v[i] = sorted[i] = (1ull << 40) + (rnd(&s) % 7 == 0 ? 5000 : rnd(&s) % (1u << 20));
    qsort(sorted, n, sizeof(*sorted), cmp_u64);
    CHECK_OK(check_ranks(v, sorted, n, rank, QSEL_MAX));
    for (size_t i = 0; i < n; i++) /* one value, too many to collect: split to width 1 */
        v[i] = sorted[i] = 1000000007;
    CHECK_OK(check_ranks(v, sorted, n, rank, QSEL_MAX));
    free(v);
    free(sorted);
    return 0;
}

/* Up to QSEL_SMALL values are kept and answered after the first pass;
 * one more, spread wide, and the ranks need a pass over them again. */
static int test_short_series_needs_one_pass(void)
{
    uint64_t s = seed, v[QSEL_SMALL + 1], sorted[QSEL_SMALL + 1];

    for (size_t n = QSEL_SMALL; n <= QSEL_SMALL + 1; n++) {
        struct qsel q;
        int k;
        for (size_t i = 0; i < n; i++)
            v[i] = sorted[i] = 1000000 + rnd(&s) % 1000000000;
        qsort(sorted, n, sizeof(*sorted), cmp_u64);
        CHECK_OK(qsel_init(&q));
        for (size_t i = 0; i < n; i++)
            qsel_add(&q, v[i]);
        CHECK((k = qsel_want(&q, n / 2)) >= 0);
        CHECK_EQ(qsel_next(&q), n > QSEL_SMALL);
        for (int more = n > QSEL_SMALL, pass = 0; more > 0 && pass < 10; pass++) {
            for (size_t i = 0; i < n; i++)
                qsel_add(&q, v[i]);
            more = qsel_next(&q);
        }
        CHECK(qsel_value(&q, k) == sorted[n / 2 - 1]);
        qsel_exit(&q);
    }
    return 0;
}

static int test_want_rejects_empty_and_too_many(void)
{
    struct qsel q;

    CHECK_OK(qsel_init(&q));
    CHECK_ERR(qsel_want(&q, 1), -EINVAL); /* no values */
    qsel_add(&q, 5);
    for (int i = 0; i < QSEL_MAX; i++)
        CHECK_EQ(qsel_want(&q, 99), i); /* clamped to n */
    CHECK_ERR(qsel_want(&q, 1), -EINVAL);
    CHECK_EQ(qsel_next(&q), 0); /* one value, kept: no second pass */
    CHECK_EQ(qsel_value(&q, 3), 5);
    qsel_exit(&q);
    return 0;
}

int main(void)
{
    seed = check_seed();
    RUN(test_ranks_match_sorting);
    RUN(test_kth_matches_sorting);
    RUN(test_full_bucket_is_refined);
    RUN(test_short_series_needs_one_pass);
    RUN(test_want_rejects_empty_and_too_many);
    return check_status();
}
