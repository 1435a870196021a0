"""py_check.py: compares the Python stacks of a run (test_py_dump's lines)
with what py_workload.py noted at each call (cli.python_*).

Usage: py_check.py [--slow-us N] DUMP EXPECT_FILE...

Each record with a Python stack must be one the workload noted: same pid,
thread, API, innermost frame and caller (file:line:function), or a call of
N us (default 1000) or more (those get a stack wherever they are) made
from the workload (or fake_rt.py, which loads the runtime for it). Every call the
workload expects a stack for (syncs, allocations and frees, the first launch
after a sync) must have one, as many times as it was made. The deepest
stack (the recursion's) keeps 32 frames. Exit 0, 1 with one line per
difference."""
import collections
import sys


def site(fields):
    frames = " ".join(fields[5:]).split(" native ")[0].split(" | ")
    return tuple(fields[:3]) + tuple(frames[:2]), len(frames), int(fields[4]), int(fields[3])


def main():
    args = sys.argv[1:]
    slow_ns = 1000000
    if args[0] == "--slow-us":
        slow_ns, args = int(args[1]) * 1000, args[2:]
    got, slow = collections.Counter(), collections.Counter()
    deepest = 0
    with open(args[0], encoding="utf-8") as f:
        for line in f:
            key, nshown, n, ns = site(line.split())
            if ns >= slow_ns:
                slow[key] += 1
            if nshown != n:
                print("py_check: %d frames listed, %d said: %s" % (nshown, n, line.strip()))
                return 1
            got[key] += 1
            deepest = max(deepest, n)
    want, noted = collections.Counter(), set()
    for path in args[1:]:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                pid, tid, api, kind, yes, rest = line.split(" ", 5)
                key = (pid, tid, api) + tuple(rest.strip().split(" | "))
                noted.add(key)
                if yes == "yes":
                    want[key] += 1
    bad = 0
    for key, n in sorted(got.items()):
        from_workload = "/py_workload.py:" in key[3] or "/fake_rt.py:" in key[3]
        if key not in noted and not (slow[key] == n and from_workload):
            print("py_check: a stack no call was made from: %s (%d times)" % (" ".join(key), n))
            bad += 1
    for key, n in sorted(want.items()):
        if got[key] < n:
            print("py_check: %d of %d calls without their stack: %s" % (n - got[key], n, " ".join(key)))
            bad += 1
    if deepest != 32:
        print("py_check: deepest stack has %d Python frames, want 32" % deepest)
        bad += 1
    print("py_check: %d stacks, %d expected, %d sites: %s" %
          (sum(got.values()), sum(want.values()), len(noted), "ok" if not bad else "FAILED"))
    return 1 if bad else 0


sys.exit(main())
