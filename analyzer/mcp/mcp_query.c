/* mcp/mcp_query.c: what each MCP tool computes. Whole-run figures (run summary,
 * findings, per-process breakdown, GPU feed) are slices of analysis_json();
 * latency over filters, timelines and stalls come from the per-run indexes
 * (mcp_index.c); compare_runs asks the gate (gate_eval). Argument checking
 * and the result envelope are mcp_tools.c's. Every list is capped (top,
 * limit, MCP_TOP_MAX, MCP_PAGE_MAX) so a result stays small. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "gate/gate.h"
#include "mcp.h"
#include "model/stats.h"
#include "gate/summary.h"

#define TEXT_ROWS 40 /* rows of a table printed in the text block */

static const struct mcp_index *q_idx(const struct mcp_call_ctx *c)
{
    return c->s->idx[c->run];
}

static json_t *q_aj(const struct mcp_call_ctx *c)
{
    return c->s->aj[c->run];
}

/* "812 ns", "45.2 us", "1.23 ms", "2.50 s" */
static const char *fmt_ns(char *b, size_t n, uint64_t ns)
{
    if (ns < 1000)
        snprintf(b, n, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(b, n, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(b, n, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(b, n, "%.2f s", (double)ns / 1e9);
    return b;
}

/* Shorthand for one formatted duration inside a printf argument list. */
#define NS(x) fmt_ns((char[24]){0}, 24, (x))

static uint64_t ms_to_ns(double ms)
{
    return ms >= 1.8e13 ? UINT64_MAX : (uint64_t)llround(ms * 1e6);
}

/* The run's analysed window (absolute ns), narrowed by since_ms/until_ms.
 * *is_full: no narrowing and every indexed call inside it, so whole-run
 * precomputed figures apply. */
static int q_window(struct mcp_call_ctx *c, uint64_t *lo, uint64_t *hi, int *is_full)
{
    const struct mcp_index *x = q_idx(c);
    json_t *f = json_array_get(json_object_get(json_object_get(q_aj(c), "run"), "files"), 0);
    uint64_t ws = (uint64_t)json_integer_value(json_object_get(f, "window_start_ns"));
    uint64_t we = (uint64_t)json_integer_value(json_object_get(f, "window_end_ns"));
    *lo = x->t0_ns + ws;
    *hi = x->t0_ns + we;
    int narrowed = mcp_arg_has(c, "since_ms") || mcp_arg_has(c, "until_ms");
    if (mcp_arg_has(c, "since_ms")) {
        uint64_t s = ms_to_ns(mcp_arg_num(c, "since_ms", 0));
        *lo = x->t0_ns + s > *lo ? x->t0_ns + s : *lo;
    }
    if (mcp_arg_has(c, "until_ms")) {
        uint64_t u = ms_to_ns(mcp_arg_num(c, "until_ms", 0));
        uint64_t e = u > UINT64_MAX - x->t0_ns ? UINT64_MAX : x->t0_ns + u;
        *hi = e < *hi ? e : *hi;
    }
    if (mcp_arg_has(c, "since_ms") && mcp_arg_has(c, "until_ms") &&
        mcp_arg_num(c, "since_ms", 0) >= mcp_arg_num(c, "until_ms", 0))
        return mcp_bad(c, "since_ms must be below until_ms");
    if (*hi < *lo)
        *hi = *lo;
    *is_full = !narrowed && (x->ncalls == 0 || (x->t_min_ns >= *lo && x->t_max_ns < *hi));
    return 0;
}

static json_t *q_filter_json(struct mcp_call_ctx *c)
{
    json_t *f = json_object();
    static const char *const keys[] = {"pid",    "tid",   "api",      "stream",   "kernel",
                                       "nested", "class", "since_ms", "until_ms", NULL};
    for (const char *const *k = keys; *k; k++)
        if (mcp_arg_has(c, *k))
            json_object_set(f, *k, json_object_get(c->args, *k));
    return f;
}

/* Shared head of every per-run result: {"run": i, "name": basename}. */
static json_t *q_head(struct mcp_call_ctx *c)
{
    return json_pack("{s:i, s:s}", "run", c->run, "name", c->s->names[c->run]);
}

static void q_text_head(struct mcp_call_ctx *c, const char *what)
{
    mcp_text_printf(c->t, "%s, run %d ", what, c->run);
    mcp_text_data(c->t, c->s->names[c->run]);
    mcp_text_printf(c->t, ":\n");
}

/* One line of an object's fields: numbers as key=value (durations pretty),
 * strings marked as data unless they are the analyzer's own enums. */
static void q_text_fields(struct mcp_text *t, json_t *o)
{
    static const char *const own[] = {"severity", "cause", "kind",    "rule", "role", "class",
                                      "family",   "layer", "verdict", "api",  "share_of", NULL};
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        size_t kl = strlen(key);
        if (json_is_integer(v) && kl > 3 && strcmp(key + kl - 3, "_ns") == 0)
            mcp_text_printf(t, " %s=%s", key, NS((uint64_t)json_integer_value(v)));
        else if (json_is_integer(v))
            mcp_text_printf(t, " %s=%lld", key, (long long)json_integer_value(v));
        else if (json_is_real(v))
            mcp_text_printf(t, " %s=%.3g", key, json_real_value(v));
        else if (json_is_boolean(v))
            mcp_text_printf(t, " %s=%s", key, json_is_true(v) ? "true" : "false");
        else if (json_is_string(v)) {
            int is_own = 0;
            for (const char *const *k = own; *k && !is_own; k++)
                is_own = strcmp(key, *k) == 0;
            char *s = is_own ? mcp_clean(json_string_value(v), 64) : NULL;
            if (s)
                mcp_text_printf(t, " %s=%s", key, s);
            else {
                mcp_text_printf(t, " %s=", key);
                mcp_text_data(t, json_string_value(v));
            }
            free(s);
        }
    }
    mcp_text_printf(t, "\n");
}

/* ---- latency ---- */

static const char *key_name(unsigned k, char *buf, size_t n)
{
    unsigned api = k / 6, variant = (k / 2) % 3;
    return cs_api_display((enum cs_api)api, (enum cs_variant)variant, buf, n);
}

/* Whether key @p k matches API name @p want: its display name, or its base
 * name (every variant). NULL matches everything. */
static int key_matches(unsigned k, const char *want)
{
    char b[96];
    return !want || strcmp(key_name(k, b, sizeof(b)), want) == 0 ||
           strcmp(cs_api_table[k / 6].name, want) == 0;
}

struct q_scratch {
    uint64_t *v;
    size_t n, cap;
};

static int scratch_push(struct q_scratch *s, uint64_t d)
{
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 4096;
        uint64_t *p = realloc(s->v, c * sizeof(*p));
        if (!p)
            return -ENOMEM;
        s->v = p;
        s->cap = c;
    }
    s->v[s->n++] = d;
    return 0;
}

/* Optional per-call filter beyond (key, pid, window). */
struct q_callf {
    int has_stream;
    uint64_t stream;
    const char *kernel;
    uint32_t last_id; /* memo of the last kernel name id compared */
    int last_ok;
};

static int callf_ok(const struct mcp_index *x, struct q_callf *f, const struct mcp_lat *l)
{
    if (f->kernel) {
        if (l->name_id != f->last_id || f->last_id == 0) {
            f->last_id = l->name_id;
            f->last_ok = l->name_id && strcmp(cs_run_string(x->run, l->name_id), f->kernel) == 0;
        }
        if (!f->last_ok)
            return 0;
    }
    return !f->has_stream || x->calls[l->call].stream == f->stream;
}

/* Durations of lat[a, b) passing @p f (NULL: all) into @p sc; errors added.
 * Only a stream filter reads call records. */
static int lat_collect(const struct mcp_index *x, uint64_t a, uint64_t b, struct q_callf *f,
                       struct q_scratch *sc, uint64_t *errors)
{
    if (!f)
        *errors += x->cum_err[b] - x->cum_err[a];
    for (uint64_t i = a; i < b; i++) {
        if (f && !callf_ok(x, f, &x->lat[i]))
            continue;
        if (scratch_push(sc, x->lat[i].dur_ns) < 0)
            return -ENOMEM;
        if (f)
            *errors += !!(x->lat[i].flags & CS_CF_ERROR);
    }
    return 0;
}

/* Statistics of key @p k for @p pid (0 = all) over calls entering in
 * [lo, hi): precomputed sorted durations when @p is_full and no call
 * filter, else a linear selection over the matching calls. */
static int key_stats(const struct mcp_index *x, unsigned k, uint32_t pid, uint64_t lo, uint64_t hi,
                     int is_full, struct q_callf *f, struct q_scratch *sc, struct mcp_stats *st,
                     uint64_t *errors)
{
    uint64_t a, b;
    mcp_index_key_range(x, k, pid, &a, &b);
    if (is_full && !f) {
        mcp_stats_sorted((pid ? x->dur_pid : x->dur_key) + a, b - a, x->cum_ns[b] - x->cum_ns[a],
                         st);
        *errors = x->cum_err[b] - x->cum_err[a];
        return 0;
    }
    sc->n = 0;
    *errors = 0;
    for (uint64_t g = a, e; g < b; g = e) {
        e = mcp_index_group_end(x, g, b);
        uint64_t wa = g, wb = e;
        mcp_index_lat_window(x, &wa, &wb, lo, hi);
        if (lat_collect(x, wa, wb, f, sc, errors) < 0)
            return -ENOMEM;
    }
    mcp_stats_unsorted(sc->v, sc->n, st);
    return 0;
}

static json_t *stats_row_json(unsigned k, const struct mcp_stats *st, uint64_t errors)
{
    char name[96];
    const struct cs_api_info *in = &cs_api_table[k / 6];
    return json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "api", key_name(k, name, sizeof(name)), "layer",
                     in->layer == CS_LAYER_RUNTIME ? "runtime" : "driver", "family",
                     cs_family_name((enum cs_family)in->family), "nested", (int)(k & 1), "count",
                     (json_int_t)st->count, "total_ns", (json_int_t)st->total_ns, "mean_ns",
                     (json_int_t)st->mean_ns, "min_ns", (json_int_t)st->min_ns, "p50_ns",
                     (json_int_t)st->p50_ns, "p90_ns", (json_int_t)st->p90_ns, "p99_ns",
                     (json_int_t)st->p99_ns, "p999_ns", (json_int_t)st->p999_ns, "max_ns",
                     (json_int_t)st->max_ns, "errors", (json_int_t)errors);
}

