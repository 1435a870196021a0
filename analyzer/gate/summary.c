/* gate/summary.c: builds latency summaries from a run file's CUDA records and
 * reads/writes their saved JSON form (versions 1 and 2). Owns the grouping of
 * calls by API and kernel name; the run part of format 2 is measured by
 * measure.c, and the comparison of two summaries is gate.c's. */
#include "summary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "cudaspy/api.h"
#include "cudaspy/record.h"

static const double q_prob[SUMMARY_NQ] = {0.5, 0.9, 0.99, 0.999};
static const char *const q_name[SUMMARY_NQ] = {"p50", "p90", "p99", "p99.9"};
static const char *const q_key[SUMMARY_NQ] = {"p50_ns", "p90_ns", "p99_ns", "p999_ns"};

double summary_q_prob(enum summary_q q) { return q_prob[q]; }
const char *summary_q_name(enum summary_q q) { return q_name[q]; }

int summary_q_parse(const char *name)
{
    for (int i = 0; i < SUMMARY_NQ; i++)
        if (strcmp(name, q_name[i]) == 0)
            return i;
    return -1;
}

/* ---- accumulation: open-addressing table keyed by (api, kernel name id) ---- */

struct acc {
    uint64_t key; /* api << 32 | name_id; 0 = empty slot */
    uint64_t *v;
    size_t n, cap;
};

struct acc_table {
    struct acc *slot;
    size_t cap, used;
};

static struct acc *acc_slot(struct acc *slot, size_t cap, uint64_t key)
{
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
    while (slot[i].key != 0 && slot[i].key != key)
        i = (i + 1) & (cap - 1);
    return &slot[i];
}

static int acc_grow(struct acc_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct acc *s = calloc(cap, sizeof(*s));
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i].key)
            *acc_slot(s, cap, t->slot[i].key) = t->slot[i];
    free(t->slot);
    t->slot = s;
    t->cap = cap;
    return 0;
}

