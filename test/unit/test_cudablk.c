/* test_cudablk.c: the compact CUDA block encoding (store/cudablk.c) on
 * its own: lossless round trips of random and PyTorch-like records, the
 * limits that end a block, CRC32C's check value, and blocks cut at every
 * byte or with a byte flipped, which must decode to CS_E_CORRUPT (or, with
 * the CRC made right again, to a block of the header's record count),
 * never crash. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "cudaspy/cudablk.h"

static uint8_t val[CS_BLK_MAX_BYTES];
static struct cs_rec_cuda out[CS_CUDABLK_MAX_RECS];

static uint64_t rnd_state;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* A PyTorch-like stream: per launch a driver record nested in a runtime
 * record (pushed driver first), 2 threads, a few kernel names. */
static void fill_pairs(struct cs_rec_cuda *r, uint32_t n, uint64_t t0)
{
    uint64_t t = t0;
    uint32_t seq[2] = {1, 1};

    memset(r, 0, (size_t)n * sizeof(*r));
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        unsigned th = (i / 2) % 7 == 6; /* every 7th launch from the second thread */
        struct cs_rec_cuda *drv = &r[i], *rt = &r[i + 1];
        rt->pid = drv->pid = 4242;
        rt->tid = drv->tid = 4242 + th;
        rt->t_enter_ns = t;
        drv->t_enter_ns = t + 300 + rnd() % 200;
        drv->t_exit_ns = drv->t_enter_ns + 2000 + rnd() % 3000;
        rt->t_exit_ns = drv->t_exit_ns + 150 + rnd() % 100;
        rt->seq = seq[th];
        drv->seq = seq[th] + 1;
        seq[th] += 2;
        drv->parent_seq = rt->seq;
        rt->api = 40;
        drv->api = 7;
        drv->flags = CS_CF_NESTED | CS_CF_HAS_NAME;
        rt->flags = CS_CF_HAS_NAME;
        rt->name_id = drv->name_id = 3 + (uint32_t)(rnd() % 5);
        rt->stream = drv->stream = 0x55d0c3a4b2c0ull;
        rt->grid[0] = drv->grid[0] = 1 + (uint32_t)(rnd() % 4) * 64;
        rt->grid[1] = drv->grid[1] = rt->grid[2] = drv->grid[2] = 1;
        rt->block[0] = drv->block[0] = 256;
        rt->block[1] = drv->block[1] = rt->block[2] = drv->block[2] = 1;
        t = rt->t_exit_ns + 1000 + rnd() % 9000;
    }
}

/* Every byte random but the times, which span [0, 2^40). */
static void fill_random(struct cs_rec_cuda *r, uint32_t n, uint32_t nthreads)
{
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *b = (uint8_t *)&r[i];
        for (size_t k = 0; k < sizeof(r[i]); k++)
            b[k] = (uint8_t)rnd();
        if (rnd() % 2) /* half of them: small values, most fields as before */
            memset(&r[i].stream, 0, 48);
        r[i].pid = 100 + (uint32_t)(rnd() % 3);
        r[i].tid = (uint32_t)(rnd() % nthreads);
        r[i].t_enter_ns = rnd() >> 24;
        r[i].t_exit_ns = rnd() % 4 ? r[i].t_enter_ns + rnd() % 100000 : rnd();
    }
}

static int roundtrip(const struct cs_rec_cuda *r, uint32_t n, uint32_t *taken, size_t *len)
{
    struct cs_blk_hdr h = {.ts_first_ns = r[0].t_enter_ns, .ts_last_ns = ~0ull, .pid = 4242,
                           .flags = CS_HF_DEGRADED};
    const char *why;
    size_t at;
    int m = cs_cudablk_encode(&h, r, n, val, sizeof(val), len);
    struct cs_blk_hdr got;

    CHECK(m > 0);
    CHECK(*len <= sizeof(val));
    CHECK_EQ(cs_cudablk_decode(val, *len, out, &why, &at), m);
    CHECK(memcmp(out, r, (size_t)m * sizeof(*r)) == 0);
    memcpy(&got, val, sizeof(got));
    CHECK_EQ(got.n, m);
    CHECK_EQ(got.kind, CS_REC_CUDA);
    CHECK_EQ(got.rec_size, sizeof(struct cs_rec_cuda));
    CHECK_EQ(got.flags, CS_HF_DEGRADED | CS_BF_COMPACT);
    CHECK_EQ(got.pid, 4242);
    *taken = (uint32_t)m;
    return 0;
}

