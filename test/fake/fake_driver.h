/* fake_driver.h: internals shared by the files of the fake libcuda.so.1
 * (fake_core.c, fake_mem.c, fake_stream.c, fake_queue.c, fake_launch.c,
 * fake_procaddr.c).
 * Owns the handle layouts, the export ids and the per-call entry hook.
 * Nothing here is visible outside the library (-fvisibility=hidden). */
#ifndef FAKE_DRIVER_H
#define FAKE_DRIVER_H

#define __CUDA_API_VERSION_INTERNAL 1 /* declare every variant, as NVIDIA's build does */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cudaProfilerTypedefs.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_API __attribute__((visibility("default")))

/* One id per export, in fake_procs.def order. */
enum fake_id {
#define P(base, ver, exp, sfx) FAKE_ID_##exp,
#include "fake_procs.def"
#undef P
    FAKE_N_EXPORTS
};

extern const char *const fake_export_names[FAKE_N_EXPORTS];

/* Configuration read once from the environment (fake_core.c). */
struct fake_cfg {
    int is_slow;            /* any latency or failure configured: take fake_enter_slow() */
    int is_sim;             /* FAKECUDA_SIM=1: simulated per-stream timelines */
    int is_lat_sleep;       /* FAKECUDA_LAT_MODE=sleep: nanosleep instead of spinning */
    int is_errno;           /* FAKECUDA_ERRNO=1: a call that succeeds leaves errno 1000 + its id */
    uint64_t kernel_ns;     /* default simulated kernel time */
    double pinned_bps;      /* bytes per second for copies from/to pinned memory */
    double pageable_bps;    /* bytes per second for copies from/to pageable memory */
    double d2d_bps;         /* bytes per second for device-to-device copies and memsets */
    uint64_t total_mem_bytes; /* device capacity: FAKECUDA_MEM_LIMIT bytes, else FAKECUDA_MEM_GB */
};
extern struct fake_cfg fake_cfg;
extern _Atomic uint64_t fake_calls[FAKE_N_EXPORTS];

CUresult fake_enter_slow(enum fake_id id, uint64_t nth);

/* Count the call; apply configured latency and injected failures. */
static inline CUresult fake_enter(enum fake_id id)
{
    uint64_t nth = atomic_fetch_add_explicit(&fake_calls[id], 1, memory_order_relaxed) + 1;
    if (__builtin_expect(fake_cfg.is_slow, 0))
        return fake_enter_slow(id, nth);
    return CUDA_SUCCESS;
}