static int acc_add(struct acc_table *t, uint64_t key, uint64_t dur_ns)
{
    if ((t->used + 1) * 2 > t->cap && acc_grow(t) < 0)
        return -ENOMEM;
    struct acc *a = acc_slot(t->slot, t->cap, key);
    if (a->key == 0) {
        a->key = key;
        t->used++;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        uint64_t *v = realloc(a->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = dur_ns;
    return 0;
}

static void acc_free(struct acc_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slot[i].v);
    free(t->slot);
}

static int add_block(struct acc_table *t, const struct cs_rec_cuda *c, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++, c++) {
        if (c->api == CS_API_NONE || c->api >= CS_API_COUNT || (c->flags & CS_CF_TRACER))
            continue; /* the tracer's own readings are not the program's calls */
        uint64_t d = c->t_exit_ns > c->t_enter_ns ? c->t_exit_ns - c->t_enter_ns : 0;
        uint64_t key = (uint64_t)c->api << 32;
        if (acc_add(t, key, d) < 0)
            return -ENOMEM;
        if ((c->flags & CS_CF_HAS_NAME) && c->name_id && acc_add(t, key | c->name_id, d) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int scan_run(struct cs_run *r, struct acc_table *t, struct cs_err *err)
{
    struct cs_cursor *cur;
    int rc = cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &cur);
    if (rc < 0)
        return cs_err_set(err, rc, "cannot read CUDA records (%s)", cs_strerror(rc));
    const struct cs_blk_hdr *h;
    const void *recs;
    while ((rc = cs_cursor_next(cur, &h, &recs, err)) == 1) {
        if (h->kind != CS_REC_CUDA)
            continue;
        if ((rc = add_block(t, recs, h->n)) < 0)
            break;
    }
    cs_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

/* ---- groups ---- */

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static int cmp_group(const void *x, const void *y)
{
    const struct summary_group *a = x, *b = y;
    int c = strcmp(a->api, b->api);
    if (c || a->kernel == b->kernel)
        return c;
    if (!a->kernel || !b->kernel)
        return a->kernel ? 1 : -1;
    return strcmp(a->kernel, b->kernel);
}

/* Samples of ascending @p v (n > 0), k of them: sample i is v[floor((2i+1)n / 2k)].
 * @return 0 or -ENOMEM */
static int pick_samples(const uint64_t *v, size_t n, size_t max_samples, uint64_t **out,
                        size_t *k_out)
{
    size_t k = n < max_samples ? n : max_samples;
    uint64_t *smp = malloc((k ? k : 1) * sizeof(*smp));
    if (!smp)
        return -ENOMEM;
    for (size_t i = 0; i < k; i++)
        smp[i] = v[(size_t)(((2 * (unsigned __int128)i + 1) * n) / (2 * k))];
    *out = smp;
    *k_out = k;
    return 0;
}

/* Fill g's statistics and samples from ascending @p v (n > 0). */
static int group_fill(struct summary_group *g, const uint64_t *v, size_t n, size_t max_samples)
{
    g->count = n;
    g->total_ns = 0;
    for (size_t i = 0; i < n; i++)
        g->total_ns += v[i];
    g->min_ns = v[0];
    g->max_ns = v[n - 1];
    for (int q = 0; q < SUMMARY_NQ; q++)
        g->q_ns[q] = bootstrap_quantile(v, n, q_prob[q]);
    return pick_samples(v, n, max_samples, &g->samples_ns, &g->nsamples);
}

static int group_from_acc(struct summary_group *g, struct acc *a, struct cs_run *r,
                          size_t max_samples, int keep_all)
{
    uint32_t api = (uint32_t)(a->key >> 32), name = (uint32_t)a->key;
    g->api = strdup(cs_api_table[api].name);
    g->kernel = name ? strdup(cs_run_string(r, name)) : NULL;
    if (!g->api || (name && !g->kernel))
        return -ENOMEM;
    qsort(a->v, a->n, sizeof(uint64_t), cmp_u64);
    if (group_fill(g, a->v, a->n, max_samples) < 0)
        return -ENOMEM;
    if (keep_all) {
        g->all_ns = a->v; /* ownership moves to the group */
        a->v = NULL;
    }
    return 0;
}

static struct summary *summary_alloc(const char *source, size_t n)
{
    struct summary *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->source = strdup(source ? source : "");
    s->groups = calloc(n ? n : 1, sizeof(*s->groups));
    if (!s->source || !s->groups) {
        summary_free(s);
        return NULL;
    }
    return s;
}

int summary_from_run(struct cs_run *r, const char *source, size_t max_samples, int keep_all,
                     struct summary **out, struct cs_err *err)
{
    struct acc_table t = {0};
    int rc = scan_run(r, &t, err);
    struct summary *s = rc < 0 ? NULL : summary_alloc(source, t.used);
    if (rc == 0 && !s)
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < t.cap; i++) {
        if (!t.slot[i].key)
            continue;
        rc = group_from_acc(&s->groups[s->n++], &t.slot[i], r, max_samples, keep_all);
    }
    acc_free(&t);
    if (rc < 0) {
        summary_free(s);
        if (rc == -ENOMEM)
            cs_err_set(err, rc, "out of memory summarising CUDA calls");
        return rc;
    }
    qsort(s->groups, s->n, sizeof(*s->groups), cmp_group);
    s->is_run = 1;
    *out = s;
    return 0;
}

int summary_set_steps(struct summary *s, int gpu, const char *source, const char *how,
                      uint64_t *v, size_t n, size_t max_samples)
{
    struct summary_steps *st = gpu ? &s->run.gpu_steps : &s->run.steps;
    int rc = 0;
    if (n && source) {
        st->source = strdup(source);
        st->how = strdup(how ? how : "");
        st->count = n;
        st->p50_ns = bootstrap_quantile(v, n, 0.5);
        st->p99_ns = bootstrap_quantile(v, n, 0.99);
        if (!st->source || !st->how || pick_samples(v, n, max_samples, &st->samples_ns,
                                                    &st->nsamples) < 0)
            rc = -ENOMEM;
    }
    free(v);
    return rc;
}

/* ---- JSON ---- */

static json_t *group_to_json(const struct summary_group *g, int v2)
{
    json_t *o = json_object(), *smp = json_array();
    if (!o || !smp) {
        json_decref(o);
        json_decref(smp);
        return NULL;
    }
    json_object_set_new(o, "api", json_string(g->api));
    json_object_set_new(o, "kernel", g->kernel ? json_string(g->kernel) : json_null());
    json_object_set_new(o, "count", json_integer((json_int_t)g->count));
    json_object_set_new(o, "min_ns", json_integer((json_int_t)g->min_ns));
    json_object_set_new(o, "max_ns", json_integer((json_int_t)g->max_ns));
    for (int q = 0; q < SUMMARY_NQ; q++)
        json_object_set_new(o, q_key[q], json_integer((json_int_t)g->q_ns[q]));
    if (v2)
        json_object_set_new(o, "total_ns", json_integer((json_int_t)g->total_ns));
    for (size_t i = 0; i < g->nsamples; i++)
        json_array_append_new(smp, json_integer((json_int_t)g->samples_ns[i]));
    json_object_set_new(o, "samples_ns", smp);
    return o;
}

static json_t *u64_array(const uint64_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

static json_t *steps_to_json(const struct summary_steps *st)
{
    json_t *o;
    if (!st->source)
        return json_null();
    o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "source", st->source, "how", st->how,
                  "count", (json_int_t)st->count, "p50_ns", (json_int_t)st->p50_ns, "p99_ns",
                  (json_int_t)st->p99_ns, "samples_ns", u64_array(st->samples_ns, st->nsamples));
    if (o && st->host_p50_ns)
        json_object_set_new(o, "host_p50_ns", json_integer((json_int_t)st->host_p50_ns));
    return o;
}

/* The run part of format 2 into @p o. */
static void run_to_json(json_t *o, const struct summary_run *r)
{
    json_t *high = json_array();
    for (size_t i = 0; i < r->nhigh; i++)
        json_array_append_new(high, json_string(r->high[i]));
    json_object_set_new(o, "window_ns", json_integer((json_int_t)r->window_ns));
    json_object_set_new(o, "launches", json_integer((json_int_t)r->launches));
    json_object_set_new(o, "steps", steps_to_json(&r->steps));
    if (r->gpu_steps.source)
        json_object_set_new(o, "gpu_steps", steps_to_json(&r->gpu_steps));
    json_object_set_new(o, "gpu", r->gpu_source
                                      ? json_pack("{s:s, s:f, s:I}", "source", r->gpu_source,
                                                  "idle_fraction", r->gpu_idle, "covered_ns",
                                                  (json_int_t)r->gpu_covered_ns)
                                      : json_null());
    json_object_set_new(o, "high_findings", high);
}

json_t *summary_to_json(const struct summary *s)
{
    json_t *o = json_object(), *gs = json_array();
    if (!o || !gs) {
        json_decref(o);
        json_decref(gs);
        return NULL;
    }
    json_object_set_new(o, "format", json_string(SUMMARY_FORMAT));
    json_object_set_new(o, "version", json_integer(s->has_run ? 2 : 1));
    json_object_set_new(o, "source", json_string(s->source));
    if (s->has_run)
        run_to_json(o, &s->run);
    for (size_t i = 0; i < s->n; i++) {
        json_t *g = group_to_json(&s->groups[i], s->has_run);
        if (!g) {
            json_decref(o);
            json_decref(gs);
            return NULL;
        }
        json_array_append_new(gs, g);
    }
    json_object_set_new(o, "groups", gs);
    return o;
}

static int get_u64(json_t *o, const char *key, uint64_t *v)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_integer(x) || json_integer_value(x) < 0)
        return -1;
    *v = (uint64_t)json_integer_value(x);
    return 0;
}

