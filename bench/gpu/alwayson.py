"""alwayson.py: issue 35's proof (gpu-check.sh alwayson): what recording
costs real PyTorch training programs, taken apart by component, in one
device call.

Programs (each prints the accuracy contract's truth line, whose loop_ns /
steps is the run's figure: its mean time a step over its own timed loop):
  wlm     pytorch/examples word_language_model, unmodified (LSTM, batch 20,
          a loss.item() each batch): launch-bound (accuracy/extrun.py)
  add     the a.add_(1.0) launch loop (this file, child mode), and under
          torch.profiler for comparison (variant torchprof)
  dcgan   pytorch/examples dcgan on fake data, 4 DataLoader workers:
          data-bound (extrun.py)
  matmul  back-to-back bf16 8192^3 products: GPU-bound (planted.py matmul)

Variants (ALWAYS_PLAN picks which run where):
  untraced   the program alone
  default    cudaspy record, every default
  fixed1s    GPU activity slices every second whatever they cost (the
             default before the budget: CUDASPY_GPU_SAMPLE=100/1000)
  gpuoff     --gpu-activity off
  oneslice   one slice at CUDA's start, never again (what CUPTI leaves
             behind after cuptiFinalize)
  kinds      slices that switch CUPTI's activity kinds, attached throughout
             (CUDASPY_GPU_SWITCH=kinds: no re-attach)
  nohost     --no-host (no perf_event records, no Python samples)
  nopy       no Python stacks and samples (CUDASPY_PYTHON=0,
             CUDASPY_PYSAMPLE_HZ=0)
  bare       the shim's records alone (--no-host, GPU activity off, nopy)
  duty       record --duty 250: on and off phases of 250 ms in one run;
             with ALWAYS_PLAN=duty every run logs its steps (wlm reports
             every batch) and each recorded run's on phases are compared
             with their off neighbours (collect.py's pairing; untraced runs
             on the same grid are the placebo): the cost paired inside one
             process, which between processes is lost in their 10-20 %
             spread (call 2 of gpu-2026-12-06-alwayson)
  dutyoff    the same with --gpu-activity off (the shim and host records)
  residual   one slice, 3 s after CUDA's start (CUDASPY_GPU_FIRST_MS), never
             again: in the add loop's step log the slice shows as slower
             chunks; the chunks after it against those before it (CUPTI
             never attached yet) say whether a finalized CUPTI still costs
             each launch (gpuoff runs split at their middle: the placebo)
  light      cudaspy record --light
  torchprof  add only: the loop inside torch.profiler (CPU and CUDA)

Each round runs every (program, variant) once, in an order shuffled with
the round's number as seed, so that drift over the call falls on all
alike. A variant's cost in a round is its run's figure over the same
round's untraced run of that program; the summary gives the median over
rounds and the range, and the components as differences of those ratios:
shim records (bare), host records (default - nohost), Python (default -
nopy), GPU activity (default - gpuoff; fixed1s - gpuoff before the budget),
CUPTI's trace after a slice (oneslice - gpuoff). Traced runs are analysed
after the last round (their figures: records, dropped, collector CPU,
bytes a record, GPU coverage and slices), so the analysis never runs beside
a timed run.

Writes OUT/runs.jsonl (every run) and OUT/summary.json.
Usage: python3 alwayson.py BUILD OUT RUNS   (env PYTHON, CS_PIN: taskset
CPUs for every run, ALWAYS_PLAN breakdown|accept|focus|duty,
ALWAYS_ROUNDS (3), ALWAYS_CORE_ROUNDS: rounds after
ALWAYS_ROUNDS up to this many run untraced and default alone,
ALWAYS_BUDGET_S: no round starts that would end past it)
       python3 alwayson.py child add N plain|profiler [STAMPS]
"""
import json
import os
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from collect import phase_sums, sum_ratios
from steps import run_text

HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.join(HERE, "accuracy")
TRUTH_TAG = "cudaspy-truth: "
DUTY_NS = 250_000_000  # the duty plan's phases (record --duty 250)

