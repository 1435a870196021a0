"""named.py: the share of kernel launches that carry a kernel name in one run,
per layer (issue 3 asks for >= 99 %), from the analyzer's JSON:

  cudaspy-analyze --json --by kernel RUN.lmdb | python3 bench/gpu/named.py [LABEL]

Prints `named: LABEL driver N/M (P %) runtime N/M (P %)`; exits 1 when a
layer with launches is under 99 %."""
import json
import re
import sys

LAUNCH = {"driver": re.compile(r"^cu(LaunchKernel|LaunchKernelEx|LaunchCooperativeKernel)(_ptsz)?$"),
          "runtime": re.compile(r"^(__cudaLaunchKernel|cudaLaunchKernel|cudaLaunchKernelExC)(_ptsz)?$")}


def main():
    j = json.load(sys.stdin)
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    out, ok = [], True
    for layer, rx in LAUNCH.items():
        total = sum(int(a["count"]) for a in j.get("apis", []) if rx.match(a.get("api", "")))
        named = sum(int(a["count"]) for a in j.get("apis_by_kernel", [])
                    if rx.match(a.get("api", "")) and a.get("kernel") not in (None, "", "?"))
        pct = 100.0 * named / total if total else 100.0
        ok = ok and pct >= 99.0
        out.append(f"{layer} {named}/{total} ({pct:.2f} %)")
    print(f"named: {label} " + " ".join(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
