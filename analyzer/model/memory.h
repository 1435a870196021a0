/* model/memory.h: device memory per process and device over time (issue 31,
 * docs/memory.md). What the program's allocator holds is replayed from its
 * allocation and free records: segments (cuMemAlloc*, cudaMalloc), stream-
 * ordered allocations (cuMemAllocAsync, cudaMallocAsync, pools) and the
 * physical handles of the virtual-memory API (cuMemCreate .. cuMemRelease,
 * what PyTorch's expandable segments hold; cuMemMap only places them).
 * Frees are matched by pointer or handle; a runtime call and the driver
 * call it made are one allocation (same pointer). The device's free and
 * total bytes come from cuMemGetInfo readings, the tracer's own
 * (CS_CF_TRACER: after the first allocation and each out-of-memory
 * failure) and the program's. Failures out of memory are kept with what
 * the process held and who held it; a failure that the same thread
 * followed by a successful allocation of the same size is a retry episode
 * (a caching allocator freed its cache and tried again), the others are
 * out-of-memory errors the program saw. The account (rules/account.c)
 * gives episodes' time to allocator_retries; the findings and the views
 * read the rest. */
#ifndef CUDASPY_ANALYZER_MEMORY_H
#define CUDASPY_ANALYZER_MEMORY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "pystack.h"

#define MEM_TOP 5 /* holders kept per peak and per failure */
#define MEM_APIS 4 /* allocating APIs kept per peak */

/* What one allocating API held: the API of the outermost call that made
 * each allocation (cudaMalloc for a program on the shared runtime, as
 * PyTorch's caching allocator; cuMemAlloc_v2 for a library on its own
 * static runtime, which reaches the driver directly). */
struct mem_api_held {
    uint16_t api; /* enum cs_api; 0: none */
    uint64_t bytes;
};

/* Why a reading of the device's free memory was taken. */
enum mem_why { MEM_READ_PROGRAM = 0, MEM_READ_FIRST = 1, MEM_READ_OOM = 2 };

struct mem_reading {
    uint64_t t_ns;
    uint64_t free_bytes, total_bytes;
    uint64_t held_bytes; /* what the process held on the device then */
    uint8_t why; /* enum mem_why */
};

/* The bytes held after a change. */
struct mem_point {
    uint64_t t_ns;
    uint64_t held_bytes;
};

/* What one call site held at a moment: its allocations' bytes. */
struct mem_holder {
    struct pystack_ref ref; /* the stack of one of its allocations (id 0: none) */
    uint64_t bytes;
    uint32_t n;
};

/* An allocation that failed out of memory (outermost calls only). */
struct mem_fail {
    uint64_t t_ns, t_end_ns;  /* the failed call */
    uint32_t proc, thr;       /* model.proc, model.thr (M_NONE if not found) */
    uint16_t device;
    uint16_t api;             /* enum cs_api */
    uint64_t bytes;           /* the size asked */
    uint64_t held_bytes;      /* what the process held on that device then */
    uint64_t free_bytes, total_bytes; /* the reading that went with it, if has_free */
    uint8_t has_free;
    uint8_t retried;          /* the same thread then got the same size: an episode */
    uint8_t chained;          /* a further failure inside an earlier one's episode */
    uint32_t nfree;           /* frees the thread made in the episode */
    uint64_t retry_end_ns;    /* retried: the successful allocation's return */
    struct pystack_ref ref;   /* the failed call's stack */
    struct mem_holder top[MEM_TOP]; /* largest holders then, by site (errors, and the
                                       first MEM_FAIL_TOPS failures; else empty) */
    uint32_t track;           /* index in memory.tr */
    size_t ev;                /* the replay's event (memory.c) */
};
#define MEM_FAIL_TOPS 50 /* retried failures that get their holders */

/* One process on one device. */
struct mem_track {
    uint32_t proc, pid;
    uint16_t device;
    uint64_t peak_bytes, peak_ns;
    size_t peak_ev;           /* the replay's event that reached the peak (memory.c) */
    uint64_t end_bytes;       /* held at the end of the window */
    uint64_t nalloc, nfree, alloc_bytes;
    uint32_t nfail, nretry;   /* failures out of memory; of which retry episodes */
    struct mem_point *pt;
    size_t npt, cap_pt;
    struct mem_reading *rd;
    size_t nrd, cap_rd;
    struct mem_holder top[MEM_TOP]; /* at the peak */
    struct mem_api_held by_api[MEM_APIS]; /* at the peak, most first */
};

/* A retry episode of a thread: [t0, t1) from the failed call to the retry's return. */
struct mem_episode {
    uint32_t thr;
    uint64_t t0_ns, t1_ns;
};

struct memory {
    struct mem_track *tr;
    size_t ntr;
    struct mem_fail *fail; /* in time order */
    size_t nfail, cap_fail;
    struct mem_episode *ep; /* by thread, then time */
    size_t nep;
};

/** Is CUDA record @p r one memory_compute() reads (allocations, frees,
 * failures, readings)? */
int memory_wants(const struct cs_rec_cuda *r);

/** Replay the allocation records of @p m's selected processes into @p mm.
 * @return 0 or -ENOMEM */
int memory_compute(struct memory *mm, const struct model *m);

/** Retry episodes of thread @p thr (index in model.thr), in time order.
 * @return borrowed, NULL with *n = 0 when none */
const struct mem_episode *memory_episodes(const struct memory *mm, uint32_t thr, size_t *n);

/** The "memory" object of docs/json.md. @return new reference */
json_t *memory_json(const struct memory *mm, const struct model *m);

/** Holders @p h (MEM_TOP, zero-filled past the last) as JSON rows
 * {"site", "bytes", "allocations"}. @return new reference */
json_t *memory_holders_json(const struct model *m, const struct mem_holder *h);

void memory_exit(struct memory *mm);

#endif
