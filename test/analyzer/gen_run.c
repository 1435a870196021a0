/* gen_run.c: writes synthetic run files through the real writer (cs_store)
 * for the analyzer's tests and benchmark. Each scenario plants one cause in
 * an otherwise ordinary training loop: a main process (pid 1000) with CUDA
 * calls, four DataLoader-like workers (1001-1004), sometimes an outside CPU
 * hog (pid 2000), on 2 CPUs. Deterministic for a given seed. In
 * launch_bound_ranks a second CUDA process (pid 1100, rank 1) runs the same
 * loop beside the main one (rank 0), each host-paced for 8 % of the run.
 * gpu_tail is the clean loop with GPU activity sampled (50 ms slices every
 * 250 ms, the GPU busy throughout) and a slow tail: a 200 ms last kernel,
 * then 100 ms of host code before one last tiny kernel, all in one slice
 * that runs on over the tail, as the H200 matmul control's did.
 * gpu_setup is that loop without the tail, after a set-up: one allocation,
 * then 600 ms of host code (loading a dataset) before the first step, in
 * which three slices see the GPU idle.
 * gpu_setup_host: the same set-up with weights copied in and the device
 * synced (train.py:20) before its host code, then a host-bound loop: each step's kernels run 1 ms, and
 * 3 ms of host code follow its sync.
 * sync_setup is sync_per_iteration after gpu_setup_host's set-up, without
 * GPU activity: the set-up's gap is the host lower bound's too.
 * SCENARIO_py (e.g. data_pipeline_starvation_py): the same run with a Python
 * stack on every outermost call, one line per API (py_line() says which),
 * for the findings' python_sites (issue 23). SCENARIO_pys: that, and the
 * collector's samples of the main thread's host code (docs/python.md, "Host
 * code"): in each step's host code after its sync, a sample every 1 ms from
 * 0.5 ms on, the first two in /w/data.py:88 collate, the rest in
 * /w/train.py:61 log_metrics (gpu_setup_host_pys: 3 ms a step, so 2 to 1),
 * each under train_step and main, collate under a library's frame.
 * SCENARIO_pyx: the same samples in other stacks: the first two of a step
 * in a DataLoader's receive path, the rest in an optimizer's own Python
 * (the account's data_recv and host_framework, 2 to 1).
 * Usage: gen_run SCENARIO OUT.lmdb [--steps N] [--seed S] [--big N]
 *        [--big-host H] (big: H host records instead of N) [--id N] (the
 *        collector's pid in the meta: runs alike but for it are other runs)
 *        [--format-version V] (V overrides the stored format version)
 *        [--lost N] (N host records lost on CPU 1, and no clean shutdown)
 *        [--late N] (the 1000th CUDA record written N records after its
 *        place, as a call that returns after many later ones would be) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "cudaspy/runfile.h"
#include "gen_blocks.h"

#define MS 1000000ull
#define US 1000ull
#define T0 (1000ull * 1000 * MS) /* run start, CLOCK_MONOTONIC ns */
#define MAIN 1000u
#define NWORK 4u
#define HOG 2000u
#define RANK1 1100u /* launch_bound_ranks: the second CUDA process */

enum scen { S_CLEAN, S_TREE, S_EXT, S_STARVE, S_PAGEABLE, S_CHURN, S_SYNC, S_LAUNCH, S_IOWAIT,
            S_EMPTY, S_NOHOST, S_BIG, S_PAGE, S_STARVE_PIN, S_LAUNCH_RANKS, S_GPU_TAIL,
            S_GPU_SETUP, S_GPU_SETUP_HOST, S_SYNC_SETUP };
static const char *const scen_names[] = {"clean", "cpu_contention_tree", "cpu_contention_external",
                                         "data_pipeline_starvation", "pageable_memcpy",
                                         "alloc_churn", "sync_per_iteration", "launch_bound",
                                         "io_wait", "empty", "nohost", "big",
                                         "page_alloc_pressure", "starvation_pin_thread",
                                         "launch_bound_ranks", "gpu_tail", "gpu_setup",
                                         "gpu_setup_host", "sync_setup"};

static uint64_t rng_state;
static uint32_t seqs[64];
static uint32_t py_stack[CS_API_COUNT]; /* SCENARIO_py: stack ids by API, 0 = none */
static uint32_t pys_stack[2]; /* SCENARIO_pys: the samples' stacks (collate, log_metrics) */

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t urand(uint64_t lo, uint64_t hi)
{
    return lo + rnd() % (hi - lo + 1);
}

