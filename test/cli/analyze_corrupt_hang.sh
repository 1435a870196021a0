# A crafted page once made LMDB loop forever inside mdb_dbi_open() (bug 5
# of docs/reliability.md): the main database's root page flagged LEAF2 with
# mp_lower 0, so its key count read as ~2^31 and the binary search in
# mdb_node_search() overflowed and never ended. The reader now checks the
# pages LMDB walks on open first: a clean one-line error, exit 2, no hang
# (want_rejected's timeout stands in for "forever"). Two inputs: the fuzzer's file as
# found (page 3's header also names the wrong page), and the same file with
# that number fixed, which is the bare hang.
. "$(dirname "$0")/analyze_common.sh"
corpus regress-hang-mdb_dbi_open.run hang.run
want_rejected hang.run \
    "cudaspy-analyze: hang.run: corrupt run file (main database, page 3: header says page 1536)"

cp hang.run leaf2.run
printf '\003\000\000\000\000\000\000\000' | dd of=leaf2.run bs=1 seek=12288 conv=notrunc 2>/dev/null
want_rejected leaf2.run \
    "cudaspy-analyze: leaf2.run: corrupt run file (main database, page 3: flags 0x2e, want a leaf page)"
finish
