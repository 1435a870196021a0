/* pe_ring.h: one mmap'ed perf_event ring (map, drain, unmap).
 * Owns the mapped pages and the read position (data_tail); what the records
 * mean is pe_decode.c's business.
 * Usage: pe_ring_open -> loop { pe_ring_begin; while ((h = pe_ring_next(r)))
 *        ...; pe_ring_end } -> pe_ring_close */
#ifndef CUDASPY_SAMPLER_PE_RING_H
#define CUDASPY_SAMPLER_PE_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct pe_ring {
    int fd;               /* the leader event; not owned (closed by its owner) */
    void *base;           /* metadata page then data pages; NULL = closed */
    size_t map_bytes;
    uint64_t data_size;   /* bytes of data area, a power of two */
    uint64_t head;        /* data_head read at pe_ring_begin */
    uint64_t tail;        /* our read position, published at pe_ring_end */
    uint8_t *copy;        /* a record that wraps the end is copied here */
    size_t copy_bytes;
};

/** Map @p pages data pages (a power of two) of @p fd's ring.
 * @return 0, -EINVAL (pages not a power of two), -ENOMEM or -errno of mmap */
int pe_ring_open(struct pe_ring *r, int fd, unsigned pages);

/** Snapshot data_head (acquire). */
void pe_ring_begin(struct pe_ring *r);

/** Next record up to the snapshot, or NULL. Borrowed until the next call
 * or pe_ring_end(); a record straddling the end is returned from a copy. */
const struct perf_event_header *pe_ring_next(struct pe_ring *r);

/** Publish the read position (release): the kernel may reuse the space. */
void pe_ring_end(struct pe_ring *r);

/** Bytes written but not yet consumed. */
uint64_t pe_ring_pending(const struct pe_ring *r);

/** Unmap; idempotent. */
void pe_ring_close(struct pe_ring *r);

#endif
