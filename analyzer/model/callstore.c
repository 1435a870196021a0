/* model/callstore.c: compact blocks of CUDA calls (callstore.h). Owns their
 * encoding (each column of a block as its smallest value and fixed-width
 * offsets above it, rows of those offsets packed bit by bit), the tables of
 * distinct streams and kinds the columns index, and the chunks rows live in. */
#include <errno.h>
#include <stdlib.h>

#include "callstore.h"
#include "model.h"
#include "cudaspy/grow.h"

#define CHUNK_BYTES (1ull << CALLSTORE_CHUNK_SHIFT)
#define ROW_MAX_BITS 320 /* 3 x 64 + 4 x 32 */
#define BLOCK_MAX_BYTES (CALLSTORE_BLOCK * ROW_MAX_BITS / 8)
#define UNSEALED 0xffff /* a block's row until it is encoded */
#define TAIL_PAD 16      /* callstore_bits() reads up to 16 bytes at a row's byte */

const uint64_t callstore_mask[65] = {
#define M1(w) ((w) == 64 ? ~0ull : (1ull << ((w) & 63)) - 1)
#define M8(w) M1(w), M1(w + 1), M1(w + 2), M1(w + 3), M1(w + 4), M1(w + 5), M1(w + 6), M1(w + 7)
    M8(0), M8(8), M8(16), M8(24), M8(32), M8(40), M8(48), M8(56), M1(64),
#undef M8
#undef M1
};

void callstore_init(struct callstore *s)
{
    memset(s, 0, sizeof(*s));
}

/* The index of @p v in @p d, added if new. @return it, or -ENOMEM */
static int64_t dict_index(struct callstore_dict *d, uint64_t v)
{
    unsigned r = (unsigned)((v * 0x9e3779b97f4a7c15ull) >> 58);
    uint32_t i;

    if (d->recent_v[r] == v + 1)
        return d->recent_i[r];
    if (d->ix == NULL && (d->ix = m_hash_new()) == NULL)
        return -ENOMEM;
    if ((i = m_hash_get(d->ix, v)) == M_NONE) {
        if (d->n >= UINT32_MAX - 1 ||
            cs_grow((void **)&d->v, &d->cap, d->n + 1, sizeof(*d->v)) < 0 ||
            m_hash_put(d->ix, v, (uint32_t)d->n) < 0)
            return -ENOMEM;
        d->v[d->n] = v;
        i = (uint32_t)d->n++;
    }
    d->recent_v[r] = v + 1, d->recent_i[r] = i;
    return i;
}

static void dict_free(struct callstore_dict *d)
{
    free(d->v);
    m_hash_free(d->ix);
}

static uint64_t dict_bytes(const struct callstore_dict *d)
{
    return d->n * sizeof(*d->v) + d->n * 2 * (sizeof(uint64_t) + sizeof(uint32_t)); /* about */
}

int callstore_open(struct callstore *s, uint64_t n)
{
    size_t nb = (size_t)((n + CALLSTORE_BLOCK - 1) / CALLSTORE_BLOCK);

    s->blk = calloc(nb ? nb : 1, sizeof(*s->blk));
    s->pend = calloc(nb ? nb : 1, sizeof(*s->pend));
    if (s->blk == NULL || s->pend == NULL)
        return -ENOMEM;
    for (size_t bi = 0; bi < nb; bi++)
        s->blk[bi].row = UNSEALED;
    s->nblk = nb;
    s->n = n;
    return 0;
}

/* Room for a whole block from s->used on: a block never spans two chunks. */
static int block_room(struct callstore *s)
{
    uint64_t in = s->used & (CHUNK_BYTES - 1);
    uint8_t *c;

    if (s->nchunk && in + BLOCK_MAX_BYTES + 8 + TAIL_PAD <= CHUNK_BYTES)
        return 0;
    if (cs_grow((void **)&s->chunk, &s->capchunk, s->nchunk + 1, sizeof(*s->chunk)) < 0 ||
        (c = malloc(CHUNK_BYTES)) == NULL)
        return -ENOMEM;
    s->chunk[s->nchunk++] = c;
    s->used = (uint64_t)(s->nchunk - 1) << CALLSTORE_CHUNK_SHIFT;
    return 0;
}

