/* runfile.c: the run file of runfile.h. cs_store is the collector's single
 * LMDB writer (staging, commit with map growth and replay, sync); cs_run and
 * cs_cursor read it back, live or archived. Owns every LMDB call and the
 * translation of LMDB codes to CS_E_*, the thread that commits staged data
 * in the background and the one that flushes the file to disk; what goes
 * into blocks is the collector's
 * business. Layout: docs/format.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cudaspy/cudablk.h"
#include "cudaspy/grow.h"
#include "cudaspy/runfile.h"
#include "cudaspy/version.h"

enum db_id { DB_META, DB_PROCS, DB_THREADS, DB_CUDA, DB_HOST, DB_STRINGS, DB_STACKS, DB_AGG,
             DB_COUNT };

/* Every run has the databases below DB_REQUIRED; the others only some runs
 * (agg: size-capped runs, cs_store_agg_open()). */
#define DB_REQUIRED DB_AGG

static const char *const db_names[DB_COUNT] = {"meta",     "procs",   "threads", "cuda_blk",
                                               "host_blk", "strings", "stacks",  "agg"};
static const unsigned db_flags[DB_COUNT] = {0, 0, 0, 0, 0, MDB_INTEGERKEY, MDB_INTEGERKEY, 0};

#define STORE_DEFAULT_MAP (1ull << 30)
#define STORE_MIN_MAP     (256ull << 10)
#define BLK_KEY_BYTES     16

/* LMDB codes to ours; errno values pass through negated. */
static int lmdb_rc(int rc)
{
    switch (rc) {
    case 0: return 0;
    case MDB_MAP_FULL: return CS_E_MAPFULL;
    case MDB_INVALID: return CS_E_BADMAGIC;
    case MDB_VERSION_MISMATCH: return CS_E_VERSION;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND: return CS_E_CORRUPT;
    case MDB_NOTFOUND: return CS_E_NOTFOUND;
    default: return rc > 0 ? -rc : CS_E_LMDB;
    }
}

/* ---- identical-bytes interning (strings and stacks) ---- */

struct itab_ent {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    uint8_t *bytes; /* owned copy */
};

struct itab {
    struct itab_ent *ents; /* open addressing, cap a power of two */
    size_t cap, n;
    uint32_t next_id;
};

static uint64_t hash_bytes(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h | 1; /* 0 marks a free slot */
}

static int itab_grow(struct itab *t)
{
    size_t cap = t->cap ? t->cap * 2 : 256;
    struct itab_ent *e = calloc(cap, sizeof(*e));

    if (e == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        size_t j;
        if (t->ents[i].hash == 0)
            continue;
        for (j = t->ents[i].hash & (cap - 1); e[j].hash; j = (j + 1) & (cap - 1))
            ;
        e[j] = t->ents[i];
    }
    free(t->ents);
    t->ents = e;
    t->cap = cap;
    return 0;
}

/* Find @p len bytes or add them with the next id; *is_new tells which. */
static int itab_get(struct itab *t, const void *p, size_t len, uint32_t *id, int *is_new)
{
    uint64_t h = hash_bytes(p, len);
    size_t j;

    *is_new = 0;
    if ((t->n + 1) * 2 > t->cap && itab_grow(t) < 0)
        return -ENOMEM;
    for (j = h & (t->cap - 1); t->ents[j].hash; j = (j + 1) & (t->cap - 1)) {
        struct itab_ent *e = &t->ents[j];
        if (e->hash == h && e->len == len && memcmp(e->bytes, p, len) == 0) {
            *id = e->id;
            return 0;
        }
    }
    t->ents[j].bytes = malloc(len ? len : 1);
    if (t->ents[j].bytes == NULL)
        return -ENOMEM;
    memcpy(t->ents[j].bytes, p, len);
    t->ents[j].hash = h;
    t->ents[j].len = (uint32_t)len;
    t->ents[j].id = *id = ++t->next_id;
    t->n++;
    *is_new = 1;
    return 0;
}

static void itab_free(struct itab *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->ents[i].bytes);
    free(t->ents);
    memset(t, 0, sizeof(*t));
}

/* ================= writer ================= */

/* One staged put: key and value bytes live in the arena. */
struct stage_op {
    uint32_t db;
    uint32_t klen;
    size_t koff, voff, vlen;
};

/* The background flush (cs_store_flush_start): fdatasync() of its own
 * descriptor of the file every interval, so that the writer never waits for
 * the disk. */
struct flusher {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;      /* dup of the LMDB file's; -1 = no thread */
    int stop;    /* under mu */
    uint64_t interval_ns;
    _Atomic int err; /* first failure, -errno; 0 = none */
};

/* The background commit (cs_store_commit_start): a thread of the store's
 * own writes one staged set (ops + arena) in one txn while the caller
 * stages the next, so that staging never waits for LMDB or the page cache
 * (one 2 MiB commit took 20-45 ms on the dev VM, longer than a busy shim
 * ring lasts). */
struct committer {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int on;   /* the thread runs */
    int stop; /* under mu */
    int busy; /* under mu: the set below is handed over and not written yet */
    int err;  /* under mu: the last background commit's result */
    struct stage_op *ops; /* the set being written, or left by a failure */
    size_t nops, ops_cap;
    uint8_t *arena;
    size_t arena_len, arena_cap;
};

struct cs_store {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT];
    char *path;
    uint64_t map_bytes, max_map_bytes;
    struct stage_op *ops; /* staged until a commit succeeds */
    size_t nops, ops_cap;
    uint8_t *arena;
    size_t arena_len, arena_cap;
    uint32_t blk_seq;
    int has_agg; /* the agg database is open (cs_store_agg_open) */
    int has_pysample; /* a CS_REC_PYSAMPLE block was staged: format version 3 */
    uint64_t evict_ts_max_ns, evict_blocks, evict_records; /* cs_store_evict totals */
    uint8_t *enc; /* CS_BLK_MAX_BYTES: a compact block being encoded */
    struct itab strings, stacks;
    struct flusher fl;
    struct committer cm;
};

struct cs_store *cs_store_new(void)
{
    struct cs_store *s = calloc(1, sizeof(struct cs_store));

    if (s)
        s->fl.fd = -1;
    return s;
}

static int arena_reserve(struct cs_store *s, size_t n, size_t *off)
{
    size_t need = (s->arena_len + n + 7) & ~(size_t)7;

    if (need > s->arena_cap) {
        size_t cap = s->arena_cap ? s->arena_cap : (1u << 20);
        uint8_t *a;
        while (cap < need)
            cap *= 2;
        a = realloc(s->arena, cap);
        if (a == NULL)
            return -ENOMEM;
        s->arena = a;
        s->arena_cap = cap;
    }
    *off = s->arena_len;
    s->arena_len = need;
    return 0;
}

/* Stage a put of @p klen + @p vlen bytes; returns where to write the value
 * (valid until the next stage call) through @p val. */
static int stage_put(struct cs_store *s, unsigned db, const void *key, size_t klen, size_t vlen,
                     uint8_t **val)
{
    struct stage_op *op;
    size_t koff, voff;

    if (s->env == NULL)
        return -EBADF;
    if (s->nops == s->ops_cap) {
        size_t cap = s->ops_cap ? s->ops_cap * 2 : 1024;
        struct stage_op *o = realloc(s->ops, cap * sizeof(*o));
        if (o == NULL)
            return -ENOMEM;
        s->ops = o;
        s->ops_cap = cap;
    }
    if (arena_reserve(s, klen, &koff) < 0 || arena_reserve(s, vlen, &voff) < 0)
        return -ENOMEM;
    memcpy(s->arena + koff, key, klen);
    op = &s->ops[s->nops++];
    op->db = db;
    op->klen = (uint32_t)klen;
    op->koff = koff;
    op->voff = voff;
    op->vlen = vlen;
    *val = s->arena + voff;
    return 0;
}

static int stage_copy(struct cs_store *s, unsigned db, const void *key, size_t klen,
                      const void *v, size_t vlen)
{
    uint8_t *dst;
    int rc = stage_put(s, db, key, klen, vlen, &dst);

    if (rc == 0 && vlen)
        memcpy(dst, v, vlen);
    return rc;
}

static int env_create(MDB_env **env, uint64_t map_bytes)
{
    int rc = mdb_env_create(env);

    if (rc)
        return rc;
    mdb_env_set_maxdbs(*env, 16);
    mdb_env_set_maxreaders(*env, 512);
    if (map_bytes)
        rc = mdb_env_set_mapsize(*env, (size_t)map_bytes);
    if (rc) {
        mdb_env_close(*env);
        *env = NULL;
    }
    return rc;
}

/* Open every named database in one write txn and commit it, so the handles
 * stay valid for the env's lifetime. */
static int store_open_dbs(struct cs_store *s)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);

    if (rc)
        return rc;
    for (int i = 0; i < DB_REQUIRED && rc == 0; i++)
        rc = mdb_dbi_open(txn, db_names[i], MDB_CREATE | db_flags[i], &s->dbi[i]);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

static void store_unlink(const char *path)
{
    char lock[4096];

    unlink(path);
    snprintf(lock, sizeof(lock), "%s-lock", path);
    unlink(lock);
}

int cs_store_open(struct cs_store *s, const char *path, const struct cs_store_opts *o,
                  struct cs_err *err)
{
    int rc;

