/* test_runfile.c: cs_store and cs_run (store/runfile_*.c) on real files:
 * round trip of every record kind and table, time windows, map growth
 * within limits, and clean errors for missing, truncated, random,
 * newer-version and corrupt files. */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cudaspy/cudablk.h"
#include "cudaspy/runfile.h"
#include "cudaspy/version.h"
#include "runfile_priv.h" /* the reader's view of its map (test_appended_file_...) */

static char dir[] = "/tmp/cs_test_runfile.XXXXXX";
static char path[128];

/* Record i of @p kind: every byte derived from (kind, i); the two leading
 * u64 times are i*1000 and i*1000+500. */
static void fill_rec(unsigned kind, uint32_t i, uint8_t *out)
{
    unsigned rs = cs_rec_size(kind);
    uint64_t t0 = (uint64_t)i * 1000, t1 = t0 + 500;

    for (unsigned b = 0; b < rs; b++)
        out[b] = (uint8_t)(kind * 31 + i * 7 + b);
    memcpy(out, &t0, 8);
    memcpy(out + 8, &t1, 8);
}

static int put_kind(struct cs_store *s, unsigned kind, uint32_t first, uint32_t n)
{
    uint8_t *recs = malloc((size_t)n * cs_rec_size(kind));
    struct cs_blk_hdr h = {0};
    int rc;

    if (recs == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        fill_rec(kind, first + i, recs + (size_t)i * cs_rec_size(kind));
    h.ts_first_ns = (uint64_t)first * 1000;
    h.ts_last_ns = (uint64_t)(first + n - 1) * 1000 + 500;
    h.n = n;
    h.kind = (uint16_t)kind;
    h.pid = 42;
    rc = cs_store_put_block(s, kind, &h, recs);
    free(recs);
    return rc;
}

static char long_name[2000];

static int write_sample(const char *p)
{
    struct cs_store *s = cs_store_new();
    struct cs_proc pr = {.pid = 42, .ppid = 1, .start_ns = 5, .exit_status = -1,
                         .flags = CS_PF_ROOT | CS_PF_CUDA, .rank = CS_RANK_NONE};
    struct cs_thread th = {.pid = 42, .tid = 43, .start_ns = 6, .name = "worker"};
    struct cs_frame fr[3] = {{0x10, 1, 0}, {0x20, 2, 0}, {0x30, 1, 0}};
    uint32_t id, id2, sid;

    CHECK(s != NULL);
    CHECK_OK(cs_store_open(s, p, NULL, NULL));
    memset(long_name, 'k', sizeof(long_name) - 1);
    CHECK_OK(cs_store_intern(s, "cuLaunchKernel", 14, &id));
    CHECK_EQ(id, 1);
    CHECK_OK(cs_store_intern(s, long_name, strlen(long_name), &id2));
    CHECK_EQ(id2, 2);
    CHECK_OK(cs_store_intern(s, "cuLaunchKernel", 14, &id));
    CHECK_EQ(id, 1);
    pr.cmdline_id = id2;
    memcpy(pr.comm, "trainer", 8);
    CHECK_OK(cs_store_put_proc(s, &pr));
    CHECK_OK(cs_store_put_thread(s, &th));
    CHECK_OK(cs_store_put_stack(s, fr, 3, &sid));
    CHECK_EQ(sid, 1);
    CHECK_OK(cs_store_put_stack(s, fr, 3, &sid));
    CHECK_EQ(sid, 1);
    CHECK_OK(cs_store_commit(s));
    for (unsigned k = CS_REC_CUDA; k < CS_REC_KIND_COUNT; k++) {
        CHECK_OK(put_kind(s, k, 0, 100));
        CHECK_OK(put_kind(s, k, 100, 50));
    }
    CHECK_OK(cs_store_put_meta(s, "host", "testhost"));
    CHECK_OK(cs_store_put_meta_u64(s, "clean_shutdown", 1));
    cs_store_free(s);
    return 0;
}

static int test_roundtrip_every_kind(void)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    const struct cs_proc *pr;
    const struct cs_thread *th;
    const struct cs_frame *fr;
    size_t n;

    CHECK_OK(write_sample(path));
    CHECK_OK(cs_run_open(r, path, &err));
    CHECK_STR(cs_run_meta(r, "format"), CS_FORMAT_MAGIC);
    /* every kind: Python samples too, so version 3 (version.h) */
    CHECK_EQ(cs_run_meta_u64(r, "format_version", 0), CS_FORMAT_VERSION);
    CHECK_STR(cs_run_meta(r, "tool_version"), CS_VERSION);
    CHECK_STR(cs_run_meta(r, "host"), "testhost");
    CHECK_EQ(cs_run_meta_u64(r, "clean_shutdown", 9), 1);
    CHECK(cs_run_meta(r, "absent") == NULL);
    CHECK_STR(cs_run_string(r, 1), "cuLaunchKernel");
    CHECK_STR(cs_run_string(r, 2), long_name);
    CHECK_STR(cs_run_string(r, 99), "");
    pr = cs_run_procs(r, &n);
    CHECK_EQ(n, 1);
    CHECK_EQ(pr[0].pid, 42);
    CHECK_EQ(pr[0].cmdline_id, 2);
    CHECK_STR(pr[0].comm, "trainer");
    th = cs_run_threads(r, &n);
    CHECK_EQ(n, 1);
    CHECK_EQ(th[0].tid, 43);
    CHECK_STR(th[0].name, "worker");
    fr = cs_run_stack(r, 1, &n);
    CHECK(fr != NULL);
    CHECK_EQ(n, 3);
    CHECK_EQ(fr[1].offset, 0x20);
    CHECK(cs_run_stack(r, 2, &n) == NULL);
    for (unsigned k = CS_REC_CUDA; k < CS_REC_KIND_COUNT; k++) {
        struct cs_cursor *c;
        const struct cs_blk_hdr *h;
        const void *recs;
        uint8_t want[128];
        uint32_t seen = 0;
        int rc;

        CHECK_EQ(cs_run_count(r, k), 150);
        CHECK_OK(cs_cursor_open(r, k, 0, UINT64_MAX, &c));
        while ((rc = cs_cursor_next(c, &h, &recs, &err)) == 1) {
            CHECK_EQ(h->kind, k);
            CHECK_EQ(h->rec_size, cs_rec_size(k));
            for (uint32_t i = 0; i < h->n; i++, seen++) {
                fill_rec(k, seen, want);
                CHECK(memcmp((const uint8_t *)recs + (size_t)i * h->rec_size, want,
                             h->rec_size) == 0);
            }
        }
        cs_cursor_close(c);
        CHECK_EQ(rc, 0);
        CHECK_EQ(seen, 150);
    }
    cs_run_free(r);
    return 0;
}

