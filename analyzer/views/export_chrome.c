/* views/export_chrome.c: `cudaspy-analyze export --chrome OUT.json RUN`, the run
 * as Chrome Trace Event JSON for ui.perfetto.dev and chrome://tracing
 * (format notes in docs/export.md). Streams: events are written while the
 * cursors are read; memory is bounded by one time window of records. Owns
 * the clipping that keeps off-CPU slices nested inside CUDA calls. The steps
 * and the account come last, from the analysis (analysis.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "cudaspy/runfile.h"
#include "cudaspy/version.h"
#include "model/clocks.h"
#include "model/memory.h"
#include "model/pystack.h"
#include "model/steps.h"

#define PROG "cudaspy-analyze"
#define EXPORT_WIN_NS 1000000000ull   /* off-CPU clipping window */
#define EXPORT_FLOW_MIN_NS 10000ull   /* off-CPU evidence worth an arrow */
#define EXPORT_SYS_PID 0              /* track for system-wide counters */

struct exporter {
    struct cs_run *run;
    FILE *out;
    uint64_t t0;             /* ts 0 of the trace (the first run's start) */
    /* runs of several hosts (docs/multihost.md): this run's clock onto
     * the first's, its pids moved above the others', its host named */
    struct m_clock clk;
    uint32_t pid_base;
    char prefix[64];
    uint64_t ev_t;           /* the start of the event ev_begin() began */
    uint64_t since, until;   /* absolute window, records starting in it */
    int nevents;
    uint64_t flow_id;
    struct cs_err err;
    /* per-window scratch */
    struct cs_rec_cuda *calls; /* CUDA calls overlapping the window, by (tid, t_enter) */
    size_t ncalls, capcalls;
    struct cs_rec_offcpu *offs; /* pending off-CPU remainders + new ones */
    size_t noffs, capoffs;
    /* tracks already named: pid << 32 | tid, or pid << 32 | NAMED_PROC */
    uint64_t *named;
    size_t cap_named, n_named;
    /* GPU work by its enqueuing call (tid << 32 | seq), for the launch ->
     * kernel arrows: open addressing, a power of two */
    struct gflow *gflow;
    size_t cap_gflow, n_gflow;
};

struct gflow {
    uint64_t key;       /* tid << 32 | seq of the enqueuing call; 0 = empty */
    uint64_t t_ns;      /* GPU start */
    uint64_t dur_ns;
    uint32_t pid, gtid; /* the GPU track */
};

#define NAMED_PROC 0xffffffffu

/* ---- JSON writing ---- */

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Microseconds with 3 decimals from a signed nanosecond offset (exact). */
static void put_us(FILE *f, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)-ns : (uint64_t)ns;
    fprintf(f, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}

static void ev_begin(struct exporter *x, const char *ph, uint32_t pid, uint32_t tid, uint64_t t)
{
    fputs(x->nevents++ ? ",\n{\"ph\":\"" : "{\"ph\":\"", x->out);
    fprintf(x->out, "%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", ph,
            pid + x->pid_base, tid);
    put_us(x->out, (int64_t)(clocks_shift(&x->clk, t) - x->t0));
    x->ev_t = t;
}

/* The duration of the event just begun: both ends moved, as slices that
 * touch must still touch on the first run's clock. */
static void put_dur(struct exporter *x, uint64_t d)
{
    fputs(",\"dur\":", x->out);
    put_us(x->out, (int64_t)(clocks_shift(&x->clk, x->ev_t + d) - clocks_shift(&x->clk, x->ev_t)));
}

/* ---- metadata ---- */

static const char *proc_comm(struct exporter *x, uint32_t pid)
{
    size_t n;
    const struct cs_proc *p = cs_run_procs(x->run, &n);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && p[lo].pid == pid ? p[lo].comm : NULL;
}

static void meta_name(struct exporter *x, const char *what, uint32_t pid, uint32_t tid,
                      const char *name)
{
    fputs(x->nevents++ ? ",\n" : "", x->out);
    fprintf(x->out, "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":0,\"name\":\"%s\","
            "\"args\":{\"name\":", pid + x->pid_base, tid, what);
    if (x->prefix[0] && tid == 0) {
        char buf[160];
        snprintf(buf, sizeof(buf), "%s%s", x->prefix, name);
        put_str(x->out, buf);
    } else {
        put_str(x->out, name);
    }
    fputs("}}", x->out);
}

/* Slot of @p key in an open-addressing set of @p cap (a power of two):
 * the key itself or the empty slot where it goes. */
static uint64_t *named_slot(uint64_t *set, size_t cap, uint64_t key)
{
    size_t j = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 40);
    while (set[j & (cap - 1)] != 0 && set[j & (cap - 1)] != key)
        j++;
    return &set[j & (cap - 1)];
}

/* Remember that track @p key (never 0) has a name. @return 1 if it had none */
static int named_add(struct exporter *x, uint64_t key)
{
    if ((x->n_named + 1) * 2 > x->cap_named) {
        size_t cap = x->cap_named ? x->cap_named * 2 : 256;
        uint64_t *t = calloc(cap, sizeof(*t));
        if (!t)
            return 0; /* out of memory: at worst a track stays unnamed */
        for (size_t i = 0; i < x->cap_named; i++)
            if (x->named[i])
                *named_slot(t, cap, x->named[i]) = x->named[i];
        free(x->named);
        x->named = t;
        x->cap_named = cap;
    }
    uint64_t *slot = named_slot(x->named, x->cap_named, key);
    if (*slot == key)
        return 0;
    *slot = key;
    x->n_named++;
    return 1;
}

/* Name the tracks of a thread the tables did not know (the viewers would
 * show bare numbers, and check_trace wants every track named). */
static void ensure_named(struct exporter *x, uint32_t pid, uint32_t tid)
{
    char buf[48];
    if (named_add(x, (uint64_t)pid << 32 | NAMED_PROC)) {
        const char *comm = proc_comm(x, pid);
        snprintf(buf, sizeof(buf), "%s", comm ? comm : "process");
        meta_name(x, "process_name", pid, 0, buf);
    }
    if (tid != NAMED_PROC && named_add(x, (uint64_t)pid << 32 | tid)) {
        snprintf(buf, sizeof(buf), "thread %" PRIu32, tid);
        meta_name(x, "thread_name", pid, tid, buf);
    }
}

