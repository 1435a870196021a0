/* api.h: the CUDA functions cudaspy records, one id each, shared by the shim
 * (which stamps records with the id), the collector and the analyzer (which
 * name and group them). An id names the exported function without its
 * per-thread suffix: cuMemcpyHtoDAsync_v2_ptsz is CS_API_cuMemcpyHtoDAsync_v2
 * with variant CS_VAR_PTSZ. Ids are part of the run-file format: append new
 * entries at the end of CS_API_LIST, never reorder or remove. */
#ifndef CUDASPY_API_H
#define CUDASPY_API_H

#include <stddef.h>
#include <stdint.h>

/* Families: what a call does, for the analyzer's rules. */
enum cs_family {
    CS_FAM_OTHER = 0,
    CS_FAM_LAUNCH,  /* kernel, graph or host-function launch */
    CS_FAM_COPY,    /* memcpy, async or not */
    CS_FAM_MEMSET,
    CS_FAM_SYNC,    /* host waits for device work */
    CS_FAM_ALLOC,   /* device, host-pinned, managed or VMM allocation */
    CS_FAM_FREE,
    CS_FAM_CAPTURE, /* stream capture begin/end */
    CS_FAM_MODULE,  /* module/library unload */
    CS_FAM_REGISTER, /* host memory (un)registration */
    CS_FAM_INIT,    /* driver initialisation and context creation */
    CS_FAM_GRAPH    /* graph instantiation, update and upload (issue 31) */
};

/* Layers. */
enum cs_layer { CS_LAYER_DRIVER = 0, CS_LAYER_RUNTIME = 1 };

/* Per-thread default stream variants of one function. */
enum cs_variant { CS_VAR_LEGACY = 0, CS_VAR_PTSZ = 1, CS_VAR_PTDS = 2 };

/* X(id_name, layer, family, is_sync): is_sync marks calls that block the
 * host until device work completes (synchronous copies and memsets, syncs). */
