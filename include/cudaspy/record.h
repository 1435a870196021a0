/* record.h: every fixed-size record cudaspy writes, declared once.
 * The shim writes struct cs_rec_cuda into its ring; the collector converts
 * clocks and string ids and packs records of one kind into blocks; the
 * analyzer reads them back. Little-endian, naturally aligned, no pointers.
 * Times are CLOCK_MONOTONIC nanoseconds once in the run file. Changing a
 * layout means bumping CS_FORMAT_VERSION (version.h). */
#ifndef CUDASPY_RECORD_H
#define CUDASPY_RECORD_H

#include <stdint.h>

/* Record kinds; a block holds records of one kind (struct cs_blk_hdr.kind). */
enum cs_rec_kind {
    CS_REC_NONE = 0,
    CS_REC_CUDA = 1,    /* struct cs_rec_cuda, in the cuda_blk database */
    CS_REC_OFFCPU = 2,  /* struct cs_rec_offcpu, host_blk */
    CS_REC_RUNQ = 3,    /* struct cs_rec_runq, host_blk */
    CS_REC_PWIN = 4,    /* struct cs_rec_pwin, host_blk */
    CS_REC_SYSWIN = 5,  /* struct cs_rec_syswin, host_blk */
    CS_REC_COUNTER = 6, /* struct cs_rec_counter, host_blk */
    CS_REC_LOST = 7,    /* struct cs_rec_lost, host_blk */
    CS_REC_GPU = 8,     /* struct cs_rec_gpu, host_blk: what the GPU ran (CUPTI) */
    CS_REC_GPUCOV = 9,  /* struct cs_rec_gpucov, host_blk: when GPU activity was recorded */
    CS_REC_NVTX = 10,   /* struct cs_rec_nvtx, host_blk: an NVTX range or mark */
    CS_REC_PYSAMPLE = 11, /* struct cs_rec_pysample, host_blk: a CUDA thread's Python stack
                             while it ran host code (format version 3, version.h) */
    CS_REC_KIND_COUNT
};

/* ---- CUDA calls (the shim) ---- */

/* Copy directions. */
enum cs_dir {
    CS_DIR_NONE = 0,
    CS_DIR_HTOD = 1,
    CS_DIR_DTOH = 2,
    CS_DIR_DTOD = 3,
    CS_DIR_HTOH = 4,
    CS_DIR_PEER = 5,
    CS_DIR_DEFAULT = 6 /* unified addressing: direction decided by the driver */
};

/* struct cs_rec_cuda.flags */
#define CS_CF_NESTED    0x0001 /* made inside a recorded runtime call (parent_seq) */
#define CS_CF_CAPTURING 0x0002 /* stream was capturing: enqueued into a graph, not run */
#define CS_CF_PINNED    0x0004 /* host side of the copy is pinned (seen allocated/registered) */
#define CS_CF_PAGEABLE  0x0008 /* host side of the copy is pageable */
#define CS_CF_PTDS      0x0010 /* stream is the per-thread default stream */
#define CS_CF_ERROR     0x0020 /* result != 0 */
#define CS_CF_HAS_NAME  0x0040 /* name_id is a kernel name */
#define CS_CF_STATIC_RT 0x0080 /* process uses a runtime we could not interpose */
#define CS_CF_FOLDED    0x0100 /* runtime call that holds its driver call (drv_api): the
                                  driver call of its family it made got no record and no
                                  clock reads of its own (docs/shim.md) */
#define CS_CF_DRV_ERROR 0x0200 /* CS_CF_FOLDED: that driver call returned non-zero */
#define CS_CF_TRACER    0x0400 /* made by the tracer, not the program: a cuMemGetInfo_v2
                                  reading (bytes = free, aux = total) after the process's
                                  first device allocation and after each one that failed
                                  out of memory (docs/memory.md); seq 0, grid[0] the
                                  allocation's result (0 or 2) */

#define CS_STREAM_LEGACY      0x0ull /* stream 0 (legacy default) */
#define CS_STREAM_PER_THREAD  0x2ull /* CU_STREAM_PER_THREAD, also used after normalising
                                        stream 0 in a _ptsz/_ptds call */
#define CS_DEVICE_UNKNOWN 0xffffu

