/* test_shim_check.c: compares the CUDA records of a run file with what the
 * fake driver and fake runtime saw a client do (its FAKECUDA_EXPECT file),
 * for the shim's cli.shim_* tests. Exactly the same launches, copies
 * (count, bytes, direction, pinned/pageable), memsets, syncs and
 * allocations per exported function and variant at the driver layer; the
 * runtime layer too when the client used the shared runtime; kernel names;
 * no duplicate records; nested records point at a runtime record.
 *
 * With --gpu full|sampled, the GPU records (CUPTI, docs/gpu.md) too: each
 * names the enqueuing record of its process, which is a kernel launch of the
 * same kernel (copy, memset) enqueued before the GPU started it; each
 * enqueue made while recording was on has exactly one GPU record (full: all
 * of them); no GPU record comes from outside a recorded span. With
 * --gpu-paused N also: exactly N skipped slices, and a span after them.
 *
 * Usage: test_shim_check [--wait SEC] [--runtime shared|static] [--none]
 *                        [--stacks] [--static-rt] [--gpu full|sampled]
 *                        [--gpu-paused N] [--fold on|off] RUN EXPECT...
 * --none: the run must hold no CUDA record at all (or not exist).
 * --fold on: some runtime records fold in their driver call (a folded one
 * counts as both calls), and no outermost runtime record that folded none
 * has a nested driver record of its family; off: none folds.
 * Exit 0 when everything matches; 1 with one line per mismatch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "cudaspy/runfile.h"
#include "run_wait.h"

#define MAX_RECS (1u << 22)
#define MAX_KERNELS 64

struct expect {
    unsigned pid;
    uint64_t calls[2][CS_API_COUNT][3]; /* [layer][api][variant] */
    uint64_t copy_n[CS_DIR_DEFAULT + 1], copy_bytes[CS_DIR_DEFAULT + 1];
    uint64_t pinned, pageable, memset_bytes;
    int nkernels;
    char kname[MAX_KERNELS][128];
    uint64_t klaunch[MAX_KERNELS];
    uint64_t replays; /* graph replays of any kernel: some launch was captured */
};

static int failures;

#define FAIL(...)                                                                    \
    do {                                                                             \
        fprintf(stderr, "test_shim_check: " __VA_ARGS__);                            \
        fputc('\n', stderr);                                                         \
        failures++;                                                                  \
    } while (0)

static int variant_of(const char *s)
{
    return strcmp(s, "ptsz") == 0 ? CS_VAR_PTSZ : strcmp(s, "ptds") == 0 ? CS_VAR_PTDS : 0;
}

