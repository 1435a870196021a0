/* test_stats.c: analyzer/model/stats.c: radix sort and nearest-rank percentiles
 * against a brute-force reference (qsort + the rank formula in floating
 * point) on random data of many shapes. Prints its seed (CS_TEST_SEED). */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "model/stats.h"
#include "unit/u64.h"

static unsigned seed;

/* Reference: the value at 1-based rank ceil(q * n), computed the slow way. */
static uint64_t ref_rank(const uint64_t *v, size_t n, double q)
{
    size_t r = (size_t)ceil(q * (double)n - 1e-9);
    return v[(r < 1 ? 1 : r) - 1];
}

/* Values of shape @p shape: full 64-bit, small, heavy-tailed, constant. */
static uint64_t value(uint64_t *s, int shape)
{
    switch (shape) {
    case 0: return rnd(s);
    case 1: return rnd(s) % 1000;
    case 2: return (uint64_t)(1000.0 * pow(1.0 - (double)(rnd(s) % 1000000) / 1e6, -1.5));
    default: return 77;
    }
}

static int test_sort_and_ranks_match_reference(void)
{
    uint64_t s = seed;

    for (int round = 0; round < 200; round++) {
        size_t n = 1 + rnd(&s) % (round < 100 ? 50 : 20000);
        int shape = (int)(rnd(&s) % 4);
        uint64_t *v = malloc(n * sizeof(*v)), *ref = malloc(n * sizeof(*ref));
        CHECK(v && ref);
        for (size_t i = 0; i < n; i++)
            v[i] = ref[i] = value(&s, shape);
        CHECK_OK(stats_sort(v, n, NULL));
        qsort(ref, n, sizeof(*ref), cmp_u64);
        for (size_t i = 0; i < n; i++)
            CHECK(v[i] == ref[i]);
        CHECK(stats_rank(v, n, 500) == ref_rank(ref, n, 0.5));
        CHECK(stats_rank(v, n, 900) == ref_rank(ref, n, 0.9));
        CHECK(stats_rank(v, n, 990) == ref_rank(ref, n, 0.99));
        CHECK(stats_rank(v, n, 999) == ref_rank(ref, n, 0.999));
        free(v);
        free(ref);
    }
    return 0;
}

static int test_rank_of_small_samples(void)
{
    uint64_t v[] = {10, 20, 30, 40};

    CHECK_EQ(stats_rank(v, 4, 500), 20); /* ceil(0.5*4) = 2 */
    CHECK_EQ(stats_rank(v, 4, 990), 40); /* ceil(3.96) = 4 */
    CHECK_EQ(stats_rank(v, 1, 500), 10);
    CHECK_EQ(stats_rank(v, 0, 500), 0);
    return 0;
}

static int test_summary_totals(void)
{
    uint64_t v[] = {1, 2, 3, 4, 100};
    struct stats_summary s;

    stats_summarize(v, 5, &s);
    CHECK_EQ(s.count, 5);
    CHECK_EQ(s.total_ns, 110);
    CHECK_EQ(s.mean_ns, 22);
    CHECK_EQ(s.min_ns, 1);
    CHECK_EQ(s.max_ns, 100);
    CHECK_EQ(s.p50_ns, 3);
    CHECK_EQ(s.p99_ns, 100);
    return 0;
}

int main(void)
{
    seed = check_seed();
    RUN(test_sort_and_ranks_match_reference);
    RUN(test_rank_of_small_samples);
    RUN(test_summary_totals);
    return check_status();
}
