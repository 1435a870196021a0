/* cudablk.c: the compact encoding of cuda_blk blocks (cudablk.h), and
 * CRC32C. Owns the byte layout only; where blocks are cut, staged and read
 * is runfile_*.c's business. docs/format.md describes the same bytes.
 *
 * Each record is coded against the previous record of its thread in the
 * block (a zero record with t_enter = the header's ts_first_ns for a
 * thread's first): enter time, duration and seq always, as zigzag varints,
 * and each other field only when it differs, one mask bit each. A PyTorch
 * stream of runtime launches and their nested driver launches flips api,
 * flags and parent_seq every record and keeps the rest: 10-14 bytes a
 * record instead of 96. */
#include <errno.h>
#include <string.h>

#include "cudaspy/cudablk.h"
#include "cudaspy/varint.h"
#include "cudaspy/error.h"

/* ---- CRC32C ---- */

static uint32_t crc_table[256];

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
        crc_table[i] = c;
    }
}

static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t len)
{
    if (crc_table[1] == 0) /* racing initialisations write the same values */
        crc_table_init();
    while (len--)
        c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__)
/* SSE4.2's crc32 instruction: 8 bytes a step, ~1 ns a 100-byte record's
 * worth of block instead of ~10 with the table. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p,
                                                         size_t len)
{
    uint64_t c64 = c;

    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = (uint32_t)c64;
    while (len--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

uint32_t cs_crc32c(uint32_t crc, const void *p, size_t len)
{
    uint32_t c = ~crc;

#if defined(__x86_64__)
    static int has_hw = -1;
    if (has_hw < 0)
        has_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    if (has_hw)
        return ~crc_hw(c, p, len);
#endif
    return ~crc_soft(c, p, len);
}

/* ---- encoder ---- */

/* An encoded record is at most: mask 3, thread 2 + 5 + 5, times 10 + 10,
 * seq 5, parent 5, api 3, flags 3, name 5, grid 15, block 9, bytes 10,
 * stream 10, aux 10, result 5, device 3, vardir 3, stack 5, drv_api 3 = 147. */
#define REC_ENC_MAX 160u

struct enc_thread {
    uint32_t pid, tid;
    const struct cs_rec_cuda *prev; /* its previous record, NULL before the first */
};

static uint8_t *enc_rec(uint8_t *p, const struct cs_rec_cuda *r, const struct cs_rec_cuda *q,
                        uint32_t thread_bits, uint32_t idx, int is_new)
{
    uint32_t m = thread_bits;
    uint64_t t_prev = q->t_enter_ns;

    m |= r->parent_seq ? CS_CB_PARENT : 0;
    m |= r->api != q->api ? CS_CB_API : 0;
    m |= r->flags != q->flags ? CS_CB_FLAGS : 0;
    m |= r->name_id != q->name_id ? CS_CB_NAME : 0;
    m |= memcmp(r->grid, q->grid, sizeof(r->grid)) ? CS_CB_GRID : 0;
    m |= memcmp(r->block, q->block, sizeof(r->block)) ? CS_CB_BLOCK : 0;
    m |= r->bytes != q->bytes ? CS_CB_BYTES : 0;
    m |= r->stream != q->stream ? CS_CB_STREAM : 0;
    m |= r->aux != q->aux ? CS_CB_AUX : 0;
    m |= r->result != q->result ? CS_CB_RESULT : 0;
    m |= r->device != q->device ? CS_CB_DEVICE : 0;
    m |= (r->variant != q->variant || r->dir != q->dir) ? CS_CB_VARDIR : 0;
    m |= r->stack_id != q->stack_id ? CS_CB_STACK : 0;
    m |= r->drv_api != q->drv_api ? CS_CB_DRV_API : 0;
    p = cs_put_var(p, m);
    if (m & CS_CB_THREAD) {
        p = cs_put_var(p, idx);
        if (is_new) {
            p = cs_put_var(p, r->pid);
            p = cs_put_var(p, r->tid);
        }
    }
    p = cs_put_var(p, cs_zz64(r->t_enter_ns - t_prev));
    p = cs_put_var(p, cs_zz64(r->t_exit_ns - r->t_enter_ns));
    p = cs_put_var(p, cs_zz32(r->seq - q->seq - 1u));
    if (m & CS_CB_PARENT)
        p = cs_put_var(p, cs_zz32(r->seq - r->parent_seq));
    if (m & CS_CB_API)
        p = cs_put_var(p, r->api);
    if (m & CS_CB_FLAGS)
        p = cs_put_var(p, r->flags);
    if (m & CS_CB_NAME)
        p = cs_put_var(p, r->name_id);
    if (m & CS_CB_GRID)
        for (int i = 0; i < 3; i++)
            p = cs_put_var(p, r->grid[i]);
    if (m & CS_CB_BLOCK)
        for (int i = 0; i < 3; i++)
            p = cs_put_var(p, r->block[i]);
    if (m & CS_CB_BYTES)
        p = cs_put_var(p, cs_zz64(r->bytes - q->bytes));
    if (m & CS_CB_STREAM)
        p = cs_put_var(p, cs_zz64(r->stream - q->stream));
    if (m & CS_CB_AUX)
        p = cs_put_var(p, cs_zz64(r->aux - q->aux));
    if (m & CS_CB_RESULT)
        p = cs_put_var(p, cs_zz32((uint32_t)r->result));
    if (m & CS_CB_DEVICE)
        p = cs_put_var(p, r->device);
    if (m & CS_CB_VARDIR)
        p = cs_put_var(p, (uint32_t)r->variant | (uint32_t)r->dir << 8);
    if (m & CS_CB_STACK)
        p = cs_put_var(p, r->stack_id);
    if (m & CS_CB_DRV_API)
        p = cs_put_var(p, r->drv_api);
    return p;
}

