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
    struct callcur k;
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
    callstore_init(&s);
    t0 = now_s();
    for (uint64_t i = 0; i < m.ncall; i++) {
        const struct m_call c = model_call(&m, i);
        if (callstore_put(&s, &c) < 0) {
            fprintf(stderr, "bench_callstore: out of memory at call %llu\n", (unsigned long long)i);
            return 1;
        }
    }
    t1 = now_s();
    callcur_init(&k, &s);
    for (uint64_t i = 0; i < m.ncall; i++)
        sum += callcur_at(&k, i)->t_exit_ns;
    t2 = now_s();
    for (uint64_t i = 0; i < m.ncall; i++) {
        const struct m_call c = model_call(&m, i);
        bad += memcmp(callcur_at(&k, i), &c, sizeof(c)) != 0;
    }
    printf("callstore.calls      %llu\n", (unsigned long long)m.ncall);
    printf("callstore.bytes      %.2f  B/call   (struct m_call %zu)\n",
           m.ncall ? (double)callstore_bytes(&s) / (double)m.ncall : 0.0, sizeof(struct m_call));
    printf("callstore.put        %.1f  ns/call\n", m.ncall ? (t1 - t0) * 1e9 / (double)m.ncall : 0.0);
    printf("callstore.scan       %.1f  ns/call  (sum %llu)\n",
           m.ncall ? (t2 - t1) * 1e9 / (double)m.ncall : 0.0, (unsigned long long)(sum & 0xff));
    printf("callstore.mismatch   %llu\n", (unsigned long long)bad);
    callstore_free(&s);
    model_exit(&m);
    return bad != 0;
}
