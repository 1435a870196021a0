/* model/steps.c: finds the program's steps (steps.h). An NVTX range names
 * them when the user has one that tiles the active window; otherwise they
 * are inferred from the busiest CUDA thread's calls: each distinct call
 * (API and kernel name) is a candidate anchor, the stretch of calls between
 * two of its occurrences a segment, and the anchor's period the fewest
 * segments after which the sequence of segments repeats (1 for a call made
 * once a step, 2 for one made twice at different places in the step). Of
 * the anchors about as regular in time as the most regular one, the one
 * that explains the most steps, over most of the window, wins; a
 * synchronising call wins a tie, being where a step usually ends. */
#include "steps.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "procs.h"
#include "stats.h"

#define STEPS_MIN 3          /* fewer occurrences than this are not a step */
#define STEPS_CANDIDATES 16  /* most frequent calls tried as anchors */
#define STEPS_MAX_PERIOD 8   /* segments an anchor may repeat after */
#define STEPS_MATCH 0.8      /* share of segments that must repeat */
#define STEPS_SPAN 0.5       /* share of the window from their first to its end the
                                steps must span (a set-up may come before) */
#define STEPS_SPAN_MIN 0.1   /* and of the whole window */
#define STEPS_CV 0.5         /* step time cv always regular enough */

/* ---- shared ---- */

static int fill_steps(struct steps *out, const uint64_t *t, size_t nt, uint32_t thr,
                      const uint64_t *end)
{
    size_t n = end ? nt : nt - 1;
    double sum = 0, sq = 0;

    out->s = calloc(n ? n : 1, sizeof(*out->s));
    if (out->s == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct m_step *s = &out->s[i];
        s->t_start_ns = t[i];
        s->t_end_ns = end ? end[i] : t[i + 1];
        s->thr = thr;
        sum += (double)(s->t_end_ns - s->t_start_ns);
    }
    out->n = n;
    out->thr = thr;
    for (size_t i = 0; i < n; i++) {
        double d = (double)(out->s[i].t_end_ns - out->s[i].t_start_ns) - sum / (double)n;
        sq += d * d;
    }
    out->cv = n && sum > 0 ? sqrt(sq / (double)n) / (sum / (double)n) : 0;
    return 0;
}

static const char *run_string(const struct model *m, uint32_t thr, uint32_t id)
{
    const char *s;

    if (id == 0)
        return NULL;
    s = cs_run_string(m->runs[m->proc[m->thr[thr].proc].run].run, id);
    return s;
}

/* ---- NVTX ---- */

/* One (thread, name, domain) of top-level ranges. */
struct range_group {
    uint64_t first;  /* index in model.nvtx of the first of them */
    size_t count;
    uint64_t covered_ns, lo_ns, hi_ns;
    uint32_t thr, name_id, domain_id;
    int overlap;     /* one began before another ended (start/end ranges may) */
};

static int in_window(const struct steps_opts *o, uint64_t t0, uint64_t t1)
{
    return t0 >= o->win_lo_ns && t1 <= o->win_hi_ns;
}

/* A range counts when it overlaps the window: the active window begins at
 * the first CUDA call, inside the first step's range. */
static int overlaps(const struct steps_opts *o, const struct m_nvtx *r)
{
    return r->t_start_ns < o->win_hi_ns && r->t_end_ns > o->win_lo_ns;
}

/* A closed, named range; at the top level unless the user named it. */
static int range_step(const struct m_nvtx *r, const struct steps_opts *o)
{
    return (r->depth == 0 || o->want) && !(r->flags & (CS_NF_MARK | CS_NF_OPEN)) &&
           r->name_id != 0;
}

/* Group the ranges that may be steps by thread and name (model.nvtx is by thread, then
 * start: a small list per thread suffices). */
static int range_groups(const struct model *m, const struct steps_opts *o,
                        struct range_group **out, size_t *nout)
{
    struct range_group *g = NULL;
    size_t n = 0, cap = 0;

