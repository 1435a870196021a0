#!/usr/bin/env python3
"""results_compact.py: one compact data file per results campaign.

A campaign folder, bench/results/<campaign>/, holds its README.md and
data.jsonl, one JSON object a line, in this order:
  {"kind": "campaign", "name": ..., "format": 1}
  {"kind": "run", "call": N, "run": {...}, "out": [...], "meta": {...},
   "phases": {...}}
      one line of a call's runs.jsonl, as bench/gpu-check.sh wrote it
      (paths are the device's); `out`: the lines of the run's .out file;
      `meta`: its .meta.json; `phases`: its step log (.steps) reduced to
      what the `record --duty` measure reads: `sums`, per phase k of a
      grid of period_ns from t0_ns, [k, ns, steps] of the steps that start
      and end in k (bench/gpu/collect.py's phase_sums); the median of
      those steps in on (even) and off (odd) phases, on_median_ns and
      off_median_ns; steps, first_ns, last_ns of the whole log. Traced runs
      are on their duty grid, untraced ones on a grid of the same period
      from their first step (the placebo). null where the call kept no
      such file.
  {"kind": "row", ...}
      a row of a summary that collect.py wrote (gpu-2026-11-29 only; a
      summary.json that is an object, as truth.py writes, is a kept file).
  {"kind": "file", "path": ..., "text": ...}
      a small file of the campaign kept word for word: logs, what
      collect.py and the pooling scripts printed, reports, patches.
bench/gpu/collect.py, duty_pool.py and conc_pairs.py read a call of it as
FILE:callN, in place of the folder of raw outputs that call came back with.

Usage: results_compact.py build DIR      write DIR/data.jsonl from DIR's raw files
       results_compact.py verify DIR     check DIR/data.jsonl against them, file by file
       results_compact.py list FILE      the calls, run modes and files FILE keeps
       results_compact.py show FILE PATH print kept file PATH (relative to the
                                         campaign folder) exactly as it was
       results_compact.py rerun FILE     rerun every duty_pool.py/conc_pairs.py
                                         command a kept file quotes, on FILE, and
                                         compare with what it quotes
       results_compact.py runs [--traced|--untraced] FILE[:callN][:MODE,...]... FIELD...
                                         one line per run with FIELDs, then the
                                         median, mean and sum of each over them
                                         (truth.py's runs: MODE is the run's name,
                                         traced = recorded with any --gpu-activity)
FIELDs: a key of the run's runs.jsonl line (wall_ns, rc); the value of an
output line `KEY: value` (elapsed, us_per_launch, quarters, result);
best_loop (the least `loop N:` us/launch); cpu_s, cpu_user_s, cpu_sys_s
(user + system, user, system s of the reaped tree, `cputimes:`); a key of
the run file's entry in its meta, dotted for nested ones (cuda_dropped,
collector_cpu_ns, counts.offcpu, counts.pwin, degraded); run.KEY for the
meta's run (run.cuda_records); off_median_ns, on_median_ns, steps (phases)."""
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gpu"))
import collect  # noqa: E402

PROG = "results_compact.py"
FORMAT = 1
PLACEBO_PERIOD_NS = 250_000_000  # every duty run so far: record --duty 250


def die(msg):
    sys.exit(f"{PROG}: {msg}")


def tracked(d):
    """Files under @d, relative to it, sorted; git's list when @d is in a work tree."""
    r = subprocess.run(["git", "-C", d, "ls-files", "."], capture_output=True, text=True)
    if r.returncode == 0 and r.stdout.strip():
        return sorted(r.stdout.split())
    return sorted(os.path.relpath(os.path.join(p, f), d)
                  for p, _, fs in os.walk(d) for f in fs)


def calls_of(files):
    """{N: (runs.jsonl path, [folders its runs' files may be in, prefix])}."""
    calls = {}
    for f in files:
        m = re.fullmatch(r"call(\d+)-runs\.jsonl", f)
        if m:
            n = int(m.group(1))
            calls[n] = (f, [("outs", f"call{n}-"), (f"call{n}-outs", "")])
        m = re.fullmatch(r"outs/call(\d+)/runs\.jsonl", f)
        if m:
            n = int(m.group(1))
            calls[n] = (f, [(f"outs/call{n}", "")])
    return calls


def find(where, device_path, files):
    """The campaign file that device path @device_path came back as, or None."""
    if not device_path:
        return None
    base = os.path.basename(device_path)
    for folder, prefix in where:
        rel = os.path.join(folder, prefix + base)
        if rel in files:
            return rel
    return None


