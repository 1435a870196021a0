/* rules/graphs.c: CUDA graph builds and how often what each made was
 * launched (graphs.h). Reads the model's calls; owns the builds. Handles
 * are the program's: an executable graph destroyed and made again may get
 * the same address, so a launch counts for the latest build of its handle
 * in its process. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "cudaspy/grow.h"
#include "graphs.h"
#include "model/pystack.h"

int graphs_is_capture_begin(unsigned api)
{
    return api == CS_API_cuStreamBeginCapture_v2 || api == CS_API_cudaStreamBeginCapture;
}

static int is_capture_end(unsigned api)
{
    return api == CS_API_cuStreamEndCapture || api == CS_API_cudaStreamEndCapture;
}

/* Makes (or remakes, an update) an executable graph; its handle is aux. */
static int is_inst(unsigned api)
{
    return cs_api_table[api].family == CS_FAM_GRAPH && api != CS_API_cuGraphUpload &&
           api != CS_API_cudaGraphUpload;
}

static int is_launch(unsigned api)
{
    return api == CS_API_cuGraphLaunch || api == CS_API_cudaGraphLaunch;
}

/* Any API that builds or launches a graph: without one the passes that
 * look for them over every call find nothing. */
static int is_graph_api(unsigned api)
{
    return graphs_is_capture_begin(api) || is_capture_end(api) || is_inst(api) || is_launch(api);
}

/* Outermost calls that succeeded (a runtime call's driver call is nested
 * in it or folded into it). */
static int counts(const struct m_call *c)
{
    return !(c->flags & (CS_CF_NESTED | CS_CF_ERROR));
}

static int push(struct graph_builds *gb, size_t *cap, const struct graph_build *b)
{
    if (cs_grow((void **)&gb->b, cap, gb->n + 1, sizeof(*gb->b)) < 0)
        return -ENOMEM;
    gb->b[gb->n++] = *b;
    return 0;
}

/* Thread @p t's builds: a capture takes the next instantiation on the
 * thread (what torch and the samples do: capture, then instantiate); an
 * instantiation or update without a capture before it is a build alone. */
static int thread_builds(const struct model *m, uint32_t t, struct graph_builds *gb, size_t *cap)
{
    const struct m_thread *th = &m->thr[t];
    struct graph_build cur = {0};
    int state = 0, rc = 0; /* 0 none, 1 capturing, 2 captured: waiting for its instantiation */

    for (uint64_t i = th->first_call; i < th->first_call + th->ncalls && rc == 0; i++) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        if (!counts(c))
            continue;
        if (graphs_is_capture_begin(c->api)) {
            if (state)
                rc = push(gb, cap, &cur); /* a capture never instantiated */
            cur = (struct graph_build){.t0_ns = c->t_enter_ns, .t1_ns = c->t_exit_ns,
                                       .capture = i, .inst = M_CALL_NONE, .thr = t};
            state = 1;
        } else if (is_capture_end(c->api) && state == 1) {
            cur.t1_ns = c->t_exit_ns;
            cur.capture_ns = cur.t1_ns - cur.t0_ns;
            state = 2;
        } else if (is_inst(c->api) && state == 2) {
            cur.inst = i;
            cur.t1_ns = c->t_exit_ns;
            rc = push(gb, cap, &cur);
            state = 0;
        } else if (is_inst(c->api)) {
            struct graph_build b = {.t0_ns = c->t_enter_ns, .t1_ns = c->t_exit_ns,
                                    .capture = M_CALL_NONE, .inst = i, .thr = t};
            rc = push(gb, cap, &b);
        }
    }
    if (state && rc == 0)
        rc = push(gb, cap, &cur);
    return rc;
}

/* A build's executable graph made, or a launch of one. */
struct gev {
    uint32_t proc;
    uint64_t handle, t_ns;
    size_t build; /* SIZE_MAX: a launch */
};

static int cmp_gev(const void *a, const void *b)
{
    const struct gev *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->handle != y->handle)
        return x->handle < y->handle ? -1 : 1;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

