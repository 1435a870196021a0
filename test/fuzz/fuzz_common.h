/* fuzz_common.h: helpers the libFuzzer targets share: a scratch file to hand
 * the mutated bytes to readers that take a path, and splitting an input into
 * an argv. Header-only; each target is one translation unit. */
#ifndef CUDASPY_FUZZ_COMMON_H
#define CUDASPY_FUZZ_COMMON_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A per-process scratch path under $TMPDIR (default /dev/shm: no disk I/O). */
static inline const char *fuzz_scratch(const char *stem)
{
    static char path[256];
    const char *dir = getenv("CS_FUZZ_TMP");

    if (path[0] == '\0')
        snprintf(path, sizeof(path), "%s/cs-fuzz-%s-%d", dir && *dir ? dir : "/dev/shm", stem,
                 (int)getpid());
    return path;
}

/* Replace the scratch file with @p n bytes of @p d. @return 0 or -1 */
static inline int fuzz_write_file(const char *path, const uint8_t *d, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t off = 0;

    if (fd < 0)
        return -1;
    while (off < n) {
        ssize_t w = write(fd, d + off, n - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fd);
    return off == n ? 0 : -1;
}

/* Split @p d at NUL bytes into at most @p max - 1 arguments after @p argv0;
 * @p buf (n + 1 bytes) holds the strings. @return argc */
static inline int fuzz_argv(const uint8_t *d, size_t n, char *buf, char **argv, int max,
                     const char *argv0)
{
    int argc = 0;

    argv[argc++] = (char *)argv0;
    memcpy(buf, d, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n && argc < max - 1;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    return argc;
}

#endif
