# Usage errors: one line plus the --help hint, exit 2.
. "$(dirname "$0")/analyze_common.sh"
run "$A" --bogus run.lmdb
want_rc 2
want_err "cudaspy-analyze: unknown option '--bogus'
Try 'cudaspy-analyze --help'"
run "$A"
want_rc 2
want_err "cudaspy-analyze: no run file given
Try 'cudaspy-analyze --help'"
run "$A" --fail-on severe run.lmdb
want_rc 2
want_err "cudaspy-analyze: --fail-on: expected high, medium or low: 'severe'
Try 'cudaspy-analyze --help'"
run "$A" --since 5 --until 2 run.lmdb
want_rc 2
want_err "cudaspy-analyze: --until must be after --since
Try 'cudaspy-analyze --help'"
finish
