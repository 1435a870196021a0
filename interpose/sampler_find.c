/* sampler_find.c: finds the cudaspy-sampler that records a process, and the
 * run file it writes, from /proc (cudaspy/samplerfind.h). Owns no state;
 * signalling the sampler is ctl.c's, reading the run file the analyzer's. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudaspy/samplerfind.h"

#define FIND_UP 16 /* ancestors looked at, at most */

/* /proc/PID/FILE into @p buf (NUL-terminated). @return its length, -1 */
static ssize_t proc_read(pid_t pid, const char *file, char *buf, size_t n)
{
    char path[64];
    FILE *f;
    size_t got;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = '\0';
    return (ssize_t)got;
}

int cs_sampler_is(pid_t pid)
{
    char comm[64];

    return pid > 0 && proc_read(pid, "comm", comm, sizeof(comm)) > 0 &&
           strncmp(comm, "cudaspy-sampler", 15) == 0;
}

static pid_t parent_of(pid_t pid)
{
    char st[1024], *p;

    if (proc_read(pid, "stat", st, sizeof(st)) <= 0 || (p = strrchr(st, ')')) == NULL)
        return 0;
    return (pid_t)strtol(p + 4, NULL, 10); /* ") S PPID" */
}

/* Does the sampler @p s attach to @p pid (--pid PID: the shim started it)? */
static int attaches_to(pid_t s, pid_t pid)
{
    char cmd[4096], want[32];
    ssize_t n = proc_read(s, "cmdline", cmd, sizeof(cmd));

    snprintf(want, sizeof(want), "%d", (int)pid);
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(cmd + i) + 1)
        if (strcmp(cmd + i, "--pid") == 0 && i + 6 < n && strcmp(cmd + i + 6, want) == 0)
            return 1;
    return 0;
}

pid_t cs_sampler_find(pid_t pid)
{
    DIR *d;
    struct dirent *e;
    pid_t p = pid, found = 0;

    for (int up = 0; p > 1 && up < FIND_UP; up++, p = parent_of(p))
        if (cs_sampler_is(p))
            return p;
    if ((d = opendir("/proc")) == NULL)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        pid_t s = isdigit((unsigned char)e->d_name[0]) ? (pid_t)atoi(e->d_name) : 0;
        if (s > 0 && cs_sampler_is(s) && attaches_to(s, pid))
            found = s;
    }
    closedir(d);
    return found;
}

/* An open file of @p s whose name ends in ".lmdb" into @p path. @return 0,
 * -ENOENT or -errno of /proc/S/fd */
static int run_from_fds(pid_t s, char *path, size_t n)
{
    char dir[64], link[PATH_MAX + 64], target[PATH_MAX];
    struct dirent *e;
    DIR *d;
    int rc = -ENOENT;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)s);
    if ((d = opendir(dir)) == NULL)
        return -errno;
    while (rc == -ENOENT && (e = readdir(d)) != NULL) {
        ssize_t len;
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        if ((len = readlink(link, target, sizeof(target) - 1)) < 6)
            continue;
        target[len] = '\0';
        if (strcmp(target + len - 5, ".lmdb") == 0 && target[0] == '/')
            rc = (size_t)len < n ? (snprintf(path, n, "%s", target), 0) : -ENAMETOOLONG;
    }
    closedir(d);
    return rc;
}

/* The -o FILE of the sampler's command line (before its "--"), or NULL. */
static const char *output_arg(const char *cmd, ssize_t n)
{
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(cmd + i) + 1) {
        const char *a = cmd + i, *next = i + (ssize_t)strlen(a) + 1 < n ? a + strlen(a) + 1 : NULL;
        if (strcmp(a, "--") == 0)
            return NULL;
        if (strncmp(a, "--output=", 9) == 0)
            return a + 9;
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && next)
            return next;
    }
    return NULL;
}

/* The run file named on the sampler's command line, made absolute. */
static int run_from_cmdline(pid_t s, char *path, size_t n)
{
    char cmd[8192], cwd[PATH_MAX], link[64];
    ssize_t len = proc_read(s, "cmdline", cmd, sizeof(cmd)), clen;
    const char *o = len > 0 ? output_arg(cmd, len) : NULL;
    int w;

    if (o == NULL || *o == '\0')
        return -ENOENT;
    snprintf(link, sizeof(link), "/proc/%d/cwd", (int)s);
    if (o[0] != '/' && (clen = readlink(link, cwd, sizeof(cwd) - 1)) > 0)
        cwd[clen] = '\0';
    else if (o[0] != '/')
        return -errno;
    w = o[0] == '/' ? snprintf(path, n, "%s", o) : snprintf(path, n, "%s/%s", cwd, o);
    return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int cs_sampler_run(pid_t s, char *path, size_t n)
{
    int rc = run_from_fds(s, path, n);

    return rc == 0 || rc == -ENAMETOOLONG ? rc : run_from_cmdline(s, path, n);
}