/* Outermost rows first, then by total time, as the analyzer's table. */
static int cmp_rows(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int nx = json_is_true(json_object_get(x, "nested")),
        ny = json_is_true(json_object_get(y, "nested"));
    if (nx != ny)
        return nx - ny;
    json_int_t tx = json_integer_value(json_object_get(x, "total_ns"));
    json_int_t ty = json_integer_value(json_object_get(y, "total_ns"));
    if (tx != ty)
        return tx > ty ? -1 : 1;
    return strcmp(json_string_value(json_object_get(x, "api")),
                  json_string_value(json_object_get(y, "api")));
}

static json_t *latency_table(struct mcp_call_ctx *c, uint32_t pid, const char *api, uint64_t lo,
                             uint64_t hi, int is_full)
{
    const struct mcp_index *x = q_idx(c);
    json_t *rows[MCP_LAT_KEYS];
    size_t n = 0;
    struct q_scratch sc = {0};
    for (unsigned k = 0; k < MCP_LAT_KEYS; k++) {
        struct mcp_stats st;
        uint64_t err;
        if (x->lat_lo[k] == x->lat_lo[k + 1] || !key_matches(k, api))
            continue;
        int rc = is_full ? key_stats(x, k, pid, lo, hi, 1, NULL, &sc, &st, &err)
                         : mcp_index_window_stats(x, k, pid, lo, hi, 0, &st, &err);
        if (rc < 0)
            break;
        if (st.count)
            rows[n++] = stats_row_json(k, &st, err);
    }
    free(sc.v);
    qsort(rows, n, sizeof(rows[0]), cmp_rows);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, rows[i]);
    return arr;
}

static void text_latency_rows(struct mcp_text *t, json_t *rows)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        if (i == TEXT_ROWS) {
            mcp_text_printf(t, "  ... %zu more rows in the JSON\n", json_array_size(rows) - i);
            break;
        }
#define G(k) ((uint64_t)json_integer_value(json_object_get(r, k)))
        char name[128];
        snprintf(name, sizeof(name), "%s%s", json_string_value(json_object_get(r, "api")),
                 json_is_true(json_object_get(r, "nested")) ? " (nested)" : "");
        mcp_text_printf(t,
                        "  %-36s n=%llu total=%s mean=%s p50=%s p90=%s p99=%s p99.9=%s "
                        "max=%s errors=%llu\n",
                        name, (unsigned long long)G("count"), NS(G("total_ns")), NS(G("mean_ns")),
                        NS(G("p50_ns")), NS(G("p90_ns")), NS(G("p99_ns")), NS(G("p999_ns")),
                        NS(G("max_ns")), (unsigned long long)G("errors"));
#undef G
    }
}

/* Copy of the analysis "run" object with file paths reduced to basenames:
 * the model needs no path, only names it can pass back. */
static json_t *run_summary(struct mcp_call_ctx *c)
{
    json_t *r = json_deep_copy(json_object_get(q_aj(c), "run"));
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(r, "files"), i, f) {
        json_object_del(f, "path");
        json_object_set_new(f, "name", json_string(c->s->names[c->run]));
    }
    return r;
}

static void text_run_summary(struct mcp_call_ctx *c, json_t *run)
{
    json_t *f = json_array_get(json_object_get(run, "files"), 0);
    const char *tier = json_string_value(json_object_get(f, "sampler_tier"));
#define G(o, k) ((uint64_t)json_integer_value(json_object_get(o, k)))
    mcp_text_printf(c->t, "command: ");
    mcp_text_data(c->t, json_string_value(json_object_get(run, "command")));
    mcp_text_printf(c->t,
                    "\nduration %s, %llu CUDA records (%llu outermost calls, %llu nested), "
                    "%llu host records, %llu CPUs, sampler tier %s%s\n",
                    NS(G(run, "duration_ns")), (unsigned long long)G(run, "cuda_records"),
                    (unsigned long long)G(run, "outermost_calls"),
                    (unsigned long long)G(run, "nested_calls"),
                    (unsigned long long)G(run, "host_records"), (unsigned long long)G(run, "ncpu"),
                    tier ? tier : "?",
                    json_is_true(json_object_get(run, "degraded"))
                        ? "; DEGRADED: records were lost or the recording did not end cleanly"
                        : "");
#undef G
}

int mcp_q_trace_stats(struct mcp_call_ctx *c, json_t **out)
{
    uint64_t lo, hi;
    int is_full;
    if (q_window(c, &lo, &hi, &is_full) < 0)
        return -EINVAL;
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0);
    json_t *run = run_summary(c);
    json_t *rows = latency_table(c, pid, mcp_arg_str(c, "api"), lo, hi, is_full);
    q_text_head(c, "Trace stats");
    text_run_summary(c, run);
    mcp_text_printf(c->t, "latency (nearest-rank percentiles over every call%s):\n",
                    is_full ? "" : " entering the window");
    text_latency_rows(c->t, rows);
    json_t *o = q_head(c);
    json_object_set_new(o, "summary", run);
    json_object_set(o, "missing", json_object_get(q_aj(c), "missing"));
    json_object_set_new(o, "filter", q_filter_json(c));
    json_object_set_new(o, "window_start_ns", json_integer((json_int_t)(lo - q_idx(c)->t0_ns)));
    json_object_set_new(o, "window_end_ns", json_integer((json_int_t)(hi - q_idx(c)->t0_ns)));
    json_object_set_new(o, "apis", rows);
    *out = o;
    return 0;
}

