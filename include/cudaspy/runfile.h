/* runfile.h: the run file, one LMDB environment in one file (MDB_NOSUBDIR:
 * run.lmdb plus run.lmdb-lock, mode 0600). The collector is its only writer
 * (struct cs_store); the analyzer and MCP server read it (struct cs_run),
 * also while it is being written and from read-only media. The layout is
 * documented in docs/format.md. Named databases:
 *   meta      ASCII key -> UTF-8 text value (numbers in decimal)
 *   procs     pid_be32|start_ns_be64 -> struct cs_proc
 *   threads   pid_be32|tid_be32|start_ns_be64 -> struct cs_thread
 *   cuda_blk  ts_first_be64|source_be32|seq_be32 -> struct cs_blk_hdr + records
 *   host_blk  same key -> struct cs_blk_hdr + records of one host kind
 *   strings   u32 id (MDB_INTEGERKEY) -> UTF-8 bytes (no NUL); id 0 is unused
 *   stacks    u32 id (MDB_INTEGERKEY) -> struct cs_frame[]
 *   agg       size-capped runs only: t_window_be64|kind|pid_be32|sub_be32 ->
 *             struct cs_agg_cuda (+ buckets), cs_agg_host or cs_agg_gpu
 * Meta keys every run has: format ("cudaspy-run"), format_version, tool_version,
 * host, cmdline, t_start_ns, t_end_ns, realtime_offset_ns, clock, tsc_*,
 * sampler_tier (A|B|C|none), sampler_tier_reason, cuda_dropped, host_lost,
 * clean_shutdown (0|1). */
#ifndef CUDASPY_RUNFILE_H
#define CUDASPY_RUNFILE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "record.h"

/* ================= writer (collector only) ================= */

struct cs_store;

struct cs_store_opts {
    uint64_t map_bytes;   /* initial map size; 0 = default (1 GiB); grows by doubling */
    uint64_t max_map_bytes; /* 0 = no limit; growth past it fails with CS_E_MAPFULL */
};

/** Allocate a closed store. @return NULL when out of memory. */
struct cs_store *cs_store_new(void);

/** Create (or truncate) the run file @p path, mode 0600, and write the format
 * meta keys. @return 0, -errno (EACCES, ENOSPC, ...), CS_E_LMDB. */
int cs_store_open(struct cs_store *s, const char *path, const struct cs_store_opts *o,
                  struct cs_err *err);

/** Stage a block of @p n records of @p kind (CS_REC_CUDA goes to cuda_blk,
 * the rest to host_blk). @p source tells apart concurrent producers (the key
 * is ts_first|source|seq, seq assigned here). Records are copied. Nothing is
 * visible until cs_store_commit(). @return 0, -ENOMEM, -EINVAL (bad kind, too big) */
int cs_store_put_block(struct cs_store *s, uint32_t source, const struct cs_blk_hdr *h,
                       const void *recs);

/** Stage a process row (replaces a row with the same pid and start_ns). */
int cs_store_put_proc(struct cs_store *s, const struct cs_proc *p);

/** Stage a thread row (replaces a row with the same pid, tid, start_ns). */
int cs_store_put_thread(struct cs_store *s, const struct cs_thread *t);

/** Intern @p len bytes of @p str: the same bytes always get the same id.
 * @param id out: the string id (>= 1). @return 0, -ENOMEM */
int cs_store_intern(struct cs_store *s, const char *str, size_t len, uint32_t *id);

/** Stage a native stack; @p id out (>= 1). Identical stacks share an id. */
int cs_store_put_stack(struct cs_store *s, const struct cs_frame *f, uint32_t n, uint32_t *id);

/** Stage meta @p key = @p val (text). Later calls win. */
int cs_store_put_meta(struct cs_store *s, const char *key, const char *val);
int cs_store_put_meta_u64(struct cs_store *s, const char *key, uint64_t val);

/** Write everything staged in one transaction. On MDB_MAP_FULL the map is
 * doubled and the transaction replayed, so a committed block is never lost.
 * @return 0, CS_E_MAPFULL (could not grow), -ENOSPC, -EIO, CS_E_LMDB; on
 * failure the staged data is kept and the store is still usable. */
int cs_store_commit(struct cs_store *s);

