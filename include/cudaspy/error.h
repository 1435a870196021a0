/* error.h: cudaspy's error codes and the error-detail buffer for readers
 * of untrusted input. Functions return 0 or a negative code: -errno values
 * from the system, or CS_E_* below -4096, outside every errno value (LMDB's
 * device). cs_strerror() names both. */
#ifndef CUDASPY_ERROR_H
#define CUDASPY_ERROR_H

#include <stddef.h>

#define CS_E_FIRST     (-4097)
#define CS_E_BADMAGIC  (-4097) /* not a cudaspy run file (or not LMDB at all) */
#define CS_E_VERSION   (-4098) /* run file written by a newer format version */
#define CS_E_TRUNCATED (-4099) /* file shorter than its own page count says */
#define CS_E_CORRUPT   (-4100) /* a record, block or page fails its checks */
#define CS_E_MAPFULL   (-4101) /* LMDB map full and could not grow */
#define CS_E_USAGE     (-4102) /* bad option or argument */
#define CS_E_PROTO     (-4103) /* malformed message on the shim socket */
#define CS_E_END       (-4104) /* no more items (cursors use 0 instead) */
#define CS_E_NOTFOUND  (-4105) /* key, pid or name not present */
#define CS_E_LMDB      (-4106) /* another LMDB failure (detail in cs_err) */
#define CS_E_UNSUPP    (-4107) /* feature unavailable here (no perf, no tracefs) */
#define CS_E_LAST      (-4107)

/* Filled by readers of untrusted input with where and what went wrong. */
struct cs_err {
    char msg[256]; /* one line, no trailing newline; "" when unset */
};

/** Text for @p rc: a CS_E_* code or a negative errno.
 * @return static string, never NULL */
const char *cs_strerror(int rc);

/** printf into @p err->msg if @p err is not NULL; returns @p rc unchanged so
 * callers can write `return cs_err_set(err, CS_E_CORRUPT, "...", ...)`. */
int cs_err_set(struct cs_err *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
