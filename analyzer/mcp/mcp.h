/* mcp/mcp.h: the MCP server's internal interfaces. mcp.c owns the command line
 * and the loaded runs; mcp_proto.c the stdio framing, JSON-RPC and the MCP
 * lifecycle (legacy handshake and stateless 2026-07-28 requests);
 * mcp_tools.c the tools and the `investigate` prompt; mcp_index.c the
 * per-run in-memory indexes the tools answer from; mcp_keep.c the analysis
 * kept beside a run for the next start. Nothing here is used outside
 * analyzer/mcp/. */
#ifndef CUDASPY_ANALYZER_MCP_H
#define CUDASPY_ANALYZER_MCP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "cudaspy/runfile.h"

struct analysis;
struct mcp_index;

/* Limits, documented in docs/mcp.md. */
#define MCP_LINE_MAX (1024 * 1024) /* bytes in one request line */
#define MCP_TEXT_MAX (48 * 1024)   /* bytes of a tool's text block */
#define MCP_TOP_MAX 100            /* rows a list tool returns at most */
#define MCP_PAGE_MAX 500           /* timeline events per page at most */
#define MCP_PAGE_DEFAULT 100
#define MCP_HIST_BUCKETS 64 /* log2 histogram buckets (1 ns .. 2^63 ns) */
#define MCP_CHUNK 4096      /* calls per sorted chunk (window statistics) */

struct summary;

/* One server: the runs named on the command line, each loaded once, alone
 * (so times, pids and findings stay per file). */
struct mcp_server {
    int nruns;
    const char **paths;     /* borrowed from argv */
    const char **names;     /* basenames, borrowed from argv */
    struct analysis **an;   /* per run; NULL until a tool needs it when aj was kept */
    json_t **aj;            /* per run: analysis_json(), built or read once; owned */
    struct mcp_index **idx; /* per run, NULL until a tool needs it */
    struct summary **sum;   /* per run: gate summary (compare_runs), NULL until asked */
};

/** Analyse run @p i unless it is analysed: at startup its JSON may come
 * from the kept analysis (mcp_keep.c), and the few tools that read more
 * than the JSON (and the index and the gate summary) call this first. A
 * failure is logged to stderr. @return 0, -ENOMEM or a run-file error */
int mcp_server_analysis(struct mcp_server *s, int i);

/** Build run @p i's index unless it is built (the first tool that reads
 * it pays: it reads the run again). A failure is logged to stderr.
 * @return 0, -ENOMEM or a run-file error */
int mcp_server_index(struct mcp_server *s, int i);

/** Build run @p i's gate summary unless it is built (the first compare_runs
 * pays for it: it reads the run again). A failure is logged to stderr.
 * @return 0, -ENOMEM or a run-file error */
int mcp_server_summary(struct mcp_server *s, int i);

/* ---- mcp_index.c ---- */

/* One CUDA call, the fields the tools show. */
struct mcp_call {
    uint64_t t_ns; /* entry, absolute CLOCK_MONOTONIC */
    uint64_t dur_ns;
    uint64_t stream; /* normalised handle (CS_STREAM_*) */
    uint64_t bytes;
    uint32_t pid, tid;
    uint32_t name_id; /* kernel name, strings of the run; 0 = none */
    int32_t result;
    uint16_t api;   /* enum cs_api */
    uint16_t flags; /* CS_CF_* */
    uint8_t variant, dir;
    uint16_t pad;
};

/* Calls by (latency key, pid, time), for latency over any filter. The key
 * splits an API by variant (_ptsz, _ptds) and nesting, as the analyzer's
 * latency table does: mcp_lat_key(). */
struct mcp_lat {
    uint64_t t_ns, dur_ns;
    uint32_t call; /* index in calls */
    uint32_t pid;
    uint32_t name_id; /* the call's kernel name and flags (CS_CF_*): kernel */
    uint32_t flags;   /* filters read no call record */
};

#define MCP_LAT_KEYS (CS_API_COUNT * 6)
#define MCP_OFF_CLASSES 6 /* enum cs_off_class values 0..5 */

static inline unsigned mcp_lat_key(unsigned api, unsigned variant, int is_nested)
{
    return (api * 3 + (variant % 3)) * 2 + (is_nested ? 1 : 0);
}

