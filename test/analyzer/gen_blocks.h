/* gen_blocks.h: what the run generators (gen_run, gen_pyrun) share: their
 * records staged per kind into blocks and put through the real writer
 * (cs_store), committed every 64 MiB so that big runs fit. */
#ifndef CS_TEST_GEN_BLOCKS_H
#define CS_TEST_GEN_BLOCKS_H

#include <stdint.h>

#include "cudaspy/runfile.h"

extern struct cs_store *gen_st; /* the run being written */
extern const char *gen_prog;    /* for messages */
extern uint32_t gen_blk_pid;    /* cs_blk_hdr.pid of every block (0 = several) */

/** "PROG: WHAT: error" on stderr, exit 3. */
void gen_die(const char *what, int rc) __attribute__((noreturn));
/** Put the staged block of @p kind, if any. */
void gen_flush(unsigned kind);
/** The meta keys of a clean run from @p t0 to @p t_end, host data of
 * sampler tier @p tier ("none": @p why says why). */
void gen_meta(uint64_t t0, uint64_t t_end, const char *tier, const char *why);
/** Stage record @p rec of @p kind spanning [@p lo, @p hi]; a full block is put first. */
void gen_put(unsigned kind, const void *rec, uint64_t lo, uint64_t hi);

#endif