struct cs_rec_cuda {
    uint64_t t_enter_ns; /* call entry; raw TSC ticks in the ring when clock is TSC */
    uint64_t t_exit_ns;  /* call return, same clock */
    uint64_t stream;     /* CUstream handle, normalised (CS_STREAM_*) */
    uint64_t bytes;      /* bytes copied, set or allocated; 0 when not applicable */
    uint32_t seq;        /* per-thread call sequence number, from 1 */
    uint32_t parent_seq; /* seq of the enclosing runtime call (CS_CF_NESTED), else 0 */
    uint32_t pid;        /* process (tgid) */
    uint32_t tid;        /* thread */
    uint32_t name_id;    /* kernel name string id (ring: process-local; file: strings db) */
    int32_t result;      /* CUresult / cudaError_t returned to the caller */
    uint16_t api;        /* enum cs_api */
    uint8_t variant;     /* enum cs_variant */
    uint8_t dir;         /* enum cs_dir */
    uint16_t flags;      /* CS_CF_* */
    uint16_t device;     /* device ordinal, CS_DEVICE_UNKNOWN if not known */
    uint32_t grid[3];    /* launch grid (blocks) */
    uint16_t block[3];   /* launch block (threads) */
    uint16_t drv_api;    /* CS_CF_FOLDED: enum cs_api of the driver call folded in, else 0 */
    uint32_t stack_id;   /* native stack (stacks db), 0 = none */
    uint64_t aux;        /* kind-specific: event handle for event syncs, host
                            pointer for copies, graph exec for graph launches,
                            pointer or handle allocated or freed (allocation
                            families), total bytes (cuMemGetInfo_v2, cudaMemGetInfo:
                            bytes holds the free bytes) */
};
_Static_assert(sizeof(struct cs_rec_cuda) == 96, "cs_rec_cuda is 96 bytes, no hidden padding");

/* ---- host records (the sampler) ---- */

/* Off-CPU classes. */
enum cs_off_class {
    CS_OFF_SLEEP = 1,     /* blocked, interruptible (S) */
    CS_OFF_DISK = 2,      /* blocked, uninterruptible (D) */
    CS_OFF_PREEMPT = 3,   /* runnable but not running (involuntary switch) */
    CS_OFF_BLOCKED = 4,   /* blocked, S or D unknown (no sched_switch tracepoint) */
    CS_OFF_OTHER = 5      /* stopped, traced, dead... */
};

/* struct cs_rec_offcpu.flags / cs_rec_pwin.flags / cs_blk_hdr.flags */
#define CS_HF_HOLDER_IN_TREE 0x01 /* holder_pid belongs to the traced tree */
#define CS_HF_DEGRADED       0x02 /* data lost in this interval or window */
#define CS_HF_DIVERGED       0x04 /* perf totals disagree with /proc schedstat */
#define CS_HF_POLLED         0x08 /* from /proc polling (tier C): coarse resolution */

/* One interval a thread spent off CPU, above the sampler's threshold. */
struct cs_rec_offcpu {
    uint64_t t_start_ns;        /* switch-out */
    uint64_t t_end_ns;          /* switch-in */
    uint32_t pid, tid;
    uint32_t waker_pid;         /* who woke it (sleep classes), 0 = unknown */
    uint32_t waker_tid;
    uint32_t holder_pid;        /* preempted: process that ran most on that CPU meanwhile */
    uint32_t holder_permille;   /* its share of the interval, 0..1000 */
    uint32_t runq_ns;           /* part of the interval spent runnable (wakeup → switch-in),
                                   saturates at UINT32_MAX */
    uint16_t cpu;               /* CPU it left */
    uint8_t cls;                /* enum cs_off_class */
    uint8_t flags;              /* CS_HF_* */
};
_Static_assert(sizeof(struct cs_rec_offcpu) == 48, "cs_rec_offcpu is 48 bytes");

/* One run-queue wait above the threshold: runnable from t_enqueue to t_run. */
struct cs_rec_runq {
    uint64_t t_enqueue_ns;
    uint64_t t_run_ns;
    uint32_t pid, tid;
    uint32_t prev_pid;  /* process that had the CPU before it ran (0 = idle) */
    uint16_t cpu;
    uint16_t flags;     /* CS_HF_* */
};
_Static_assert(sizeof(struct cs_rec_runq) == 32, "cs_rec_runq is 32 bytes");