static void write_metadata(struct exporter *x)
{
    size_t n;
    char buf[96];
    const struct cs_proc *p = cs_run_procs(x->run, &n);
    meta_name(x, "process_name", EXPORT_SYS_PID, 0, "system (cudaspy)");
    for (size_t i = 0; i < n; i++) {
        if (i && p[i].pid == p[i - 1].pid)
            continue; /* reused pid: first name wins */
        snprintf(buf, sizeof(buf), "%.16s%s", p[i].comm,
                 (p[i].flags & CS_PF_CUDA) ? " (CUDA)" : "");
        meta_name(x, "process_name", p[i].pid, 0, buf);
        named_add(x, (uint64_t)p[i].pid << 32 | NAMED_PROC);
    }
    const struct cs_thread *t = cs_run_threads(x->run, &n);
    for (size_t i = 0; i < n; i++) {
        if (i && t[i].pid == t[i - 1].pid && t[i].tid == t[i - 1].tid)
            continue;
        snprintf(buf, sizeof(buf), "%.16s", t[i].name[0] ? t[i].name : "thread");
        meta_name(x, "thread_name", t[i].pid, t[i].tid, buf);
        named_add(x, (uint64_t)t[i].pid << 32 | t[i].tid);
    }
}

/* ---- CUDA calls ---- */

static const char *dir_name(unsigned d)
{
    static const char *const n[] = {"none", "HtoD", "DtoH", "DtoD", "HtoH", "peer", "default"};
    return d < sizeof(n) / sizeof(n[0]) ? n[d] : "?";
}

/* The call's stack as args "stack" (every frame, innermost first, as
 * "train.py:57 in train_step" or "libtorch_cuda.so+0x1a2b") and "site" (the
 * innermost frame of the user's code, pystack_site_frame()); a stack id
 * with no stack gives "site":"?". */
static void write_stack(struct exporter *x, uint32_t id)
{
    size_t n;
    const struct cs_frame *fr = cs_run_stack(x->run, id, &n);
    size_t site = pystack_site_frame(x->run, fr, n);
    char buf[512];

    fputs(",\"site\":", x->out);
    put_str(x->out, n ? pystack_frame_text(x->run, &fr[site], buf, sizeof(buf)) : "?");
    fputs(",\"stack\":[", x->out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? "," : "", x->out);
        put_str(x->out, pystack_frame_text(x->run, &fr[i], buf, sizeof(buf)));
    }
    fputs("]", x->out);
}

static void write_call_args(struct exporter *x, const struct cs_rec_cuda *c)
{
    const struct cs_api_info *ai = &cs_api_table[c->api];
    FILE *f = x->out;
    fprintf(f, ",\"args\":{\"result\":%" PRId32 ",\"stream\":\"0x%" PRIx64 "\",\"seq\":%" PRIu32,
            c->result, c->stream, c->seq);
    if (c->device != CS_DEVICE_UNKNOWN)
        fprintf(f, ",\"device\":%u", c->device);
    if (ai->family == CS_FAM_COPY || ai->family == CS_FAM_MEMSET || ai->family == CS_FAM_ALLOC) {
        fprintf(f, ",\"bytes\":%" PRIu64, c->bytes);
        if (ai->family == CS_FAM_COPY)
            fprintf(f, ",\"direction\":\"%s\",\"pinned\":%s", dir_name(c->dir),
                    (c->flags & CS_CF_PINNED) ? "true"
                                              : (c->flags & CS_CF_PAGEABLE) ? "false" : "null");
    }
    if (c->flags & CS_CF_HAS_NAME) {
        fputs(",\"kernel\":", f);
        put_str(f, cs_run_string(x->run, c->name_id));
    }
    if (ai->family == CS_FAM_LAUNCH && c->grid[0])
        fprintf(f, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]", c->grid[0], c->grid[1],
                c->grid[2], c->block[0], c->block[1], c->block[2]);
    if ((c->flags & CS_CF_FOLDED) && c->drv_api != CS_API_NONE && c->drv_api < CS_API_COUNT) {
        fputs(",\"driver\":", f); /* timed with this call: no slice of its own */
        put_str(f, cs_api_table[c->drv_api].name);
        if (c->flags & CS_CF_DRV_ERROR)
            fputs(",\"driver_failed\":true", f);
    }
    if (c->flags & CS_CF_NESTED)
        fprintf(f, ",\"parent_seq\":%" PRIu32, c->parent_seq);
    if (c->flags & CS_CF_CAPTURING)
        fputs(",\"capturing\":true", f);
    if (c->stack_id)
        write_stack(x, c->stack_id);
    fputs("}}", f);
}

static const struct gflow *gflow_find(const struct exporter *x, uint64_t key);

/* Arrow from enqueuing call @p c to the GPU work it put on a stream: it
 * starts at the call's entry and ends with bp "e" inside the GPU slice. */
static void write_gpu_flow(struct exporter *x, const struct cs_rec_cuda *c, const struct gflow *g)
{
    uint64_t id = ++x->flow_id, at = g->t_ns + g->dur_ns / 2;

    ev_begin(x, "s", c->pid, c->tid, c->t_enter_ns);
    fprintf(x->out, ",\"cat\":\"cudaspy.gpu\",\"name\":\"launch\",\"id\":%" PRIu64 "}", id);
    ev_begin(x, "f", g->pid, g->gtid, at > c->t_enter_ns ? at : c->t_enter_ns);
    fprintf(x->out, ",\"cat\":\"cudaspy.gpu\",\"name\":\"launch\",\"id\":%" PRIu64
            ",\"bp\":\"e\"}", id);
}

static void write_call(struct exporter *x, const struct cs_rec_cuda *c)
{
    char name[96];
    uint64_t end = c->t_exit_ns > c->t_enter_ns ? c->t_exit_ns : c->t_enter_ns;
    const struct gflow *g = x->n_gflow ? gflow_find(x, (uint64_t)c->tid << 32 | c->seq) : NULL;

    cs_api_display(c->api, c->variant, name, sizeof(name));
    ensure_named(x, c->pid, c->tid);
    ev_begin(x, "X", c->pid, c->tid, c->t_enter_ns);
    put_dur(x, end - c->t_enter_ns);
    fputs(",\"cat\":\"cuda.", x->out);
    fputs(cs_family_name(cs_api_table[c->api].family), x->out);
    fputs("\",\"name\":", x->out);
    put_str(x->out, name);
    write_call_args(x, c);
    if (g && g->pid == c->pid && g->t_ns + g->dur_ns / 2 >= c->t_enter_ns)
        write_gpu_flow(x, c, g);
}

