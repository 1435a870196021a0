# --help is man-style with EXAMPLES and exit codes; --version one line.
. "$(dirname "$0")/analyze_common.sh"
run "$A" --help
want_rc 0
want_err ""
for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES; do
    grep -q "^$section\$" out.txt || { echo "--help lacks $section"; fail=1; }
done
run "$A" --version
want_rc 0
want_out "cudaspy-analyze 0.1.0 (run format 4)"
finish
