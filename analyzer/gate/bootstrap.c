/* gate/bootstrap.c: nearest-rank quantiles, their order-statistic bounds and
 * the percentile bootstrap of a quantile ratio (and of a ratio of means). Resampling from an ascending array is done by counting how
 * often each index is drawn and walking the counts to the wanted rank, so one
 * resample costs O(n) and never sorts. */
#include "bootstrap.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BOOTSTRAP_BIG_RATIO 1e9

uint64_t bootstrap_quantile(const uint64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    double r = ceil(p * (double)n - 1e-9);
    size_t k = r < 1 ? 1 : (size_t)r;
    return v[k > n ? n - 1 : k - 1];
}

int bootstrap_quantile_bounds(const uint64_t *v, size_t n, double p, double level, uint64_t *lo,
                              uint64_t *hi)
{
    double lg = lgamma((double)n + 1), cdf = 0, pmf;
    size_t l = 0, u = 0; /* ranks (1-based) of the bounds, 0 = none */

    *lo = 0, *hi = UINT64_MAX;
    if (n == 0 || p <= 0 || p >= 1)
        return -ERANGE;
    /* K, the count of values at or below the quantile, is binomial(n, p):
       the r-th value is at or below it when K >= r, at or above when K < r */
    for (size_t k = 0; k <= n; k++) {
        pmf = exp(lg - lgamma((double)k + 1) - lgamma((double)(n - k) + 1) +
                  (double)k * log(p) + (double)(n - k) * log1p(-p));
        if (k >= 1 && 1.0 - cdf >= level) /* P(K >= k) */
            l = k;
        cdf += pmf;
        if (u == 0 && k + 1 <= n && cdf >= level) /* P(K <= k) = P(K < k + 1) */
            u = k + 1;
    }
    if (l == 0 || u == 0)
        return -ERANGE;
    *lo = v[l - 1], *hi = v[u - 1];
    return 0;
}

uint64_t bootstrap_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One resample of @p n values from ascending @p v: its quantile @p p.
 * @p counts is scratch of n entries. */
static uint64_t resample_quantile(const uint64_t *v, size_t n, double p, uint32_t *counts,
                                  uint64_t *rng)
{
    memset(counts, 0, n * sizeof(*counts));
    for (size_t i = 0; i < n; i++)
        counts[bootstrap_rand(rng) % n]++;
    double r = ceil(p * (double)n - 1e-9);
    size_t rank = r < 1 ? 1 : (size_t)r, seen = 0;
    for (size_t i = 0; i < n; i++) {
        seen += counts[i];
        if (seen >= rank)
            return v[i];
    }
    return v[n - 1];
}

static double ratio_of(uint64_t num, uint64_t den)
{
    if (den == 0)
        return num == 0 ? 1.0 : BOOTSTRAP_BIG_RATIO;
    return (double)num / (double)den;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int bootstrap_ratio_ci(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, double p,
                       unsigned resamples, uint64_t seed, double level, double *lo, double *hi)
{
    if (na == 0 || nb == 0 || resamples < 10)
        return -EINVAL;
    double *ratios = malloc(resamples * sizeof(*ratios));
    uint32_t *counts = malloc((na > nb ? na : nb) * sizeof(*counts));
    if (!ratios || !counts) {
        free(ratios);
        free(counts);
        return -ENOMEM;
    }
    uint64_t rng = seed;
    for (unsigned i = 0; i < resamples; i++) {
        uint64_t qa = resample_quantile(a, na, p, counts, &rng);
        uint64_t qb = resample_quantile(b, nb, p, counts, &rng);
        ratios[i] = ratio_of(qb, qa);
    }
    qsort(ratios, resamples, sizeof(*ratios), cmp_double);
    double tail = (1.0 - level) / 2.0;
    size_t ilo = (size_t)floor(tail * resamples);
    size_t ihi = (size_t)ceil((1.0 - tail) * resamples);
    *lo = ratios[ilo];
    *hi = ratios[ihi == 0 ? 0 : ihi - 1];
    free(ratios);
    free(counts);
    return 0;
}

/* Mean of one resample of @p n values from @p v. */
static double resample_mean(const uint64_t *v, size_t n, uint64_t *rng)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)v[bootstrap_rand(rng) % n];
    return sum / (double)n;
}

int bootstrap_mean_ratio_ci(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                            unsigned resamples, uint64_t seed, double level, double *lo,
                            double *hi)
{
    if (na == 0 || nb == 0 || resamples < 10)
        return -EINVAL;
    double *ratios = malloc(resamples * sizeof(*ratios));
    if (!ratios)
        return -ENOMEM;
    uint64_t rng = seed;
    for (unsigned i = 0; i < resamples; i++) {
        double ma = resample_mean(a, na, &rng), mb = resample_mean(b, nb, &rng);
        ratios[i] = ma > 0 ? mb / ma : (mb > 0 ? BOOTSTRAP_BIG_RATIO : 1.0);
    }
    qsort(ratios, resamples, sizeof(*ratios), cmp_double);
    double tail = (1.0 - level) / 2.0;
    size_t ilo = (size_t)floor(tail * resamples);
    size_t ihi = (size_t)ceil((1.0 - tail) * resamples);
    *lo = ratios[ilo];
    *hi = ratios[ihi == 0 ? 0 : ihi - 1];
    free(ratios);
    return 0;
}
