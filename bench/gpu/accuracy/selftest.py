"""selftest.py: what of gpu-check.sh accuracy can be checked without a GPU
or torch (run it anywhere: python3 bench/gpu/accuracy/selftest.py):

1. extrun.py's parsers on output written with each program's own format
   strings (ext/*/main.py), and the truth line they make;
2. the synthetic corpus: word_language_model's tokenisation and batchify
   arithmetic give the 120 batches the manifest's sizes promise;
3. extrun.py end to end on a stand-in program, with stand-ins for torch's
   DataLoader iterator and torchvision's FakeData: the FakeData size
   patch, the next() meter, the waits kept out of the passed-through
   output, the line stamps, the exit status;
4. run.py end to end with a stand-in `cudaspy` and `cudaspy-analyze`:
   meter, A/B, healthy and set-up cases passing and failing as the
   contract says, a timed-out run, a case skipped for budget;
5. cases.json: every case has the contract's keys and names a workload
   or program that exists.

Prints one line per check; exit status 1 if any fails.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import extrun  # noqa: E402
import run  # noqa: E402

FAILS = []


def check(name, cond, got=""):
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else f": got {got}"))
    if not cond:
        FAILS.append(name)


def stamp(lines, t0=1_000_000_000, dt=10_000_000):
    return [(t0 + i * dt, x + "\n") for i, x in enumerate(lines)]


def imagenet_lines(n, data_s, time_s):
    """ProgressMeter.display of imagenet/main.py, --print-freq 1."""
    fmt = "[{:" + str(len(str(n))) + "d}/" + str(n) + "]"
    out, tsum, dsum = ["=> creating model 'resnet18'", "=> Dummy data is used!"], 0.0, 0.0
    for b in range(1, n + 1):
        d, t = (2.5, 3.0) if b == 1 else (data_s, time_s)
        tsum, dsum = tsum + t, dsum + d
        meters = ["Time {:6.3f} ({:6.3f})".format(t, tsum / b),
                  "Data {:6.3f} ({:6.3f})".format(d, dsum / b),
                  "Loss {:.4e} ({:.4e})".format(6.9, 6.9),
                  "Acc@1 {:6.2f} ({:6.2f})".format(0.0, 0.0),
                  "Acc@5 {:6.2f} ({:6.2f})".format(1.56, 0.5)]
        out.append("\t".join(["Epoch: [0]" + fmt.format(b)] + meters))
    out += ["Test: [1/1]\tTime  0.050 ( 0.050)\tLoss 6.9000e+00 (6.9000e+00)",
            " *   Acc@1 0.000 Acc@5 0.000"]
    return out


def test_parsers():
    lines = stamp(imagenet_lines(41, 0.061, 0.079))
    t = extrun.truth_imagenet(lines, [(lines[3][0] + 1000, 5000), (lines[0][0], 99),
                                      (lines[2][0] - 30, 20)])
    check("imagenet: 40 steps, batch 1 left out", t and t["steps"] == 40, t)
    check("imagenet: truth = sum of Data", t and t["truth_ns"] == round(40 * 0.061 * 1e9), t)
    check("imagenet: loop = sum of Time", t and t["loop_ns"] == round(40 * 0.079 * 1e9), t)
    check("imagenet: meter counts waits inside the loop only", t and t["meter_ns"] == 5000, t)
    check("imagenet: first batch's Data kept aside", t and t["first_data_ns"] == 2_500_000_000, t)
    dc = ["Namespace(dataset='fake', workers=1)", "Random Seed:  1", "Using device: cuda:0"]
    dc += ["[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f"
           % (0, 1, i, 301, 1.3, 2.1, 0.5, 0.4, 0.3) for i in range(301)]
    lines = stamp(dc)
    t = extrun.truth_dcgan(lines, [(lines[5][0], 10), (lines[-1][0] + 5, 10),
                                   (lines[3][0] - 10, 10)])
    check("dcgan: 300 steps", t and t["steps"] == 300, t)
    check("dcgan: loop from first to last iteration line",
          t and t["loop_ns"] == 300 * 10_000_000, t)
    check("dcgan: meter inside the window", t and t["meter_ns"] == 10, t)
    fmt = ("| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | "
           "loss {:5.2f} | ppl {:8.2f}")
    wl = ["Using device: cuda"] + [fmt.format(1, b, 120, 20.0, 31.25 if b > 10 else 40.0,
                                              9.2, 9897.13) for b in range(10, 120, 10)]
    wl += ["-" * 89, "| end of epoch   1 | time:  5.00s | valid loss  9.10 | valid ppl  8955.29"]
    t = extrun.truth_wlm(stamp(wl), [])
    check("word_language_model: 100 steps from 10 lines after the first",
          t and t["steps"] == 100, t)
    check("word_language_model: loop from the first report line's arrival to the last's",
          t and t["loop_ns"] == 10 * 10_000_000, t)
    check("word_language_model: its ms/batch meter kept apart",
          t and t["ms_batch_ns"] == round(10 * 31.25 * 10 * 1e6), t)
    line = extrun.truth_line("dcgan_fake", "data_pipeline_starvation", "dcgan", stamp(dc), [])
    tl = run.truth_of("noise\n" + line + "\n")
    check("truth line: contract keys", tl and set(tl) >= {
        "case", "planted", "truth_ns", "loop_ns", "steps", "setup_ns", "gpu_ns"}, tl)
    check("truth line: none without a loop",
          extrun.truth_line("x", "none", "dcgan", stamp(dc[:3]), []) is None)


def test_corpus():
    with tempfile.TemporaryDirectory() as d:
        extrun.write_corpus(d, "491584,1290,1290,10000")
        n = {}
        for name in ("train", "valid", "test"):
            with open(os.path.join(d, name + ".txt")) as f:
                n[name] = sum(len(x.split()) + 1 for x in f)  # data.Corpus: words + <eos>
    rows = n["train"] // 64  # batchify(corpus.train, 64)
    batches = len(range(0, rows - 1, 64))  # train(): range(0, size(0) - 1, bptt)
    check("corpus: 120 full batches of 64 x 64", batches == 120 and (rows - 1) % 64 == 0,
          (n, rows, batches))
    check("corpus: eval sets of 2+ batches", n["valid"] // 10 > 128, n)


STUBS = {
    "torch/__init__.py": "",
    "torch/utils/__init__.py": "",
    "torch/utils/data/__init__.py": "",
    "torch/utils/data/dataloader.py": """
        class _BaseDataLoaderIter:
            def __init__(self, n):
                self.n = n
            def __next__(self):
                import time
                time.sleep(0.02)
                if self.n == 0:
                    raise StopIteration
                self.n -= 1
                return self.n
            def __iter__(self):
                return self
        """,
    "torchvision/__init__.py": "",
    "torchvision/datasets.py": """
        class FakeData:
            def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10,
                         transform=None):
                self.size = size
        """,
    "ext/dcgan/main.py": """
        import sys
        import torchvision.datasets as dset
        from torch.utils.data.dataloader import _BaseDataLoaderIter
        ds = dset.FakeData(image_size=(3, 64, 64))
        n = ds.size // 64
        print(sys.argv[1:])
        for i, _ in enumerate(_BaseDataLoaderIter(n)):
            print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
                  % (0, 1, i, n, 1.0, 1.0, 0.5, 0.5, 0.5))
        """,
}


def test_item_sync_source():
    """--item-sync and --host-ms rewrite main.py's one line, and only it."""
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "main.py")
        with open(script, "w") as f:
            f.write("total_loss = 0\nfor loss in xs:\n    total_loss += loss.item()\n")
        on, off = extrun.item_sync_source(script, "on"), extrun.item_sync_source(script, "off")
        slow = extrun.item_sync_source(script, "off", "8")
        check("item-sync: on keeps the line", "total_loss += loss.item()\n" in on, on)
        check("item-sync: off keeps the sum on the GPU", "loss.detach()\n" in off, off)
        check("host-ms: the line then waits 8 ms",
              "loss.detach(); __import__('time').sleep(8.0 / 1000)\n" in slow, slow)
        ns = {"xs": [], "__builtins__": __builtins__}
        exec(compile(slow, script, "exec"), ns)
        check("host-ms: the source still runs", ns["total_loss"] == 0, ns)


