/* utf8.h: one code point to UTF-8, for the shim's NVTX wide strings and the
 * readers of Python's str objects (pyframe.h). */
#ifndef CUDASPY_UTF8_H
#define CUDASPY_UTF8_H

#include <stddef.h>
#include <stdint.h>

/** UTF-8 of code point @p c into @p out, which has room for 4 bytes; a
 * surrogate or a value past U+10FFFF becomes U+FFFD. @return bytes written.
 * (NVTX's wide strings, Python's str objects.) */
static inline size_t cs_utf8_put(uint32_t c, char *out)
{
    if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
        c = 0xfffd;
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

#endif
