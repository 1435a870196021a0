#!/usr/bin/env python3
"""conc_pairs.py: the seed W=4's tracing overhead from bench/gpu-check.sh's
seedconc part, where each round ran two copies at once on disjoint CPU sets
(sides a and b), one traced, the traced side swapping every round, and the
placebo rounds ran both untraced.

Usage: conc_pairs.py DIR [DIR...]
  DIR holds one call's runs.jsonl with its .out files (paths are looked up
  by file name in DIR), or is FILE:callN, call N of a campaign's compact
  file bench/results/<campaign>/data.jsonl (bench/results_compact.py);
  rounds of several DIRs are pooled.

Prints, over the rounds (modes conc-a and conc-b, same rep): each round's
overhead, 100 * (elapsed traced / elapsed untraced - 1) %, marked with the
traced side; its median and mean with bootstrap 95 % intervals (rounds
resampled, fixed seed); the side-balanced mean, the mean of the a-traced
and the b-traced rounds' means, which cancels a constant difference between
the sides. Then the placebo rounds (concp-a, concp-b): a over b, each round,
mean and SD. Then the traced tree's CPU time (user + system, the `cputimes:`
block) over the untraced tree's, each round. A run with rc != 0 or no
elapsed drops its round, with a line on stderr."""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collect  # noqa: E402

PROG = "conc_pairs.py"


def runs_of(d):
    """The seed runs of DIR @d's runs.jsonl, their .out paths moved into @d,
    or of the call of a compact file that @d names."""
    path, call, _ = collect.split_spec(d)
    if os.path.isfile(path):
        runs = collect.load_compact(path, call)
    else:
        runs = [json.loads(line) for line in open(os.path.join(d, "runs.jsonl")) if line.strip()]
        for r in runs:
            r["out"] = os.path.join(d, os.path.basename(r.get("out", "")))
    runs = [r for r in runs if r.get("name") == "seed"]
    for r in runs:
        r["dir"] = d
    return runs


def sides_of(runs, mode):
    """{(dir, rep): {"a": run, "b": run}} of the runs of MODE-a and MODE-b."""
    rounds = {}
    for r in runs:
        base, _, side = r["mode"].rpartition("-")
        if base == mode and side in ("a", "b"):
            rounds.setdefault((r["dir"], r["rep"]), {})[side] = r
    return rounds


def usable(key, rnd):
    """@rnd's runs, each with its elapsed s, or None (with a note) when the
    round lacks a side, a run failed, or one printed no elapsed."""
    where = f"{key[0]} rep {key[1]}"
    for side in "ab":
        r = rnd.get(side)
        if r is None:
            print(f"{PROG}: {where}: no side {side}, round skipped", file=sys.stderr)
            return None
        if r["rc"] != 0:
            print(f"{PROG}: {where}: side {side} rc {r['rc']}, round skipped", file=sys.stderr)
            return None
        r["elapsed"] = collect.parse_out(r["out"])[1]
        if r["elapsed"] is None:
            print(f"{PROG}: {where}: side {side} has no elapsed ({r['out']}), round skipped",
                  file=sys.stderr)
            return None
    return rnd


def traced_rounds(runs):
    """[(side traced, untraced run, traced run)] of each usable conc round
    with exactly one side traced."""
    out = []
    for key, rnd in sorted(sides_of(runs, "conc").items()):
        if not usable(key, rnd):
            continue
        t = [s for s in "ab" if rnd[s]["traced"] == 1]
        if len(t) != 1:
            print(f"{PROG}: {key[0]} rep {key[1]}: {len(t)} sides traced, round skipped",
                  file=sys.stderr)
            continue
        out.append((t[0], rnd["b" if t[0] == "a" else "a"], rnd[t[0]]))
    return out


def balanced(groups):
    return statistics.fmean(statistics.fmean(g) for g in groups)


def cpu_s(run):
    c = collect.parse_cpu(run["out"])
    return None if c is None else c[0] + c[1]


