/* run_meta.c: print run-file meta for a shell test, one "KEY=VALUE" line
 * per KEY the run has (keys it lacks print nothing), through the reader
 * the analyzer uses (cs_run_meta). Exit 1 with the error when the file
 * does not open. Usage: run_meta RUN.lmdb KEY... */
#include <stdio.h>

#include "cudaspy/runfile.h"

int main(int argc, char **argv)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};

    if (argc < 3 || r == NULL) {
        fprintf(stderr, "usage: run_meta RUN.lmdb KEY...\n");
        cs_run_free(r);
        return 2;
    }
    if (cs_run_open(r, argv[1], &err) < 0) {
        fprintf(stderr, "run_meta: %s\n", err.msg);
        cs_run_free(r);
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        const char *v = cs_run_meta(r, argv[i]);
        if (v)
            printf("%s=%s\n", argv[i], v);
    }
    cs_run_free(r);
    return 0;
}
