/* fake_mem.c: the fake driver's memory. Host memory stands in for device
 * memory, so device pointers are real pointers and copies are memcpy. Owns the
 * range table (device, managed, pinned, registered) that decides direction
 * and pinned-vs-pageable, the alloc/free/register/VMM exports and every copy
 * and memset export, and which copies and memsets are deferred (SIM).
 * Stream timing is fake_stream.c's; the deferred queue fake_queue.c's. */
#include "fake_driver.h"
#include "fakecuda.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wunused-parameter"

/* ---- range table ---- */

struct range {
    uintptr_t base;
    size_t len;
    enum fake_mem_kind kind;
    int is_registered; /* pinned by cuMemHostRegister, or a VMM mapping: not ours to free */
    int is_counted;    /* its bytes are in used_bytes (a VMM mapping's are its handle's) */
};

static pthread_mutex_t range_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range *ranges;
static size_t n_ranges, cap_ranges;
static _Atomic uint64_t used_bytes;

/* How a range's bytes count against the device (FAKECUDA_MEM_LIMIT). */
enum range_use {
    RANGE_FREE_OF_CAP, /* pinned host memory: in used_bytes, never refused */
    RANGE_CAPPED,      /* device memory: refused past the capacity */
    RANGE_UNCOUNTED    /* a VMM mapping: its handle (cuMemCreate) holds the bytes */
};

/* @return 0, -1 out of host memory, -2 past the device's capacity */
static int range_add_as(void *p, size_t len, enum fake_mem_kind kind, int is_registered,
                        enum range_use use)
{
    int rc = 0;
    pthread_mutex_lock(&range_lock);
    if (use == RANGE_CAPPED && atomic_load(&used_bytes) + len > fake_cfg.total_mem_bytes) {
        rc = -2;
        goto out;
    }
    if (n_ranges == cap_ranges) {
        size_t cap = cap_ranges ? cap_ranges * 2 : 64;
        struct range *r = realloc(ranges, cap * sizeof *r);
        if (r == NULL) {
            rc = -1;
            goto out;
        }
        ranges = r;
        cap_ranges = cap;
    }
    ranges[n_ranges++] =
        (struct range){(uintptr_t)p, len, kind, is_registered, use != RANGE_UNCOUNTED};
    if (use != RANGE_UNCOUNTED)
        atomic_fetch_add(&used_bytes, len);
out:
    pthread_mutex_unlock(&range_lock);
    return rc;
}

static int range_add(void *p, size_t len, enum fake_mem_kind kind, int is_registered)
{
    return range_add_as(p, len, kind, is_registered, RANGE_FREE_OF_CAP);
}

