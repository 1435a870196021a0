"""planted.py: PyTorch workloads with one planted cause each and their own
meter of what it cost (issue 30, gpu-check.sh accuracy). One workload per
process, chosen by name; each prints, last on stdout, the truth line of the
accuracy contract (bench/gpu/accuracy/README.md):

    cudaspy-truth: {"case":..., "planted":..., "truth_ns":..., "loop_ns":...,
                    "steps":..., "setup_ns":..., "gpu_ns":...}

truth_ns is the workload's own meter of what the planted cause cost over the
timed loop (set-up excluded); 0 where the case is an A/B (the scorer takes
loop_ns(with) - loop_ns(without) of two recorded runs) or healthy. setup_ns
is the time from just before the process's first CUDA call to the start of
the timed loop; gpu_ns the loop's GPU time by CUDA events where a case
measures it, else 0.

Usage: python3 planted.py NAME [VARIANT]   (python3 planted.py list)
"""
import json
import random
import sys
import time

import torch

DEV = "cuda"
clock = time.perf_counter_ns


class Truth:
    """The meters of one run: set-up start (first CUDA touch), loop bounds,
    the planted cause's own time; emit() prints the truth line."""

    def __init__(self, case, planted):
        self.case, self.planted = case, planted
        self.truth_ns = self.steps = self.gpu_ns = 0
        self.t_first = clock()
        torch.zeros(1, device=DEV)  # the process's first CUDA call
        self.t_loop = self.t_end = None
        self.extra = {}

    def start(self):
        torch.cuda.synchronize()
        self.t_loop = clock()

    def stop(self, steps):
        torch.cuda.synchronize()
        self.t_end = clock()
        self.steps = steps

    def emit(self):
        row = {"case": self.case, "planted": self.planted, "truth_ns": int(self.truth_ns),
               "loop_ns": self.t_end - self.t_loop, "steps": self.steps,
               "setup_ns": self.t_loop - self.t_first, "gpu_ns": int(self.gpu_ns)}
        row.update(self.extra)
        print("cudaspy-truth: " + json.dumps(row, separators=(",", ":")), flush=True)


def spin(secs):
    """Host work on the CPU for @secs (Python, as a program's own)."""
    end = time.perf_counter() + secs
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def mlp(width, depth, d_in=None):
    torch.manual_seed(0)
    layers, d = [], d_in or width
    for _ in range(depth - 1):
        layers += [torch.nn.Linear(d, width), torch.nn.ReLU()]
        d = width
    layers.append(torch.nn.Linear(d, 16))
    return torch.nn.Sequential(*layers).to(DEV)


class SlowSet(torch.utils.data.Dataset):
    """Samples that cost @cost_s of CPU each to make (decoding, augmenting)."""

    def __init__(self, n, dim, cost_s):
        self.n, self.dim, self.cost_s = n, dim, cost_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        spin(self.cost_s)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.dim, generator=g)


def train_step(model, opt, x):
    opt.zero_grad(set_to_none=True)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    return loss


