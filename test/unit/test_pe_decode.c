/* test_pe_decode.c: record decoding (sampler/pe_decode.c) on hand-built
 * records: the id table grows past any CPU count and finds every id, a
 * sched_switch sample yields prev_state from the tracefs offsets, a
 * page-allocation sample weighs period << order, CPU-wide switch records
 * carry the other side, a fault sample stamped with another perf user's id
 * is known by the id in its READ. */
#include <string.h>

#include "../check.h"
#include "pe_decode.h"

/* A SAMPLE record: header, id, pid/tid, time, cpu/res, raw_size, raw. */
static size_t build_sample(uint8_t *buf, uint64_t id, uint32_t tid, uint64_t t,
                           const uint8_t *raw, uint32_t raw_size)
{
    struct perf_event_header h = {PERF_RECORD_SAMPLE, 0, 0};
    uint32_t pidtid[2] = {tid, tid}, cpures[2] = {0, 0};
    size_t n = sizeof(h);

    memcpy(buf + n, &id, 8), n += 8;
    memcpy(buf + n, pidtid, 8), n += 8;
    memcpy(buf + n, &t, 8), n += 8;
    memcpy(buf + n, cpures, 8), n += 8;
    memcpy(buf + n, &raw_size, 4), n += 4;
    memcpy(buf + n, raw, raw_size), n += raw_size;
    n = (n + 7) & ~(size_t)7;
    h.size = (uint16_t)n;
    memcpy(buf, &h, sizeof(h));
    return n;
}

static void tracefs_6_18(struct pe_tracefs *tf)
{
    memset(tf, 0, sizeof(*tf));
    tf->common_flags = (struct pe_field){2, 1};
    tf->sw_prev_pid = (struct pe_field){24, 4};
    tf->sw_prev_state = (struct pe_field){32, 8};
    tf->sw_next_pid = (struct pe_field){56, 4};
    tf->wk_pid = (struct pe_field){24, 4};
    tf->pa_order = (struct pe_field){16, 4};
}

static int test_id_table_grows_and_finds_every_id(void)
{
    struct pe_tracefs tf;
    struct pe_decoder d = {&tf, NULL, 0, 0};
    uint8_t raw[64] = {0}, buf[256];
    uint32_t order = 0;
    struct pe_ev ev;

    tracefs_6_18(&tf);
    memcpy(raw + 16, &order, 4);
    for (uint64_t id = 1000; id < 1000 + 16 * 1024; id++)
        CHECK_OK(pe_decode_add(&d, id, PE_ROLE_PAGE_ALLOC, 1));
    for (uint64_t id = 1000; id < 1000 + 16 * 1024; id += 97) {
        build_sample(buf, id, 7, 5, raw, 40);
        CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 0, &ev), 1);
        CHECK_EQ(ev.kind, PE_EV_PAGE_ALLOC);
    }
    build_sample(buf, 999, 7, 5, raw, 40);
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 0, &ev), 0);
    pe_decode_reset(&d);
    return 0;
}

static int test_switch_sample_gives_prev_state(void)
{
    struct pe_tracefs tf;
    struct pe_decoder d = {&tf, NULL, 0, 0};
    uint8_t raw[68] = {0}, buf[256];
    uint64_t state = 2; /* D */
    uint32_t prev = 4242;
    struct pe_ev ev;

    tracefs_6_18(&tf);
    memcpy(raw + 24, &prev, 4);
    memcpy(raw + 32, &state, 8);
    CHECK_OK(pe_decode_add(&d, 5, PE_ROLE_TP_SWITCH, 1));
    build_sample(buf, 5, prev, 123, raw, sizeof(raw));
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 1, &ev), 1);
    CHECK_EQ(ev.kind, PE_EV_BLOCK);
    CHECK_EQ(ev.a, 2);
    CHECK_EQ(ev.b, prev);
    CHECK_EQ(ev.t_ns, 123);
    CHECK_EQ(ev.cpu, 1);
    pe_decode_reset(&d);
    return 0;
}