static int count_window(struct cs_run *r, unsigned kind, uint64_t a, uint64_t b)
{
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    int blocks = 0;

    if (cs_cursor_open(r, kind, a, b, &c) < 0)
        return -1;
    while (cs_cursor_next(c, &h, &recs, NULL) == 1)
        blocks++;
    cs_cursor_close(c);
    return blocks;
}

static int test_cursor_time_window(void)
{
    struct cs_run *r = cs_run_new();

    CHECK_OK(write_sample(path));
    CHECK_OK(cs_run_open(r, path, NULL));
    /* blocks cover [0, 99500] and [100000, 149500] */
    CHECK_EQ(count_window(r, CS_REC_OFFCPU, 0, UINT64_MAX), 2);
    CHECK_EQ(count_window(r, CS_REC_OFFCPU, 0, 99999), 1);
    CHECK_EQ(count_window(r, CS_REC_OFFCPU, 99600, 99900), 0);
    CHECK_EQ(count_window(r, CS_REC_OFFCPU, 99500, 100000), 2);
    CHECK_EQ(count_window(r, CS_REC_OFFCPU, 140000, 150000), 1);
    CHECK_EQ(count_window(r, CS_REC_CUDA, 200000, 300000), 0);
    cs_run_free(r);
    return 0;
}

/* A run without Python samples says format version 2, so version-2
 * readers still read it (version.h); the first sample block makes it 3. */
static int test_version_rises_with_python_samples(void)
{
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();

    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    CHECK_OK(put_kind(s, CS_REC_OFFCPU, 0, 10));
    CHECK_OK(cs_store_commit(s));
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_EQ(cs_run_meta_u64(r, "format_version", 0), CS_FORMAT_VERSION_PLAIN);
    cs_run_free(r);
    CHECK_OK(put_kind(s, CS_REC_PYSAMPLE, 10, 10));
    CHECK_OK(cs_store_commit(s));
    CHECK((r = cs_run_new()) != NULL);
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_EQ(cs_run_meta_u64(r, "format_version", 0), 3);
    CHECK_EQ(cs_run_count(r, CS_REC_PYSAMPLE), 10);
    cs_run_free(r);
    cs_store_free(s);
    return 0;
}

static int test_missing_file_is_enoent(void)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    char p[160];

    snprintf(p, sizeof(p), "%s/nope.lmdb", dir);
    CHECK_ERR(cs_run_open(r, p, &err), -ENOENT);
    CHECK(strstr(err.msg, "nope.lmdb: No such file or directory") != NULL);
    cs_run_free(r);
    return 0;
}

static int write_file(const char *p, const void *b, size_t n)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ssize_t w;

    if (fd < 0)
        return -errno;
    w = write(fd, b, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -EIO;
}

