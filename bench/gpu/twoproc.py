"""twoproc.py: two independent CUDA processes on one GPU that wait on each
other every step through a pipe barrier, like two ranks of a data-parallel
job. RANK 1 is the planted straggler: every 10th step it burns ~20 ms of CPU
before arriving. Stands in for the 2-GPU DDP check when only one GPU is lent.
TWOPROC_CONTROL=1 in the environment runs the clean control (no burning).
Usage: python3 twoproc.py   (spawns both ranks, prints result and elapsed)"""
import os
import subprocess
import sys
import time

STEPS = 400
STRAGGLE = os.environ.get("TWOPROC_CONTROL") != "1"


def child(rank, rfd, wfd):
    import torch
    torch.manual_seed(rank)
    a = torch.randn(1024, 1024, device="cuda")
    acc = torch.zeros(1024, 1024, device="cuda")
    for step in range(STEPS):
        for _ in range(4):
            acc = acc * 0.9 + a
        torch.cuda.synchronize()
        if STRAGGLE and rank == 1 and step % 10 == 0:
            t = time.perf_counter()
            while time.perf_counter() - t < 0.02:
                pass
        os.write(wfd, b"x")          # arrive
        if len(os.read(rfd, 1)) != 1:  # wait for the other rank
            return 1
    print(f"rank{rank}: {float(acc.double().sum()):.6e}")
    return 0


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "child":
        return child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    r01, w01 = os.pipe()  # 0 -> 1
    r10, w10 = os.pipe()  # 1 -> 0
    t = time.time()
    procs = []
    for rank, (rfd, wfd) in enumerate([(r10, w01), (r01, w10)]):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
        procs.append(subprocess.Popen([sys.executable, __file__, "child", str(rank), str(rfd), str(wfd)],
                                      env=env, pass_fds=(rfd, wfd), stdout=subprocess.PIPE, text=True))
    outs = [p.communicate()[0].strip() for p in procs]
    rc = max(p.returncode for p in procs)
    print("result: " + " ".join(outs))
    print(f"elapsed: {time.time() - t:.3f}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