static json_t *hist_json(const struct mcp_stats *st)
{
    json_t *a = json_array();
    for (unsigned k = 0; k < MCP_HIST_BUCKETS; k++)
        if (st->hist[k])
            json_array_append_new(a, json_pack("{s:I, s:I, s:I}", "lo_ns",
                                               (json_int_t)(k ? 1ull << k : 0), "hi_ns",
                                               (json_int_t)(k < 62 ? 2ull << k : INT64_MAX),
                                               "count", (json_int_t)st->hist[k]));
    return a;
}

static void text_hist(struct mcp_text *t, const struct mcp_stats *st)
{
    uint64_t most = 1;
    for (unsigned k = 0; k < MCP_HIST_BUCKETS; k++)
        most = st->hist[k] > most ? st->hist[k] : most;
    for (unsigned k = 0; k < MCP_HIST_BUCKETS; k++) {
        if (!st->hist[k])
            continue;
        char bar[41];
        unsigned w = (unsigned)((st->hist[k] * 40 + most - 1) / most);
        memset(bar, '#', w);
        bar[w] = 0;
        mcp_text_printf(t, "  >= %-10s %-40s %llu\n", NS(k ? 1ull << k : 0), bar,
                        (unsigned long long)st->hist[k]);
    }
}

/* Sorted durations of a filtered whole-run query (stream, kernel, or
 * several variants), kept so repeated questions cost no scan. The runs
 * never change while the server lives; a few entries are enough. */
#define LAT_MEMO 16

struct lat_memo {
    char key[400];
    uint64_t *v; /* ascending */
    size_t n;
    uint64_t total_ns, errors;
};

static struct lat_memo lat_memo[LAT_MEMO];
static unsigned lat_memo_next;

static struct lat_memo *memo_find(const char *key)
{
    for (unsigned i = 0; i < LAT_MEMO; i++)
        if (lat_memo[i].v && strcmp(lat_memo[i].key, key) == 0)
            return &lat_memo[i];
    return NULL;
}

static struct lat_memo *memo_put(const char *key, uint64_t *v, size_t n, uint64_t errors)
{
    struct lat_memo *m = &lat_memo[lat_memo_next++ % LAT_MEMO];
    free(m->v);
    snprintf(m->key, sizeof(m->key), "%s", key);
    m->v = v;
    m->n = n;
    m->total_ns = 0;
    for (size_t i = 0; i < n; i++)
        m->total_ns += v[i];
    m->errors = errors;
    return m;
}

/* Durations of every matching call of the keys matching @p api (nesting
 * @p nested) into @p all; *nkeys gets how many keys matched. */
static int api_collect(const struct mcp_index *x, const char *api, int nested, uint32_t pid,
                       uint64_t lo, uint64_t hi, struct q_callf *f, struct q_scratch *all,
                       uint64_t *errors, int *nkeys)
{
    struct q_scratch sc = {0};
    int rc = 0;
    *errors = 0;
    *nkeys = 0;
    for (unsigned k = (unsigned)nested; k < MCP_LAT_KEYS && rc == 0; k += 2) {
        struct mcp_stats st;
        uint64_t err;
        if (!key_matches(k, api) || x->lat_lo[k] == x->lat_lo[k + 1])
            continue;
        ++*nkeys;
        rc = key_stats(x, k, pid, lo, hi, 0, f, &sc, &st, &err);
        for (size_t i = 0; rc == 0 && i < sc.n; i++)
            rc = scratch_push(all, sc.v[i]);
        *errors += err;
    }
    free(sc.v);
    return rc;
}

/* The only key matching @p api, or -1 when none or several do. */
static int api_single_key(const struct mcp_index *x, const char *api, int nested)
{
    int found = -1;
    for (unsigned k = (unsigned)nested; k < MCP_LAT_KEYS; k += 2) {
        if (!key_matches(k, api) || x->lat_lo[k] == x->lat_lo[k + 1])
            continue;
        if (found >= 0)
            return -1;
        found = (int)k;
    }
    return found;
}

/* Statistics for get_api_latency: precomputed sorted durations for one
 * key over the whole run, a memo for other whole-run queries, a linear
 * selection for time windows. @return 0, -ENOENT (no such API), -ENOMEM */
static int api_stats(struct mcp_call_ctx *c, const char *api, int nested, uint32_t pid,
                     struct q_callf *f, struct mcp_stats *st, uint64_t *errors)
{
    const struct mcp_index *x = q_idx(c);
    uint64_t lo, hi;
    int is_full, nkeys;
    if (q_window(c, &lo, &hi, &is_full) < 0)
        return -EINVAL;
    int k = api_single_key(x, api, nested);
    struct q_scratch sc = {0};
    if (is_full && !f && k >= 0)
        return key_stats(x, (unsigned)k, pid, lo, hi, 1, NULL, &sc, st, errors);
    if (!f && k >= 0)
        return mcp_index_window_stats(x, (unsigned)k, pid, lo, hi, 1, st, errors);
    if (is_full && f && f->kernel && !f->has_stream && !pid && k >= 0) {
        const struct mcp_kgroup *g = mcp_index_kernel(x, (unsigned)k, f->kernel);
        uint64_t a = g ? g->lo : 0, b = g ? g->hi : 0;
        mcp_stats_sorted(x->kdur + a, b - a, x->kcum_ns[b] - x->kcum_ns[a], st);
        *errors = x->kcum_err[b] - x->kcum_err[a];
        return 0;
    }
    char key[400];
    snprintf(key, sizeof(key), "%d|%d|%s|%u|%d|%llu|%s", c->run, nested, api, pid,
             f ? f->has_stream : 0, f ? (unsigned long long)f->stream : 0ull,
             f && f->kernel ? f->kernel : "");
    struct lat_memo *m = is_full ? memo_find(key) : NULL;
    if (!m) {
        int rc = api_collect(x, api, nested, pid, lo, hi, f, &sc, errors, &nkeys);
        if (rc < 0 || nkeys == 0) {
            free(sc.v);
            return rc < 0 ? rc : -ENOENT;
        }
        if (!is_full) {
            mcp_stats_unsorted(sc.v, sc.n, st);
            free(sc.v);
            return 0;
        }
        if (stats_sort(sc.v, sc.n, NULL) < 0) {
            free(sc.v);
            return -ENOMEM;
        }
        m = memo_put(key, sc.v, sc.n, *errors);
    }
    mcp_stats_sorted(m->v, m->n, m->total_ns, st);
    *errors = m->errors;
    return 0;
}

