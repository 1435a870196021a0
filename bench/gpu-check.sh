#!/usr/bin/env bash
# gpu-check.sh: the GPU proof of cudaspy, run on a machine with an NVIDIA GPU
# (the lent H200 here). Runs every workload of bench/gpu/ untraced and traced,
# interleaved, analyses each traced run, and writes results under $OUT:
#   results.json, results.md     per workload: planted cause, top finding,
#                                overhead, outputs identical, API families seen
#   report-*.txt                 full analyzer reports of the seed runs
#   seed-w4.html                 HTML report of the seed run (W=4)
# Usage: bench/gpu-check.sh [PART...]
#   parts: smoke seed suite profiler ddp overhead faults seedov ddpov ddpdiag
#   ddppin ddpduty ddpdutysplit ddpdutyvar seedpairs pfab perf quick launchshared
#   launchduty seedconc truth steps scale slicecost accuracy gate
#   memory-graphs capture alwayson
#   (default: seed suite)
#   overhead: the shim's cost per call on this host (bench_shim, fake driver)
#        and the empty-kernel launch loop (static and shared runtime), traced
#        vs untraced, OVERHEAD_REPS interleaved pairs; faults: what host
#        sampling adds to a blocking hand-off and to a page fault here
#        (bench_sampler); seedov: the seed
#        W=4, SEED_REPS triples of untraced, traced, traced with pages counted
#        from minor faults 1 in 16, with the tree's CPU times; ddpdiag: the
#        1000-step DDP loop untraced, traced, traced --no-host; ddppin: ddpov
#        with each rank on its own CPUs near its GPU (main thread alone on one); ddpov: the clean 2-rank
#        DDP loop at DDP_OV_STEPS steps (1000 4000), DDP_REPS pairs each;
#        pfab: the shim's ring prefetch on and off (bench_shim, launch loop);
#        ddpduty: the clean DDP loop (DDP_DUTY_STEPS, 4000) with traced runs
#        recording in DUTY_MS (250) phases on and off, DDP_REPS pairs: steps
#        in on phases against their neighbouring off phases; ddpdutysplit:
#        the same with a third run per round, traced --no-host (the shim alone);
#        ddpdutyvar: ddpduty's traced runs, DDP_REPS rounds, with $B's shim and
#        each libcudaspy-NAME.so of SHIM_VARIANTS in turn (experiments, or
#        another commit's shim from scripts/build-gpu-variant.sh; the
#        words hostonly and nohost split host sampling from the shim,
#        schednormal runs the collector on the normal policy, pinned pins
#        one variant's ranks; DDP_PIN=1 pins every variant as ddppin does;
#        bench/gpu/duty_pool.py pools several calls' runs);
#        quick: five suite workloads once each (a changed shim's check);
#        launchshared: overhead's pinned launch loop, shared runtime only;
#        launchduty: the launch loops (LAUNCH_RTS, static shared) measured
#        as ddpduty does, steps of 500 launches, LAUNCH_DUTY_REPS rounds of
#        untraced, traced, and traced with each shim or sampler of
#        SHIM_VARIANTS and as its words nohost and hostonly say;
#        truth: issue 22's proof (bench/gpu/truth.py): the two misses of
#        the host lower bound planted in PyTorch and found HIGH, controls,
#        sampled vs full GPU activity on a known duty cycle, and what GPU
#        activity costs a launch-bound loop against torch.profiler; writes
#        $OUT/truth/summary.json, runs.jsonl, reports.txt (TRUTH_ROUNDS);
#        scale: issue 25's figures on this host (part_scale): the collector
#        at 8 x 500k records/s, bytes a record of traced PyTorch runs, and
#        the launch loops folded and not (launchduty); writes $OUT/scale.tgz;
#        slicecost: issue 22's cost point inside each process
#        (bench/gpu/slicecost.py): the launch loop in chunks, each chunk
#        inside a sampled slice, outside or across a switch, SLICE_ROUNDS (3)
#        of record-off and sampled; writes $OUT/slicecost/summary.json;
#        steps: issue 24's and 23's proof (bench/gpu/steps.py): the gate on three
#        PyTorch pairs (a .item() added each step and fewer DataLoader
#        workers must fail, a rerun must pass) and each run's steps against
#        the program's (torch.cuda.nvtx ranges for the nvtx loop); writes
#        $OUT/steps/summary.json, runs.jsonl;
#        alwayson: issue 35's proof (bench/gpu/alwayson.py): real PyTorch
#        programs (launch-, data- and GPU-bound, the a.add_ loop) untraced
#        and recorded with each component on and off, interleaved rounds;
#        writes $OUT/alwayson/summary.json, runs.jsonl (ALWAYS_PLAN
#        breakdown|accept|focus|duty, ALWAYS_ROUNDS, ALWAYS_CORE_ROUNDS,
#        ALWAYS_BUDGET_S, CS_PIN; duty: record --duty 250 paired inside
#        each run, as the program's own step log says);
#        memory-graphs: issue 31's proof (bench/gpu/memgraph.py): peak
#        memory against torch.cuda.max_memory_reserved() (plain and
#        expandable segments), allocator retries found HIGH (PyTorch's
#        num_alloc_retries as truth), an OutOfMemoryError's line named,
#        torch.compile(mode="reduce-overhead") seen inside its graphs with
#        no HIGH, and re-recorded on a changing shape: graph_recapture
#        HIGH; writes $OUT/memory-graphs/summary.json, runs.jsonl,
#        reports.txt (MG_CASES: a comma-separated subset);
#        capture: issue 33's proof (bench/gpu/capture.py): a PyTorch loop
#        recorded with --capture steps:201-260 and cudaProfilerApi holds
#        exactly those steps, cudaspy-analyze top/metrics --once beside it;
#        writes $OUT/capture/summary.json, runs.jsonl, reports.txt;
#        gate: issue 36's gate proof (bench/gpu/gate_real.py): four
#        programs, each recorded 4 times identically and once with a planted
#        regression; every identical rerun gated against the other three
#        must pass, the regression against all four must fail; writes
#        $OUT/gate/summary.json, runs.jsonl (GATE_BUDGET_S, GATE_PROGRAMS);
#        accuracy: issue 30's accuracy proof (bench/gpu/accuracy/run.py):
#        each case of bench/gpu/accuracy/cases.json (ACC_MANIFEST) run
#        untraced and recorded, interleaved (an A/B case's cmd_without
#        recorded too: the truth is the difference of the two recorded
#        loops), each recording analysed and scored as the accuracy
#        contract says (top cause, impact against the workload's own meter
#        or the A/B difference, 20 %); planted PyTorch workloads (planted.py)
#        and real programs of pytorch/examples (ext/, through extrun.py);
#        ACC_COUNT (1) recordings a case, cases skipped once ACC_BUDGET_S
#        (480) is spent, ACC_CASES=a,b: those only; writes
#        $OUT/accuracy/summary.json, tracing.json (untraced loop and meter
#        next to the recorded), runs.jsonl, reports.txt; ACC_SCORER=1 also
#        runs scripts/accuracy.py on the manifest, if present
#        (summary-scorer.json; it records again: about twice the time);
#        seedconc: the seed W=4's overhead without the session's drift: two
#        copies at once on disjoint sets of SEED_CONC_CPUS (6) CPUs of GPU 0's
#        node (else of all CPUs), one traced, the traced side swapping every
#        round, SEED_CONC_REPS (12) rounds, among them SEED_CONC_PLACEBO (4)
#        rounds both untraced (the sides' asymmetry and the design's noise); the
#        traced side's recorder and collector stay off the other side's CPUs
#        (SEED_CONC_FENCE=0: anywhere); bench/gpu/conc_pairs.py reads them;
#        perf: system-wide `perf record` (PERF, PERF_LIB) around an untraced and a
#        traced DDP run: CPU by process and library, the shim's hot instructions
# Env: CS_RECORD_FLAGS extra `cudaspy record` options; CS_SAMPLER_ARGS extra
#   sampler options (through a wrapper named by CUDASPY_SAMPLER);
#   CS_ANALYZE=0 skips analysing the traced runs (pure overhead runs);
#   CS_TIMES=1 has bash print the run's CPU times (`times`, its whole
#   reaped tree) after a `cputimes:` line of the run's output; CS_BASE=MODE
#   pairs a traced-only mode with the untraced runs of MODE
#   ddp: 2-rank DDP under torchrun (NCCL, needs 2 GPUs) straggling and clean,
#        twoproc (one GPU) straggling and control (docs/multigpu.md)
# Needs: a cudaspy build in $CS_BUILD (default build-gpu, built elsewhere with
# -DCS_STATIC_DEPS=ON so no packages are needed here), python3 with torch and
# triton, nvcc. Reproducible by anyone with a GPU and our README.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
B=$(cd "${CS_BUILD:-$top/build-gpu}" && pwd)
OUT=${OUT:-/tmp/cudaspy-gpu-out}
RUNS=${RUNS_DIR:-/tmp/cudaspy-gpu-runs}
REPS=${REPS:-2}
PY=${PYTHON:-python3}
W="$here/gpu/workloads.py"
mkdir -p "$OUT" "$RUNS"
LOG="$OUT/log.txt"
export PYTHONUNBUFFERED=1 CUDASPY_QUIET=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

