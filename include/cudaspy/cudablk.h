/* cudablk.h: the compact encoding of a cuda_blk block (run-file format 2),
 * shared by the writer (cs_store) and the reader (cs_cursor) in
 * store/runfile_*.c, and by the tests and the fuzz target of the decoder.
 * A compact block is a struct cs_blk_hdr with CS_BF_COMPACT in flags, a
 * CRC32C and varint-coded records, each delta-coded against the previous
 * record of its thread in the block; docs/format.md ("Compact CUDA blocks")
 * is the byte-exact description. Encoding is lossless: every byte of every
 * struct cs_rec_cuda comes back. */
#ifndef CUDASPY_CUDABLK_H
#define CUDASPY_CUDABLK_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "record.h"

/* cs_blk_hdr.flags: the body is the compact encoding (CUDA blocks only) */
#define CS_BF_COMPACT 0x100u
/* records in one compact block at most (decoded: 768 KiB) */
#define CS_CUDABLK_MAX_RECS 8192u
/* distinct (pid, tid) pairs in one compact block at most */
#define CS_CUDABLK_MAX_THREADS 256u
/* bytes before the records: the header and the CRC32C */
#define CS_CUDABLK_PREFIX (sizeof(struct cs_blk_hdr) + 4u)

/* Mask bits of one record: which optional fields follow (docs/format.md). */
enum cs_cudablk_bit {
    CS_CB_THREAD = 1u << 0,  /* thread index (and a new thread's pid, tid) */
    CS_CB_PARENT = 1u << 1,  /* parent_seq != 0 */
    CS_CB_API = 1u << 2,     /* api differs from the thread's previous record */
    CS_CB_FLAGS = 1u << 3,   /* flags differ */
    CS_CB_NAME = 1u << 4,    /* name_id differs */
    CS_CB_GRID = 1u << 5,    /* grid[3] differs */
    CS_CB_BLOCK = 1u << 6,   /* block[3] differs */
    CS_CB_BYTES = 1u << 7,   /* bytes differ */
    CS_CB_STREAM = 1u << 8,  /* stream differs */
    CS_CB_AUX = 1u << 9,     /* aux differs */
    CS_CB_RESULT = 1u << 10, /* result differs */
    CS_CB_DEVICE = 1u << 11, /* device differs */
    CS_CB_VARDIR = 1u << 12, /* variant or dir differs */
    CS_CB_STACK = 1u << 13,  /* stack_id differs */
    CS_CB_DRV_API = 1u << 14, /* drv_api differs */
    CS_CB_ALL = (1u << 15) - 1
};

/** CRC32C (Castagnoli, reflected, init and final xor 0xffffffff) of
 * @p len bytes, continuing @p crc (0 to start). */
uint32_t cs_crc32c(uint32_t crc, const void *p, size_t len);

/** Encode records from @p recs as one compact block value into @p out.
 * @param h    header to store: ts_first_ns, ts_last_ns, pid and flags are
 *             kept; n, kind, rec_size and CS_BF_COMPACT are set here
 * @param n    records offered; the block takes as many as fit in @p cap,
 *             CS_CUDABLK_MAX_RECS and CS_CUDABLK_MAX_THREADS threads
 * @param len  out: the value's bytes
 * @return the records taken (>= 1), or -ENOSPC when @p cap holds none,
 *         -EINVAL when @p n is 0 */
int cs_cudablk_encode(const struct cs_blk_hdr *h, const struct cs_rec_cuda *recs, uint32_t n,
                      uint8_t *out, size_t cap, size_t *len);

/** Check and decode the compact block value @p v of @p len bytes into
 * @p out, which holds CS_CUDABLK_MAX_RECS records (or at least the header's
 * n). The header is read unaligned from @p v.
 * @param why  out on failure: static text saying what is wrong
 * @param at   out on failure: byte offset in the value where it was found
 * @return the record count, or CS_E_CORRUPT (bad CRC, bad varint, a field
 *         out of range, a thread index never defined, too few or too many
 *         bytes for the header's n) */
int cs_cudablk_decode(const void *v, size_t len, struct cs_rec_cuda *out, const char **why,
                      size_t *at);

#endif
