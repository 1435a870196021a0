"""profiled.py: the seed workload under torch.profiler (CUPTI activity for
CPU and CUDA), to compare its overhead and what it can tell with cudaspy's.
Usage: python3 profiled.py seed loader 4   (same arguments as workloads.py)"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402


def main():
    fn = workloads.WORKLOADS[sys.argv[1]]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        out, el = fn(*sys.argv[2:])
    path = os.environ.get("CS_PROFILE_TRACE", "/tmp/cudaspy-torch-profile.json")
    prof.export_chrome_trace(path)
    top = prof.key_averages().table(sort_by="cpu_time_total", row_limit=8)
    print(top, file=sys.stderr)
    print(f"result: {workloads.checksum(out)}")
    print(f"elapsed: {el:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
