#!/bin/sh
# memory.sh CASE CUDASPY WORKLOAD DIR: cli.memory_<CASE> (issue 31), real
# recordings (launcher, sampler, shim, fake driver with FAKECUDA_MEM_LIMIT)
# of test/fake/accuracy_workload's memory modes, checked against the fake's
# own numbers:
#   oom      the program's 512 MiB cudaMalloc fails on a 256 MiB device with
#            96 MiB held and it aborts right after: the run still holds the
#            failure (the collector outlives the program), `oom` is the first
#            finding, HIGH, with the size, what was held, the device's free
#            and total memory as the shim read them after the failure.
#   retries  a caching allocator's retry every step: HIGH allocator_retries,
#            its episodes counted, no alloc_churn above LOW, and the peak
#            exactly the fake's: 64 MiB of weights + a 136 MiB block. The
#            Perfetto export has the held-bytes counter up to that peak and
#            the free-memory readings; the HTML report's GPU memory section
#            renders (headless Chromium, when installed).
#   twice    the same with PyTorch's two stages: a first retry after freeing
#            a small block fails too, the second after freeing the big one
#            succeeds: one episode a step, two failed calls in it.
#   vmm      PyTorch's expandable segments: physical pages created, mapped,
#            unmapped and released every step through the driver entry
#            points; the peak is exactly the workload's own (cuMemCreate
#            sizes; cuMemMap places them and is not counted again), and
#            split by allocating API: the pages, and the 8 MiB a library
#            holds through cuMemAlloc_v2 (JSON and the MEMORY line).
#   many     2500 allocations live at once at most, freed out of order: the
#            peak is exactly the workload's and nothing is left held (each
#            free is found by its pointer, collisions in the replay's table
#            and freed entries among them).
# Needs CS_ANALYZE and python3.
set -u
case_=$1 cudaspy=$2 workload=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir" || exit 1
cd "$dir" || exit 1
fail() { echo "FAIL memory_$case_: $*" >&2; exit 1; }
case $case_ in
oom) "$cudaspy" record -q -o run.lmdb --gpu-activity full -- "$workload" oom 0.3 abort \
        >out.txt 2>err.txt
    rc=$?
    [ "$rc" -ne 0 ] || fail "the workload should have aborted (exit $rc)" ;;
retries|twice) "$cudaspy" record -q -o run.lmdb --gpu-activity full -- "$workload" retries \
        1.5 ${case_#retries} >out.txt 2>err.txt || { cat err.txt >&2; fail "record failed"; } ;;
many) "$cudaspy" record -q -o run.lmdb --gpu-activity full -- "$workload" many 1 \
        >out.txt 2>err.txt || { cat err.txt >&2; fail "record failed"; } ;;
vmm) "$cudaspy" record -q -o run.lmdb --gpu-activity full -- "$workload" vmm 0.5 \
        >out.txt 2>err.txt || { cat err.txt >&2; fail "record failed"; } ;;
*) echo "memory.sh: $case_: unknown case" >&2; exit 2 ;;
esac
"$CS_ANALYZE" --json run.lmdb >report.json 2>analyze.err || { cat analyze.err >&2; fail analyze; }
# the allocation records kept while loading and the calls' table read again
# for them (CUDASPY_MREC=scan, as past 64 MB of them) give one report
CUDASPY_MREC=scan "$CS_ANALYZE" --json run.lmdb >rescan.json 2>>analyze.err ||
    { cat analyze.err >&2; fail "analyze (CUDASPY_MREC=scan)"; }
cmp -s report.json rescan.json || fail "kept and rescanned allocation records differ"
"$CS_ANALYZE" --color never run.lmdb >report.txt 2>>analyze.err || { cat analyze.err >&2; fail text; }
python3 - "$case_" <<'PY' || fail "report does not match (report.json in $PWD)"
import json, sys
case, d = sys.argv[1], json.load(open("report.json"))
MIB = 1 << 20
chains, mem = d["chains"], d["memory"]
def need(cond, what):
    if not cond:
        print("memory_%s: %s" % (case, what), file=sys.stderr)
        sys.exit(1)
procs = mem["processes"]
need(len(procs) == 1, "one process/device row, got %d" % len(procs))
p = procs[0]
if case == "oom":
    need(chains and chains[0]["cause"] == "oom", "oom first, got %s" % [c["cause"] for c in chains])
    f = chains[0]
    need(f["severity"] == "HIGH", "oom HIGH, got %s" % f["severity"])
    o = f["oom"]
    need(o["api"] == "cudaMalloc" and o["bytes"] == 512 * MIB, "asked 512 MiB: %s" % o)
    need(o["held_bytes"] == 96 * MIB, "held 96 MiB: %s" % o["held_bytes"])
    need(o["total_bytes"] == 256 * MIB and o["free_bytes"] == 160 * MIB,
         "device 256 MiB, 160 MiB free: %s" % o)
    need(o["top_holders"] and o["top_holders"][0]["bytes"] == 96 * MIB, "holders: %s" % o)
    need(p["peak_bytes"] == 96 * MIB and p["failures"] == 1 and p["retries"] == 0, "row: %s" % p)
    whys = [r["why"] for r in p["readings"]]
    need(whys == ["first_allocation", "out_of_memory"], "readings: %s" % whys)
    need(all(r["others_bytes"] == 0 for r in p["readings"]),
         "the fake device has nothing else on it: %s" % p["readings"])
    need(not any(a["api"] == "cuMemGetInfo_v2" for a in d["apis"]),
         "the tracer's readings are not the program's calls")
