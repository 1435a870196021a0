/* model/callstore.h: the model's CUDA calls in compact blocks with random
 * access (issue 36 point 4: 200 M calls are 8 GB as struct m_call, about
 * 1.6 GB here). Call i is row i % CALLSTORE_BLOCK of block i /
 * CALLSTORE_BLOCK; a block keeps each field's smallest value and the bits
 * its rows need above it, so any call, or any one field of it, comes back
 * with a few loads and shifts, without decoding its neighbours. */
#ifndef CUDASPY_ANALYZER_CALLSTORE_H
#define CUDASPY_ANALYZER_CALLSTORE_H

#include <stdint.h>
#include <string.h>

#include "model/mcall.h"

#define CALLSTORE_BLOCK 64
#define CALLSTORE_CHUNK_SHIFT 26 /* rows are kept in 64 MiB chunks */

/* A block's columns, in the order of their bits within a row: the stream
 * and the kind (api, variant, dir and flags) as indexes in tables of the
 * distinct values, a few in any run; then what loading keeps beside a call
 * (its seq, its stack id: zero, and no bits, once used). */
enum { CSC_ENTER, CSC_DUR, CSC_BON, CSC_STREAM, CSC_THR, CSC_KIND, CSC_SEQ, CSC_STACK, CSC_N };

struct callstore_blk {
    uint64_t off;          /* byte offset of its rows */
    uint64_t base64[3];    /* the smallest enter time, duration, bytes_or_name */
    uint32_t base32[5];    /* the smallest stream index, thr, kind index, seq, stack */
    uint16_t row;          /* bits a row takes (up to 320) */
    uint8_t w[CSC_N];      /* bits a column takes in a row */
    uint8_t seq_rel;       /* 1: the seq column holds seq less the row */
    uint8_t pad;
};
_Static_assert(sizeof(struct callstore_blk) == 64, "a block's header is a cache line");

/* A block not yet full: its calls as they are set. */
struct callstore_pend {
    uint32_t filled;
    uint32_t seq[CALLSTORE_BLOCK], stack[CALLSTORE_BLOCK];
    struct m_call c[CALLSTORE_BLOCK];
};

/* Distinct values by index, and the model's map to find one's index; the
 * values seen last, by a few bits of their hash, spare most calls the map. */
#define CALLSTORE_RECENT 64
struct m_hash;
struct callstore_dict {
    uint64_t *v;
    size_t n, cap;
    struct m_hash *ix;     /* value -> index */
    uint64_t recent_v[CALLSTORE_RECENT];  /* value + 1: 0 is an empty slot */
    uint32_t recent_i[CALLSTORE_RECENT];
};

struct callstore {
    uint8_t **chunk;       /* nchunk of 1 << CALLSTORE_CHUNK_SHIFT bytes */
    size_t nchunk, capchunk;
    struct callstore_blk *blk; /* nblk, by call index / CALLSTORE_BLOCK */
    struct callstore_pend **pend; /* nblk: a block's calls until it is full */
    size_t nblk;
    struct callstore_dict stream, kind; /* kind: api | variant << 11 | dir << 13 | flags << 16 */
    uint64_t n;            /* calls */
    uint64_t used;         /* bytes of rows written */
};

/** An empty store. */
void callstore_init(struct callstore *s);

/** Make room for @p n calls, to be set in any order. @return 0 or -ENOMEM */
int callstore_open(struct callstore *s, uint64_t n);

/** Set call @p i (< n, once) and what is kept beside it. A block is encoded
 * when its last call is set. @return 0 or -ENOMEM (then the store is of no
 * further use: free it) */
int callstore_set(struct callstore *s, uint64_t i, const struct m_call *c, uint32_t seq,
                  uint32_t stack);

/** Encode the blocks with calls never set (as zeroed calls). Calls can be
 * read once the store is closed. @return 0 or -ENOMEM */
int callstore_close(struct callstore *s);

/** Free what the store holds; it is empty again. */
void callstore_free(struct callstore *s);

/** The bytes the store holds (rows, block headers, the tables). */
uint64_t callstore_bytes(const struct callstore *s);

extern const uint64_t callstore_mask[65]; /* [w]: the low w bits */

/* Bits [pos, pos + w) of @p p (w <= 64), little-endian, without a branch
 * (which of a row's fields cross a word is as good as random); rows are
 * followed by at least 16 readable bytes. */
static inline uint64_t callstore_bits(const uint8_t *p, uint64_t pos, unsigned w)
{
    uint64_t lo, hi;
    unsigned sh = (unsigned)(pos & 7);

    memcpy(&lo, p + (pos >> 3), 8);
    if (w <= 57) /* within the first word: a column's width is its block's, a branch rarely missed */
        return (lo >> sh) & callstore_mask[w];
    memcpy(&hi, p + (pos >> 3) + 8, 8);
    return ((lo >> sh) | ((hi << 1) << (63 - sh))) & callstore_mask[w];
}

static inline const uint8_t *callstore_rows(const struct callstore *s,
                                            const struct callstore_blk *b)
{
    return s->chunk[b->off >> CALLSTORE_CHUNK_SHIFT] +
           (b->off & ((1ull << CALLSTORE_CHUNK_SHIFT) - 1));
}

/** Call @p i (< s->n) of a closed store. */
static inline void callstore_get(const struct callstore *s, uint64_t i, struct m_call *c)
{
    const struct callstore_blk *b = &s->blk[i / CALLSTORE_BLOCK];
    const uint8_t *p;
    uint64_t pos;
    uint64_t k;

    p = callstore_rows(s, b);
    pos = (i % CALLSTORE_BLOCK) * b->row;
    c->t_enter_ns = b->base64[0] + callstore_bits(p, pos, b->w[CSC_ENTER]);
    pos += b->w[CSC_ENTER];
    c->t_exit_ns = c->t_enter_ns + b->base64[1] + callstore_bits(p, pos, b->w[CSC_DUR]);
    pos += b->w[CSC_DUR];
    c->bytes_or_name = b->base64[2] + callstore_bits(p, pos, b->w[CSC_BON]);
    pos += b->w[CSC_BON];
    c->stream = s->stream.v[b->base32[0] + callstore_bits(p, pos, b->w[CSC_STREAM])];
    pos += b->w[CSC_STREAM];
    c->thr = b->base32[1] + (uint32_t)callstore_bits(p, pos, b->w[CSC_THR]);
    pos += b->w[CSC_THR];
    k = s->kind.v[b->base32[2] + callstore_bits(p, pos, b->w[CSC_KIND])];
    c->api = k & 0x7ff, c->variant = (k >> 11) & 3, c->dir = (k >> 13) & 7;
    c->flags = (uint16_t)(k >> 16);
}

/** Call @p i's seq or stack id (@p col CSC_SEQ or CSC_STACK). */
uint32_t callstore_kept(const struct callstore *s, uint64_t i, int col);

/** Call @p i's t_enter_ns alone. */
static inline uint64_t callstore_enter(const struct callstore *s, uint64_t i)
{
    const struct callstore_blk *b = &s->blk[i / CALLSTORE_BLOCK];

    return b->base64[0] +
           callstore_bits(callstore_rows(s, b), (i % CALLSTORE_BLOCK) * b->row, b->w[CSC_ENTER]);
}

#endif
