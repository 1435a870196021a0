"""ddp.py: a small DistributedDataParallel training loop for the multi-GPU
check (issue 10, docs/multigpu.md), launched by torchrun:

  torchrun --standalone --nproc_per_node=2 bench/gpu/ddp.py [--straggle] [--steps 1000]

Every rank trains the same MLP on its own synthetic batches; DDP all-reduces
the gradients with NCCL and every step ends with torch.cuda.synchronize()
(the host sync point the analyzer aligns ranks on). With --straggle, rank 1
burns --burn-ms of CPU before every --every-th step (a slow data loader), so
rank 0 waits in the all-reduce; without it the run is the clean control.

CS_DDP_CPUS="LIST0;LIST1" pins rank r, every thread of it, to CPU list r
(taskset syntax; gpu-check.sh gives each rank CPUs of its GPU's NUMA node):
unpinned, the ranks' host-bound steps vary by 30 % with the socket they run
on, which hides a few per cent of tracing cost. From the timed steps on,
the main thread (the one that launches) has the list's first CPU to itself
and the other threads (NCCL's, torch's) share the rest.

--backend gloo --same-gpu runs both ranks on GPU 0 (gloo all-reduces through
the host; NCCL refuses two ranks on one GPU): a one-GPU variant, which the
straggler method is known to miss (docs/multigpu.md).

1000 steps keep the loop long against torch's import and NCCL set-up
(several seconds, inside the traced wall time that sets the severity).

Rank 0 prints `result: loss=<sum> params=<sum>` (identical traced or
untraced), `elapsed: <s>` (the timed steps, after warm-up) and
`quarters: <s> <s> <s> <s>`, the time of each quarter of the timed steps:
a tracing cost that falls in the job's first seconds shows in the first.
With --step-log FILE rank 0 also writes when each timed step ended
(CLOCK_MONOTONIC ns), for the on/off phases of `cudaspy record --duty`."""
import argparse
import os
import threading
import time

# NVLink SHARP / multicast objects stay off on the lent machines: never
# cuMulticastCreate (gpu-check.sh sets these too).
for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
             ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(k, v)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--straggle", action="store_true", help="rank 1 burns CPU every --every steps")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--burn-ms", type=float, default=20.0)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    p.add_argument("--same-gpu", action="store_true", help="every rank on GPU 0")
    p.add_argument("--step-log", default=os.environ.get("CS_STEP_LOG"),
                   help="(default $CS_STEP_LOG) rank 0 writes the CLOCK_MONOTONIC ns at which the "
                   "timed region began and each timed step ended, one per line, here")
    return p.parse_args()


def burn(ms):
    """Spin on the CPU for ms milliseconds (a stand-in for host-side data work)."""
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def cpu_list(s):
    cpus = set()
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def my_cpus(local):
    """CS_DDP_CPUS's CPU list for @local, or None."""
    lists = os.environ.get("CS_DDP_CPUS", "").split(";")
    if local >= len(lists) or not lists[local]:
        return None
    return cpu_list(lists[local])


def pin(local, main_alone=False):
    """Every thread of this process onto CS_DDP_CPUS's list for @local; with
    @main_alone, the calling thread onto the list's first CPU and the others
    onto the rest (when the list has two CPUs or more)."""
    cpus = my_cpus(local)
    if cpus is None:
        return
    me, first = threading.get_native_id(), min(cpus)
    split = main_alone and len(cpus) > 1
    for tid in os.listdir("/proc/self/task"):
        want = ({first} if int(tid) == me else cpus - {first}) if split else cpus
        try:
            os.sched_setaffinity(int(tid), want)
        except OSError:
            pass


def model_for(hidden, dev):
    torch.manual_seed(1234)  # same initial weights on every rank
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(hidden, 1))
    return torch.nn.Sequential(*layers).to(dev)


def main():
    a = parse()
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    pin(local)
    dev = torch.device("cuda", 0 if a.same_gpu else local)
    torch.cuda.set_device(dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    dist.init_process_group(a.backend)
    model = DDP(model_for(a.hidden, dev), device_ids=[dev.index])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = torch.Generator(device=dev).manual_seed(1000 + rank)
    xs = [torch.randn(a.batch, a.hidden, device=dev, generator=g) for _ in range(8)]
    ys = [torch.randn(a.batch, 1, device=dev, generator=g) for _ in range(8)]
    loss_sum = torch.zeros((), device=dev, dtype=torch.float64)
    t0 = None
    marks = []  # end of each quarter of the timed steps
    ends = []   # --step-log: monotonic ns at the start, then at each timed step's end
    log_steps = a.step_log and rank == 0
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            pin(local, main_alone=True)
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            if log_steps:
                ends.append(time.monotonic_ns())
        if a.straggle and rank == 1 and step % a.every == a.every - 1:
            burn(a.burn_ms)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(xs[step % 8]), ys[step % 8])
        loss.backward()
        opt.step()
        loss_sum += loss.detach().double()
        torch.cuda.synchronize()  # the step's host sync point
        if log_steps and step >= a.warmup:
            ends.append(time.monotonic_ns())
        done = step - a.warmup + 1
        if done > 0 and len(marks) < done * 4 // a.steps:
            marks.append(time.perf_counter())
    elapsed = time.perf_counter() - t0
    psum = sum(p.detach().double().sum() for p in model.parameters())
    tot = torch.stack([loss_sum, psum])
    dist.all_reduce(tot)
    if rank == 0:
        print(f"result: loss={tot[0].item():.6e} params={tot[1].item():.6e}")
        print(f"elapsed: {elapsed:.3f}")
        q = [b - e for b, e in zip(marks, [t0] + marks[:-1])]
        print("quarters: " + " ".join(f"{x:.4f}" for x in q))
        if log_steps:
            with open(a.step_log, "w") as f:
                f.write("\n".join(map(str, ends)) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