log() { echo "$*" | tee -a "$LOG" >&2; }

# tracefs is not mounted on the GPU host; the sampler mounts it too, but do it
# once here so every run sees the same state.
if [ "$(id -u)" = 0 ] && [ ! -e /sys/kernel/tracing/events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>>"$LOG" || log "gpu-check: tracefs: mount failed"
fi

now_ns() { date +%s%N; }

# gpu_cpulist [GPU]: the local_cpulist of GPU's (default 0) PCI device
gpu_cpulist() {
    local bus
    bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i "${1:-0}" 2>/dev/null |
        tr 'A-F' 'a-f' | sed 's/^0000//')
    cat "/sys/bus/pci/devices/$bus/local_cpulist" 2>/dev/null
}

# gpu_local_cpus N [GPU [SKIP]]: N CPUs of GPU's (default 0) NUMA node,
# skipping its first SKIP (default 2: interrupts), as a taskset list; empty
# when it cannot tell.
gpu_local_cpus() {
    local list
    list=$(gpu_cpulist "${2:-0}") || return 0
    [ -n "$list" ] || return 0
    python3 -c 'import sys
cpus = []
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    cpus += range(int(a), int(b or a) + 1)
skip = int(sys.argv[3])
print(",".join(map(str, cpus[skip:skip + int(sys.argv[2])])))' "$list" "$1" "${3:-2}"
}

# sampler_wrap: a script that runs the sampler with $CS_SAMPLER_ARGS first
sampler_wrap() {
    local w="$RUNS/sampler-wrap.sh"
    printf '#!/bin/sh\nexec "%s/cudaspy-sampler" %s "$@"\n' "$B" "$CS_SAMPLER_ARGS" >"$w"
    chmod +x "$w"
    echo "$w"
}

