/* check.h: the whole assertion kit for C tests. A failed check prints
 * `file:line: expr: got X, want Y`, marks the run failed and returns from the
 * test function; the other tests still run (perf's __T, jansson's fail()).
 * Usage: static int test_x(void) { CHECK(...); return 0; }
 *        int main(void) { RUN(test_x); return check_status(); } */
#ifndef CUDASPY_TEST_CHECK_H
#define CUDASPY_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudaspy/error.h"

static int check_failed_;

#define CHECK(expr)                                                              \
    do {                                                                         \
        if (!(expr)) {                                                           \
            fprintf(stderr, "%s:%d: %s: false\n", __FILE__, __LINE__, #expr);    \
            check_failed_ = 1;                                                   \
            return -1;                                                           \
        }                                                                        \
    } while (0)

#define CHECK_EQ(got, want)                                                      \
    do {                                                                         \
        long long g_ = (long long)(got), w_ = (long long)(want);                 \
        if (g_ != w_) {                                                          \
            fprintf(stderr, "%s:%d: %s: got %lld, want %lld\n", __FILE__,        \
                    __LINE__, #got, g_, w_);                                     \
            check_failed_ = 1;                                                   \
            return -1;                                                           \
        }                                                                        \
    } while (0)

#define CHECK_STR(got, want)                                                     \
    do {                                                                         \
        const char *g_ = (got), *w_ = (want);                                    \
        if (g_ == NULL || strcmp(g_, w_) != 0) {                                 \
            fprintf(stderr, "%s:%d: %s: got \"%s\", want \"%s\"\n", __FILE__,    \
                    __LINE__, #got, g_ ? g_ : "(null)", w_);                     \
            check_failed_ = 1;                                                   \
            return -1;                                                           \
        }                                                                        \
    } while (0)

/* expr returns 0 on success or a negative cudaspy/errno code */
#define CHECK_OK(expr)                                                           \
    do {                                                                         \
        int r_ = (expr);                                                         \
        if (r_ < 0) {                                                            \
            fprintf(stderr, "%s:%d: %s: got %d (%s), want success\n", __FILE__,  \
                    __LINE__, #expr, r_, cs_strerror(r_));                       \
            check_failed_ = 1;                                                   \
            return -1;                                                           \
        }                                                                        \
    } while (0)

#define CHECK_ERR(expr, want)                                                    \
    do {                                                                         \
        int r_ = (expr), w_ = (want);                                            \
        if (r_ != w_) {                                                          \
            fprintf(stderr, "%s:%d: %s: got %d (%s), want %d (%s)\n", __FILE__,  \
                    __LINE__, #expr, r_, cs_strerror(r_), w_, cs_strerror(w_));  \
            check_failed_ = 1;                                                   \
            return -1;                                                           \
        }                                                                        \
    } while (0)

#define RUN(fn)                                                                  \
    do {                                                                         \
        if ((fn)() == 0)                                                         \
            fprintf(stderr, "ok   %s\n", #fn);                                   \
        else                                                                     \
            fprintf(stderr, "FAIL %s\n", #fn);                                   \
    } while (0)

static inline int check_status(void) { return check_failed_ ? 1 : 0; }

/* The end of a test binary that kept its files in scratch directory @p dir:
 * remove it (rm -rf), then check_status(); 2 when it could not be removed. */
static inline int check_finish(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? check_status() : 2;
}

/* Random tests: seed from CS_TEST_SEED or the clock, printed so a failing run
 * can be replayed. */
static inline unsigned check_seed(void)
{
    const char *s = getenv("CS_TEST_SEED");
    unsigned seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
    fprintf(stderr, "seed %u (CS_TEST_SEED)\n", seed);
    return seed;
}

#endif
