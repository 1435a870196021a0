"""run.py: issue 30's accuracy proof on the GPU (gpu-check.sh accuracy).
For each case of the manifest (the accuracy contract's format, README.md):
the workload untraced and recorded (`cudaspy record`, GPU activity at its
default, sampled), interleaved; an A/B case's `cmd_without` recorded too,
exactly as `cmd` (same record_args, env and hogs; its own run file, not
analysed). The recording of `cmd` is analysed (`cudaspy-analyze --json`,
and the text report) and scored as the contract says:

- truth: "meter": the recorded run's own truth line (truth_ns; setup_ns
  for planted "setup"); "ab": loop_ns(cmd) - loop_ns(cmd_without), both
  recorded, same step count: the analysis explains the run it recorded,
  and recording dilates some loops a lot (a launch-bound loop 1.61 s
  untraced, 2.32 s recorded, on the H100), so two untraced runs do not
  say what the cause cost in the run analysed; planted "none": 0;
- top cause: the first finding of `chains` that is not a LOW one of
  impact 0;
- pass: top cause == planted and |impact_ns(planted's finding) - truth|
  <= tolerance_pct (20) % of truth, every cause of a multi-cause line so
  (healthy: no MEDIUM or HIGH finding; setup: none either, and the
  analyzer's set-up (account.setup_ns, else steps.setup.dur_ns) within
  the tolerance), and the findings' impact_pct summing to <= 100.05;
  in each of --count recordings.

The untraced run of `cmd` is not scored: it gives recording's dilation of
the loop (traced_over_untraced in tracing.json). The untraced A/B (untraced
cmd_without) is not run: the call's time budget holds three runs an A/B
case, so it is not reported either.

Writes OUT/summary.json (one row a case: case, planted, truth_impact_pct
(truth over the recorded loop), top_cause, top_impact_pct, error_pct,
verdict, reason; rewritten after every case, so a cut call keeps the rest),
OUT/tracing.json (recording 1 of each case: the untraced loop and meter
next to the recorded ones, traced_over_untraced; an A/B case's also
without_traced_loop_ns and ab_truth_ns), OUT/runs.jsonl (every run:
command, exit status, truth line, the analysis's findings; run_file with
--keep-runs) and OUT/reports.txt (the text reports). A case left when
--budget-s has run out is a row with verdict "skip".

Usage: python3 run.py --manifest FILE --build DIR --out DIR --runs DIR
           [--count N] [--budget-s S] [--cases A,B] [--keep-runs]
(env PYTHON: {python}; CS_PIN: every run under taskset -c CS_PIN)
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TRUTH_TAG = "cudaspy-truth: "
CASE_RESERVE_S = 45  # a case is not started with less than this left


def expand(x, subs):
    """{build}, {repo} and {python} in a string, or in each of a list's or a
    dict's values."""
    if isinstance(x, list):
        return [expand(v, subs) for v in x]
    if isinstance(x, dict):
        return {k: expand(v, subs) for k, v in x.items()}
    if isinstance(x, str):
        for k, v in subs.items():
            x = x.replace("{" + k + "}", v)
    return x


def truth_of(text):
    """The last truth line of a run's stdout, as a dict (None without one)."""
    last = None
    for line in text.splitlines():
        if line.startswith(TRUTH_TAG):
            last = line[len(TRUTH_TAG):]
    try:
        return json.loads(last) if last else None
    except ValueError:
        return None


def top_finding(chains):
    """chains[0], skipping LOW findings of impact 0 (gpu_bound)."""
    for c in chains:
        if not (c.get("severity") == "LOW" and not c.get("impact_ns")):
            return c
    return None


def setup_of(a):
    """The analyzer's set-up: account.setup_ns, else steps.setup.dur_ns."""
    acc = a.get("account")
    if isinstance(acc, dict) and isinstance(acc.get("setup_ns"), int):
        return acc["setup_ns"]
    su = (a.get("steps") or {}).get("setup")
    if isinstance(su, dict) and isinstance(su.get("dur_ns"), int):
        return su["dur_ns"]
    return None


def pct(a, b):
    return round(100.0 * a / b, 2) if b else None