/* ---- CUDA calls ---- */

static uint64_t n_cuda;
static uint32_t cur_pid = MAIN; /* the process the CUDA calls are made by */

static uint32_t *seq(void)
{
    return &seqs[cur_pid == MAIN ? 0 : 1];
}

/* --late: the record held back, and how many more until it is put. */
static uint64_t late_n;
static struct cs_rec_cuda late_rec;
static uint64_t late_left;

static void late_put(void)
{
    gen_put(CS_REC_CUDA, &late_rec, late_rec.t_enter_ns, late_rec.t_exit_ns);
    late_left = 0;
}

static void call_rec(uint16_t api, uint64_t t0, uint64_t t1, uint16_t flags, uint64_t bytes,
                     uint8_t dir, uint32_t parent, uint32_t name_id)
{
    struct cs_rec_cuda r = {0};

    r.t_enter_ns = t0;
    r.t_exit_ns = t1;
    r.stream = 0x7f0000001000ull;
    r.bytes = bytes;
    r.seq = ++*seq();
    r.parent_seq = parent;
    r.pid = cur_pid;
    r.tid = cur_pid;
    r.name_id = name_id;
    r.api = api;
    r.dir = dir;
    r.flags = flags | (name_id ? CS_CF_HAS_NAME : 0);
    r.device = 0;
    r.stack_id = parent ? 0 : py_stack[api];
    if (late_n && n_cuda++ == 1000) {
        late_rec = r, late_left = late_n;
        return;
    }
    gen_put(CS_REC_CUDA, &r, t0, t1);
    if (!late_n)
        n_cuda++;
    else if (late_left && --late_left == 0)
        late_put();
}

static uint32_t kernel_id;

/* A runtime call with its nested driver call; returns t_exit. */
static uint64_t call(uint16_t api, uint16_t drv, uint64_t t0, uint64_t dur, uint16_t flags,
                     uint64_t bytes, uint8_t dir)
{
    uint32_t name = api == CS_API_cudaLaunchKernel ? kernel_id : 0;

    if (drv && dur > 2 * US)
        call_rec(drv, t0 + US / 2, t0 + dur - US / 2, flags | CS_CF_NESTED, bytes, dir,
                 *seq() + 2, name);
    call_rec(api, t0, t0 + dur, flags, bytes, dir, 0, name);
    return t0 + dur;
}

/* ---- host records ---- */

static uint64_t n_host;

/* Tid a wake-up from the main process comes from (0: the main thread). */
static uint32_t waker_tid_main;

/* Off-CPU interval of the main thread (or another tid). */
static void off(uint32_t pid, uint32_t tid, uint64_t t0, uint64_t t1, uint8_t cls, uint32_t waker,
                uint32_t holder, int in_tree)
{
    struct cs_rec_offcpu o = {0};

    o.t_start_ns = t0;
    o.t_end_ns = t1;
    o.pid = pid;
    o.tid = tid;
    o.waker_pid = waker;
    o.waker_tid = waker == MAIN && waker_tid_main ? waker_tid_main : waker;
    o.holder_pid = holder;
    o.holder_permille = holder ? 900 : 0;
    o.runq_ns = cls == CS_OFF_PREEMPT ? (uint32_t)(t1 - t0) : 20000;
    o.cpu = (uint16_t)(tid & 1);
    o.cls = cls;
    o.flags = in_tree ? CS_HF_HOLDER_IN_TREE : 0;
    gen_put(CS_REC_OFFCPU, &o, t0, t1);
    n_host++;
}

/* Per-window accumulators of the main process. */
struct acc {
    uint64_t sleep, disk, preempt, vcsw, ivcsw, allocs;
};
static struct acc *acc_main;
static uint64_t nwin;

static void acc_off(uint64_t t0, uint64_t t1, uint8_t cls)
{
    for (uint64_t t = t0; t < t1;) {
        uint64_t w = (t - T0) / (10 * MS), end = T0 + (w + 1) * 10 * MS;
        uint64_t e = end < t1 ? end : t1;
        if (w >= nwin)
            break;
        if (cls == CS_OFF_PREEMPT)
            acc_main[w].preempt += e - t;
        else if (cls == CS_OFF_DISK)
            acc_main[w].disk += e - t;
        else
            acc_main[w].sleep += e - t;
        if (t == t0)
            *(cls == CS_OFF_PREEMPT ? &acc_main[w].ivcsw : &acc_main[w].vcsw) += 1;
        t = e;
    }
}