    for (uint64_t i = 0; i < m->nnvtx; i++) {
        const struct m_nvtx *r = &m->nvtx[i];
        size_t k;
        if (!range_step(r, o) || !overlaps(o, r))
            continue;
        for (k = n; k > 0; k--)
            if (g[k - 1].thr != r->thr ||
                (g[k - 1].name_id == r->name_id && g[k - 1].domain_id == r->domain_id))
                break;
        if (k > 0 && g[k - 1].thr == r->thr && g[k - 1].name_id == r->name_id &&
            g[k - 1].domain_id == r->domain_id) {
            k--;
        } else {
            if (n == cap) {
                struct range_group *ng = realloc(g, (cap = cap ? cap * 2 : 16) * sizeof(*g));
                if (ng == NULL) {
                    free(g);
                    return -ENOMEM;
                }
                g = ng;
            }
            k = n++;
            g[k] = (struct range_group){.first = i, .lo_ns = r->t_start_ns, .thr = r->thr,
                                        .name_id = r->name_id, .domain_id = r->domain_id};
        }
        g[k].overlap |= g[k].count > 0 && r->t_start_ns < g[k].hi_ns;
        g[k].count++;
        g[k].covered_ns += r->t_end_ns - r->t_start_ns;
        g[k].hi_ns = r->t_end_ns > g[k].hi_ns ? r->t_end_ns : g[k].hi_ns;
    }
    *out = g;
    *nout = n;
    return 0;
}

/* Do @p g's ranges tile the window: spread over most of it, and covering
 * most of their own span (one after the other, few gaps)? */
static int tiles(const struct range_group *g, const struct steps_opts *o)
{
    uint64_t win = o->win_hi_ns - o->win_lo_ns, span = g->hi_ns - g->lo_ns;

    return g->count >= STEPS_MIN && (double)span >= STEPS_SPAN * (double)win &&
           (double)g->covered_ns >= STEPS_SPAN * (double)span;
}

static int group_name_is(const struct model *m, const struct range_group *g, const char *want)
{
    const char *s = run_string(m, g->thr, g->name_id);
    return s && strcmp(s, want) == 0;
}

/* The group to use: @p o->want's most frequent, or the most frequent that
 * tiles the window; never one whose ranges overlap (steps follow one
 * another). @return its index, -1 if none. */
static long pick_group(const struct model *m, const struct steps_opts *o,
                       const struct range_group *g, size_t n)
{
    long best = -1;

    for (size_t i = 0; i < n; i++) {
        if (g[i].overlap || (o->want ? !group_name_is(m, &g[i], o->want) : !tiles(&g[i], o)))
            continue;
        if (best < 0 || g[i].count > g[best].count ||
            (g[i].count == g[best].count && g[i].covered_ns > g[best].covered_ns))
            best = (long)i;
    }
    return best;
}

static int from_group(const struct model *m, const struct steps_opts *o,
                      const struct range_group *g, size_t ntop, struct steps *out)
{
    uint64_t *t = malloc(2 * g->count * sizeof(*t));
    size_t k = 0;
    const char *name = run_string(m, g->thr, g->name_id), *dom = run_string(m, g->thr, g->domain_id);
    int rc;

    if (t == NULL)
        return -ENOMEM;
    for (uint64_t i = g->first; i < m->nnvtx && m->nvtx[i].thr == g->thr; i++) {
        const struct m_nvtx *r = &m->nvtx[i];
        if (range_step(r, o) && r->name_id == g->name_id && r->domain_id == g->domain_id &&
            overlaps(o, r)) {
            t[k] = r->t_start_ns;
            t[g->count + k] = r->t_end_ns;
            k++;
        }
    }
    rc = fill_steps(out, t, k, g->thr, t + g->count);
    free(t);
    if (rc < 0)
        return rc;
    out->source = STEPS_NVTX;
    snprintf(out->name, sizeof(out->name), "%s", name ? name : "?");
    snprintf(out->how, sizeof(out->how), "NVTX range \"%s\"%s%s%s (%zu of %zu %sranges on thread %u)",
             out->name, dom ? " in domain \"" : "", dom ? dom : "", dom ? "\"" : "", k, ntop,
             o->want ? "" : "top-level ", m->thr[g->thr].tid);
    return 0;
}

/* Are there ranges named @p o->want, overlapping one another? */
static int named_overlap(const struct model *m, const struct steps_opts *o,
                         const struct range_group *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (g[i].overlap && group_name_is(m, &g[i], o->want))
            return 1;
    return 0;
}