    if (s->env)
        return cs_err_set(err, -EBUSY, "%s: store already open", path);
    /* LMDB mallocs a buffer per dirty overflow run; keep glibc from mmap/trim
     * churn on those (256 KiB blocks: 4.3 M records/s with glibc's defaults,
     * 16-19 M with both thresholds raised, measured at the design stage). */
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    s->map_bytes = o && o->map_bytes ? o->map_bytes : STORE_DEFAULT_MAP;
    if (s->map_bytes < STORE_MIN_MAP)
        s->map_bytes = STORE_MIN_MAP;
    s->max_map_bytes = o ? o->max_map_bytes : 0;
    store_unlink(path);
    rc = env_create(&s->env, s->map_bytes);
    if (rc == 0) {
        rc = mdb_env_open(s->env, path, MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOMETASYNC, 0600);
        if (rc)
            mdb_env_close(s->env);
    }
    if (rc) {
        s->env = NULL;
        return cs_err_set(err, lmdb_rc(rc), "%s: cannot create run file (%s)", path,
                          mdb_strerror(rc));
    }
    s->path = strdup(path);
    rc = store_open_dbs(s);
    if (rc == 0 && s->path == NULL)
        rc = ENOMEM;
    if (rc == 0) {
        cs_store_put_meta(s, "format", CS_FORMAT_MAGIC);
        cs_store_put_meta_u64(s, "format_version", CS_FORMAT_VERSION_PLAIN);
        cs_store_put_meta(s, "tool_version", CS_VERSION);
        rc = cs_store_commit(s);
        if (rc < 0) {
            cs_store_close(s);
            return cs_err_set(err, rc, "%s: cannot write run file (%s)", path, cs_strerror(rc));
        }
        return 0;
    }
    cs_store_close(s);
    return cs_err_set(err, lmdb_rc(rc), "%s: cannot create run file (%s)", path,
                      mdb_strerror(rc));
}

static void blk_key(struct cs_store *s, uint8_t *key, uint64_t ts_first_ns, uint32_t source)
{
    cs_be64_put(key, ts_first_ns);
    cs_be32_put(key + 8, source);
    cs_be32_put(key + 12, ++s->blk_seq);
}

/* ts_first_ns and ts_last_ns of @p n records. */
static void cuda_span(struct cs_blk_hdr *h, const struct cs_rec_cuda *r, uint32_t n)
{
    h->ts_first_ns = UINT64_MAX;
    h->ts_last_ns = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (r[i].t_enter_ns < h->ts_first_ns)
            h->ts_first_ns = r[i].t_enter_ns;
        if (r[i].t_exit_ns > h->ts_last_ns)
            h->ts_last_ns = r[i].t_exit_ns;
    }
}

/* CUDA records become compact blocks (cudablk.h), as many as it takes: a
 * put that fits one block keeps the caller's header and key; when it does
 * not, each block gets the time span of its own records and is encoded
 * again against it (which may take fewer records: then again). */
static int put_cuda(struct cs_store *s, uint32_t source, const struct cs_blk_hdr *h,
                    const struct cs_rec_cuda *recs)
{
    uint8_t key[BLK_KEY_BYTES];
    uint32_t done = 0;
    int rc;

    if (s->enc == NULL && (s->enc = malloc(CS_BLK_MAX_BYTES)) == NULL)
        return -ENOMEM;
    while (done < h->n) {
        struct cs_blk_hdr sub = *h;
        size_t len;
        int m = cs_cudablk_encode(&sub, recs + done, h->n - done, s->enc, CS_BLK_MAX_BYTES, &len);
        while (m > 0 && (done > 0 || (uint32_t)m < h->n)) {
            uint32_t want = (uint32_t)m;
            cuda_span(&sub, recs + done, want);
            m = cs_cudablk_encode(&sub, recs + done, want, s->enc, CS_BLK_MAX_BYTES, &len);
            if (m == (int)want)
                break;
        }
        if (m < 0)
            return m;
        blk_key(s, key, sub.ts_first_ns, source);
        rc = stage_copy(s, DB_CUDA, key, sizeof(key), s->enc, len);
        if (rc)
            return rc;
        done += (uint32_t)m;
    }
    return 0;
}

int cs_store_put_block(struct cs_store *s, uint32_t source, const struct cs_blk_hdr *h,
                       const void *recs)
{
    unsigned rs = cs_rec_size(h->kind);
    size_t bytes = sizeof(*h) + (size_t)h->n * rs;
    uint8_t key[BLK_KEY_BYTES], *v;
    struct cs_blk_hdr hdr = *h;
    int rc;

    if (rs == 0 || h->n == 0)
        return -EINVAL;
    if (s->env == NULL)
        return -EBADF;
    if (h->kind == CS_REC_CUDA)
        return put_cuda(s, source, h, recs);
    if (bytes > CS_BLK_MAX_BYTES)
        return -EINVAL;
    if (h->kind == CS_REC_PYSAMPLE && !s->has_pysample) { /* version.h: 3 once it holds one */
        if ((rc = cs_store_put_meta_u64(s, "format_version", CS_FORMAT_VERSION)) < 0)
            return rc;
        s->has_pysample = 1;
    }
    hdr.rec_size = (uint16_t)rs;
    blk_key(s, key, h->ts_first_ns, source);
    rc = stage_put(s, DB_HOST, key, sizeof(key), bytes, &v);
    if (rc)
        return rc;
    memcpy(v, &hdr, sizeof(hdr));
    memcpy(v + sizeof(hdr), recs, bytes - sizeof(hdr));
    return 0;
}

int cs_store_put_proc(struct cs_store *s, const struct cs_proc *p)
{
    uint8_t key[12];

    cs_be32_put(key, p->pid);
    cs_be64_put(key + 4, p->start_ns);
    return stage_copy(s, DB_PROCS, key, sizeof(key), p, sizeof(*p));
}

int cs_store_put_thread(struct cs_store *s, const struct cs_thread *t)
{
    uint8_t key[16];

    cs_be32_put(key, t->pid);
    cs_be32_put(key + 4, t->tid);
    cs_be64_put(key + 8, t->start_ns);
    return stage_copy(s, DB_THREADS, key, sizeof(key), t, sizeof(*t));
}

/* Intern into @p t; a new entry is staged into @p db under its u32 id. If
 * staging fails the entry stays in the table: the id is still right but its
 * bytes are lost, which costs one name, never a wrong one. */
static int intern_into(struct cs_store *s, struct itab *t, unsigned db, const void *p,
                       size_t len, uint32_t *id)
{
    int is_new, rc;

    if (s->env == NULL)
        return -EBADF;
    rc = itab_get(t, p, len, id, &is_new);
    if (rc || !is_new)
        return rc;
    return stage_copy(s, db, id, sizeof(*id), p, len);
}

int cs_store_intern(struct cs_store *s, const char *str, size_t len, uint32_t *id)
{
    return intern_into(s, &s->strings, DB_STRINGS, str, len, id);
}

int cs_store_put_stack(struct cs_store *s, const struct cs_frame *f, uint32_t n, uint32_t *id)
{
    if (n == 0)
        return -EINVAL;
    return intern_into(s, &s->stacks, DB_STACKS, f, (size_t)n * sizeof(*f), id);
}

int cs_store_put_meta(struct cs_store *s, const char *key, const char *val)
{
    size_t klen = strlen(key);

    if (klen == 0 || klen > 400)
        return -EINVAL;
    return stage_copy(s, DB_META, key, klen, val, strlen(val));
}

int cs_store_put_meta_u64(struct cs_store *s, const char *key, uint64_t val)
{
    char buf[24];

    snprintf(buf, sizeof(buf), "%" PRIu64, val);
    return cs_store_put_meta(s, key, buf);
}

/* Bytes the file uses now. */
static uint64_t store_used_bytes(struct cs_store *s)
{
    MDB_envinfo info;
    MDB_stat st;

    if (mdb_env_info(s->env, &info) || mdb_env_stat(s->env, &st))
        return 0;
    return ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

/* Double the map (no txn may be open). */
static int store_grow(struct cs_store *s)
{
    uint64_t want = s->map_bytes * 2;
    int rc;

    if (s->max_map_bytes && want > s->max_map_bytes) {
        if (s->map_bytes >= s->max_map_bytes)
            return CS_E_MAPFULL;
        want = s->max_map_bytes;
    }
    rc = mdb_env_set_mapsize(s->env, (size_t)want);
    if (rc)
        return rc == ENOMEM ? CS_E_MAPFULL : lmdb_rc(rc);
    s->map_bytes = want;
    return 0;
}

/* Write @p nops staged ops in one txn. Returns the raw LMDB/errno code. */
static int store_write_all(struct cs_store *s, const struct stage_op *ops, size_t nops,
                           uint8_t *arena)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);

    if (rc)
        return rc;
    for (size_t i = 0; i < nops && rc == 0; i++) {
        const struct stage_op *op = &ops[i];
        MDB_val k = {op->klen, arena + op->koff};
        MDB_val v = {op->vlen, arena + op->voff};
        rc = mdb_put(txn, s->dbi[op->db], &k, &v, 0);
    }
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

/* Commit one staged set, growing the map as needed. Only one thread at a
 * time runs it (the caller's, or the committer's while cm.busy). */
static int store_commit_set(struct cs_store *s, const struct stage_op *ops, size_t nops,
                            uint8_t *arena)
{
    int rc;

    /* Grow ahead at 80 % full; MDB_MAP_FULL below is the backstop. */
    while (store_used_bytes(s) > s->map_bytes / 5 * 4) {
        rc = store_grow(s);
        if (rc)
            break;
    }
    for (;;) {
        rc = store_write_all(s, ops, nops, arena);
        if (rc != MDB_MAP_FULL)
            break;
        rc = store_grow(s); /* the staged ops are intact: replay them */
        if (rc)
            return rc;
    }
    return rc ? lmdb_rc(rc) : 0;
}

static int commit_wait(struct cs_store *s);