/* ---- GPU activity (docs/gpu.md): a track per device and stream ---- */

/* The track of stream @p s on device @p d: a tid no thread has (thread
 * ids stay below 2^22 on Linux). */
static uint32_t gpu_tid(uint32_t d, uint32_t s)
{
    return 0x40000000u | (d & 0xff) << 22 | (s & 0x3fffff);
}

static struct gflow *gflow_slot(struct gflow *t, size_t cap, uint64_t key)
{
    size_t j = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 40);
    while (t[j & (cap - 1)].key != 0 && t[j & (cap - 1)].key != key)
        j++;
    return &t[j & (cap - 1)];
}

static const struct gflow *gflow_find(const struct exporter *x, uint64_t key)
{
    const struct gflow *g = gflow_slot(x->gflow, x->cap_gflow, key);
    return g->key == key ? g : NULL;
}

static int gflow_add(struct exporter *x, const struct gflow *g)
{
    if ((x->n_gflow + 1) * 2 > x->cap_gflow) {
        size_t cap = x->cap_gflow ? x->cap_gflow * 2 : 1024;
        struct gflow *t = calloc(cap, sizeof(*t));
        if (t == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < x->cap_gflow; i++)
            if (x->gflow[i].key)
                *gflow_slot(t, cap, x->gflow[i].key) = x->gflow[i];
        free(x->gflow);
        x->gflow = t;
        x->cap_gflow = cap;
    }
    struct gflow *s = gflow_slot(x->gflow, x->cap_gflow, g->key);
    x->n_gflow += s->key == 0;
    *s = *g;
    return 0;
}

static void write_gpu_rec(struct exporter *x, const struct cs_rec_gpu *g)
{
    static const char *const cat[] = {"gpu", "gpu.kernel", "gpu.memcpy", "gpu.memset"};
    uint32_t gtid = gpu_tid(g->device, g->stream_id);
    char name[64];

    ensure_named(x, g->pid, NAMED_PROC);
    if (named_add(x, (uint64_t)g->pid << 32 | gtid)) {
        snprintf(name, sizeof(name), "GPU %u stream %u", g->device, g->stream_id);
        meta_name(x, "thread_name", g->pid, gtid, name);
    }
    ev_begin(x, "X", g->pid, gtid, g->t_start_ns);
    put_dur(x, g->t_end_ns - g->t_start_ns);
    fprintf(x->out, ",\"cat\":\"%s\",\"name\":", cat[g->kind <= 3 ? g->kind : 0]);
    if (g->kind == CS_GPU_KERNEL)
        put_str(x->out, g->name_id ? cs_run_string(x->run, g->name_id) : "kernel");
    else if (g->kind == CS_GPU_MEMCPY)
        fprintf(x->out, "\"memcpy %s\"", dir_name(g->dir));
    else
        fputs("\"memset\"", x->out);
    fprintf(x->out, ",\"args\":{\"device\":%u,\"stream\":%" PRIu32 ",\"correlation\":%" PRIu32,
            g->device, g->stream_id, g->corr_id);
    if (g->kind != CS_GPU_KERNEL)
        fprintf(x->out, ",\"bytes\":%" PRIu64, g->bytes);
    if (g->flags & CS_GF_CORR)
        fprintf(x->out, ",\"enqueued_by_tid\":%" PRIu32 ",\"enqueued_by_seq\":%" PRIu32,
                g->api_tid, g->api_seq);
    if (g->graph_id) /* run by a graph replay (format version 4) */
        fprintf(x->out, ",\"graph\":%" PRIu32 ",\"graph_node\":%" PRIu64, g->graph_id,
                g->graph_node_id);
    fputs("}}", x->out);
}

/* GPU work starting in the window, before the calls (write_call draws the
 * arrows from the calls that enqueued it). */
static int write_gpu(struct exporter *x)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(x->run, CS_REC_GPU, x->since, x->until, &cur);

    if (rc < 0)
        return cs_err_set(&x->err, rc, "cannot read GPU records (%s)", cs_strerror(rc));
    while ((rc = cs_cursor_next(cur, &h, &recs, &x->err)) == 1) {
        const struct cs_rec_gpu *g = recs;
        for (uint32_t i = 0; h->kind == CS_REC_GPU && i < h->n; i++, g++) {
            struct gflow f = {(uint64_t)g->api_tid << 32 | g->api_seq, g->t_start_ns,
                              g->t_end_ns - g->t_start_ns, g->pid,
                              gpu_tid(g->device, g->stream_id)};
            if (g->t_start_ns < x->since || g->t_start_ns >= x->until ||
                g->t_end_ns < g->t_start_ns)
                continue;
            write_gpu_rec(x, g);
            if ((g->flags & CS_GF_CORR) && g->api_tid && gflow_add(x, &f) < 0) {
                rc = cs_err_set(&x->err, -ENOMEM, "out of memory");
                break;
            }
        }
    }
    cs_cursor_close(cur);
    return rc;
}

/* The tracer's own memory readings (CS_CF_TRACER) are drawn as counters
 * (write_memory), not as calls the program made. */
static int call_valid(const struct cs_rec_cuda *c)
{
    return c->api != CS_API_NONE && c->api < CS_API_COUNT && !(c->flags & CS_CF_TRACER);
}

static int write_calls(struct exporter *x)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(x->run, CS_REC_CUDA, x->since, x->until, &cur);
    if (rc < 0)
        return cs_err_set(&x->err, rc, "cannot read CUDA records (%s)", cs_strerror(rc));
    while ((rc = cs_cursor_next(cur, &h, &recs, &x->err)) == 1) {
        const struct cs_rec_cuda *c = recs;
        for (uint32_t i = 0; h->kind == CS_REC_CUDA && i < h->n; i++)
            if (call_valid(&c[i]) && c[i].t_enter_ns >= x->since && c[i].t_enter_ns < x->until)
                write_call(x, &c[i]);
    }
    cs_cursor_close(cur);
    return rc;
}

