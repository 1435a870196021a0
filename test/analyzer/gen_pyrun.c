/* gen_pyrun.c: writes a run whose CUDA calls carry Python stacks, through the
 * real writer (cs_store), for the analyzer's Python-line tests (issue 23)
 * until the shim's own capture lands. One process (pid 1000), no host data,
 * a loop of STEPS steps, each with its calls made from known lines:
 *   cudaLaunchKernel     10 us  train.py:49 train_step  (under native frames)
 *   cudaMalloc           20 us  model.py:30 forward
 *   cudaFree             10 us  model.py:33 forward
 *   cudaStreamSynchronize 50 us train.py:57 train_step  (3 steps of 4)
 *                             eval.py:12 evaluate       (every 4th step)
 *   300 us of host code, GPU idle, before the next step's launch
 * (step 7's free is written after its sync: out of order in the file),
 * then one last launch (train.py:49), 100 us, a synchronous cudaMemcpy of
 * 4 KiB (200 us) with native frames only (libtorch_cuda.so+0x2000), 100 us,
 * a cuMemsetD8Async whose stack id names no stack, and a cudaEventSynchronize
 * whose Python frame has string ids with no string (file and function).
 * GPU idle after the syncs: train.py:57 45 ms (75 %), eval.py:12 15 ms
 * (25 %) of 60.1 ms (host-seen). With --gpu, every launch runs a 40 us
 * kernel 5 us after it returns, recorded over the whole run (full mode):
 * the idle after each sync is then measured, 315 us.
 * --item writes instead issue 22's first miss as PyTorch makes it: a launch
 * (train.py:39) and a warm-up torch.cuda.synchronize (train.py:40), 20 ms of
 * host set-up (the GPU idle after that sync), then STEPS
 * steps of a matmul launch (train.py:49, a 500 us kernel), loss.item()
 * (train.py:57, a sync to the kernel's end), acc += loss (train.py:58, a
 * 2 us kernel enqueued 5 us later) and 300 us of host code. The GPU sits
 * idle 321 us a step after the .item(), though its sync-to-enqueue gap is 5 us.
 * --lib writes the default run with an installed library's frames inside
 * the user's (issue 30): the launch and the sync under torch's frames in a
 * venv's site-packages (torch/cuda/__init__.py:1162 synchronize above
 * train.py:57), runpy's <frozen runpy> outside main; the allocation inside
 * a dataclass's generated __init__ (<string>:3) under site-packages; the
 * free inside the venv's stdlib (lib/python3.12/copy.py) under
 * model.py:33; the synchronous copy's stack library frames only
 * (dist-packages' pin_memory.py:30 in threading.py's Thread.run).
 * --corrupt-stack rewrites the sync's stack as 15 bytes, not whole frames,
 * behind the writer's back (LMDB directly), for the reader's error path.
 * Usage: gen_pyrun OUT.lmdb [--steps N] [--gpu | --item | --lib] [--corrupt-stack]
 * (--steps 2500000: 10 M calls, every one with a stack, the worst case of
 * docs/performance.md) */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "cudaspy/runfile.h"
#include "gen_blocks.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (1000ull * 1000 * MS)
#define PID 1000u

static uint32_t seq, kernel_id;
static int with_gpu;
static uint64_t kernel_ns = 40000; /* --gpu: each launch's kernel */

/* Stack @p id of run @p path becomes 15 bytes: no whole frame. */
static void corrupt_stack(const char *path, uint32_t id)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k = {sizeof(id), &id}, v = {15, "fifteen bytes.."};
    int rc = mdb_env_create(&env);

    if (rc == 0 && (rc = mdb_env_set_maxdbs(env, 16)) == 0 &&
        (rc = mdb_env_open(env, path, MDB_NOSUBDIR, 0600)) == 0 &&
        (rc = mdb_txn_begin(env, NULL, 0, &txn)) == 0) {
        if ((rc = mdb_dbi_open(txn, "stacks", MDB_INTEGERKEY, &dbi)) == 0 &&
            (rc = mdb_put(txn, dbi, &k, &v, 0)) == 0)
            rc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    if (rc != 0) {
        fprintf(stderr, "gen_pyrun: corrupt stack: %s\n", mdb_strerror(rc));
        exit(3);
    }
}