int cs_cudablk_encode(const struct cs_blk_hdr *h, const struct cs_rec_cuda *recs, uint32_t n,
                      uint8_t *out, size_t cap, size_t *len)
{
    struct enc_thread th[CS_CUDABLK_MAX_THREADS];
    struct cs_rec_cuda zero;
    struct cs_blk_hdr hdr = *h;
    uint8_t *p = out + CS_CUDABLK_PREFIX, *end = out + cap;
    uint32_t nth = 0, cur = UINT32_MAX, i;
    uint32_t crc;

    if (n == 0)
        return -EINVAL;
    if (cap < CS_CUDABLK_PREFIX + REC_ENC_MAX)
        return -ENOSPC;
    memset(&zero, 0, sizeof(zero));
    zero.t_enter_ns = h->ts_first_ns;
    for (i = 0; i < n && i < CS_CUDABLK_MAX_RECS && (size_t)(end - p) >= REC_ENC_MAX; i++) {
        const struct cs_rec_cuda *r = &recs[i];
        uint32_t k = cur, bits = 0;
        int is_new = 0;
        if (cur == UINT32_MAX || th[cur].pid != r->pid || th[cur].tid != r->tid) {
            for (k = 0; k < nth && (th[k].pid != r->pid || th[k].tid != r->tid); k++)
                ;
            if (k == nth) {
                if (nth == CS_CUDABLK_MAX_THREADS)
                    break;
                th[nth].pid = r->pid;
                th[nth].tid = r->tid;
                th[nth++].prev = NULL;
                is_new = 1;
            }
            bits = CS_CB_THREAD;
            cur = k;
        }
        p = enc_rec(p, r, th[k].prev ? th[k].prev : &zero, bits, k, is_new);
        th[k].prev = r;
    }
    hdr.n = i;
    hdr.kind = CS_REC_CUDA;
    hdr.rec_size = sizeof(struct cs_rec_cuda);
    hdr.flags |= CS_BF_COMPACT;
    memcpy(out, &hdr, sizeof(hdr));
    crc = cs_crc32c(0, out, sizeof(hdr));
    crc = cs_crc32c(crc, out + CS_CUDABLK_PREFIX, (size_t)(p - out) - CS_CUDABLK_PREFIX);
    memcpy(out + sizeof(hdr), &crc, 4);
    *len = (size_t)(p - out);
    return (int)i;
}

/* ---- decoder ---- */

struct dec {
    const uint8_t *p, *base, *end;
    const char *why;
};

/* A varint of at most @p bits bits; 0 on success, -1 (d->why set) if it
 * runs past the end, is longer than 10 bytes or is too big. */
static int get_var(struct dec *d, unsigned bits, uint64_t *v)
{
    uint64_t x = 0;

    if (d->p < d->end && *d->p < 0x80) { /* one byte: most fields of most records */
        *v = *d->p++;
        return 0;
    }
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b;
        if (d->p == d->end) {
            d->why = "record runs past the end of the block";
            return -1;
        }
        b = *d->p++;
        if (shift == 63 && b > 1) {
            d->why = "varint longer than 64 bits";
            return -1;
        }
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
        if (shift == 63) {
            d->why = "varint longer than 64 bits";
            return -1;
        }
    }
    if (bits < 64 && x >> bits) {
        d->why = "field value out of range";
        return -1;
    }
    *v = x;
    return 0;
}

#define GET(bits, dst)                        \
    do {                                      \
        uint64_t v_;                          \
        if (get_var(d, (bits), &v_) < 0)      \
            return -1;                        \
        (dst) = v_;                           \
    } while (0)

/* Decode one record into @p r given its thread's previous @p q (thread
 * already resolved by the caller, which passes the mask). */
