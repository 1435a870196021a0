/* collector_priv.h: the collector as driven by cudaspy-sampler's main loop
 * (main.c). The host sampler's side is collector.h.
 * Usage: collector_new -> collector_open -> [collector_flush_start] ->
 *        loop { poll(collector_pollfds);
 *        collector_step; [host_drain]; collector_tick } -> collector_finish
 *        -> collector_free */
#ifndef CUDASPY_SAMPLER_COLLECTOR_PRIV_H
#define CUDASPY_SAMPLER_COLLECTOR_PRIV_H

#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture.h"
#include "collector.h"
#include "cudaspy/error.h"

struct collector_opts {
    const char *path;      /* run file */
    const char *listen;    /* "@name" (abstract) or a path */
    uint64_t map_bytes;    /* initial LMDB map; 0 = default */
    uint64_t commit_ns;    /* commit interval; default 50 ms */
    uint64_t sync_ns;      /* flush-to-disk interval; default 5 s */
    uint64_t max_map_bytes; /* the map never grows past this; 0 = no limit */
    uint64_t duty_ns;      /* > 0: record in phases this long, on and off in
                            * turn from t_start_ns (record --duty) */
    uint64_t max_size_bytes; /* > 0: cap the run file (record --max-size; flight_rec.h) */
    struct capture_opts capture; /* capture ranges (capture.h); none set: the whole run */
};

/* Totals for the end-of-run line and meta. */
struct collector_stats {
    uint64_t cuda_records;  /* CUDA records staged */
    uint64_t host_records;  /* host records staged */
    uint64_t cuda_dropped;  /* records the shims dropped (full rings) */
    uint64_t conns;         /* connections accepted */
    uint64_t bad_conns;     /* connections dropped for malformed messages */
    int write_failed;       /* a commit failed: the run file stops at the last good one */
};

/** Allocate. @return NULL when out of memory. */
struct collector *collector_new(void);

/** Create the run file and start listening. @return 0 or a negative code
 * (@p err says what). */
int collector_open(struct collector *c, const struct collector_opts *o, struct cs_err *err);

/** Hand the run file's periodic sync to a thread of the store's own
 * (cs_store_flush_start), so that collector_tick never waits for the disk.
 * Call after privs_drop(): capabilities are per thread, and a thread started
 * before would keep them all. @return 0, or < 0 (collector_tick then syncs
 * in the loop, as without it). */
int collector_flush_start(struct collector *c);

/** Called with each pid that registers a shim ring (e.g. host_add_pid). */
void collector_on_register(struct collector *c, void (*fn)(void *arg, pid_t pid), void *arg);

/** Fill pollfds (listening socket and connections). @return how many */
int collector_pollfds(struct collector *c, struct pollfd *fds, int max);

/** Accept, read control messages, drain every ring. @return 0 or a negative
 * code on a run-file failure (recording stops; the loop goes on). */
int collector_step(struct collector *c, uint64_t now_ns);

/** Close aged blocks, commit every commit_ns, refresh the TSC calibration;
 * every sync_ns, check the store's flush thread (which syncs the file at
 * that interval without holding this loop up), or sync here when it could
 * not start. @return 0 or the store's error. */
int collector_tick(struct collector *c, uint64_t now_ns);

/** How long the main loop may wait before the next collector_step(): 0 when
 * a ring still holds more than one pass takes, 1 ms while records flow (any
 * in the last 100 ms), else 10 ms (a 1 MiB sub-ring holds ~10 ms at 1 M
 * records/s); under
 * duty_ns never past the next phase boundary. */
int collector_wait_ms(struct collector *c);

/** 1 during an off phase of duty_ns or outside a capture range
 * (collector_tick switches and pauses the shims; the caller pauses host
 * sampling to match). */
int collector_paused(struct collector *c);

/** The flight recorder's trigger matched (record --keep-on): keep every
 * record of [@p t0_ns, @p t1_ns] (absolute ns) whatever the cap evicts
 * around it; meta flight_kept says so. @return 0, -EINVAL without --max-size */
int collector_flight_keep(struct collector *c, uint64_t t0_ns, uint64_t t1_ns);

/** A capture start (@p on 1) or stop asked from outside at @p now_ns
 * (--capture signal: SIGUSR1, SIGUSR2); takes effect at once. */
void collector_capture_signal(struct collector *c, int on, uint64_t now_ns);

/** Connections still open. */
int collector_live_conns(struct collector *c);

/** Record that @p pid exited at @p now_ns with wait status @p status (-1 if
 * unknown). */
void collector_exited(struct collector *c, pid_t pid, int status, uint64_t now_ns);

/** Accept what is pending, read every connection to its end, drain, close
 * all blocks, write end meta (t_end_ns, counters, clean_shutdown = @p clean),
 * commit and sync. */
int collector_finish(struct collector *c, int clean, uint64_t now_ns);

/** Totals so far. */
void collector_stats(struct collector *c, struct collector_stats *st);

/** The address clients connect to (as given or generated). */
const char *collector_addr(struct collector *c);

/** Close everything, free. Accepts NULL. */
void collector_free(struct collector *c);

#endif
