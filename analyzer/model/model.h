/* model/model.h: the analyzer's in-memory copy of one or more runs, private to
 * analyzer/. model.c loads it (every CUDA call and off-CPU interval, grouped
 * by thread and sorted by time; per-process windows; system windows);
 * stats.c, procs.c, feed.c and chains.c derive from it; analysis.c owns it.
 * Times are CLOCK_MONOTONIC ns of the run that recorded them. */
#ifndef CUDASPY_ANALYZER_MODEL_H
#define CUDASPY_ANALYZER_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cudaspy/api.h"
#include "analysis.h"
#include "cudaspy/record.h"
#include "cudaspy/runfile.h"
#include "model/callstore.h"
#include "model/clocks.h"
#include "model/mcall.h"

#define M_NONE 0xffffffffu

enum m_role { M_ROLE_OTHER = 0, M_ROLE_CUDA_MAIN = 1, M_ROLE_WORKER = 2 };

/* One off-CPU interval of a thread that made CUDA calls (the only ones the
 * analysis follows one by one; every interval also feeds its process's
 * totals and longest stall while loading): struct cs_rec_offcpu without
 * pid, tid, cpu and the holder's share. */
struct m_off {
    uint64_t t_start_ns, t_end_ns;
    uint32_t thr;
    uint32_t waker_pid, waker_tid;
    uint32_t holder_pid;
    uint8_t cls;   /* enum cs_off_class */
    uint8_t flags; /* CS_HF_* */
    uint16_t pad;
    uint32_t runq_ns; /* its runnable tail: woken, waiting for a CPU (saturates) */
};
_Static_assert(sizeof(struct m_off) == 40, "m_off is 40 bytes");

/* One kernel, copy or memset as the GPU ran it (CUPTI, docs/gpu.md). */
struct m_gpu {
    uint64_t t_start_ns, t_end_ns;
    uint64_t call;       /* index in model.call of the call that enqueued it, M_CALL_NONE */
    uint64_t bytes;      /* copies and memsets */
    uint32_t proc;       /* index in model.proc */
    uint32_t name_id;    /* kernel name, strings of the process's run; 0 = none */
    uint32_t stream_id;  /* CUPTI's stream id */
    uint32_t epoch;      /* the process's CUPTI attach count: its sampled slice */
    uint16_t device;
    uint8_t kind;        /* enum cs_gpu_kind */
    uint8_t dir;         /* copies: enum cs_dir */
    uint8_t gflags;      /* CS_GF_PAGEABLE of its record */
    uint8_t pad[3];
    uint32_t graph_id;   /* CUPTI's graphId when a graph replay ran it, else 0 */
    uint32_t pad2;
    uint64_t graph_node_id; /* CUPTI's graphNodeId: its node in that graph, else 0 */
};
_Static_assert(sizeof(struct m_gpu) == 72, "m_gpu is 72 bytes");
#define M_CALL_NONE UINT64_MAX

/* The stack of a call (cs_rec_cuda.stack_id, stacks db of the call's run).
 * Most calls have none, so the ids live in this side table, sorted by call
 * index, rather than in struct m_call: model_call_stack() looks one up. */
struct m_cstack {
    uint64_t call;     /* index in model.call */
    uint32_t stack_id; /* >= 1 */
    uint32_t pad;
};

/* One sample of a CUDA thread's Python stack while it ran host code (struct
 * cs_rec_pysample, docs/python.md "Host code"); by thread, then time.
 * model/pystack.h reads them (pystack_samples_in). */
struct m_pysample {
    uint64_t t_ns;     /* the middle of the read: the stack is the thread's then */
    uint32_t thr;      /* index in model.thr */
    uint32_t stack_id; /* stacks db of the thread's run, >= 1 */
};

/* A span in which every kernel, copy and memset a process enqueued was
 * recorded; struct cs_rec_gpucov with the process as an index. */
struct m_gcov {
    uint64_t t_start_ns, t_end_ns;   /* recording on */
    uint64_t t_attach_ns, t_detach_ns;
    uint32_t proc, epoch;
    uint32_t reason_id;  /* UNAVAIL/PAUSED: why (strings of the run) */
    uint32_t dropped;
    uint32_t cupti_version;
    uint16_t mode, flags;
};

/* One NVTX range or mark in the analysed window (struct cs_rec_nvtx with the
 * thread as an index); by thread, then start time. */
