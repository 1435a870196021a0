/* test_offpass.c: analyzer/model/offpass.c, the off-CPU intervals' first
 * pass beside the calls': per (run, pid, tid) in the order first seen, the
 * intervals in the window counted, split by class, the longest the first
 * of its length (by its place in the pass), the latest end; intervals
 * outside the window or ending before they start left out; thousands of
 * threads, interleaved, each found again. The whole analysis's reports are
 * byte-identical to placing them one by one (the goldens, data.calls_paths). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "model/offpass.h"

static struct cs_rec_offcpu iv(uint32_t pid, uint32_t tid, uint64_t t0, uint64_t t1,
                               uint8_t cls)
{
    struct cs_rec_offcpu r;

    memset(&r, 0, sizeof(r));
    r.pid = pid, r.tid = tid, r.t_start_ns = t0, r.t_end_ns = t1, r.cls = cls;
    r.runq_ns = 7;
    return r;
}

static int test_keys_totals_and_longest(void)
{
    struct m_run mr;
    struct offpass op = {0};
    struct cs_rec_offcpu r[] = {
        iv(10, 11, 100, 150, CS_OFF_SLEEP),   /* key 0: 50 */
        iv(10, 12, 200, 300, CS_OFF_PREEMPT), /* key 1: 100, its longest */
        iv(10, 11, 400, 500, CS_OFF_DISK),    /* key 0: 100, its longest (first) */
        iv(10, 11, 600, 700, CS_OFF_SLEEP),   /* key 0: 100 again: not the first */
        iv(10, 11, 50, 90, CS_OFF_SLEEP),     /* before the window: out */
        iv(10, 11, 900, 880, CS_OFF_SLEEP),   /* ends before it starts: out */
        iv(20, 21, 950, 1200, CS_OFF_SLEEP),  /* key 2: clipped to 50 at the window's end */
    };

    memset(&mr, 0, sizeof(mr));
    mr.win_lo_ns = 100, mr.win_hi_ns = 1000;
    CHECK_EQ(offpass_add(&op, 0, &mr, r, 4), 0);
    CHECK_EQ(offpass_add(&op, 0, &mr, r + 4, 3), 0);
    CHECK_EQ(op.nk, 3);
    CHECK(op.k[0].pid == 10 && op.k[0].tid == 11 && op.k[1].tid == 12 && op.k[2].pid == 20);
    CHECK_EQ(op.k[0].n, 3);
    CHECK_EQ(op.k[0].sleep_ns, 150);
    CHECK_EQ(op.k[0].disk_ns, 100);
    CHECK_EQ(op.k[0].vol, 3);
    CHECK_EQ(op.k[0].runq_ns, 21);
    CHECK_EQ(op.k[0].max_ns, 100);
    CHECK_EQ(op.k[0].max_at_ns, 400);
    CHECK_EQ(op.k[0].max_pos, 3); /* the third interval counted */
    CHECK_EQ(op.k[0].end_ns, 700);
    CHECK_EQ(op.k[1].preempt_ns, 100);
    CHECK_EQ(op.k[1].invol, 1);
    CHECK_EQ(op.k[1].max_pos, 2);
    CHECK_EQ(op.k[2].sleep_ns, 50);
    CHECK_EQ(op.k[2].end_ns, 1200); /* the record's end, as the run's extent takes it */
    CHECK_EQ(op.pos, 5);
    offpass_free(&op);
    return 0;
}

/* 4000 threads of two runs, their intervals interleaved: each key once,
 * in the order first seen, with all its intervals. */
static int test_many_threads(void)
{
    enum { NT = 4000, ROUNDS = 5 };
    struct m_run mr;
    struct offpass op = {0};

    memset(&mr, 0, sizeof(mr));
    mr.win_hi_ns = UINT64_MAX;
    for (uint32_t k = 0; k < ROUNDS; k++)
        for (uint32_t t = 0; t < NT; t++) {
            struct cs_rec_offcpu r = iv(1000 + t % 7, t, 10 * k, 10 * k + 5, CS_OFF_SLEEP);
            CHECK_EQ(offpass_add(&op, t % 2, &mr, &r, 1), 0);
        }
    CHECK_EQ(op.nk, NT);
    for (uint32_t t = 0; t < NT; t++) {
        CHECK(op.k[t].tid == t && op.k[t].run == t % 2 && op.k[t].pid == 1000 + t % 7);
        CHECK_EQ(op.k[t].n, ROUNDS);
        CHECK_EQ(op.k[t].sleep_ns, 5 * ROUNDS);
    }
    offpass_free(&op);
    return 0;
}

int main(void)
{
    RUN(test_keys_totals_and_longest);
    RUN(test_many_threads);
    return check_status();
}
