/* mcp/mcp_keep.c: the analysis kept beside the run (RUN.lmdb-analysis), so
 * that a later `cudaspy-analyze mcp` on the same run answers its first
 * request at once instead of analysing again (a minute at 200 M calls).
 * Owns the file's layout, where it goes (beside the run, else a cache
 * folder when the run's folder is read-only) and the checks that make a
 * stale, truncated or corrupt one a miss, never an answer. What is kept
 * is analysis_json(), the object the tools slice; mcp.c decides when. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudaspy/version.h"
#include "mcp.h"

/* The layout: this header, then hdr.payload_bytes of compact JSON. Native
 * byte order: the file never leaves the host that wrote it (its run's
 * inode number is in it). */
#define KEEP_MAGIC "CSKEEP\r\n"
#define KEEP_VERSION 1
#define KEEP_SUFFIX "-analysis"
#define KEEP_MAX_BYTES (1u << 30) /* a payload claiming more is corrupt */

struct keep_hdr {
    char magic[8];          /* KEEP_MAGIC */
    uint32_t version;       /* KEEP_VERSION */
    uint32_t hdr_bytes;     /* sizeof(struct keep_hdr) */
    char cs_version[16];    /* CS_VERSION of the writer */
    uint64_t run_size;      /* bytes, of the run file as analysed */
    uint64_t run_mtime_ns;  /* its st_mtim, ns since the epoch */
    uint64_t run_ctime_ns;  /* its st_ctim: no tool sets it back */
    uint64_t run_ino, run_dev;
    uint64_t exe_size;      /* the analyzer that wrote it: a rebuilt one */
    uint64_t exe_mtime_ns;  /* may analyse differently */
    uint64_t payload_bytes;
    uint64_t payload_hash;  /* FNV-1a 64 of the payload */
    uint64_t hdr_hash;      /* FNV-1a 64 of the bytes above */
};

