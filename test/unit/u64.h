/* u64.h: what the analyzer's numeric tests share: a seeded 64-bit
 * generator (splitmix64) and qsort()'s order of uint64_t, the reference
 * they check against. */
#ifndef CS_TEST_U64_H
#define CS_TEST_U64_H

#include <stdint.h>

/** Next value of the splitmix64 sequence in @p s. */
static inline uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/** qsort() comparison of two uint64_t, ascending. */
static inline int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#endif
