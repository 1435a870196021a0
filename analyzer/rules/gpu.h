/* rules/gpu.h: what the GPU itself did (docs/gpu.md), per process and device,
 * from the best source the process has: exact (full-mode CUPTI records, the
 * whole life of the process), sampled (slices of them; the rest estimated
 * from the slices) or the host's lower bound (feed.h: a sync's return to the
 * next enqueue). Inside the covered spans, GPU busy and idle are exact, and
 * each idle stretch is attributed to what the thread that fed the GPU did
 * meanwhile: host code, launch calls, a sync, the allocator, other CUDA
 * calls, asleep for the data pipeline or otherwise, preempted, D-state.
 * The rules (chains.c) read these to judge host_bound, sync_per_iteration,
 * data_pipeline_starvation and launch_bound from measured idle. */
#ifndef CUDASPY_ANALYZER_GPU_H
#define CUDASPY_ANALYZER_GPU_H

#include <jansson.h>

#include "feed.h"
#include "model/model.h"
#include "model/steps.h"

enum gpu_source { GPU_SRC_NONE = 0, GPU_SRC_HOST = 1, GPU_SRC_SAMPLED = 2, GPU_SRC_EXACT = 3 };

/* What the feeding thread did while the GPU waited. */
enum gpu_host {
    GH_HOST_CODE,  /* on CPU, outside CUDA calls */
    GH_LAUNCH,     /* inside launch, copy or memset calls */
    GH_SYNC,       /* inside a synchronisation */
    GH_ALLOC,      /* inside the allocator (alloc, free) */
    GH_CUDA_OTHER, /* inside other CUDA calls */
    GH_SLEEP_PIPE, /* asleep until a worker or helper thread woke it */
    GH_SLEEP,      /* asleep otherwise */
    GH_PREEMPT,    /* preempted, waiting for a CPU */
    GH_DISK,       /* uninterruptible (D) */
    GH_UNKNOWN,    /* outside CUDA calls, with no host data to say more */
    GH_COUNT
};

/* Idle stretches shorter than this are the host's per-launch pace (the
 * interpreter between two tiny kernels), not a stretch of host work. */
#define GPU_SHORT_NS 100000ull
#define GPU_TOP 3

struct gpu_stretch {
    uint64_t t0_ns, t1_ns;
    uint32_t thr;  /* the feeding thread, M_NONE if unknown */
    uint8_t state; /* enum gpu_host with the most time */
};

/* One process's GPU (one device), inside the analysed window. */
struct gpu_dev {
    uint32_t proc;
    uint16_t device;
    uint8_t source;          /* enum gpu_source */
    uint64_t first, n;       /* its records in model.gpu */
    uint64_t covered_ns;     /* where every enqueue was recorded */
    /* busy_ns, by, host_short_ns and sync_loss_ns: measured inside
     * covered_ns, each slice's share weighted by the period it stands for
     * (sampled coverage; gpu.c, cov_weight): busy_ns / covered_ns is the
     * estimated busy share */
    uint64_t busy_ns;        /* GPU busy inside covered_ns */
    uint64_t by[GH_COUNT];   /* idle inside covered_ns, by host state */
    uint64_t host_short_ns;  /* GH_HOST_CODE in stretches under GPU_SHORT_NS */
    uint64_t sync_loss_ns;   /* host work right after a sync, up to the GPU work
                                that sync waited for: what ran serially */
    uint64_t setup_host_ns;  /* GH_HOST_CODE of stretches of GPU_SHORT_NS or more
                                before the first step (struct step_setup) */
    uint64_t stretches, short_stretches;
    uint64_t kernels, copies, memsets; /* records in the window */
    uint64_t kernel_ns, copy_ns;       /* GPU time of each kind (union) */
    uint64_t concurrent_ns;  /* two kernels or more at once */
    uint64_t overlap_ns;     /* a copy and a kernel at once */
    uint64_t pageable_ns;    /* copies alone, every one from pageable memory */
    /* kernel_ns, copy_ns, overlap_ns and pageable_ns between the set-up
     * and the wind-down (struct step_setup): what the account splits its
     * GPU busy by */
    uint64_t steady_kernel_ns, steady_copy_ns, steady_overlap_ns, steady_pageable_ns;
    uint64_t steady_pageable_bytes; /* bytes of the pageable copies that began then */
    /* What a copy from pinned memory moves per second here: the run's own
     * pinned host copies of 1 MiB or more (GPU_PINNED_RUN), else the PCIe
     * link NVML reported (meta gpu_pcie_max, the slowest device's, at
     * GPU_PCIE_EFF of its rate: GPU_PINNED_LINK); 0: unknown */
    double pinned_bps;
    uint8_t pinned_src;
    char pinned_link[16];    /* "5x16": the link it came from (GPU_PINNED_LINK) */
    uint64_t kernel_p50_ns;  /* median kernel duration */
    struct gpu_stretch top[GPU_TOP]; /* longest idle stretches */
    struct gpu_stretch host_top;     /* longest of them spent on host code, from
                                        the first step on */
};

