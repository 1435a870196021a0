/* host_int.h: the host sampler's internal state, shared by host.c (tiers A
 * and B: perf rings), host_poll.c (tier C: /proc polling) and pe_pfm.c
 * (libpfm4 counters). Not part of the contract: host.h is. */
#ifndef CUDASPY_SAMPLER_HOST_INT_H
#define CUDASPY_SAMPLER_HOST_INT_H

#include <stdint.h>

#include "host.h"
#include "pe_decode.h"
#include "pe_ring.h"
#include "pe_tracefs.h"
#include "sched_fsm.h"

#define HOST_HOLDBACK_NS 5000000ull    /* merge holdback across CPU rings */
#define HOST_CHECK_NS 1000000000ull    /* schedstat cross-check period */
#define HOST_POLL_NS 100000000ull      /* tier C poll period */

struct host_cpu {
    struct pe_ring ring;  /* leader's ring; ring.base NULL = none */
    int leader;           /* fd, -1 = none */
    uint64_t t_last;      /* latest record time read from the ring, ns */
};

struct host_poll;         /* tier C, host_poll.c */
struct pe_pfm;            /* libpfm4 counters, pe_pfm.c */

struct host {
    struct host_opts o;
    struct collector *c;
    struct sched_fsm *s;
    char tier;                 /* 'A', 'B', 'C', 0 = not open */
    char reason[512];          /* sampler_tier_reason */
    int ncpu;
    struct host_cpu *cpus;
    int *fds;                  /* every perf fd we own (leaders included) */
    size_t nfds, capfds;
    struct pe_tracefs tf;
    struct pe_decoder dec;
    struct pe_ev *pend;        /* decoded, waiting for the holdback */
    size_t npend, cappend;
    uint64_t seq;
    uint64_t t_check, t_enabled;
    uint64_t lost_spans_seen;  /* LOST records already answered with a rescan */
    int stat_fd, psi_fd;
    struct host_poll *poll;
    struct pe_pfm *pfm;
    int finished;
};

/** Remember @p fd so host_free closes it. @return 0 or -ENOMEM */
int host_keep_fd(struct host *h, int fd);

/** Append to h->reason ("; "-separated). */
void host_reason(struct host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Tier C (host_poll.c). */
int host_poll_open(struct host *h);
void host_poll_drain(struct host *h, uint64_t now_ns, int force);
void host_poll_free(struct host_poll *p);

#endif