static void main_off(uint64_t t0, uint64_t t1, uint8_t cls, uint32_t waker, uint32_t holder,
                     int in_tree)
{
    off(cur_pid, cur_pid, t0, t1, cls, waker, holder, in_tree);
    if (cur_pid == MAIN)
        acc_off(t0, t1, cls);
}

static void pwin(uint32_t pid, uint64_t t0, uint64_t oncpu, uint64_t sleep, uint64_t disk,
                 uint64_t pre, uint64_t vcsw, uint64_t ivcsw, uint64_t allocs)
{
    struct cs_rec_pwin w = {0};

    w.t_start_ns = t0;
    w.t_end_ns = t0 + 10 * MS;
    w.pid = pid;
    w.oncpu_ns = oncpu;
    w.sleep_ns = sleep;
    w.disk_ns = disk;
    w.preempt_ns = pre;
    w.runq_ns = pre;
    w.vcsw = (uint32_t)vcsw;
    w.ivcsw = (uint32_t)ivcsw;
    w.page_allocs = (uint32_t)allocs;
    w.minflt = (uint32_t)allocs / 2;
    w.nthreads = 1;
    gen_put(CS_REC_PWIN, &w, w.t_start_ns, w.t_end_ns);
    n_host++;
}

static void syswin(uint64_t t0, unsigned busy, uint64_t tree_ns, uint32_t hog)
{
    struct cs_rec_syswin s = {0};

    s.t_start_ns = t0;
    s.t_end_ns = t0 + 100 * MS;
    s.ncpu = 2;
    s.busy_permille = (uint16_t)busy;
    s.procs_running = busy > 900 ? 6 : 1;
    s.tree_oncpu_ns = tree_ns;
    s.ext_oncpu_ns = hog ? 180 * MS : 2 * MS;
    s.top_pid[0] = hog ? hog : 1;
    s.top_ns[0] = hog ? 180 * MS : 2 * MS;
    gen_put(CS_REC_SYSWIN, &s, s.t_start_ns, s.t_end_ns);
    n_host++;
}

/* Windows for the whole run: main from its accumulators; workers busy in
 * the contention and starvation scenarios, idle otherwise. */
static void windows(enum scen sc, uint64_t t_end)
{
    int busy_workers = sc == S_TREE || sc == S_STARVE || sc == S_STARVE_PIN;

    for (uint64_t w = 0; w < nwin; w++) {
        uint64_t t0 = T0 + w * 10 * MS;
        const struct acc *a = &acc_main[w];
        uint64_t off = a->sleep + a->disk + a->preempt;
        pwin(MAIN, t0, off < 10 * MS ? 10 * MS - off : 0, a->sleep, a->disk, a->preempt, a->vcsw,
             a->ivcsw, 20 + a->allocs);
        if (sc == S_LAUNCH_RANKS)
            pwin(RANK1, t0, 10 * MS, 0, 0, 0, 0, 0, 20);
        for (uint32_t k = 1; k <= NWORK; k++)
            pwin(MAIN + k, t0, busy_workers ? 4 * MS : 100 * US, busy_workers ? 2 * MS : 9 * MS,
                 0, busy_workers ? 4 * MS : 0, busy_workers ? 12 : 1, busy_workers ? 10 : 0,
                 busy_workers ? 700 : 2);
    }
    for (uint64_t t = T0; t + 100 * MS <= t_end; t += 100 * MS)
        syswin(t, sc == S_TREE || sc == S_EXT ? 1000 : busy_workers ? 950 : 450,
               busy_workers ? 180 * MS : 60 * MS, sc == S_EXT ? HOG : 0);
}

/* ---- GPU activity (gpu_tail) ---- */

#define SLICE (50 * MS)
#define PERIOD (250 * MS)

static uint64_t slice_t0 = T0 + 5 * MS; /* the current period's slice starts */
static uint32_t epoch = 1;              /* its attach count */
static uint64_t kern_t0;                /* the queued step's work: enqueued at, 0 = none */
static uint64_t kern_len;               /* and how long it runs, 0 = to the next step's */
static uint32_t kern_seq;               /* by this driver record */

static void cov_rec(uint64_t t0, uint64_t t1)
{
    struct cs_rec_gpucov c = {0};

    c.t_start_ns = c.t_attach_ns = t0;
    c.t_end_ns = c.t_detach_ns = t1;
    c.pid = MAIN;
    c.epoch = epoch;
    c.mode = CS_GPU_MODE_SAMPLED;
    gen_put(CS_REC_GPUCOV, &c, t0, t1);
}

