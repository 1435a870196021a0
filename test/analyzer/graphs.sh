#!/bin/sh
# graphs.sh MODE CUDASPY WORKLOAD DIR: cli.graphs_<mode>, CUDA graphs on the
# fake driver's simulated GPU (issue 31; test/fake/accuracy_workload.c modes
# graphs and recapture, recorded with GPU activity full):
#   nodes      a graph captured once and replayed: the kernels its replays ran
#              are counted by name (kernels_in_graphs, top_kernels_by_count),
#              and the graph's GPU time and the GPU busy time are the
#              workload's (its nodes' simulated times x its launches), exact;
#              the Perfetto export names graph and node on the GPU slices;
#              the steps are the replays; the text report lists them too
#   recapture  captured and instantiated anew every step: graph_recapture is
#              the top finding, HIGH, its impact within 20 % of the meter; it
#              counts the builds per step and finds the eager warm-up runs
#   healthy    the graph replay loop (2 eager steps, then one build of 100 ms
#              that the replays pay for: graph_build_once, not graph_build):
#              no MEDIUM or HIGH finding (outside CPU
#              contention up to the run-queue delay the workload metered, as
#              the accuracy corpus allows it)
# Needs CS_ANALYZE and python3.
set -u
mode=$1 cudaspy=$2 workload=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir" || exit 1
. "$(dirname "$0")/shield.sh"
case $mode in
nodes | healthy) wl=graphs secs=1.5 ;;
recapture) wl=recapture secs=1.5 ;;
*) echo "graphs: unknown mode $mode" >&2; exit 2 ;;
esac
shield "$cudaspy" record -q -o "$dir/run.lmdb" --gpu-activity full -- "$workload" "$wl" "$secs" \
    >"$dir/out.log" 2>&1 || { cat "$dir/out.log" >&2; echo "graphs: recording failed" >&2; exit 1; }
"$CS_ANALYZE" --json --by kernel "$dir/run.lmdb" >"$dir/report.json" ||
    { echo "graphs: analysis failed" >&2; exit 1; }
if [ "$mode" = nodes ]; then
    "$CS_ANALYZE" export --chrome "$dir/trace.json" "$dir/run.lmdb" ||
        { echo "graphs: export failed" >&2; exit 1; }
    "$CS_ANALYZE" --by kernel --color never "$dir/run.lmdb" >"$dir/report.txt" ||
        { echo "graphs: text report failed" >&2; exit 1; }
fi
exec python3 - "$mode" "$dir" <<'PY'
import json, re, sys

mode, d = sys.argv[1], sys.argv[2]
out = open(d + "/out.log").read()
truth = json.loads(out.split("cudaspy-truth: ")[-1].splitlines()[0])
rep = json.load(open(d + "/report.json"))
bad = []

def check(ok, what):
    if not ok:
        bad.append(what)

