/* cs_grow.c: cs_grow(), declared in cudaspy/grow.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/grow.h"

int cs_grow(void **p, size_t *cap, size_t want, size_t elem)
{
    size_t c = *cap ? *cap : 16;
    void *q;

    if (want <= *cap)
        return 0;
    while (c < want)
        c *= 2;
    q = realloc(*p, c * elem);
    if (q == NULL)
        return -ENOMEM;
    memset((char *)q + *cap * elem, 0, (c - *cap) * elem);
    *p = q;
    *cap = c;
    return 0;
}