static void gpu_rec(uint64_t t0, uint64_t t1, uint32_t seq)
{
    struct cs_rec_gpu g = {0};

    g.t_start_ns = t0;
    g.t_end_ns = t1;
    g.pid = MAIN;
    g.api_tid = MAIN;
    g.api_seq = seq;
    g.name_id = kernel_id;
    g.stream_id = 7;
    g.epoch = epoch;
    g.kind = CS_GPU_KERNEL;
    g.flags = CS_GF_CORR;
    gen_put(CS_REC_GPU, &g, t0, t1);
}

/* The queued step's GPU work ends at @p t1: recorded if it was enqueued
 * while the slice was on. */
static void kern_end(uint64_t t1)
{
    if (kern_len && kern_t0 + kern_len < t1)
        t1 = kern_t0 + kern_len;
    if (kern_t0 != 0 && kern_t0 >= slice_t0 && kern_t0 < slice_t0 + SLICE)
        gpu_rec(kern_t0, t1, kern_seq);
    kern_t0 = 0;
}

/* Close the slices of the periods over by @p t. */
static void slices_until(uint64_t t)
{
    for (; t >= slice_t0 + PERIOD; slice_t0 += PERIOD, epoch++)
        cov_rec(slice_t0, slice_t0 + SLICE);
}

/* A step's first launch returned at @p t (driver record @p seq): the GPU
 * ran the last step's work until then, and this step's from then on. */
static void kern_next(uint64_t t, uint32_t seq)
{
    kern_end(t - US);
    slices_until(t);
    kern_t0 = t, kern_seq = seq;
}

/* The tail from @p t: one last long kernel (200 ms) and its sync, 100 ms
 * of host code, one tiny kernel and its sync, all in one slice (on at the
 * launch, or earlier when the period's slice still ran). @return the end. */
static uint64_t gpu_tail(uint64_t t)
{
    uint64_t on, k0;
    uint32_t kseq;

    kern_end(t - US);
    slices_until(t);
    if (t >= slice_t0 + SLICE) {
        cov_rec(slice_t0, slice_t0 + SLICE);
        slice_t0 = t, epoch++;
    }
    on = slice_t0;
    k0 = call(CS_API_cudaLaunchKernel, CS_API_cuLaunchKernel, t, 5 * US, 0, 0, 0);
    kseq = *seq() - 1;
    t = call(CS_API_cudaStreamSynchronize, CS_API_cuStreamSynchronize, k0 + 2 * US, 200 * MS, 0,
             0, 0);
    gpu_rec(k0 + US, t - 5 * US, kseq);
    t += 100 * MS; /* on CPU, outside CUDA calls */
    t = call(CS_API_cudaLaunchKernel, CS_API_cuLaunchKernel, t, 5 * US, 0, 0, 0);
    kseq = *seq() - 1;
    gpu_rec(t + 2 * US, t + 12 * US, kseq);
    t = call(CS_API_cudaStreamSynchronize, CS_API_cuStreamSynchronize, t + 2 * US, 20 * US, 0,
             0, 0);
    cov_rec(on, t);
    return t;
}

/* gpu_setup's set-up from @p t: an allocation (@p synced: and a copy and a
 * sync), then 600 ms on CPU outside CUDA calls. @return its end */
static uint64_t gpu_setup(uint64_t t, int synced)
{
    t = call(CS_API_cudaMalloc, CS_API_cuMemAlloc_v2, t, 200 * US, 0, 64ull << 20, 0);
    if (synced) { /* the weights copied in, then the device synced */
        t = call(CS_API_cudaMemcpyAsync, CS_API_cuMemcpyHtoDAsync_v2, t + 5 * US, 10 * US,
                 CS_CF_PINNED, 4ull << 20, CS_DIR_HTOD);
        t = call(CS_API_cudaDeviceSynchronize, CS_API_cuCtxSynchronize_v2, t + 5 * US, 200 * US,
                 0, 0, 0);
    }
    return t + 600 * MS;
}

/* gpu_setup's end at @p t: the last step's work and the slices up to it. */
static void gpu_close(uint64_t t)
{
    kern_end(t - US);
    slices_until(t);
    if (t > slice_t0)
        cov_rec(slice_t0, t < slice_t0 + SLICE ? t : slice_t0 + SLICE);
}

/* ---- the training loop ---- */

struct step_ctx {
    enum scen sc;
    uint64_t t;
    unsigned i;
};

