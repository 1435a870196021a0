"""steps.py: issue 24's GPU proof (gpu-check.sh steps). In one call, on
PyTorch workloads of workloads.py recorded with `cudaspy record`:

- the gate on three pairs, each judged by `cudaspy-analyze gate --json`:
  itemstep noitem vs item (a .item() sync added each step: must fail,
  naming step time and the new sync), seed loader 4 workers vs 1 (a slower
  data pipeline: must fail), and noitem vs a rerun of itself (must pass);
- steps: each run's steps (source, count) against the steps the program
  ran; itemstep nvtx (torch.cuda.nvtx ranges "train_step") must take its
  steps from the range.

- issue 23's Python lines, from the same runs: itemstep item's findings
  and `--by pyline` must name the `.item()` line of workloads.py, seed
  loader 4's the line of its DataLoader loop; the interpreter's version is
  kept (the H200's 3.12 is the layout not checked on the CPU machine).

Writes OUT/summary.json (pairs[], steps[], pylines[]) and OUT/runs.jsonl
(every run and gate: command, exit code, figures).

Usage: python3 steps.py BUILD OUT RUNS   (env PYTHON, CS_PIN)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
W = os.path.join(HERE, "workloads.py")
SEED_ENV = {"N": "2000000", "B": "32768"}  # 62 batches: steps enough for the gate


def run_text(cmd, env, timeout):
    """Run @cmd; (exit code, stdout, stderr) as text, 124 and what came
    out when it ran past @timeout seconds."""
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as ex:
        text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return 124, text(ex.stdout), text(ex.stderr) + "\ntimeout"


class Steps:
    tag = "steps"  # what note() prints before each row on stderr

    def __init__(self, build, out, runs):
        self.b, self.out, self.runs = build, out, runs
        self.py = os.environ.get("PYTHON", "python3")
        self.pin = os.environ.get("CS_PIN", "")
        os.makedirs(out, exist_ok=True)
        os.makedirs(runs, exist_ok=True)
        self.log = open(os.path.join(out, "runs.jsonl"), "a")

    def note(self, row):
        self.log.write(json.dumps(row) + "\n")
        self.log.flush()
        print(f"{self.tag}: " + json.dumps(row)[:300], file=sys.stderr)

    def record(self, name, args, env=None):
        """Record one run; its row with the analyzer's steps."""
        path = os.path.join(self.runs, name + ".lmdb")
        cmd = [os.path.join(self.b, "cudaspy"), "record", "-q", "-o", path, "--",
               self.py, W] + args
        if self.pin:
            cmd = ["taskset", "-c", self.pin] + cmd
        e = dict(os.environ, PYTHONUNBUFFERED="1", CUDASPY_QUIET="1", **(env or {}))
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=600)
        row = {"kind": "run", "name": name, "path": path, "rc": p.returncode,
               "cmd": " ".join(args), "stderr_tail": p.stderr[-400:]}
        for line in p.stdout.splitlines():
            k, _, v = line.partition(":")
            if k == "elapsed":
                row["elapsed"] = float(v)
        if p.returncode == 0:
            j = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), "--json", path],
                               capture_output=True, text=True, timeout=300)
            try:
                s = json.loads(j.stdout)["steps"]
                row.update({k: s.get(k) for k in ("source", "how", "count", "p50_ns", "p99_ns")})
            except (ValueError, KeyError) as ex:
                row["analyze_error"] = f"{ex}: {j.stderr[-300:]}"
        self.note(row)
        return row

    def pylines(self, name, run, want_line, what):
        """Does one of the run's first three findings name workloads.py line
        @want_line as its first site (or that site's next enqueue), and
        --by pyline have a row for it? (issue 23)"""
        row = {"kind": "pylines", "name": name, "want": f"workloads.py:{want_line} ({what})"}
        p = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), "--json", "--by", "pyline",
                            run["path"]], capture_output=True, text=True, timeout=600)
        try:
            j = json.loads(p.stdout)
        except ValueError:
            row.update(ok=False, error=p.stderr[-300:])
            self.note(row)
            return row
        here = lambda f: (f or {}).get("file", "").endswith("/workloads.py")
        fnd = [(f.get("cause"), site) for f in j.get("chains", [])
               for site in f.get("python_sites", [])[:1]]
        rows = j.get("pylines", {}).get("rows", [])
        hit = lambda f: here(f) and f.get("line") == want_line
        row.update(findings=[{"cause": c, "text": s.get("text")} for c, s in fnd[:4]],
                   rows=[r.get("text") for r in rows[:5]],
                   ok=any(hit(s) or hit(s.get("next_enqueue")) for _, s in fnd[:3]) and
                   any(hit(r) for r in rows))
        self.note(row)
        return row

    def gate(self, name, base, cand, want_fail):
        """Gate cand against base; the verdict and its first line."""
        p = subprocess.run([os.path.join(self.b, "cudaspy-analyze"), "gate", "--json",
                            "--baseline", base["path"], cand["path"]],
                           capture_output=True, text=True, timeout=600)
        row = {"kind": "gate", "name": name, "rc": p.returncode,
               "reason": (p.stderr.splitlines() or [""])[0], "want_fail": want_fail,
               "ok": p.returncode == (1 if want_fail else 0)}
        try:
            row["criteria"] = [{k: c.get(k) for k in ("criterion", "name", "verdict", "note")}
                               for c in json.loads(p.stdout).get("criteria", [])
                               if c.get("verdict") != "ok"]
        except ValueError:
            row["gate_error"] = p.stdout[-300:]
        self.note(row)
        return row


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    t = Steps(*sys.argv[1:4])
    runs = {
        "noitem": t.record("noitem", ["itemstep", "noitem"]),
        "item": t.record("item", ["itemstep", "item"]),
        "noitem2": t.record("noitem2", ["itemstep", "noitem"]),
        "nvtx": t.record("nvtx", ["itemstep", "nvtx"]),
        "seed4": t.record("seed4", ["seed", "loader", "4"], SEED_ENV),
        "seed1": t.record("seed1", ["seed", "loader", "1"], SEED_ENV),
    }
    pairs = [t.gate("sync_added", runs["noitem"], runs["item"], True),
             t.gate("fewer_workers", runs["seed4"], runs["seed1"], True),
             t.gate("rerun", runs["noitem"], runs["noitem2"], False)]
    expect = {"noitem": 800, "item": 800, "noitem2": 800, "nvtx": 800, "seed4": 62, "seed1": 62}
    steps = []
    for name, r in runs.items():
        n, got = expect[name], r.get("count") or 0
        src_ok = r.get("source") == ("nvtx" if name == "nvtx" else "inferred")
        steps.append({"name": name, "want": n, "count": got, "source": r.get("source"),
                      "how": r.get("how"), "ok": src_ok and abs(got - n) <= max(1, n // 50)})
    src = open(W).read().splitlines()
    line_of = lambda text: next(i + 1 for i, l in enumerate(src) if text in l)
    py = subprocess.run([t.py, "-c", "import platform; print(platform.python_version())"],
                        capture_output=True, text=True).stdout.strip()
    pylines = [t.pylines("item", runs["item"], line_of("total += loss.item()"), ".item()"),
               t.pylines("seed4", runs["seed4"], line_of("out += model(batch.to(DEV))"),
                         "the DataLoader loop's body")]
    summary = {"pairs": pairs, "steps": steps, "pylines": pylines, "python": py,
               "pass": all(p["ok"] for p in pairs) and all(s["ok"] for s in steps) and
               all(p["ok"] for p in pylines)}
    with open(os.path.join(t.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for name, r in runs.items():
        if os.path.exists(r["path"]):
            os.remove(r["path"])
    return 0 if summary["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
