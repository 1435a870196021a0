/* model/callstore.c: compact blocks of CUDA calls (callstore.h). Owns their
 * encoding: per call a mask of the fields that changed since the call
 * before it in its block, the enter time as a zigzag delta, the duration,
 * then only the changed fields; a block starts from a zeroed call, so it
 * decodes on its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "callstore.h"
#include "cudaspy/grow.h"
#include "cudaspy/varint.h"

enum {
    CM_KIND = 1 << 0,   /* api, variant, dir */
    CM_FLAGS = 1 << 1,
    CM_STREAM = 1 << 2,
    CM_BON = 1 << 3,    /* bytes_or_name */
    CM_THR = 1 << 4,
};

/* mask 1, enter 10, duration 10, kind 3, flags 3, stream 10, bon 10, thr 5 */
#define CALL_ENC_MAX 52u
#define CHUNK_BYTES (1ull << CALLSTORE_CHUNK_SHIFT)

static uint32_t kind_of(const struct m_call *c)
{
    return (uint32_t)c->api | (uint32_t)c->variant << 11 | (uint32_t)c->dir << 13;
}

static uint8_t *enc_call(uint8_t *p, const struct m_call *c, const struct m_call *q)
{
    uint8_t *mask = p++;

    *mask = (uint8_t)((kind_of(c) != kind_of(q) ? CM_KIND : 0) |
                      (c->flags != q->flags ? CM_FLAGS : 0) |
                      (c->stream != q->stream ? CM_STREAM : 0) |
                      (c->bytes_or_name != q->bytes_or_name ? CM_BON : 0) |
                      (c->thr != q->thr ? CM_THR : 0));
    p = cs_put_var(p, cs_zz64(c->t_enter_ns - q->t_enter_ns));
    p = cs_put_var(p, cs_zz64(c->t_exit_ns - c->t_enter_ns));
    if (*mask & CM_KIND)
        p = cs_put_var(p, kind_of(c));
    if (*mask & CM_FLAGS)
        p = cs_put_var(p, c->flags);
    if (*mask & CM_STREAM)
        p = cs_put_var(p, c->stream);
    if (*mask & CM_BON)
        p = cs_put_var(p, cs_zz64(c->bytes_or_name - q->bytes_or_name));
    if (*mask & CM_THR)
        p = cs_put_var(p, c->thr);
    return p;
}

static const uint8_t *dec_call(const uint8_t *p, struct m_call *c, const struct m_call *q)
{
    uint8_t mask = *p++;
    uint64_t v;

    *c = *q;
    p = cs_get_var_trusted(p, &v);
    c->t_enter_ns = q->t_enter_ns + cs_unzz64(v);
    p = cs_get_var_trusted(p, &v);
    c->t_exit_ns = c->t_enter_ns + cs_unzz64(v);
    if (mask & CM_KIND) {
        p = cs_get_var_trusted(p, &v);
        c->api = v & 0x7ff, c->variant = (v >> 11) & 3, c->dir = (v >> 13) & 7;
    }
    if (mask & CM_FLAGS) {
        p = cs_get_var_trusted(p, &v);
        c->flags = (uint16_t)v;
    }
    if (mask & CM_STREAM)
        p = cs_get_var_trusted(p, &c->stream);
    if (mask & CM_BON) {
        p = cs_get_var_trusted(p, &v);
        c->bytes_or_name = q->bytes_or_name + cs_unzz64(v);
    }
    if (mask & CM_THR) {
        p = cs_get_var_trusted(p, &v);
        c->thr = (uint32_t)v;
    }
    return p;
}

void callstore_init(struct callstore *s)
{
    memset(s, 0, sizeof(*s));
}

/* Room for a whole block from s->used on: a block never spans two chunks. */
static int block_room(struct callstore *s)
{
    uint64_t in = s->used & (CHUNK_BYTES - 1);
    uint8_t *c;

    if (s->nchunk && in + CALLSTORE_BLOCK * CALL_ENC_MAX <= CHUNK_BYTES)
        return 0;
    if (cs_grow((void **)&s->chunk, &s->capchunk, s->nchunk + 1, sizeof(*s->chunk)) < 0 ||
        (c = malloc(CHUNK_BYTES)) == NULL)
        return -ENOMEM;
    s->chunk[s->nchunk++] = c;
    s->used = (s->nchunk - 1) << CALLSTORE_CHUNK_SHIFT;
    return 0;
}

int callstore_put(struct callstore *s, const struct m_call *c)
{
    static const struct m_call zero;
    uint8_t *p, *end;

    if (s->n % CALLSTORE_BLOCK == 0) {
        if (block_room(s) < 0 ||
            cs_grow((void **)&s->blk, &s->capblk, s->nblk + 1, sizeof(*s->blk)) < 0)
            return -ENOMEM;
        s->blk[s->nblk++] = (struct callstore_blk){s->used, c->t_enter_ns};
        s->prev = zero;
    }
    p = s->chunk[s->used >> CALLSTORE_CHUNK_SHIFT] + (s->used & (CHUNK_BYTES - 1));
    end = enc_call(p, c, &s->prev);
    s->used += (uint64_t)(end - p);
    s->prev = *c;
    s->n++;
    return 0;
}

void callstore_free(struct callstore *s)
{
    for (uint64_t i = 0; i < s->nchunk; i++)
        free(s->chunk[i]);
    free(s->chunk);
    free(s->blk);
    callstore_init(s);
}

uint64_t callstore_bytes(const struct callstore *s)
{
    uint64_t tail = s->nchunk ? s->used & (CHUNK_BYTES - 1) : 0;

    return (s->nchunk ? (s->nchunk - 1) * CHUNK_BYTES : 0) + tail + s->nblk * sizeof(*s->blk);
}

void callcur_init(struct callcur *k, const struct callstore *s)
{
    k->s = s;
    k->blk = UINT64_MAX;
    k->n = 0;
}

uint32_t callstore_decode(const struct callstore *s, uint64_t b, struct m_call *out)
{
    static const struct m_call zero;
    uint64_t off = s->blk[b].off, left = s->n - b * CALLSTORE_BLOCK;
    const uint8_t *p = s->chunk[off >> CALLSTORE_CHUNK_SHIFT] + (off & (CHUNK_BYTES - 1));
    const struct m_call *q = &zero;
    uint32_t n = left < CALLSTORE_BLOCK ? (uint32_t)left : CALLSTORE_BLOCK;

    for (uint32_t i = 0; i < n; i++) {
        p = dec_call(p, &out[i], q);
        q = &out[i];
    }
    return n;
}

void callcur_load(struct callcur *k, uint64_t b)
{
    k->n = callstore_decode(k->s, b, k->c);
    k->blk = b;
}