/* Removes the range starting exactly at p with kind in mask; 0 or -1. */
static int range_del(const void *p, unsigned kind_mask, struct range *out)
{
    int rc = -1;
    pthread_mutex_lock(&range_lock);
    for (size_t i = 0; i < n_ranges; i++) {
        if (ranges[i].base == (uintptr_t)p && (kind_mask & (1u << ranges[i].kind))) {
            *out = ranges[i];
            ranges[i] = ranges[--n_ranges];
            if (out->is_counted)
                atomic_fetch_sub(&used_bytes, out->len);
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&range_lock);
    return rc;
}

static int range_find(const void *p, struct range *out)
{
    int rc = -1;
    uintptr_t a = (uintptr_t)p;
    pthread_mutex_lock(&range_lock);
    for (size_t i = 0; i < n_ranges; i++) {
        if (ranges[i].kind != FAKE_MEM_PHYS && a >= ranges[i].base &&
            a - ranges[i].base < ranges[i].len) {
            *out = ranges[i];
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&range_lock);
    return rc;
}

enum fake_mem_kind fake_mem_kind_of(const void *p)
{
    struct range r;
    return range_find(p, &r) == 0 ? r.kind : FAKE_MEM_PAGEABLE;
}

#define KIND_BIT(k) (1u << (k))

static CUresult mem_alloc(void **p, size_t len, enum fake_mem_kind kind)
{
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (len == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rounded = (len + 255) & ~(size_t)255;
    void *q = NULL;
    if (posix_memalign(&q, 256, rounded) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (range_add_as(q, rounded, kind, 0,
                     kind == FAKE_MEM_PINNED ? RANGE_FREE_OF_CAP : RANGE_CAPPED) != 0) {
        free(q);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *p = q;
    return CUDA_SUCCESS;
}

/* Deferred copies and memsets (fake_queue.c) may still touch memory about
 * to be freed or unmapped: run them all first. (cudaFree and cudaFreeHost
 * synchronise on a real driver too.) */
static void run_deferred(void)
{
    fake_queue_run_upto(UINT64_MAX);
}

static CUresult mem_free(void *p, unsigned kind_mask)
{
    struct range r;
    if (p == NULL)
        return CUDA_SUCCESS;
    run_deferred();
    if (range_del(p, kind_mask, &r) != 0 || r.is_registered)
        return CUDA_ERROR_INVALID_VALUE;
    free(p);
    return CUDA_SUCCESS;
}

static CUresult dev_alloc(CUdeviceptr *dptr, size_t len, enum fake_mem_kind kind)
{
    void *p = NULL;
    CUresult rc = mem_alloc(dptr ? &p : NULL, len, kind);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)p;
    return rc;
}

static const unsigned dev_kinds = KIND_BIT(FAKE_MEM_DEVICE) | KIND_BIT(FAKE_MEM_MANAGED);

/* ---- allocation exports ---- */

FAKE_API CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t len)
{
    FAKE_ENTER(cuMemAlloc_v2);
    return dev_alloc(dptr, len, FAKE_MEM_DEVICE);
}

/* cuMemFree (and so cudaFree) synchronises the device first, as the real
 * one does: a caching allocator's retry pays it for every block it frees. */
FAKE_API CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    FAKE_ENTER(cuMemFree_v2);
    if (dptr)
        fake_device_wait_idle();
    return mem_free((void *)dptr, dev_kinds);
}

FAKE_API CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                             size_t height, unsigned int elem)
{
    FAKE_ENTER(cuMemAllocPitch_v2);
    if (pitch == NULL || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (width + 511) & ~(size_t)511;
    return dev_alloc(dptr, *pitch * height, FAKE_MEM_DEVICE);
}

FAKE_API CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t len, unsigned int flags)
{
    FAKE_ENTER(cuMemAllocManaged);
    return dev_alloc(dptr, len, FAKE_MEM_MANAGED);
}

#define DEF_ALLOC_ASYNC(exp)                                                       \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr *dptr, size_t len, CUstream s)      \
    {                                                                              \
        FAKE_ENTER(exp);                                                           \
        return dev_alloc(dptr, len, FAKE_MEM_DEVICE);                              \
    }
DEF_ALLOC_ASYNC(cuMemAllocAsync)
DEF_ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define DEF_FREE_ASYNC(exp)                                                        \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr dptr, CUstream s)                    \
    {                                                                              \
        FAKE_ENTER(exp);                                                           \
        return mem_free((void *)dptr, dev_kinds);                                  \
    }
DEF_FREE_ASYNC(cuMemFreeAsync)
DEF_FREE_ASYNC(cuMemFreeAsync_ptsz)

#define DEF_ALLOC_POOL(exp)                                                                 \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr *dptr, size_t len, CUmemoryPool pool,         \
                                  CUstream s)                                               \
    {                                                                                       \
        FAKE_ENTER(exp);                                                                    \
        return dev_alloc(dptr, len, FAKE_MEM_DEVICE);                                       \
    }
DEF_ALLOC_POOL(cuMemAllocFromPoolAsync)
DEF_ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz)

FAKE_API CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t len)
{
    FAKE_ENTER(cuMemAllocHost_v2);
    return mem_alloc(pp, len, FAKE_MEM_PINNED);
}

FAKE_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t len, unsigned int flags)
{
    FAKE_ENTER(cuMemHostAlloc);
    return mem_alloc(pp, len, FAKE_MEM_PINNED);
}

