/* procfs.h: the /proc reads the host sampler and the collector need: the
 * tree walk used to seed the tracked set, per-task stat/status/schedstat,
 * command lines, system-wide /proc/stat and /proc/pressure/cpu, and start
 * times (the collector's process table, its check that a process lives). No state beyond kept-open
 * fds owned by the caller; what the numbers mean is sched_fsm.c's business. */
#ifndef CUDASPY_SAMPLER_PROCFS_H
#define CUDASPY_SAMPLER_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A growable list of pids. */
struct procfs_pids {
    pid_t *v;
    size_t n, cap;
};

/** Append @p pid unless present. @return 0 or -ENOMEM */
int procfs_pids_add(struct procfs_pids *l, pid_t pid);
int procfs_pids_has(const struct procfs_pids *l, pid_t pid);
void procfs_pids_free(struct procfs_pids *l);

/** Append @p root and all its descendants (recursive children walk over
 * every thread's children file), never @p skip. @return 0 or -ENOMEM */
int procfs_tree(pid_t root, pid_t skip, struct procfs_pids *out);

/** Append the thread ids of process @p pid. @return 0, -ENOENT, -ENOMEM */
int procfs_tids(pid_t pid, struct procfs_pids *out);

/* Fields of /proc/<pid>/task/<tid>/stat. */
struct procfs_stat {
    char state;           /* R S D T Z ... */
    pid_t ppid;
    uint64_t minflt, majflt;
    uint64_t start_ticks; /* since boot, USER_HZ */
    char comm[16];
};

/** Read stat of thread @p tid of @p pid (tid 0 = the process). @return 0 or -errno */
int procfs_stat_read(pid_t pid, pid_t tid, struct procfs_stat *st);

/** Parse a stat text (kept-open fd users). @return 0 or -EINVAL */
int procfs_stat_parse(const char *text, struct procfs_stat *st);

/** Command line of @p pid, args joined by spaces, NUL-terminated.
 * @return its length, or -errno */
int procfs_cmdline(pid_t pid, char *buf, size_t n);

/** voluntary / nonvoluntary_ctxt_switches of a status text. @return 0 or -EINVAL */
int procfs_status_ctxt(const char *text, uint64_t *vol, uint64_t *invol);

/* /proc/<pid>/task/<tid>/schedstat */
struct procfs_schedstat {
    uint64_t oncpu_ns, run_delay_ns, pcount;
};

/** Parse a schedstat text. @return 0 or -EINVAL */
int procfs_schedstat_parse(const char *text, struct procfs_schedstat *s);

/** pread the whole of a kept-open proc file into @p buf (NUL-terminated).
 * @return bytes read, or -errno (-ESRCH once the task is gone) */
int procfs_pread(int fd, char *buf, size_t n);

/** Open /proc/<pid>/task/<tid>/<name> read-only. @return fd or -errno */
int procfs_task_open(pid_t pid, pid_t tid, const char *name);

/* System-wide counters. */
struct procfs_sys {
    uint64_t total, idle, iowait, steal; /* all CPUs, USER_HZ ticks */
    uint32_t procs_running, procs_blocked;
    uint64_t psi_some_us;                /* /proc/pressure/cpu some total; 0 if absent */
};

/** Read /proc/stat and /proc/pressure/cpu through kept-open @p stat_fd and
 * @p psi_fd (-1 = skip). @return 0 or -errno */
int procfs_sys_read(int stat_fd, int psi_fd, struct procfs_sys *s);

/** CLOCK_MONOTONIC ns of a start time in USER_HZ ticks since boot.
 * @return 0 for @p ticks 0 (unknown); 1 for a start before the monotonic
 * clock's origin (the time suspended since) */
uint64_t procfs_ticks_to_mono_ns(uint64_t ticks);

/** Is process @p pid alive and not a zombie, and (unless @p start_ticks is
 * 0) the one that started at @p start_ticks (stat field 22)? */
int procfs_pid_alive(pid_t pid, uint64_t start_ticks);

/** Current CLOCK_MONOTONIC ns. */
uint64_t procfs_now_ns(void);

#endif
