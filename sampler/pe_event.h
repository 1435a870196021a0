/* pe_event.h: one perf_event file descriptor (open, configure, read).
 * Owns nothing but the attr recipe shared by every event of a ring; rings
 * are pe_ring.c's, decoding is pe_decode.c's. */
#ifndef CUDASPY_SAMPLER_PE_EVENT_H
#define CUDASPY_SAMPLER_PE_EVENT_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>

/* sample_type shared by every event of a ring, so the sample_id trailer of
 * non-sample records is {pid,tid}{time}{cpu,res}{id} everywhere. */
#define PE_SAMPLE_BASE                                                          \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

/** Fill @p a for an event of @p type / @p config: base sample_type,
 * sample_id_all, CLOCK_MONOTONIC, disabled, read_format ID|LOST, period 1. */
void pe_event_attr(struct perf_event_attr *a, uint32_t type, uint64_t config);

/** perf_event_open with O_CLOEXEC. @return fd, or -errno */
int pe_event_open(struct perf_event_attr *a, pid_t pid, int cpu);

/** The kernel's id of @p fd. @return 0 or -errno */
int pe_event_id(int fd, uint64_t *id);

/** Redirect @p fd's records into @p out_fd's ring. @return 0 or -errno */
int pe_event_set_output(int fd, int out_fd);

/** Install a tracepoint filter. @return 0 or -errno */
int pe_event_set_filter(int fd, const char *filter);

/** Enable / disable. @return 0 or -errno */
int pe_event_enable(int fd);
int pe_event_disable(int fd);

/** read() an event opened with read_format ID|LOST.
 * @return 0 or -errno */
int pe_event_read(int fd, uint64_t *value, uint64_t *lost);

#endif