/* A process's devices together, and its estimate for its active window. */
struct gpu_proc {
    uint32_t proc;
    uint8_t source;
    uint64_t window_ns;   /* first to last CUDA call, inside the analysed window */
    uint64_t covered_ns, busy_ns, idle_ns; /* measured, summed over its devices */
    uint64_t by[GH_COUNT];
    uint64_t host_short_ns, sync_loss_ns, setup_host_ns;
    uint32_t ndev;
};

struct gpu_truth {
    struct gpu_dev *d;
    uint32_t nd;
    struct gpu_proc *p;
    uint32_t np;
    uint8_t source;      /* the best any process has */
    struct step_setup setup; /* as gpu_compute() was given it */
    json_t *notes;       /* why GPU activity is missing or paused, one line each */
    void *priv;          /* each device's covered and busy intervals (gpu.c) */
};

/** Build the GPU timelines of every selected process with CUDA calls,
 * the set-up @p su counted apart. @return 0 or -ENOMEM */
int gpu_compute(struct gpu_truth *g, const struct model *m, const struct feed *f,
                const struct step_setup *su);

/** The process's entry, NULL if it made no CUDA call. */
const struct gpu_proc *gpu_find(const struct gpu_truth *g, uint32_t proc);

/** @p measured ns of @p gp scaled to its whole window (sampled: by the
 * share covered; exact: as is). */
uint64_t gpu_estimate(const struct gpu_proc *gp, uint64_t measured);

/** "exact", "sampled", "host_lower_bound" or "none". */
const char *gpu_source_name(int source);

/** Name of host state @p h as in JSON ("host_code", "asleep_pipeline"...). */
const char *gpu_host_name(int h);

/** GPU busy share (0..1) of process @p proc (M_NONE: every process) in each
 * of @p nbins equal bins of [@p t0, @p t1), from the covered spans only;
 * -1 for a bin with no coverage. @p out gets nbins values. */
void gpu_bins(const struct gpu_truth *g, const struct model *m, uint32_t proc, uint64_t t0,
              uint64_t t1, int nbins, double *out);

/** GPU idle of process @p proc after @p t_ns (a sync's return) into
 * @p idle_ns: until its next GPU work of GPU_SHORT_NS or more (a tiny kernel
 * enqueued right after the sync does not refill the queue), @p until_ns (the
 * next sync) or the end of the covered span, whichever comes first; 0 if
 * such work was running at t_ns. Measured where GPU activity covered @p t_ns.
 * @return 1 when measured, 0 when no covered span holds t_ns */
int gpu_idle_after(const struct gpu_truth *g, uint32_t proc, uint64_t t_ns, uint64_t until_ns,
                   uint64_t *idle_ns);

/* A piece of a device's covered time, as gpu_walk() reports it. */
struct gpu_piece {
    uint64_t t0_ns, t1_ns;
    uint64_t cov;   /* index of its covered interval (pieces of one come together) */
    double w;       /* that interval's weight: the share of the window it stands for */
    uint64_t cov_t0_ns, cov_t1_ns; /* that interval */
    uint64_t next_call; /* a stretch: the call that enqueued the work ending it, M_CALL_NONE */
    uint32_t thr;   /* a stretch: the feeding thread the records around it name, M_NONE */
    uint8_t busy;   /* 1: the GPU ran something, 0: an idle stretch */
};

typedef void gpu_walk_fn(void *arg, const struct gpu_piece *p);

enum { GPU_PINNED_NONE = 0, GPU_PINNED_RUN = 1, GPU_PINNED_LINK = 2 };
#define GPU_PCIE_EFF 0.80 /* of a link's rate a DMA copy reaches (H100, gen5 x16: 51 of 63 GB/s) */

/** Of @p d's GPU time copying pageable memory (steady_pageable_ns), the
 * share a copy from pinned memory would still take (the transfer at
 * pinned_bps), 0..1; 0 when the pinned rate is unknown. */
double gpu_pinned_share(const struct gpu_dev *d);

/** Call @p fn for each idle stretch and busy piece of device @p d's covered
 * intervals in time order, the weights computed over the window
 * [@p lo, @p hi) (the process's active window) as gpu_compute() does. */
void gpu_walk(const struct gpu_truth *g, const struct model *m, const struct gpu_dev *d,
              uint64_t lo, uint64_t hi, gpu_walk_fn *fn, void *arg);

/** GPU busy time of device @p d inside [@p t0, @p t1) (its records' union). */
uint64_t gpu_busy_inside(const struct gpu_truth *g, const struct gpu_dev *d, uint64_t t0,
                         uint64_t t1);

/** Thread @p t's first outermost call that ends after @p ts (model.call index). */
uint64_t gpu_call_from(const struct model *m, uint32_t t, uint64_t ts);

/** Thread @p t's outermost sync that was running at @p a, or ended at most
 * 200 us before it (an idle stretch that begins then follows from it);
 * M_CALL_NONE if none. */
uint64_t gpu_sync_before(const struct model *m, uint32_t t, uint64_t a);

/** The "gpu" object of docs/json.md. */
json_t *gpu_json(const struct gpu_truth *g, const struct model *m);

void gpu_exit(struct gpu_truth *g);

/** Kernels that graph replays ran, by name, from the GPU records (most GPU
 * time first): [{kernel, count, total_ns, mean_ns}] (--by kernel). */
json_t *gpu_graph_kernels_json(const struct model *m);

#endif