int cs_store_commit(struct cs_store *s)
{
    int rc;

    if (s->env == NULL)
        return -EBADF;
    rc = commit_wait(s); /* a set the committer could not write goes first */
    if (rc < 0)
        return rc;
    if (s->nops == 0)
        return 0;
    rc = store_commit_set(s, s->ops, s->nops, s->arena);
    if (rc)
        return rc;
    s->nops = 0;
    s->arena_len = 0;
    return 0;
}

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
        pthread_mutex_lock(&m->mu);
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
static int commit_wait(struct cs_store *s)
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

static void committer_stop(struct cs_store *s)
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
    return lmdb_rc(mdb_env_sync(s->env, 1));
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
static void flush_stop(struct cs_store *s)
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

int cs_store_readers_check(struct cs_store *s)
{
    int dead = 0;

    if (s->env == NULL)
        return -EBADF;
    /* a reader killed inside a txn (analyzer, MCP) pins old pages and makes
     * the file grow: clear its slot */
    return lmdb_rc(mdb_reader_check(s->env, &dead));
}

size_t cs_store_pending(const struct cs_store *s)
{
    return s->arena_len;
}

uint64_t cs_store_map_bytes(const struct cs_store *s)
{
    return s->map_bytes;
}

void cs_store_close(struct cs_store *s)
{
    if (s == NULL || s->env == NULL)
        return;
    flush_stop(s);
    cs_store_commit(s);
    committer_stop(s);
    mdb_env_sync(s->env, 1);
    mdb_env_close(s->env);
    s->env = NULL;
    free(s->path);
    s->path = NULL;
}

void cs_store_free(struct cs_store *s)
{
    if (s == NULL)
        return;
    cs_store_close(s);
    itab_free(&s->strings);
    itab_free(&s->stacks);
    free(s->ops);
    free(s->arena);
    free(s->cm.ops);
    free(s->cm.arena);
    free(s->enc);
    free(s);
}

/* ---- flight recorder (record --max-size; the policy is sampler/flight.c) ---- */

int cs_store_agg_open(struct cs_store *s)
{
    MDB_txn *txn = NULL;
    int rc;

    if (s->env == NULL)
        return -EBADF;
    rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc == 0)
        rc = mdb_dbi_open(txn, db_names[DB_AGG], MDB_CREATE | db_flags[DB_AGG], &s->dbi[DB_AGG]);
    if (rc) {
        if (txn)
            mdb_txn_abort(txn);
        return lmdb_rc(rc);
    }
    rc = mdb_txn_commit(txn);
    if (rc == 0)
        s->has_agg = 1;
    return lmdb_rc(rc);
}

int cs_store_put_agg(struct cs_store *s, const void *key, size_t klen, const void *val,
                     size_t vlen)
{
    if (!s->has_agg)
        return -EBADF;
    if (klen == 0 || klen > 400)
        return -EINVAL;
    return stage_copy(s, DB_AGG, key, klen, val, vlen);
}

/* Pages every database of @p txn holds (branch, leaf, overflow), the free
 * list's own included: what the file must keep, whatever it has freed. */
static uint64_t txn_live_bytes(MDB_txn *txn, const MDB_dbi *dbi, int has_agg)
{
    uint64_t pages = 0;
    MDB_stat st = {0};

    for (MDB_dbi d = 0; d < 2; d++) /* FREE_DBI, MAIN_DBI */
        if (mdb_stat(txn, d, &st) == 0)
            pages += st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
    for (int i = 0; i < DB_COUNT; i++)
        if ((i < DB_REQUIRED || has_agg) && mdb_stat(txn, dbi[i], &st) == 0)
            pages += st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
    return pages * st.ms_psize;
}

/* Bytes a block of @p vlen takes in its tree: a value over a quarter page
 * gets overflow pages of its own, a smaller one shares a leaf. */
static uint64_t blk_bytes(size_t vlen, unsigned psize)
{
    if (vlen + BLK_KEY_BYTES + 8 > psize / 4)
        return ((vlen + 16 + psize - 1) / psize) * (uint64_t)psize;
    return vlen + BLK_KEY_BYTES + 8 + 2;
}

/* Delete the block of cursor @p cur (positioned) and account for it. */
static int evict_one(MDB_cursor *cur, const MDB_val *v, unsigned psize, struct cs_evict *ev,
                     uint64_t *freed)
{
    struct cs_blk_hdr h;

    if (v->mv_size >= sizeof(h)) {
        memcpy(&h, v->mv_data, sizeof(h));
        ev->records += h.n;
        if (h.ts_last_ns > ev->ts_last_max_ns)
            ev->ts_last_max_ns = h.ts_last_ns;
    }
    *freed += blk_bytes(v->mv_size, psize);
    ev->blocks++;
    return mdb_cursor_del(cur, 0);
}

/* Oldest blocks first, cuda_blk and host_blk merged by key (ts_first). */
static int evict_oldest(MDB_txn *txn, const MDB_dbi *dbi, uint64_t excess, unsigned psize,
                        struct cs_evict *ev)
{
    MDB_cursor *cc = NULL, *hc = NULL;
    uint64_t freed = 0;
    int rc = mdb_cursor_open(txn, dbi[DB_CUDA], &cc);

    if (rc == 0)
        rc = mdb_cursor_open(txn, dbi[DB_HOST], &hc);
    while (rc == 0 && freed < excess) {
        MDB_val ck, cv, hk, hv;
        int rc_c = mdb_cursor_get(cc, &ck, &cv, MDB_FIRST);
        int rc_h = mdb_cursor_get(hc, &hk, &hv, MDB_FIRST);
        if (rc_c && rc_h) {
            rc = rc_c == MDB_NOTFOUND && rc_h == MDB_NOTFOUND ? 0 : rc_c ? rc_c : rc_h;
            break; /* nothing left to evict */
        }
        if (rc_h || (rc_c == 0 && memcmp(ck.mv_data, hk.mv_data, 8) <= 0))
            rc = evict_one(cc, &cv, psize, ev, &freed);
        else
            rc = evict_one(hc, &hv, psize, ev, &freed);
    }
    if (hc)
        mdb_cursor_close(hc);
    if (cc)
        mdb_cursor_close(cc);
    return rc;
}

/* The eviction totals, in the transaction that deletes: a reader never
 * sees blocks gone without knowing from when the detail is whole. */
static int evict_meta(struct cs_store *s, MDB_txn *txn, const struct cs_evict *ev)
{
    const char *const keys[3] = {"flight_detail_from_ns", "flight_evicted_blocks",
                                 "flight_evicted_records"};
    uint64_t vals[3];
    int rc = 0;

    if (ev->ts_last_max_ns > s->evict_ts_max_ns)
        s->evict_ts_max_ns = ev->ts_last_max_ns;
    s->evict_blocks += ev->blocks;
    s->evict_records += ev->records;
    vals[0] = s->evict_ts_max_ns;
    vals[1] = s->evict_blocks;
    vals[2] = s->evict_records;
    for (int i = 0; i < 3 && rc == 0; i++) {
        char buf[24];
        MDB_val k = {strlen(keys[i]), (void *)keys[i]}, v = {0, buf};
        v.mv_size = (size_t)snprintf(buf, sizeof(buf), "%" PRIu64, vals[i]);
        rc = mdb_put(txn, s->dbi[DB_META], &k, &v, 0);
    }
    return rc;
}

int cs_store_evict(struct cs_store *s, uint64_t live_max_bytes, struct cs_evict *ev)
{
    MDB_txn *txn;
    MDB_stat st;
    uint64_t live;
    int rc;

    memset(ev, 0, sizeof(*ev));
    if (s->env == NULL)
        return -EBADF;
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
        return lmdb_rc(rc);
    live = txn_live_bytes(txn, s->dbi, s->has_agg);
    mdb_env_stat(s->env, &st);
    if (live > live_max_bytes)
        rc = evict_oldest(txn, s->dbi, live - live_max_bytes, st.ms_psize, ev);
    if (rc == 0 && ev->blocks) {
        live = txn_live_bytes(txn, s->dbi, s->has_agg);
        rc = evict_meta(s, txn, ev);
    }
    if (rc || ev->blocks == 0)
        mdb_txn_abort(txn);
    else
        rc = mdb_txn_commit(txn);
    ev->live_bytes = live;
    ev->file_bytes = store_used_bytes(s);
    return rc ? lmdb_rc(rc) : 0;
}

/* ================= reader ================= */

struct meta_kv {
    char *key, *val;
};

struct run_stack {
    struct cs_frame *f;
    size_t n;
};

struct cs_run {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT];
    int has_db[DB_COUNT]; /* the optional ones may be absent */
    char *path;
    int fd;        /* held open for size checks */
    int ncursors;  /* open cursors (a map resize must wait for 0) */
    const uint8_t *map;  /* LMDB's map of the file, as last seen */
    uint64_t file_bytes; /* file size, as last seen */
    struct meta_kv *meta;
    size_t nmeta;
    char **strings; /* by id; NULL = unknown */
    size_t nstrings;
    struct cs_proc *procs;
    size_t nprocs;
    struct cs_thread *threads;
    size_t nthreads;
    struct run_stack *stacks; /* by id */
    size_t nstacks;
    uint64_t id_max; /* while loading strings or stacks: the largest id allowed */
    unsigned format_version; /* meta format_version: compact blocks from 2 on */
    /* cs_run_count(): records of each kind per table (0 host, 1 CUDA), from
     * one scan of its block headers, valid while the file's newest txn is
     * count_txnid[t] (a live writer's next commit makes them stale) */
    int counted[2];
    size_t count_txnid[2];
    uint64_t counts[2][CS_REC_KIND_COUNT];
};

