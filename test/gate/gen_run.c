/* gen_run.c: writes a synthetic but well-formed run file with the real
 * cs_store writer, for the gate, export and HTML tests until (and beside)
 * runs recorded by the shim on the fake driver. One process "trainer" loops
 * launch -> copy -> sync (runtime calls with their nested driver calls), a
 * "worker" process preempts it now and then, and the sampler tables (off-CPU
 * intervals, per-process and system windows) are filled to match.
 * Usage: gen_run OUT.lmdb [--calls N] [--sync-us U] [--seed S] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "cudaspy/runfile.h"

#define PID_MAIN 4242
#define TID_LOADER 4250
#define TID_UNNAMED 4251 /* a thread missing from the threads table */
#define PID_WORKER 4243
#define T0 1000000000ull
#define ITER_NS 1000000ull /* one loop iteration: 1 ms */
#define BLK_RECS 500

struct gen {
    struct cs_store *s;
    struct cs_rec_cuda cuda[BLK_RECS];
    unsigned ncuda;
    struct cs_rec_offcpu off[BLK_RECS];
    unsigned noff;
    uint64_t rng;
    uint32_t seq, kname[2];
};

static double urand(struct gen *g)
{
    g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g->rng >> 11) / 9007199254740992.0;
}

static int flush_kind(struct gen *g, unsigned kind, void *recs, unsigned *n)
{
    if (*n == 0)
        return 0;
    struct cs_blk_hdr h = {.n = *n, .kind = (uint16_t)kind, .rec_size = (uint16_t)cs_rec_size(kind)};
    h.ts_first_ns = UINT64_MAX;
    for (unsigned i = 0; i < *n; i++) {
        const uint64_t *t = (const uint64_t *)((const char *)recs + (size_t)i * h.rec_size);
        if (t[0] < h.ts_first_ns)
            h.ts_first_ns = t[0];
        if (t[1] > h.ts_last_ns)
            h.ts_last_ns = t[1];
    }
    *n = 0;
    return cs_store_put_block(g->s, kind, &h, recs);
}

static int put_call(struct gen *g, uint16_t api, uint64_t t, uint64_t d, uint32_t parent,
                    uint32_t name, uint64_t bytes, uint8_t dir)
{
    struct cs_rec_cuda *c = &g->cuda[g->ncuda++];
    memset(c, 0, sizeof(*c));
    c->t_enter_ns = t;
    c->t_exit_ns = t + d;
    c->pid = c->tid = PID_MAIN;
    c->seq = ++g->seq;
    c->parent_seq = parent;
    c->flags = (parent ? CS_CF_NESTED : 0) | (name ? CS_CF_HAS_NAME : 0) | (dir ? CS_CF_PINNED : 0);
    c->name_id = name;
    c->api = api;
    c->bytes = bytes;
    c->dir = dir;
    c->stream = 0x7f00beef;
    c->device = 0;
    if (name) {
        c->grid[0] = 128, c->grid[1] = c->grid[2] = 1;
        c->block[0] = 256, c->block[1] = c->block[2] = 1;
    }
    return g->ncuda == BLK_RECS ? flush_kind(g, CS_REC_CUDA, g->cuda, &g->ncuda) : 0;
}

/* runtime call [t, t+d] with its driver call nested 200 ns inside */
static int put_pair(struct gen *g, uint16_t rt, uint16_t drv, uint64_t t, uint64_t d,
                    uint32_t name, uint64_t bytes, uint8_t dir)
{
    int rc = put_call(g, rt, t, d, 0, name, bytes, dir);
    uint32_t parent = g->seq;
    return rc ? rc : put_call(g, drv, t + 200, d - 400, parent, name, bytes, dir);
}

static int put_off(struct gen *g, uint32_t tid, uint64_t s, uint64_t e, uint8_t cls,
                   uint32_t holder)
{
    struct cs_rec_offcpu *o = &g->off[g->noff++];
    memset(o, 0, sizeof(*o));
    o->t_start_ns = s;
    o->t_end_ns = e;
    o->pid = PID_MAIN;
    o->tid = tid;
    o->cls = cls;
    o->holder_pid = holder;
    o->holder_permille = holder ? 900 : 0;
    o->runq_ns = cls == CS_OFF_PREEMPT ? (uint32_t)(e - s) : 0;
    o->cpu = 1;
    return g->noff == BLK_RECS ? flush_kind(g, CS_REC_OFFCPU, g->off, &g->noff) : 0;
}

