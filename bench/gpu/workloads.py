"""workloads.py: GPU workloads with known, planted causes (and their controls)
for bench/gpu-check.sh. One workload per process, chosen by name, so each
traced run holds exactly one. Every workload prints `result: <checksum>`
(identical traced and untraced) and `elapsed: <seconds>` on stdout.

Usage: python3 workloads.py NAME [ARGS]   (python3 workloads.py list)
"""
import os
import sys
import time

import torch

DEV = "cuda"


def checksum(t):
    return f"{float(t.double().sum().item()):.6e}"


def mlp(d_in=100, hidden=512, d_out=10):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(d_in, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, d_out)).to(DEV)


def seed_data(n):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, 100, generator=g)


def proc_report(it):
    """Print each DataLoader worker's own /proc totals (ground truth for the
    sampler's per-worker numbers), read while the workers still live."""
    for w in getattr(it, "_workers", []):
        st = {}
        try:
            for line in open(f"/proc/{w.pid}/status"):
                k, _, v = line.partition(":")
                st[k] = v.strip()
            run_ns, wait_ns, _ = open(f"/proc/{w.pid}/schedstat").read().split()
            minflt = open(f"/proc/{w.pid}/stat").read().rsplit(")", 1)[1].split()[7]
        except OSError:
            continue
        print(f"proc: pid={w.pid} vcsw={st.get('voluntary_ctxt_switches')} "
              f"ivcsw={st.get('nonvoluntary_ctxt_switches')} oncpu_ns={run_ns} "
              f"runq_ns={wait_ns} minflt={minflt}", file=sys.stderr)


def barrier():
    """$CS_BARRIER=DIR:N (gpu-check.sh seedconc): after set-up, wait until N
    processes got here (one file each in DIR), at most 120 s, so that copies
    run at the same time also time the same window."""
    spec = os.environ.get("CS_BARRIER")
    if not spec:
        return
    d, _, n = spec.rpartition(":")
    open(os.path.join(d, str(os.getpid())), "w").close()
    end = time.time() + 120
    while len(os.listdir(d)) < int(n) and time.time() < end:
        time.sleep(0.002)


def w_seed(mode="loader", workers="4"):
    """The seed story: DataLoader(shuffle) over an in-RAM tensor vs direct
    indexing (../shared/seed/seed_bench.py). Planted: data pipeline starvation."""
    from torch.utils.data import DataLoader
    n = int(os.environ.get("N", "7000000"))
    b = int(os.environ.get("B", "1048576"))
    x = seed_data(n)
    model = mlp()
    out = torch.zeros(10, device=DEV)
    with torch.no_grad():
        model(x[:b].to(DEV))
        torch.cuda.synchronize()
        barrier()
        t = time.time()
        if mode == "direct":
            for i in range(0, n, b):
                out += model(x[i:i + b].to(DEV)).sum(0)
        else:
            g = torch.Generator().manual_seed(1)
            loader = DataLoader(x, batch_size=b, shuffle=True,
                                num_workers=int(workers), generator=g)
            it = iter(loader)
            for k, batch in enumerate(it):
                out += model(batch.to(DEV)).sum(0)
                if os.environ.get("CS_PROC_REPORT") and k == len(loader) - 1:
                    proc_report(it)
        torch.cuda.synchronize()
        el = time.time() - t
    return out, el


def w_copies(mode="pageable"):
    """Large host-to-device copies from pageable vs pinned memory."""
    host = torch.ones(64 * 1024 * 1024 // 4 * 4, dtype=torch.float32)  # 256 MiB
    if mode == "pinned":
        host = host.pin_memory()
    dev = torch.empty_like(host, device=DEV)
    acc = torch.zeros(1, device=DEV)
    t = time.time()
    for _ in range(60):
        dev.copy_(host, non_blocking=True)
        acc += dev[:1024].sum()
    torch.cuda.synchronize()
    return acc, time.time() - t


def w_sync(mode="every"):
    """A host synchronisation after every step vs one at the end."""
    torch.manual_seed(0)
    a = torch.randn(256, 256, device=DEV)
    acc = torch.zeros(256, 256, device=DEV)
    t = time.time()
    for _ in range(60000):
        acc = acc * 0.5 + a
        if mode == "every":
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return acc, time.time() - t


def w_alloc(mode="churn"):
    """Device-memory allocation every step (caching allocator bypassed with
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 by the caller) vs cached."""
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device=DEV)
    acc = torch.zeros(1024, 1024, device=DEV)
    t = time.time()
    for _ in range(12000):
        tmp = torch.empty(4 * 1024 * 1024, device=DEV)  # 16 MiB, new each step
        tmp.fill_(1.0)
        acc += a * tmp[:1024 * 1024].view(1024, 1024)
        del tmp
    torch.cuda.synchronize()
    return acc, time.time() - t


