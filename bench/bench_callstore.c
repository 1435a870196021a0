/* bench_callstore.c: the compact call store (analyzer/model/callstore.c) on
 * a real run: bytes a call, the cost to put a call and to read one back in
 * a pass in index order, and a check that every call comes back whole (put
 * from the model's own model_call(), so "put" includes reading it).
 * Usage: bench_callstore RUN.lmdb */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "model/callstore.h"
#include "model/model.h"

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    struct model m;
    struct cs_err err = {0};
    struct analysis_opts o;
    struct callstore s;
    const char *path[1];
    uint64_t sum = 0, bad = 0;
    double t0, t1, t2;

    if (argc != 2) {
        fprintf(stderr, "usage: bench_callstore RUN.lmdb\n");
        return 2;
    }
    path[0] = argv[1];
    analysis_opts_init(&o);
    if (model_load(&m, path, 1, &o, &err) < 0) {
        fprintf(stderr, "bench_callstore: %s: cannot load\n", argv[1]);
        return 1;
    }
    if (m.cstore) /* placed while loading: with the seq and stack ids kept beside */
        printf("callstore.loaded     %.2f  B/call   (as the model holds them)\n",
               m.ncall ? (double)callstore_bytes(m.cstore) / (double)m.ncall : 0.0);
    callstore_init(&s);
    t0 = now_s();
    for (uint64_t i = 0; i < m.ncall; i++) {
        const struct m_call c = model_call(&m, i);
        if ((i == 0 && callstore_open(&s, m.ncall) < 0) || callstore_set(&s, i, &c, 0, 0) < 0 ||
            (i == m.ncall - 1 && callstore_close(&s) < 0)) {
            fprintf(stderr, "bench_callstore: out of memory at call %llu\n", (unsigned long long)i);
            return 1;
        }
    }
    t1 = now_s();
    for (uint64_t i = 0; i < m.ncall; i++) {
        struct m_call c;
        callstore_get(&s, i, &c);
        sum += c.t_exit_ns;
    }
    t2 = now_s();
    for (uint64_t i = 0; i < m.ncall; i++) {
        const struct m_call c = model_call(&m, i);
        struct m_call d;
        callstore_get(&s, i, &d);
        bad += memcmp(&d, &c, sizeof(c)) != 0;
    }
    printf("callstore.calls      %llu\n", (unsigned long long)m.ncall);
    printf("callstore.bytes      %.2f  B/call   (struct m_call %zu)\n",
           m.ncall ? (double)callstore_bytes(&s) / (double)m.ncall : 0.0, sizeof(struct m_call));
    printf("callstore.put        %.1f  ns/call\n", m.ncall ? (t1 - t0) * 1e9 / (double)m.ncall : 0.0);
    printf("callstore.scan       %.1f  ns/call  (sum %llu)\n",
           m.ncall ? (t2 - t1) * 1e9 / (double)m.ncall : 0.0, (unsigned long long)(sum & 0xff));
    {
        double w[CSC_N] = {0};
        for (size_t b = 0; b < s.nblk; b++)
            for (int k = 0; k < CSC_N; k++)
                w[k] += s.blk[b].w[k];
        printf("callstore.bits       enter %.1f dur %.1f bon %.1f stream %.1f thr %.1f kind %.1f (avg widths)\n",
               w[0] / (double)s.nblk, w[1] / (double)s.nblk, w[2] / (double)s.nblk, w[3] / (double)s.nblk,
               w[4] / (double)s.nblk, w[5] / (double)s.nblk);
    }
    printf("callstore.mismatch   %llu\n", (unsigned long long)bad);
    callstore_free(&s);
    model_exit(&m);
    return bad != 0;
}
