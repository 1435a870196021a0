#!/bin/bash
# attach_other_user.sh BUILD: cudaspy-sampler --pid traces only processes of
# its own user unless it runs as root, and keeps only the privileges a run
# needs. (1) root attaches to a process of nobody: allowed, run file made;
# (2) nobody attaches to a root process: refused before anything is
# created, one line, exit 2; (3) a running sampler has NoNewPrivs 1 and
# only the capabilities in docs/reliability.md. Needs root and setpriv;
# skipped (77) otherwise.
. "$(dirname "$0")/fault_common.sh"
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null || { say "skipped: needs root and setpriv"; exit 77; }
AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${AS_NOBODY[@]}" test -x "$B/cudaspy-sampler" || { say "skipped: $B not reachable by nobody"; exit 77; }

"${AS_NOBODY[@]}" sleep 1 &
victim=$!
sleep 0.2
"$B/cudaspy-sampler" --no-host -q --pid $victim -o "$T/root.lmdb" 2>"$T/err1" ||
    { cat "$T/err1" >&2; fail "root attaching to nobody's pid $victim: exit $?"; }
[ -s "$T/root.lmdb" ] || fail "root attaching to nobody's process wrote no run file"
wait $victim
say "root traced nobody's pid $victim"

sleep 3 &
mine=$!
"${AS_NOBODY[@]}" "$B/cudaspy-sampler" --no-host -q --pid $mine -o /tmp/cs-never-$$.lmdb \
    >"$T/out2" 2>"$T/err2"
st=$?
kill $mine
want="cudaspy-sampler: pid $mine: owned by uid 0, not by uid 65534; only root may trace another user's process"
[ $st -eq 2 ] || fail "nobody attaching to root's pid: exit $st, want 2"
[ "$(cat "$T/err2")" = "$want" ] || { cat "$T/err2" >&2; fail "want exactly: $want"; }
[ ! -e /tmp/cs-never-$$.lmdb ] || { rm -f /tmp/cs-never-$$.lmdb*; fail "a run file was created"; }
say "nobody refused: $want"

# bits 1 DAC_OVERRIDE, 2 DAC_READ_SEARCH, 14 IPC_LOCK, 19 SYS_PTRACE, 21 SYS_ADMIN, 38 PERFMON.
# Capabilities are per thread: every thread of the sampler (the loop and the
# run file's flush thread) must hold no more.
# shellcheck disable=SC2016 # $PPID is the inner shell's
"$B/cudaspy" record -o "$T/caps.lmdb" -- sh -c 'ls /proc/$PPID/task | wc -l;
    cat /proc/$PPID/task/*/status | grep -E "^(CapEff|CapPrm|CapInh|NoNewPrivs)" | sort -u' \
    >"$T/caps" || fail "record of the status reader failed"
printf 'CapEff:\t0000004000284006\nCapInh:\t0000000000000000\nCapPrm:\t0000004000284006\nNoNewPrivs:\t1\n' >"$T/caps.want"
threads=$(head -1 "$T/caps")
[ "$threads" -ge 2 ] || fail "sampler has $threads thread(s), want the loop and the flush thread"
tail -n +2 "$T/caps" | cmp -s - "$T/caps.want" || { tail -n +2 "$T/caps" | diff "$T/caps.want" - >&2; fail "sampler privileges"; }
say "running sampler, all $threads threads: NoNewPrivs 1, CapEff 0000004000284006 (6 of 41 capabilities)"
