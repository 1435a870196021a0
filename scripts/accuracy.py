#!/usr/bin/env python3
"""accuracy.py: the accuracy scorer of issue 30 (docs/accuracy.md).

Records each case of a manifest with `cudaspy record`, analyses the run with
`cudaspy-analyze --json`, and compares the findings with the truth line the
workload printed about itself:

    cudaspy-truth: {"case":..,"planted":..,"truth_ns":..,"loop_ns":..,
                    "steps":..,"setup_ns":..,"gpu_ns":..[,"causes":[..]]}

A case passes when, in every one of --count recordings: the top finding is
the planted cause (several planted causes: one of them; "none": no MEDIUM or
HIGH finding at all; "setup": no MEDIUM or HIGH finding and the report's
set-up within tolerance of setup_ns); each planted cause's impact (the sum
of its findings' impact_ns) is within tolerance_pct (default 20) of its
truth; and the findings' impact_pct sum to at most 100.

The manifest is a JSON array of cases:
    {"case": NAME, "cmd": [...], "planted": CAUSE, "truth": "meter"|"ab",
     "cmd_without": [...]        (truth "ab": the same steps without the cause;
                                  truth_ns = loop_ns(cmd) - loop_ns(cmd_without),
                                  both run untraced, once per recording)
     "record_args": [...], "env": {...}, "tolerance_pct": 20, "timeout_s": 120,
     "hogs": N, "hogs_per_cpu": X  (CPU spinners started outside the traced
                                  tree, each in a session of its own, while
                                  recording; hog_cmd: their command)
     "tolerance_loop_pct": P     (also accept an error within P % of the loop:
                                  for small truths)
     "check_setup": true         (also compare the set-up, as for "setup")
     "shield": true              (run the case's commands in a session of their
                                  own at nice -10, its autogroup too, as root:
                                  the box's other sessions then delay them less;
                                  spinners the case forks itself must copy
                                  its autogroup's nice; not with hogs)
     "require_top": false        (do not require the planted cause on top)
     "counts_as": {CAUSE: PLANTED}  (findings of CAUSE count for PLANTED: for a
                                  meter that cannot tell them apart)
     "external_ok": true         (planted none or setup: a cpu_contention_external
                                  finding within the main thread's metered
                                  run-queue delay, runq_ns + setup_runq_ns, is
                                  the box's real load, not a false finding)}
Strings may hold {build} (the build folder), {repo} (the repository) and
{python} (--python, default python3).

Exit status: 0 every case passed (or was skipped: its command exited 77);
1 a case failed; 2 usage error or bad manifest; 77 (with --require-tier) a
recording lacked that sampler tier.

Examples:
    scripts/accuracy.py --build build --count 3
    scripts/accuracy.py --cases pipe_fork,healthy --keep /tmp/acc --summary acc.json
    scripts/accuracy.py --manifest bench/gpu/accuracy/cases.json --python python3
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUTH_PREFIX = "cudaspy-truth: "
PROG = "accuracy"


class UsageError(Exception):
    """A bad option or manifest: exit 2."""


class RunError(Exception):
    """A recording, analysis or truth line that did not come: the case fails
    (a command that exits 77 skips it: what it needs is not here)."""

    def __init__(self, msg, rc=None):
        super().__init__(msg)
        self.rc = rc


class TierSkip(Exception):
    """A recording without the sampler tier --require-tier asked for: exit 77."""


# ---- manifest ----

def expand(value, subs):
    """{build}, {repo}, {python} in strings, lists and dicts."""
    if isinstance(value, str):
        for key, sub in subs.items():
            value = value.replace("{" + key + "}", sub)
        return value
    if isinstance(value, list):
        return [expand(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, subs) for k, v in value.items()}
    return value


def check_case(c, i):
    """Raises UsageError naming what case i of the manifest lacks."""
    where = "case %d" % i
    if not isinstance(c, dict) or not isinstance(c.get("case"), str):
        raise UsageError("%s: not an object with a \"case\" name" % where)
    where = c["case"]
    if not isinstance(c.get("cmd"), list) or not c["cmd"]:
        raise UsageError("%s: no \"cmd\" list" % where)
    if not isinstance(c.get("planted"), str):
        raise UsageError("%s: no \"planted\" cause" % where)
    if c.get("truth", "meter") not in ("meter", "ab"):
        raise UsageError("%s: truth must be \"meter\" or \"ab\"" % where)
    if c.get("truth") == "ab" and not isinstance(c.get("cmd_without"), list):
        raise UsageError("%s: truth \"ab\" needs a \"cmd_without\" list" % where)


def load_manifest(path, subs, only):
    try:
        with open(path) as f:
            cases = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError("%s: %s" % (path, e))
    if not isinstance(cases, list):
        raise UsageError("%s: not a JSON array of cases" % path)
    for i, c in enumerate(cases):
        check_case(c, i)
    names = [c["case"] for c in cases]
    if len(set(names)) != len(names):
        raise UsageError("%s: a case name repeats" % path)
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise UsageError("%s: no case %s" % (path, ", ".join(unknown)))
        cases = [c for c in cases if c["case"] in only]
    return [expand(c, subs) for c in cases]


# ---- running ----

# shield.sh's shield: a session of its own (start_new_session) at a higher
# CPU weight, autogroup and task (as root; else as is).
SHIELD = ["sh", "-c", 'echo -10 >/proc/self/autogroup 2>/dev/null; exec nice -n -10 "$@"', "sh"]


def shielded(case, cmd):
    return SHIELD + cmd if case.get("shield") else cmd


def run(cmd, env, timeout, log, is_logged=True):
    """Runs cmd in a session of its own (its process group is killed when it
    times out); returns its stdout. Appends both streams to log (stdout
    only if is_logged)."""
    what = os.path.basename(cmd[len(SHIELD)] if cmd[:len(SHIELD)] == SHIELD else cmd[0])
    try:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, errors="replace", start_new_session=True)
    except OSError as e:
        raise RunError("%s: %s" % (what, e.strerror))
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise RunError("%s: timed out after %d s" % (what, timeout))
    with open(log, "a") as f:
        f.write("$ %s\n%s%s[exit %d]\n" % (" ".join(cmd), out if is_logged else "", err,
                                             p.returncode))
    if p.returncode != 0:
        tail = (err.strip().splitlines() or ["no message"])[-1]
        raise RunError("%s exited %d: %s" % (what, p.returncode, tail), p.returncode)
    return out


def truth_of(stdout, what):
    """The last truth line of stdout, as a dict."""
    lines = [l for l in stdout.splitlines() if l.startswith(TRUTH_PREFIX)]
    if not lines:
        raise RunError("%s printed no truth line" % what)
    try:
        t = json.loads(lines[-1][len(TRUTH_PREFIX):])
    except ValueError as e:
        raise RunError("%s: bad truth line (%s)" % (what, e))
    for key in ("planted", "truth_ns", "loop_ns"):
        if key not in t:
            raise RunError("%s: truth line without %s" % (what, key))
    return t


def hogs_start(case, env):
    ncpu = os.cpu_count() or 1
    n = int(case.get("hogs", 0)) + int(round(float(case.get("hogs_per_cpu", 0)) * ncpu))
    default = [sys.executable, "-c",
               "import time\nt = time.time() + 300\nwhile time.time() < t: pass"]
    cmd = case.get("hog_cmd", default)
    hogs = [subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(n)]
    if hogs:
        time.sleep(0.3)  # let them take the CPUs before the workload starts
    return hogs


def hogs_stop(hogs):
    for h in hogs:
        if h.poll() is None:
            h.send_signal(signal.SIGKILL)
    for h in hogs:
        h.wait()


def record(case, args, env, run_path, log):
    """Records the case once; returns (truth dict, analyzer JSON)."""
    timeout = int(case.get("timeout_s", 120))
    for p in (run_path, run_path + "-lock"):
        if os.path.exists(p):
            os.remove(p)
    cmd = [os.path.join(args.build, "cudaspy"), "record", "-q"] + case.get("record_args", []) \
        + ["-o", run_path, "--"] + case["cmd"]
    hogs = hogs_start(case, env)
    try:
        out = run(shielded(case, cmd), env, timeout, log)
    finally:
        hogs_stop(hogs)
    truth = truth_of(out, "the recorded run")
    report = run([os.path.join(args.build, "cudaspy-analyze"), "--json", run_path], env,
                 timeout, log, is_logged=False)
    try:
        an = json.loads(report)
    except ValueError as e:
        raise RunError("cudaspy-analyze --json: bad JSON (%s)" % e)
    with open(run_path + ".json", "w") as f:
        f.write(report)
    return truth, an


def ab_truth(case, env, log):
    """truth_ns = loop_ns(with) - loop_ns(without), both untraced. Where both
    truth lines carry runq_ns (the main thread's run-queue delay in the
    loop), each loop counts without it: the box's other load lengthens the
    two runs unevenly, and an exclusive account gives that time to CPU
    contention, not to the planted cause."""
    timeout = int(case.get("timeout_s", 120))
    without = truth_of(run(shielded(case, case["cmd_without"]), env, timeout, log),
                       "cmd_without")
    with_ = truth_of(run(shielded(case, case["cmd"]), env, timeout, log), "cmd (untraced)")
    if with_.get("steps") != without.get("steps"):
        raise RunError("A/B runs took %s and %s steps" % (with_.get("steps"),
                                                          without.get("steps")))
    has_runq = "runq_ns" in with_ and "runq_ns" in without
    own = [t["loop_ns"] - (t["runq_ns"] if has_runq else 0) for t in (with_, without)]
    if own[0] <= own[1]:
        raise RunError("A/B: the cause cost nothing (%.2f s with it, %.2f s without)"
                       % (own[0] / 1e9, own[1] / 1e9))
    return own[0] - own[1], with_["loop_ns"]


def tier_of(an):
    files = an.get("run", {}).get("files") or [{}]
    return files[0].get("sampler_tier", "?")


# ---- judging one recording ----

def top_finding(chains):
    """The first finding, skipping LOW ones with no impact (gpu_bound)."""
    for c in chains:
        if c.get("severity") == "LOW" and not c.get("impact_ns"):
            continue
        return c
    return None


def report_setup_ns(an):
    acc = an.get("account")
    if isinstance(acc, dict) and acc.get("setup_ns") is not None:
        return acc["setup_ns"]
    setup = (an.get("steps") or {}).get("setup")
    if isinstance(setup, dict) and setup.get("dur_ns") is not None:
        return setup["dur_ns"]
    return None


def within(value, truth, case, loop_ns):
    """Signed error in % of truth, and whether it is within tolerance."""
    tol = float(case.get("tolerance_pct", 20))
    slack = float(case.get("tolerance_loop_pct", 0)) * loop_ns / 100.0
    err = (value - truth) * 100.0 / truth if truth else None
    return err, abs(value - truth) <= max(tol * truth / 100.0, slack)


def fmt_err(err):
    return "-" if err is None else "%+.0f %%" % err


def planted_causes(case, truth):
    """[(cause, truth_ns)] the recording is judged on."""
    if truth.get("causes"):
        return [(c["planted"], c["truth_ns"]) for c in truth["causes"]]
    return [(case["planted"], truth["truth_ns"])]


def judge_setup(case, truth, an, row):
    setup = report_setup_ns(an)
    if setup is None:
        row["reasons"].append("the report has no set-up (account.setup_ns, steps.setup)")
        return
    err, ok = within(setup, truth["setup_ns"], case, truth["loop_ns"] + truth["setup_ns"])
    row["setup_error_pct"] = err
    if not ok:
        row["reasons"].append("set-up %.2f s, truth %.2f s (%s)"
                              % (setup / 1e9, truth["setup_ns"] / 1e9, fmt_err(err)))


def counted_as(case, cause):
    """The planted cause a finding of @cause counts for ("counts_as")."""
    return case.get("counts_as", {}).get(cause, cause)


def judge_causes(case, truth, an, row):
    chains, planted = an.get("chains") or [], planted_causes(case, truth)
    names = row["planted"] = [p for p, _ in planted]
    top = row["top_cause"]
    if case.get("require_top", True) and counted_as(case, top) not in names:
        row["reasons"].append("top cause %s, not %s" % (top or "none", " or ".join(names)))
    for cause, truth_ns in planted:
        found = [c for c in chains if counted_as(case, c.get("cause")) == cause]
        impact = sum(c.get("impact_ns") or 0 for c in found)
        err, ok = within(impact, truth_ns, case, truth["loop_ns"])
        row["errors"].append(err)
        if not found:
            row["reasons"].append("no %s finding (truth %.2f s)" % (cause, truth_ns / 1e9))
        elif not ok:
            row["reasons"].append("%s impact %.2f s, truth %.2f s (%s)"
                                  % (cause, impact / 1e9, truth_ns / 1e9, fmt_err(err)))


def metered_outside(case, truth, finding):
    """With "external_ok": a cpu_contention_external finding no larger than
    the run-queue delay the workload metered on its main thread (set-up and
    loop, within tolerance, +10 ms) is the box's real load, no false
    finding in a case that plants none."""
    runq = truth.get("runq_ns")
    if not case.get("external_ok") or runq is None:
        return False
    if finding.get("cause") != "cpu_contention_external":
        return False
    runq += truth.get("setup_runq_ns") or 0
    tol = float(case.get("tolerance_pct", 20)) / 100.0
    return (finding.get("impact_ns") or 0) <= runq * (1 + tol) + 10000000


def judge(case, truth, an):
    """One recording's row: what it found and why it fails, if it does."""
    chains = an.get("chains") or []
    top = top_finding(chains)
    row = {"top_cause": top["cause"] if top else None,
           "top_impact_ns": top.get("impact_ns") if top else None,
           "top_impact_pct": top.get("impact_pct") if top else None,
           "truth_ns": truth["truth_ns"], "loop_ns": truth["loop_ns"],
           "setup_ns": truth.get("setup_ns", 0), "errors": [], "reasons": []}
    planted = case["planted"]
    if truth.get("planted") != planted:
        row["reasons"].append("the workload planted %s, the manifest says %s"
                              % (truth.get("planted"), planted))
    if planted in ("none", "setup"):
        loud = [c["cause"] + " " + c["severity"] for c in chains
                if c.get("severity") in ("MEDIUM", "HIGH") and not metered_outside(case, truth, c)]
        if loud:
            runq = truth.get("runq_ns")
            row["reasons"].append("finding %s in a %s case%s" % (
                ", ".join(loud), "healthy" if planted == "none" else "set-up",
                "" if runq is None else " (main thread's run-queue delay in the loop: %.0f ms)"
                % (runq / 1e6)))
    else:
        judge_causes(case, truth, an, row)
    if planted == "setup" or case.get("check_setup"):
        judge_setup(case, truth, an, row)
    total = sum(c.get("impact_pct") or 0 for c in chains)
    if total > 100.05:
        row["reasons"].append("impact_pct sums to %.1f %%" % total)
    return row