/* Each launch counts for the latest build of its handle before it. */
static int count_launches(const struct model *m, struct graph_builds *gb)
{
    size_t n = gb->n, k = 0, cur = SIZE_MAX;
    struct gev *ev;

    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call c = model_call(m, i);
        n += is_launch(c.api) && counts(&c);
    }
    if ((ev = malloc((n + 1) * sizeof(*ev))) == NULL)
        return -ENOMEM;
    for (size_t b = 0; b < gb->n; b++) {
        if (gb->b[b].inst != M_CALL_NONE) {
            const struct m_call c = model_call(m, gb->b[b].inst);
            ev[k++] = (struct gev){m->thr[c.thr].proc, model_graph_exec(&c), c.t_exit_ns, b};
        }
    }
    for (uint64_t i = 0; i < m->ncall; i++) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        if (is_launch(c->api) && counts(c))
            ev[k++] = (struct gev){m->thr[c->thr].proc, model_graph_exec(c), c->t_enter_ns,
                                   SIZE_MAX};
    }
    qsort(ev, k, sizeof(*ev), cmp_gev);
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && (ev[i].proc != ev[i - 1].proc || ev[i].handle != ev[i - 1].handle))
            cur = SIZE_MAX;
        if (ev[i].build != SIZE_MAX)
            cur = ev[i].build;
        else if (cur != SIZE_MAX)
            gb->b[cur].launches++;
    }
    for (size_t b = 0; b < gb->n; b++)
        gb->b[b].is_amortised = gb->b[b].launches >= GRAPHS_AMORTISED;
    free(ev);
    return 0;
}

/* ---- the stretches (struct graph_span) ---- */

static int span_push(struct graph_builds *gb, size_t *cap, uint64_t t0, uint64_t t1, uint32_t t)
{
    struct graph_span *p = gb->ns > gb->sfirst[t] ? &gb->s[gb->ns - 1] : NULL;

    if (p && t0 <= p->t1_ns) { /* overlaps or touches the one before: one stretch */
        p->t1_ns = t1 > p->t1_ns ? t1 : p->t1_ns;
        return 0;
    }
    if (cs_grow((void **)&gb->s, cap, gb->ns + 1, sizeof(*gb->s)) < 0)
        return -ENOMEM;
    gb->s[gb->ns++] = (struct graph_span){.t0_ns = t0, .t1_ns = t1, .thr = t};
    return 0;
}

/* Thread @p t's builds from *@p bi that start before @p before, into gb->s. */
static int builds_before(struct graph_builds *gb, size_t *cap, uint32_t t, uint64_t *bi,
                         uint64_t before)
{
    int rc = 0;

    for (; *bi < gb->first[t + 1] && gb->b[*bi].t0_ns < before && rc == 0; (*bi)++)
        rc = span_push(gb, cap, gb->b[*bi].t0_ns, gb->b[*bi].t1_ns, t);
    return rc;
}

struct other_sample {
    const struct model *m;
    int seen;
};

static void other_sample(void *arg, const struct m_pysample *smp)
{
    struct other_sample *o = arg;

    o->seen |= pystack_ref_role(o->m, pystack_ref_of_sample(o->m, smp)) != PYSTACK_ROLE_GRAPHS;
}

/* Did thread @p t run other code than torch's graph code in [@p t0, @p t1),
 * as its Python samples there show? */
static int ran_other(const struct model *m, uint32_t t, uint64_t t0, uint64_t t1)
{
    struct other_sample o = {m, 0};

    pystack_samples_in(m, t, t0, t1, other_sample, &o);
    return o.seen;
}

/* pystack_ref_graph_key() of the stacks met last (a loop's calls repeat a
 * few stacks), direct-mapped by stack id. */
#define KEY_CACHE 64

struct key_cache {
    struct pystack_ref ref[KEY_CACHE];
    uint64_t key[KEY_CACHE];
};

static uint64_t graph_key(const struct model *m, struct key_cache *kc, struct pystack_ref ref)
{
    unsigned h = (ref.id * 2654435761u + ref.run) % KEY_CACHE;

    if (kc->ref[h].id != ref.id || kc->ref[h].run != ref.run) {
        kc->ref[h] = ref;
        kc->key[h] = pystack_ref_graph_key(m, ref);
    }
    return kc->key[h];
}

/* Thread @p t's stretches of torch's graph code, merged with its builds
 * (both in time order) into gb->s. A stretch runs from a call whose stack
 * is in that code over the next ones in the same run of it (the same
 * pystack_ref_graph_key) until a call with another stack, or a sample of
 * other code between two calls, says the thread left it. */
static int thread_spans(const struct model *m, uint32_t t, struct graph_builds *gb, size_t *cap,
                        struct key_cache *kc)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t bi = gb->first[t], c0 = 0, c1 = 0, key = 0;
    uint64_t end = m->ncstack ? th->first_call + th->ncalls : 0; /* no stacks: no stretch */
    int rc = 0;

    for (uint64_t i = th->first_call; i < end && rc == 0; i++) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        struct pystack_ref ref = pystack_ref_of_call(m, i);
        uint64_t k;
        if ((c->flags & CS_CF_NESTED) || ref.id == 0)
            continue;
        k = graph_key(m, kc, ref);
        if (key && k == key && !ran_other(m, t, c1, c->t_enter_ns)) {
            c1 = c->t_exit_ns;
            continue;
        }
        if (key) { /* the stretch ended */
            rc = builds_before(gb, cap, t, &bi, c0);
            rc = rc ? rc : span_push(gb, cap, c0, c1, t);
        }
        key = k, c0 = c->t_enter_ns, c1 = c->t_exit_ns;
    }
    if (key && rc == 0) {
        rc = builds_before(gb, cap, t, &bi, c0);
        rc = rc ? rc : span_push(gb, cap, c0, c1, t);
    }
    return rc ? rc : builds_before(gb, cap, t, &bi, UINT64_MAX);
}