/* ---- off-CPU slices, clipped to nest inside CUDA calls ---- */

static int cmp_call(const void *a, const void *b)
{
    const struct cs_rec_cuda *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->t_enter_ns != y->t_enter_ns)
        return x->t_enter_ns < y->t_enter_ns ? -1 : 1;
    return (x->t_exit_ns < y->t_exit_ns) - (x->t_exit_ns > y->t_exit_ns);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* Load the CUDA calls overlapping [a, b], sorted by (tid, t_enter). */
static int load_calls(struct exporter *x, uint64_t a, uint64_t b)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(x->run, CS_REC_CUDA, a, b, &cur);
    if (rc < 0)
        return cs_err_set(&x->err, rc, "cannot read CUDA records (%s)", cs_strerror(rc));
    x->ncalls = 0;
    while ((rc = cs_cursor_next(cur, &h, &recs, &x->err)) == 1) {
        const struct cs_rec_cuda *c = recs;
        for (uint32_t i = 0; h->kind == CS_REC_CUDA && i < h->n; i++) {
            if (c[i].t_exit_ns < a || c[i].t_enter_ns > b || !call_valid(&c[i]))
                continue;
            if (grow((void **)&x->calls, &x->capcalls, x->ncalls + 1, sizeof(*c)) < 0) {
                rc = cs_err_set(&x->err, -ENOMEM, "out of memory");
                break;
            }
            x->calls[x->ncalls++] = c[i];
        }
    }
    cs_cursor_close(cur);
    qsort(x->calls, x->ncalls, sizeof(*x->calls), cmp_call);
    return rc < 0 ? rc : 0;
}

/* First loaded call of @p tid. */
static size_t calls_of(const struct exporter *x, uint32_t tid)
{
    size_t lo = 0, hi = x->ncalls;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->calls[mid].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Smallest call boundary of @p tid strictly inside (from, to), or @p to. */
static uint64_t next_cut(const struct exporter *x, uint32_t tid, uint64_t from, uint64_t to)
{
    uint64_t cut = to;
    for (size_t i = calls_of(x, tid); i < x->ncalls && x->calls[i].tid == tid; i++) {
        const struct cs_rec_cuda *c = &x->calls[i];
        if (c->t_enter_ns > from && c->t_enter_ns < cut)
            cut = c->t_enter_ns;
        if (c->t_exit_ns > from && c->t_exit_ns < cut)
            cut = c->t_exit_ns;
        if (c->t_enter_ns >= cut)
            break;
    }
    return cut;
}

/* Innermost loaded call of @p tid that contains [s, e] and runs on after
 * @p e (so a flow can end inside it, after the slice), or NULL. */
static const struct cs_rec_cuda *enclosing_call(const struct exporter *x, uint32_t tid,
                                                uint64_t s, uint64_t e)
{
    const struct cs_rec_cuda *best = NULL;
    for (size_t i = calls_of(x, tid); i < x->ncalls && x->calls[i].tid == tid; i++) {
        const struct cs_rec_cuda *c = &x->calls[i];
        if (c->t_enter_ns > s)
            break;
        if (c->t_exit_ns > e && (!best || c->t_enter_ns >= best->t_enter_ns))
            best = c;
    }
    return best;
}

static void off_name(struct exporter *x, const struct cs_rec_offcpu *o, char *buf, size_t len)
{
    const char *holder = o->holder_pid ? proc_comm(x, o->holder_pid) : NULL;
    switch (o->cls) {
    case CS_OFF_PREEMPT:
        if (o->holder_pid)
            snprintf(buf, len, "off-cpu: preempted by %s %u", holder ? holder : "pid",
                     o->holder_pid);
        else
            snprintf(buf, len, "off-cpu: preempted");
        break;
    case CS_OFF_SLEEP: snprintf(buf, len, "off-cpu: sleep"); break;
    case CS_OFF_DISK: snprintf(buf, len, "off-cpu: disk wait (D)"); break;
    case CS_OFF_BLOCKED: snprintf(buf, len, "off-cpu: blocked"); break;
    default: snprintf(buf, len, "off-cpu: other"); break;
    }
}

/* Host contention worth an arrow: preemption, disk, or mostly waiting to run. */
static int off_is_cause(const struct cs_rec_offcpu *o, uint64_t dur)
{
    if (dur < EXPORT_FLOW_MIN_NS)
        return 0;
    return o->cls == CS_OFF_PREEMPT || o->cls == CS_OFF_DISK ||
           (uint64_t)o->runq_ns * 2 >= (o->t_end_ns - o->t_start_ns);
}

/* Flow arrow from the off-CPU slice [s, e] to the call it delayed: the
 * finish sits inside the call, after the slice (the call runs on past e),
 * and binds to it with bp "e". */
static void write_flow(struct exporter *x, const struct cs_rec_offcpu *o, uint64_t s, uint64_t e,
                       const struct cs_rec_cuda *c)
{
    uint64_t at = e + (c->t_exit_ns - e) / 2, id = ++x->flow_id;
    ev_begin(x, "s", o->pid, o->tid, s);
    fprintf(x->out, ",\"cat\":\"cudaspy.cause\",\"name\":\"delayed\",\"id\":%" PRIu64 "}", id);
    ev_begin(x, "f", c->pid, c->tid, at);
    fprintf(x->out, ",\"cat\":\"cudaspy.cause\",\"name\":\"delayed\",\"id\":%" PRIu64
            ",\"bp\":\"e\"}", id);
}

static void write_off_piece(struct exporter *x, const struct cs_rec_offcpu *o, uint64_t s,
                            uint64_t e)
{
    char name[96];
    off_name(x, o, name, sizeof(name));
    ensure_named(x, o->pid, o->tid);
    ev_begin(x, "X", o->pid, o->tid, s);
    put_dur(x, e - s);
    fputs(",\"cat\":\"offcpu\",\"name\":", x->out);
    put_str(x->out, name);
    fprintf(x->out, ",\"args\":{\"cpu\":%u,\"runq_us\":%.3f,\"interval_us\":%.3f", o->cpu,
            o->runq_ns / 1000.0, (o->t_end_ns - o->t_start_ns) / 1000.0);
    if (o->waker_pid)
        fprintf(x->out, ",\"waker_pid\":%u,\"waker_tid\":%u", o->waker_pid, o->waker_tid);
    if (o->holder_pid)
        fprintf(x->out, ",\"holder_pid\":%u,\"holder_permille\":%u", o->holder_pid,
                o->holder_permille);
    if (o->flags & CS_HF_DEGRADED)
        fputs(",\"degraded\":true", x->out);
    fputs("}}", x->out);
    const struct cs_rec_cuda *c = enclosing_call(x, o->tid, s, e);
    if (c && off_is_cause(o, e - s))
        write_flow(x, o, s, e, c);
}

/* Emit the pieces of @p o (whose t_start_ns is where the unwritten part
 * begins) up to window end @p b. @return 1 if a remainder is left for the
 * next window (o->t_start_ns moved to it), else 0. */
static int clip_off(struct exporter *x, struct cs_rec_offcpu *o, uint64_t b)
{
    uint64_t s = o->t_start_ns;
    while (s < o->t_end_ns) {
        uint64_t cut = next_cut(x, o->tid, s, o->t_end_ns);
        if (cut > b && o->t_end_ns > b) {
            o->t_start_ns = s; /* calls after b are not loaded yet */
            return 1;
        }
        write_off_piece(x, o, s, cut);
        s = cut;
    }
    return 0;
}

/* Append the off-CPU intervals starting in [a, b) to x->offs. */
static int load_offs(struct exporter *x, uint64_t a, uint64_t b)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(x->run, CS_REC_OFFCPU, a, b, &cur);
    if (rc < 0)
        return cs_err_set(&x->err, rc, "cannot read off-CPU records (%s)", cs_strerror(rc));
    while ((rc = cs_cursor_next(cur, &h, &recs, &x->err)) == 1) {
        const struct cs_rec_offcpu *o = recs;
        for (uint32_t i = 0; h->kind == CS_REC_OFFCPU && i < h->n; i++) {
            if (o[i].t_start_ns < a || o[i].t_start_ns >= b || o[i].t_end_ns <= o[i].t_start_ns)
                continue;
            if (grow((void **)&x->offs, &x->capoffs, x->noffs + 1, sizeof(*o)) < 0) {
                rc = cs_err_set(&x->err, -ENOMEM, "out of memory");
                break;
            }
            x->offs[x->noffs++] = o[i];
        }
    }
    cs_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

static int write_offcpu_window(struct exporter *x, uint64_t a, uint64_t b)
{
    int rc = load_offs(x, a, b);
    if (rc == 0)
        rc = load_calls(x, a, b);
    if (rc < 0)
        return rc;
    size_t keep = 0;
    for (size_t i = 0; i < x->noffs; i++)
        if (clip_off(x, &x->offs[i], b))
            x->offs[keep++] = x->offs[i];
    x->noffs = keep;
    return 0;
}

/* Time span of the records of @p kind: [*lo, *hi]. */
static int record_span(struct exporter *x, unsigned kind, uint64_t *lo, uint64_t *hi)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(x->run, kind, 0, UINT64_MAX, &cur);
    if (rc < 0)
        return cs_err_set(&x->err, rc, "cannot read records (%s)", cs_strerror(rc));
    while ((rc = cs_cursor_next(cur, &h, &recs, &x->err)) == 1) {
        if (h->ts_first_ns < *lo)
            *lo = h->ts_first_ns;
        if (h->ts_last_ns > *hi)
            *hi = h->ts_last_ns;
    }
    cs_cursor_close(cur);
    return rc;
}