def report_overhead(rounds):
    ov = [100 * (t["elapsed"] / u["elapsed"] - 1) for _, u, t in rounds]
    print(f"rounds {len(ov)} (letter: the traced side), overhead %:")
    print("  " + " ".join(f"{s}{x:+.2f}" for (s, _, _), x in zip(rounds, ov)))
    med, (lo, hi) = collect.bootstrap(ov)
    mlo, mhi = collect.interval(lambda g: statistics.fmean(g[0]), [ov])
    print(f"  median {med:+.2f} %, 95 % {lo:+.2f} .. {hi:+.2f}")
    print(f"  mean {statistics.fmean(ov):+.2f} %, 95 % {mlo:+.2f} .. {mhi:+.2f}")
    by = [[x for (s, _, _), x in zip(rounds, ov) if s == side] for side in "ab"]
    if all(by):
        blo, bhi = collect.interval(balanced, by)
        print(f"  side-balanced mean {balanced(by):+.2f} %, 95 % {blo:+.2f} .. {bhi:+.2f} "
              f"(a traced: {len(by[0])} rounds, mean {statistics.fmean(by[0]):+.2f}; "
              f"b traced: {len(by[1])}, {statistics.fmean(by[1]):+.2f})")
    else:
        print("  side-balanced mean: - (rounds of one traced side only)")
    plain = statistics.median(u["elapsed"] for _, u, _ in rounds)
    print(f"  untraced elapsed: median {plain:.3f} s")


def report_placebo(runs, n_rounds):
    rounds = [rnd for key, rnd in sorted(sides_of(runs, "concp").items()) if usable(key, rnd)]
    if not rounds:
        print("placebo rounds 0")
        return
    pl = [100 * (r["a"]["elapsed"] / r["b"]["elapsed"] - 1) for r in rounds]
    print(f"placebo rounds {len(pl)}, both untraced, a over b %:")
    print("  " + " ".join(f"{x:+.2f}" for x in pl))
    if len(pl) < 2:
        print(f"  mean {pl[0]:+.2f} % (one round: no SD)")
        return
    sd = statistics.stdev(pl)
    print(f"  mean {statistics.fmean(pl):+.2f} % (the sides' asymmetry), SD {sd:.2f} % "
          f"(one round's noise; over {n_rounds} rounds a mean's SE ~ {sd / n_rounds ** 0.5:.2f} %)")


def report_cpu(rounds):
    cpu = [(s, cpu_s(u), cpu_s(t)) for s, u, t in rounds]
    pct = [(s, 100 * (ct / cu - 1)) for s, cu, ct in cpu if cu and ct is not None]
    if not pct:
        print("tree CPU: - (no cputimes: blocks; CS_TIMES=1)")
        return
    print(f"tree CPU (user + system), traced over untraced, {len(pct)} rounds, %:")
    print("  " + " ".join(f"{s}{x:+.2f}" for s, x in pct))
    xs = [x for _, x in pct]
    cus = [cu for _, cu, ct in cpu if cu and ct is not None]
    print(f"  median {statistics.median(xs):+.2f} %, mean {statistics.fmean(xs):+.2f} %; "
          f"untraced tree median {statistics.median(cus):.2f} s")


def main():
    if len(sys.argv) < 2:
        sys.exit(next(l for l in __doc__.splitlines() if l.startswith("Usage:")))
    runs = []
    for d in sys.argv[1:]:
        try:
            runs += runs_of(d)
        except OSError as e:
            sys.exit(f"{PROG}: {e.filename}: {e.strerror}")
    rounds = traced_rounds(runs)
    if not rounds:
        sys.exit(f"{PROG}: no usable seedconc round (seed, modes conc-a and conc-b) "
                 f"in {' '.join(sys.argv[1:])}")
    report_overhead(rounds)
    report_placebo(runs, len(rounds))
    report_cpu(rounds)


if __name__ == "__main__":
    main()
