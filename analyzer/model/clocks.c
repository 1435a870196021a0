/* model/clocks.c: the runs of several hosts on one timeline (clocks.h).
 * Owns the clock domains, both stages of their alignment and the move of
 * every model time onto the reference's clock. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"
#include "model.h"

#define CK_PAIRS 256       /* clock pairs read per domain, at most */
#define CK_LAG_MAX 8       /* sync points a sequence may be shifted by, around a guess */
#define CK_LAG_SAMPLE 4096 /* sync points compared to choose the shift */
#define CK_MIN_POINTS 16   /* fewer paired sync points: stage 1 alone */
#define CK_VIOL_NS 6000000ull /* every window violated weighs as 6 ms more width (10 us
                                 a window of 600: a share, so that a longer run's
                                 count does not outweigh the width) */
#define CK_WINDOWS 16      /* stretches of a run whose modes set the line, at most */

/* A clock against the shared one: shared - mono = c + e * (mono - t). */
struct ck_line {
    uint64_t t;
    int64_t c;
    double e;
};

/* One domain's sync points: exit times, its own clock. */
struct ck_seq {
    uint64_t *t;
    uint64_t n;
};

static const char *meta_or(struct cs_run *r, const char *key)
{
    const char *v = cs_run_meta(r, key);
    return v ? v : "";
}

static int same_domain(const struct model *m, int a, int b)
{
    struct cs_run *x = m->runs[a].run, *y = m->runs[b].run;

    return strcmp(meta_or(x, "host"), meta_or(y, "host")) == 0 &&
           strcmp(meta_or(x, "boot_id"), meta_or(y, "boot_id")) == 0;
}

/* ---- stage 1: clock pairs ---- */

/* Run @p r's pairs (PTP ones with @p ptp) appended at @p mono / @p diff.
 * A run of before clock_pairs has its start's real-time offset. @return
 * the count, -1 when @p ptp and a pair has none */
static int read_pairs(struct cs_run *r, int ptp, uint64_t *mono, int64_t *diff, int max)
{
    const char *s = cs_run_meta(r, "clock_pairs");
    int n = 0;

    if (s == NULL) {
        if (ptp || max < 1 || cs_run_meta(r, "realtime_offset_ns") == NULL)
            return ptp ? -1 : 0;
        mono[0] = cs_run_meta_u64(r, "t_start_ns", 0);
        diff[0] = (int64_t)cs_run_meta_u64(r, "realtime_offset_ns", 0);
        return 1;
    }
    while (*s && n < max) {
        char *end;
        uint64_t mo = strtoull(s, &end, 10), rt, pt = 0;
        if (*end != ':')
            break;
        rt = strtoull(end + 1, &end, 10);
        if (*end == ':')
            pt = strtoull(end + 1, &end, 10);
        if (ptp && pt == 0)
            return -1;
        mono[n] = mo, diff[n++] = (int64_t)((ptp ? pt : rt) - mo);
        while (*end == ' ')
            end++;
        if (end == s)
            break;
        s = end;
    }
    return n;
}

/* Least squares through the pairs, relative to the first (int64 ns are
 * beyond a double's exactness). */
static struct ck_line fit_pairs(const uint64_t *mono, const int64_t *diff, int n)
{
    struct ck_line l = {mono[0], diff[0], 0};
    double sx = 0, sy = 0, sxx = 0, sxy = 0;