static int samples_from_json(struct summary_group *g, json_t *a)
{
    size_t n = json_array_size(a);
    if (!json_is_array(a) || n == 0 || n > g->count)
        return -1;
    g->samples_ns = malloc(n * sizeof(uint64_t));
    if (!g->samples_ns)
        return -1;
    g->nsamples = n;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(a, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return -1;
        g->samples_ns[i] = (uint64_t)json_integer_value(x);
        if (i && g->samples_ns[i] < g->samples_ns[i - 1])
            return -1;
    }
    return 0;
}

/* @return 0, or -1 with @p what naming the bad field */
static int group_from_json(struct summary_group *g, json_t *o, int v2, const char **what)
{
    json_t *api = json_object_get(o, "api"), *k = json_object_get(o, "kernel");
    *what = "api";
    if (!json_is_string(api) || !(g->api = strdup(json_string_value(api))))
        return -1;
    *what = "kernel";
    if (k && !json_is_null(k) && (!json_is_string(k) || !(g->kernel = strdup(json_string_value(k)))))
        return -1;
    *what = "count";
    if (get_u64(o, "count", &g->count) < 0 || g->count == 0)
        return -1;
    *what = "min_ns/max_ns";
    if (get_u64(o, "min_ns", &g->min_ns) < 0 || get_u64(o, "max_ns", &g->max_ns) < 0)
        return -1;
    for (int q = 0; q < SUMMARY_NQ; q++) {
        *what = q_key[q];
        if (get_u64(o, q_key[q], &g->q_ns[q]) < 0)
            return -1;
    }
    *what = "total_ns";
    if (v2 && get_u64(o, "total_ns", &g->total_ns) < 0)
        return -1;
    *what = "samples_ns";
    return samples_from_json(g, json_object_get(o, "samples_ns"));
}

