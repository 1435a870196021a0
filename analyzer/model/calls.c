/* model/calls.c: the model's calls in the compact store (model.h,
 * model_call(), model/callstore.h). Owns placing them there while loading,
 * each thread's calls through a window that puts them in enter order (a
 * thread's records arrive in order but for a call that returns before its
 * caller), moving them there from the array when loading needed one, the
 * search by enter time over the store, and the time a thread spent inside
 * its calls over a stretch. */
#include <errno.h>
#include <stdlib.h>

#include "model.h"

#define WIN 64 /* calls a thread's window holds: how far a call may arrive late */

struct callwin {
    uint32_t head, n;   /* a ring of WIN + 1, sorted by enter, ties by arrival */
    uint64_t next;      /* the thread's next slot */
    uint64_t last;      /* enter time of the last call given a slot */
    struct m_call c[WIN + 1];
    uint32_t seq[WIN + 1], stack[WIN + 1];
};

struct callplace {
    struct callstore s;
    struct callwin **win; /* per thread, made at its first call */
    uint32_t nthr;
};

struct callplace *callplace_open(const struct model *m, uint64_t ncall)
{
    struct callplace *cp = calloc(1, sizeof(*cp));

    if (cp == NULL)
        return NULL;
    callstore_init(&cp->s);
    cp->nthr = m->nthr;
    if ((cp->win = calloc(m->nthr + 1, sizeof(*cp->win))) == NULL ||
        callstore_open(&cp->s, ncall) < 0) {
        callplace_abort(cp);
        return NULL;
    }
    return cp;
}

void callplace_abort(struct callplace *cp)
{
    if (cp == NULL)
        return;
    for (uint32_t t = 0; cp->win && t < cp->nthr; t++)
        free(cp->win[t]);
    free(cp->win);
    callstore_free(&cp->s);
    free(cp);
}

/* Give the window's first call its slot. */
static int emit(struct callplace *cp, struct callwin *w)
{
    uint32_t h = w->head;

    w->last = w->c[h].t_enter_ns;
    w->head = (h + 1) % (WIN + 1);
    w->n--;
    return callstore_set(&cp->s, w->next++, &w->c[h], w->seq[h], w->stack[h]);
}

int callplace_put(struct callplace *cp, const struct model *m, uint32_t t,
                  const struct m_call *c, uint32_t seq, uint32_t stack)
{
    struct callwin *w = cp->win[t];
    uint32_t j;

    if (w == NULL) {
        if ((w = cp->win[t] = calloc(1, sizeof(*w))) == NULL)
            return -ENOMEM;
        w->next = m->thr[t].first_call;
    }
    if (w->next > m->thr[t].first_call && c->t_enter_ns < w->last)
        return -EAGAIN; /* before a call already placed: the window was too short */
    for (j = w->n; j > 0; j--) { /* insertion from the end: usually none moves */
        uint32_t to = (w->head + j) % (WIN + 1), from = (w->head + j - 1) % (WIN + 1);
        if (w->c[from].t_enter_ns <= c->t_enter_ns)
            break;
        w->c[to] = w->c[from], w->seq[to] = w->seq[from], w->stack[to] = w->stack[from];
    }
    j = (w->head + j) % (WIN + 1);
    w->c[j] = *c, w->seq[j] = seq, w->stack[j] = stack;
    return ++w->n > WIN ? emit(cp, w) : 0;
}

struct callstore *callplace_close(struct callplace *cp)
{
    struct callstore *s = malloc(sizeof(*s));
    int rc = s ? 0 : -ENOMEM;

    for (uint32_t t = 0; t < cp->nthr && rc == 0; t++)
        while (cp->win[t] && cp->win[t]->n && rc == 0)
            rc = emit(cp, cp->win[t]);
    if (rc == 0)
        rc = callstore_close(&cp->s);
    if (rc < 0) {
        free(s);
        callplace_abort(cp);
        return NULL;
    }
    *s = cp->s;
    callstore_init(&cp->s);
    callplace_abort(cp);
    return s;
}

int model_calls_compact(struct model *m)
{
    struct callstore *s;
    struct callplace *cp;
    int rc = 0;

    if (m->call == NULL)
        return 0; /* placed there while loading */
    if ((cp = callplace_open(m, m->ncall)) == NULL)
        return -ENOMEM;
    for (uint64_t i = 0; i < m->ncall && rc == 0; i++)
        rc = callstore_set(&cp->s, i, &m->call[i], 0, 0);
    if (rc < 0) {
        callplace_abort(cp);
        return rc; /* the array stays: model_call() reads it */
    }
    if ((s = callplace_close(cp)) == NULL)
        return -ENOMEM;
    model_free_big(m->call);
    m->call = NULL;
    m->cstore = s;
    return 0;
}

void model_calls_free(struct model *m)
{
    if (m->cstore)
        callstore_free(m->cstore);
    free(m->cstore);
    m->cstore = NULL;
}

/* Is call @p i entered before @p t (at @p t too when @p strict)? */
static int before(const struct callstore *s, uint64_t i, uint64_t t, int strict)
{
    uint64_t e = callstore_enter(s, i);

    return e < t || (strict && e == t);
}

/* A bisection of [lo, hi) by enter time: any call's enter time is a
 * decode of one column, so the blocks need no search of their own. */
uint64_t model_call_search_stored(const struct model *m, uint64_t lo, uint64_t hi, uint64_t t,
                                  int strict)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (before(m->cstore, mid, t, strict))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t model_calls_inside(const struct model *m, uint32_t t, uint64_t t0, uint64_t t1)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t end = th->first_call + th->ncalls, sum = 0;
    uint64_t i = model_call_search(m, th->first_call, end, t0, 0);

    while (i > th->first_call && (model_call(m, i - 1).flags & CS_CF_NESTED))
        i--; /* nested calls sit inside the outermost one before them */
    if (i > th->first_call)
        i--; /* which may span t0 */
    for (; i < end; i++) {
        const struct m_call c = model_call(m, i);
        if (c.t_enter_ns >= t1)
            break;
        if (!(c.flags & CS_CF_NESTED))
            sum += model_overlap(c.t_enter_ns, c.t_exit_ns, t0, t1);
    }
    return sum;
}