static int test_random_bytes_is_badmagic(void)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    uint8_t junk[16384];
    unsigned seed = check_seed();
    char p[160];

    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)rand_r(&seed);
    snprintf(p, sizeof(p), "%s/junk.lmdb", dir);
    CHECK_OK(write_file(p, junk, sizeof(junk)));
    CHECK_ERR(cs_run_open(r, p, &err), CS_E_BADMAGIC);
    CHECK(strstr(err.msg, "junk.lmdb: not a cudaspy run file") != NULL);
    CHECK_OK(write_file(p, "hello", 5));
    CHECK_ERR(cs_run_open(r, p, &err), CS_E_BADMAGIC);
    cs_run_free(r);
    return 0;
}

/* Cut the sample at several lengths: every cut must give a clean code. */
static int test_truncated_file_is_reported(void)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    struct stat st;
    char p[160], want[400];

    CHECK_OK(write_sample(path));
    CHECK(stat(path, &st) == 0);
    snprintf(p, sizeof(p), "%s/cut.lmdb", dir);
    for (off_t len = st.st_size - 1; len > 0; len = len * 3 / 4) {
        char cmd[1024];
        int rc;
        snprintf(cmd, sizeof(cmd), "head -c %lld %s > %s; rm -f %s-lock", (long long)len,
                 path, p, p);
        CHECK_EQ(system(cmd), 0);
        rc = cs_run_open(r, p, &err);
        CHECK(rc == CS_E_TRUNCATED || rc == CS_E_BADMAGIC);
        if (len >= 8192)
            CHECK_ERR(rc, CS_E_TRUNCATED);
    }
    CHECK_OK(truncate(path, 9000));
    CHECK_ERR(cs_run_open(r, path, &err), CS_E_TRUNCATED);
    snprintf(want, sizeof(want), "%s: truncated file (expected 4096-byte page at offset ", path);
    CHECK(strncmp(err.msg, want, strlen(want)) == 0);
    CHECK(strstr(err.msg, ", file ends at 9000)") != NULL);
    cs_run_free(r);
    return 0;
}

static int test_future_version_is_refused(void)
{
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    char want[600];

    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    CHECK_OK(cs_store_put_meta_u64(s, "format_version", CS_FORMAT_VERSION + 1));
    cs_store_free(s);
    CHECK_ERR(cs_run_open(r, path, &err), CS_E_VERSION);
    snprintf(want, sizeof(want), "%s: format version %d is newer than this cudaspy reads (%d)",
             path, CS_FORMAT_VERSION + 1, CS_FORMAT_VERSION);
    CHECK_STR(err.msg, want);
    cs_run_free(r);
    return 0;
}

static int put_raw(const char *p, const char *db, const void *v, size_t vlen);

/* Put a raw value into cuda_blk behind the store's back. */
static int put_raw_block(const char *p, const void *v, size_t vlen)
{
    return put_raw(p, "cuda_blk", v, vlen);
}

/* Put a raw value into table @p db behind the store's back. */
static int put_raw(const char *p, const char *db, const void *v, size_t vlen)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    uint8_t key[16] = {0};
    MDB_val k = {sizeof(key), key}, val = {vlen, (void *)v};
    int rc;

    key[15] = 0xff;
    if (mdb_env_create(&env))
        return -1;
    mdb_env_set_maxdbs(env, 16);
    rc = mdb_env_open(env, p, MDB_NOSUBDIR, 0600);
    if (rc == 0)
        rc = mdb_txn_begin(env, NULL, 0, &txn);
    if (rc == 0) {
        rc = mdb_dbi_open(txn, db, 0, &dbi);
        if (rc == 0)
            rc = mdb_put(txn, dbi, &k, &val, 0);
        rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
    }
    mdb_env_close(env);
    return rc ? -1 : 0;
}

static int test_corrupt_block_is_reported(void)
{
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    uint8_t v[32 + 96 * 2] = {0};
    struct cs_blk_hdr bad = {.n = 3, .kind = CS_REC_CUDA, .rec_size = 96};
    int rc;

    CHECK_OK(write_sample(path));
    memcpy(v, &bad, sizeof(bad));
    CHECK_OK(put_raw_block(path, v, sizeof(v)));
    CHECK_OK(cs_run_open(r, path, &err));
    CHECK_OK(cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c));
    while ((rc = cs_cursor_next(c, &h, &recs, &err)) == 1)
        ;
    cs_cursor_close(c);
    CHECK_ERR(rc, CS_E_CORRUPT);
    CHECK(strstr(err.msg, "cuda_blk: block ts=0 seq=255: header says 3 records of 96 bytes, "
                          "value has 224 bytes") != NULL);
    bad.kind = 77;
    memcpy(v, &bad, sizeof(bad));
    CHECK_OK(put_raw_block(path, v, sizeof(v)));
    CHECK_OK(cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c));
    while ((rc = cs_cursor_next(c, &h, &recs, &err)) == 1)
        ;
    cs_cursor_close(c);
    CHECK_ERR(rc, CS_E_CORRUPT);
    CHECK(strstr(err.msg, "unknown record kind 77") != NULL);
    cs_run_free(r);
    return 0;
}

