#!/bin/sh
# version_help.sh: a program's --version and --help, word for word where the
# text is short (issue 26): --version is exactly one line, --help starts with
# its usage line, both exit 0 with nothing on stderr. For cudaspy also the
# whole top-level help (it lists the subcommands) and its usage errors.
# Usage: version_help.sh cudaspy|sampler|analyze PROGRAM WORKDIR
set -u
kind=$1
P=$2
W=$3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fail=0

# check WANT_RC WANT_STDOUT WANT_STDERR ARGS...: the run's exit code, stdout
# and stderr are exactly these ("" = empty; otherwise each gets a newline)
check() {
    rc=$1 out=$2 err=$3
    shift 3
    "$P" "$@" >out.txt 2>err.txt
    got=$?
    [ "$got" = "$rc" ] || { echo "$kind $*: exit code: got $got, want $rc"; fail=1; }
    for s in out err; do
        eval "want=\$$s"
        if [ -z "$want" ]; then : >want.txt; else printf '%s\n' "$want" >want.txt; fi
        cmp -s want.txt $s.txt || {
            echo "$kind $*: std$s differs (want, got):"
            diff want.txt $s.txt
            fail=1
        }
    done
}

# help_starts ARGS... LINE: --help exits 0, stderr empty, stdout starts with LINE
help_starts() {
    line=$1
    shift
    "$P" "$@" >out.txt 2>err.txt
    got=$?
    [ "$got" = 0 ] || { echo "$kind $*: exit code: got $got, want 0"; fail=1; }
    [ -s err.txt ] && { echo "$kind $*: stderr not empty:"; cat err.txt; fail=1; }
    [ "$(head -n 1 out.txt)" = "$line" ] || {
        echo "$kind $*: first line: got '$(head -n 1 out.txt)', want '$line'"
        fail=1
    }
}

case $kind in
cudaspy)
    check 0 "cudaspy 0.1.0" "" --version
    check 0 "Usage: cudaspy COMMAND [ARGS...]
       cudaspy --help | --version

Record the CUDA calls of a program and what its host did meanwhile into one
run file, for cudaspy-analyze.

Commands:
  record      run a command with the CUDA shim preloaded and record it;
              'cudaspy record --help' gives its options
  ctl         start or stop recording a running program (record --capture
              signal): 'cudaspy ctl PID start|stop'
  top         a live view of a run while it is recorded: 'cudaspy top
              RUN|PID' (cudaspy-analyze top; keys 1 p f b, q quits)

Options:
  -h, --help  print this help and exit
  --version   print the version and exit

Exit status: 0 for --help and --version; 2 usage error (record: its --help).

EXAMPLES
  cudaspy record -o run.lmdb -- python train.py
  cudaspy top run.lmdb
  cudaspy-analyze run.lmdb" "" --help
    cp out.txt help.txt
    check 0 "$(cat help.txt)" "" -h
    help_starts "Usage: cudaspy record [-o FILE] [--no-host] [--gpu-activity MODE] [--duty MS] [-q]" \
        record --help
    check 2 "" "cudaspy: no subcommand
Try 'cudaspy --help'"
    help_starts "Usage: cudaspy-analyze top [--interval S] [--window S] [--view NAME] [--once] RUN|PID" \
        top --help
    check 2 "" "cudaspy-analyze: top: no run file or pid
Try 'cudaspy-analyze top --help'" top
    check 2 "" "cudaspy: unknown subcommand (record, ctl or top)
Try 'cudaspy --help'" replay
    check 2 "" "cudaspy: unknown option '--bogus'
Try 'cudaspy record --help'" record --bogus -- true
    check 2 "" "cudaspy: option --gpu-activity needs sampled, full or off
Try 'cudaspy record --help'" record --gpu-activity always -- true
    ;;
sampler)
    check 0 "cudaspy-sampler 0.1.0" "" --version
    help_starts "Usage: cudaspy-sampler [OPTIONS] -- CMD [ARGS...]" --help
    ;;
analyze)
    check 0 "cudaspy-analyze 0.1.0 (run format 4)" "" --version
    check 0 "cudaspy-analyze 0.1.0 (run format 4)" "" -V
    help_starts "NAME" --help
    ;;
*)
    echo "version_help.sh: unknown program kind '$kind'"
    exit 2
    ;;
esac
[ $fail = 0 ] && echo "ok   version_help $kind"
exit $fail
