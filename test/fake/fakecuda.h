/* fakecuda.h: the few non-CUDA entry points of the fake driver and fake
 * runtime, used by test clients and tests (none starts with "cu", so an
 * interposer leaves them alone). The CUDA entry points themselves are
 * declared by the toolkit's cuda.h and cuda_runtime_api.h. */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stdint.h>
#include <stdio.h>

/* --- fake libcuda.so.1 (reach it with dlopen("libcuda.so.1", RTLD_NOLOAD)) --- */

/** Append this process's driver tallies to @p f in the expectation format
 * (README.md): "call driver ...", "copy ...", "host ...", "memset ...",
 * "kernel ..." lines. @return 0 or -EIO */
int fakecuda_expect_write(FILE *f);
typedef int (*fakecuda_expect_write_fn)(FILE *f);

/** Calls of export @p export_name so far in this process (0 if unknown);
 * NULL: calls of all exports together. */
uint64_t fakecuda_calls(const char *export_name);
typedef uint64_t (*fakecuda_calls_fn)(const char *export_name);

/* What the simulated GPU ran: one call per kernel, copy or memset as it is
 * enqueued (on the enqueuing thread, inside the driver call), with the
 * times the stream timeline gives it (CLOCK_MONOTONIC ns; without
 * FAKECUDA_SIM both are the enqueue time). The fake CUPTI (fake_cupti.c)
 * is its one user, as NVIDIA's CUPTI hears from its driver. */
enum fakecuda_act_kind { FAKECUDA_ACT_KERNEL = 1, FAKECUDA_ACT_COPY = 2, FAKECUDA_ACT_MEMSET = 3 };
struct fakecuda_act {
    int kind;          /* enum fakecuda_act_kind */
    const char *name;  /* kernel name (valid while the module is loaded) */
    uint64_t start_ns, end_ns;
    uint64_t bytes;
    uint32_t stream_id, device;
    int copy_dir;      /* 0 HtoD, 1 DtoH, 2 DtoD, 3 HtoH */
    int host_pageable; /* copies HtoD and DtoH: the host side is pageable memory */
    uint32_t graph_id;      /* run by a graph launch: the executable graph's id, else 0 */
    uint64_t graph_node_id; /* and its node's id (unique in the process), else 0 */
};
typedef void (*fakecuda_act_fn)(const struct fakecuda_act *a);

/** Have @p fn called for every enqueued kernel, copy and memset (NULL: stop). */
void fakecuda_act_hook(fakecuda_act_fn fn);
typedef void (*fakecuda_act_hook_fn)(fakecuda_act_fn fn);

/* --- fake runtime (libcudart.so.13 or libcudart_static_fake.a) --- */

/** Register device function @p name with host stub @p host_fn, standing in
 * for nvcc's fatbin registration: loads a fake library holding @p name
 * (cuLibraryLoadData) and maps host_fn to its CUkernel, which
 * cudaLaunchKernel and __cudaGetKernel then use. @return 0 or a cudaError_t */
int fakert_register_kernel(const void *host_fn, const char *name);

/** Append "call runtime ..." lines (layer "static_runtime" for the static
 * archive) for this process's runtime calls to @p f. @return 0 or -EIO */
int fakert_expect_write(FILE *f);

/* --- client helper (fake_expect.c, linked into each client) --- */

/** If FAKECUDA_EXPECT is set, write the expectation file for @p client:
 * header, the runtime's lines (when @p rt_write is not NULL), the driver's
 * lines, then "checksum <hex>". "%p" in the path becomes the pid.
 * @return 0, or -1 after printing one line to stderr */
int fake_expect_write(const char *client, int (*rt_write)(FILE *f), uint64_t checksum);

#endif