def score_one(planted, truth, a, tol):
    """One recording against its truth. @truth: {"truth_ns", "loop_ns",
    "causes"?}; @a: the analysis. Returns (ok, error_pct, reason)."""
    chains = a.get("chains") or []
    sum_pct = sum(float(c.get("impact_pct") or 0) for c in chains)
    if sum_pct > 100.05:
        return False, None, f"findings' impact_pct sum to {sum_pct:.2f} (> 100)"
    loud = [f"{c.get('severity')} {c.get('cause')}" for c in chains
            if c.get("severity") in ("MEDIUM", "HIGH")]
    top = top_finding(chains)
    if planted == "none":
        if loud:
            return False, None, "healthy, yet " + ", ".join(loud)
        return True, None, "no MEDIUM or HIGH finding"
    if planted == "setup":
        got, want = setup_of(a), truth["truth_ns"]
        if got is None or not want:
            return False, None, "no set-up in the analysis" if got is None else "no set-up truth"
        err = 100.0 * (got - want) / want
        why = f"set-up {got / 1e9:.3f} s vs truth {want / 1e9:.3f} s ({err:+.1f} %)"
        if loud:
            return False, round(err, 1), why + "; but " + ", ".join(loud)
        return abs(err) <= tol, round(err, 1), why
    if not truth.get("truth_ns") or truth["truth_ns"] <= 0:
        return False, None, f"truth not positive ({truth.get('truth_ns')} ns)"
    causes = truth.get("causes") or [{"planted": planted, "truth_ns": truth["truth_ns"]}]
    ok, errs, why = True, {}, []
    if top is None or top.get("cause") != planted:
        ok = False
        why.append("top " + (f"{top.get('severity')} {top.get('cause')}" if top else "none"))
    for c in causes:
        f = next((x for x in chains if x.get("cause") == c["planted"]), None)
        if f is None:
            ok = False
            why.append(f"no {c['planted']} finding (truth {c['truth_ns'] / 1e9:.3f} s)")
            continue
        err = 100.0 * (f["impact_ns"] - c["truth_ns"]) / c["truth_ns"]
        errs[c["planted"]] = err
        ok = ok and abs(err) <= tol
        why.append(f"{f.get('severity')} {c['planted']} {f['impact_ns'] / 1e9:.3f} s vs truth "
                   f"{c['truth_ns'] / 1e9:.3f} s ({err:+.1f} %)")
    err = errs.get(planted)
    return ok, round(err, 1) if err is not None else None, "; ".join(why)


class Runner:
    def __init__(self, o):
        self.b, self.out, self.runs, self.o = o.build, o.out, o.runs, o
        self.py = os.environ.get("PYTHON", "python3")
        self.pin = os.environ.get("CS_PIN", "")
        os.makedirs(self.out, exist_ok=True)
        os.makedirs(self.runs, exist_ok=True)
        self.log = open(os.path.join(self.out, "runs.jsonl"), "a")
        self.reports = open(os.path.join(self.out, "reports.txt"), "a")
        self.subs = {"build": self.b, "repo": REPO, "python": self.py}

    def note(self, row):
        self.log.write(json.dumps(row, separators=(",", ":")) + "\n")
        self.log.flush()

    def run(self, case, role, rep, cmd, env, traced, record_args, timeout, analyse=True):
        """One run, untraced or recorded (and, if @analyse, its recording
        analysed); its row (truth line, analysis)."""
        name = f"{case}-{role}-{rep}"
        path = os.path.join(self.runs, name + ".lmdb")
        full = list(cmd)
        if traced:
            for p in (path, path + "-lock"):
                if os.path.exists(p):
                    os.remove(p)
            full = [os.path.join(self.b, "cudaspy"), "record", "-q", "-o", path] + \
                record_args + ["--"] + full
        if self.pin:
            full = ["taskset", "-c", self.pin] + full
        e = dict(os.environ, PYTHONUNBUFFERED="1", CUDASPY_QUIET="1", **env)
        so, se = (os.path.join(self.runs, name + x) for x in (".out", ".err"))
        t0 = time.monotonic()
        with open(so, "w") as fo, open(se, "w") as fe:
            p = subprocess.Popen(full, env=e, stdout=fo, stderr=fe, start_new_session=True)
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)  # the run's whole session
                p.wait()
                rc = 124
        row = {"case": case, "role": role, "rep": rep, "traced": traced, "rc": rc,
               "wall_s": round(time.monotonic() - t0, 3), "cmd": " ".join(cmd)}
        row["truth"] = truth_of(open(so, errors="replace").read())
        if rc != 0:
            row["stderr_tail"] = open(se, errors="replace").read()[-600:]
        if traced and os.path.exists(path):
            if analyse:
                self.analyze(row, path)
            if self.o.keep_runs:
                row["run_file"] = path
            else:
                for p in (path, path + "-lock"):
                    if os.path.exists(p):
                        os.remove(p)
        self.note({k: v for k, v in row.items() if k != "_a"})  # the analysis: findings only
        print(f"accuracy: {name} rc={rc} wall={row['wall_s']} s"
              f" loop={(row['truth'] or {}).get('loop_ns', 0) / 1e9:.3f} s"
              + (f" top={row.get('top_cause')}" if traced and analyse else ""), file=sys.stderr)
        return row

    def analyze(self, row, path):
        """The analysis (kept whole in row['_a'], compact in the row) and
        the text report into reports.txt."""
        an = os.path.join(self.b, "cudaspy-analyze")
        try:
            j = subprocess.run([an, "--json", path], capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            row["analyze_error"] = "timeout (300 s)"
            return
        try:
            a = json.loads(j.stdout)
        except ValueError:
            row["analyze_error"] = f"exit {j.returncode}: {j.stderr[-300:]}"
            return
        row["_a"] = a
        chains = a.get("chains") or []
        top = top_finding(chains)
        st, g = a.get("steps") or {}, a.get("gpu") or {}
        row.update(
            top_cause=top.get("cause") if top else None,
            findings=[{k: c.get(k) for k in ("severity", "cause", "impact_ns", "impact_pct")}
                      | {"chain": (c.get("chain") or "")[:240]} for c in chains],
            steps={k: st.get(k) for k in ("source", "how", "count", "p50_ns")}
            | {"setup_ns": setup_of(a)},
            gpu={k: g.get(k) for k in ("source", "busy_pct", "coverage_pct")},
            active_ns=(a.get("run") or {}).get("active_ns"))
        if isinstance(a.get("account"), dict):
            acc = a["account"]
            row["account"] = {k: acc.get(k) for k in ("source", "window_ns", "setup_ns", "sum_ns")}
            row["account"]["buckets"] = [{k: b.get(k) for k in ("name", "ns", "pct")}
                                         for b in acc.get("buckets") or []]
        try:
            t = subprocess.run([an, path], capture_output=True, text=True, timeout=300).stdout
        except subprocess.TimeoutExpired:
            t = "(report: timeout)\n"
        self.reports.write(f"==== {row['case']} ({row['cmd']})\n{t}\n")
        self.reports.flush()


def rounds(c, k, count):
    """The runs of case @c (index @k): per recording, cmd untraced and
    recorded, an A/B case's cmd_without recorded too (role "without"),
    their order turning from case to case and recording to recording."""
    ab = c.get("truth") == "ab"
    out = []
    for rep in range(1, count + 1):
        runs = [("untraced", c["cmd"], False), ("traced", c["cmd"], True)]
        if ab:
            runs.insert(1, ("without", c["cmd_without"], True))
        shift = (k + rep) % len(runs)
        out.append((rep, runs[shift:] + runs[:shift]))
    return out


def hogs_start(n):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(n)]


