/* mcp/mcp_index.c: the MCP server's per-run indexes, built once, by the first
 * tool that needs them (mcp_server_index() in mcp.c), so that every later
 * call answers from memory: CUDA calls and off-CPU intervals
 * grouped by process and sorted by time (timelines), outermost calls by API
 * (latency over any pid/time filter), intervals by length (top stalls), and
 * the latency statistics the tools print. The analysis proper (chains,
 * breakdowns, GPU feed) is analysis.c's; this file only re-slices records. */
#include <errno.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "model/stats.h"

/* ---- allocation and sorting helpers ---- */

/* An array of @p n elements of @p size; big ones 2 MiB-aligned and marked
 * for transparent huge pages, so filling hundreds of MiB costs few page
 * faults. Freed with free(). */
static void *big_alloc(uint64_t n, size_t size)
{
    size_t bytes = (size_t)(n ? n : 1) * size, huge = 2u << 20;
    void *p = NULL;
    if (bytes < 4 * huge)
        return malloc(bytes);
    if (posix_memalign(&p, huge, bytes) != 0)
        return NULL;
    madvise(p, bytes & ~(huge - 1), MADV_HUGEPAGE);
    return p;
}

/* Merge sorted runs of @p b (n elements) pairwise until one remains:
 * linear per pass, and a recording is a few long runs (one per block
 * source), so few passes. Falls back to qsort when out of memory. */
static void sort_runs(char *b, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *tmp = big_alloc(n, size);
    if (!tmp) {
        qsort(b, n, size, cmp);
        return;
    }
    for (int merged = 1; merged;) {
        merged = 0;
        size_t out = 0;
        for (size_t lo = 0; lo < n;) {
            size_t mid = lo + 1, hi;
            while (mid < n && cmp(b + (mid - 1) * size, b + mid * size) <= 0)
                mid++;
            for (hi = mid < n ? mid + 1 : n;
                 hi < n && cmp(b + (hi - 1) * size, b + hi * size) <= 0;)
                hi++;
            size_t i = lo, j = mid;
            while (i < mid || j < hi) {
                int take_i = j >= hi || (i < mid && cmp(b + i * size, b + j * size) <= 0);
                memcpy(tmp + out++ * size, b + (take_i ? i++ : j++) * size, size);
            }
            merged |= mid < n;
            lo = hi;
        }
        memcpy(b, tmp, n * size);
    }
    free(tmp);
}

/* Sort a nearly sorted range in place: insertion sort while records move
 * little (a nested call is written just before its parent), run merging
 * once they move far (intervals of two sources written one after the
 * other). @p size is at most 64. */