struct m_nvtx {
    uint64_t t_start_ns, t_end_ns;
    uint32_t thr;        /* index in model.thr (threads without CUDA calls too) */
    uint32_t name_id;    /* message, strings of the thread's run; 0 = none */
    uint32_t domain_id;  /* domain name, strings of the run; 0 = default domain */
    uint16_t depth;      /* push/pop nesting (0 = top level) */
    uint8_t flags;       /* CS_NF_* */
    uint8_t pad;
};
_Static_assert(sizeof(struct m_nvtx) == 32, "m_nvtx is 32 bytes");

/* Per-process totals, filled by procs.c from pwin and off-CPU records. */
struct m_proc_stats {
    uint64_t cuda_calls, cuda_ns;         /* outermost calls */
    uint64_t init_ns;                     /* outermost cuInit, context creation calls */
    uint64_t oncpu_ns, sleep_ns, disk_ns, preempt_ns, runq_ns;
    /* from the off-CPU intervals, summed while loading (used without pwin) */
    uint64_t off_sleep_ns, off_disk_ns, off_preempt_ns, off_runq_ns, off_vol, off_invol;
    uint64_t max_stall_ns, max_stall_at_ns;
    uint64_t vcsw, ivcsw, migrations, page_allocs, minflt, majflt;
    uint64_t npwin;
};

struct m_proc {
    uint32_t pid, ppid;
    uint32_t run;      /* index of the run file */
    uint32_t parent;   /* index in model.proc of the parent (same run), M_NONE */
    uint32_t flags;    /* CS_PF_* */
    uint32_t rank;
    uint64_t start_ns, exit_ns;
    uint32_t cmdline_id;
    uint8_t role;      /* enum m_role */
    uint8_t has_row;   /* 1: from the process table; 0: seen only in records */
    uint8_t has_cuda;  /* made CUDA calls in the analysed window */
    uint8_t selected;  /* passes --pid (the pid or its descendants) */
    uint16_t devices;  /* bit d: it made CUDA calls on device d (0..15) */
    char comm[16];
    uint64_t first_pwin, npwin; /* range in model.pwin (sorted by proc, time) */
    uint64_t active_lo_ns, active_hi_ns; /* procs_active_window(), set by procs_compute() */
    struct m_proc_stats st;
};

struct m_thread {
    uint32_t tid;
    uint32_t proc;             /* index in model.proc */
    uint64_t first_call, ncalls; /* range in model.call */
    uint64_t first_off, noff;    /* range in model.off */
    char name[16];
};

/* One run file. */
struct m_run {
    struct cs_run *run;
    const char *path;
    uint64_t t0_ns, t_end_ns;  /* meta t_start_ns / t_end_ns (or record extent) */
    uint64_t win_lo_ns, win_hi_ns; /* analysed window, absolute */
    uint64_t first_sys, nsys;  /* range in model.sys */
    uint64_t host_end_ns;      /* latest end of any record (runs without t_end_ns) */
    uint64_t counts[CS_REC_KIND_COUNT];
    uint64_t nmrec;            /* its records in model.mrec (they follow the earlier runs') */
    uint64_t lost_perf, lost_shim, lost_spans;
    uint64_t degraded_blocks;
    uint32_t ncpu;             /* from syswin, 0 = unknown */
    /* capture ranges (record --delay, --duration, --capture: meta
     * capture_ranges): the window is their hull; is_capture 0: none */
    int is_capture;
    int is_kept;       /* the ranges are a size-capped run's kept window and its
                          tail (record --keep-on; meta flight_kept) */
    uint32_t ncapture;
    uint64_t *capture; /* ncapture pairs: each range's start, end (absolute), in order */
    struct m_clock clk; /* how its times were moved onto the first run's clock (clocks.h) */
};

/** Time between run @p r's capture ranges (inside their hull): not recorded. */
uint64_t model_capture_gap_ns(const struct m_run *r);

