/* runfile_write.c: cs_store, the collector's single LMDB writer: interning,
 * staging, commit with map growth and replay, the size cap's aggregates and
 * eviction, close. Owns every LMDB write and the translation of LMDB codes
 * to CS_E_*; the threads that commit and flush in the background are
 * runfile_commit.c's, what goes into blocks is the collector's business.
 * Layout: docs/format.md. */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudaspy/cudablk.h"
#include "cudaspy/version.h"
#include "runfile_priv.h"

const char *const store_db_names[DB_COUNT] = {"meta",     "procs",   "threads", "cuda_blk",
                                               "host_blk", "strings", "stacks",  "agg"};
const unsigned db_flags[DB_COUNT] = {0, 0, 0, 0, 0, MDB_INTEGERKEY, MDB_INTEGERKEY, 0};

/* LMDB codes to ours; errno values pass through negated. */
int store_lmdb_rc(int rc)
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

int store_env_create(MDB_env **env, uint64_t map_bytes)
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
        rc = mdb_dbi_open(txn, store_db_names[i], MDB_CREATE | db_flags[i], &s->dbi[i]);
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
    rc = store_env_create(&s->env, s->map_bytes);
    if (rc == 0) {
        rc = mdb_env_open(s->env, path, MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOMETASYNC, 0600);
        if (rc)
            mdb_env_close(s->env);
    }
    if (rc) {
        s->env = NULL;
        return cs_err_set(err, store_lmdb_rc(rc), "%s: cannot create run file (%s)", path,
                          mdb_strerror(rc));
    }
    s->path = strdup(path);
    rc = store_open_dbs(s);
    if (rc == 0 && s->path == NULL)
        rc = ENOMEM;
    if (rc == 0) {
        cs_store_put_meta(s, "format", CS_FORMAT_MAGIC);
        cs_store_put_meta_u64(s, "format_version", CS_FORMAT_VERSION_PLAIN);
        s->version = CS_FORMAT_VERSION_PLAIN;
        cs_store_put_meta(s, "tool_version", CS_VERSION);
        rc = cs_store_commit(s);
        if (rc < 0) {
            cs_store_close(s);
            return cs_err_set(err, rc, "%s: cannot write run file (%s)", path, cs_strerror(rc));
        }
        return 0;
    }
    cs_store_close(s);
    return cs_err_set(err, store_lmdb_rc(rc), "%s: cannot create run file (%s)", path,
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

/* The format version a block of @p kind needs (version.h) is written into
 * meta the first time, if above what the file says so far. */
static int raise_version(struct cs_store *s, unsigned kind)
{
    unsigned v = kind == CS_REC_GPU ? 4 : kind == CS_REC_PYSAMPLE ? 3 : 0;
    int rc;

    if (v <= s->version)
        return 0;
    if ((rc = cs_store_put_meta_u64(s, "format_version", v)) < 0)
        return rc;
    s->version = v;
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
    if ((rc = raise_version(s, h->kind)) < 0)
        return rc;
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
        return rc == ENOMEM ? CS_E_MAPFULL : store_lmdb_rc(rc);
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
int store_commit_set(struct cs_store *s, const struct stage_op *ops, size_t nops,
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
    return rc ? store_lmdb_rc(rc) : 0;
}

void store_evict_note(struct cs_store *s, int rc, const struct cs_evict *ev)
{
    if (s->ev_state < 0)
        return;
    s->ev_state = rc < 0 ? rc : 1;
    if (rc == 0)
        s->ev_last = *ev;
}

/* After a commit of the caller's thread: its eviction, if one is asked. */
static void commit_evict(struct cs_store *s)
{
    struct cs_evict ev;
    int rc;

    if (s->evict_after == 0)
        return;
    rc = cs_store_evict(s, s->evict_after, &ev);
    if (s->cm.on)
        pthread_mutex_lock(&s->cm.mu);
    store_evict_note(s, rc, &ev);
    if (s->cm.on)
        pthread_mutex_unlock(&s->cm.mu);
}

int cs_store_commit(struct cs_store *s)
{
    int rc;

    if (s->env == NULL)
        return -EBADF;
    rc = store_commit_wait(s); /* a set the committer could not write goes first */
    if (rc < 0)
        return rc;
    if (s->nops == 0)
        return 0;
    rc = store_commit_set(s, s->ops, s->nops, s->arena);
    if (rc)
        return rc;
    s->nops = 0;
    s->arena_len = 0;
    commit_evict(s);
    return 0;
}

void cs_store_evict_after(struct cs_store *s, uint64_t live_max_bytes)
{
    s->evict_after = live_max_bytes;
}

void cs_store_evict_keep(struct cs_store *s, uint64_t t0_ns, uint64_t t1_ns)
{
    atomic_store(&s->keep_t0_ns, t0_ns);
    atomic_store(&s->keep_t1_ns, t1_ns);
}

int cs_store_evict_result(struct cs_store *s, struct cs_evict *ev)
{
    int rc;

    if (s->cm.on)
        pthread_mutex_lock(&s->cm.mu);
    rc = s->ev_state;
    *ev = s->ev_last;
    if (rc == 1)
        s->ev_state = 0;
    if (s->cm.on)
        pthread_mutex_unlock(&s->cm.mu);
    return rc;
}

int cs_store_readers_check(struct cs_store *s)
{
    int dead = 0;

    if (s->env == NULL)
        return -EBADF;
    /* a reader killed inside a txn (analyzer, MCP) pins old pages and makes
     * the file grow: clear its slot */
    return store_lmdb_rc(mdb_reader_check(s->env, &dead));
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
    store_flush_stop(s);
    cs_store_commit(s);
    store_committer_stop(s);
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
        rc = mdb_dbi_open(txn, store_db_names[DB_AGG], MDB_CREATE | db_flags[DB_AGG],
                          &s->dbi[DB_AGG]);
    if (rc) {
        if (txn)
            mdb_txn_abort(txn);
        return store_lmdb_rc(rc);
    }
    rc = mdb_txn_commit(txn);
    if (rc == 0)
        s->has_agg = 1;
    return store_lmdb_rc(rc);
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

/* The oldest block of @p cur that is not in the kept window [@p k0, @p k1]
 * (k1 0: none) into @p k, @p v. Blocks are keyed by ts_first; one that
 * starts in the window, or ends in it, is kept. @return 0 or LMDB's code */
static int evict_next(MDB_cursor *cur, MDB_val *k, MDB_val *v, uint64_t k0, uint64_t k1)
{
    struct cs_blk_hdr h;
    uint8_t from[8];
    int rc = mdb_cursor_get(cur, k, v, MDB_FIRST);

    while (rc == 0 && k1 && v->mv_size >= sizeof(h)) {
        memcpy(&h, v->mv_data, sizeof(h));
        if (h.ts_first_ns > k1 || h.ts_last_ns < k0)
            break;
        cs_be64_put(from, k1 + 1); /* past the window: the first block after it */
        *k = (MDB_val){sizeof(from), from};
        rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    }
    return rc;
}

/* Oldest blocks first, cuda_blk and host_blk merged by key (ts_first),
 * none of the kept window (cs_store_evict_keep). */
static int evict_oldest(struct cs_store *s, MDB_txn *txn, uint64_t excess, unsigned psize,
                        struct cs_evict *ev)
{
    MDB_cursor *cc = NULL, *hc = NULL;
    uint64_t freed = 0, k1 = atomic_load(&s->keep_t1_ns), k0 = atomic_load(&s->keep_t0_ns);
    int rc = mdb_cursor_open(txn, s->dbi[DB_CUDA], &cc);

    if (rc == 0)
        rc = mdb_cursor_open(txn, s->dbi[DB_HOST], &hc);
    while (rc == 0 && freed < excess) {
        MDB_val ck, cv, hk, hv;
        int rc_c = evict_next(cc, &ck, &cv, k0, k1);
        int rc_h = evict_next(hc, &hk, &hv, k0, k1);
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
        return store_lmdb_rc(rc);
    live = txn_live_bytes(txn, s->dbi, s->has_agg);
    mdb_env_stat(s->env, &st);
    if (live > live_max_bytes)
        rc = evict_oldest(s, txn, live - live_max_bytes, st.ms_psize, ev);
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
    return rc ? store_lmdb_rc(rc) : 0;
}