/* How a cursor reads blocks. Through the map, reading a block's first page
 * maps the whole 2 MB page-cache folio around it, and a pass over a big file
 * leaves all of it mapped (RSS grows by the file's size); a pread() copy of
 * each block maps nothing, for about the cost of the page faults it saves.
 * Whole blocks, even to count: a cold file is read ahead well for 64 KB
 * reads, not for 32-byte header reads 64 KB apart (counting the cold 1.4 GB
 * bench run took 0.6-0.7 s by blocks, 2-2.8 s by headers). */
enum cursor_copy {
    COPY_NONE = 0, /* pointers into LMDB's map (cs_cursor_open()) */
    COPY_BLOCK = 1 /* each block copied into buf (cs_cursor_release_pages()) */
};

struct cs_cursor {
    struct cs_run *r;
    MDB_txn *txn;
    MDB_cursor *cur;
    unsigned kind, db;
    uint64_t since_ns, until_ns;
    int started;
    int any_kind; /* return blocks of every kind in the table (cs_run_count) */
    enum cursor_copy copy; /* how blocks are read */
    void *buf; /* aligned copy of a block stored unaligned in a leaf page */
    size_t buf_cap;
    struct cs_blk_hdr dhdr;  /* a compact block's header as handed out (decoded) */
    struct cs_rec_cuda *dec; /* its records, decoded; CS_CUDABLK_MAX_RECS once used */
};

struct cs_run *cs_run_new(void)
{
    struct cs_run *r = calloc(1, sizeof(*r));

    if (r)
        r->fd = -1;
    return r;
}

/* Offsets in an LMDB 0.9 meta page (64-bit): 16-byte page header, then
 * MDB_meta {magic u32, version u32, address, mapsize, dbs[2] (48 B each, the
 * first one's md_pad holds the page size), last_pg, txnid}. */
#define LM_MAGIC      0xBEEFC0DEu
#define LM_OFF_MAGIC  16
#define LM_OFF_VER    20
#define LM_OFF_PSIZE  40
#define LM_OFF_MAINDB 88
#define LM_OFF_LASTPG 136
#define LM_OFF_TXNID  144
#define LM_META_BYTES 152

/* An MDB_db record (48 bytes: pad u32, flags u16, depth u16, 4 counts,
 * root), as in the meta page (main DB) and in main-DB leaves (named DBs). */
#define LM_DB_BYTES     48
#define LM_DB_OFF_FLAGS 4
#define LM_DB_OFF_DEPTH 6
#define LM_DB_OFF_ROOT  40

struct lm_db {
    uint16_t flags, depth;
    uint64_t root; /* LM_P_INVALID: empty */
};

struct lm_meta {
    uint32_t psize;
    uint64_t last_pg, txnid;
    struct lm_db main_db;
};

static void lm_db_parse(const uint8_t *p, struct lm_db *d)
{
    memcpy(&d->flags, p + LM_DB_OFF_FLAGS, 2);
    memcpy(&d->depth, p + LM_DB_OFF_DEPTH, 2);
    memcpy(&d->root, p + LM_DB_OFF_ROOT, 8);
}

static int lm_meta_parse(const uint8_t *p, struct lm_meta *m)
{
    uint32_t magic, ver;

    memcpy(&magic, p + LM_OFF_MAGIC, 4);
    memcpy(&ver, p + LM_OFF_VER, 4);
    if (magic != LM_MAGIC || ver != 1)
        return -1;
    memcpy(&m->psize, p + LM_OFF_PSIZE, 4);
    memcpy(&m->last_pg, p + LM_OFF_LASTPG, 8);
    memcpy(&m->txnid, p + LM_OFF_TXNID, 8);
    lm_db_parse(p + LM_OFF_MAINDB, &m->main_db);
    return 0;
}

/* The meta page LMDB will use: the newer of the two (pages 0 and 1, page
 * size @p psize), as mdb_env_pick_meta() chooses. -1 if page 0 is bad. */
static int lm_meta_newest(int fd, uint32_t psize, struct lm_meta *m)
{
    uint8_t buf[LM_META_BYTES];
    struct lm_meta b;

    if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) || lm_meta_parse(buf, m) < 0)
        return -1;
    if (pread(fd, buf, sizeof(buf), psize) == (ssize_t)sizeof(buf) &&
        lm_meta_parse(buf, &b) == 0 && b.txnid > m->txnid)
        *m = b;
    return 0;
}

/* The meta LMDB will use now: page 0's gives the page size, then the newer
 * of pages 0 and 1 wins. *psize0 (if not NULL) gets page 0's page size.
 * @return 0, -1 when page 0 holds no meta, -2 when the newest meta gives
 * another page size than page 0's (both carry the environment's; a fuzzed
 * file's page 1 said 0). */
static int lm_meta_now(int fd, struct lm_meta *m, uint32_t *psize0)
{
    uint32_t psize;

    if (lm_meta_newest(fd, 0, m) < 0) /* psize 0: page 0's meta twice */
        return -1;
    psize = m->psize;
    if (psize0)
        *psize0 = psize;
    lm_meta_newest(fd, psize, m);
    return m->psize == psize ? 0 : -2;
}

static int run_truncated(const char *path, uint32_t psize, uint64_t pgno, int64_t size,
                         struct cs_err *err)
{
    return cs_err_set(err, CS_E_TRUNCATED,
                      "%s: truncated file (expected %" PRIu32 "-byte page at offset %" PRIu64
                      ", file ends at %" PRId64 ")",
                      path, psize, pgno * psize, size);
}

/* Check the file before LMDB maps it: magic, page size, and that it holds
 * every page its newest meta page counts (else touching them is SIGBUS). */
static int run_precheck(struct cs_run *r, const char *path, struct cs_err *err)
{
    struct lm_meta m;
    struct stat st;
    uint32_t psize;
    int rc;

    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        int e = errno;
        return cs_err_set(err, -e, "%s: %s", path, strerror(e));
    }
    if (fstat(r->fd, &st) < 0)
        return cs_err_set(err, -errno, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return cs_err_set(err, CS_E_BADMAGIC, "%s: not a cudaspy run file (a directory)", path);
    if (st.st_size == 0)
        return cs_err_set(err, CS_E_TRUNCATED, "%s: truncated file (0 bytes)", path);
    if ((rc = lm_meta_now(r->fd, &m, &psize)) == -1)
        return cs_err_set(err, CS_E_BADMAGIC, "%s: not a cudaspy run file (no LMDB header)",
                          path);
    if (psize < 512 || psize > 65536 || (psize & (psize - 1)))
        return cs_err_set(err, CS_E_CORRUPT, "%s: corrupt run file (page size %" PRIu32 ")",
                          path, psize);
    if (st.st_size < 2 * (int64_t)psize)
        return run_truncated(path, psize, 1, st.st_size, err);
    if (rc < 0)
        return cs_err_set(err, CS_E_CORRUPT, "%s: corrupt run file (page size %" PRIu32
                          " in the newest meta, %" PRIu32 " in the first)", path, m.psize, psize);
    if (m.last_pg >= (uint64_t)st.st_size / m.psize) /* no (last_pg + 1) * psize overflow */
        return run_truncated(path, m.psize, m.last_pg, st.st_size, err);
    return 0;
}

/* ---- structure check: the pages LMDB walks when we open a run ----
 * LMDB trusts its pages. A page whose mp_lower is below the 16-byte header
 * has NUMKEYS() near 2^31, and mdb_node_search()'s binary search then
 * overflows (low + high) and never ends: bug 5 of docs/reliability.md, a
 * main-DB root flagged LEAF2 with mp_lower 0, hung cs_run_open() inside
 * mdb_dbi_open(). Branch pages that are not a tree make a cursor walk
 * revisit rows, or trip an LMDB assertion (abort) in mdb_cursor_next().
 * So before LMDB maps the file we pread() and check, on the newest meta's
 * snapshot: every page of the main DB and of the five small tables that
 * cs_run_open() loads whole (each page reached once, leaves exactly at the
 * depth the DB record gives), and the root-to-first-leaf path (MDB_FIRST's)
 * of the two block tables. Per page: its number, branch or leaf flags,
 * lower/upper, every node inside the page, child page numbers in the file.
 * Cost: the pages open reads anyway plus a few per block table; never a
 * pass over the blocks. Constants are LMDB 0.9's (mdb.c). */
#define LM_PAGEHDR     16u
#define LM_P_BRANCH    0x01u
#define LM_P_LEAF      0x02u
#define LM_P_KINDS     0x6fu /* BRANCH LEAF OVERFLOW META LEAF2 SUBP */
#define LM_F_BIGDATA   0x01u
#define LM_F_SUBDATA   0x02u
#define LM_F_DUPDATA   0x04u
#define LM_NODEHDR     8u
#define LM_MAX_DEPTH   31u /* CURSOR_STACK 32 */
#define LM_P_INVALID   UINT64_MAX
#define LM_DUP_FLAGS   (MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)
#define LM_CHECK_TRIES 4
#define LM_LOCAL_PAGES (16u << 10) /* page buffers on the stack: 4 levels of 4 KiB */
#define LM_LOCAL_SEEN  (8u << 10)  /* bitmap on the stack: files up to 256 MiB */

struct lm_walk {
    struct cs_run *r;
    const struct lm_meta *m;
    const char *tree;      /* "main database" or a table name, for messages */
    int is_main;           /* main-DB leaves hold the named DB records */
    uint8_t *seen;         /* bit per page number: reached (twice = not a tree) */
    uint8_t *pages;        /* one page buffer per level of the tree walked */
    struct lm_db named[DB_COUNT];
    int found[DB_COUNT];
    struct cs_err *err;
};

