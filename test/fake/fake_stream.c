/* fake_stream.c: the fake driver's streams, events, synchronisation, stream
 * capture and graphs. In SIM mode (FAKECUDA_SIM=1) every stream keeps the
 * time its queued work ends; syncs sleep until then. Otherwise work is done
 * when the call returns and syncs return at once. Kernels are fake_launch.c's,
 * copies fake_mem.c's. Syncs, and queries that report completion, also run
 * the deferred copies (fake_queue.c) that what they wait for depends on. */
#include "fake_driver.h"

#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define STREAM_MAGIC 0x5354524du
#define EVENT_MAGIC 0x45564e54u

static _Atomic uint64_t next_stream_id = 3;
/* SIM: the latest end time of any queued work, for context synchronisation. */
static _Atomic uint64_t all_busy_until_ns;
/* SIM: the largest dep_seq of any blocking stream, for the legacy stream. */
static _Atomic uint64_t blocking_dep_seq;
static struct CUstream_st legacy_stream = {.magic = STREAM_MAGIC, .id = 1};
static _Thread_local struct CUstream_st per_thread_stream;

static void atomic_max(_Atomic uint64_t *a, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

struct CUstream_st *fake_stream_resolve(CUstream s, int is_per_thread)
{
    if (s == CU_STREAM_LEGACY || (s == NULL && !is_per_thread))
        return &legacy_stream;
    if (s == CU_STREAM_PER_THREAD || s == NULL) {
        if (per_thread_stream.magic == 0) {
            per_thread_stream.magic = STREAM_MAGIC;
            per_thread_stream.id = 2;
        }
        return &per_thread_stream;
    }
    return s->magic == STREAM_MAGIC ? s : NULL;
}

static int is_blocking_stream(const struct CUstream_st *s)
{
    return s != &legacy_stream && !(s->flags & CU_STREAM_NON_BLOCKING);
}

void fake_stream_add_dep(struct CUstream_st *s, uint64_t seq)
{
    atomic_max(&s->dep_seq, seq);
    if (is_blocking_stream(s))
        atomic_max(&blocking_dep_seq, seq);
}

/* The legacy-stream rule for data: work issued on the legacy stream follows
 * what every blocking stream follows, and work on a blocking stream what
 * the legacy stream follows. One number per stream over-approximates what
 * it depends on (fake_queue.c runs every item up to it, in order): safe. */
static void stream_merge_deps(struct CUstream_st *s)
{
    if (s == &legacy_stream)
        atomic_max(&s->dep_seq, atomic_load(&blocking_dep_seq));
    else if (is_blocking_stream(s))
        fake_stream_add_dep(s, atomic_load(&legacy_stream.dep_seq));
}

uint64_t fake_stream_deps(struct CUstream_st *s)
{
    if (!fake_cfg.is_sim)
        return 0;
    stream_merge_deps(s);
    return atomic_load(&s->dep_seq);
}

/* Work on the legacy stream waits for all blocking streams, and work on a
 * blocking stream waits for the legacy stream (approximated with one clock). */
uint64_t fake_stream_enqueue(struct CUstream_st *s, uint64_t dur_ns)
{
    if (!fake_cfg.is_sim)
        return 0;
    stream_merge_deps(s);
    uint64_t start = fake_now_ns(), busy = atomic_load(&s->busy_until_ns);
    if (busy > start)
        start = busy;
    if (s == &legacy_stream) {
        uint64_t all = atomic_load(&all_busy_until_ns);
        start = all > start ? all : start;
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
        uint64_t leg = atomic_load(&legacy_stream.busy_until_ns);
        start = leg > start ? leg : start;
    }
    uint64_t end = start + dur_ns;
    atomic_max(&s->busy_until_ns, end);
    atomic_max(&all_busy_until_ns, end);
    return end;
}

/* The deferred bytes move first, while the simulated GPU is still busy. */
void fake_stream_wait_idle(struct CUstream_st *s)
{
    if (!fake_cfg.is_sim)
        return;
    fake_queue_run_upto(atomic_load(&s->dep_seq));
    fake_sleep_until_ns(atomic_load(&s->busy_until_ns));
}

static CUresult ctx_sync(void)
{
    if (!fake_cfg.is_sim)
        return CUDA_SUCCESS;
    fake_queue_run_upto(UINT64_MAX);
    fake_sleep_until_ns(atomic_load(&all_busy_until_ns));
    return CUDA_SUCCESS;
}

void fake_device_wait_idle(void)
{
    ctx_sync();
}

FAKE_API CUresult CUDAAPI cuCtxSynchronize(void)
{
    FAKE_ENTER(cuCtxSynchronize);
    return ctx_sync();
}

/* The profiler API: nothing to start; the tool that wraps it (the shim's
 * --capture cudaProfilerApi) is what a test watches. */
FAKE_API CUresult CUDAAPI cuProfilerStart(void)
{
    FAKE_ENTER(cuProfilerStart);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuProfilerStop(void)
{
    FAKE_ENTER(cuProfilerStop);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    FAKE_ENTER(cuCtxSynchronize_v2);
    return ctx_sync();
}

/* ---- streams ---- */

FAKE_API CUresult CUDAAPI cuStreamCreate(CUstream *ps, unsigned int flags)
{
    FAKE_ENTER(cuStreamCreate);
    if (ps == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->magic = STREAM_MAGIC;
    s->flags = flags;
    s->id = atomic_fetch_add(&next_stream_id, 1);
    *ps = s;
    return CUDA_SUCCESS;
}

static CUresult stream_destroy(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->magic != STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    s->magic = 0;
    free(s);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamDestroy(CUstream s)
{
    FAKE_ENTER(cuStreamDestroy);
    return stream_destroy(s);
}

FAKE_API CUresult CUDAAPI cuStreamDestroy_v2(CUstream s)
{
    FAKE_ENTER(cuStreamDestroy_v2);
    return stream_destroy(s);
}

static CUresult stream_sync(CUstream hs, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_stream_wait_idle(s);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
    FAKE_ENTER(cuStreamSynchronize);
    return stream_sync(s, 0);
}

FAKE_API CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s)
{
    FAKE_ENTER(cuStreamSynchronize_ptsz);
    return stream_sync(s, 1);
}

static CUresult stream_query(CUstream hs, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_cfg.is_sim && atomic_load(&s->busy_until_ns) > fake_now_ns())
        return CUDA_ERROR_NOT_READY;
    fake_queue_run_upto(atomic_load(&s->dep_seq));
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamQuery(CUstream s)
{
    FAKE_ENTER(cuStreamQuery);
    return stream_query(s, 0);
}

FAKE_API CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s)
{
    FAKE_ENTER(cuStreamQuery_ptsz);
    return stream_query(s, 1);
}

static CUresult stream_get_id(CUstream hs, int pt, unsigned long long *id)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL || id == NULL)
        return s == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    *id = s->id;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamGetId(CUstream s, unsigned long long *id)
{
    FAKE_ENTER(cuStreamGetId);
    return stream_get_id(s, 0, id);
}

FAKE_API CUresult CUDAAPI cuStreamGetId_ptsz(CUstream s, unsigned long long *id)
{
    FAKE_ENTER(cuStreamGetId_ptsz);
    return stream_get_id(s, 1, id);
}

/* ---- events ---- */

struct CUevent_st {
    uint32_t magic;
    int is_recorded;
    _Atomic uint64_t done_ns; /* when the work before the record ends (SIM) or record time */
    _Atomic uint64_t dep_seq; /* SIM: the deferred item the work before the record follows */
};

FAKE_API CUresult CUDAAPI cuEventCreate(CUevent *pe, unsigned int flags)
{
    FAKE_ENTER(cuEventCreate);
    if (pe == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = EVENT_MAGIC;
    *pe = e;
    return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent e)
{
    if (e == NULL || e->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    e->magic = 0;
    free(e);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuEventDestroy(CUevent e)
{
    FAKE_ENTER(cuEventDestroy);
    return event_destroy(e);
}

FAKE_API CUresult CUDAAPI cuEventDestroy_v2(CUevent e)
{
    FAKE_ENTER(cuEventDestroy_v2);
    return event_destroy(e);
}

static CUresult event_record(CUevent e, CUstream hs, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (e == NULL || e->magic != EVENT_MAGIC || s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t now = fake_now_ns(), busy = atomic_load(&s->busy_until_ns);
    atomic_store(&e->done_ns, fake_cfg.is_sim && busy > now ? busy : now);
    atomic_store(&e->dep_seq, fake_stream_deps(s));
    e->is_recorded = 1;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s)
{
    FAKE_ENTER(cuEventRecord);
    return event_record(e, s, 0);
}

FAKE_API CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s)
{
    FAKE_ENTER(cuEventRecord_ptsz);
    return event_record(e, s, 1);
}

FAKE_API CUresult CUDAAPI cuEventQuery(CUevent e)
{
    FAKE_ENTER(cuEventQuery);
    if (e == NULL || e->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (atomic_load(&e->done_ns) > fake_now_ns())
        return CUDA_ERROR_NOT_READY;
    fake_queue_run_upto(atomic_load(&e->dep_seq));
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
    FAKE_ENTER(cuEventSynchronize);
    if (e == NULL || e->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    fake_queue_run_upto(atomic_load(&e->dep_seq));
    fake_sleep_until_ns(atomic_load(&e->done_ns));
    return CUDA_SUCCESS;
}

static CUresult event_elapsed(float *ms, CUevent a, CUevent b)
{
    if (ms == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (a == NULL || b == NULL || a->magic != EVENT_MAGIC || b->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->is_recorded || !b->is_recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t ta = atomic_load(&a->done_ns), tb = atomic_load(&b->done_ns), now = fake_now_ns();
    if (ta > now || tb > now)
        return CUDA_ERROR_NOT_READY;
    *ms = (float)((double)((int64_t)(tb - ta)) / 1e6);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    FAKE_ENTER(cuEventElapsedTime);
    return event_elapsed(ms, a, b);
}

FAKE_API CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    FAKE_ENTER(cuEventElapsedTime_v2);
    return event_elapsed(ms, a, b);
}

static CUresult stream_wait_event(CUstream hs, CUevent e, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL || e == NULL || e->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_cfg.is_sim) {
        atomic_max(&s->busy_until_ns, atomic_load(&e->done_ns));
        fake_stream_add_dep(s, atomic_load(&e->dep_seq));
    }
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    FAKE_ENTER(cuStreamWaitEvent);
    return stream_wait_event(s, e, 0);
}

FAKE_API CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{
    FAKE_ENTER(cuStreamWaitEvent_ptsz);
    return stream_wait_event(s, e, 1);
}

/* ---- graphs and capture ---- */

#define GRAPH_MAGIC 0x47525048u
#define EXEC_MAGIC 0x47455845u

struct fake_graph {
    uint32_t magic;
    uint32_t id; /* an executable graph's (CUPTI's graphId), from 1 */
    struct fake_node *nodes;
    size_t n_nodes, cap_nodes;
};
struct CUgraph_st {
    struct fake_graph g;
};
struct CUgraphExec_st {
    struct fake_graph g;
};

int fake_graph_add(struct fake_graph *g, const struct fake_node *n)
{
    if (g->n_nodes == g->cap_nodes) {
        size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 16;
        struct fake_node *p = realloc(g->nodes, cap * sizeof *p);
        if (p == NULL)
            return -1;
        g->nodes = p;
        g->cap_nodes = cap;
    }
    g->nodes[g->n_nodes++] = *n;
    return 0;
}

static struct CUgraph_st *graph_new(void)
{
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g)
        g->g.magic = GRAPH_MAGIC;
    return g;
}

static void graph_free(struct fake_graph *g)
{
    g->magic = 0;
    free(g->nodes);
    free(g);
}

FAKE_API CUresult CUDAAPI cuGraphCreate(CUgraph *pg, unsigned int flags)
{
    FAKE_ENTER(cuGraphCreate);
    if (pg == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return (*pg = graph_new()) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_API CUresult CUDAAPI cuGraphDestroy(CUgraph g)
{
    FAKE_ENTER(cuGraphDestroy);
    if (g == NULL || g->g.magic != GRAPH_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    graph_free(&g->g);
    return CUDA_SUCCESS;
}

static _Atomic uint32_t next_exec_id = 1;
static _Atomic uint64_t next_node_id = 1;

/* Exec @p e gets graph @p g's nodes; a node beyond those it had gets a new
 * id, as a node the real driver adds (ids are unique in the process). */
static CUresult exec_fill(struct fake_graph *e, const struct fake_graph *g)
{
    size_t had = e->n_nodes;

    e->n_nodes = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        struct fake_node n = g->nodes[i];
        n.node_id = i < had ? e->nodes[i].node_id : atomic_fetch_add(&next_node_id, 1);
        if (fake_graph_add(e, &n) != 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *pe, CUgraph g)
{
    if (pe == NULL || g == NULL || g->g.magic != GRAPH_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->g.magic = EXEC_MAGIC;
    e->g.id = atomic_fetch_add(&next_exec_id, 1);
    if (exec_fill(&e->g, &g->g) != CUDA_SUCCESS) {
        graph_free(&e->g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pe = e;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g,
                                                      unsigned long long flags)
{
    FAKE_ENTER(cuGraphInstantiateWithFlags);
    return instantiate(pe, g);
}

static CUresult instantiate_params(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    CUresult rc = instantiate(pe, g);
    if (p)
        p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                           : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

FAKE_API CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *pe, CUgraph g,
                                                       CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    FAKE_ENTER(cuGraphInstantiateWithParams);
    return instantiate_params(pe, g, p);
}

FAKE_API CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *pe, CUgraph g,
                                                            CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    FAKE_ENTER(cuGraphInstantiateWithParams_ptsz);
    return instantiate_params(pe, g, p);
}

/* The fake's graphs are linear, so any graph updates any exec: it takes
 * the graph's nodes, keeping its node ids. */
FAKE_API CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g,
                                               CUgraphExecUpdateResultInfo *info)
{
    FAKE_ENTER(cuGraphExecUpdate_v2);
    if (e == NULL || e->g.magic != EXEC_MAGIC || g == NULL || g->g.magic != GRAPH_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = exec_fill(&e->g, &g->g);
    if (info) {
        memset(info, 0, sizeof(*info));
        info->result = rc == CUDA_SUCCESS ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                                          : CU_GRAPH_EXEC_UPDATE_ERROR;
    }
    return rc;
}

/* Uploading does nothing the fake's launches would need. */
static CUresult graph_upload(CUgraphExec e, CUstream hs, int pt)
{
    if (e == NULL || e->g.magic != EXEC_MAGIC || fake_stream_resolve(hs, pt) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuGraphUpload(CUgraphExec e, CUstream s)
{
    FAKE_ENTER(cuGraphUpload);
    return graph_upload(e, s, 0);
}

FAKE_API CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec e, CUstream s)
{
    FAKE_ENTER(cuGraphUpload_ptsz);
    return graph_upload(e, s, 1);
}

FAKE_API CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e)
{
    FAKE_ENTER(cuGraphExecDestroy);
    if (e == NULL || e->g.magic != EXEC_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    graph_free(&e->g);
    return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec e, CUstream hs, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (e == NULL || e->g.magic != EXEC_MAGIC || s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    for (size_t i = 0; i < e->g.n_nodes; i++) {
        fake_act_graph(e->g.id, e->g.nodes[i].node_id);
        fake_node_run(s, &e->g.nodes[i]);
    }
    fake_act_graph(0, 0);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuGraphLaunch(CUgraphExec e, CUstream s)
{
    FAKE_ENTER(cuGraphLaunch);
    return graph_launch(e, s, 0);
}

FAKE_API CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec e, CUstream s)
{
    FAKE_ENTER(cuGraphLaunch_ptsz);
    return graph_launch(e, s, 1);
}

/* The legacy stream cannot be captured, as in the real driver. */
static CUresult begin_capture(CUstream hs, CUstreamCaptureMode mode, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL || s == &legacy_stream)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    struct CUgraph_st *g = graph_new();
    if (g == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->capture = &g->g;
    s->capture_mode = mode;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamBeginCapture(CUstream s)
{
    FAKE_ENTER(cuStreamBeginCapture);
    return begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL, 0);
}

FAKE_API CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream s)
{
    FAKE_ENTER(cuStreamBeginCapture_ptsz);
    return begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL, 1);
}

FAKE_API CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    FAKE_ENTER(cuStreamBeginCapture_v2);
    return begin_capture(s, mode, 0);
}

FAKE_API CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    FAKE_ENTER(cuStreamBeginCapture_v2_ptsz);
    return begin_capture(s, mode, 1);
}

static CUresult end_capture(CUstream hs, CUgraph *pg, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL || pg == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capture == NULL)
        return CUDA_ERROR_ILLEGAL_STATE;
    *pg = (struct CUgraph_st *)s->capture;
    s->capture = NULL;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *pg)
{
    FAKE_ENTER(cuStreamEndCapture);
    return end_capture(s, pg, 0);
}

FAKE_API CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph *pg)
{
    FAKE_ENTER(cuStreamEndCapture_ptsz);
    return end_capture(s, pg, 1);
}

static CUresult capture_status(CUstream hs, int pt, CUstreamCaptureStatus *st, cuuint64_t *id)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL || st == NULL)
        return s == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    *st = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (id)
        *id = s->capture ? (cuuint64_t)(uintptr_t)s->capture : 0;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    FAKE_ENTER(cuStreamIsCapturing);
    return capture_status(s, 0, st, NULL);
}

FAKE_API CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    FAKE_ENTER(cuStreamIsCapturing_ptsz);
    return capture_status(s, 1, st, NULL);
}

FAKE_API CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st,
                                                 cuuint64_t *id)
{
    FAKE_ENTER(cuStreamGetCaptureInfo);
    return capture_status(s, 0, st, id);
}

FAKE_API CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                                      cuuint64_t *id)
{
    FAKE_ENTER(cuStreamGetCaptureInfo_ptsz);
    return capture_status(s, 1, st, id);
}

/* The fake records no dependency edges: graphs are linear. */
static CUresult capture_info_more(CUstream s, int pt, CUstreamCaptureStatus *st, cuuint64_t *id,
                                  CUgraph *g, const CUgraphNode **deps, size_t *n_deps)
{
    CUresult rc = capture_status(s, pt, st, id);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct CUstream_st *r = fake_stream_resolve(s, pt);
    if (g)
        *g = (struct CUgraph_st *)r->capture;
    if (deps)
        *deps = NULL;
    if (n_deps)
        *n_deps = 0;
    return CUDA_SUCCESS;
}

#define DEF_CAPINFO_V2(exp, pt)                                                               \
    FAKE_API CUresult CUDAAPI exp(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,      \
                                  CUgraph *g, const CUgraphNode **deps, size_t *n_deps)       \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return capture_info_more(s, pt, st, id, g, deps, n_deps);                             \
    }
DEF_CAPINFO_V2(cuStreamGetCaptureInfo_v2, 0)
DEF_CAPINFO_V2(cuStreamGetCaptureInfo_v2_ptsz, 1)

#define DEF_CAPINFO_V3(exp, pt)                                                               \
    FAKE_API CUresult CUDAAPI exp(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,      \
                                  CUgraph *g, const CUgraphNode **deps,                       \
                                  const CUgraphEdgeData **edges, size_t *n_deps)              \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        if (edges)                                                                            \
            *edges = NULL;                                                                    \
        return capture_info_more(s, pt, st, id, g, deps, n_deps);                             \
    }
DEF_CAPINFO_V3(cuStreamGetCaptureInfo_v3, 0)
DEF_CAPINFO_V3(cuStreamGetCaptureInfo_v3_ptsz, 1)
