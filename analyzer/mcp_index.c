/* mcp_index.c: the MCP server's per-run indexes, built once at startup so
 * every tool call answers from memory: CUDA calls and off-CPU intervals
 * grouped by process and sorted by time (timelines), outermost calls by API
 * (latency over any pid/time filter), intervals by length (top stalls), and
 * the latency statistics the tools print. The analysis proper (chains,
 * breakdowns, GPU feed) is analysis.c's; this file only re-slices records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "stats.h"

/* ---- growable arrays and pid grouping ---- */

static int grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap * 2 : 4096;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Slot of @p pid in the sorted pid list. */
static uint32_t pid_slot(const struct mcp_index *x, uint32_t pid)
{
    uint32_t lo = 0, hi = x->npids;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (x->pids[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The sorted distinct pids of calls and intervals. */
static int index_pids(struct mcp_index *x, const struct mcp_call *c, uint64_t nc,
                      const struct cs_rec_offcpu *o, uint64_t no)
{
    uint32_t *all = malloc((nc + no + 1) * sizeof(*all));
    if (!all)
        return -ENOMEM;
    uint64_t n = 0;
    for (uint64_t i = 0; i < nc; i++)
        if (n == 0 || all[n - 1] != c[i].pid)
            all[n++] = c[i].pid;
    for (uint64_t i = 0; i < no; i++)
        if (n == 0 || all[n - 1] != o[i].pid)
            all[n++] = o[i].pid;
    qsort(all, n, sizeof(*all), cmp_u32);
    x->pids = calloc(n + 1, sizeof(*x->pids));
    if (!x->pids) {
        free(all);
        return -ENOMEM;
    }
    for (uint64_t i = 0; i < n; i++)
        if (i == 0 || all[i] != all[i - 1])
            x->pids[x->npids++].pid = all[i];
    free(all);
    return 0;
}

static int cmp_call_t(const void *a, const void *b)
{
    const struct mcp_call *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_off_t(const void *a, const void *b)
{
    const struct cs_rec_offcpu *x = a, *y = b;
    if (x->t_start_ns != y->t_start_ns)
        return x->t_start_ns < y->t_start_ns ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Counting sort of calls by pid (stable: blocks arrive roughly by time), then
 * a sort of each process's range unless it is already in time order. */
static int index_group_calls(struct mcp_index *x, struct mcp_call *raw)
{
    uint64_t *at = calloc(x->npids + 1, sizeof(*at));
    if (!at)
        return -ENOMEM;
    for (uint64_t i = 0; i < x->ncalls; i++)
        at[pid_slot(x, raw[i].pid) + 1]++;
    for (uint32_t p = 0; p < x->npids; p++) {
        at[p + 1] += at[p];
        x->pids[p].call_lo = at[p];
        x->pids[p].call_hi = at[p + 1];
    }
    for (uint64_t i = 0; i < x->ncalls; i++)
        x->calls[at[pid_slot(x, raw[i].pid)]++] = raw[i];
    free(at);
    for (uint32_t p = 0; p < x->npids; p++) {
        struct mcp_call *c = x->calls + x->pids[p].call_lo;
        uint64_t n = x->pids[p].call_hi - x->pids[p].call_lo;
        for (uint64_t i = 1; i < n; i++)
            if (cmp_call_t(&c[i - 1], &c[i]) > 0) {
                qsort(c, n, sizeof(*c), cmp_call_t);
                break;
            }
    }
    return 0;
}

static int index_group_offs(struct mcp_index *x, struct cs_rec_offcpu *raw)
{
    uint64_t *at = calloc(x->npids + 1, sizeof(*at));
    if (!at)
        return -ENOMEM;
    for (uint64_t i = 0; i < x->noffs; i++)
        at[pid_slot(x, raw[i].pid) + 1]++;
    for (uint32_t p = 0; p < x->npids; p++) {
        at[p + 1] += at[p];
        x->pids[p].off_lo = at[p];
        x->pids[p].off_hi = at[p + 1];
    }
    for (uint64_t i = 0; i < x->noffs; i++)
        x->offs[at[pid_slot(x, raw[i].pid)]++] = raw[i];
    free(at);
    for (uint32_t p = 0; p < x->npids; p++) {
        struct cs_rec_offcpu *o = x->offs + x->pids[p].off_lo;
        uint64_t n = x->pids[p].off_hi - x->pids[p].off_lo;
        for (uint64_t i = 1; i < n; i++)
            if (cmp_off_t(&o[i - 1], &o[i]) > 0) {
                qsort(o, n, sizeof(*o), cmp_off_t);
                break;
            }
    }
    return 0;
}

static unsigned call_key(const struct mcp_call *c)
{
    return mcp_lat_key(c->api < CS_API_COUNT ? c->api : 0, c->variant,
                       c->flags & CS_CF_NESTED);
}

/* Calls by latency key: a stable counting sort of the (pid, time)-ordered
 * calls keeps (pid, time) order inside each key. */
static int index_lat(struct mcp_index *x)
{
    memset(x->lat_lo, 0, sizeof(x->lat_lo));
    for (uint64_t i = 0; i < x->ncalls; i++)
        x->lat_lo[call_key(&x->calls[i]) + 1]++;
    for (unsigned k = 0; k < MCP_LAT_KEYS; k++)
        x->lat_lo[k + 1] += x->lat_lo[k];
    x->lat = malloc((x->ncalls + 1) * sizeof(*x->lat));
    uint64_t *at = malloc(sizeof(x->lat_lo));
    if (!x->lat || !at) {
        free(at);
        return -ENOMEM;
    }
    memcpy(at, x->lat_lo, sizeof(x->lat_lo));
    for (uint64_t i = 0; i < x->ncalls; i++) {
        const struct mcp_call *c = &x->calls[i];
        x->lat[at[call_key(c)]++] = (struct mcp_lat){c->t_ns, c->dur_ns, (uint32_t)i, c->pid};
    }
    free(at);
    return 0;
}

/* Prefix sums and per-key / per-(key, pid) sorted durations, so unfiltered
 * and per-process statistics cost no scan. */
static int index_lat_sums(struct mcp_index *x)
{
    uint64_t n = x->ncalls;
    x->cum_ns = malloc((n + 1) * sizeof(uint64_t));
    x->cum_err = malloc((n + 1) * sizeof(uint64_t));
    x->dur_key = malloc((n + 1) * sizeof(uint64_t));
    x->dur_pid = malloc((n + 1) * sizeof(uint64_t));
    uint64_t *tmp = malloc((n + 1) * sizeof(uint64_t));
    int rc = x->cum_ns && x->cum_err && x->dur_key && x->dur_pid && tmp ? 0 : -ENOMEM;
    if (rc == 0)
        x->cum_ns[0] = x->cum_err[0] = 0;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        const struct mcp_lat *l = &x->lat[i];
        x->cum_ns[i + 1] = x->cum_ns[i] + l->dur_ns;
        x->cum_err[i + 1] = x->cum_err[i] + !!(x->calls[l->call].flags & CS_CF_ERROR);
        x->dur_key[i] = x->dur_pid[i] = l->dur_ns;
    }
    for (unsigned k = 0; rc == 0 && k < MCP_LAT_KEYS; k++) {
        uint64_t lo = x->lat_lo[k], hi = x->lat_lo[k + 1];
        if (lo == hi)
            continue;
        rc = stats_sort(x->dur_key + lo, hi - lo, tmp);
        for (uint64_t g = lo, e; rc == 0 && g < hi; g = e) {
            e = mcp_index_group_end(x, g, hi);
            rc = stats_sort(x->dur_pid + g, e - g, tmp);
        }
    }
    free(tmp);
    return rc;
}

struct dur_ix {
    uint64_t dur_ns;
    uint32_t i;
};

static int cmp_dur_desc(const void *a, const void *b)
{
    const struct dur_ix *x = a, *y = b;
    if (x->dur_ns != y->dur_ns)
        return x->dur_ns > y->dur_ns ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int index_off_by_dur(struct mcp_index *x)
{
    struct dur_ix *d = malloc((x->noffs + 1) * sizeof(*d));
    x->off_by_dur = malloc((x->noffs + 1) * sizeof(*x->off_by_dur));
    if (!d || !x->off_by_dur) {
        free(d);
        return -ENOMEM;
    }
    for (uint64_t i = 0; i < x->noffs; i++) {
        const struct cs_rec_offcpu *o = &x->offs[i];
        d[i] = (struct dur_ix){o->t_end_ns > o->t_start_ns ? o->t_end_ns - o->t_start_ns : 0,
                               (uint32_t)i};
    }
    qsort(d, x->noffs, sizeof(*d), cmp_dur_desc);
    for (uint64_t i = 0; i < x->noffs; i++)
        x->off_by_dur[i] = d[i].i;
    free(d);
    return 0;
}

/* ---- reading the run ---- */

static int index_read_calls(struct cs_run *r, struct mcp_call **out, uint64_t *n,
                            struct cs_err *err)
{
    struct cs_cursor *cur;
    int rc = cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &cur);
    if (rc < 0)
        return rc;
    uint64_t cap = 0;
    const struct cs_blk_hdr *h;
    const void *recs;
    while ((rc = cs_cursor_next(cur, &h, &recs, err)) == 1) {
        const struct cs_rec_cuda *c = recs;
        if ((rc = grow((void **)out, &cap, *n + h->n, sizeof(**out))) < 0)
            break;
        for (uint32_t i = 0; i < h->n; i++, c++) {
            uint64_t dur = c->t_exit_ns > c->t_enter_ns ? c->t_exit_ns - c->t_enter_ns : 0;
            (*out)[(*n)++] = (struct mcp_call){
                c->t_enter_ns, dur, c->stream, c->bytes, c->pid, c->tid, c->name_id,
                c->result, c->api, c->flags, c->variant, c->dir, 0};
        }
    }
    cs_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

static int index_read_offs(struct cs_run *r, struct cs_rec_offcpu **out, uint64_t *n,
                           struct cs_err *err)
{
    struct cs_cursor *cur;
    int rc = cs_cursor_open(r, CS_REC_OFFCPU, 0, UINT64_MAX, &cur);
    if (rc < 0)
        return rc;
    uint64_t cap = 0;
    const struct cs_blk_hdr *h;
    const void *recs;
    while ((rc = cs_cursor_next(cur, &h, &recs, err)) == 1) {
        if (h->kind != CS_REC_OFFCPU)
            continue;
        if ((rc = grow((void **)out, &cap, *n + h->n, sizeof(**out))) < 0)
            break;
        memcpy(*out + *n, recs, (size_t)h->n * sizeof(**out));
        *n += h->n;
    }
    cs_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

int mcp_index_build(struct cs_run *r, uint64_t t0_ns, struct mcp_index **out,
                    struct cs_err *err)
{
    struct mcp_index *x = calloc(1, sizeof(*x));
    struct mcp_call *rawc = NULL;
    struct cs_rec_offcpu *rawo = NULL;
    if (!x)
        return -ENOMEM;
    x->run = r;
    x->t0_ns = t0_ns;
    int rc = index_read_calls(r, &rawc, &x->ncalls, err);
    if (rc == 0)
        rc = index_read_offs(r, &rawo, &x->noffs, err);
    if (rc == 0)
        rc = index_pids(x, rawc, x->ncalls, rawo, x->noffs);
    if (rc == 0) {
        x->calls = malloc((x->ncalls + 1) * sizeof(*x->calls));
        x->offs = malloc((x->noffs + 1) * sizeof(*x->offs));
        rc = x->calls && x->offs ? 0 : -ENOMEM;
    }
    x->t_min_ns = UINT64_MAX;
    for (uint64_t i = 0; i < x->ncalls; i++) {
        x->t_min_ns = rawc[i].t_ns < x->t_min_ns ? rawc[i].t_ns : x->t_min_ns;
        x->t_max_ns = rawc[i].t_ns > x->t_max_ns ? rawc[i].t_ns : x->t_max_ns;
    }
    if (rc == 0)
        rc = index_group_calls(x, rawc);
    free(rawc);
    if (rc == 0)
        rc = index_group_offs(x, rawo);
    free(rawo);
    if (rc == 0)
        rc = index_lat(x);
    if (rc == 0)
        rc = index_lat_sums(x);
    if (rc == 0)
        rc = index_off_by_dur(x);
    if (rc < 0) {
        mcp_index_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

void mcp_index_free(struct mcp_index *x)
{
    if (!x)
        return;
    free(x->calls);
    free(x->lat);
    free(x->cum_ns);
    free(x->cum_err);
    free(x->dur_key);
    free(x->dur_pid);
    free(x->offs);
    free(x->off_by_dur);
    free(x->pids);
    free(x);
}

/* First index in [lo, hi) of lat whose pid is >= @p pid (or > when @p after). */
static uint64_t lat_pid_at(const struct mcp_index *x, uint64_t lo, uint64_t hi, uint32_t pid,
                           int after)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (x->lat[mid].pid < pid || (after && x->lat[mid].pid == pid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void mcp_index_key_range(const struct mcp_index *x, unsigned k, uint32_t pid, uint64_t *lo,
                         uint64_t *hi)
{
    *lo = x->lat_lo[k];
    *hi = x->lat_lo[k + 1];
    if (pid) {
        *lo = lat_pid_at(x, *lo, *hi, pid, 0);
        *hi = lat_pid_at(x, *lo, *hi, pid, 1);
    }
}

uint64_t mcp_index_group_end(const struct mcp_index *x, uint64_t lo, uint64_t hi)
{
    return lat_pid_at(x, lo, hi, x->lat[lo].pid, 1);
}

void mcp_index_lat_window(const struct mcp_index *x, uint64_t *lo, uint64_t *hi, uint64_t t_lo,
                          uint64_t t_hi)
{
    uint64_t a = *lo, b = *hi;
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        if (x->lat[mid].t_ns < t_lo)
            a = mid + 1;
        else
            b = mid;
    }
    uint64_t c = a, d = *hi;
    while (c < d) {
        uint64_t mid = c + (d - c) / 2;
        if (x->lat[mid].t_ns < t_hi)
            c = mid + 1;
        else
            d = mid;
    }
    *lo = a;
    *hi = c;
}

const struct mcp_pid *mcp_index_pid(const struct mcp_index *x, uint32_t pid)
{
    uint32_t s = pid_slot(x, pid);
    return s < x->npids && x->pids[s].pid == pid ? &x->pids[s] : NULL;
}

uint32_t mcp_index_tid_pid(const struct mcp_index *x, uint32_t tid)
{
    size_t n;
    const struct cs_thread *t = cs_run_threads(x->run, &n);
    for (size_t i = 0; i < n; i++)
        if (t[i].tid == tid)
            return t[i].pid;
    for (uint32_t p = 0; p < x->npids; p++) {
        for (uint64_t i = x->pids[p].call_lo; i < x->pids[p].call_hi; i++)
            if (x->calls[i].tid == tid)
                return x->pids[p].pid;
        for (uint64_t i = x->pids[p].off_lo; i < x->pids[p].off_hi; i++)
            if (x->offs[i].tid == tid)
                return x->pids[p].pid;
    }
    return 0;
}

uint64_t mcp_index_call_at(const struct mcp_index *x, uint64_t lo, uint64_t hi, uint64_t t)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (x->calls[mid].t_ns < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t mcp_index_off_at(const struct mcp_index *x, uint64_t lo, uint64_t hi, uint64_t t)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (x->offs[mid].t_start_ns < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- statistics ---- */

/* Nearest rank of quantile @p permille among @p n values, 0-based: the
 * analyzer's definition (stats.h), ceil(q * n) in integers. */
static size_t rank_of(size_t n, unsigned permille)
{
    uint64_t r = ((uint64_t)permille * n + 999) / 1000;
    return (size_t)(r < 1 ? 1 : r > n ? n : r) - 1;
}

static unsigned stats_bucket(uint64_t v)
{
    return v ? 63u - (unsigned)__builtin_clzll(v) : 0u;
}

/* count, total, min, max and the histogram: one pass, any order. */
static void stats_pass(const uint64_t *v, size_t n, struct mcp_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->count = n;
    st->min_ns = n ? UINT64_MAX : 0;
    for (size_t i = 0; i < n; i++) {
        st->total_ns += v[i];
        if (v[i] < st->min_ns)
            st->min_ns = v[i];
        if (v[i] > st->max_ns)
            st->max_ns = v[i];
        st->hist[stats_bucket(v[i])]++;
    }
    st->mean_ns = n ? st->total_ns / n : 0;
}

/* First index of @p v (ascending, @p n) holding a value >= @p t. */
static size_t lower_bound(const uint64_t *v, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void mcp_stats_sorted(const uint64_t *v, size_t n, uint64_t total_ns, struct mcp_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->count = n;
    if (n == 0)
        return;
    st->total_ns = total_ns;
    st->mean_ns = total_ns / n;
    st->min_ns = v[0];
    st->max_ns = v[n - 1];
    st->p50_ns = v[rank_of(n, 500)];
    st->p90_ns = v[rank_of(n, 900)];
    st->p99_ns = v[rank_of(n, 990)];
    st->p999_ns = v[rank_of(n, 999)];
    size_t prev = lower_bound(v, n, 2); /* bucket 0: 0 and 1 ns */
    st->hist[0] = prev;
    for (unsigned k = 1; k < MCP_HIST_BUCKETS && prev < n; k++) {
        size_t e = k + 1 < 64 ? lower_bound(v, n, 1ull << (k + 1)) : n;
        st->hist[k] = e - prev;
        prev = e;
    }
}

static void swap_u64(uint64_t *a, uint64_t *b)
{
    uint64_t t = *a;
    *a = *b;
    *b = t;
}

/* Put the k-th smallest of v[lo, hi) at v[k], smaller ones before it, larger
 * after (Hoare selection, median of three). */
static void stats_select(uint64_t *v, size_t lo, size_t hi, size_t k)
{
    while (hi - lo > 1) {
        size_t mid = lo + (hi - 1 - lo) / 2, last = hi - 1; /* lower middle: j < last */
        if (v[mid] < v[lo])
            swap_u64(&v[mid], &v[lo]);
        if (v[last] < v[lo])
            swap_u64(&v[last], &v[lo]);
        if (v[last] < v[mid])
            swap_u64(&v[last], &v[mid]);
        uint64_t pivot = v[mid];
        size_t i = lo, j = last;
        for (;;) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i >= j)
                break;
            swap_u64(&v[i++], &v[j--]);
        }
        /* v[lo..j] <= pivot <= v[j+1..hi) */
        if (k <= j)
            hi = j + 1;
        else
            lo = j + 1;
    }
}

void mcp_stats_unsorted(uint64_t *v, size_t n, struct mcp_stats *st)
{
    stats_pass(v, n, st);
    if (n == 0)
        return;
    size_t k50 = rank_of(n, 500), k90 = rank_of(n, 900);
    size_t k99 = rank_of(n, 990), k999 = rank_of(n, 999);
    stats_select(v, 0, n, k50);
    stats_select(v, k50, n, k90);
    stats_select(v, k90, n, k99);
    stats_select(v, k99, n, k999);
    st->p50_ns = v[k50];
    st->p90_ns = v[k90];
    st->p99_ns = v[k99];
    st->p999_ns = v[k999];
}