static uint64_t gpu_sync(struct step_ctx *c, uint64_t gpu_ns)
{
    uint64_t t0 = c->t, dur = gpu_ns;

    /* contention: now and then the syncing thread loses its CPU */
    if ((c->sc == S_TREE || c->sc == S_EXT) && rnd() % 100 < 8) {
        uint64_t p0 = t0 + dur / 2, len = urand(8 * MS, 25 * MS);
        uint32_t holder = c->sc == S_TREE ? MAIN + 1 + (uint32_t)(rnd() % NWORK) : HOG;
        main_off(p0, p0 + len, CS_OFF_PREEMPT, 0, holder, c->sc == S_TREE);
        dur += len;
    }
    if (c->sc == S_PAGE && rnd() % 100 < 5) { /* on CPU in the kernel, allocating pages */
        uint64_t len = urand(8 * MS, 20 * MS), w = (t0 - T0) / (10 * MS);
        for (uint64_t k = w; k <= (t0 + dur + len - T0) / (10 * MS) && k < nwin; k++)
            acc_main[k].allocs += 30000;
        dur += len;
    }
    if (c->sc == S_IOWAIT && rnd() % 100 < 10) {
        uint64_t p0 = t0 + dur / 2, len = urand(5 * MS, 15 * MS);
        main_off(p0, p0 + len, CS_OFF_DISK, 0, 0, 0);
        dur += len;
    }
    return call(CS_API_cudaStreamSynchronize, CS_API_cuStreamSynchronize, t0, dur, 0, 0, 0);
}

/* SCENARIO_pys: samples of the main thread's host code in [@p t0, @p t1). */
static void host_samples(uint64_t t0, uint64_t t1)
{
    for (uint64_t t = t0 + 500 * US, k = 0; pys_stack[0] && t < t1; t += MS, k++) {
        struct cs_rec_pysample s = {t - 5 * US, t + 5 * US, cur_pid, cur_pid,
                                    pys_stack[k < 2 ? 0 : 1], k < 2 ? 4 : 2, 0};
        gen_put(CS_REC_PYSAMPLE, &s, s.t_start_ns, s.t_end_ns);
    }
}

static void step(struct step_ctx *c)
{
    int host_paced = c->sc == S_LAUNCH || c->sc == S_LAUNCH_RANKS;
    unsigned nlaunch = host_paced ? 200 : 20;
    int pageable = c->sc == S_PAGEABLE && (c->i % 4 != 0);
    uint64_t bytes = c->sc == S_PAGEABLE ? 64ull << 20 : 4ull << 20;
    uint64_t copy_ns = pageable ? urand(18 * MS, 22 * MS) : bytes / 20; /* pinned: 20 B/ns */

    if (c->sc == S_STARVE || c->sc == S_STARVE_PIN) { /* wait for the next batch */
        uint64_t len = urand(6 * MS, 12 * MS);
        /* from a worker, or (pin_memory=True) from the main process's pin thread */
        waker_tid_main = c->sc == S_STARVE_PIN ? MAIN + 10 : 0;
        main_off(c->t + 20 * US, c->t + 20 * US + len, CS_OFF_SLEEP,
                 c->sc == S_STARVE_PIN ? MAIN : MAIN + 1 + c->i % NWORK, 0, 0);
        waker_tid_main = 0;
        c->t += len + 60 * US;
    }
    if (c->sc == S_CHURN)
        c->t = call(CS_API_cudaMalloc, CS_API_cuMemAlloc_v2, c->t, urand(400 * US, 900 * US), 0,
                    64ull << 20, 0) + 5 * US;
    c->t = call(CS_API_cudaMemcpyAsync, CS_API_cuMemcpyHtoDAsync_v2, c->t,
                pageable ? copy_ns : urand(8 * US, 14 * US),
                pageable ? CS_CF_PAGEABLE : CS_CF_PINNED, bytes, CS_DIR_HTOD) + 3 * US;
    for (unsigned k = 0; k < nlaunch; k++) {
        c->t = call(CS_API_cudaLaunchKernel, CS_API_cuLaunchKernel, c->t, urand(4 * US, 7 * US),
                    0, 0, 0);
        if ((c->sc == S_GPU_TAIL || c->sc == S_GPU_SETUP || c->sc == S_GPU_SETUP_HOST) &&
            k == 0)
            kern_next(c->t, *seq() - 1);
        if (c->sc == S_SYNC)
            c->t = call(CS_API_cudaStreamSynchronize, CS_API_cuStreamSynchronize, c->t + 2 * US,
                        urand(40 * US, 60 * US), 0, 0, 0);
        c->t += c->sc == S_LAUNCH         ? urand(5 * US, 7 * US)
                : c->sc == S_LAUNCH_RANKS ? urand(50 * US, 70 * US)
                                          : 2 * US;
    }
    if (c->sc != S_SYNC)
        c->t = gpu_sync(c, host_paced ? urand(100 * US, 200 * US)
                                             : urand(2 * MS, 3 * MS) + (pageable ? 0 : copy_ns));
    if (c->sc == S_CHURN)
        c->t = call(CS_API_cudaFree, CS_API_cuMemFree_v2, c->t + 5 * US,
                    urand(300 * US, 700 * US), 0, 0, 0);
    uint64_t host0 = c->t;
    /* Python between steps, on CPU (page_alloc_pressure: little of it, so that the
     * sync each step serialises less than the planted page storms cost) */
    c->t += c->sc == S_PAGE ? urand(30 * US, 60 * US) : urand(150 * US, 300 * US);
    if (c->sc == S_GPU_SETUP_HOST)
        c->t += 3 * MS; /* and the host-bound loop's own work */
    host_samples(host0, c->t);
    if (c->sc != S_NOHOST && c->i % 5 == 0) { /* and now and then a short sleep (GC, logging) */
        uint64_t len = urand(120 * US, 250 * US);
        main_off(c->t, c->t + len, CS_OFF_SLEEP, MAIN, 0, 0);
        c->t += len + 10 * US;
    }
}