static int write_offcpu(struct exporter *x)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    int rc = record_span(x, CS_REC_OFFCPU, &lo, &hi);
    if (rc < 0 || lo > hi)
        return rc;
    if (lo < x->since)
        lo = x->since;
    if (hi > x->until)
        hi = x->until;
    for (uint64_t a = lo; rc == 0 && a <= hi; a += EXPORT_WIN_NS)
        rc = write_offcpu_window(x, a, a + EXPORT_WIN_NS > hi ? hi + 1 : a + EXPORT_WIN_NS);
    /* remainders past the last window: no more calls to clip against */
    for (size_t i = 0; rc == 0 && i < x->noffs; i++)
        clip_off(x, &x->offs[i], UINT64_MAX);
    x->noffs = 0;
    return rc;
}

/* ---- counters ---- */

static void write_pwin(struct exporter *x, const struct cs_rec_pwin *w)
{
    ensure_named(x, w->pid, NAMED_PROC);
    ev_begin(x, "C", w->pid, 0, w->t_start_ns);
    fprintf(x->out, ",\"name\":\"page allocations\",\"args\":{\"pages\":%u}}", w->page_allocs);
    ev_begin(x, "C", w->pid, 0, w->t_start_ns);
    fprintf(x->out, ",\"name\":\"context switches\",\"args\":{\"voluntary\":%u,\"involuntary\":%u}}",
            w->vcsw, w->ivcsw);
    ev_begin(x, "C", w->pid, 0, w->t_start_ns);
    fprintf(x->out, ",\"name\":\"cpu ms\",\"args\":{\"on_cpu\":%.3f,\"runq\":%.3f}}",
            w->oncpu_ns / 1e6, w->runq_ns / 1e6);
}

static void write_syswin(struct exporter *x, const struct cs_rec_syswin *w)
{
    ev_begin(x, "C", EXPORT_SYS_PID, 0, w->t_start_ns);
    fprintf(x->out, ",\"name\":\"system cpu %%\",\"args\":{\"busy\":%.1f,\"iowait\":%.1f,"
            "\"steal\":%.1f}}", w->busy_permille / 10.0, w->iowait_permille / 10.0,
            w->steal_permille / 10.0);
    ev_begin(x, "C", EXPORT_SYS_PID, 0, w->t_start_ns);
    fprintf(x->out, ",\"name\":\"runnable threads\",\"args\":{\"running\":%u,\"blocked\":%u}}",
            w->procs_running, w->procs_blocked);
}