/* Where one process's rows lie in the (pid, time)-sorted arrays. */
struct mcp_pid {
    uint32_t pid;
    uint64_t call_lo, call_hi; /* [lo, hi) in calls */
    uint64_t off_lo, off_hi;   /* [lo, hi) in offs */
};

/* Launches of one API key with one kernel name: a range of kdur. */
struct mcp_kgroup {
    uint32_t key, name_id;
    uint64_t lo, hi;
};

struct mcp_index {
    struct cs_run *run;     /* borrowed from the analysis */
    uint64_t t0_ns;         /* times shown are relative to it */
    struct mcp_call *calls; /* by (pid, t_ns) */
    uint64_t ncalls;
    uint64_t t_min_ns, t_max_ns;       /* extent of the calls' entry times */
    struct mcp_lat *lat;               /* by (key, pid, t_ns), every call */
    uint64_t lat_lo[MCP_LAT_KEYS + 1]; /* key k is [lat_lo[k], lat_lo[k+1]) */
    uint64_t *cum_ns;                  /* cum_ns[i]: sum of lat[0..i).dur_ns */
    uint64_t *cum_err;                 /* cum_err[i]: calls of lat[0..i) with CS_CF_ERROR */
    uint64_t *dur_key;                 /* durations, ascending within each key's range */
    uint64_t *dur_pid;                 /* durations, ascending within each (key, pid) group */
    uint64_t *dur_chunk;               /* durations, ascending within each MCP_CHUNK calls of a
                                          (key, pid) group (from its start, in time order) */
    uint64_t *kdur;                    /* named calls' durations by (key, name, duration) */
    uint64_t *kcum_ns, *kcum_err;      /* prefix sums over kdur (time, errors) */
    struct mcp_kgroup *kgroups;        /* by (key, name_id) */
    uint64_t nkgroups;
    struct cs_rec_offcpu *offs; /* by (pid, t_start_ns) */
    uint64_t noffs;
    uint32_t *off_by_dur;                     /* indexes in offs, longest first */
    uint32_t *off_by_cls;                     /* the same, grouped by class (stable) */
    uint64_t off_cls_lo[MCP_OFF_CLASSES + 1]; /* class c is [lo[c], lo[c+1]) */
    struct mcp_pid *pids;                     /* by pid */
    uint32_t npids;
};

/** Read every CUDA call and off-CPU interval of open run @p r into memory.
 * @return 0, -ENOMEM or the cursor's error (@p err says which block) */
int mcp_index_build(struct cs_run *r, uint64_t t0_ns, struct mcp_index **out, struct cs_err *err);

void mcp_index_free(struct mcp_index *x);

/** Range [*lo, *hi) of lat for key @p k and process @p pid (0 = all). */
void mcp_index_key_range(const struct mcp_index *x, unsigned k, uint32_t pid, uint64_t *lo,
                         uint64_t *hi);

/** End of the (key, pid) group starting at @p lo (< @p hi). */
uint64_t mcp_index_group_end(const struct mcp_index *x, uint64_t lo, uint64_t hi);

/** Sub-range of a (key, pid) group [lo, hi) whose calls start in [t_lo, t_hi). */
void mcp_index_lat_window(const struct mcp_index *x, uint64_t *lo, uint64_t *hi, uint64_t t_lo,
                          uint64_t t_hi);

/** The group of key @p k whose kernel is named @p kernel, NULL if none. */
const struct mcp_kgroup *mcp_index_kernel(const struct mcp_index *x, unsigned k,
                                          const char *kernel);

/** Process @p pid's ranges, NULL if it has no calls and no intervals. */
const struct mcp_pid *mcp_index_pid(const struct mcp_index *x, uint32_t pid);

/** Process of thread @p tid (first match), 0 if unknown. */
uint32_t mcp_index_tid_pid(const struct mcp_index *x, uint32_t tid);

/** First index in [lo, hi) of calls (by time within one pid) with t_ns >= @p t. */
uint64_t mcp_index_call_at(const struct mcp_index *x, uint64_t lo, uint64_t hi, uint64_t t);
uint64_t mcp_index_off_at(const struct mcp_index *x, uint64_t lo, uint64_t hi, uint64_t t);

