/* test_pe_ring.c: the perf ring reader (sampler/pe_ring.c) on a real
 * one-page ring fed by this thread's own context switches: records that
 * straddle the end of the ring come back whole, and every record is read
 * exactly once. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "pe_decode.h"
#include "pe_event.h"
#include "pe_ring.h"

static void nap(void)
{
    struct timespec ts = {0, 100000};

    nanosleep(&ts, NULL);
}

/* A per-task dummy with context_switch on this thread, one data page. */
static int open_self(struct pe_ring *r, int *fd)
{
    struct perf_event_attr a;

    pe_event_attr(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
    a.context_switch = 1;
    a.exclude_kernel = 1;
    *fd = pe_event_open(&a, 0, -1);
    if (*fd < 0)
        return *fd;
    if (pe_ring_open(r, *fd, 1) < 0)
        return -1;
    return pe_event_enable(*fd);
}

static int test_wrapped_records_come_back_whole(void)
{
    struct pe_decoder dec = {0};
    struct pe_ring r;
    const struct perf_event_header *h;
    unsigned outs = 0, ins = 0, wrapped = 0;
    int fd;

    CHECK_OK(open_self(&r, &fd));
    for (int round = 0; round < 300; round++) {
        nap(); /* one switch out and one in, 2 x 40 bytes */
        pe_ring_begin(&r);
        while ((h = pe_ring_next(&r)) != NULL) {
            struct pe_ev ev;

            wrapped += r.copy && (const void *)h == (const void *)r.copy;
            CHECK_EQ(h->type, PERF_RECORD_SWITCH);
            CHECK(pe_decode(&dec, h, 0, &ev));
            CHECK_EQ(ev.tid, (uint32_t)gettid());
            *(ev.kind == PE_EV_SWITCH_OUT ? &outs : &ins) += 1;
        }
        pe_ring_end(&r);
    }
    pe_event_disable(fd);
    pe_ring_close(&r);
    close(fd);
    CHECK(outs >= 200); /* most naps switch; 103 records fill the ring */
    CHECK(ins + 1 >= outs && ins <= outs + 1);
    CHECK(wrapped > 0);
    return 0;
}

static int test_open_refuses_non_power_of_two(void)
{
    struct pe_ring r;

    CHECK_ERR(pe_ring_open(&r, -1, 3), -EINVAL);
    pe_ring_close(&r);
    return 0;
}

int main(void)
{
    RUN(test_wrapped_records_come_back_whole);
    RUN(test_open_refuses_non_power_of_two);
    return check_status();
}