def w_hogged(mode="hogged"):
    """Small kernels + a sync each step; gpu-check.sh runs CPU hogs outside
    the traced tree around the 'hogged' run."""
    torch.manual_seed(0)
    a = torch.randn(512, 512, device=DEV)
    acc = torch.zeros(512, 512, device=DEV)
    t = time.time()
    for _ in range(15000):
        for _ in range(4):
            acc = acc * 0.9 + a
        torch.cuda.synchronize()
    return acc, time.time() - t


def w_tiny(mode="tiny"):
    """Launch-bound loop of tiny kernels."""
    a = torch.ones(16, device=DEV)
    t = time.time()
    for _ in range(150000):
        a.add_(1.0)
    torch.cuda.synchronize()
    return a, time.time() - t


def w_matmul(mode="big", iters="400"):
    """GPU-bound run of large matmuls (healthy); iters 2500 keeps it busy
    long enough (about 4 s on the H200) for several 1 Hz sampled slices."""
    torch.manual_seed(0)
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    acc = torch.zeros(8192, 8192, device=DEV, dtype=torch.float32)
    t = time.time()
    for _ in range(int(iters)):
        acc += (a @ b).float()
    torch.cuda.synchronize()
    return acc, time.time() - t


def w_triton(mode="tiny"):
    """A Triton kernel in a loop (launches through Triton's own dlsym'd
    cuLaunchKernelEx)."""
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    n = 4096 if mode == "tiny" else 64 * 1024 * 1024
    x = torch.ones(n, device=DEV)
    y = torch.ones(n, device=DEV)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    add_kernel[grid](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    t = time.time()
    for _ in range(90000 if mode == "tiny" else 300):
        add_kernel[grid](x, y, out, n, BLOCK=1024)
        x, out = out, x
    torch.cuda.synchronize()
    return x[:4096], time.time() - t


def w_train(mode="mlp"):
    """PyTorch MLP forward/backward with an optimizer (cuBLAS GEMMs)."""
    model = mlp(1024, 2048, 1024)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    torch.manual_seed(1)
    x = torch.randn(4096, 1024, device=DEV)
    t = time.time()
    for _ in range(300):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return loss.detach().reshape(1), time.time() - t


def w_graph(mode="replay"):
    """CUDA graph capture + replay."""
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device=DEV)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        b = a * 2
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(10):
            b = b * 0.5 + a
    t = time.time()
    for _ in range(20000):
        g.replay()
    torch.cuda.synchronize()
    return b, time.time() - t


def spin(secs):
    """Host work on the CPU for @secs (Python, as a training loop's own)."""
    end = time.perf_counter() + secs
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def w_itemstep(mode="item", steps="800"):
    """Issue 22's first miss: each step a ~1.4 ms matmul, then loss.item()
    (a sync), `acc += loss` (a tiny kernel enqueued at once), then 1 ms of
    host work before the next step. mode=noitem keeps the loss on the GPU
    (no sync): the host work then overlaps the matmul; mode=nvtx is noitem
    with each step a torch.cuda.nvtx range "train_step" holding "forward"
    (issue 24: steps from the user's ranges)."""
    torch.manual_seed(0)
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    acc = torch.zeros((), device=DEV)
    total = 0.0
    torch.cuda.synchronize()
    t = time.time()
    nvtx = torch.cuda.nvtx if mode == "nvtx" else None
    for _ in range(int(steps)):
        if nvtx:
            nvtx.range_push("train_step")
            nvtx.range_push("forward")
        loss = (a @ b).mean()
        if nvtx:
            nvtx.range_pop()
        if mode == "item":
            total += loss.item()
        acc += loss
        spin(0.001)
        if nvtx:
            nvtx.range_pop()
    torch.cuda.synchronize()
    return acc.reshape(1), time.time() - t


