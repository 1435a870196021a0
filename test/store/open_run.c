/* open_run.c: print what a shell test needs to know about a run file:
 * "count=<CUDA records> clean=<clean_shutdown>", or the error (exit 1).
 * Usage: open_run RUN.lmdb */
#include <stdio.h>

#include "cudaspy/runfile.h"

int main(int argc, char **argv)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    int rc;

    if (argc != 2 || r == NULL)
        return 2;
    rc = cs_run_open(r, argv[1], &err);
    if (rc < 0) {
        printf("%s\n", err.msg);
        cs_run_free(r);
        return 1;
    }
    printf("count=%llu clean=%s\n", (unsigned long long)cs_run_count(r, CS_REC_CUDA),
           cs_run_meta(r, "clean_shutdown") ? cs_run_meta(r, "clean_shutdown") : "?");
    cs_run_free(r);
    return 0;
}