static uint32_t str(const char *s)
{
    uint32_t id;
    int rc = cs_store_intern(gen_st, s, strlen(s), &id);

    if (rc < 0)
        gen_die("intern", rc);
    return id;
}

static struct cs_frame py(const char *file, uint32_t line, const char *func)
{
    struct cs_frame f = {CS_FRAME_PY_OFFSET(line, str(func)), str(file), CS_FRAME_PYTHON};
    return f;
}

static struct cs_frame native(const char *module, uint64_t offset)
{
    struct cs_frame f = {offset, str(module), 0};
    return f;
}

static uint32_t stack(const struct cs_frame *f, uint32_t n)
{
    uint32_t id;
    int rc = cs_store_put_stack(gen_st, f, n, &id);

    if (rc < 0)
        gen_die("stack", rc);
    return id;
}

/* 1: hold the next call's record back; 2: one is held, written after the
 * next one (so the reader has to sort a thread's calls, and what it keeps
 * beside them, back into time order). */
static int defer;
static struct cs_rec_cuda deferred;

/* One outermost call; a launch runs a kernel under --gpu. @return t_exit */
static uint64_t call(uint16_t api, uint64_t t, uint64_t dur, uint64_t bytes, uint32_t stack_id)
{
    struct cs_rec_cuda r = {0};

    r.t_enter_ns = t;
    r.t_exit_ns = t + dur;
    r.stream = 0x7f0000001000ull;
    r.bytes = bytes;
    r.seq = ++seq;
    r.pid = r.tid = PID;
    r.api = api;
    r.device = 0;
    r.stack_id = stack_id;
    if (api == CS_API_cudaLaunchKernel) {
        r.name_id = kernel_id;
        r.flags = CS_CF_HAS_NAME;
    }
    if (api == CS_API_cudaMemcpy)
        r.dir = CS_DIR_HTOD;
    if (defer == 1) {
        deferred = r;
        defer = 2;
        return r.t_exit_ns;
    }
    gen_put(CS_REC_CUDA, &r, r.t_enter_ns, r.t_exit_ns);
    if (defer == 2) {
        gen_put(CS_REC_CUDA, &deferred, deferred.t_enter_ns, deferred.t_exit_ns);
        defer = 0;
    }
    if (with_gpu && api == CS_API_cudaLaunchKernel) {
        struct cs_rec_gpu g = {0};
        g.t_start_ns = r.t_exit_ns + 5 * US;
        g.t_end_ns = g.t_start_ns + kernel_ns;
        g.pid = g.api_tid = PID;
        g.api_seq = r.seq;
        g.name_id = kernel_id;
        g.stream_id = 7;
        g.epoch = 1;
        g.kind = CS_GPU_KERNEL;
        g.flags = CS_GF_CORR;
        gen_put(CS_REC_GPU, &g, g.t_start_ns, g.t_end_ns);
    }
    return r.t_exit_ns;
}

/* --item's calls from @p t; @return the end */
static uint64_t item_steps(uint64_t t, unsigned steps, const uint32_t s_init[2], uint32_t s_mm,
                           uint32_t s_item, uint32_t s_acc)
{
    uint32_t s_warm = s_init[1];

    t = call(CS_API_cudaLaunchKernel, t, 10 * US, 0, s_init[0]);
    t = call(CS_API_cudaDeviceSynchronize, t, 50 * US, 0, s_warm) + 20 * MS;
    for (unsigned i = 0; i < steps; i++) {
        kernel_ns = 500 * US;
        t = call(CS_API_cudaLaunchKernel, t, 10 * US, 0, s_mm);
        t = call(CS_API_cudaStreamSynchronize, t, 510 * US, 0, s_item) + 5 * US; /* kernel end + 5 us */
        kernel_ns = 2 * US;
        t = call(CS_API_cudaLaunchKernel, t, 3 * US, 0, s_acc) + 300 * US;
    }
    return call(CS_API_cudaDeviceSynchronize, t, 5 * US, 0, s_warm) + MS;
}