def w_loader_slow(variant=""):
    """data_pipeline_starvation: 2 forked DataLoader workers whose samples
    cost 1 ms of CPU each (8 a batch): the workers make a batch every ~4 ms,
    the training step takes well under that. Each step ends with
    loss.item() (logging), so the GPU is empty while the loop waits in
    next(it): truth = the time the loop spent in next(it)."""
    t = Truth("loader_slow", "data_pipeline_starvation")
    steps, batch = 400, 8
    ds = SlowSet((steps + 4) * batch, 1024, 0.001)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=2)
    model = mlp(1024, 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    it = iter(loader)
    train_step(model, opt, next(it).to(DEV)).item()  # workers started, first batch: set-up
    t.start()
    wait, total = 0, 0.0
    for _ in range(steps):
        w0 = clock()
        x = next(it)
        wait += clock() - w0
        total += train_step(model, opt, x.to(DEV)).item()
    t.stop(steps)
    t.truth_ns = wait
    del it
    return t


def build_batch(rng, n):
    """A batch made in the main thread by Python code (parsing, tokenising):
    n floats drawn one by one, then a tensor of them."""
    vals = [rng.random() for _ in range(n)]
    return torch.tensor(vals, dtype=torch.float32).view(-1, 1024)


def w_data_main(variant=""):
    """host_bound: each step's batch is built in the main thread by Python
    code (~5 ms), the step's GPU work is small (~0.2 ms) and queued
    without a sync, so the GPU idles while the batch is built: truth = the
    time in build_batch."""
    t = Truth("data_main", "host_bound")
    steps, n = 400, 64 * 1024
    rng = random.Random(0)
    model = mlp(1024, 3)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    train_step(model, opt, build_batch(rng, n).to(DEV))
    t.start()
    build = 0
    for _ in range(steps):
        b0 = clock()
        x = build_batch(rng, n)
        build += clock() - b0
        train_step(model, opt, x.to(DEV))
    t.stop(steps)
    t.truth_ns = build
    return t


def sleep_cycles(ms):
    """torch.cuda._sleep's cycles for @ms of GPU time: _sleep(1,000,000)
    timed by CUDA events five times (after two unmeasured, the kernel's
    first launch and the clock's ramp), the median."""
    for _ in range(2):
        torch.cuda._sleep(1_000_000)
    times = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.cuda._sleep(1_000_000)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))  # ms
    per = sorted(times)[len(times) // 2]
    return int(round(1_000_000 * ms / per)), per


def w_item_sync(variant="with"):
    """sync_per_iteration (A/B): each step ~1.4 ms of GPU work, a tiny
    kernel making `loss`, loss.item() (with) or not (without), another
    tiny kernel, then 1 ms of host work. With the .item() the host work no
    longer overlaps the GPU's: with ~2.4 ms a step, without ~1.4.

    The GPU work is torch.cuda._sleep (a kernel spinning on the SM clock,
    sized at start by CUDA events: sleep_cycles), not a matmul: an 8192^3
    bf16 matmul ran 1.49 ms a step at 56 % GPU duty (with) but ~1.71 ms
    back to back (without: likely power-throttled, the GPU never idle), so the without run's GPU was
    slower than the with run's and the A/B said removing the sync saved
    less than the host work it serialised. A spin draws little power: the
    GPU work is the same in both."""
    t = Truth("item_sync", "sync_per_iteration")
    cycles, per = sleep_cycles(1.4)
    torch.manual_seed(0)
    x = torch.randn(4096, device=DEV)
    acc = torch.zeros((), device=DEV)
    torch.cuda._sleep(cycles)
    x.mean()
    total, steps = 0.0, 800
    t.start()
    for _ in range(steps):
        torch.cuda._sleep(cycles)
        loss = x.mean()  # after the spin, on its stream: .item() waits for both
        if variant == "with":
            total += loss.item()
        acc += loss
        spin(0.001)
    t.stop(steps)
    t.extra["sleep_cycles"], t.extra["sleep_ms_per_mcycle"] = cycles, round(per, 4)
    return t


def w_copies(variant="pageable"):
    """pageable_memcpy (A/B): each step copies 64 MiB host to device from
    pageable memory (with) or pinned memory (without), then a small kernel
    reads it."""
    t = Truth("copies", "pageable_memcpy")
    host = torch.ones(16 * 1024 * 1024, dtype=torch.float32)  # 64 MiB, pages touched
    if variant == "pinned":
        host = host.pin_memory()
    dev = torch.empty_like(host, device=DEV)
    acc = torch.zeros(1, device=DEV)
    dev.copy_(host, non_blocking=True)
    steps = 600  # ~4 s: several slices of sampled GPU activity (200: one)
    t.start()
    for _ in range(steps):
        dev.copy_(host, non_blocking=True)
        acc += dev[:4096].sum()
    t.stop(steps)
    return t


def w_alloc(variant="with"):
    """alloc_churn (A/B): each step allocates a 256 MiB device tensor, uses
    it, frees it and (with) calls torch.cuda.empty_cache(), so the caching
    allocator hands the memory back (cudaFree, which waits for the GPU) and
    the next step allocates it anew (cudaMalloc). Without: the allocator
    keeps it. The time in empty_cache() is reported as empty_cache_ns."""
    t = Truth("alloc_churn", "alloc_churn")
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device=DEV, dtype=torch.bfloat16)
    acc = torch.zeros(4096, 4096, device=DEV, dtype=torch.bfloat16)
    steps, n, ec = 3000, 64 * 1024 * 1024, 0  # ~2.5 s: long enough for sampled GPU activity
    torch.empty(n, device=DEV).fill_(1.0)
    t.start()
    for _ in range(steps):
        tmp = torch.empty(n, device=DEV)  # 256 MiB
        tmp.fill_(1.0)
        acc += a @ tmp[:4096 * 4096].view(4096, 4096).to(torch.bfloat16)
        del tmp
        if variant == "with":
            e0 = clock()
            torch.cuda.empty_cache()
            ec += clock() - e0
    t.stop(steps)
    t.extra["empty_cache_ns"] = ec
    return t