/* Steps from NVTX. @return 1 found, 0 none, -ENOENT (@p o->want not
 * recorded), -ENOMEM */
static int steps_nvtx(const struct model *m, const struct steps_opts *o, struct steps *out)
{
    struct range_group *g;
    size_t n, ntop = 0;
    long best;
    int rc = range_groups(m, o, &g, &n);

    if (rc < 0)
        return rc;
    best = pick_group(m, o, g, n);
    if (best >= 0) {
        for (size_t i = 0; i < n; i++)
            ntop += g[i].thr == g[best].thr ? g[i].count : 0;
        rc = from_group(m, o, &g[best], ntop, out);
        rc = rc < 0 ? rc : 1;
    } else if (o->want) {
        snprintf(out->how, sizeof(out->how),
                 named_overlap(m, o, g, n) ? "NVTX ranges \"%s\" overlap one another: not steps"
                                           : "no NVTX range \"%s\" in the window", o->want);
        rc = -ENOENT;
    }
    free(g);
    return rc;
}

/* ---- inferred ---- */

/* The selected thread with the most outermost calls in the window. */
static uint32_t busiest_thread(const struct model *m, const struct steps_opts *o, uint64_t *nout)
{
    uint32_t best = M_NONE;
    uint64_t most = 0;

    for (uint32_t t = 0; t < m->nthr; t++) {
        uint64_t n = 0;
        if (!m->proc[m->thr[t].proc].selected)
            continue;
        for (uint64_t i = m->thr[t].first_call; i < m->thr[t].first_call + m->thr[t].ncalls; i++) {
            const struct m_call cv = model_call(m, i), *c = &cv;
            n += !(c->flags & CS_CF_NESTED) && in_window(o, c->t_enter_ns, c->t_enter_ns);
        }
        if (n > most)
            most = n, best = t;
    }
    *nout = most;
    return best;
}

static uint64_t call_sym(const struct m_call *c)
{
    return ((uint64_t)model_name_id(c) << 16) | c->api;
}

/* The thread's outermost calls in the window: their symbols (a dense index
 * per distinct call; 16 bits while there are few) and where each is among
 * the thread's calls (its entry time is read from the call): 6 bytes a
 * call, 1.2 GB at 200 M calls. */
struct seq {
    const struct model *m;
    uint64_t first;       /* the thread's first call */
    uint16_t *sym16;      /* sym16 or sym32 */
    uint32_t *sym32;
    uint32_t *off;        /* the call's index less first */
    uint64_t n;
    uint32_t nsym;
    uint64_t *sym_key;   /* nsym: call_sym() of each */
    uint64_t *count;     /* nsym */
    uint64_t t_last_exit; /* return of the last of them that gave the GPU work
                             or waited for it (frees after the loop are not a step) */
};

static uint32_t sym_at(const struct seq *s, uint64_t i)
{
    return s->sym16 ? s->sym16[i] : s->sym32[i];
}

static uint64_t t_at(const struct seq *s, uint64_t i)
{
    return model_call_enter(s->m, s->first + s->off[i]);
}

/* Symbols past 16 bits: the array widens. */
static int sym_widen(struct seq *s, uint64_t cap)
{
    if ((s->sym32 = model_alloc_big(cap * sizeof(*s->sym32))) == NULL)
        return -ENOMEM;
    for (uint64_t i = 0; i < s->n; i++)
        s->sym32[i] = s->sym16[i];
    model_free_big(s->sym16);
    s->sym16 = NULL;
    return 0;
}

static void seq_free(struct seq *s)
{
    model_free_big(s->sym16);
    model_free_big(s->sym32);
    model_free_big(s->off);
    free(s->sym_key);
    free(s->count);
}

/* A launch, copy or memset, or a wait for the GPU: what a step is made of. */
static int gives_work_or_waits(const struct m_call *c)
{
    enum cs_family f = cs_api_table[c->api].family;
    return f == CS_FAM_LAUNCH || f == CS_FAM_COPY || f == CS_FAM_MEMSET || f == CS_FAM_SYNC;
}