/* Each stretch's flags from the builds inside it, else from the next. */
static void spans_flag(struct graph_builds *gb, uint32_t t)
{
    uint64_t bi = gb->first[t], bend = gb->first[t + 1];

    for (uint64_t i = gb->sfirst[t]; i < gb->sfirst[t + 1]; i++) {
        struct graph_span *s = &gb->s[i];
        int all = 1;
        while (bi < bend && gb->b[bi].t0_ns < s->t0_ns)
            bi++;
        for (; bi < bend && gb->b[bi].t0_ns < s->t1_ns; bi++)
            s->has_build = 1, all &= gb->b[bi].is_amortised;
        s->is_amortised = s->has_build ? (uint8_t)all : bi < bend && gb->b[bi].is_amortised;
    }
}

static int spans(const struct model *m, struct graph_builds *gb)
{
    struct key_cache *kc = calloc(1, sizeof(*kc)); /* ids are >= 1: empty slots miss */
    size_t cap = 0;
    int rc = 0;

    gb->sfirst = malloc((m->nthr + 1) * sizeof(*gb->sfirst));
    if (kc == NULL || gb->sfirst == NULL) {
        free(kc);
        return -ENOMEM;
    }
    for (uint32_t t = 0; t < m->nthr && rc == 0; t++) {
        gb->sfirst[t] = gb->ns;
        rc = thread_spans(m, t, gb, &cap, kc);
    }
    free(kc);
    gb->sfirst[m->nthr] = gb->ns;
    for (uint32_t t = 0; t < m->nthr && rc == 0; t++)
        spans_flag(gb, t);
    return rc;
}

int graphs_builds(const struct model *m, struct graph_builds *gb)
{
    size_t cap = 0;
    int rc = 0, any = model_has_api_where(m, is_graph_api);

    memset(gb, 0, sizeof(*gb));
    if ((gb->first = malloc((m->nthr + 1) * sizeof(*gb->first))) == NULL)
        return -ENOMEM;
    for (uint32_t t = 0; t < m->nthr && rc == 0; t++) {
        gb->first[t] = gb->n;
        rc = any ? thread_builds(m, t, gb, &cap) : 0;
    }
    gb->first[m->nthr] = gb->n;
    if (rc == 0 && any)
        rc = count_launches(m, gb);
    if (rc == 0)
        rc = spans(m, gb);
    if (rc < 0)
        graphs_exit(gb);
    return rc;
}

static int is_kernel_launch(const struct m_call *c)
{
    return cs_api_table[c->api].family == CS_FAM_LAUNCH && model_name_id(c) != 0 &&
           !(c->flags & CS_CF_NESTED);
}

#define WARMUP_MAX 4096 /* captured launches compared at most */

size_t graphs_warmup(const struct model *m, const struct graph_builds *gb, size_t bi,
                     uint64_t *first)
{
    const struct graph_build *b = &gb->b[bi];
    const struct m_thread *th = &m->thr[b->thr];
    uint64_t end = b->t0_ns + b->capture_ns, floor = th->first_call;
    uint32_t names[WARMUP_MAX];
    size_t n = 0, k;

    if (b->capture == M_CALL_NONE)
        return 0;
    for (uint64_t i = b->capture + 1; i < th->first_call + th->ncalls && n < WARMUP_MAX; i++) {
        const struct m_call c = model_call(m, i);
        if (c.t_enter_ns >= end)
            break;
        if (is_kernel_launch(&c) && (c.flags & CS_CF_CAPTURING))
            names[n++] = model_name_id(&c);
    }
    if (bi > gb->first[b->thr]) { /* not past the thread's previous build */
        const struct graph_build *p = &gb->b[bi - 1];
        floor = p->inst != M_CALL_NONE ? p->inst + 1 : p->capture + 1;
    }
    k = n;
    for (uint64_t i = b->capture; k > 0 && i-- > floor;) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        if (!is_kernel_launch(c) || (c->flags & CS_CF_CAPTURING))
            continue;
        if (model_name_id(c) != names[k - 1])
            return 0;
        if (--k == 0)
            *first = i;
    }
    return k == 0 ? n : 0;
}

void graphs_exit(struct graph_builds *gb)
{
    free(gb->b);
    free(gb->first);
    free(gb->s);
    free(gb->sfirst);
    memset(gb, 0, sizeof(*gb));
}
