/* pe_decode.c: perf ring records -> struct pe_ev.
 * Knows the layouts of SAMPLE, SWITCH(_CPU_WIDE), FORK, EXIT, COMM and LOST
 * for the shared sample_type (pe_event.h); reads raw tracepoint fields
 * through the offsets pe_tracefs.c found. */
#include "pe_decode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The sample_id trailer of non-sample records: {pid,tid}{time}{cpu,res}{id}. */
struct sample_id {
    uint32_t pid, tid;
    uint64_t time;
    uint32_t cpu, res;
    uint64_t id;
};

/* The head of a SAMPLE: IDENTIFIER, TID, TIME, CPU, then RAW if present
 * (tracepoints) or READ (software events, host.c). */
struct sample_head {
    uint64_t id;
    uint32_t pid, tid;
    uint64_t time;
    uint32_t cpu, res;
};

/* READ of one event with read_format ID|LOST. */
struct sample_read {
    uint64_t value, id, lost;
};

#define TRACE_FLAG_HARDIRQ 0x08
#define TRACE_FLAG_SOFTIRQ 0x10

int pe_decode_add(struct pe_decoder *d, uint64_t id, enum pe_role role, uint32_t period)
{
    unsigned i;

    if (d->nids == d->cap) {
        unsigned cap = d->cap ? 2 * d->cap : 64;
        struct pe_id *v = realloc(d->ids, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        d->ids = v;
        d->cap = cap;
    }
    for (i = d->nids; i > 0 && d->ids[i - 1].id > id; i--) /* keep sorted */
        d->ids[i] = d->ids[i - 1];
    d->ids[i] = (struct pe_id){id, period ? period : 1, (uint8_t)role};
    d->nids++;
    return 0;
}

void pe_decode_reset(struct pe_decoder *d)
{
    free(d->ids);
    d->ids = NULL;
    d->nids = d->cap = 0;
}

static const struct pe_id *find_id(const struct pe_decoder *d, uint64_t id)
{
    unsigned lo = 0, hi = d->nids;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;

        if (d->ids[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->nids && d->ids[lo].id == id ? &d->ids[lo] : NULL;
}

static void from_sample_id(const struct perf_event_header *h, struct pe_ev *ev)
{
    struct sample_id s;

    memcpy(&s, (const uint8_t *)h + h->size - sizeof(s), sizeof(s));
    ev->pid = s.pid;
    ev->tid = s.tid;
    ev->t_ns = s.time;
}

static int decode_raw(const struct pe_decoder *d, int role, const uint8_t *raw, uint32_t n,
                      uint32_t period, struct pe_ev *ev)
{
    const struct pe_tracefs *tf = d->tf;
    uint64_t fl = pe_field_get(&tf->common_flags, raw, n);

    switch (role) {
    case PE_ROLE_TP_SWITCH:
        ev->kind = PE_EV_BLOCK;
        ev->a = pe_field_get(&tf->sw_prev_state, raw, n);
        ev->b = pe_field_get(&tf->sw_prev_pid, raw, n);
        return 1;
    case PE_ROLE_TP_WAKING:
    case PE_ROLE_TP_WAKENEW:
        ev->kind = role == PE_ROLE_TP_WAKING ? PE_EV_WAKE : PE_EV_WAKE_NEW;
        ev->a = pe_field_get(&tf->wk_pid, raw, n);
        if (fl & (TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ))
            ev->flags |= PE_F_IRQ;
        return 1;
    case PE_ROLE_PAGE_ALLOC:
        ev->kind = PE_EV_PAGE_ALLOC;
        ev->a = (uint64_t)period << (pe_field_get(&tf->pa_order, raw, n) & 31);
        return 1;
    default:
        return 0;
    }
}

/* A software event's sample whose IDENTIFIER is not ours. The kernel
 * (do_perf_sw_event, seen on 6.18) prepares one sample for all the events
 * a fault overflows, and the first to fill in id, pid/tid and time leaves
 * them for the rest: when another perf user's event comes first (it joined
 * the CPU's list later), our sample carries its id, pid namespace and clock
 * (host.c bounds the time). READ is written from our own event, so its id
 * is ours. Tracepoints prepare a sample per event and keep their ids. */
static const struct pe_id *find_read_id(const struct pe_decoder *d,
                                        const struct perf_event_header *h)
{
    const uint8_t *p = (const uint8_t *)(h + 1) + sizeof(struct sample_head);
    const struct pe_id *e;
    struct sample_read rd;

    if (h->size < sizeof(*h) + sizeof(struct sample_head) + sizeof(rd))
        return NULL;
    memcpy(&rd, p, sizeof(rd));
    e = find_id(d, rd.id);
    return e && (e->role == PE_ROLE_FAULT_MIN || e->role == PE_ROLE_FAULT_MAJ) ? e : NULL;
}

static int decode_sample(const struct pe_decoder *d, const struct perf_event_header *h,
                         struct pe_ev *ev)
{
    const uint8_t *p = (const uint8_t *)(h + 1);
    const struct pe_id *e;
    struct sample_head s;
    uint32_t raw_size = 0;

    if (h->size < sizeof(*h) + sizeof(s))
        return 0;
    memcpy(&s, p, sizeof(s));
    e = find_id(d, s.id);
    if (!e)
        e = find_read_id(d, h);
    if (!e)
        return 0;
    ev->pid = s.pid;
    ev->tid = s.tid;
    ev->t_ns = s.time;
    if (e->role == PE_ROLE_FAULT_MIN || e->role == PE_ROLE_FAULT_MAJ) {
        ev->kind = e->role == PE_ROLE_FAULT_MIN ? PE_EV_FAULT_MIN : PE_EV_FAULT_MAJ;
        ev->a = e->period;
        return 1;
    }
    p += sizeof(s);
    if (h->size < sizeof(*h) + sizeof(s) + 4)
        return 0;
    memcpy(&raw_size, p, 4);
    if (sizeof(*h) + sizeof(s) + 4 + raw_size > h->size)
        return 0;
    return decode_raw(d, e->role, p + 4, raw_size, e->period, ev);
}

static int decode_task(const struct perf_event_header *h, struct pe_ev *ev, uint8_t kind)
{
    const uint32_t *u = (const uint32_t *)(h + 1); /* pid, ppid, tid, ptid, time */

    ev->kind = kind;
    ev->pid = u[0];
    ev->a = u[1];
    ev->tid = u[2];
    ev->b = u[3];
    memcpy(&ev->t_ns, u + 4, 8);
    return 1;
}

static int decode_comm(const struct perf_event_header *h, struct pe_ev *ev)
{
    const uint32_t *u = (const uint32_t *)(h + 1);
    size_t room = h->size - sizeof(*h) - 8 - sizeof(struct sample_id);

    from_sample_id(h, ev);
    ev->kind = PE_EV_COMM;
    ev->pid = u[0];
    ev->tid = u[1];
    if (room > sizeof(ev->comm) - 1)
        room = sizeof(ev->comm) - 1;
    memcpy(ev->comm, u + 2, room);
    ev->comm[room] = 0;
    if (h->misc & PERF_RECORD_MISC_COMM_EXEC)
        ev->flags |= PE_F_EXEC;
    return 1;
}

static int decode_switch(const struct perf_event_header *h, struct pe_ev *ev)
{
    from_sample_id(h, ev);
    ev->kind = (h->misc & PERF_RECORD_MISC_SWITCH_OUT) ? PE_EV_SWITCH_OUT : PE_EV_SWITCH_IN;
    if (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
        ev->flags |= PE_F_PREEMPT;
    if (h->type == PERF_RECORD_SWITCH_CPU_WIDE) {
        const uint32_t *u = (const uint32_t *)(h + 1); /* next_prev_pid, next_prev_tid */

        ev->a = u[1];
        ev->b = u[0];
        ev->flags |= PE_F_CPUWIDE;
    }
    return 1;
}

int pe_decode(const struct pe_decoder *d, const struct perf_event_header *h, uint16_t cpu,
              struct pe_ev *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->cpu = cpu;
    switch (h->type) {
    case PERF_RECORD_SAMPLE:
        return decode_sample(d, h, ev);
    case PERF_RECORD_SWITCH:
    case PERF_RECORD_SWITCH_CPU_WIDE:
        return decode_switch(h, ev);
    case PERF_RECORD_FORK:
        return decode_task(h, ev, PE_EV_FORK);
    case PERF_RECORD_EXIT:
        return decode_task(h, ev, PE_EV_EXIT);
    case PERF_RECORD_COMM:
        return decode_comm(h, ev);
    case PERF_RECORD_LOST: {
        const uint64_t *u = (const uint64_t *)(h + 1); /* id, lost */

        from_sample_id(h, ev);
        ev->kind = PE_EV_LOST;
        ev->a = u[1];
        return 1;
    }
    default:
        return 0;
    }
}
