/* inetaddr.h: a TCP listening address as `record --metrics` and
 * `cudaspy-analyze metrics --listen` take it: "HOST:PORT" with HOST an
 * IPv4 address, "localhost", "[IPv6]", or empty (every IPv4 interface).
 * Header-only, so the sampler checks what the metrics server will bind. */
#ifndef CUDASPY_INETADDR_H
#define CUDASPY_INETADDR_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/** Fill @p ss and @p len for @p addr. @return 0 or -EINVAL */
static inline int cs_inet_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
    const char *colon = strrchr(addr, ':');
    char host[64], *end;
    size_t hn = colon ? (size_t)(colon - addr) : 0;
    long port;

    memset(ss, 0, sizeof(*ss));
    if (colon == NULL || hn >= sizeof(host) || colon[1] < '0' || colon[1] > '9')
        return -EINVAL;
    port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
        return -EINVAL;
    memcpy(host, addr, hn);
    host[hn] = '\0';
    if (hn >= 2 && host[0] == '[' && host[hn - 1] == ']') {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        host[hn - 1] = '\0';
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*s6);
        return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1 ? 0 : -EINVAL;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *len = sizeof(*s4);
        if (hn == 0)
            return 0; /* INADDR_ANY */
        return inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1",
                         &s4->sin_addr) == 1 ? 0 : -EINVAL;
    }
}

#endif
