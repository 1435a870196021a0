/* runfile_priv.h: what the run-file store's four files share, and nothing
 * else includes: the databases, the writer's and the reader's structs, LMDB
 * code translation, and the calls that cross from one file to another.
 * runfile_write.c stages and commits, runfile_commit.c runs the commit and
 * flush threads, runfile_read.c reads, runfile_check.c checks pages. */
#ifndef CS_RUNFILE_PRIV_H
#define CS_RUNFILE_PRIV_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cudaspy/error.h"
#include "cudaspy/runfile.h"

enum db_id { DB_META, DB_PROCS, DB_THREADS, DB_CUDA, DB_HOST, DB_STRINGS, DB_STACKS, DB_AGG,
             DB_COUNT };

/* Every run has the databases below DB_REQUIRED; the others only some runs
 * (agg: size-capped runs, cs_store_agg_open()). */
#define DB_REQUIRED DB_AGG

/* Database names and flags, by enum db_id (runfile_write.c). */
extern const char *const store_db_names[DB_COUNT];
extern const unsigned db_flags[DB_COUNT];

#define STORE_DEFAULT_MAP (1ull << 30)
#define STORE_MIN_MAP     (256ull << 10)
#define BLK_KEY_BYTES     16

/* ---- identical-bytes interning (strings and stacks; runfile_write.c) ---- */

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
    uint64_t evict_max; /* the store's evict_after when the set was handed over */
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
    unsigned version; /* meta format_version staged so far (version.h: raised by what
                         the file holds: 3 Python samples, 4 GPU records) */
    uint64_t evict_ts_max_ns, evict_blocks, evict_records; /* cs_store_evict totals */
    uint64_t evict_after;   /* cs_store_evict_after(); 0 = commits evict nothing */
    _Atomic uint64_t keep_t0_ns, keep_t1_ns; /* cs_store_evict_keep(); t1 0 = none */
    struct cs_evict ev_last; /* the newest eviction after a commit */
    int ev_state; /* under cm.mu once it runs: 0 none since read, 1 one ran, <0 error */
    uint8_t *enc; /* CS_BLK_MAX_BYTES: a compact block being encoded */
    struct itab strings, stacks;
    struct flusher fl;
    struct committer cm;
};

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
    /* Cursors of one run may be read on several threads at once (the
     * analyzer reads its two tables side by side): these are atomic, and a
     * refresh from two threads stores the same values. */
    atomic_int ncursors;  /* open cursors (a map resize must wait for 0) */
    _Atomic(const uint8_t *) map; /* LMDB's map of the file, as last seen */
    _Atomic uint64_t file_bytes;  /* file size, as last seen */
    _Atomic uint64_t view_bytes;  /* of the file readable at map: the file size or, where
                                     the map is shorter (its header's map size), the map's
                                     length */
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

/* ---- calls between the files ---- */

/* runfile_write.c */
/* LMDB codes to ours; errno values pass through negated. */
int store_lmdb_rc(int rc);
/* A new MDB_env sized for our databases and readers, its map @p map_bytes
 * (0: the file's own); returns an LMDB code, *env NULL on failure. */
int store_env_create(MDB_env **env, uint64_t map_bytes);
/* Commit one staged set, growing the map as needed (one thread at a time). */
int store_commit_set(struct cs_store *s, const struct stage_op *ops, size_t nops, uint8_t *arena);

/* Keep what an eviction after a commit did for cs_store_evict_result();
 * the first error stays. With cm.mu held when the committer runs
 * (runfile_write.c). */
void store_evict_note(struct cs_store *s, int rc, const struct cs_evict *ev);

/* runfile_commit.c */
/* Wait until the committer is idle; write here the set a failed one left. */
int store_commit_wait(struct cs_store *s);
/* Stop and join the committer, if any. */
void store_committer_stop(struct cs_store *s);
/* Stop and join the flusher, if any. */
void store_flush_stop(struct cs_store *s);

/* runfile_check.c */
/* Before LMDB maps @p path: magic, page size, every page the newest meta counts. */
int store_run_precheck(struct cs_run *r, const char *path, struct cs_err *err);
/* The pages LMDB walks on open, on the newest meta's snapshot. */
int store_run_check_tree(struct cs_run *r, struct cs_err *err);
/* The file holds every page, through LMDB's own view after the env opened. */
int store_run_check_pages(struct cs_run *r, struct cs_err *err);

#endif