def phases_of(d, out_rel, run, meta):
    """The `phases` entry of a run whose .out is @out_rel, or None."""
    if out_rel is None or not out_rel.endswith(".out"):
        return None
    steps = collect.read_steps(os.path.join(d, out_rel))
    if not steps:
        return None
    duty, t_start = collect.duty_of({"meta": meta}) if meta else (None, None)
    if run.get("traced"):
        if not (duty and t_start):
            return None
        period, t0 = duty, t_start
    else:
        period, t0 = PLACEBO_PERIOD_NS, steps[0]
    sums = collect.phase_sums(steps, period, t0)
    durs = ([], [])  # the steps phase_sums counts, in on (even) and off (odd) phases
    for k, ns in collect.phase_steps(steps, period, t0):
        durs[k % 2].append(ns)
    med = [statistics.median(x) if x else None for x in durs]
    med = [int(m) if m is not None and m == int(m) else m for m in med]
    return {"period_ns": period, "t0_ns": t0, "steps": len(steps) - 1,
            "first_ns": steps[0], "last_ns": steps[-1],
            "on_median_ns": med[0], "off_median_ns": med[1],
            "sums": [[k, t, n] for k, (t, n) in sorted(sums.items())]}


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def out_of(path):
    """The lines of .out file @path, or None when they would not give it back
    exactly (out_text)."""
    text = read_text(path)
    lines = text.split("\n")
    if lines[-1] != "":
        return None
    return lines[:-1]


def out_text(lines):
    return "".join(line + "\n" for line in lines)


def records(d):
    """The records of campaign folder @d, and the files they stand for."""
    files = tracked(d)
    fileset = set(files)
    used = {"README.md", "data.jsonl"}
    recs = [{"kind": "campaign", "name": os.path.basename(os.path.abspath(d)),
             "format": FORMAT}]
    periods = set()
    for n, (runs_rel, where) in sorted(calls_of(files).items()):
        used.add(runs_rel)
        for line in read_text(os.path.join(d, runs_rel)).splitlines():
            if not line.strip():
                continue
            run = json.loads(line)
            out_rel = find(where, run.get("out"), fileset)
            meta_rel = find(where, run.get("meta"), fileset)
            out = out_of(os.path.join(d, out_rel)) if out_rel else None
            if out_rel and out is None:
                die(f"{d}/{out_rel}: does not end in a newline; not kept")
            meta = json.loads(read_text(os.path.join(d, meta_rel))) if meta_rel else None
            ph = phases_of(d, out_rel, run, meta)
            if ph and run.get("traced"):
                periods.add(ph["period_ns"])
            recs.append({"kind": "run", "call": n, "run": run, "out": out, "meta": meta,
                         "phases": ph})
            for rel in (out_rel, meta_rel):
                if rel:
                    used.add(rel)
            if ph:
                used.add(out_rel[:-4] + ".steps")
    if periods - {PLACEBO_PERIOD_NS}:
        die(f"{d}: duty periods {sorted(periods)}: placebo grids assume {PLACEBO_PERIOD_NS} ns")
    rows = json.loads(read_text(os.path.join(d, "summary.json"))) if "summary.json" in fileset \
        else None
    if isinstance(rows, list):  # collect.py's rows; truth.py's object is kept as a file
        if json.dumps(rows, indent=1) != read_text(os.path.join(d, "summary.json")):
            die(f"{d}/summary.json: not as json.dumps(indent=1) writes it; not kept")
        recs += [dict(kind="row", **r) for r in rows]
        used.add("summary.json")
    dropped = []
    for f in files:
        if f.endswith(".steps") and f not in used:
            dropped.append(f)  # no run of a runs.jsonl on a grid: nothing to read it
        elif f not in used:
            recs.append({"kind": "file", "path": f, "text": read_text(os.path.join(d, f))})
    return recs, dropped


def build(d):
    recs, dropped = records(d)
    for f in dropped:
        print(f"{d}/{f}: dropped: the step log of no listed run")
    path = os.path.join(d, "data.jsonl")
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
    kinds = {}
    for r in recs:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    print(f"{path}: {os.path.getsize(path)} bytes, " +
          ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))


def load(path):
    try:
        with open(path) as f:
            recs = [json.loads(line) for line in f]
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if not recs or recs[0].get("kind") != "campaign" or recs[0].get("format") != FORMAT:
        die(f"{path}: not a compact results file of format {FORMAT}")
    return recs