static int test_map_limit_keeps_committed_data(void)
{
    struct cs_store *s = cs_store_new();
    struct cs_store_opts o = {.map_bytes = 1 << 20, .max_map_bytes = 4 << 20};
    struct cs_run *r = cs_run_new();
    int rc = 0;

    /* process windows: 96-byte records that stay 96 bytes (CUDA records
     * shrink to a few bytes, so that many would not fill the map) */
    CHECK_OK(cs_store_open(s, path, &o, NULL));
    CHECK_OK(put_kind(s, CS_REC_PWIN, 0, 10));
    CHECK_OK(cs_store_commit(s));
    for (uint32_t i = 0; i < 200 && rc == 0; i++)
        rc = put_kind(s, CS_REC_PWIN, 1000 + i * 600, 600);
    CHECK_OK(rc);
    CHECK_ERR(cs_store_commit(s), CS_E_MAPFULL);
    CHECK(cs_store_pending(s) > 0);
    cs_store_free(s);
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_EQ(cs_run_count(r, CS_REC_PWIN), 10);
    cs_run_free(r);
    return 0;
}

static int test_map_grows_and_replays(void)
{
    struct cs_store *s = cs_store_new();
    struct cs_store_opts o = {.map_bytes = 1 << 20};
    struct cs_run *r = cs_run_new();

    CHECK_OK(cs_store_open(s, path, &o, NULL));
    for (uint32_t t = 0; t < 4; t++) {
        for (uint32_t i = 0; i < 100; i++)
            CHECK_OK(put_kind(s, CS_REC_PWIN, (t * 100 + i) * 600, 600));
        CHECK_OK(cs_store_commit(s));
    }
    CHECK(cs_store_map_bytes(s) >= (32u << 20));
    cs_store_free(s);
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_EQ(cs_run_count(r, CS_REC_PWIN), 400 * 600);
    cs_run_free(r);
    return 0;
}

/* RssFile of this process in kB (/proc/self/status), -1 if unknown. */
static long rss_file_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "RssFile: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* Reads every CUDA record of the file test_released_pages_read_back()
 * writes through a releasing cursor, checking each. @return the records
 * seen, -1 (no cursor) or -2 (a record is wrong). */
static long read_released(struct cs_run *r)
{
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    uint8_t want[128];
    long seen = 0;

    if (cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c) < 0)
        return -1;
    cs_cursor_release_pages(c);
    while (seen >= 0 && cs_cursor_next(c, &h, &recs, NULL) == 1)
        for (uint32_t i = 0; i < h->n && seen >= 0; i++, seen++) {
            fill_rec(CS_REC_CUDA, (uint32_t)seen, want);
            if (memcmp((const uint8_t *)recs + (size_t)i * h->rec_size, want, h->rec_size))
                seen = -2;
        }
    cs_cursor_close(c);
    return seen;
}

/* Run file @p p with @p nblocks blocks of 600 CUDA records, record i as
 * fill_rec() makes it. @return 0 or a store error */
static int write_cuda_blocks(const char *p, uint32_t nblocks)
{
    struct cs_store *s = cs_store_new();
    struct cs_store_opts o = {0};
    int rc = s ? cs_store_open(s, p, &o, NULL) : -ENOMEM;

    for (uint32_t i = 0; i < nblocks && rc == 0; i++)
        rc = put_kind(s, CS_REC_CUDA, i * 600, 600);
    if (rc == 0)
        rc = cs_store_commit(s);
    cs_store_free(s);
    return rc;
}

/* A cursor told to release pages does not leave the file's 46 MB mapped,
 * and what it hands out reads right, also the second time round. Issue 5. */
static int test_released_pages_read_back(void)
{
    struct cs_run *r = cs_run_new();
    long before;

    CHECK_OK(write_cuda_blocks(path, 800));
    CHECK_OK(cs_run_open(r, path, NULL));
    before = rss_file_kb();
    CHECK(before >= 0);
    CHECK_EQ(read_released(r), 800 * 600);
    CHECK_EQ(read_released(r), 800 * 600);
    CHECK(rss_file_kb() - before < 16 * 1024);
    CHECK_EQ(cs_run_count(r, CS_REC_CUDA), 800 * 600); /* counting releases too */
    CHECK(rss_file_kb() - before < 16 * 1024);
    cs_run_free(r);
    return 0;
}