static uint64_t fnv64(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
#define FNV_SEED 1469598103934665603ull

static uint64_t ts_ns(struct timespec t)
{
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The identity of run @p path and of this analyzer into @p h. A run
 * folder (an LMDB environment with a subdirectory) is its data.mdb.
 * @return 0 or -errno */
int mcp_keep_stamp(const char *path, struct mcp_keep_stamp *st)
{
    char data[PATH_MAX];
    struct stat s;

    memset(st, 0, sizeof(*st));
    if (stat(path, &s) < 0)
        return -errno;
    if (S_ISDIR(s.st_mode)) {
        snprintf(data, sizeof(data), "%s/data.mdb", path);
        if (stat(data, &s) < 0)
            return -errno;
    }
    st->run_size = (uint64_t)s.st_size;
    st->run_mtime_ns = ts_ns(s.st_mtim);
    st->run_ctime_ns = ts_ns(s.st_ctim);
    st->run_ino = (uint64_t)s.st_ino;
    st->run_dev = (uint64_t)s.st_dev;
    if (stat("/proc/self/exe", &s) == 0) {
        st->exe_size = (uint64_t)s.st_size;
        st->exe_mtime_ns = ts_ns(s.st_mtim);
    }
    return 0;
}

int mcp_keep_stamp_same(const struct mcp_keep_stamp *a, const struct mcp_keep_stamp *b)
{
    return a->run_size == b->run_size && a->run_mtime_ns == b->run_mtime_ns &&
           a->run_ctime_ns == b->run_ctime_ns && a->run_ino == b->run_ino &&
           a->run_dev == b->run_dev && a->exe_size == b->exe_size &&
           a->exe_mtime_ns == b->exe_mtime_ns;
}

/* The cache folder for runs whose own folder is read-only:
 * CUDASPY_CACHE_DIR, else $XDG_CACHE_HOME/cudaspy, else ~/.cache/cudaspy.
 * @return 0, or -ENOENT when none can be named */
static int cache_dir(char *out, size_t n)
{
    const char *env = getenv("CUDASPY_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");

    if (env && *env)
        snprintf(out, n, "%s", env);
    else if (xdg && *xdg)
        snprintf(out, n, "%s/cudaspy", xdg);
    else if (home && *home)
        snprintf(out, n, "%s/.cache/cudaspy", home);
    else
        return -ENOENT;
    return 0;
}

int mcp_keep_path(const char *run, int where, char *out, size_t n)
{
    char real[PATH_MAX], dir[PATH_MAX - 64];

    if (where == MCP_KEEP_BESIDE) {
        snprintf(out, n, "%s" KEEP_SUFFIX, run);
        return 0;
    }
    /* in the cache folder, named by the run's full path */
    if (realpath(run, real) == NULL)
        return -errno;
    if (cache_dir(dir, sizeof(dir)) < 0)
        return -ENOENT;
    snprintf(out, n, "%s/run-%016llx" KEEP_SUFFIX, dir,
             (unsigned long long)fnv64(real, strlen(real), FNV_SEED));
    return 0;
}

/* Read all of @p n bytes at @p fd's position. @return 0, -EIO (short) or -errno */
static int read_all(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        got += (size_t)r;
    }
    return 0;
}

static int keep_check_hdr(const struct keep_hdr *h, const struct mcp_keep_stamp *st,
                          uint64_t file_bytes, const char **why)
{
    char ver[sizeof(h->cs_version)] = "";

    snprintf(ver, sizeof(ver), "%s", CS_VERSION);
    if (memcmp(h->magic, KEEP_MAGIC, sizeof(h->magic)) != 0)
        return *why = "not a kept analysis (magic)", MCP_KEEP_CORRUPT;
    if (h->version != KEEP_VERSION || h->hdr_bytes != sizeof(*h))
        return *why = "another format version", MCP_KEEP_STALE;
    if (h->hdr_hash != fnv64(h, offsetof(struct keep_hdr, hdr_hash), FNV_SEED))
        return *why = "header checksum mismatch", MCP_KEEP_CORRUPT;
    if (memcmp(h->cs_version, ver, sizeof(ver)) != 0)
        return *why = "written by another cudaspy version", MCP_KEEP_STALE;
    if (h->run_size != st->run_size || h->run_mtime_ns != st->run_mtime_ns ||
        h->run_ctime_ns != st->run_ctime_ns || h->run_ino != st->run_ino ||
        h->run_dev != st->run_dev)
        return *why = "the run changed since", MCP_KEEP_STALE;
    if (h->exe_size != st->exe_size || h->exe_mtime_ns != st->exe_mtime_ns)
        return *why = "written by another build of cudaspy-analyze", MCP_KEEP_STALE;
    if (h->payload_bytes > KEEP_MAX_BYTES || sizeof(*h) + h->payload_bytes != file_bytes)
        return *why = "truncated or padded (size mismatch)", MCP_KEEP_CORRUPT;
    return 0;
}

int mcp_keep_load(const char *path, const struct mcp_keep_stamp *st, json_t **out,
                  const char **why)
{
    struct keep_hdr h;
    struct stat s;
    char *buf = NULL;
    json_error_t jerr;
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

    *out = NULL;
    *why = "";
    if (fd < 0)
        return errno == ENOENT ? MCP_KEEP_NONE : -errno;
    if (fstat(fd, &s) < 0 || !S_ISREG(s.st_mode)) {
        rc = MCP_KEEP_CORRUPT;
        *why = "not a regular file";
        goto out;
    }
    /* what it says is served as the analysis: only from a file that no one
     * but this user could have written (its checksums are no signature) */
    if (s.st_uid != geteuid() || (s.st_mode & (S_IWGRP | S_IWOTH))) {
        rc = MCP_KEEP_CORRUPT;
        *why = "another user could have written it";
        goto out;
    }
    if (read_all(fd, &h, sizeof(h)) < 0) {
        rc = MCP_KEEP_CORRUPT;
        *why = "shorter than its header";
        goto out;
    }
    if ((rc = keep_check_hdr(&h, st, (uint64_t)s.st_size, why)) != 0)
        goto out;
    rc = MCP_KEEP_CORRUPT;
    if ((buf = malloc(h.payload_bytes + 1)) == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    if (read_all(fd, buf, h.payload_bytes) < 0) {
        *why = "truncated payload";
        goto out;
    }
    if (fnv64(buf, h.payload_bytes, FNV_SEED) != h.payload_hash) {
        *why = "payload checksum mismatch";
        goto out;
    }
    if ((*out = json_loadb(buf, h.payload_bytes, JSON_REJECT_DUPLICATES, &jerr)) == NULL ||
        !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        *why = "payload is not a JSON object";
        goto out;
    }
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

/* Write @p n bytes. @return 0 or -errno */
static int write_all(int fd, const void *buf, size_t n)
{
    for (size_t put = 0; put < n;) {
        ssize_t w = write(fd, (const char *)buf + put, n - put);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        put += (size_t)w;
    }
    return 0;
}

/* Make the cache folder (and its parent, for ~/.cache/cudaspy) if missing. */
static void mkdir_parents(const char *path)
{
    char dir[PATH_MAX];
    char *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
        return;
    *slash = '\0';
    if (mkdir(dir, 0700) < 0 && errno == ENOENT && (slash = strrchr(dir, '/')) && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0700);
        *slash = '/';
        mkdir(dir, 0700);
    }
}

int mcp_keep_store(const char *path, const struct mcp_keep_stamp *st, const json_t *aj)
{
    char tmp[PATH_MAX + 16], ver[16] = "";
    struct keep_hdr h;
    char *js = json_dumps(aj, JSON_COMPACT);
    int fd, rc;

    if (js == NULL)
        return -ENOMEM;
    mkdir_parents(path);
    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
    if ((fd = mkstemp(tmp)) < 0) {
        rc = -errno;
        free(js);
        return rc;
    }
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, KEEP_MAGIC, sizeof(h.magic));
    h.version = KEEP_VERSION;
    h.hdr_bytes = sizeof(h);
    snprintf(ver, sizeof(ver), "%s", CS_VERSION);
    memcpy(h.cs_version, ver, sizeof(h.cs_version));
    h.run_size = st->run_size;
    h.run_mtime_ns = st->run_mtime_ns;
    h.run_ctime_ns = st->run_ctime_ns;
    h.run_ino = st->run_ino;
    h.run_dev = st->run_dev;
    h.exe_size = st->exe_size;
    h.exe_mtime_ns = st->exe_mtime_ns;
    h.payload_bytes = strlen(js);
    h.payload_hash = fnv64(js, h.payload_bytes, FNV_SEED);
    h.hdr_hash = fnv64(&h, offsetof(struct keep_hdr, hdr_hash), FNV_SEED);
    rc = write_all(fd, &h, sizeof(h));
    if (rc == 0)
        rc = write_all(fd, js, h.payload_bytes);
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    /* rename: a reader sees the old file or the whole new one */
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    free(js);
    return rc;
}