NOPY = {"CUDASPY_PYTHON": "0", "CUDASPY_PYSAMPLE_HZ": "0"}
VARIANTS = {  # name: (record arguments or None = untraced, environment)
    "untraced": (None, {}),
    "default": ([], {}),
    "fixed1s": ([], {"CUDASPY_GPU_SAMPLE": "100/1000"}),
    "gpuoff": (["--gpu-activity", "off"], {}),
    "oneslice": ([], {"CUDASPY_GPU_SAMPLE": "100/3600000"}),
    "nohost": (["--no-host"], {}),
    "nopy": ([], NOPY),
    "bare": (["--no-host", "--gpu-activity", "off"], NOPY),
    "kinds": ([], {"CUDASPY_GPU_SWITCH": "kinds"}),
    "duty": (["--duty", "250"], {}),
    "dutyoff": (["--duty", "250", "--gpu-activity", "off"], {}),
    "residual": ([], {"CUDASPY_GPU_SAMPLE": "100/3600000", "CUDASPY_GPU_FIRST_MS": "3000"}),
    "light": (["--light"], {}),
    "torchprof": (None, {}),
}
ALL = ["untraced", "default", "fixed1s", "gpuoff", "oneslice", "kinds", "nohost", "nopy", "bare"]
PLANS = {
    "breakdown": {"wlm": ALL, "add": ALL + ["torchprof"],
                  "dcgan": ["untraced", "default", "gpuoff"],
                  "matmul": ["untraced", "default", "gpuoff"]},
    "accept": {p: ["untraced", "default"] for p in ("wlm", "add", "dcgan", "matmul")},
    "focus": {p: ["untraced", "default", "gpuoff", "fixed1s"] for p in ("wlm", "add")},
    "duty": {"wlm": ["untraced", "duty", "dutyoff"],
             "add": ["untraced", "duty", "dutyoff", "residual", "gpuoff"]},
}
COMPONENTS = [  # name, minuend, subtrahend (None: untraced)
    ("all (default)", "default", None),
    ("shim records (bare)", "bare", None),
    ("host records (default - nohost)", "default", "nohost"),
    ("Python stacks and samples (default - nopy)", "default", "nopy"),
    ("GPU activity, budgeted (default - gpuoff)", "default", "gpuoff"),
    ("GPU activity, a slice every second (fixed1s - gpuoff)", "fixed1s", "gpuoff"),
    ("CUPTI after its slice (oneslice - gpuoff)", "oneslice", "gpuoff"),
    ("GPU activity, attached throughout (kinds - gpuoff)", "kinds", "gpuoff"),
    ("light", "light", None),
    ("torch.profiler", "torchprof", None),
]


def program(name, py, profiled=False, stamps=None):
    """The command of program @name; @stamps: it writes each step's end
    there (a report every batch for wlm), for the duty plan's pairing."""
    ext = [py, os.path.join(ACC, "extrun.py"), "--case", "cost_" + name, "--planted", "none"]
    if stamps:
        ext += ["--stamps", stamps]
    if name == "wlm":
        return ext + ["--corpus", "1400000,2000,2000,10000" if stamps else "420000,2000,2000,10000",
                      "word_language_model", "--",
                      "--accel", "--data", "corpus", "--epochs", "1", "--log-interval",
                      "1" if stamps else "50", "--save", "model.pt"]
    if name == "dcgan":
        return ext + ["--fakedata", "1000:10240", "dcgan", "--", "--dataset", "fake", "--accel",
                      "--workers", "4", "--batchSize", "128", "--niter", "1", "--manualSeed", "1"]
    if name == "matmul":
        return [py, os.path.join(ACC, "planted.py"), "matmul"]
    if name == "add":
        return [py, os.path.abspath(__file__), "child", "add", "1000000" if stamps else "300000",
                "profiler" if profiled else "plain"] + ([stamps] if stamps else [])
    raise ValueError(name)


