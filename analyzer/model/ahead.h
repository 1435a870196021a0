/* model/ahead.h: a run file's blocks read and decoded on a thread of their
 * own, one block ahead of the caller's work on the last (issue 36 point 4:
 * loading 200 M calls reads and decodes every block twice, a third of its
 * time). The caller sees the blocks in the cursor's order, on its thread. */
#ifndef CUDASPY_ANALYZER_AHEAD_H
#define CUDASPY_ANALYZER_AHEAD_H

#include "cudaspy/error.h"
#include "cudaspy/record.h"
#include "cudaspy/runfile.h"

/* What the caller does with each block; a nonzero return stops the read
 * and is ahead_read()'s. */
typedef int (*ahead_fn)(const struct cs_blk_hdr *h, const void *recs, void *arg);

/** Every block left in cursor @p c, through @p fn. The cursor is the
 * reader thread's until this returns; the caller closes it. Reads on the
 * caller's thread where no thread can be had.
 * @return 0, fn's negative return, or cs_cursor_next()'s error (in @p err) */
int ahead_read(struct cs_cursor *c, ahead_fn fn, void *arg, struct cs_err *err);

#endif