static int seq_build(const struct model *m, const struct steps_opts *o, uint32_t thr, uint64_t n,
                     struct seq *s)
{
    struct m_hash *h = m_hash_new();
    uint64_t cap = 64;

    memset(s, 0, sizeof(*s));
    s->m = m;
    s->first = m->thr[thr].first_call;
    /* scratch files when the model is */
    s->sym16 = model_alloc_big(n * sizeof(*s->sym16));
    s->off = model_alloc_big(n * sizeof(*s->off));
    s->sym_key = malloc(cap * sizeof(*s->sym_key));
    s->count = malloc(cap * sizeof(*s->count));
    if (!h || !s->sym16 || !s->off || !s->sym_key || !s->count || m->thr[thr].ncalls > UINT32_MAX)
        goto nomem;
    for (uint64_t i = m->thr[thr].first_call; i < m->thr[thr].first_call + m->thr[thr].ncalls; i++) {
        const struct m_call cv = model_call(m, i), *c = &cv;
        uint64_t key = call_sym(c);
        uint32_t id;
        if ((c->flags & CS_CF_NESTED) || !in_window(o, c->t_enter_ns, c->t_enter_ns))
            continue;
        if ((id = m_hash_get(h, key + 1)) == M_NONE) {
            if (s->nsym == cap) {
                uint64_t *a = realloc(s->sym_key, 2 * cap * sizeof(*a));
                uint64_t *b = a ? realloc(s->count, 2 * cap * sizeof(*b)) : NULL;
                if (a)
                    s->sym_key = a;
                if (!b)
                    goto nomem;
                s->count = b;
                cap *= 2;
            }
            if (s->nsym == UINT16_MAX && s->sym16 && sym_widen(s, n) < 0)
                goto nomem;
            id = s->nsym++;
            s->sym_key[id] = key;
            s->count[id] = 0;
            if (m_hash_put(h, key + 1, id) < 0)
                goto nomem;
        }
        s->count[id]++;
        if (gives_work_or_waits(c))
            s->t_last_exit = c->t_exit_ns;
        if (s->sym16)
            s->sym16[s->n] = (uint16_t)id;
        else
            s->sym32[s->n] = id;
        s->off[s->n++] = (uint32_t)(i - s->first);
    }
    m_hash_free(h);
    return 0;
nomem:
    m_hash_free(h);
    seq_free(s);
    return -ENOMEM;
}

/* An anchor tried: how many steps it explains. */
struct anchor {
    uint32_t sym;
    unsigned period;   /* occurrences a step, 0 = does not repeat */
    uint64_t skip;     /* leading occurrences that are set-up, not steps */
    uint64_t steps;    /* boundaries ((occurrences - skip) / period) */
    int sync;
    double cv;         /* of the time between boundaries */
};

/* Hash of the calls between each two occurrences of @p sym into @p sig;
 * their positions into @p pos. @return the occurrences */
static uint64_t segments(const struct seq *s, uint32_t sym, uint64_t *pos, uint64_t *sig)
{
    uint64_t k = 0, h = 0;

    for (uint64_t i = 0; i < s->n; i++) {
        if (sym_at(s, i) == sym) {
            if (k > 0)
                sig[k - 1] = h;
            pos[k++] = i;
            h = 1469598103934665603ull;
        } else {
            h = (h ^ sym_at(s, i)) * 1099511628211ull;
        }
    }
    return k;
}

/* The fewest segments after which @p sig (n of them) repeats, 0 if none
 * up to STEPS_MAX_PERIOD. */
static unsigned sig_period(const uint64_t *sig, uint64_t n)
{
    for (unsigned p = 1; p <= STEPS_MAX_PERIOD && p < n; p++) {
        uint64_t same = 0;
        for (uint64_t j = 0; j + p < n; j++)
            same += sig[j] == sig[j + p];
        if ((double)same >= STEPS_MATCH * (double)(n - p))
            return p;
    }
    return 0;
}

/* Leading segments of a once-a-step anchor that differ from the step most
 * segments are (the majority signature): set-up, such as a model's
 * parameters copied and synced one by one before the loop syncs once a
 * step. At most a third of them: 32 parameter syncs before 96 steps (a
 * one-second run slowed by a loaded host) are a quarter; a longer leading
 * stretch is more likely a loop whose steps changed shape. @return how many */