def test_extrun():
    with tempfile.TemporaryDirectory() as d:
        for name, text in STUBS.items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as f:
                f.write(textwrap.dedent(text))
        code = ("import sys, extrun; extrun.EXT = sys.argv[1]; "
                "sys.exit(extrun.parent(sys.argv[2:]))")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([d, HERE]))
        p = subprocess.run([sys.executable, "-c", code, os.path.join(d, "ext"), "--case",
                            "dcgan_fake", "--planted", "data_pipeline_starvation", "--fakedata",
                            "1000:640", "dcgan", "--", "--workers", "1"],
                           env=env, capture_output=True, text=True, timeout=60)
    out = p.stdout.splitlines()
    tl = run.truth_of(p.stdout)
    check("extrun: exit 0", p.returncode == 0, (p.returncode, p.stderr[-300:]))
    check("extrun: program's arguments after --", "['--workers', '1']" in out, out[:2])
    check("extrun: FakeData size patched (10 iterations)", tl and tl["steps"] == 9, tl)
    check("extrun: waits line not passed through",
          not any(x.startswith(extrun.WAITS_TAG) for x in out), out[-3:])
    check("extrun: meter holds the 9 waits of the loop (20 ms each)",
          tl and 9 * 20_000_000 <= tl["meter_ns"] < 9 * 40_000_000, tl)
    check("extrun: loop covers the waits", tl and tl["loop_ns"] >= tl["meter_ns"], tl)


