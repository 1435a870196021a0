/* rules/pyline.c: call sites, their latency and the GPU idle after them
 * (pyline.h). Reads the model, the feed's gaps and the GPU timelines; owns
 * the rows. The sentences a finding gets are built here; the text report
 * only prints them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "graphs.h"
#include "cudaspy/api.h"
#include "model/stats.h"
#include "pyline.h"

/* ---- rows ---- */

/* Row of site @p s, added when new. @return the row, M_NONE when out of memory */
static uint32_t row_get(struct pyline *p, struct m_hash *ix, uint32_t *cap,
                        const struct pystack_site *s, uint64_t ci)
{
    uint64_t key = pystack_site_hash(s);
    uint32_t r;

    while ((r = m_hash_get(ix, key)) != M_NONE && !pystack_site_eq(&p->row[r].site, s))
        key++; /* another site with the same hash: probe on */
    if (r != M_NONE)
        return r;
    if (p->nrow == *cap) {
        uint32_t c = *cap ? *cap * 2 : 64;
        struct pyline_row *q = realloc(p->row, c * sizeof(*q));
        if (q == NULL)
            return M_NONE;
        p->row = q;
        *cap = c;
    }
    memset(&p->row[p->nrow], 0, sizeof(p->row[0]));
    p->row[p->nrow].site = *s;
    p->row[p->nrow].call = ci;
    p->row[p->nrow].next_row = M_NONE;
    if (m_hash_put(ix, key, p->nrow) < 0)
        return M_NONE;
    return p->nrow++;
}

/* Latency per row: the rows' durations gathered by a counting sort, then
 * each slice sorted for its percentiles. */
static int row_stats(struct pyline *p, const struct model *m)
{
    uint64_t *off = calloc((size_t)p->nrow + 1, sizeof(*off)), *v, *pos;

    for (uint64_t k = 0; off && k < m->ncstack; k++)
        if (p->row_of[k] != M_NONE)
            off[p->row_of[k] + 1]++;
    if (off == NULL)
        return -ENOMEM;
    for (uint32_t r = 0; r < p->nrow; r++)
        off[r + 1] += off[r];
    v = malloc((off[p->nrow] + 1) * sizeof(*v));
    pos = malloc(((size_t)p->nrow + 1) * sizeof(*pos));
    if (v == NULL || pos == NULL) {
        free(off), free(v), free(pos);
        return -ENOMEM;
    }
    memcpy(pos, off, (size_t)p->nrow * sizeof(*pos));
    for (uint64_t k = 0; k < m->ncstack; k++)
        if (p->row_of[k] != M_NONE)
            v[pos[p->row_of[k]]++] = model_call_dur(m, m->cstack[k].call);
    for (uint32_t r = 0; r < p->nrow; r++) {
        struct stats_summary s;
        uint64_t n = off[r + 1] - off[r];
        stats_sort(v + off[r], n, NULL);
        stats_summarize(v + off[r], n, &s);
        p->row[r].calls = s.count;
        p->row[r].total_ns = s.total_ns;
        p->row[r].p50_ns = s.p50_ns;
        p->row[r].p99_ns = s.p99_ns;
        p->row[r].max_ns = s.max_ns;
    }
    free(off), free(v), free(pos);
    return 0;
}

/* Row of call @p ci, M_NONE when it has no stack. */
static uint32_t row_of_call(const struct pyline *p, const struct model *m, uint64_t ci)
{
    uint64_t k = M_FIRST_GE(struct m_cstack, m->cstack, call, 0, m->ncstack, ci);
    return k < m->ncstack && m->cstack[k].call == ci ? p->row_of[k] : M_NONE;
}

/* GPU idle after gap @p i's drain: measured where GPU activity covers it
 * (up to the next drain of the process), else the gap itself; *@p loop
 * gets whether it is in the loop, not the set-up before the first step
 * (struct step_setup): the findings' idle. */
