/* privs.c: what cudaspy-sampler may trace and which privileges it keeps.
 * privs_may_trace() refuses another user's process unless we are root;
 * privs_drop() runs once the run file, the socket and the perf events are
 * open: no new privileges ever (PR_SET_NO_NEW_PRIVS), and of the
 * capabilities only those the rest of a run can need (perf events for
 * processes that register later, reading their /proc files, locking perf
 * rings). Everything else (setuid, kill, chown, net, modules, ...) is
 * dropped from the effective, permitted and inheritable sets. The list is
 * in docs/reliability.md. */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "privs.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

/* Capabilities a running sampler still uses. */
static const int privs_keep[] = {
    CAP_PERFMON,         /* perf_event_open for processes registering later */
    CAP_SYS_ADMIN,       /* the same on kernels before 5.8 (no CAP_PERFMON) */
    CAP_SYS_PTRACE,      /* per-thread events and /proc/PID files of other users */
    CAP_DAC_READ_SEARCH, /* /proc and tracefs files root may read */
    CAP_DAC_OVERRIDE,    /* tracefs files (tier B falls back to them) */
    CAP_IPC_LOCK,        /* perf rings past RLIMIT_MEMLOCK / perf_event_mlock_kb */
};

int privs_may_trace(pid_t pid, char *why, size_t n)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    if (stat(path, &st) < 0) {
        snprintf(why, n, "pid %d: no such process", (int)pid);
        return -ESRCH;
    }
    if (geteuid() == 0 || st.st_uid == geteuid())
        return 0;
    snprintf(why, n, "pid %d: owned by uid %u, not by uid %u; only root may trace another "
             "user's process", (int)pid, (unsigned)st.st_uid, (unsigned)geteuid());
    return -EPERM;
}

uint64_t privs_keep_mask(void)
{
    uint64_t m = 0;

    for (size_t i = 0; i < sizeof(privs_keep) / sizeof(privs_keep[0]); i++)
        m |= 1ull << privs_keep[i];
    return m;
}

int privs_drop(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    uint64_t keep = privs_keep_mask(), eff, prm;

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    if (syscall(SYS_capget, &h, d) < 0)
        return -errno;
    eff = ((uint64_t)d[1].effective << 32 | d[0].effective) & keep;
    prm = ((uint64_t)d[1].permitted << 32 | d[0].permitted) & keep;
    d[0].effective = (uint32_t)eff;
    d[1].effective = (uint32_t)(eff >> 32);
    d[0].permitted = (uint32_t)prm;
    d[1].permitted = (uint32_t)(prm >> 32);
    d[0].inheritable = d[1].inheritable = 0;
    if (syscall(SYS_capset, &h, d) < 0)
        return -errno;
    return 0;
}