/* Per-process counters over one window (default 10 ms), summed over its threads. */
struct cs_rec_pwin {
    uint64_t t_start_ns, t_end_ns;
    uint32_t pid;
    uint32_t flags;       /* CS_HF_* */
    uint64_t oncpu_ns;
    uint64_t sleep_ns;    /* off CPU, S or blocked-unknown */
    uint64_t disk_ns;     /* off CPU, D */
    uint64_t preempt_ns;  /* off CPU, runnable after an involuntary switch */
    uint64_t runq_ns;     /* run-queue delay (wakeup or preemption → switch-in) */
    uint32_t vcsw;        /* voluntary context switches */
    uint32_t ivcsw;       /* involuntary context switches */
    uint32_t migrations;
    uint32_t page_allocs; /* pages allocated, period-weighted: minor faults (meta
                           host_page_source "minor-faults") or order-weighted
                           kmem:mm_page_alloc samples */
    uint32_t minflt;
    uint32_t majflt;
    uint32_t nthreads;    /* threads seen in the window */
    uint32_t pad;
};
_Static_assert(sizeof(struct cs_rec_pwin) == 96, "cs_rec_pwin is 96 bytes");

/* System-wide CPU state over one window. */
struct cs_rec_syswin {
    uint64_t t_start_ns, t_end_ns;
    uint16_t ncpu;
    uint16_t busy_permille;    /* 1 - (idle+iowait)/total over all CPUs */
    uint16_t steal_permille;
    uint16_t iowait_permille;
    uint32_t procs_running;    /* /proc/stat at window end */
    uint32_t procs_blocked;
    uint64_t psi_some_us;      /* /proc/pressure/cpu "some" total, delta in window */
    uint64_t tree_oncpu_ns;    /* traced tree's CPU time in the window */
    uint64_t ext_oncpu_ns;     /* CPU time of processes outside the tree */
    uint32_t top_pid[3];       /* outside the tree, most CPU first (0 = none) */
    uint32_t pad;
    uint64_t top_ns[3];
};
_Static_assert(sizeof(struct cs_rec_syswin) == 96, "cs_rec_syswin is 96 bytes");

/* A named counter (libpfm4 --events) per process per window. */
struct cs_rec_counter {
    uint64_t t_start_ns, t_end_ns;
    uint32_t pid;
    uint32_t name_id;  /* event name, strings db */
    uint64_t value;    /* delta in the window */
};
_Static_assert(sizeof(struct cs_rec_counter) == 32, "cs_rec_counter is 32 bytes");

/* Records lost by a source (perf ring on a CPU, or a shim ring) in a span. */
struct cs_rec_lost {
    uint64_t t_start_ns, t_end_ns;
    uint32_t source;   /* CPU number, or pid for shim drops */
    uint32_t what;     /* 1 = perf ring, 2 = shim ring */
    uint64_t count;
};
_Static_assert(sizeof(struct cs_rec_lost) == 32, "cs_rec_lost is 32 bytes");

/* ---- GPU activity (the shim's CUPTI client, docs/gpu.md) ---- */

enum cs_gpu_kind { CS_GPU_KERNEL = 1, CS_GPU_MEMCPY = 2, CS_GPU_MEMSET = 3 };

/* struct cs_rec_gpu.flags */
#define CS_GF_CORR 0x01 /* api_tid/api_seq name the CUDA record that enqueued it */
#define CS_GF_PAGEABLE 0x02 /* a copy whose host side is pageable memory (CUPTI's memory kind) */

/* One kernel, copy or memset as the GPU ran it. Times are the GPU's, mapped
 * by CUPTI onto CLOCK_MONOTONIC (the shim registers its timestamp callback),
 * in the ring as in the file. */
struct cs_rec_gpu {
    uint64_t t_start_ns;  /* began executing */
    uint64_t t_end_ns;    /* finished */
    uint64_t bytes;       /* copies and memsets; 0 for kernels */
    uint32_t pid;
    uint32_t api_tid;     /* thread of the enqueuing call (CS_GF_CORR), else 0 */
    uint32_t api_seq;     /* its cs_rec_cuda.seq (CS_GF_CORR), else 0 */
    uint32_t name_id;     /* kernel name (ring: process-local; file: strings db) */
    uint32_t stream_id;   /* CUPTI's stream id (not the handle) */
    uint32_t corr_id;     /* CUPTI's correlation id, per attach epoch */
    uint32_t epoch;       /* the process's CUPTI attach count, from 1 */
    uint16_t device;      /* device ordinal */
    uint8_t kind;         /* enum cs_gpu_kind */
    uint8_t dir;          /* copies: enum cs_dir; else 0 */
    uint16_t flags;       /* CS_GF_* */
    uint16_t pad0;
    uint32_t pad1;
    /* format version 4 (version.h): what a graph replay ran. Files of
     * earlier versions hold the 64 bytes above (CS_REC_GPU_V3_BYTES); their
     * readers' records have both 0. */
    uint64_t graph_node_id; /* CUPTI's graphNodeId: the node that ran it; 0 = not a graph's */
    uint32_t graph_id;      /* CUPTI's graphId: the graph launched; 0 = not a graph's */
    uint32_t pad2;
};
_Static_assert(sizeof(struct cs_rec_gpu) == 80, "cs_rec_gpu is 80 bytes");
#define CS_REC_GPU_V3_BYTES 64u /* a cs_rec_gpu in files of format version 3 and before */