def child_add(n, mode="plain", stamps=None):
    """The a.add_ loop: n launches after a warm-up, one sync at the end;
    @stamps: the host's time every 1000 launches goes there (a step log)."""
    import torch
    a = torch.ones(16, device="cuda")
    t_first = time.perf_counter_ns()
    for _ in range(2000):
        a.add_(1.0)
    torch.cuda.synchronize()
    prof = None
    if mode == "profiler":
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    ends = []
    t0 = time.perf_counter_ns()
    for i in range(int(n)):
        a.add_(1.0)
        if stamps and i % 1000 == 999:
            ends.append(time.monotonic_ns())
    torch.cuda.synchronize()
    t1 = time.perf_counter_ns()
    if stamps:
        with open(stamps, "w") as f:
            f.writelines(f"{t}\n" for t in ends)
    if prof is not None:
        prof.__exit__(None, None, None)
    print(TRUTH_TAG + json.dumps({"case": "cost_add", "planted": "none", "truth_ns": 0,
                                  "loop_ns": t1 - t0, "steps": int(n),
                                  "setup_ns": t0 - t_first, "gpu_ns": 0}), flush=True)


class Bench:
    def __init__(self, build, out, runs):
        self.b, self.out, self.runs = build, out, runs
        self.py = os.environ.get("PYTHON", "python3")
        os.makedirs(out, exist_ok=True)
        os.makedirs(runs, exist_ok=True)
        self.log = open(os.path.join(out, "runs.jsonl"), "a")
        self.rows = []
        self.n = 0

    def run(self, rnd, prog, var, stamped=False):
        args, env = VARIANTS[var]
        self.n += 1
        stamps = os.path.join(self.runs, f"{prog}-{var}-{rnd}-{self.n}.steps") if stamped else None
        cmd = program(prog, self.py, profiled=(var == "torchprof"), stamps=stamps)
        path = None
        if args is not None:
            path = os.path.join(self.runs, f"{prog}-{var}-{rnd}-{self.n}.lmdb")
            cmd = [os.path.join(self.b, "cudaspy"), "record", "-q", "-o", path] + args + \
                ["--"] + cmd
        if os.environ.get("CS_PIN"):
            cmd = ["taskset", "-c", os.environ["CS_PIN"]] + cmd
        e = dict(os.environ, PYTHONUNBUFFERED="1", CUDASPY_QUIET="1", **env)
        t0 = time.time()
        rc, out, err = run_text(cmd, e, 180)
        row = {"round": rnd, "program": prog, "variant": var, "rc": rc,
               "wall_s": round(time.time() - t0, 3), "run": path, "stamps": stamps}
        truth = [ln for ln in out.splitlines() if ln.startswith(TRUTH_TAG)]
        if truth:
            t = json.loads(truth[-1][len(TRUTH_TAG):])
            row.update(loop_ns=t["loop_ns"], steps=t["steps"], setup_ns=t.get("setup_ns"),
                       step_ms=round(t["loop_ns"] / max(t["steps"], 1) / 1e6, 6))
        if rc != 0 or not truth:
            row["stderr_tail"] = err[-800:]
        self.rows.append(row)
        print(f"alwayson: r{rnd} {prog} {var}: rc={rc} step_ms={row.get('step_ms')} "
              f"wall={row['wall_s']}", file=sys.stderr, flush=True)
        return row

    def analyse(self, row):
        """The traced run's own figures, then its file goes."""
        path = row.get("run")
        if not path or not os.path.exists(path):
            return
        j = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), "--json", path],
                           capture_output=True, text=True, timeout=600)
        try:
            a = json.loads(j.stdout)
            f = a["run"]["files"][0]
            c = f.get("counts", {})
            recs = sum(v for v in c.values() if isinstance(v, int))
            size = sum(os.path.getsize(os.path.join(path, x)) if os.path.isdir(path) else 0
                       for x in (os.listdir(path) if os.path.isdir(path) else []))
            size = size or os.path.getsize(path)
            g = a.get("gpu", {})
            row.update(duty_ns=f.get("duty_ns"), t_start_ns=f.get("t_start_ns"))
            row.update(cuda_records=c.get("cuda"), host_records=a["run"].get("host_records"),
                       cuda_dropped=f.get("cuda_dropped"), shim_lost=f.get("shim_lost"),
                       host_lost=f.get("host_lost"), collector_cpu_ns=f.get("collector_cpu_ns"),
                       active_ns=f.get("active_ns"), gpucov=c.get("gpucov"),
                       gpu_records=c.get("gpu"), coverage_pct=g.get("coverage_pct"),
                       gpu_source=g.get("source"), slices=g.get("slices"),
                       switch_ns=g.get("switch_ns"), slowdown_ns=g.get("slowdown_ns"),
                       bytes=size,
                       bytes_per_record=round(size / recs, 2) if recs else None,
                       top=[f"{x['severity']} {x['cause']}" for x in a.get("chains", [])[:3]])
        except (ValueError, KeyError, OSError) as ex:
            row["analyze_error"] = f"{ex}: {j.stderr[-300:]}"
        for suffix in ("", "-lock", "-analysis"):
            try:
                os.remove(path + suffix)
            except OSError:
                pass


