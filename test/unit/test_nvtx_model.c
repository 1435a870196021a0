/* test_nvtx_model.c: the analyzer's model of a run of test/fake/client_nvtx
 * (analyzer/model/model.c): every NVTX record of the window is in
 * model.nvtx, sorted by thread then start, each on a model thread of its
 * own process, threads that made no CUDA call included.
 *
 * Usage: test_nvtx_model RUN RECORDS THREADS
 * (RECORDS: NVTX records in the run; THREADS: threads that made them).
 * Exit 0 when the model holds them; 1 with one line per mismatch. */
#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"

static int failures;

#define FAIL(...)                                                                    \
    do {                                                                             \
        fprintf(stderr, "test_nvtx_model: " __VA_ARGS__);                            \
        fputc('\n', stderr);                                                         \
        failures++;                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    struct model m;
    struct analysis_opts o;
    struct cs_err err = {0};
    const char *path;
    uint64_t want, threads = 0;
    int rc;

    if (argc != 4) {
        fprintf(stderr, "usage: test_nvtx_model RUN RECORDS THREADS\n");
        return 2;
    }
    path = argv[1];
    want = strtoull(argv[2], NULL, 10);
    analysis_opts_init(&o);
    rc = model_load(&m, &path, 1, &o, &err);
    if (rc < 0) {
        FAIL("%s: %s", path, err.msg);
        model_exit(&m);
        return 1;
    }
    if (m.nnvtx != want)
        FAIL("model holds %llu NVTX records, want %llu", (unsigned long long)m.nnvtx,
             (unsigned long long)want);
    for (uint64_t i = 0; i < m.nnvtx; i++) {
        const struct m_nvtx *v = &m.nvtx[i], *p = i ? v - 1 : NULL;
        if (v->thr >= m.nthr) {
            FAIL("record %llu: thread index %u of %u", (unsigned long long)i, v->thr, m.nthr);
            continue;
        }
        if (p && (p->thr > v->thr || (p->thr == v->thr && p->t_start_ns > v->t_start_ns)))
            FAIL("record %llu is out of order (thread, start)", (unsigned long long)i);
        if (v->t_end_ns < v->t_start_ns || v->name_id == 0)
            FAIL("record %llu: ends before it starts, or has no name", (unsigned long long)i);
        if (!p || p->thr != v->thr) {
            threads++;
            if (m.thr[v->thr].tid == 0 || m.thr[v->thr].name[0] == '\0')
                FAIL("thread %u has no tid or name", v->thr);
        }
    }
    if (threads != strtoull(argv[3], NULL, 10))
        FAIL("NVTX records on %llu threads, want %s", (unsigned long long)threads, argv[3]);
    model_exit(&m);
    return failures ? 1 : 0;
}