int mcp_q_api_latency(struct mcp_call_ctx *c, json_t **out)
{
    const char *api = mcp_arg_str(c, "api");
    const char *nesting = mcp_arg_str(c, "nested");
    int want_nested = nesting && strcmp(nesting, "nested") == 0;
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0);
    struct q_callf f = {mcp_arg_has(c, "stream"), mcp_arg_u64(c, "stream", 0),
                        mcp_arg_str(c, "kernel"), 0, 0};
    struct mcp_stats st;
    uint64_t errors = 0;
    int rc =
        api_stats(c, api, want_nested, pid, f.has_stream || f.kernel ? &f : NULL, &st, &errors);
    if (rc == -EINVAL)
        return rc;
    if (rc == -ENOENT)
        return mcp_bad(c, "no calls of API \"%.96s\" in this run (names as in get_trace_stats)",
                       api);
    if (rc < 0)
        return mcp_bad(c, "out of memory");
    q_text_head(c, "API latency");
    mcp_text_printf(c->t,
                    "%s%s: n=%llu total=%s mean=%s min=%s p50=%s p90=%s p99=%s p99.9=%s "
                    "max=%s errors=%llu\nlog2 histogram (bucket lower bound, calls):\n",
                    api, want_nested ? " (nested)" : "", (unsigned long long)st.count,
                    NS(st.total_ns), NS(st.mean_ns), NS(st.min_ns), NS(st.p50_ns), NS(st.p90_ns),
                    NS(st.p99_ns), NS(st.p999_ns), NS(st.max_ns), (unsigned long long)errors);
    text_hist(c->t, &st);
    json_t *o = q_head(c);
    json_object_set_new(o, "api", json_string(api));
    json_object_set_new(o, "nested", json_boolean(want_nested));
    json_object_set_new(o, "filter", q_filter_json(c));
    json_object_set_new(o, "count", json_integer((json_int_t)st.count));
    json_object_set_new(o, "total_ns", json_integer((json_int_t)st.total_ns));
    json_object_set_new(o, "mean_ns", json_integer((json_int_t)st.mean_ns));
    json_object_set_new(o, "min_ns", json_integer((json_int_t)st.min_ns));
    json_object_set_new(o, "p50_ns", json_integer((json_int_t)st.p50_ns));
    json_object_set_new(o, "p90_ns", json_integer((json_int_t)st.p90_ns));
    json_object_set_new(o, "p99_ns", json_integer((json_int_t)st.p99_ns));
    json_object_set_new(o, "p999_ns", json_integer((json_int_t)st.p999_ns));
    json_object_set_new(o, "max_ns", json_integer((json_int_t)st.max_ns));
    json_object_set_new(o, "errors", json_integer((json_int_t)errors));
    json_object_set_new(o, "histogram", hist_json(&st));
    *out = o;
    return 0;
}

/* ---- slices of the analysis ---- */

/* First @p top elements of array @p a matching @p pid (0 = all). */
static json_t *slice(json_t *a, uint32_t pid, size_t top, size_t *total)
{
    json_t *out = json_array(), *v;
    size_t i;
    *total = 0;
    json_array_foreach(a, i, v) {
        if (pid && (uint32_t)json_integer_value(json_object_get(v, "pid")) != pid)
            continue;
        if ((*total)++ < top)
            json_array_append(out, v);
    }
    return out;
}

static void text_list(struct mcp_text *t, json_t *a)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        mcp_text_printf(t, "%zu.", i + 1);
        q_text_fields(t, v);
    }
}

/* A finding's place in the account (docs/json.md "chains"): the buckets
 * it owns and what fixing it would do to the step time, under its fields. */
static void text_chain_account(struct mcp_text *t, const json_t *f)
{
    const json_t *owns = json_object_get(f, "owns"), *v;
    const char *fix = json_string_value(json_object_get(json_object_get(f, "if_fixed"), "text"));
    size_t i;

    if (json_array_size(owns)) {
        mcp_text_printf(t, "   owns in the account:");
        json_array_foreach(owns, i, v)
            mcp_text_printf(t, "%s %s", i ? "," : "", json_string_value(v));
        mcp_text_printf(t, "\n");
    }
    if (fix && *fix) {
        char *x = mcp_clean(fix, 200); /* the analyzer's words, not program data */
        mcp_text_printf(t, "   %s\n", x ? x : "");
        free(x);
    }
}

int mcp_q_causal_chains(struct mcp_call_ctx *c, json_t **out)
{
    size_t total, i;
    json_t *chains =
        slice(json_object_get(q_aj(c), "chains"), 0, mcp_arg_u64(c, "top", 10), &total), *v;
    q_text_head(c, "Causal chains");
    mcp_text_printf(c->t, "%zu finding%s, most severe first, each a view of the account "
                          "(get_account); showing %zu\n",
                    total, total == 1 ? "" : "s", json_array_size(chains));
    json_array_foreach(chains, i, v) {
        mcp_text_printf(c->t, "%zu.", i + 1);
        q_text_fields(c->t, v);
        text_chain_account(c->t, v);
    }
    json_t *o = q_head(c);
    json_object_set_new(o, "total", json_integer((json_int_t)total));
    json_object_set_new(o, "chains", chains);
    *out = o;
    return 0;
}

/* One bucket of the account as a text row: time, share, interval, owner. */
static void text_bucket(struct mcp_text *t, const json_t *b)
{
    json_int_t lo = json_integer_value(json_object_get(b, "lo_ns"));
    json_int_t hi = json_integer_value(json_object_get(b, "hi_ns"));
    const char *own = json_string_value(json_object_get(b, "owner"));

    mcp_text_printf(t, "  %-20s %10s %6.1f %%", json_string_value(json_object_get(b, "name")),
                    NS((uint64_t)json_integer_value(json_object_get(b, "ns"))),
                    json_number_value(json_object_get(b, "pct")));
    if (hi > lo)
        mcp_text_printf(t, "  95 %% interval %s to %s", NS((uint64_t)lo), NS((uint64_t)hi));
    if (own)
        mcp_text_printf(t, "  -> %s", own);
    mcp_text_printf(t, "\n");
}

static void text_account(struct mcp_text *t, const json_t *ac)
{
    const json_t *b;
    size_t i;

    json_array_foreach(json_object_get(ac, "buckets"), i, b)
        text_bucket(t, b);
    mcp_text_printf(t, "  %-20s %10s  (the window: %s)\n", "sum",
                    NS((uint64_t)json_integer_value(json_object_get(ac, "sum_ns"))),
                    NS((uint64_t)json_integer_value(json_object_get(ac, "window_ns"))));
}

/* Each process of @p procs under the totals; a lone representative is the totals. */
static void text_account_procs(struct mcp_text *t, json_t *ac, json_t *procs)
{
    json_t *v;
    size_t i;

    json_array_foreach(procs, i, v) {
        int is_rep = json_is_true(json_object_get(v, "represents"));
        int is_total = is_rep && json_array_size(json_object_get(ac, "processes")) == 1;
        mcp_text_printf(t, "process %lld device %lld (%s%s)%s\n",
                        (long long)json_integer_value(json_object_get(v, "pid")),
                        (long long)json_integer_value(json_object_get(v, "device")),
                        json_string_value(json_object_get(v, "source")),
                        is_rep ? "" : "; side by side with a representative, not in the totals",
                        is_total ? ": the totals above" : ":");
        if (!is_total)
            text_account(t, v);
    }
}

int mcp_q_account(struct mcp_call_ctx *c, json_t **out)
{
    json_t *ac = json_object_get(q_aj(c), "account"), *procs = json_array(), *o, *v;
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0);
    static const char *const keep[] = {"source", "window_ns", "setup_ns", "wind_down_ns",
                                        "sum_ns", "buckets"};
    size_t i;

    json_array_foreach(json_object_get(ac, "processes"), i, v)
        if (pid == 0 || (uint32_t)json_integer_value(json_object_get(v, "pid")) == pid)
            json_array_append(procs, v);
    if (pid && json_array_size(procs) == 0) {
        json_decref(procs);
        return mcp_bad(c, "no process %u fed a GPU in this run (see get_per_process_breakdown)",
                       pid);
    }
    q_text_head(c, "Account of the CUDA-active window (every ns once; the findings own buckets)");
    mcp_text_printf(c->t, "source %s; window %s, set-up before the first step %s, wind-down "
                          "after the last %s; findings' shares are of the window between "
                          "them\n",
                    json_string_value(json_object_get(ac, "source")),
                    NS((uint64_t)json_integer_value(json_object_get(ac, "window_ns"))),
                    NS((uint64_t)json_integer_value(json_object_get(ac, "setup_ns"))),
                    NS((uint64_t)json_integer_value(json_object_get(ac, "wind_down_ns"))));
    text_account(c->t, ac);
    text_account_procs(c->t, ac, procs);
    o = q_head(c);
    json_object_set_new(o, "filter", q_filter_json(c));
    for (i = 0; i < sizeof(keep) / sizeof(*keep); i++)
        if ((v = json_object_get(ac, keep[i])) != NULL)
            json_object_set(o, keep[i], v);
    json_object_set_new(o, "processes", procs);
    *out = o;
    return 0;
}

