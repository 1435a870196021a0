/* test_bootstrap.c: unit.bootstrap: nearest-rank quantiles, their bounds
 * and the seeded bootstrap interval of a quantile ratio. */
#include <errno.h>
#include <stdlib.h>

#include "../../analyzer/gate/bootstrap.h"
#include "check.h"

static int test_quantile_is_nearest_rank(void)
{
    uint64_t v[100];
    for (int i = 0; i < 100; i++)
        v[i] = (uint64_t)i + 1;
    CHECK_EQ(bootstrap_quantile(v, 100, 0.5), 50);
    CHECK_EQ(bootstrap_quantile(v, 100, 0.99), 99);
    CHECK_EQ(bootstrap_quantile(v, 100, 0.999), 100);
    CHECK_EQ(bootstrap_quantile(v, 1, 0.99), 1);
    CHECK_EQ(bootstrap_quantile(v, 0, 0.99), 0);
    return 0;
}

static void fill(uint64_t *v, size_t n, uint64_t scale)
{
    for (size_t i = 0; i < n; i++)
        v[i] = scale * (1000 + i); /* ascending */
}

static int test_same_sample_ci_includes_one(void)
{
    uint64_t a[1000];
    double lo, hi;
    fill(a, 1000, 1);
    CHECK_OK(bootstrap_ratio_ci(a, 1000, a, 1000, 0.99, 1000, 1, 0.95, &lo, &hi));
    CHECK(lo <= 1.0 && hi >= 1.0);
    return 0;
}

static int test_tripled_sample_ci_excludes_one(void)
{
    uint64_t a[1000], b[1000];
    double lo, hi;
    fill(a, 1000, 1);
    fill(b, 1000, 3);
    CHECK_OK(bootstrap_ratio_ci(a, 1000, b, 1000, 0.99, 1000, 1, 0.95, &lo, &hi));
    CHECK(lo > 2.5 && hi < 3.5);
    return 0;
}

static int test_same_seed_same_interval(void)
{
    uint64_t a[500], b[700];
    double lo1, hi1, lo2, hi2;
    fill(a, 500, 1);
    fill(b, 700, 2);
    CHECK_OK(bootstrap_ratio_ci(a, 500, b, 700, 0.9, 200, 42, 0.95, &lo1, &hi1));
    CHECK_OK(bootstrap_ratio_ci(a, 500, b, 700, 0.9, 200, 42, 0.95, &lo2, &hi2));
    CHECK(lo1 == lo2 && hi1 == hi2);
    return 0;
}

/* Order-statistic bounds: the median of 20 lies between the 6th and 15th
 * values (the textbook 95 % ranks); a p99 needs 368 values for an upper one. */
static int test_quantile_bounds(void)
{
    uint64_t v[1000], lo, hi;
    for (int i = 0; i < 1000; i++)
        v[i] = (uint64_t)i + 1;
    CHECK_OK(bootstrap_quantile_bounds(v, 20, 0.5, 0.975, &lo, &hi));
    CHECK_EQ(lo, 6);
    CHECK_EQ(hi, 15);
    CHECK_EQ(bootstrap_quantile_bounds(v, 100, 0.99, 0.975, &lo, &hi), -ERANGE);
    CHECK_EQ(hi, UINT64_MAX);
    CHECK_EQ(bootstrap_quantile_bounds(v, 367, 0.99, 0.975, &lo, &hi), -ERANGE);
    CHECK_OK(bootstrap_quantile_bounds(v, 368, 0.99, 0.975, &lo, &hi));
    CHECK_EQ(hi, 368);
    CHECK_OK(bootstrap_quantile_bounds(v, 1000, 0.99, 0.975, &lo, &hi));
    CHECK(lo < 990 && hi > 990 && hi < 1000);
    return 0;
}

static int test_empty_side_is_einval(void)
{
    uint64_t a[1] = {1};
    double lo, hi;
    CHECK_ERR(bootstrap_ratio_ci(a, 1, a, 0, 0.99, 100, 1, 0.95, &lo, &hi), -EINVAL);
    CHECK_ERR(bootstrap_ratio_ci(a, 1, a, 1, 0.99, 5, 1, 0.95, &lo, &hi), -EINVAL);
    return 0;
}

int main(void)
{
    RUN(test_quantile_is_nearest_rank);
    RUN(test_same_sample_ci_includes_one);
    RUN(test_tripled_sample_ci_excludes_one);
    RUN(test_same_seed_same_interval);
    RUN(test_quantile_bounds);
    RUN(test_empty_side_is_einval);
    return check_status();
}
