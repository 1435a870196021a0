/* recode.c: rewrite a version-1 run file's CUDA blocks as compact blocks
 * (format 2) in place, keys and headers kept, so that the same recorded
 * records can be read in both encodings: store.compact_same_json compares
 * `cudaspy-analyze --json` of the two (issue 25: readers get the same
 * answers). With --merge N, consecutive blocks (key order) of one process
 * become blocks of up to N records, as the format-2 collector cuts them
 * (2048), with their own time spans and keys. Works on a copy the caller
 * made; LMDB directly.
 * Usage: cs_recode [--merge N] RUN.lmdb    exit 0, or 1 with one line on stderr */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/cudablk.h"

static uint8_t enc[CS_BLK_MAX_BYTES];
static uint32_t merge_n; /* 0: keep the blocks */

struct blk {
    uint8_t key[16];
    struct cs_blk_hdr h;
    struct cs_rec_cuda *recs;
};

/* Merge runs of blocks of one pid into blocks of up to merge_n records. */
static size_t merge(struct blk *b, size_t n)
{
    size_t out = 0;

    for (size_t i = 0; i < n;) {
        struct blk m = b[i];
        size_t j = i + 1;
        while (j < n && b[j].h.pid == m.h.pid && b[j].h.flags == m.h.flags &&
               m.h.n + b[j].h.n <= merge_n) {
            m.recs = realloc(m.recs, (size_t)(m.h.n + b[j].h.n) * sizeof(*m.recs));
            if (m.recs == NULL)
                exit(1);
            memcpy(m.recs + m.h.n, b[j].recs, (size_t)b[j].h.n * sizeof(*m.recs));
            m.h.n += b[j].h.n;
            if (b[j].h.ts_first_ns < m.h.ts_first_ns)
                m.h.ts_first_ns = b[j].h.ts_first_ns;
            if (b[j].h.ts_last_ns > m.h.ts_last_ns)
                m.h.ts_last_ns = b[j].h.ts_last_ns;
            free(b[j++].recs);
        }
        for (int k = 0; k < 8; k++) /* the key's ts_first, big-endian */
            m.key[k] = (uint8_t)(m.h.ts_first_ns >> (56 - 8 * k));
        b[out++] = m;
        i = j;
    }
    return out;
}

/* Recode every plain block of cuda_blk; the values are collected first
 * (a put while a cursor walks would move it). */
static int recode(MDB_txn *txn, MDB_dbi dbi, size_t *nblk)
{
    MDB_cursor *cur;
    MDB_val k, v;
    struct blk *all = NULL;
    size_t n = 0, cap = 0;
    int rc = mdb_cursor_open(txn, dbi, &cur);

    while (rc == 0 && (rc = mdb_cursor_get(cur, &k, &v, n ? MDB_NEXT : MDB_FIRST)) == 0) {
        struct cs_blk_hdr h;
        if (k.mv_size != 16 || v.mv_size < sizeof(h))
            return fprintf(stderr, "cs_recode: bad block\n"), -1;
        memcpy(&h, v.mv_data, sizeof(h));
        if ((h.flags & CS_BF_COMPACT) || h.n == 0 ||
            v.mv_size != sizeof(h) + (size_t)h.n * sizeof(struct cs_rec_cuda))
            return fprintf(stderr, "cs_recode: not a version-1 CUDA block\n"), -1;
        if (n == cap && (all = realloc(all, (cap = cap * 2 + 64) * sizeof(*all))) == NULL)
            return -1;
        memcpy(all[n].key, k.mv_data, 16);
        all[n].h = h;
        if ((all[n].recs = malloc(v.mv_size)) == NULL)
            return -1;
        memcpy(all[n++].recs, (uint8_t *)v.mv_data + sizeof(h), v.mv_size - sizeof(h));
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND)
        return fprintf(stderr, "cs_recode: %s\n", mdb_strerror(rc)), -1;
    if (merge_n) {
        if ((rc = mdb_drop(txn, dbi, 0)) != 0)
            return fprintf(stderr, "cs_recode: %s\n", mdb_strerror(rc)), -1;
        n = merge(all, n);
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;
        MDB_val kk = {16, all[i].key}, vv;
        if (cs_cudablk_encode(&all[i].h, all[i].recs, all[i].h.n, enc, sizeof(enc), &len) !=
            (int)all[i].h.n)
            return fprintf(stderr, "cs_recode: block does not fit\n"), -1;
        vv.mv_size = len;
        vv.mv_data = enc;
        if ((rc = mdb_put(txn, dbi, &kk, &vv, 0)) != 0)
            return fprintf(stderr, "cs_recode: %s\n", mdb_strerror(rc)), -1;
        free(all[i].recs);
    }
    free(all);
    *nblk = n;
    return 0;
}

int main(int argc, char **argv)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi cuda, meta;
    MDB_val k = {14, "format_version"}, v = {1, "2"};
    size_t n = 0;
    int rc;

    if (argc == 4 && strcmp(argv[1], "--merge") == 0) {
        merge_n = (uint32_t)strtoul(argv[2], NULL, 10);
        argv += 2;
        argc -= 2;
    }
    if (argc != 2)
        return fprintf(stderr, "usage: cs_recode [--merge N] RUN.lmdb\n"), 2;
    if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_maxdbs(env, 16)) ||
        (rc = mdb_env_open(env, argv[1], MDB_NOSUBDIR, 0600)) ||
        (rc = mdb_txn_begin(env, NULL, 0, &txn)) ||
        (rc = mdb_dbi_open(txn, "cuda_blk", 0, &cuda)) ||
        (rc = mdb_dbi_open(txn, "meta", 0, &meta)))
        return fprintf(stderr, "cs_recode: %s: %s\n", argv[1], mdb_strerror(rc)), 1;
    if (recode(txn, cuda, &n) < 0 || mdb_put(txn, meta, &k, &v, 0) || mdb_txn_commit(txn))
        return 1;
    mdb_env_close(env);
    printf("cs_recode: %s: %zu blocks recoded\n", argv[1], n);
    return 0;
}