int mcp_q_per_process(struct mcp_call_ctx *c, json_t **out)
{
    size_t total;
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0);
    json_t *procs =
        slice(json_object_get(q_aj(c), "processes"), pid, mcp_arg_u64(c, "top", 50), &total);
    if (pid && total == 0) {
        json_decref(procs);
        return mcp_bad(c, "no process %u in this run", pid);
    }
    q_text_head(c, "Per-process breakdown");
    mcp_text_printf(c->t, "%zu process%s (CUDA main first, then workers); showing %zu\n", total,
                    total == 1 ? "" : "es", json_array_size(procs));
    text_list(c->t, procs);
    json_t *o = q_head(c);
    json_object_set_new(o, "filter", q_filter_json(c));
    json_object_set_new(o, "total", json_integer((json_int_t)total));
    json_object_set_new(o, "processes", procs);
    *out = o;
    return 0;
}

int mcp_q_gpu_feed(struct mcp_call_ctx *c, json_t **out)
{
    json_t *feed = json_object_get(q_aj(c), "gpu_feed");
    size_t np, ns;
    json_t *procs = slice(json_object_get(feed, "processes"), 0, MCP_TOP_MAX, &np);
    json_t *streams = slice(json_object_get(feed, "streams"), 0, MCP_TOP_MAX, &ns);
    q_text_head(c, "GPU feed (idle time is a lower bound from host-side facts)");
    mcp_text_printf(c->t, "processes (%zu):\n", np);
    text_list(c->t, procs);
    mcp_text_printf(c->t, "streams (%zu, showing %zu):\n", ns, json_array_size(streams));
    text_list(c->t, streams);
    json_t *o = q_head(c);
    json_object_set_new(o, "processes", procs);
    json_object_set_new(o, "streams", streams);
    json_object_set_new(o, "total_processes", json_integer((json_int_t)np));
    json_object_set_new(o, "total_streams", json_integer((json_int_t)ns));
    *out = o;
    return 0;
}

static int cmp_idle_desc(const void *a, const void *b)
{
    const json_t *p = *(json_t *const *)a, *q = *(json_t *const *)b;
    json_int_t x = json_integer_value(json_object_get(p, "idle_after_ns"));
    json_int_t y = json_integer_value(json_object_get(q, "idle_after_ns"));

    if (x == y) { /* then by time, as the rows come */
        x = json_integer_value(json_object_get(p, "total_ns"));
        y = json_integer_value(json_object_get(q, "total_ns"));
    }
    return x > y ? -1 : x < y;
}

/* The rows with GPU idle after them, most first, at most @p top. */
static json_t *by_idle(json_t *rows, size_t top)
{
    size_t n = 0, i;
    json_t **v = malloc((json_array_size(rows) + 1) * sizeof(*v)), *r, *out = json_array();

    json_array_foreach(rows, i, r)
        if (v && json_integer_value(json_object_get(r, "idle_after_ns")) > 0)
            v[n++] = r;
    if (v)
        qsort(v, n, sizeof(*v), cmp_idle_desc);
    for (i = 0; v && i < n && i < top; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}

int mcp_q_hotspots(struct mcp_call_ctx *c, json_t **out)
{
    if (mcp_server_analysis(c->s, c->run) < 0)
        return mcp_bad(c, "cannot analyse the run (see the server's log)");
    json_t *py = analysis_pylines(c->s->an[c->run]), *o;
    json_t *rows = json_object_get(py, "rows");
    size_t top = (size_t)mcp_arg_u64(c, "top", 10), total;
    json_t *by_time = slice(rows, 0, top, &total), *idle = by_idle(rows, top);

    q_text_head(c, "Hotspots (call sites)");
    if (total == 0)
        mcp_text_printf(c->t, "no call in this run has a stack (recorded without Python "
                              "frames or CUDASPY_STACK_US)\n");
    mcp_text_printf(c->t, "%zu call sites; by time in their CUDA calls (showing %zu):\n", total,
                    json_array_size(by_time));
    text_list(c->t, by_time);
    mcp_text_printf(c->t, "by the GPU idle that followed them (%s, showing %zu):\n",
                    json_string_value(json_object_get(py, "idle_source")),
                    json_array_size(idle));
    text_list(c->t, idle);
    o = q_head(c);
    json_object_set(o, "idle_source", json_object_get(py, "idle_source"));
    json_object_set(o, "idle_ns", json_object_get(py, "idle_ns"));
    json_object_set(o, "calls_with_stack", json_object_get(py, "calls"));
    json_object_set_new(o, "total", json_integer((json_int_t)total));
    json_object_set_new(o, "by_time", by_time);
    json_object_set_new(o, "by_idle", idle);
    json_decref(py);
    *out = o;
    return 0;
}

int mcp_q_steps(struct mcp_call_ctx *c, json_t **out)
{
    const json_t *st = json_object_get(q_aj(c), "steps");
    size_t limit = (size_t)mcp_arg_u64(c, "limit", 100), n, i;
    json_t *rows = slice(json_object_get(st, "rows"), 0, limit, &n), *o, *v;
    static const char *const keep[] = {"source", "how", "name", "tid", "count", "cv", "p50_ns",
                                       "p90_ns", "p99_ns", "max_ns", "mean_ns", "mix",
                                       "rows_every", "worst", "setup"};

    q_text_head(c, "Steps");
    mcp_text_printf(c->t, "%lld steps (%s)\n",
                    (long long)json_integer_value(json_object_get(st, "count")),
                    json_string_value(json_object_get(st, "how")));
    if (json_integer_value(json_object_get(st, "count")) > 0) {
        mcp_text_printf(c->t, "step time p50 %s  p90 %s  p99 %s  max %s\n",
                        NS((uint64_t)json_integer_value(json_object_get(st, "p50_ns"))),
                        NS((uint64_t)json_integer_value(json_object_get(st, "p90_ns"))),
                        NS((uint64_t)json_integer_value(json_object_get(st, "p99_ns"))),
                        NS((uint64_t)json_integer_value(json_object_get(st, "max_ns"))));
        mcp_text_printf(c->t, "summed over the steps:");
        q_text_fields(c->t, json_object_get(st, "mix"));
        mcp_text_printf(c->t, "slowest steps (with the findings whose examples fall inside):\n");
        text_list(c->t, json_object_get(st, "worst"));
        if (json_is_object(json_object_get(st, "setup"))) {
            mcp_text_printf(c->t, "set-up before the first step (once, not in the findings):");
            q_text_fields(c->t, json_object_get(st, "setup"));
        }
    }
    o = q_head(c);
    for (i = 0; i < sizeof(keep) / sizeof(*keep); i++)
        if ((v = json_object_get(st, keep[i])) != NULL)
            json_object_set(o, keep[i], v);
    json_object_set_new(o, "total_rows", json_integer((json_int_t)n));
    json_object_set_new(o, "rows", rows);
    *out = o;
    return 0;
}

int mcp_q_gpu_timeline(struct mcp_call_ctx *c, json_t **out)
{
    if (mcp_server_analysis(c->s, c->run) < 0)
        return mcp_bad(c, "cannot analyse the run (see the server's log)");
    json_t *g = json_object_get(q_aj(c), "gpu"), *devs = json_array(), *bins = json_array(), *v;
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0);
    int nb = (int)mcp_arg_u64(c, "bins", 50), full;
    uint64_t lo, hi;
    double *b = calloc((size_t)nb + 1, sizeof(*b));
    const char *src;
    size_t i;

    if (b == NULL || q_window(c, &lo, &hi, &full) < 0) {
        int rc = b ? -1 : -ENOMEM;
        free(b);
        json_decref(devs);
        json_decref(bins);
        return rc;
    }
    json_array_foreach(json_object_get(g, "devices"), i, v)
        if (pid == 0 || (uint32_t)json_integer_value(json_object_get(v, "pid")) == pid)
            json_array_append(devs, v);
    src = analysis_gpu_bins(c->s->an[c->run], c->run, pid, lo, hi, nb, b);
    for (int k = 0; k < nb; k++)
        json_array_append_new(bins, b[k] < 0 ? json_null() : json_real(round(b[k] * 1000.0) / 10.0));
    free(b);
    q_text_head(c, "What the GPU did");
    mcp_text_printf(c->t, "source %s; GPU busy %.1f %% of the covered time (%.1f %% of the "
                          "CUDA-active window covered); idle %s over the window\n",
                    src, json_real_value(json_object_get(g, "busy_pct")),
                    json_real_value(json_object_get(g, "coverage_pct")),
                    NS((uint64_t)json_integer_value(json_object_get(g, "idle_ns"))));
    mcp_text_printf(c->t, "idle by what the feeding thread did:");
    q_text_fields(c->t, json_object_get(g, "idle_by_host_state"));
    json_array_foreach(json_object_get(g, "notes"), i, v)
        mcp_text_printf(c->t, "note: %s\n", json_string_value(v));
    mcp_text_printf(c->t, "devices (%zu):\n", json_array_size(devs));
    text_list(c->t, devs);
    json_t *o = q_head(c);
    json_object_set_new(o, "filter", q_filter_json(c));
    json_object_set_new(o, "source", json_string(src));
    json_object_set_new(o, "summary",
                        json_pack("{s:O, s:O, s:O, s:O, s:O, s:O}", "busy_pct",
                                  json_object_get(g, "busy_pct"), "idle_ns",
                                  json_object_get(g, "idle_ns"), "window_ns",
                                  json_object_get(g, "window_ns"), "coverage_pct",
                                  json_object_get(g, "coverage_pct"), "idle_by_host_state",
                                  json_object_get(g, "idle_by_host_state"), "notes",
                                  json_object_get(g, "notes")));
    json_object_set_new(o, "devices", devs);
    json_object_set_new(o, "top_kernels_by_time",
                        json_deep_copy(json_object_get(g, "top_kernels_by_time")));
    json_object_set_new(o, "graphs", json_deep_copy(json_object_get(g, "graphs")));
    json_object_set_new(o, "bins", json_pack("{s:I, s:I, s:o}", "start_ms",
                                             (json_int_t)((lo - q_idx(c)->t0_ns) / 1000000),
                                             "bin_ns", (json_int_t)((hi - lo) / (uint64_t)nb),
                                             "busy_pct", bins));
    *out = o;
    return 0;
}