/* Ascending non-negative integers of array @p a into *v. @return 0 or -1 */
static int u64s_from_json(json_t *a, uint64_t **v, size_t *n)
{
    *n = json_array_size(a);
    if (!json_is_array(a) || !(*v = malloc((*n ? *n : 1) * sizeof(**v))))
        return -1;
    for (size_t i = 0; i < *n; i++) {
        json_t *x = json_array_get(a, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return -1;
        (*v)[i] = (uint64_t)json_integer_value(x);
        if (i && (*v)[i] < (*v)[i - 1])
            return -1;
    }
    return 0;
}

static int steps_from_json(struct summary_steps *st, json_t *o)
{
    json_t *src = json_object_get(o, "source"), *how = json_object_get(o, "how");
    if (json_is_null(o))
        return 0;
    if (!json_is_object(o) || !json_is_string(src) || !json_is_string(how) ||
        !(st->source = strdup(json_string_value(src))) ||
        !(st->how = strdup(json_string_value(how))) || get_u64(o, "count", &st->count) < 0 ||
        get_u64(o, "p50_ns", &st->p50_ns) < 0 || get_u64(o, "p99_ns", &st->p99_ns) < 0 ||
        u64s_from_json(json_object_get(o, "samples_ns"), &st->samples_ns, &st->nsamples) < 0)
        return -1;
    if (json_object_get(o, "host_p50_ns") && get_u64(o, "host_p50_ns", &st->host_p50_ns) < 0)
        return -1;
    return st->count == 0 || st->nsamples == 0 || st->nsamples > st->count ? -1 : 0;
}

static int gpu_from_json(struct summary_run *r, json_t *o)
{
    json_t *src = json_object_get(o, "source"), *idle = json_object_get(o, "idle_fraction");
    if (json_is_null(o))
        return 0;
    if (!json_is_object(o) || !json_is_string(src) || !json_is_number(idle) ||
        !(r->gpu_source = strdup(json_string_value(src))))
        return -1;
    r->gpu_idle = json_number_value(idle);
    if (json_object_get(o, "covered_ns") && get_u64(o, "covered_ns", &r->gpu_covered_ns) < 0)
        return -1;
    return r->gpu_idle >= 0 && r->gpu_idle <= 1 ? 0 : -1;
}

static int high_from_json(struct summary_run *r, json_t *a)
{
    if (!json_is_array(a) || !(r->high = calloc(json_array_size(a) + 1, sizeof(*r->high))))
        return -1;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        if (!json_is_string(x) || !(r->high[r->nhigh++] = strdup(json_string_value(x))))
            return -1;
    }
    return 0;
}

/* The run part of format 2. @return 0, or -1 with @p what naming the bad field */
static int run_from_json(struct summary_run *r, json_t *j, const char **what)
{
    *what = "window_ns";
    if (get_u64(j, "window_ns", &r->window_ns) < 0)
        return -1;
    *what = "launches";
    if (get_u64(j, "launches", &r->launches) < 0)
        return -1;
    *what = "steps";
    if (steps_from_json(&r->steps, json_object_get(j, "steps")) < 0)
        return -1;
    *what = "gpu_steps"; /* since issue 36; absent: the host's steps alone */
    json_t *gs = json_object_get(j, "gpu_steps");
    if (gs && steps_from_json(&r->gpu_steps, gs) < 0)
        return -1;
    *what = "gpu";
    if (gpu_from_json(r, json_object_get(j, "gpu")) < 0)
        return -1;
    *what = "high_findings";
    return high_from_json(r, json_object_get(j, "high_findings"));
}

