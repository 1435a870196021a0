"""slicecost.py: what sampled GPU activity costs a launch-bound loop, inside
one process (gpu-check.sh slicecost; issue 22's cost point).

workloads.py chunks times a.add_(1.0) in chunks of 1000 launches and logs
each chunk's CLOCK_MONOTONIC span (CS_CHUNK_LOG). The run is recorded with
GPU activity sampled (the default 100 ms of every second); the analyzer's
MCP get_gpu_timeline says, in 4 ms bins, where GPU activity covered the
run (a bin is null where no slice was on). Each chunk is then inside a
slice (every bin it touches covered), outside (none covered) or across a
switch (attach or detach). Within the one process:
- in-slice cost: median chunk inside less median chunk outside, per launch;
- averaged cost: the loop's mean per launch less the median chunk outside,
  which counts the slices, the switches and everything else that slows
  chunks; the same figure of a run recorded with GPU activity off (no
  slices: mean less median) is that everything else, and is subtracted.
Record-off and sampled runs alternate, ROUNDS of each.

Writes OUT/summary.json and OUT/runs.jsonl. Usage: python3 slicecost.py
BUILD OUT RUNS [ROUNDS=3]   (env PYTHON, CS_PIN, SLICE_N launches a run,
SLICE_SAMPLE the sampled runs' CUDASPY_GPU_SAMPLE: 100/60000 opens one slice
at start-up and none in the loop, which leaves CUPTI's cost after
cuptiFinalize alone against the record-off runs)
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
W = os.path.join(HERE, "workloads.py")
BIN_MS, WIN_MS = 4, 2000  # 500 bins a get_gpu_timeline call


def mcp_bins(analyze, path, span_ms):
    """[(start, end, covered?)] of the run's GPU timeline bins, ns from the
    run's start, in order. A window is clipped to the run, so each call's
    bins are placed by its own start_ms and bin_ns."""
    reqs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "slicecost", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for k, w in enumerate(range(0, span_ms, WIN_MS)):
        reqs.append({"jsonrpc": "2.0", "id": 10 + k, "method": "tools/call",
                     "params": {"name": "get_gpu_timeline",
                                "arguments": {"since_ms": w, "until_ms": w + WIN_MS,
                                              "bins": WIN_MS // BIN_MS}}})
    p = subprocess.run([analyze, "mcp", path], input="".join(json.dumps(r) + "\n" for r in reqs),
                       capture_output=True, text=True, timeout=600)
    cov = []
    for line in p.stdout.splitlines():
        r = json.loads(line)
        if r.get("id", 0) < 10 or "result" not in r:
            continue
        b = r["result"]["structuredContent"]["bins"]
        t0, w = b["start_ms"] * 10**6, b["bin_ns"]
        cov += [(t0 + i * w, t0 + (i + 1) * w, v is not None) for i, v in enumerate(b["busy_pct"])]
    return sorted(cov)


def classify(chunks, t_start, cov):
    """Chunks as (us a launch, 'in' | 'out' | 'switch'); bins outside
    every window count as not covered."""
    out, k = [], 0
    for c0, c1 in chunks:
        a, b = c0 - t_start, c1 - t_start
        while k < len(cov) and cov[k][1] <= a:
            k += 1
        seen = {c for x, y, c in cov[k:k + 64] if x < b and y > a} or {False}
        out.append(((c1 - c0) / 1e3 / 1000, "in" if seen == {True} else
                    "out" if seen == {False} else "switch"))
    return out


def one(build, runs, py, pin, gpu, n, log):
    path = os.path.join(runs, f"slicecost-{gpu}-{n}.lmdb")
    chunks_f = path + ".chunks"
    cmd = [os.path.join(build, "cudaspy"), "record", "-q", "-o", path, "--gpu-activity", gpu,
           "--", py, W, "chunks", os.environ.get("SLICE_N", "1500000"), "1000"]
    if pin:
        cmd = ["taskset", "-c", pin] + cmd
    env = dict(os.environ, PYTHONUNBUFFERED="1", CUDASPY_QUIET="1", CS_CHUNK_LOG=chunks_f)
    if gpu == "sampled" and os.environ.get("SLICE_SAMPLE"):
        env["CUDASPY_GPU_SAMPLE"] = os.environ["SLICE_SAMPLE"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    row = {"gpu": gpu, "n": n, "rc": p.returncode, "stderr_tail": p.stderr[-300:]}
    if p.returncode != 0:
        log.write(json.dumps(row) + "\n")
        return row
    analyze = os.path.join(build, "cudaspy-analyze")
    j = json.loads(subprocess.run([analyze, "--json", path], capture_output=True, text=True,
                                  timeout=600).stdout)
    t_start = j["run"]["files"][0]["t_start_ns"]
    chunks = [tuple(map(int, line.split())) for line in open(chunks_f)]
    span_ms = (chunks[-1][1] - t_start) // 10**6 + WIN_MS
    cov = mcp_bins(analyze, path, span_ms) if gpu != "off" else []
    cls = classify(chunks, t_start, cov)
    per = {k: [v for v, c in cls if c == k] for k in ("in", "out", "switch")}
    mean = sum(v for v, _ in cls) / len(cls)
    med = {k: (statistics.median(v) if v else None) for k, v in per.items()}
    base = med["out"]
    row.update(chunks=len(cls), counts={k: len(v) for k, v in per.items()},
               median_us=med, mean_us=round(mean, 4), gpu_source=j.get("gpu", {}).get("source"),
               coverage_pct=j.get("gpu", {}).get("coverage_pct"),
               excess_us=round(mean - base, 4) if base else None,
               in_slice_us=round(med["in"] - base, 4) if med["in"] and base else None,
               switch_ms_total=round(sum(v - base for v in per["switch"]) * 1000 / 1e3, 3)
               if base else None)  # ms the switch chunks took over the outside rate
    log.write(json.dumps(row) + "\n")
    log.flush()
    print("slicecost: " + json.dumps({k: row.get(k) for k in
                                      ("gpu", "n", "counts", "median_us", "mean_us",
                                       "excess_us", "in_slice_us")}), file=sys.stderr)
    for f in (path, path + "-lock", chunks_f):
        if os.path.exists(f):
            os.remove(f)
    return row


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    build, out, runs = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    os.makedirs(out, exist_ok=True)
    os.makedirs(runs, exist_ok=True)
    py, pin = os.environ.get("PYTHON", "python3"), os.environ.get("CS_PIN", "")
    log = open(os.path.join(out, "runs.jsonl"), "a")
    res = {"off": [], "sampled": []}
    for r in range(rounds):
        for gpu in (("off", "sampled") if r % 2 == 0 else ("sampled", "off")):
            row = one(build, runs, py, pin, gpu, r, log)
            if row.get("excess_us") is not None:
                res[gpu].append(row)
    med = lambda xs: round(statistics.median(xs), 4) if xs else None
    summary = {
        "rounds": rounds,
        "off_excess_us": med([x["excess_us"] for x in res["off"]]),
        "sampled_excess_us": med([x["excess_us"] for x in res["sampled"]]),
        "in_slice_us": med([x["in_slice_us"] for x in res["sampled"] if x["in_slice_us"]]),
        "cost_pairs_us": [round(s["excess_us"] - o["excess_us"], 4)
                          for s, o in zip(res["sampled"], res["off"])],
        "chunks_in_pct": med([100.0 * x["counts"]["in"] / x["chunks"] for x in res["sampled"]]),
        "chunks_switch_pct": med([100.0 * x["counts"]["switch"] / x["chunks"]
                                  for x in res["sampled"]]),
    }
    if summary["cost_pairs_us"]:
        summary["cost_us"] = med(summary["cost_pairs_us"])
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