static int dec_rec(struct dec *d, uint32_t m, const struct cs_rec_cuda *q, struct cs_rec_cuda *r)
{
    uint64_t v;
    uint32_t u;

    *r = *q;
    r->parent_seq = 0;
    GET(64, v);
    r->t_enter_ns = q->t_enter_ns + cs_unzz64(v);
    GET(64, v);
    r->t_exit_ns = r->t_enter_ns + cs_unzz64(v);
    GET(32, u);
    r->seq = q->seq + 1u + cs_unzz32(u);
    if (m & CS_CB_PARENT) {
        GET(32, u);
        r->parent_seq = r->seq - cs_unzz32(u);
    }
    if (m & CS_CB_API)
        GET(16, r->api);
    if (m & CS_CB_FLAGS)
        GET(16, r->flags);
    if (m & CS_CB_NAME)
        GET(32, r->name_id);
    if (m & CS_CB_GRID)
        for (int i = 0; i < 3; i++)
            GET(32, r->grid[i]);
    if (m & CS_CB_BLOCK)
        for (int i = 0; i < 3; i++)
            GET(16, r->block[i]);
    if (m & CS_CB_BYTES) {
        GET(64, v);
        r->bytes = q->bytes + cs_unzz64(v);
    }
    if (m & CS_CB_STREAM) {
        GET(64, v);
        r->stream = q->stream + cs_unzz64(v);
    }
    if (m & CS_CB_AUX) {
        GET(64, v);
        r->aux = q->aux + cs_unzz64(v);
    }
    if (m & CS_CB_RESULT) {
        GET(32, u);
        r->result = (int32_t)cs_unzz32(u);
    }
    if (m & CS_CB_DEVICE)
        GET(16, r->device);
    if (m & CS_CB_VARDIR) {
        GET(16, u);
        r->variant = (uint8_t)u;
        r->dir = (uint8_t)(u >> 8);
    }
    if (m & CS_CB_STACK)
        GET(32, r->stack_id);
    if (m & CS_CB_DRV_API)
        GET(16, r->drv_api);
    return 0;
}

/* The thread of the next record: @p m's thread bit switches to an index
 * (a new one is defined by its pid and tid). *cur is the current thread. */
struct dec_thread {
    uint32_t pid, tid;
    uint32_t prev; /* index of its previous record in out, UINT32_MAX before the first */
};

static int dec_thread(struct dec *d, uint32_t m, struct dec_thread *th, uint32_t *nth,
                      uint32_t *cur)
{
    uint32_t k;

    if (!(m & CS_CB_THREAD)) {
        if (*cur == UINT32_MAX) {
            d->why = "first record names no thread";
            return -1;
        }
        return 0;
    }
    GET(32, k);
    if (k > *nth || k == CS_CUDABLK_MAX_THREADS) {
        d->why = "thread index never defined";
        return -1;
    }
    if (k == *nth) {
        GET(32, th[k].pid);
        GET(32, th[k].tid);
        th[k].prev = UINT32_MAX;
        (*nth)++;
    }
    *cur = k;
    return 0;
}

int cs_cudablk_decode(const void *v, size_t len, struct cs_rec_cuda *out, const char **why,
                      size_t *at)
{
    struct dec_thread th[CS_CUDABLK_MAX_THREADS];
    struct dec dd = {(const uint8_t *)v, (const uint8_t *)v, (const uint8_t *)v + len, NULL};
    struct dec *d = &dd;
    struct cs_blk_hdr h;
    uint32_t crc, want, nth = 0, cur = UINT32_MAX;

    *why = NULL;
    *at = 0;
    if (len < CS_CUDABLK_PREFIX) {
        *why = "shorter than its header";
        return CS_E_CORRUPT;
    }
    memcpy(&h, v, sizeof(h));
    memcpy(&want, dd.p + sizeof(h), 4);
    if (h.kind != CS_REC_CUDA || h.rec_size != sizeof(struct cs_rec_cuda) ||
        !(h.flags & CS_BF_COMPACT) || h.n == 0 || h.n > CS_CUDABLK_MAX_RECS) {
        *why = "header is not a compact CUDA block's";
        return CS_E_CORRUPT;
    }
    crc = cs_crc32c(0, v, sizeof(h));
    crc = cs_crc32c(crc, dd.p + CS_CUDABLK_PREFIX, len - CS_CUDABLK_PREFIX);
    if (crc != want) {
        *why = "CRC32C mismatch";
        *at = sizeof(h);
        return CS_E_CORRUPT;
    }
    dd.p += CS_CUDABLK_PREFIX;
    for (uint32_t i = 0; i < h.n; i++) {
        uint64_t m;
        struct cs_rec_cuda z;
        const struct cs_rec_cuda *q = &z;
        if (get_var(d, 15, &m) < 0 ||
            dec_thread(d, (uint32_t)m, th, &nth, &cur) < 0)
            goto bad;
        if (th[cur].prev == UINT32_MAX) { /* a thread's first: the zero record */
            memset(&z, 0, sizeof(z));
            z.pid = th[cur].pid;
            z.tid = th[cur].tid;
            z.t_enter_ns = h.ts_first_ns;
        } else {
            q = &out[th[cur].prev];
        }
        if (dec_rec(d, (uint32_t)m, q, &out[i]) < 0)
            goto bad;
        th[cur].prev = i;
    }
    if (dd.p != dd.end) {
        d->why = "bytes left after the last record";
        goto bad;
    }
    return (int)h.n;
bad:
    *why = d->why;
    *at = (size_t)(dd.p - dd.base);
    return CS_E_CORRUPT;
}