def hogs_stop(hogs):
    for h in hogs:
        h.kill()
        h.wait()


def run_case(r, c, k, o):
    """All runs of one case; its summary row and its tracing row."""
    env, rec = c.get("env") or {}, c.get("record_args") or []
    timeout, tol = c.get("timeout_s", 300), float(c.get("tolerance_pct", 20))
    ab, planted = c.get("truth") == "ab", c["planted"]
    results, trace = [], {"case": c["case"], "truth": c.get("truth")}
    for rep, runs in rounds(c, k, o.count):
        got = {}
        for role, cmd, traced in runs:
            hogs = hogs_start(c.get("hogs", 0)) if traced else []
            try:
                got[role] = r.run(c["case"], role, rep, cmd, env, traced, rec, timeout,
                                  analyse=role == "traced")
            finally:
                hogs_stop(hogs)
        results.append(judge(c, got, ab, planted, tol))
        if rep == 1:
            trace.update(tracing(got))
        for row in got.values():
            row.pop("_a", None)
    bad = [x for x in results if not x[0]]
    ok, err, why, tpct, top, tip = (bad or results)[0]
    worst = max((x for x in results if x[1] is not None), key=lambda x: abs(x[1]), default=None)
    row = {"case": c["case"], "planted": planted, "truth_impact_pct": tpct, "top_cause": top,
           "top_impact_pct": tip, "error_pct": worst[1] if worst else err,
           "verdict": "pass" if ok else "fail", "reason": why}
    if o.count > 1:
        row["reason"] += f" ({len(results) - len(bad)} of {len(results)} recordings pass)"
    return row, trace