static int write_counters(struct exporter *x, unsigned kind)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(x->run, kind, x->since, x->until, &cur);
    if (rc < 0)
        return cs_err_set(&x->err, rc, "cannot read counters (%s)", cs_strerror(rc));
    while ((rc = cs_cursor_next(cur, &h, &recs, &x->err)) == 1) {
        for (uint32_t i = 0; h->kind == kind && i < h->n; i++) {
            const uint64_t *t = (const uint64_t *)((const char *)recs + (size_t)i * h->rec_size);
            if (*t < x->since || *t >= x->until)
                continue;
            if (kind == CS_REC_PWIN)
                write_pwin(x, (const struct cs_rec_pwin *)t);
            else
                write_syswin(x, (const struct cs_rec_syswin *)t);
        }
    }
    cs_cursor_close(cur);
    return rc;
}

/* ---- NVTX ---- */

#define EXPORT_NVTX_TID 0x20000000u /* | domain << 22 | tid: one domain's push/pop ranges
                                       on one thread (they nest) */
#define EXPORT_NVTX_SE_TID 0x30000000u /* | lane: a process's start/end ranges, in lanes
                                          so that they nest */
#define EXPORT_NVTX_LANES 16

static uint32_t nvtx_track(struct exporter *x, const struct cs_rec_nvtx *r, uint32_t lane)
{
    uint32_t t = (r->flags & CS_NF_STARTEND) ? EXPORT_NVTX_SE_TID | lane
                                             : EXPORT_NVTX_TID | (r->domain_id & 0x7f) << 22 |
                                                   (r->tid & 0x3fffff);
    char name[96];
    const char *dom = r->domain_id ? cs_run_string(x->run, r->domain_id) : NULL;

    ensure_named(x, r->pid, NAMED_PROC);
    if (named_add(x, (uint64_t)r->pid << 32 | t)) {
        if (r->flags & CS_NF_STARTEND)
            snprintf(name, sizeof(name), "NVTX start/end %u", lane);
        else
            snprintf(name, sizeof(name), "NVTX %s%s%u", dom ? dom : "", dom ? " " : "", r->tid);
        meta_name(x, "thread_name", r->pid, t, name);
    }
    return t;
}

static void write_nvtx_rec(struct exporter *x, const struct cs_rec_nvtx *r, uint32_t lane)
{
    uint32_t t = nvtx_track(x, r, lane);
    const char *msg = r->name_id ? cs_run_string(x->run, r->name_id) : NULL;

    ev_begin(x, (r->flags & CS_NF_MARK) ? "i" : "X", r->pid, t, r->t_start_ns);
    if (r->flags & CS_NF_MARK)
        fputs(",\"s\":\"t\"", x->out);
    else
        put_dur(x, r->t_end_ns - r->t_start_ns);
    fputs(",\"cat\":\"nvtx\",\"name\":", x->out);
    put_str(x->out, msg ? msg : "(unnamed)");
    fprintf(x->out, ",\"args\":{\"tid\":%" PRIu32 ",\"depth\":%u,\"category\":%" PRIu32
                    ",\"open\":%s", r->tid, r->depth, r->category,
            (r->flags & CS_NF_OPEN) ? "true" : "false");
    if (r->domain_id) {
        fputs(",\"domain\":", x->out);
        put_str(x->out, cs_run_string(x->run, r->domain_id));
    }
    fputs("}}", x->out);
}

static int cmp_se(const void *a, const void *b)
{
    const struct cs_rec_nvtx *p = a, *q = b;
    if (p->pid != q->pid)
        return p->pid < q->pid ? -1 : 1;
    return (p->t_start_ns > q->t_start_ns) - (p->t_start_ns < q->t_start_ns);
}

/* Start/end ranges may overlap as they like: each goes to the first of a
 * process's lanes free at its start (beyond EXPORT_NVTX_LANES at once,
 * they are left out). */
static void write_nvtx_se(struct exporter *x, struct cs_rec_nvtx *se, size_t n)
{
    uint64_t end[EXPORT_NVTX_LANES];

    if (n == 0)
        return;
    qsort(se, n, sizeof(*se), cmp_se);
    for (size_t i = 0; i < n; i++) {
        uint32_t l;
        if (i == 0 || se[i].pid != se[i - 1].pid)
            memset(end, 0, sizeof(end));
        for (l = 0; l < EXPORT_NVTX_LANES && end[l] > se[i].t_start_ns; l++)
            ;
        if (l == EXPORT_NVTX_LANES)
            continue;
        end[l] = se[i].t_end_ns;
        write_nvtx_rec(x, &se[i], l);
    }
}

/* The program's NVTX ranges and marks starting in the window. */
static int write_nvtx(struct exporter *x)
{
    struct cs_cursor *cur;
    const struct cs_blk_hdr *h;
    const void *recs;
    struct cs_rec_nvtx *se = NULL;
    size_t nse = 0, cap = 0;
    int rc = cs_cursor_open(x->run, CS_REC_NVTX, x->since, x->until, &cur);

    if (rc < 0)
        return cs_err_set(&x->err, rc, "cannot read NVTX records (%s)", cs_strerror(rc));
    while ((rc = cs_cursor_next(cur, &h, &recs, &x->err)) == 1) {
        const struct cs_rec_nvtx *r = recs;
        for (uint32_t i = 0; h->kind == CS_REC_NVTX && i < h->n; i++, r++) {
            if (r->t_start_ns < x->since || r->t_start_ns >= x->until || r->t_end_ns < r->t_start_ns)
                continue;
            if (!(r->flags & CS_NF_STARTEND)) {
                write_nvtx_rec(x, r, 0);
            } else if (grow((void **)&se, &cap, nse + 1, sizeof(*se)) < 0) {
                rc = cs_err_set(&x->err, -ENOMEM, "out of memory");
                break;
            } else {
                se[nse++] = *r;
            }
        }
    }
    cs_cursor_close(cur);
    if (rc >= 0)
        write_nvtx_se(x, se, nse);
    free(se);
    return rc;
}

/* ---- steps ---- */

#define EXPORT_STEP_TID 0x7ffffff0u /* the steps' own track in their process */

/* The steps the analysis finds (model/steps.h), as slices on a track of
 * their own in the process whose thread they were found on. */