static void sort_nearly(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *b = base, tmp[64];
    size_t moves = 0, budget = n + 1024; /* wasted work at most n moves */
    for (size_t i = 1; i < n; i++) {
        if (cmp(b + (i - 1) * size, b + i * size) <= 0)
            continue;
        memcpy(tmp, b + i * size, size);
        size_t j = i;
        while (j > 0 && cmp(b + (j - 1) * size, tmp) > 0) {
            j--;
            if (++moves > budget) {
                sort_runs(b, n, size, cmp); /* i..j+1 untouched so far */
                return;
            }
        }
        memmove(b + (j + 1) * size, b + j * size, (i - j) * size);
        memcpy(b + j * size, tmp, size);
    }
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

/* Slot of @p pid, added (kept sorted) if new; @p memo caches the last one. */
static int pid_add(struct mcp_index *x, uint32_t *cap, uint32_t pid, uint32_t *memo)
{
    if (*memo < x->npids && x->pids[*memo].pid == pid)
        return 0;
    uint32_t s = pid_slot(x, pid);
    if (s == x->npids || x->pids[s].pid != pid) {
        if (x->npids == *cap) {
            uint32_t c = *cap ? *cap * 2 : 64;
            struct mcp_pid *q = realloc(x->pids, (c + 1) * sizeof(*q));
            if (!q)
                return -ENOMEM;
            x->pids = q;
            *cap = c;
        }
        memmove(&x->pids[s + 1], &x->pids[s], (x->npids - s) * sizeof(*x->pids));
        x->pids[s] = (struct mcp_pid){pid, 0, 0, 0, 0};
        x->npids++;
    }
    *memo = s;
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

/* ---- reading the run: two passes, no staging copy ----
 * Pass 1 counts each process's calls and intervals (call_hi / off_hi hold
 * the counts), then ranges are laid out; pass 2 copies each record to its
 * process's next slot (call_lo / off_lo advance, and are reset after). */

static int read_calls(struct mcp_index *x, int pass, uint32_t *cap, struct cs_err *err)
{
    struct cs_cursor *cur;
    int rc = cs_cursor_open(x->run, CS_REC_CUDA, 0, UINT64_MAX, &cur);
    if (rc < 0)
        return rc;
    const struct cs_blk_hdr *h;
    const void *recs;
    uint32_t memo = UINT32_MAX;
    while ((rc = cs_cursor_next(cur, &h, &recs, err)) == 1) {
        const struct cs_rec_cuda *c = recs;
        for (uint32_t i = 0; i < h->n; i++, c++) {
            if (c->flags & CS_CF_TRACER)
                continue; /* the tracer's own memory readings: not the program's calls */
            if (pass == 1) {
                if ((rc = pid_add(x, cap, c->pid, &memo)) < 0)
                    break;
                x->pids[memo].call_hi++;
                continue;
            }
            if (!(memo < x->npids && x->pids[memo].pid == c->pid))
                memo = pid_slot(x, c->pid);
            uint64_t dur = c->t_exit_ns > c->t_enter_ns ? c->t_exit_ns - c->t_enter_ns : 0;
            x->calls[x->pids[memo].call_lo++] = (struct mcp_call){
                c->t_enter_ns, dur,    c->stream, c->bytes,   c->pid, c->tid, c->name_id,
                c->result,     c->api, c->flags,  c->variant, c->dir, 0};
            x->t_min_ns = c->t_enter_ns < x->t_min_ns ? c->t_enter_ns : x->t_min_ns;
            x->t_max_ns = c->t_enter_ns > x->t_max_ns ? c->t_enter_ns : x->t_max_ns;
        }
        if (rc < 0)
            break;
    }
    cs_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

static int read_offs(struct mcp_index *x, int pass, uint32_t *cap, struct cs_err *err)
{
    struct cs_cursor *cur;
    int rc = cs_cursor_open(x->run, CS_REC_OFFCPU, 0, UINT64_MAX, &cur);
    if (rc < 0)
        return rc;
    const struct cs_blk_hdr *h;
    const void *recs;
    uint32_t memo = UINT32_MAX;
    while ((rc = cs_cursor_next(cur, &h, &recs, err)) == 1) {
        const struct cs_rec_offcpu *o = recs;
        if (h->kind != CS_REC_OFFCPU)
            continue;
        for (uint32_t i = 0; i < h->n; i++, o++) {
            if (pass == 1) {
                if ((rc = pid_add(x, cap, o->pid, &memo)) < 0)
                    break;
                x->pids[memo].off_hi++;
                continue;
            }
            if (!(memo < x->npids && x->pids[memo].pid == o->pid))
                memo = pid_slot(x, o->pid);
            x->offs[x->pids[memo].off_lo++] = *o;
        }
        if (rc < 0)
            break;
    }
    cs_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

/* Counts (in *_hi after pass 1) to ranges; pass 2 fills from *_lo. */
static int index_layout(struct mcp_index *x)
{
    uint64_t nc = 0, no = 0;
    for (uint32_t p = 0; p < x->npids; p++) {
        struct mcp_pid *q = &x->pids[p];
        q->call_lo = nc;
        nc += q->call_hi;
        q->off_lo = no;
        no += q->off_hi;
    }
    x->ncalls = nc;
    x->noffs = no;
    x->calls = big_alloc(nc + 1, sizeof(*x->calls));
    x->offs = big_alloc(no + 1, sizeof(*x->offs));
    return x->calls && x->offs ? 0 : -ENOMEM;
}

/* After pass 2 *_lo point at each range's end: restore them, put each
 * process's rows in time order. */
static void index_finish_ranges(struct mcp_index *x)
{
    uint64_t nc = 0, no = 0;
    for (uint32_t p = 0; p < x->npids; p++) {
        struct mcp_pid *q = &x->pids[p];
        q->call_hi = q->call_lo;
        q->call_lo = nc;
        nc = q->call_hi;
        q->off_hi = q->off_lo;
        q->off_lo = no;
        no = q->off_hi;
        sort_nearly(x->calls + q->call_lo, q->call_hi - q->call_lo, sizeof(*x->calls), cmp_call_t);
        sort_nearly(x->offs + q->off_lo, q->off_hi - q->off_lo, sizeof(*x->offs), cmp_off_t);
    }
}

static unsigned call_key(const struct mcp_call *c)
{
    return mcp_lat_key(c->api < CS_API_COUNT ? c->api : 0, c->variant, c->flags & CS_CF_NESTED);
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
    x->lat = big_alloc(x->ncalls + 1, sizeof(*x->lat));
    uint64_t *at = malloc(sizeof(x->lat_lo));
    if (!x->lat || !at) {
        free(at);
        return -ENOMEM;
    }
    memcpy(at, x->lat_lo, sizeof(x->lat_lo));
    for (uint64_t i = 0; i < x->ncalls; i++) {
        const struct mcp_call *c = &x->calls[i];
        x->lat[at[call_key(c)]++] =
            (struct mcp_lat){c->t_ns, c->dur_ns, (uint32_t)i, c->pid, c->name_id, c->flags};
    }
    free(at);
    return 0;
}

/* Prefix sums and per-key / per-(key, pid) sorted durations, so unfiltered
 * and per-process statistics cost no scan. */
static int index_lat_sums(struct mcp_index *x)
{
    uint64_t n = x->ncalls;
    x->cum_ns = big_alloc(n + 1, sizeof(uint64_t));
    x->cum_err = big_alloc(n + 1, sizeof(uint64_t));
    x->dur_key = big_alloc(n + 1, sizeof(uint64_t));
    x->dur_pid = big_alloc(n + 1, sizeof(uint64_t));
    x->dur_chunk = big_alloc(n + 1, sizeof(uint64_t));
    uint64_t *tmp = big_alloc(n + 1, sizeof(uint64_t));
    int rc =
        x->cum_ns && x->cum_err && x->dur_key && x->dur_pid && x->dur_chunk && tmp ? 0 : -ENOMEM;
    if (rc == 0)
        x->cum_ns[0] = x->cum_err[0] = 0;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        const struct mcp_lat *l = &x->lat[i];
        x->cum_ns[i + 1] = x->cum_ns[i] + l->dur_ns;
        x->cum_err[i + 1] = x->cum_err[i] + !!(l->flags & CS_CF_ERROR);
        x->dur_key[i] = x->dur_pid[i] = x->dur_chunk[i] = l->dur_ns;
    }
    for (unsigned k = 0; rc == 0 && k < MCP_LAT_KEYS; k++) {
        uint64_t lo = x->lat_lo[k], hi = x->lat_lo[k + 1];
        if (lo == hi)
            continue;
        rc = stats_sort(x->dur_key + lo, hi - lo, tmp);
        for (uint64_t g = lo, e; rc == 0 && g < hi; g = e) {
            e = mcp_index_group_end(x, g, hi);
            rc = stats_sort(x->dur_pid + g, e - g, tmp);
            for (uint64_t c = g; rc == 0 && c < e; c += MCP_CHUNK)
                rc = stats_sort(x->dur_chunk + c, (e - c < MCP_CHUNK ? e - c : MCP_CHUNK), tmp);
        }
    }
    free(tmp);
    return rc;
}

/* Named calls (kernel launches) by (key, name, duration), so a kernel
 * filter over the whole run is a binary search, not a scan. */
struct kent {
    uint64_t kk; /* key << 32 | name_id */
    uint64_t dur_ns;
    uint32_t is_err;
};

static int cmp_kent(const void *a, const void *b)
{
    const struct kent *x = a, *y = b;
    if (x->kk != y->kk)
        return x->kk < y->kk ? -1 : 1;
    return x->dur_ns < y->dur_ns ? -1 : x->dur_ns > y->dur_ns;
}

static int index_kernels(struct mcp_index *x)
{
    uint64_t n = 0, g = 0;
    for (uint64_t i = 0; i < x->ncalls; i++)
        n += x->lat[i].name_id != 0;
    struct kent *e = big_alloc(n + 1, sizeof(*e));
    x->kdur = big_alloc(n + 1, sizeof(uint64_t));
    x->kcum_ns = big_alloc(n + 1, sizeof(uint64_t));
    x->kcum_err = big_alloc(n + 1, sizeof(uint64_t));
    if (!e || !x->kdur || !x->kcum_ns || !x->kcum_err) {
        free(e);
        return -ENOMEM;
    }
    for (unsigned k = 0, j = 0; k < MCP_LAT_KEYS; k++)
        for (uint64_t i = x->lat_lo[k]; i < x->lat_lo[k + 1]; i++)
            if (x->lat[i].name_id)
                e[j++] = (struct kent){(uint64_t)k << 32 | x->lat[i].name_id, x->lat[i].dur_ns,
                                       !!(x->lat[i].flags & CS_CF_ERROR)};
    qsort(e, n, sizeof(*e), cmp_kent);
    for (uint64_t i = 0; i < n; i++)
        g += i == 0 || e[i].kk != e[i - 1].kk;
    x->kgroups = malloc((g + 1) * sizeof(*x->kgroups));
    if (!x->kgroups) {
        free(e);
        return -ENOMEM;
    }
    x->kcum_ns[0] = x->kcum_err[0] = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i == 0 || e[i].kk != e[i - 1].kk)
            x->kgroups[x->nkgroups++] =
                (struct mcp_kgroup){(uint32_t)(e[i].kk >> 32), (uint32_t)e[i].kk, i, i};
        x->kgroups[x->nkgroups - 1].hi = i + 1;
        x->kdur[i] = e[i].dur_ns;
        x->kcum_ns[i + 1] = x->kcum_ns[i] + e[i].dur_ns;
        x->kcum_err[i + 1] = x->kcum_err[i] + e[i].is_err;
    }
    free(e);
    return 0;
}

const struct mcp_kgroup *mcp_index_kernel(const struct mcp_index *x, unsigned k, const char *kernel)
{
    uint64_t lo = 0, hi = x->nkgroups;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (x->kgroups[mid].key < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < x->nkgroups && x->kgroups[lo].key == k; lo++)
        if (strcmp(cs_run_string(x->run, x->kgroups[lo].name_id), kernel) == 0)
            return &x->kgroups[lo];
    return NULL;
}

/* Off-CPU intervals longest first (ties: earlier index first), then the
 * same order split by class. Radix-sorts (duration << 24 | ~index) keys
 * when there are fewer than 2^24 intervals, else falls back to qsort. */
static int cmp_off_desc_dur(const void *a, const void *b, void *arg)
{
    const struct cs_rec_offcpu *o = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t di = o[i].t_end_ns - o[i].t_start_ns, dj = o[j].t_end_ns - o[j].t_start_ns;
    if (di != dj)
        return di > dj ? -1 : 1;
    return i < j ? -1 : i > j;
}

static uint64_t off_dur(const struct cs_rec_offcpu *o)
{
    return o->t_end_ns > o->t_start_ns ? o->t_end_ns - o->t_start_ns : 0;
}

static int index_off_by_dur(struct mcp_index *x)
{
    uint64_t n = x->noffs, mask = (1ull << 24) - 1;
    x->off_by_dur = big_alloc(n + 1, sizeof(uint32_t));
    x->off_by_cls = big_alloc(n + 1, sizeof(uint32_t));
    if (!x->off_by_dur || !x->off_by_cls)
        return -ENOMEM;
    if (n <= mask) {
        uint64_t *k = big_alloc(n + 1, sizeof(uint64_t));
        if (!k)
            return -ENOMEM;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t d = off_dur(&x->offs[i]);
            k[i] = (d > (1ull << 40) - 1 ? (1ull << 40) - 1 : d) << 24 | (mask - i);
        }
        int rc = stats_sort(k, n, NULL);
        for (uint64_t i = 0; rc == 0 && i < n; i++)
            x->off_by_dur[i] = (uint32_t)(mask - (k[n - 1 - i] & mask));
        free(k);
        if (rc < 0)
            return rc;
    } else {
        for (uint64_t i = 0; i < n; i++)
            x->off_by_dur[i] = (uint32_t)i;
        qsort_r(x->off_by_dur, n, sizeof(uint32_t), cmp_off_desc_dur, x->offs);
    }
    memset(x->off_cls_lo, 0, sizeof(x->off_cls_lo));
    for (uint64_t i = 0; i < n; i++)
        x->off_cls_lo[(x->offs[i].cls < MCP_OFF_CLASSES ? x->offs[i].cls : 0) + 1]++;
    for (unsigned c = 0; c < MCP_OFF_CLASSES; c++)
        x->off_cls_lo[c + 1] += x->off_cls_lo[c];
    uint64_t at[MCP_OFF_CLASSES];
    memcpy(at, x->off_cls_lo, sizeof(at));
    for (uint64_t i = 0; i < n; i++) {
        uint32_t j = x->off_by_dur[i];
        x->off_by_cls[at[x->offs[j].cls < MCP_OFF_CLASSES ? x->offs[j].cls : 0]++] = j;
    }
    return 0;
}

