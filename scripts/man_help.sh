#!/bin/sh
# man_help.sh: what help2man runs to make the man pages (CMakeLists.txt).
# `man_help.sh PROG --help` prints PROG's --help in help2man's conventions:
# a man-style text (NAME, SYNOPSIS, ... headings at column 0, as
# cudaspy-analyze prints) becomes "Usage:"/"or:" lines, paragraphs and
# "Options:"-style headings, and the lines after "Usage:" that name PROG
# become "or:" lines; each example is a paragraph of its own.
# `man_help.sh PROG --version` prints the first two words of PROG's. Any
# other option runs PROG unchanged.
prog=$1
shift
if [ "$1" = --version ]; then # the page footer: "PROG VERSION", nothing after
    "$prog" --version | awk 'NR == 1 { print $1, $2 }'
    exit
fi
[ "$1" = --help ] || exec "$prog" "$@"
"$prog" --help | awk -v name="${prog##*/}" '
/^[A-Z][A-Z ]*[A-Z]$/ {
    sec = $0; first = 1; ex = sec == "EXAMPLES"
    if (sec != "NAME" && sec != "SYNOPSIS" && sec != "DESCRIPTION")
        print "\n" substr(sec, 1, 1) tolower(substr(sec, 2)) ":"
    next
}
/^[A-Z][a-z ]*:$/ { ex = $0 == "Examples:"; print; next }
ex && NF { print; print ""; next }
sec == "NAME" { next }
sec == "SYNOPSIS" {
    if (NF == 0) next
    sub(/^ +/, ""); print (first ? "Usage: " : "  or:  ") $0; first = 0; next
}
sec == "DESCRIPTION" { if (first) print ""; first = 0; sub(/^ +/, ""); print; next }
/^Usage: / { usage = 1; print; next }
usage && $1 == name { sub(/^ +/, ""); print "  or:  " $0; next }
{ usage = 0; print }'
