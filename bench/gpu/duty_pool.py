#!/usr/bin/env python3
"""duty_pool.py: pool the `record --duty` measures of several GPU calls.

Usage: duty_pool.py DIR[:MODE,MODE...] ...
       duty_pool.py FILE:callN[:MODE,MODE...] ...
  DIR holds one call's runs.jsonl with its .out, .steps and .meta.json files
  (paths are looked up by file name in DIR). FILE is a campaign's compact
  file, bench/results/<campaign>/data.jsonl (bench/results_compact.py),
  which keeps the same runs of each call N, with phase sums in place of
  the step logs. MODEs pick the run modes (e.g. duty-s4000-base); default
  every traced mode. The untraced runs of the modes named give the placebo:
  the same analysis on a grid of the traced runs' period from their first
  step.

Prints, for the pooled phase pairs, the median with two 95 % intervals:
resampling phase pairs (what collect.py reports for one call) and
resampling whole runs, which also counts how much runs differ from each
other (placebos in the runs themselves are not repeated here); then the
mean's interval, resampling runs (the phase ratios have a long right tail,
so it is wider), and how many phase pairs lie beyond +-10 %."""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collect  # noqa: E402


def runs_of(spec):
    d, call, want = collect.split_spec(spec)
    if os.path.isfile(d):
        runs = collect.load_compact(d, call)
    else:
        runs = [json.loads(line) for line in open(os.path.join(d, "runs.jsonl"))]
        for r in runs:
            for k in ("out", "meta"):
                if r.get(k):
                    r[k] = os.path.join(d, os.path.basename(r[k]))
    return [r for r in runs if not (want and r["mode"] not in want or not (want or r.get("traced")))]


def run_bootstrap(per_run, stat=statistics.median):
    """95 % interval of @stat (median or mean) of the pooled pairs,
    resampling runs: the runs are the one group collect.interval resamples."""
    return collect.interval(lambda g: stat([x for run in g[0] for x in run]), [per_run])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    runs = [r for spec in sys.argv[1:] for r in runs_of(spec)]
    traced = [r for r in runs if r.get("traced")]
    st = collect.duty_stats([r for r in runs if not r.get("traced")], traced)
    if st is None:
        sys.exit("duty_pool.py: no run recorded with --duty and logged its steps")
    per_run = [p for p in st["traced"] if p]
    pooled = [x for p in per_run for x in p]
    med, (lo, hi) = collect.bootstrap(pooled)
    rlo, rhi = run_bootstrap(per_run)
    print(f"runs {len(per_run)}, phase pairs {len(pooled)}: median {med:+.2f} %, "
          f"mean {statistics.mean(pooled):+.2f} %")
    mlo, mhi = run_bootstrap(per_run, statistics.mean)
    print(f"  95 % over pairs {lo:+.2f} .. {hi:+.2f} %; over runs {rlo:+.2f} .. {rhi:+.2f} %")
    print(f"  mean: 95 % over runs {mlo:+.2f} .. {mhi:+.2f} %")
    print("  per-run medians " + " ".join(f"{statistics.median(p):+.2f}" for p in per_run))
    print(f"  tails: {sum(x > 10 for x in pooled)} phase pairs above +10 % (max {max(pooled):+.2f}),"
          f" {sum(x < -10 for x in pooled)} below -10 % (min {min(pooled):+.2f})")
    placebo = [x for p in st["placebo"] for x in p]
    if placebo:
        pmed, (plo, phi) = collect.bootstrap(placebo)
        print(f"  placebo: {len(st['placebo'])} untraced runs, {len(placebo)} phase pairs: median "
              f"{pmed:+.2f} % ({plo:+.2f} .. {phi:+.2f} over pairs)")


if __name__ == "__main__":
    main()