def duty_pairs(rows, period=DUTY_NS):
    """Each stamped run's phase ratios (collect.py): a --duty run on its own
    grid (on phases against their off neighbours), an untraced one on a
    grid of the same period from its first step (a placebo, near 0)."""
    for r in rows:
        try:
            ends = [int(x) for x in open(r["stamps"]).read().split()] if r.get("stamps") else []
        except (OSError, ValueError):
            ends = []
        if len(ends) < 10:
            continue
        if r["variant"] in ("residual", "gpuoff"):
            res = residual_pct(ends)
            if res is not None:
                r["residual_pct"] = round(res, 3)
            continue
        t0 = r.get("t_start_ns") if r.get("duty_ns") else ends[0]
        pcts = sum_ratios(phase_sums(ends, r.get("duty_ns") or period, t0))
        if pcts:
            r["duty_pct_median"] = round(statistics.median(pcts), 3)
            r["duty_phases"] = len(pcts)


def residual_pct(ends, warm=0.5e9, after=0.05e9):
    """The step log @ends split around its slice (the longest run of steps
    15 % slower than the median), or at its middle when it has none: the
    median step after it against the median before it (warm-up left out),
    less 1, in %; None when either side is short."""
    d = [b - a for a, b in zip(ends, ends[1:])]
    if len(d) < 50:
        return None
    m = statistics.median(d)
    best, run = (None, 0), 0
    for i, x in enumerate(d):
        run = run + 1 if x > 1.15 * m else 0
        if run > best[1]:
            best = (i, run)
    lo, hi = (best[0] - best[1] + 1, best[0] + 1) if best[1] >= 3 else (len(d) // 2, len(d) // 2)
    before = [x for i, x in enumerate(d[:lo]) if ends[i] - ends[0] >= warm]
    after_ = [x for i, x in enumerate(d) if i >= hi and ends[i] - ends[hi] >= after]
    if len(before) < 20 or len(after_) < 20:
        return None
    return 100 * (statistics.median(after_) / statistics.median(before) - 1)


def summarise(rows, plan):
    """Per program and variant: figures by round, cost over the round's
    untraced run; the components as differences of paired ratios."""
    res = {}
    for prog, variants in plan.items():
        by = {}
        for r in rows:
            if r["program"] == prog and r.get("rc") == 0 and "step_ms" in r:
                by.setdefault(r["variant"], {})[r["round"]] = r["step_ms"]
        base = by.get("untraced", {})
        ratio = {v: {k: x / base[k] for k, x in d.items() if k in base}
                 for v, d in by.items() if v != "untraced"}
        var = {}
        for v in variants:
            d = by.get(v, {})
            rr = sorted(ratio.get(v, {}).values())
            var[v] = {"step_ms": [d[k] for k in sorted(d)],
                      "step_ms_median": statistics.median(d.values()) if d else None}
            if rr:
                var[v].update(cost_pct_median=round((statistics.median(rr) - 1) * 100, 3),
                              cost_pct_range=[round((rr[0] - 1) * 100, 3),
                                              round((rr[-1] - 1) * 100, 3)],
                              rounds=len(rr))
            dp = [r["duty_pct_median"] for r in rows if r["program"] == prog and
                  r["variant"] == v and "duty_pct_median" in r]
            if dp:
                var[v].update(duty_pct_median=round(statistics.median(dp), 3),
                              duty_pct_runs=dp)
            rp = [r["residual_pct"] for r in rows if r["program"] == prog and
                  r["variant"] == v and "residual_pct" in r]
            if rp:
                var[v].update(residual_pct_median=round(statistics.median(rp), 3),
                              residual_pct_runs=rp)
            tr = [r for r in rows if r["program"] == prog and r["variant"] == v and
                  r.get("collector_cpu_ns") is not None]
            for key in ("cuda_records", "cuda_dropped", "collector_cpu_ns", "gpucov",
                        "coverage_pct", "slices", "switch_ns", "slowdown_ns",
                        "bytes_per_record"):
                vals = [r[key] for r in tr if r.get(key) is not None]
                if vals:
                    var[v][key + "_median"] = statistics.median(vals)
            if tr:
                var[v]["dropped_total"] = sum(r.get("cuda_dropped") or 0 for r in tr)
                # sampling's cost paired inside each run (gpu.switch_ns + slowdown_ns)
                var[v]["sampling_cost_pct_of_active"] = round(statistics.median(
                    ((r.get("switch_ns") or 0) + (r.get("slowdown_ns") or 0)) / r["active_ns"] * 100
                    for r in tr if r.get("active_ns")), 3)
                var[v]["collector_cpu_pct_of_active"] = round(statistics.median(
                    r["collector_cpu_ns"] / r["active_ns"] * 100
                    for r in tr if r.get("active_ns")), 3)
        comps = []
        for name, a, b in COMPONENTS:
            ra, rb = ratio.get(a, {}), (ratio.get(b, {}) if b else None)
            if not ra or (b and not rb):
                continue
            keys = [k for k in ra if rb is None or k in rb]
            diffs = sorted((ra[k] - (rb[k] if rb is not None else 1.0)) * 100 for k in keys)
            if diffs:
                comps.append({"component": name, "pct_median": round(statistics.median(diffs), 3),
                              "pct_range": [round(diffs[0], 3), round(diffs[-1], 3)],
                              "rounds": len(diffs)})
        res[prog] = {"variants": var, "components": comps}
    return res


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "child" and sys.argv[2] == "add":
        child_add(*sys.argv[3:])
        return 0
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    b = Bench(*sys.argv[1:4])
    plan_name = os.environ.get("ALWAYS_PLAN", "breakdown")
    plan = PLANS[plan_name]
    rounds = int(os.environ.get("ALWAYS_ROUNDS", "3"))
    core = max(rounds, int(os.environ.get("ALWAYS_CORE_ROUNDS", "0")))
    budget = float(os.environ.get("ALWAYS_BUDGET_S", "420"))
    t_start = time.time()
    done = 0
    for rnd in range(core):
        pairs = [(p, v) for p, vs in plan.items() for v in vs
                 if rnd < rounds or v in ("untraced", "default")]
        per_run = (time.time() - t_start) / max(len(b.rows), 1)
        if b.rows and time.time() - t_start + per_run * len(pairs) > budget:
            break
        random.Random(rnd).shuffle(pairs)
        for p, v in pairs:
            b.log.write(json.dumps(b.run(rnd, p, v, stamped=(plan_name == "duty"))) + "\n")
            b.log.flush()
        done += 1
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(b.analyse, b.rows))
    duty_pairs(b.rows)
    with open(os.path.join(b.out, "runs.jsonl"), "w") as f:
        for r in b.rows:
            f.write(json.dumps(r) + "\n")
    summary = {"plan": plan_name, "rounds": done, "seconds": round(time.time() - t_start, 1),
               "programs": summarise(b.rows, plan)}
    with open(os.path.join(b.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for prog, r in summary["programs"].items():
        for c in r["components"]:
            print(f"alwayson: {prog}: {c['component']}: {c['pct_median']:+.2f} % "
                  f"({c['pct_range'][0]:+.2f} .. {c['pct_range'][1]:+.2f}, {c['rounds']} rounds)",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
