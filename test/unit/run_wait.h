/* run_wait.h: open a run file for a checker once its collector is done with
 * it (meta clean_shutdown = 1), as test_shim_check, test_nvtx_check and
 * test_py_dump do after the traced program exits: the collector may still
 * be writing its last commit. Header-only, for test programs. */
#ifndef CS_TEST_RUN_WAIT_H
#define CS_TEST_RUN_WAIT_H

#include <time.h>

#include "cudaspy/runfile.h"

/** Open @p path into *@p out, retrying every 100 ms for up to @p wait_s s
 * until the file opens and says clean_shutdown = 1 (@p wait_s 0: the first
 * file that opens, clean or not). @return 0; the last cs_run_open() error
 * (< 0, @p err says what); 1 opened but never clean. */
static inline int run_open_wait(struct cs_run **out, const char *path, int wait_s,
                                struct cs_err *err)
{
    for (int tries = 0;; tries++) {
        struct cs_run *r = cs_run_new();
        int rc = cs_run_open(r, path, err);
        if (rc == 0 && (wait_s == 0 || cs_run_meta_u64(r, "clean_shutdown", 0) == 1)) {
            *out = r;
            return 0;
        }
        cs_run_free(r);
        if (tries >= wait_s * 10)
            return rc ? rc : 1;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
}

#endif