# ---- one case: --count recordings ----

def record_case(case, args, base_env, workdir):
    rows = []
    env = dict(base_env)
    env.update({k: str(v) for k, v in case.get("env", {}).items()})
    for i in range(args.count):
        stem = os.path.join(workdir, "%s.%d" % (case["case"], i + 1))
        log = stem + ".log"
        try:
            if case.get("truth") == "ab":
                ab_ns, ab_loop = ab_truth(case, env, log)
            truth, an = record(case, args, env, stem + ".lmdb", log)
            if args.require_tier and tier_of(an) != args.require_tier:
                raise TierSkip("%s: sampler tier %s, not %s"
                               % (case["case"], tier_of(an), args.require_tier))
            if case.get("truth") == "ab":
                truth = dict(truth, truth_ns=ab_ns, loop_ns=ab_loop)
            row = judge(case, truth, an)
        except RunError as e:
            row = {"error": str(e), "reasons": [str(e)], "errors": [], "is_skip": e.rc == 77}
        row["run"] = i + 1
        rows.append(row)
        if args.verbose:
            print("%s: %s" % (PROG, json.dumps(row)), file=sys.stderr)
    return rows


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def truth_pct(case, r):
    if case["planted"] == "setup":
        return r["setup_ns"] * 100.0 / max(1, r["setup_ns"] + r["loop_ns"])
    return r["truth_ns"] * 100.0 / max(1, r["loop_ns"])


