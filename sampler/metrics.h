/* metrics.h: `--metrics HOST:PORT`, the run's live figures for Prometheus,
 * served by a process of their own beside the collector (metrics.c). */
#ifndef CUDASPY_SAMPLER_METRICS_H
#define CUDASPY_SAMPLER_METRICS_H

/** Is @p addr a HOST:PORT the metrics server can listen on? @return 0 or -EINVAL */
int metrics_check_addr(const char *addr);

/** Start `cudaspy-analyze metrics --listen ADDR <our pid>` (from
 * $CUDASPY_ANALYZE, else beside this program) detached from us: it is
 * never our child, so a launch mode's subreaper sees the traced tree end
 * as before, and it ends by itself once we are gone (analyzer/views/
 * metrics.c). Call before becoming a subreaper. @return 0 or -errno (a
 * failed exec is only reported by the child, on stderr) */
int metrics_start(const char *addr);

#endif