elif case in ("vmm", "many"):
    truth = json.loads([l for l in open("out.txt") if l.startswith("cudaspy-truth: ")][-1][15:])
    need(p["peak_bytes"] == truth["peak_bytes"],
         "peak %d, the workload's %d" % (p["peak_bytes"], truth["peak_bytes"]))
    need(p["held_end_bytes"] == 0 and p["allocations"] == p["frees"] > 0, "row: %s" % p)
    # no stacks: one site held all of it at the peak
    need([h["bytes"] for h in p["top_holders"]] == [p["peak_bytes"]],
         "holders at the peak: %s" % p["top_holders"])
    need(not any(c["cause"] in ("oom", "allocator_retries") for c in chains), "no failures")
    # by allocating API at the peak: vmm's pages and the library's own memory
    lib = truth.get("lib_bytes", 0)
    want = [("cuMemCreate", p["peak_bytes"] - lib), ("cuMemAlloc_v2", lib)] if case == "vmm" \
        else [("cudaMalloc", p["peak_bytes"])]
    need([(a["api"], a["bytes"]) for a in p["peak_by_api"]] == want,
         "by API at the peak: %s, want %s" % (p["peak_by_api"], want))
    if case == "vmm":
        rep = open("report.txt").read()
        need("; at the peak cuMemCreate %.1f MiB, cuMemAlloc_v2 8.0 MiB" % (want[0][1] / MIB)
             in rep, "the MEMORY line names both APIs")
else:
    truth = json.loads([l for l in open("out.txt") if l.startswith("cudaspy-truth: ")][-1][15:])
    top = [c for c in chains if c["cause"] != "gpu_bound"][0]
    need(top["cause"] == "allocator_retries" and top["severity"] == "HIGH",
         "top allocator_retries HIGH, got %s %s" % (top["cause"], top["severity"]))
    need(top["owns"] == ["alloc_retry"], "owns: %s" % top["owns"])
    steps = d["steps"]["count"]
    need(p["retries"] == truth["episodes"] and mem["retry_episodes"] == p["retries"],
         "%s episodes, the workload's %s" % (p["retries"], truth["episodes"]))
    r = top["retries"]
    need(r["episodes"] == truth["episodes"] and
         r["failed_calls"] == truth["episodes"] * (2 if case == "twice" else 1),
         "retries: %s, the workload's %d episodes" % (r, truth["episodes"]))
    need(p["peak_bytes"] == (208 if case == "twice" else 200) * MIB,
         "peak exactly the fake's, got %d" % p["peak_bytes"])
    need(p["total_bytes"] == 320 * MIB, "device 320 MiB: %s" % p["total_bytes"])
    churn = [c for c in chains if c["cause"] == "alloc_churn"]
    need(case == "twice" or not churn or churn[0]["severity"] == "LOW",
         "churn counted twice: %s" % churn)
    need(not any(c["cause"] == "oom" for c in chains), "retried failures are no oom")
PY
[ "$case_" = retries ] || exit 0
"$CS_ANALYZE" export --chrome trace.json run.lmdb 2>export.err || { cat export.err >&2; fail export; }
held=$(grep -c '"name":"GPU 0 memory held"' trace.json)
allocs=$(python3 -c 'import json; print(json.load(open("report.json"))["memory"]["processes"][0]["allocations"])')
[ "$held" -ge "$allocs" ] || fail "export: $held points of the held-memory counter, $allocs allocations"
grep -q '"name":"GPU 0 memory held","args":{"bytes":209715200}' trace.json ||
    fail "export: no point at the 200 MiB peak"
grep -q '"name":"GPU 0 memory free"' trace.json || fail "export: no free-memory reading"
"$CS_ANALYZE" report --html r.html run.lmdb 2>html.err || { cat html.err >&2; fail "html report"; }
command -v chromium >/dev/null || exit 0
timeout 90 chromium --headless=new --disable-gpu --no-sandbox --no-first-run \
    --user-data-dir="$dir/profile" --dump-dom "file://$dir/r.html" >dom.html 2>chromium.log ||
    fail "chromium --dump-dom failed"
grep -q '<title>cudaspy report: ok</title>' dom.html || fail "the page did not finish rendering"
grep -q 'GPU memory</h2>' dom.html || fail "no GPU memory section"
grep -q 'peak 200.0 MiB' dom.html || fail "the GPU memory section does not give the peak"