/* Length of the largest mapping of file @p p from offset 0 here, 0 if none. */
static uint64_t map_len_of(const char *p)
{
    FILE *f = fopen("/proc/self/maps", "re");
    unsigned long long lo, hi, off, ino, best = 0;
    char line[512];
    struct stat st;

    if (f == NULL || stat(p, &st) < 0) {
        if (f)
            fclose(f);
        return 0;
    }
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%llx-%llx %*s %llx %*x:%*x %llu", &lo, &hi, &off, &ino) == 4 &&
            ino == (unsigned long long)st.st_ino && off == 0 && hi - lo > best)
            best = hi - lo;
    fclose(f);
    return best;
}

/* A file longer than LMDB's map of it (its header's map size zeroed, so
 * LMDB maps the pages in use, then 1 MiB appended): the reader bounds what
 * it trusts and what it hands back to the kernel by the map, not by the
 * file. Bounded by the file, closing a releasing cursor zeroed 1 MiB of
 * whatever memory lay past the map (fuzz_runfile: an ASan CHECK in
 * cs_cursor_close, docs/reliability.md). */
static int test_appended_file_stays_inside_map(void)
{
    struct cs_run *r = cs_run_new();
    static uint8_t tail[1 << 20];
    uint64_t zero = 0;
    long page = sysconf(_SC_PAGESIZE);
    char p[160];
    int fd;

    snprintf(p, sizeof(p), "%s/appended.lmdb", dir);
    CHECK_OK(write_cuda_blocks(p, 20));
    fd = open(p, O_RDWR);
    CHECK(fd >= 0);
    /* mm_mapsize of both meta pages: after the 16-byte page header, the
     * magic, the version and mm_address (lmdb's mdb.c, MDB_meta) */
    CHECK_EQ(pwrite(fd, &zero, 8, 32), 8);
    CHECK_EQ(pwrite(fd, &zero, 8, page + 32), 8);
    CHECK_EQ(pwrite(fd, tail, sizeof(tail), lseek(fd, 0, SEEK_END)), (ssize_t)sizeof(tail));
    close(fd);
    CHECK_OK(cs_run_open(r, p, NULL));
    CHECK_EQ(read_released(r), 20 * 600);
    CHECK(map_len_of(p) > 0);
    CHECK(r->file_bytes > map_len_of(p)); /* the case: the map is shorter */
    CHECK(r->view_bytes <= map_len_of(p));
    CHECK_EQ(read_released(r), 20 * 600);
    cs_run_free(r);
    return 0;
}

/* A reader that cannot create the lock file (uid nobody, root-owned
 * directory) falls back to MDB_NOLOCK. */
static int test_readonly_dir_opens_without_lock(void)
{
    char d[160], p[200], cmd[1024];
    pid_t pid;
    int st;

    snprintf(d, sizeof(d), "%s/ro", dir);
    snprintf(p, sizeof(p), "%s/run.lmdb", d);
    CHECK_OK(write_sample(path));
    snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s %s && chmod 0755 %s %s && chmod 0644 %s",
             d, path, p, dir, d, p);
    CHECK_EQ(system(cmd), 0);
    if (geteuid() != 0) {
        fprintf(stderr, "skip: needs root to switch to uid nobody\n");
        return 0;
    }
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct cs_run *r = cs_run_new();
        int rc;
        if (setgid(65534) || setuid(65534))
            _exit(3);
        rc = cs_run_open(r, p, NULL);
        _exit(rc == 0 && cs_run_count(r, CS_REC_CUDA) == 150 ? 0 : 1);
    }
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK_EQ(WEXITSTATUS(st), 0);
    CHECK(access(d, F_OK) == 0);
    snprintf(cmd, sizeof(cmd), "%s-lock", p);
    CHECK(access(cmd, F_OK) != 0);
    return 0;
}

/* A reader opened while a writer (another process) keeps committing and
 * growing the map sees every new commit through fresh cursors. */
