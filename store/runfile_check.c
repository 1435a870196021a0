/* runfile_check.c: the page checker. Before LMDB maps a run file, check
 * magic, page size, that the file holds every page its newest meta counts,
 * and the pages LMDB walks on open, so that a corrupt or cut file is an
 * error, never a hang or a SIGBUS. Opening and reading is runfile_read.c's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runfile_priv.h"

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
int store_run_precheck(struct cs_run *r, const char *path, struct cs_err *err)
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
        if (strlen(store_db_names[i]) == ksize &&
            memcmp(nd + LM_NODEHDR, store_db_names[i], ksize) == 0) {
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
        w.tree = store_db_names[i];
        if (w.found[i]) /* a missing one: run_load() says so */
            rc = lm_db_check(&w, &w.named[i], db_flags[i], i != DB_CUDA && i != DB_HOST);
    }
    lm_mem_free(w.seen, local, len);
    return rc;
}

/* lm_check() the snapshot LMDB is about to open. A live writer may reuse an
 * older snapshot's pages while we read them, so a failure counts only if
 * the newest meta is still the one checked; else check the newer one. */
int store_run_check_tree(struct cs_run *r, struct cs_err *err)
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
int store_run_check_pages(struct cs_run *r, struct cs_err *err)
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
