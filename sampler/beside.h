/* beside.h: the processes that read the run beside the collector as it
 * writes it, each a cudaspy-analyze of its own (beside.c): the metrics
 * server (--metrics HOST:PORT, Prometheus) and the flight recorder's
 * trigger (--keep-on EXPR). */
#ifndef CUDASPY_SAMPLER_BESIDE_H
#define CUDASPY_SAMPLER_BESIDE_H

/** Is @p addr a HOST:PORT the metrics server can listen on? @return 0 or -EINVAL */
int metrics_check_addr(const char *addr);

/** Start `cudaspy-analyze metrics --listen ADDR <our pid>` (from
 * $CUDASPY_ANALYZE, else beside this program) detached from us: it is
 * never our child, so a launch mode's subreaper sees the traced tree end
 * as before, and it ends by itself once we are gone (analyzer/views/
 * metrics.c). Call before becoming a subreaper. @return 0 or -errno (a
 * failed exec is only reported by the child, on stderr) */
int metrics_start(const char *addr);

/** Start `cudaspy-analyze watch --keep-on EXPR --notify <our pid> <our
 * pid>` (analyzer/live/watch.c) as metrics_start() starts the server: it
 * signals us (SIGRTMIN) when EXPR first holds, and ends with us. */
int watch_start(const char *expr);

#endif