static uint64_t setup_segments(const uint64_t *sig, uint64_t n, unsigned period)
{
    uint64_t cand = 0, votes = 0, n_cand = 0, j0 = 0;

    if (period != 1)
        return 0;
    for (uint64_t j = 0; j < n; j++) { /* Boyer-Moore majority vote */
        if (votes == 0)
            cand = sig[j];
        votes += sig[j] == cand ? 1 : -1ull;
    }
    for (uint64_t j = 0; j < n; j++)
        n_cand += sig[j] == cand;
    if (2 * n_cand <= n)
        return 0;
    while (j0 < n && sig[j0] != cand)
        j0++;
    return 3 * j0 <= n ? j0 : 0;
}

static int sym_is_sync(const struct seq *s, uint32_t sym)
{
    return cs_api_table[s->sym_key[sym] & 0xffff].is_sync;
}

/* Is @p a better than @p b (NULL: anything is)? */
static int anchor_better(const struct anchor *a, const struct anchor *b)
{
    if (b == NULL)
        return 1;
    if (a->steps != b->steps) {
        /* counts within 2 % of each other explain the same steps */
        uint64_t hi = a->steps > b->steps ? a->steps : b->steps;
        uint64_t lo = a->steps > b->steps ? b->steps : a->steps;
        if ((double)(hi - lo) > 0.02 * (double)hi)
            return a->steps > b->steps;
    }
    return a->sync > b->sync;
}

/* The most frequent symbols, at most STEPS_CANDIDATES, into @p out. */
static size_t candidates(const struct seq *s, uint32_t *out)
{
    size_t n = 0;

    for (uint32_t y = 0; y < s->nsym; y++) {
        size_t k;
        if (s->count[y] < STEPS_MIN)
            continue;
        if (n == STEPS_CANDIDATES && s->count[out[n - 1]] >= s->count[y])
            continue;
        k = n < STEPS_CANDIDATES ? n++ : n - 1;
        while (k > 0 && s->count[out[k - 1]] < s->count[y]) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = y;
    }
    return n;
}

/* Standard deviation / mean of the time between every @p period-th of
 * the @p k occurrences at @p pos. */
static double anchor_cv(const struct seq *s, const uint64_t *pos, uint64_t k, unsigned period)
{
    double sum = 0, sq = 0, mean;
    uint64_t n = 0;

    for (uint64_t j = period; j < k; j += period, n++)
        sum += (double)(t_at(s, pos[j]) - t_at(s, pos[j - period]));
    if (n == 0 || sum <= 0)
        return 0;
    mean = sum / (double)n;
    for (uint64_t j = period; j < k; j += period) {
        double d = (double)(t_at(s, pos[j]) - t_at(s, pos[j - period])) - mean;
        sq += d * d;
    }
    return sqrt(sq / (double)n) / mean;
}

/* Do occurrences @p pos[0..k) span the window after the first (the loop
 * runs to the end; a long set-up may come before it)? */
static int spans(const struct seq *s, const uint64_t *pos, uint64_t k, uint64_t win_lo,
                 uint64_t win_hi)
{
    double span = (double)(t_at(s, pos[k - 1]) - t_at(s, pos[0]));
    uint64_t from = t_at(s, pos[0]) > win_lo ? t_at(s, pos[0]) : win_lo;

    return span >= STEPS_SPAN * (double)(win_hi > from ? win_hi - from : 0) &&
           span >= STEPS_SPAN_MIN * (double)(win_hi - win_lo);
}

/* Every candidate whose occurrences span the window and repeat, into
 * @p out. @return how many */
static size_t repeating(const struct seq *s, uint64_t win_lo, uint64_t win_hi,
                        struct anchor *out, uint64_t *pos, uint64_t *sig)
{
    uint32_t cand[STEPS_CANDIDATES];
    size_t nc = candidates(s, cand), n = 0;