def summarise(case, rows):
    """The case's table row from its recordings' rows."""
    ok = [r for r in rows if "error" not in r]
    tops = [r["top_cause"] or "none" for r in ok]
    top = max(set(tops), key=tops.count) if tops else None
    if top and tops.count(top) < len(rows):
        top = "%s (%d/%d)" % (top, tops.count(top), len(rows))
    errs = [e for r in ok for e in r["errors"] + [r.get("setup_error_pct")] if e is not None]
    worst = max(errs, key=abs) if errs else None
    reasons = ["run %d: %s" % (r["run"], m) for r in rows for m in r["reasons"]]
    planted = "+".join(ok[0]["planted"]) if ok and ok[0].get("planted") else case["planted"]
    return {"case": case["case"], "planted": planted,
            "truth_impact_pct": median([truth_pct(case, r) for r in ok]),
            "truth_s": median([(r["setup_ns"] if case["planted"] == "setup" else r["truth_ns"])
                               / 1e9 for r in ok]),
            "top_cause": top,
            "top_impact_pct": median([r["top_impact_pct"] for r in ok]),
            "top_impact_s": median([(r["top_impact_ns"] or 0) / 1e9 for r in ok
                                    if r["top_impact_ns"] is not None]),
            "error_pct": worst,
            "verdict": "SKIP" if rows and all(r.get("is_skip") for r in rows)
            else "PASS" if not reasons else "FAIL",
            "reason": "; ".join(reasons), "runs": rows}


