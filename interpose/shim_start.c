/* shim_start.c: auto-start of the collector under plain LD_PRELOAD. The
 * first process of a tree that loads the shim (no $CUDASPY_SOCK yet) starts
 * cudaspy-sampler in attach mode from its constructor: double fork and
 * setsid, so the sampler is neither a child of the program (a program that
 * waits for any child never reaps it) nor in its process tree. It waits up
 * to 3 s for the sampler's ready pipe, then exports $CUDASPY_SOCK so every
 * descendant records into the same run. On failure: one stderr line and
 * recording off; the program carries on either way. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define START_WAIT_MS 3000
#define START_MAX_ARGS 16
#define START_READY_FD 3  /* the sampler's --ready-fd */

extern char **environ;

struct start_plan {
    char sampler[4096];
    char out[4096];
    char addr[64];
    char pid[16];
    char fd[16];
    char *argv[START_MAX_ARGS];
    char **envp; /* environ without LD_PRELOAD, plus CUDASPY_INERT=1 */
};

static int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static int env_off(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "0") == 0;
}

#ifndef SHIM_LIB_TO_BIN
#define SHIM_LIB_TO_BIN "../bin" /* installed layout: libdir -> bindir */
#endif

/* $CUDASPY_SAMPLER, else cudaspy-sampler next to libcudaspy.so (build
 * tree), else in the bindir of an installed tree. */
static int sampler_path(char *buf, size_t n)
{
    const char *env = getenv("CUDASPY_SAMPLER");
    Dl_info di;
    const char *slash;
    int dir_len;

    if (env && *env)
        return snprintf(buf, n, "%s", env) < (int)n ? 0 : -1;
    if (!dladdr((void *)sampler_path, &di) || di.dli_fname == NULL)
        return -1;
    slash = strrchr(di.dli_fname, '/');
    if (slash == NULL)
        return snprintf(buf, n, "./cudaspy-sampler") < (int)n ? 0 : -1;
    dir_len = (int)(slash - di.dli_fname);
    if (snprintf(buf, n, "%.*s/cudaspy-sampler", dir_len, di.dli_fname) >= (int)n)
        return -1;
    if (access(buf, X_OK) == 0)
        return 0;
    return snprintf(buf, n, "%.*s/%s/cudaspy-sampler", dir_len, di.dli_fname,
                    SHIM_LIB_TO_BIN) < (int)n
               ? 0
               : -1;
}

static char **child_env(void)
{
    size_t n = 0, k = 0;
    char **e;

    while (environ && environ[n])
        n++;
    e = calloc(n + 2, sizeof(*e));
    if (e == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            e[k++] = environ[i];
    e[k++] = "CUDASPY_INERT=1";
    e[k] = NULL;
    return e;
}

static int plan_make(struct start_plan *p)
{
    const char *out = getenv("CUDASPY_OUTPUT");
    struct timespec ts;
    int a = 0;

    if (sampler_path(p->sampler, sizeof(p->sampler)) < 0)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(p->pid, sizeof(p->pid), "%u", shim_pid_);
    snprintf(p->fd, sizeof(p->fd), "%d", START_READY_FD);
    snprintf(p->addr, sizeof(p->addr), "@cudaspy-%u-%08lx", shim_pid_,
             (unsigned long)((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20)) & 0xfffffffful);
    if (out && *out)
        snprintf(p->out, sizeof(p->out), "%s", out);
    else
        snprintf(p->out, sizeof(p->out), "./cudaspy-%u.lmdb", shim_pid_);
    p->argv[a++] = p->sampler;
    p->argv[a++] = "--pid";
    p->argv[a++] = p->pid;
    p->argv[a++] = "--listen";
    p->argv[a++] = p->addr;
    p->argv[a++] = "--ready-fd";
    p->argv[a++] = p->fd;
    p->argv[a++] = "-o";
    p->argv[a++] = p->out;
    if (env_off("CUDASPY_HOST"))
        p->argv[a++] = "--no-host";
    if (env_on("CUDASPY_QUIET"))
        p->argv[a++] = "-q";
    p->argv[a] = NULL;
    p->envp = child_env();
    return p->envp ? 0 : -1;
}

/* In the intermediate child: new session, fork the sampler, exit. Only
 * async-signal-safe calls from here on. The sampler keeps stderr, gets
 * /dev/null as stdin and stdout (nothing of ours reaches the program's
 * stdout) and the ready pipe as fd 3; every other inherited descriptor is
 * closed, so it holds none of the program's pipes open. */
static void spawn_child(const struct start_plan *p, int ready_fd, int null_fd)
{
    pid_t pid;
    int r;

    setsid();
    pid = fork();
    if (pid != 0)
        _exit(pid < 0 ? 1 : 0);
    r = fcntl(ready_fd, F_DUPFD, START_READY_FD + 1);
    if (r < 0)
        _exit(127);
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(r, START_READY_FD); /* dup2 clears close-on-exec */
    close_range(START_READY_FD + 1, ~0u, 0);
    execve(p->sampler, p->argv, p->envp);
    _exit(127);
}

/* Wait for the sampler's ready byte. @return 0, -ETIMEDOUT, or -EPIPE when
 * it closed the pipe first (could not exec, or failed to start). */
static int wait_ready(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    char c;
    int r;

    do
        r = poll(&pfd, 1, START_WAIT_MS);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return -ETIMEDOUT;
    if (r < 0)
        return -errno;
    return read(fd, &c, 1) == 1 ? 0 : -EPIPE;
}

static int spawn(struct start_plan *p, int pipe_r, int pipe_w, int null_fd)
{
    pid_t pid = fork();
    int st;

    if (pid == 0)
        spawn_child(p, pipe_w, null_fd);
    close(pipe_w);
    if (pid < 0)
        return -errno;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return wait_ready(pipe_r);
}

int shim_start_collector(void)
{
    struct start_plan p;
    int fds[2], null_fd, rc = -EINVAL;
    char why[4400];

    memset(&p, 0, sizeof(p));
    null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || pipe2(fds, O_CLOEXEC) != 0) {
        rc = -errno;
    } else {
        if (plan_make(&p) == 0)
            rc = spawn(&p, fds[0], fds[1], null_fd);
        else
            close(fds[1]);
        close(fds[0]);
    }
    if (null_fd >= 0)
        close(null_fd);
    free(p.envp);
    if (rc == 0) {
        setenv(CS_ENV_SOCK, p.addr, 1);
        shim_ring_set_sock(p.addr);
        return 0;
    }
    if (rc == -ETIMEDOUT)
        snprintf(why, sizeof(why), "cannot start %s (not ready within %d ms)",
                 p.sampler[0] ? p.sampler : "cudaspy-sampler", START_WAIT_MS);
    else if (rc == -EPIPE)
        snprintf(why, sizeof(why), "cannot start %s (it exited before it was ready)",
                 p.sampler[0] ? p.sampler : "cudaspy-sampler");
    else
        snprintf(why, sizeof(why), "cannot start %s (%s)",
                 p.sampler[0] ? p.sampler : "cudaspy-sampler", strerror(-rc));
    shim_ring_stop(why);
    setenv("CUDASPY_DISABLE", "1", 1); /* descendants stay quiet too */
    return -1;
}