FAKE_API CUresult CUDAAPI cuMemFreeHost(void *p)
{
    FAKE_ENTER(cuMemFreeHost);
    return mem_free(p, KIND_BIT(FAKE_MEM_PINNED));
}

static CUresult host_register(void *p, size_t len)
{
    struct range r;
    if (p == NULL || len == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (range_find(p, &r) == 0 || range_find((char *)p + len - 1, &r) == 0)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return range_add(p, len, FAKE_MEM_PINNED, 1) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_API CUresult CUDAAPI cuMemHostRegister(void *p, size_t len, unsigned int flags)
{
    FAKE_ENTER(cuMemHostRegister);
    return host_register(p, len);
}

FAKE_API CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t len, unsigned int flags)
{
    FAKE_ENTER(cuMemHostRegister_v2);
    return host_register(p, len);
}

FAKE_API CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    FAKE_ENTER(cuMemHostUnregister);
    struct range r;
    if (range_find(p, &r) != 0 || !r.is_registered || r.base != (uintptr_t)p)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    run_deferred();
    range_del(p, KIND_BIT(FAKE_MEM_PINNED), &r);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    FAKE_ENTER(cuMemGetInfo_v2);
    if (free_bytes == NULL || total_bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t used = atomic_load(&used_bytes);
    *total_bytes = fake_cfg.total_mem_bytes;
    *free_bytes = used < fake_cfg.total_mem_bytes ? fake_cfg.total_mem_bytes - used : 0;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attr,
                                                CUdeviceptr ptr)
{
    FAKE_ENTER(cuPointerGetAttribute);
    struct range r;
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (range_find((void *)ptr, &r) != 0)
        return CUDA_ERROR_INVALID_VALUE; /* pageable host memory is unknown to the driver */
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data =
            r.kind == FAKE_MEM_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data = r.kind == FAKE_MEM_DEVICE ? NULL : (void *)ptr;
        return r.kind == FAKE_MEM_DEVICE ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = r.kind == FAKE_MEM_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = r.base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = r.len;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- virtual memory management: memfd-backed handles mapped with MAP_FIXED ---- */

/* A physical allocation: its bytes count against the device's capacity
 * from cuMemCreate to cuMemRelease, mapped or not (what expandable
 * segments hold). */
struct vmm_handle {
    int fd;
    size_t len;
};

FAKE_API CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t len, size_t align,
                                              CUdeviceptr addr, unsigned long long flags)
{
    FAKE_ENTER(cuMemAddressReserve);
    if (ptr == NULL || len == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap((void *)addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                   0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t len)
{
    FAKE_ENTER(cuMemAddressFree);
    run_deferred();
    return munmap((void *)ptr, len) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_API CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t len,
                                      const CUmemAllocationProp *prop, unsigned long long flags)
{
    FAKE_ENTER(cuMemCreate);
    if (handle == NULL || len == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmm_handle *h = malloc(sizeof *h);
    if (h == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->len = len;
    h->fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
    if (h->fd < 0 || ftruncate(h->fd, (off_t)len) != 0 ||
        range_add_as(h, len, FAKE_MEM_PHYS, 1, RANGE_CAPPED) != 0) {
        if (h->fd >= 0)
            close(h->fd);
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    FAKE_ENTER(cuMemRelease);
    struct vmm_handle *h = (struct vmm_handle *)(uintptr_t)handle;
    struct range r;
    if (h == NULL || range_del(h, KIND_BIT(FAKE_MEM_PHYS), &r) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    close(h->fd);
    free(h);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t len, size_t offset,
                                   CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    FAKE_ENTER(cuMemMap);
    struct vmm_handle *h = (struct vmm_handle *)(uintptr_t)handle;
    if (h == NULL || offset + len > h->len)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap((void *)ptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, h->fd,
                   (off_t)offset);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return range_add_as(p, len, FAKE_MEM_DEVICE, 1, RANGE_UNCOUNTED) == 0
               ? CUDA_SUCCESS
               : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_API CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t len)
{
    FAKE_ENTER(cuMemUnmap);
    struct range r;
    run_deferred();
    if (range_del((void *)ptr, KIND_BIT(FAKE_MEM_DEVICE), &r) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    mmap((void *)ptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
         0);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t len,
                                         const CUmemAccessDesc *desc, size_t count)
{
    FAKE_ENTER(cuMemSetAccess);
    return desc && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- copy and memset engines ---- */

static int is_dev(enum fake_mem_kind k)
{
    return k == FAKE_MEM_DEVICE || k == FAKE_MEM_MANAGED;
}

/* Direction and pinnedness of a copy between dst and src. */
static enum fake_dir copy_dir(void *dst, const void *src, enum fake_dir hint, int *is_pinned)
{
    enum fake_mem_kind kd = fake_mem_kind_of(dst), ks = fake_mem_kind_of(src);
    enum fake_dir d = hint;
    if (d == FAKE_DIR_N)
        d = is_dev(ks) ? (is_dev(kd) ? FAKE_DIR_DTOD : FAKE_DIR_DTOH)
                       : (is_dev(kd) ? FAKE_DIR_HTOD : FAKE_DIR_HTOH);
    *is_pinned = d == FAKE_DIR_HTOD   ? ks == FAKE_MEM_PINNED
                 : d == FAKE_DIR_DTOH ? kd == FAKE_MEM_PINNED
                                      : 0;
    return d;
}

static uint64_t xfer_ns(enum fake_dir d, int is_pinned, uint64_t len)
{
    double bps = d == FAKE_DIR_DTOD ? fake_cfg.d2d_bps
                 : is_pinned        ? fake_cfg.pinned_bps
                                    : fake_cfg.pageable_bps;
    return (uint64_t)((double)len * 1e9 / bps);
}

static void node_exec_memset(const struct fake_node *n)
{
    size_t count = n->len_bytes / n->elem_size;
    if (n->elem_size == 1) {
        memset(n->dst, (int)(n->value & 0xff), count);
    } else if (n->elem_size == 2) {
        uint16_t *p = n->dst;
        for (size_t i = 0; i < count; i++)
            p[i] = (uint16_t)n->value;
    } else {
        uint32_t *p = n->dst;
        for (size_t i = 0; i < count; i++)
            p[i] = n->value;
    }
}

void fake_node_exec(const struct fake_node *n)
{
    if (n->kind == FAKE_NODE_COPY)
        memmove(n->dst, n->src, n->len_bytes);
    else if (n->kind == FAKE_NODE_MEMSET)
        node_exec_memset(n);
}

/* Work a real GPU does with no CPU time on the host: a copy whose host side
 * is pinned, a device-to-device copy, a memset. Issued asynchronously (or
 * by a graph), the fake defers its bytes too (SIM). */
static int is_dma(const struct fake_node *n)
{
    return n->kind == FAKE_NODE_MEMSET ||
           (n->kind == FAKE_NODE_COPY && (n->dir == FAKE_DIR_DTOD || n->host_is_pinned));
}

static uint64_t node_dur_ns(const struct fake_node *n)
{
    if (n->kind == FAKE_NODE_KERNEL)
        return n->work_ns;
    if (n->kind == FAKE_NODE_MEMSET)
        return (uint64_t)((double)n->len_bytes * 1e9 / fake_cfg.d2d_bps);
    return xfer_ns(n->dir, n->host_is_pinned, n->len_bytes);
}

/* Issues a node on s. A copy or memset that may be deferred is queued
 * (fake_queue.c); any other moves its bytes now, after the deferred work it
 * follows. SIM: one the host waits for (is_blocking) sleeps until the
 * stream reaches its end. */
static void node_run(struct CUstream_st *s, const struct fake_node *n, int is_blocking,
                     int may_defer)
{
    if (n->kind == FAKE_NODE_KERNEL) {
        fake_tally_launch(n->kernel, 1);
    } else if (!may_defer || fake_queue_push(s, n) != 0) {
        fake_queue_run_upto(fake_stream_deps(s));
        fake_node_exec(n);
    }
    uint64_t dur = node_dur_ns(n), end = fake_stream_enqueue(s, dur);
    fake_act_note(s,
                  n->kind == FAKE_NODE_KERNEL ? FAKECUDA_ACT_KERNEL
                  : n->kind == FAKE_NODE_COPY ? FAKECUDA_ACT_COPY
                                              : FAKECUDA_ACT_MEMSET,
                  n->kind == FAKE_NODE_KERNEL ? fake_tally_name_str(n->kernel) : NULL,
                  n->kind == FAKE_NODE_KERNEL ? 0 : n->len_bytes,
                  (int)n->dir | (n->kind == FAKE_NODE_COPY && !n->host_is_pinned ? 0x100 : 0),
                  end, dur);
    if (is_blocking && end)
        fake_sleep_until_ns(end);
}

void fake_node_run(struct CUstream_st *s, const struct fake_node *n)
{
    node_run(s, n, 0, is_dma(n));
}

/* Captured work becomes a graph node; otherwise it is issued now. Pageable
 * copies block the host like synchronous ones, as the real driver does;
 * asynchronous DMA work is deferred. */
static CUresult submit(struct CUstream_st *s, const struct fake_node *n, int is_async)
{
    if (s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s->capture) {
        if (!is_async)
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        return fake_graph_add(s->capture, n) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    int is_blocking = !is_async || (n->kind == FAKE_NODE_COPY && n->dir != FAKE_DIR_DTOD &&
                                    !n->host_is_pinned);
    node_run(s, n, is_blocking, is_async && is_dma(n));
    return CUDA_SUCCESS;
}

CUresult fake_copy(struct CUstream_st *s, void *dst, const void *src, size_t len,
                   enum fake_dir dir, int is_async)
{
    if (len == 0)
        return CUDA_SUCCESS;
    if (dst == NULL || src == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_node n = {.kind = FAKE_NODE_COPY, .dst = dst, .src = src, .len_bytes = len};
    n.dir = copy_dir(dst, src, dir, &n.host_is_pinned);
    fake_tally_copy(n.dir, len, n.host_is_pinned);
    return submit(s, &n, is_async);
}

CUresult fake_memset(struct CUstream_st *s, void *dst, uint32_t value, unsigned int elem_size,
                     size_t count, int is_async)
{
    if (count == 0)
        return CUDA_SUCCESS;
    if (dst == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_node n = {.kind = FAKE_NODE_MEMSET, .dst = dst, .value = value,
                          .elem_size = elem_size, .len_bytes = count * elem_size};
    fake_tally_memset(n.len_bytes);
    return submit(s, &n, is_async);
}

/* 2D: one node per row, tallied as one copy. */
static CUresult copy_2d(struct CUstream_st *s, const CUDA_MEMCPY2D *p, int is_async)
{
    if (p == NULL || p->srcMemoryType == CU_MEMORYTYPE_ARRAY ||
        p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        return p == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    const char *src = p->srcMemoryType == CU_MEMORYTYPE_HOST ? p->srcHost : (void *)p->srcDevice;
    char *dst = p->dstMemoryType == CU_MEMORYTYPE_HOST ? p->dstHost : (void *)p->dstDevice;
    if (src == NULL || dst == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    src += p->srcY * p->srcPitch + p->srcXInBytes;
    dst += p->dstY * p->dstPitch + p->dstXInBytes;
    struct fake_node n = {.kind = FAKE_NODE_COPY, .len_bytes = p->WidthInBytes};
    n.dir = copy_dir(dst, src, FAKE_DIR_N, &n.host_is_pinned);
    fake_tally_copy(n.dir, (uint64_t)p->WidthInBytes * p->Height, n.host_is_pinned);
    CUresult rc = CUDA_SUCCESS;
    fake_act_begin();
    for (size_t y = 0; y < p->Height && rc == CUDA_SUCCESS; y++) {
        n.src = src + y * p->srcPitch;
        n.dst = dst + y * p->dstPitch;
        rc = submit(s, &n, is_async);
    }
    fake_act_end();
    return rc;
}

/* 3D: each layer is a 2D copy (arrays unsupported). */
static CUresult copy_3d(struct CUstream_st *s, const CUDA_MEMCPY3D *p, int is_async)
{
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_act_begin();
    for (size_t z = 0; z < p->Depth; z++) {
        CUDA_MEMCPY2D l = {
            .srcXInBytes = p->srcXInBytes, .srcY = p->srcY + (p->srcZ + z) * p->srcHeight,
            .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost, .srcDevice = p->srcDevice,
            .srcPitch = p->srcPitch, .dstXInBytes = p->dstXInBytes,
            .dstY = p->dstY + (p->dstZ + z) * p->dstHeight, .dstMemoryType = p->dstMemoryType,
            .dstHost = p->dstHost, .dstDevice = p->dstDevice, .dstPitch = p->dstPitch,
            .WidthInBytes = p->WidthInBytes, .Height = p->Height};
        CUresult rc = copy_2d(s, &l, is_async);
        if (rc != CUDA_SUCCESS) {
            fake_act_end();
            return rc;
        }
    }
    fake_act_end();
    return CUDA_SUCCESS;
}

#define STREAM(s, pt) fake_stream_resolve((s), (pt))

/* ---- copy exports ---- */

#define DEF_HTOD_ASYNC(exp, pt)                                                               \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr d, const void *src, size_t n, CUstream s)       \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(s, pt), (void *)d, src, n, FAKE_DIR_HTOD, 1);                 \
    }
DEF_HTOD_ASYNC(cuMemcpyHtoDAsync_v2, 0)
DEF_HTOD_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, 1)

#define DEF_DTOH_ASYNC(exp, pt)                                                               \
    FAKE_API CUresult CUDAAPI exp(void *dst, CUdeviceptr src, size_t n, CUstream s)           \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(s, pt), dst, (void *)src, n, FAKE_DIR_DTOH, 1);               \
    }
DEF_DTOH_ASYNC(cuMemcpyDtoHAsync_v2, 0)
DEF_DTOH_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, 1)

#define DEF_DTOD_ASYNC(exp, pt)                                                               \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)     \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(s, pt), (void *)dst, (void *)src, n, FAKE_DIR_DTOD, 1);       \
    }
DEF_DTOD_ASYNC(cuMemcpyDtoDAsync_v2, 0)
DEF_DTOD_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, 1)

#define DEF_UNIFIED_ASYNC(exp, pt)                                                            \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)     \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(s, pt), (void *)dst, (void *)src, n, FAKE_DIR_N, 1);          \
    }
DEF_UNIFIED_ASYNC(cuMemcpyAsync, 0)
DEF_UNIFIED_ASYNC(cuMemcpyAsync_ptsz, 1)

#define DEF_PEER_ASYNC(exp, pt)                                                               \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,           \
                                  CUcontext sctx, size_t n, CUstream s)                       \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(s, pt), (void *)dst, (void *)src, n, FAKE_DIR_DTOD, 1);       \
    }
DEF_PEER_ASYNC(cuMemcpyPeerAsync, 0)
DEF_PEER_ASYNC(cuMemcpyPeerAsync_ptsz, 1)

#define DEF_2D_ASYNC(exp, pt)                                                                 \
    FAKE_API CUresult CUDAAPI exp(const CUDA_MEMCPY2D *p, CUstream s)                         \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return copy_2d(STREAM(s, pt), p, 1);                                                  \
    }
DEF_2D_ASYNC(cuMemcpy2DAsync_v2, 0)
DEF_2D_ASYNC(cuMemcpy2DAsync_v2_ptsz, 1)

#define DEF_3D_ASYNC(exp, pt)                                                                 \
    FAKE_API CUresult CUDAAPI exp(const CUDA_MEMCPY3D *p, CUstream s)                         \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return copy_3d(STREAM(s, pt), p, 1);                                                  \
    }
DEF_3D_ASYNC(cuMemcpy3DAsync_v2, 0)
DEF_3D_ASYNC(cuMemcpy3DAsync_v2_ptsz, 1)

static CUresult copy_batch(struct CUstream_st *s, CUdeviceptr *dsts, CUdeviceptr *srcs,
                           size_t *sizes, size_t count, size_t *fail_idx)
{
    if (dsts == NULL || srcs == NULL || sizes == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        CUresult rc = fake_copy(s, (void *)dsts[i], (void *)srcs[i], sizes[i], FAKE_DIR_N, 1);
        if (rc != CUDA_SUCCESS) {
            if (fail_idx)
                *fail_idx = i;
            return rc;
        }
    }
    if (fail_idx)
        *fail_idx = SIZE_MAX;
    return CUDA_SUCCESS;
}

#define DEF_BATCH_V1(exp, pt)                                                                 \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,        \
                                  size_t count, CUmemcpyAttributes *attrs, size_t *attr_idxs, \
                                  size_t n_attrs, size_t *fail_idx, CUstream s)               \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return copy_batch(STREAM(s, pt), dsts, srcs, sizes, count, fail_idx);                 \
    }