/* ---- names of processes and threads ---- */

static const char *comm_of(struct cs_run *r, uint32_t pid)
{
    size_t n;
    const struct cs_proc *p = cs_run_procs(r, &n);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && p[lo].pid == pid ? p[lo].comm : "?";
}

static const char *thread_of(struct cs_run *r, uint32_t pid, uint32_t tid)
{
    size_t n;
    const struct cs_thread *t = cs_run_threads(r, &n);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid].pid < pid || (t[mid].pid == pid && t[mid].tid < tid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && t[lo].pid == pid && t[lo].tid == tid ? t[lo].name : "?";
}

static const char *class_name(unsigned cls)
{
    static const char *const names[] = {"?", "sleep", "disk", "preempt", "blocked", "other"};
    return cls < 6 ? names[cls] : "?";
}

/* ---- timeline ---- */

static json_t *call_event(const struct mcp_index *x, const struct mcp_call *k)
{
    char name[96];
    json_t *e = json_pack(
        "{s:I, s:s, s:i, s:s, s:I, s:I, s:I, s:i, s:b}", "t_ns", (json_int_t)(k->t_ns - x->t0_ns),
        "kind", "cuda", "tid", (int)k->tid, "api",
        cs_api_display((enum cs_api)k->api, (enum cs_variant)k->variant, name, sizeof(name)),
        "dur_ns", (json_int_t)k->dur_ns, "stream", (json_int_t)k->stream, "bytes",
        (json_int_t)k->bytes, "result", (int)k->result, "nested", !!(k->flags & CS_CF_NESTED));
    if (k->name_id)
        json_object_set_new(e, "kernel", json_string(cs_run_string(x->run, k->name_id)));
    return e;
}

static json_t *off_event(const struct mcp_index *x, const struct cs_rec_offcpu *o)
{
    return json_pack("{s:I, s:s, s:i, s:I, s:s, s:i, s:I, s:i, s:i, s:i, s:i}", "t_ns",
                     (json_int_t)(o->t_start_ns - x->t0_ns), "kind", "offcpu", "tid", (int)o->tid,
                     "dur_ns", (json_int_t)(o->t_end_ns - o->t_start_ns), "class",
                     class_name(o->cls), "cpu", (int)o->cpu, "runq_ns", (json_int_t)o->runq_ns,
                     "waker_pid", (int)o->waker_pid, "waker_tid", (int)o->waker_tid, "holder_pid",
                     (int)o->holder_pid, "holder_permille", (int)o->holder_permille);
}

static void text_event(struct mcp_text *t, json_t *e)
{
    uint64_t tn = (uint64_t)json_integer_value(json_object_get(e, "t_ns"));
    uint64_t d = (uint64_t)json_integer_value(json_object_get(e, "dur_ns"));
    int tid = (int)json_integer_value(json_object_get(e, "tid"));
    if (strcmp(json_string_value(json_object_get(e, "kind")), "cuda") == 0) {
        mcp_text_printf(t, "  %12.6f ms tid %d %s %s", (double)tn / 1e6, tid,
                        json_string_value(json_object_get(e, "api")), NS(d));
        if (json_object_get(e, "kernel")) {
            mcp_text_printf(t, " kernel=");
            mcp_text_data(t, json_string_value(json_object_get(e, "kernel")));
        }
        mcp_text_printf(t, "\n");
    } else {
        mcp_text_printf(t, "  %12.6f ms tid %d off-CPU %s %s (holder pid %d)\n", (double)tn / 1e6,
                        tid, json_string_value(json_object_get(e, "class")), NS(d),
                        (int)json_integer_value(json_object_get(e, "holder_pid")));
    }
}

#define SCAN_BUDGET 4000000 /* records one timeline page may skip over (tid filter) */

struct q_page {
    uint64_t ci, ce, oi, oe; /* positions and ends in calls / offs */
};

static int parse_cursor(const char *s, const struct mcp_pid *p, struct q_page *pg)
{
    unsigned long long ci, oi;
    char tail;
    if (sscanf(s, "v1:%llu:%llu%c", &ci, &oi, &tail) != 2 || ci < p->call_lo || ci > p->call_hi ||
        oi < p->off_lo || oi > p->off_hi)
        return -EINVAL;
    pg->ci = ci;
    pg->oi = oi;
    return 0;
}