static int test_live_reader_follows_writer(void)
{
    struct cs_run *r = cs_run_new();
    int go[2], done[2];
    pid_t pid;
    char c;
    int st;

    CHECK_EQ(pipe(go), 0);
    CHECK_EQ(pipe(done), 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct cs_store *s = cs_store_new();
        struct cs_store_opts o = {.map_bytes = 1 << 20};
        if (cs_store_open(s, path, &o, NULL) || put_kind(s, CS_REC_CUDA, 0, 100) ||
            cs_store_commit(s))
            _exit(1);
        if (write(done[1], "1", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(1);
        for (uint32_t i = 0; i < 100; i++)
            if (put_kind(s, CS_REC_CUDA, 1000 + i * 600, 600))
                _exit(1);
        if (cs_store_commit(s) || write(done[1], "2", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(1);
        cs_store_free(s);
        _exit(0);
    }
    CHECK_EQ(read(done[0], &c, 1), 1);
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_EQ(cs_run_count(r, CS_REC_CUDA), 100);
    CHECK_EQ(write(go[1], "g", 1), 1);
    CHECK_EQ(read(done[0], &c, 1), 1);
    CHECK_EQ(cs_run_count(r, CS_REC_CUDA), 100 + 100 * 600);
    CHECK_EQ(write(go[1], "g", 1), 1);
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK_EQ(WEXITSTATUS(st), 0);
    cs_run_free(r);
    close(go[0]);
    close(go[1]);
    close(done[0]);
    close(done[1]);
    return 0;
}

/* ---- compact CUDA blocks (format 2, issue 25) ---- */

/* Records of @p nthreads threads with times that grow by 1-3 us. */
static void fill_cuda(struct cs_rec_cuda *r, uint32_t n, uint32_t nthreads, unsigned seed)
{
    uint64_t t = 1000000;

    memset(r, 0, (size_t)n * sizeof(*r));
    for (uint32_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        r[i].pid = 42;
        r[i].tid = 43 + seed % nthreads;
        r[i].t_enter_ns = t;
        r[i].t_exit_ns = t + 500 + seed % 2000;
        r[i].seq = i + 1;
        r[i].api = (uint16_t)(1 + seed % 3);
        r[i].name_id = seed % 5;
        r[i].bytes = seed % 7 == 0 ? seed : 0;
        t += 1000 + seed % 2000;
    }
}

/* Sum of the cuda_blk values' sizes, read with LMDB directly. */
static int cuda_value_bytes(const char *p, uint64_t *bytes, uint64_t *blocks)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    *bytes = *blocks = 0;
    if (mdb_env_create(&env))
        return -1;
    mdb_env_set_maxdbs(env, 16);
    rc = mdb_env_open(env, p, MDB_NOSUBDIR | MDB_RDONLY, 0600);
    if (rc == 0 && (rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) == 0) {
        if ((rc = mdb_dbi_open(txn, "cuda_blk", 0, &dbi)) == 0 &&
            (rc = mdb_cursor_open(txn, dbi, &cur)) == 0) {
            while (mdb_cursor_get(cur, &k, &v, *blocks ? MDB_NEXT : MDB_FIRST) == 0) {
                *bytes += v.mv_size;
                ++*blocks;
            }
            mdb_cursor_close(cur);
        }
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    return rc ? -1 : 0;
}

/* One put of 20000 records from 300 threads: more records and threads than
 * a compact block takes, so the store splits it; every block's span holds
 * its records, and they come back byte for byte, in order. */
static int test_compact_put_splits_and_round_trips(void)
{
    enum { N = 20000 };
    static struct cs_rec_cuda recs[N];
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();
    struct cs_blk_hdr h = {.n = N, .kind = CS_REC_CUDA, .pid = 42};
    struct cs_err err = {""};
    struct cs_cursor *c;
    const struct cs_blk_hdr *bh;
    const void *got;
    uint64_t bytes, blocks;
    uint32_t seen = 0;
    int rc;

    fill_cuda(recs, N, 300, 7);
    h.ts_first_ns = recs[0].t_enter_ns;
    h.ts_last_ns = recs[N - 1].t_exit_ns + 5000;
    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    CHECK_OK(cs_store_put_block(s, 42, &h, recs));
    cs_store_free(s);
    CHECK_OK(cs_run_open(r, path, &err));
    CHECK_EQ(cs_run_count(r, CS_REC_CUDA), N);
    CHECK_OK(cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c));
    while ((rc = cs_cursor_next(c, &bh, &got, &err)) == 1) {
        const struct cs_rec_cuda *g = got;
        CHECK_EQ(bh->rec_size, sizeof(struct cs_rec_cuda));
        CHECK_EQ(bh->flags & CS_BF_COMPACT, 0);
        CHECK_EQ(bh->pid, 42);
        CHECK(bh->n <= CS_CUDABLK_MAX_RECS);
        for (uint32_t i = 0; i < bh->n; i++, seen++) {
            CHECK(g[i].t_enter_ns >= bh->ts_first_ns && g[i].t_exit_ns <= bh->ts_last_ns);
            CHECK(memcmp(&g[i], &recs[seen], sizeof(g[i])) == 0);
        }
    }
    cs_cursor_close(c);
    CHECK_EQ(rc, 0);
    CHECK_EQ(seen, N);
    CHECK_OK(cuda_value_bytes(path, &bytes, &blocks));
    CHECK(blocks > N / CS_CUDABLK_MAX_RECS); /* split: 256 threads a block at most */
    CHECK(bytes <= (uint64_t)N * 32); /* issue 25: <= 32 bytes a record */
    cs_run_free(r);
    return 0;
}

/* A one-block put keeps the caller's header: its key and span. */
static int test_compact_block_keeps_header(void)
{
    static struct cs_rec_cuda recs[100];
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();
    struct cs_blk_hdr h = {.ts_first_ns = 5, .ts_last_ns = UINT64_MAX - 1, .n = 100,
                           .kind = CS_REC_CUDA, .pid = 42, .flags = CS_HF_DEGRADED};
    struct cs_cursor *c;
    const struct cs_blk_hdr *bh;
    const void *got;

    fill_cuda(recs, 100, 2, 3);
    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    CHECK_OK(cs_store_put_block(s, 42, &h, recs));
    cs_store_free(s);
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_OK(cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c));
    CHECK_EQ(cs_cursor_next(c, &bh, &got, NULL), 1);
    CHECK_EQ(bh->ts_first_ns, 5);
    CHECK_EQ(bh->ts_last_ns, UINT64_MAX - 1);
    CHECK_EQ(bh->flags, CS_HF_DEGRADED);
    CHECK_EQ(bh->n, 100);
    CHECK(memcmp(got, recs, sizeof(recs)) == 0);
    CHECK_EQ(cs_cursor_next(c, &bh, &got, NULL), 0);
    cs_cursor_close(c);
    cs_run_free(r);
    return 0;
}

/* Read all CUDA blocks; @return the cursor's last code, err filled. */
static int read_cuda(struct cs_run *r, struct cs_err *err)
{
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    int rc;

    if ((rc = cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c)) < 0)
        return rc;
    while ((rc = cs_cursor_next(c, &h, &recs, err)) == 1)
        ;
    cs_cursor_close(c);
    return rc;
}

static int test_corrupt_compact_block_is_reported(void)
{
    static struct cs_rec_cuda recs[200];
    static uint8_t v[CS_BLK_MAX_BYTES];
    struct cs_blk_hdr h = {.ts_first_ns = 1000000};
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    uint32_t crc;
    size_t len;
    char want[400];

    fill_cuda(recs, 200, 3, 11);
    CHECK_EQ(cs_cudablk_encode(&h, recs, 200, v, sizeof(v), &len), 200);
    CHECK_OK(write_sample(path));
    v[len / 2] ^= 0x10; /* a flipped bit */
    CHECK_OK(put_raw_block(path, v, len));
    CHECK_OK(cs_run_open(r, path, &err));
    CHECK_ERR(read_cuda(r, &err), CS_E_CORRUPT);
    snprintf(want, sizeof(want), "%s: cuda_blk: block ts=0 seq=255: corrupt run file "
             "(compact block: CRC32C mismatch at byte 32 of %zu)", path, len);
    CHECK_STR(err.msg, want);
    v[len / 2] ^= 0x10;
    crc = cs_crc32c(0, v, sizeof(h)); /* cut short, CRC made right: the records run out */
    crc = cs_crc32c(crc, v + CS_CUDABLK_PREFIX, len - 3 - CS_CUDABLK_PREFIX);
    memcpy(v + sizeof(h), &crc, 4);
    CHECK_OK(put_raw_block(path, v, len - 3));
    CHECK_ERR(read_cuda(r, &err), CS_E_CORRUPT);
    CHECK(strstr(err.msg, "cuda_blk: block ts=0 seq=255: corrupt run file (compact block: "
                          "record runs past the end of the block at byte ") != NULL);
    memcpy(&h, v, sizeof(h)); /* a header that says too many records */
    h.n = CS_CUDABLK_MAX_RECS + 1;
    memcpy(v, &h, sizeof(h));
    CHECK_OK(put_raw_block(path, v, len));
    CHECK_ERR(read_cuda(r, &err), CS_E_CORRUPT);
    CHECK(strstr(err.msg, "cuda_blk: block ts=0 seq=255: compact block of 8193 records") !=
          NULL);
    cs_run_free(r);
    return 0;
}

/* Version-1 files (plain blocks) still read; a compact block in one is
 * corrupt. */
static int test_version_1_file_reads(void)
{
    static struct cs_rec_cuda recs[3];
    static uint8_t v[CS_BLK_MAX_BYTES];
    struct cs_blk_hdr h = {.ts_first_ns = 1000000, .ts_last_ns = 2000000000, .n = 3,
                           .kind = CS_REC_CUDA, .rec_size = 96};
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();
    struct cs_err err = {""};
    struct cs_cursor *c;
    const struct cs_blk_hdr *bh;
    const void *got;
    size_t len;

    fill_cuda(recs, 3, 1, 5);
    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    CHECK_OK(cs_store_put_meta_u64(s, "format_version", 1));
    cs_store_free(s);
    memcpy(v, &h, sizeof(h));
    memcpy(v + sizeof(h), recs, sizeof(recs));
    CHECK_OK(put_raw_block(path, v, sizeof(h) + sizeof(recs)));
    CHECK_OK(cs_run_open(r, path, &err));
    CHECK_EQ(cs_run_count(r, CS_REC_CUDA), 3);
    CHECK_OK(cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c));
    CHECK_EQ(cs_cursor_next(c, &bh, &got, &err), 1);
    CHECK_EQ(bh->n, 3);
    CHECK(memcmp(got, recs, sizeof(recs)) == 0);
    cs_cursor_close(c);
    CHECK_EQ(cs_cudablk_encode(&h, recs, 3, v, sizeof(v), &len), 3);
    CHECK_OK(put_raw_block(path, v, len));
    CHECK_ERR(read_cuda(r, &err), CS_E_CORRUPT);
    CHECK(strstr(err.msg, "cuda_blk: block ts=0 seq=255: compact block in a format 1 file") !=
          NULL);
    cs_run_free(r);
    return 0;
}

