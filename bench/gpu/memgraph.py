"""memgraph.py: issue 31's GPU proof (gpu-check.sh memory-graphs): GPU memory
and CUDA graphs on real PyTorch programs, each recorded once with
`cudaspy record --gpu-activity full` and analysed with `--json`.

Cases (each a child of this file, `memgraph.py child MODE`, printing one
`memgraph-truth: {...}` line with PyTorch's own figures):
- train, train_expandable: an MLP training loop at a training size (the
  second with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): the
  process's peak device memory, of it what PyTorch's allocator's APIs held
  (memory.processes[].peak_by_api: cudaMalloc, cuMemCreate), must be within
  2 % of torch.cuda.max_memory_reserved() (calls 2 and 3 on the H100: the
  process held 128.25 MiB more, through 6 cuMemAlloc_v2 calls of a library
  that reaches the driver itself; the row keeps the whole peak too);
- retries: a tensor that grows each step (from half the free memory): the
  block cached from the step before cannot serve it and both do not fit,
  so each step's cudaMalloc fails, the allocator frees its cache
  (synchronising) and retries. Truth: memory_stats()'s num_alloc_retries.
  `allocator_retries` must be HIGH; its impact is set, for the record,
  against the A/B difference with retries_without (the same loop at the
  first step's size each step: the cache serves it, no retry);
- oom: tensors of 1 GiB appended until torch.cuda.OutOfMemoryError ends the
  program (exit 1): `oom` must be there and name the allocating line;
- compile_static: torch.compile(mode="reduce-overhead") on one shape: its
  kernels run inside CUDA graphs and must be seen there (GPU records with a
  graph id), no HIGH finding;
- compile_dynamic: the same model on a batch size that changes every
  other step: cudagraph trees warm each new shape up eagerly and record a
  graph for it at its second call: `graph_recapture` must be HIGH; its
  share of the window is set, for the record, against the A/B share
  1 - step(compile_static) / step(compile_dynamic) (recapture_ab).

Writes OUT/summary.json ({"cases": [...], "passed", "failed"}) and
OUT/runs.jsonl (each run: truth, memory, findings, checks).

Usage: python3 memgraph.py BUILD OUT RUNS   (env PYTHON, CS_PIN,
       MG_CASES: a comma-separated subset; MG_KEEP: cases whose run
       files stay in RUNS)
"""
import json
import os
import subprocess
import sys
import time

from steps import Steps, run_text

TAG = "memgraph-truth: "
MIB = 1 << 20


# ---- the children: PyTorch programs with their own meters ---------------

def truth(**kw):
    print(TAG + json.dumps(kw), flush=True)


def mlp(torch, width=4096, depth=4):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).cuda()