/** Hand everything staged to the store's commit thread (started on the
 * first call; start it after dropping privileges, like the flush thread)
 * and return at once: staging goes on into a second buffer while the
 * thread writes one transaction, so the caller never waits for LMDB or the
 * page cache. cs_store_commit() waits for it and commits the rest.
 * @return 0 (handed over, or nothing staged); -EBUSY: the last one is still
 * writing, nothing was handed over (stage on, call again); a failed
 * background commit's error (its data is kept: cs_store_commit() retries
 * it first); -errno if the thread cannot start. */
int cs_store_commit_start(struct cs_store *s);

/** 1 while a cs_store_commit_start() transaction is being written. */
int cs_store_commit_busy(struct cs_store *s);

/** Flush to disk (mdb_env_sync force), after cs_store_readers_check().
 * @return 0 or an error as commit. */
int cs_store_sync(struct cs_store *s);

/** Flush the file to disk every @p interval_ns from a thread of the
 * store's own, stopped by cs_store_close(): the writer never waits for the
 * disk (one fdatasync took 90-100 ms on the dev VM, longer than a busy
 * shim ring lasts). @return 0, -EBUSY (started already), -errno. */
int cs_store_flush_start(struct cs_store *s, uint64_t interval_ns);

/** The background flush's first failure (-errno), or 0. */
int cs_store_flush_error(const struct cs_store *s);

/** Free the reader slots of dead processes (an analyzer killed inside a
 * read txn pins old pages and makes the file grow). @return 0 or < 0. */
int cs_store_readers_check(struct cs_store *s);

/** Bytes staged but not yet committed (not counting a set the commit
 * thread is writing). */
size_t cs_store_pending(const struct cs_store *s);

/** Current map size in bytes. */
uint64_t cs_store_map_bytes(const struct cs_store *s);

/* ---- flight recorder (record --max-size; policy in sampler/flight.c) ----
 * Usage: cs_store_agg_open once; at every commit cs_store_put_agg the
 * aggregates of what was staged, cs_store_evict_after the budget, then
 * cs_store_commit or cs_store_commit_start: the eviction follows the commit
 * in the thread that commits; cs_store_evict_result says what it did. */

/** Create the agg database (docs/format.md), for a size-capped run.
 * @return 0, CS_E_LMDB, -ENOSPC, ... */
int cs_store_agg_open(struct cs_store *s);

/** Stage agg row @p key = @p val (replaces the row with that key).
 * @return 0, -ENOMEM, -EINVAL (key over 400 bytes), -EBADF (no agg db) */
int cs_store_put_agg(struct cs_store *s, const void *key, size_t klen, const void *val,
                     size_t vlen);

/* What cs_store_evict() did. */
struct cs_evict {
    uint64_t live_bytes;     /* pages every database holds, after */
    uint64_t file_bytes;     /* (last page used + 1) * page size, after */
    uint64_t blocks;         /* blocks deleted */
    uint64_t records;        /* records in them */
    uint64_t ts_last_max_ns; /* largest ts_last_ns of a deleted block; 0 = none */
};

/** When the databases hold more than @p live_max_bytes of pages, delete
 * the oldest blocks (cuda_blk and host_blk by key, ts_first) until they
 * hold about that much, in one transaction of its own. LMDB never shrinks
 * the file: later commits reuse the freed pages (from the second commit
 * after this one on). Staged data is neither written nor touched.
 * @return 0, CS_E_LMDB, -ENOSPC, -EIO; @p ev filled in any case */
int cs_store_evict(struct cs_store *s, uint64_t live_max_bytes, struct cs_evict *ev);

/** From the next commit on, follow each successful commit (the caller's or
 * the background one's, in its thread) with cs_store_evict(@p live_max_bytes);
 * 0 = no eviction. A background commit takes the value it was handed over with. */
void cs_store_evict_after(struct cs_store *s, uint64_t live_max_bytes);

/** Evict no block that holds records from [@p t0_ns, @p t1_ns] (a flight
 * recorder's trigger, record --keep-on); the window counts against the
 * cap like the rest. Safe beside a background commit. */
void cs_store_evict_keep(struct cs_store *s, uint64_t t0_ns, uint64_t t1_ns);

/** What the evictions after commits did since the last call: @p ev the
 * newest one's result. @return 1 (one or more ran), 0 (none ran), or the
 * error of one that failed (it stays: recording must stop). */
int cs_store_evict_result(struct cs_store *s, struct cs_evict *ev);

/** Commit what is staged, sync, close. Idempotent. */
void cs_store_close(struct cs_store *s);

/** Close if open, free. Accepts NULL. */
void cs_store_free(struct cs_store *s);

/* ================= reader ================= */

struct cs_run;
struct cs_cursor;

