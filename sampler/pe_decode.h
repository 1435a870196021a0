/* pe_decode.h: perf ring records -> struct pe_ev, the sampler's own
 * fixed-size event. Owns the event-id -> role map and the raw-field reads;
 * the records themselves belong to pe_ring.c, their meaning to sched_fsm.c. */
#ifndef CUDASPY_SAMPLER_PE_DECODE_H
#define CUDASPY_SAMPLER_PE_DECODE_H

#include <linux/perf_event.h>
#include <stdint.h>

#include "pe_tracefs.h"

/* What an event id stands for. */
enum pe_role {
    PE_ROLE_NONE = 0,
    PE_ROLE_LEADER,     /* dummy with context_switch/task/comm */
    PE_ROLE_TP_SWITCH,  /* sched:sched_switch, blocked switch-outs only */
    PE_ROLE_TP_WAKING,  /* sched:sched_waking */
    PE_ROLE_TP_WAKENEW, /* sched:sched_wakeup_new */
    PE_ROLE_PAGE_ALLOC, /* kmem:mm_page_alloc, sampled */
    PE_ROLE_FAULT_MIN,  /* software minor faults, sampled */
    PE_ROLE_FAULT_MAJ   /* software major faults */
};

enum pe_kind {
    PE_EV_SWITCH_OUT = 1, /* a: next tid (CPU-wide) or 0; flags PE_F_PREEMPT */
    PE_EV_SWITCH_IN,      /* a: prev tid (CPU-wide, 0 = idle) */
    PE_EV_FORK,           /* pid/tid: child; a: parent pid, b: parent tid */
    PE_EV_EXIT,           /* pid/tid: the exiting thread; a: parent pid */
    PE_EV_COMM,           /* pid/tid; comm; flags PE_F_EXEC */
    PE_EV_LOST,           /* a: records lost */
    PE_EV_BLOCK,          /* sched_switch: pid/tid = prev; a: prev_state */
    PE_EV_WAKE,           /* pid/tid = waker (current); a: wakee tid; flags PE_F_IRQ */
    PE_EV_WAKE_NEW,       /* same, for a new task */
    PE_EV_PAGE_ALLOC,     /* a: pages (period << order) */
    PE_EV_FAULT_MIN,      /* a: weight (period) */
    PE_EV_FAULT_MAJ       /* a: weight */
};

#define PE_F_PREEMPT 0x01 /* switch-out while still runnable */
#define PE_F_EXEC    0x02 /* COMM record from exec */
#define PE_F_IRQ     0x04 /* tracepoint fired in hard/soft irq context */
#define PE_F_CPUWIDE 0x08 /* switch record carries the other side's tid */

/* One decoded record. */
struct pe_ev {
    uint64_t t_ns;   /* CLOCK_MONOTONIC */
    uint64_t seq;    /* arrival order, breaks time ties within a ring */
    uint64_t a, b;
    uint32_t pid, tid;
    uint16_t cpu;
    uint8_t kind;    /* enum pe_kind */
    uint8_t flags;   /* PE_F_* */
    char comm[16];
};

/* One event id's meaning. */
struct pe_id {
    uint64_t id;
    uint32_t period;   /* sample_period: the weight of one sample */
    uint8_t role;      /* enum pe_role */
};

/* Event ids sorted by id (the kernel hands them out in increasing order, so
 * adding is an append), one per event per CPU. */
struct pe_decoder {
    const struct pe_tracefs *tf;
    struct pe_id *ids;
    unsigned nids, cap;
};

/** Map kernel event id @p id to @p role (sampled every @p period events).
 * @return 0 or -ENOMEM */
int pe_decode_add(struct pe_decoder *d, uint64_t id, enum pe_role role, uint32_t period);

/** Free the id table; the decoder can be reused. */
void pe_decode_reset(struct pe_decoder *d);

/** Decode @p h from ring of CPU @p cpu. @return 1 decoded, 0 skip (unknown
 * or not interesting) */
int pe_decode(const struct pe_decoder *d, const struct perf_event_header *h, uint16_t cpu,
              struct pe_ev *ev);

#endif
