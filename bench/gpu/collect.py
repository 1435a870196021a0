"""collect.py: turn bench/gpu-check.sh's runs.jsonl into results.json and
results.md (one row per workload: planted cause, top finding, overhead,
outputs identical), and copy the seed reports. Numbers come only from the
runs listed; nothing is filled in.
Usage: python3 collect.py RUNS.jsonl OUTDIR BUILDDIR
  RUNS.jsonl may also be a campaign's compact file with a call,
  bench/results/<campaign>/data.jsonl:callN (bench/results_compact.py):
  its runs carry their output lines, meta and phase sums in place of the
  files. The analyses behind the findings columns are not kept there."""
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

# (name, mode) -> planted cause; None = control (expect no HIGH finding);
# "coverage" = run for API coverage only.
PLANTED = {
    ("seed", "w4"): ["data_pipeline_starvation", "cpu_contention_tree"],
    ("seed", "w12"): ["data_pipeline_starvation", "cpu_contention_tree"],
    ("seed", "w0"): ["data_pipeline_starvation", "cpu_contention_tree"],
    ("seed", "small"): ["data_pipeline_starvation", "cpu_contention_tree"],
    ("seed", "direct"): None,
    ("copies", "pageable"): ["pageable_memcpy"],
    ("copies", "pinned"): None,
    ("sync", "every"): ["sync_per_iteration"],
    ("sync", "none"): None,
    ("alloc", "churn"): ["alloc_churn"],
    ("alloc", "cached"): None,
    ("hogged", "hogs"): ["cpu_contention_external"],
    ("hogged", "quiet"): None,
    ("tiny", "loop"): ["launch_bound"],
    ("matmul", "big"): None,
    ("triton", "tiny"): ["launch_bound"],
    ("nvcc", "sync"): ["sync_per_iteration"],
    ("nvcc", "nosync"): None,
    ("ddp", "straggle"): ["rank_straggler"],
    ("ddp", "clean"): None,
    ("twoproc", "straggle"): ["rank_straggler"],
    ("twoproc", "control"): None,
}

FAMILIES = [
    ("launch", re.compile(r"Launch|GraphLaunch")),
    ("copy", re.compile(r"[Mm]emcpy")),
    ("memset", re.compile(r"[Mm]emset")),
    ("sync", re.compile(r"Synchronize|WaitEvent")),
    ("alloc", re.compile(r"Alloc|Malloc|MemCreate|MemMap")),
    ("free", re.compile(r"Free|MemRelease|MemUnmap")),
]


def out_lines(out):
    """The lines of a run's output. @out is the path of its .out file, or the
    lines themselves as a compact results file keeps them; None when there
    is no output."""
    if out is None or isinstance(out, list):
        return out
    try:
        return open(out).read().splitlines()
    except OSError:
        return None


def parse_out(path):
    res, el = None, None
    for line in out_lines(path) or []:
        if line.startswith("result:"):
            res = line.split(":", 1)[1].strip()
        elif line.startswith("elapsed:"):
            el = float(line.split(":", 1)[1])
    return res, el


def parse_cpu(path):
    """The run's CPU times, user and system s of its whole reaped tree: the
    children line of bash's `times` after `cputimes:` (CS_TIMES=1)."""
    lines = out_lines(path)
    try:
        at = lines.index("cputimes:")
        user, sys_ = lines[at + 2].split()
    except (AttributeError, ValueError, IndexError):
        return None
    sec = [int(m) * 60 + float(x) for m, x in (re.fullmatch(r"(\d+)m([\d.]+)s", t).groups()
                                               for t in (user, sys_))]
    return sec[0], sec[1]


def parse_quarters(path):
    """The time of each quarter of the timed steps (ddp.py's `quarters:`)."""
    try:
        for line in out_lines(path) or []:
            if line.startswith("quarters:"):
                return [float(x) for x in line.split()[1:]]
    except ValueError:
        pass
    return None


