#!/bin/bash
# top.sh BUILD: `cudaspy top` on a real terminal (issue 33, docs/live.md).
# cause_workload churn (alloc_churn planted: cudaMalloc/cudaFree every
# step) runs under `cudaspy record`; `cudaspy top RUN` runs in a detached
# tmux pane (120 x 40) started with the workload, and within 3 s of the
# workload's start the pane must name the cause; `b` must switch to the
# buckets view, `q` must end top with the terminal restored (canonical
# mode and echo back, alternate screen left, cursor shown), and the shell
# in the pane must run on. (The 3 s is the first frame's; later waits, each
# a fresh sample of the whole run, allow 10 s for the sanitizer builds.) Then top PID finds the run by the program's pid,
# --once prints one plain frame, and bad input is one line and exit 2.
. "$(dirname "$0")/shim_common.sh"
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
command -v tmux >/dev/null || { echo "top: skipped: no tmux"; exit 77; }
S=cs-top-$$
pane() { tmux capture-pane -p -t "$S"; }
cleanup() { tmux kill-session -t "$S" 2>/dev/null; }
trap 'rc=$?; cleanup; [ $rc -eq 0 ] && rm -rf "$T"; exit $rc' EXIT

# wait_for SECONDS PATTERN: the pane shows PATTERN within SECONDS
wait_for() {
    local end=$((SECONDS + $1 + 1)) t0=$(date +%s%N)
    while :; do
        pane | grep -q -- "$2" && { echo "top: '$2' after $((($(date +%s%N) - t0) / 1000000)) ms"; return 0; }
        [ $SECONDS -ge $end ] && return 1
        sleep 0.1
    done
}

# 1. the live view of a run being recorded
tmux new-session -d -s "$S" -x 120 -y 40 "bash --norc --noprofile" || fail "tmux new-session failed"
tmux send-keys -t "$S" "PS1='$ '; stty sane; clear" Enter
sleep 0.3
"$B/cudaspy" record -q -o "$T/run.lmdb" -- "$B/fake/cause_workload" churn 8 >"$T/w.out" 2>"$T/w.err" &
rec=$!
t_start=$(date +%s%N)
# (the terminal's modes print before the exit line: beside a CPU hog, the
# check once read the pane between the two)
tmux send-keys -t "$S" "'$B/cudaspy' top '$T/run.lmdb'; rc=\$?; stty -a | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo; echo TOP-EXITED rc=\$rc" Enter
wait_for 3 "alloc_churn" || { pane; fail "no alloc_churn on the screen within 3 s of the workload's start"; }
elapsed=$((($(date +%s%N) - t_start) / 1000000))
[ "$elapsed" -le 3000 ] || fail "alloc_churn shown after $elapsed ms, not within 3 s"
pane | grep -q "recording" || { pane; fail "no 'recording' in the header"; }
pane | grep -q "1 overview.*q quit" || { pane; fail "no key footer"; }
[ "$(tmux display -p -t "$S" '#{alternate_on}')" = 1 ] || fail "top is not on the alternate screen"
tmux send-keys -t "$S" b
wait_for 2 "^ACCOUNT (every ns" || { pane; fail "'b' did not switch to the buckets view"; }
pane | grep -q "^  allocator .*alloc_churn" || { pane; fail "buckets view: no allocator row"; }
pane | grep -q "\[b buckets\]" || { pane; fail "footer does not mark the buckets view"; }
tmux send-keys -t "$S" p
wait_for 2 "PID  COMM" || { pane; fail "'p' did not switch to the processes view"; }
tmux send-keys -t "$S" q
wait_for 2 "TOP-EXITED rc=0" || { pane; fail "top did not exit on q"; }
pane | grep -qx "icanon" && pane | grep -qx "echo" || { pane; fail "terminal not restored (icanon, echo)"; }
[ "$(tmux display -p -t "$S" '#{alternate_on} #{cursor_flag}')" = "0 1" ] ||
    fail "terminal not restored: alternate screen $(tmux display -p -t "$S" '#{alternate_on}'), cursor $(tmux display -p -t "$S" '#{cursor_flag}')"

# 2. top PID: the workload's pid leads to its sampler's run file; SIGTERM
# ends it with the terminal restored
wpid=$(pgrep -f "cause_workload churn 8" | head -n 1)
[ -n "$wpid" ] || fail "the workload ended too early"
tmux send-keys -t "$S" "clear; '$B/cudaspy' top $wpid; echo TOP2-EXITED rc=\$?" Enter
wait_for 10 "^cudaspy top  $T/run.lmdb  recording" || { pane; fail "top PID did not find the run file"; }
pkill -TERM -f "cudaspy-analyze top $wpid"
wait_for 10 "TOP2-EXITED rc=0" || { pane; fail "top did not exit on SIGTERM"; }
[ "$(tmux display -p -t "$S" '#{alternate_on}')" = 0 ] || fail "SIGTERM: alternate screen not left"

# 3. the end of the run: "run finished" until q
tmux send-keys -t "$S" "clear; '$B/cudaspy' top '$T/run.lmdb'; echo TOP3-EXITED" Enter
wait $rec || { cat "$T/w.err"; fail "record exited $?"; }
wait_for 10 "run finished" || { pane; fail "no 'run finished' after the run"; }
sleep 1.2
pane | grep -q "TOP3-EXITED" && fail "top left by itself after the run finished"
tmux send-keys -t "$S" q
wait_for 5 "TOP3-EXITED" || { pane; fail "top did not exit on q after the run"; }

# 4. not a terminal: --once prints one plain frame, without escapes
"$B/cudaspy" top --once --view findings "$T/run.lmdb" >"$T/once.txt" 2>"$T/once.err" ||
    fail "top --once exited $?: $(cat "$T/once.err")"
grep -q "^\[HIGH\] alloc_churn" "$T/once.txt" || { cat "$T/once.txt"; fail "--once: no alloc_churn"; }
grep -q "run finished" "$T/once.txt" || fail "--once: no 'run finished'"
grep -q $'\033' "$T/once.txt" && fail "--once: escapes in a plain frame"
[ "$(grep -c '^cudaspy top' "$T/once.txt")" = 1 ] || fail "--once: not one frame"

# 5. bad input
"$B/cudaspy" top --window 0 "$T/run.lmdb" 2>"$T/e1"; rc=$?
[ $rc = 2 ] && grep -q "invalid seconds: 0" "$T/e1" || fail "--window 0: exit $rc: $(cat "$T/e1")"
"$B/cudaspy" top --once "$T/none.lmdb" 2>"$T/e2"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$T/e2")" = 1 ] || fail "missing run: exit $rc: $(cat "$T/e2")"
"$B/cudaspy" top 1 2>"$T/e3"; rc=$?
[ $rc = 2 ] && grep -q "pid 1: no cudaspy-sampler records it" "$T/e3" || fail "top 1: exit $rc: $(cat "$T/e3")"
echo "ok   top"
exit 0
