/* runfile_commit.c: the store's two threads. The committer writes one
 * staged set in its own txn while the collector stages the next; the
 * flusher fdatasync()s the file on an interval, so the writer never waits
 * for the disk. Staging and the commit itself are runfile_write.c's. */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "runfile_priv.h"

/* ---- background commit ---- */

static void *committer_main(void *arg)
{
    struct cs_store *s = arg;
    struct committer *m = &s->cm;

    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->stop && !m->busy)
            pthread_cond_wait(&m->cv, &m->mu);
        if (!m->busy)
            break; /* stop, with nothing left to write */
        pthread_mutex_unlock(&m->mu);
        int rc = store_commit_set(s, m->ops, m->nops, m->arena);
        /* a capped run's eviction follows its commit here, off the
         * caller's thread like the commit (it alone deletes: no race) */
        struct cs_evict ev;
        int erc = rc == 0 && m->evict_max ? cs_store_evict(s, m->evict_max, &ev) : 1;
        pthread_mutex_lock(&m->mu);
        if (erc <= 0)
            store_evict_note(s, erc, &ev);
        m->err = rc;
        if (rc == 0)
            m->nops = m->arena_len = 0;
        m->busy = 0;
        pthread_cond_broadcast(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

static int committer_start(struct cs_store *s)
{
    struct committer *m = &s->cm;
    sigset_t all, old;
    int rc;

    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    m->stop = m->busy = m->err = 0;
    sigfillset(&all); /* signals stay the caller's, as the flusher's */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&m->th, NULL, committer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        pthread_cond_destroy(&m->cv);
        pthread_mutex_destroy(&m->mu);
        return -rc;
    }
    m->on = 1;
    return 0;
}

/* Wait until the committer is idle; then write here the set a failed
 * background commit left (the caller's staging comes after it).
 * @return 0 or that set's error. */
int store_commit_wait(struct cs_store *s)
{
    struct committer *m = &s->cm;
    int rc;

    if (!m->on)
        return 0;
    pthread_mutex_lock(&m->mu);
    while (m->busy)
        pthread_cond_wait(&m->cv, &m->mu);
    pthread_mutex_unlock(&m->mu);
    if (m->nops == 0)
        return 0;
    rc = store_commit_set(s, m->ops, m->nops, m->arena);
    m->err = rc;
    if (rc == 0)
        m->nops = m->arena_len = 0;
    return rc;
}

void store_committer_stop(struct cs_store *s)
{
    struct committer *m = &s->cm;

    if (!m->on)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->th, NULL);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    m->on = 0;
}

int cs_store_commit_start(struct cs_store *s)
{
    struct committer *m = &s->cm;
    struct stage_op *ops;
    uint8_t *arena;
    size_t cap;
    int rc = 0;

    if (s->env == NULL)
        return -EBADF;
    if (!m->on && (rc = committer_start(s)) < 0)
        return rc;
    pthread_mutex_lock(&m->mu);
    if (m->busy)
        rc = -EBUSY;
    else if (m->nops)
        rc = m->err < 0 ? m->err : CS_E_LMDB; /* left by a failure */
    if (rc < 0 || s->nops == 0) {
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    /* swap the staged set with the committer's empty one */
    ops = m->ops, m->ops = s->ops, s->ops = ops;
    cap = m->ops_cap, m->ops_cap = s->ops_cap, s->ops_cap = cap;
    arena = m->arena, m->arena = s->arena, s->arena = arena;
    cap = m->arena_cap, m->arena_cap = s->arena_cap, s->arena_cap = cap;
    m->nops = s->nops;
    m->arena_len = s->arena_len;
    m->evict_max = s->evict_after;
    s->nops = s->arena_len = 0;
    m->busy = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

int cs_store_commit_busy(struct cs_store *s)
{
    struct committer *m = &s->cm;
    int busy;

    if (!m->on)
        return 0;
    pthread_mutex_lock(&m->mu);
    busy = m->busy;
    pthread_mutex_unlock(&m->mu);
    return busy;
}

int cs_store_sync(struct cs_store *s)
{
    if (s->env == NULL)
        return -EBADF;
    cs_store_readers_check(s);
    return store_lmdb_rc(mdb_env_sync(s->env, 1));
}

/* ---- background flush ---- */

static void *flusher_main(void *arg)
{
    struct flusher *f = arg;
    struct timespec at;

    pthread_mutex_lock(&f->mu);
    clock_gettime(CLOCK_MONOTONIC, &at);
    while (!f->stop) {
        uint64_t ns = (uint64_t)at.tv_nsec + f->interval_ns;
        at.tv_sec += (time_t)(ns / 1000000000u);
        at.tv_nsec = (long)(ns % 1000000000u);
        while (!f->stop && pthread_cond_timedwait(&f->cv, &f->mu, &at) != ETIMEDOUT)
            ;
        if (f->stop)
            break;
        pthread_mutex_unlock(&f->mu);
        if (fdatasync(f->fd) < 0) {
            int expect = 0;
            atomic_compare_exchange_strong(&f->err, &expect, -errno);
        }
        pthread_mutex_lock(&f->mu);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

int cs_store_flush_start(struct cs_store *s, uint64_t interval_ns)
{
    struct flusher *f = &s->fl;
    pthread_condattr_t ca;
    sigset_t all, old;
    mdb_filehandle_t fd;
    int rc;

    if (s->env == NULL)
        return -EBADF;
    if (f->fd >= 0)
        return -EBUSY;
    if (mdb_env_get_fd(s->env, &fd) != 0)
        return CS_E_LMDB;
    f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (f->fd < 0)
        return -errno;
    f->interval_ns = interval_ns ? interval_ns : 1;
    f->stop = 0;
    atomic_store(&f->err, 0);
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* signals stay the caller's: the thread starts with all blocked, so a
     * SIGTERM interrupts the collector's poll(), not this thread's wait */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&f->th, NULL, flusher_main, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        return 0;
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    close(f->fd);
    f->fd = -1;
    return -rc;
}

int cs_store_flush_error(const struct cs_store *s)
{
    return atomic_load(&s->fl.err); /* 0 until a thread's fdatasync failed */
}

/* Stop and join the flusher, if any. */
void store_flush_stop(struct cs_store *s)
{
    struct flusher *f = &s->fl;

    if (f->fd < 0)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->th, NULL);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    close(f->fd);
    f->fd = -1;
}
