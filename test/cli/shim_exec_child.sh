#!/bin/bash
# shim_exec_child.sh BUILD: programs that never call CUDA (here /bin/true and
# a shell, with LD_PRELOAD inherited) work, write no file and register no
# ring; the CUDA client exec'd after them is recorded as usual.
. "$(dirname "$0")/shim_common.sh"
C="$B/fake/client_rt_shared"
mkdir "$T/cwd"
cd "$T/cwd"
FAKECUDA_EXPECT="$T/client.exp" "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- \
    sh -c "/bin/true && /bin/true && exec '$C'" >"$T/out" || fail "traced tree exited $?"
[ -z "$(ls -A "$T/cwd")" ] || fail "files written in the working directory: $(ls -A)"
"$B/test_shim_check" --wait 30 "$T/run.lmdb" "$T/client.exp" ||
    fail "run file does not match the client alone"
