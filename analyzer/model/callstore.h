/* model/callstore.h: the model's CUDA calls in compact blocks, read back
 * through cursors (issue 36 point 4: 200 M calls are 8 GB as struct m_call,
 * about 1.5 GB here). Calls keep their model index: block i / CALLSTORE_BLOCK
 * holds call i, each call delta-coded against the one before it in its
 * block, so a cursor decodes one block to reach any call, and a pass in
 * index order decodes each block once. */
#ifndef CUDASPY_ANALYZER_CALLSTORE_H
#define CUDASPY_ANALYZER_CALLSTORE_H

#include <stdint.h>

#include "model.h"

#define CALLSTORE_BLOCK 64
#define CALLSTORE_CHUNK_SHIFT 26 /* bytes are kept in 64 MiB chunks */

struct callstore {
    uint8_t **chunk;    /* nchunk of 1 << CALLSTORE_CHUNK_SHIFT bytes */
    uint64_t nchunk, capchunk;
    struct callstore_blk {
        uint64_t off;   /* byte offset of its first call */
        uint64_t enter; /* its first call's t_enter_ns */
    } *blk;
    uint64_t nblk, capblk;
    uint64_t n;         /* calls */
    uint64_t used;      /* bytes written */
    struct m_call prev; /* the last call put */
};

/* A reader: the block it decoded last. Two calls held at once take two
 * cursors: a cursor's pointers last until its next callcur_at(). */
struct callcur {
    const struct callstore *s;
    uint64_t blk;
    uint32_t n;
    struct m_call c[CALLSTORE_BLOCK];
};

/** An empty store. */
void callstore_init(struct callstore *s);

/** Append @p c as call s->n. @return 0 or -ENOMEM (the store unchanged) */
int callstore_put(struct callstore *s, const struct m_call *c);

/** Free what the store holds; it is empty again. */
void callstore_free(struct callstore *s);

/** The bytes the store holds (blocks and their index). */
uint64_t callstore_bytes(const struct callstore *s);

/** A cursor on @p s, at no block yet. */
void callcur_init(struct callcur *k, const struct callstore *s);

/** Decode block @p b into @p k (b < s->nblk). */
void callcur_load(struct callcur *k, uint64_t b);

/** Decode block @p b of @p s into @p out (CALLSTORE_BLOCK calls, fewer in
 * the last block). @return how many */
uint32_t callstore_decode(const struct callstore *s, uint64_t b, struct m_call *out);

/** Call @p i (< s->n), valid until @p k's next callcur_at(). */
static inline const struct m_call *callcur_at(struct callcur *k, uint64_t i)
{
    if (i / CALLSTORE_BLOCK != k->blk)
        callcur_load(k, i / CALLSTORE_BLOCK);
    return &k->c[i % CALLSTORE_BLOCK];
}

#endif