/* A file of format version 3 or before holds 64-byte GPU records (no graph
 * fields): the cursor hands them out widened, graph fields 0 (issue 31). */
static int test_version_3_gpu_records_widen(void)
{
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    uint8_t v[32 + 2 * CS_REC_GPU_V3_BYTES] = {0};
    struct cs_blk_hdr old = {.ts_first_ns = 100, .ts_last_ns = 300, .n = 2, .kind = CS_REC_GPU,
                             .rec_size = CS_REC_GPU_V3_BYTES};
    struct cs_rec_gpu g = {.t_start_ns = 100, .t_end_ns = 200, .name_id = 7, .kind = 1};
    const struct cs_rec_gpu *w;

    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    CHECK_OK(cs_store_put_meta_u64(s, "format_version", 3));
    CHECK_OK(cs_store_commit(s));
    cs_store_free(s);
    memcpy(v, &old, sizeof(old));
    memcpy(v + 32, &g, CS_REC_GPU_V3_BYTES);
    g.t_start_ns = 200, g.t_end_ns = 300, g.name_id = 8;
    memcpy(v + 32 + CS_REC_GPU_V3_BYTES, &g, CS_REC_GPU_V3_BYTES);
    CHECK_OK(put_raw(path, "host_blk", v, sizeof(v)));
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_EQ(cs_run_count(r, CS_REC_GPU), 2);
    CHECK_OK(cs_cursor_open(r, CS_REC_GPU, 0, UINT64_MAX, &c));
    CHECK_EQ(cs_cursor_next(c, &h, &recs, NULL), 1);
    CHECK_EQ(h->rec_size, sizeof(struct cs_rec_gpu));
    CHECK_EQ(h->n, 2);
    w = recs;
    CHECK_EQ(w[0].t_end_ns, 200);
    CHECK_EQ(w[1].name_id, 8);
    CHECK_EQ(w[1].graph_id, 0);
    CHECK_EQ(w[1].graph_node_id, 0);
    CHECK_EQ(cs_cursor_next(c, &h, &recs, NULL), 0);
    cs_cursor_close(c);
    cs_run_free(r);
    return 0;
}

