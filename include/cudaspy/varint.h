/* varint.h: LEB128 varints and zigzag, shared by the run file's compact CUDA
 * blocks (store/cudablk.c, which checks what it reads) and the analyzer's
 * compact call store (analyzer/model/callstore.c, which reads only what it
 * wrote itself). */
#ifndef CUDASPY_VARINT_H
#define CUDASPY_VARINT_H

#include <stdint.h>

#define CS_VARINT_MAX 10 /* bytes of a 64-bit varint, at most */

static inline uint64_t cs_zz64(uint64_t d)
{
    return (d << 1) ^ (0 - (d >> 63));
}

static inline uint64_t cs_unzz64(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

static inline uint32_t cs_zz32(uint32_t d)
{
    return (d << 1) ^ (0u - (d >> 31));
}

static inline uint32_t cs_unzz32(uint32_t z)
{
    return (z >> 1) ^ (0u - (z & 1));
}

/* Write @p v at @p p. @return the byte after it */
static inline uint8_t *cs_put_var(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Read a varint that cs_put_var() wrote, unchecked: only for bytes this
 * process wrote itself. @return the byte after it */
static inline const uint8_t *cs_get_var_trusted(const uint8_t *p, uint64_t *v)
{
    uint64_t x = *p & 0x7f;

    for (unsigned shift = 7; *p++ & 0x80; shift += 7)
        x |= (uint64_t)(*p & 0x7f) << shift;
    *v = x;
    return p;
}

#endif