int mcp_q_timeline(struct mcp_call_ctx *c, json_t **out)
{
    const struct mcp_index *x = q_idx(c);
    uint64_t lo, hi;
    int is_full;
    if (q_window(c, &lo, &hi, &is_full) < 0)
        return -EINVAL;
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0), tid = (uint32_t)mcp_arg_u64(c, "tid", 0);
    if (!pid && !tid)
        return mcp_bad(c, "give pid or tid");
    if (!pid && !(pid = mcp_index_tid_pid(x, tid)))
        return mcp_bad(c, "no thread %u in this run", tid);
    const struct mcp_pid *p = mcp_index_pid(x, pid);
    if (!p)
        return mcp_bad(c, "no process %u with calls or off-CPU intervals in this run", pid);
    struct q_page pg = {mcp_index_call_at(x, p->call_lo, p->call_hi, lo), p->call_hi,
                        mcp_index_off_at(x, p->off_lo, p->off_hi, lo), p->off_hi};
    if (mcp_arg_has(c, "cursor") && parse_cursor(mcp_arg_str(c, "cursor"), p, &pg) < 0)
        return mcp_bad(c, "invalid cursor (pass nextCursor of the previous page unchanged)");
    uint64_t limit = mcp_arg_u64(c, "limit", MCP_PAGE_DEFAULT), scanned = 0;
    json_t *events = json_array();
    q_text_head(c, "Timeline");
    for (; json_array_size(events) < limit && scanned < SCAN_BUDGET; scanned++) {
        uint64_t tc = pg.ci < pg.ce ? x->calls[pg.ci].t_ns : UINT64_MAX;
        uint64_t to = pg.oi < pg.oe ? x->offs[pg.oi].t_start_ns : UINT64_MAX;
        if ((tc < to ? tc : to) >= hi) {
            pg.ci = pg.ce;
            pg.oi = pg.oe;
            break;
        }
        json_t *e = NULL;
        if (tc <= to) {
            if (!tid || x->calls[pg.ci].tid == tid)
                e = call_event(x, &x->calls[pg.ci]);
            pg.ci++;
        } else {
            if (!tid || x->offs[pg.oi].tid == tid)
                e = off_event(x, &x->offs[pg.oi]);
            pg.oi++;
        }
        if (e) {
            text_event(c->t, e);
            json_array_append_new(events, e);
        }
    }
    json_t *o = q_head(c);
    json_object_set_new(o, "pid", json_integer(pid));
    json_object_set_new(o, "filter", q_filter_json(c));
    json_object_set_new(o, "count", json_integer((json_int_t)json_array_size(events)));
    json_object_set_new(o, "events", events);
    if (pg.ci < pg.ce || pg.oi < pg.oe) {
        char cur[64];
        snprintf(cur, sizeof(cur), "v1:%llu:%llu", (unsigned long long)pg.ci,
                 (unsigned long long)pg.oi);
        json_object_set_new(o, "nextCursor", json_string(cur));
        mcp_text_printf(c->t, "more: call again with cursor \"%s\"\n", cur);
    }
    *out = o;
    return 0;
}

/* ---- stalls ---- */

static int class_parse(const char *s)
{
    for (unsigned k = 1; s && k < 6; k++)
        if (strcmp(s, class_name(k)) == 0)
            return (int)k;
    return 0;
}

static json_t *stall_json(const struct mcp_index *x, const struct cs_rec_offcpu *o)
{
    json_t *e = off_event(x, o);
    json_object_set_new(e, "pid", json_integer(o->pid));
    json_object_set_new(e, "comm", json_string(comm_of(x->run, o->pid)));
    json_object_set_new(e, "thread", json_string(thread_of(x->run, o->pid, o->tid)));
    if (o->holder_pid)
        json_object_set_new(e, "holder_comm", json_string(comm_of(x->run, o->holder_pid)));
    if (o->waker_pid)
        json_object_set_new(e, "waker_comm", json_string(comm_of(x->run, o->waker_pid)));
    json_object_set_new(e, "holder_in_tree", json_boolean(o->flags & CS_HF_HOLDER_IN_TREE));
    return e;
}

static void text_stall(struct mcp_text *t, size_t i, const struct cs_rec_offcpu *o,
                       const struct mcp_index *x)
{
    mcp_text_printf(t, "%zu. %s %s at %.3f ms, pid %u ", i + 1, NS(o->t_end_ns - o->t_start_ns),
                    class_name(o->cls), (double)(o->t_start_ns - x->t0_ns) / 1e6, o->pid);
    mcp_text_data(t, comm_of(x->run, o->pid));
    mcp_text_printf(t, " tid %u", o->tid);
    if (o->holder_pid) {
        mcp_text_printf(t, "; CPU held by pid %u ", o->holder_pid);
        mcp_text_data(t, comm_of(x->run, o->holder_pid));
        mcp_text_printf(t, " %.1f%%", o->holder_permille / 10.0);
    }
    if (o->waker_pid) {
        mcp_text_printf(t, "; woken by pid %u ", o->waker_pid);
        mcp_text_data(t, comm_of(x->run, o->waker_pid));
    }
    mcp_text_printf(t, "; run-queue wait %s\n", NS(o->runq_ns));
}

int mcp_q_top_stalls(struct mcp_call_ctx *c, json_t **out)
{
    const struct mcp_index *x = q_idx(c);
    uint64_t lo, hi;
    int is_full;
    if (q_window(c, &lo, &hi, &is_full) < 0)
        return -EINVAL;
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0), tid = (uint32_t)mcp_arg_u64(c, "tid", 0);
    int cls = class_parse(mcp_arg_str(c, "class"));
    size_t top = mcp_arg_u64(c, "top", 20), total = 0;
    /* Longest first, from the class's own list when a class is asked for;
     * only pid, tid or window filters make it scan (until the top is full). */
    const uint32_t *list = cls ? x->off_by_cls + x->off_cls_lo[cls] : x->off_by_dur;
    uint64_t n = cls ? x->off_cls_lo[cls + 1] - x->off_cls_lo[cls] : x->noffs;
    int is_scan = pid || tid || mcp_arg_has(c, "since_ms") || mcp_arg_has(c, "until_ms");
    (void)is_full;
    json_t *stalls = json_array();
    q_text_head(c, "Longest off-CPU intervals");
    for (uint64_t i = 0; i < n && json_array_size(stalls) < top; i++) {
        const struct cs_rec_offcpu *o = &x->offs[list[i]];
        if ((pid && o->pid != pid) || (tid && o->tid != tid) || o->t_start_ns < lo ||
            o->t_start_ns >= hi)
            continue;
        text_stall(c->t, json_array_size(stalls), o, x);
        json_array_append_new(stalls, stall_json(x, o));
    }
    total = is_scan ? json_array_size(stalls) : n;
    if (json_array_size(stalls) == 0)
        mcp_text_printf(c->t, "none recorded (the sampler records intervals above its "
                              "threshold; tier none records none)\n");
    json_t *o = q_head(c);
    json_object_set_new(o, "filter", q_filter_json(c));
    if (!is_scan)
        json_object_set_new(o, "total", json_integer((json_int_t)total));
    json_object_set_new(o, "stalls", stalls);
    *out = o;
    return 0;
}

/* ---- gate ---- */

/* Row and result keys follow `cudaspy-analyze gate --json` (gate.c). */
static json_t *gate_row_json(const struct gate_row *r)
{
    return json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:o, s:o, s:s, s:b}", "api", r->api, "kernel",
                     r->kernel ? json_string(r->kernel) : json_null(), "base_calls",
                     (json_int_t)r->n_base, "new_calls", (json_int_t)r->n_new, "base_ns",
                     (json_int_t)r->base_ns, "new_ns", (json_int_t)r->new_ns, "ratio",
                     isfinite(r->ratio) ? json_real(r->ratio) : json_null(), "ci",
                     r->has_ci ? json_pack("[f,f]", r->ci_lo, r->ci_hi) : json_null(), "verdict",
                     gate_verdict_name(r->verdict), "failed", r->verdict == GATE_REGRESSED);
}

static void text_gate_row(struct mcp_text *t, const struct gate_row *r)
{
    mcp_text_printf(t, "  %-10s %s", gate_verdict_name(r->verdict), r->api);
    if (r->kernel) {
        mcp_text_printf(t, " kernel ");
        mcp_text_data(t, r->kernel);
    }
    mcp_text_printf(t, ": base %s (n=%llu) new %s (n=%llu) x%.2f\n", NS(r->base_ns),
                    (unsigned long long)r->n_base, NS(r->new_ns), (unsigned long long)r->n_new,
                    r->ratio);
}