DEF_BATCH_V1(cuMemcpyBatchAsync, 0)
DEF_BATCH_V1(cuMemcpyBatchAsync_ptsz, 1)

#define DEF_BATCH_V2(exp, pt)                                                                 \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,        \
                                  size_t count, CUmemcpyAttributes *attrs, size_t *attr_idxs, \
                                  size_t n_attrs, CUstream s)                                 \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return copy_batch(STREAM(s, pt), dsts, srcs, sizes, count, NULL);                     \
    }
DEF_BATCH_V2(cuMemcpyBatchAsync_v2, 0)
DEF_BATCH_V2(cuMemcpyBatchAsync_v2_ptsz, 1)

#define DEF_HTOD(exp, pt)                                                                     \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr d, const void *src, size_t n)                   \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(NULL, pt), (void *)d, src, n, FAKE_DIR_HTOD, 0);              \
    }
DEF_HTOD(cuMemcpyHtoD_v2, 0)
DEF_HTOD(cuMemcpyHtoD_v2_ptds, 1)

#define DEF_DTOH(exp, pt)                                                                     \
    FAKE_API CUresult CUDAAPI exp(void *dst, CUdeviceptr src, size_t n)                       \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(NULL, pt), dst, (void *)src, n, FAKE_DIR_DTOH, 0);            \
    }