# run_one NAME MODE TRACED ENV... -- CMD...: one run; appends a JSON line to $RUNS/runs.jsonl
run_one() {
    local name=$1 mode=$2 traced=$3 i=$4; shift 4
    local envs=() cmd=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    cmd=("$@")
    local run="$RUNS/$name-$mode-$i.lmdb" out="$RUNS/$name-$mode-$i-$traced.out"
    local t0 t1 rc mem
    mem=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
    # shellcheck disable=SC2016 # the inner script's own $@ and $rc
    [ "${CS_TIMES:-0}" = 1 ] &&
        cmd=(bash -c '"$@"; rc=$?; echo cputimes:; times; exit $rc' cputimes "${cmd[@]}")
    [ -n "${CS_PIN:-}" ] && cmd=(taskset -c "$CS_PIN" "${cmd[@]}")
    # where a workload that logs its steps (ddp.py) puts them
    export CS_STEP_LOG="${out%.out}.steps"
    t0=$(now_ns)
    if [ "$traced" = 1 ]; then
        rm -f "$run" "$run-lock"
        # shellcheck disable=SC2086 # CS_RECORD_FLAGS: words on purpose
        env "${envs[@]}" ${CS_SAMPLER_ARGS:+CUDASPY_SAMPLER=$(sampler_wrap)} \
            timeout 300 "$B/cudaspy" record -q -o "$run" ${CS_RECORD_FLAGS:-} -- "${cmd[@]}" >"$out" 2>>"$LOG"
    else
        env "${envs[@]}" timeout 300 "${cmd[@]}" >"$out" 2>>"$LOG"
    fi
    rc=$?
    t1=$(now_ns)
    local json="" meta=""
    if [ "$traced" = 1 ] && [ -f "$run" ]; then
        # the run's own summary (collector CPU, counts) even when not analysed
        meta="$RUNS/$name-$mode-$i.meta.json"
        timeout 60 "$B/cudaspy-analyze" --json --until 0.001 "$run" >"$meta" 2>>"$LOG" || meta=""
    fi
    if [ "$traced" = 1 ] && [ -f "$run" ] && [ "${CS_ANALYZE:-1}" = 1 ]; then
        json="$RUNS/$name-$mode-$i.json"
        timeout 120 "$B/cudaspy-analyze" --json "$run" >"$json" 2>>"$LOG" || log "gpu-check: $name: analyze failed"
        timeout 120 "$B/cudaspy-analyze" "$run" >"$RUNS/$name-$mode-$i.txt" 2>>"$LOG"
    fi
    printf '{"name":"%s","mode":"%s","traced":%s,"rep":%s,"rc":%s,"wall_ns":%s,"out":"%s","json":"%s","meta":"%s","run":"%s","base":"%s","mem_total_kb":%s}\n' \
        "$name" "$mode" "$traced" "$i" "$rc" "$((t1 - t0))" "$out" "$json" "$meta" "$run" "${CS_BASE:-}" \
        "${mem:-0}" >>"$RUNS/runs.jsonl"
    log "gpu-check: $name $mode traced=$traced rep=$i rc=$rc wall=$(((t1 - t0) / 1000000)) ms"
}

# interleave NAME MODE ENV... -- CMD...: REPS x (untraced, traced), alternating order
interleave() {
    local name=$1 mode=$2; shift 2
    for i in $(seq 1 "$REPS"); do
        if [ $((i % 2)) = 1 ]; then
            run_one "$name" "$mode" 0 "$i" "$@"; run_one "$name" "$mode" 1 "$i" "$@"
        else
            run_one "$name" "$mode" 1 "$i" "$@"; run_one "$name" "$mode" 0 "$i" "$@"
        fi
    done
}

hogs_start() { # CPU hogs outside the traced tree (own session, not our children's tree)
    HOGS=()
    for _ in $(seq 1 $(($(nproc) * 2))); do
        setsid sh -c 'while :; do :; done' & HOGS+=($!)
    done
}
hogs_stop() { kill "${HOGS[@]}" 2>/dev/null; wait "${HOGS[@]}" 2>/dev/null; }

part_smoke() {
    nvcc -O2 -o "$RUNS/static_app" "$here/gpu/static_app.cu" 2>>"$LOG"
    REPS=1 interleave nvcc sync -- "$RUNS/static_app" sync
    REPS=1 interleave triton tiny -- "$PY" "$W" triton tiny
    REPS=1 interleave train mlp -- "$PY" "$W" train mlp
    REPS=1 interleave seed small N=1000000 -- "$PY" "$W" seed loader 4
}

part_seed() {
    interleave seed direct -- "$PY" "$W" seed direct
    interleave seed w4 -- "$PY" "$W" seed loader 4
    REPS=1 interleave seed w12 -- "$PY" "$W" seed loader 12
    REPS=1 interleave seed w0 -- "$PY" "$W" seed loader 0
}

LAUNCH_ARGS=(100000 7) # the empty-kernel loop: launches per loop, loops per process

# launch_pinned RT...: the empty-kernel loop built with each cudart RT
# (static, shared), OVERHEAD_REPS pairs each, the process on two CPUs near
# the GPU, traced or not: the untraced runs otherwise move between sockets
# and vary by 30 %
launch_pinned() {
    local r=${OVERHEAD_REPS:-8} pin rt
    pin=$(gpu_local_cpus 2)
    log "gpu-check: overhead: launch loops pinned to CPUs ${pin:-none} (GPU 0's node)"
    for rt in "$@"; do
        launch_build "$rt"
        CS_PIN=$pin CS_ANALYZE=0 REPS=$r interleave launch "$rt-pinned" -- "$RUNS/launch_$rt" \
            "${LAUNCH_ARGS[@]}"
    done
}

# launch_build RT: $RUNS/launch_RT, the launch loop on the static or shared runtime
launch_build() {
    [ -x "$RUNS/launch_$1" ] ||
        nvcc -O2 -cudart "$1" -o "$RUNS/launch_$1" "$here/gpu/launch_loop.cu" 2>>"$LOG"
}

part_launchduty() { # the launch loops' cost inside each run: record --duty, steps of 500 launches
    # LAUNCH_DUTY_REPS rounds; each round runs every runtime of LAUNCH_RTS
    # untraced (the placebo; LAUNCH_DUTY_PLAIN=0: not), traced with $B,
    # and traced as each variant of SHIM_VARIANTS (builds, and the words
    # nohost and hostonly: duty_variant); each run is LAUNCH_DUTY_ARGS
    # (500000 7: 3.5 M launches, about 15 s)
    local pin rt args i v vs
    pin=$(gpu_local_cpus 2)
    read -r -a args <<<"${LAUNCH_DUTY_ARGS:-500000 7}"
    read -r -a vs <<<"$(variant_names hostonly nohost nofold)"
    log "gpu-check: launchduty: launch loops pinned to CPUs ${pin:-none}, ${args[*]}, shims ${vs[*]}"
    for rt in ${LAUNCH_RTS:-static shared}; do launch_build "$rt"; done
    for i in $(seq 1 "${LAUNCH_DUTY_REPS:-3}"); do
        for rt in ${LAUNCH_RTS:-static shared}; do
            [ "${LAUNCH_DUTY_PLAIN:-1}" = 1 ] &&
                CS_PIN=$pin run_one launch "duty-$rt" 0 "$i" -- "$RUNS/launch_$rt" "${args[@]}"
            for v in "${vs[@]}"; do
                CS_PIN=$pin duty_variant "$v" launch "duty-$rt-$v" "$i" -- \
                    "$RUNS/launch_$rt" "${args[@]}"
            done
        done
    done
}