def w_matmul(variant=""):
    """Healthy (planted none): back-to-back 8192^3 bf16 matmuls, one sync
    at the end; gpu_ns is the loop's span by CUDA events."""
    t = Truth("matmul", "none")
    torch.manual_seed(0)
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    acc = torch.zeros(8192, 8192, device=DEV, dtype=torch.float32)
    acc += (a @ b).float()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    steps = 1200
    t.start()
    e0.record()
    for _ in range(steps):
        acc += (a @ b).float()
    e1.record()
    t.stop(steps)
    t.gpu_ns = e0.elapsed_time(e1) * 1e6
    return t


def tokenize(rng, words, n_lines):
    """A set-up's CPU work: a synthetic corpus tokenised in Python."""
    vocab, ids = {}, []
    for _ in range(n_lines):
        line = " ".join(rng.choice(words) for _ in range(24))
        for w in line.split():
            ids.append(vocab.setdefault(w, len(vocab)))
    return torch.tensor(ids), len(vocab)


def w_setup(variant=""):
    """setup: a program whose set-up is heavy (~3-4 s after its first CUDA
    call: a corpus tokenised in Python, a model built on the CPU and moved
    to the GPU, cuBLAS warmed on a small product), then a short healthy
    matmul loop. Truth: setup_ns, from just before the first CUDA call to
    the loop's start."""
    t = Truth("setup", "setup")
    rng = random.Random(0)
    words = ["w%d" % i for i in range(20000)]
    ids, nv = tokenize(rng, words, 100000)
    torch.manual_seed(0)
    emb = torch.nn.Embedding(nv, 1024)  # built on the CPU, then moved
    head = torch.nn.Linear(1024, 8192)
    emb, head = emb.to(DEV), head.to(DEV)
    with torch.no_grad():
        x = emb(ids[:8192].to(DEV))
        torch.mm(torch.ones(64, 64, device=DEV), torch.ones(64, 64, device=DEV))
        a = head(x).to(torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    acc = torch.zeros(8192, 8192, device=DEV, dtype=torch.float32)
    steps = 800
    t.start()
    for _ in range(steps):
        acc += (a @ b).float()
    t.stop(steps)
    t.truth_ns = t.t_loop - t.t_first
    return t


class StoreSet(torch.utils.data.Dataset):
    """Cheap samples from a store each worker must open first: open() costs
    0.3 s of CPU (an index read and parsed), done by worker_init_fn in every
    worker, so every new set of workers pays it before its first batch."""

    def __init__(self, n, dim):
        self.n, self.dim, self.store = n, dim, None

    def open(self):
        spin(0.3)
        self.store = torch.arange(self.dim, dtype=torch.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.store + i


def open_store(_):
    torch.utils.data.get_worker_info().dataset.open()


def w_worker_startup(variant=""):
    """worker_startup: a DataLoader with 4 workers and
    persistent_workers=False, so each epoch forks 4 new workers, each
    paying StoreSet.open() (0.3 s) before the epoch's first batch; the
    epoch's 24 batches then come at once. Epoch 0 is set-up; the loop is
    epochs 1-6. Truth: the time from each epoch's iter(loader) to its first
    batch (shutdown_ns: the last next() of each epoch, which joins the
    workers)."""
    t = Truth("worker_startup", "worker_startup")
    ds = StoreSet(24 * 64, 1024)
    loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=4,
                                         persistent_workers=False, worker_init_fn=open_store)
    model = mlp(1024, 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    startup = shutdown = steps = 0
    for epoch in range(7):
        if epoch == 1:
            t.start()
        e0 = clock()
        it = iter(loader)
        x = next(it)
        if epoch:
            startup += clock() - e0
        while x is not None:
            train_step(model, opt, x.to(DEV))
            steps += epoch > 0
            n0 = clock()
            x = next(it, None)
            if x is None and epoch:
                shutdown += clock() - n0
        del it
    t.stop(steps)
    t.truth_ns = startup
    t.extra["shutdown_ns"] = shutdown
    return t


def w_launch(variant="eager"):
    """launch_bound (A/B): each step 50 tiny kernels (a.add_ on 16 floats),
    launched one by one (eager) or replayed as one CUDA graph (graph); no
    sync in the loop. The graph's loop is the kernels' own GPU time."""
    t = Truth("launch_bound", "launch_bound")
    a = torch.ones(16, device=DEV)
    k, steps = 50, 4000
    g = None
    if variant == "graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            a.add_(1.0)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(k):
                a.add_(1.0)
    for _ in range(k):
        a.add_(1.0)
    t.start()
    for _ in range(steps):
        if g is not None:
            g.replay()
        else:
            for _ in range(k):
                a.add_(1.0)
    t.stop(steps)
    return t


def w_autograd(variant="eager"):
    """launch_bound through autograd's own thread (A/B): a small MLP (8
    layers of 256, batch 64) trained with SGD, its backward run by
    autograd's device thread while the main thread waits for it; eager
    against the same step captured whole in a CUDA graph (PyTorch's
    whole-network capture). No data loader at all: a finding of
    data_pipeline_starvation here is a misreading of the wait for the
    autograd thread."""
    t = Truth("autograd_thread", "launch_bound")
    model = mlp(256, 8)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    torch.manual_seed(1)
    xs = [torch.randn(64, 256, device=DEV) for _ in range(4)]
    ys = [torch.randn(64, 16, device=DEV) for _ in range(4)]
    sx, sy = xs[0].clone(), ys[0].clone()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(sx), sy)
        loss.backward()
        opt.step()
        return loss

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = None
    if variant == "graph":
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            loss = step()
    steps = 3000
    t.start()
    for k in range(steps):
        sx.copy_(xs[k % 4])
        sy.copy_(ys[k % 4])
        if g is not None:
            g.replay()
        else:
            loss = step()
    t.stop(steps)
    t.extra["loss"] = round(float(loss.item()), 6)
    return t


WORKLOADS = {
    "loader_slow": w_loader_slow, "data_main": w_data_main, "item_sync": w_item_sync,
    "copies": w_copies, "alloc_churn": w_alloc, "matmul": w_matmul, "setup": w_setup,
    "worker_startup": w_worker_startup, "launch_bound": w_launch, "autograd_thread": w_autograd,
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in WORKLOADS:
        print("planted: " + " ".join(sorted(WORKLOADS)), file=sys.stderr)
        return 2
    WORKLOADS[sys.argv[1]](*sys.argv[2:]).emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
