/* rules/fmt.h: the text helpers the rules' findings share: durations as
 * people read them, bandwidths, and printf into a JSON array of strings.
 * Written once, in fmt.c. */
#ifndef CUDASPY_ANALYZER_FMT_H
#define CUDASPY_ANALYZER_FMT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/** @p ns as "812 ns", "3.4 us", "12.5 ms" or "1.25 s" into @p buf. @return buf */
const char *fmt_ns(char *buf, size_t n, uint64_t ns);

/** Bandwidth of @p bytes in @p ns, as "1.25 GB/s" or "812.5 MB/s", into @p buf.
 * @return buf */
const char *fmt_bw(char *buf, size_t n, uint64_t bytes, uint64_t ns);

/** Append a printf-formatted string (at most 767 bytes) to JSON array @p arr. */
void jaddf(json_t *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