int mcp_index_build(struct cs_run *r, uint64_t t0_ns, struct mcp_index **out, struct cs_err *err)
{
    struct mcp_index *x = calloc(1, sizeof(*x));
    uint32_t cap = 0;
    if (!x)
        return -ENOMEM;
    x->run = r;
    x->t0_ns = t0_ns;
    x->t_min_ns = UINT64_MAX;
    int rc = read_calls(x, 1, &cap, err);
    if (rc == 0)
        rc = read_offs(x, 1, &cap, err);
    if (rc == 0)
        rc = index_layout(x);
    if (rc == 0)
        rc = read_calls(x, 2, &cap, err);
    if (rc == 0)
        rc = read_offs(x, 2, &cap, err);
    if (rc == 0) {
        index_finish_ranges(x);
        rc = index_lat(x);
    }
    if (rc == 0)
        rc = index_lat_sums(x);
    if (rc == 0)
        rc = index_kernels(x);
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
    free(x->dur_chunk);
    free(x->kdur);
    free(x->kcum_ns);
    free(x->kcum_err);
    free(x->kgroups);
    free(x->offs);
    free(x->off_by_dur);
    free(x->off_by_cls);
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
    return M_FIRST_GE(struct mcp_call, x->calls, t_ns, lo, hi, t);
}