def paired(plain, traced, parse):
    """(untraced, traced) values of each interleaved pair (same rep) whose
    runs both gave a value through @parse(path)."""
    by_rep = {r["rep"]: parse(r["out"]) for r in plain}
    both = ((by_rep.get(t["rep"]), parse(t["out"])) for t in traced)
    return [(p, t) for p, t in both if p is not None and t is not None]


def quarter_pairs(plain, traced):
    """Per quarter of the timed steps, the overhead of each interleaved pair, %."""
    out = [[], [], [], []]
    for qp, q in paired(plain, traced, parse_quarters):
        if len(q) == len(qp) == 4:
            for k in range(4):
                out[k].append(100 * (q[k] / qp[k] - 1))
    return out if out[0] else None


def interval(stat, groups, n=2000):
    """Bootstrap 95 % interval of @stat(groups), each group resampled on its
    own (fixed seed)."""
    rng = random.Random(1)
    vals = sorted(stat([rng.choices(g, k=len(g)) for g in groups]) for _ in range(n))
    return vals[n // 40], vals[n - 1 - n // 40]


def bootstrap(pairs):
    """Median of @pairs and a bootstrap 95 % interval of it (fixed seed)."""
    return statistics.median(pairs), interval(lambda g: statistics.median(g[0]), [pairs])


def load_json(path):
    if isinstance(path, dict):  # kept in a compact results file
        return path
    try:
        return json.load(open(path)) if path else None
    except (OSError, ValueError):
        return None


def run_file(run):
    """The run file's entry of a traced run's summary json (its meta, else
    its full analysis), {} when there is none."""
    js = load_json(run.get("meta")) or load_json(run.get("json"))
    return ((js or {}).get("run", {}).get("files") or [{}])[0]


def collector_cpu(run):
    """CPU seconds the collector spent on a traced run, or None."""
    ns = run_file(run).get("collector_cpu_ns")
    return None if ns is None else ns / 1e9


SETTLE_NS = 2_000_000  # a phase flips up to a collector poll late: skip steps starting this soon


def read_steps(out):
    """ddp.py's step log beside run output @out: start, then each step's end (ns)."""
    try:
        return [int(x) for x in open(out[:-4] + ".steps").read().split()]
    except (OSError, ValueError):
        return None


def duty_of(run):
    """(duty_ns, t_start_ns) of a traced run of `record --duty`, else (None, None)."""
    f = run_file(run)
    return f.get("duty_ns"), f.get("t_start_ns")


def phase_steps(ends, period, t0):
    """(phase k, ns) of each step of log @ends that starts and ends in phase
    k of a grid of @period ns from @t0, SETTLE_NS or more after k began."""
    for a, b in zip(ends, ends[1:]):
        k = (a - t0) // period
        if (b - t0) // period == k and (a - t0) - k * period >= SETTLE_NS:
            yield k, b - a


def phase_sums(ends, period, t0):
    """{phase k: [ns, steps]} of phase_steps()."""
    sums = {}
    for k, ns in phase_steps(ends, period, t0):
        s = sums.setdefault(k, [0, 0])
        s[0] += ns
        s[1] += 1
    return sums


def sum_ratios(sums):
    """Per on phase k (even) whose two neighbouring off phases have 10 steps
    or more, as it has: its mean step time over the mean of theirs, less 1, in %."""
    mean = {k: t / n for k, (t, n) in sums.items() if n >= 10}
    return [100 * (mean[k] / ((mean[k - 1] + mean[k + 1]) / 2) - 1)
            for k in sorted(mean) if k % 2 == 0 and k - 1 in mean and k + 1 in mean]


def run_phases(run, period, t0=None):
    """phase_sums() of @run's step log on a grid of @period ns from @t0 (its
    first step when None), or None when it logged no steps. A compact
    results file keeps these sums (`phases`) instead of the log, on one grid:
    asking for another one is an error."""
    if "phases" not in run:
        ends = read_steps(run["out"])
        return phase_sums(ends, period, ends[0] if t0 is None else t0) if ends else None
    kept = run["phases"]
    if not kept:
        return None
    if kept["period_ns"] != period or t0 is not None and kept["t0_ns"] != t0:
        raise ValueError(f"run {run.get('mode')} rep {run.get('rep')}: phases kept on a grid of "
                         f"{kept['period_ns']} ns from {kept['t0_ns']}, not {period} from {t0}")
    return {k: [t, n] for k, t, n in kept["sums"]}


def duty_stats(plain, traced):
    """Phase ratios of the traced runs (their own duty grid) and, as a placebo,
    of the untraced runs on a grid of the same period from their first step.
    None when no traced run recorded with --duty and logged its steps."""
    per_run, period = [], None
    for r in traced:
        p, t0 = duty_of(r)
        sums = run_phases(r, p, t0) if p and t0 else None
        if sums is not None:
            per_run.append(sum_ratios(sums))
            period = p
    if not per_run:
        return None
    placebo = [sum_ratios(s) for s in (run_phases(r, period) for r in plain) if s is not None]
    return {"period_ns": period, "traced": per_run, "placebo": placebo}


def load_compact(path, call=None):
    """The runs of compact results file @path (bench/results_compact.py),
    of call @call only when given, in their order, as runs.jsonl lists them;
    each carries its output lines (`out`), summary (`meta`) and phase sums
    (`phases`) in place of the files, and its `call`."""
    runs = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("kind") != "run" or call is not None and rec["call"] != call:
                continue
            run = dict(rec["run"], out=rec["out"], meta=rec["meta"], phases=rec["phases"],
                       json=None, call=rec["call"])
            runs.append(run)
    return runs


def split_spec(spec):
    """PATH[:callN][:MODE,MODE...] -> (PATH, N or None, set of MODEs or None)."""
    path, _, rest = spec.partition(":")
    call = None
    m = re.match(r"call(\d+)(?::|$)", rest)
    if m:
        call, rest = int(m.group(1)), rest[m.end():]
    return path, call, set(rest.split(",")) if rest else None


def families(js):
    fam = {}
    for a in (js or {}).get("apis", []):
        for f, rx in FAMILIES:
            if rx.search(a.get("api", "")):
                fam[f] = fam.get(f, 0) + int(a.get("count", 0))
                break
    return fam


def ratio(traced, plain):
    if not traced or not plain:
        return None
    return statistics.median(traced) / statistics.median(plain) - 1.0


def pair_stats(plain, traced):
    """Overhead per interleaved pair (same rep), in %: the pairs, their
    median and a bootstrap 95 % interval of that median (fixed seed)."""
    pairs = [100 * (t / p - 1) for p, t in paired(plain, traced, lambda o: parse_out(o)[1])
             if p]
    if not pairs:
        return pairs, None, None
    return (pairs,) + bootstrap(pairs)


def cpu_pairs(plain, traced):
    """Per interleaved pair, what tracing added to the tree's CPU time:
    (user s, system s, total as % of the untraced run's timed region)."""
    out = []
    for (cp, el), (c, _) in paired(plain, traced, lambda o: (parse_cpu(o), parse_out(o)[1])):
        if c and cp and el:
            du, ds = c[0] - cp[0], c[1] - cp[1]
            out.append((du, ds, 100 * (du + ds) / el))
    return out


def summarise(group, base_plain=()):
    name, mode = group[0]["name"], group[0]["mode"]
    plain = [r for r in group if r["traced"] == 0] or list(base_plain)
    traced = [r for r in group if r["traced"] == 1]
    outs = {r["traced"]: parse_out(r["out"]) for r in group}
    res_plain = {parse_out(r["out"])[0] for r in plain}
    res_traced = {parse_out(r["out"])[0] for r in traced}
    analysed = [r for r in traced if r.get("json")]
    js = load_json(analysed[-1]["json"]) if analysed else None
    chains = (js or {}).get("chains", [])
    top = chains[0] if chains else None
    planted = PLANTED.get((name, mode), "coverage")
    highs = [c for c in chains if c.get("severity") == "HIGH"]
    if planted == "coverage":
        verdict = "n/a"
    elif planted is None:
        verdict = "ok" if not highs else "HIGH finding on control"
    else:
        verdict = "ok" if top and top.get("cause") in planted else "missed"
    el_p = [parse_out(r["out"])[1] for r in plain if parse_out(r["out"])[1] is not None]
    el_t = [parse_out(r["out"])[1] for r in traced if parse_out(r["out"])[1] is not None]
    pairs, pair_med, pair_ci = pair_stats(plain, traced)
    cpu = cpu_pairs(plain, traced)
    launches = sum(int(a.get("count", 0)) for a in (js or {}).get("apis", [])
                   if a.get("layer") == "driver" and "Launch" in a.get("api", ""))
    return {
        "workload": name, "mode": mode,
        "planted": planted if planted != "coverage" else "coverage only",
        "runs_untraced": len(plain), "runs_traced": len(traced),
        "rc": sorted({r["rc"] for r in group}),
        "wall_untraced_s": [r["wall_ns"] / 1e9 for r in plain],
        "wall_traced_s": [r["wall_ns"] / 1e9 for r in traced],
        "elapsed_untraced_s": el_p, "elapsed_traced_s": el_t,
        "overhead_wall_pct": None if ratio([r["wall_ns"] for r in traced], [r["wall_ns"] for r in plain]) is None
        else 100 * ratio([r["wall_ns"] for r in traced], [r["wall_ns"] for r in plain]),
        "overhead_elapsed_pct": None if ratio(el_t, el_p) is None else 100 * ratio(el_t, el_p),
        "overhead_pairs_pct": pairs,
        "overhead_pair_median_pct": pair_med,
        "overhead_pair_ci95_pct": pair_ci,
        "cpu_added_pairs": cpu,
        "quarter_pairs_pct": quarter_pairs(plain, traced),
        "duty_phase_pct": duty_stats(plain, traced),
        "collector_cpu_s": [c for c in map(collector_cpu, traced) if c is not None],
        "mem_total_kb": [r.get("mem_total_kb") for r in group],
        "cpu_untraced_s": [parse_cpu(r["out"]) for r in plain],
        "cpu_traced_s": [parse_cpu(r["out"]) for r in traced],
        "outputs_identical": bool(res_plain) and res_plain == res_traced and None not in res_plain,
        "top_cause": top.get("cause") if top else None,
        "top_severity": top.get("severity") if top else None,
        "findings": [(c.get("severity"), c.get("cause")) for c in chains],
        "verdict": verdict,
        "families": families(js),
        "driver_launches": launches,
        "kernel_names": (js or {}).get("run", {}).get("kernel_names"),
        "sampler_tier": (js or {}).get("run", {}).get("sampler_tier"),
        "json": analysed[-1]["json"] if analysed else None,
        "run": analysed[-1]["run"] if analysed else None,
    }


def add_profiler_overhead(rows, groups):
    """torch.profiler runs (mode X-profiler, untraced by us) against the
    untraced runs of mode X: the same kind of overhead figure as ours."""
    for r in rows:
        if not r["mode"].endswith("-profiler"):
            continue
        base = groups.get((r["workload"], r["mode"][:-len("-profiler")]), [])
        plain = [b for b in base if b["traced"] == 0]
        el_b = [parse_out(b["out"])[1] for b in plain if parse_out(b["out"])[1] is not None]
        ov = ratio(r["elapsed_untraced_s"], el_b)
        r["planted"] = "torch.profiler comparison"
        r["overhead_elapsed_pct"] = None if ov is None else 100 * ov
        ovw = ratio(r["wall_untraced_s"], [b["wall_ns"] / 1e9 for b in plain])
        r["overhead_wall_pct"] = None if ovw is None else 100 * ovw
        r["outputs_identical"] = bool(el_b) and {parse_out(b["out"])[0] for b in plain} == \
            {parse_out(x["out"])[0] for x in groups[(r["workload"], r["mode"])]}


def fmt(v, f="{:+.1f}%"):
    return "-" if v is None else f.format(v)


def write_md(rows, path, host):
    with open(path, "w") as f:
        f.write(f"# cudaspy GPU check\n\n{host}\n\n")
        f.write("| workload | planted cause | top finding | verdict | overhead (in-process) | overhead (wall) | outputs identical | families seen |\n")
        f.write("|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            planted = r["planted"] if r["planted"] else "none (control)"
            if isinstance(planted, list):
                planted = " or ".join(planted)
            top = f"{r['top_severity']} {r['top_cause']}" if r["top_cause"] else "no finding"
            fam = ", ".join(f"{k} {v}" for k, v in sorted(r["families"].items()))
            f.write(f"| {r['workload']} {r['mode']} | {planted} | {top} | {r['verdict']} | "
                    f"{fmt(r['overhead_elapsed_pct'])} | {fmt(r['overhead_wall_pct'])} | "
                    f"{'yes' if r['outputs_identical'] else 'NO'} | {fam} |\n")


def write_overhead_md(rows, path):
    """The rows with at least 3 interleaved pairs: their overhead in detail."""
    rows = [r for r in rows if len(r.get("overhead_pairs_pct") or []) >= 3]
    if not rows:
        return
    with open(path, "a") as f:
        f.write("\n## Overhead, interleaved pairs (workload's own timed region)\n\n")
        f.write("| workload | pairs | median of pairs | 95 % interval (bootstrap) | each pair | "
                "untraced median s | collector CPU s, median of traced runs |\n")
        f.write("|---|---|---|---|---|---|---|\n")
        for r in rows:
            lo, hi = r["overhead_pair_ci95_pct"]
            each = " ".join(f"{p:+.1f}" for p in r["overhead_pairs_pct"])
            coll = r["collector_cpu_s"]
            f.write(f"| {r['workload']} {r['mode']} | {len(r['overhead_pairs_pct'])} | "
                    f"{r['overhead_pair_median_pct']:+.2f}% | {lo:+.2f}% .. {hi:+.2f}% | {each} | "
                    f"{statistics.median(r['elapsed_untraced_s']):.4f} | "
                    f"{f'{statistics.median(coll):.3f}' if coll else '-'} |\n")
    quarters = [r for r in rows if r.get("quarter_pairs_pct")]
    if quarters:
        with open(path, "a") as f:
            f.write("\n## Overhead by quarter of the timed steps, median of pairs\n\n"
                    "| workload | pairs | 1st | 2nd | 3rd | 4th |\n|---|---|---|---|---|---|\n")
            for r in quarters:
                q = r["quarter_pairs_pct"]
                f.write(f"| {r['workload']} {r['mode']} | {len(q[0])} | " +
                        " | ".join(f"{statistics.median(x):+.1f}%" for x in q) + " |\n")
    rows = [r for r in rows if len(r.get("cpu_added_pairs") or []) >= 3]
    if not rows:
        return
    with open(path, "a") as f:
        f.write("\n## CPU time tracing added to the traced tree, per interleaved pair\n\n"
                "(`times` of the whole reaped tree, traced minus untraced; the sampler's "
                "own CPU is not in it; % of the untraced timed region)\n\n")
        f.write("| workload | pairs | user s, median | system s, median | total, % of timed region: "
                "median | 95 % interval | each pair % |\n|---|---|---|---|---|---|---|\n")
        for r in rows:
            c = r["cpu_added_pairs"]
            med, (lo, hi) = bootstrap([p[2] for p in c])
            each = " ".join(f"{p[2]:+.1f}" for p in c)
            f.write(f"| {r['workload']} {r['mode']} | {len(c)} | "
                    f"{statistics.median(p[0] for p in c):+.3f} | "
                    f"{statistics.median(p[1] for p in c):+.3f} | {med:+.2f}% | "
                    f"{lo:+.2f}% .. {hi:+.2f}% | {each} |\n")


def write_duty_md(rows, path):
    """Rows whose traced runs recorded with --duty: on phases against their
    off neighbours, pooled over runs, and the same on the untraced runs."""
    rows = [r for r in rows if r.get("duty_phase_pct")]
    if not rows:
        return
    with open(path, "a") as f:
        f.write("\n## Recording's cost inside each run (`record --duty`): on phases against "
                "their off neighbours\n\n"
                "(mean step time in a phase; placebo: the untraced runs' steps on a grid of the "
                "same period)\n\n"
                "| workload | period | traced runs | phase pairs | median (95 %) | mean | "
                "per-run medians | placebo pairs | placebo median (95 %) |\n"
                "|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            d = r["duty_phase_pct"]
            pooled = [x for run in d["traced"] for x in run]
            plac = [x for run in d["placebo"] for x in run]
            if not pooled:
                continue
            med, (lo, hi) = bootstrap(pooled)
            pm = " ".join(f"{statistics.median(x):+.2f}" for x in d["traced"] if x)
            if plac:
                pmed, (plo, phi) = bootstrap(plac)
                ptxt = f"{pmed:+.2f}% ({plo:+.2f} .. {phi:+.2f})"
            else:
                ptxt = "-"
            f.write(f"| {r['workload']} {r['mode']} | {d['period_ns'] / 1e6:g} ms | "
                    f"{len(d['traced'])} | {len(pooled)} | {med:+.2f}% ({lo:+.2f} .. {hi:+.2f}) | "
                    f"{statistics.fmean(pooled):+.2f}% | {pm} | {len(plac)} | {ptxt} |\n")


def main():
    runs_path, out, build = sys.argv[1], sys.argv[2], sys.argv[3]
    path, call, _ = split_spec(runs_path)
    if os.path.isfile(path) and path.endswith("data.jsonl"):
        runs = load_compact(path, call)
    else:
        runs = [json.loads(l) for l in open(runs_path) if l.strip()]
    groups = {}
    for r in runs:
        groups.setdefault((r["name"], r["mode"]), []).append(r)
    rows = []
    for g in groups.values():
        base = [b for b in groups.get((g[0]["name"], g[0].get("base") or ""), [])
                if b["traced"] == 0]
        rows.append(summarise(g, base))
    add_profiler_overhead(rows, groups)
    host = os.environ.get("CS_GPU_HOST") or subprocess.run("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; uname -r",
                          shell=True, capture_output=True, text=True).stdout.replace("\n", " · ").strip(" ·")
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": host, "rows": rows}
    json.dump(meta, open(os.path.join(out, "results.json"), "w"), indent=1)
    write_md(rows, os.path.join(out, "results.md"), host)
    write_overhead_md(rows, os.path.join(out, "results.md"))
    write_duty_md(rows, os.path.join(out, "results.md"))
    for r in rows:
        if r["workload"] == "seed" and r["mode"] in ("w4", "direct") and r["json"]:
            txt = r["json"][:-5] + ".txt"
            if os.path.exists(txt):
                shutil.copy(txt, os.path.join(out, f"report-seed-{r['mode']}.txt"))
            if r["mode"] == "w4" and r["run"]:
                subprocess.run([os.path.join(build, "cudaspy-analyze"), "report", "--html",
                                os.path.join(out, "seed-w4.html"), r["run"]])
    print(open(os.path.join(out, "results.md")).read())


if __name__ == "__main__":
    main()