/* ---- Python stacks (SCENARIO_py) ---- */

static uint32_t intern(const char *str)
{
    uint32_t id = 0;

    if (cs_store_intern(gen_st, str, strlen(str), &id) < 0)
        gen_die("intern", -ENOMEM);
    return id;
}

/* The line each API is called from: train.py:57 syncs (loss.item()),
 * train.py:45 copies in (x.to("cuda")), model.py:12 launches, model.py:30
 * and :33 allocate and free, all under train_step, main; train.py:20, in
 * main, syncs the device once (gpu_setup_host's set-up). */
static void py_stacks(void)
{
    static const struct { uint16_t api; const char *file; uint32_t line; const char *fn; } s[] = {
        {CS_API_cudaStreamSynchronize, "/w/train.py", 57, "train_step"},
        {CS_API_cudaMemcpyAsync, "/w/train.py", 45, "train_step"},
        {CS_API_cudaLaunchKernel, "/w/model.py", 12, "Net.forward"},
        {CS_API_cudaMalloc, "/w/model.py", 30, "Net.forward"},
        {CS_API_cudaFree, "/w/model.py", 33, "Net.forward"},
        {CS_API_cudaDeviceSynchronize, "/w/train.py", 20, "main"}};

    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        struct cs_frame f[2] = {
            {CS_FRAME_PY_OFFSET(s[i].line, intern(s[i].fn)), intern(s[i].file), CS_FRAME_PYTHON},
            {CS_FRAME_PY_OFFSET(80, intern("main")), intern("/w/train.py"), CS_FRAME_PYTHON}};
        if (cs_store_put_stack(gen_st, f, 2, &py_stack[s[i].api]) < 0)
            gen_die("stack", -ENOMEM);
    }
}

/* SCENARIO_pyx: the samples' stacks, in a DataLoader's receive path (a
 * worker's batch unpickled) and in an optimizer's own Python. */
static void pyx_stacks(void)
{
    const char *tr = "/w/train.py", *dl = "/venv/lib/python3.12/site-packages/torch/utils/data/"
                                          "dataloader.py";
    const struct cs_frame recv[3] = {
        {CS_FRAME_PY_OFFSET(395, intern("Connection._recv")),
         intern("/usr/lib/python3.12/multiprocessing/connection.py"), CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(1342, intern("_MultiProcessingDataLoaderIter._next_data")), intern(dl),
         CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(78, intern("main")), intern(tr), CS_FRAME_PYTHON}};
    const struct cs_frame opt[3] = {
        {CS_FRAME_PY_OFFSET(473, intern("_multi_tensor_sgd")),
         intern("/venv/lib/python3.12/site-packages/torch/optim/sgd.py"), CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(60, intern("train_step")), intern(tr), CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(80, intern("main")), intern(tr), CS_FRAME_PYTHON}};

    if (cs_store_put_stack(gen_st, recv, 3, &pys_stack[0]) < 0 ||
        cs_store_put_stack(gen_st, opt, 3, &pys_stack[1]) < 0)
        gen_die("stack", -ENOMEM);
}