/* Every export starts with this: the id makes each body distinct. */
#define FAKE_ENTER(exp)                                   \
    do {                                                  \
        CUresult enter_rc_ = fake_enter(FAKE_ID_##exp);   \
        if (enter_rc_ != CUDA_SUCCESS)                    \
            return enter_rc_;                             \
    } while (0)

uint64_t fake_now_ns(void);
void fake_sleep_until_ns(uint64_t t_ns);
uint64_t fake_kernel_time_ns(const char *name);

/* Tallies written to the expectation file (fake_core.c). */
enum fake_dir { FAKE_DIR_HTOD, FAKE_DIR_DTOH, FAKE_DIR_DTOD, FAKE_DIR_HTOH, FAKE_DIR_N };
struct fake_name_tally; /* interned kernel name with launch counters */
struct fake_name_tally *fake_tally_name(const char *name);
const char *fake_tally_name_str(const struct fake_name_tally *t);
void fake_tally_launch(struct fake_name_tally *t, int is_replay);
void fake_tally_copy(enum fake_dir dir, uint64_t len_bytes, int host_is_pinned);
void fake_tally_memset(uint64_t len_bytes);
void fake_tally_reset(void);

/* Memory ranges (fake_mem.c). */
/* FAKE_MEM_PHYS: a cuMemCreate handle's bytes, keyed by the handle (no address) */
enum fake_mem_kind {
    FAKE_MEM_PAGEABLE = 0, FAKE_MEM_DEVICE, FAKE_MEM_MANAGED, FAKE_MEM_PINNED, FAKE_MEM_PHYS
};
enum fake_mem_kind fake_mem_kind_of(const void *p);

/* Streams (fake_stream.c). Per-thread and legacy default streams are objects
 * too; stream_resolve maps the caller's handle and variant onto one. */
struct fake_graph;
struct CUstream_st {
    uint32_t magic;
    unsigned int flags;          /* CU_STREAM_NON_BLOCKING or 0 */
    uint64_t id;
    _Atomic uint64_t busy_until_ns; /* SIM: when the last queued work ends */
    _Atomic uint64_t dep_seq;    /* SIM: the newest deferred item (fake_queue.c) that
                                    work on this stream follows */
    struct fake_graph *capture;  /* non-NULL while capturing */
    CUstreamCaptureMode capture_mode;
};
struct CUstream_st *fake_stream_resolve(CUstream s, int is_per_thread);
/* SIM: queue work of dur_ns on s; returns its end time (0 when not SIM). */
uint64_t fake_stream_enqueue(struct CUstream_st *s, uint64_t dur_ns);
/* Wait until s is idle (SIM) with the bytes of its deferred work in place. */
void fake_stream_wait_idle(struct CUstream_st *s);
/* SIM: wait until every stream is idle (what cuCtxSynchronize and cuMemFree do). */
void fake_device_wait_idle(void);
/* SIM: s's next work follows deferred item @p seq (and so every item before
 * it); the legacy-stream rule passes it on. */
void fake_stream_add_dep(struct CUstream_st *s, uint64_t seq);
/* The deferred item that work issued on s now must follow (0: none). */
uint64_t fake_stream_deps(struct CUstream_st *s);

/* Tell the activity hook (fakecuda.h) that work of @p dur_ns ending at
 * @p end_ns (0 without SIM) was enqueued on @p s (fake_core.c); @p dir is a
 * copy's enum fake_dir, | 0x100 when its host side is pageable. */
struct fakecuda_act;
void fake_act_note(struct CUstream_st *s, int kind, const char *name, uint64_t bytes, int dir,
                   uint64_t end_ns, uint64_t dur_ns);
/* Between these, the notes of one thread make one activity (a 2D copy). */
void fake_act_begin(void);
void fake_act_end(void);
/* The calling thread's next notes are node @p node_id of graph @p graph_id
 * (a graph launch); 0, 0: not a graph's. */
void fake_act_graph(uint32_t graph_id, uint64_t node_id);

/* Graph nodes recorded during capture and replayed by cuGraphLaunch. */
enum fake_node_kind { FAKE_NODE_KERNEL, FAKE_NODE_COPY, FAKE_NODE_MEMSET };
struct fake_node {
    enum fake_node_kind kind;
    struct fake_name_tally *kernel; /* KERNEL */
    uint64_t work_ns;               /* KERNEL */
    void *dst;                      /* COPY, MEMSET */
    const void *src;                /* COPY */
    uint64_t len_bytes;             /* COPY, MEMSET */
    uint32_t value;                 /* MEMSET */
    unsigned int elem_size;         /* MEMSET: 1, 2 or 4 */
    enum fake_dir dir;              /* COPY */
    int host_is_pinned;             /* COPY */
    uint64_t node_id;               /* an executable graph's node: its id (from 1), else 0 */
};
int fake_graph_add(struct fake_graph *g, const struct fake_node *n);
/* Issue one node of a launched graph on s: kernels only take time; copies
 * and memsets are deferred or run now as the same work issued alone is. */
void fake_node_run(struct CUstream_st *s, const struct fake_node *n);
/* Move the bytes of a COPY or MEMSET node now (fake_mem.c). */
void fake_node_exec(const struct fake_node *n);

/* Deferred data movement (fake_queue.c). push: queue node @p n, issued on
 * @p s, to run later (only in SIM); 0, or -1 when not SIM or out of memory
 * (the caller runs it now). run_upto: run every queued item up to @p seq
 * (UINT64_MAX: all), in order, on the calling thread, or wait for the thread
 * running them; on return their bytes are in place for this thread. */
int fake_queue_push(struct CUstream_st *s, const struct fake_node *n);
void fake_queue_run_upto(uint64_t seq);

/* Copy/memset engines (fake_mem.c); is_async: stream ordered, else host
 * waits. dir FAKE_DIR_N means "infer from the pointers" (cuMemcpy). */
CUresult fake_copy(struct CUstream_st *s, void *dst, const void *src, size_t n, enum fake_dir dir,
                   int is_async);
CUresult fake_memset(struct CUstream_st *s, void *dst, uint32_t value, unsigned int elem_size,
                     size_t count, int is_async);

#endif