int summary_from_json(json_t *j, const char *source, struct summary **out, struct cs_err *err)
{
    json_t *fmt = json_object_get(j, "format"), *ver = json_object_get(j, "version");
    json_t *gs = json_object_get(j, "groups");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), SUMMARY_FORMAT) != 0)
        return cs_err_set(err, CS_E_CORRUPT, "%s: not a cudaspy gate summary (no \"format\": \"%s\")",
                          source, SUMMARY_FORMAT);
    if (!json_is_integer(ver) || json_integer_value(ver) < SUMMARY_VERSION_MIN ||
        json_integer_value(ver) > SUMMARY_VERSION)
        return cs_err_set(err, CS_E_VERSION,
                          "%s: unsupported summary version %lld (this build reads %d to %d)",
                          source, json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL,
                          SUMMARY_VERSION_MIN, SUMMARY_VERSION);
    int v2 = json_integer_value(ver) >= 2;
    if (!json_is_array(gs))
        return cs_err_set(err, CS_E_CORRUPT, "%s: summary has no \"groups\" array", source);
    struct summary *s = summary_alloc(source, json_array_size(gs));
    const char *what = "";
    if (!s)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", source);
    if (v2 && run_from_json(&s->run, j, &what) < 0) {
        summary_free(s);
        return cs_err_set(err, CS_E_CORRUPT, "%s: bad or missing \"%s\"", source, what);
    }
    s->has_run = v2;
    for (size_t i = 0; i < json_array_size(gs); i++) {
        json_t *g = json_array_get(gs, i);
        what = "group";
        s->n++;
        if (!json_is_object(g) || group_from_json(&s->groups[i], g, v2, &what) < 0) {
            summary_free(s);
            return cs_err_set(err, CS_E_CORRUPT, "%s: groups[%zu]: bad or missing \"%s\"", source,
                              i, what);
        }
    }
    qsort(s->groups, s->n, sizeof(*s->groups), cmp_group);
    *out = s;
    return 0;
}

/* ---- loading either form ---- */

static int first_char(const char *path, int *c)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    int ch;
    while ((ch = fgetc(f)) == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
        ;
    fclose(f);
    *c = ch;
    return 0;
}

static int load_json_file(const char *path, struct summary **out, struct cs_err *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return cs_err_set(err, CS_E_CORRUPT, "%s: malformed summary JSON (line %d: %s)", path,
                          je.line, je.text);
    int rc = summary_from_json(j, path, out, err);
    json_decref(j);
    return rc;
}

int summary_load(const char *path, size_t max_samples, struct summary **out, struct cs_err *err)
{
    int c = EOF, rc = first_char(path, &c);
    if (rc < 0)
        return cs_err_set(err, rc, "%s: %s", path, cs_strerror(rc));
    if (c == '{')
        return load_json_file(path, out, err);
    struct cs_run *r = cs_run_new();
    if (!r)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", path);
    struct cs_err e2 = {{0}};
    rc = cs_run_open(r, path, &e2);
    if (rc < 0 && strncmp(e2.msg, path, strlen(path)) == 0)
        cs_err_set(err, rc, "%s", e2.msg);
    else if (rc < 0)
        cs_err_set(err, rc, "%s: %s", path, e2.msg[0] ? e2.msg : cs_strerror(rc));
    else
        rc = summary_from_run(r, path, max_samples, 0, out, err);
    cs_run_free(r);
    return rc;
}

const struct summary_group *summary_find(const struct summary *s, const char *api,
                                         const char *kernel)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct summary_group *g = &s->groups[i];
        if (strcmp(g->api, api) != 0)
            continue;
        if ((!kernel && !g->kernel) || (kernel && g->kernel && strcmp(kernel, g->kernel) == 0))
            return g;
    }
    return NULL;
}

void summary_free(struct summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->groups[i].api);
        free(s->groups[i].kernel);
        free(s->groups[i].samples_ns);
        free(s->groups[i].all_ns);
    }
    free(s->groups);
    free(s->source);
    free(s->run.steps.source);
    free(s->run.steps.how);
    free(s->run.steps.samples_ns);
    free(s->run.gpu_steps.source);
    free(s->run.gpu_steps.how);
    free(s->run.gpu_steps.samples_ns);
    free(s->run.gpu_source);
    for (size_t i = 0; i < s->run.nhigh; i++)
        free(s->run.high[i]);
    free(s->run.high);
    free(s);
}