/* Modes of GPU activity recording (CUDASPY_GPU_ACTIVITY). */
enum cs_gpu_mode { CS_GPU_MODE_OFF = 0, CS_GPU_MODE_SAMPLED = 1, CS_GPU_MODE_FULL = 2 };

/* struct cs_rec_gpucov.flags */
#define CS_GCF_LOST    0x01 /* records of this span were lost (dropped by CUPTI, a buffer
                               never came back): do not read GPU idle from it */
#define CS_GCF_UNAVAIL 0x02 /* no GPU activity in this process: reason_id says why */
#define CS_GCF_PAUSED  0x04 /* another CUPTI client held CUPTI: this slice was skipped */

/* A span of a process's life in which every kernel, copy and memset it
 * enqueued was recorded: sampled mode writes one per slice, full mode one
 * per second. [t_attach, t_start] and [t_end, t_detach] are the tracer's
 * own work of switching CUPTI on and off, on the calling thread. */
struct cs_rec_gpucov {
    uint64_t t_start_ns;  /* activity recording on (work enqueued from here is recorded) */
    uint64_t t_end_ns;    /* off again */
    uint64_t t_attach_ns; /* switching on began */
    uint64_t t_detach_ns; /* switching off ended */
    uint32_t pid;
    uint32_t epoch;       /* attach count of this span, as cs_rec_gpu.epoch */
    uint32_t reason_id;   /* CS_GCF_UNAVAIL/PAUSED: why, a string (ring: process-local) */
    uint32_t dropped;     /* records CUPTI said it dropped in the span */
    uint16_t mode;        /* enum cs_gpu_mode */
    uint16_t flags;       /* CS_GCF_* */
    uint32_t cupti_version; /* cuptiGetVersion(), 0 = unknown */
};
_Static_assert(sizeof(struct cs_rec_gpucov) == 56, "cs_rec_gpucov is 56 bytes");

/* ---- NVTX ranges and marks (the shim's NVTX injection, docs/shim.md) ---- */

/* struct cs_rec_nvtx.flags */
#define CS_NF_MARK     0x01 /* a mark: t_end_ns == t_start_ns */
#define CS_NF_STARTEND 0x02 /* nvtxRangeStart/End (may end on another thread); else push/pop */
#define CS_NF_OPEN     0x04 /* not closed when the process ended: t_end_ns is its last sight */
#define CS_NF_PAYLOAD  0x08 /* payload and payload_type are the event attributes' */

/* One NVTX range (or mark) as the program annotated it, on the run's clock.
 * Written when it closes (a mark: at once). */
struct cs_rec_nvtx {
    uint64_t t_start_ns;  /* push / start / mark */
    uint64_t t_end_ns;    /* pop / end; == t_start_ns for a mark */
    uint64_t payload;     /* event attributes' payload bits (CS_NF_PAYLOAD) */
    uint32_t pid;
    uint32_t tid;         /* thread that pushed / started / marked */
    uint32_t name_id;     /* message (ring: process-local; file: strings db), 0 = none */
    uint32_t domain_id;   /* domain name (as name_id), 0 = the default domain */
    uint32_t category;    /* event attributes' category, 0 = none */
    uint32_t color;       /* ARGB, 0 = none */
    uint16_t depth;       /* push/pop: ranges of its domain open on the thread under it
                             (0 = top level): what nvtxRangePush returned */
    uint8_t flags;        /* CS_NF_* */
    uint8_t payload_type; /* NVTX_PAYLOAD_TYPE_* (CS_NF_PAYLOAD) */
    uint32_t pad;
};
_Static_assert(sizeof(struct cs_rec_nvtx) == 56, "cs_rec_nvtx is 56 bytes");

/* ---- Python samples (the collector, docs/python.md "Host code") ---- */

/* struct cs_rec_pysample.flags */
#define CS_PSF_TRUNC 0x01 /* the chain was cut short: a frame could not be read, or more
                             than the 32 kept; the stack holds the frames read up to there */

