"""gate_real.py: issue 36's GPU proof of the gate (gpu-check.sh gate).

For each program of PROGRAMS, in one device call: four identical recordings
(b1..b4) and one with a planted regression (x), interleaved b1 b2 x b3 b4,
each saved as a summary (`cudaspy-analyze summary --save`). Then:

- leave one out: `gate --baseline` the other three, then b_i, for each of
  the four: an identical rerun, so it must exit 0 (a false alarm else);
- `gate --baseline b1 b2 b3 b4 x`: the planted regression must exit 1;
- for the record only: b_i against b_(i-1) alone (what one baseline says).

The programs: three real training programs nobody here wrote (bench/gpu/
accuracy/ext, run by extrun.py as the accuracy proof runs them) and the
.item()-free loop that failed identical reruns on the H200 (workloads.py
itemstep noitem: the host enqueues ahead of the GPU).

Writes OUT/summary.json ({"programs": [...], "false_alarms", "identical",
"caught", "planted"}) and OUT/runs.jsonl (every recording and gate).

Usage: python3 gate_real.py BUILD OUT RUNS   (env PYTHON, CS_PIN,
       GATE_BUDGET_S (480): programs not started by then are skipped,
       GATE_PROGRAMS: a comma-separated subset)
"""
import json
import os
import subprocess
import sys
import time

from steps import Steps

HERE = os.path.dirname(os.path.abspath(__file__))
EXTRUN = os.path.join(HERE, "accuracy", "extrun.py")
W = os.path.join(HERE, "workloads.py")

WLM = ["--corpus", "491584,1290,1290,10000", "--item-sync", "off", "word_language_model", "--",
       "--accel", "--data", "corpus", "--emsize", "1500", "--nhid", "1500", "--dropout", "0.65",
       "--batch_size", "64", "--bptt", "64", "--epochs", "1", "--log-interval", "10", "--save",
       "model.pt"]
DCGAN = ["--fakedata", "1000:9664", "dcgan", "--", "--dataset", "fake", "--accel",
         "--batchSize", "128", "--niter", "1", "--manualSeed", "1"]
IMAGENET = ["--fakedata", "1281167:2624,50000:1", "imagenet", "--", "--dummy", "-a", "resnet18",
            "-b", "64", "--epochs", "1", "-p", "1"]


def ext(name, args):
    return [EXTRUN, "--case", "gate_" + name, "--planted", "none"] + args


# name, base command, regression command (after the Python interpreter),
# record options, what the regression plants
PROGRAMS = [
    ("itemstep", [W, "itemstep", "noitem"], [W, "itemstep", "item"], [],
     "a .item() each step (a sync the loop did not have)"),
    ("word_language_model", ext("wlm", WLM), ext("wlm", ["--host-ms", "8"] + WLM),
     ["--gpu-activity", "full"], "8 ms of host wait a batch (a blocking metrics write)"),
    ("dcgan", ext("dcgan", DCGAN + ["--workers", "8"]), ext("dcgan", DCGAN + ["--workers", "1"]),
     [], "1 DataLoader worker instead of 8"),
    ("imagenet_resnet18", ext("imagenet", IMAGENET + ["-j", "4"]),
     ext("imagenet", IMAGENET + ["-j", "1"]), [], "1 DataLoader worker instead of 4"),
]


