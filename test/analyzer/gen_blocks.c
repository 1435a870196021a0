/* gen_blocks.c: the run generators' block staging (gen_blocks.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_blocks.h"

struct cs_store *gen_st;
const char *gen_prog = "gen";
uint32_t gen_blk_pid;

/* Block buffers, one per record kind, put when full. */
static struct {
    uint8_t data[CS_BLK_MAX_BYTES];
    uint32_t n;
    uint64_t lo, hi;
} bufs[CS_REC_KIND_COUNT];

void gen_die(const char *what, int rc)
{
    fprintf(stderr, "%s: %s: %s\n", gen_prog, what, cs_strerror(rc));
    exit(3);
}

void gen_flush(unsigned kind)
{
    struct cs_blk_hdr h = {.ts_first_ns = bufs[kind].lo, .ts_last_ns = bufs[kind].hi,
                           .n = bufs[kind].n, .kind = (uint16_t)kind,
                           .rec_size = (uint16_t)cs_rec_size(kind), .pid = gen_blk_pid};
    int rc;

    if (bufs[kind].n == 0)
        return;
    if ((rc = cs_store_put_block(gen_st, kind, &h, bufs[kind].data)) < 0)
        gen_die("put block", rc);
    if (cs_store_pending(gen_st) > (64u << 20) && (rc = cs_store_commit(gen_st)) < 0)
        gen_die("commit", rc);
    bufs[kind].n = 0;
}

void gen_put(unsigned kind, const void *rec, uint64_t lo, uint64_t hi)
{
    unsigned size = cs_rec_size(kind);

    if ((bufs[kind].n + 1) * size + sizeof(struct cs_blk_hdr) > CS_BLK_MAX_BYTES)
        gen_flush(kind);
    if (bufs[kind].n == 0 || lo < bufs[kind].lo)
        bufs[kind].lo = lo;
    if (bufs[kind].n == 0 || hi > bufs[kind].hi)
        bufs[kind].hi = hi;
    memcpy(bufs[kind].data + (size_t)bufs[kind].n * size, rec, size);
    bufs[kind].n++;
}

void gen_meta(uint64_t t0, uint64_t t_end, const char *tier, const char *why)
{
    cs_store_put_meta(gen_st, "tool_version", "0.1.0");
    cs_store_put_meta(gen_st, "host", "gen");
    cs_store_put_meta(gen_st, "cmdline", "python train.py");
    cs_store_put_meta_u64(gen_st, "t_start_ns", t0);
    cs_store_put_meta_u64(gen_st, "t_end_ns", t_end);
    cs_store_put_meta(gen_st, "clock", "monotonic");
    cs_store_put_meta(gen_st, "sampler_tier", tier);
    cs_store_put_meta(gen_st, "sampler_tier_reason", why);
    cs_store_put_meta_u64(gen_st, "cuda_dropped", 0);
    cs_store_put_meta_u64(gen_st, "host_lost", 0);
    cs_store_put_meta_u64(gen_st, "clean_shutdown", 1);
}
