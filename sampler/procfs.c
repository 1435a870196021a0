/* procfs.c: /proc reads for the host sampler and the collector: tree walk,
 * per-task stat, status and schedstat parsing, command lines, /proc/stat
 * and PSI, whether a process is still the one that started, start times.
 * Files are read with one read/pread each; nothing here keeps state. */
#include "procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull

int procfs_pids_has(const struct procfs_pids *l, pid_t pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == pid)
            return 1;
    return 0;
}

int procfs_pids_add(struct procfs_pids *l, pid_t pid)
{
    if (procfs_pids_has(l, pid))
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        pid_t *v = realloc(l->v, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = pid;
    return 0;
}

void procfs_pids_free(struct procfs_pids *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int read_file(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return -errno;
    rc = procfs_pread(fd, buf, n);
    close(fd);
    return rc;
}

int procfs_pread(int fd, char *buf, size_t n)
{
    ssize_t got = pread(fd, buf, n - 1, 0);

    if (got < 0)
        return -errno;
    buf[got] = 0;
    return (int)got;
}

int procfs_task_open(pid_t pid, pid_t tid, const char *name)
{
    char p[96];
    int fd;

    snprintf(p, sizeof(p), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
    fd = open(p, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int procfs_tids(pid_t pid, struct procfs_pids *out)
{
    char p[64];
    DIR *d;
    struct dirent *e;
    int rc = 0;

    snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
    d = opendir(p);
    if (!d)
        return -ENOENT;
    while (rc == 0 && (e = readdir(d)) != NULL)
        if (isdigit((unsigned char)e->d_name[0]))
            rc = procfs_pids_add(out, (pid_t)atoi(e->d_name));
    closedir(d);
    return rc;
}

/* Append the children listed in every thread's children file of @p pid. */
static int add_children(pid_t pid, pid_t skip, struct procfs_pids *out)
{
    struct procfs_pids tids = {0};
    char p[96], buf[4096];
    int rc = procfs_tids(pid, &tids);

    for (size_t i = 0; rc >= 0 && i < tids.n; i++) {
        snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)pid, (int)tids.v[i]);
        if (read_file(p, buf, sizeof(buf)) < 0)
            continue;
        for (char *s = buf, *end; *s; s = end) {
            long c = strtol(s, &end, 10);

            if (end == s)
                break;
            if (c > 0 && c != skip && procfs_pids_add(out, (pid_t)c) < 0)
                rc = -ENOMEM;
        }
    }
    procfs_pids_free(&tids);
    return rc == -ENOENT ? 0 : rc;
}

int procfs_tree(pid_t root, pid_t skip, struct procfs_pids *out)
{
    size_t first = out->n;
    int rc = procfs_pids_add(out, root);

    /* out grows while we walk it: breadth first over new entries. */
    for (size_t i = first; rc == 0 && i < out->n; i++)
        rc = add_children(out->v[i], skip, out);
    return rc;
}

int procfs_stat_parse(const char *text, struct procfs_stat *st)
{
    const char *l = strchr(text, '('), *r = strrchr(text, ')');
    unsigned long long v[20];
    char state;
    size_t n;

    if (!l || !r || r < l)
        return -EINVAL;
    memset(st, 0, sizeof(*st));
    n = (size_t)(r - l - 1);
    if (n > sizeof(st->comm) - 1)
        n = sizeof(st->comm) - 1;
    memcpy(st->comm, l + 1, n);
    /* fields 3.. after ')': state ppid pgrp session tty tpgid flags minflt
     * cminflt majflt cmajflt utime stime cutime cstime prio nice nthr itreal start */
    if (sscanf(r + 2, "%c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                      "%llu %llu %llu %llu %llu %llu",
               &state, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
               &v[10], &v[11], &v[12], &v[13], &v[14], &v[15], &v[16], &v[17], &v[18]) != 20)
        return -EINVAL;
    st->state = state;
    st->ppid = (pid_t)v[0];
    st->minflt = v[6];
    st->majflt = v[8];
    st->start_ticks = v[18];
    return 0;
}

int procfs_stat_read(pid_t pid, pid_t tid, struct procfs_stat *st)
{
    char p[96], buf[1024];
    int rc;

    if (tid)
        snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    else
        snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    rc = read_file(p, buf, sizeof(buf));
    return rc < 0 ? rc : procfs_stat_parse(buf, st);
}

int procfs_cmdline(pid_t pid, char *buf, size_t n)
{
    char p[64];
    int len;

    snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
    len = read_file(p, buf, n);
    if (len < 0)
        return len;
    while (len > 0 && buf[len - 1] == 0)
        len--;
    for (int i = 0; i < len; i++)
        if (buf[i] == 0)
            buf[i] = ' ';
    buf[len] = 0;
    return len;
}

static int find_u64(const char *text, const char *key, uint64_t *v)
{
    const char *p = strstr(text, key);

    if (!p)
        return -EINVAL;
    *v = strtoull(p + strlen(key), NULL, 10);
    return 0;
}

int procfs_status_ctxt(const char *text, uint64_t *vol, uint64_t *invol)
{
    if (find_u64(text, "\nvoluntary_ctxt_switches:", vol) < 0 ||
        find_u64(text, "\nnonvoluntary_ctxt_switches:", invol) < 0)
        return -EINVAL;
    return 0;
}

int procfs_schedstat_parse(const char *text, struct procfs_schedstat *s)
{
    unsigned long long a, b, c;

    if (sscanf(text, "%llu %llu %llu", &a, &b, &c) != 3)
        return -EINVAL;
    s->oncpu_ns = a;
    s->run_delay_ns = b;
    s->pcount = c;
    return 0;
}

static int parse_proc_stat(const char *buf, struct procfs_sys *s)
{
    unsigned long long v[10] = {0};
    uint64_t run = 0, blk = 0;

    if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) < 8)
        return -EINVAL;
    s->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    s->idle = v[3];
    s->iowait = v[4];
    s->steal = v[7];
    find_u64(buf, "\nprocs_running ", &run);
    find_u64(buf, "\nprocs_blocked ", &blk);
    s->procs_running = (uint32_t)run;
    s->procs_blocked = (uint32_t)blk;
    return 0;
}

int procfs_sys_read(int stat_fd, int psi_fd, struct procfs_sys *s)
{
    char buf[8192];
    int rc;

    memset(s, 0, sizeof(*s));
    rc = procfs_pread(stat_fd, buf, sizeof(buf));
    if (rc < 0)
        return rc;
    rc = parse_proc_stat(buf, s);
    if (rc < 0 || psi_fd < 0)
        return rc;
    if (procfs_pread(psi_fd, buf, sizeof(buf)) > 0)
        find_u64(buf, "total=", &s->psi_some_us); /* first line is "some" */
    return 0;
}

uint64_t procfs_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t procfs_ticks_to_mono_ns(uint64_t ticks)
{
    struct timespec b, m;
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t boot_ns, mono_ns, t_ns;

    if (ticks == 0 || hz <= 0)
        return 0;
    clock_gettime(CLOCK_BOOTTIME, &b);
    clock_gettime(CLOCK_MONOTONIC, &m);
    boot_ns = (uint64_t)b.tv_sec * NS_PER_S + (uint64_t)b.tv_nsec;
    mono_ns = (uint64_t)m.tv_sec * NS_PER_S + (uint64_t)m.tv_nsec;
    t_ns = ticks * (NS_PER_S / (uint64_t)hz);
    /* boottime = monotonic + time suspended; shift by the current gap. */
    return t_ns > boot_ns - mono_ns ? t_ns - (boot_ns - mono_ns) : 1;
}

int procfs_pid_alive(pid_t pid, uint64_t start_ticks)
{
    struct procfs_stat st;

    if (procfs_stat_read(pid, 0, &st) < 0)
        return 0;
    if (st.state == 'Z' || st.state == 'X' || st.state == 'x')
        return 0;
    return start_ticks == 0 || st.start_ticks == start_ticks;
}