/* One 1 ms iteration: launch, copy, sync (jittered, 1% tail at 2x). */
static int put_iter(struct gen *g, unsigned i, double sync_us)
{
    uint64_t t = T0 + (uint64_t)i * ITER_NS + 10000;
    double u = urand(g), f = 0.8 + 0.4 * urand(g);
    uint64_t sync_ns = (uint64_t)(sync_us * 1000.0 * f * (u > 0.995 ? 2.0 : 1.0));
    int rc = put_pair(g, CS_API_cudaLaunchKernel, CS_API_cuLaunchKernel, t,
                      4000 + (uint64_t)(2000 * urand(g)), g->kname[i & 1], 0, 0);
    rc = rc ? rc : put_pair(g, CS_API_cudaMemcpyAsync, CS_API_cuMemcpyHtoDAsync_v2, t + 20000,
                            8000, 0, 1 << 20, CS_DIR_HTOD);
    uint64_t ts = t + 40000;
    rc = rc ? rc : put_pair(g, CS_API_cudaStreamSynchronize, CS_API_cuStreamSynchronize, ts,
                            sync_ns, 0, 0, 0);
    if (rc == 0 && i % 10 == 3) /* preempted; starts 1 us before the sync (clock skew) */
        rc = put_off(g, PID_MAIN, ts - 1000, ts + sync_ns / 2, CS_OFF_PREEMPT, PID_WORKER);
    else if (rc == 0 && i % 10 == 7) /* preempted until the very end of the sync */
        rc = put_off(g, PID_MAIN, ts + sync_ns / 2, ts + sync_ns, CS_OFF_PREEMPT, PID_WORKER);
    else if (rc == 0 && sync_ns > 4000)
        rc = put_off(g, PID_MAIN, ts + 1000, ts + sync_ns - 1000, CS_OFF_SLEEP, 0);
    if (rc == 0 && i % 50 == 0) /* the loader sleeps 300 us */
        rc = put_off(g, TID_LOADER, t + 100000, t + 400000, CS_OFF_SLEEP, 0);
    if (rc == 0 && i % 100 == 1)
        rc = put_off(g, TID_UNNAMED, t + 500000, t + 600000, CS_OFF_DISK, 0);
    return rc;
}

static int put_windows(struct gen *g, uint64_t t_end)
{
    struct cs_rec_syswin sw[BLK_RECS];
    struct cs_rec_pwin pw[BLK_RECS];
    unsigned nsw = 0, npw = 0;
    int rc = 0;
    for (uint64_t t = T0; rc == 0 && t < t_end; t += 10000000ull) {
        memset(&sw[nsw], 0, sizeof(sw[0]));
        sw[nsw].t_start_ns = t, sw[nsw].t_end_ns = t + 10000000ull;
        sw[nsw].ncpu = 2;
        sw[nsw].busy_permille = (uint16_t)(300 + 400 * urand(g));
        sw[nsw].procs_running = 2;
        nsw++;
        for (int p = 0; p < 2; p++) {
            memset(&pw[npw], 0, sizeof(pw[0]));
            pw[npw].t_start_ns = t, pw[npw].t_end_ns = t + 10000000ull;
            pw[npw].pid = p ? PID_WORKER : PID_MAIN;
            pw[npw].oncpu_ns = (uint64_t)(5e6 * urand(g));
            pw[npw].preempt_ns = p ? 0 : 100000;
            pw[npw].vcsw = 10 + p, pw[npw].ivcsw = 1;
            pw[npw].page_allocs = (uint32_t)(100 * urand(g));
            pw[npw].nthreads = 2;
            npw++;
        }
        if (nsw == BLK_RECS / 2)
            rc = flush_kind(g, CS_REC_SYSWIN, sw, &nsw);
        if (rc == 0 && npw >= BLK_RECS - 2)
            rc = flush_kind(g, CS_REC_PWIN, pw, &npw);
    }
    rc = rc ? rc : flush_kind(g, CS_REC_SYSWIN, sw, &nsw);
    return rc ? rc : flush_kind(g, CS_REC_PWIN, pw, &npw);
}