DEF_DTOH(cuMemcpyDtoH_v2, 0)
DEF_DTOH(cuMemcpyDtoH_v2_ptds, 1)

#define DEF_DTOD(exp, pt)                                                                     \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr dst, CUdeviceptr src, size_t n)                 \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(NULL, pt), (void *)dst, (void *)src, n, FAKE_DIR_DTOD, 0);    \
    }
DEF_DTOD(cuMemcpyDtoD_v2, 0)
DEF_DTOD(cuMemcpyDtoD_v2_ptds, 1)

#define DEF_UNIFIED(exp, pt)                                                                  \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr dst, CUdeviceptr src, size_t n)                 \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(NULL, pt), (void *)dst, (void *)src, n, FAKE_DIR_N, 0);       \
    }
DEF_UNIFIED(cuMemcpy, 0)
DEF_UNIFIED(cuMemcpy_ptds, 1)

#define DEF_PEER(exp, pt)                                                                     \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,           \
                                  CUcontext sctx, size_t n)                                   \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_copy(STREAM(NULL, pt), (void *)dst, (void *)src, n, FAKE_DIR_DTOD, 0);    \
    }
DEF_PEER(cuMemcpyPeer, 0)
DEF_PEER(cuMemcpyPeer_ptds, 1)

#define DEF_2D(exp, pt)                                                                       \
    FAKE_API CUresult CUDAAPI exp(const CUDA_MEMCPY2D *p)                                     \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return copy_2d(STREAM(NULL, pt), p, 0);                                               \
    }