/* The first GPU block makes a file version 4 (version.h). */
static int test_version_rises_with_gpu_records(void)
{
    struct cs_store *s = cs_store_new();
    struct cs_run *r = cs_run_new();

    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    CHECK_OK(put_kind(s, CS_REC_PYSAMPLE, 0, 10));
    CHECK_OK(put_kind(s, CS_REC_GPU, 10, 10));
    CHECK_OK(put_kind(s, CS_REC_PYSAMPLE, 20, 10)); /* does not lower it */
    CHECK_OK(cs_store_commit(s));
    CHECK_OK(cs_run_open(r, path, NULL));
    CHECK_EQ(cs_run_meta_u64(r, "format_version", 0), 4);
    CHECK_EQ(cs_run_count(r, CS_REC_GPU), 10);
    cs_run_free(r);
    cs_store_free(s);
    return 0;
}

int main(void)
{
    if (mkdtemp(dir) == NULL)
        return 2;
    snprintf(path, sizeof(path), "%s/run.lmdb", dir);
    RUN(test_roundtrip_every_kind);
    RUN(test_cursor_time_window);
    RUN(test_version_rises_with_python_samples);
    RUN(test_missing_file_is_enoent);
    RUN(test_random_bytes_is_badmagic);
    RUN(test_truncated_file_is_reported);
    RUN(test_future_version_is_refused);
    RUN(test_corrupt_block_is_reported);
    RUN(test_map_limit_keeps_committed_data);
    RUN(test_map_grows_and_replays);
    RUN(test_released_pages_read_back);
    RUN(test_appended_file_stays_inside_map);
    RUN(test_readonly_dir_opens_without_lock);
    RUN(test_live_reader_follows_writer);
    RUN(test_compact_put_splits_and_round_trips);
    RUN(test_compact_block_keeps_header);
    RUN(test_corrupt_compact_block_is_reported);
    RUN(test_version_1_file_reads);
    RUN(test_version_3_gpu_records_widen);
    RUN(test_version_rises_with_gpu_records);
    return check_finish(dir);
}
