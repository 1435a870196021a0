/* test_nvtx_check.c: checks the NVTX records of a run of test/fake/client_nvtx
 * (cli.shim_nvtx_*): every range and mark it made, exactly once, with its
 * name, domain, level, flags, category, colour and payload, on the thread
 * that made it (the main thread, one of THREADS workers that each made
 * ITERS steps, or the fork child's), nested in time as its level says;
 * ranges left open at thread or process exit marked open; each worker in
 * the threads table.
 * With --none: the run holds no NVTX record (or does not exist).
 *
 * Usage: test_nvtx_check [--none] RUN THREADS ITERS
 * Exit 0 when everything matches; 1 with one line per mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudaspy/record.h"
#include "cudaspy/runfile.h"
#include "run_wait.h"

#define MAX_WORKERS 64

static int failures;

#define FAIL(...)                                                                    \
    do {                                                                             \
        fprintf(stderr, "test_nvtx_check: " __VA_ARGS__);                            \
        fputc('\n', stderr);                                                         \
        failures++;                                                                  \
    } while (0)

enum who { MAIN, WORKER, CHILD };

/* One kind of range the client makes, and how many. */
struct want {
    const char *name, *domain;
    unsigned depth, flags, category, color;
    enum who who;
    unsigned long n; /* set from THREADS and ITERS */
    unsigned long got;
};

#define A "cudaspy.test.a"
#define B "cudaspy.test.b"
static struct want wants[] = {
    {"start mark", "", 0, CS_NF_MARK, 0, 0, MAIN, 1, 0},
    {"handoff", "", 0, CS_NF_STARTEND, 0, 0, MAIN, 0, 0},
    {"main open", "", 0, CS_NF_OPEN, 0, 0, MAIN, 1, 0},
    {"never ended", "", 0, CS_NF_STARTEND | CS_NF_OPEN, 0, 0, MAIN, 1, 0},
    {"outer", "", 0, 0, 0, 0, WORKER, 0, 0},
    {"middle", "", 1, CS_NF_PAYLOAD, 3, 0xff00ff00u, WORKER, 0, 0},
    {"inner \xc3\xa9", "", 2, 0, 0, 0, WORKER, 0, 0},
    {"registered step", A, 0, 0, 7, 0, WORKER, 0, 0},
    {"b level 0", B, 0, 0, 0, 0, WORKER, 0, 0},
    {"b level 1", B, 1, 0, 0, 0, WORKER, 0, 0},
    {"domain mark", A, 0, CS_NF_MARK, 0, 0, WORKER, 0, 0},
    {"b start/end", B, 0, CS_NF_STARTEND, 0, 0, WORKER, 0, 0},
    {"worker open", "", 0, CS_NF_OPEN, 0, 0, WORKER, 0, 0},
    {"child range", "", 1, 0, 0, 0, CHILD, 1, 0},
    {"child mark", "", 0, CS_NF_MARK, 0, 0, CHILD, 1, 0},
    {"child open", "", 1, CS_NF_OPEN, 0, 0, CHILD, 1, 0},
};
#define NWANTS (sizeof(wants) / sizeof(wants[0]))

static struct cs_rec_nvtx *recs;
static size_t nrecs;

static int open_run(struct cs_run **out, const char *path, int none)
{
    struct cs_err err = {""};
    int rc;

    if (none) { /* no run file: no record either */
        struct cs_run *r = cs_run_new();
        rc = cs_run_open(r, path, &err);
        cs_run_free(r);
        if (rc < 0)
            return 1;
    }
    rc = run_open_wait(out, path, 30, &err);
    if (rc != 0)
        FAIL("%s: %s", path, rc < 0 ? err.msg : "collector never finished (clean_shutdown=0)");
    return rc;
}

static int load(struct cs_run *run)
{
    struct cs_err err = {""};
    const struct cs_blk_hdr *h;
    const void *p;
    struct cs_cursor *c;
    int rc;

    if (cs_cursor_open(run, CS_REC_NVTX, 0, UINT64_MAX, &c) < 0)
        return -1;
    while ((rc = cs_cursor_next(c, &h, &p, &err)) == 1) {
        struct cs_rec_nvtx *q = realloc(recs, (nrecs + h->n) * sizeof(*recs));
        if (q == NULL)
            break;
        recs = q;
        memcpy(recs + nrecs, p, h->n * sizeof(*recs));
        nrecs += h->n;
    }
    cs_cursor_close(c);
    if (rc < 0)
        FAIL("reading NVTX blocks: %s", err.msg);
    return rc;
}

static struct want *want_of(struct cs_run *run, const struct cs_rec_nvtx *r)
{
    const char *name = cs_run_string(run, r->name_id), *dom = cs_run_string(run, r->domain_id);

    for (size_t i = 0; i < NWANTS; i++)
        if (strcmp(wants[i].name, name) == 0 && strcmp(wants[i].domain, dom) == 0)
            return &wants[i];
    FAIL("unexpected range '%s' in domain '%s' (pid %u tid %u)", name, dom, r->pid, r->tid);
    return NULL;
}

/* Does a range of the same thread and domain, one level up, hold @p r? */
static int nested(const struct cs_rec_nvtx *r)
{
    for (size_t i = 0; i < nrecs; i++) {
        const struct cs_rec_nvtx *o = &recs[i];
        if (o->pid == r->pid && o->tid == r->tid && o->domain_id == r->domain_id &&
            !(o->flags & (CS_NF_MARK | CS_NF_STARTEND)) && o->depth + 1 == r->depth &&
            o->t_start_ns <= r->t_start_ns && o->t_end_ns >= r->t_end_ns)
            return 1;
    }
    return 0;
}

