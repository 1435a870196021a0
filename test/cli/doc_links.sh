#!/bin/sh
# doc_links.sh: every relative link in every tracked Markdown file resolves
# (issue 26): [text](path), ![alt](path) and [ref]: path, outside code
# blocks and code spans. The path is taken from the file's own folder (from
# the tree's root when it starts with /); for path#anchor the file must
# exist (anchors are not checked) inside the repository (issue 36: a link
# to ../shared/... resolved on the dev box only); #anchor alone and URLs
# with a scheme (https:, mailto:) are skipped. Prints FILE:LINE: LINK: no
# such file, or: outside the repository.
# Usage: doc_links.sh SOURCE_DIR
set -u
cd "$1" || exit 2
root=$(pwd -P)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.md')
else
    files=$(find . -name '*.md' -not -path './build*' | sed 's|^\./||')
fi
[ -n "$files" ] || { echo "doc_links.sh: no Markdown files under $1"; exit 2; }
bad=$(for f in $files; do
    awk -v file="$f" '
    /^ *(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
        line = $0
        gsub(/`[^`]*`/, "", line)
        if (match(line, /^ *\[[^]]+\]: *[^ ]+/)) {
            ref = substr(line, RSTART, RLENGTH)
            sub(/^ *\[[^]]+\]: */, "", ref)
            print FNR "\t" ref
        }
        while (match(line, /\]\([^)]+\)/)) {
            t = substr(line, RSTART + 2, RLENGTH - 3)
            line = substr(line, RSTART + RLENGTH)
            sub(/ +".*$/, "", t)
            print FNR "\t" t
        }
    }' "$f" | while IFS='	' read -r n link; do
        case $link in
        '#'* | [a-zA-Z]*:*) continue ;;
        esac
        path=${link%%#*}
        path=${path%%\?*}
        case $path in
        /*) full=.$path ;;
        *) full=$(dirname "$f")/$path ;;
        esac
        if [ ! -e "$full" ]; then
            echo "$f:$n: $link: no such file"
            continue
        fi
        case $(realpath -m "$full") in
        "$root" | "$root"/*) ;;
        *) echo "$f:$n: $link: outside the repository" ;;
        esac
    done
done)
if [ -n "$bad" ]; then
    echo "$bad"
    exit 1
fi
echo "ok   doc_links ($(echo "$files" | wc -l) files)"