    for (size_t c = 0; c < nc; c++) {
        uint64_t k = segments(s, cand[c], pos, sig);
        struct anchor a = {.sym = cand[c], .sync = sym_is_sync(s, cand[c])};
        if (k < STEPS_MIN || !spans(s, pos, k, win_lo, win_hi))
            continue;
        if ((a.period = sig_period(sig, k - 1)) == 0)
            continue;
        a.skip = setup_segments(sig, k - 1, a.period);
        if ((a.steps = (k - a.skip) / a.period) < STEPS_MIN)
            continue;
        a.cv = anchor_cv(s, pos + a.skip, k - a.skip, a.period);
        out[n++] = a;
    }
    return n;
}

/* The anchor: the most steps among those about as regular in time as the
 * most regular one (a kernel launched 20 times a step repeats its calls
 * too, but its "steps" are 19 short and one long). */
static int try_anchors(const struct seq *s, uint64_t win_lo, uint64_t win_hi,
                       struct anchor *best, uint64_t *pos,
                       uint64_t *sig)
{
    struct anchor a[STEPS_CANDIDATES];
    size_t n = repeating(s, win_lo, win_hi, a, pos, sig);
    double min_cv = INFINITY, max_cv;
    const struct anchor *pick = NULL;

    for (size_t i = 0; i < n; i++)
        min_cv = a[i].cv < min_cv ? a[i].cv : min_cv;
    max_cv = 2 * min_cv > STEPS_CV ? 2 * min_cv : STEPS_CV;
    for (size_t i = 0; i < n; i++)
        if (a[i].cv <= max_cv && anchor_better(&a[i], pick))
            pick = &a[i];
    if (pick)
        *best = *pick;
    return pick != NULL;
}

static void anchor_name(const struct model *m, uint32_t thr, uint64_t key, char *buf, size_t n)
{
    char api[64];
    const char *k = run_string(m, thr, (uint32_t)(key >> 16));

    cs_api_display((enum cs_api)(key & 0xffff), CS_VAR_LEGACY, api, sizeof(api));
    if (k)
        snprintf(buf, n, "%s(%s)", api, k);
    else
        snprintf(buf, n, "%s", api);
}

/* The boundaries: every period-th occurrence of the anchor, and one more
 * step: the stretch after the last (the anchor starts a step, or falls
 * inside one) when it is half a step or more, else the stretch before the
 * first (the anchor ends a step) when it is. Never both: with the anchor
 * inside the step they are two halves of one. That first step holds as
 * many calls as a step does on average, no more: the calls before it are
 * set-up (a model built, its weights copied and synced, a dataset loaded
 * in between), which gpu.h keeps out of the findings. @return how many, in
 * @p b (room for k + 2) */
static uint64_t boundaries(const struct seq *s, const struct anchor *a, const uint64_t *pos,
                           uint64_t k, uint64_t *b)
{
    uint64_t nb = 0, med, head, tail, per;
    uint64_t first = pos[0], last = pos[(k - 1) / a->period * a->period], h0 = 0;

    b[nb++] = 0; /* the head, if it is kept */
    for (uint64_t j = 0; j < k; j += a->period)
        b[nb++] = t_at(s, pos[j]);
    med = b[1 + (nb - 1) / 2] - b[(nb - 1) / 2];  /* a step in the middle */
    per = nb > 2 ? (last - first) / (nb - 2) : 0;  /* calls a step */
    if (per && first >= per) /* the step that the first anchor ends */
        h0 = first - per + 1;
    head = t_at(s, first) - t_at(s, h0);
    tail = s->t_last_exit > t_at(s, last) ? s->t_last_exit - t_at(s, last) : 0;
    if (2 * tail >= med) {
        b[nb++] = s->t_last_exit;
    } else if (2 * head >= med) {
        b[0] = t_at(s, h0);
        return nb;
    }
    memmove(b, b + 1, (nb - 1) * sizeof(*b));
    return nb - 1;
}

static int from_anchor(const struct model *m, const struct seq *s, uint32_t thr,
                       const struct anchor *a, uint64_t *pos, uint64_t *sig, struct steps *out)
{
    uint64_t k = segments(s, a->sym, pos, sig);
    uint64_t *b = sig, nb; /* the signatures are no longer needed */
    int rc;

    nb = boundaries(s, a, pos + a->skip, k - a->skip, b);
    if ((rc = fill_steps(out, b, nb, thr, NULL)) < 0)
        return rc;
    out->source = STEPS_INFERRED;
    out->work_end_ns = s->t_last_exit;
    anchor_name(m, thr, s->sym_key[a->sym], out->name, sizeof(out->name));
    if (a->period > 1)
        snprintf(out->how, sizeof(out->how),
                 "inferred: every %u calls of %s on thread %u (%.1f calls a step)", a->period,
                 out->name, m->thr[thr].tid, (double)s->n / (double)(out->n ? out->n : 1));
    else
        snprintf(out->how, sizeof(out->how), "inferred: every %s on thread %u (%.1f calls a step)",
                 out->name, m->thr[thr].tid, (double)s->n / (double)(out->n ? out->n : 1));
    return 0;
}