static int dir_of(const char *s)
{
    static const char *const names[] = {"", "HtoD", "DtoH", "DtoD", "HtoH"};
    for (int i = 1; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static void expect_line(struct expect *e, const char *line)
{
    char a[128], b[128], c[128];
    unsigned long long n, m;

    if (sscanf(line, "pid %u", &e->pid) == 1)
        return;
    if (sscanf(line, "call %127s %127s %127s %llu", a, b, c, &n) == 4) {
        enum cs_api api = cs_api_lookup(b, NULL);
        if (api != CS_API_NONE && strcmp(a, "static_runtime") != 0)
            e->calls[strcmp(a, "driver") == 0 ? 0 : 1][api][variant_of(c)] = n;
    } else if (sscanf(line, "copy %127s %llu %llu", a, &n, &m) == 3 && dir_of(a) > 0) {
        e->copy_n[dir_of(a)] = n;
        e->copy_bytes[dir_of(a)] = m;
    } else if (sscanf(line, "host pinned %llu", &n) == 1) {
        e->pinned = n;
    } else if (sscanf(line, "host pageable %llu", &n) == 1) {
        e->pageable = n;
    } else if (sscanf(line, "memset bytes %llu", &n) == 1) {
        e->memset_bytes = n;
    } else if (sscanf(line, "kernel %127s %llu %llu", a, &n, &m) == 3 &&
               e->nkernels < MAX_KERNELS) {
        snprintf(e->kname[e->nkernels], sizeof(e->kname[0]), "%s", a);
        e->klaunch[e->nkernels++] = n;
        e->replays += m;
    }
}

static int expect_read(struct expect *e, const char *path)
{
    char line[512];
    FILE *f = fopen(path, "r");

    memset(e, 0, sizeof(*e));
    if (f == NULL) {
        FAIL("%s: cannot read (%s)", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f))
        expect_line(e, line);
    fclose(f);
    return 0;
}

/* ---- the run ---- */

struct recs {
    struct cs_rec_cuda *r;
    size_t n;
};

static int open_run(struct cs_run **out, const char *path, int wait_s)
{
    struct cs_err err = {""};
    int rc = run_open_wait(out, path, wait_s, &err);

    if (rc != 0)
        FAIL("%s: %s", path, rc < 0 ? err.msg : "collector never finished (clean_shutdown=0)");
    return rc ? -1 : 0;
}

/* Every record of @p kind (@p size bytes each) into a new array. */
static int kind_load(struct cs_run *run, unsigned kind, size_t size, void **out, size_t *n)
{
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *p;
    struct cs_err err = {""};
    int rc;

    *out = malloc(MAX_RECS * size);
    *n = 0;
    if (*out == NULL || cs_cursor_open(run, kind, 0, UINT64_MAX, &c) < 0)
        return -1;
    while ((rc = cs_cursor_next(c, &h, &p, &err)) == 1) {
        size_t k = h->n;
        if (h->kind != kind)
            continue;
        if (*n + k > MAX_RECS)
            k = MAX_RECS - *n;
        memcpy((char *)*out + *n * size, p, k * size);
        *n += k;
    }
    cs_cursor_close(c);
    if (rc < 0)
        FAIL("run: %s", err.msg);
    return rc;
}

static int recs_load(struct cs_run *run, struct recs *out)
{
    return kind_load(run, CS_REC_CUDA, sizeof(*out->r), (void **)&out->r, &out->n);
}

static int want_gpu; /* --gpu: 0 no check, CS_GPU_MODE_FULL or _SAMPLED */
static int want_paused = -1; /* --gpu-paused N: N skipped slices, then one recorded */

struct gpu_recs {
    struct cs_rec_gpu *g;
    size_t ng;
    struct cs_rec_gpucov *c;
    size_t nc;
};

/* ---- comparisons ---- */

static int is_kernel_launch(unsigned api)
{
    return api == CS_API_cuLaunchKernel || api == CS_API_cuLaunchKernelEx ||
           api == CS_API_cuLaunchCooperativeKernel;
}

static void check_calls(const struct expect *e, uint64_t got[2][CS_API_COUNT][3], int layer,
                        const char *what)
{
    char name[96];
    for (int a = 1; a < CS_API_COUNT; a++)
        for (int v = 0; v < 3; v++)
            if (got[layer][a][v] != e->calls[layer][a][v] &&
                /* initialisation is not exported (shim_driver.c): a program
                 * linked with -lcuda calls it unseen; never more records */
                !(cs_api_table[a].family == CS_FAM_INIT && got[layer][a][v] < e->calls[layer][a][v]))
                FAIL("pid %u: %s %s: got %llu records, want %llu", e->pid, what,
                     cs_api_display((enum cs_api)a, (enum cs_variant)v, name, sizeof(name)),
                     (unsigned long long)got[layer][a][v],
                     (unsigned long long)e->calls[layer][a][v]);
}

struct tally {
    uint64_t calls[2][CS_API_COUNT][3];
    uint64_t copy_n[CS_DIR_DEFAULT + 1], copy_bytes[CS_DIR_DEFAULT + 1];
    uint64_t pinned, pageable, unflagged, memset_bytes, launches, named, captured;
    uint64_t stacks_wanted, stacks_got, static_rt, driver;
    uint64_t folded;      /* runtime records holding their driver call */
    uint64_t no_device; /* successful records without a device ordinal */
    uint64_t klaunch[MAX_KERNELS];
};

static int want_stacks; /* --stacks: every synchronous call has a native stack */
static int want_static; /* --runtime static: driver records say CS_CF_STATIC_RT */

static int want_fold = -1; /* --fold on|off: runtime records hold their driver call, or never */

/* The driver call @p r stands for: its own, or the one a runtime record
 * folded in (driver api @p api, its result's success @p ok). */
static void tally_driver(struct tally *t, const struct expect *e, struct cs_run *run,
                         const struct cs_rec_cuda *r, unsigned api, int ok)
{
    t->calls[CS_LAYER_DRIVER][api][r->variant % 3]++;
    t->static_rt += (r->flags & CS_CF_STATIC_RT) != 0;
    t->driver++;
    if (cs_api_table[api].family == CS_FAM_COPY && ok) {
        int batch = api == CS_API_cuMemcpyBatchAsync || api == CS_API_cuMemcpyBatchAsync_v2;
        t->copy_n[r->dir <= CS_DIR_DEFAULT ? r->dir : 0] += batch ? r->aux : 1;
        t->copy_bytes[r->dir <= CS_DIR_DEFAULT ? r->dir : 0] += r->bytes;
        if (r->flags & CS_CF_PINNED)
            t->pinned++;
        else if (r->flags & CS_CF_PAGEABLE)
            t->pageable++;
        else if (r->dir != CS_DIR_DTOD && r->dir != CS_DIR_PEER)
            t->unflagged++;
    }
    if (cs_api_table[api].family == CS_FAM_MEMSET && ok)
        t->memset_bytes += r->bytes;
    if (want_stacks && cs_api_table[api].family == CS_FAM_SYNC) {
        size_t nf = 0;
        const struct cs_frame *f = r->stack_id ? cs_run_stack(run, r->stack_id, &nf) : NULL;
        t->stacks_wanted++;
        t->stacks_got += f && nf > 0 && f[0].module_id && cs_run_string(run, f[0].module_id)[0];
    }
    if (is_kernel_launch(api) && ok) {
        t->launches++;
        t->captured += (r->flags & CS_CF_CAPTURING) != 0;
        if (r->flags & CS_CF_HAS_NAME) {
            const char *name = cs_run_string(run, r->name_id);
            t->named += name[0] != '\0';
            for (int k = 0; k < e->nkernels; k++)
                t->klaunch[k] += strcmp(name, e->kname[k]) == 0;
        }
    }
}

static void tally_rec(struct tally *t, const struct expect *e, struct cs_run *run,
                      const struct cs_rec_cuda *r)
{
    unsigned api = r->api < CS_API_COUNT ? r->api : 0;
    unsigned drv = r->drv_api < CS_API_COUNT ? r->drv_api : 0;
    int layer = cs_api_table[api].layer;

    /* the fake has one device, 0; initialisation runs before any context */
    t->no_device += r->result == 0 && r->device != 0 && cs_api_table[api].family != CS_FAM_INIT;
    if (layer == CS_LAYER_DRIVER) {
        tally_driver(t, e, run, r, api, r->result == 0);
        return;
    }
    t->calls[layer][api][r->variant % 3]++;
    if (!(r->flags & CS_CF_FOLDED))
        return;
    t->folded++;
    if (cs_api_table[drv].layer != CS_LAYER_DRIVER || drv == 0 ||
        cs_api_table[drv].family != cs_api_table[api].family)
        FAIL("pid %u: tid %u seq %u: %s folds in %s, not a driver call of its family", e->pid,
             r->tid, r->seq, cs_api_table[api].name, cs_api_table[drv].name);
    tally_driver(t, e, run, r, drv, !(r->flags & CS_CF_DRV_ERROR) && r->result == 0);
}

static void check_copies(const struct expect *e, const struct tally *t)
{
    static const char *const dn[] = {"none", "HtoD", "DtoH", "DtoD", "HtoH", "peer", "default"};
    uint64_t got_n = 0, want_n = 0, got_b = 0, want_b = 0;
    int loose = t->copy_n[CS_DIR_DEFAULT] > 0;

    for (int d = 1; d <= CS_DIR_DEFAULT; d++) {
        got_n += t->copy_n[d], want_n += e->copy_n[d];
        got_b += t->copy_bytes[d], want_b += e->copy_bytes[d];
        if (d > CS_DIR_HTOH)
            continue;
        if (loose ? t->copy_n[d] > e->copy_n[d] : t->copy_n[d] != e->copy_n[d])
            FAIL("pid %u: copies %s: got %llu, want %llu", e->pid, dn[d],
                 (unsigned long long)t->copy_n[d], (unsigned long long)e->copy_n[d]);
        if (!loose && t->copy_bytes[d] != e->copy_bytes[d])
            FAIL("pid %u: copy bytes %s: got %llu, want %llu", e->pid, dn[d],
                 (unsigned long long)t->copy_bytes[d], (unsigned long long)e->copy_bytes[d]);
    }
    if (got_n != want_n || got_b != want_b)
        FAIL("pid %u: copies in all: got %llu (%llu bytes), want %llu (%llu bytes)", e->pid,
             (unsigned long long)got_n, (unsigned long long)got_b, (unsigned long long)want_n,
             (unsigned long long)want_b);
    if (t->unflagged ? t->pinned > e->pinned : t->pinned != e->pinned)
        FAIL("pid %u: pinned copies: got %llu, want %llu", e->pid,
             (unsigned long long)t->pinned, (unsigned long long)e->pinned);
    if (t->unflagged ? t->pageable > e->pageable : t->pageable != e->pageable)
        FAIL("pid %u: pageable copies: got %llu, want %llu", e->pid,
             (unsigned long long)t->pageable, (unsigned long long)e->pageable);
}

static void check_kernels(const struct expect *e, const struct tally *t)
{
    for (int k = 0; k < e->nkernels; k++)
        if (t->klaunch[k] != e->klaunch[k])
            FAIL("pid %u: kernel %s: got %llu named launches, want %llu", e->pid, e->kname[k],
                 (unsigned long long)t->klaunch[k], (unsigned long long)e->klaunch[k]);
    if (e->replays && t->captured == 0)
        FAIL("pid %u: captured launches: got none flagged, want some (graphs were replayed)",
             e->pid);
    if (t->stacks_wanted != t->stacks_got)
        FAIL("pid %u: sync calls with a native stack: got %llu of %llu, want all", e->pid,
             (unsigned long long)t->stacks_got, (unsigned long long)t->stacks_wanted);
    if (t->launches && t->named * 100 < t->launches * 99)
        FAIL("pid %u: named launches: got %llu of %llu, want >= 99 %%", e->pid,
             (unsigned long long)t->named, (unsigned long long)t->launches);
}

static int cmp_tid_seq(const void *a, const void *b)
{
    const struct cs_rec_cuda *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A runtime kernel launch and the driver launch it made name one kernel. */
static void check_nested_name(const struct expect *e, struct cs_run *run,
                              const struct cs_rec_cuda *p, const struct cs_rec_cuda *c)
{
    const char *pn, *cn;

    if (!is_kernel_launch(c->api) || c->result != 0 || p->result != 0 ||
        p->api == CS_API_cudaGraphLaunch ||
        cs_api_table[p->api % CS_API_COUNT].family != CS_FAM_LAUNCH)
        return;
    pn = (p->flags & CS_CF_HAS_NAME) ? cs_run_string(run, p->name_id) : "";
    cn = (c->flags & CS_CF_HAS_NAME) ? cs_run_string(run, c->name_id) : "";
    if (pn[0] == '\0' || strcmp(pn, cn) != 0)
        FAIL("pid %u: tid %u seq %u: runtime launch named \"%s\", its driver launch \"%s\"",
             e->pid, p->tid, p->seq, pn, cn);
}

/* The records after runtime record r[i] that were made inside it lie
 * inside it in time, and when the last of them is a driver call the runtime
 * call made itself, the runtime call ends when that call does (the shim
 * reads the clock once for both: shim.h, shim_rec_end_rt). */
static void check_nested_times(const struct expect *e, const struct cs_rec_cuda *r, size_t n,
                               size_t i)
{
    const struct cs_rec_cuda *p = &r[i], *last = NULL;

    for (size_t j = i + 1; j < n && r[j].tid == p->tid && (r[j].flags & CS_CF_NESTED); j++) {
        last = &r[j];
        if (r[j].parent_seq != p->seq)
            continue;
        if (r[j].t_enter_ns < p->t_enter_ns || r[j].t_exit_ns > p->t_exit_ns)
            FAIL("pid %u: tid %u seq %u: outside its runtime call (seq %u) in time", e->pid,
                 r[j].tid, r[j].seq, p->seq);
    }
    if (last && last->parent_seq == p->seq && !(p->flags & CS_CF_FOLDED) &&
        cs_api_table[last->api % CS_API_COUNT].layer == CS_LAYER_DRIVER &&
        last->t_exit_ns != p->t_exit_ns)
        FAIL("pid %u: tid %u seq %u: runtime call ends at %llu, its last driver call at %llu",
             e->pid, p->tid, p->seq, (unsigned long long)p->t_exit_ns,
             (unsigned long long)last->t_exit_ns);
}

/* Records of one pid sorted by (tid, seq): no duplicates; a nested record's
 * parent is a runtime record of the same thread, and names the same kernel;
 * nested records lie inside their parent. */
static void check_seq(const struct expect *e, struct cs_run *run, struct cs_rec_cuda *r, size_t n,
                      int runtime)
{
    qsort(r, n, sizeof(*r), cmp_tid_seq);
    for (size_t i = 0; i < n; i++) {
        if (r[i].flags & CS_CF_TRACER) { /* the shim's own memory readings: seq 0 */
            if (r[i].seq != 0 || r[i].api != CS_API_cuMemGetInfo_v2)
                FAIL("pid %u: tid %u seq %u: a tracer record that is no reading", e->pid,
                     r[i].tid, r[i].seq);
            continue;
        }
        if (i && r[i].tid == r[i - 1].tid && r[i].seq == r[i - 1].seq)
            FAIL("pid %u: tid %u seq %u: duplicate record", e->pid, r[i].tid, r[i].seq);
        if (runtime && cs_api_table[r[i].api % CS_API_COUNT].layer == CS_LAYER_RUNTIME)
            check_nested_times(e, r, n, i);
        if (!(r[i].flags & CS_CF_NESTED) || !runtime)
            continue;
        struct cs_rec_cuda key = {.tid = r[i].tid, .seq = r[i].parent_seq};
        const struct cs_rec_cuda *p = bsearch(&key, r, n, sizeof(*r), cmp_tid_seq);
        if (p == NULL || cs_api_table[p->api % CS_API_COUNT].layer != CS_LAYER_RUNTIME)
            FAIL("pid %u: tid %u seq %u: nested under seq %u, which is no runtime record",
                 e->pid, r[i].tid, r[i].seq, r[i].parent_seq);
        else
            check_nested_name(e, run, p, &r[i]);
        if (p && want_fold == 1 && !(p->flags & CS_CF_NESTED) && !(p->flags & CS_CF_FOLDED) &&
            cs_api_table[p->api % CS_API_COUNT].family ==
                cs_api_table[r[i].api % CS_API_COUNT].family)
            FAIL("pid %u: tid %u seq %u: %s kept a record of its own inside %s (seq %u), which "
                 "folded in no driver call", e->pid, r[i].tid, r[i].seq,
                 cs_api_table[r[i].api % CS_API_COUNT].name,
                 cs_api_table[p->api % CS_API_COUNT].name, p->seq);
    }
}

/* The driver call record @p r stands for: its own, or the one its runtime
 * call folded in; CS_API_NONE for a runtime record without one. */
static unsigned drv_of(const struct cs_rec_cuda *r)
{
    unsigned api = (r->flags & CS_CF_FOLDED) ? r->drv_api : r->api;

    api %= CS_API_COUNT;
    return cs_api_table[api].layer == CS_LAYER_DRIVER ? api : CS_API_NONE;
}

static int is_enqueue(const struct cs_rec_cuda *r)
{
    unsigned api = drv_of(r);
    int fam = cs_api_table[api].family;

    return api != CS_API_NONE && r->result == 0 && !(r->flags & CS_CF_DRV_ERROR) &&
           !(r->flags & CS_CF_CAPTURING) && api != CS_API_cuLaunchHostFunc &&
           (fam == CS_FAM_LAUNCH || ((fam == CS_FAM_COPY || fam == CS_FAM_MEMSET) && r->bytes));
}

/* Was enqueue record @p r made while GPU activity was recorded? */
static int covered(const struct gpu_recs *gr, unsigned pid, const struct cs_rec_cuda *r, int loose)
{
    for (size_t i = 0; i < gr->nc; i++) {
        const struct cs_rec_gpucov *c = &gr->c[i];
        if (c->pid != pid || (c->flags & (CS_GCF_UNAVAIL | CS_GCF_PAUSED)))
            continue;
        if (loose ? r->t_exit_ns >= c->t_attach_ns && r->t_enter_ns <= c->t_detach_ns
                  : r->t_enter_ns >= c->t_start_ns && r->t_exit_ns <= c->t_end_ns)
            return 1;
    }
    return 0;
}

/* --gpu-paused N: pid @p pid skipped exactly N slices, and recorded a span
 * after the last of them (GPU activity came back). */
static void check_paused(unsigned pid, const struct gpu_recs *gr)
{
    uint64_t last = 0, after = 0;
    int n = 0;

    for (size_t i = 0; i < gr->nc; i++)
        if (gr->c[i].pid == pid && (gr->c[i].flags & CS_GCF_PAUSED))
            n++, last = gr->c[i].t_start_ns > last ? gr->c[i].t_start_ns : last;
    for (size_t i = 0; i < gr->nc; i++)
        if (gr->c[i].pid == pid && !(gr->c[i].flags & (CS_GCF_PAUSED | CS_GCF_UNAVAIL)) &&
            gr->c[i].t_start_ns > last)
            after++;
    if (n != want_paused)
        FAIL("pid %u: %d skipped slices, want %d", pid, n, want_paused);
    if (after == 0)
        FAIL("pid %u: no recorded span after the last skipped slice", pid);
}

/* @p mine: the pid's CUDA records sorted by (tid, seq). */
static void check_gpu(const struct expect *e, struct cs_run *run, const struct cs_rec_cuda *mine,
                      size_t n, const struct gpu_recs *gr)
{
    uint8_t *seen = calloc(n + 1, 1);
    size_t spans = 0, wanted = 0, missing = 0;

    for (size_t i = 0; i < gr->nc; i++)
        spans += gr->c[i].pid == e->pid && !(gr->c[i].flags & (CS_GCF_UNAVAIL | CS_GCF_PAUSED));
    if (spans == 0)
        FAIL("pid %u: no span with GPU activity recorded", e->pid);
    if (want_paused >= 0)
        check_paused(e->pid, gr);
    for (size_t i = 0; seen && i < gr->ng; i++) {
        const struct cs_rec_gpu *g = &gr->g[i];
        struct cs_rec_cuda key = {.tid = g->api_tid, .seq = g->api_seq};
        const struct cs_rec_cuda *r;
        if (g->pid != e->pid)
            continue;
        if (!(g->flags & CS_GF_CORR)) {
            FAIL("pid %u: GPU record (corr %u) names no enqueuing call", e->pid, g->corr_id);
            continue;
        }
        r = bsearch(&key, mine, n, sizeof(*mine), cmp_tid_seq);
        if (r == NULL || !is_enqueue(r)) {
            FAIL("pid %u: GPU record names tid %u seq %u, %s", e->pid, g->api_tid, g->api_seq,
                 r ? "not an enqueue" : "no such record");
            continue;
        }
        if (seen[r - mine]++ && drv_of(r) != CS_API_cuGraphLaunch &&
            drv_of(r) != CS_API_cuMemcpyBatchAsync && drv_of(r) != CS_API_cuMemcpyBatchAsync_v2)
            FAIL("pid %u: tid %u seq %u: more than one GPU record for %s", e->pid, r->tid,
                 r->seq, cs_api_table[drv_of(r)].name);
        /* 1 us: TSC-stamped records are converted by a calibration (sampler/clock.h) */
        if (g->t_start_ns + 1000 < r->t_enter_ns || g->t_end_ns < g->t_start_ns)
            FAIL("pid %u: tid %u seq %u: GPU ran %llu..%llu, enqueued at %llu", e->pid, r->tid,
                 r->seq, (unsigned long long)g->t_start_ns, (unsigned long long)g->t_end_ns,
                 (unsigned long long)r->t_enter_ns);
        if (!covered(gr, e->pid, r, 1))
            FAIL("pid %u: tid %u seq %u: GPU record from outside every recorded span", e->pid,
                 r->tid, r->seq);
        /* issue 31: a replay's records name their graph and node, others none */
        if ((drv_of(r) == CS_API_cuGraphLaunch) != (g->graph_id != 0 && g->graph_node_id != 0))
            FAIL("pid %u: tid %u seq %u: %s ran a GPU record of graph %u node %llu", e->pid,
                 r->tid, r->seq, cs_api_table[drv_of(r)].name, g->graph_id,
                 (unsigned long long)g->graph_node_id);
        if (g->kind == CS_GPU_KERNEL && drv_of(r) != CS_API_cuGraphLaunch &&
            (!(r->flags & CS_CF_HAS_NAME) || g->name_id != r->name_id))
            FAIL("pid %u: tid %u seq %u: GPU kernel \"%s\", launch of \"%s\"", e->pid, r->tid,
                 r->seq, cs_run_string(run, g->name_id),
                 (r->flags & CS_CF_HAS_NAME) ? cs_run_string(run, r->name_id) : "");
    }
    for (size_t i = 0; seen && i < n; i++) {
        if (!is_enqueue(&mine[i]) || (want_gpu == CS_GPU_MODE_SAMPLED && !covered(gr, e->pid, &mine[i], 0)))
            continue;
        wanted++;
        missing += !seen[i];
    }
    if (missing)
        FAIL("pid %u: %zu of %zu enqueues made while recording have no GPU record", e->pid,
             missing, wanted);
    free(seen);
}

static void check_pid(const struct expect *e, struct cs_run *run, const struct recs *all,
                      int runtime, const struct gpu_recs *gr)
{
    struct tally *t = calloc(1, sizeof(*t));
    struct cs_rec_cuda *mine = malloc((all->n + 1) * sizeof(*mine));
    size_t n = 0;

    if (t == NULL || mine == NULL) {
        FAIL("out of memory");
        return;
    }
    for (size_t i = 0; i < all->n; i++) {
        if (all->r[i].pid != e->pid)
            continue;
        mine[n++] = all->r[i];
        tally_rec(t, e, run, &all->r[i]);
    }
    check_calls(e, t->calls, CS_LAYER_DRIVER, "driver");
    check_calls(e, t->calls, CS_LAYER_RUNTIME, runtime ? "runtime" : "runtime (static: none)");
    check_copies(e, t);
    if (t->memset_bytes != e->memset_bytes)
        FAIL("pid %u: memset bytes: got %llu, want %llu", e->pid,
             (unsigned long long)t->memset_bytes, (unsigned long long)e->memset_bytes);
    check_kernels(e, t);
    if (want_fold == 0 && t->folded)
        FAIL("pid %u: %llu runtime records folded in a driver call, want none (CUDASPY_FOLD=0)",
             e->pid, (unsigned long long)t->folded);
    if (want_fold == 1 && runtime && t->folded == 0)
        FAIL("pid %u: no runtime record folded in its driver call", e->pid);
    if (want_static && t->static_rt != t->driver)
        FAIL("pid %u: driver records flagged static runtime: got %llu of %llu, want all",
             e->pid, (unsigned long long)t->static_rt, (unsigned long long)t->driver);
    if (runtime && t->static_rt)
        FAIL("pid %u: records flagged static runtime: got %llu, want none (shared runtime)",
             e->pid, (unsigned long long)t->static_rt);
    if (t->no_device)
        FAIL("pid %u: %llu successful records not on device 0", e->pid,
             (unsigned long long)t->no_device);
    check_seq(e, run, mine, n, runtime);
    if (want_gpu)
        check_gpu(e, run, mine, n, gr);
    free(mine);
    free(t);
}

static int pid_listed(const unsigned *pids, int n, unsigned pid)
{
    for (int k = 0; k < n; k++)
        if (pids[k] == pid)
            return 1;
    return 0;
}

/* Processes that made no CUDA call (no expectation file) record nothing
 * and register no ring. */
static void check_other_pids(struct cs_run *run, const struct recs *all, const unsigned *pids,
                             int n)
{
    size_t np = 0;
    const struct cs_proc *p = cs_run_procs(run, &np);

    for (size_t i = 0; i < all->n; i++)
        if (!pid_listed(pids, n, all->r[i].pid)) {
            FAIL("pid %u: has CUDA records but made no CUDA call", all->r[i].pid);
            break;
        }
    for (size_t i = 0; i < np; i++)
        if ((p[i].flags & CS_PF_CUDA) && !pid_listed(pids, n, p[i].pid))
            FAIL("pid %u (%.16s): registered a ring but made no CUDA call", p[i].pid, p[i].comm);
}

int main(int argc, char **argv)
{
    int wait_s = 0, runtime = 1, none = 0, i = 1;
    struct cs_run *run;
    struct recs all;

    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc)
            wait_s = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc)
            runtime = strcmp(argv[++i], "shared") == 0;
        else if (strcmp(argv[i], "--none") == 0)
            none = 1;
        else if (strcmp(argv[i], "--stacks") == 0)
            want_stacks = 1;
        else if (strcmp(argv[i], "--static-rt") == 0)
            want_static = 1;
        else if (strcmp(argv[i], "--gpu") == 0 && i + 1 < argc)
            want_gpu = strcmp(argv[++i], "full") == 0 ? CS_GPU_MODE_FULL : CS_GPU_MODE_SAMPLED;
        else if (strcmp(argv[i], "--gpu-paused") == 0 && i + 1 < argc)
            want_paused = atoi(argv[++i]);
        else if (strcmp(argv[i], "--fold") == 0 && i + 1 < argc)
            want_fold = strcmp(argv[++i], "on") == 0;
        else
            break;
    }
    if (i >= argc || (!none && i + 1 >= argc)) {
        fprintf(stderr, "usage: test_shim_check [--wait SEC] [--runtime shared|static] "
                        "[--none] [--stacks] [--static-rt] [--gpu full|sampled] "
                        "[--gpu-paused N] [--fold on|off] RUN EXPECT...\n");
        return 2;
    }
    if (none && access(argv[i], F_OK) != 0)
        return 0;
    struct gpu_recs gr = {0};
    if (open_run(&run, argv[i], wait_s) < 0 || recs_load(run, &all) < 0)
        return 1;
    if (want_gpu && (kind_load(run, CS_REC_GPU, sizeof(*gr.g), (void **)&gr.g, &gr.ng) < 0 ||
                     kind_load(run, CS_REC_GPUCOV, sizeof(*gr.c), (void **)&gr.c, &gr.nc) < 0))
        return 1;
    if (none && all.n)
        FAIL("%s: got %zu CUDA records, want none", argv[i], all.n);
    unsigned *pids = calloc((size_t)argc, sizeof(*pids));
    for (int k = i + 1; k < argc && pids; k++) {
        struct expect *e = malloc(sizeof(*e));
        if (e && expect_read(e, argv[k]) == 0) {
            check_pid(e, run, &all, runtime, &gr);
            pids[k] = e->pid;
        }
        free(e);
    }
    check_other_pids(run, &all, pids, argc);
    free(pids);
    free(gr.g);
    free(gr.c);
    free(all.r);
    cs_run_free(run);
    return failures ? 1 : 0;
}