static void meta_and_proc(uint64_t t_end)
{
    struct cs_proc p = {.pid = PID, .ppid = 999, .start_ns = T0, .exit_status = -1,
                        .flags = CS_PF_CUDA | CS_PF_ROOT, .rank = CS_RANK_NONE};
    struct cs_thread th = {.pid = PID, .tid = PID, .start_ns = T0};

    memcpy(p.comm, "python", 7);
    memcpy(th.name, "python", 7);
    p.cmdline_id = str("python train.py");
    if (cs_store_put_proc(gen_st, &p) < 0 || cs_store_put_thread(gen_st, &th) < 0)
        gen_die("proc", -12);
    gen_meta(T0, t_end, "none", "gen_pyrun: no host data");
}

/* --lib's stacks for the default run's launch, sync, allocation, free and
 * synchronous copy (in that order, into @p id). */
static void lib_stacks(const char *tr, const char *mo, uint32_t id[5])
{
    const char *venv = "/opt/venv/lib/python3.12/", *torch = "/usr/lib/libtorch_cuda.so";
    char f_mod[128], f_cuda[128], f_copy[128], f_reg[128];
    const char *deb = "/usr/lib/python3/dist-packages/torch/utils/data/_utils/pin_memory.py";
    const char *thr = "/usr/lib/python3.12/threading.py";

    snprintf(f_mod, sizeof(f_mod), "%ssite-packages/torch/nn/modules/module.py", venv);
    snprintf(f_cuda, sizeof(f_cuda), "%ssite-packages/torch/cuda/__init__.py", venv);
    snprintf(f_copy, sizeof(f_copy), "%scopy.py", venv);
    snprintf(f_reg, sizeof(f_reg), "%ssite-packages/torch/_tensor.py", venv);
    const struct cs_frame launch[] = {native(torch, 0x1000), py(f_mod, 1532, "Module._call_impl"),
                                      py(tr, 49, "train_step"), py(tr, 80, "main"),
                                      py(tr, 90, "<module>"), py("<frozen runpy>", 88, "_run_code")};
    const struct cs_frame sync[] = {native(torch, 0x1100), py(f_cuda, 1162, "synchronize"),
                                    py(tr, 57, "train_step"), py(tr, 80, "main"),
                                    py(tr, 90, "<module>")};
    const struct cs_frame alloc[] = {py(f_reg, 60, "Tensor.__new__"), py("<string>", 3, "__init__"),
                                     py(f_mod, 1532, "Module._call_impl")};
    const struct cs_frame freef[] = {py(f_copy, 128, "deepcopy"), py(mo, 33, "Net.forward"),
                                     py(tr, 48, "train_step")};
    const struct cs_frame copy[] = {native(torch, 0x2000), py(deb, 30, "_pin_memory_loop"),
                                    py(thr, 1010, "Thread.run"),
                                    py(thr, 1073, "Thread._bootstrap_inner")};

    id[0] = stack(launch, 6);
    id[1] = stack(sync, 5);
    id[2] = stack(alloc, 3);
    id[3] = stack(freef, 3);
    id[4] = stack(copy, 4);
}