def c_train(torch):
    """MLP forward/backward/step at a training size (about 8 GB reserved):
    the caching allocator's segments. What other libraries allocate on
    their own is not in max_memory_reserved() (128 MiB more at 962 MiB
    reserved in call 1 on the H100; the row names its holders)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    m = mlp(torch, width=8192, depth=4)
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    x = torch.randn(16384, 8192, device="cuda")
    t0 = time.monotonic_ns()
    steps = 30
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        m(x).square().mean().backward()
        opt.step()
    torch.cuda.synchronize()
    truth(case="train", steps=steps, loop_ns=time.monotonic_ns() - t0,
          max_reserved=torch.cuda.max_memory_reserved(),
          max_allocated=torch.cuda.max_memory_allocated(),
          conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))


def c_retries(torch, fit=False):
    """A batch that grows each step (50 % of the free memory, then 1.5 %
    more a step): the block cached from the step before cannot serve the
    new size, and both do not fit, so each step's cudaMalloc fails, the
    allocator frees its cache (synchronising the device) and retries. With
    `fit` (the A/B control: a lower peak) every step takes the first step's
    size, which the cache serves: no retry, no fresh allocation."""
    torch.empty(1, device="cuda")
    free, total = torch.cuda.mem_get_info()
    steps = 24
    sizes = [free * (500 + (0 if fit else 15 * i)) // 1000 // MIB * MIB for i in range(steps)]
    t0 = time.monotonic_ns()
    s = 0.0
    for n in sizes:
        x = torch.empty(n, dtype=torch.uint8, device="cuda")
        x[: 64 * MIB].fill_(1)
        s += float(x[: 64 * MIB].sum(dtype=torch.float32).item())
        del x
    torch.cuda.synchronize()
    st = torch.cuda.memory_stats()
    truth(case="retries_without" if fit else "retries", steps=steps,
          loop_ns=time.monotonic_ns() - t0, sizes=[sizes[0], sizes[-1]], free=free,
          total=total, num_alloc_retries=st.get("num_alloc_retries", 0),
          num_ooms=st.get("num_ooms", 0), max_reserved=torch.cuda.max_memory_reserved(),
          checksum=s)


def c_oom(torch):
    """Allocate 1 GiB tensors until the device is full: the program dies."""
    torch.empty(1, device="cuda")
    free, total = torch.cuda.mem_get_info()
    line = sys._getframe().f_lineno + 4
    truth(case="oom", line=line, file=os.path.basename(__file__), free=free, total=total)
    xs = []
    while True:
        xs.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))


WARM = 3  # steps of compilation before the timed loop (a dynamic shape's recompile is the 2nd)
# the compiled loops' batch: at 512 the replayed step's GPU work (about 0.28 ms
# on the H100) and its host code (0.3 ms) took turns, and the healthy loop was
# rightly host_bound HIGH in one call of two (call 5); at 2048 the GPU leads
BATCH = 2048


def compiled(torch, batches):
    """The timed loop: steps WARM.. (compiling, and dynamo's recompile for a
    second shape, are set-up). No sync inside the loop: the sum stays on
    the GPU, as a healthy loop keeps it."""
    torch.backends.cuda.matmul.allow_tf32 = True
    m = mlp(torch, width=4096, depth=6)
    f = torch.compile(m, mode="reduce-overhead")
    ys = torch.zeros((), device="cuda")
    with torch.no_grad():
        for i, n in enumerate(batches):
            if i == WARM:
                torch.cuda.synchronize()
                t0 = time.monotonic_ns()
            x = torch.randn(n, 4096, device="cuda")
            ys = ys + f(x).sum()
    torch.cuda.synchronize()
    return time.monotonic_ns() - t0, float(ys.item())


def c_compile_static(torch):
    steps = 300
    loop, ys = compiled(torch, [BATCH] * steps)
    truth(case="compile_static", steps=steps - WARM, loop_ns=loop, shapes=1, checksum=ys)


def c_compile_dynamic(torch):
    """A batch size that changes every other step: cudagraph trees run a new
    shape eagerly once (warm-up), record a graph for it at its second call,
    and never meet it again, as with a length that keeps changing."""
    steps = 200
    batches = [BATCH + 8 * (i // 2) for i in range(steps)]
    loop, ys = compiled(torch, batches)
    truth(case="compile_dynamic", steps=steps - WARM, loop_ns=loop, shapes=len(set(batches)),
          checksum=ys)


CHILDREN = {"train": c_train, "retries": c_retries,
            "retries_without": lambda torch: c_retries(torch, fit=True),
            "oom": c_oom, "compile_static": c_compile_static,
            "compile_dynamic": c_compile_dynamic}


# ---- the driver ----------------------------------------------------------

# name, child mode, extra environment
CASES = [
    ("train", "train", {}),
    ("train_expandable", "train", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ("retries", "retries", {}),
    ("retries_without", "retries_without", {}),
    ("oom", "oom", {}),
    ("compile_static", "compile_static", {}),
    ("compile_dynamic", "compile_dynamic", {}),
]


def findings(j):
    return j.get("chains") or []


def finding(j, cause):
    return next((f for f in findings(j) if f.get("cause") == cause), None)


def high(j):
    return [f.get("cause") for f in findings(j) if f.get("severity") == "HIGH"]


def peak_bytes(j):
    """The largest per-process peak of the run's `memory` (docs/json.md)."""
    best = None
    for p in (j.get("memory") or {}).get("processes", []):
        for d in p.get("devices", [p]):
            v = d.get("peak_bytes")
            if v is not None and (best is None or v > best):
                best = v
    return best


