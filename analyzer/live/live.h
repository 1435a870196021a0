/* live/live.h: a run file read again and again while its collector writes
 * it (issue 33): the engine under `cudaspy top`, the Prometheus metrics and
 * the flight recorder's triggers. Each sample is a whole analysis
 * (analysis.h) of the run's last seconds as they stand, read without
 * waiting for the collector; the consumers read its docs/json.md object. */
#ifndef CUDASPY_ANALYZER_LIVE_H
#define CUDASPY_ANALYZER_LIVE_H

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis.h"
#include "cudaspy/error.h"

struct live;

/* One sample: the analysis of [since_ns, end_ns) of the run (ns from the
 * run's start), and what the run file said when it was read. */
struct live_sample {
    struct analysis *a;  /* owned by the sample; NULL when nothing is recorded yet */
    json_t *json;        /* analysis_json(a), or NULL with a */
    uint64_t since_ns, end_ns;
    int writing;         /* its collector (on this host) is still writing it */
};

/** Open the run file @p path for live reading (it need not be finished, and
 * may not exist yet: the first sample then fails with CS_E_IO or the open's
 * error). @p o: the analysis options each sample uses (NULL: defaults);
 * since_ns and until_ns are the engine's own. @return 0 or -ENOMEM */
int live_open(const char *path, const struct analysis_opts *o, struct live **out);

/** Analyse the run's last @p window_ns (0: the whole run) as it stands now
 * into @p s (live_sample_clear() it after use). The run's end is now on
 * CLOCK_MONOTONIC while its collector writes it on this host, else the
 * run's recorded end. @return 0, -EAGAIN (the file is there, its first
 * commit is not: look again), or the run-file error with @p err set */
int live_sample(struct live *l, uint64_t window_ns, struct live_sample *s, struct cs_err *err);

/* How long a live view waits for a run file that is not there yet (the
 * recorder may start after it). */
#define LIVE_WAIT_NS 5000000000ull

/** Is @p rc, what a view's first live_sample() (or a pid's run-file
 * lookup) failed with after @p waited_ns of trying, for good: no run file,
 * or a file that is no run, after LIVE_WAIT_NS? -EAGAIN (a first commit
 * to come) never is. Once a view has had a sample, it keeps trying. */
int live_error_final(int rc, uint64_t waited_ns);

/** Free what @p s holds; safe to call twice. */
void live_sample_clear(struct live_sample *s);

/** Free @p s's analysis (s->a NULL after), keeping s->json and the times.
 * @note The analysis holds the run file open. A process must not open one
 * run file twice at once (the reader finds its map by the file in
 * /proc/self/maps, runfile_read.c, and takes the other open's: every read
 * then fails as "an entry points past the end of the file"; LMDB's locks
 * are per process too), so a consumer that keeps a sample across
 * live_sample() calls releases or clears it before the next call. */
void live_sample_release(struct live_sample *s);

/** The run file's path. */
const char *live_path(const struct live *l);

/** Free. Accepts NULL. */
void live_close(struct live *l);

/** Seconds of a live view's option (decimals: "0.5"; at most a day; 0 only
 * with @p zero_ok) into *@p ns. @return 0 or -1 */
int live_parse_secs(const char *s, uint64_t *ns, int zero_ok);

/** A live view's usage error: "cudaspy-analyze CMD: WHAT [ARG]" and where
 * its help is, on stderr. @return 2 (the exit status) */
int live_usage_error(const char *cmd, const char *what, const char *arg);

/** After the options (getopt's @p optind): exactly one RUN|PID left, else
 * live_usage_error(). @return 0 or 2 */
int live_one_target(const char *cmd, int argc, int optind);

/* The run a command line names (live_target.c): a run file, or the pid of
 * a program (or of its cudaspy-sampler) being recorded, whose run file is
 * the one that sampler writes (cudaspy/samplerfind.h). */
struct live_target {
    char path[PATH_MAX]; /* the run file; "" while a pid's sampler has none open */
    pid_t pid;           /* the pid named, 0 for a file */
    pid_t sampler;       /* its sampler, 0 for a file */
};

/** Resolve @p arg: digits that name no file are a pid, anything else a run
 * file (which need not exist yet). @return 0 (path "" while the sampler
 * has not opened its run file yet: live_target_poll() again), or -ESRCH
 * (no cudaspy-sampler records that pid) */
int live_target_init(struct live_target *t, const char *arg);

/** For a pid: find the run file if not known yet, and whether its sampler
 * still runs. @return 1 while the sampler runs (or for a file), 0 once it
 * is gone; t->path may be set by the call */
int live_target_poll(struct live_target *t);

#endif