/* Latency statistics of a set of durations (nearest-rank quantiles). */
struct mcp_stats {
    uint64_t count, total_ns, min_ns, max_ns, mean_ns;
    uint64_t p50_ns, p90_ns, p99_ns, p999_ns;
    uint64_t hist[MCP_HIST_BUCKETS]; /* bucket k: [2^k, 2^(k+1)) ns; 0 ns in bucket 0 */
};

/** Statistics of @p n ascending durations summing to @p total_ns (from
 * cum_ns): constant time but for the histogram (64 binary searches). */
void mcp_stats_sorted(const uint64_t *v, size_t n, uint64_t total_ns, struct mcp_stats *st);

/** Statistics of key @p k's calls of @p pid (0 = all) entering in
 * [@p t_lo, @p t_hi): exact nearest-rank percentiles from the sorted chunks
 * the window covers plus its sorted ragged ends (a binary search over
 * values, no selection); the histogram only if @p want_hist.
 * @return 0 or -ENOMEM */
int mcp_index_window_stats(const struct mcp_index *x, unsigned k, uint32_t pid, uint64_t t_lo,
                           uint64_t t_hi, int want_hist, struct mcp_stats *st, uint64_t *errors);

/** Statistics of @p n durations in any order; reorders @p v (selection,
 * linear time, no full sort). */
void mcp_stats_unsorted(uint64_t *v, size_t n, struct mcp_stats *st);

/* ---- mcp_keep.c ----
 * Usage: mcp_keep_stamp() before the analysis; mcp_keep_load() from
 * mcp_keep_path(run, MCP_KEEP_BESIDE), then MCP_KEEP_CACHE; on a miss,
 * analyse, take a second stamp, and mcp_keep_store() only if both stamps
 * are the same (a run still being written is not kept). */

/* What identifies the run as analysed, and the analyzer that analysed it. */
struct mcp_keep_stamp {
    uint64_t run_size, run_mtime_ns, run_ctime_ns, run_ino, run_dev;
    uint64_t exe_size, exe_mtime_ns;
};

#define MCP_KEEP_BESIDE 0 /* RUN.lmdb-analysis */
#define MCP_KEEP_CACHE 1  /* CUDASPY_CACHE_DIR, $XDG_CACHE_HOME/cudaspy or ~/.cache/cudaspy */

/* mcp_keep_load() misses, each a reason to analyse again */
#define MCP_KEEP_NONE 1    /* no such file */
#define MCP_KEEP_STALE 2   /* another run, cudaspy version, build or format */
#define MCP_KEEP_CORRUPT 3 /* bad magic, checksum, size or JSON */

/** Stamp of run @p path (its data.mdb if it is a folder) and of this
 * executable into @p st. @return 0 or -errno (stat) */
int mcp_keep_stamp(const char *path, struct mcp_keep_stamp *st);

/** Whether two stamps are of the same run and analyzer. */
int mcp_keep_stamp_same(const struct mcp_keep_stamp *a, const struct mcp_keep_stamp *b);

/** Where run @p run's analysis is kept, @p where MCP_KEEP_BESIDE or
 * MCP_KEEP_CACHE, into @p out. @return 0, or -errno / -ENOENT (no cache
 * folder can be named) */
int mcp_keep_path(const char *run, int where, char *out, size_t n);

/** Read the analysis kept in @p path for stamp @p st.
 * @param out  the JSON object (new reference) on 0, else NULL
 * @param why  on a miss other than MCP_KEEP_NONE: static text saying why
 * @return 0, MCP_KEEP_NONE, MCP_KEEP_STALE, MCP_KEEP_CORRUPT, -ENOMEM or
 *         -errno (open) */
int mcp_keep_load(const char *path, const struct mcp_keep_stamp *st, json_t **out,
                  const char **why);

/** Keep @p aj for stamp @p st in @p path: a temporary file renamed over
 * it, so a reader sees the old file or the new one whole; makes a missing
 * cache folder. @return 0, -ENOMEM or -errno (EACCES, EROFS: read-only) */
int mcp_keep_store(const char *path, const struct mcp_keep_stamp *st, const json_t *aj);

/* ---- mcp_proto.c ---- */

/** Serve newline-delimited JSON-RPC from @p in_fd to @p out until EOF.
 * @return 0 on EOF, -EIO if @p out fails (the client went away) */