def torch_peak(j):
    """Of the largest per-process peak, what PyTorch's allocator's APIs held
    (cudaMalloc segments, cuMemCreate pages of expandable segments): the
    memory max_memory_reserved() counts; other libraries' own allocations
    (cuMemAlloc_v2 straight to the driver) are not in it."""
    best, part = None, None
    for p in (j.get("memory") or {}).get("processes", []):
        v = p.get("peak_bytes")
        if v is not None and (best is None or v > best):
            best = v
            part = sum(a["bytes"] for a in p.get("peak_by_api") or []
                       if a.get("api") in ("cudaMalloc", "cuMemCreate"))
    return part


def graphs(j):
    """gpu.graphs: what graph replays ran, from GPU records with a graph id."""
    return (j.get("gpu") or {}).get("graphs") or j.get("graphs") or {}


def graph_kernels(j):
    return graphs(j).get("kernels")


class Run(Steps):
    """Steps' set-up (build, out, runs, PYTHON, CS_PIN) and its note()."""
    tag = "memgraph"

    def __init__(self, build, out, runs):
        super().__init__(build, out, runs)
        self.reports = open(os.path.join(out, "reports.txt"), "a")

    def record(self, name, mode, env):
        path = os.path.join(self.runs, f"mg-{name}.lmdb")
        cmd = [os.path.join(self.b, "cudaspy"), "record", "-q", "-o", path,
               "--gpu-activity", "full", "--", self.py, os.path.abspath(__file__),
               "child", mode]
        if self.pin:
            cmd = ["taskset", "-c", self.pin] + cmd
        e = dict(os.environ, PYTHONUNBUFFERED="1", CUDASPY_QUIET="1", **env)
        t0 = time.time()
        rc, out, err = run_text(cmd, e, 400)
        row = {"case": name, "rc": rc, "wall_s": round(time.time() - t0, 2),
               "stderr_tail": err[-600:]}
        for line in out.splitlines():
            if line.startswith(TAG):
                row["truth"] = json.loads(line[len(TAG):])
        a = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), "--json", path],
                           capture_output=True, text=True, timeout=300)
        t = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), path],
                           capture_output=True, text=True, timeout=300)
        self.reports.write(f"==== {name} (rc {rc}) ====\n{t.stdout}{t.stderr[-400:]}\n")
        self.reports.flush()
        try:
            j = json.loads(a.stdout)
        except ValueError:
            j = None
            row["analyze_error"] = a.stderr[-400:]
        keep = set(filter(None, os.environ.get("MG_KEEP", "").split(",")))
        for f in (path, path + "-lock") if name not in keep else ():
            try:
                os.unlink(f)
            except OSError:
                pass
        return row, j