/* A CUDA thread's Python stack, read from outside its process by the
 * collector while the thread ran host code (outside CUDA calls). */
struct cs_rec_pysample {
    uint64_t t_start_ns; /* the read began (CLOCK_MONOTONIC) */
    uint64_t t_end_ns;   /* it ended: the stack is the thread's at some time in between */
    uint32_t pid, tid;
    uint32_t stack_id;   /* stacks db: Python frames only, innermost first */
    uint16_t nframes;    /* frames in that stack */
    uint16_t flags;      /* CS_PSF_* */
};
_Static_assert(sizeof(struct cs_rec_pysample) == 32, "cs_rec_pysample is 32 bytes");

/* ---- tables ---- */

/* struct cs_proc.flags */
#define CS_PF_CUDA      0x01 /* registered a shim ring (made CUDA calls) */
#define CS_PF_ROOT      0x02 /* root of the traced tree */
#define CS_PF_PREATTACH 0x04 /* existed before the sampler attached */
#define CS_PF_EXITED    0x08 /* exit seen (exit_ns valid) */
#define CS_PF_EXEC      0x10 /* exec seen (exec_ns valid) */

#define CS_RANK_NONE 0xffffffffu

/* processes db: key = pid_be32 | start_ns_be64; pids are reused. */
struct cs_proc {
    uint32_t pid, ppid;
    uint64_t start_ns;     /* fork (or first sight) time */
    uint64_t exec_ns;      /* last exec, 0 = none seen */
    uint64_t exit_ns;      /* 0 = still running at end of run */
    int32_t exit_status;   /* wait status if known, else -1 */
    uint32_t flags;        /* CS_PF_* */
    uint32_t cmdline_id;   /* strings db; args joined by spaces */
    uint32_t rank;         /* RANK from the environment, CS_RANK_NONE if absent */
    char comm[16];         /* NUL-terminated */
};
_Static_assert(sizeof(struct cs_proc) == 64, "cs_proc is 64 bytes");

/* threads db: key = pid_be32 | tid_be32 | start_ns_be64. */
struct cs_thread {
    uint32_t pid, tid;
    uint64_t start_ns;
    uint64_t exit_ns;      /* 0 = not seen */
    char name[16];
};
_Static_assert(sizeof(struct cs_thread) == 40, "cs_thread is 40 bytes");

/* stacks db value: key = u32 stack id (MDB_INTEGERKEY); frames innermost
 * first. A native frame is (module path string id, offset in module), for
 * offline symbolisation. A Python frame (CS_FRAME_PYTHON) is (source file
 * string id, line | function string id << 32): the function is the code
 * object's qualified name, line 0 = unknown. A mixed stack holds the native
 * frames below the interpreter (the CUDA call, the extension module that
 * made it), then the Python frames, innermost first (docs/python.md). */
struct cs_frame {
    uint64_t offset;     /* native: offset in module; Python: see CS_FRAME_PY_* */
    uint32_t module_id;  /* strings db: path of the object or source file; 0 = unknown
                            (a native offset is then an address) */
    uint32_t flags;      /* CS_FRAME_* */
};
#define CS_FRAME_PYTHON 0x1u /* a Python frame */
#define CS_FRAME_PY_LINE(f) ((uint32_t)((f)->offset & 0xffffffffu))
#define CS_FRAME_PY_FUNC(f) ((uint32_t)((f)->offset >> 32)) /* string id */
#define CS_FRAME_PY_OFFSET(line, func_id) ((uint64_t)(line) | (uint64_t)(func_id) << 32)
_Static_assert(sizeof(struct cs_frame) == 16, "cs_frame is 16 bytes");

/* ---- blocks ---- */

/* Value of a cuda_blk / host_blk entry: this header then n records. Key:
 * ts_first_be64 | source_be32 | seq_be32 (see runfile.h). */
struct cs_blk_hdr {
    uint64_t ts_first_ns;  /* smallest start time of any record in the block */
    uint64_t ts_last_ns;   /* largest end time */
    uint32_t n;            /* records */
    uint16_t kind;         /* enum cs_rec_kind */
    uint16_t rec_size;     /* bytes per record; readers check it against the kind */
    uint32_t pid;          /* producing process, 0 = several or system */
    uint32_t flags;        /* CS_HF_DEGRADED if a loss touched the block */
};
_Static_assert(sizeof(struct cs_blk_hdr) == 32, "cs_blk_hdr is 32 bytes");

