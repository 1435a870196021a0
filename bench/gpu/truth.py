"""truth.py: issue 22's GPU proof (gpu-check.sh truth). In one call:

- planted workloads of workloads.py, untraced and traced (GPU activity
  sampled, the default), each traced run analysed: the two misses the host
  lower bound had (itemstep: .item() then a tiny kernel, then host work;
  seed with num_workers=0: data loading in the main thread) must come out
  HIGH, the controls (matmul; itemstep without .item()) without HIGH;
- calibration: the duty workload (a kernel busy 6 ms, then 4 ms of host
  work, its own duty cycle timed by CUDA events) recorded sampled and full,
  each analysed over the loop the program timed (--since/--until): each
  must be within 5 points of its own run's duty cycle, and the two within
  5 points of each other;
- cost: the launch-bound loop (workloads.py launch, and the nvcc
  empty-kernel loop), untraced, recorded with GPU activity off, sampled and
  full, and under torch.profiler, interleaved round by round;
- slices: sampled mode's cost measured inside each process (slices()).

Writes OUT/summary.json (workloads[], calibration[], cost), OUT/runs.jsonl
(every run: command, exit code, its figures) and OUT/reports.txt (the text
reports of the planted runs).

Usage: python3 truth.py BUILD OUT RUNS [ROUNDS=3]   (env PYTHON, CS_PIN;
TRUTH_PARTS: which of planted, calibration, cost, slices, run in the order
given; default the first three; TRUTH_UNTRACED=0: planted workloads traced
only; slices: TRUTH_SAMPLES, TRUTH_CHUNK_N)
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
W = os.path.join(HERE, "workloads.py")


class Truth:
    def __init__(self, build, out, runs):
        self.b, self.out, self.runs = build, out, runs
        self.py = os.environ.get("PYTHON", "python3")
        self.pin = os.environ.get("CS_PIN", "")
        self.n = 0
        os.makedirs(out, exist_ok=True)
        os.makedirs(runs, exist_ok=True)
        self.log = open(os.path.join(out, "runs.jsonl"), "a")
        self.reports = open(os.path.join(out, "reports.txt"), "a")

    def run(self, name, cmd, gpu=None, env=None, analyze=True):
        """One run; gpu None = untraced, else recorded with that GPU mode."""
        self.n += 1
        path = os.path.join(self.runs, f"{name}-{self.n}.lmdb")
        full = list(cmd)
        if gpu is not None:
            full = [os.path.join(self.b, "cudaspy"), "record", "-q", "-o", path,
                    "--gpu-activity", gpu, "--"] + full
        if self.pin:
            full = ["taskset", "-c", self.pin] + full
        e = dict(os.environ, PYTHONUNBUFFERED="1", CUDASPY_QUIET="1", **(env or {}))
        t0 = time.time()
        p = subprocess.run(full, env=e, capture_output=True, text=True, timeout=600)
        row = {"name": name, "gpu": gpu, "rc": p.returncode, "wall_s": round(time.time() - t0, 3),
               "cmd": " ".join(cmd), "stderr_tail": p.stderr[-600:]}
        for line in p.stdout.splitlines():
            k, _, v = line.partition(":")
            if k in ("elapsed", "us_per_launch", "duty_pct", "result", "reps_us", "loop_mono_ns",
                     "chunk_p50", "chunk_p90", "slow_pct"):
                row[k] = v.strip()
        if gpu is not None and analyze and p.returncode == 0:
            j = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), "--json", path],
                               capture_output=True, text=True, timeout=300)
            try:
                a = json.loads(j.stdout)
                g = a.get("gpu", {})
                chains = a.get("chains", [])
                row.update(top_cause=chains[0]["cause"] if chains else None,
                           top_severity=chains[0]["severity"] if chains else None,
                           findings=[f"{c['severity']} {c['cause']}" for c in chains],
                           gpu_source=g.get("source"), busy_pct=g.get("busy_pct"),
                           coverage_pct=g.get("coverage_pct"), notes=g.get("notes"),
                           idle_by_host_state=g.get("idle_by_host_state"),
                           kernels=sum(d.get("kernels", 0) for d in g.get("devices", [])),
                           cuda_dropped=a["run"]["files"][0].get("cuda_dropped"),
                           active_ns=a["run"].get("active_ns"))
            except (ValueError, KeyError, IndexError) as ex:
                row["analyze_error"] = f"{ex}: {j.stderr[-300:]}"
            if "loop_mono_ns" in row and "analyze_error" not in row:
                self.loop_window(row, path, a["run"]["files"][0]["t_start_ns"])
            if analyze == "report":
                t = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), path],
                                   capture_output=True, text=True, timeout=300)
                self.reports.write(f"==== {name} ({' '.join(cmd)}), GPU activity {gpu}\n")
                self.reports.write(t.stdout)
                self.reports.flush()
        if gpu is not None and os.path.exists(path):
            os.remove(path)
        self.log.write(json.dumps(row) + "\n")
        self.log.flush()
        print(f"truth: {name} gpu={gpu} rc={row['rc']} {row.get('elapsed', '')} "
              f"{row.get('us_per_launch', '')} top={row.get('top_cause')} "
              f"{row.get('top_severity')} busy={row.get('busy_pct')}", file=sys.stderr)
        return row

    def loop_window(self, row, path, t0):
        """The GPU's busy share inside the loop the program timed itself
        (loop_mono_ns), as --since/--until of the analyzer."""
        m0, m1 = (int(x) for x in row["loop_mono_ns"].split())
        j = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), "--json", "--since",
                            "%.6f" % ((m0 - t0) / 1e9), "--until", "%.6f" % ((m1 - t0) / 1e9), path],
                           capture_output=True, text=True, timeout=300)
        try:
            g = json.loads(j.stdout).get("gpu", {})
            row.update(loop_busy_pct=g.get("busy_pct"), loop_coverage_pct=g.get("coverage_pct"))
        except ValueError as ex:
            row["loop_analyze_error"] = f"{ex}: {j.stderr[-300:]}"


def planted(t):
    py, rows = t.py, []
    cases = [
        ("matmul", [py, W, "matmul", "big", "2500"], None),
        ("itemstep", [py, W, "itemstep", "item"], {"sync_per_iteration", "host_bound"}),
        ("seed_w0", [py, W, "seed", "loader", "0"], {"host_bound"}),
        ("itemstep_noitem", [py, W, "itemstep", "noitem"], None),
    ]
    untraced = os.environ.get("TRUTH_UNTRACED", "1") != "0"
    for name, cmd, want in cases:
        env = {"N": "400000", "B": "50000"} if name == "seed_w0" else None
        u = t.run(name, cmd, env=env) if untraced else {"rc": 0}
        r = t.run(name, cmd, gpu="sampled", env=env, analyze="report")
        high = any(f.startswith("HIGH") for f in r.get("findings", []))
        if want:
            ok = r.get("top_cause") in want and r.get("top_severity") == "HIGH"
        else:
            ok = r.get("rc") == 0 and not high
        rows.append({"workload": name, "planted": "|".join(sorted(want)) if want else "none",
                     "top_cause": r.get("top_cause"), "top_severity": r.get("top_severity"),
                     "verdict": "pass" if ok and u.get("rc") == 0 else "fail",
                     "gpu_source": r.get("gpu_source"), "busy_pct": r.get("busy_pct"),
                     "findings": r.get("findings"), "elapsed_untraced_s": u.get("elapsed"),
                     "coverage_pct": r.get("coverage_pct"), "notes": r.get("notes"),
                     "elapsed_traced_s": r.get("elapsed"),
                     "outputs_identical": u.get("result") == r.get("result") if untraced else None})
    return rows


def calibration(t):
    """Busy share inside the duty loop (the analyzer's --since/--until on
    the loop's own CLOCK_MONOTONIC bounds), sampled and full, against the
    duty cycle the program timed with CUDA events in the same run."""
    cmd = [t.py, W, "duty", "6", "4", "500"]
    s = t.run("duty", cmd, gpu="sampled")
    e = t.run("duty", cmd, gpu="full")

    def off(r):  # measured busy in the loop minus the run's own duty cycle
        if r.get("loop_busy_pct") is None or "duty_pct" not in r:
            return None
        return round(r["loop_busy_pct"] - float(r["duty_pct"]), 3)
    so, eo = off(s), off(e)
    sp, ep = s.get("loop_busy_pct"), e.get("loop_busy_pct")
    ok = so is not None and eo is not None and abs(so) <= 5 and abs(eo) <= 5 and abs(sp - ep) <= 5
    return [{"workload": "duty 6 ms kernel / 4 ms host", "sampled_busy_pct": sp,
             "exact_busy_pct": ep, "sampled_run_duty_pct": s.get("duty_pct"),
             "exact_run_duty_pct": e.get("duty_pct"), "sampled_minus_own": so,
             "exact_minus_own": eo, "sampled_source": s.get("gpu_source"),
             "exact_source": e.get("gpu_source"),
             "sampled_loop_coverage_pct": s.get("loop_coverage_pct"),
             "whole_window_busy_pct": {"sampled": s.get("busy_pct"), "exact": e.get("busy_pct")},
             "sampled_notes": s.get("notes"), "verdict": "pass" if ok else "fail"}]


def cost(t, rounds):
    """Interleaved rounds; per config the median over rounds of each run's
    median rep (us per launch)."""
    loops = {
        "torch_add": ([t.py, W, "launch", "plain", "100000", "3"],
                      [t.py, W, "launch", "profiler", "100000", "3"]),
    }
    ll = os.path.join(t.runs, "launch_loop")
    if subprocess.run(["nvcc", "-O2", "-o", ll, os.path.join(HERE, "launch_loop.cu")],
                      capture_output=True).returncode == 0:
        loops["nvcc_empty_static"] = ([ll, "100000", "3"], None)
    res = {}
    for name, (cmd, prof) in loops.items():
        conf = [("untraced", cmd, None), ("record_off", cmd, "off"),
                ("record_sampled", cmd, "sampled"), ("record_full", cmd, "full")]
        if prof:
            conf.append(("torch_profiler", prof, None))
        vals = {c[0]: [] for c in conf}
        for r in range(rounds):
            order = conf if r % 2 == 0 else conf[::-1]
            for label, c, g in order:
                row = t.run(f"cost_{name}_{label}", c, gpu=g, analyze=False)
                if row.get("rc") == 0 and "us_per_launch" in row:
                    vals[label].append(float(row["us_per_launch"]))
        med = {k: (statistics.median(v) if v else None) for k, v in vals.items()}
        added = {k: (round(v - med["untraced"], 4) if v is not None and med["untraced"] else None)
                 for k, v in med.items()}
        over_off = {k: (round(med[k] - med["record_off"], 4) if med[k] and med["record_off"] else None)
                    for k in ("record_sampled", "record_full")}
        res[name] = {"us_per_launch_median": med, "runs": vals, "added_vs_untraced_us": added,
                     "added_vs_record_off_us": over_off}
        if prof and added.get("torch_profiler") and added.get("record_full") is not None:
            res[name]["full_over_profiler_ratio"] = round(added["record_full"] / added["torch_profiler"], 4)
    return res


def slices(t, rounds):
    """Sampled GPU activity's cost inside each process (w_chunks): a
    2 M-launch loop timed in chunks of 1000, untraced, recorded with GPU
    activity off, sampled at the default 100/1000 ms and at each
    TRUTH_SAMPLES setting (SLICE/PERIOD, or kinds: CUDASPY_GPU_SWITCH=kinds),
    interleaved round by round. Per run, the loop's
    mean us a launch over its median chunk (the rate between slices) is the
    excess; sampled's excess less record_off's is what the slices cost,
    free of the drift between processes. Medians over rounds."""
    cmd = [t.py, W, "chunks", os.environ.get("TRUTH_CHUNK_N", "2000000"), "1000"]
    conf = [("untraced", None, None), ("record_off", "off", None),
            ("sampled_100_1000", "sampled", None)]
    for smp in os.environ.get("TRUTH_SAMPLES", "50/2000").split():  # "kinds": that switch
        env = {"CUDASPY_GPU_SWITCH": "kinds"} if smp == "kinds" else {"CUDASPY_GPU_SAMPLE": smp}
        conf.append(("sampled_" + smp.replace("/", "_"), "sampled", env))
    vals = {c[0]: [] for c in conf}
    for r in range(rounds):
        for label, g, env in (conf if r % 2 == 0 else conf[::-1]):
            row = t.run(f"slices_{label}", cmd, gpu=g, env=env, analyze=False)
            if row.get("rc") == 0 and "chunk_p50" in row:
                mean, p50 = float(row["us_per_launch"]), float(row["chunk_p50"])
                vals[label].append({"mean": mean, "p50": p50, "excess": round(mean - p50, 4),
                                    "slow_pct": float(row["slow_pct"])})
    med = lambda xs: statistics.median(xs) if xs else None
    res = {"runs": vals}
    for label in vals:
        res[label] = {k: med([v[k] for v in vals[label]]) for k in ("mean", "p50", "excess", "slow_pct")}
    off = res["record_off"]["excess"]
    for label in vals:
        if label.startswith("sampled") and res[label]["excess"] is not None and off is not None:
            res[label]["cost_over_off_us"] = round(res[label]["excess"] - off, 4)
            res[label]["cost_pairs_us"] = [round(a["excess"] - b["excess"], 4)
                                           for a, b in zip(vals[label], vals["record_off"])]
    return res


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    t = Truth(sys.argv[1], sys.argv[2], sys.argv[3])
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    parts = os.environ.get("TRUTH_PARTS", "planted calibration cost").split()
    summary = {"date": time.strftime("%Y-%m-%d"), "host_cpus": os.cpu_count(), "parts": parts}
    steps = {"planted": ("workloads", lambda: planted(t)),
             "calibration": ("calibration", lambda: calibration(t)),
             "cost": ("cost", lambda: cost(t, rounds)),
             "slices": ("slices", lambda: slices(t, rounds))}
    for part in parts:  # in the order given
        key, fn = steps[part]
        summary[key] = fn()
        with open(os.path.join(t.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)  # after each part: a cut call keeps the rest
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
