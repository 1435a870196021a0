#!/bin/bash
# no_shell_outs.sh SRC: no product code (analyzer/, sampler/, store/, interpose/,
# include/) runs a shell: no system(), popen(), or exec of /bin/sh. The only
# exec calls allowed are the four that start what the user asked for:
# the sampler's launch of the command, the launcher's exec of the sampler
# (and of cudaspy-analyze for `cudaspy top`), the shim's start of the
# sampler, and the sampler's start of cudaspy-analyze beside it (--metrics,
# --keep-on).
S=${1:?usage: $0 SRC_DIR}
cd "$S" || exit 2
bad=$(grep -nE '(^|[^"[:alnum:]_.>])(system|popen)[[:space:]]*\(|"/bin/(ba)?sh"|\bexecl[ep]?[[:space:]]*\(' \
      analyzer/*.[ch] analyzer/*/*.[ch] sampler/*.[ch] store/*.[ch] interpose/*.[ch] \
      include/cudaspy/*.h)
[ -z "$bad" ] || { echo "no_shell_outs: shell-outs in product code:" >&2; echo "$bad" >&2; exit 1; }
execs=$(grep -nE '\bexec(v|vp|ve|vpe)[[:space:]]*\(' \
        analyzer/*.c analyzer/*/*.c sampler/*.c store/*.c interpose/*.c |
        grep -vE '^(sampler/main\.c|sampler/beside\.c|interpose/launcher\.c|interpose/shim_start\.c):')
[ -z "$execs" ] || { echo "no_shell_outs: unexpected exec:" >&2; echo "$execs" >&2; exit 1; }
echo "no_shell_outs: no system/popen/sh in $(ls analyzer/*.[ch] analyzer/*/*.[ch] sampler/*.[ch] store/*.[ch] interpose/*.[ch] include/cudaspy/*.h | wc -l) files; exec only in the 4 launch paths"
