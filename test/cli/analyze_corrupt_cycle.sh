# Branch pages that are not a tree: the first child of cuda_blk's root
# page made to point at the root itself. LMDB would follow it until its
# cursor stack is full; the reader's page check on open finds the page
# reached twice: one line, exit 2. The page numbers are read from the file
# (newest meta page -> main database root -> cuda_blk's record).
. "$(dirname "$0")/analyze_common.sh"
gen clean run.lmdb --steps 3000 # cuda_blk two levels deep

u() { od -An -tu"$1" -j"$2" -N"$1" run.lmdb | tr -d ' '; } # u BYTES OFFSET
ps=$(u 4 40)
meta=0
[ "$(u 8 $((ps + 144)))" -gt "$(u 8 144)" ] && meta=$ps
page=$(($(u 8 $((meta + 128))) * ps)) # main database root
n=$((($(u 2 $((page + 12))) - 16) / 2))
root=
i=0
while [ $i -lt $n ]; do
    node=$((page + $(u 2 $((page + 16 + 2 * i)))))
    ks=$(u 2 $((node + 6)))
    if [ "$(dd if=run.lmdb bs=1 skip=$((node + 8)) count="$ks" 2>/dev/null)" = cuda_blk ]; then
        [ "$(u 2 $((node + 8 + ks + 6)))" = 2 ] || { echo "cuda_blk is not two levels deep"; exit 1; }
        root=$(u 8 $((node + 8 + ks + 40)))
    fi
    i=$((i + 1))
done
[ -n "$root" ] || { echo "no cuda_blk record in the main database"; exit 1; }
child0=$((root * ps + $(u 2 $((root * ps + 16))))) # node 0: pgno in lo, hi, flags
printf "$(printf '\\%03o\\%03o\\%03o\\%03o\\000\\000' $((root & 255)) $((root >> 8 & 255)) \
    $((root >> 16 & 255)) $((root >> 24 & 255)))" |
    dd of=run.lmdb bs=1 seek=$child0 conv=notrunc 2>/dev/null

want_rejected run.lmdb \
    "cudaspy-analyze: run.lmdb: corrupt run file (cuda_blk, page $root: reached twice, so the pages are not a tree)"
finish