static int steps_inferred(const struct model *m, const struct steps_opts *o, struct steps *out)
{
    uint64_t n, most = 0;
    uint32_t thr = busiest_thread(m, o, &n);
    struct seq s;
    struct anchor a = {0};
    uint64_t *buf;
    int rc;

    if (thr == M_NONE || n < STEPS_MIN) {
        snprintf(out->how, sizeof(out->how), "none: too few CUDA calls to repeat");
        return 0;
    }
    if ((rc = seq_build(m, o, thr, n, &s)) < 0)
        return rc;
    for (uint32_t y = 0; y < s.nsym; y++) /* an anchor's occurrences, at most */
        most = s.count[y] > most ? s.count[y] : most;
    buf = model_alloc_big(2 * (most + 2) * sizeof(*buf));
    if (buf == NULL) {
        seq_free(&s);
        return -ENOMEM;
    }
    if (try_anchors(&s, o->win_lo_ns, o->win_hi_ns, &a, buf, buf + most + 2))
        rc = from_anchor(m, &s, thr, &a, buf, buf + most + 2, out);
    else
        snprintf(out->how, sizeof(out->how), "none: no call of thread %u repeats regularly",
                 m->thr[thr].tid);
    model_free_big(buf);
    seq_free(&s);
    return rc;
}

/* ---- API ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int steps_find(const struct model *m, const struct steps_opts *o, struct steps *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    out->thr = M_NONE;
    if (o->want && strcmp(o->want, "none") == 0) {
        snprintf(out->how, sizeof(out->how), "none: turned off (--step none)");
        return 0;
    }
    if (o->win_hi_ns <= o->win_lo_ns) {
        snprintf(out->how, sizeof(out->how), "none: empty window");
        return o->want ? -ENOENT : 0;
    }
    rc = steps_nvtx(m, o, out);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    return steps_inferred(m, o, out);
}

/* Sort @p n durations ascending. */
static void sort_u64(uint64_t *v, size_t n)
{
    if (stats_sort(v, n, NULL) < 0) /* no memory for the radix sort: a slow one */
        qsort(v, n, sizeof(*v), cmp_u64);
}

void steps_durations(const struct steps *s, uint64_t *out)
{
    for (size_t i = 0; i < s->n; i++)
        out[i] = s->s[i].t_end_ns - s->s[i].t_start_ns;
    sort_u64(out, s->n);
}

/* A GPU record of a call of the steps' thread: its call and its index. */
struct gpu_of_call {
    uint64_t call, gi;
};

static int cmp_goc(const void *a, const void *b)
{
    const struct gpu_of_call *x = a, *y = b;
    if (x->call != y->call)
        return x->call < y->call ? -1 : 1;
    return x->gi < y->gi ? -1 : x->gi > y->gi;
}

/* The GPU records of thread @p thr's calls, by call. @return how many, or
 * 0 (none, or no memory: the caller's figures then come from the host) */
static size_t gpu_of_thread(const struct model *m, uint32_t thr, struct gpu_of_call **out)
{
    const struct m_thread *t = &m->thr[thr];
    size_t n = 0;

    *out = NULL;
    for (uint64_t i = 0; i < m->ngpu; i++)
        n += m->gpu[i].call != M_CALL_NONE && m->gpu[i].call >= t->first_call &&
             m->gpu[i].call < t->first_call + t->ncalls;
    if (n == 0 || !(*out = malloc(n * sizeof(**out))))
        return 0;
    n = 0;
    for (uint64_t i = 0; i < m->ngpu; i++)
        if (m->gpu[i].call != M_CALL_NONE && m->gpu[i].call >= t->first_call &&
            m->gpu[i].call < t->first_call + t->ncalls)
            (*out)[n++] = (struct gpu_of_call){m->gpu[i].call, i};
    qsort(*out, n, sizeof(**out), cmp_goc);
    return n;
}