static uint16_t lm_u16(const uint8_t *p, size_t off)
{
    uint16_t v;

    memcpy(&v, p + off, 2);
    return v;
}

__attribute__((format(printf, 3, 4))) static int lm_bad(struct lm_walk *w, uint64_t pgno,
                                                         const char *fmt, ...)
{
    char what[128];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return cs_err_set(w->err, CS_E_CORRUPT, "%s: corrupt run file (%s, page %" PRIu64 ": %s)",
                      w->r->path, w->tree, pgno, what);
}

/* A main-DB leaf node: keep the record of a named DB we open. */
static int lm_named(struct lm_walk *w, uint64_t pgno, const uint8_t *nd, unsigned dsize)
{
    unsigned ksize = lm_u16(nd, 6);

    if ((lm_u16(nd, 4) & (LM_F_SUBDATA | LM_F_DUPDATA)) != LM_F_SUBDATA)
        return 0; /* not a named DB: mdb_dbi_open() refuses it by itself */
    if ((lm_u16(nd, 4) & LM_F_BIGDATA) || dsize != LM_DB_BYTES)
        return lm_bad(w, pgno, "database record of %u bytes, flags 0x%x", dsize, lm_u16(nd, 4));
    for (int i = 0; i < DB_COUNT; i++)
        if (strlen(db_names[i]) == ksize && memcmp(nd + LM_NODEHDR, db_names[i], ksize) == 0) {
            lm_db_parse(nd + LM_NODEHDR + ksize, &w->named[i]);
            w->found[i] = 1;
        }
    return 0;
}

/* Check that node @p i of page @p p (LMDB's layout) lies inside the page;
 * a branch node's child page number goes to *child. */
static int lm_node(struct lm_walk *w, uint64_t pgno, const uint8_t *p, unsigned i, int leaf,
                   uint64_t *child)
{
    uint32_t psize = w->m->psize;
    unsigned off = lm_u16(p, LM_PAGEHDR + 2 * i), ksize, flags, dsize, dlen;
    const uint8_t *nd = p + off;

    if (off < lm_u16(p, 14) || off + LM_NODEHDR > psize)
        return lm_bad(w, pgno, "node %u at offset %u", i, off);
    ksize = lm_u16(nd, 6);
    flags = lm_u16(nd, 4);
    dsize = lm_u16(nd, 0) | (unsigned)lm_u16(nd, 2) << 16;
    dlen = !leaf ? 0 : (flags & LM_F_BIGDATA) ? 8 : dsize;
    if ((uint64_t)off + LM_NODEHDR + ksize + dlen > psize)
        return lm_bad(w, pgno, "node %u overruns the page (%u bytes of key and value)", i,
                      ksize + dlen);
    if (!leaf) {
        *child = dsize | (uint64_t)flags << 32; /* NODEPGNO(): lo, hi, flags */
        return 0;
    }
    if (w->is_main)
        return lm_named(w, pgno, nd, dsize);
    if (flags & (LM_F_SUBDATA | LM_F_DUPDATA))
        return lm_bad(w, pgno, "node %u has flags 0x%x", i, flags);
    return 0;
}

/* Read page @p pgno into @p p and check its header: number, kind (a leaf
 * when @p leaf), lower/upper; *nkeys gets its node count. */
static int lm_page(struct lm_walk *w, uint64_t pgno, uint8_t *p, int leaf, unsigned *nkeys)
{
    uint32_t psize = w->m->psize;
    unsigned flags, lower, upper;
    uint64_t id;
    ssize_t got;

    if (pgno < 2 || pgno > w->m->last_pg)
        return cs_err_set(w->err, CS_E_CORRUPT,
                          "%s: corrupt run file (%s: page number %" PRIu64
                          " outside pages 2..%" PRIu64 ")",
                          w->r->path, w->tree, pgno, w->m->last_pg);
    got = pread(w->r->fd, p, psize, (off_t)(pgno * psize));
    if (got < 0)
        return cs_err_set(w->err, -errno, "%s: %s", w->r->path, strerror(errno));
    if (got < (ssize_t)psize)
        return run_truncated(w->r->path, psize, pgno, (int64_t)(pgno * psize) + got, w->err);
    memcpy(&id, p, 8);
    flags = lm_u16(p, 10);
    lower = lm_u16(p, 12);
    upper = lm_u16(p, 14);
    if (id != pgno)
        return lm_bad(w, pgno, "header says page %" PRIu64, id);
    if ((flags & LM_P_KINDS) != (leaf ? LM_P_LEAF : LM_P_BRANCH))
        return lm_bad(w, pgno, "flags 0x%x, want a %s page", flags, leaf ? "leaf" : "branch");
    if (lower < LM_PAGEHDR || lower > upper || upper > psize || (lower & 1))
        return lm_bad(w, pgno, "lower %u, upper %u", lower, upper);
    *nkeys = (lower - LM_PAGEHDR) / 2;
    if (!leaf && *nkeys == 0)
        return lm_bad(w, pgno, "branch page without keys");
    return 0;
}

/* Check the tree under page @p pgno, at @p level of a tree @p depth deep:
 * every page when @p whole, else the first child at each level only. */
static int lm_tree(struct lm_walk *w, uint64_t pgno, unsigned level, unsigned depth, int whole)
{
    uint8_t *p = w->pages + (size_t)level * w->m->psize;
    uint8_t bit = (uint8_t)(1u << (pgno % 8));
    int leaf = level + 1 == depth, rc;
    unsigned nkeys;

    if (pgno <= w->m->last_pg && (w->seen[pgno / 8] & bit))
        return lm_bad(w, pgno, "reached twice, so the pages are not a tree");
    rc = lm_page(w, pgno, p, leaf, &nkeys); /* checks pgno <= last_pg */
    if (rc == 0)
        w->seen[pgno / 8] |= bit;
    for (unsigned i = 0; rc == 0 && i < nkeys; i++) {
        uint64_t child = 0;
        rc = lm_node(w, pgno, p, i, leaf, &child);
        if (rc == 0 && !leaf && (whole || i == 0))
            rc = lm_tree(w, child, level + 1, depth, whole);
    }
    return rc;
}

/* Zeroed memory for the check: @p local (on the caller's stack) when
 * @p len fits, else an anonymous map. Never malloc: freeing a 124 KiB heap
 * block here made glibc consolidate and trim the heap, and the tables
 * loaded next faulted it all back in (repeated opens of a run with 200 k
 * strings and stacks: 27 -> 137 ms); a map costs page faults instead
 * (~0.25 ms an open here), so small files stay on the stack. */
static uint8_t *lm_mem(uint8_t *local, size_t local_len, size_t len)
{
    void *p;

    if (len <= local_len)
        return memset(local, 0, len);
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void lm_mem_free(uint8_t *p, const uint8_t *local, size_t len)
{
    if (p && p != local)
        munmap(p, len);
}

/* Check DB record @p d (its flags must be @p want_flags, or any without
 * duplicates for ~0u) and the tree under its root. */
static int lm_db_check(struct lm_walk *w, const struct lm_db *d, unsigned want_flags, int whole)
{
    uint8_t local[LM_LOCAL_PAGES];
    size_t len = (size_t)d->depth * w->m->psize;
    int rc;

    if (d->root == LM_P_INVALID)
        return 0; /* empty: LMDB reads no page of it */
    if ((d->flags & LM_DUP_FLAGS) || (want_flags != ~0u && d->flags != want_flags) ||
        d->depth == 0 || d->depth > LM_MAX_DEPTH)
        return cs_err_set(w->err, CS_E_CORRUPT,
                          "%s: corrupt run file (%s: flags 0x%x, depth %u)", w->r->path,
                          w->tree, d->flags, d->depth);
    w->pages = lm_mem(local, sizeof(local), len);
    if (w->pages == NULL)
        return cs_err_set(w->err, -ENOMEM, "%s: out of memory", w->r->path);
    rc = lm_tree(w, d->root, 0, d->depth, whole);
    lm_mem_free(w->pages, local, len);
    return rc;
}

/* One check of snapshot @p m: the main DB whole, then each table we open. */
static int lm_check(struct cs_run *r, const struct lm_meta *m, struct cs_err *err)
{
    struct lm_walk w = {.r = r, .m = m, .tree = "main database", .is_main = 1, .err = err};
    uint8_t local[LM_LOCAL_SEEN];
    size_t len = m->last_pg / 8 + 1;
    int rc;

    w.seen = lm_mem(local, sizeof(local), len);
    if (w.seen == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    rc = lm_db_check(&w, &m->main_db, ~0u, 1);
    w.is_main = 0;
    for (int i = 0; rc == 0 && i < DB_COUNT; i++) {
        w.tree = db_names[i];
        if (w.found[i]) /* a missing one: run_load() says so */
            rc = lm_db_check(&w, &w.named[i], db_flags[i], i != DB_CUDA && i != DB_HOST);
    }
    lm_mem_free(w.seen, local, len);
    return rc;
}

/* lm_check() the snapshot LMDB is about to open. A live writer may reuse an
 * older snapshot's pages while we read them, so a failure counts only if
 * the newest meta is still the one checked; else check the newer one. */
static int run_check_tree(struct cs_run *r, struct cs_err *err)
{
    struct lm_meta m, now;
    int rc = 0;

    for (int i = 0; i < LM_CHECK_TRIES; i++) {
        if (lm_meta_now(r->fd, &m, NULL) < 0)
            return cs_err_set(err, CS_E_CORRUPT, "%s: corrupt run file (meta pages changed "
                              "their page size)", r->path);
        rc = lm_check(r, &m, err);
        if (rc == 0)
            return 0;
        lm_meta_now(r->fd, &now, NULL);
        if (now.txnid == m.txnid)
            break;
    }
    return rc;
}

/* The same check through LMDB's own view, after it opened the env. */
static int run_check_pages(struct cs_run *r, struct cs_err *err)
{
    MDB_envinfo info;
    MDB_stat st;
    struct stat fs;

    if (mdb_env_info(r->env, &info) || mdb_env_stat(r->env, &st) || fstat(r->fd, &fs) < 0)
        return cs_err_set(err, CS_E_LMDB, "%s: cannot read LMDB state", r->path);
    if ((uint64_t)fs.st_size < ((uint64_t)info.me_last_pgno + 1) * st.ms_psize)
        return run_truncated(r->path, st.ms_psize, info.me_last_pgno, fs.st_size, err);
    return 0;
}

static int run_env_open(struct cs_run *r, struct cs_err *err)
{
    unsigned flags = MDB_RDONLY | MDB_NOSUBDIR | MDB_NOTLS;
    int rc = env_create(&r->env, 0);

    if (rc == 0) {
        rc = mdb_env_open(r->env, r->path, flags, 0600);
        if (rc == EACCES || rc == EROFS || rc == EPERM) {
            /* no lock file possible here (read-only media or directory) */
            mdb_env_close(r->env);
            rc = env_create(&r->env, 0);
            if (rc == 0)
                rc = mdb_env_open(r->env, r->path, flags | MDB_NOLOCK, 0600);
        }
        if (rc) {
            mdb_env_close(r->env);
            r->env = NULL;
        }
    }
    if (rc == 0)
        return 0;
    if (rc == MDB_INVALID)
        return cs_err_set(err, CS_E_BADMAGIC, "%s: not a cudaspy run file (bad LMDB header)",
                          r->path);
    if (rc == ENOMEM) /* mmap of the size the header asks for (fault.analyze_cut_and_flip) */
        return cs_err_set(err, CS_E_CORRUPT, "%s: cannot map it (%s): a corrupt header, or "
                          "too little address space", r->path, mdb_strerror(rc));
    return cs_err_set(err, lmdb_rc(rc), "%s: cannot open (%s)", r->path, mdb_strerror(rc));
}

/* Begin a read txn; adopt a map the writer grew meanwhile. */
static int run_txn_begin(struct cs_run *r, MDB_txn **txn)
{
    int rc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, txn);

    if (rc == MDB_MAP_RESIZED && r->ncursors == 0) {
        rc = mdb_env_set_mapsize(r->env, 0);
        if (rc == 0)
            rc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, txn);
    }
    return rc;
}

