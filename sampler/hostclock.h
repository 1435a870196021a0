/* hostclock.h: the host's identity and clock pairs of a run (issue 32,
 * docs/multihost.md). A run's times are its host's CLOCK_MONOTONIC; to put
 * the runs of several hosts on one timeline the analyzer needs each host's
 * monotonic clock against a clock the hosts share: CLOCK_REALTIME (NTP,
 * milliseconds apart) and, where the host has one, a PTP hardware clock
 * (/dev/ptp0, microseconds). The collector samples pairs at the start,
 * every HC_EVERY_NS (doubled each time the list fills, so a long run keeps
 * HC_MAX pairs spread over all of it) and at the end, into the meta
 * clock_pairs ("MONO:REALTIME[:PTP] ..."), beside host (CUDASPY_HOST or the
 * host name) and boot_id (one monotonic clock per boot). */
#ifndef CUDASPY_SAMPLER_HOSTCLOCK_H
#define CUDASPY_SAMPLER_HOSTCLOCK_H

#include <stddef.h>
#include <stdint.h>

#define HC_MAX 64
#define HC_EVERY_NS 2000000000ull

struct hc_pair {
    uint64_t mono_ns, rt_ns, ptp_ns; /* ptp_ns 0: no PTP clock */
};

struct hostclock {
    struct hc_pair p[HC_MAX];
    size_t n;
    uint64_t every_ns, next_ns, t0_ns;
    int ptp_fd;                 /* -1: none */
    /* test only (CUDASPY_TEST_REALTIME_SHIFT=NS[:PPM]): this "host"'s
     * real-time clock runs NS off and PPM fast, so that runs recorded on
     * one machine look like runs of hosts whose clocks disagree */
    int64_t shift_ns;
    double shift_ppm;
};

/** Open the PTP clock if any, read the test shift, take the first pair at
 * @p now_ns. @return 0, or -EINVAL for a malformed test shift (none is
 * applied; the pair is taken all the same) */
int hostclock_init(struct hostclock *h, uint64_t now_ns);

/** Take a pair when one is due (or always, with @p force). @return 1 when
 * the list changed (write the meta again), 0 if not */
int hostclock_tick(struct hostclock *h, uint64_t now_ns, int force);

/** The pairs as clock_pairs' text into @p buf. @return its length (the
 * length it needs when @p n is short, as snprintf) */
size_t hostclock_str(const struct hostclock *h, char *buf, size_t n);

/** REALTIME minus MONOTONIC now, the test shift included (meta
 * realtime_offset_ns). */
uint64_t hostclock_rt_offset(const struct hostclock *h);

/** The host name for the meta (CUDASPY_HOST, else gethostname) into @p buf. */
void hostclock_host(char *buf, size_t n);

/** This boot's id (/proc/sys/kernel/random/boot_id) into @p buf, "" if none. */
void hostclock_boot_id(char *buf, size_t n);

void hostclock_close(struct hostclock *h);

#endif