FAKE_CUDASPY = """#!/bin/sh
# record -q -o PATH [ARGS] -- CMD...: run CMD; PATH gets its truth line's case
[ "$1" = record ] || exit 2
shift; out=
while [ "$1" != -- ]; do [ "$1" = -o ] && out=$2; shift; done
shift
"$@" >"$out.stdout"; rc=$?
cat "$out.stdout"
sed -n 's/^cudaspy-truth: .*"case": *"\\([a-z_0-9]*\\)".*/\\1/p' "$out.stdout" | tail -1 >"$out"
rm -f "$out.stdout"
exit $rc
"""

FAKE_ANALYZE = """#!/bin/sh
# [--json] PATH: the canned analysis of PATH's case from $FAKE_ANALYSES
j=0; [ "$1" = --json ] && j=1 && shift
case=$(cat "$1")
if [ $j = 1 ]; then
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))' \\
        "$FAKE_ANALYSES" "$case"
else
    echo "report of $case"
fi
"""

FAKE_WORK = """import json, sys, time
case, loop = sys.argv[1], float(sys.argv[2])
extra = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
if extra.get("sleep"):
    time.sleep(extra["sleep"])
row = {"case": case, "planted": "x", "truth_ns": 0, "loop_ns": int(loop * 1e9),
       "steps": 100, "setup_ns": 0, "gpu_ns": 0}
row.update(extra)
print("cudaspy-truth: " + json.dumps(row))
"""


def chain(cause, sev, imp_s, pct):
    return {"cause": cause, "severity": sev, "impact_ns": int(imp_s * 1e9), "impact_pct": pct,
            "chain": cause + " ..."}


ANALYSES = {
    "m_pass": {"chains": [chain("data_pipeline_starvation", "HIGH", 1.1, 50),
                          chain("gpu_bound", "LOW", 0, 0)]},
    "m_far": {"chains": [chain("data_pipeline_starvation", "HIGH", 1.3, 60)]},
    "m_top": {"chains": [chain("host_bound", "HIGH", 1.5, 60),
                         chain("data_pipeline_starvation", "HIGH", 1.0, 40)]},
    "ab": {"chains": [chain("gpu_bound", "LOW", 0, 0),
                      chain("sync_per_iteration", "HIGH", 0.9, 45)]},
    "healthy": {"chains": [chain("launch_bound", "LOW", 0.01, 1.0),
                           chain("gpu_bound", "LOW", 0, 0)]},
    "unhealthy": {"chains": [chain("launch_bound", "MEDIUM", 0.1, 5.0)]},
    "setup": {"chains": [], "steps": {"count": 100, "setup": {"dur_ns": 3_300_000_000}}},
    "setup_acc": {"chains": [], "account": {"setup_ns": 2_000_000_000, "buckets": []},
                  "steps": {"setup": {"dur_ns": 3_000_000_000}}},
    "oversum": {"chains": [chain("io_wait", "HIGH", 1.0, 70),
                           chain("host_bound", "HIGH", 1.0, 40)]},
    "multi": {"chains": [chain("data_pipeline_starvation", "HIGH", 1.0, 40),
                         chain("pageable_memcpy", "MEDIUM", 0.25, 10)]},
    "slow": {"chains": []},
}