static char *dup_text(const MDB_val *v)
{
    char *s = malloc(v->mv_size + 1);

    if (s) {
        if (v->mv_size) /* an empty value may come with mv_data NULL */
            memcpy(s, v->mv_data, v->mv_size);
        s[v->mv_size] = '\0';
    }
    return s;
}

/* Where LMDB mapped the data file: mdb_env_info()'s me_mapaddr is only set
 * with MDB_FIXEDMAP, so look for our file's mapping from offset 0 in
 * /proc/self/maps (the largest one: the lock file is another inode). */
static const uint8_t *run_find_map(const struct stat *st)
{
    FILE *f = fopen("/proc/self/maps", "re");
    const uint8_t *map = NULL;
    unsigned long long best = 0;
    char line[512];

    if (f == NULL)
        return NULL;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long lo, hi, off, ino;
        unsigned maj, mnr;
        if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &off, &maj, &mnr, &ino) == 6 &&
            ino == (unsigned long long)st->st_ino && makedev(maj, mnr) == st->st_dev &&
            off == 0 && hi - lo > best) {
            best = hi - lo;
            map = (const uint8_t *)(uintptr_t)lo;
        }
    }
    fclose(f);
    return map;
}

/* Refresh the map address and file size (the writer may have grown both). */
static void run_map_refresh(struct cs_run *r)
{
    struct stat st;

    if (fstat(r->fd, &st) == 0) {
        r->file_bytes = (uint64_t)st.st_size;
        r->map = run_find_map(&st);
    }
}

/* Do key @p k and value @p v lie inside the file? LMDB follows a corrupt
 * node to any page number, and touching the map past the end of the file
 * is SIGBUS in whoever reads the bytes (found by fuzz_runfile). */
static int run_in_file(struct cs_run *r, const MDB_val *k, const MDB_val *v)
{
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *pk = k->mv_data, *pv = v->mv_data;
        const uint8_t *lo = r->map, *hi = lo ? lo + r->file_bytes : NULL; /* NULL + 0 is UB */
        if (lo && (k->mv_size == 0 || (pk >= lo && pk <= hi && k->mv_size <= (size_t)(hi - pk))) &&
            (v->mv_size == 0 || (pv >= lo && pv <= hi && v->mv_size <= (size_t)(hi - pv))))
            return 1;
        run_map_refresh(r);
    }
    return 0;
}

static int run_past_end(struct cs_run *r, unsigned db, struct cs_err *err)
{
    return cs_err_set(err, CS_E_CORRUPT, "%s: %s: corrupt run file (an entry points past the "
                      "end of the file, %" PRIu64 " bytes)", r->path, db_names[db],
                      r->file_bytes);
}

/* Visit every row of @p db with @p fn; stops at the first error. */
static int run_each(struct cs_run *r, MDB_txn *txn, unsigned db,
                    int (*fn)(struct cs_run *, const MDB_val *, const MDB_val *, struct cs_err *),
                    struct cs_err *err)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, r->dbi[db], &cur);

    if (rc)
        return cs_err_set(err, lmdb_rc(rc), "%s: %s: %s", r->path, db_names[db],
                          mdb_strerror(rc));
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        int e = run_in_file(r, &k, &v) ? fn(r, &k, &v, err) : run_past_end(r, db, err);
        if (e < 0) {
            mdb_cursor_close(cur);
            return e;
        }
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND)
        return cs_err_set(err, lmdb_rc(rc), "%s: %s: %s", r->path, db_names[db],
                          mdb_strerror(rc));
    return 0;
}

