/* test_mcp_index.c: the MCP server's latency statistics (mcp_index.c):
 * the linear selection used for windows must give exactly the nearest-rank
 * percentiles of a full sort, and both histograms must agree. */
#include <stdlib.h>

#include "check.h"
#include "mcp/mcp.h"

static unsigned seed;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Compare selection on a copy of @p v with statistics of the sorted array. */
static int same_as_sorted(const uint64_t *v, size_t n)
{
    uint64_t *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b)), total = 0;
    CHECK(a && b);
    for (size_t i = 0; i < n; i++) {
        a[i] = b[i] = v[i];
        total += v[i];
    }
    qsort(b, n, sizeof(*b), cmp_u64);
    struct mcp_stats sel, srt;
    mcp_stats_unsorted(a, n, &sel);
    mcp_stats_sorted(b, n, total, &srt);
    free(a);
    free(b);
    CHECK_EQ(sel.count, srt.count);
    CHECK_EQ(sel.total_ns, srt.total_ns);
    CHECK_EQ(sel.mean_ns, srt.mean_ns);
    CHECK_EQ(sel.min_ns, srt.min_ns);
    CHECK_EQ(sel.p50_ns, srt.p50_ns);
    CHECK_EQ(sel.p90_ns, srt.p90_ns);
    CHECK_EQ(sel.p99_ns, srt.p99_ns);
    CHECK_EQ(sel.p999_ns, srt.p999_ns);
    CHECK_EQ(sel.max_ns, srt.max_ns);
    for (unsigned k = 0; k < MCP_HIST_BUCKETS; k++)
        CHECK_EQ(sel.hist[k], srt.hist[k]);
    return 0;
}

static int test_selection_equals_sort_on_random_sizes(void)
{
    srand(seed);
    for (size_t n = 1; n < 3000; n += 1 + n / 3) {
        uint64_t *v = malloc(n * sizeof(*v));
        CHECK(v);
        for (size_t i = 0; i < n; i++)
            v[i] = (uint64_t)rand() % (1u << (rand() % 30 + 1)); /* heavy-tailed */
        int rc = same_as_sorted(v, n);
        free(v);
        CHECK_EQ(rc, 0);
    }
    return 0;
}

static int test_selection_equals_sort_with_duplicates(void)
{
    uint64_t v[1000];
    for (size_t i = 0; i < 1000; i++)
        v[i] = i % 3 == 0 ? 7 : 5; /* two values only: partitions full of ties */
    return same_as_sorted(v, 1000);
}

static int test_selection_equals_sort_on_descending_input(void)
{
    uint64_t v[777];
    for (size_t i = 0; i < 777; i++)
        v[i] = 1000000 - i * 1000;
    return same_as_sorted(v, 777);
}

static int test_nearest_rank_of_hundred(void)
{
    uint64_t v[100];
    struct mcp_stats st;
    for (size_t i = 0; i < 100; i++)
        v[i] = 100 - i; /* 1..100, reversed */
    mcp_stats_unsorted(v, 100, &st);
    CHECK_EQ(st.p50_ns, 50);
    CHECK_EQ(st.p90_ns, 90);
    CHECK_EQ(st.p99_ns, 99);
    CHECK_EQ(st.p999_ns, 100);
    CHECK_EQ(st.hist[0], 1);  /* 1 */
    CHECK_EQ(st.hist[6], 37); /* 64..100 */
    return 0;
}

static int test_empty_is_all_zero(void)
{
    struct mcp_stats st;
    mcp_stats_unsorted(NULL, 0, &st);
    CHECK_EQ(st.count, 0);
    CHECK_EQ(st.max_ns, 0);
    CHECK_EQ(st.min_ns, 0);
    return 0;
}

int main(void)
{
    seed = check_seed();
    RUN(test_selection_equals_sort_on_random_sizes);
    RUN(test_selection_equals_sort_with_duplicates);
    RUN(test_selection_equals_sort_on_descending_input);
    RUN(test_nearest_rank_of_hundred);
    RUN(test_empty_is_all_zero);
    return check_status();
}
