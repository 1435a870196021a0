/* sockaddr.h: the collector's socket address as written in $CUDASPY_SOCK and
 * --listen: "@name" is a Linux abstract address, anything else a path. Used
 * by the shim's ring client and by the collector, so both parse it alike. */
#ifndef CUDASPY_SOCKADDR_H
#define CUDASPY_SOCKADDR_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

/** Fill @p sa and @p len for @p addr. @return 0, -EINVAL (empty) or
 * -ENAMETOOLONG. */
static inline int cs_sockaddr(const char *addr, struct sockaddr_un *sa, socklen_t *len)
{
    size_t n = strlen(addr);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (n == 0 || (addr[0] == '@' && n == 1))
        return -EINVAL;
    if (n >= sizeof(sa->sun_path))
        return -ENAMETOOLONG;
    memcpy(sa->sun_path, addr, n);
    if (addr[0] == '@') {
        sa->sun_path[0] = '\0'; /* abstract: length counts, no NUL */
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return 0;
}

#endif