# variant_names WORD...: the words of SHIM_VARIANTS that are among WORD...,
# then variant_builds' names (base last)
variant_names() {
    local w vs=()
    for w in ${SHIM_VARIANTS:-}; do
        [[ " $* " == *" $w "* ]] && vs+=("$w")
    done
    echo "${vs[*]} $(variant_builds)"
}

# duty_variant V NAME MODE I [ENV...] -- CMD...: run_one of a traced run
# recording in DUTY_MS phases, as variant V says: base ($B), hostonly ($B's
# shim disabled: host sampling's share), nohost (--no-host: the shim's
# share), nofold (CUDASPY_FOLD=0: a runtime and a driver record a shared
# runtime's call), schednormal (the collector on the kernel's default policy instead
# of SCHED_BATCH), pinned (ddp.py's ranks pinned as in ddppin), or a NAME
# of variant_builds ($RUNS/b-NAME); DUTY_GPU=MODE: record --gpu-activity MODE
# (off: the shim's records alone, without sampled GPU activity's cost)
duty_variant() {
    local v=$1 b=$B flags="--duty ${DUTY_MS:-250}${DUTY_GPU:+ --gpu-activity $DUTY_GPU}"
    local sargs=${CS_SAMPLER_ARGS:-} envs=()
    shift
    case $v in
    base) ;;
    hostonly) envs=(CUDASPY_DISABLE=1) ;;
    nohost) flags+=" --no-host" ;;
    nofold) envs=(CUDASPY_FOLD=0) ;;
    schednormal) sargs="--sched normal" ;;
    pinned) envs=("CS_DDP_CPUS=$(ddp_pin_cpus)") ;;
    *) b=$RUNS/b-$v ;;
    esac
    B=$b CS_SAMPLER_ARGS=$sargs CS_ANALYZE=0 CS_RECORD_FLAGS=$flags \
        run_one "$1" "$2" 1 "$3" "${envs[@]}" "${@:4}"
}

# variant_builds: for each libcudaspy-NAME.so or cudaspy-sampler-NAME of
# SHIM_VARIANTS, $RUNS/b-NAME (a copy of $B with that shim or that
# sampler); prints the NAMEs, then base ($B itself)
variant_builds() {
    local f v to vs=()
    for f in ${SHIM_VARIANTS:-}; do
        case $(basename "$f") in
        libcudaspy-*.so) v=$(basename "$f" .so) && v=${v#libcudaspy-} to=libcudaspy.so ;;
        cudaspy-sampler-*) v=$(basename "$f") && v=${v#cudaspy-sampler-} to=cudaspy-sampler ;;
        *) continue ;;
        esac
        rm -rf "$RUNS/b-$v" && cp -r "$B" "$RUNS/b-$v" && cp "$f" "$RUNS/b-$v/$to"
        vs+=("$v")
    done
    echo "${vs[*]} base"
}

part_launchshared() { # the shared-runtime launch loop alone (two records per launch)
    launch_pinned shared
}

part_overhead() { # issue 3's launch-loop target, measured several ways
    local r=${OVERHEAD_REPS:-8}
    if [ -x "$B/bench_shim" ]; then
        # its RUNPATH names the build machine's fake/; only this command sees ours
        LD_LIBRARY_PATH="$B/fake" "$B/bench_shim" 5 200 1000 >"$OUT/bench-shim.txt" 2>>"$LOG"
        [ -n "$(gpu_local_cpus 4)" ] && LD_LIBRARY_PATH="$B/fake" taskset -c "$(gpu_local_cpus 4)" \
            "$B/bench_shim" 5 200 1000 >"$OUT/bench-shim-pinned.txt" 2>>"$LOG"
        cat "$OUT/bench-shim.txt" >>"$LOG"
    fi
    part_faults
    launch_pinned static shared
    if [ "${OVERHEAD_ALL:-0}" = 1 ]; then
        CS_ANALYZE=0 REPS=$r interleave launch static -- "$RUNS/launch_static" "${LAUNCH_ARGS[@]}"
        CS_ANALYZE=0 REPS=$r interleave launch shared -- "$RUNS/launch_shared" "${LAUNCH_ARGS[@]}"
        CS_ANALYZE=0 REPS=$((r / 2)) CS_RECORD_FLAGS=--no-host \
            interleave launch static-nohost -- "$RUNS/launch_static" "${LAUNCH_ARGS[@]}"
        CS_ANALYZE=0 REPS=$((r / 2)) interleave tiny loop -- "$PY" "$W" tiny x
        REPS=1 interleave launch static-analysed -- "$RUNS/launch_static" "${LAUNCH_ARGS[@]}"
    fi
}

part_faults() { # what page sampling adds to a page fault on this host
    [ -x "$B/bench_sampler" ] || return 0
    "$B/bench_sampler" 0 512 "${FAULT_ROUNDS:-7}" >"$OUT/bench-sampler-faults.txt" 2>>"$LOG"
    cat "$OUT/bench-sampler-faults.txt" >>"$LOG"
}

part_pfab() { # the ring's next-entry prefetch on and off: bench_shim, pinned launch loop
    local pin r=${OVERHEAD_REPS:-4}
    pin=$(gpu_local_cpus 2)
    launch_build static
    for pf in 1 0; do
        LD_LIBRARY_PATH="$B/fake" CUDASPY_RING_PREFETCH=$pf taskset -c "$(gpu_local_cpus 4)" \
            "$B/bench_shim" 5 200 1000 >"$OUT/bench-shim-pf$pf.txt" 2>>"$LOG"
    done
    for pf in 1 0; do
        CS_PIN=$pin CS_ANALYZE=0 REPS=$r interleave launch "static-pinned-pf$pf" \
            CUDASPY_RING_PREFETCH=$pf -- "$RUNS/launch_static" "${LAUNCH_ARGS[@]}"
    done
}

# 2-rank DDP under torchrun (bench/gpu/ddp.py), one GPU per rank
TRUN=("$PY" -m torch.distributed.run --standalone --nproc_per_node=2 "$here/gpu/ddp.py")

