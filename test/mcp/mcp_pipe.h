/* mcp_pipe.h: drive a `cudaspy-analyze mcp` process over pipes, one JSON
 * line out, one JSON line back. Shared by test/mcp/test_mcp_proto.c and
 * bench/bench_mcp.c; header-only so neither needs a library.
 * Usage: mcp_pipe_start() → mcp_pipe_call()... → mcp_pipe_stop(). */
#ifndef CUDASPY_TEST_MCP_PIPE_H
#define CUDASPY_TEST_MCP_PIPE_H

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct mcp_pipe {
    pid_t pid;
    int in, out; /* our ends: requests go to in, answers come from out */
    char buf[1 << 20];
    size_t len;
};

/** Start `@p bin mcp @p run` with its stderr on @p err_fd (-1: /dev/null).
 * @return 0 or -errno */
static inline int mcp_pipe_start(struct mcp_pipe *s, const char *bin, const char *run, int err_fd)
{
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        return -errno;
    s->len = 0;
    s->pid = fork();
    if (s->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        dup2(err_fd >= 0 ? err_fd : open("/dev/null", O_WRONLY), 2);
        close(to[1]);
        close(from[0]);
        execl(bin, bin, "mcp", run, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    s->in = to[1];
    s->out = from[0];
    return s->pid > 0 ? 0 : -errno;
}

/** Write @p line and a newline. @return 0 or -errno */
static inline int mcp_pipe_send(struct mcp_pipe *s, const char *line)
{
    size_t n = strlen(line);
    for (size_t off = 0; off < n;) {
        ssize_t k = write(s->in, line + off, n - off);
        if (k < 0)
            return -errno;
        off += (size_t)k;
    }
    return write(s->in, "\n", 1) == 1 ? 0 : -errno;
}

/** Next answer, parsed (new reference); NULL after @p timeout_ms without
 * one, at EOF, or on bad JSON. */
static inline json_t *mcp_pipe_recv(struct mcp_pipe *s, int timeout_ms)
{
    for (;;) {
        char *nl = memchr(s->buf, '\n', s->len);
        if (nl) {
            json_t *j = json_loadb(s->buf, (size_t)(nl - s->buf), 0, NULL);
            s->len -= (size_t)(nl - s->buf) + 1;
            memmove(s->buf, nl + 1, s->len);
            return j;
        }
        struct pollfd p = {s->out, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0 || s->len == sizeof(s->buf))
            return NULL;
        ssize_t k = read(s->out, s->buf + s->len, sizeof(s->buf) - s->len);
        if (k <= 0)
            return NULL;
        s->len += (size_t)k;
    }
}

/** Send @p line, return the answer (10 s timeout). */
static inline json_t *mcp_pipe_call(struct mcp_pipe *s, const char *line)
{
    return mcp_pipe_send(s, line) < 0 ? NULL : mcp_pipe_recv(s, 10000);
}

/** Close the server's stdin and reap it. @return its exit status, 128+signal, or -1 */
static inline int mcp_pipe_stop(struct mcp_pipe *s)
{
    int st;
    close(s->in);
    close(s->out);
    if (waitpid(s->pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