def test_runner():
    with tempfile.TemporaryDirectory() as d:
        b = os.path.join(d, "build")
        os.makedirs(b)
        for name, text in (("cudaspy", FAKE_CUDASPY), ("cudaspy-analyze", FAKE_ANALYZE)):
            with open(os.path.join(b, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(b, name), 0o755)
        w = os.path.join(d, "fakew.py")
        with open(w, "w") as f:
            f.write(FAKE_WORK)
        with open(os.path.join(d, "analyses.json"), "w") as f:
            json.dump(ANALYSES, f)
        cmd = lambda case, loop, **kw: ["{python}", w, case, str(loop)] + \
            ([json.dumps(kw)] if kw else [])
        m = [
            {"case": "m_pass", "cmd": cmd("m_pass", 2, truth_ns=1_000_000_000),
             "planted": "data_pipeline_starvation", "truth": "meter"},
            {"case": "m_far", "cmd": cmd("m_far", 2, truth_ns=1_000_000_000),
             "planted": "data_pipeline_starvation", "truth": "meter"},
            {"case": "m_top", "cmd": cmd("m_top", 2, truth_ns=1_000_000_000),
             "planted": "data_pipeline_starvation", "truth": "meter"},
            {"case": "ab", "cmd": cmd("ab", 2.0), "cmd_without": cmd("ab", 1.0),
             "planted": "sync_per_iteration", "truth": "ab"},
            {"case": "healthy", "cmd": cmd("healthy", 2), "planted": "none", "truth": "meter"},
            {"case": "unhealthy", "cmd": cmd("unhealthy", 2), "planted": "none", "truth": "meter"},
            {"case": "setup", "cmd": cmd("setup", 1, setup_ns=3_000_000_000,
                                         truth_ns=3_000_000_000), "planted": "setup",
             "truth": "meter"},
            {"case": "setup_acc", "cmd": cmd("setup_acc", 1, setup_ns=3_000_000_000),
             "planted": "setup", "truth": "meter"},
            {"case": "oversum", "cmd": cmd("oversum", 2, truth_ns=1_000_000_000),
             "planted": "io_wait", "truth": "meter"},
            {"case": "multi", "cmd": cmd("multi", 2, truth_ns=1_000_000_000, causes=[
                {"planted": "data_pipeline_starvation", "truth_ns": 1_000_000_000},
                {"planted": "pageable_memcpy", "truth_ns": 300_000_000}]),
             "planted": "data_pipeline_starvation", "truth": "meter"},
            {"case": "slow", "cmd": cmd("slow", 1, sleep=5), "planted": "none", "truth": "meter",
             "timeout_s": 1},
        ]
        with open(os.path.join(d, "m.json"), "w") as f:
            json.dump(m, f)
        env = dict(os.environ, FAKE_ANALYSES=os.path.join(d, "analyses.json"),
                   PYTHON=sys.executable)
        base = [sys.executable, os.path.join(HERE, "run.py"), "--manifest",
                os.path.join(d, "m.json"), "--build", b, "--runs", os.path.join(d, "runs")]
        p = subprocess.run(base + ["--out", os.path.join(d, "out")], env=env,
                           capture_output=True, text=True, timeout=120)
        rows = {r["case"]: r for r in json.load(open(os.path.join(d, "out", "summary.json")))}
        tr = {r["case"]: r for r in json.load(open(os.path.join(d, "out", "tracing.json")))}
        runs = [json.loads(x) for x in open(os.path.join(d, "out", "runs.jsonl"))]
        rep = open(os.path.join(d, "out", "reports.txt")).read()
        q = subprocess.run(base + ["--out", os.path.join(d, "out2"), "--budget-s", "0"], env=env,
                           capture_output=True, text=True, timeout=60)
        skip = json.load(open(os.path.join(d, "out2", "summary.json")))
    v = lambda c: (rows[c]["verdict"], rows[c]["error_pct"], rows[c]["reason"])
    check("runner: exit 1 (some cases fail)", p.returncode == 1, (p.returncode, p.stderr[-500:]))
    check("runner: row keys are the contract's", set(rows["m_pass"]) == {
        "case", "planted", "truth_impact_pct", "top_cause", "top_impact_pct", "error_pct",
        "verdict", "reason"}, rows["m_pass"])
    check("meter: +10 % passes", v("m_pass")[:2] == ("pass", 10.0), v("m_pass"))
    check("meter: truth 50 % of the loop", rows["m_pass"]["truth_impact_pct"] == 50.0,
          rows["m_pass"])
    check("meter: +30 % fails", v("m_far")[:2] == ("fail", 30.0), v("m_far"))
    check("meter: another top cause fails", v("m_top")[0] == "fail"
          and rows["m_top"]["top_cause"] == "host_bound", v("m_top"))
    check("A/B: truth 1 s from 2 s - 1 s, -10 %", v("ab")[:2] == ("pass", -10.0), v("ab"))
    check("A/B: top skips LOW of impact 0", rows["ab"]["top_cause"] == "sync_per_iteration",
          rows["ab"])
    check("healthy: LOW only passes", v("healthy")[0] == "pass", v("healthy"))
    check("healthy: MEDIUM fails", v("unhealthy")[0] == "fail", v("unhealthy"))
    check("setup: steps.setup +10 % passes", v("setup")[:2] == ("pass", 10.0), v("setup"))
    check("setup: account.setup_ns first (-33 %)", v("setup_acc")[:2] == ("fail", -33.3),
          v("setup_acc"))
    check("sum of impact_pct > 100 fails", v("oversum")[0] == "fail"
          and "sum" in v("oversum")[2], v("oversum"))
    check("multi-cause: second cause -17 % passes", v("multi")[0] == "pass", v("multi"))
    check("timed-out run fails with exit 124", v("slow")[0] == "fail" and "124" in v("slow")[2],
          v("slow"))
    check("tracing: untraced and recorded loops", tr["ab"].get("untraced_loop_ns") == 2e9
          and tr["ab"].get("traced_loop_ns") == 2e9 and tr["ab"].get("without_traced_loop_ns") == 1e9,
          tr["ab"])
    check("runs.jsonl: 3 runs for A/B, 2 for meter",
          sum(r["case"] == "ab" for r in runs) == 3
          and sum(r["case"] == "m_pass" for r in runs) == 2,
          len(runs))
    check("runs.jsonl: findings kept, analysis not", all("_a" not in r for r in runs)
          and any(r.get("findings") for r in runs), runs[0])
    check("reports.txt: a report per recording", rep.count("==== ") == len(m) - 1, rep[:200])
    check("budget spent: every case a skip row", q.returncode == 1 and len(skip) == len(m)
          and all(r["verdict"] == "skip" for r in skip), skip[:1])


def test_manifest():
    m = json.load(open(os.path.join(HERE, "cases.json")))
    import ast
    tree = ast.parse(open(os.path.join(HERE, "planted.py")).read())
    work = next(n for n in tree.body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == "WORKLOADS")
    names = {k.value for k in work.value.keys}
    keys = {"case", "cmd", "cmd_without", "planted", "truth", "env", "record_args",
            "timeout_s", "tolerance_pct", "hogs"}
    causes = {"data_pipeline_starvation", "cpu_contention_tree", "cpu_contention_external",
              "page_alloc_pressure", "pageable_memcpy", "sync_per_iteration", "alloc_churn",
              "launch_bound", "io_wait", "host_bound", "worker_startup", "none", "setup"}
    for c in m:
        ok = set(c) <= keys and c["planted"] in causes and c["truth"] in ("meter", "ab") \
            and (c["truth"] == "ab") == ("cmd_without" in c)
        for cmd in (c["cmd"], c.get("cmd_without") or c["cmd"]):
            if cmd[1].endswith("planted.py"):
                ok = ok and cmd[2] in names and cmd[2] == c["case"]
            else:
                prog = next(x for x in cmd[2:] if x in extrun.TRUTHS)
                ok = ok and os.path.isfile(os.path.join(HERE, "ext", prog, "main.py")) \
                    and os.path.isfile(os.path.join(HERE, "ext", prog, "LICENSE")) \
                    and cmd[cmd.index("--case") + 1] == c["case"] \
                    and cmd[cmd.index("--planted") + 1] == c["planted"]
        if c["truth"] == "ab":  # the pair differs in the one knob planted
            a, b = c["cmd"], c["cmd_without"]
            ok = ok and len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1
        check(f"manifest: {c['case']}", ok, c)


def main():
    test_parsers()
    test_corpus()
    test_item_sync_source()
    test_extrun()
    test_runner()
    test_manifest()
    print(f"selftest: {len(FAILS)} failed" if FAILS else "selftest: all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
