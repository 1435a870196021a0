#!/bin/bash
# shim_sched.sh BUILD: the collector runs SCHED_BATCH (it never preempts a
# traced thread on waking up) while the command it launches keeps the
# normal policy; --sched normal keeps the kernel's default; a bad policy is
# a usage error. Field 41 of /proc/PID/stat is the policy (0 normal, 3 batch).
. "$(dirname "$0")/shim_common.sh"
probe='echo "$(cut -d" " -f41 /proc/$$/stat) $(cut -d" " -f41 /proc/$PPID/stat)"'

# policies POLICY_ARGS...: "<command's> <collector's>"
policies() {
    "$B/cudaspy-sampler" -q --no-host -o "$T/run$#.lmdb" "$@" -- sh -c "$probe" ||
        fail "sampler $* exited $?"
}
got=$(policies) && [ "$got" = "0 3" ] || fail "default: command/collector policy '$got', want '0 3'"
got=$(policies --sched normal) && [ "$got" = "0 0" ] ||
    fail "--sched normal: command/collector policy '$got', want '0 0'"
got=$(policies --sched batch) && [ "$got" = "0 3" ] ||
    fail "--sched batch: command/collector policy '$got', want '0 3'"
"$B/cudaspy-sampler" --sched fifo -- true 2>"$T/err" && fail "--sched fifo accepted"
[ $? -eq 2 ] || fail "--sched fifo: exit status not 2"
grep -q "invalid policy 'fifo'" "$T/err" || fail "--sched fifo: no clear error: $(cat "$T/err")"