int main(int argc, char **argv)
{
    const char *tr = "/home/u/proj/train.py", *ev = "/home/u/proj/eval.py";
    const char *mo = "/home/u/proj/model.py", *torch = "/usr/lib/libtorch_cuda.so";
    struct cs_store_opts so = {.map_bytes = 4ull << 30};
    struct cs_err err = {""};
    unsigned steps = 200;
    int corrupt = 0, item = 0, lib = 0;
    uint64_t t = T0 + MS;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: gen_pyrun OUT.lmdb [--steps N] [--gpu | --item | --lib] "
                        "[--corrupt-stack]\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--gpu"))
            with_gpu = 1;
        else if (!strcmp(argv[i], "--item"))
            item = with_gpu = 1;
        else if (!strcmp(argv[i], "--lib"))
            lib = 1;
        else if (!strcmp(argv[i], "--corrupt-stack"))
            corrupt = 1;
    }
    gen_prog = "gen_pyrun";
    gen_blk_pid = PID;
    if ((gen_st = cs_store_new()) == NULL || (rc = cs_store_open(gen_st, argv[1], &so, &err)) < 0) {
        fprintf(stderr, "gen_pyrun: %s\n", err.msg);
        return 3;
    }
    kernel_id = str("sgemm_kernel");
    const struct cs_frame launch[] = {native(torch, 0x1000),
                                      native("/usr/lib/libpython3.12.so.1.0", 0x2000),
                                      py(tr, 49, "train_step"), py(tr, 80, "main"),
                                      py(tr, 90, "<module>")};
    const struct cs_frame sync[] = {native(torch, 0x1100), py(tr, 57, "train_step"),
                                    py(tr, 80, "main"), py(tr, 90, "<module>")};
    const struct cs_frame esync[] = {py(ev, 12, "evaluate"), py(tr, 85, "main"),
                                     py(tr, 90, "<module>")};
    const struct cs_frame alloc[] = {py(mo, 30, "Net.forward"), py(tr, 48, "train_step"),
                                     py(tr, 80, "main")};
    const struct cs_frame freef[] = {py(mo, 33, "Net.forward"), py(tr, 48, "train_step"),
                                     py(tr, 80, "main")};
    const struct cs_frame nat[] = {native(torch, 0x2000), native("/lib/libc.so.6", 0x3000)};
    const struct cs_frame bad[] = {{CS_FRAME_PY_OFFSET(7, 9998), 9999, CS_FRAME_PYTHON}};
    uint32_t s_launch = stack(launch, 5), s_sync = stack(sync, 4), s_esync = stack(esync, 3);
    uint32_t s_alloc = stack(alloc, 3), s_free = stack(freef, 3), s_nat = stack(nat, 2);
    uint32_t s_bad = stack(bad, 1);

    if (lib) {
        uint32_t id[5];
        lib_stacks(tr, mo, id);
        s_launch = id[0], s_sync = id[1], s_alloc = id[2], s_free = id[3], s_nat = id[4];
    }

    const struct cs_frame init[] = {py(tr, 39, "main"), py(tr, 90, "<module>")};
    const struct cs_frame warm[] = {py(tr, 40, "main"), py(tr, 90, "<module>")};
    const struct cs_frame acc[] = {py(tr, 58, "train_step"), py(tr, 80, "main")};

    if (item) {
        const uint32_t s_init[2] = {stack(init, 2), stack(warm, 2)};
        t = item_steps(t, steps, s_init, s_launch, s_sync, stack(acc, 2));
    }
    for (unsigned i = 0; !item && i < steps; i++) {
        t = call(CS_API_cudaLaunchKernel, t, 10 * US, 0, s_launch);
        t = call(CS_API_cudaMalloc, t, 20 * US, 1 << 20, s_alloc);
        defer = i == 7; /* this free's record follows the sync's */
        t = call(CS_API_cudaFree, t, 10 * US, 0, s_free);
        t = call(CS_API_cudaStreamSynchronize, t, 50 * US, 0, i % 4 == 3 ? s_esync : s_sync);
        t += 300 * US;
    }
    if (!item) {
        t = call(CS_API_cudaLaunchKernel, t, 10 * US, 0, s_launch) + 100 * US;
        t = call(CS_API_cudaMemcpy, t, 200 * US, 4096, s_nat) + 100 * US;
        t = call(CS_API_cuMemsetD8Async, t, 5 * US, 4096, 999);
        t = call(CS_API_cudaEventSynchronize, t, 5 * US, 0, s_bad) + MS;
    }
    if (with_gpu) {
        struct cs_rec_gpucov c = {.t_start_ns = T0, .t_end_ns = t, .t_attach_ns = T0,
                                  .t_detach_ns = t, .pid = PID, .epoch = 1,
                                  .mode = CS_GPU_MODE_FULL};
        gen_put(CS_REC_GPUCOV, &c, T0, t);
    }
    for (unsigned k = 0; k < CS_REC_KIND_COUNT; k++)
        gen_flush(k);
    meta_and_proc(t);
    if ((rc = cs_store_commit(gen_st)) < 0)
        gen_die("commit", rc);
    cs_store_free(gen_st);
    if (corrupt)
        corrupt_stack(argv[1], s_sync);
    return 0;
}