# ddp_lengths MODE ENV...: the clean DDP loop at each of DDP_OV_STEPS
# (1000 4000), DDP_REPS interleaved pairs each, timed only, mode MODE-sN
ddp_lengths() {
    local mode=$1 steps
    shift
    for steps in ${DDP_OV_STEPS:-1000 4000}; do
        CS_TIMES=1 CS_ANALYZE=0 REPS=${DDP_REPS:-4} interleave ddp "$mode-s$steps" "$@" -- \
            "${TRUN[@]}" --steps "$steps"
    done
}

part_ddpov() { # issue 10's overhead target: the clean DDP loop, short and long
    ddp_lengths clean
    ddp_findings clean
}

# ddp_findings MODE: every traced control of ddp_lengths MODE, analysed once
# the timing is done (none may have a HIGH finding), into ddpov-findings.txt
ddp_findings() {
    local run
    for run in "$RUNS/ddp-$1"-s*.lmdb; do
        timeout 120 "$B/cudaspy-analyze" --json "$run" 2>>"$LOG" | "$PY" -c 'import json, sys
j = json.load(sys.stdin)
print(sys.argv[1], " ".join(c["severity"] + ":" + c["cause"] for c in j["chains"]) or "no finding",
      "ranks:", " ".join("%s/dev%s" % (r.get("rank"), r.get("device")) for r in j.get("ranks", [])))' \
            "$(basename "$run")" >>"$OUT/ddpov-findings.txt" 2>>"$LOG"
    done
}

# rotate3 NAME MODE ALT_MODE VAR=VALUE... -- CMD...: REPS rounds of untraced,
# traced, and traced with the VAR=VALUE settings of this script (mode
# ALT_MODE, paired with MODE's untraced runs), each first, second, last in
# turn; the traced run of round 1 is analysed (for its counts)
rotate3() {
    local name=$1 mode=$2 alt=$3 i k envs=()
    shift 3
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    for i in $(seq 1 "$REPS"); do
        for k in 0 1 2; do
            case $(((i + k) % 3)) in
            0) run_one "$name" "$mode" 0 "$i" -- "$@" ;;
            1) CS_ANALYZE=$((i == 1)) run_one "$name" "$mode" 1 "$i" -- "$@" ;;
            2) (for e in "${envs[@]}"; do export "${e?}"; done
                CS_BASE=$mode CS_ANALYZE=0 run_one "$name" "$alt" 1 "$i" -- "$@") ;;
            esac
        done
    done
}

part_seedov() { # issue 3's seed target: W=4, untraced / traced / pages from faults 1 in 16
    local pin="" sfx=""
    # SEED_PIN=1: the whole tree (main + 4 workers) on 8 CPUs of GPU 0's node
    [ "${SEED_PIN:-0}" = 1 ] && pin=$(gpu_local_cpus 8) && sfx=-pinned
    CS_PIN=$pin CS_TIMES=1 REPS=${SEED_REPS:-5} rotate3 seed "w4$sfx" "w4-f16$sfx" \
        "CS_SAMPLER_ARGS=--page-source faults --page-period 16" -- "$PY" "$W" seed loader 4
}

part_seedpairs() { # the seed W=4 untraced and traced (analysed), with the tree's CPU times
    local pin="" sfx=""
    [ "${SEED_PIN:-0}" = 1 ] && pin=$(gpu_local_cpus 8) && sfx=-pinned
    log "gpu-check: seedpairs: tree on CPUs ${pin:-any}"
    CS_PIN=$pin CS_TIMES=1 REPS=${SEED_REPS:-5} interleave seed "w4$sfx" -- "$PY" "$W" seed loader 4
}

# cpu_count LIST: how many CPUs a taskset list of single CPUs (a,b,c) names
cpu_count() {
    local ids=()
    IFS=, read -r -a ids <<<"$1"
    echo "${#ids[@]}"
}

# cpus_but LIST: the CPUs this script may run on, less LIST's, as a taskset list
cpus_but() {
    python3 -c 'import os, sys
ex = {int(c) for c in sys.argv[1].split(",") if c}
print(",".join(str(c) for c in sorted(os.sched_getaffinity(0)) if c not in ex))' "$1"
}

# conc_sides N: "A B", two disjoint sets of N CPUs: GPU 0's node's after its
# first 2, else CPUs 2.. of nproc's; fails when there are not 2 + 2N CPUs
conc_sides() {
    local n=$1 a b
    a=$(gpu_local_cpus "$n" 0 2)
    b=$(gpu_local_cpus "$n" 0 $((2 + n)))
    if [ "$(cpu_count "$a")" -lt "$n" ] || [ "$(cpu_count "$b")" -lt "$n" ]; then
        log "gpu-check: seedconc: GPU 0's node has no 2 x $n CPUs after its first 2" \
            "(${a:-none} / ${b:-none}): splitting the $(nproc) CPUs"
        [ $((2 + 2 * n)) -le "$(nproc)" ] || return 1
        a=$(seq -s, 2 $((1 + n)))
        b=$(seq -s, $((2 + n)) $((1 + 2 * n)))
    fi
    echo "$a $b"
}

# conc_side MODE I TRACED CPUS OTHER: one seed W=4 run on CPUS (mode MODE,
# rep I); a traced run's recorder and collector may use any CPU but OTHER's
conc_side() {
    local mode=$1 i=$2 traced=$3 cpus=$4 other=$5
    [ "$traced" = 1 ] && [ "${SEED_CONC_FENCE:-1}" = 1 ] &&
        taskset -cp "$(cpus_but "$other")" "$BASHPID" >/dev/null 2>>"$LOG"
    CS_PIN=$cpus CS_TIMES=1 CS_ANALYZE=0 run_one seed "$mode" "$traced" "$i" "CS_BARRIER=$bar:2" \
        -- "$PY" "$W" seed loader 4
}