/** Allocate a closed reader. @return NULL when out of memory. */
struct cs_run *cs_run_new(void);

/** Open run file @p path read-only, check magic, format version and that the
 * file is as long as its pages say. Works while the collector still writes
 * (locked read) and on read-only media (falls back to MDB_NOLOCK). Loads the
 * strings table and process table into memory.
 * @return 0, -ENOENT, -EACCES, CS_E_BADMAGIC, CS_E_VERSION, CS_E_TRUNCATED,
 *         CS_E_CORRUPT, CS_E_LMDB; @p err gets one line saying what and where. */
int cs_run_open(struct cs_run *r, const char *path, struct cs_err *err);

/** Meta value for @p key. @return borrowed NUL-terminated text valid until
 * cs_run_close(), or NULL if the key is absent. */
const char *cs_run_meta(struct cs_run *r, const char *key);

/** Meta value parsed as unsigned decimal; @p def if absent or not a number. */
uint64_t cs_run_meta_u64(struct cs_run *r, const char *key, uint64_t def);

/** String @p id. @return borrowed NUL-terminated text valid until
 * cs_run_close(), or "" for unknown ids. */
const char *cs_run_string(struct cs_run *r, uint32_t id);

/** Process table, sorted by (pid, start_ns). @return borrowed array valid
 * until cs_run_close(); *n gets its length. */
const struct cs_proc *cs_run_procs(struct cs_run *r, size_t *n);

/** Thread table, sorted by (pid, tid, start_ns); borrowed like cs_run_procs(). */
const struct cs_thread *cs_run_threads(struct cs_run *r, size_t *n);

/** Native stack @p id. @return borrowed frames (valid until cs_run_close()) or
 * NULL; *n gets the frame count. */
const struct cs_frame *cs_run_stack(struct cs_run *r, uint32_t id, size_t *n);

/** Count of records of @p kind in the file (sum of block headers): one
 * scan of its table for every kind, none when a cursor of the same read
 * txn already read the table to its end (up to a bad block, where the
 * scan stops). Cursors of one run may be read on different threads. */
uint64_t cs_run_count(struct cs_run *r, unsigned kind);

/** Close, free. Accepts NULL. */
void cs_run_free(struct cs_run *r);

/** Open a cursor over blocks of @p kind that overlap [@p since_ns, @p until_ns]
 * (0 / UINT64_MAX for everything), in key order (roughly by time).
 * @return 0, -ENOMEM, CS_E_LMDB */
int cs_cursor_open(struct cs_run *r, unsigned kind, uint64_t since_ns, uint64_t until_ns,
                   struct cs_cursor **c);

/** Next block: @p hdr and @p recs are borrowed until the next call or
 * cs_cursor_close(). Records are whole blocks: callers filter by time.
 * @return 1 with a block, 0 at the end, CS_E_CORRUPT if a block's header
 *         disagrees with its size or kind (the message says which key). */
int cs_cursor_next(struct cs_cursor *c, const struct cs_blk_hdr **hdr, const void **recs,
                   struct cs_err *err);

/** For one pass over a big file: from now on the cursor copies each block
 * out of the file (pread) instead of handing out a pointer into the map, and
 * on close unmaps what walking the tree mapped, so the process does not keep
 * the file mapped (its RSS would grow by the file's size). Blocks stay
 * borrowed until the next call, as before; the pages stay in the page cache. */
void cs_cursor_release_pages(struct cs_cursor *c);

/** Close, free. Accepts NULL. */
void cs_cursor_close(struct cs_cursor *c);

/** Does the run have an agg database (a size-capped run)? */
int cs_run_has_agg(const struct cs_run *r);

/* Called with each agg row: key bytes (borrowed) and an aligned copy of the
 * value (borrowed until the call returns); a negative return stops the walk. */
typedef int cs_agg_fn(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                      struct cs_err *err);

/** Visit every row of the agg database in key order (window, kind, pid,
 * sub); no rows when the run has none. @return 0, what @p fn returned,
 * CS_E_CORRUPT, CS_E_LMDB */
int cs_run_agg_each(struct cs_run *r, cs_agg_fn *fn, void *arg, struct cs_err *err);

#define CS_AGG_KEY_BYTES 17 /* t_window_be64 | kind u8 | pid_be32 | sub_be32 */

/* ---- key encoding (shared by writer and reader) ---- */

static inline void cs_be64_put(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline void cs_be32_put(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline uint64_t cs_be64_get(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static inline uint32_t cs_be32_get(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | p[i];
    return v;
}

#endif