DEF_2D(cuMemcpy2D_v2, 0)
DEF_2D(cuMemcpy2D_v2_ptds, 1)

#define DEF_3D(exp, pt)                                                                       \
    FAKE_API CUresult CUDAAPI exp(const CUDA_MEMCPY3D *p)                                     \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return copy_3d(STREAM(NULL, pt), p, 0);                                               \
    }
DEF_3D(cuMemcpy3D_v2, 0)
DEF_3D(cuMemcpy3D_v2_ptds, 1)

/* ---- memset exports ---- */

#define DEF_MEMSET(exp, type, size, pt)                                                       \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr d, type v, size_t n)                            \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_memset(STREAM(NULL, pt), (void *)d, v, size, n, 0);                       \
    }
DEF_MEMSET(cuMemsetD8_v2, unsigned char, 1, 0)
DEF_MEMSET(cuMemsetD8_v2_ptds, unsigned char, 1, 1)
DEF_MEMSET(cuMemsetD16_v2, unsigned short, 2, 0)
DEF_MEMSET(cuMemsetD16_v2_ptds, unsigned short, 2, 1)
DEF_MEMSET(cuMemsetD32_v2, unsigned int, 4, 0)
DEF_MEMSET(cuMemsetD32_v2_ptds, unsigned int, 4, 1)