# conc_round MODE I TRACED_A TRACED_B A B: side a's run (mode MODE-a) on CPUs
# A and side b's (MODE-b) on CPUs B at the same time, rep I; both start
# their timed loop together (workloads.py's barrier, after set-up)
conc_round() {
    local mode=$1 i=$2 pa pb bar
    bar=$(mktemp -d "$RUNS/bar.XXXXXX")
    bar=$bar conc_side "$mode-a" "$i" "$3" "$5" "$6" &
    pa=$!
    bar=$bar conc_side "$mode-b" "$i" "$4" "$6" "$5" &
    pb=$!
    wait "$pa" "$pb"
    rm -rf "$bar"
}

part_seedconc() { # the seed W=4 traced and untraced at once, on two CPU sets, sides swapping
    local n=${SEED_CONC_CPUS:-6} sides a b i
    if ! sides=$(conc_sides "$n"); then
        log "gpu-check: seedconc: $(nproc) CPUs, 2 + 2 x $n needed: skipped"
        return
    fi
    read -r a b <<<"$sides"
    log "gpu-check: seedconc: side a on CPUs $a, side b on CPUs $b," \
        "traced side's recorder fenced ${SEED_CONC_FENCE:-1}"
    local p=0 np=${SEED_CONC_PLACEBO:-4} nr=${SEED_CONC_REPS:-12}
    for i in $(seq 1 "$nr"); do
        # odd rounds trace side a, even rounds side b; the placebo rounds
        # spread among them, so that they see the same drift
        conc_round conc "$i" $((i % 2)) $((1 - i % 2)) "$a" "$b"
        while [ "$p" -lt "$np" ] && [ $(((p + 1) * nr)) -le $((i * np)) ]; do
            p=$((p + 1))
            conc_round concp "$p" 0 0 "$a" "$b"
        done
    done
}

part_ddpdiag() { # where the short DDP loop's overhead comes from: host sampling off
    CS_TIMES=1 REPS=${DDP_REPS:-4} rotate3 ddp diag-s1000 diag-s1000-nohost \
        "CS_RECORD_FLAGS=--no-host" -- "${TRUN[@]}" --steps 1000
}

part_ddpduty() { # recording's steady cost on the clean DDP loop, paired inside each run
    # traced runs record in DUTY_MS phases on and off (record --duty); the
    # untraced runs' step logs get the same analysis on an arbitrary grid
    local steps=${DDP_DUTY_STEPS:-4000}
    CS_TIMES=1 CS_ANALYZE=0 CS_RECORD_FLAGS="--duty ${DUTY_MS:-250}" REPS=${DDP_REPS:-4} \
        interleave ddp "duty-s$steps" -- "${TRUN[@]}" --steps "$steps"
}

part_ddpdutysplit() { # ddpduty's measure with and without host sampling: the shim's share
    local steps=${DDP_DUTY_STEPS:-4000} ms=${DUTY_MS:-250}
    CS_TIMES=1 CS_RECORD_FLAGS="--duty $ms" REPS=${DDP_REPS:-4} rotate3 ddp "duty-s$steps" \
        "duty-s$steps-nohost" "CS_RECORD_FLAGS=--duty $ms --no-host" -- "${TRUN[@]}" --steps "$steps"
}

