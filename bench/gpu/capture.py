"""capture.py: issue 33's GPU proof, run by `bench/gpu-check.sh capture`.

A PyTorch training loop (an MLP, batch 512, one `.item()` a step) marks
each step with torch.cuda.nvtx.range_push("step")/range_pop() and logs
when each step began and ended (CLOCK_MONOTONIC, the run file's clock). It
is recorded with `cudaspy record --capture steps:A-B` (and with
`--capture cudaProfilerApi` around the same steps by
torch.cuda.profiler.start()/stop()), while `cudaspy-analyze top --once`
and `cudaspy-analyze metrics --once` (when the build has them) read the run
beside it. Checks: the run holds exactly B-A+1 NVTX steps, the first and
last of them are the loop's steps A and B (times within 1 ms of its log),
its launches (outermost calls of the launch family: __cudaLaunchKernel,
cuLaunchKernelEx, cuLaunchKernel...) are a whole number a step, the same
in both modes, and nothing from outside the range. `top --once` runs
every second beside the recording; the last frame that saw steps is kept.
Writes OUT/summary.json, runs.jsonl, reports.txt.

Usage: capture.py BUILD OUT RUNS"""
import json
import os
import subprocess
import sys
import time

LOOP = r'''
import sys, time, torch
steps, mode, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
a, b = int(sys.argv[4]), int(sys.argv[5])
torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(512, 1024, device=dev)
rows = []
for i in range(1, steps + 1):
    t0 = time.monotonic_ns()
    torch.cuda.nvtx.range_push("step")
    if mode == "profiler" and i == a:
        torch.cuda.profiler.start()
    opt.zero_grad(set_to_none=True)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    loss.item()
    if mode == "profiler" and i == b:
        torch.cuda.profiler.stop()
    torch.cuda.nvtx.range_pop()
    rows.append((i, t0, time.monotonic_ns()))
with open(log, "w") as f:
    f.writelines("%d %d %d\n" % r for r in rows)
'''


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    build, out, runs = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    os.makedirs(runs, exist_ok=True)
    loop = os.path.join(runs, "loop.py")
    open(loop, "w").write(LOOP)
    steps, a, b = 400, 201, 260
    rows, reports, ok_all = [], [], True
    for mode, cap in (("steps", "steps:%d-%d" % (a, b)), ("profiler", "cudaProfilerApi")):
        run_file, log = os.path.join(runs, mode + ".lmdb"), os.path.join(runs, mode + ".log")
        p = subprocess.Popen([build + "/cudaspy", "record", "-q", "-o", run_file, "--capture", cap,
                              "--", sys.executable, loop, str(steps), mode, log, str(a), str(b)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        beside, frames = {}, 0
        while p.poll() is None:  # the live view beside the run, each second
            time.sleep(1)
            r = run([build + "/cudaspy", "top", "--once", "--window", "2", run_file], timeout=30)
            frames += 1
            if r.returncode == 0 and ("top" not in beside or "p50" in r.stdout):
                beside["top"] = {"rc": r.returncode, "frame": frames, "out": r.stdout[-1500:]}
        r = run([build + "/cudaspy-analyze", "metrics", "--once", run_file], timeout=30)
        beside["metrics"] = {"rc": r.returncode, "out": r.stdout[-2500:], "err": r.stderr[-300:]}
        beside["top_frames"] = frames
        o, e = p.communicate(timeout=300)
        rep = json.loads(run([build + "/cudaspy-analyze", "--json", run_file]).stdout)
        reports.append(run([build + "/cudaspy-analyze", run_file]).stdout)
        logged = {int(l.split()[0]): tuple(map(int, l.split()[1:])) for l in open(log)}
        f = rep["run"]["files"][0]
        launches = sum(x["count"] for x in rep["apis"]
                       if x.get("family") == "launch" and not x.get("nested"))
        want = b - a + 1
        row = {"mode": mode, "capture": f.get("capture"), "steps": rep["steps"]["count"],
               "steps_source": rep["steps"]["source"], "want_steps": want,
               "launches": launches, "launches_per_step": launches / want,
               "step_a": logged[a], "step_b": logged[b], "t_start_ns": f["t_start_ns"],
               "record_rc": p.returncode, "beside": beside}
        rg = (f["capture"] or {}).get("ranges") or [[0, 0]]
        r0, r1 = f["t_start_ns"] + rg[0][0], f["t_start_ns"] + rg[-1][1]
        row["range_vs_log_ms"] = [(r0 - logged[a][0]) / 1e6, (r1 - logged[b][1]) / 1e6]
        ok = p.returncode == 0 and len(rg) == 1 and launches > 0 and launches % want == 0
        if mode == "steps":
            ok = ok and rep["steps"]["count"] == want and rep["steps"]["source"] == "nvtx"
            ok = ok and abs(row["range_vs_log_ms"][0]) < 1 and abs(row["range_vs_log_ms"][1]) < 1
        row["pass"] = ok
        ok_all &= ok
        rows.append(row)
        print("capture: %s" % json.dumps({k: row[k] for k in row if k != "beside"}), file=sys.stderr)
    ok_all &= len({r["launches"] for r in rows}) == 1  # the same steps, the same launches
    json.dump({"pass": ok_all, "rows": rows}, open(os.path.join(out, "summary.json"), "w"), indent=1)
    with open(os.path.join(out, "runs.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    open(os.path.join(out, "reports.txt"), "w").write("\n".join(reports))


main()
