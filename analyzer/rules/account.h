/* rules/account.h: one exclusive account of the CUDA-active window. Every
 * nanosecond of each feeding process's window goes to exactly one bucket:
 * the set-up before the first step, GPU busy (compute, copy, both), or GPU
 * idle split by what the threads that feed the GPU did at that moment
 * (host code, launching, inside a sync, asleep for a data-loader worker,
 * preempted, ...). Where GPU activity was recorded the split is measured
 * (exactly, or in the sampled slices and scaled to the window, with a 95 %
 * interval); elsewhere only the host's lower bound is known (a sync's
 * return to the next enqueue) and the rest of the window is "busy or
 * unseen". The findings (chains.c) are views of the account: each cause
 * owns some buckets and its impact is their time, so no two findings share
 * a nanosecond and their impacts add up to at most the window. */
#ifndef CUDASPY_ANALYZER_ACCOUNT_H
#define CUDASPY_ANALYZER_ACCOUNT_H

#include <jansson.h>

#include "feed.h"
#include "gpu.h"
#include "model/memory.h"
#include "model/model.h"
#include "model/steps.h"

enum acct_bucket {
    AB_SETUP,        /* before the first step: once a run, never a finding */
    AB_WIND_DOWN,    /* after the steps (a checkpoint saved, a last evaluation, the
                        exit): once a run, never a finding */
    AB_GPU_COMPUTE,  /* GPU busy: kernels or memsets */
    AB_GPU_COPY,     /* GPU busy: copies alone */
    AB_GPU_PAGEABLE, /* GPU busy: copies from pageable memory alone (the staging pace) */
    AB_GPU_BOTH,     /* GPU busy: a copy and a kernel at once */
    AB_GPU_UNSEEN,   /* host lower bound: not known idle (busy, or idle the host cannot see) */
    AB_GPU_QUEUED,   /* GPU idle with its next work already queued: a GPU-side gap */
    AB_HOST_CODE,    /* GPU idle, a feeder on CPU outside CUDA calls */
    AB_DATA_RECV,    /* the same, sampled in a DataLoader's receive path (unpickling a
                        worker's batch): the data pipeline's cost in the main thread */
    AB_HOST_FRAMEWORK, /* the same, sampled in the framework's own Python (torch's
                        modules, autograd, optimizers) between launches: per-op
                        overhead that a CUDA graph or torch.compile removes */
    AB_HOST_PACE,    /* GPU idle in stretches under GPU_SHORT_NS: the per-launch pace */
    AB_SYNC_SERIAL,  /* host work after a sync that the GPU work it waited for would hide */
    AB_SYNC,         /* GPU idle, the feeder inside a sync (waking up) */
    AB_LAUNCH,       /* inside launch, copy or memset calls */
    AB_PAGEABLE,     /* inside copies from pageable memory (staging) */
    AB_ALLOC,        /* inside the allocator */
    AB_CUDA_OTHER,   /* inside other CUDA calls */
    AB_DATA_WAIT,    /* asleep until a data-loader worker or helper thread delivered */
    AB_WORKER_START, /* the same, for a worker's first batch (workers started anew) */
    AB_SLEEP,        /* asleep otherwise (another feeder, a lock, a timer) */
    AB_PREEMPT_TREE, /* runnable, the CPU held by the traced tree */
    AB_PREEMPT_EXT,  /* runnable, the CPU held by outside processes */
    AB_DISK,         /* uninterruptible (D) */
    AB_UNKNOWN,      /* outside CUDA calls, no host data */
    AB_NO_CUDA,      /* in the run's active window, outside every feeding process's own */
    AB_ALLOC_RETRY,  /* GPU idle, a feeder in a caching allocator's retry: from an allocation
                        that failed out of memory, through the frees and their syncs, to the
                        successful retry (model/memory.h) */
    AB_GRAPH,        /* GPU idle, a feeder building a CUDA graph (graphs.h: a capture's
                        begin to its instantiation's end, torch's code warming up or
                        recording a shape) that was launched fewer than
                        GRAPHS_AMORTISED times before being made again (issue 31) */
    AB_GRAPH_ONCE,   /* the same for a build launched that often or more: paid for */
    AB_COUNT
};