def rows_json(recs):
    rows = [{k: v for k, v in r.items() if k != "kind"} for r in recs if r["kind"] == "row"]
    return json.dumps(rows, indent=1) if rows else None


def kept_text(recs, rel):
    """The text of file @rel as kept, or None."""
    if rel == "summary.json" and rows_json(recs) is not None:
        return rows_json(recs)
    for r in recs:
        if r["kind"] == "file" and r["path"] == rel:
            return r["text"]
    return None


def verify(d):
    """Every raw file of @d against data.jsonl: kept files and run outputs
    byte for byte, metas as JSON, step logs through their phase sums."""
    recs = load(os.path.join(d, "data.jsonl"))
    fresh, dropped = records(d)
    bad = 0
    if json.dumps(fresh, sort_keys=True) != json.dumps(recs, sort_keys=True):
        print(f"{PROG}: {d}: data.jsonl differs from what build would write now")
        bad += 1
    files = tracked(d)
    for rel in files:
        if rel in ("README.md", "data.jsonl") or rel.endswith(".steps") or \
                rel.endswith("runs.jsonl"):
            continue  # step logs: as phase sums, which build recomputed above
        text = read_text(os.path.join(d, rel))
        if rel.endswith(".out") or rel.endswith(".meta.json"):
            hit = any(r["kind"] == "run" and (
                rel.endswith(".out") and r["out"] is not None and out_text(r["out"]) == text and
                os.path.basename(r["run"].get("out", "")) in rel or
                rel.endswith(".meta.json") and r["meta"] == json.loads(text) and
                os.path.basename(r["run"].get("meta") or "-") in rel) for r in recs)
            if not hit:
                hit = kept_text(recs, rel) == text
        else:
            hit = kept_text(recs, rel) == text
        if not hit:
            print(f"{PROG}: {d}/{rel}: not kept")
            bad += 1
    steps = sum(1 for f in files if f.endswith(".steps"))
    with_phases = sum(1 for r in recs if r["kind"] == "run" and r["phases"])
    print(f"{d}: {len(files)} files, {steps} step logs ({len(dropped)} of no listed run), "
          f"{with_phases} runs with phases, {bad} not kept")
    return bad == 0


def list_(path):
    recs = load(path)
    by = {}
    for r in recs:
        if r["kind"] == "run":
            k = (r["call"], r["run"].get("name"), r["run"].get("mode"), r["run"].get("traced"))
            by[k] = by.get(k, 0) + 1
    for (call, name, mode, traced), n in sorted(by.items()):
        print(f"call{call} {name} {mode} traced={traced}: {n} runs")
    rows = sum(1 for r in recs if r["kind"] == "row")
    if rows:
        print(f"summary.json: {rows} rows")
    for r in recs:
        if r["kind"] == "file":
            print(f"{r['path']}: {len(r['text'].encode())} bytes")


def show(path, rel):
    text = kept_text(load(path), rel)
    if text is None:
        die(f"{path}: {rel}: not kept there (try: {PROG} list {path})")
    sys.stdout.write(text)


def rewrite(cmd, compact):
    """A quoted command with its raw-output folders replaced by calls of @compact."""
    camp = os.path.basename(os.path.dirname(compact))
    parts = []
    for w in cmd.split():
        m = re.fullmatch(r"(?:\S*/)?(gpu-[\w-]+)/outs/(call\d+)(:\S+)?", w)
        if m:
            where = compact if m.group(1) == camp else \
                os.path.join(os.path.dirname(os.path.dirname(compact)), m.group(1), "data.jsonl")
            w = f"{where}:{m.group(2)}{m.group(3) or ''}"
        parts.append(w)
    return parts


def quoted_commands(path, rec):
    """[(command, what it printed)] that kept file @rec quotes: its `$ ...`
    blocks naming duty_pool.py or conc_pairs.py, or, for a callN-conc.txt or
    pooled-conc.txt (seedconc), conc_pairs.py on that call or on all calls."""
    m = re.fullmatch(r"call(\d+)-conc\.txt|pooled-conc\.txt", rec["path"])
    if m:
        calls = [m.group(1)] if m.group(1) else \
            sorted({str(r["call"]) for r in load(path) if r["kind"] == "run" and
                    r["run"].get("mode", "").startswith("conc-")})
        return [("bench/gpu/conc_pairs.py " + " ".join(f"{path}:call{c}" for c in calls),
                 rec["text"])]
    return re.findall(r"^\$ (.*(?:duty_pool|conc_pairs)\.py .*)\n((?:(?!\$ |#|\n).*\n)*)",
                      rec["text"], re.M)


