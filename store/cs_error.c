/* cs_error.c: cs_strerror() and cs_err_set(), declared in cudaspy/error.h.
 * Owns the text of every CS_E_* code; LMDB codes are translated to CS_E_*
 * by runfile_write.c's store_lmdb_rc() before they get here. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cudaspy/error.h"

static const char *const cs_texts[] = {
    [-(CS_E_BADMAGIC)-4097] = "not a cudaspy run file",
    [-(CS_E_VERSION)-4097] = "run file from a newer format version",
    [-(CS_E_TRUNCATED)-4097] = "truncated file",
    [-(CS_E_CORRUPT)-4097] = "corrupt run file",
    [-(CS_E_MAPFULL)-4097] = "run file map full",
    [-(CS_E_USAGE)-4097] = "usage error",
    [-(CS_E_PROTO)-4097] = "malformed message",
    [-(CS_E_END)-4097] = "end of data",
    [-(CS_E_NOTFOUND)-4097] = "not found",
    [-(CS_E_LMDB)-4097] = "LMDB error",
    [-(CS_E_UNSUPP)-4097] = "not supported here",
};

const char *cs_strerror(int rc)
{
    if (rc == 0)
        return "success";
    if (rc <= CS_E_FIRST && rc >= CS_E_LAST)
        return cs_texts[-rc - 4097];
    if (rc < 0 && rc > -4096)
        return strerror(-rc);
    return "unknown error";
}

int cs_err_set(struct cs_err *err, int rc, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return rc;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return rc;
}
