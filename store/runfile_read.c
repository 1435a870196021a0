/* runfile_read.c: cs_run and cs_cursor, the run file read back, live or
 * archived: open (after runfile_check.c's page checks), the small tables
 * loaded whole, block cursors that check and decode what they hand out.
 * Writing is runfile_write.c's. Layout: docs/format.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cudaspy/cudablk.h"
#include "cudaspy/grow.h"
#include "cudaspy/version.h"
#include "runfile_priv.h"

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
    struct cs_rec_gpu *wide; /* a version-3 GPU block's records, widened (format.md) */
    /* every block it checked, by kind, whatever it hands out: a cursor that
     * reads its table to the end without an error counted it (cs_run_count) */
    uint64_t seen[CS_REC_KIND_COUNT];
    int partial; /* stopped at until_ns, or failed: its counts are not whole */
    /* COPY_BLOCK: a second cursor CURSOR_AHEAD blocks ahead, which asks the
     * kernel to read them (cursor_prefetch()) */
    MDB_cursor *ra;
    unsigned ra_ahead; /* blocks it is ahead */
    int ra_done;       /* it reached the end, or cannot go on */
};

struct cs_run *cs_run_new(void)
{
    struct cs_run *r = calloc(1, sizeof(*r));

    if (r)
        r->fd = -1;
    return r;
}

static int run_env_open(struct cs_run *r, struct cs_err *err)
{
    unsigned flags = MDB_RDONLY | MDB_NOSUBDIR | MDB_NOTLS;
    int rc = store_env_create(&r->env, 0);

    if (rc == 0) {
        rc = mdb_env_open(r->env, r->path, flags, 0600);
        if (rc == EACCES || rc == EROFS || rc == EPERM) {
            /* no lock file possible here (read-only media or directory) */
            mdb_env_close(r->env);
            rc = store_env_create(&r->env, 0);
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
    return cs_err_set(err, store_lmdb_rc(rc), "%s: cannot open (%s)", r->path, mdb_strerror(rc));
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
 * /proc/self/maps: the one that holds @p hint (a pointer LMDB handed out),
 * else the largest (the lock file is another inode). A process that has
 * the file open twice (a live view keeping one sample while it reads the
 * next) has two such maps, and the largest may be the other open's. The
 * map's length goes to @p len: LMDB maps the size the file's header asks
 * for, which a damaged or appended-to file makes shorter than the file. */
static const uint8_t *run_find_map(const struct stat *st, const void *hint, uint64_t *len)
{
    FILE *f = fopen("/proc/self/maps", "re");
    const uint8_t *map = NULL;
    unsigned long long best = 0, h = (unsigned long long)(uintptr_t)hint;
    char line[512];

    if (f == NULL)
        return NULL;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long lo, hi, off, ino;
        unsigned maj, mnr;
        if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &off, &maj, &mnr, &ino) != 6 ||
            ino != (unsigned long long)st->st_ino || makedev(maj, mnr) != st->st_dev || off != 0)
            continue;
        if (hint && h >= lo && h < hi) {
            map = (const uint8_t *)(uintptr_t)lo;
            *len = hi - lo;
            break;
        }
        if (hi - lo > best) {
            best = hi - lo;
            map = (const uint8_t *)(uintptr_t)lo;
            *len = best;
        }
    }
    fclose(f);
    return map;
}

/* Refresh the map address (around @p hint) and file size (the writer may
 * have grown both). */
static void run_map_refresh(struct cs_run *r, const void *hint)
{
    struct stat st;
    uint64_t len = 0;

    if (fstat(r->fd, &st) == 0) {
        uint64_t size = (uint64_t)st.st_size;
        const uint8_t *map = run_find_map(&st, hint, &len);
        r->file_bytes = size;
        r->view_bytes = size < len ? size : len;
        r->map = map;
    }
}

/* Do key @p k and value @p v lie inside the file and its map? LMDB follows
 * a corrupt node to any page number: touching the map past the end of the
 * file is SIGBUS in whoever reads the bytes, and past the end of the map
 * reads whatever memory lies there (both found by fuzz_runfile). */
static int run_in_file(struct cs_run *r, const MDB_val *k, const MDB_val *v)
{
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *pk = k->mv_data, *pv = v->mv_data;
        const uint8_t *lo = r->map, *hi = lo ? lo + r->view_bytes : NULL; /* NULL + 0 is UB */
        /* (a refresh on another thread may pass between the two loads: the
         * check then fails once and refreshes here) */
        if (lo && (k->mv_size == 0 || (pk >= lo && pk <= hi && k->mv_size <= (size_t)(hi - pk))) &&
            (v->mv_size == 0 || (pv >= lo && pv <= hi && v->mv_size <= (size_t)(hi - pv))))
            return 1;
        run_map_refresh(r, v->mv_size ? v->mv_data : k->mv_data);
    }
    return 0;
}