#define DEF_MEMSET_ASYNC(exp, type, size, pt)                                                 \
    FAKE_API CUresult CUDAAPI exp(CUdeviceptr d, type v, size_t n, CUstream s)                \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return fake_memset(STREAM(s, pt), (void *)d, v, size, n, 1);                          \
    }
DEF_MEMSET_ASYNC(cuMemsetD8Async, unsigned char, 1, 0)
DEF_MEMSET_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, 1)
DEF_MEMSET_ASYNC(cuMemsetD16Async, unsigned short, 2, 0)
DEF_MEMSET_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, 1)
DEF_MEMSET_ASYNC(cuMemsetD32Async, unsigned int, 4, 0)
DEF_MEMSET_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, 1)

/* ---- pre-3.2 exports with 32-bit device pointers: exported so that version
 * resolution and dladdr see them, but a 64-bit host pointer does not fit ---- */

#define DEF_V1(exp, params)                                                                   \
    FAKE_API CUresult CUDAAPI exp params                                                      \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return CUDA_ERROR_NOT_SUPPORTED;                                                      \
    }
DEF_V1(cuMemGetInfo, (unsigned int *free_bytes, unsigned int *total_bytes))
DEF_V1(cuMemAlloc, (CUdeviceptr_v1 * dptr, unsigned int len))
DEF_V1(cuMemFree, (CUdeviceptr_v1 dptr))
DEF_V1(cuMemAllocPitch, (CUdeviceptr_v1 * dptr, unsigned int *pitch, unsigned int w,
                         unsigned int h, unsigned int elem))