#define CS_BLK_MAX_BYTES (64 * 1024) /* block value at most this (header included) */
#define CS_BLK_MAX_AGE_NS 100000000ull /* collector closes a block after 100 ms */

/** Size of a record of @p kind, 0 if unknown. */
static inline unsigned cs_rec_size(unsigned kind)
{
    switch (kind) {
    case CS_REC_CUDA: return sizeof(struct cs_rec_cuda);
    case CS_REC_OFFCPU: return sizeof(struct cs_rec_offcpu);
    case CS_REC_RUNQ: return sizeof(struct cs_rec_runq);
    case CS_REC_PWIN: return sizeof(struct cs_rec_pwin);
    case CS_REC_SYSWIN: return sizeof(struct cs_rec_syswin);
    case CS_REC_COUNTER: return sizeof(struct cs_rec_counter);
    case CS_REC_LOST: return sizeof(struct cs_rec_lost);
    case CS_REC_GPU: return sizeof(struct cs_rec_gpu);
    case CS_REC_GPUCOV: return sizeof(struct cs_rec_gpucov);
    case CS_REC_NVTX: return sizeof(struct cs_rec_nvtx);
    case CS_REC_PYSAMPLE: return sizeof(struct cs_rec_pysample);
    default: return 0;
    }
}

/* ---- aggregates of a size-capped run (record --max-size; docs/format.md) ---- */

/* agg db: key = t_window_be64 | kind u8 | pid_be32 | sub_be32 (17 bytes),
 * sub = api << 16 | variant << 8 | nested (CUDA), device (GPU), 0 (host).
 * The collector rewrites a window's rows at every commit while records of
 * it arrive, in the same transaction as their blocks: a block is evicted
 * only after its records are counted here. */
enum cs_agg_kind { CS_AGG_CUDA = 1, CS_AGG_HOST = 2, CS_AGG_GPU = 3 };

/* CUDA calls of one process and API (display variant, nested or not) that
 * entered in [t_start_ns, t_start_ns + window_ns); then nbuckets
 * struct cs_agg_bucket, ascending index (include/cudaspy/flight.h). */
struct cs_agg_cuda {
    uint64_t t_start_ns; /* window start, CLOCK_MONOTONIC */
    uint64_t window_ns;
    uint64_t count;
    uint64_t total_ns;   /* sum of t_exit_ns - t_enter_ns */
    uint64_t min_ns, max_ns;
    uint64_t errors;     /* calls with CS_CF_ERROR */
    uint32_t pid;
    uint16_t api;        /* enum cs_api */
    uint8_t variant;     /* enum cs_variant */
    uint8_t nested;      /* 1: CS_CF_NESTED */
    uint32_t nbuckets;
    uint32_t pad;
};
_Static_assert(sizeof(struct cs_agg_cuda) == 72, "cs_agg_cuda is 72 bytes");

/* One non-empty latency histogram bucket: calls whose duration has index
 * cs_hist_index(dur) (flight.h). */
struct cs_agg_bucket {
    uint32_t index;
    uint32_t count;
};
_Static_assert(sizeof(struct cs_agg_bucket) == 8, "cs_agg_bucket is 8 bytes");

/* Host state of one process over a window: records that started in it. */
struct cs_agg_host {
    uint64_t t_start_ns, window_ns;
    uint32_t pid;
    uint32_t pad;
    uint64_t oncpu_ns, sleep_ns, disk_ns, preempt_ns, runq_ns; /* sums of cs_rec_pwin */
    uint64_t off_ns[6];    /* cs_rec_offcpu durations by cls (enum cs_off_class; 0 unused) */
    uint64_t off_count[6]; /* and their number */
    uint64_t runq_wait_ns; /* cs_rec_runq: sum of t_run_ns - t_enqueue_ns */
    uint64_t runq_waits;
};
_Static_assert(sizeof(struct cs_agg_host) == 176, "cs_agg_host is 176 bytes");

/* GPU activity of one process and device over a window, by enum
 * cs_gpu_kind (index 0 unused): records that started in it, durations
 * summed (overlapping kernels count twice). */
struct cs_agg_gpu {
    uint64_t t_start_ns, window_ns;
    uint32_t pid;
    uint16_t device;
    uint16_t pad;
    uint64_t count[4];
    uint64_t dur_ns[4];
};
_Static_assert(sizeof(struct cs_agg_gpu) == 88, "cs_agg_gpu is 88 bytes");

#endif