# ---- output ----

def fmt_impact(pct, s):
    if pct is None:
        return "-"
    return "%5.1f%% %5.2fs" % (pct, s or 0)


def print_table(results, count):
    cols = ("case", "planted", "truth", "top cause", "its impact", "error", "verdict")
    lines = []
    for r in results:
        err = fmt_err(r["error_pct"]).replace(" ", "")
        lines.append((r["case"], r["planted"], fmt_impact(r["truth_impact_pct"], r["truth_s"]),
                      r["top_cause"] or "-", fmt_impact(r["top_impact_pct"], r["top_impact_s"]),
                      err, r["verdict"]))
    widths = [max(len(str(x)) for x in col) for col in zip(cols, *lines)]
    for line in [cols] + lines:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())
    npass = sum(r["verdict"] == "PASS" for r in results)
    nskip = sum(r["verdict"] == "SKIP" for r in results)
    print("%d of %d cases passed%s (%d recording(s) each)"
          % (npass, len(results) - nskip, ", %d skipped" % nskip if nskip else "", count))
    for r in results:
        if r["verdict"] != "PASS":
            print("%s: %s" % (r["case"], r["reason"]))


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="accuracy.py", description=__doc__.split("\n")[0],
                                 epilog="exit status: 0 all passed, 1 a case failed, "
                                        "2 usage error, 77 tier missing (--require-tier)")
    ap.add_argument("--build", default="build", help="build folder (default build)")
    ap.add_argument("--manifest", default=os.path.join(REPO, "test", "accuracy", "cases.json"))
    ap.add_argument("--count", type=int, default=1, help="recordings per case (default 1)")
    ap.add_argument("--cases", default="", help="comma-separated case names")
    ap.add_argument("--keep", metavar="DIR", help="keep run files, logs and reports in DIR")
    ap.add_argument("--summary", metavar="FILE", help="write the rows as a JSON array")
    ap.add_argument("--python", default="python3", help="what {python} expands to")
    ap.add_argument("--require-tier", metavar="TIER",
                    help="exit 77 when a recording's sampler tier is not TIER")
    ap.add_argument("-v", "--verbose", action="store_true", help="each recording's row")
    args = ap.parse_args(argv)
    if args.count < 1:
        ap.error("--count must be 1 or more")
    args.build = os.path.abspath(args.build)
    for exe in ("cudaspy", "cudaspy-analyze"):
        if not os.access(os.path.join(args.build, exe), os.X_OK):
            ap.error("%s: no %s (build it first)" % (args.build, exe))
    return args


def main(argv):
    args = parse_args(argv)
    subs = {"build": args.build, "repo": REPO, "python": args.python}
    try:
        cases = load_manifest(args.manifest, subs, [c for c in args.cases.split(",") if c])
    except UsageError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    tmp = None
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="cudaspy-accuracy-")
        workdir = tmp.name
    results = []
    try:
        for case in cases:
            results.append(summarise(case, record_case(case, args, os.environ, workdir)))
    except TierSkip as e:
        print("%s: skipped: %s" % (PROG, e))
        return 77
    finally:
        if tmp:
            tmp.cleanup()
    print_table(results, args.count)
    if args.summary:
        keys = ("case", "planted", "truth_impact_pct", "top_cause", "top_impact_pct",
                "error_pct", "verdict", "reason", "runs")
        with open(args.summary, "w") as f:
            json.dump([{k: r[k] for k in keys} for r in results], f, indent=1)
            f.write("\n")
    return 0 if all(r["verdict"] in ("PASS", "SKIP") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