/* The causes findings report from the account (chains.c names them). */
enum acct_cause {
    AC_NONE = -1,
    AC_PIPE, AC_START, AC_HOST, AC_SYNC, AC_LAUNCH, AC_PAGEABLE, AC_CHURN, AC_TREE, AC_EXT,
    AC_IO, AC_RETRY, AC_RECAPTURE, AC_COUNT
};

#define ACCT_FEEDERS 8

/* One feeding process (one device): its window and buckets. */
struct acct {
    uint32_t proc;
    uint16_t device;
    uint8_t source;           /* enum gpu_source */
    uint8_t is_rep;           /* represents its group of processes side by side */
    uint64_t lo_ns, hi_ns;    /* its CUDA-active window */
    uint64_t setup_end_ns;    /* the first step's start, lo_ns if no set-up */
    uint64_t steady_hi_ns;    /* the wind-down's start, hi_ns if none */
    uint64_t covered_ns;      /* measured, after the set-up */
    uint64_t ns[AB_COUNT];    /* estimated over the window; they sum to hi - lo */
    uint64_t lo[AB_COUNT], hi[AB_COUNT]; /* 95 % interval of each (sampled) */
    uint32_t feeder[ACCT_FEEDERS], nfeed; /* model.thr of its feeding threads */
    /* sampling moments, per covered interval k: x_k = w_k len_k, y_k = w_k b_k */
    double sx, sxx, sy[AB_COUNT], syy[AB_COUNT], sxy[AB_COUNT];
    uint64_t nk;
};

/* Per step of struct steps, what each cause owned of it (ns). */
struct acct_step {
    uint32_t own[AC_COUNT];
    uint32_t busy;    /* GPU busy in it (busy_split gives causes their part) */
    uint8_t measured; /* wholly inside covered time */
};

struct account {
    struct acct *a;
    uint32_t na;
    uint8_t source;                /* best of the representatives */
    uint64_t window_ns;            /* the whole the findings' shares use */
    uint64_t ns[AB_COUNT], lo[AB_COUNT], hi[AB_COUNT]; /* representatives summed */
    struct acct_step *step;        /* per step of the steps' process, or NULL */
    size_t nstep;
    const struct steps *steps;
};

/** Build the account of every selected CUDA process, @p wall_ns the run's
 * active window (what is outside every process's own is AB_NO_CUDA), the
 * steps @p s and their set-up @p su, the allocator's retry episodes of
 * @p mem (may be NULL). @return 0 or -ENOMEM */
int account_compute(struct account *ac, const struct model *m, const struct feed *f,
                    const struct gpu_truth *g, const struct steps *s,
                    const struct step_setup *su, const struct memory *mem, uint64_t wall_ns);

/** Time cause @p c owns (the sum of its buckets), with its 95 % interval
 * into @p lo, @p hi (either may be NULL). */
uint64_t account_cause(const struct account *ac, int c, uint64_t *lo, uint64_t *hi);

/** GPU idle of process @p proc after the set-up, over its devices: its
 * account's idle buckets (the lower bound's unseen time is not idle). */
uint64_t account_idle(const struct account *ac, uint32_t proc);

/** The cause that owns bucket @p b, AC_NONE if none. */
int account_owner(int b);

/** The cause's name as findings use it ("data_pipeline_starvation"...). */
const char *account_cause_name(int c);

/** The bucket's JSON name ("gpu_compute", "asleep_data"...). */
const char *account_bucket_name(int b);

/* Step time now and with a cause gone (account_whatif). */
struct acct_whatif {
    uint64_t p50_ns, p50_fixed_ns;   /* the median step */
    uint64_t mean_ns, mean_fixed_ns; /* the mean step: the throughput */
    size_t steps;                    /* measured steps they are over */
};

/** Step time now and with cause @p c gone (its owned time taken out of
 * each measured step; the GPU's busy time stays) into @p w.
 * @return 1, or 0 when too few steps were measured */
int account_whatif(const struct account *ac, int c, struct acct_whatif *w);

/** The "account" object of docs/json.md. */
json_t *account_json(const struct account *ac, const struct model *m);

void account_exit(struct account *ac);

#endif
