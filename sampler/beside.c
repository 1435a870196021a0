/* beside.c: the sampler's side of `--metrics HOST:PORT` and `--keep-on
 * EXPR`: starts the metrics server (cudaspy-analyze metrics,
 * analyzer/views/metrics.c) and the trigger's watcher (cudaspy-analyze
 * watch, analyzer/live/watch.c), each in a process of its own that reads
 * the run file as the collector writes it, so the collector spends
 * nothing on them. Owns nothing once started. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudaspy/inetaddr.h"
#include "beside.h"

int metrics_check_addr(const char *addr)
{
    struct sockaddr_storage ss;
    socklen_t len;

    return cs_inet_addr(addr, &ss, &len);
}

/* cudaspy-analyze's path into @p buf: $CUDASPY_ANALYZE, else beside us. */
static void analyze_path(char *buf, size_t n)
{
    const char *env = getenv("CUDASPY_ANALYZE");
    char self[PATH_MAX], *slash;
    ssize_t len;

    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return;
    }
    len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[len > 0 ? len : 0] = '\0';
    if ((slash = strrchr(self, '/')) != NULL)
        *slash = '\0';
    snprintf(buf, n, "%s/cudaspy-analyze", len > 0 ? self : ".");
}

/* In the server's process: only stdin (/dev/null), stdout and stderr stay
 * open: the --ready-fd pipe and the like are the collector's alone. */
static void close_others(void)
{
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    if (null >= 0)
        dup2(null, STDIN_FILENO);
    while (d && (e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (fd > STDERR_FILENO && fd != dirfd(d))
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (d)
        closedir(d);
}

/* Start cudaspy-analyze with @p args (after its path) detached from us. */
static int analyze_start(char **args)
{
    char prog[PATH_MAX + 32];
    int st;
    pid_t mid;

    analyze_path(prog, sizeof(prog));
    args[0] = prog;
    if ((mid = fork()) < 0)
        return -errno;
    if (mid == 0) { /* fork again and leave: it is reparented away from us */
        if (fork() == 0) {
            close_others();
            execv(prog, args);
            fprintf(stderr, "cudaspy-sampler: %s: cannot execute %s (%s)\n", args[1], prog,
                    strerror(errno));
        }
        _exit(0);
    }
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

int metrics_start(const char *addr)
{
    char pid[24], *args[] = {NULL, "metrics", "--listen", (char *)addr, pid, NULL};

    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    return analyze_start(args);
}

int watch_start(const char *expr)
{
    char pid[24], *args[] = {NULL, "watch", "--keep-on", (char *)expr, "--notify", pid, pid, NULL};

    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    return analyze_start(args);
}
