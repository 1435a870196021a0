"""extrun.py: runs one of the real training programs of ext/ (copied
unmodified from public repositories) and prints the accuracy contract's
truth line from the program's own output (gpu-check.sh accuracy).

    extrun.py --case NAME --planted CAUSE [--fakedata OLD:NEW,...]
              [--corpus TRAIN,VALID,TEST,VOCAB] [--item-sync on|off]
              [--host-ms MS] [--stamps FILE]
              PROGRAM [--] ARGS...

PROGRAM is a folder of ext/ (imagenet, dcgan, word_language_model); its
main.py runs in a child Python with ARGS, in a fresh temporary folder (the
programs write checkpoints and images into the current folder), and this
process reads the child's output line by line, stamping each line with
CLOCK_MONOTONIC as it arrives, and passes it through. The child, before
running main.py with runpy:
- --fakedata: torchvision's FakeData built with size OLD gets size NEW
  (the programs' fake-data options have no size option; ImageNet's is
  1,281,167 images);
- times every DataLoader next() (a meter only: the call is unchanged) and
  prints the waits at exit (`extrun-waits:`, not passed through);
- --item-sync (word_language_model only): main.py's source is read and run
  as runpy.run_path would run the file (a fresh __main__, __file__ and
  sys.argv[0] the script, sys.path[0] its folder), the file on disk
  untouched; with `off` its one line `total_loss += loss.item()` (a sync
  every batch) runs as `total_loss += loss.detach()`, the sum then kept on
  the GPU (the log line every --log-interval batches formats it with
  {:5.2f} and math.exp(): a 0-dim tensor's __format__ and __float__ call
  .item(), so it syncs there only). Both values check that the line is
  there exactly once, and run the same way: an A/B pair differing in that
  line alone. --host-ms MS (with --item-sync) makes that line wait MS ms on
  the host as well: a planted regression for the gate's proof (gate_real.py).
--stamps FILE writes the arrival time (CLOCK_MONOTONIC ns) of each of the
loop's report lines to FILE, one a line: with a report every step, a step
log for `record --duty`'s paired measure (alwayson.py).
--corpus writes a synthetic corpus (Zipf-distributed words w0..wVOCAB-1,
20 tokens a line with <eos>) of at least that many tokens to ./corpus for
word_language_model (no network here, and the upstream snapshot lacks
wikitext-2's train.txt).

The truth line, by PROGRAM (steady-state loop: the first batch, with the
workers' start and cuDNN's set-up, left out):
- imagenet: the program's own meters, printed every batch (-p 1): loop_ns
  = sum of Time over batches 2..N, truth_ns = sum of Data over them;
- dcgan: loop_ns from the first to the last iteration line, steps their
  count less one; truth_ns 0 (an A/B case), meter_ns = the DataLoader
  waits inside that window;
- word_language_model: loop_ns from the first report line's arrival to
  the last's, steps the batches between; truth_ns 0 (an A/B case:
  --item-sync on vs off). Not its ms/batch meter (kept as ms_batch_ns):
  that times the host from one report to the next before the report's
  own .item() waits for the GPU, so without a sync each batch it measures
  how fast the host enqueues, not the GPU's work (H100 2026-12-06: 37 %
  "saved" with the GPU busy 86 % of the with run's steps). A line arrives
  after its formatting synced the GPU.
Every program also gets meter_ns (the next() waits in its loop window).

Exit status: the program's.
"""
import bisect
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXT = os.path.join(HERE, "ext")
WAITS_TAG = "extrun-waits: "


# ---- the child: patches, meter, then the program -------------------------

def patch_fakedata(spec):
    """FakeData(size=OLD) becomes FakeData(size=NEW) for each OLD:NEW."""
    from torchvision import datasets
    sizes = {int(a): int(b) for a, b in (p.split(":") for p in spec.split(","))}
    orig = datasets.FakeData.__init__

    def init(self, *args, **kw):
        if args:
            args = (sizes.get(args[0], args[0]),) + args[1:]
        else:
            size = kw.get("size", 1000)
            kw["size"] = sizes.get(size, size)
        orig(self, *args, **kw)
    datasets.FakeData.__init__ = init


def meter_waits():
    """Record every DataLoader iterator's next(): (start ns, duration ns)."""
    import atexit
    from torch.utils.data import dataloader
    waits, orig = [], dataloader._BaseDataLoaderIter.__next__
    pid = os.getpid()

    def timed(self):
        t0 = time.monotonic_ns()
        try:
            return orig(self)
        finally:
            waits.append((t0, time.monotonic_ns() - t0))

    def report():
        if os.getpid() == pid:  # not in a forked worker
            sys.stdout.write(WAITS_TAG + json.dumps(waits, separators=(",", ":")) + "\n")
            sys.stdout.flush()
    dataloader._BaseDataLoaderIter.__next__ = timed
    atexit.register(report)