static int run_past_end(struct cs_run *r, unsigned db, struct cs_err *err)
{
    return cs_err_set(err, CS_E_CORRUPT, "%s: %s: corrupt run file (an entry points past the "
                      "end of the file, %" PRIu64 " bytes)", r->path, store_db_names[db],
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
        return cs_err_set(err, store_lmdb_rc(rc), "%s: %s: %s", r->path, store_db_names[db],
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
        return cs_err_set(err, store_lmdb_rc(rc), "%s: %s: %s", r->path, store_db_names[db],
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
        return cs_err_set(err, store_lmdb_rc(rc), "%s: %s: %s", r->path, store_db_names[db],
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
                      r->path, store_db_names[db], id, r->id_max);
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
                          store_db_names[db], v->mv_size, vlen);
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
        return cs_err_set(err, store_lmdb_rc(rc), "%s: %s", r->path, mdb_strerror(rc));
    for (int i = 0; i < DB_COUNT; i++) {
        rc = mdb_dbi_open(txn, store_db_names[i], db_flags[i], &r->dbi[i]);
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
                                  store_db_names[i]);
            return cs_err_set(err, store_lmdb_rc(rc), "%s: %s", r->path, mdb_strerror(rc));
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
    return rc ? cs_err_set(err, store_lmdb_rc(rc), "%s: %s", r->path, mdb_strerror(rc)) : 0;
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
    rc = store_run_precheck(r, path, err);
    if (rc == 0)
        rc = store_run_check_tree(r, err);
    if (rc == 0)
        rc = run_env_open(r, err);
    if (rc == 0)
        rc = store_run_check_pages(r, err);
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
static void cursor_counted(struct cs_cursor *c);

/* One scan counts every kind of the table: the analyzer asks for each of the
 * seven kinds, and six scans of the host table over a big run cost more
 * than the rest of its loading. A scan stops at the first bad block, as a
 * scan for one kind did, so the counts are the same. A cursor of any kind
 * that read the table whole for the same txn counted it already. */
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
        while (cs_cursor_next(c, &h, &recs, NULL) == 1)
            ;
        cursor_counted(c); /* up to a bad block, where the scan stops */
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
        return cs_err_set(err, store_lmdb_rc(rc), "%s: agg: %s", r->path, mdb_strerror(rc));
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
        return cs_err_set(err, store_lmdb_rc(rc), "%s: agg: %s", r->path, mdb_strerror(rc));
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
        return store_lmdb_rc(rc);
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
#define BLK_ARGS(c, k) (c)->r->path, store_db_names[(c)->db], cs_be64_get((k)->mv_data), \
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

/* A GPU block of a file before format version 4: 64-byte records. */
static int old_gpu(const struct cs_cursor *c, const struct cs_blk_hdr *h)
{
    return h->kind == CS_REC_GPU && c->r->format_version < 4 &&
           h->rec_size == CS_REC_GPU_V3_BYTES;
}

/* Widen old GPU block @p h (checked) into c->wide, graph fields 0; c->dhdr
 * gets its header with today's record size. */
static int cursor_widen(struct cs_cursor *c, const struct cs_blk_hdr *h)
{
    const uint8_t *p = (const uint8_t *)(h + 1);

    if (c->wide == NULL && (c->wide = malloc(CS_BLK_MAX_BYTES / CS_REC_GPU_V3_BYTES *
                                             sizeof(struct cs_rec_gpu))) == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < h->n; i++, p += CS_REC_GPU_V3_BYTES) {
        memset(&c->wide[i], 0, sizeof(c->wide[i]));
        memcpy(&c->wide[i], p, CS_REC_GPU_V3_BYTES);
    }
    c->dhdr = *h;
    c->dhdr.rec_size = sizeof(struct cs_rec_gpu);
    return 0;
}

/* Check one block's key and header against its value size and database. */
static int cursor_check(struct cs_cursor *c, const MDB_val *k, const MDB_val *v,
                        const struct cs_blk_hdr *h, struct cs_err *err)
{
    const char *db = store_db_names[c->db];
    unsigned rs;

    if (k->mv_size != BLK_KEY_BYTES || v->mv_size < sizeof(*h))
        return cs_err_set(err, CS_E_CORRUPT, "%s: %s: entry with %zu-byte key, %zu-byte value",
                          c->r->path, db, k->mv_size, v->mv_size);
    if (h->flags & CS_BF_COMPACT)
        return cursor_check_compact(c, k, v, h, err);
    rs = old_gpu(c, h) ? CS_REC_GPU_V3_BYTES : cs_rec_size(h->kind);
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

/* Blocks read ahead of a COPY_BLOCK cursor. The blocks of one table lie
 * between the other's in the file (8 KB compact CUDA blocks among 64 KB
 * host blocks), so the kernel's readahead, which follows sequential reads,
 * reads one small block at a time; asked for the next blocks it has many
 * reads in flight (a 200 M + 100 M run's tables: 2.4 and 4.8 GB). */
#define CURSOR_AHEAD 32

/* Keep c->ra CURSOR_AHEAD blocks past the block c is about to read, and
 * POSIX_FADV_WILLNEED each block it passes. Only advice: any failure stops it. */
static void cursor_prefetch(struct cs_cursor *c)
{
    MDB_val k, v;

    if (c->ra_ahead > 0)
        c->ra_ahead--;
    while (!c->ra_done && c->ra_ahead < CURSOR_AHEAD) {
        int first = c->ra == NULL;
        if (first && mdb_cursor_open(c->txn, c->r->dbi[c->db], &c->ra) != 0) {
            c->ra = NULL;
            c->ra_done = 1;
            break;
        }
        if (mdb_cursor_get(c->ra, &k, &v, first ? MDB_FIRST : MDB_NEXT) != 0 ||
            !run_in_file(c->r, &k, &v)) {
            c->ra_done = 1;
            break;
        }
        if (first)
            c->ra_ahead = 1; /* the main cursor's own first block */
        else
            c->ra_ahead++;
        posix_fadvise(c->r->fd, (off_t)((const uint8_t *)v.mv_data - c->r->map),
                      (off_t)v.mv_size, POSIX_FADV_WILLNEED);
    }
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

static int cursor_next(struct cs_cursor *c, const struct cs_blk_hdr **hdr, const void **recs,
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
            return cs_err_set(err, store_lmdb_rc(rc), "%s: %s: %s", c->r->path,
                              store_db_names[c->db],
                              mdb_strerror(rc));
        if (!run_in_file(c->r, &k, &v))
            return run_past_end(c->r, c->db, err);
        if (k.mv_size == BLK_KEY_BYTES && cs_be64_get(k.mv_data) > c->until_ns) {
            c->partial = 1;
            return 0; /* keys sort by ts_first */
        }
        rc = -ENOMEM;
        if (c->copy == COPY_BLOCK)
            cursor_prefetch(c);
        h = c->copy == COPY_BLOCK ? cursor_read(c, &v, &rc) : cursor_aligned(c, &v);
        if (h == NULL && rc == -ENOMEM)
            return cs_err_set(err, -ENOMEM, "%s: out of memory", c->r->path);
        if (h == NULL)
            return cs_err_set(err, rc, "%s: %s: cannot read a block (%s)", c->r->path,
                              store_db_names[c->db], cs_strerror(rc));
        rc = cursor_check(c, &k, &v, h, err);
        if (rc)
            return rc;
        c->seen[h->kind] += h->n; /* cursor_check() vouched for the kind */
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
        if (old_gpu(c, h) && !c->any_kind) {
            if (cursor_widen(c, h) < 0)
                return cs_err_set(err, -ENOMEM, "%s: out of memory", c->r->path);
            *hdr = &c->dhdr;
            *recs = c->wide;
            return 1;
        }
        *hdr = h;
        *recs = h + 1;
        return 1;
    }
}

/* A pass that read the whole table leaves its counts for cs_run_count(),
 * which would otherwise read the table once more: at scale, 10 s of a
 * 300 M record analysis. */
static void cursor_counted(struct cs_cursor *c)
{
    struct cs_run *r = c->r;
    unsigned t = c->db == DB_CUDA;

    r->counted[t] = 1;
    r->count_txnid[t] = mdb_txn_id(c->txn);
    memcpy(r->counts[t], c->seen, sizeof(r->counts[t]));
}

int cs_cursor_next(struct cs_cursor *c, const struct cs_blk_hdr **hdr, const void **recs,
                   struct cs_err *err)
{
    int rc = cursor_next(c, hdr, recs, err);

    if (rc < 0)
        c->partial = 1;
    else if (rc == 0 && !c->partial)
        cursor_counted(c);
    return rc;
}

void cs_cursor_close(struct cs_cursor *c)
{
    if (c == NULL)
        return;
    if (c->copy && c->r->map) /* what walking the tree's pages mapped; never past
                                 the map, where DONTNEED would zero others' memory */
        madvise((void *)c->r->map, c->r->view_bytes, MADV_DONTNEED);
    if (c->ra)
        mdb_cursor_close(c->ra);
    mdb_cursor_close(c->cur);
    mdb_txn_abort(c->txn);
    c->r->ncursors--;
    free(c->buf);
    free(c->dec);
    free(c->wide);
    free(c);
}
