/* ctl.c: `cudaspy ctl PID start|stop`, capture ranges from outside (issue
 * 33, docs/capture.md): finds the cudaspy-sampler recording PID and sends
 * it SIGUSR1 (start) or SIGUSR2 (stop); the sampler was started with
 * --capture signal (record --capture signal, or CUDASPY_CAPTURE=signal for
 * LD_PRELOAD users). Owns nothing. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "ctl.h"

#define CTL_UP 16 /* ancestors looked at, at most */

static const char ctl_usage_text[] =
    "Usage: cudaspy ctl PID start|stop\n"
    "\n"
    "Start or stop recording a program that runs under 'cudaspy record --capture\n"
    "signal' (or with CUDASPY_CAPTURE=signal and LD_PRELOAD): each start..stop is\n"
    "one capture range of the run file, and the analysis looks at those alone.\n"
    "PID is the program's, or its cudaspy-sampler's.\n"
    "\n"
    "Exit status: 0 sent; 1 no sampler records PID; 2 usage error.\n"
    "\n"
    "EXAMPLE\n"
    "  cudaspy record --capture signal -o run.lmdb -- python train.py &\n"
    "  cudaspy ctl $(pgrep -f train.py) start; sleep 30; cudaspy ctl ... stop\n";

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

/* Is @p pid a cudaspy-sampler? */
static int is_sampler(pid_t pid)
{
    char comm[64];

    return proc_read(pid, "comm", comm, sizeof(comm)) > 0 &&
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

/* The sampler recording @p pid: itself, an ancestor (record launched it),
 * or one started with --pid PID (LD_PRELOAD). @return its pid, 0 */
static pid_t find_sampler(pid_t pid)
{
    DIR *d;
    struct dirent *e;
    pid_t p = pid, found = 0;

    for (int up = 0; p > 1 && up < CTL_UP; up++, p = parent_of(p))
        if (is_sampler(p))
            return p;
    if ((d = opendir("/proc")) == NULL)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        pid_t s = isdigit((unsigned char)e->d_name[0]) ? (pid_t)atoi(e->d_name) : 0;
        if (s > 0 && is_sampler(s) && attaches_to(s, pid))
            found = s;
    }
    closedir(d);
    return found;
}

int ctl_main(int argc, char **argv)
{
    pid_t pid, s;
    char *end;
    int sig;

    if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        fputs(ctl_usage_text, stdout);
        return 0;
    }
    if (argc != 4 || (strcmp(argv[3], "start") != 0 && strcmp(argv[3], "stop") != 0)) {
        fprintf(stderr, "cudaspy: ctl needs a PID and start or stop\n"
                        "Try 'cudaspy ctl --help'\n");
        return 2;
    }
    errno = 0;
    pid = (pid_t)strtol(argv[2], &end, 10);
    if (*end || errno || pid <= 0) {
        fprintf(stderr, "cudaspy: ctl: invalid pid '%s'\nTry 'cudaspy ctl --help'\n", argv[2]);
        return 2;
    }
    if ((s = find_sampler(pid)) == 0) {
        fprintf(stderr, "cudaspy: ctl: pid %d: no cudaspy-sampler records it\n", (int)pid);
        return 1;
    }
    sig = argv[3][2] == 'a' ? SIGUSR1 : SIGUSR2; /* "start" : "stop" */
    if (kill(s, sig) < 0) {
        fprintf(stderr, "cudaspy: ctl: pid %d: cannot signal its sampler %d (%s)\n", (int)pid,
                (int)s, strerror(errno));
        return 1;
    }
    return 0;
}