def in_order(want, got):
    """Whether every non-blank line of @want is a line of @got, in order: the
    scripts print more lines now than some quoted outputs have."""
    it = iter(got.splitlines())
    return all(any(line == g for g in it) for line in want.splitlines() if line.strip())


def rerun(path):
    """Each command that a kept file quotes with its output: run it on @path
    (and the compact files of the other campaigns it names) and compare."""
    bad = n = 0
    for r in load(path):
        if r["kind"] != "file":
            continue
        for cmd, want in quoted_commands(path, r):
            argv = rewrite(cmd, path)
            script = next(a for a in argv if a.endswith(".py"))
            args = argv[argv.index(script) + 1:]
            got = subprocess.run([sys.executable, os.path.join(HERE, "gpu",
                                                               os.path.basename(script))] + args,
                                 capture_output=True, text=True).stdout
            n += 1
            if not in_order(want, got):
                bad += 1
                print(f"{PROG}: {r['path']}: `{' '.join(argv)}` now prints:\n{got}quoted:\n{want}")
    print(f"{path}: {n} quoted commands rerun, {bad} differ")
    return bad == 0


def field(run, name):
    """Value @name (see FIELDs in the usage) of compact run @run, or None."""
    if name in run and name not in ("out", "meta", "phases"):
        return run[name]
    lines = run["out"] or []
    if name == "best_loop":
        loops = [float(line.split()[2]) for line in lines if line.startswith("loop ")]
        return min(loops) if loops else None
    if name in ("cpu_s", "cpu_user_s", "cpu_sys_s"):
        c = collect.parse_cpu(lines)
        return None if c is None else round({"cpu_s": c[0] + c[1], "cpu_user_s": c[0],
                                             "cpu_sys_s": c[1]}[name], 3)
    if name in ("off_median_ns", "on_median_ns", "steps"):
        return (run["phases"] or {}).get(name)
    for line in lines:
        if line.startswith(name + ":"):
            v = line.split(":", 1)[1].strip()
            try:
                return float(v)
            except ValueError:
                return v
    node = (run["meta"] or {}).get("run", {})
    if not name.startswith("run."):
        node = (node.get("files") or [{}])[0]
    for part in name.removeprefix("run.").split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def mode_of(run):
    """A run's mode; truth.py's runs have a name instead."""
    return run.get("mode", run.get("name"))


def traced_of(run):
    """A run's traced flag; truth.py's runs say their GPU activity mode
    (null: untraced)."""
    return run["traced"] if "traced" in run else int(run.get("gpu") is not None)


def number(v):
    """@v as a number when it is one written as a string (truth.py's figures)."""
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def runs_table(specs, names, traced=None):
    runs = []
    for spec in specs:
        path, call, want = collect.split_spec(spec)
        load(path)
        runs += [r for r in collect.load_compact(path, call) if (not want or mode_of(r) in want)
                 and (traced is None or bool(traced_of(r)) == traced)]
    print(" ".join(["call", "mode", "rep", "traced"] + names))
    cols = [[] for _ in names]
    for r in runs:
        vals = [number(field(r, n)) for n in names]
        for c, v in zip(cols, vals):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                c.append(v)
        print(" ".join(str(x) for x in [r["call"], mode_of(r), r.get("rep", "-"), traced_of(r)]
                       + vals))
    for name, stat in (("median", statistics.median), ("mean", statistics.fmean), ("sum", sum)):
        vals = [str(round(stat(c), 4)) if c else "-" for c in cols]
        print(" ".join([name, "-", "-", "-"] + vals))


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "build":
        build(a[1])
    elif len(a) == 2 and a[0] == "verify":
        sys.exit(0 if verify(a[1]) else 1)
    elif len(a) == 2 and a[0] == "list":
        list_(a[1])
    elif len(a) == 3 and a[0] == "show":
        show(a[1], a[2])
    elif len(a) == 2 and a[0] == "rerun":
        sys.exit(0 if rerun(a[1]) else 1)
    elif len(a) >= 3 and a[0] == "runs":
        which = {"--traced": True, "--untraced": False}.get(a[1], "all")
        if which != "all":
            a = a[1:]
        if len(a) < 3:
            sys.exit(__doc__.split("\n\n")[-1].strip())
        specs = [x for x in a[1:] if ".jsonl" in x]
        runs_table(specs, a[1 + len(specs):], None if which == "all" else which)
    else:
        sys.exit(__doc__.split("\n\n")[-1].strip())


if __name__ == "__main__":
    main()