ITEM_SYNC = "total_loss += loss.item()"  # word_language_model/main.py, train()
ITEM_SYNC_OFF = "total_loss += loss.detach()"


def item_sync_source(script, mode, host_ms=""):
    """main.py's source, its one `total_loss += loss.item()` line kept (on)
    or made `total_loss += loss.detach()` (off); with @host_ms, that line
    then waits that many ms on the host each batch (a planted regression:
    a blocking metrics write, say)."""
    with open(script, encoding="utf-8") as f:
        src = f.read()
    n = src.count(ITEM_SYNC)
    if n != 1:
        raise SystemExit(f"extrun: --item-sync: {script} holds {ITEM_SYNC!r} {n} times, not once")
    line = ITEM_SYNC if mode == "on" else ITEM_SYNC_OFF
    if host_ms:
        line += f"; __import__('time').sleep({float(host_ms)} / 1000)"
    return src.replace(ITEM_SYNC, line)


def run_source(script, src):
    """@src run as runpy.run_path(@script, run_name="__main__") runs the
    file: compiled under the script's name, in a fresh __main__ module that
    replaces ours for the run."""
    import types
    code = compile(src, script, "exec")
    mod = types.ModuleType("__main__")
    mod.__dict__.update(__file__=script, __cached__=None, __loader__=None, __package__="",
                        __spec__=None)
    ours = sys.modules["__main__"]
    sys.modules["__main__"] = mod
    try:
        exec(code, mod.__dict__)
    finally:
        sys.modules["__main__"] = ours


def child(prog_dir, args):
    import runpy
    script = os.path.join(prog_dir, "main.py")
    sys.path[0] = prog_dir  # as `python main.py` there: its folder, not ours
    sys.argv = [script] + args
    if os.environ.get("EXTRUN_FAKEDATA"):
        patch_fakedata(os.environ["EXTRUN_FAKEDATA"])
    sync = os.environ.get("EXTRUN_ITEM_SYNC")
    src = item_sync_source(script, sync, os.environ.get("EXTRUN_HOST_MS", "")) if sync else None
    meter_waits()
    if src is not None:
        run_source(script, src)
    else:
        runpy.run_path(script, run_name="__main__")
    return 0


# ---- the parent: data, the run, the truth line ----------------------------