/* SCENARIO_pys: the samples' two stacks (@p pyx: SCENARIO_pyx's). */
static void pys_stacks(int pyx)
{
    if (pyx) {
        pyx_stacks();
        return;
    }
    const char *tr = "/w/train.py", *lib = "/venv/lib/python3.12/site-packages/torch/utils/"
                                           "data/_utils/collate.py";
    const struct cs_frame collate[4] = {
        {CS_FRAME_PY_OFFSET(140, intern("default_collate")), intern(lib), CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(88, intern("collate")), intern("/w/data.py"), CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(60, intern("train_step")), intern(tr), CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(80, intern("main")), intern(tr), CS_FRAME_PYTHON}};
    const struct cs_frame log[2] = {
        {CS_FRAME_PY_OFFSET(61, intern("log_metrics")), intern(tr), CS_FRAME_PYTHON},
        {CS_FRAME_PY_OFFSET(80, intern("main")), intern(tr), CS_FRAME_PYTHON}};

    if (cs_store_put_stack(gen_st, collate, 4, &pys_stack[0]) < 0 ||
        cs_store_put_stack(gen_st, log, 2, &pys_stack[1]) < 0)
        gen_die("stack", -ENOMEM);
}

/* ---- tables and meta ---- */

static void proc(uint32_t pid, uint32_t ppid, uint32_t flags, const char *comm,
                 const char *cmdline)
{
    struct cs_proc p = {0};
    struct cs_thread th = {0};
    char c[16] = "";

    p.pid = pid;
    p.ppid = ppid;
    p.start_ns = T0 + (pid - MAIN) % 100 * MS;
    p.exit_ns = 0;
    p.exit_status = -1;
    p.flags = flags;
    p.rank = CS_RANK_NONE;
    snprintf(c, sizeof(c), "%s", comm);
    memcpy(p.comm, c, sizeof(p.comm));
    if (cs_store_intern(gen_st, cmdline, strlen(cmdline), &p.cmdline_id) < 0 ||
        cs_store_put_proc(gen_st, &p) < 0)
        gen_die("proc", -ENOMEM);
    th.pid = th.tid = p.pid;
    th.start_ns = p.start_ns;
    memcpy(th.name, c, sizeof(th.name));
    cs_store_put_thread(gen_st, &th);
}

static void procs(enum scen sc)
{
    proc(MAIN, 999, CS_PF_CUDA | CS_PF_ROOT, "python", "python train.py");
    for (uint32_t k = 1; k <= NWORK; k++)
        proc(MAIN + k, MAIN, 0, "pt_data_worker", "python train.py (worker)");
    if (sc == S_LAUNCH_RANKS)
        proc(RANK1, 999, CS_PF_CUDA, "python", "python train.py --rank 1");
}

static void meta(enum scen sc, uint64_t t_end)
{
    gen_meta(T0, t_end, sc == S_NOHOST ? "none" : "A",
             sc == S_NOHOST ? "perf_event_open: permission denied" : "");
}

/* --big N [--big-host H]: N CUDA records and H host records (N unless
 * told), written fast (bench). */
static uint64_t big(uint64_t n, uint64_t nhost)
{
    struct step_ctx c = {.sc = S_TREE, .t = T0 + 5 * MS};

    while (n_cuda < n)
        step(&c), c.i++;
    /* pad the host side with short sleeps of a second thread */
    for (uint64_t t = T0; n_host < nhost; t += 30 * US)
        off(MAIN, MAIN + 7, t, t + 10 * US, CS_OFF_SLEEP, MAIN + 1, 0, 0);
    return c.t;
}

