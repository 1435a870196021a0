/* test_store_growth.c: fault tests of the run-file store under pressure:
 * a map that starts at 1 MiB and must grow past 1 GiB (MDB_MAP_FULL, grow,
 * replay) without losing a block, and a run file cut at every page
 * boundary, which must give a clean error. Runs in /dev/shm when it has
 * room, else /tmp. The blocks are process windows, 96 bytes a record on
 * disk as well: CUDA records shrink to a few bytes (compact blocks), and
 * 1.1 GiB of them would take minutes to write. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "check.h"
#include "cudaspy/runfile.h"

#define REC_PER_BLK 600
#define GROW_TARGET ((1ull << 30) + (100ull << 20)) /* 1.1 GiB of blocks */

static char dir[64];
static char path[128];

/* /dev/shm when it has room (no disk I/O: the test stays fast), else /tmp. */
static const char *scratch_root(void)
{
    struct statvfs fs;

    if (statvfs("/dev/shm", &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize >= (4ull << 30))
        return "/dev/shm";
    return "/tmp";
}

static int put_block(struct cs_store *s, uint32_t b, struct cs_rec_pwin *recs)
{
    struct cs_blk_hdr h = {0};

    for (uint32_t i = 0; i < REC_PER_BLK; i++) {
        recs[i].pid = b;
        recs[i].t_start_ns = (uint64_t)b * 1000 + i;
        recs[i].t_end_ns = recs[i].t_start_ns + 1;
    }
    h.ts_first_ns = (uint64_t)b * 1000;
    h.ts_last_ns = (uint64_t)b * 1000 + REC_PER_BLK;
    h.n = REC_PER_BLK;
    h.kind = CS_REC_PWIN;
    return cs_store_put_block(s, 1, &h, recs);
}

static int test_map_grows_from_1mib_past_1gib(void)
{
    static struct cs_rec_pwin recs[REC_PER_BLK];
    struct cs_store_opts o = {.map_bytes = 1 << 20};
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *rp;
    size_t blk_bytes = sizeof(struct cs_blk_hdr) + sizeof(recs);
    uint32_t nblk = (uint32_t)(GROW_TARGET / blk_bytes) + 1, seen = 0;
    struct statvfs fs;
    struct stat st;
    int rc;

    CHECK(statvfs(dir, &fs) == 0);
    if ((uint64_t)fs.f_bavail * fs.f_frsize < (3ull << 30)) {
        fprintf(stderr, "skip: less than 3 GiB free in %s\n", dir);
        return 0;
    }
    CHECK_OK(cs_store_open(s, path, &o, NULL));
    for (uint32_t b = 0; b < nblk; b++) {
        CHECK_OK(put_block(s, b, recs));
        if (b % 160 == 159)
            CHECK_OK(cs_store_commit(s));
    }
    CHECK_OK(cs_store_commit(s));
    CHECK(cs_store_map_bytes(s) > (1ull << 30));
    cs_store_free(s);
    CHECK(stat(path, &st) == 0);
    CHECK((uint64_t)st.st_size > GROW_TARGET);
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_OK(cs_cursor_open(r, CS_REC_PWIN, 0, UINT64_MAX, &c));
    while ((rc = cs_cursor_next(c, &h, &rp, NULL)) == 1) {
        const struct cs_rec_pwin *rec = rp;
        CHECK_EQ(h->n, REC_PER_BLK);
        CHECK_EQ(rec[0].pid, seen);
        CHECK_EQ(rec[REC_PER_BLK - 1].pid, seen);
        seen++;
    }
    cs_cursor_close(c);
    CHECK_EQ(rc, 0);
    CHECK_EQ(seen, nblk);
    cs_run_free(r);
    unlink(path);
    return 0;
}

/* Every cut at a page boundary (and one byte into each page): a clean
 * error code, never a crash; the whole file still reads completely. */
static int test_cut_at_every_page_is_clean(void)
{
    struct cs_store *s = cs_store_new();
    struct cs_rec_pwin *recs = calloc(REC_PER_BLK, sizeof(*recs));
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    char cut[160], cmd[512];
    struct stat st;

    CHECK(recs != NULL);
    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    for (uint32_t b = 0; b < 20; b++)
        CHECK_OK(put_block(s, b, recs));
    cs_store_free(s);
    free(recs);
    CHECK(stat(path, &st) == 0);
    snprintf(cut, sizeof(cut), "%s.cut", path);
    for (off_t len = 0; len < st.st_size; len += 4096) {
        for (int d = 0; d < 2; d++) {
            int rc;
            snprintf(cmd, sizeof(cmd), "head -c %lld %s > %s && rm -f %s-lock",
                     (long long)(len + d), path, cut, cut);
            CHECK_EQ(system(cmd), 0);
            rc = cs_run_open(r, cut, &err);
            if (rc != CS_E_TRUNCATED && rc != CS_E_BADMAGIC)
                fprintf(stderr, "cut at %lld: %d %s\n", (long long)(len + d), rc, err.msg);
            CHECK(rc == CS_E_TRUNCATED || rc == CS_E_BADMAGIC);
            CHECK(err.msg[0] != '\0');
        }
    }
    CHECK_OK(cs_run_open(r, path, &err));
    CHECK_EQ(cs_run_count(r, CS_REC_PWIN), 20 * REC_PER_BLK);
    cs_run_free(r);
    return 0;
}

int main(void)
{
    snprintf(dir, sizeof(dir), "%s/cs_test_growth.XXXXXX", scratch_root());
    if (mkdtemp(dir) == NULL)
        return 2;
    snprintf(path, sizeof(path), "%s/run.lmdb", dir);
    RUN(test_cut_at_every_page_is_clean);
    RUN(test_map_grows_from_1mib_past_1gib);
    return check_finish(dir);
}
