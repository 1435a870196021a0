/* capture.h: which parts of a run are recorded (issue 33): capture ranges
 * set by time (--delay, --duration), from outside (--capture signal:
 * SIGUSR1 starts, SIGUSR2 stops; `cudaspy ctl PID start|stop`) or by the
 * program (--capture cudaProfilerApi, nvtx:NAME, steps:A-B: its shims turn
 * their own recording on and off and send a CS_ENT_CAPTURE entry). The
 * collector asks capture_want() at every tick and pauses the shims and the
 * perf events outside the ranges, as record --duty does in its off phases;
 * the ranges it recorded go to the run meta (capture_ranges) and the
 * analyzer looks at them alone (docs/capture.md). */
#ifndef CUDASPY_SAMPLER_CAPTURE_H
#define CUDASPY_SAMPLER_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "cudaspy/capture.h"

struct capture_opts {
    uint64_t delay_ns;    /* nothing recorded before t_start + delay */
    uint64_t duration_ns; /* > 0: nothing after t_start + delay + duration */
    int signal;           /* recording starts stopped; capture_signal() drives it */
    int program;          /* the program bounds the ranges (cudaProfilerApi, nvtx:,
                             steps:): its shims send them, capture_mark() follows */
    char spec[CS_CAPTURE_NAME_MAX + 64]; /* --capture's words as given (program modes) */
};

struct capture_range {
    uint64_t t0_ns, t1_ns; /* t1_ns 0: still open */
};

struct capture {
    struct capture_opts o;
    uint64_t t_start_ns;
    int sig_on;            /* the last of start (1) and stop (0) asked from outside */
    int prog_on;           /* the last bound the program set (o.program) */
    int on;                /* recording now */
    struct capture_range *r;
    size_t n, cap;
};

/** Start @p k at @p t_start_ns with @p o. */
void capture_init(struct capture *k, const struct capture_opts *o, uint64_t t_start_ns);

/** Is any capture option set? (none: the whole run is recorded) */
int capture_active(const struct capture *k);

/** Should the run be recorded at @p now_ns? */
int capture_want(const struct capture *k, uint64_t now_ns);

/** Recording turned on (@p on 1) or off at @p now_ns: the ranges follow.
 * @return 0 or -ENOMEM (the range is then not kept) */
int capture_set(struct capture *k, int on, uint64_t now_ns);

/** Does a range hold @p t_ns (an open one: from its start on)? A record of
 * a call that entered outside every range is dropped: a process's first
 * calls come before the collector has paused its ring. */
int capture_holds(const struct capture *k, uint64_t t_ns);

/** A start (1) or stop (0) asked from outside (--capture signal). */
void capture_signal(struct capture *k, int on);

/** A range the program opened (1) or closed (0) (o.program). */
void capture_mark(struct capture *k, int on);

/** Nanoseconds from @p now_ns to the next time capture_want() may change
 * by itself (the delay's or the duration's end); UINT64_MAX: none. */
uint64_t capture_next_ns(const struct capture *k, uint64_t now_ns);

/** The ranges as "T0-T1,T0-T1" (ns on the run's clock; an open one ends
 * at @p now_ns) into @p buf. @return the length it needed */
size_t capture_ranges_str(const struct capture *k, uint64_t now_ns, char *buf, size_t n);

/** What the options asked, as "signal, delay 1.5 s, duration 10 s" (the
 * parts set) into @p buf. */
void capture_mode_str(const struct capture *k, char *buf, size_t n);

void capture_free(struct capture *k);

#endif
