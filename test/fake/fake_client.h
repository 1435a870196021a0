/* fake_client.h: small helpers shared by the test clients: a checksum, a
 * failure check that names the call, and argument parsing. */
#ifndef FAKE_CLIENT_H
#define FAKE_CLIENT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* FNV-1a over len bytes, folded into h. */
static inline uint64_t client_fnv(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
#define CLIENT_FNV_INIT 14695981039346656037ull

/* Exit 3 with "<client>: <call>: failed (<rc>)" when rc != 0. */
#define CLIENT_CHECK(client, call)                                                   \
    do {                                                                             \
        long rc_ = (long)(call);                                                     \
        if (rc_ != 0) {                                                              \
            fprintf(stderr, "%s: %s: failed (%ld)\n", client, #call, rc_);           \
            exit(3);                                                                 \
        }                                                                            \
    } while (0)

/* Write all @p n bytes of @p p to @p fd (a pipe to a data worker's
 * reader). @return 0, -1 on error or a closed pipe */
static inline int client_write_all(int fd, const void *p, size_t n)
{
    for (const char *c = p; n > 0;) {
        ssize_t w = write(fd, c, n);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* argv[i] as a positive integer, or dflt when absent. */
static inline long client_arg(int argc, char **argv, int i, long dflt)
{
    long v = i < argc ? strtol(argv[i], NULL, 10) : dflt;
    return v > 0 ? v : dflt;
}

#endif
