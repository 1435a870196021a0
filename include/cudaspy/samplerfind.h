/* samplerfind.h: which cudaspy-sampler records a process, and which run
 * file it writes, read from /proc (interpose/sampler_find.c, library
 * cs_samplerfind). Used by `cudaspy ctl` (interpose/ctl.c) and by
 * `cudaspy-analyze top|metrics PID` (analyzer/live/live_target.c). */
#ifndef CUDASPY_SAMPLERFIND_H
#define CUDASPY_SAMPLERFIND_H

#include <stddef.h>
#include <sys/types.h>

/** Is @p pid a live cudaspy-sampler (its /proc comm)? @return 1 or 0 */
int cs_sampler_is(pid_t pid);

/** The cudaspy-sampler recording @p pid: @p pid itself when it is one, its
 * nearest sampler ancestor (`cudaspy record` launched it), or one started
 * with `--pid PID` (the shim's, under LD_PRELOAD). @return its pid, or 0 */
pid_t cs_sampler_find(pid_t pid);

/** The run file sampler @p s writes, as an absolute path into @p path: the
 * link in /proc/S/fd that ends in ".lmdb", else its command line's -o or
 * --output (relative to /proc/S/cwd). @return 0, -ENOENT (no run file
 * open yet and none named), -ENAMETOOLONG, or -errno of /proc */
int cs_sampler_run(pid_t s, char *path, size_t n);

#endif
