/* model/qsel.h: exact order statistics (the value at a 1-based rank) of a
 * series of values seen in passes, without keeping the series. The first
 * pass counts the values in log-linear buckets (1/64 of a power of two
 * wide); each later pass narrows every asked rank to one sub-bucket of the
 * last, or, once that bucket holds few enough values, collects them and
 * picks the rank among them. The answer is the same value sorting every
 * value would give, in usually two passes, with memory bounded by
 * QSEL_COLLECT_MAX values a rank; a series of at most QSEL_SMALL values is
 * kept whole and answered after the first pass. The values are the
 * caller's to replay.
 * Usage:
 *     qsel_init(&q);
 *     for each value: qsel_add(&q, v);              (pass 1; q.n counts)
 *     qsel_want(&q, rank) for up to QSEL_MAX ranks in 1..q.n
 *     while ((rc = qsel_next(&q)) > 0)
 *         for each value, the same ones: qsel_add(&q, v);
 *     if (rc == 0) qsel_value(&q, k) ...
 *     qsel_exit(&q); */
#ifndef CUDASPY_ANALYZER_QSEL_H
#define CUDASPY_ANALYZER_QSEL_H

#include <stddef.h>
#include <stdint.h>

#define QSEL_MAX 4 /* ranks a series answers */
#define QSEL_SUB_BITS 12 /* a refining pass splits a bucket into 2^12 */
#define QSEL_COLLECT_MAX (1u << 20) /* values a rank's bucket may hold to be collected */
#define QSEL_SMALL 1024 /* a series this short is kept whole (8 KiB), not bucketed (30 KiB) */

/* One asked rank: the range [lo, lo + width - 1] still holds it, with
 * @c below values under lo. */
struct qsel_rank {
    uint64_t rank;    /* 1-based, in 1..n */
    uint64_t lo, width, below;
    uint64_t *hist;   /* refining: counts of the range's sub-buckets */
    unsigned shift;   /* refining: a sub-bucket is 2^shift wide */
    uint64_t *v;      /* collecting: the range's values (nv of cap) */
    uint64_t nv, cap;
    int done;         /* value is the answer */
    uint64_t value;
};

struct qsel {
    uint64_t n;       /* values added in the first pass */
    uint64_t *small;  /* the first QSEL_SMALL values, kept: a short series needs one pass */
    uint32_t nsmall, cap_small;
    uint64_t *hist;   /* past QSEL_SMALL values: the first pass's log-linear buckets */
    int err;          /* -ENOMEM while adding: qsel_next() returns it */
    int pass;         /* 0 while the first pass runs */
    int nrank;
    struct qsel_rank r[QSEL_MAX];
};

/** Start a series (allocates nothing yet). @return 0 */
int qsel_init(struct qsel *q);

/** Count @p v in the current pass. */
void qsel_add(struct qsel *q, uint64_t v);

/** After the first pass: ask for the value at 1-based @p rank (clamped to
 * 1..n). @return its index for qsel_value(), or -EINVAL (QSEL_MAX asked, or
 * no values) */
int qsel_want(struct qsel *q, uint64_t rank);

/** End a pass. @return 1 when another pass over the same values is needed,
 * 0 when every asked rank has its value, -ENOMEM */
int qsel_next(struct qsel *q);

/** The value at the rank qsel_want() returned @p k for (after qsel_next()
 * returned 0). */
uint64_t qsel_value(const struct qsel *q, int k);

/** The value that sorting @p v (@p n > @p k values) would put at index
 * @p k, in linear time: reorders @p v. */
uint64_t qsel_kth(uint64_t *v, uint64_t n, uint64_t k);

/** Free what the series holds. Accepts a zeroed struct. */
void qsel_exit(struct qsel *q);

#endif
