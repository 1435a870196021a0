#!/bin/bash
# shim_stacks.sh BUILD: with CUDASPY_STACK_US, calls slower than the
# threshold carry a native stack whose frames name their module.
. "$(dirname "$0")/shim_common.sh"
export FAKECUDA_LAT_NS='*=30000' CUDASPY_STACK_US=5
C="$B/fake/client_rt_shared"
run_traced record "$T/run.lmdb" "$T/out" "$T/traced.exp" "$C" 1
"$B/test_shim_check" --wait 30 --stacks "$T/run.lmdb" "$T/traced.exp" ||
    fail "slow calls without stacks"