struct model {
    struct analysis_opts opts;
    struct m_run *runs;
    int nruns;
    struct m_proc *proc;
    uint32_t nproc, cap_proc;
    struct m_thread *thr;
    uint32_t nthr, cap_thr;
    struct m_call *call; /* grouped by thread, by t_enter within a thread; NULL
                            when they are in cstore (model_call()) */
    uint64_t ncall;
    struct callstore *cstore; /* the calls of a run too big for their array,
                                 compact (model/calls.c) */
    int kept_seq, kept_stack; /* cstore holds each call's seq / stack id (a
                                 store placed while loading) */
    uint64_t api_seen[(CS_API_COUNT + 63) / 64]; /* the APIs of the calls: a pass
                                 for calls of APIs none made can be skipped */
    struct m_off *off;   /* grouped by thread, by t_start within a thread */
    uint64_t noff;
    struct cs_rec_pwin *pwin; /* grouped by process (pid rewritten to proc index) */
    uint64_t npwin;
    struct cs_rec_syswin *sys; /* grouped by run, by time */
    uint64_t nsys;
    struct m_gpu *gpu;   /* by process, device, start (GPU activity in the window) */
    uint64_t ngpu;
    struct m_gcov *gcov; /* by process, start (every span, whatever the window) */
    uint64_t ngcov;
    struct m_nvtx *nvtx; /* by thread, start (NVTX ranges and marks in the window) */
    uint64_t nnvtx;
    struct m_cstack *cstack; /* calls with a stack, by call index */
    uint64_t ncstack;
    struct m_pysample *pys;  /* Python samples of host code in the window, by thread, time */
    uint64_t npys;
    uint32_t *call_stack; /* while loading runs with stacks: each call's stack
                             id, sorted with the calls as call_seq is */
    uint64_t nstacked;   /* while loading: calls with a stack id (first pass) */
    uint32_t *call_seq;  /* while loading runs with GPU records: each call's
                            cs_rec_cuda.seq, to find a GPU record's call */
    /* from the calls' first pass: the CUDA records model/memory.c reads
     * (memory_wants()), run by run, so it need not read that table again.
     * mrec_over: more than MODEL_MREC_BYTES of them, none kept (it does). */
    struct cs_rec_cuda *mrec;
    uint64_t nmrec, cap_mrec;
    int mrec_over;
    int any_writing; /* a run's collector was still writing it when opened */
    uint64_t *fold; /* CS_API_COUNT x CS_API_COUNT: runtime calls of [api] that folded
                       in a driver call of [drv_api] (CS_CF_FOLDED); NULL = none seen */
    struct m_hash *proc_ix, *thr_ix;
};

/* A small open-addressing map from u64 keys to u32 values (M_NONE = absent). */
struct m_hash;
struct m_hash *m_hash_new(void);
void m_hash_free(struct m_hash *h);
uint32_t m_hash_get(const struct m_hash *h, uint64_t key);
int m_hash_put(struct m_hash *h, uint64_t key, uint32_t val); /* 0 or -ENOMEM */

/** Allocate @p bytes for a big array: anonymous pages advised as huge pages,
 * so filling 10 M records costs a few thousand page faults, not millions;
 * or, once model_load() has found that the model would not fit in memory,
 * a shared mapping of an unlinked scratch file (reclaimable page cache).
 * @return the memory, or NULL; release with model_free_big(). */
void *model_alloc_big(size_t bytes);

/** Free what model_alloc_big() returned. Accepts NULL. */
void model_free_big(void *p);

/** Start writing back the dirty pages of the big arrays that live in
 * scratch files (model_alloc_big()), without waiting. A pass that fills
 * gigabytes of them calls it every few hundred MB. */
void model_scratch_flush(void);

/** The folder the big arrays of the last model_load() go to as scratch
 * files, NULL when they are anonymous memory. @return borrowed */
const char *model_scratch_dir(void);

/** An outermost host sync: a step point of its thread (ranks.h, clocks.h). */
static inline int model_is_step_sync(const struct m_call *c)
{
    const struct cs_api_info *in = &cs_api_table[c->api];
    return in->family == CS_FAM_SYNC && in->is_sync && !(c->flags & CS_CF_NESTED);
}

/** Open and load @p n run files. @return 0, a run-file error (@p err says
 * which file), -ENOMEM */
int model_load(struct model *m, const char *const *paths, int n,
               const struct analysis_opts *o, struct cs_err *err);

/** Is the collector that writes @p r still at it: no clean_shutdown yet,
 * and its pid (meta collector_pid) a cudaspy-sampler on this host? */
int model_writer_alive(struct cs_run *r);

/** Path of the run file being read right now (for a fatal-signal message),
 * NULL when none is. */
const char *model_reading(void);

/** Free everything model_load() took; the struct itself is the caller's. */
void model_exit(struct model *m);

/** Loop over the calls of process @p p: @p i takes the index in model.call
 * of each, thread by thread (@p t the thread's index), each thread's in
 * time order. */
