/* pe_ring.c: per-CPU perf_event ring buffers (map, drain, unmap).
 * Owns the mmap'd pages and the read position (data_tail). Decoding the
 * records is pe_decode.c's job; merging rings by time is host.c's. */
#include "pe_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int pe_ring_open(struct pe_ring *r, int fd, unsigned pages)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    memset(r, 0, sizeof(*r));
    r->fd = fd;
    if (pages == 0 || (pages & (pages - 1)) != 0)
        return -EINVAL;
    r->map_bytes = (pages + 1) * page;
    r->base = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r->base == MAP_FAILED) {
        r->base = NULL;
        return -errno;
    }
    r->data_size = (uint64_t)pages * page;
    return 0;
}

static struct perf_event_mmap_page *meta(const struct pe_ring *r)
{
    return (struct perf_event_mmap_page *)r->base;
}

void pe_ring_begin(struct pe_ring *r)
{
    r->head = __atomic_load_n(&meta(r)->data_head, __ATOMIC_ACQUIRE);
}

uint64_t pe_ring_pending(const struct pe_ring *r)
{
    return __atomic_load_n(&meta(r)->data_head, __ATOMIC_ACQUIRE) - r->tail;
}

/* Copy a record that runs past the end of the data area into r->copy. */
static const struct perf_event_header *copy_wrapped(struct pe_ring *r, const uint8_t *data,
                                                    uint64_t off, size_t size)
{
    size_t first = (size_t)(r->data_size - off);

    if (r->copy_bytes < size) {
        uint8_t *p = realloc(r->copy, size);

        if (!p)
            return NULL;
        r->copy = p;
        r->copy_bytes = size;
    }
    memcpy(r->copy, data + off, first);
    memcpy(r->copy + first, data, size - first);
    return (const struct perf_event_header *)r->copy;
}

const struct perf_event_header *pe_ring_next(struct pe_ring *r)
{
    const uint8_t *data = (const uint8_t *)r->base + meta(r)->data_offset;
    const struct perf_event_header *h;
    uint64_t off;

    if (r->tail >= r->head)
        return NULL;
    off = r->tail & (r->data_size - 1);
    /* Records are 8-byte aligned, so the header itself never wraps. */
    h = (const struct perf_event_header *)(data + off);
    if (h->size < sizeof(*h) || h->size > r->head - r->tail) {
        r->tail = r->head; /* torn ring: resynchronise on the next snapshot */
        return NULL;
    }
    r->tail += h->size;
    if (off + h->size > r->data_size)
        return copy_wrapped(r, data, off, h->size);
    return h;
}

void pe_ring_end(struct pe_ring *r)
{
    __atomic_store_n(&meta(r)->data_tail, r->tail, __ATOMIC_RELEASE);
}

void pe_ring_close(struct pe_ring *r)
{
    if (r->base)
        munmap(r->base, r->map_bytes);
    r->base = NULL;
    free(r->copy);
    r->copy = NULL;
    r->copy_bytes = 0;
}