#define CS_API_LIST(X)                                                  \
    /* driver: launches */                                              \
    X(cuLaunchKernel, CS_LAYER_DRIVER, CS_FAM_LAUNCH, 0)                \
    X(cuLaunchKernelEx, CS_LAYER_DRIVER, CS_FAM_LAUNCH, 0)              \
    X(cuLaunchCooperativeKernel, CS_LAYER_DRIVER, CS_FAM_LAUNCH, 0)     \
    X(cuLaunchHostFunc, CS_LAYER_DRIVER, CS_FAM_LAUNCH, 0)              \
    X(cuGraphLaunch, CS_LAYER_DRIVER, CS_FAM_LAUNCH, 0)                 \
    /* driver: async copies */                                          \
    X(cuMemcpyHtoDAsync_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 0)            \
    X(cuMemcpyDtoHAsync_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 0)            \
    X(cuMemcpyDtoDAsync_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 0)            \
    X(cuMemcpyAsync, CS_LAYER_DRIVER, CS_FAM_COPY, 0)                   \
    X(cuMemcpyPeerAsync, CS_LAYER_DRIVER, CS_FAM_COPY, 0)               \
    X(cuMemcpy2DAsync_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 0)              \
    X(cuMemcpy3DAsync_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 0)              \
    X(cuMemcpyBatchAsync, CS_LAYER_DRIVER, CS_FAM_COPY, 0)              \
    X(cuMemcpyBatchAsync_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 0)           \
    /* driver: synchronous copies */                                    \
    X(cuMemcpyHtoD_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 1)                 \
    X(cuMemcpyDtoH_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 1)                 \
    X(cuMemcpyDtoD_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 1)                 \
    X(cuMemcpy, CS_LAYER_DRIVER, CS_FAM_COPY, 1)                        \
    X(cuMemcpyPeer, CS_LAYER_DRIVER, CS_FAM_COPY, 1)                    \
    X(cuMemcpy2D_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 1)                   \
    X(cuMemcpy3D_v2, CS_LAYER_DRIVER, CS_FAM_COPY, 1)                   \
    /* driver: memsets */                                               \
    X(cuMemsetD8_v2, CS_LAYER_DRIVER, CS_FAM_MEMSET, 1)                 \
    X(cuMemsetD16_v2, CS_LAYER_DRIVER, CS_FAM_MEMSET, 1)                \
    X(cuMemsetD32_v2, CS_LAYER_DRIVER, CS_FAM_MEMSET, 1)                \
    X(cuMemsetD8Async, CS_LAYER_DRIVER, CS_FAM_MEMSET, 0)               \
    X(cuMemsetD16Async, CS_LAYER_DRIVER, CS_FAM_MEMSET, 0)              \
    X(cuMemsetD32Async, CS_LAYER_DRIVER, CS_FAM_MEMSET, 0)              \
    /* driver: synchronisation */                                       \
    X(cuStreamSynchronize, CS_LAYER_DRIVER, CS_FAM_SYNC, 1)             \
    X(cuCtxSynchronize, CS_LAYER_DRIVER, CS_FAM_SYNC, 1)                \
    X(cuCtxSynchronize_v2, CS_LAYER_DRIVER, CS_FAM_SYNC, 1)             \
    X(cuEventSynchronize, CS_LAYER_DRIVER, CS_FAM_SYNC, 1)              \
    X(cuStreamWaitEvent, CS_LAYER_DRIVER, CS_FAM_SYNC, 0)               \
    /* driver: allocation */                                            \
    X(cuMemAlloc_v2, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)                  \
    X(cuMemFree_v2, CS_LAYER_DRIVER, CS_FAM_FREE, 0)                    \
    X(cuMemAllocAsync, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)                \
    X(cuMemFreeAsync, CS_LAYER_DRIVER, CS_FAM_FREE, 0)                  \
    X(cuMemAllocFromPoolAsync, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)        \
    X(cuMemAllocHost_v2, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)              \
    X(cuMemHostAlloc, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)                 \
    X(cuMemFreeHost, CS_LAYER_DRIVER, CS_FAM_FREE, 0)                   \
    X(cuMemAllocManaged, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)              \
    X(cuMemAllocPitch_v2, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)             \
    X(cuMemCreate, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)                    \
    X(cuMemMap, CS_LAYER_DRIVER, CS_FAM_ALLOC, 0)                       \
    X(cuMemRelease, CS_LAYER_DRIVER, CS_FAM_FREE, 0)                    \
    X(cuMemUnmap, CS_LAYER_DRIVER, CS_FAM_FREE, 0)                      \
    X(cuMemHostRegister_v2, CS_LAYER_DRIVER, CS_FAM_REGISTER, 0)        \
    X(cuMemHostUnregister, CS_LAYER_DRIVER, CS_FAM_REGISTER, 0)         \
    /* driver: capture and modules */                                   \
    X(cuStreamBeginCapture_v2, CS_LAYER_DRIVER, CS_FAM_CAPTURE, 0)      \
    X(cuStreamEndCapture, CS_LAYER_DRIVER, CS_FAM_CAPTURE, 0)           \
    X(cuModuleUnload, CS_LAYER_DRIVER, CS_FAM_MODULE, 0)                \
    X(cuLibraryUnload, CS_LAYER_DRIVER, CS_FAM_MODULE, 0)               \
    /* runtime */                                                       \
    X(__cudaLaunchKernel, CS_LAYER_RUNTIME, CS_FAM_LAUNCH, 0)           \
    X(cudaLaunchKernel, CS_LAYER_RUNTIME, CS_FAM_LAUNCH, 0)             \
    X(cudaLaunchKernelExC, CS_LAYER_RUNTIME, CS_FAM_LAUNCH, 0)          \
    X(cudaGraphLaunch, CS_LAYER_RUNTIME, CS_FAM_LAUNCH, 0)              \
    X(cudaMemcpyAsync, CS_LAYER_RUNTIME, CS_FAM_COPY, 0)                \
    X(cudaMemcpy, CS_LAYER_RUNTIME, CS_FAM_COPY, 1)                     \
    X(cudaMemcpy2DAsync, CS_LAYER_RUNTIME, CS_FAM_COPY, 0)              \
    X(cudaStreamSynchronize, CS_LAYER_RUNTIME, CS_FAM_SYNC, 1)          \
    X(cudaDeviceSynchronize, CS_LAYER_RUNTIME, CS_FAM_SYNC, 1)          \
    X(cudaEventSynchronize, CS_LAYER_RUNTIME, CS_FAM_SYNC, 1)           \
    X(cudaMalloc, CS_LAYER_RUNTIME, CS_FAM_ALLOC, 0)                    \
    X(cudaFree, CS_LAYER_RUNTIME, CS_FAM_FREE, 0)                       \
    X(cudaMallocHost, CS_LAYER_RUNTIME, CS_FAM_ALLOC, 0)                \
    X(cudaHostAlloc, CS_LAYER_RUNTIME, CS_FAM_ALLOC, 0)                 \
    X(cudaFreeHost, CS_LAYER_RUNTIME, CS_FAM_FREE, 0)                   \
    X(cudaHostRegister, CS_LAYER_RUNTIME, CS_FAM_REGISTER, 0)           \
    X(cudaHostUnregister, CS_LAYER_RUNTIME, CS_FAM_REGISTER, 0)         \
    X(cudaMallocAsync, CS_LAYER_RUNTIME, CS_FAM_ALLOC, 0)               \
    X(cudaFreeAsync, CS_LAYER_RUNTIME, CS_FAM_FREE, 0)                  \
    /* driver: initialisation (the run line's "CUDA initialisation") */  \
    X(cuInit, CS_LAYER_DRIVER, CS_FAM_INIT, 0)                          \
    X(cuDevicePrimaryCtxRetain, CS_LAYER_DRIVER, CS_FAM_INIT, 0)        \
    /* memory (issue 31): free and total device memory; the shim also    \
       reads them itself (CS_CF_TRACER, docs/memory.md) */               \
    X(cuMemGetInfo_v2, CS_LAYER_DRIVER, CS_FAM_OTHER, 0)                \
    X(cudaMemGetInfo, CS_LAYER_RUNTIME, CS_FAM_OTHER, 0)                \
    /* graphs (issue 31): instantiation, update, upload; runtime capture */ \
    X(cuGraphInstantiateWithFlags, CS_LAYER_DRIVER, CS_FAM_GRAPH, 0)    \
    X(cuGraphInstantiateWithParams, CS_LAYER_DRIVER, CS_FAM_GRAPH, 0)   \
    X(cuGraphExecUpdate_v2, CS_LAYER_DRIVER, CS_FAM_GRAPH, 0)           \
    X(cuGraphUpload, CS_LAYER_DRIVER, CS_FAM_GRAPH, 0)                  \
    X(cudaStreamBeginCapture, CS_LAYER_RUNTIME, CS_FAM_CAPTURE, 0)      \
    X(cudaStreamEndCapture, CS_LAYER_RUNTIME, CS_FAM_CAPTURE, 0)        \
    X(cudaGraphInstantiate, CS_LAYER_RUNTIME, CS_FAM_GRAPH, 0)          \
    X(cudaGraphInstantiateWithFlags, CS_LAYER_RUNTIME, CS_FAM_GRAPH, 0) \
    X(cudaGraphInstantiateWithParams, CS_LAYER_RUNTIME, CS_FAM_GRAPH, 0) \
    X(cudaGraphExecUpdate, CS_LAYER_RUNTIME, CS_FAM_GRAPH, 0)           \
    X(cudaGraphUpload, CS_LAYER_RUNTIME, CS_FAM_GRAPH, 0)

enum cs_api {
    CS_API_NONE = 0,
#define CS_API_ENUM_(name, layer, fam, sync) CS_API_##name,
    CS_API_LIST(CS_API_ENUM_)
#undef CS_API_ENUM_
    CS_API_COUNT
};

struct cs_api_info {
    const char *name;  /* exported name without _ptsz/_ptds */
    uint8_t layer;     /* enum cs_layer */
    uint8_t family;    /* enum cs_family */
    uint8_t is_sync;   /* blocks the host until device work is done */
};

/* Table indexed by enum cs_api; entry 0 is {"?", ...}. */
extern const struct cs_api_info cs_api_table[CS_API_COUNT];

/** Id for @p name (exact exported name; a _ptsz/_ptds suffix is stripped and
 * returned in @p variant if not NULL). @return CS_API_NONE if unknown. */
enum cs_api cs_api_lookup(const char *name, enum cs_variant *variant);

/** "cuLaunchKernel_ptsz"-style display name into @p buf. @return buf */
const char *cs_api_display(enum cs_api api, enum cs_variant v, char *buf, size_t n);

/** Name of a family ("launch", "copy", ...). */
const char *cs_family_name(enum cs_family f);

#endif