    for (int i = 0; i < n; i++) {
        double x = (double)(int64_t)(mono[i] - l.t), y = (double)(diff[i] - l.c);
        sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    double den = n * sxx - sx * sx;
    l.e = n > 1 && den > 0 ? (n * sxy - sx * sy) / den : 0;
    l.c += (int64_t)llround((sy - l.e * sx) / n);
    return l;
}

/* Domain @p d's line, from every run of it. @return 0, -1 none */
static int domain_line(const struct model *m, uint32_t d, int ptp, struct ck_line *out)
{
    uint64_t mono[CK_PAIRS];
    int64_t diff[CK_PAIRS];
    int n = 0;

    for (int i = 0; i < m->nruns; i++) {
        if (m->runs[i].clk.domain != d)
            continue;
        int k = read_pairs(m->runs[i].run, ptp, mono + n, diff + n, CK_PAIRS - n);
        if (k < 0)
            return -1;
        n += k;
    }
    if (n == 0)
        return -1;
    *out = fit_pairs(mono, diff, n);
    return 0;
}

/* What to add to @p tb, a time of @p b's clock, to reach @p a's clock. */
static int64_t coarse_at(const struct ck_line *a, const struct ck_line *b, uint64_t tb)
{
    int64_t d = b->c - a->c + (int64_t)llround(b->e * (double)(int64_t)(tb - b->t));

    return d - (int64_t)llround(a->e * (double)(int64_t)(tb + (uint64_t)d - a->t));
}

/* ---- stage 2: collectives ---- */

/* The exit times of the outermost syncs of domain @p d's busiest syncing
 * thread. @return 0 or -ENOMEM */
static int domain_syncs(const struct model *m, uint32_t d, struct ck_seq *s)
{
    uint32_t best = M_NONE;
    uint64_t most = 0;

    for (uint32_t t = 0; t < m->nthr; t++) {
        const struct m_proc *p = &m->proc[m->thr[t].proc];
        uint64_t n = 0;
        if (m->runs[p->run].clk.domain != d || !p->selected)
            continue;
        n = model_thread_step_syncs(m, t);
        if (n > most)
            most = n, best = t;
    }
    s->n = 0;
    if (most == 0)
        return 0;
    if ((s->t = malloc(most * sizeof(*s->t))) == NULL)
        return -ENOMEM;
    for (uint64_t i = 0; i < m->thr[best].ncalls; i++) {
        const struct m_call cv = model_call(m, m->thr[best].first_call + i), *c = &cv;
        if (model_is_step_sync(c))
            s->t[s->n++] = c->t_exit_ns;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* How many values make the half of @p n (at least one). */
static uint64_t half(uint64_t n)
{
    return n / 2 ? n / 2 : 1;
}

/* Sort @p v and find its tightest half: @return its width, *lo its first */
static uint64_t shorth(int64_t *v, uint64_t n, uint64_t *lo)
{
    uint64_t h = half(n), best = UINT64_MAX;

    qsort(v, n, sizeof(*v), cmp_i64);
    *lo = 0;
    for (uint64_t i = 0; i + h <= n; i++) {
        uint64_t w = (uint64_t)(v[i + h - 1] - v[i]);
        if (w < best)
            best = w, *lo = i;
    }
    return best;
}

/* Differences ref[k] - (b[k + lag] + coarse), for k from 0 (at most @p max)
 * into @p d, the b times into @p tb (NULL: not wanted). @return the count */
static uint64_t diffs(const struct ck_seq *ref, const struct ck_seq *b, int64_t lag,
                      const struct ck_line *la, const struct ck_line *lb, uint64_t max,
                      int64_t *d, uint64_t *tb)
{
    uint64_t n = 0;

    for (uint64_t k = lag < 0 ? (uint64_t)-lag : 0; k < ref->n && n < max; k++) {
        uint64_t j = k + (uint64_t)lag;
        if (j >= b->n)
            break;
        d[n] = (int64_t)(ref->t[k] - b->t[j]) - coarse_at(la, lb, b->t[j]);
        if (tb)
            tb[n] = b->t[j];
        n++;
    }
    return n;
}

/* Syncs whose windows cannot hold one moment with b's times moved by
 * coarse + @p mode: the k-th collective completes after each rank's sync
 * k-1 returned and before its sync k returns, so the two ranks' windows
 * [exit k-1, exit k] overlap at the right shift, whatever the wake-ups
 * cost; one sync off, a step that was longer on one side (a straggler's)
 * pulls them apart. Over the first @p max pairs. */
static uint64_t lag_violations(const struct ck_seq *ref, const struct ck_seq *b, int64_t lag,
                               const struct ck_line *la, const struct ck_line *lb, int64_t mode,
                               uint64_t max)
{
    uint64_t bad = 0, n = 0;

    for (uint64_t k = lag < 0 ? (uint64_t)-lag + 1 : 1; k < ref->n && n < max; k++, n++) {
        uint64_t j = k + (uint64_t)lag;
        if (j >= b->n)
            break;
        int64_t b0 = (int64_t)b->t[j - 1] + coarse_at(la, lb, b->t[j - 1]) + mode;
        int64_t b1 = (int64_t)b->t[j] + coarse_at(la, lb, b->t[j]) + mode;
        bad += (int64_t)ref->t[k - 1] > b1 || b0 > (int64_t)ref->t[k];
    }
    return bad;
}

/* The shift of b's sequence whose differences to the reference's are
 * tightest (the width of their tightest half) and whose windows agree
 * (lag_violations(): their share times CK_VIOL_NS; a straggler's steps
 * tell a sequence one sync off from the right one. A share, not a count:
 * a count grew with the run until, at 2000 syncs under load, it outweighed
 * a width 5 times wider), looked for around the start (every
 * rank recorded from its first sync) and around where stage 1 puts the
 * reference's first point. */
static int64_t best_lag(const struct ck_seq *ref, const struct ck_seq *b, const struct ck_line *la,
                        const struct ck_line *lb, int64_t *d)
{
    int64_t guess[2] = {0, 0}, lag = 0;
    uint64_t best = UINT64_MAX, near = UINT64_MAX;

    for (uint64_t j = 0; j < b->n; j++) { /* b's point nearest ref's first */
        int64_t x = (int64_t)(ref->t[0] - b->t[j]) - coarse_at(la, lb, b->t[j]);
        uint64_t ax = x < 0 ? (uint64_t)-x : (uint64_t)x;
        if (ax < near)
            near = ax, guess[1] = (int64_t)j;
    }
    for (int g = 0; g < 2; g++)
        for (int64_t l = guess[g] - CK_LAG_MAX; l <= guess[g] + CK_LAG_MAX; l++) {
            uint64_t n = diffs(ref, b, l, la, lb, CK_LAG_SAMPLE, d, NULL), w;
            if (n < CK_MIN_POINTS)
                continue;
            uint64_t lo;
            w = shorth(d, n, &lo);
            w += lag_violations(ref, b, l, la, lb, d[lo + half(n) / 2], CK_LAG_SAMPLE) *
                 CK_VIOL_NS / n;
            if (w < best)
                best = w, lag = l;
        }
    return best == UINT64_MAX ? INT64_MIN : lag;
}

/* A line through the differences: d = a + r * (t - t0). */
struct ck_fit {
    double a, r, ss;
    uint64_t m;
};

/* Least squares through the points whose residual to @p f lies in [lo, hi]
 * (ss: their squared residuals to that new line). */
static struct ck_fit fit_kept(const int64_t *d, const uint64_t *tb, uint64_t n, uint64_t t0,
                              const struct ck_fit *f, double lo, double hi)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, den;
    struct ck_fit g = {0, 0, 0, 0};

    for (uint64_t i = 0; i < n; i++) {
        double x = (double)(int64_t)(tb[i] - t0), y = (double)d[i], e = y - f->a - f->r * x;
        if (e >= lo && e <= hi)
            sx += x, sy += y, sxx += x * x, sxy += x * y, g.m++;
    }
    if (g.m == 0)
        return *f;
    den = (double)g.m * sxx - sx * sx;
    g.r = g.m > 2 && den > 0 ? ((double)g.m * sxy - sx * sy) / den : f->r;
    g.a = (sy - g.r * sx) / (double)g.m;
    for (uint64_t i = 0; i < n; i++) {
        double x = (double)(int64_t)(tb[i] - t0), y = (double)d[i], e = y - f->a - f->r * x;
        if (e >= lo && e <= hi)
            g.ss += (y - g.a - g.r * x) * (y - g.a - g.r * x);
    }
    return g;
}

/* The tightest half of the residuals of @p d to @p f: into *lo, *hi. */
static uint64_t resid_shorth(const int64_t *d, const uint64_t *tb, uint64_t n, uint64_t t0,
                             const struct ck_fit *f, int64_t *tmp, double *lo, double *hi)
{
    uint64_t first, w;

    for (uint64_t i = 0; i < n; i++)
        tmp[i] = (int64_t)llround((double)d[i] - f->a - f->r * (double)(int64_t)(tb[i] - t0));
    w = shorth(tmp, n, &first);
    *lo = (double)tmp[first], *hi = (double)tmp[first + half(n) - 1];
    return w;
}

/* A line through the modes of CK_WINDOWS stretches of the run: each the
 * middle of its tightest half, weighed by its points over that half's width
 * squared (a mode's precision; widths under 1 us count as 1 us), so that
 * neither a straggler's late steps nor a stretch whose wake-ups lagged
 * pulls it much. @p s: n scratch values */
static struct ck_fit window_line(const int64_t *d, const uint64_t *tb, uint64_t n, uint64_t t0,
                                 int64_t *s)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, den;
    uint64_t nw = n / 32, lo, width;
    struct ck_fit f = {0, 0, 0, 0};

    nw = nw < 4 ? 4 : nw > CK_WINDOWS ? CK_WINDOWS : nw;
    for (uint64_t w = 0; w < nw; w++) {
        uint64_t a = n * w / nw, b = n * (w + 1) / nw;
        double x, y, wd, wt;
        memcpy(s, d + a, (b - a) * sizeof(*s));
        width = shorth(s, b - a, &lo);
        y = (double)s[lo + half(b - a) / 2];
        x = (double)(int64_t)(tb[(a + b) / 2] - t0);
        wd = (double)(width > 1000 ? width : 1000);
        wt = (double)(b - a) / (wd * wd);
        sw += wt, sx += wt * x, sy += wt * y, sxx += wt * x * x, sxy += wt * x * y;
    }
    den = sw * sxx - sx * sx;
    f.r = den > 0 ? (sw * sxy - sx * sy) / den : 0;
    f.a = (sy - f.r * sx) / sw;
    return f;
}

/* Offset and drift from the differences at @p lag: window_line()'s line
 * picks the tightest half of the residuals, and the least-squares line
 * through those points is the answer, its standard error the uncertainty.
 * On a 1.2 s run whose first half CI's load made noisy, Theil-Sen over
 * the modes put the start 52 us off, this 30 us (docs/multihost.md). */
static int refine(struct m_clock *k, const struct ck_seq *ref, const struct ck_seq *b,
                  const struct ck_line *la, const struct ck_line *lb, int64_t lag)
{
    uint64_t max = ref->n < b->n ? ref->n : b->n, n, w;
    int64_t *d = malloc((max + 1) * sizeof(*d)), *s = malloc((max + 1) * sizeof(*s));
    uint64_t *tb = malloc((max + 1) * sizeof(*tb));
    struct ck_fit f, g;
    double lo, hi;

    if (d == NULL || s == NULL || tb == NULL) {
        free(d), free(s), free(tb);
        return -ENOMEM;
    }
    n = diffs(ref, b, lag, la, lb, max, d, tb);
    f = window_line(d, tb, n, k->t0_ns, s);
    w = resid_shorth(d, tb, n, k->t0_ns, &f, s, &lo, &hi);
    g = fit_kept(d, tb, n, k->t0_ns, &f, lo, hi);
    k->spread_ns = w / 2;
    k->off_ns = k->coarse_ns + (int64_t)llround(g.a);
    k->rate = k->coarse_rate + g.r;
    k->unc_ns = g.m > 2 ? (uint64_t)llround(sqrt(g.ss / (double)(g.m - 2)) / sqrt((double)g.m)) : 0;
    k->points = g.m;
    k->lag = lag;
    k->how = M_CLOCK_COLLECTIVES;
    free(d), free(s), free(tb);
    return 0;
}

/* Align domain @p d (its first run's clock) to the reference's. */
static int align_domain(struct model *m, uint32_t d, const struct ck_seq *ref,
                        const struct ck_line *la, int ptp)
{
    struct m_clock *k = &m->runs[d].clk;
    struct ck_line lb;
    struct ck_seq b = {0};
    uint64_t span;
    int rc;

    if (domain_line(m, d, ptp, &lb) < 0)
        return 0; /* nothing to align on: left as recorded */
    span = m->runs[d].t_end_ns > k->t0_ns + 1000000000ull ? m->runs[d].t_end_ns - k->t0_ns
                                                           : 1000000000ull;
    k->coarse_ptp = (uint8_t)ptp;
    k->how = ptp ? M_CLOCK_PTP : M_CLOCK_REALTIME;
    k->coarse_ns = k->off_ns = coarse_at(la, &lb, k->t0_ns);
    k->coarse_rate = k->rate =
        (double)(coarse_at(la, &lb, k->t0_ns + span) - k->coarse_ns) / (double)span;
    if ((rc = domain_syncs(m, d, &b)) < 0)
        return rc;
    rc = 0;
    if (ref->n >= CK_MIN_POINTS && b.n >= CK_MIN_POINTS) {
        int64_t *tmp = malloc(CK_LAG_SAMPLE * sizeof(*tmp)), lag;
        if (tmp == NULL) {
            free(b.t);
            return -ENOMEM;
        }
        lag = best_lag(ref, &b, la, &lb, tmp);
        free(tmp);
        if (lag != INT64_MIN)
            rc = refine(k, ref, &b, la, &lb, lag);
    }
    free(b.t);
    return rc;
}

/* ---- moving the model ---- */

uint64_t clocks_shift(const struct m_clock *k, uint64_t t)
{
    if (k->how == M_CLOCK_SAME || t == 0 || t == UINT64_MAX)
        return t;
    return t + (uint64_t)k->off_ns +
           (uint64_t)(int64_t)llround(k->rate * (double)(int64_t)(t - k->t0_ns));
}

uint64_t clocks_time(const struct model *m, uint32_t run, uint64_t t_ns)
{
    return clocks_shift(&m->runs[run].clk, t_ns);
}

#define MOVE2(k, o) ((o).t_start_ns = clocks_shift(k, (o).t_start_ns), (o).t_end_ns = clocks_shift(k, (o).t_end_ns))

static void move_threads(struct model *m)
{
    for (uint32_t t = 0; t < m->nthr; t++) {
        const struct m_thread *th = &m->thr[t];
        const struct m_clock *k = &m->runs[m->proc[th->proc].run].clk;
        if (k->how == M_CLOCK_SAME)
            continue;
        for (uint64_t i = th->first_call; i < th->first_call + th->ncalls; i++) {
            m->call[i].t_enter_ns = clocks_shift(k, m->call[i].t_enter_ns);
            m->call[i].t_exit_ns = clocks_shift(k, m->call[i].t_exit_ns);
        }
        for (uint64_t i = th->first_off; i < th->first_off + th->noff; i++)
            MOVE2(k, m->off[i]);
    }
    for (uint64_t i = 0; i < m->nnvtx; i++)
        MOVE2(&m->runs[m->proc[m->thr[m->nvtx[i].thr].proc].run].clk, m->nvtx[i]);
    for (uint64_t i = 0; i < m->npys; i++)
        m->pys[i].t_ns = clocks_shift(&m->runs[m->proc[m->thr[m->pys[i].thr].proc].run].clk,
                               m->pys[i].t_ns);
}

static void move_procs(struct model *m)
{
    for (uint32_t p = 0; p < m->nproc; p++) {
        struct m_proc *pr = &m->proc[p];
        const struct m_clock *k = &m->runs[pr->run].clk;
        pr->start_ns = clocks_shift(k, pr->start_ns), pr->exit_ns = clocks_shift(k, pr->exit_ns);
        for (uint64_t i = pr->first_pwin; i < pr->first_pwin + pr->npwin; i++)
            MOVE2(k, m->pwin[i]);
    }
    for (uint64_t i = 0; i < m->ngpu; i++)
        MOVE2(&m->runs[m->proc[m->gpu[i].proc].run].clk, m->gpu[i]);
    for (uint64_t i = 0; i < m->ngcov; i++) {
        const struct m_clock *k = &m->runs[m->proc[m->gcov[i].proc].run].clk;
        MOVE2(k, m->gcov[i]);
        m->gcov[i].t_attach_ns = clocks_shift(k, m->gcov[i].t_attach_ns);
        m->gcov[i].t_detach_ns = clocks_shift(k, m->gcov[i].t_detach_ns);
    }
}

static void move_runs(struct model *m)
{
    for (int i = 0; i < m->nruns; i++) {
        struct m_run *r = &m->runs[i];
        const struct m_clock *k = &r->clk;
        for (uint64_t s = r->first_sys; s < r->first_sys + r->nsys; s++)
            MOVE2(k, m->sys[s]);
        for (uint32_t c = 0; c < 2 * r->ncapture; c++)
            r->capture[c] = clocks_shift(k, r->capture[c]);
        r->t0_ns = clocks_shift(k, r->t0_ns), r->t_end_ns = clocks_shift(k, r->t_end_ns);
        r->win_lo_ns = clocks_shift(k, r->win_lo_ns), r->win_hi_ns = clocks_shift(k, r->win_hi_ns);
        r->host_end_ns = clocks_shift(k, r->host_end_ns);
    }
}

int clocks_align(struct model *m)
{
    struct ck_seq ref = {0};
    struct ck_line la;
    int ptp = 1, rc = 0, many = 0;

    for (int i = 0; i < m->nruns; i++) {
        struct m_clock *k = &m->runs[i].clk;
        memset(k, 0, sizeof(*k));
        k->t0_ns = m->runs[i].t0_ns;
        for (int j = 0; j <= i; j++)
            if (same_domain(m, i, j)) {
                k->domain = (uint32_t)j;
                break;
            }
        many |= k->domain != 0;
    }
    if (!many)
        return 0;
    for (int i = 0; i < m->nruns; i++) /* PTP only where every domain has it */
        if (m->runs[i].clk.domain == (uint32_t)i)
            ptp &= domain_line(m, (uint32_t)i, 1, &la) == 0;
    if (domain_line(m, 0, ptp, &la) < 0)
        return 0; /* the reference has no pairs: every run left as recorded */
    if ((rc = domain_syncs(m, 0, &ref)) < 0)
        return rc;
    for (int i = 1; i < m->nruns && rc == 0; i++)
        if (m->runs[i].clk.domain == (uint32_t)i)
            rc = align_domain(m, (uint32_t)i, &ref, &la, ptp);
    free(ref.t);
    for (int i = 1; i < m->nruns; i++) { /* the domain's line, at each run's own start */
        struct m_clock *k = &m->runs[i].clk, *d = &m->runs[k->domain].clk;
        if (k->domain == (uint32_t)i || d->how == M_CLOCK_SAME)
            continue;
        uint64_t t0 = k->t0_ns;
        *k = *d;
        k->t0_ns = t0;
        k->off_ns = d->off_ns + (int64_t)llround(d->rate * (double)(int64_t)(t0 - d->t0_ns));
    }
    if (rc == 0) {
        move_threads(m);
        move_procs(m);
        move_runs(m);
    }
    return rc;
}

/* ---- the "hosts" array and the HOSTS section ---- */

static const char *const how_names[] = {"reference", "realtime", "ptp", "collectives"};

static json_t *domain_json(const struct model *m, uint32_t d)
{
    const struct m_clock *k = &m->runs[d].clk;
    json_t *o = json_object(), *runs = json_array();
    const char *boot = cs_run_meta(m->runs[d].run, "boot_id");

    for (int i = 0; i < m->nruns; i++)
        if (m->runs[i].clk.domain == d)
            json_array_append_new(runs, json_string(m->runs[i].path));
    json_object_set_new(o, "host", json_string(meta_or(m->runs[d].run, "host")));
    if (boot)
        json_object_set_new(o, "boot_id", json_string(boot));
    json_object_set_new(o, "runs", runs);
    json_object_set_new(o, "method", json_string(how_names[k->how]));
    if (d == 0)
        return o;
    json_object_set_new(o, "offset_ns", json_integer(k->off_ns));
    json_object_set_new(o, "drift_ppm", json_real(k->rate * 1e6));
    if (k->how == M_CLOCK_COLLECTIVES) {
        json_object_set_new(o, "uncertainty_ns", json_integer((json_int_t)k->unc_ns));
        json_object_set_new(o, "spread_ns", json_integer((json_int_t)k->spread_ns));
        json_object_set_new(o, "sync_points", json_integer((json_int_t)k->points));
        json_object_set_new(o, "lag", json_integer(k->lag));
        json_object_set_new(o, "clock", json_string(k->coarse_ptp ? "ptp" : "realtime"));
        json_object_set_new(o, "clock_error_ns", json_integer(k->coarse_ns - k->off_ns));
        json_object_set_new(o, "clock_drift_ppm", json_real((k->coarse_rate - k->rate) * 1e6));
    }
    return o;
}

static int many_domains(const struct model *m)
{
    for (int i = 0; i < m->nruns; i++)
        if (m->runs[i].clk.domain != 0)
            return 1;
    return 0;
}

const char *clocks_host(const struct model *m, uint32_t run)
{
    return many_domains(m) ? meta_or(m->runs[run].run, "host") : NULL;
}

json_t *clocks_json(const struct model *m)
{
    json_t *a;

    if (!many_domains(m))
        return NULL;
    a = json_array();
    for (int i = 0; i < m->nruns; i++)
        if (m->runs[i].clk.domain == (uint32_t)i)
            json_array_append_new(a, domain_json(m, (uint32_t)i));
    return a;
}

static const char *fmt_sns(char *buf, size_t n, int64_t ns)
{
    double a = fabs((double)ns);

    snprintf(buf, n, a >= 1e9 ? "%+.3f s" : a >= 1e6 ? "%+.3f ms" : "%+.1f us",
             a >= 1e9 ? (double)ns / 1e9 : a >= 1e6 ? (double)ns / 1e6 : (double)ns / 1e3);
    return buf;
}

void clocks_print(FILE *f, const json_t *j)
{
    const json_t *hosts = json_object_get(j, "hosts"), *h;
    size_t i;

    if (json_array_size(hosts) == 0)
        return;
    fprintf(f, "\nHOSTS (%zu clock domains, on %s's clock; docs/multihost.md)\n",
            json_array_size(hosts),
            json_string_value(json_object_get(json_array_get(hosts, 0), "host")));
    fprintf(f, "  %-16s %4s  %-22s %10s  %-28s %s\n", "host", "runs", "offset", "drift",
            "its clock was off by", "aligned on");
    json_array_foreach(hosts, i, h) {
        char a[32], b[32], c[64] = "", how[96];
        const char *method = json_string_value(json_object_get(h, "method"));
        if (i == 0) {
            fprintf(f, "  %-16s %4zu  reference\n", json_string_value(json_object_get(h, "host")),
                    json_array_size(json_object_get(h, "runs")));
            continue;
        }
        fmt_sns(a, sizeof(a), json_integer_value(json_object_get(h, "offset_ns")));
        if (json_object_get(h, "uncertainty_ns")) {
            size_t l = strlen(a);
            snprintf(a + l, sizeof(a) - l, " +-%.1f us",
                     (double)json_integer_value(json_object_get(h, "uncertainty_ns")) / 1e3);
            fmt_sns(b, sizeof(b), json_integer_value(json_object_get(h, "clock_error_ns")));
            snprintf(c, sizeof(c), "%s (%s, %+.1f ppm)", b,
                     json_string_value(json_object_get(h, "clock")),
                     json_real_value(json_object_get(h, "clock_drift_ppm")));
            snprintf(how, sizeof(how), "collectives (%" JSON_INTEGER_FORMAT " sync points, lag %"
                     JSON_INTEGER_FORMAT ")",
                     json_integer_value(json_object_get(h, "sync_points")),
                     json_integer_value(json_object_get(h, "lag")));
        } else {
            snprintf(how, sizeof(how), "%s alone", method);
        }
        snprintf(b, sizeof(b), "%+.1f ppm", json_real_value(json_object_get(h, "drift_ppm")));
        fprintf(f, "  %-16s %4zu  %-22s %10s  %-28s %s\n",
                json_string_value(json_object_get(h, "host")),
                json_array_size(json_object_get(h, "runs")), a, b, c, how);
    }
}

int clocks_of_runs(const char *const *paths, int n, struct m_clock *out, struct cs_err *err)
{
    struct model m;
    struct analysis_opts o;
    int rc;

    analysis_opts_init(&o);
    rc = model_load(&m, paths, n, &o, err);
    for (int i = 0; rc == 0 && i < n; i++)
        out[i] = m.runs[i].clk;
    model_exit(&m);
    return rc;
}