uint64_t mcp_index_off_at(const struct mcp_index *x, uint64_t lo, uint64_t hi, uint64_t t)
{
    return M_FIRST_GE(struct cs_rec_offcpu, x->offs, t_start_ns, lo, hi, t);
}

/* ---- statistics ---- */

static size_t rank_of(size_t n, unsigned permille);

/* Sorted spans whose union is a window's durations. */
struct span {
    const uint64_t *v;
    size_t n;
};

struct spans {
    struct span *s;
    size_t n, cap;
    uint64_t *part; /* durations of partial chunks, sorted last */
    size_t npart, cap_part;
};

static int spans_add(struct spans *w, const uint64_t *v, size_t n)
{
    if (w->n == w->cap) {
        size_t c = w->cap ? w->cap * 2 : 64;
        struct span *q = realloc(w->s, c * sizeof(*q));
        if (!q)
            return -ENOMEM;
        w->s = q;
        w->cap = c;
    }
    w->s[w->n++] = (struct span){v, n};
    return 0;
}

static int spans_part(struct spans *w, const struct mcp_index *x, uint64_t a, uint64_t b)
{
    if (w->npart + (b - a) > w->cap_part) {
        size_t c = (w->npart + (size_t)(b - a)) * 2 + 64;
        uint64_t *q = realloc(w->part, c * sizeof(*q));
        if (!q)
            return -ENOMEM;
        w->part = q;
        w->cap_part = c;
    }
    for (uint64_t i = a; i < b; i++)
        w->part[w->npart++] = x->lat[i].dur_ns;
    return 0;
}