int mcp_proto_serve(struct mcp_server *s, int in_fd, FILE *out);

/** Answer one request line (no newline). @return the response (new
 * reference), or NULL when nothing must be sent (notifications, responses). */
json_t *mcp_proto_handle(struct mcp_server *s, const char *line, size_t len);

/* ---- mcp_tools.c ---- */

/** Tool descriptors for tools/list. @return new reference (array) */
json_t *mcp_tools_list(void);

/** Run tool @p name with @p args (object or NULL).
 * @param res out: a CallToolResult (isError set for bad arguments)
 * @return 0, or -ENOENT for an unknown tool (a JSON-RPC error) */
int mcp_tools_call(struct mcp_server *s, const char *name, json_t *args, json_t **res);

/** Prompt descriptors for prompts/list. @return new reference (array) */
json_t *mcp_prompts_list(void);

/** GetPromptResult for prompt @p name with @p args (object of strings or
 * NULL). @return 0, -ENOENT (unknown prompt), -EINVAL (bad arguments; @p why
 * gets a line) */
int mcp_prompts_get(struct mcp_server *s, const char *name, json_t *args, json_t **res, char *why,
                    size_t why_len);

/** Server instructions for initialize and server/discover. @return new string */
char *mcp_tools_instructions(const struct mcp_server *s);

/* Text block of a tool result, bounded by MCP_TEXT_MAX. */
struct mcp_text {
    char *buf;
    size_t len, cap;
    int is_full; /* something was cut */
};

void mcp_text_printf(struct mcp_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Append program-controlled string @p s marked as data: «data: ...», control
 * characters removed, at most 200 bytes. */
void mcp_text_data(struct mcp_text *t, const char *s);

/** Copy of @p in without control characters and without the « » marks, at
 * most @p max bytes (UTF-8 sequences kept whole). @return malloc'd, or NULL */
char *mcp_clean(const char *in, size_t max);

/* ---- mcp_query.c: the tools' bodies ----
 * Each gets validated arguments (types and ranges checked against its
 * parameter table) and the run they name, writes a human summary to @p t and
 * sets *@p out to the structured result (new reference). @return 0, or
 * -EINVAL with @p why set (the result becomes isError). */
struct mcp_call_ctx {
    struct mcp_server *s;
    int run;      /* resolved "run" argument */
    json_t *args; /* validated object */
    struct mcp_text *t;
    char why[256];
};

typedef int (*mcp_tool_fn)(struct mcp_call_ctx *c, json_t **out);

int mcp_q_trace_stats(struct mcp_call_ctx *c, json_t **out);
int mcp_q_causal_chains(struct mcp_call_ctx *c, json_t **out);
int mcp_q_account(struct mcp_call_ctx *c, json_t **out);
int mcp_q_memory(struct mcp_call_ctx *c, json_t **out);
int mcp_q_per_process(struct mcp_call_ctx *c, json_t **out);
int mcp_q_api_latency(struct mcp_call_ctx *c, json_t **out);
int mcp_q_gpu_feed(struct mcp_call_ctx *c, json_t **out);
int mcp_q_hotspots(struct mcp_call_ctx *c, json_t **out);
int mcp_q_gpu_timeline(struct mcp_call_ctx *c, json_t **out);
int mcp_q_steps(struct mcp_call_ctx *c, json_t **out);
int mcp_q_timeline(struct mcp_call_ctx *c, json_t **out);
int mcp_q_top_stalls(struct mcp_call_ctx *c, json_t **out);
int mcp_q_compare_runs(struct mcp_call_ctx *c, json_t **out);

/* Validated argument getters (absent: @p def). Times are given in ms
 * relative to the run's start and returned in absolute ns. */
uint64_t mcp_arg_u64(const struct mcp_call_ctx *c, const char *name, uint64_t def);
double mcp_arg_num(const struct mcp_call_ctx *c, const char *name, double def);
const char *mcp_arg_str(const struct mcp_call_ctx *c, const char *name);
int mcp_arg_has(const struct mcp_call_ctx *c, const char *name);
/** Resolve a run reference (index or basename) in argument @p name.
 * @return the index, or -1 with c->why set */
int mcp_arg_run(struct mcp_call_ctx *c, const char *name);

/** -EINVAL with c->why = the formatted line. */
int mcp_bad(struct mcp_call_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
