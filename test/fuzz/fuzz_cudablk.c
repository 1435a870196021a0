/* fuzz_cudablk.c: libFuzzer target for the compact CUDA block decoder
 * (store/cudablk.c, cs_cudablk_decode()). The input is one block value:
 * the CRC32C is made right before decoding (a mutated block would nearly
 * always stop at the CRC check, libpng's fuzzers do the same), so the
 * mutations reach the varints, thread table and field checks. A block that
 * decodes is encoded again and must decode to the same records: the
 * encoding is lossless. Seeds: blocks the encoder wrote from synthetic and
 * PyTorch-like records (test/fuzz/corpus/cudablk/). fuzz_runfile reaches the
 * same decoder through whole run files (its compact seed), CRC included. */
#include "cudaspy/cudablk.h"
#include "fuzz_common.h"

static struct cs_rec_cuda out[CS_CUDABLK_MAX_RECS], again[CS_CUDABLK_MAX_RECS];
static uint8_t buf[CS_BLK_MAX_BYTES], enc[CS_BLK_MAX_BYTES];

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    struct cs_blk_hdr h;
    const char *why;
    size_t at, len;
    uint32_t crc;
    int rc;

    if (n > sizeof(buf))
        return 0;
    memcpy(buf, d, n);
    if (n >= CS_CUDABLK_PREFIX) {
        crc = cs_crc32c(0, buf, sizeof(h));
        crc = cs_crc32c(crc, buf + CS_CUDABLK_PREFIX, n - CS_CUDABLK_PREFIX);
        memcpy(buf + sizeof(h), &crc, 4);
    }
    rc = cs_cudablk_decode(buf, n, out, &why, &at);
    if (rc < 0) {
        if (rc != CS_E_CORRUPT || why == NULL || at > n)
            abort();
        return 0;
    }
    memcpy(&h, buf, sizeof(h));
    if ((uint32_t)rc != h.n ||
        cs_cudablk_encode(&h, out, (uint32_t)rc, enc, sizeof(enc), &len) != rc ||
        cs_cudablk_decode(enc, len, again, &why, &at) != rc ||
        memcmp(out, again, (size_t)rc * sizeof(out[0])) != 0)
        abort();
    return 0;
}