def check(name, row, j, rows):
    """The acceptance checks of one case: {check: bool}."""
    tr, c = row.get("truth") or {}, {}
    if j is None:
        return {"analysed": False}
    row["high"] = high(j)
    row["findings"] = [{k: f.get(k) for k in ("cause", "severity", "impact_ns", "impact_pct",
                                               "count", "retries", "oom", "evidence")}
                       for f in findings(j)[:6]]
    if name.startswith("train"):
        row["memory"] = j.get("memory")
        row["alloc_apis"] = [{k: a.get(k) for k in ("api", "count", "total_ns", "bytes")}
                             for a in j.get("apis", []) if "Alloc" in str(a.get("api"))
                             or "Malloc" in str(a.get("api")) or "MemCreate" in str(a.get("api"))]
        pk, want = peak_bytes(j), tr.get("max_reserved")
        row["peak_bytes"], row["max_reserved"] = pk, want
        row["torch_peak_bytes"] = tp = torch_peak(j)
        c["torch_part_within_2pct"] = bool(tp and want and abs(tp - want) <= 0.02 * want)
    elif name == "retries":
        f = finding(j, "allocator_retries")
        row["retry_finding"] = f
        c["allocator_retries_high"] = bool(f and f.get("severity") == "HIGH")
        c["truth_has_retries"] = tr.get("num_alloc_retries", 0) >= tr.get("steps", 0) - 1
        ep = ((f or {}).get("retries") or {}).get("episodes")
        row["episodes"] = ep
        c["episodes_match_num_alloc_retries"] = ep == tr.get("num_alloc_retries")
        pk, want = peak_bytes(j), tr.get("max_reserved")
        row["peak_bytes"], row["max_reserved"] = pk, want
        c["peak_within_2pct"] = bool(pk and want and abs(pk - want) <= 0.02 * want)
    elif name == "retries_without":
        c["no_retry_finding"] = finding(j, "allocator_retries") is None
        c["truth_no_retries"] = tr.get("num_alloc_retries", 1) == 0
    elif name == "oom":
        f = finding(j, "oom")
        row["oom_finding"] = f
        c["program_died"] = row["rc"] != 0
        c["oom_found"] = f is not None
        s = json.dumps(f or {})
        c["oom_names_line"] = bool(f and tr.get("file", "?") in s and str(tr.get("line")) in s)
    elif name == "compile_static":
        row["graph_kernels"] = graph_kernels(j)
        row["graphs"] = graphs(j)
        c["kernels_in_graphs"] = bool(row["graph_kernels"])
        c["no_high"] = not row["high"]
        c["no_recapture_finding"] = finding(j, "graph_recapture") is None or \
            finding(j, "graph_recapture").get("severity") == "LOW"
    elif name == "compile_dynamic":
        f = finding(j, "graph_recapture")
        row["recapture_finding"] = f
        row["graphs"] = graphs(j)
        c["graph_recapture_high"] = bool(f and f.get("severity") == "HIGH")
    return c


def ab_retries(rows):
    """The A/B truth of the retries: loop(with) - loop(without), against the impact."""
    w = rows.get("retries", {}).get("truth") or {}
    wo = rows.get("retries_without", {}).get("truth") or {}
    f = rows.get("retries", {}).get("retry_finding") or {}
    if not w.get("loop_ns") or not wo.get("loop_ns"):
        return None
    d = w["loop_ns"] - wo["loop_ns"]
    imp = f.get("impact_ns")
    return {"ab_ns": d, "impact_ns": imp,
            "error_pct": round(100.0 * (imp - d) / d, 1) if imp is not None and d > 0 else None}


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "child":
        import torch
        CHILDREN[sys.argv[2]](torch)
        return 0
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    r = Run(*sys.argv[1:4])
    only = set(filter(None, os.environ.get("MG_CASES", "").split(",")))
    rows, cases = {}, []
    for name, mode, env in CASES:
        if only and name not in only:
            continue
        row, j = r.record(name, mode, env)
        row["checks"] = check(name, row, j, rows)
        rows[name] = row
        r.note(row)
        cases.append({"case": name, "rc": row["rc"], "checks": row["checks"],
                      "passed": bool(row["checks"]) and all(row["checks"].values())})
    ab = ab_retries(rows)
    st = (rows.get("compile_static", {}).get("truth") or {})
    dy = (rows.get("compile_dynamic", {}).get("truth") or {})
    per = None
    if st.get("steps") and dy.get("steps"):
        per = {"static_step_ns": st["loop_ns"] // st["steps"],
               "dynamic_step_ns": dy["loop_ns"] // dy["steps"],
               "finding": {k: (rows["compile_dynamic"].get("recapture_finding") or {}).get(k)
                           for k in ("impact_ns", "impact_pct", "count", "evidence")}}
        # the A/B share: what of the dynamic loop's step one shape would save,
        # against the finding's share of the steady window (for the record)
        share = 1.0 - per["static_step_ns"] / per["dynamic_step_ns"]
        pct = per["finding"]["impact_pct"]
        per["ab_share_pct"] = round(100.0 * share, 1)
        per["error_pct"] = round(100.0 * (pct / 100.0 - share) / share, 1) \
            if pct is not None and share > 0 else None
    summary = {"cases": cases, "retries_ab": ab, "recapture_ab": per,
               "passed": sum(c["passed"] for c in cases),
               "failed": [c["case"] for c in cases if not c["passed"]]}
    json.dump(summary, open(os.path.join(r.out, "summary.json"), "w"), indent=1)
    print(json.dumps(summary), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