int main(int argc, char **argv)
{
    int sc = -1, rc;
    unsigned steps = 600;
    uint64_t nbig = 0, nbig_host = UINT64_MAX, t_end, fmt_version = 0, lost = 0, id = 0;

    rng_state = 42;
    size_t len = argc > 1 ? strlen(argv[1]) : 0;
    int pyx = len > 4 && strcmp(argv[1] + len - 4, "_pyx") == 0;
    int pys = pyx || (len > 4 && strcmp(argv[1] + len - 4, "_pys") == 0);
    int py = pys || (len > 3 && strcmp(argv[1] + len - 3, "_py") == 0);
    size_t base = len - (pys ? 4 : py ? 3 : 0);
    for (int i = 0; i < (int)(sizeof(scen_names) / sizeof(scen_names[0])); i++)
        if (argc > 1 && strncmp(argv[1], scen_names[i], base) == 0 &&
            strlen(scen_names[i]) == base)
            sc = i;
    if (sc < 0 || argc < 3) {
        fprintf(stderr, "usage: gen_run SCENARIO OUT.lmdb [--steps N] [--seed S] [--big N] "
                        "[--big-host H]\n");
        return 2;
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = (unsigned)strtoul(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--seed"))
            rng_state = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--big"))
            nbig = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--big-host"))
            nbig_host = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--lost"))
            lost = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--format-version"))
            fmt_version = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--id"))
            id = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--late"))
            late_n = strtoull(argv[i + 1], NULL, 0);
    }
    gen_prog = "gen_run";
    gen_st = cs_store_new();
    if (nbig_host == UINT64_MAX)
        nbig_host = nbig;
    /* compact CUDA records take ~12 bytes, host records 48, plus the B-tree
     * and the records the steps add: 32 and 64 a record leave room */
    struct cs_store_opts so = {.map_bytes = nbig ? (4ull << 30) + nbig * 32 + nbig_host * 64 : 0};
    struct cs_err err = {""};
    if (gen_st == NULL || (rc = cs_store_open(gen_st, argv[2], &so, &err)) < 0) {
        fprintf(stderr, "gen_run: %s\n", err.msg);
        return 3;
    }
    cs_store_intern(gen_st, "sgemm_kernel", 12, &kernel_id);
    if (py)
        py_stacks();
    if (pys)
        pys_stacks(pyx);
    t_end = T0 + 5 * MS;
    if (sc == S_BIG) {
        t_end = big(nbig, nbig_host) + MS;
    } else if (sc != S_EMPTY) {
        struct step_ctx c = {.sc = (enum scen)sc, .t = T0 + 5 * MS};
        nwin = (steps * 40 * MS) / (10 * MS) + 1000;
        acc_main = calloc(nwin, sizeof(*acc_main));
        if (sc == S_SYNC_SETUP) /* its steps are sync_per_iteration's */
            c.t = gpu_setup(c.t, 1), c.sc = sc = S_SYNC;
        if (sc == S_GPU_SETUP || sc == S_GPU_SETUP_HOST)
            c.t = gpu_setup(c.t, sc == S_GPU_SETUP_HOST);
        kern_len = sc == S_GPU_SETUP_HOST ? MS : 0;
        for (c.i = 0; c.i < steps; c.i++)
            step(&c);
        if (sc == S_GPU_SETUP || sc == S_GPU_SETUP_HOST)
            gpu_close(c.t);
        if (sc == S_LAUNCH_RANKS) { /* rank 1, side by side from the same start */
            struct step_ctx r = {.sc = (enum scen)sc, .t = T0 + 5 * MS};
            for (unsigned k = 0; k < CS_REC_KIND_COUNT; k++)
                gen_flush(k);
            cur_pid = RANK1;
            for (r.i = 0; r.i < steps; r.i++)
                step(&r);
            c.t = r.t > c.t ? r.t : c.t;
        }
        if (sc == S_GPU_TAIL)
            c.t = gpu_tail(c.t + 100 * US);
        t_end = c.t + MS;
        nwin = (t_end - T0) / (10 * MS);
        if (sc != S_NOHOST)
            windows((enum scen)sc, t_end);
    }
    if (late_left)
        late_put();
    if (lost) {
        struct cs_rec_lost l = {T0 + 50 * MS, T0 + 60 * MS, 1, 1, lost};
        gen_put(CS_REC_LOST, &l, l.t_start_ns, l.t_end_ns);
    }
    for (unsigned k = 0; k < CS_REC_KIND_COUNT; k++)
        gen_flush(k);
    if (sc != S_EMPTY)
        procs((enum scen)sc);
    meta((enum scen)sc, t_end);
    if (fmt_version)
        cs_store_put_meta_u64(gen_st, "format_version", fmt_version);
    if (id) /* another collector: another run, for push (docs/fleet.md) */
        cs_store_put_meta_u64(gen_st, "collector_pid", id);
    if (lost) {
        cs_store_put_meta_u64(gen_st, "host_lost", lost);
        cs_store_put_meta_u64(gen_st, "clean_shutdown", 0);
    }
    if ((rc = cs_store_commit(gen_st)) < 0)
        gen_die("commit", rc);
    cs_store_free(gen_st);
    free(acc_main);
    return 0;
}
