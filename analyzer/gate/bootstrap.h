/* gate/bootstrap.h: quantiles of sorted samples, their distribution-free
 * bounds, and a seeded bootstrap confidence interval for the ratio of one
 * quantile between two samples. Used by the gate; knows nothing about run
 * files or APIs. */
#ifndef CUDASPY_ANALYZER_BOOTSTRAP_H
#define CUDASPY_ANALYZER_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

/** Nearest-rank quantile @p p (0 < p <= 1) of @p n ascending values:
 * v[ceil(p*n) - 1]. @return 0 when @p n is 0. */
uint64_t bootstrap_quantile(const uint64_t *v, size_t n, double p);

/** Distribution-free bounds on the population's quantile @p p behind @p n
 * ascending values (order statistics: the count of values at or below the
 * quantile is binomial(n, p)): *lo is a value at or below it, *hi one at or
 * above it, each with probability @p level or more (e.g. 0.975; together a
 * 95 % interval). A p99 of fewer than 368 values has no upper bound at
 * 0.975: its largest value is above the p99 only 1 - 0.99^n of the time.
 * @return 0, or -ERANGE when @p n values cannot bound it (then *lo and *hi
 * are 0 and UINT64_MAX) */
int bootstrap_quantile_bounds(const uint64_t *v, size_t n, double p, double level, uint64_t *lo,
                              uint64_t *hi);

/** Splitmix64 step: the generator behind every resample (seeded, portable). */
uint64_t bootstrap_rand(uint64_t *state);

/** Percentile bootstrap of quantile(@p b, p) / quantile(@p a, p): @p resamples
 * times, draw len(a) values from @p a and len(b) from @p b with replacement,
 * take the ratio of their quantiles, and return the central @p level interval
 * (e.g. 0.95) in *lo, *hi. A zero denominator counts as ratio 1 when the
 * numerator is also 0, else as a very large ratio (1e9). Deterministic for a
 * given @p seed. @p a and @p b are ascending.
 * @return 0, -EINVAL (empty side or resamples < 10), -ENOMEM */
int bootstrap_ratio_ci(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, double p,
                       unsigned resamples, uint64_t seed, double level, double *lo, double *hi);

/** Percentile bootstrap of mean(@p b) / mean(@p a), as bootstrap_ratio_ci
 * draws (the mean of each resample instead of a quantile): what an API's
 * total time, count x mean, may be beside another run's.
 * @return 0, -EINVAL (empty side or resamples < 10), -ENOMEM */
int bootstrap_mean_ratio_ci(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                            unsigned resamples, uint64_t seed, double level, double *lo,
                            double *hi);

#endif