static unsigned width(uint64_t range)
{
    return range ? 64u - (unsigned)__builtin_clzll(range) : 0;
}

/* Rows written bit by bit through a word held in a register: a
 * read-modify-write of memory for each field would stall on the store
 * before it. */
struct bitw {
    uint8_t *p;
    uint64_t acc; /* bits not yet stored, from bit 0 */
    unsigned n;   /* how many (< 64) */
};

/* Append @p v (< 2^w). */
static inline void bitw_put(struct bitw *b, uint64_t v, unsigned w)
{
    unsigned room = 64 - b->n;

    if (w == 0)
        return;
    b->acc |= v << b->n;
    if (w < room) {
        b->n += w;
        return;
    }
    memcpy(b->p, &b->acc, 8);
    b->p += 8;
    b->acc = room < 64 ? v >> room : 0;
    b->n = w - room;
}

/* Store what is held, and zero the TAIL_PAD bytes after it (a whole word:
 * block_room() leaves 8 bytes more). */
static void bitw_end(struct bitw *b)
{
    memcpy(b->p, &b->acc, 8);
    memset(b->p + 8, 0, TAIL_PAD);
}

/* The columns of call @p c. @return 0 or -ENOMEM (a table full) */
static int columns(struct callstore *s, const struct m_call *c, uint32_t seq, uint32_t stack,
                   uint64_t v[CSC_N])
{
    int64_t si = dict_index(&s->stream, c->stream);
    int64_t ki = dict_index(&s->kind, (uint64_t)c->api | (uint64_t)c->variant << 11 |
                                          (uint64_t)c->dir << 13 | (uint64_t)c->flags << 16);

    v[CSC_ENTER] = c->t_enter_ns;
    v[CSC_DUR] = c->t_exit_ns - c->t_enter_ns;
    v[CSC_BON] = c->bytes_or_name;
    v[CSC_STREAM] = (uint64_t)si;
    v[CSC_THR] = c->thr;
    v[CSC_KIND] = (uint64_t)ki;
    v[CSC_SEQ] = seq;
    v[CSC_STACK] = stack;
    return si < 0 || ki < 0 ? -ENOMEM : 0;
}

/* Store the seq column less the row where that takes fewer bits: a
 * thread's seq counts its records, so a block's are often one constant. */
static void seq_rel(uint64_t v[CALLSTORE_BLOCK][CSC_N], uint64_t lo[CSC_N], uint64_t hi[CSC_N],
                    struct callstore_blk *b)
{
    uint32_t rlo = 0, rhi = 0;

    for (uint32_t i = 0; i < CALLSTORE_BLOCK; i++) {
        uint32_t x = (uint32_t)v[i][CSC_SEQ] - i;
        rlo = i == 0 || x < rlo ? x : rlo;
        rhi = i == 0 || x > rhi ? x : rhi;
    }
    if (rhi - rlo >= hi[CSC_SEQ] - lo[CSC_SEQ])
        return;
    for (uint32_t i = 0; i < CALLSTORE_BLOCK; i++)
        v[i][CSC_SEQ] = (uint32_t)v[i][CSC_SEQ] - i;
    lo[CSC_SEQ] = rlo, hi[CSC_SEQ] = rhi;
    b->seq_rel = 1;
}