class Gates(Steps):
    """Steps' set-up (build, out, runs, PYTHON, CS_PIN) and its note()."""
    tag = "gate"

    def __init__(self, build, out, runs):
        super().__init__(build, out, runs)
        self.an = os.path.join(build, "cudaspy-analyze")

    def record(self, prog, name, cmd, opts):
        """Record one run and save its summary. @return the summary's path or None."""
        path = os.path.join(self.runs, f"{prog}-{name}.lmdb")
        summ = os.path.join(self.runs, f"{prog}-{name}.json")
        full = [os.path.join(self.b, "cudaspy"), "record", "-q", "-o", path] + opts + \
            ["--", self.py] + cmd
        if self.pin:
            full = ["taskset", "-c", self.pin] + full
        e = dict(os.environ, PYTHONUNBUFFERED="1", CUDASPY_QUIET="1")
        t0 = time.time()
        try:
            p = subprocess.run(full, env=e, capture_output=True, text=True, timeout=240)
            rc, err = p.returncode, p.stderr[-300:]
        except subprocess.TimeoutExpired:
            rc, err = -1, "timeout"
        row = {"kind": "run", "program": prog, "name": name, "rc": rc,
               "wall_s": round(time.time() - t0, 3), "stderr_tail": err}
        if rc == 0:
            s = subprocess.run([self.an, "summary", "--save", summ, path], capture_output=True,
                               text=True, timeout=300)
            row["summary_rc"] = s.returncode
            if s.returncode == 0:
                j = json.load(open(summ))
                st, gs = j.get("steps") or {}, j.get("gpu_steps") or {}
                row.update(steps=st.get("count"), step_p50_ns=st.get("p50_ns"),
                           gpu_steps=gs.get("count"), gpu_step_p50_ns=gs.get("p50_ns"),
                           gpu_host_p50_ns=gs.get("host_p50_ns"), how=st.get("how"))
        self.note(row)
        for f in (path, path + "-lock"):  # the summaries are what the gates read
            try:
                os.unlink(f)
            except OSError:
                pass
        return summ if row.get("summary_rc") == 0 else None

    def gate(self, prog, kind, bases, cand, want):
        p = subprocess.run([self.an, "gate", "--json", "--baseline"] + bases + [cand],
                           capture_output=True, text=True, timeout=120)
        row = {"kind": "gate", "program": prog, "what": kind, "rc": p.returncode, "want": want,
               "baselines": len(bases), "candidate": os.path.basename(cand),
               "reason": (p.stderr.splitlines() or [""])[0][:300]}
        try:
            j = json.loads(p.stdout)
            row["criteria"] = [{k: c.get(k) for k in ("criterion", "name", "verdict", "ratio",
                                                       "lower_bound", "limit", "spread")}
                               for c in j.get("criteria", [])
                               if c.get("criterion") in ("step_p50", "time_per_launch")
                               or c.get("failed")]
        except ValueError:
            row["stdout_head"] = p.stdout[:200]
        self.note(row)
        return row

    def program(self, prog, base, regr, opts, planted):
        order = [("b1", base), ("b2", base), ("x", regr), ("b3", base), ("b4", base)]
        s = {name: self.record(prog, name, cmd, opts) for name, cmd in order}
        res = {"program": prog, "planted": planted, "record_args": opts,
               "recorded": sorted(k for k, v in s.items() if v)}
        bs = [s[k] for k in ("b1", "b2", "b3", "b4") if s[k]]
        if len(bs) < 4 or not s["x"]:
            res["error"] = "a recording failed"
            return res
        res["identical"] = [self.gate(prog, "identical", [b for b in bs if b != c], c, 0)["rc"]
                            for c in bs]
        res["single"] = [self.gate(prog, "single", [bs[i - 1]], bs[i], 0)["rc"]
                         for i in range(1, 4)]
        res["regression"] = self.gate(prog, "regression", bs, s["x"], 1)["rc"]
        return res


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    g = Gates(*sys.argv[1:])
    budget = float(os.environ.get("GATE_BUDGET_S", "480"))
    only = [x for x in os.environ.get("GATE_PROGRAMS", "").split(",") if x]
    t0, out = time.time(), []
    for prog, base, regr, opts, planted in PROGRAMS:
        if only and prog not in only:
            continue
        if time.time() - t0 > budget:
            out.append({"program": prog, "error": "skipped: over GATE_BUDGET_S"})
            continue
        out.append(g.program(prog, base, regr, opts, planted))
    done = [r for r in out if "identical" in r]
    summary = {"programs": out,
               "identical": sum(len(r["identical"]) for r in done),
               "false_alarms": sum(rc != 0 for r in done for rc in r["identical"]),
               "planted": len(done), "caught": sum(r["regression"] == 1 for r in done),
               "single_baseline_false_alarms": sum(rc != 0 for r in done for rc in r["single"]),
               "seconds": round(time.time() - t0, 1)}
    with open(os.path.join(g.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k != "programs"}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