if mode == "nodes":
    nodes = re.findall(r"graph node (\d+) (\S+) (?:\d+ bytes )?(\d+) ns", out)
    launches, eager = truth["graph_launches"], truth["graph_eager"]
    want, every = {}, {}
    for _, name, ns in nodes:
        if name != "memcpy_htod":
            for w, n in ((want, launches), (every, launches + eager)):
                w.setdefault(name, [0, 0])
                w[name][0] += n
                w[name][1] += n * int(ns)
    got = {k["kernel"]: [k["count"], k["total_ns"]] for k in rep["kernels_in_graphs"]}
    check(got == want, "kernels_in_graphs %s, want %s" % (got, want))
    top = {k["kernel"]: [k["count"], k["total_ns"]] for k in rep["gpu"]["top_kernels_by_count"]}
    check(top == every, "top_kernels_by_count %s, want %s" % (top, every))
    g = rep["gpu"]["graphs"]
    gpu_ns = launches * truth["graph_gpu_ns"]
    check(g["kernels"] == sum(v[0] for v in want.values()), "graphs.kernels %d" % g["kernels"])
    check(g["copies"] == launches and g["memsets"] == 0, "graphs.copies %d" % g["copies"])
    check(g["graphs"] == 1 and g["nodes"] == len(nodes), "graphs %d, nodes %d" % (g["graphs"], g["nodes"]))
    check(g["launches"] == launches, "graphs.launches %d, want %d" % (g["launches"], launches))
    check(g["gpu_ns"] == gpu_ns, "graphs.gpu_ns %d, want %d" % (g["gpu_ns"], gpu_ns))
    busy = sum(x["busy_ns"] for x in rep["gpu"]["devices"])
    all_ns = (launches + eager) * truth["graph_gpu_ns"]
    check(abs(busy - all_ns) <= 10000, "GPU busy %d ns, want %d" % (busy, all_ns))
    ev = json.load(open(d + "/trace.json"))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    sl = [e for e in ev if e.get("cat") == "gpu.kernel" and "graph" in e.get("args", {})]
    check(len(sl) == g["kernels"], "%d kernel slices name their graph" % len(sl))
    check(len({e["args"]["graph_node"] for e in sl}) == len(nodes) - 1, "graph nodes on slices")
    st = rep["steps"]
    check(st["count"] == launches + eager,
          "%d steps, want %d + %d eager" % (st["count"], launches, eager))
    check(st["mix"]["gpu_busy_pct"] > 85, "steps' GPU busy %.1f %%" % st["mix"]["gpu_busy_pct"])
    txt = open(d + "/report.txt").read()
    check("KERNELS IN CUDA GRAPHS" in txt, "no graph kernels in the text report")
    check("CUDA graphs: 1 graph(s), %d nodes, %d launches ran" % (len(nodes), launches) in txt,
          "no CUDA graphs line in the text report")
    print("graphs: nodes: %d launches, %s, GPU %d ns" % (launches, want, busy))
else:
    ch = [c for c in rep["chains"] if c["severity"] != "LOW" or c["impact_ns"] > 0]
    if mode == "recapture":
        f = [c for c in rep["chains"] if c["cause"] == "graph_recapture"]
        check(bool(ch) and ch[0]["cause"] == "graph_recapture", "top finding %s" % (ch[0]["cause"] if ch else None))
        check(f and f[0]["severity"] == "HIGH", "graph_recapture not HIGH")
        imp = f[0]["impact_ns"] if f else 0
        err = 100.0 * (imp - truth["truth_ns"]) / truth["truth_ns"]
        check(abs(err) <= 20, "impact %d ns, meter %d ns (%+.1f %%)" % (imp, truth["truth_ns"], err))
        check(f and "per step" in " ".join(f[0]["evidence"]), "no count per step")
        check(f and "ran eagerly first" in " ".join(f[0]["evidence"]), "no warm-up found")
        print("graphs: recapture: impact %d ns, meter %d ns (%+.1f %%)" % (imp, truth["truth_ns"], err))
    else:
        runq = truth["runq_ns"] + truth["setup_runq_ns"]
        bk = {b["name"]: b["ns"] for b in rep["account"]["buckets"]}
        build = bk.get("graph_build_once", 0) + bk.get("setup", 0)
        check("graph_build" not in bk, "graph_build %d ns: a build that paid for itself" % bk.get("graph_build", 0))
        check(build >= truth["graph_build_ns"] * 0.8, "the build (%d ns) is not graph_build_once or set-up (%d ns)" % (truth["graph_build_ns"], build))
        for c in rep["chains"]:
            if c["severity"] in ("MEDIUM", "HIGH"):
                ok = c["cause"] == "cpu_contention_external" and c["impact_ns"] <= runq * 1.2 + 10000000
                check(ok, "%s %s %d ns (run-queue delay %d ns)" % (c["severity"], c["cause"], c["impact_ns"], runq))
        print("graphs: healthy: %s" % [(c["cause"], c["severity"]) for c in rep["chains"]])
for b in bad:
    print("graphs: %s: %s" % (mode, b), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
