#!/bin/sh
# gen_assets.sh: turns analyzer/views/html/report.html.in into
# analyzer/views/html_assets.h
# (html_head: everything before the @DATA@ line; html_tail: everything after).
# Usage: gen_assets.sh report.html.in OUT.h   (unit.html_assets checks they agree)
set -eu
in=$1 out=$2
esc() { sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/'; }
{
    echo '/* views/html_assets.h: the HTML report'"'"'s inline CSS, markup and JS, generated from'
    echo ' * analyzer/views/html/report.html.in by test/html/gen_assets.sh; edit that file and'
    echo ' * rerun the script. The data JSON block goes between head and tail. */'
    echo '#ifndef CUDASPY_ANALYZER_HTML_ASSETS_H'
    echo '#define CUDASPY_ANALYZER_HTML_ASSETS_H'
    echo
    echo 'static const char html_head[] ='
    sed '/^@DATA@$/,$d' "$in" | esc
    echo '    "";'
    echo
    echo 'static const char html_tail[] ='
    sed '1,/^@DATA@$/d' "$in" | esc
    echo '    "";'
    echo
    echo '#endif'
} > "$out"
