/* privs.h: cudaspy-sampler's tracing permission check and privilege drop
 * (privs.c). */
#ifndef CUDASPY_SAMPLER_PRIVS_H
#define CUDASPY_SAMPLER_PRIVS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** May we trace process @p pid? Root may trace any; others only their own
 * (owner of /proc/PID equals our effective uid).
 * @return 0, -ESRCH (no such process) or -EPERM; @p why gets one line. */
int privs_may_trace(pid_t pid, char *why, size_t n);

/** Set PR_SET_NO_NEW_PRIVS and reduce the effective and permitted
 * capabilities to privs_keep_mask(), inheritable to none. Call once the
 * run file, socket and perf events are open. @return 0 or -errno */
int privs_drop(void);

/** Bit mask (bit N = capability N) of the capabilities privs_drop() keeps. */
uint64_t privs_keep_mask(void);

#endif