/* The GPU record of the first call of step @p k that the GPU ran,
 * @p g[...] of @p ng; M_CALL_NONE when the step enqueued nothing recorded. */
static uint64_t step_first_gpu(const struct model *m, const struct steps *s, size_t k,
                               const struct gpu_of_call *g, size_t ng)
{
    const struct m_thread *t = &m->thr[s->thr];
    uint64_t hi = t->first_call + t->ncalls;
    uint64_t ci = model_call_search(m, t->first_call, hi, s->s[k].t_start_ns, 0);
    uint64_t lo = M_FIRST_GE(struct gpu_of_call, g, call, 0, ng, ci);

    if (lo == ng || model_call(m, g[lo].call).t_enter_ns >= s->s[k].t_end_ns)
        return M_CALL_NONE;
    return g[lo].gi;
}

size_t steps_gpu_durations(const struct model *m, const struct steps *s, uint64_t *out,
                           uint64_t *host)
{
    struct gpu_of_call *g;
    uint64_t prev = M_CALL_NONE;
    size_t ng, n = 0;

    if (s->source == STEPS_NONE || s->thr == M_NONE || s->n < 2 || m->ngpu == 0)
        return 0;
    ng = gpu_of_thread(m, s->thr, &g);
    for (size_t k = 0; k < s->n && ng; k++) {
        uint64_t gi = step_first_gpu(m, s, k, g, ng);
        if (gi != M_CALL_NONE && prev != M_CALL_NONE &&
            m->gpu[gi].proc == m->gpu[prev].proc && m->gpu[gi].epoch == m->gpu[prev].epoch &&
            m->gpu[gi].t_start_ns > m->gpu[prev].t_start_ns) {
            if (host)
                host[n] = s->s[k - 1].t_end_ns - s->s[k - 1].t_start_ns;
            out[n++] = m->gpu[gi].t_start_ns - m->gpu[prev].t_start_ns;
        }
        prev = gi;
    }
    free(g);
    sort_u64(out, n);
    if (host)
        sort_u64(host, n);
    return n;
}

const char *steps_source_name(enum steps_source s)
{
    return s == STEPS_NVTX ? "nvtx" : s == STEPS_INFERRED ? "inferred" : "none";
}

void steps_free(struct steps *s)
{
    free(s->s);
    s->s = NULL;
    s->n = 0;
}

/* Where the wind-down after steps @p s (STEPS_MIN or more) begins; UINT64_MAX
 * if that cannot be said (no memory). */
static uint64_t wind_start(const struct steps *s)
{
    uint64_t last = s->s[s->n - 1].t_end_ns, med, *d;

    if (s->work_end_ns) /* inferred: the steps end with the thread's last work */
        return s->work_end_ns > last ? s->work_end_ns : last;
    if ((d = malloc(s->n * sizeof(*d))) == NULL)
        return UINT64_MAX;
    steps_durations(s, d);
    med = d[(s->n - 1) / 2];
    free(d);
    return last + med; /* NVTX: the last range starts a step of its own */
}

struct step_setup steps_setup_end(const struct model *m, const struct steps *s)
{
    struct step_setup su = {M_NONE, 0, UINT64_MAX};

    if (s->n > 0 && m->opts.since_ns == 0) {
        su.proc = m->thr[s->thr].proc;
        su.end_ns = s->s[0].t_start_ns;
    }
    if (s->n >= STEPS_MIN && m->opts.until_ns == UINT64_MAX &&
        (su.wind_ns = wind_start(s)) != UINT64_MAX)
        su.proc = m->thr[s->thr].proc;
    return su;
}

int steps_setup(const struct model *m, const struct steps *s, uint64_t *t0, uint64_t *t1)
{
    struct step_setup su = steps_setup_end(m, s);
    uint64_t hi;

    if (su.proc == M_NONE)
        return 0;
    procs_active_window(m, su.proc, t0, &hi);
    *t1 = su.end_ns;
    return *t0 < *t1;
}