#define M_FOR_PROC_CALLS(m, p, t, i)                                            \
    for (uint32_t t = 0; t < (m)->nthr; t++)                                   \
        if ((m)->thr[t].proc == (p))                                           \
            for (uint64_t i = (m)->thr[t].first_call;                          \
                 i < (m)->thr[t].first_call + (m)->thr[t].ncalls; i++)

/** First index in [@p lo, @p hi) of the elements @p stride bytes apart
 * from @p base, sorted by the uint64_t @p off bytes into each, whose key is
 * above @p t (@p strict) or at least @p t; @p hi if none. M_FIRST_GE and
 * M_FIRST_GT say it with a type and a field. */
static inline uint64_t model_search(const void *base, size_t stride, size_t off, uint64_t lo,
                                    uint64_t hi, uint64_t t, int strict)
{
    const unsigned char *b = base;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2, k;
        memcpy(&k, b + mid * stride + off, sizeof(k));
        if (k < t || (strict && k == t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
#define M_FIRST_GE(T, arr, field, lo, hi, t)                                    \
    model_search((arr), sizeof(T), offsetof(T, field), (lo), (hi), (t), 0)
#define M_FIRST_GT(T, arr, field, lo, hi, t)                                    \
    model_search((arr), sizeof(T), offsetof(T, field), (lo), (hi), (t), 1)

/* model/calls.c: the calls in the compact store */
struct callplace;
/** Calls to be placed in a store of @p ncall, by thread (m->thr's first_call
 * set), in any order within a thread as far as a window of 64 calls
 * reaches. @return it, or NULL: out of memory */
struct callplace *callplace_open(const struct model *m, uint64_t ncall);
/** Place call @p c of thread @p t, with its @p seq and @p stack id.
 * @return 0, -ENOMEM, or -EAGAIN: entered before a call already placed */
int callplace_put(struct callplace *cp, const struct model *m, uint32_t t,
                  const struct m_call *c, uint32_t seq, uint32_t stack);
/** The store once every call is placed (NULL: out of memory); @p cp is freed
 * either way. */
struct callstore *callplace_close(struct callplace *cp);
/** Free @p cp and what it placed. */
void callplace_abort(struct callplace *cp);
/** Move the calls loaded into the array into the compact store (none: they
 * are there); -ENOMEM: they stay. */
int model_calls_compact(struct model *m);
/** Free the store. */
void model_calls_free(struct model *m);
uint64_t model_call_search_stored(const struct model *m, uint64_t lo, uint64_t hi, uint64_t t,
                                  int strict);

/** Did any call of the model call @p api? */
static inline int model_has_api(const struct model *m, unsigned api)
{
    return api < CS_API_COUNT && (m->api_seen[api / 64] >> (api % 64) & 1);
}

/** Did any call of the model call an API for which @p pred holds? */
static inline int model_has_api_where(const struct model *m, int (*pred)(unsigned api))
{
    for (unsigned a = 0; a < CS_API_COUNT; a++)
        if (model_has_api(m, a) && pred(a))
            return 1;
    return 0;
}

/** Call @p i (< ncall) by value: how everything after loading reads a call,
 * from the array, or from the compact store of a run too big for it. */
static inline struct m_call model_call(const struct model *m, uint64_t i)
{
    struct m_call c;

    if (m->call)
        return m->call[i];
    callstore_get(m->cstore, i, &c);
    return c;
}

/** The enter time of call @p i alone. */
static inline uint64_t model_call_enter(const struct model *m, uint64_t i)
{
    return m->call ? m->call[i].t_enter_ns : callstore_enter(m->cstore, i);
}

/** First call in [@p lo, @p hi) (one thread's, by enter time) entered after
 * @p t (@p strict) or at @p t or later; @p hi if none. */
static inline uint64_t model_call_search(const struct model *m, uint64_t lo, uint64_t hi,
                                         uint64_t t, int strict)
{
    if (m->call == NULL)
        return model_call_search_stored(m, lo, hi, t, strict);
    return model_search(m->call, sizeof(struct m_call), offsetof(struct m_call, t_enter_ns), lo,
                        hi, t, strict);
}

/** Stack id of call @p ci (stacks db of its run), 0 = none. */
static inline uint32_t model_call_stack(const struct model *m, uint64_t ci)
{
    uint64_t k;

    if (m->ncstack == 0)
        return 0;
    k = M_FIRST_GE(struct m_cstack, m->cstack, call, 0, m->ncstack, ci);
    return k < m->ncstack && m->cstack[k].call == ci ? m->cstack[k].stack_id : 0;
}

/** Process of call @p c / interval @p o. */
static inline struct m_proc *model_call_proc(const struct model *m, const struct m_call *c)
{
    return &m->proc[m->thr[c->thr].proc];
}

/** The process of call @p i. */
static inline struct m_proc *model_proc_of_call(const struct model *m, uint64_t i)
{
    return &m->proc[m->thr[model_call(m, i).thr].proc];
}

/** Process index of (@p run, @p pid) at time @p t_ns, M_NONE if never seen. */
uint32_t model_find_proc(const struct model *m, uint32_t run, uint32_t pid);

/** Whether process @p a descends from process @p b (or is b). */
int model_descends(const struct model *m, uint32_t a, uint32_t b);

/** Called by model_scan() with one block of @p n records of run @p run;
 * a negative return stops the scan. */
typedef int (*model_scan_fn)(uint32_t run, const void *recs, uint32_t n, void *arg);

/** Hand every block of records of @p kind within each run's analysed window
 * to @p fn, for kinds the model does not keep (or not all of): read once,
 * pages handed back. Runs without such records are skipped, and a block
 * that cannot be read ends its run's scan (the model has already checked
 * the kinds the report needs). @return 0, or @p fn's negative code */
int model_scan(const struct model *m, unsigned kind, model_scan_fn fn, void *arg);

/** Time thread @p t spent inside its outermost CUDA calls within [@p t0,
 * @p t1), a call that spans @p t0 included (model/calls.c). */
uint64_t model_calls_inside(const struct model *m, uint32_t t, uint64_t t0, uint64_t t1);

/** Index of the first off-CPU interval of thread @p t ending after @p t_ns. */
uint64_t model_off_after(const struct model *m, uint32_t t, uint64_t t_ns);

/** Index of the first system window of run @p r ending after @p t_ns. */
uint64_t model_sys_after(const struct model *m, uint32_t r, uint64_t t_ns);

/** Index of the first pwin of process @p p ending after @p t_ns. */
uint64_t model_pwin_after(const struct model *m, uint32_t p, uint64_t t_ns);

/** Length of @p [a0,a1) ∩ [b0,b1), 0 if disjoint. */
static inline uint64_t model_overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

/** Does a call of @p api keep its executable graph (cs_rec_cuda.aux) in
 * m_call.bytes_or_name? Graph launches, instantiations, updates, uploads. */
static inline int model_keeps_graph(unsigned api)
{
    return api == CS_API_cuGraphLaunch || api == CS_API_cudaGraphLaunch ||
           (api < CS_API_COUNT && cs_api_table[api].family == CS_FAM_GRAPH);
}

/** Bytes a copy, memset or allocation moved (0 for launches). */
static inline uint64_t model_bytes(const struct m_call *c)
{
    return (c->flags & CS_CF_HAS_NAME) || model_keeps_graph(c->api) ? 0 : c->bytes_or_name;
}

/** The executable graph (the program's handle) a graph launch launched or
 * an instantiation, update or upload made; 0 for other calls. */
static inline uint64_t model_graph_exec(const struct m_call *c)
{
    return model_keeps_graph(c->api) ? c->bytes_or_name : 0;
}

/** Kernel name id (strings of the call's run), 0 if none. */
static inline uint32_t model_name_id(const struct m_call *c)
{
    return (c->flags & CS_CF_HAS_NAME) ? (uint32_t)c->bytes_or_name : 0;
}

/** Call duration (ns). */
static inline uint64_t model_dur(const struct m_call *c)
{
    return c->t_exit_ns > c->t_enter_ns ? c->t_exit_ns - c->t_enter_ns : 0;
}

/** How many of thread @p t's calls are step syncs (model_is_step_sync()). */
static inline uint64_t model_thread_step_syncs(const struct model *m, uint32_t t)
{
    uint64_t n = 0;

    for (uint64_t i = m->thr[t].first_call; i < m->thr[t].first_call + m->thr[t].ncalls; i++) {
        const struct m_call c = model_call(m, i);
        n += model_is_step_sync(&c);
    }
    return n;
}

/** The duration of call @p i. */
static inline uint64_t model_call_dur(const struct model *m, uint64_t i)
{
    const struct m_call c = model_call(m, i);

    return model_dur(&c);
}

#endif
