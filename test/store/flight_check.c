/* flight_check.c: what the flight recorder's shell test (flight.sh) needs
 * to know about a size-capped run of cs_producer: that every thread's
 * records still in the file are its newest ones, whole (seqs K..N with no
 * hole, N the last it pushed). Prints "threads=T detail=D evicted=E" or what is
 * wrong (exit 1). Usage: flight_check RUN.lmdb N_PER_THREAD */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/runfile.h"

#define MAX_THREADS 64

struct thr {
    uint32_t pid, tid;
    uint32_t min_seq, max_seq;
    uint64_t n;
};

static struct thr *thr_get(struct thr *t, int *nt, uint32_t pid, uint32_t tid)
{
    for (int i = 0; i < *nt; i++)
        if (t[i].pid == pid && t[i].tid == tid)
            return &t[i];
    if (*nt == MAX_THREADS)
        return NULL;
    t[*nt] = (struct thr){pid, tid, UINT32_MAX, 0, 0};
    return &t[(*nt)++];
}

static int walk(struct cs_run *r, struct thr *t, int *nt, struct cs_err *err)
{
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc = cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c);

    while (rc == 0 && (rc = cs_cursor_next(c, &h, &recs, err)) == 1) {
        for (uint32_t i = 0; i < h->n; i++) {
            struct cs_rec_cuda x;
            struct thr *e;
            memcpy(&x, (const uint8_t *)recs + (size_t)i * sizeof(x), sizeof(x));
            if ((e = thr_get(t, nt, x.pid, x.tid)) == NULL)
                return -1;
            e->min_seq = x.seq < e->min_seq ? x.seq : e->min_seq;
            e->max_seq = x.seq > e->max_seq ? x.seq : e->max_seq;
            e->n++;
        }
        rc = 0;
    }
    cs_cursor_close(c);
    return rc;
}

int main(int argc, char **argv)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    struct thr t[MAX_THREADS];
    uint64_t detail = 0;
    int nt = 0, bad = 0;

    if (argc != 3 || r == NULL)
        return 2;
    if (cs_run_open(r, argv[1], &err) < 0 || walk(r, t, &nt, &err) < 0) {
        printf("%s\n", err.msg[0] ? err.msg : "cannot read");
        return 1;
    }
    for (int i = 0; i < nt; i++) {
        const struct thr *e = &t[i];
        detail += e->n;
        if (e->max_seq != (uint32_t)atol(argv[2]) || e->n != e->max_seq - e->min_seq + 1u) {
            printf("thread %u/%u: seqs %u..%u, %" PRIu64 " records: not the newest, whole\n",
                   e->pid, e->tid, e->min_seq, e->max_seq, e->n);
            bad = 1;
        }
    }
    printf("threads=%d detail=%" PRIu64 " evicted=%s\n", nt, detail,
           cs_run_meta(r, "flight_evicted_records") ? cs_run_meta(r, "flight_evicted_records")
                                                     : "0");
    cs_run_free(r);
    return bad;
}