def judge(c, got, ab, planted, tol):
    """(ok, error_pct, reason, truth_impact_pct, top_cause, top_impact_pct)
    of one recording."""
    t = got["traced"]
    a = t.get("_a")
    top = top_finding(a.get("chains") or []) if a else None
    tc, tip = (top.get("cause"), top.get("impact_pct")) if top else (None, None)
    if t["rc"] != 0:
        return False, None, f"recorded run: exit {t['rc']}: " + \
            (t.get("stderr_tail") or "")[-200:].replace("\n", " | "), None, tc, tip
    if a is None:
        return False, None, "analyze: " + t.get("analyze_error", "no run file"), None, tc, tip
    if ab:  # both recorded: the run analysed against its like without the cause
        wr = got["without"]
        if wr["rc"] != 0:
            return False, None, f"A/B: recorded cmd_without: exit {wr['rc']}: " + \
                (wr.get("stderr_tail") or "")[-200:].replace("\n", " | "), None, tc, tip
        w, wo = t.get("truth"), wr.get("truth")
        if not w or not wo:
            return False, None, "A/B: no truth line from the recorded " + \
                ("cmd" if not w else "cmd_without"), None, tc, tip
        if w["steps"] != wo["steps"]:
            return False, None, f"A/B: steps differ ({w['steps']} vs {wo['steps']})", None, tc, tip
        truth = {"truth_ns": w["loop_ns"] - wo["loop_ns"], "loop_ns": w["loop_ns"]}
    else:
        tl = t.get("truth")
        if not tl:
            return False, None, "no truth line from the recorded run", None, tc, tip
        truth = dict(tl)
        if planted == "setup":
            truth["truth_ns"] = tl.get("setup_ns") or tl.get("truth_ns")
        if planted == "none":
            truth["truth_ns"] = 0
    ok, err, why = score_one(planted, truth, a, tol)
    return ok, err, why, pct(truth["truth_ns"], truth.get("loop_ns")), tc, tip


def tracing(got):
    """Loop and meter untraced next to recorded (recording 1); an A/B
    case's recorded cmd_without and the truth they make."""
    u, t = (got.get(k, {}).get("truth") or {} for k in ("untraced", "traced"))
    out = {"untraced_loop_ns": u.get("loop_ns"), "traced_loop_ns": t.get("loop_ns"),
           "untraced_truth_ns": u.get("truth_ns"), "traced_truth_ns": t.get("truth_ns"),
           "untraced_wall_s": got.get("untraced", {}).get("wall_s"),
           "traced_wall_s": got.get("traced", {}).get("wall_s")}
    if u.get("loop_ns") and t.get("loop_ns"):
        out["traced_over_untraced"] = round(t["loop_ns"] / u["loop_ns"], 4)
    for k in ("meter_ns", "setup_ns"):
        if k in u or k in t:
            out["untraced_" + k], out["traced_" + k] = u.get(k), t.get(k)
    if "without" in got:
        wl = (got["without"].get("truth") or {}).get("loop_ns")
        out["without_traced_loop_ns"] = wl
        out["without_traced_wall_s"] = got["without"].get("wall_s")
        if wl is not None and t.get("loop_ns") is not None:
            out["ab_truth_ns"] = t["loop_ns"] - wl
    return out


def table(rows):
    lines = ["%-16s %-24s %8s %-24s %8s %8s %-5s" % ("case", "planted", "truth%", "top cause",
                                                    "top%", "err%", "verdict")]
    for x in rows:
        f = lambda v: "-" if v is None else "%.1f" % v
        lines.append("%-16s %-24s %8s %-24s %8s %8s %-5s" % (
            x["case"], x["planted"], f(x["truth_impact_pct"]), x["top_cause"] or "-",
            f(x["top_impact_pct"]), f(x["error_pct"]), x["verdict"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description="issue 30's accuracy proof on the GPU")
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--budget-s", type=float, default=480)
    ap.add_argument("--cases", default="")
    ap.add_argument("--keep-runs", action="store_true")
    o = ap.parse_args()
    r = Runner(o)
    cases = expand(json.load(open(o.manifest)), r.subs)
    if o.cases:
        want = o.cases.split(",")
        cases = [c for c in cases if c["case"] in want]
    t0, rows, traces = time.monotonic(), [], []
    for k, c in enumerate(cases):
        if time.monotonic() - t0 > o.budget_s - CASE_RESERVE_S:
            rows.append({"case": c["case"], "planted": c["planted"], "truth_impact_pct": None,
                         "top_cause": None, "top_impact_pct": None, "error_pct": None,
                         "verdict": "skip", "reason": f"budget of {o.budget_s:.0f} s spent"})
        else:
            row, tr = run_case(r, c, k, o)
            rows.append(row)
            traces.append(tr)
            print(f"accuracy: {row['case']}: {row['verdict']}: {row['reason']}", flush=True)
        for name, data in (("summary.json", rows), ("tracing.json", traces)):
            with open(os.path.join(o.out, name), "w") as f:
                json.dump(data, f, indent=1)
    print(table(rows))
    print(f"accuracy: {sum(x['verdict'] == 'pass' for x in rows)} of {len(rows)} cases pass, "
          f"{time.monotonic() - t0:.0f} s")
    return 0 if all(x["verdict"] == "pass" for x in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
