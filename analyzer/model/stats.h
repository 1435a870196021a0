/* model/stats.h: exact latency statistics over every call. Percentiles use the
 * nearest-rank definition: the q-th percentile of n ascending values is the
 * value at 1-based rank ceil(q/100 * n) (rank 1 at least). No sampling, no
 * interpolation: every reported value is a duration that really happened.
 * stats.c also builds the latency tables (per API, and per process, stream
 * or kernel on request) from the model. */
#ifndef CUDASPY_ANALYZER_STATS_H
#define CUDASPY_ANALYZER_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "cudaspy/api.h"
#include "model.h"

struct stats_summary {
    uint64_t count, total_ns, min_ns, max_ns, mean_ns;
    uint64_t p50_ns, p90_ns, p99_ns, p999_ns;
};

/** Sort @p n values ascending in place (LSD radix, 16-bit digits, passes
 * whose digit is the same for every value are skipped). @p tmp holds n
 * values, or is NULL to allocate. @return 0 or -ENOMEM */
int stats_sort(uint64_t *v, size_t n, uint64_t *tmp);

/** 1-based nearest rank of percentile @p permille among @p n >= 1 values:
 * ceil(permille / 1000 * n), within 1..n. */
uint64_t stats_rank_of(uint64_t n, unsigned permille);

/** Nearest-rank percentile @p permille (500 = p50, 999 = p99.9) of @p n
 * ascending values. @return 0 when n is 0 */
uint64_t stats_rank(const uint64_t *v, size_t n, unsigned permille);

/** Summary of @p n ascending values. */
void stats_summarize(const uint64_t *v, size_t n, struct stats_summary *s);

enum stats_by { STATS_BY_API = 0, STATS_BY_PID, STATS_BY_STREAM, STATS_BY_KERNEL };

/* One row of a latency table: one API (display variant), nested or not,
 * optionally split by process, stream or kernel. */
struct stats_row {
    uint16_t api;
    uint8_t variant, is_nested;
    uint32_t proc;      /* index in model.proc (STATS_BY_PID, _STREAM, _KERNEL), else M_NONE */
    uint64_t stream;    /* STATS_BY_STREAM */
    uint32_t name_run, name_id; /* STATS_BY_KERNEL: run and strings id */
    uint64_t errors;    /* calls with CS_CF_ERROR */
    uint64_t n;         /* calls */
    uint64_t p99_gate;  /* chains.c: outlier threshold when the tail is heavy, else 0 */
    struct stats_summary s;
};

#define STATS_API_SLOTS (CS_API_COUNT * 3 * 2) /* api x variant x nested */

struct stats_table {
    enum stats_by by;
    struct stats_row *row;
    uint32_t nrow, cap;
    struct m_hash *ix;                 /* rows of the split tables */
    uint32_t api_ix[STATS_API_SLOTS];  /* STATS_BY_API: row of each slot, M_NONE */
};

/** Build the table for @p by over every call of @p m (nested driver calls get
 * their own rows). Rows are sorted: outermost first, by total time.
 * @return 0 or -ENOMEM */
int stats_table_build(struct stats_table *t, struct model *m, enum stats_by by);

/** Row of the outermost-or-nested API row for call @p c (STATS_BY_API only).
 * @return the row or NULL */
const struct stats_row *stats_table_row(const struct stats_table *t, const struct m_call *c);

/** stats_table_row() of call @p ci of @p m. */
const struct stats_row *stats_table_row_at(const struct stats_table *t, const struct model *m,
                                           uint64_t ci);

/** Free rows and their arrays. */
void stats_table_exit(struct stats_table *t);
/** qsort() order of a table's rows: outermost calls first, then by total
 * time, most first, then by API. */
int stats_row_cmp(const void *a, const void *b);

/** Display name of row @p r ("cudaMemcpyAsync_ptsz") into @p buf. */
const char *stats_row_name(const struct stats_row *r, char *buf, size_t n);

#endif