static int test_crc32c_check_value(void)
{
    CHECK_EQ(cs_crc32c(0, "123456789", 9), 0xe3069283u); /* RFC 3720's check value */
    CHECK_EQ(cs_crc32c(cs_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
    CHECK_EQ(cs_crc32c(0, "", 0), 0);
    return 0;
}

static int test_pairs_round_trip_in_few_bytes(void)
{
    static struct cs_rec_cuda r[2048];
    uint32_t m;
    size_t len;

    fill_pairs(r, 2048, 1000000000ull);
    CHECK_OK(roundtrip(r, 2048, &m, &len));
    CHECK_EQ(m, 2048);
    CHECK(len <= 2048 * 16); /* 96 plain */
    return 0;
}

static int test_random_records_round_trip(void)
{
    static struct cs_rec_cuda r[CS_CUDABLK_MAX_RECS];

    for (int round = 0; round < 50; round++) {
        uint32_t n = 1 + (uint32_t)(rnd() % 3000), m, done = 0;
        size_t len;
        fill_random(r, n, 1 + (uint32_t)(rnd() % 40));
        while (done < n) { /* a block ends when 64 KiB are full: take the rest next */
            CHECK_OK(roundtrip(r + done, n - done, &m, &len));
            CHECK(m == n - done || len > sizeof(val) - 160);
            done += m;
        }
    }
    return 0;
}

static int test_block_ends_at_record_and_thread_limits(void)
{
    static struct cs_rec_cuda r[CS_CUDABLK_MAX_RECS + 10];
    uint32_t m;
    size_t len;

    memset(r, 0, sizeof(r)); /* identical records: 4 bytes each */
    CHECK_OK(roundtrip(r, CS_CUDABLK_MAX_RECS + 10, &m, &len));
    CHECK_EQ(m, CS_CUDABLK_MAX_RECS);
    for (uint32_t i = 0; i < 300; i++)
        r[i].tid = i;
    CHECK_OK(roundtrip(r, 300, &m, &len));
    CHECK_EQ(m, CS_CUDABLK_MAX_THREADS);
    CHECK_ERR(cs_cudablk_encode(&(struct cs_blk_hdr){0}, r, 0, val, sizeof(val), &len), -EINVAL);
    CHECK_ERR(cs_cudablk_encode(&(struct cs_blk_hdr){0}, r, 1, val, 100, &len), -ENOSPC);
    return 0;
}

/* Make the CRC right again after an edit, so the decoder's own checks run. */
static void fix_crc(uint8_t *v, size_t len)
{
    uint32_t crc = cs_crc32c(0, v, sizeof(struct cs_blk_hdr));

    crc = cs_crc32c(crc, v + CS_CUDABLK_PREFIX, len - CS_CUDABLK_PREFIX);
    memcpy(v + sizeof(struct cs_blk_hdr), &crc, 4);
}

static int decode_err(const uint8_t *v, size_t len, const char *want_why)
{
    const char *why = NULL;
    size_t at;

    CHECK_ERR(cs_cudablk_decode(v, len, out, &why, &at), CS_E_CORRUPT);
    CHECK(why != NULL);
    CHECK(at <= len);
    if (want_why)
        CHECK_STR(why, want_why);
    return 0;
}

static int test_cut_block_is_corrupt(void)
{
    static struct cs_rec_cuda r[300];
    static uint8_t cut[CS_BLK_MAX_BYTES];
    size_t len;

    fill_pairs(r, 300, 5000);
    CHECK_EQ(cs_cudablk_encode(&(struct cs_blk_hdr){.ts_first_ns = 5000}, r, 300, val,
                               sizeof(val), &len), 300);
    for (size_t l = 0; l < len; l++) {
        memcpy(cut, val, l);
        CHECK_OK(decode_err(cut, l, NULL));
        if (l >= CS_CUDABLK_PREFIX) {
            fix_crc(cut, l);
            CHECK_OK(decode_err(cut, l, NULL));
        }
    }
    fix_crc(cut, len - 1);
    CHECK_OK(decode_err(cut, len - 1, "record runs past the end of the block"));
    memcpy(cut, val, len);
    cut[len] = 0;
    fix_crc(cut, len + 1);
    CHECK_OK(decode_err(cut, len + 1, "bytes left after the last record"));
    return 0;
}

static int test_flipped_byte_is_corrupt_or_whole(void)
{
    static struct cs_rec_cuda r[300];
    static uint8_t v2[CS_BLK_MAX_BYTES];
    const char *why;
    size_t len, at;
    unsigned whole = 0;

    fill_pairs(r, 300, 5000);
    CHECK_EQ(cs_cudablk_encode(&(struct cs_blk_hdr){.ts_first_ns = 5000}, r, 300, val,
                               sizeof(val), &len), 300);
    for (size_t i = 0; i < len; i++) {
        for (unsigned bit = 0; bit < 8; bit += 3) {
            memcpy(v2, val, len);
            v2[i] ^= (uint8_t)(1u << bit);
            CHECK_OK(decode_err(v2, len, NULL)); /* the CRC sees every flip */
            if (i >= sizeof(struct cs_blk_hdr) && i < CS_CUDABLK_PREFIX)
                continue;
            fix_crc(v2, len); /* then the structure alone: corrupt or n records */
            int rc = cs_cudablk_decode(v2, len, out, &why, &at);
            CHECK(rc == CS_E_CORRUPT || rc == 300);
            whole += rc == 300;
        }
    }
    CHECK(whole > 0);
    return 0;
}

static int test_bad_fields_are_named(void)
{
    uint8_t v[64];
    struct cs_blk_hdr h = {.n = 1, .kind = CS_REC_CUDA, .rec_size = 96, .flags = CS_BF_COMPACT};
    size_t p = CS_CUDABLK_PREFIX;

    memcpy(v, &h, sizeof(h));
    v[p] = 0; /* mask without the thread bit */
    v[p + 1] = v[p + 2] = v[p + 3] = 0;
    fix_crc(v, p + 4);
    CHECK_OK(decode_err(v, p + 4, "first record names no thread"));
    v[p] = CS_CB_THREAD;
    v[p + 1] = 1; /* index 1 before index 0 */
    fix_crc(v, p + 4);
    CHECK_OK(decode_err(v, p + 4, "thread index never defined"));
    v[p] = v[p + 1] = 0x80; /* mask bit 15: not defined */
    v[p + 2] = 0x02;
    fix_crc(v, p + 4);
    CHECK_OK(decode_err(v, p + 4, "field value out of range"));
    memset(v + p, 0xff, 11); /* an 11-byte varint */
    fix_crc(v, p + 11);
    CHECK_OK(decode_err(v, p + 11, "varint longer than 64 bits"));
    h.kind = CS_REC_OFFCPU;
    memcpy(v, &h, sizeof(h));
    CHECK_OK(decode_err(v, p + 4, "header is not a compact CUDA block's"));
    CHECK_OK(decode_err(v, 10, "shorter than its header"));
    return 0;
}

int main(void)
{
    rnd_state = check_seed() | 1ull << 40;
    RUN(test_crc32c_check_value);
    RUN(test_pairs_round_trip_in_few_bytes);
    RUN(test_random_records_round_trip);
    RUN(test_block_ends_at_record_and_thread_limits);
    RUN(test_cut_block_is_corrupt);
    RUN(test_flipped_byte_is_corrupt_or_whole);
    RUN(test_bad_fields_are_named);
    return check_status();
}
