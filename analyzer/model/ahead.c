/* model/ahead.c: blocks read ahead on a second thread (ahead.h). Owns the
 * ring of decoded blocks between the reader thread, which fills a slot
 * while the caller works on another, and the caller. A slot holds a copy:
 * the cursor's block is only good until its next read. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ahead.h"

#define SLOTS 16

struct slot {
    struct cs_blk_hdr h;
    void *recs;
    size_t cap;
};

struct ahead {
    struct cs_cursor *c;
    pthread_mutex_t mu;
    pthread_cond_t filled, freed;
    uint64_t head, tail; /* slots filled, slots given back (head - tail <= SLOTS) */
    int waiting[2];      /* the reader (0), the caller (1) sleeps: wake it */
    int done, end_rc;    /* the reader's end: 0 or an error */
    int stop;            /* the caller's fn failed: read no more */
    struct cs_err err;
    struct slot s[SLOTS];
};

/* Copy block @p h into @p s. @return 0 or -ENOMEM */
static int slot_fill(struct slot *s, const struct cs_blk_hdr *h, const void *recs)
{
    size_t bytes = (size_t)h->n * h->rec_size;

    if (bytes > s->cap) {
        void *p = realloc(s->recs, bytes);
        if (p == NULL)
            return -ENOMEM;
        s->recs = p;
        s->cap = bytes;
    }
    s->h = *h;
    if (bytes)
        memcpy(s->recs, recs, bytes);
    return 0;
}

/* Wait for a free slot. @return 0, or 1 once the caller stopped */
static int wait_free(struct ahead *x)
{
    int stop;

    pthread_mutex_lock(&x->mu);
    while (x->head - x->tail == SLOTS && !x->stop) {
        x->waiting[0] = 1;
        pthread_cond_wait(&x->freed, &x->mu);
        x->waiting[0] = 0;
    }
    stop = x->stop;
    pthread_mutex_unlock(&x->mu);
    return stop;
}

static void *reader(void *arg)
{
    struct ahead *x = arg;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = 0;

    while (wait_free(x) == 0) {
        rc = cs_cursor_next(x->c, &h, &recs, &x->err);
        if (rc == 1 && slot_fill(&x->s[x->head % SLOTS], h, recs) < 0)
            rc = cs_err_set(&x->err, -ENOMEM, "out of memory reading ahead");
        if (rc != 1)
            break;
        pthread_mutex_lock(&x->mu);
        x->head++;
        if (x->waiting[1])
            pthread_cond_signal(&x->filled);
        pthread_mutex_unlock(&x->mu);
    }
    pthread_mutex_lock(&x->mu);
    x->done = 1;
    x->end_rc = rc < 0 ? rc : 0;
    pthread_cond_signal(&x->filled);
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* The next filled slot, or NULL at the reader's end. */
static struct slot *next_filled(struct ahead *x)
{
    struct slot *s = NULL;

    pthread_mutex_lock(&x->mu);
    while (x->tail == x->head && !x->done) {
        x->waiting[1] = 1;
        pthread_cond_wait(&x->filled, &x->mu);
        x->waiting[1] = 0;
    }
    if (x->tail != x->head)
        s = &x->s[x->tail % SLOTS];
    pthread_mutex_unlock(&x->mu);
    return s;
}

/* Give the last slot back; after a failed fn, stop the reader too. */
static void give_back(struct ahead *x, int failed)
{
    pthread_mutex_lock(&x->mu);
    x->tail++;
    x->stop |= failed;
    if ((x->waiting[0] && x->head - x->tail <= SLOTS / 2) || failed)
        pthread_cond_signal(&x->freed); /* half the ring free: a wake a block costs more */
    pthread_mutex_unlock(&x->mu);
}

/* Where no thread can be had: the same blocks, read in turn. */
static int read_here(struct cs_cursor *c, ahead_fn fn, void *arg, struct cs_err *err)
{
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc;

    while ((rc = cs_cursor_next(c, &h, &recs, err)) == 1)
        if ((rc = fn(h, recs, arg)) != 0)
            return rc;
    return rc;
}

int ahead_read(struct cs_cursor *c, ahead_fn fn, void *arg, struct cs_err *err)
{
    struct ahead *x = calloc(1, sizeof(*x));
    struct slot *s;
    pthread_t th;
    int rc = 0;

    if (x == NULL)
        return read_here(c, fn, arg, err);
    x->c = c;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->filled, NULL);
    pthread_cond_init(&x->freed, NULL);
    if (pthread_create(&th, NULL, reader, x) != 0) {
        rc = read_here(c, fn, arg, err);
        goto out;
    }
    while (rc == 0 && (s = next_filled(x)) != NULL) {
        rc = fn(&s->h, s->recs, arg);
        give_back(x, rc != 0);
    }
    pthread_join(th, NULL);
    if (rc == 0 && x->end_rc < 0) {
        rc = x->end_rc;
        if (err)
            *err = x->err;
    }
out:
    for (int i = 0; i < SLOTS; i++)
        free(x->s[i].recs);
    pthread_cond_destroy(&x->freed);
    pthread_cond_destroy(&x->filled);
    pthread_mutex_destroy(&x->mu);
    free(x);
    return rc;
}
