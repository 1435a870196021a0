#!/usr/bin/env bash
# build-gpu.sh: build the binaries to carry to a GPU machine that has no
# package registry: LMDB, jansson and libpfm4 linked statically; libunwind
# (Debian ships no PIC archive of it) copied beside libcudaspy.so, which finds
# it through RUNPATH $ORIGIN.
# Usage: scripts/build-gpu.sh [BUILD_DIR=build-gpu [CMAKE_ARGS...]]
#   e.g. scripts/build-gpu.sh build-gpu-st -DCS_SHIM_SELFTIME=ON (docs/shim.md)
set -euo pipefail
B=${1:-build-gpu}
shift || true
cmake -S . -B "$B" -DCS_STATIC_DEPS=ON \
    -DCS_UNWIND_LIB=/usr/lib/x86_64-linux-gnu/libunwind.so \
    '-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-rpath,$ORIGIN' "$@" >/dev/null
cmake --build "$B" -j "$(nproc)" --target cudaspy cudaspy-sampler cudaspy-analyze cudaspy_launcher bench_shim bench_sampler \
    bench_clock bench_thru cs_producer cs_run_bytes
cp -L /usr/lib/x86_64-linux-gnu/libunwind.so.8 "$B/"
# only what the GPU machine needs travels: drop object files
find "$B" -name '*.o' -delete