static uint64_t gap_idle(struct pyline *p, const struct model *m, const struct feed *f,
                         const struct gpu_truth *g, uint64_t i, int *loop)
{
    const struct feed_gap *gp = &f->gap[i];
    uint32_t proc = m->thr[model_call(m, gp->drain_call).thr].proc;
    uint64_t idle = gp->t1_ns - gp->t0_ns, measured, until = UINT64_MAX;

    if (i + 1 < f->ngap && m->thr[model_call(m, gp[1].drain_call).thr].proc == proc)
        until = gp[1].t0_ns; /* the next drain: its idle is its own */
    if (gpu_idle_after(g, proc, gp->t0_ns, until, &measured)) {
        idle = measured;
        p->idle_measured = 1;
    }
    *loop = g->setup.proc != proc || gp->t0_ns >= g->setup.end_ns;
    return idle;
}

/* The loop's idle gaps by the Python sites sampled in them on the drain's
 * thread (rules/pyhost.h), for host_bound; nothing without samples. */
static int host_credit(struct pyline *p, const struct model *m, const struct feed *f,
                       const struct gpu_truth *g)
{
    if (m->npys == 0)
        return 0;
    if ((p->host = pyhost_new()) == NULL)
        return -ENOMEM;
    for (uint64_t i = 0; i < f->ngap; i++) {
        const struct feed_gap *gp = &f->gap[i];
        int loop;
        uint64_t idle = gap_idle(p, m, f, g, i, &loop);
        if (loop && pyhost_add(p->host, m, model_call(m, gp->drain_call).thr, gp->t0_ns, gp->t1_ns,
                               idle) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* GPU idle after each gap's drain, credited to the drain's site; for each
 * site, the enqueue site that ended most of it (a small map of pairs). */
static int gaps_credit(struct pyline *p, const struct model *m, const struct feed *f,
                       const struct gpu_truth *g)
{
    struct m_hash *pairs = m_hash_new();
    uint64_t *pair_ns = calloc(f->ngap + 1, sizeof(*pair_ns)), *best = NULL;
    uint32_t npair = 0;

    best = calloc((size_t)p->nrow + 1, sizeof(*best));
    if (pairs == NULL || pair_ns == NULL || best == NULL) {
        m_hash_free(pairs), free(pair_ns), free(best);
        return -ENOMEM;
    }
    for (uint64_t i = 0; i < f->ngap; i++) {
        const struct feed_gap *gp = &f->gap[i];
        uint32_t r = row_of_call(p, m, gp->drain_call), e, k;
        int loop; /* not in the set-up before the first step: the findings' */
        uint64_t idle = gap_idle(p, m, f, g, i, &loop);
        p->idle_ns += idle;
        p->loop_idle_ns += loop ? idle : 0;
        p->starve_ns += gp->sleep_worker_ns;
        if (r == M_NONE)
            continue;
        p->row[r].idle_ns += idle;
        p->row[r].loop_idle_ns += loop ? idle : 0;
        p->row[r].loop_gaps += loop;
        p->row[r].starve_ns += gp->sleep_worker_ns;
        p->row[r].gaps++;
        if ((e = row_of_call(p, m, gp->next_call)) == M_NONE)
            continue;
        if ((k = m_hash_get(pairs, (uint64_t)r << 32 | e)) == M_NONE) {
            k = npair++;
            if (m_hash_put(pairs, (uint64_t)r << 32 | e, k) < 0)
                break;
        }
        pair_ns[k] += (loop ? idle : 0) + 1; /* the set-up's gaps by count only */
        if (pair_ns[k] > best[r]) {
            best[r] = pair_ns[k];
            p->row[r].next_row = e;
        }
    }
    m_hash_free(pairs), free(pair_ns), free(best);
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    const struct pyline_row *x = a, *y = b;

    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return x->call < y->call ? -1 : x->call > y->call;
}

/* Sort the rows by total time; row_of and next_row follow. */
static int rows_sort(struct pyline *p, const struct model *m)
{
    uint32_t *to = malloc(((size_t)p->nrow + 1) * sizeof(*to));

    if (to == NULL)
        return -ENOMEM;
    for (uint32_t r = 0; r < p->nrow; r++)
        p->row[r].id = r;
    qsort(p->row, p->nrow, sizeof(*p->row), cmp_row);
    for (uint32_t r = 0; r < p->nrow; r++)
        to[p->row[r].id] = r;
    for (uint32_t r = 0; r < p->nrow; r++)
        if (p->row[r].next_row != M_NONE)
            p->row[r].next_row = to[p->row[r].next_row];
    for (uint64_t k = 0; k < m->ncstack; k++)
        if (p->row_of[k] != M_NONE)
            p->row_of[k] = to[p->row_of[k]];
    free(to);
    return 0;
}

int pyline_compute(struct pyline *p, const struct model *m, const struct feed *f,
                   const struct gpu_truth *g)
{
    struct seen {
        uint64_t key; /* run << 32 | stack id, plus 1 (0 = empty) */
        uint32_t row;
    } cache[256] = {{0, 0}};
    struct m_hash *ix;
    uint32_t cap = 0;
    int rc = 0;

    memset(p, 0, sizeof(*p));
    if (m->ncstack == 0)
        return host_credit(p, m, f, g);
    ix = m_hash_new();
    p->row_of = malloc(m->ncstack * sizeof(*p->row_of));
    if (ix == NULL || p->row_of == NULL) {
        m_hash_free(ix);
        return -ENOMEM;
    }
    for (uint64_t k = 0; k < m->ncstack && rc == 0; k++) {
        uint64_t ci = m->cstack[k].call;
        uint32_t *r = &p->row_of[k];
        *r = M_NONE;
        if (model_call(m, ci).flags & CS_CF_NESTED)
            continue;
        /* a site depends on the run and stack id alone: hot stacks hit the cache */
        uint64_t key = (uint64_t)model_proc_of_call(m, ci)->run << 32 | m->cstack[k].stack_id;
        struct seen *c = &cache[(key * 0x9e3779b97f4a7c15ull) >> 56];
        if (c->key == key + 1) {
            *r = c->row;
        } else {
            struct pystack_site s;
            pystack_site(m, ci, &s);
            if ((*r = row_get(p, ix, &cap, &s, ci)) == M_NONE) {
                rc = -ENOMEM;
                break;
            }
            *c = (struct seen){key + 1, *r};
        }
        if (model_call_dur(m, ci) > model_call_dur(m, p->row[*r].call))
            p->row[*r].call = ci;
    }
    m_hash_free(ix);
    if (rc == 0)
        rc = row_stats(p, m);
    if (rc == 0)
        rc = gaps_credit(p, m, f, g);
    if (rc == 0)
        rc = rows_sort(p, m);
    if (rc == 0)
        rc = host_credit(p, m, f, g);
    return rc;
}

/* ---- JSON ---- */

/* Display name of call @p c's API, in a static buffer: one name per
 * statement. */
static const char *api_name(const struct model *m, uint64_t ci)
{
    static char buf[96];
    const struct m_call c = model_call(m, ci);

    return cs_api_display((enum cs_api)c.api, (enum cs_variant)c.variant, buf, sizeof(buf));
}

/* The site's frame with @p extra's keys after it. */
static json_t *site_obj(const struct model *m, const struct pyline_row *r)
{
    char buf[512];
    json_t *o = pystack_site_json(m, &r->site);

    json_object_set_new(o, "text", json_string(pystack_site_text(m, &r->site, buf, sizeof(buf))));
    return o;
}

json_t *pyline_json(const struct pyline *p, const struct model *m)
{
    json_t *rows = json_array();

    for (uint32_t i = 0; i < p->nrow; i++) {
        const struct pyline_row *r = &p->row[i];
        json_t *o = site_obj(m, r);
        json_object_set_new(o, "run", json_integer(r->site.run)); /* sites are per run file */
        json_object_set_new(o, "api", json_string(api_name(m, r->call)));
        json_object_set_new(o, "calls", json_integer((json_int_t)r->calls));
        json_object_set_new(o, "total_ns", json_integer((json_int_t)r->total_ns));
        json_object_set_new(o, "p50_ns", json_integer((json_int_t)r->p50_ns));
        json_object_set_new(o, "p99_ns", json_integer((json_int_t)r->p99_ns));
        json_object_set_new(o, "max_ns", json_integer((json_int_t)r->max_ns));
        json_object_set_new(o, "idle_after_ns", json_integer((json_int_t)r->idle_ns));
        json_object_set_new(o, "next_enqueue", r->next_row == M_NONE
                                                   ? json_null()
                                                   : site_obj(m, &p->row[r->next_row]));
        json_object_set_new(o, "via", pystack_via_json(m, r->call, PYSTACK_CALLERS));
        json_object_set_new(o, "callers", pystack_callers_json(m, r->call, PYSTACK_CALLERS));
        json_object_set_new(o, "stack", pystack_stack_json(m, r->call)); /* mixed, whole */
        json_array_append_new(rows, o);
    }
    return json_pack("{s:s, s:I, s:I, s:o}", "idle_source",
                     p->idle_measured ? "gpu" : "host_lower_bound", "calls",
                     (json_int_t)m->ncstack, "idle_ns", (json_int_t)p->idle_ns, "rows", rows);
}

/* ---- findings ---- */

/* W_IDLE: the GPU idle after drains from the first step on (the findings
 * leave the set-up out); W_STARVE: of it, asleep for the pipeline. */
enum weigh { W_NONE, W_IDLE, W_STARVE, W_PAGEABLE, W_ALLOC, W_LAUNCH, W_API, W_GRAPH };

/* Weighed by the GPU idle after drains, not by time in calls. */
static int by_gaps(enum weigh w)
{
    return w == W_IDLE || w == W_STARVE;
}

/* What a finding's share is of: the GPU idle after drains, or the time in
 * the calls it is about. */
static enum weigh weigh_of(const char *cause, const struct pyline *p)
{
    if (!strcmp(cause, "data_pipeline_starvation"))
        return p->starve_ns ? W_STARVE : W_IDLE;
    if (!strcmp(cause, "sync_per_iteration") || !strcmp(cause, "host_bound"))
        return W_IDLE;
    if (!strcmp(cause, "pageable_memcpy"))
        return W_PAGEABLE;
    if (!strcmp(cause, "alloc_churn"))
        return W_ALLOC;
    if (!strcmp(cause, "launch_bound"))
        return W_LAUNCH;
    if (!strcmp(cause, "graph_recapture"))
        return W_GRAPH;
    if (!strcmp(cause, "gpu_bound"))
        return W_NONE;
    return W_API;
}

struct filter {
    enum weigh w;
    enum cs_api api; /* W_API: CS_API_NONE = every call */
    enum cs_variant variant;
    uint64_t min_ns; /* outlier causes: the API's p99 */
};

static int call_in(const struct filter *fl, const struct model *m, uint64_t ci)
{
    const struct m_call cv = model_call(m, ci), *c = &cv;
    const struct cs_api_info *in = &cs_api_table[c->api];

    if (c->flags & CS_CF_NESTED)
        return 0;
    switch (fl->w) {
    case W_PAGEABLE:
        return in->family == CS_FAM_COPY && (c->flags & CS_CF_PAGEABLE);
    case W_ALLOC:
        return in->family == CS_FAM_ALLOC || in->family == CS_FAM_FREE;
    case W_LAUNCH:
        return in->family == CS_FAM_LAUNCH;
    case W_GRAPH: /* the capture's begin names the captured code's line */
        return in->family == CS_FAM_GRAPH || graphs_is_capture_begin(c->api);
    case W_API:
        return (fl->api == CS_API_NONE || (c->api == fl->api && c->variant == fl->variant)) &&
               model_dur(c) >= fl->min_ns;
    default:
        return 0;
    }
}

static int is_outlier_cause(const char *cause)
{
    return !strcmp(cause, "cpu_contention_tree") || !strcmp(cause, "cpu_contention_external") ||
           !strcmp(cause, "io_wait") || !strcmp(cause, "page_alloc_pressure");
}

/* Call @p ci's weight for filter @p fl: its duration; a capture's begin,
 * for graph_recapture, weighs from its entry to its end's exit (the code it
 * captured ran in between: that line is where the graph was built). */
static uint64_t call_weight(const struct model *m, const struct filter *fl, uint64_t ci)
{
    const struct m_call cv = model_call(m, ci), *c = &cv;
    const struct m_thread *th = &m->thr[c->thr];

    if (fl->w != W_GRAPH || !graphs_is_capture_begin(c->api))
        return model_dur(c);
    for (uint64_t i = ci + 1; i < th->first_call + th->ncalls; i++) {
        const struct m_call ev = model_call(m, i), *e = &ev;
        if (!(e->flags & CS_CF_NESTED) && cs_api_table[e->api].family == CS_FAM_CAPTURE)
            return graphs_is_capture_begin(e->api) ? model_dur(c) : e->t_exit_ns - c->t_enter_ns;
    }
    return model_dur(c);
}

/* Per-row weight of one finding: over the rows (idle) or the stacked calls
 * that pass its filter (time); *total gets the whole, stacked or not. */
static void weigh_rows(const struct pyline *p, const struct model *m, const struct filter *fl,
                       uint64_t *w, uint64_t *cnt, uint64_t *rep, uint64_t *total)
{
    *total = 0;
    if (by_gaps(fl->w)) {
        for (uint32_t r = 0; r < p->nrow; r++) {
            const struct pyline_row *row = &p->row[r];
            w[r] = fl->w == W_IDLE ? row->loop_idle_ns : row->starve_ns;
            cnt[r] = fl->w == W_IDLE ? row->loop_gaps : row->gaps;
            rep[r] = row->call;
        }
        *total = fl->w == W_IDLE ? p->loop_idle_ns : p->starve_ns;
        return;
    }
    for (uint64_t i = 0; i < m->ncall; i++)
        if (call_in(fl, m, i))
            *total += call_weight(m, fl, i);
    for (uint64_t k = 0; k < m->ncstack; k++) {
        uint64_t ci = m->cstack[k].call;
        uint32_t r = p->row_of[k];
        if (r == M_NONE || !call_in(fl, m, ci))
            continue;
        if (cnt[r] == 0 || call_weight(m, fl, ci) > call_weight(m, fl, rep[r]))
            rep[r] = ci;
        w[r] += call_weight(m, fl, ci);
        cnt[r]++;
    }
}

/* One named site of a finding: its frame, weight, share and sentence. */
static json_t *site_json(const struct pyline *p, const struct model *m, const struct filter *fl,
                         uint32_t r, uint64_t w, uint64_t cnt, uint64_t rep, uint64_t total)
{
    const struct pyline_row *row = &p->row[r];
    char text[1024], site[512], next[512], d[32];
    double share = total ? (double)w / (double)total : 0;
    json_t *o = pystack_site_json(m, &row->site);

    pystack_site_text(m, &row->site, site, sizeof(site));
    fmt_ns(d, sizeof(d), w);
    if (by_gaps(fl->w)) {
        int n = snprintf(text, sizeof(text), "%s of GPU idle%s after the %s at %s (%.0f %%)", d,
                         fl->w == W_STARVE ? " waiting for the data pipeline" : "",
                         api_name(m, rep), site, share * 100);
        if (row->next_row != M_NONE && n > 0 && (size_t)n < sizeof(text))
            snprintf(text + n, sizeof(text) - (size_t)n,
                     "; the next GPU work was enqueued at %s",
                     pystack_site_text(m, &p->row[row->next_row].site, next, sizeof(next)));
    } else if (fl->w == W_GRAPH && graphs_is_capture_begin(model_call(m, rep).api)) {
        snprintf(text, sizeof(text), "%s capturing, from %s to its end, at %s (%.0f %%)", d,
                 api_name(m, rep), site, share * 100);
    } else {
        snprintf(text, sizeof(text), "%s in %s at %s (%.0f %%)", d, api_name(m, rep), site,
                 share * 100);
    }
    json_object_set_new(o, "ns", json_integer((json_int_t)w));
    json_object_set_new(o, "share", json_real(share));
    json_object_set_new(o, "calls", json_integer((json_int_t)cnt));
    json_object_set_new(o, "api", json_string(api_name(m, rep)));
    json_object_set_new(o, "text", json_string(text));
    json_object_set_new(o, "via", pystack_via_json(m, rep, PYSTACK_CALLERS));
    json_object_set_new(o, "callers", pystack_callers_json(m, rep, PYSTACK_CALLERS));
    if (by_gaps(fl->w) && row->next_row != M_NONE)
        json_object_set_new(o, "next_enqueue", site_obj(m, &p->row[row->next_row]));
    return o;
}

json_t *pyline_host_sites(const struct pyline *p, const struct model *m)
{
    if (p->host == NULL || pyhost_samples(p->host) == 0)
        return NULL;
    return pyhost_sites_json(p->host, m, p->loop_idle_ns, PYLINE_SITES, "GPU idle");
}

/* The PYLINE_SITES heaviest rows of one finding, as "python_sites". */
static void annotate_one(const struct pyline *p, const struct model *m, json_t *c, uint64_t *w,
                         uint64_t *cnt, uint64_t *rep)
{
    const char *cause = json_string_value(json_object_get(c, "cause"));
    const char *api = json_string_value(json_object_get(c, "api"));
    struct filter fl = {weigh_of(cause ? cause : "", p), CS_API_NONE, CS_VAR_LEGACY, 0};
    uint64_t total;
    json_t *sites;

    if (fl.w == W_NONE || json_object_get(c, "python_sites"))
        return; /* none to name, or the rule that made it named them */
    if (!strcmp(cause ? cause : "", "host_bound") && (sites = pyline_host_sites(p, m))) {
        if (json_array_size(sites)) /* the lines it ran, not the sync before them */
            json_object_set_new(c, "python_sites", sites);
        else
            json_decref(sites);
        return;
    }
    if (fl.w == W_API && api && *api) {
        fl.api = cs_api_lookup(api, &fl.variant);
        if (is_outlier_cause(cause))
            fl.min_ns = (uint64_t)json_integer_value(json_object_get(c, "p99_ns"));
    }
    memset(w, 0, p->nrow * sizeof(*w));
    memset(cnt, 0, p->nrow * sizeof(*cnt));
    weigh_rows(p, m, &fl, w, cnt, rep, &total);
    sites = json_array();
    for (int k = 0; k < PYLINE_SITES; k++) {
        uint32_t best = M_NONE;
        for (uint32_t r = 0; r < p->nrow; r++)
            if (w[r] && (best == M_NONE || w[r] > w[best]))
                best = r;
        if (best == M_NONE || (k > 0 && w[best] * 100 < total))
            break; /* under 1 %: not worth a line once one is named */
        json_array_append_new(sites, site_json(p, m, &fl, best, w[best], cnt[best], rep[best],
                                               total));
        w[best] = 0;
    }
    if (json_array_size(sites))
        json_object_set_new(c, "python_sites", sites);
    else
        json_decref(sites);
}

void pyline_annotate(const struct pyline *p, const struct model *m, json_t *chains)
{
    uint64_t *w = calloc((size_t)p->nrow + 1, 3 * sizeof(*w));
    json_t *c;
    size_t i;

    if ((p->nrow == 0 && p->host == NULL) || w == NULL) {
        free(w);
        return;
    }
    json_array_foreach(chains, i, c)
        annotate_one(p, m, c, w, w + p->nrow + 1, w + 2 * ((size_t)p->nrow + 1));
    free(w);
}

void pyline_exit(struct pyline *p)
{
    pyhost_free(p->host);
    free(p->row);
    free(p->row_of);
    memset(p, 0, sizeof(*p));
}