static int test_page_alloc_weighs_period_and_order(void)
{
    struct pe_tracefs tf;
    struct pe_decoder d = {&tf, NULL, 0, 0};
    uint8_t raw[40] = {0}, buf[256];
    uint32_t order = 9; /* a THP */
    struct pe_ev ev;

    tracefs_6_18(&tf);
    memcpy(raw + 16, &order, 4);
    CHECK_OK(pe_decode_add(&d, 9, PE_ROLE_PAGE_ALLOC, 16));
    build_sample(buf, 9, 1, 1, raw, sizeof(raw));
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 0, &ev), 1);
    CHECK_EQ(ev.a, 16u << 9);
    pe_decode_reset(&d);
    return 0;
}

static int test_cpu_wide_switch_out_names_next(void)
{
    struct pe_decoder d = {0};
    uint8_t buf[48] = {0};
    struct perf_event_header h = {PERF_RECORD_SWITCH_CPU_WIDE,
                                  PERF_RECORD_MISC_SWITCH_OUT |
                                      PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
                                  48};
    uint32_t np[2] = {300, 301}, pidtid[2] = {10, 11};
    uint64_t t = 77;
    struct pe_ev ev;

    memcpy(buf, &h, 8);
    memcpy(buf + 8, np, 8);
    memcpy(buf + 16, pidtid, 8); /* sample_id: pid,tid time cpu,res id */
    memcpy(buf + 24, &t, 8);
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 0, &ev), 1);
    CHECK_EQ(ev.kind, PE_EV_SWITCH_OUT);
    CHECK_EQ(ev.tid, 11);
    CHECK_EQ(ev.a, 301);
    CHECK_EQ(ev.b, 300);
    CHECK_EQ(ev.t_ns, 77);
    CHECK(ev.flags & PE_F_PREEMPT);
    CHECK(ev.flags & PE_F_CPUWIDE);
    return 0;
}

/* A fault SAMPLE: header, id, pid/tid, time, cpu/res, READ {value, id, lost}. */
static void build_fault(uint8_t *buf, uint64_t id, uint64_t read_id)
{
    struct perf_event_header h = {PERF_RECORD_SAMPLE, 0, 64};
    uint64_t body[7] = {id, 42ull << 32 | 42, 1000, 3, 77, read_id, 0};

    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), body, sizeof(body));
}

static int test_fault_sample_with_foreign_id_found_by_read_id(void)
{
    struct pe_decoder d = {0};
    uint8_t buf[64];
    struct pe_ev ev;

    CHECK_OK(pe_decode_add(&d, 20, PE_ROLE_FAULT_MIN, 16));
    CHECK_OK(pe_decode_add(&d, 21, PE_ROLE_FAULT_MAJ, 1));
    CHECK_OK(pe_decode_add(&d, 22, PE_ROLE_TP_SWITCH, 1));
    build_fault(buf, 9999, 20); /* the kernel gave it event 9999's id */
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 1, &ev), 1);
    CHECK_EQ(ev.kind, PE_EV_FAULT_MIN);
    CHECK_EQ(ev.a, 16);
    CHECK_EQ(ev.tid, 42);
    CHECK_EQ(ev.t_ns, 1000);
    build_fault(buf, 9999, 21);
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 1, &ev), 1);
    CHECK_EQ(ev.kind, PE_EV_FAULT_MAJ);
    build_fault(buf, 9999, 22); /* only fault events have READ */
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 1, &ev), 0);
    build_fault(buf, 9999, 9998);
    CHECK_EQ(pe_decode(&d, (struct perf_event_header *)buf, 1, &ev), 0);
    pe_decode_reset(&d);
    return 0;
}

int main(void)
{
    RUN(test_id_table_grows_and_finds_every_id);
    RUN(test_switch_sample_gives_prev_state);
    RUN(test_page_alloc_weighs_period_and_order);
    RUN(test_cpu_wide_switch_out_names_next);
    RUN(test_fault_sample_with_foreign_id_found_by_read_id);
    return check_status();
}
