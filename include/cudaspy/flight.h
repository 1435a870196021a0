/* flight.h: what the flight recorder (record --max-size) shares between its
 * writer (sampler/flight.c) and its readers (analyzer/model/aggregates.c):
 * the latency histogram's bucket index, and the SIZE syntax of --max-size
 * and CUDASPY_MAX_SIZE (the launcher and the sampler both check it). The
 * aggregate layouts are in record.h, the agg database in docs/format.md. */
#ifndef CUDASPY_FLIGHT_H
#define CUDASPY_FLIGHT_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Log-linear buckets: durations below 256 ns have a bucket each; above,
 * each power of two [2^e, 2^(e+1)) is split into 128 equal buckets, so a
 * bucket is at most 1/128 of its lower bound wide and its midpoint is
 * within 1/256 (0.4 %) of any duration in it. 7424 buckets cover 2^64 ns. */
#define CS_HIST_SUB_BITS 7
#define CS_HIST_SUB      (1u << CS_HIST_SUB_BITS)
#define CS_HIST_BUCKETS  ((64 - CS_HIST_SUB_BITS + 1) * CS_HIST_SUB)

#define CS_FLIGHT_WINDOW_NS 1000000000ull /* aggregate window: 1 s from t_start_ns */
#define CS_FLIGHT_MIN_BYTES (1ull << 20)   /* the smallest --max-size */

/** Bucket of duration @p v ns, 0 .. CS_HIST_BUCKETS - 1. */
static inline uint32_t cs_hist_index(uint64_t v)
{
    unsigned shift;

    if (v < CS_HIST_SUB)
        return (uint32_t)v;
    shift = (unsigned)(63 - __builtin_clzll(v)) - CS_HIST_SUB_BITS;
    return (shift + 1) * CS_HIST_SUB + (uint32_t)((v >> shift) - CS_HIST_SUB);
}

/** Smallest duration of bucket @p i. */
static inline uint64_t cs_hist_lo(uint32_t i)
{
    unsigned shift;

    if (i < 2 * CS_HIST_SUB)
        return i;
    shift = i / CS_HIST_SUB - 1;
    return (uint64_t)(CS_HIST_SUB + i % CS_HIST_SUB) << shift;
}

/** Width of bucket @p i in ns (1 below 256 ns: exact). */
static inline uint64_t cs_hist_width(uint32_t i)
{
    return i < 2 * CS_HIST_SUB ? 1 : 1ull << (i / CS_HIST_SUB - 1);
}

/** Parse a size: decimal digits, optionally followed by one of K, M, G, T
 * (powers of 1024; a trailing B or iB is accepted: 200M, 2G, 512MiB).
 * @param out  bytes, at least CS_FLIGHT_MIN_BYTES
 * @return 0, -EINVAL (empty, not a number, unknown suffix), -ERANGE (over
 *         2^63 bytes, or under CS_FLIGHT_MIN_BYTES) */
static inline int cs_parse_size(const char *s, uint64_t *out)
{
    unsigned long long v;
    unsigned shift = 0;
    char *end;

    if (s == NULL || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    case 'T': case 't': shift = 40; end++; break;
    }
    if (shift && end[0] == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end)
        return -EINVAL;
    if (v > (1ull << 63) >> shift)
        return -ERANGE;
    v <<= shift;
    if (v < CS_FLIGHT_MIN_BYTES)
        return -ERANGE;
    *out = v;
    return 0;
}

#endif
