#!/bin/bash
# nvml.sh BUILD CASE: the collector's GPU meta from NVML (sampler/nvml.c)
# while the fake client records under `cudaspy record`; its stdout and exit
# status are those of the untraced client in every case.
#   fake       CUDASPY_NVML=the fake NVML with two GPUs: meta gpu_pcie_max
#              "5x16,4x8" and gpu_names, nothing on stderr
#   preload    the same under plain LD_PRELOAD (auto-started collector)
#   off        CUDASPY_NVML=0: no GPU meta
#   init_fail  nvmlInit_v2 fails: no GPU meta, nothing on stderr
#   missing    CUDASPY_NVML=/nonexistent: no GPU meta, one stderr line
. "$(dirname "$0")/shim_common.sh"
CASE=$1
C="$B/fake/client_rt_shared"
FAKE="$B/fake/libfake_nvml.so"
export FAKE_NVML_GPUS="NVIDIA H100 80GB HBM3:5x16,Fake GPU:4x8"
unset FAKE_NVML_INIT_FAIL FAKE_NVML_INIT_MS CUDASPY_NVML

"$C" >"$T/plain.out"
plain_rc=$?
case $CASE in
fake | preload) export CUDASPY_NVML=$FAKE ;;
off) export CUDASPY_NVML=0 ;;
init_fail) export CUDASPY_NVML=$FAKE FAKE_NVML_INIT_FAIL=1 ;;
missing) export CUDASPY_NVML=/nonexistent ;;
*) fail "unknown case $CASE" ;;
esac
if [ "$CASE" = preload ]; then
    CUDASPY_OUTPUT="$T/run.lmdb" CUDASPY_HOST=0 LD_PRELOAD="$B/libcudaspy.so" \
        "$C" >"$T/traced.out" 2>"$T/err"
else
    timeout 60 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- "$C" >"$T/traced.out" 2>"$T/err"
fi
rc=$?
[ "$rc" -eq "$plain_rc" ] ||
    { cat "$T/err" >&2; fail "traced client exited $rc, untraced $plain_rc"; }
same_stdout "$T/plain.out" "$T/traced.out"

# the auto-started collector finishes after the client: wait for its end
for _ in $(seq 300); do
    "$B/cs_run_meta" "$T/run.lmdb" clean_shutdown 2>/dev/null | grep -qx clean_shutdown=1 && break
    sleep 0.1
done
"$B/cs_run_meta" "$T/run.lmdb" clean_shutdown gpu_pcie_max gpu_names >"$T/meta" ||
    fail "run file does not open"
case $CASE in
fake | preload) want="clean_shutdown=1
gpu_pcie_max=5x16,4x8
gpu_names=NVIDIA H100 80GB HBM3;Fake GPU" ;;
*) want="clean_shutdown=1" ;;
esac
[ "$(cat "$T/meta")" = "$want" ] || { cat "$T/meta" >&2; fail "meta is not: $want"; }

n=$(grep -c nvml "$T/err")
if [ "$CASE" = missing ]; then
    [ "$n" -eq 1 ] || { cat "$T/err" >&2; fail "$n nvml lines on stderr, want 1"; }
    line="cudaspy-sampler: nvml: /nonexistent: cannot open shared object file: No such file"
    line="$line or directory"
    grep -qxF "$line" "$T/err" || { cat "$T/err" >&2; fail "not the nvml line wanted"; }
else
    [ "$n" -eq 0 ] || { cat "$T/err" >&2; fail "$n nvml lines on stderr, want none"; }
fi
exit 0