static int load_meta(struct cs_run *r, const MDB_val *k, const MDB_val *v, struct cs_err *err)
{
    size_t cap = r->nmeta;
    struct meta_kv *kv;

    if (cs_grow((void **)&r->meta, &cap, r->nmeta + 1, sizeof(*r->meta)) < 0)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    kv = &r->meta[r->nmeta++];
    kv->key = dup_text(k);
    kv->val = dup_text(v);
    if (kv->key == NULL || kv->val == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    return 0;
}

/* Strings and stacks are numbered 1..N as they are written, and loaded into
 * arrays indexed by id: an id far past its table's row count is corruption,
 * and must not size an array (a fuzzed file asked for 16 GB). The bound is
 * twice the table's rows plus 1024, and never past one row per 8 bytes of
 * the file, in case the row count itself is corrupt. */
static int set_id_max(struct cs_run *r, MDB_txn *txn, unsigned db, struct cs_err *err)
{
    MDB_stat st;
    int rc = mdb_stat(txn, r->dbi[db], &st);

    if (rc)
        return cs_err_set(err, lmdb_rc(rc), "%s: %s: %s", r->path, db_names[db],
                          mdb_strerror(rc));
    r->id_max = 2 * (uint64_t)st.ms_entries + 1024;
    if (r->id_max > r->file_bytes / 8 + 1024)
        r->id_max = r->file_bytes / 8 + 1024;
    return 0;
}

/* @return 0, or CS_E_CORRUPT when id @p id of @p db is out of range. */
static int check_id(struct cs_run *r, unsigned db, uint32_t id, struct cs_err *err)
{
    if (id <= r->id_max)
        return 0;
    return cs_err_set(err, CS_E_CORRUPT, "%s: %s: id %u past the table's range (%" PRIu64 ")",
                      r->path, db_names[db], id, r->id_max);
}

static int load_string(struct cs_run *r, const MDB_val *k, const MDB_val *v, struct cs_err *err)
{
    uint32_t id;
    size_t cap = r->nstrings;
    int rc;

    if (k->mv_size != sizeof(id))
        return cs_err_set(err, CS_E_CORRUPT, "%s: strings: key of %zu bytes, want 4", r->path,
                          k->mv_size);
    memcpy(&id, k->mv_data, sizeof(id));
    if ((rc = check_id(r, DB_STRINGS, id, err)) < 0)
        return rc;
    if (cs_grow((void **)&r->strings, &cap, (size_t)id + 1, sizeof(char *)) < 0)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    r->nstrings = cap;
    free(r->strings[id]);
    r->strings[id] = dup_text(v);
    if (r->strings[id] == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    return 0;
}

static int load_stack(struct cs_run *r, const MDB_val *k, const MDB_val *v, struct cs_err *err)
{
    uint32_t id;
    size_t cap = r->nstacks;
    struct run_stack *st;
    int rc;

    if (k->mv_size != sizeof(id) || v->mv_size % sizeof(struct cs_frame) || v->mv_size == 0)
        return cs_err_set(err, CS_E_CORRUPT, "%s: stacks: row of %zu bytes is not whole frames",
                          r->path, v->mv_size);
    memcpy(&id, k->mv_data, sizeof(id));
    if ((rc = check_id(r, DB_STACKS, id, err)) < 0)
        return rc;
    if (cs_grow((void **)&r->stacks, &cap, (size_t)id + 1, sizeof(*r->stacks)) < 0)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    r->nstacks = cap;
    st = &r->stacks[id];
    free(st->f);
    st->f = malloc(v->mv_size);
    if (st->f == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    memcpy(st->f, v->mv_data, v->mv_size);
    st->n = v->mv_size / sizeof(struct cs_frame);
    return 0;
}

/* Append a fixed-size row (procs, threads) after checking its sizes. */
static int load_row(struct cs_run *r, unsigned db, const MDB_val *k, const MDB_val *v,
                    size_t klen, size_t vlen, void **arr, size_t *n, struct cs_err *err)
{
    size_t cap = *n;

    if (k->mv_size != klen || v->mv_size != vlen)
        return cs_err_set(err, CS_E_CORRUPT, "%s: %s: row of %zu bytes, want %zu", r->path,
                          db_names[db], v->mv_size, vlen);
    if (cs_grow(arr, &cap, *n + 1, vlen) < 0)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    memcpy((char *)*arr + *n * vlen, v->mv_data, vlen);
    (*n)++;
    return 0;
}

static int load_proc(struct cs_run *r, const MDB_val *k, const MDB_val *v, struct cs_err *err)
{
    return load_row(r, DB_PROCS, k, v, 12, sizeof(struct cs_proc), (void **)&r->procs,
                    &r->nprocs, err);
}

static int load_thread(struct cs_run *r, const MDB_val *k, const MDB_val *v, struct cs_err *err)
{
    return load_row(r, DB_THREADS, k, v, 16, sizeof(struct cs_thread), (void **)&r->threads,
                    &r->nthreads, err);
}

/* Check format and version from the loaded meta. */
static int run_check_format(struct cs_run *r, struct cs_err *err)
{
    const char *fmt = cs_run_meta(r, "format");
    const char *ver = cs_run_meta(r, "format_version");
    char *end;
    unsigned long long v;

    if (fmt == NULL || strcmp(fmt, CS_FORMAT_MAGIC) != 0)
        return cs_err_set(err, CS_E_BADMAGIC, "%s: not a cudaspy run file (format is \"%s\")",
                          r->path, fmt ? fmt : "");
    v = ver ? strtoull(ver, &end, 10) : 0;
    if (ver == NULL || *end || v == 0)
        return cs_err_set(err, CS_E_CORRUPT, "%s: corrupt run file (format_version \"%s\")",
                          r->path, ver ? ver : "");
    if (v > CS_FORMAT_VERSION)
        return cs_err_set(err, CS_E_VERSION,
                          "%s: format version %llu is newer than this cudaspy reads (%d)",
                          r->path, v, CS_FORMAT_VERSION);
    r->format_version = (unsigned)v;
    return 0;
}

/* Open the named databases and load the in-memory tables in one read txn. */
static int run_load(struct cs_run *r, struct cs_err *err)
{
    MDB_txn *txn;
    int rc = run_txn_begin(r, &txn);

    if (rc)
        return cs_err_set(err, lmdb_rc(rc), "%s: %s", r->path, mdb_strerror(rc));
    for (int i = 0; i < DB_COUNT; i++) {
        rc = mdb_dbi_open(txn, db_names[i], db_flags[i], &r->dbi[i]);
        if (rc == MDB_NOTFOUND && i >= DB_REQUIRED) {
            r->has_db[i] = 0;
            rc = 0;
            continue;
        }
        r->has_db[i] = 1;
        if (rc) {
            mdb_txn_abort(txn);
            if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE)
                return cs_err_set(err, CS_E_BADMAGIC,
                                  "%s: not a cudaspy run file (no %s database)", r->path,
                                  db_names[i]);
            return cs_err_set(err, lmdb_rc(rc), "%s: %s", r->path, mdb_strerror(rc));
        }
    }
    rc = run_each(r, txn, DB_META, load_meta, err);
    if (rc == 0)
        rc = run_check_format(r, err);
    if (rc == 0 && (rc = set_id_max(r, txn, DB_STRINGS, err)) == 0)
        rc = run_each(r, txn, DB_STRINGS, load_string, err);
    if (rc == 0)
        rc = run_each(r, txn, DB_PROCS, load_proc, err);
    if (rc == 0)
        rc = run_each(r, txn, DB_THREADS, load_thread, err);
    if (rc == 0 && (rc = set_id_max(r, txn, DB_STACKS, err)) == 0)
        rc = run_each(r, txn, DB_STACKS, load_stack, err);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    rc = mdb_txn_commit(txn); /* keeps the dbi handles */
    return rc ? cs_err_set(err, lmdb_rc(rc), "%s: %s", r->path, mdb_strerror(rc)) : 0;
}

static void run_close(struct cs_run *r)
{
    if (r->env)
        mdb_env_close(r->env);
    r->env = NULL;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    for (size_t i = 0; i < r->nmeta; i++) {
        free(r->meta[i].key);
        free(r->meta[i].val);
    }
    for (size_t i = 0; i < r->nstrings; i++)
        free(r->strings[i]);
    for (size_t i = 0; i < r->nstacks; i++)
        free(r->stacks[i].f);
    free(r->meta);
    free(r->strings);
    free(r->stacks);
    free(r->procs);
    free(r->threads);
    free(r->path);
    memset(r, 0, sizeof(*r));
    r->fd = -1;
}

int cs_run_open(struct cs_run *r, const char *path, struct cs_err *err)
{
    int rc;

    if (err)
        err->msg[0] = '\0';
    run_close(r);
    r->path = strdup(path);
    if (r->path == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", path);
    rc = run_precheck(r, path, err);
    if (rc == 0)
        rc = run_check_tree(r, err);
    if (rc == 0)
        rc = run_env_open(r, err);
    if (rc == 0)
        rc = run_check_pages(r, err);
    if (rc == 0)
        rc = run_load(r, err);
    if (rc)
        run_close(r);
    return rc;
}

const char *cs_run_meta(struct cs_run *r, const char *key)
{
    for (size_t i = 0; i < r->nmeta; i++)
        if (strcmp(r->meta[i].key, key) == 0)
            return r->meta[i].val;
    return NULL;
}

uint64_t cs_run_meta_u64(struct cs_run *r, const char *key, uint64_t def)
{
    const char *v = cs_run_meta(r, key);
    char *end;
    unsigned long long x;

    if (v == NULL || *v < '0' || *v > '9')
        return def;
    errno = 0;
    x = strtoull(v, &end, 10);
    return (*end || errno) ? def : (uint64_t)x;
}

const char *cs_run_string(struct cs_run *r, uint32_t id)
{
    if (id < r->nstrings && r->strings[id])
        return r->strings[id];
    return "";
}

const struct cs_proc *cs_run_procs(struct cs_run *r, size_t *n)
{
    *n = r->nprocs;
    return r->procs;
}

const struct cs_thread *cs_run_threads(struct cs_run *r, size_t *n)
{
    *n = r->nthreads;
    return r->threads;
}

const struct cs_frame *cs_run_stack(struct cs_run *r, uint32_t id, size_t *n)
{
    if (id < r->nstacks && r->stacks[id].f) {
        *n = r->stacks[id].n;
        return r->stacks[id].f;
    }
    *n = 0;
    return NULL;
}

static int cursor_open(struct cs_run *r, unsigned kind, uint64_t since_ns, uint64_t until_ns,
                       int any_kind, struct cs_cursor **out);

/* One scan counts every kind of the table: the analyzer asks for each of the
 * seven kinds, and six scans of the host table over a big run cost more
 * than the rest of its loading. A scan stops at the first bad block, as a
 * scan for one kind did, so the counts are the same. */
uint64_t cs_run_count(struct cs_run *r, unsigned kind)
{
    unsigned t = kind == CS_REC_CUDA;
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    size_t txnid;

    if (cursor_open(r, kind, 0, UINT64_MAX, 1, &c) < 0)
        return 0;
    txnid = mdb_txn_id(c->txn);
    cs_cursor_release_pages(c);
    if (!r->counted[t] || r->count_txnid[t] != txnid) {
        memset(r->counts[t], 0, sizeof(r->counts[t]));
        while (cs_cursor_next(c, &h, &recs, NULL) == 1)
            r->counts[t][h->kind] += h->n; /* cursor_check() vouched for the kind */
        r->counted[t] = 1;
        r->count_txnid[t] = txnid;
    }
    cs_cursor_close(c);
    return r->counts[t][kind];
}

void cs_run_free(struct cs_run *r)
{
    if (r == NULL)
        return;
    run_close(r);
    free(r);
}

int cs_run_has_agg(const struct cs_run *r)
{
    return r->env && r->has_db[DB_AGG];
}

/* One agg row to @p fn, as an aligned copy (values sit unaligned in pages). */
static int agg_visit(struct cs_run *r, const MDB_val *k, const MDB_val *v, cs_agg_fn *fn,
                     void *arg, struct cs_err *err)
{
    void *copy;
    int rc;

    if (!run_in_file(r, k, v))
        return run_past_end(r, DB_AGG, err);
    if ((copy = malloc(v->mv_size ? v->mv_size : 1)) == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", r->path);
    memcpy(copy, v->mv_data, v->mv_size);
    rc = fn(arg, k->mv_data, k->mv_size, copy, v->mv_size, err);
    free(copy);
    return rc;
}

int cs_run_agg_each(struct cs_run *r, cs_agg_fn *fn, void *arg, struct cs_err *err)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc, e = 0;

    if (!cs_run_has_agg(r))
        return 0;
    if ((rc = run_txn_begin(r, &txn)) != 0)
        return cs_err_set(err, lmdb_rc(rc), "%s: agg: %s", r->path, mdb_strerror(rc));
    if ((rc = mdb_cursor_open(txn, r->dbi[DB_AGG], &cur)) == 0) {
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && e == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
            e = agg_visit(r, &k, &v, fn, arg, err);
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(txn);
    if (e < 0)
        return e;
    if (rc && rc != MDB_NOTFOUND)
        return cs_err_set(err, lmdb_rc(rc), "%s: agg: %s", r->path, mdb_strerror(rc));
    return 0;
}

int cs_cursor_open(struct cs_run *r, unsigned kind, uint64_t since_ns, uint64_t until_ns,
                   struct cs_cursor **out)
{
    return cursor_open(r, kind, since_ns, until_ns, 0, out);
}

static int cursor_open(struct cs_run *r, unsigned kind, uint64_t since_ns, uint64_t until_ns,
                       int any_kind, struct cs_cursor **out)
{
    struct cs_cursor *c;
    int rc;

    *out = NULL;
    if (r->env == NULL || cs_rec_size(kind) == 0)
        return -EINVAL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return -ENOMEM;
    c->r = r;
    c->kind = kind;
    c->db = kind == CS_REC_CUDA ? DB_CUDA : DB_HOST;
    c->since_ns = since_ns;
    c->until_ns = until_ns;
    c->any_kind = any_kind;
    rc = run_txn_begin(r, &c->txn);
    if (rc == 0) {
        rc = mdb_cursor_open(c->txn, r->dbi[c->db], &c->cur);
        if (rc)
            mdb_txn_abort(c->txn);
    }
    if (rc) {
        free(c);
        return lmdb_rc(rc);
    }
    r->ncursors++;
    *out = c;
    return 0;
}

void cs_cursor_release_pages(struct cs_cursor *c)
{
    c->copy = COPY_BLOCK;
}

#define BLK_FMT "%s: %s: block ts=%" PRIu64 " seq=%" PRIu32 ": "
#define BLK_ARGS(c, k) (c)->r->path, db_names[(c)->db], cs_be64_get((k)->mv_data), \
                       cs_be32_get((uint8_t *)(k)->mv_data + 12)

/* A compact block's header (cudablk.h): its body is checked as it is
 * decoded (cursor_decode()). */
static int cursor_check_compact(struct cs_cursor *c, const MDB_val *k, const MDB_val *v,
                                const struct cs_blk_hdr *h, struct cs_err *err)
{
    if (c->r->format_version < 2)
        return cs_err_set(err, CS_E_CORRUPT, BLK_FMT "compact block in a format %u file",
                          BLK_ARGS(c, k), c->r->format_version);
    if (h->kind != CS_REC_CUDA || c->db != DB_CUDA || h->rec_size != sizeof(struct cs_rec_cuda))
        return cs_err_set(err, CS_E_CORRUPT, BLK_FMT "compact block of kind %u, %u-byte records",
                          BLK_ARGS(c, k), h->kind, h->rec_size);
    if (h->n == 0 || h->n > CS_CUDABLK_MAX_RECS || v->mv_size < CS_CUDABLK_PREFIX ||
        v->mv_size > CS_BLK_MAX_BYTES)
        return cs_err_set(err, CS_E_CORRUPT, BLK_FMT "compact block of %" PRIu32
                          " records in %zu bytes", BLK_ARGS(c, k), h->n, v->mv_size);
    return 0;
}

/* Decode compact block @p h (checked by cursor_check_compact()) of value
 * size @p len into c->dec; c->dhdr gets its header, decoded. */
static int cursor_decode(struct cs_cursor *c, const MDB_val *k, const struct cs_blk_hdr *h,
                         size_t len, struct cs_err *err)
{
    const char *why;
    size_t at;
    int rc;

    if (c->dec == NULL &&
        (c->dec = malloc(CS_CUDABLK_MAX_RECS * sizeof(struct cs_rec_cuda))) == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", c->r->path);
    rc = cs_cudablk_decode(h, len, c->dec, &why, &at);
    if (rc < 0)
        return cs_err_set(err, CS_E_CORRUPT,
                          BLK_FMT "corrupt run file (compact block: %s at byte %zu of %zu)",
                          BLK_ARGS(c, k), why, at, len);
    c->dhdr = *h;
    c->dhdr.flags &= ~CS_BF_COMPACT;
    return 0;
}

/* Check one block's key and header against its value size and database. */
static int cursor_check(struct cs_cursor *c, const MDB_val *k, const MDB_val *v,
                        const struct cs_blk_hdr *h, struct cs_err *err)
{
    const char *db = db_names[c->db];
    unsigned rs;

    if (k->mv_size != BLK_KEY_BYTES || v->mv_size < sizeof(*h))
        return cs_err_set(err, CS_E_CORRUPT, "%s: %s: entry with %zu-byte key, %zu-byte value",
                          c->r->path, db, k->mv_size, v->mv_size);
    if (h->flags & CS_BF_COMPACT)
        return cursor_check_compact(c, k, v, h, err);
    rs = cs_rec_size(h->kind);
    if (rs == 0 || (h->kind == CS_REC_CUDA) != (c->db == DB_CUDA))
        return cs_err_set(err, CS_E_CORRUPT, "%s: %s: block ts=%" PRIu64 " seq=%" PRIu32
                          ": unknown record kind %u", c->r->path, db,
                          cs_be64_get(k->mv_data), cs_be32_get((uint8_t *)k->mv_data + 12),
                          h->kind);
    if (h->rec_size != rs || (uint64_t)h->n * rs + sizeof(*h) != v->mv_size)
        return cs_err_set(err, CS_E_CORRUPT, "%s: %s: block ts=%" PRIu64 " seq=%" PRIu32
                          ": header says %" PRIu32 " records of %u bytes, value has %zu bytes",
                          c->r->path, db, cs_be64_get(k->mv_data),
                          cs_be32_get((uint8_t *)k->mv_data + 12), h->n, h->rec_size,
                          v->mv_size);
    return 0;
}

/* Copies value @p v out of the file into buf. @return the copy, 8-aligned,
 * or NULL with *rc = -ENOMEM, -errno or CS_E_TRUNCATED (a short read). */
static const void *cursor_read(struct cs_cursor *c, const MDB_val *v, int *rc)
{
    size_t n = v->mv_size, got = 0;
    off_t at = (off_t)((const uint8_t *)v->mv_data - c->r->map);

    if (n > c->buf_cap || c->buf == NULL) {
        void *b = realloc(c->buf, n ? n : 1);
        if (b == NULL) {
            *rc = -ENOMEM;
            return NULL;
        }
        c->buf = b;
        c->buf_cap = n;
    }
    while (got < n) {
        ssize_t k = pread(c->r->fd, (uint8_t *)c->buf + got, n - got, at + (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            *rc = k < 0 ? -errno : CS_E_TRUNCATED;
            return NULL;
        }
        got += (size_t)k;
    }
    return c->buf;
}

/* The value as an 8-aligned pointer (small values in leaf pages are only
 * 2-aligned; records hold u64 fields). */
static const void *cursor_aligned(struct cs_cursor *c, const MDB_val *v)
{
    static const uint64_t empty[1];

    if (v->mv_size == 0) /* corrupt: cursor_check() rejects it by its size */
        return empty;
    if (((uintptr_t)v->mv_data & 7) == 0)
        return v->mv_data;
    if (v->mv_size > c->buf_cap) {
        void *b = realloc(c->buf, v->mv_size);
        if (b == NULL)
            return NULL;
        c->buf = b;
        c->buf_cap = v->mv_size;
    }
    memcpy(c->buf, v->mv_data, v->mv_size);
    return c->buf;
}

int cs_cursor_next(struct cs_cursor *c, const struct cs_blk_hdr **hdr, const void **recs,
                   struct cs_err *err)
{
    MDB_val k, v;
    int rc;

    for (;;) {
        const struct cs_blk_hdr *h;
        rc = mdb_cursor_get(c->cur, &k, &v, c->started ? MDB_NEXT : MDB_FIRST);
        c->started = 1;
        if (rc == MDB_NOTFOUND)
            return 0;
        if (rc)
            return cs_err_set(err, lmdb_rc(rc), "%s: %s: %s", c->r->path, db_names[c->db],
                              mdb_strerror(rc));
        if (!run_in_file(c->r, &k, &v))
            return run_past_end(c->r, c->db, err);
        if (k.mv_size == BLK_KEY_BYTES && cs_be64_get(k.mv_data) > c->until_ns)
            return 0; /* keys sort by ts_first */
        rc = -ENOMEM;
        h = c->copy == COPY_BLOCK ? cursor_read(c, &v, &rc) : cursor_aligned(c, &v);
        if (h == NULL && rc == -ENOMEM)
            return cs_err_set(err, -ENOMEM, "%s: out of memory", c->r->path);
        if (h == NULL)
            return cs_err_set(err, rc, "%s: %s: cannot read a block (%s)", c->r->path,
                              db_names[c->db], cs_strerror(rc));
        rc = cursor_check(c, &k, &v, h, err);
        if (rc)
            return rc;
        if ((!c->any_kind && h->kind != c->kind) || h->ts_last_ns < c->since_ns)
            continue;
        if ((h->flags & CS_BF_COMPACT) && !c->any_kind) { /* counting needs no records */
            rc = cursor_decode(c, &k, h, v.mv_size, err);
            if (rc)
                return rc;
            *hdr = &c->dhdr;
            *recs = c->dec;
            return 1;
        }
        *hdr = h;
        *recs = h + 1;
        return 1;
    }
}

void cs_cursor_close(struct cs_cursor *c)
{
    if (c == NULL)
        return;
    if (c->copy && c->r->map) /* what walking the tree's pages mapped */
        madvise((void *)c->r->map, c->r->file_bytes, MADV_DONTNEED);
    mdb_cursor_close(c->cur);
    mdb_txn_abort(c->txn);
    c->r->ncursors--;
    free(c->buf);
    free(c->dec);
    free(c);
}
