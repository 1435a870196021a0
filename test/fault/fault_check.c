/* fault_check.c: compares a run file with what a killed fault_client said
 * it completed (its COUNTFILE). Counts the client's cuLaunchKernel and
 * cuStreamSynchronize records, finds the latest return among them, and
 * prints one line:
 *   recorded R of C loop calls, lost L calls, lost_ms X
 * where lost_ms is how long before the client's last completed call the
 * last recorded one returned (0 if none is missing). Exit 0 when lost_ms is
 * at most MAX_MS (default 100), 1 when more is lost, 2 when the run file
 * does not open or a cursor fails. Needs CUDASPY_CLOCK=mono in the traced
 * program (file times are then CLOCK_MONOTONIC, as the client's).
 * Usage: fault_check RUN COUNTFILE [MAX_MS] */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cudaspy/api.h"
#include "cudaspy/runfile.h"
#include "fault_count.h"

static int read_count(const char *path, struct fault_count *c)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, c, sizeof(*c)) : -1;

    if (fd >= 0)
        close(fd);
    return n == (ssize_t)sizeof(*c) ? 0 : -1;
}

/* Loop calls of @p pid in the run: count and latest return. */
static int scan(struct cs_run *r, uint32_t pid, uint64_t *n, uint64_t *t_last)
{
    enum cs_api launch = cs_api_lookup("cuLaunchKernel", NULL);
    enum cs_api sync = cs_api_lookup("cuStreamSynchronize", NULL);
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    struct cs_err err = {""};
    int rc;

    if ((rc = cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c)) < 0)
        return rc;
    while ((rc = cs_cursor_next(c, &h, &recs, &err)) == 1) {
        const struct cs_rec_cuda *v = recs;
        for (uint32_t i = 0; i < h->n; i++) {
            if (v[i].pid != pid || (v[i].api != launch && v[i].api != sync))
                continue;
            (*n)++;
            if (v[i].t_exit_ns > *t_last)
                *t_last = v[i].t_exit_ns;
        }
    }
    cs_cursor_close(c);
    if (rc < 0)
        fprintf(stderr, "fault_check: %s\n", err.msg);
    return rc;
}

int main(int argc, char **argv)
{
    struct fault_count c;
    struct cs_err err = {""};
    struct cs_run *r;
    uint64_t n = 0, t_last = 0, lost_calls;
    double lost_ms, max_ms = argc > 3 ? strtod(argv[3], NULL) : 100;

    if (argc < 3) {
        fprintf(stderr, "usage: fault_check RUN COUNTFILE [MAX_MS]\n");
        return 2;
    }
    if (read_count(argv[2], &c) < 0 || !c.is_ready) {
        fprintf(stderr, "fault_check: %s: the client never started its loop\n", argv[2]);
        return 2;
    }
    r = cs_run_new();
    if (r == NULL || cs_run_open(r, argv[1], &err) < 0) {
        fprintf(stderr, "fault_check: %s\n", err.msg);
        return 2;
    }
    if (scan(r, c.pid, &n, &t_last) < 0)
        return 2;
    lost_calls = c.calls > n ? c.calls - n : 0;
    lost_ms = lost_calls && c.t_last_ns > t_last ? (double)(c.t_last_ns - t_last) / 1e6 : 0;
    printf("recorded %" PRIu64 " of %" PRIu64 " loop calls, lost %" PRIu64 " calls, lost_ms %.3f"
           " clean_shutdown %s\n", n, c.calls, lost_calls, lost_ms,
           cs_run_meta(r, "clean_shutdown") ? cs_run_meta(r, "clean_shutdown") : "?");
    cs_run_free(r);
    return lost_ms <= max_ms ? 0 : 1;
}