static void write_steps(struct exporter *x, const struct analysis *a)
{
    const struct steps *s;
    uint32_t pid, tid;
    uint64_t t0, t1;

    s = analysis_steps(a, &pid, &tid);
    if (s->n)
        meta_name(x, "thread_name", pid, EXPORT_STEP_TID, "steps");
    if (analysis_setup(a, &t0, &t1) && t0 >= x->since && t0 < x->until) {
        ev_begin(x, "X", pid, EXPORT_STEP_TID, t0); /* kept out of the findings */
        put_dur(x, t1 - t0);
        fprintf(x->out, ",\"cat\":\"step\",\"name\":\"set-up\",\"args\":{\"thread\":%" PRIu32
                        "}}", tid);
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct m_step *p = &s->s[i];
        if (p->t_start_ns < x->since || p->t_start_ns >= x->until)
            continue;
        ev_begin(x, "X", pid, EXPORT_STEP_TID, p->t_start_ns);
        put_dur(x, p->t_end_ns - p->t_start_ns);
        fprintf(x->out, ",\"cat\":\"step\",\"name\":\"step %zu\",\"args\":{\"step\":%zu,"
                        "\"thread\":%" PRIu32 ",\"how\":", i, i, tid);
        put_str(x->out, s->how);
        fputs("}}", x->out);
    }
}

/* ---- the account ---- */

#define EXPORT_ACCT_TID 0x7fff0000u /* | device: the account's track in a feeding process */

/* Bucket rows keyed by name: Perfetto then lists args.buckets.gpu_compute.ns
 * rather than args.buckets[1].ns. @return new reference */
static json_t *buckets_by_name(json_t *rows)
{
    json_t *o = json_object(), *b;
    size_t i;

    json_array_foreach(rows, i, b) {
        json_t *c = json_deep_copy(b);
        json_object_del(c, "name");
        json_object_set_new(o, json_string_value(json_object_get(b, "name")), c);
    }
    return o;
}

/* The account (docs/json.md "account") as one slice per feeding process and
 * GPU over its CUDA-active window, its buckets in the args. A summary to
 * click on, not a timeline: a bucket is a total over the window, not a
 * stretch of it, so the buckets are not drawn as slices. */
static int write_account(struct exporter *x, const struct analysis *a)
{
    json_t *j = analysis_json(a), *procs, *p;
    uint32_t pid;
    uint16_t dev;
    uint64_t t0, t1;
    char track[32];

    if (j == NULL)
        return -ENOMEM;
    procs = json_object_get(json_object_get(j, "account"), "processes");
    for (size_t i = 0; analysis_account_window(a, i, &pid, &dev, &t0, &t1); i++) {
        if ((p = json_array_get(procs, i)) == NULL || t0 < x->since || t0 >= x->until)
            continue;
        json_object_del(p, "pid"); /* the event's own; device and the rest stay */
        json_object_set_new(p, "buckets", buckets_by_name(json_object_get(p, "buckets")));
        snprintf(track, sizeof(track), "account (GPU %u)", (unsigned)dev);
        meta_name(x, "thread_name", pid, EXPORT_ACCT_TID | dev, track);
        ev_begin(x, "X", pid, EXPORT_ACCT_TID | dev, t0);
        put_dur(x, t1 - t0);
        fputs(",\"cat\":\"account\",\"name\":\"account\",\"args\":", x->out);
        json_dumpf(p, x->out, JSON_COMPACT | JSON_ENSURE_ASCII);
        fputc('}', x->out);
    }
    json_decref(j);
    return 0;
}

/* ---- device memory (model/memory.h) ---- */

/* One point of counter "GPU <dev> memory <what>" of process @p pid. */
static void mem_point(struct exporter *x, uint32_t pid, unsigned dev, const char *what,
                      uint64_t t, uint64_t bytes)
{
    if (t < x->since || t >= x->until)
        return;
    ev_begin(x, "C", pid, 0, t);
    fprintf(x->out, ",\"name\":\"GPU %u memory %s\",\"args\":{\"bytes\":%" PRIu64 "}}", dev,
            what, bytes);
}

/* Each process's held device memory as a counter per GPU, a point per
 * change, and the device's free memory at each reading. */
static void write_memory(struct exporter *x, const struct analysis *a)
{
    const struct memory *mm = analysis_memory(a);

    for (size_t i = 0; i < mm->ntr; i++) {
        const struct mem_track *t = &mm->tr[i];
        ensure_named(x, t->pid, NAMED_PROC);
        for (size_t k = 0; k < t->npt; k++)
            mem_point(x, t->pid, t->device, "held", t->pt[k].t_ns, t->pt[k].held_bytes);
        for (size_t k = 0; k < t->nrd; k++)
            mem_point(x, t->pid, t->device, "free", t->rd[k].t_ns, t->rd[k].free_bytes);
    }
}

/* What needs the analysis (the model of the run): steps and the account. */
static int write_analysed(struct exporter *x, const char *path)
{
    const char *const paths[] = {path};
    struct analysis_opts o;
    struct analysis *a;
    int rc;

    analysis_opts_init(&o);
    if ((rc = analysis_load(paths, 1, &o, &a, &x->err)) < 0)
        return rc;
    write_steps(x, a);
    write_memory(x, a);
    rc = write_account(x, a);
    analysis_free(a);
    return rc;
}

/* ---- command ---- */

static void write_header(struct exporter *x)
{
    fprintf(x->out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"cudaspy "
            CS_VERSION "\",\"host\":");
    const char *host = cs_run_meta(x->run, "host");
    put_str(x->out, host ? host : "");
    fprintf(x->out, ",\"t0_monotonic_ns\":%" PRIu64 "},\n\"traceEvents\":[\n", x->t0);
}

static int export_run(struct exporter *x, const char *path)
{
    write_metadata(x);
    int rc = write_gpu(x);
    if (rc >= 0)
        rc = write_calls(x);
    if (rc >= 0)
        rc = write_offcpu(x);
    if (rc >= 0)
        rc = write_counters(x, CS_REC_SYSWIN);
    if (rc >= 0)
        rc = write_counters(x, CS_REC_PWIN);
    if (rc >= 0)
        rc = write_nvtx(x);
    if (rc >= 0)
        rc = write_analysed(x, path);
    return rc < 0 ? rc : 0;
}