static int put_tables(struct gen *g, uint64_t t_end)
{
    struct cs_proc p = {.pid = PID_MAIN, .ppid = 1, .start_ns = T0 - 1000, .exit_status = -1,
                        .flags = CS_PF_CUDA | CS_PF_ROOT, .rank = CS_RANK_NONE};
    strcpy(p.comm, "trainer");
    int rc = cs_store_intern(g->s, "python train.py", 15, &p.cmdline_id);
    rc = rc ? rc : cs_store_put_proc(g->s, &p);
    p.pid = PID_WORKER, p.ppid = PID_MAIN, p.flags = 0;
    strcpy(p.comm, "worker");
    rc = rc ? rc : cs_store_put_proc(g->s, &p);
    struct cs_thread th = {.pid = PID_MAIN, .tid = PID_MAIN, .start_ns = T0};
    strcpy(th.name, "trainer");
    rc = rc ? rc : cs_store_put_thread(g->s, &th);
    th.tid = TID_LOADER;
    strcpy(th.name, "loader \"0\"");
    rc = rc ? rc : cs_store_put_thread(g->s, &th);
    th.pid = th.tid = PID_WORKER;
    strcpy(th.name, "worker");
    rc = rc ? rc : cs_store_put_thread(g->s, &th);
    rc = rc ? rc : cs_store_put_meta_u64(g->s, "t_start_ns", T0);
    rc = rc ? rc : cs_store_put_meta_u64(g->s, "t_end_ns", t_end);
    rc = rc ? rc : cs_store_put_meta(g->s, "host", "testhost");
    rc = rc ? rc : cs_store_put_meta(g->s, "cmdline", "python train.py");
    rc = rc ? rc : cs_store_put_meta(g->s, "sampler_tier", "A");
    return rc ? rc : cs_store_put_meta(g->s, "clean_shutdown", "1");
}

int main(int argc, char **argv)
{
    unsigned calls = 1000;
    double sync_us = 100;
    struct gen g = {.rng = 1};
    if (argc < 2) {
        fprintf(stderr, "usage: gen_run OUT.lmdb [--calls N] [--sync-us U] [--seed S]\n");
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--calls") == 0)
            calls = (unsigned)strtoul(argv[i + 1], NULL, 0);
        else if (strcmp(argv[i], "--sync-us") == 0)
            sync_us = strtod(argv[i + 1], NULL);
        else if (strcmp(argv[i], "--seed") == 0)
            g.rng = strtoull(argv[i + 1], NULL, 0);
    }
    struct cs_err err = {{0}};
    g.s = cs_store_new();
    int rc = g.s ? cs_store_open(g.s, argv[1], NULL, &err) : -12;
    rc = rc ? rc : cs_store_intern(g.s, "gemm_kernel<float, 128>", 23, &g.kname[0]);
    rc = rc ? rc : cs_store_intern(g.s, "relu_kernel", 11, &g.kname[1]);
    for (unsigned i = 0; rc == 0 && i < calls; i++)
        rc = put_iter(&g, i, sync_us);
    uint64_t t_end = T0 + (uint64_t)calls * ITER_NS;
    rc = rc ? rc : flush_kind(&g, CS_REC_CUDA, g.cuda, &g.ncuda);
    rc = rc ? rc : flush_kind(&g, CS_REC_OFFCPU, g.off, &g.noff);
    rc = rc ? rc : put_windows(&g, t_end);
    rc = rc ? rc : put_tables(&g, t_end);
    rc = rc ? rc : cs_store_commit(g.s);
    if (rc)
        fprintf(stderr, "gen_run: %s: %s %s\n", argv[1], cs_strerror(rc), err.msg);
    cs_store_free(g.s);
    return rc ? 1 : 0;
}