def w_duty(kernel_ms="6", host_ms="4", steps="300"):
    """A known duty cycle: a kernel that keeps the GPU busy kernel_ms
    (torch.cuda._sleep, timed by CUDA events), its sync, then host_ms of host
    work. Prints duty_pct: the kernels' own GPU time over the loop's time,
    and loop_mono_ns: the loop's start and end on CLOCK_MONOTONIC."""
    s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)  # warm up: the first launch loads the module
    torch.cuda.synchronize()
    rates = []
    for _ in range(3):
        s0.record()
        torch.cuda._sleep(10_000_000)
        s1.record()
        torch.cuda.synchronize()
        rates.append(10_000_000 / s0.elapsed_time(s1))
    cycles = int(sorted(rates)[1] * float(kernel_ms))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(int(steps))]
    t, m0 = time.time(), time.monotonic_ns()
    for e0, e1 in ev:
        e0.record()
        torch.cuda._sleep(cycles)
        e1.record()
        torch.cuda.synchronize()
        spin(float(host_ms) / 1e3)
    el, m1 = time.time() - t, time.monotonic_ns()
    busy_ms = sum(e0.elapsed_time(e1) for e0, e1 in ev)
    print(f"duty_pct: {100.0 * busy_ms / (el * 1e3):.3f}")
    print(f"loop_mono_ns: {m0} {m1}")  # CLOCK_MONOTONIC, the run file's clock
    return torch.tensor([busy_ms]), el


def w_chunks(n="2000000", chunk="1000"):
    """The launch loop timed in chunks (a.add_, `chunk` launches each), for
    sampled GPU activity's cost inside one process: most chunks run between
    slices, the rest inside one (CUPTI on) or across an attach. Prints
    us_per_launch (the whole loop), chunk_p50 (the median chunk: the rate
    between slices), chunk_p90 and slow_pct (chunks over 1.2 x the median).
    CS_CHUNK_LOG=FILE: each chunk's CLOCK_MONOTONIC start and end ns there."""
    a = torch.ones(16, device=DEV)
    n, chunk = int(n), int(chunk)
    for _ in range(2000):
        a.add_(1.0)
    torch.cuda.synchronize()
    per, clock, spans = [], time.monotonic_ns, []
    t0 = clock()
    for _ in range(n // chunk):
        c0 = clock()
        for _ in range(chunk):
            a.add_(1.0)
        c1 = clock()
        per.append((c1 - c0) / 1e3 / chunk)
        spans.append((c0, c1))
    torch.cuda.synchronize()
    el = (clock() - t0) / 1e9
    if os.environ.get("CS_CHUNK_LOG"):
        with open(os.environ["CS_CHUNK_LOG"], "w") as f:
            f.writelines(f"{c0} {c1}\n" for c0, c1 in spans)
    srt = sorted(per)
    p50 = srt[len(srt) // 2]
    print("us_per_launch: %.4f" % (el * 1e6 / (len(per) * chunk)))
    print("chunk_p50: %.4f" % p50)
    print("chunk_p90: %.4f" % srt[len(srt) * 9 // 10])
    print("slow_pct: %.2f" % (100.0 * sum(v > 1.2 * p50 for v in per) / len(per)))
    return a, el


def w_launch(mode="plain", n="100000", reps="5"):
    """The launch-bound loop the cost of GPU activity is judged on: a tiny
    kernel launched back to back (a.add_), timed per rep; mode=profiler runs
    each rep inside torch.profiler (CPU and CUDA activities), timed inside.
    Prints us_per_launch: the median rep."""
    a = torch.ones(16, device=DEV)
    n, per = int(n), []
    for _ in range(2000):
        a.add_(1.0)
    torch.cuda.synchronize()
    for _ in range(int(reps)):
        prof = None
        if mode == "profiler":
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            prof.__enter__()
        t = time.perf_counter()
        for _ in range(n):
            a.add_(1.0)
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t) * 1e6 / n)
        if prof is not None:
            prof.__exit__(None, None, None)
    per.sort()
    print("us_per_launch: %.4f" % per[len(per) // 2])
    print("reps_us: " + " ".join("%.4f" % v for v in per))
    return a, sum(per) * n / 1e6


WORKLOADS = {
    "itemstep": w_itemstep, "duty": w_duty, "launch": w_launch, "chunks": w_chunks,
    "seed": w_seed, "copies": w_copies, "sync": w_sync, "alloc": w_alloc,
    "hogged": w_hogged, "tiny": w_tiny, "matmul": w_matmul, "triton": w_triton,
    "train": w_train, "graph": w_graph,
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in WORKLOADS:
        print("workloads: " + " ".join(sorted(WORKLOADS)), file=sys.stderr)
        return 2
    out, el = WORKLOADS[sys.argv[1]](*sys.argv[2:])
    print(f"result: {checksum(out)}")
    print(f"elapsed: {el:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