part_ddpdutyvar() { # ddpduty's traced runs for several builds of libcudaspy.so, rotating
    # SHIM_VARIANTS: builds (variant_builds), each run with the rest of $B,
    # and the words hostonly, nohost, schednormal and pinned (duty_variant).
    # DDP_PIN=1: every variant pinned.
    local steps=${DDP_DUTY_STEPS:-4000} v i k vs pin=()
    [ "${DDP_PIN:-0}" = 1 ] && pin=("CS_DDP_CPUS=$(ddp_pin_cpus)")
    read -r -a vs <<<"$(variant_names hostonly nohost schednormal pinned)"
    for i in $(seq 1 "${DDP_REPS:-3}"); do
        for k in $(seq 0 $((${#vs[@]} - 1))); do
            v=${vs[$(((i + k) % ${#vs[@]}))]}
            CS_TIMES=1 duty_variant "$v" ddp "duty-s$steps-$v" "$i" "${pin[@]}" -- \
                "${TRUN[@]}" --steps "$steps"
        done
    done
}

# ddp_pin_cpus: CS_DDP_CPUS for ddp.py, each rank on 6 CPUs of its GPU's node
ddp_pin_cpus() {
    local skip1=2
    # GPUs of one node: rank 1 takes the next 6 CPUs of it
    [ "$(gpu_cpulist 0)" = "$(gpu_cpulist 1)" ] && skip1=8
    echo "$(gpu_local_cpus 6 0);$(gpu_local_cpus 6 1 $skip1)"
}

part_ddppin() { # the clean DDP loop, each rank on 6 CPUs of its GPU's node, none shared
    local cpus
    cpus=$(ddp_pin_cpus)
    log "gpu-check: ddppin: rank CPUs $cpus (main thread on the first of each)"
    ddp_lengths pinned "CS_DDP_CPUS=$cpus"
    ddp_findings pinned
}

# perf_around FILE CMD...: CMD with a system-wide `perf record` (PERF, PERF_LIB
# for its carried libraries, kept out of CMD's environment) into FILE
perf_around() {
    local data=$1 pid
    shift
    env LD_LIBRARY_PATH="${PERF_LIB:-}" "${PERF:-perf}" record -a -F 2999 -q -o "$data" \
        2>>"$LOG" &
    pid=$!
    sleep 1
    "$@"
    kill -INT "$pid"
    wait "$pid"
}

part_perf() { # where the ranks' CPU goes: perf around an untraced and a traced DDP run
    # PERF_MODES: which (0 untraced, 1 traced; default both); PERF_TAG names the files
    local steps=${DDP_OV_STEPS:-1000} m f
    local pr=(env LD_LIBRARY_PATH="${PERF_LIB:-}" "${PERF:-perf}")
    for m in ${PERF_MODES:-0 1}; do
        f="perf-${PERF_TAG:-run}-$m"
        perf_around "$RUNS/$f.data" run_one ddp "$f-s$steps" "$m" 1 -- "${TRUN[@]}" --steps "$steps"
        "${pr[@]}" report -i "$RUNS/$f.data" --stdio --sort comm,dso 2>>"$LOG" | head -60 >"$OUT/$f-dso.txt"
        [ "$m" = 1 ] || continue
        # the shim's own samples by function (-n: counts), and where in them
        "${pr[@]}" report -i "$RUNS/$f.data" -n --stdio --dsos libcudaspy.so --sort sym 2>>"$LOG" |
            head -60 >"$OUT/$f-shim.txt"
        "${pr[@]}" annotate -i "$RUNS/$f.data" --stdio --dsos libcudaspy.so 2>>"$LOG" |
            head -3000 >"$OUT/$f-annotate.txt"
    done
}

part_profiler() { # torch.profiler (CUPTI) on the seed workload, for comparison
    for i in 1 2; do
        run_one seed w4-profiler 0 "$i" CS_TORCH_PROFILER=1 -- "$PY" "$here/gpu/profiled.py" seed loader 4
    done
}

part_suite() {
    nvcc -O2 -o "$RUNS/static_app" "$here/gpu/static_app.cu" 2>>"$LOG"
    nvcc -O2 --default-stream per-thread -o "$RUNS/static_app_ptds" "$here/gpu/static_app.cu" 2>>"$LOG"
    interleave copies pageable -- "$PY" "$W" copies pageable
    interleave copies pinned -- "$PY" "$W" copies pinned
    interleave sync every -- "$PY" "$W" sync every
    interleave sync none -- "$PY" "$W" sync none
    interleave alloc churn PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- "$PY" "$W" alloc churn
    interleave alloc cached -- "$PY" "$W" alloc cached
    hogs_start; interleave hogged hogs -- "$PY" "$W" hogged x; hogs_stop
    interleave hogged quiet -- "$PY" "$W" hogged x
    interleave tiny loop -- "$PY" "$W" tiny x
    interleave matmul big -- "$PY" "$W" matmul x
    interleave triton tiny -- "$PY" "$W" triton tiny
    interleave train mlp -- "$PY" "$W" train mlp
    REPS=1 interleave train expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- "$PY" "$W" train mlp
    REPS=1 interleave graph replay -- "$PY" "$W" graph x
    interleave nvcc sync -- "$RUNS/static_app" sync
    REPS=1 interleave nvcc nosync -- "$RUNS/static_app" nosync
    REPS=1 interleave nvcc ptds -- "$RUNS/static_app_ptds" sync
    REPS=1 interleave twoproc pair -- "$PY" "$here/gpu/twoproc.py"
}

part_quick() { # a short suite for a changed shim: runtime, Triton, graphs, static cudart
    nvcc -O2 -o "$RUNS/static_app" "$here/gpu/static_app.cu" 2>>"$LOG"
    REPS=1 interleave train mlp -- "$PY" "$W" train mlp
    REPS=1 interleave triton tiny -- "$PY" "$W" triton tiny
    REPS=1 interleave graph replay -- "$PY" "$W" graph x
    REPS=1 interleave copies pinned -- "$PY" "$W" copies pinned
    REPS=1 interleave nvcc sync -- "$RUNS/static_app" sync
}

part_ddp() { # issue 10: a planted straggling rank (rank 1) and clean controls
    local trun=("${TRUN[@]}" --steps "${DDP_STEPS:-1000}")
    local ngpu
    ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>>"$LOG")
    if [ "${ngpu:-0}" -ge 2 ]; then
        REPS=${DDP_REPS:-$REPS} interleave ddp straggle -- "${trun[@]}" --straggle
        REPS=${DDP_REPS:-$REPS} interleave ddp clean -- "${trun[@]}"
    else
        log "gpu-check: ddp: ${ngpu:-0} GPU(s): the NCCL runs need 2, skipped"
    fi
    [ "${DDP_ONLY:-0}" = 1 ] && return
    interleave twoproc straggle -- "$PY" "$here/gpu/twoproc.py"
    REPS=1 interleave twoproc control TWOPROC_CONTROL=1 -- "$PY" "$here/gpu/twoproc.py"
}

part_truth() { # issue 22: the GPU's own timeline: planted misses, calibration, cost
    CS_PIN=${CS_PIN:-$(gpu_local_cpus 6)} "$PY" "$here/gpu/truth.py" "$B" "$OUT/truth" \
        "$RUNS/truth" "${TRUTH_ROUNDS:-3}" 2>>"$LOG"
}

part_slicecost() { # issue 22: sampled GPU activity's cost inside each process
    CS_PIN=${CS_PIN:-$(gpu_local_cpus 6)} "$PY" "$here/gpu/slicecost.py" "$B" "$OUT/slicecost" \
        "$RUNS/slicecost" "${SLICE_ROUNDS:-3}" 2>>"$LOG"
}

part_steps() { # issue 24: steps and the gate v2 on PyTorch pairs
    CS_PIN=${CS_PIN:-$(gpu_local_cpus 6)} "$PY" "$here/gpu/steps.py" "$B" "$OUT/steps" \
        "$RUNS/steps" 2>>"$LOG"
}

part_accuracy() { # issue 30: findings and their impact against the programs' own meters
    local m=${ACC_MANIFEST:-$here/gpu/accuracy/cases.json}
    # ACC_SAMPLE=SLICE/PERIOD (ms) samples GPU activity more densely; the
    # default's 100 ms a second is what users get. 50/200 was tried on the
    # H100 (bench/results/gpu-2026-12-06-accuracy): CUPTI attached and
    # finalised five times a second slowed PyTorch loops (a pageable copy
    # loop 1.40 -> 2.48 s), which moved the traced runs off their truths
    [ -n "${ACC_SAMPLE:-}" ] && export CUDASPY_GPU_SAMPLE=$ACC_SAMPLE
    "$PY" "$here/gpu/accuracy/run.py" --manifest "$m" --build "$B" --out "$OUT/accuracy" \
        --runs "$RUNS/accuracy" --count "${ACC_COUNT:-1}" --budget-s "${ACC_BUDGET_S:-480}" \
        ${ACC_CASES:+--cases "$ACC_CASES"} 2>>"$LOG"
    if [ "${ACC_SCORER:-0}" = 1 ] && [ -f "$top/scripts/accuracy.py" ]; then
        "$PY" "$top/scripts/accuracy.py" --manifest "$m" --build "$B" --count "${ACC_COUNT:-1}" \
            --summary "$OUT/accuracy/summary-scorer.json" 2>>"$LOG"
    fi
}

part_gate() { # issue 36: the gate on real programs: identical reruns pass, planted regressions fail
    CS_PIN=${CS_PIN:-$(gpu_local_cpus 6)} "$PY" "$here/gpu/gate_real.py" "$B" "$OUT/gate" \
        "$RUNS/gate" 2>>"$LOG"
}

part_memory-graphs() { # issue 31: GPU memory, OOM, allocator retries, CUDA graphs on PyTorch
    CS_PIN=${CS_PIN:-$(gpu_local_cpus 6)} "$PY" "$here/gpu/memgraph.py" "$B" \
        "$OUT/memory-graphs" "$RUNS/memory-graphs" 2>>"$LOG"
}

part_alwayson() { # issue 35: what recording costs real training programs, by component
    "$PY" "$here/gpu/alwayson.py" "$B" "$OUT/alwayson" "$RUNS/alwayson" 2>>"$LOG"
}

part_capture() { # issue 33: --capture steps:A-B and cudaProfilerApi on PyTorch, top beside it
    # then the cost outside a range: the shared-runtime launch loop untraced
    # and under record --capture signal never started (every call outside),
    # CAPTURE_REPS (3) interleaved rounds; capture/paused.txt: the medians
    local pin args i
    "$PY" "$here/gpu/capture.py" "$B" "$OUT/capture" "$RUNS/capture" 2>>"$LOG"
    pin=$(gpu_local_cpus 2)
    read -r -a args <<<"${LAUNCH_DUTY_ARGS:-500000 7}"
    launch_build shared
    for i in $(seq 1 "${CAPTURE_REPS:-3}"); do
        CS_PIN=$pin run_one launch paused 0 "$i" -- "$RUNS/launch_shared" "${args[@]}"
        CS_PIN=$pin CS_ANALYZE=0 CS_RECORD_FLAGS="--capture signal --no-host" \
            run_one launch paused 1 "$i" -- "$RUNS/launch_shared" "${args[@]}"
    done
    for t in 0 1; do
        printf 'traced=%s us_per_launch:' "$t"
        for i in $(seq 1 "${CAPTURE_REPS:-3}"); do
            awk '/^us_per_launch:/ {printf " %s", $2}' "$RUNS/launch-paused-$i-$t.out"
        done
        echo
    done >"$OUT/capture/paused.txt"
    cat "$OUT/capture/paused.txt" >&2
}

part_scale() { # issue 25 on this host: the collector, bytes a record, one record a launch
    # 1. bench_thru: THRU_PROCS (8) producers x THRU_RATE (500k) records/s for
    #    THRU_SECS (60) s, THRU_TRIES (1) tries: lossless? collector CPU?
    # 2. bytes a CUDA record (cs_run_bytes) of traced PyTorch runs (train mlp,
    #    the launch loop of a.add_), folded and CUDASPY_FOLD=0, each analysed
    # 3. launchduty: static and shared runtime, the shim as built and nofold
    # Writes $OUT/scale.tgz (thru.txt, bytes.txt, reports, the duty runs'
    # logs: runs.jsonl, .out, .steps, .meta.json for duty_pool.py).
    local s="$RUNS/scale" f w n args=()
    mkdir -p "$s"
    log "gpu-check: scale: bench_thru"
    "$B/bench_thru" -p "${THRU_PROCS:-8}" -r "${THRU_RATE:-500000}" -s "${THRU_SECS:-60}" \
        -n "${THRU_TRIES:-1}" -d "$RUNS" >"$s/thru.txt" 2>>"$LOG"
    cat "$s/thru.txt" >&2
    for w in "train mlp" "launch plain 100000 5"; do
        n=${w%% *}
        for f in 1 0; do
            CUDASPY_FOLD=$f "$B/cudaspy" record -q -o "$RUNS/bytes-$n-$f.lmdb" -- \
                "$PY" "$W" $w >"$s/out-$n-fold$f.txt" 2>>"$LOG"
            "$B/cudaspy-analyze" "$RUNS/bytes-$n-$f.lmdb" >"$s/report-$n-fold$f.txt" 2>>"$LOG"
            args+=("bytes.torch_$n.fold$f" "$RUNS/bytes-$n-$f.lmdb")
        done
    done
    "$B/cs_run_bytes" "${args[@]}" >"$s/bytes.txt" 2>>"$LOG"
    cat "$s/bytes.txt" >&2
    rm -f "$RUNS"/bytes-*.lmdb
    SHIM_VARIANTS="nofold ${SHIM_VARIANTS:-}" LAUNCH_DUTY_PLAIN=${LAUNCH_DUTY_PLAIN:-0} \
        part_launchduty
    (cd "$RUNS" && tar czf "$OUT/scale.tgz" scale runs.jsonl ./*.out ./*.steps ./*.meta.json \
        2>/dev/null)
}

warmup() { # first CUDA process and first import pay for caches: keep them out of the figures
    "$PY" -c "import torch, triton; torch.ones(1, device='cuda').sum().item()" >/dev/null 2>>"$LOG"
}

# Pack the run files so they can be re-analysed elsewhere (chunks of 15 MiB).
pack_runs() {
    (cd "$RUNS" && tar czf - ./*.lmdb ./*.out runs.jsonl 2>/dev/null) | split -b 15M - "$OUT/runs.tgz."
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(seed suite)
log "gpu-check: parts ${parts[*]} build $B reps $REPS $(date -u +%FT%TZ)"
log "gpu-check: host: $(nproc) CPUs, $(lscpu 2>/dev/null | awk -F: '/^(Socket|Thread|NUMA node)/ {gsub(/  +/, " "); printf "%s;", $0}')" \
    "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)," \
    "GPU CPUs $(gpu_cpulist 0) / $(gpu_cpulist 1), MemTotal $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) kB"
warmup
for p in "${parts[@]}"; do "part_$p"; done
[ "${PACK_RUNS:-1}" = 1 ] && pack_runs
# the summary of the parts that record runs.jsonl (truth writes its own)
[ ! -s "$RUNS/runs.jsonl" ] || "$PY" "$here/gpu/collect.py" "$RUNS/runs.jsonl" "$OUT" "$B" 2>>"$LOG"