DEF_V1(cuMemAllocHost, (void **pp, unsigned int len))
DEF_V1(cuMemcpyHtoD, (CUdeviceptr_v1 d, const void *src, unsigned int n))
DEF_V1(cuMemcpyDtoH, (void *dst, CUdeviceptr_v1 src, unsigned int n))
DEF_V1(cuMemcpyDtoD, (CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n))
DEF_V1(cuMemcpyHtoDAsync, (CUdeviceptr_v1 d, const void *src, unsigned int n, CUstream s))
DEF_V1(cuMemcpyDtoHAsync, (void *dst, CUdeviceptr_v1 src, unsigned int n, CUstream s))
DEF_V1(cuMemcpyDtoDAsync, (CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n, CUstream s))
DEF_V1(cuMemcpy2D, (const CUDA_MEMCPY2D_v1 *p))
DEF_V1(cuMemcpy3D, (const CUDA_MEMCPY3D_v1 *p))
DEF_V1(cuMemcpy2DAsync, (const CUDA_MEMCPY2D_v1 *p, CUstream s))
DEF_V1(cuMemcpy3DAsync, (const CUDA_MEMCPY3D_v1 *p, CUstream s))
DEF_V1(cuMemsetD8, (CUdeviceptr_v1 d, unsigned char v, unsigned int n))
DEF_V1(cuMemsetD16, (CUdeviceptr_v1 d, unsigned short v, unsigned int n))
DEF_V1(cuMemsetD32, (CUdeviceptr_v1 d, unsigned int v, unsigned int n))