int mcp_q_compare_runs(struct mcp_call_ctx *c, json_t **out)
{
    int b = mcp_arg_run(c, "base"), n = mcp_arg_run(c, "new");
    if (b < 0 || n < 0)
        return -EINVAL;
    struct gate_opts go;
    gate_opts_init(&go);
    if (mcp_arg_has(c, "metric"))
        go.metric = summary_q_parse(mcp_arg_str(c, "metric"));
    go.max_ratio = mcp_arg_num(c, "max_ratio", go.max_ratio);
    go.min_calls = mcp_arg_u64(c, "min_calls", go.min_calls);
    if (mcp_server_summary(c->s, b) < 0 || mcp_server_summary(c->s, n) < 0)
        return mcp_bad(c, "cannot build the gate summary (see the server's log)");
    struct gate_row *rows = NULL;
    size_t nrows = 0, count[GATE_ONLY_NEW + 1] = {0};
    if (gate_eval(c->s->sum[b], c->s->sum[n], &go, &rows, &nrows) < 0)
        return mcp_bad(c, "out of memory");
    size_t top = mcp_arg_u64(c, "top", 50);
    json_t *arr = json_array();
    mcp_text_printf(c->t, "Gate: %s of run %d ", summary_q_name(go.metric), n);
    mcp_text_data(c->t, c->s->names[n]);
    mcp_text_printf(c->t, " against base run %d ", b);
    mcp_text_data(c->t, c->s->names[b]);
    mcp_text_printf(c->t, " (fails above x%.2f and +%.1f us, with >= %llu calls on each side)\n",
                    go.max_ratio, go.min_delta_us, (unsigned long long)go.min_calls);
    for (size_t i = 0; i < nrows; i++) {
        count[rows[i].verdict]++;
        if (i < top) {
            json_array_append_new(arr, gate_row_json(&rows[i]));
            text_gate_row(c->t, &rows[i]);
        }
    }
    struct gate_crit *crit = NULL;
    size_t ncrit = 0, cfail = 0;
    json_t *carr = json_array();
    if (gate_eval_run(c->s->sum[b], c->s->sum[n], &go, &crit, &ncrit) < 0) {
        free(rows);
        json_decref(arr);
        json_decref(carr);
        return mcp_bad(c, "out of memory");
    }
    for (size_t i = 0; i < ncrit; i++) {
        char label[160], note[300];
        cfail += crit[i].verdict == GATE_REGRESSED;
        json_array_append_new(carr, gate_crit_json(&crit[i], &go));
        if (crit[i].verdict != GATE_OK)
            mcp_text_printf(c->t, "  %-10s %s: %s\n", gate_verdict_name(crit[i].verdict),
                            gate_crit_label(&crit[i], label, sizeof(label)),
                            gate_crit_note(&crit[i], &go, note, sizeof(note)));
    }
    free(crit);
    const char *verdict = count[GATE_REGRESSED] || cfail ? "fail" : "pass";
    mcp_text_printf(c->t,
                    "verdict: %s (%zu of %zu run criteria regressed; APIs: %zu regressed, "
                    "%zu noisy, %zu with too few calls; %zu rows, %zu shown)\n",
                    verdict, cfail, ncrit, count[GATE_REGRESSED], count[GATE_NOISY],
                    count[GATE_FEW_CALLS], nrows, json_array_size(arr));
    json_t *o = json_pack(
        "{s:{s:i, s:s}, s:{s:i, s:s}, s:s, s:s, s:{s:f, s:f, s:I, s:b, s:i, s:I}, s:I, s:I, s:I, "
        "s:I, s:o}",
        "base", "run", b, "name", c->s->names[b], "new", "run", n, "name", c->s->names[n],
        "verdict", verdict, "metric", summary_q_name(go.metric), "limits", "max_ratio",
        go.max_ratio, "min_delta_us", go.min_delta_us, "min_calls", (json_int_t)go.min_calls, "ci",
        go.use_ci, "resamples", (int)go.resamples, "seed", (json_int_t)go.seed, "regressed",
        (json_int_t)count[GATE_REGRESSED], "noisy", (json_int_t)count[GATE_NOISY], "too_few_calls",
        (json_int_t)count[GATE_FEW_CALLS], "total", (json_int_t)nrows, "rows", arr);
    json_object_set_new(o, "run_regressed", json_integer((json_int_t)cfail));
    json_object_set_new(o, "criteria", carr);
    free(rows);
    *out = o;
    return 0;
}

/* ---- device memory (issue 31) ---- */

static void text_memory_proc(struct mcp_text *t, json_t *v)
{
    json_t *tot = json_object_get(v, "total_bytes");

    mcp_text_printf(t, "process %lld GPU %lld: peak %.1f MiB at %s, held at the end %.1f MiB, "
                       "%lld allocations, %lld frees, %lld out-of-memory failures (%lld retried)",
                    (long long)json_integer_value(json_object_get(v, "pid")),
                    (long long)json_integer_value(json_object_get(v, "device")),
                    (double)json_integer_value(json_object_get(v, "peak_bytes")) / 1048576.0,
                    NS((uint64_t)json_integer_value(json_object_get(v, "peak_t_ns"))),
                    (double)json_integer_value(json_object_get(v, "held_end_bytes")) / 1048576.0,
                    (long long)json_integer_value(json_object_get(v, "allocations")),
                    (long long)json_integer_value(json_object_get(v, "frees")),
                    (long long)json_integer_value(json_object_get(v, "failures")),
                    (long long)json_integer_value(json_object_get(v, "retries")));
    if (json_is_integer(tot))
        mcp_text_printf(t, "; device %.1f MiB, %.1f MiB free at the last reading",
                        (double)json_integer_value(tot) / 1048576.0,
                        (double)json_integer_value(json_object_get(v, "free_bytes")) /
                            1048576.0);
    mcp_text_printf(t, "\n");
}

int mcp_q_memory(struct mcp_call_ctx *c, json_t **out)
{
    json_t *mem = json_object_get(q_aj(c), "memory"), *procs = json_array(), *fails = json_array();
    uint32_t pid = (uint32_t)mcp_arg_u64(c, "pid", 0);
    json_t *v, *o;
    size_t i;

    json_array_foreach(json_object_get(mem, "processes"), i, v)
        if (pid == 0 || (uint32_t)json_integer_value(json_object_get(v, "pid")) == pid)
            json_array_append(procs, v);
    json_array_foreach(json_object_get(mem, "failures"), i, v)
        if (pid == 0 || (uint32_t)json_integer_value(json_object_get(v, "pid")) == pid)
            json_array_append(fails, v);
    q_text_head(c, "Device memory per process and GPU (what its allocator held)");
    json_array_foreach(procs, i, v)
        text_memory_proc(c->t, v);
    if (json_array_size(procs) == 0)
        mcp_text_printf(c->t, "no device allocation recorded%s\n", pid ? " for this process" : "");
    json_array_foreach(fails, i, v)
        mcp_text_printf(c->t, "%s of %.1f MiB failed out of memory at %s (%s), %.1f MiB held%s\n",
                        json_string_value(json_object_get(v, "api")),
                        (double)json_integer_value(json_object_get(v, "bytes")) / 1048576.0,
                        NS((uint64_t)json_integer_value(json_object_get(v, "t_ns"))),
                        json_string_value(json_object_get(v, "site")) ?: "no stack",
                        (double)json_integer_value(json_object_get(v, "held_bytes")) / 1048576.0,
                        json_is_true(json_object_get(v, "retried")) ? "; retried" : "");
    o = q_head(c);
    json_object_set_new(o, "filter", q_filter_json(c));
    json_object_set_new(o, "processes", procs);
    json_object_set_new(o, "failures", fails);
    json_object_set(o, "failures_total", json_object_get(mem, "failures_total"));
    json_object_set(o, "retry_episodes", json_object_get(mem, "retry_episodes"));
    *out = o;
    return 0;
}