static int worker_ix(uint32_t *tids, int *n, uint32_t tid)
{
    for (int i = 0; i < *n; i++)
        if (tids[i] == tid)
            return i;
    if (*n == MAX_WORKERS)
        return -1;
    tids[*n] = tid;
    return (*n)++;
}

static void check(struct cs_run *run, int threads, unsigned long iters)
{
    uint32_t main_pid = 0, main_tid = 0, tids[MAX_WORKERS];
    unsigned long steps[MAX_WORKERS] = {0}, paysum[MAX_WORKERS] = {0};
    int nw = 0;
    size_t nthr;
    const struct cs_thread *thr = cs_run_threads(run, &nthr);

    for (size_t i = 0; i < nrecs; i++)
        if (strcmp(cs_run_string(run, recs[i].name_id), "start mark") == 0)
            main_pid = recs[i].pid, main_tid = recs[i].tid;
    if (main_pid == 0) {
        FAIL("no 'start mark': the main process's records are missing");
        return;
    }
    for (size_t i = 0; i < NWANTS; i++)
        if (wants[i].who == WORKER)
            wants[i].n = (unsigned long)threads * iters;
        else if (strcmp(wants[i].name, "handoff") == 0)
            wants[i].n = (unsigned long)threads;
    for (size_t i = 0; i < NWANTS; i++)
        if (strcmp(wants[i].name, "worker open") == 0)
            wants[i].n = (unsigned long)threads; /* at thread exit */
    for (size_t i = 0; i < nrecs; i++) {
        const struct cs_rec_nvtx *r = &recs[i];
        struct want *w = want_of(run, r);
        enum who who = r->pid != main_pid ? CHILD : r->tid == main_tid ? MAIN : WORKER;
        if (w == NULL)
            continue;
        w->got++;
        if (w->who != who || r->depth != w->depth || r->flags != w->flags ||
            r->category != w->category || r->color != w->color)
            FAIL("'%s': thread %s, level %u, flags %#x, category %u, colour %#x; want thread "
                 "%s, level %u, flags %#x, category %u, colour %#x",
                 w->name, who == MAIN ? "main" : who == WORKER ? "worker" : "child", r->depth,
                 r->flags, r->category, r->color,
                 w->who == MAIN ? "main" : w->who == WORKER ? "worker" : "child", w->depth,
                 w->flags, w->category, w->color);
        if (r->t_end_ns < r->t_start_ns ||
            ((r->flags & CS_NF_MARK) && r->t_end_ns != r->t_start_ns))
            FAIL("'%s': ends at %llu before or after it starts (%llu)", w->name,
                 (unsigned long long)r->t_end_ns, (unsigned long long)r->t_start_ns);
        if (r->depth > 0 && !(r->flags & CS_NF_OPEN) && who != CHILD && !nested(r))
            FAIL("'%s' (tid %u, level %u) is inside no range one level up", w->name, r->tid,
                 r->depth);
        if (who == WORKER && strcmp(w->name, "outer") == 0) {
            int k = worker_ix(tids, &nw, r->tid);
            if (k >= 0)
                steps[k]++;
        }
        if (who == WORKER && strcmp(w->name, "middle") == 0) {
            int k = worker_ix(tids, &nw, r->tid);
            if (r->payload_type != 1)
                FAIL("'middle': payload type %u, want 1 (unsigned 64-bit)", r->payload_type);
            if (k >= 0)
                paysum[k] += r->payload;
        }
    }
    for (size_t i = 0; i < NWANTS; i++)
        if (wants[i].got != wants[i].n)
            FAIL("'%s' in domain '%s': %lu records, want %lu", wants[i].name, wants[i].domain,
                 wants[i].got, wants[i].n);
    if (nw != threads)
        FAIL("%d worker threads made ranges, want %d", nw, threads);
    for (int k = 0; k < nw; k++) {
        int listed = 0;
        if (steps[k] != iters || paysum[k] != iters * (iters - 1) / 2)
            FAIL("worker tid %u: %lu steps, payload sum %lu; want %lu, %lu", tids[k], steps[k],
                 paysum[k], iters, iters * (iters - 1) / 2);
        for (size_t t = 0; t < nthr; t++)
            listed |= thr[t].pid == main_pid && thr[t].tid == tids[k];
        if (!listed)
            FAIL("worker tid %u (no CUDA call) is not in the threads table", tids[k]);
    }
}

int main(int argc, char **argv)
{
    struct cs_run *run = NULL;
    int none = argc > 1 && strcmp(argv[1], "--none") == 0, rc;

    if (argc - none != 4 && !(none && argc == 3)) {
        fprintf(stderr, "usage: test_nvtx_check [--none] RUN THREADS ITERS\n");
        return 2;
    }
    rc = open_run(&run, argv[1 + none], none);
    if (rc == 0 && load(run) == 0) {
        if (none && nrecs)
            FAIL("%zu NVTX records, want none", nrecs);
        else if (!none)
            check(run, atoi(argv[2]), strtoul(argv[3], NULL, 10));
        if (!none && cs_run_count(run, CS_REC_NVTX) != nrecs)
            FAIL("run counts %llu NVTX records, the blocks hold %zu",
                 (unsigned long long)cs_run_count(run, CS_REC_NVTX), nrecs);
    }
    cs_run_free(run);
    free(recs);
    return failures ? 1 : 0;
}
