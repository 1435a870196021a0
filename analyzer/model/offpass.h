/* model/offpass.h: the off-CPU intervals' first pass, on a thread of its
 * own beside the calls' (issue 36 point 4: at 200 M + 100 M records the two
 * first passes read 2.4 and 4.8 GB, one after the other). It touches
 * nothing of the model but the runs' windows: per (run, pid, tid), in the
 * order first seen, how many intervals lie in the window and the totals
 * the process keeps of them; model.c merges them in that order, creating
 * processes and threads as the pass in place would have. */
#ifndef CUDASPY_ANALYZER_OFFPASS_H
#define CUDASPY_ANALYZER_OFFPASS_H

#include <stdint.h>

#include "cudaspy/record.h"
#include "model.h"

/* One thread's intervals in the window. */
struct offpass_key {
    uint32_t run, pid, tid;
    uint64_t n;
    uint64_t sleep_ns, disk_ns, preempt_ns, runq_ns, vol, invol;
    uint64_t max_ns, max_at_ns, max_pos; /* the longest, the first of them (its place) */
    uint64_t end_ns;                     /* the latest end */
};

struct offpass {
    struct offpass_key *k; /* in the order first seen */
    uint32_t nk, cap;
    struct m_hash *ix;     /* (run, pid, tid) hashed -> index in k, probed */
    uint32_t last;         /* the key of the last interval (they come in runs) */
    uint64_t pos;          /* intervals counted */
};

/** Count @p n intervals @p r of run @p run (window of @p mr).
 * @return 0 or -ENOMEM */
int offpass_add(struct offpass *op, uint32_t run, const struct m_run *mr,
                const struct cs_rec_offcpu *r, uint32_t n);

void offpass_free(struct offpass *op);

#endif
