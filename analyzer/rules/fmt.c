/* rules/fmt.c: the text helpers of fmt.h, shared by the rules' findings. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "fmt.h"

#define MS 1000000ull

const char *fmt_ns(char *buf, size_t n, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, n, "%" PRIu64 " ns", ns);
    else if (ns < MS)
        snprintf(buf, n, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000 * MS)
        snprintf(buf, n, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.2f s", (double)ns / 1e9);
    return buf;
}

void jaddf(json_t *arr, const char *fmt, ...)
{
    char buf[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_array_append_new(arr, json_string(buf));
}

const char *fmt_bw(char *buf, size_t n, uint64_t bytes, uint64_t ns)
{
    double gbs = ns ? (double)bytes / (double)ns : 0.0;

    if (gbs >= 1.0)
        snprintf(buf, n, "%.2f GB/s", gbs);
    else
        snprintf(buf, n, "%.1f MB/s", gbs * 1e3);
    return buf;
}