static const char export_usage[] =
    "Usage: cudaspy-analyze export --chrome OUT.json [--since S] [--until S] RUN...\n"
    "\n"
    "Write RUN as Chrome Trace Event JSON (open it in ui.perfetto.dev or\n"
    "chrome://tracing): a track per process and thread, CUDA calls and off-CPU\n"
    "intervals as slices, CPU and paging counters, arrows from host causes to\n"
    "the calls they delayed, the steps, and the account of each feeding\n"
    "process's CUDA-active window. --since/--until keep records starting in that\n"
    "window (seconds from the run start). Runs of several hosts go on the first\n"
    "one's clock (docs/multihost.md), each host's processes named after it.\n"
    "See docs/export.md.\n"
    "\n"
    "Exit status: 0 ok, 2 usage or input error, 3 system failure.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy-analyze export --chrome trace.json run.lmdb\n"
    "  cudaspy-analyze export --chrome slice.json --since 10 --until 12.5 run.lmdb\n";

static int usage_error(const char *what)
{
    return cmd_usage_error("export", what);
}

struct export_cli {
    const char *out;
    const char *const *runs;
    int nruns;
    double since_s, until_s;
    int help;
};

static int parse_secs(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return (errno || end == s || *end || *v < 0 || !isfinite(*v)) ? -1 : 0;
}

static int export_parse(struct export_cli *c, int argc, char **argv)
{
    static const struct option lo[] = {{"chrome", required_argument, 0, 'c'},
                                       {"since", required_argument, 0, 's'},
                                       {"until", required_argument, 0, 'u'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (opt == 'c')
            c->out = optarg;
        else if (opt == 'h')
            c->help = 1;
        else if ((opt == 's' && parse_secs(optarg, &c->since_s) == 0) ||
                 (opt == 'u' && parse_secs(optarg, &c->until_s) == 0))
            continue;
        else if (opt == 's' || opt == 'u')
            return usage_error("--since/--until: expected seconds (a number >= 0)");
        else
            return usage_error(optopt ? "option needs an argument" : "unknown option");
    }
    if (c->help)
        return 0;
    if (!c->out)
        return usage_error("--chrome OUT.json is required");
    if (optind >= argc)
        return usage_error("expected a RUN");
    if (argc - optind > 512)
        return usage_error("at most 512 RUNs");
    if (c->until_s > 0 && c->until_s <= c->since_s)
        return usage_error("--until must be after --since");
    c->runs = (const char *const *)argv + optind;
    c->nruns = argc - optind;
    return 0;
}

static int open_run(const char *path, struct cs_run **out)
{
    struct cs_err err = {{0}};
    struct cs_run *r = cs_run_new();
    int rc = r ? cs_run_open(r, path, &err) : -ENOMEM;
    if (rc < 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, err.msg[0] ? err.msg : cs_strerror(rc));
        cs_run_free(r);
        return rc == -ENOMEM || rc == -EIO ? 3 : 2;
    }
    *out = r;
    return 0;
}

/* Run @p i of the export: its clock, pids and host name; its records. */
static int export_one(struct exporter *x, const struct export_cli *c, int i,
                      const struct m_clock *clk)
{
    int rc;

    if ((rc = open_run(c->runs[i], &x->run)))
        return rc;
    if (i == 0) {
        x->t0 = cs_run_meta_u64(x->run, "t_start_ns", 0);
        write_header(x);
    }
    x->clk = clk ? clk[i] : (struct m_clock){0};
    x->pid_base = (uint32_t)i << 22; /* above any pid_max */
    x->prefix[0] = '\0';
    const char *host = cs_run_meta(x->run, "host");
    if (c->nruns > 1)
        snprintf(x->prefix, sizeof(x->prefix), "%s: ", host ? host : "?");
    uint64_t t0 = cs_run_meta_u64(x->run, "t_start_ns", 0);
    x->since = t0 + (uint64_t)(c->since_s * 1e9);
    x->until = c->until_s > 0 ? t0 + (uint64_t)(c->until_s * 1e9) : UINT64_MAX;
    x->n_named = 0;
    if (x->named)
        memset(x->named, 0, x->cap_named * sizeof(*x->named));
    rc = export_run(x, c->runs[i]);
    if (rc < 0)
        fprintf(stderr, PROG ": %s: %s\n", c->runs[i], x->err.msg[0] ? x->err.msg : cs_strerror(rc));
    cs_run_free(x->run);
    x->run = NULL;
    return rc < 0 ? ((rc == -ENOMEM || rc == -EIO || rc == -ENOSPC) ? 3 : 2) : 0;
}

int export_main(int argc, char **argv)
{
    struct export_cli c = {0};
    struct exporter x = {0};
    struct m_clock *clk = NULL;
    int rc = export_parse(&c, argc, argv);
    if (rc || c.help) {
        if (c.help)
            fputs(export_usage, stdout);
        return rc;
    }
    if (c.nruns > 1) { /* one timeline: the analyzer's alignment of the hosts */
        if ((clk = calloc((size_t)c.nruns, sizeof(*clk))) == NULL)
            return 3;
        if ((rc = clocks_of_runs(c.runs, c.nruns, clk, &x.err)) < 0) {
            fprintf(stderr, PROG ": %s\n", x.err.msg[0] ? x.err.msg : cs_strerror(rc));
            free(clk);
            return rc == -ENOMEM || rc == -EIO ? 3 : 2;
        }
    }
    x.out = fopen(c.out, "w");
    if (!x.out) {
        fprintf(stderr, PROG ": %s: cannot create (%s)\n", c.out, strerror(errno));
        free(clk);
        return 3;
    }
    setvbuf(x.out, NULL, _IOFBF, 1 << 20);
    for (int i = 0; rc == 0 && i < c.nruns; i++)
        rc = export_one(&x, &c, i, clk);
    fputs("\n]}\n", x.out);
    if (fclose(x.out) != 0 && rc == 0) {
        fprintf(stderr, PROG ": %s: write failed (%s)\n", c.out, strerror(errno));
        rc = 3;
    }
    free(x.calls);
    free(x.offs);
    free(x.named);
    free(x.gflow);
    free(clk);
    return rc;
}
