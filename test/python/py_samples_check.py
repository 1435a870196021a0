"""py_samples_check.py: checks the collector's samples of host code
(docs/python.md, "Host code") that `test_py_dump --samples` printed, for
cli.python_samples_* (test/cli/python_samples.sh).

  hostwork DUMP: py_hostwork.py's run. Both its CUDA threads were sampled;
      every sample's innermost frame is in py_hostwork.py (or threading.py:
      the main thread waiting in join() for the other); its hot spots
      are named: on the main thread tokenize() (4 ms a step) has more than
      twice the samples of log_step() (1 ms a step), which has some; most
      of the loader thread's are in wait_batch().
  stress DUMP: py_stress.py's run, its frames torn down while read. Every
      frame is one the program could have been in: a py_stress.py frame's
      line lies inside the function it names (or is 0, unknown: an
      exception's clean-up code has no line), a threading.py frame names a
      function of the threading module (3.10 names code by co_name, so a
      bare name matches a qualified one), or the frame is ctypes' own (the
      first call of each CUDA function through ctypes looks its name up in
      CDLL.__getattr__: a fresh-clone CI run sampled a thread there). Not that it is the sampled
      thread's: 3.10's frames are heap objects, and one freed and reused
      by another thread during the read grafts that thread's frames on
      (docs/python.md, "Host code").
  off DUMP: no sample at all (CUDASPY_PYSAMPLE_HZ=0).

Dump lines: pid tid t_start_ns read_ns nframes flags file:line:function [| ...]
Prints one line of counts; exit 1 with a FAIL line per problem."""
import ast
import collections
import os
import sys
import threading


def samples(path):
    out = []
    for line in open(path, encoding="utf-8"):
        head, _, rest = line.rstrip("\n").partition(" ")
        f = line.split(" ", 6)
        frames = [x.strip().rsplit(":", 2) for x in f[6].split(" | ")]
        out.append((int(f[1]), [(p, int(n), fn) for p, n, fn in frames]))
    return out


def func_ranges(path):
    """Qualified name -> (first line, last line) of every function in @path."""
    tree, r = ast.parse(open(path, encoding="utf-8").read()), {}

    def walk(node, prefix):
        for c in ast.iter_child_nodes(node):
            if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = prefix + c.name
                if not isinstance(c, ast.ClassDef):
                    r[q] = (c.lineno, c.end_lineno)
                    walk(c, q + ".<locals>.")
                else:
                    walk(c, q + ".")
    walk(tree, "")
    return r


def main():
    mode, dump = sys.argv[1], sys.argv[2]
    s, bad = samples(dump), []
    if mode == "off":
        if s:
            bad.append(f"{len(s)} samples with CUDASPY_PYSAMPLE_HZ=0")
    elif mode == "hostwork":
        inner = collections.defaultdict(collections.Counter)  # tid -> innermost function
        for tid, fr in s:
            if not fr[0][0].endswith(("/py_hostwork.py", "/threading.py")):
                bad.append(f"innermost frame outside py_hostwork.py: {fr[0]}")
            inner[tid][fr[0][2]] += 1
        main = max(inner.values(), key=lambda c: c["tokenize"], default=collections.Counter())
        loader = min(inner.values(), key=lambda c: c["tokenize"], default=collections.Counter())
        if len(inner) != 2:
            bad.append(f"samples of {len(inner)} threads, want 2")
        elif not (main["tokenize"] > 2 * main["log_step"] and main["log_step"] > 0):
            bad.append(f"main thread: tokenize {main['tokenize']}, log_step "
                       f"{main['log_step']} samples: want tokenize > 2 x log_step > 0")
        elif not 2 * loader["wait_batch"] > sum(loader.values()):
            bad.append(f"loader thread: {dict(loader)}: want most in wait_batch")
        print("py_samples_check: %d samples: %s" % (len(s), [dict(c) for c in inner.values()]))
    elif mode == "stress":
        here = os.path.dirname(os.path.abspath(__file__))
        ranges = func_ranges(os.path.join(here, "py_stress.py"))
        thr = func_ranges(threading.__file__)
        bare = {q.rsplit(".", 1)[-1] for q in thr}  # 3.10 names code by co_name
        if len(s) < 20:
            bad.append(f"{len(s)} samples, want >= 20")
        for tid, fr in s:
            for path, line, fn in fr:
                base = os.path.basename(path)
                if base == "py_stress.py":
                    spans = [r for q, r in ranges.items()
                             if q == fn or q.rsplit(".", 1)[-1] == fn]
                    if not spans or (line and not any(lo <= line <= hi for lo, hi in spans)):
                        bad.append(f"py_stress.py:{line} is not in {fn}")
                elif path.endswith("/ctypes/__init__.py"):
                    pass  # the first use of a function name looks it up (CDLL.__getattr__)
                elif base != "threading.py" or (fn not in thr and fn not in bare):
                    bad.append(f"frame {path}:{line}:{fn}")
        print("py_samples_check: %d samples, none torn" % len(s) if not bad else "")
    for b in bad[:10]:
        print("FAIL: " + b)
    sys.exit(1 if bad else 0)


main()