def write_corpus(folder, spec):
    """train.txt, valid.txt, test.txt of at least TRAIN, VALID, TEST tokens."""
    train, valid, test, vocab = (int(x) for x in spec.split(","))
    rng = random.Random(0)
    words = ["w%d" % i for i in range(vocab)]
    cum, s = [], 0.0
    for k in range(vocab):
        s += 1.0 / (k + 1)
        cum.append(s)
    os.makedirs(folder, exist_ok=True)
    for name, n in (("train", train), ("valid", valid), ("test", test)):
        with open(os.path.join(folder, name + ".txt"), "w") as f:
            for _ in range(-(-n // 20)):  # 19 words + <eos> a line
                f.write(" ".join(words[bisect.bisect_left(cum, rng.random() * s)]
                                 for _ in range(19)) + "\n")


def in_window(waits, t0, t1):
    """The waits that ended inside (t0, t1]: those of the batches whose lines
    were stamped at t0 (excluded) to t1. By their ends: this process stamps
    a line a little after the child wrote it, when the next wait may have
    begun already."""
    return sum(d for s, d in waits if t0 < s + d <= t1)


IMAGENET = re.compile(r"^Epoch: \[\d+\]\[\s*(\d+)/\s*\d+\]\s+Time\s+([\d.]+)\s+\(\s*[\d.]+\)"
                      r"\s+Data\s+([\d.]+)")
DCGAN = re.compile(r"^\[\d+/\d+\]\[(\d+)/\d+\] Loss_D:")
WLM = re.compile(r"^\|\s*epoch\s+\d+\s*\|\s*(\d+)/\s*\d+ batches \|.*\| ms/batch\s+([\d.]+) \|")


def truth_imagenet(lines, waits):
    rows = [(t, IMAGENET.match(x)) for t, x in lines]
    rows = [(t, int(m.group(1)), float(m.group(2)), float(m.group(3))) for t, m in rows if m]
    loop = [r for r in rows if r[1] >= 2]
    if not loop:
        return None
    first = [r for r in rows if r[1] == 1]
    return {"loop_ns": round(sum(r[2] for r in loop) * 1e9),
            "truth_ns": round(sum(r[3] for r in loop) * 1e9), "steps": len(loop),
            "meter_ns": in_window(waits, first[0][0], loop[-1][0]) if first else 0,
            "first_data_ns": round(first[0][3] * 1e9) if first else 0}


def truth_dcgan(lines, waits):
    ts = [t for t, x in lines if DCGAN.match(x)]
    if len(ts) < 2:
        return None
    return {"loop_ns": ts[-1] - ts[0], "truth_ns": 0, "steps": len(ts) - 1,
            "meter_ns": in_window(waits, ts[0], ts[-1])}


def truth_wlm(lines, waits):
    rows = [(t, WLM.match(x)) for t, x in lines]
    rows = [(t, int(m.group(1)), float(m.group(2))) for t, m in rows if m]
    if len(rows) < 2:
        return None
    every = rows[1][1] - rows[0][1]
    return {"loop_ns": rows[-1][0] - rows[0][0], "truth_ns": 0,
            "steps": every * (len(rows) - 1), "meter_ns": in_window(waits, rows[0][0], rows[-1][0]),
            "ms_batch_ns": round(sum(r[2] for r in rows[1:]) * every * 1e6)}


TRUTHS = {"imagenet": truth_imagenet, "dcgan": truth_dcgan, "word_language_model": truth_wlm}
LOOP_LINES = {"imagenet": IMAGENET, "dcgan": DCGAN, "word_language_model": WLM}


def write_stamps(path, prog, lines):
    """--stamps: the arrival of each of the loop's report lines, ns, one a
    line (a step log as bench/gpu/collect.py reads one: with one report a
    step, each is a step's end)."""
    with open(path, "w") as f:
        f.writelines(f"{t}\n" for t, x in lines if LOOP_LINES[prog].match(x))


def truth_line(case, planted, prog, lines, waits):
    """The contract's line (None when the output holds no loop)."""
    t = TRUTHS[prog](lines, waits)
    if t is None:
        return None
    row = {"case": case, "planted": planted, "truth_ns": t.pop("truth_ns"),
           "loop_ns": t.pop("loop_ns"), "steps": t.pop("steps"), "setup_ns": 0, "gpu_ns": 0}
    row.update(t)
    return "cudaspy-truth: " + json.dumps(row, separators=(",", ":"))


def parse_args(argv):
    opts = {"case": None, "planted": None, "fakedata": "", "corpus": "", "item-sync": "",
            "host-ms": "", "stamps": ""}
    i = 0
    while i < len(argv) and argv[i].startswith("--") and argv[i] != "--":
        key = argv[i][2:]
        if key not in opts or i + 1 >= len(argv):
            raise SystemExit(f"extrun: {argv[i]}: unknown option or no value\n" + __doc__)
        opts[key] = argv[i + 1]
        i += 2
    if i >= len(argv) or argv[i] not in TRUTHS or not opts["case"] or not opts["planted"]:
        raise SystemExit("extrun: need --case, --planted and one of "
                         + " ".join(sorted(TRUTHS)) + "\n" + __doc__)
    prog, rest = argv[i], argv[i + 1:]
    if opts["item-sync"] and (opts["item-sync"] not in ("on", "off")
                              or prog != "word_language_model"):
        raise SystemExit("extrun: --item-sync: on or off, for word_language_model only\n"
                         + __doc__)
    if opts["host-ms"] and not opts["item-sync"]:
        raise SystemExit("extrun: --host-ms needs --item-sync\n" + __doc__)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return opts, prog, rest


def parent(argv):
    opts, prog, args = parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="extrun-")
    try:
        if opts["corpus"]:
            write_corpus(os.path.join(tmp, "corpus"), opts["corpus"])
        env = dict(os.environ, PYTHONUNBUFFERED="1", EXTRUN_FAKEDATA=opts["fakedata"],
                   EXTRUN_ITEM_SYNC=opts["item-sync"], EXTRUN_HOST_MS=opts["host-ms"])
        cmd = [sys.executable, os.path.abspath(__file__), "--child", os.path.join(EXT, prog)] + args
        p = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, text=True, bufsize=1)
        lines, waits = [], []
        for line in p.stdout:
            t = time.monotonic_ns()
            if line.startswith(WAITS_TAG):
                waits = json.loads(line[len(WAITS_TAG):])
                continue
            sys.stdout.write(line)
            lines.append((t, line))
        rc = p.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = truth_line(opts["case"], opts["planted"], prog, lines, waits)
    if opts["stamps"]:
        write_stamps(opts["stamps"], prog, lines)
    if out:
        print(out, flush=True)
    else:
        print(f"extrun: {prog}: no training loop in its output", file=sys.stderr)
    return rc or (0 if out else 1)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3:])
    return parent(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