/* Calls of the spans with a duration <= @p v. */
static uint64_t spans_le(const struct spans *w, uint64_t v)
{
    uint64_t n = 0;
    for (size_t i = 0; i < w->n; i++) {
        size_t lo = 0, hi = w->s[i].n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (w->s[i].v[mid] <= v)
                lo = mid + 1;
            else
                hi = mid;
        }
        n += lo;
    }
    return n;
}

/* The window [a, b) of the (key, pid) group starting at @p g: whole chunks
 * as spans, the ragged ends copied. */
static int spans_window(struct spans *w, const struct mcp_index *x, uint64_t g, uint64_t a,
                        uint64_t b)
{
    uint64_t c0 = g + (a - g + MCP_CHUNK - 1) / MCP_CHUNK * MCP_CHUNK;
    uint64_t c1 = g + (b - g) / MCP_CHUNK * MCP_CHUNK;
    if (c0 >= c1)
        return spans_part(w, x, a, b);
    int rc = spans_part(w, x, a, c0);
    for (uint64_t c = c0; rc == 0 && c < c1; c += MCP_CHUNK)
        rc = spans_add(w, x->dur_chunk + c, MCP_CHUNK);
    return rc ? rc : spans_part(w, x, c1, b);
}

int mcp_index_window_stats(const struct mcp_index *x, unsigned k, uint32_t pid, uint64_t t_lo,
                           uint64_t t_hi, int want_hist, struct mcp_stats *st, uint64_t *errors)
{
    struct spans w = {0};
    uint64_t a0, b0, n = 0, total = 0;
    int rc = 0;
    memset(st, 0, sizeof(*st));
    *errors = 0;
    mcp_index_key_range(x, k, pid, &a0, &b0);
    for (uint64_t g = a0, e; rc == 0 && g < b0; g = e) {
        e = mcp_index_group_end(x, g, b0);
        uint64_t a = g, b = e;
        mcp_index_lat_window(x, &a, &b, t_lo, t_hi);
        n += b - a;
        total += x->cum_ns[b] - x->cum_ns[a];
        *errors += x->cum_err[b] - x->cum_err[a];
        if (a < b)
            rc = spans_window(&w, x, g, a, b);
    }
    if (rc == 0 && w.npart && (rc = stats_sort(w.part, w.npart, NULL)) == 0)
        rc = spans_add(&w, w.part, w.npart);
    if (rc == 0 && n) {
        /* k-th smallest: the first value of the key's sorted durations
         * (which hold every value of the window) with enough at or below */
        const uint64_t *dom = x->dur_key + x->lat_lo[k];
        size_t ndom = x->lat_lo[k + 1] - x->lat_lo[k];
        static const unsigned pm[4] = {500, 900, 990, 999};
        uint64_t *q[4] = {&st->p50_ns, &st->p90_ns, &st->p99_ns, &st->p999_ns};
        for (int i = 0; i < 4; i++) {
            uint64_t want = rank_of(n, pm[i]) + 1;
            size_t lo = 0, hi = ndom;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (spans_le(&w, dom[mid]) >= want)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            *q[i] = dom[lo < ndom ? lo : ndom - 1];
        }
        st->count = n;
        st->total_ns = total;
        st->mean_ns = total / n;
        st->min_ns = UINT64_MAX;
        for (size_t i = 0; i < w.n; i++) {
            st->min_ns = w.s[i].v[0] < st->min_ns ? w.s[i].v[0] : st->min_ns;
            st->max_ns = w.s[i].v[w.s[i].n - 1] > st->max_ns ? w.s[i].v[w.s[i].n - 1] : st->max_ns;
        }
        uint64_t prev = 0;
        for (unsigned b = 0; want_hist && b < MCP_HIST_BUCKETS && prev < n; b++) {
            uint64_t le = b < 63 ? spans_le(&w, (2ull << b) - 1) : n;
            st->hist[b] = le - prev;
            prev = le;
        }
    }
    free(w.s);
    free(w.part);
    return rc;
}

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
