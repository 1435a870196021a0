/* run_bytes.c: what a run file spends on disk per CUDA record, read with
 * LMDB directly (not through cs_cursor), so it measures version-1 and
 * version-2 files alike. One line per file (STYLE.md "Benchmarks"):
 *   <label> bytes_per_rec <value B per record> B  n=... blocks=... value_bytes=...
 *           disk_bytes=... disk_per_rec=... file_bytes=...
 * value: the cuda_blk values (block header + body) over the CUDA records;
 * disk: the cuda_blk table's pages (branch + leaf + overflow) times the page
 * size, what the records occupy in the file; file: the whole file, host
 * records, strings and free pages included.
 * Usage: cs_run_bytes LABEL RUN.lmdb [LABEL RUN.lmdb ...] */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cudaspy/record.h"

struct run_bytes {
    uint64_t n, blocks, value_bytes, disk_bytes, file_bytes;
};

static int measure(const char *path, struct run_bytes *b)
{
    MDB_env *env = NULL;
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    MDB_dbi dbi;
    MDB_stat st;
    MDB_val k, v;
    struct stat fs;
    int rc;

    memset(b, 0, sizeof(*b));
    if (stat(path, &fs) < 0)
        return -1;
    b->file_bytes = (uint64_t)fs.st_size;
    if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_maxdbs(env, 16)) ||
        (rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0)) ||
        (rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) ||
        (rc = mdb_dbi_open(txn, "cuda_blk", 0, &dbi)) || (rc = mdb_stat(txn, dbi, &st)) ||
        (rc = mdb_cursor_open(txn, dbi, &cur)))
        goto out;
    b->disk_bytes = (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * st.ms_psize;
    while ((rc = mdb_cursor_get(cur, &k, &v, b->blocks ? MDB_NEXT : MDB_FIRST)) == 0) {
        struct cs_blk_hdr h;
        if (v.mv_size < sizeof(h))
            break;
        memcpy(&h, v.mv_data, sizeof(h));
        b->n += h.n;
        b->value_bytes += v.mv_size;
        b->blocks++;
    }
    rc = rc == MDB_NOTFOUND ? 0 : rc;
out:
    mdb_cursor_close(cur);
    if (txn)
        mdb_txn_abort(txn);
    if (env)
        mdb_env_close(env);
    if (rc)
        fprintf(stderr, "cs_run_bytes: %s: %s\n", path, mdb_strerror(rc));
    return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
    int status = 0;

    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: cs_run_bytes LABEL RUN.lmdb [LABEL RUN.lmdb ...]\n");
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        struct run_bytes b;
        double n;
        if (measure(argv[i + 1], &b) < 0) {
            status = 1;
            continue;
        }
        n = b.n ? (double)b.n : 1.0;
        printf("%-24s bytes_per_rec %6.2f  B      n=%llu blocks=%llu value_bytes=%llu "
               "disk_bytes=%llu disk_per_rec=%.2f file_bytes=%llu file_per_rec=%.2f\n",
               argv[i], (double)b.value_bytes / n, (unsigned long long)b.n,
               (unsigned long long)b.blocks, (unsigned long long)b.value_bytes,
               (unsigned long long)b.disk_bytes, (double)b.disk_bytes / n,
               (unsigned long long)b.file_bytes, (double)b.file_bytes / n);
    }
    return status;
}