/* Encode block @p bi from its pending calls, and free them. */
static int seal_block(struct callstore *s, size_t bi)
{
    const struct callstore_pend *pd = s->pend[bi];
    uint64_t v[CALLSTORE_BLOCK][CSC_N], lo[CSC_N], hi[CSC_N];
    struct callstore_blk b = {0};
    struct bitw bw = {0};
    uint8_t *p;

    for (int i = 0; i < CALLSTORE_BLOCK; i++) {
        if (columns(s, &pd->c[i], pd->seq[i], pd->stack[i], v[i]) < 0)
            return -ENOMEM;
        for (int k = 0; k < CSC_N; k++) {
            lo[k] = i == 0 || v[i][k] < lo[k] ? v[i][k] : lo[k];
            hi[k] = i == 0 || v[i][k] > hi[k] ? v[i][k] : hi[k];
        }
    }
    if (block_room(s) < 0)
        return -ENOMEM;
    seq_rel(v, lo, hi, &b);
    for (int k = 0; k < CSC_N; k++) {
        b.w[k] = (uint8_t)width(hi[k] - lo[k]);
        b.row = (uint16_t)(b.row + b.w[k]);
    }
    b.off = s->used;
    b.base64[0] = lo[CSC_ENTER], b.base64[1] = lo[CSC_DUR], b.base64[2] = lo[CSC_BON];
    for (int k = CSC_STREAM; k < CSC_N; k++)
        b.base32[k - CSC_STREAM] = (uint32_t)lo[k];
    p = s->chunk[s->used >> CALLSTORE_CHUNK_SHIFT] + (s->used & (CHUNK_BYTES - 1));
    bw.p = p;
    for (int i = 0; i < CALLSTORE_BLOCK; i++)
        for (int k = 0; k < CSC_N; k++)
            bitw_put(&bw, v[i][k] - lo[k], b.w[k]);
    bitw_end(&bw);
    s->used += ((uint64_t)CALLSTORE_BLOCK * b.row + 7) / 8;
    s->blk[bi] = b;
    free(s->pend[bi]);
    s->pend[bi] = NULL;
    return 0;
}

/* Calls in block @p bi: CALLSTORE_BLOCK, fewer in the last. */
static uint32_t block_calls(const struct callstore *s, size_t bi)
{
    uint64_t left = s->n - (uint64_t)bi * CALLSTORE_BLOCK;

    return left < CALLSTORE_BLOCK ? (uint32_t)left : CALLSTORE_BLOCK;
}

int callstore_set(struct callstore *s, uint64_t i, const struct m_call *c, uint32_t seq,
                  uint32_t stack)
{
    size_t bi = (size_t)(i / CALLSTORE_BLOCK);
    struct callstore_pend *pd = s->pend[bi];
    uint32_t r = (uint32_t)(i % CALLSTORE_BLOCK);

    if (pd == NULL && (pd = s->pend[bi] = calloc(1, sizeof(*pd))) == NULL)
        return -ENOMEM;
    pd->c[r] = *c;
    pd->seq[r] = seq;
    pd->stack[r] = stack;
    if (++pd->filled == block_calls(s, bi))
        return seal_block(s, bi);
    return 0;
}

int callstore_close(struct callstore *s)
{
    for (size_t bi = 0; bi < s->nblk; bi++) {
        if (s->blk[bi].row != UNSEALED)
            continue;
        if (s->pend[bi] == NULL && (s->pend[bi] = calloc(1, sizeof(*s->pend[bi]))) == NULL)
            return -ENOMEM;
        if (seal_block(s, bi) < 0)
            return -ENOMEM;
    }
    free(s->pend);
    s->pend = NULL;
    return 0;
}

uint32_t callstore_kept(const struct callstore *s, uint64_t i, int col)
{
    const struct callstore_blk *b = &s->blk[i / CALLSTORE_BLOCK];
    uint64_t pos = (i % CALLSTORE_BLOCK) * b->row;
    uint32_t v;

    for (int k = 0; k < col; k++)
        pos += b->w[k];
    v = b->base32[col - CSC_STREAM] + (uint32_t)callstore_bits(callstore_rows(s, b), pos, b->w[col]);
    return col == CSC_SEQ && b->seq_rel ? v + (uint32_t)(i % CALLSTORE_BLOCK) : v;
}

void callstore_free(struct callstore *s)
{
    for (size_t i = 0; i < s->nchunk; i++)
        free(s->chunk[i]);
    free(s->chunk);
    for (size_t bi = 0; s->pend && bi < s->nblk; bi++)
        free(s->pend[bi]);
    free(s->pend);
    free(s->blk);
    dict_free(&s->stream);
    dict_free(&s->kind);
    callstore_init(s);
}

uint64_t callstore_bytes(const struct callstore *s)
{
    uint64_t tail = s->nchunk ? s->used & (CHUNK_BYTES - 1) : 0;

    return (s->nchunk ? (s->nchunk - 1) * CHUNK_BYTES : 0) + tail + s->nblk * sizeof(*s->blk) +
           dict_bytes(&s->stream) + dict_bytes(&s->kind);
}
