/* model/model.c: loads run files into struct model (model.h). Reads every block
 * through the run-file reader (store/runfile_read.c) twice: once to count
 * records per thread, once to place them, so the big arrays are allocated
 * exactly once and never copied. Statistics are the other files' job. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "cudaspy/api.h"
#include "cudaspy/grow.h"
#include "model.h"
#include "ahead.h"
#include "memory.h"
#include "offpass.h"

/* The file being read; a corrupt page can fault inside LMDB, and the CLI's
 * signal handler names the file from here. */
static _Atomic(const char *) reading; /* scans run side by side */

const char *model_reading(void)
{
    return reading;
}

/* ---- big arrays ---- */

/* A big array is anonymous memory, or, when the model would not fit in the
 * memory this process may use (scratch_plan()), a shared mapping of
 * an unlinked file in a scratch folder: its pages are then page cache, which
 * the kernel (and a memory cgroup) can write back and drop instead of
 * killing us, and which is thrown away unwritten-back when we unmap it. */

#define BIG_HDR 64 /* keeps the length and how it was taken; the array stays 64-byte aligned */

/* Below this a big array is just malloc'd (a latency row of a few calls). */
#define BIG_MIN (1u << 20)

/* Below this an array stays anonymous even with a scratch folder. */
#define BIG_FILE_MIN (64u << 20)

enum big_kind { BIG_MALLOC = 1, BIG_ANON = 2, BIG_FILE = 3 };

struct big_hdr {
    size_t len;  /* of the whole block, header included */
    int kind;    /* enum big_kind */
    int fd;      /* BIG_FILE: the unlinked scratch file, kept for model_scratch_flush() */
};
_Static_assert(sizeof(struct big_hdr) <= BIG_HDR, "big_hdr fits its header");

/* Scratch folder ("" = none), the smallest array put there, and the files
 * open in it. model_load() sets the first two; the files are opened, closed
 * and flushed from the analysis's threads too (a scan's flush beside the
 * steps' arrays), under scratch_mu. */
static char scratch_dir[4096];
static size_t scratch_min = BIG_FILE_MIN;
#define SCRATCH_MAX 64
static struct big_hdr *scratch_live[SCRATCH_MAX];
static pthread_mutex_t scratch_mu = PTHREAD_MUTEX_INITIALIZER;

static void *big_file_locked(size_t len)
{
    struct big_hdr *h;
    int fd = open(scratch_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), slot = -1;

    for (int i = 0; i < SCRATCH_MAX && slot < 0; i++)
        slot = scratch_live[i] == NULL ? i : -1;
    /* blocks reserved now: a full disk is an error here, not a SIGBUS later */
    if (fd < 0 || slot < 0 || fallocate(fd, 0, 0, (off_t)len) < 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    madvise(h, len, MADV_HUGEPAGE); /* huge folios: one fault and one read per 2 MB */
    h->fd = fd;
    scratch_live[slot] = h;
    return h;
}

static void *big_file(size_t len)
{
    void *h;

    pthread_mutex_lock(&scratch_mu);
    h = big_file_locked(len);
    pthread_mutex_unlock(&scratch_mu);
    return h;
}

void *model_alloc_big(size_t bytes)
{
    size_t len = bytes + BIG_HDR;
    struct big_hdr *h = NULL;
    int kind = BIG_FILE;

    if (len >= scratch_min && scratch_dir[0])
        h = big_file(len);
    if (h == NULL && len < BIG_MIN) {
        kind = BIG_MALLOC;
        if ((h = malloc(len)) == NULL)
            return NULL;
    } else if (h == NULL) {
        kind = BIG_ANON;
        h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (h == MAP_FAILED)
            return NULL;
        madvise(h, len, MADV_HUGEPAGE); /* advice only: fine if refused */
    }
    h->len = len;
    h->kind = kind;
    return (uint8_t *)h + BIG_HDR;
}

void model_free_big(void *p)
{
    struct big_hdr *h;

    if (p == NULL)
        return;
    h = (struct big_hdr *)((uint8_t *)p - BIG_HDR);
    if (h->kind == BIG_MALLOC) {
        free(h);
        return;
    }
    if (h->kind == BIG_FILE) {
        pthread_mutex_lock(&scratch_mu);
        for (int i = 0; i < SCRATCH_MAX; i++)
            if (scratch_live[i] == h)
                scratch_live[i] = NULL;
        pthread_mutex_unlock(&scratch_mu);
        close(h->fd); /* the mapping keeps the file until munmap, then it is gone */
    }
    munmap(h, h->len);
}

/* Start writing back what the scratch files hold dirty, without waiting:
 * reclaim drops a clean page at once but a dirty one only once written, and
 * a cgroup v1 has no dirty limit of its own, so gigabytes filled between
 * the flusher's wake-ups would leave a 4 GB cgroup little it can drop. */
void model_scratch_flush(void)
{
    pthread_mutex_lock(&scratch_mu);
    for (int i = 0; i < SCRATCH_MAX; i++)
        if (scratch_live[i])
            sync_file_range(scratch_live[i]->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    pthread_mutex_unlock(&scratch_mu);
}

/* ---- where the big arrays go ---- */

/* Bytes of memory the model's arrays are planned for per CUDA call: the
 * call (40; about 10 in the compact store, with the seq and stack id),
 * step inference's symbol and place (6), a seq or stack id while loading
 * (4); and per off-CPU interval of a CUDA thread. Step inference's anchor
 * positions and signatures (16 a call) are touched only for one anchor's
 * occurrences, and not counted. */
#define PLAN_CALL_BYTES 50
#define PLAN_STORED_CALL_BYTES 16
#define PLAN_OFF_BYTES 40

/* The first number in file @p path, 0 if none ("max" has none). */
static uint64_t read_u64_file(const char *path)
{
    unsigned long long v = 0;
    FILE *f = fopen(path, "r");

    if (f && fscanf(f, "%llu", &v) != 1)
        v = 0;
    if (f)
        fclose(f);
    return v;
}

/* Memory this process may fill: MemAvailable, or less if its memory cgroup
 * (v1 or v2) is limited to less. */
static uint64_t mem_allowed(void)
{
    char line[4352], path[4400];
    uint64_t avail = 0, lim;
    FILE *f = fopen("/proc/meminfo", "r");

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %" SCNu64, &avail) == 1) {
            avail *= 1024;
            break;
        }
    if (f)
        fclose(f);
    if ((f = fopen("/proc/self/cgroup", "r")) == NULL)
        return avail;
    while (fgets(line, sizeof(line), f)) {
        char *cg = strstr(line, ":memory:"), *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (cg)
            snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", cg + 8);
        else if (strncmp(line, "0::", 3) == 0)
            snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", line + 3);
        else
            continue;
        lim = read_u64_file(path);
        if (lim && lim < avail)
            avail = lim;
    }
    fclose(f);
    return avail;
}

/* Can scratch files live in @p dir: an unlinked file can be made there, on
 * a file system that is not memory itself (tmpfs pages are never dropped)? */
static int scratch_ok(const char *dir)
{
    struct statfs fs;
    int fd;

    if (dir == NULL || dir[0] == '\0' || statfs(dir, &fs) < 0 || fs.f_type == 0x01021994 ||
        fs.f_type == 0x858458f6) /* TMPFS_MAGIC, RAMFS_MAGIC */
        return 0;
    if ((fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0)
        return 0;
    close(fd);
    return 1;
}

/* Choose where the big arrays go (see model_alloc_big()) for a model of
 * @p need bytes (PLAN_*_BYTES): anonymous memory while they fit in three
 * quarters of what this process may use; else scratch files in the first
 * run's folder, $TMPDIR or /var/tmp, the first that takes one. Called as
 * each kind's first pass has counted what the model keeps of it; once
 * files, files for the rest of the load. CUDASPY_SCRATCH=off never uses a
 * file, =on always does, =DIR always does, in DIR. */
static void scratch_plan(const struct model *m, uint64_t need)
{
    const char *env = getenv("CUDASPY_SCRATCH"), *tmp = getenv("TMPDIR");
    const char *first_path = m->nruns > 0 ? m->runs[0].path : NULL, *slash;
    char dir[sizeof(scratch_dir)];

    scratch_min = env && *env ? 0 : BIG_FILE_MIN; /* told to: every array, to test them */
    if (scratch_dir[0] || (env && strcmp(env, "off") == 0))
        return;
    if (!(env && *env) && need <= mem_allowed() / 4 * 3)
        return;
    if (env && *env && strcmp(env, "on") != 0) {
        if (scratch_ok(env))
            snprintf(scratch_dir, sizeof(scratch_dir), "%s", env);
        return;
    }
    slash = first_path ? strrchr(first_path, '/') : NULL;
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", slash == first_path ? 1 : (int)(slash - first_path),
                 first_path);
    if (scratch_ok(dir))
        snprintf(scratch_dir, sizeof(scratch_dir), "%s", dir);
    else if (scratch_ok(tmp))
        snprintf(scratch_dir, sizeof(scratch_dir), "%s", tmp);
    else if (scratch_ok("/var/tmp"))
        snprintf(scratch_dir, sizeof(scratch_dir), "/var/tmp");
}

const char *model_scratch_dir(void)
{
    return scratch_dir[0] ? scratch_dir : NULL;
}

/* ---- a small open-addressing map u64 -> u32 ---- */

struct m_hash {
    uint64_t *key;
    uint32_t *val;
    size_t cap, n; /* cap is a power of two */
};

struct m_hash *m_hash_new(void)
{
    struct m_hash *h = calloc(1, sizeof(*h));

    if (h == NULL)
        return NULL;
    h->cap = 1024;
    h->key = malloc(h->cap * sizeof(*h->key));
    h->val = malloc(h->cap * sizeof(*h->val));
    if (h->key == NULL || h->val == NULL) {
        free(h->key);
        free(h->val);
        free(h);
        return NULL;
    }
    memset(h->val, 0xff, h->cap * sizeof(*h->val));
    return h;
}

void m_hash_free(struct m_hash *h)
{
    if (h == NULL)
        return;
    free(h->key);
    free(h->val);
    free(h);
}

static size_t hash_slot(const struct m_hash *h, uint64_t k)
{
    uint64_t x = k * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(x >> 20) & (h->cap - 1);

    while (h->val[i] != M_NONE && h->key[i] != k)
        i = (i + 1) & (h->cap - 1);
    return i;
}

uint32_t m_hash_get(const struct m_hash *h, uint64_t k)
{
    return h->val[hash_slot(h, k)];
}

static int hash_grow(struct m_hash *h)
{
    struct m_hash g = {.cap = h->cap * 2};

    g.key = malloc(g.cap * sizeof(*g.key));
    g.val = malloc(g.cap * sizeof(*g.val));
    if (g.key == NULL || g.val == NULL) {
        free(g.key);
        free(g.val);
        return -ENOMEM;
    }
    memset(g.val, 0xff, g.cap * sizeof(*g.val));
    for (size_t i = 0; i < h->cap; i++) {
        if (h->val[i] == M_NONE)
            continue;
        size_t j = hash_slot(&g, h->key[i]);
        g.key[j] = h->key[i];
        g.val[j] = h->val[i];
    }
    free(h->key);
    free(h->val);
    h->key = g.key;
    h->val = g.val;
    h->cap = g.cap;
    return 0;
}

int m_hash_put(struct m_hash *h, uint64_t k, uint32_t v)
{
    size_t i;

    if ((h->n + 1) * 2 > h->cap && hash_grow(h) < 0)
        return -ENOMEM;
    i = hash_slot(h, k);
    if (h->val[i] == M_NONE)
        h->n++;
    h->key[i] = k;
    h->val[i] = v;
    return 0;
}

/* ---- processes and threads ---- */

static int grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    uint32_t c = *cap ? *cap : 64;
    void *q;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    q = realloc(*p, (size_t)c * size);
    if (q == NULL)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

uint32_t model_find_proc(const struct model *m, uint32_t run, uint32_t pid)
{
    return m_hash_get(m->proc_ix, (uint64_t)run << 32 | pid);
}

/* Process (run, pid), created (with no table row) when first seen. */
static uint32_t proc_get(struct model *m, uint32_t run, uint32_t pid)
{
    uint32_t i = model_find_proc(m, run, pid);
    struct m_proc *p;

    if (i != M_NONE)
        return i;
    if (grow((void **)&m->proc, &m->cap_proc, m->nproc + 1, sizeof(*m->proc)) < 0)
        return M_NONE;
    i = m->nproc;
    p = &m->proc[i];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->run = run;
    p->parent = M_NONE;
    p->rank = CS_RANK_NONE;
    p->selected = m->opts.pid == 0 || m->opts.pid == pid;
    snprintf(p->comm, sizeof(p->comm), "?");
    if (m_hash_put(m->proc_ix, (uint64_t)run << 32 | pid, i) < 0)
        return M_NONE;
    m->nproc++;
    return i;
}

/* Thread (proc, tid), created when first seen. */
static uint32_t thr_get(struct model *m, uint32_t proc, uint32_t tid)
{
    uint64_t k = (uint64_t)proc << 32 | tid;
    uint32_t i = m_hash_get(m->thr_ix, k);
    struct m_thread *t;

    if (i != M_NONE)
        return i;
    if (grow((void **)&m->thr, &m->cap_thr, m->nthr + 1, sizeof(*m->thr)) < 0)
        return M_NONE;
    i = m->nthr;
    t = &m->thr[i];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    t->proc = proc;
    if (m_hash_put(m->thr_ix, k, i) < 0)
        return M_NONE;
    m->nthr++;
    return i;
}

/* Process rows: with pid reuse, the row that started last wins. */
static int load_procs(struct model *m, uint32_t run)
{
    size_t n;
    const struct cs_proc *rows = cs_run_procs(m->runs[run].run, &n);

    for (size_t i = 0; i < n; i++) {
        uint32_t ix = proc_get(m, run, rows[i].pid);
        struct m_proc *p;

        if (ix == M_NONE)
            return -ENOMEM;
        p = &m->proc[ix];
        if (p->has_row && p->start_ns > rows[i].start_ns)
            continue;
        p->ppid = rows[i].ppid;
        p->flags = rows[i].flags;
        p->rank = rows[i].rank;
        p->start_ns = rows[i].start_ns;
        p->exit_ns = rows[i].exit_ns;
        p->cmdline_id = rows[i].cmdline_id;
        p->has_row = 1;
        memcpy(p->comm, rows[i].comm, sizeof(p->comm));
        p->comm[sizeof(p->comm) - 1] = '\0';
    }
    return 0;
}

static int load_threads(struct model *m, uint32_t run)
{
    size_t n;
    const struct cs_thread *rows = cs_run_threads(m->runs[run].run, &n);

    for (size_t i = 0; i < n; i++) {
        uint32_t p = proc_get(m, run, rows[i].pid);
        uint32_t t = p == M_NONE ? M_NONE : thr_get(m, p, rows[i].tid);

        if (t == M_NONE)
            return -ENOMEM;
        memcpy(m->thr[t].name, rows[i].name, sizeof(m->thr[t].name));
        m->thr[t].name[sizeof(m->thr[t].name) - 1] = '\0';
    }
    return 0;
}

int model_descends(const struct model *m, uint32_t a, uint32_t b)
{
    for (int depth = 0; a != M_NONE && depth < 4096; depth++) {
        if (a == b)
            return 1;
        a = m->proc[a].parent;
    }
    return 0;
}

static void link_parents(struct model *m)
{
    for (uint32_t i = 0; i < m->nproc; i++) {
        struct m_proc *p = &m->proc[i];
        uint32_t q = p->ppid ? model_find_proc(m, p->run, p->ppid) : M_NONE;

        p->parent = q == i ? M_NONE : q;
    }
    for (uint32_t i = 0; i < m->nproc; i++) {
        uint32_t sel = model_find_proc(m, m->proc[i].run, m->opts.pid);

        m->proc[i].selected = m->opts.pid == 0 || (sel != M_NONE && model_descends(m, i, sel));
    }
}

/* ---- blocks ---- */

/* Calls fn(m, run, hdr, recs) for every block of @p kind in every run. */
typedef int (*block_fn)(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                        const void *recs, void *arg);
typedef int (*run_fn)(uint32_t run, const struct cs_blk_hdr *h, const void *recs, void *arg);

/* Records read between two model_scratch_flush() calls: about 40 MB of calls. */
#define SCRATCH_FLUSH_RECS (1u << 20)

/* Calls fn on every well-formed block of @p kind in run @p r's window. The
 * pass hands back the pages it has read (cs_cursor_release_pages()), so
 * peak RSS stays near the model's own size instead of model + file.
 * @return 0, the cursor's error (in @p err) or fn's */
struct scan_ctx {
    uint32_t run;
    unsigned kind;
    run_fn fn;
    void *arg;
    uint64_t nrec; /* records since the scratch files were last flushed */
};

static int scan_block(const struct cs_blk_hdr *h, const void *recs, void *arg)
{
    struct scan_ctx *x = arg;
    int rc;

    if (h->kind != x->kind || h->rec_size != cs_rec_size(x->kind))
        return 0;
    rc = x->fn(x->run, h, recs, x->arg);
    if ((x->nrec += h->n) >= SCRATCH_FLUSH_RECS) {
        model_scratch_flush();
        x->nrec = 0;
    }
    return rc;
}

static int scan_run(const struct model *m, int r, unsigned kind, run_fn fn, void *arg,
                    struct cs_err *err)
{
    const struct m_run *mr = &m->runs[r];
    struct scan_ctx x = {(uint32_t)r, kind, fn, arg, 0};
    struct cs_cursor *c = NULL;
    int whole = kind == CS_REC_GPUCOV; /* a span says why, whenever it was written */
    int rc;

    reading = mr->path;
    rc = cs_cursor_open(mr->run, kind, whole ? 0 : mr->win_lo_ns,
                        whole ? UINT64_MAX : mr->win_hi_ns, &c);
    if (rc == 0) {
        cs_cursor_release_pages(c);
        rc = ahead_read(c, scan_block, &x, err);
    }
    cs_cursor_close(c);
    reading = NULL;
    return rc;
}

struct each_arg {
    struct model *m;
    block_fn fn;
    void *arg;
};

static int each_one(uint32_t run, const struct cs_blk_hdr *h, const void *recs, void *arg)
{
    struct each_arg *e = arg;
    return e->fn(e->m, run, h, recs, e->arg);
}

/* Every block of @p kind in every run, through scan_run(). With @p if_any,
 * runs without records of @p kind (by their counts) are not scanned: only
 * for kinds whose table an earlier pass read whole, so a corrupt block is
 * still found. */
static int each_block(struct model *m, unsigned kind, int if_any, block_fn fn, void *arg,
                      struct cs_err *err)
{
    struct each_arg e = {m, fn, arg};

    for (int r = 0; r < m->nruns; r++) {
        const char *path = m->runs[r].path;
        int rc;

        if (if_any && m->runs[r].counts[kind] == 0)
            continue;
        rc = scan_run(m, r, kind, each_one, &e, err);
        if (rc < 0) {
            if (err && err->msg[0] == '\0')
                cs_err_set(err, rc, "%s", cs_strerror(rc));
            if (err) {
                char tmp[sizeof(err->msg)];
                snprintf(tmp, sizeof(tmp), "%s", err->msg);
                if (strncmp(tmp, path, strlen(path)) != 0)
                    cs_err_set(err, rc, "%s: %s", path, tmp);
            }
            return rc;
        }
    }
    return 0;
}

struct scan_arg {
    model_scan_fn fn;
    void *arg;
    int rc; /* fn's first negative return */
};

static int scan_one(uint32_t run, const struct cs_blk_hdr *h, const void *recs, void *arg)
{
    struct scan_arg *s = arg;
    int rc = s->fn(run, recs, h->n, s->arg);

    if (rc < 0)
        s->rc = rc;
    return rc < 0 ? rc : 0;
}

int model_scan(const struct model *m, unsigned kind, model_scan_fn fn, void *arg)
{
    struct scan_arg s = {fn, arg, 0};

    for (int r = 0; r < m->nruns && s.rc == 0; r++)
        if (m->runs[r].counts[kind])
            scan_run(m, r, kind, scan_one, &s, NULL);
    return s.rc;
}

/* Pass state for the two-pass loaders: pass 0 counts per thread, pass 1 places. */
struct place {
    int pass;
    uint64_t *pos; /* per thread: next free slot (pass 1) or count (pass 0) */
    uint64_t *end; /* pass 1, per thread: end of its slice */
    struct callplace *cp; /* pass 1 of calls: where they go, or NULL: m->call */
    int seq;              /* pass 1 of calls: keep each one's seq (want_seq()) */
    uint32_t last_key_proc, last_tid, last_thr;
    uint32_t last_run, last_pid, last_proc;
};

static uint32_t place_thr(struct model *m, struct place *pl, uint32_t run, uint32_t pid,
                          uint32_t tid)
{
    uint32_t p, t;

    if (pl->last_proc != M_NONE && pl->last_run == run && pl->last_pid == pid)
        p = pl->last_proc;
    else if ((p = pl->pass ? model_find_proc(m, run, pid) : proc_get(m, run, pid)) == M_NONE)
        return M_NONE;
    pl->last_run = run;
    pl->last_pid = pid;
    pl->last_proc = p;
    if (pl->last_thr != M_NONE && pl->last_key_proc == p && pl->last_tid == tid)
        return pl->last_thr;
    t = pl->pass ? m_hash_get(m->thr_ix, (uint64_t)p << 32 | tid) : thr_get(m, p, tid);
    pl->last_key_proc = p;
    pl->last_tid = tid;
    pl->last_thr = t;
    return t;
}

/* Pass 0 counts a record of thread @p t; pass 1 checks it has a slot.
 * @return 0, 1 when pass 1 must skip it, or -ENOMEM. A run still being
 * written can gain records between the passes (each reads its own
 * snapshot): those were not counted, have no slot, and are left out; pass
 * 1 only looks threads up (the two kinds' run side by side), so one first
 * seen then is M_NONE. */
static int place_grow(struct place *pl, struct model *m, uint32_t t);

static int place_count(struct place *pl, struct model *m, uint32_t t)
{
    if (pl->pass == 1)
        return t == M_NONE || t >= pl->pos[-1] || pl->pos[t] >= pl->end[t];
    if (t == M_NONE || place_grow(pl, m, t) < 0)
        return -ENOMEM;
    pl->pos[t]++;
    return 0;
}

/* Pass 0's counts reach thread @p t. @return 0 or -ENOMEM */
static int place_grow(struct place *pl, struct model *m, uint32_t t)
{
    if (t >= pl->pos[-1]) { /* pos grows with the thread table */
        uint32_t cap = m->cap_thr;
        uint64_t *q = realloc(pl->pos - 1, ((size_t)cap + 1) * sizeof(*q));
        if (q == NULL)
            return -ENOMEM;
        memset(q + 1 + q[0], 0, (cap - q[0]) * sizeof(*q));
        q[0] = cap;
        pl->pos = q + 1;
    }
    return 0;
}

/* Runtime record @p r folded in its driver call: count the pair. */
static int fold_count(struct model *m, const struct cs_rec_cuda *r)
{
    if (r->drv_api == CS_API_NONE || r->drv_api >= CS_API_COUNT)
        return 0;
    if (m->fold == NULL && (m->fold = calloc((size_t)CS_API_COUNT * CS_API_COUNT,
                                             sizeof(*m->fold))) == NULL)
        return -ENOMEM;
    m->fold[(size_t)r->api * CS_API_COUNT + r->drv_api]++;
    return 0;
}

/* At most this much of model.mrec: an allocation-heavy run past it (a
 * million records) has memory_compute() read the calls' table again. */
#define MODEL_MREC_BYTES (64u << 20)

/* Keep CUDA record @p r of run @p run for model/memory.c (model.mrec).
 * @return 0 or -ENOMEM */
static int mrec_keep(struct model *m, uint32_t run, const struct cs_rec_cuda *r)
{
    if (m->mrec_over)
        return 0;
    if (m->nmrec == m->cap_mrec) {
        uint64_t cap = m->cap_mrec ? 2 * m->cap_mrec : 1024;
        void *p;
        if (cap * sizeof(*r) > MODEL_MREC_BYTES) {
            free(m->mrec);
            m->mrec = NULL;
            m->nmrec = m->cap_mrec = 0;
            m->mrec_over = 1;
            return 0;
        }
        if ((p = realloc(m->mrec, cap * sizeof(*r))) == NULL)
            return -ENOMEM;
        m->mrec = p;
        m->cap_mrec = cap;
    }
    m->mrec[m->nmrec++] = *r;
    m->runs[run].nmrec++;
    return 0;
}

static int call_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                      const void *recs, void *arg)
{
    struct place *pl = arg;
    const struct cs_rec_cuda *r = recs;
    const struct m_run *mr = &m->runs[run];

    for (uint32_t i = 0; i < h->n; i++, r++) {
        uint32_t t;
        int rc;
        if (pl->pass == 0 && memory_wants(r) && mrec_keep(m, run, r) < 0)
            return -ENOMEM;
        if (r->t_enter_ns < mr->win_lo_ns || r->t_enter_ns >= mr->win_hi_ns)
            continue;
        if (r->api == CS_API_NONE || r->api >= CS_API_COUNT || (r->flags & CS_CF_TRACER))
            continue; /* the tracer's own readings: model/memory.c's */
        t = place_thr(m, pl, run, r->pid, r->tid);
        if (t != M_NONE && !m->proc[m->thr[t].proc].selected)
            continue; /* --pid: only that process and its descendants */
        if ((rc = place_count(pl, m, t)) < 0)
            return -ENOMEM;
        if (pl->pass == 1 && rc == 0) {
            struct m_call cv, *c = pl->cp ? &cv : &m->call[pl->pos[t]];
            c->t_enter_ns = r->t_enter_ns;
            c->t_exit_ns = r->t_exit_ns < r->t_enter_ns ? r->t_enter_ns : r->t_exit_ns;
            c->stream = r->stream;
            c->bytes_or_name = (r->flags & CS_CF_HAS_NAME) ? r->name_id
                               : model_keeps_graph(r->api)  ? r->aux
                                                            : r->bytes;
            c->thr = t;
            c->api = r->api & 0x7ff;
            c->variant = r->variant & 3;
            c->dir = r->dir & 7;
            c->flags = r->flags;
            m->api_seen[c->api / 64] |= 1ull << (c->api % 64);
            if (pl->cp && (rc = callplace_put(pl->cp, m, t, c, pl->seq ? r->seq : 0,
                                              m->nstacked ? r->stack_id : 0)) < 0)
                return rc;
            if (m->call_seq)
                m->call_seq[pl->pos[t]] = r->seq;
            if (m->call_stack)
                m->call_stack[pl->pos[t]] = r->stack_id;
            pl->pos[t]++;
            if ((r->flags & CS_CF_FOLDED) && fold_count(m, r) < 0)
                return -ENOMEM;
            if (r->device < 16)
                m->proc[m->thr[t].proc].devices |= (uint16_t)(1u << r->device);
        } else if (pl->pass == 0 && rc == 0 && r->stack_id) {
            m->nstacked++;
        }
    }
    return 0;
}

/* Pass 1 of the off-CPU intervals (pass 0 is offpass_add()'s). */
static int off_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                     const void *recs, void *arg)
{
    struct place *pl = arg;
    const struct cs_rec_offcpu *r = recs;
    struct m_run *mr = &m->runs[run];

    for (uint32_t i = 0; i < h->n; i++, r++) {
        uint32_t t;
        int rc;
        if (r->t_end_ns <= mr->win_lo_ns || r->t_start_ns >= mr->win_hi_ns ||
            r->t_end_ns < r->t_start_ns)
            continue;
        t = place_thr(m, pl, run, r->pid, r->tid);
        if (t == M_NONE || m->thr[t].ncalls == 0)
            continue; /* first seen after pass 0 (no slot), or not a CUDA thread */
        if ((rc = place_count(pl, m, t)) < 0)
            return -ENOMEM;
        if (rc == 0) {
            struct m_off *o = &m->off[pl->pos[t]++];
            o->t_start_ns = r->t_start_ns;
            o->t_end_ns = r->t_end_ns;
            o->thr = t;
            o->waker_pid = r->waker_pid;
            o->waker_tid = r->waker_tid;
            o->holder_pid = r->holder_pid;
            o->cls = r->cls;
            o->flags = r->flags;
            o->pad = 0;
            o->runq_ns = r->runq_ns;
        }
    }
    return 0;
}

static int cmp_call(const void *a, const void *b)
{
    const struct m_call *x = a, *y = b;
    return x->t_enter_ns < y->t_enter_ns ? -1 : x->t_enter_ns > y->t_enter_ns;
}

static int cmp_off(const void *a, const void *b)
{
    const struct m_off *x = a, *y = b;
    return x->t_start_ns < y->t_start_ns ? -1 : x->t_start_ns > y->t_start_ns;
}

/* Insertion sort for slices that are nearly in order (a thread's records
 * arrive in order, except a nested call that returns before its parent).
 * @return 0, or -1 after too many moves: then the caller sorts properly. */
#define NEARLY_SORT(name, type, key)                                                           \
    static int name(type *v, uint64_t n)                                                       \
    {                                                                                          \
        uint64_t moves = 0;                                                                    \
        for (uint64_t i = 1; i < n; i++) {                                                     \
            type x;                                                                            \
            uint64_t j = i;                                                                    \
            if (v[i].key >= v[i - 1].key)                                                      \
                continue;                                                                      \
            x = v[i];                                                                          \
            while (j > 0 && v[j - 1].key > x.key) {                                            \
                v[j] = v[j - 1];                                                               \
                j--;                                                                           \
                if (++moves > 16 * n + 64) {                                                   \
                    v[j] = x;                                                                  \
                    return -1;                                                                 \
                }                                                                              \
            }                                                                                  \
            v[j] = x;                                                                          \
        }                                                                                      \
        return 0;                                                                              \
    }
NEARLY_SORT(nearly_calls, struct m_call, t_enter_ns)
NEARLY_SORT(nearly_offs, struct m_off, t_start_ns)

static int cmp_ix(const void *a, const void *b, void *arg)
{
    const struct m_call *c = arg;
    uint64_t i = *(const uint64_t *)a, j = *(const uint64_t *)b;
    uint64_t x = c[i].t_enter_ns, y = c[j].t_enter_ns;

    if (x == y) /* qsort is not stable: ties by their place */
        return i < j ? -1 : i > j;
    return x < y ? -1 : 1;
}

/* Apply permutation @p ix to the @p n values of @p v (a parallel array). */
static void permute_u32(uint32_t *v, const uint64_t *ix, uint64_t n, uint32_t *tmp)
{
    for (uint64_t i = 0; i < n; i++)
        tmp[i] = v[ix[i]];
    memcpy(v, tmp, n * sizeof(*v));
}

/* Sort a thread's calls and what is kept beside them while loading (seq,
 * while GPU records still need it; stack ids) together: by an index, then
 * each array in that order. Ties keep their order, as nearly_calls does. */
static int sort_calls_with(struct model *m, const struct m_thread *th)
{
    struct m_call *c = m->call + th->first_call, *tc;
    uint64_t n = th->ncalls, *ix;
    uint32_t *ts;
    int sorted = 1;

    for (uint64_t i = 1; i < n && sorted; i++)
        sorted = c[i].t_enter_ns >= c[i - 1].t_enter_ns;
    if (sorted)
        return 0;
    ix = model_alloc_big((n + 1) * sizeof(*ix));
    tc = model_alloc_big((n + 1) * sizeof(*tc));
    ts = model_alloc_big((n + 1) * sizeof(*ts));
    if (ix == NULL || tc == NULL || ts == NULL) {
        model_free_big(ix), model_free_big(tc), model_free_big(ts);
        return -ENOMEM;
    }
    for (uint64_t i = 0; i < n; i++)
        ix[i] = i;
    qsort_r(ix, n, sizeof(*ix), cmp_ix, c);
    for (uint64_t i = 0; i < n; i++)
        tc[i] = c[ix[i]];
    memcpy(c, tc, n * sizeof(*c));
    if (m->call_seq)
        permute_u32(m->call_seq + th->first_call, ix, n, ts);
    if (m->call_stack)
        permute_u32(m->call_stack + th->first_call, ix, n, ts);
    model_free_big(ix), model_free_big(tc), model_free_big(ts);
    return 0;
}

static int sort_slices(struct model *m, int calls)
{
    if (calls && m->call == NULL)
        return 0; /* placed in order in the store */
    for (uint32_t t = 0; t < m->nthr; t++) {
        struct m_thread *th = &m->thr[t];
        if (calls && (m->call_seq || m->call_stack)) {
            if (sort_calls_with(m, th) < 0)
                return -ENOMEM;
        } else if (calls && nearly_calls(m->call + th->first_call, th->ncalls) < 0) {
            qsort(m->call + th->first_call, th->ncalls, sizeof(struct m_call), cmp_call);
        }
        if (!calls && nearly_offs(m->off + th->first_off, th->noff) < 0)
            qsort(m->off + th->first_off, th->noff, sizeof(struct m_off), cmp_off);
    }
    return 0;
}

/* Calls need their seq kept while loading when a run has GPU records. */
static int want_seq(const struct model *m)
{
    for (int i = 0; i < m->nruns; i++)
        if (m->runs[i].counts[CS_REC_GPU])
            return 1;
    return 0;
}

/* Pass 1: each thread's records from the start of its slice. */
static int place_pass(struct model *m, unsigned kind, block_fn fn, struct place *pl,
                      struct cs_err *err)
{
    for (uint32_t t = 0; t < m->nthr && t < pl->pos[-1]; t++)
        pl->pos[t] = kind == CS_REC_CUDA ? m->thr[t].first_call : m->thr[t].first_off;
    pl->pass = 1;
    pl->last_thr = M_NONE;
    pl->last_proc = M_NONE;
    return each_block(m, kind, 0, fn, pl, err);
}

/* Do @p n calls go in the compact store (model/calls.c)? When their array
 * would not fit in memory (the scratch plan's three quarters of what this
 * process may use), or when CUDASPY_CALLS=store says so; never with
 * CUDASPY_CALLS=array (tests compare the two). The array is faster to read,
 * 40 bytes a call against about 10. */
static int calls_to_store(uint64_t n)
{
    const char *env = getenv("CUDASPY_CALLS");

    if (env && strcmp(env, "array") == 0)
        return 0;
    if (env && strcmp(env, "store") == 0)
        return 1;
    return n * PLAN_CALL_BYTES > mem_allowed() / 4 * 3;
}

/* ...and straight into it while loading: but for runs merged on one clock
 * (clocks_align() moves their calls after loading). */
static int calls_direct(const struct model *m, uint64_t n)
{
    return m->nruns == 1 && calls_to_store(n);
}

/* Pass 1 of the calls into the compact store opened in pl->cp. @return 0,
 * -EAGAIN (a thread's calls too far out of order: the caller places them
 * in the array instead), or an error */
static int place_calls_direct(struct model *m, struct place *pl, struct cs_err *err)
{
    int rc = place_pass(m, CS_REC_CUDA, call_block, pl, err);

    if (rc < 0) {
        callplace_abort(pl->cp);
        pl->cp = NULL;
        if (rc == -EAGAIN && m->fold)
            memset(m->fold, 0, (size_t)CS_API_COUNT * CS_API_COUNT * sizeof(*m->fold));
        return rc;
    }
    m->cstore = callplace_close(pl->cp);
    pl->cp = NULL;
    if (m->cstore == NULL)
        return -ENOMEM;
    m->kept_seq = pl->seq;
    m->kept_stack = m->nstacked != 0;
    return 0;
}

/* The arrays pass 1 places records of @p kind in. */
static int alloc_grouped(struct model *m, unsigned kind, void **arr, size_t size, uint64_t sum)
{
    scratch_plan(m, kind == CS_REC_CUDA ? sum * PLAN_CALL_BYTES
                                        : m->ncall * PLAN_CALL_BYTES + sum * PLAN_OFF_BYTES);
    if ((*arr = model_alloc_big(sum ? sum * size : 1)) == NULL)
        return -ENOMEM;
    if (kind == CS_REC_CUDA && want_seq(m) &&
        (m->call_seq = model_alloc_big(sum ? sum * sizeof(*m->call_seq) : 1)) == NULL)
        return -ENOMEM;
    if (kind == CS_REC_CUDA && m->nstacked) {
        if ((m->call_stack = model_alloc_big(sum ? sum * sizeof(*m->call_stack) : 1)) == NULL)
            return -ENOMEM;
        memset(m->call_stack, 0, sum * sizeof(*m->call_stack)); /* a slot no record fills */
    }
    return 0;
}

/* Pass 0 of @p fn over @p kind (none: the caller counts), per thread.
 * @p pl is place_free()d by the caller. */
static int group_count(struct model *m, unsigned kind, block_fn fn, struct place *pl,
                       struct cs_err *err)
{
    uint64_t *base = calloc(1, sizeof(*base));

    *pl = (struct place){.last_thr = M_NONE, .last_proc = M_NONE};
    if (base == NULL)
        return -ENOMEM;
    pl->pos = base + 1;
    return fn ? each_block(m, kind, 0, fn, pl, err) : 0;
}

/* Each thread's slice of @p kind from pass 0's counts. */
static int group_slices(struct model *m, unsigned kind, struct place *pl, uint64_t *total)
{
    uint64_t sum = 0;

    pl->end = calloc(pl->pos[-1] + 1, sizeof(*pl->end)); /* 0: a thread first seen in pass 1 */
    if (pl->end == NULL)
        return -ENOMEM;
    for (uint32_t t = 0; t < m->nthr; t++) {
        uint64_t n = t < pl->pos[-1] ? pl->pos[t] : 0;
        if (kind == CS_REC_CUDA) {
            m->thr[t].first_call = sum;
            m->thr[t].ncalls = n;
        } else {
            m->thr[t].first_off = sum;
            m->thr[t].noff = n;
        }
        if (t < pl->pos[-1])
            pl->end[t] = sum + n;
        sum += n;
    }
    *total = sum;
    return 0;
}

/* Both kinds' passes run side by side on a run no collector still writes
 * (a cursor that finds the file grown refreshes what the other reads). */
static int side_by_side(const struct model *m)
{
    return !m->opts.live && !m->any_writing;
}

/* The off-CPU intervals' pass 1, on a thread of its own beside the
 * calls': it only reads the model's tables (place_thr() looks up in pass 1)
 * and fills model.off, which nothing else touches yet. */
struct off_job {
    struct model *m;
    struct place *pl;
    struct cs_err err;
    int rc;
};

static void *off_main(void *arg)
{
    struct off_job *j = arg;

    j->rc = place_pass(j->m, CS_REC_OFFCPU, off_block, j->pl, &j->err);
    return NULL;
}

/* Pass 1 of the calls (@p pc) and, beside it, of the off-CPU intervals
 * (@p po), into what each needs: the calls' compact store (opened first,
 * as the calls' scratch plan asks) or their array, then model.off. */
static int group_place(struct model *m, struct place *pc, struct place *po, struct cs_err *err)
{
    struct off_job j = {.m = m, .pl = po};
    pthread_t th;
    int rc = 0, direct = m->ncall > 0 && calls_direct(m, m->ncall), started = 0;

    if (direct) {
        scratch_plan(m, m->ncall * PLAN_STORED_CALL_BYTES);
        if ((pc->cp = callplace_open(m, m->ncall)) == NULL)
            return -ENOMEM;
        pc->seq = want_seq(m);
    } else if ((rc = alloc_grouped(m, CS_REC_CUDA, (void **)&m->call, sizeof(*m->call),
                                   m->ncall)) < 0) {
        return rc;
    }
    if ((rc = alloc_grouped(m, CS_REC_OFFCPU, (void **)&m->off, sizeof(*m->off), m->noff)) < 0) {
        if (pc->cp)
            callplace_abort(pc->cp);
        pc->cp = NULL;
        return rc;
    }
    /* nothing to place (off-CPU intervals, none of a CUDA thread): the
     * second read of every block, gigabytes at scale, would only skip them */
    if (m->noff > 0 && side_by_side(m))
        started = pthread_create(&th, NULL, off_main, &j) == 0;
    if (direct) {
        rc = place_calls_direct(m, pc, err);
        if (rc == -EAGAIN &&
            (rc = alloc_grouped(m, CS_REC_CUDA, (void **)&m->call, sizeof(*m->call),
                                m->ncall)) == 0)
            rc = place_pass(m, CS_REC_CUDA, call_block, pc, err);
    } else if (m->ncall > 0) {
        rc = place_pass(m, CS_REC_CUDA, call_block, pc, err);
    }
    if (started)
        pthread_join(th, NULL);
    else if (m->noff > 0)
        off_main(&j);
    if (rc == 0 && j.rc < 0) {
        rc = j.rc;
        if (err)
            *err = j.err;
    }
    return rc;
}

static void place_free(struct place *pl)
{
    if (pl->pos)
        free(pl->pos - 1);
    free(pl->end);
}

/* Each run's records by kind: after the count passes, which read both
 * tables whole and so counted them on the way (cs_run_count()). */
static void run_counts(struct model *m)
{
    for (int i = 0; i < m->nruns; i++)
        for (unsigned k = 1; k < CS_REC_KIND_COUNT; k++)
            m->runs[i].counts[k] = cs_run_count(m->runs[i].run, k);
}

/* The off-CPU intervals' pass 0 (offpass.h), on a thread beside the calls'. */
struct host_job {
    struct model *m;
    struct offpass op;
    struct cs_err err;
    int rc;
};

static int host_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                      const void *recs, void *arg)
{
    struct host_job *j = arg;

    return offpass_add(&j->op, run, &m->runs[run], recs, h->n);
}

static void *host_main(void *arg)
{
    struct host_job *j = arg;

    j->rc = each_block(j->m, CS_REC_OFFCPU, 0, host_block, j, &j->err);
    return NULL;
}

/* Pass 0 of the off-CPU intervals into the model, key by key in the order
 * first seen, as placing them one by one would have: their processes and
 * threads created, each process's totals (its longest stall the first of
 * the longest), and the counts of CUDA threads (the others need only
 * their totals) into @p pl. @return 0 or -ENOMEM */
static int off_merge(struct model *m, const struct offpass *op, struct place *pl)
{
    uint64_t *first = malloc(((size_t)m->nproc + op->nk + 1) * sizeof(*first));

    if (first == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < (size_t)m->nproc + op->nk + 1; i++)
        first[i] = UINT64_MAX;
    for (uint32_t i = 0; i < op->nk; i++) {
        const struct offpass_key *k = &op->k[i];
        uint32_t p = proc_get(m, k->run, k->pid);
        uint32_t t = p == M_NONE ? M_NONE : thr_get(m, p, k->tid);
        struct m_proc_stats *s;
        struct m_run *mr = &m->runs[k->run];
        if (t == M_NONE || place_grow(pl, m, t) < 0) {
            free(first);
            return -ENOMEM;
        }
        s = &m->proc[p].st;
        if (k->max_ns > s->max_stall_ns ||
            (k->max_ns && k->max_ns == s->max_stall_ns && k->max_pos < first[p])) {
            s->max_stall_ns = k->max_ns;
            s->max_stall_at_ns = k->max_at_ns;
            first[p] = k->max_pos;
        }
        s->off_preempt_ns += k->preempt_ns;
        s->off_disk_ns += k->disk_ns;
        s->off_sleep_ns += k->sleep_ns;
        s->off_invol += k->invol;
        s->off_vol += k->vol;
        s->off_runq_ns += k->runq_ns;
        if (k->end_ns > mr->host_end_ns)
            mr->host_end_ns = k->end_ns;
        if (m->thr[t].ncalls)
            pl->pos[t] += k->n;
    }
    free(first);
    return 0;
}

/* Calls and off-CPU intervals, two passes each: both count passes first,
 * so that the counts of every kind come with them, then both placings
 * (which need the counts: want_seq()). */
static int load_grouped(struct model *m, struct cs_err *err)
{
    struct place pc = {0}, po = {0};
    struct host_job j = {.m = m};
    pthread_t th;
    int started = side_by_side(m) && pthread_create(&th, NULL, host_main, &j) == 0;
    int rc = group_count(m, CS_REC_CUDA, call_block, &pc, err);

    if (started)
        pthread_join(th, NULL);
    else if (rc == 0)
        host_main(&j);
    if (rc == 0 && (rc = j.rc) < 0 && err)
        *err = j.err;
    if (rc == 0 && (rc = group_slices(m, CS_REC_CUDA, &pc, &m->ncall)) == 0 &&
        (rc = group_count(m, CS_REC_OFFCPU, NULL, &po, err)) == 0 &&
        (rc = off_merge(m, &j.op, &po)) == 0)
        rc = group_slices(m, CS_REC_OFFCPU, &po, &m->noff);
    offpass_free(&j.op);
    if (rc == 0) {
        run_counts(m);
        rc = group_place(m, &pc, &po, err);
    }
    place_free(&pc);
    place_free(&po);
    return rc;
}

/* ---- windows and the rest of the host records ---- */

struct vec {
    void *p;
    uint64_t n, cap;
};

static void *vec_push(struct vec *v, size_t size)
{
    if (v->n == v->cap) {
        uint64_t c = v->cap ? v->cap * 2 : 256;
        void *q = realloc(v->p, c * size);
        if (q == NULL)
            return NULL;
        v->p = q;
        v->cap = c;
    }
    return (char *)v->p + size * v->n++;
}

static int pwin_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                      const void *recs, void *arg)
{
    const struct cs_rec_pwin *r = recs;

    for (uint32_t i = 0; i < h->n; i++, r++) {
        struct cs_rec_pwin *w;
        uint32_t p;
        if (r->t_end_ns <= m->runs[run].win_lo_ns || r->t_start_ns >= m->runs[run].win_hi_ns)
            continue;
        p = proc_get(m, run, r->pid);
        w = vec_push(arg, sizeof(*w));
        if (p == M_NONE || w == NULL)
            return -ENOMEM;
        *w = *r;
        w->pid = p;
        if (r->t_end_ns > m->runs[run].host_end_ns)
            m->runs[run].host_end_ns = r->t_end_ns;
    }
    return 0;
}

static int sys_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                     const void *recs, void *arg)
{
    const struct cs_rec_syswin *r = recs;

    for (uint32_t i = 0; i < h->n; i++, r++) {
        struct cs_rec_syswin *w;
        if (r->t_end_ns <= m->runs[run].win_lo_ns || r->t_start_ns >= m->runs[run].win_hi_ns)
            continue;
        w = vec_push(arg, sizeof(*w));
        if (w == NULL)
            return -ENOMEM;
        *w = *r;
        w->pad = run; /* reused as the run index while loading */
        if (r->t_end_ns > m->runs[run].host_end_ns)
            m->runs[run].host_end_ns = r->t_end_ns;
        if (r->ncpu > m->runs[run].ncpu)
            m->runs[run].ncpu = r->ncpu;
    }
    return 0;
}

static int lost_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                      const void *recs, void *arg)
{
    const struct cs_rec_lost *r = recs;
    struct m_run *mr = &m->runs[run];

    (void)arg;
    for (uint32_t i = 0; i < h->n; i++, r++) {
        if (r->what == 2)
            mr->lost_shim += r->count;
        else
            mr->lost_perf += r->count;
        mr->lost_spans++;
    }
    return 0;
}

static int cmp_pwin(const void *a, const void *b)
{
    const struct cs_rec_pwin *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->t_start_ns < y->t_start_ns ? -1 : x->t_start_ns > y->t_start_ns;
}

static int cmp_sys(const void *a, const void *b)
{
    const struct cs_rec_syswin *x = a, *y = b;
    if (x->pad != y->pad)
        return x->pad < y->pad ? -1 : 1;
    return x->t_start_ns < y->t_start_ns ? -1 : x->t_start_ns > y->t_start_ns;
}

/* After the off-CPU passes, which read every host block. */
static int load_windows(struct model *m, struct cs_err *err)
{
    struct vec pw = {0}, sw = {0};
    int rc = each_block(m, CS_REC_PWIN, 1, pwin_block, &pw, err);

    if (rc == 0)
        rc = each_block(m, CS_REC_SYSWIN, 1, sys_block, &sw, err);
    if (rc == 0)
        rc = each_block(m, CS_REC_LOST, 1, lost_block, NULL, err);
    m->pwin = pw.p;
    m->npwin = pw.n;
    m->sys = sw.p;
    m->nsys = sw.n;
    if (rc < 0)
        return rc;
    if (m->npwin) /* qsort(NULL, 0, ...) is undefined: no windows in a --no-host run */
        qsort(m->pwin, m->npwin, sizeof(*m->pwin), cmp_pwin);
    if (m->nsys)
        qsort(m->sys, m->nsys, sizeof(*m->sys), cmp_sys);
    for (uint64_t i = 0; i < m->npwin; i++) {
        struct m_proc *p = &m->proc[m->pwin[i].pid];
        if (p->npwin++ == 0)
            p->first_pwin = i;
    }
    for (uint64_t i = 0; i < m->nsys; i++) {
        struct m_run *r = &m->runs[m->sys[i].pad];
        if (r->nsys++ == 0)
            r->first_sys = i;
    }
    return 0;
}

/* ---- GPU activity ---- */

static int gpu_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                     const void *recs, void *arg)
{
    const struct cs_rec_gpu *r = recs;
    const struct m_run *mr = &m->runs[run];

    for (uint32_t i = 0; i < h->n; i++, r++) {
        struct m_gpu *g;
        uint32_t p;
        if (r->t_end_ns <= mr->win_lo_ns || r->t_start_ns >= mr->win_hi_ns ||
            r->t_end_ns < r->t_start_ns || r->kind < CS_GPU_KERNEL || r->kind > CS_GPU_MEMSET)
            continue;
        if ((p = proc_get(m, run, r->pid)) == M_NONE)
            return -ENOMEM;
        if (!m->proc[p].selected)
            continue;
        if ((g = vec_push(arg, sizeof(*g))) == NULL)
            return -ENOMEM;
        memset(g, 0, sizeof(*g));
        g->t_start_ns = r->t_start_ns;
        g->t_end_ns = r->t_end_ns;
        g->bytes = r->bytes;
        g->proc = p;
        g->name_id = r->name_id;
        g->stream_id = r->stream_id;
        g->epoch = r->epoch;
        g->device = r->device;
        g->kind = r->kind;
        g->dir = r->dir;
        g->gflags = (uint8_t)(r->flags & CS_GF_PAGEABLE);
        g->graph_id = r->graph_id;
        g->graph_node_id = r->graph_node_id;
        /* the enqueuing call, found once the calls are sorted (gpu_join) */
        g->call = (r->flags & CS_GF_CORR) ? (uint64_t)r->api_tid << 32 | r->api_seq : M_CALL_NONE;
    }
    return 0;
}

static int gcov_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                      const void *recs, void *arg)
{
    const struct cs_rec_gpucov *r = recs;

    for (uint32_t i = 0; i < h->n; i++, r++) {
        struct m_gcov *c;
        uint32_t p = proc_get(m, run, r->pid);
        if (p == M_NONE || (c = vec_push(arg, sizeof(*c))) == NULL)
            return -ENOMEM;
        if (!m->proc[p].selected) {
            ((struct vec *)arg)->n--;
            continue;
        }
        *c = (struct m_gcov){r->t_start_ns, r->t_end_ns, r->t_attach_ns, r->t_detach_ns, p,
                             r->epoch, r->reason_id, r->dropped, r->cupti_version, r->mode,
                             r->flags};
        if (c->t_end_ns < c->t_start_ns)
            c->t_end_ns = c->t_start_ns;
    }
    return 0;
}

static int cmp_gpu(const void *a, const void *b)
{
    const struct m_gpu *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->t_start_ns < y->t_start_ns ? -1 : x->t_start_ns > y->t_start_ns;
}

static int cmp_gcov(const void *a, const void *b)
{
    const struct m_gcov *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    return x->t_start_ns < y->t_start_ns ? -1 : x->t_start_ns > y->t_start_ns;
}

/* The seq of call @p i, kept beside it or in the store. */
static uint32_t seq_of(const struct model *m, uint64_t i)
{
    return m->call_seq ? m->call_seq[i] : callstore_kept(m->cstore, i, CSC_SEQ);
}

/* Index of thread @p t's call with seq @p seq, or M_CALL_NONE. The seq
 * slice is in call order, which is the thread's seq order. */
static uint64_t call_of_seq(const struct model *m, uint32_t t, uint32_t seq)
{
    const struct m_thread *th = &m->thr[t];
    uint64_t lo = th->first_call, hi = lo + th->ncalls;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (seq_of(m, mid) < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < th->first_call + th->ncalls && seq_of(m, lo) == seq)
        return lo;
    return M_CALL_NONE;
}

/* Name each GPU record's call; then the seq are no longer needed. */
static void gpu_join(struct model *m)
{
    for (uint64_t i = 0; i < m->ngpu; i++) {
        struct m_gpu *g = &m->gpu[i];
        uint32_t t;
        if (g->call == M_CALL_NONE)
            continue;
        t = m_hash_get(m->thr_ix, (uint64_t)g->proc << 32 | (uint32_t)(g->call >> 32));
        g->call = t == M_NONE || (m->call_seq == NULL && !m->kept_seq)
                      ? M_CALL_NONE
                      : call_of_seq(m, t, (uint32_t)g->call);
    }
    model_free_big(m->call_seq);
    m->call_seq = NULL;
}

static int load_gpu(struct model *m, struct cs_err *err)
{
    struct vec g = {0}, c = {0};
    int rc = each_block(m, CS_REC_GPU, 1, gpu_block, &g, err);

    if (rc == 0)
        rc = each_block(m, CS_REC_GPUCOV, 1, gcov_block, &c, err);
    m->gpu = g.p;
    m->ngpu = g.n;
    m->gcov = c.p;
    m->ngcov = c.n;
    if (rc < 0)
        return rc;
    if (m->ngpu)
        qsort(m->gpu, m->ngpu, sizeof(*m->gpu), cmp_gpu);
    if (m->ngcov)
        qsort(m->gcov, m->ngcov, sizeof(*m->gcov), cmp_gcov);
    return 0;
}

/* ---- NVTX ranges ---- */

static int nvtx_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                      const void *recs, void *arg)
{
    const struct cs_rec_nvtx *r = recs;
    const struct m_run *mr = &m->runs[run];

    for (uint32_t i = 0; i < h->n; i++, r++) {
        uint64_t end = r->t_end_ns < r->t_start_ns ? r->t_start_ns : r->t_end_ns;
        struct m_nvtx *v;
        uint32_t p, t;
        /* overlaps the window; a mark lies in it */
        if (r->t_start_ns >= mr->win_hi_ns ||
            (end <= mr->win_lo_ns && r->t_start_ns < mr->win_lo_ns))
            continue;
        if ((p = proc_get(m, run, r->pid)) == M_NONE)
            return -ENOMEM;
        if (!m->proc[p].selected)
            continue;
        /* a thread that made no CUDA call has a row too (its ring's name) */
        if ((t = thr_get(m, p, r->tid)) == M_NONE || (v = vec_push(arg, sizeof(*v))) == NULL)
            return -ENOMEM;
        *v = (struct m_nvtx){r->t_start_ns, end, t, r->name_id, r->domain_id, r->depth,
                             r->flags, 0};
    }
    return 0;
}

static int cmp_nvtx(const void *a, const void *b)
{
    const struct m_nvtx *x = a, *y = b;
    if (x->thr != y->thr)
        return x->thr < y->thr ? -1 : 1;
    if (x->t_start_ns != y->t_start_ns)
        return x->t_start_ns < y->t_start_ns ? -1 : 1;
    return (x->depth > y->depth) - (x->depth < y->depth);
}

static int load_nvtx(struct model *m, struct cs_err *err)
{
    struct vec v = {0};
    int rc = each_block(m, CS_REC_NVTX, 1, nvtx_block, &v, err);

    m->nvtx = v.p;
    m->nnvtx = v.n;
    if (rc < 0)
        return rc;
    if (m->nnvtx)
        qsort(m->nvtx, m->nnvtx, sizeof(*m->nvtx), cmp_nvtx);
    return 0;
}

/* ---- Python samples of host code ---- */

static int pys_block(struct model *m, uint32_t run, const struct cs_blk_hdr *h,
                     const void *recs, void *arg)
{
    const struct cs_rec_pysample *r = recs;
    const struct m_run *mr = &m->runs[run];

    for (uint32_t i = 0; i < h->n; i++, r++) {
        uint64_t t = r->t_start_ns + (r->t_end_ns > r->t_start_ns
                                          ? (r->t_end_ns - r->t_start_ns) / 2 : 0);
        struct m_pysample *v;
        uint32_t p, th;
        if (t < mr->win_lo_ns || t >= mr->win_hi_ns || r->stack_id == 0)
            continue;
        if ((p = proc_get(m, run, r->pid)) == M_NONE)
            return -ENOMEM;
        if (!m->proc[p].selected)
            continue;
        if ((th = thr_get(m, p, r->tid)) == M_NONE || (v = vec_push(arg, sizeof(*v))) == NULL)
            return -ENOMEM;
        *v = (struct m_pysample){t, th, r->stack_id};
    }
    return 0;
}

static int cmp_pys(const void *a, const void *b)
{
    const struct m_pysample *x = a, *y = b;
    if (x->thr != y->thr)
        return x->thr < y->thr ? -1 : 1;
    return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
}

static int load_pysamples(struct model *m, struct cs_err *err)
{
    struct vec v = {0};
    int rc = each_block(m, CS_REC_PYSAMPLE, 1, pys_block, &v, err);

    m->pys = v.p;
    m->npys = v.n;
    if (rc < 0)
        return rc;
    if (m->npys)
        qsort(m->pys, m->npys, sizeof(*m->pys), cmp_pys);
    return 0;
}

/* ---- stacks ---- */

/* The stack id of call @p i, kept beside it or in the store. */
static uint32_t stack_of(const struct model *m, uint64_t i)
{
    return m->call_stack ? m->call_stack[i] : callstore_kept(m->cstore, i, CSC_STACK);
}

/* Turns the stack ids kept beside the calls while loading (call_stack,
 * sorted with them, or the store's column) into the side table
 * model.cstack, in call order. */
static int stacks_resolve(struct model *m)
{
    uint64_t k = 0;

    if (m->call_stack == NULL && !m->kept_stack)
        return 0;
    for (uint64_t i = 0; i < m->ncall; i++)
        k += stack_of(m, i) != 0;
    m->cstack = malloc((k ? k : 1) * sizeof(*m->cstack));
    if (m->cstack == NULL)
        return -ENOMEM;
    for (uint64_t i = 0; i < m->ncall; i++)
        if (stack_of(m, i))
            m->cstack[m->ncstack++] = (struct m_cstack){i, stack_of(m, i), 0};
    model_free_big(m->call_stack);
    m->call_stack = NULL;
    return 0;
}

/* ---- a run still being written ---- */

/* Is the collector that writes @p r still at it (model.h)?
 * LD_PRELOAD users analyse the moment their program exits, while the
 * collector it started still drains its rings into the file. */
int model_writer_alive(struct cs_run *r)
{
    uint64_t pid = cs_run_meta_u64(r, "collector_pid", 0);
    const char *h = cs_run_meta(r, "host");
    char host[256] = "", path[64], comm[32] = "";
    FILE *f;

    if (cs_run_meta_u64(r, "clean_shutdown", 1) != 0 || pid == 0 || pid > INT_MAX || h == NULL)
        return 0;
    if (gethostname(host, sizeof(host) - 1) < 0 || strcmp(h, host) != 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%" PRIu64 "/comm", pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, "cudaspy-sampler", 15) == 0;
}

/* Reopen @p r until its collector is done or gone, at most
 * CUDASPY_WAIT_S seconds (default MODEL_WAIT_S; 0: never wait), with one
 * line on stderr; then it is read as it stands (degraded if unfinished). */
#define MODEL_WAIT_S 30

static int wait_writer(struct m_run *r, const char *path, struct cs_err *err)
{
    const char *env = getenv("CUDASPY_WAIT_S");
    long limit = env && *env ? strtol(env, NULL, 10) : MODEL_WAIT_S;
    struct timespec nap = {0, 50 * 1000 * 1000}, t0, now;
    int rc = 0;

    if (limit <= 0 || !model_writer_alive(r->run))
        return 0;
    fprintf(stderr, "cudaspy-analyze: %s: its collector (pid %" PRIu64 ") is still writing it: "
                    "waiting for it (up to %ld s)\n",
            path, cs_run_meta_u64(r->run, "collector_pid", 0), limit);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        nanosleep(&nap, NULL);
        cs_run_free(r->run);
        if ((r->run = cs_run_new()) == NULL)
            return -ENOMEM;
        if ((rc = cs_run_open(r->run, path, err)) < 0)
            return rc;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (model_writer_alive(r->run) && now.tv_sec - t0.tv_sec < limit);
    if (model_writer_alive(r->run))
        fprintf(stderr, "cudaspy-analyze: %s: still being written after %ld s: read as it "
                        "stands\n", path, limit);
    return 0;
}

/* ---- runs ---- */

static void capture_window(struct m_run *r);

/* A size-capped run whose trigger kept a window (meta flight_kept "T0-T1",
 * record --keep-on) and evicted past it: its detail is that window and the
 * tail from flight_detail_from_ns, analysed as two capture ranges (their
 * hull the window, the time between them not recorded). @return 1 when
 * so, 0 (no window, or nothing evicted after it: the detail is whole from
 * the window's start, or the plain tail) */
static int flight_kept(struct m_run *r)
{
    const char *s = cs_run_meta(r->run, "flight_kept");
    uint64_t from = cs_run_meta_u64(r->run, "flight_detail_from_ns", 0), k0, k1;
    char *end;

    if (s == NULL || r->is_capture)
        return 0;
    k0 = strtoull(s, &end, 10);
    if (*end != '-' || (k1 = strtoull(end + 1, &end, 10)) < k0 || *end || from <= k0)
        return 0;
    if (from <= k1) { /* the kept window runs into the tail */
        r->win_lo_ns = k0 > r->win_lo_ns ? k0 : r->win_lo_ns;
        return 1;
    }
    if ((r->capture = malloc(4 * sizeof(*r->capture))) == NULL)
        return 0;
    r->capture[0] = k0, r->capture[1] = k1;
    r->capture[2] = from, r->capture[3] = r->t_end_ns > from ? r->t_end_ns : from;
    r->ncapture = 2;
    r->is_capture = r->is_kept = 1;
    r->win_lo_ns = k0 > r->win_lo_ns ? k0 : r->win_lo_ns;
    r->win_hi_ns = r->capture[3] < r->win_hi_ns ? r->capture[3] : r->win_hi_ns;
    return 1;
}

static int open_run(struct model *m, int i, const char *path, struct cs_err *err)
{
    struct m_run *r = &m->runs[i];
    int rc;

    r->path = path;
    r->run = cs_run_new();
    if (r->run == NULL)
        return -ENOMEM;
    if (err)
        err->msg[0] = '\0';
    reading = path;
    rc = cs_run_open(r->run, path, err);
    if (rc == 0 && !m->opts.live)
        rc = wait_writer(r, path, err);
    if (rc == 0 && model_writer_alive(r->run))
        m->any_writing = 1;
    reading = NULL;
    if (rc < 0) {
        char tmp[sizeof(((struct cs_err *)0)->msg)];
        snprintf(tmp, sizeof(tmp), "%s", err && err->msg[0] ? err->msg : cs_strerror(rc));
        if (strncmp(tmp, path, strlen(path)) == 0)
            cs_err_set(err, rc, "%s", tmp);
        else
            cs_err_set(err, rc, "%s: %s", path, tmp);
        return rc;
    }
    r->t0_ns = cs_run_meta_u64(r->run, "t_start_ns", 0);
    r->t_end_ns = cs_run_meta_u64(r->run, "t_end_ns", 0);
    if (r->t_end_ns < r->t0_ns)
        r->t_end_ns = r->t0_ns;
    r->win_lo_ns = r->t0_ns + m->opts.since_ns;
    r->win_hi_ns = m->opts.until_ns > UINT64_MAX - r->t0_ns ? UINT64_MAX
                                                             : r->t0_ns + m->opts.until_ns;
    /* a size-capped run holds every record only from here on (its older
     * blocks were evicted, but for a window its trigger kept): the model,
     * and every finding, start there */
    if (!flight_kept(r) && cs_run_meta_u64(r->run, "flight_detail_from_ns", 0) > r->win_lo_ns)
        r->win_lo_ns = cs_run_meta_u64(r->run, "flight_detail_from_ns", 0);
    capture_window(r);
    rc = load_procs(m, (uint32_t)i);
    if (rc == 0)
        rc = load_threads(m, (uint32_t)i);
    return rc;
}

/* A run recorded in capture ranges (meta capture_ranges, "T0-T1,T0-T1"):
 * the analysed window is their hull (none recorded: nothing is analysed).
 * A malformed or unordered tail, or no memory for it, ends the list. */
static void capture_window(struct m_run *r)
{
    const char *s = cs_run_meta(r->run, "capture_ranges");
    uint64_t lo = r->t0_ns, hi = r->t0_ns;
    size_t cap = 0;

    if (s == NULL || r->is_kept)
        return;
    r->is_capture = 1;
    while (*s) {
        char *end;
        uint64_t t0 = strtoull(s, &end, 10), t1;
        if (*end != '-')
            break;
        t1 = strtoull(end + 1, &end, 10);
        if (t1 < t0 || (r->ncapture && t0 < r->capture[2 * r->ncapture - 1]) ||
            (*end && *end != ',') ||
            cs_grow((void **)&r->capture, &cap, 2 * ((size_t)r->ncapture + 1),
                    sizeof(*r->capture)) < 0)
            break;
        r->capture[2 * r->ncapture] = t0, r->capture[2 * r->ncapture + 1] = t1;
        r->ncapture++;
        s = *end ? end + 1 : end;
    }
    if (r->ncapture)
        lo = r->capture[0], hi = r->capture[2 * r->ncapture - 1];
    r->win_lo_ns = lo > r->win_lo_ns ? lo : r->win_lo_ns;
    r->win_hi_ns = hi < r->win_hi_ns ? hi : r->win_hi_ns;
}

uint64_t model_capture_gap_ns(const struct m_run *r)
{
    uint64_t gap = 0;

    for (uint32_t i = 1; i < r->ncapture; i++)
        gap += r->capture[2 * i] - r->capture[2 * i - 1];
    return gap;
}

/* Runs without t_end_ns meta (a crashed collector) end at their last record. */
static void fix_extent(struct model *m)
{
    int open_ended = 0;

    for (int i = 0; i < m->nruns; i++)
        open_ended |= m->runs[i].t_end_ns == m->runs[i].t0_ns;
    for (uint32_t t = 0; open_ended && t < m->nthr; t++) {
        struct m_run *r = &m->runs[m->proc[m->thr[t].proc].run];
        const struct m_thread *th = &m->thr[t];
        for (uint64_t i = th->first_call; i < th->first_call + th->ncalls; i++) {
            uint64_t x = model_call(m, i).t_exit_ns;
            if (x > r->host_end_ns)
                r->host_end_ns = x;
        }
    }
    for (int i = 0; i < m->nruns; i++) {
        struct m_run *r = &m->runs[i];
        if (r->t_end_ns == r->t0_ns && r->host_end_ns > r->t0_ns)
            r->t_end_ns = r->host_end_ns; /* no t_end_ns meta: the last record ends it */
        if (r->win_hi_ns > r->t_end_ns)
            r->win_hi_ns = r->t_end_ns;
        if (r->win_lo_ns > r->win_hi_ns)
            r->win_lo_ns = r->win_hi_ns;
    }
}

int model_load(struct model *m, const char *const *paths, int n, const struct analysis_opts *o,
               struct cs_err *err)
{
    int rc;

    memset(m, 0, sizeof(*m));
    m->opts = *o;
    m->runs = calloc(n > 0 ? (size_t)n : 1, sizeof(*m->runs));
    m->proc_ix = m_hash_new();
    m->thr_ix = m_hash_new();
    if (m->runs == NULL || m->proc_ix == NULL || m->thr_ix == NULL)
        return -ENOMEM;
    m->nruns = n;
    /* CUDASPY_MREC=scan: memory reads the table again (tests compare the two) */
    m->mrec_over = getenv("CUDASPY_MREC") && strcmp(getenv("CUDASPY_MREC"), "scan") == 0;
    for (int i = 0; i < n; i++)
        if ((rc = open_run(m, i, paths[i], err)) < 0)
            return rc;
    link_parents(m);
    scratch_dir[0] = '\0'; /* planned by load_grouped(), kind by kind */
    rc = load_grouped(m, err);
    if (rc == 0)
        rc = load_windows(m, err);
    if (rc == 0)
        rc = load_gpu(m, err);
    if (rc == 0)
        rc = load_nvtx(m, err);
    if (rc == 0)
        rc = load_pysamples(m, err);
    if (rc < 0)
        return rc;
    /* processes first seen in records have no parent link yet */
    link_parents(m);
    if (sort_slices(m, 1) < 0 || sort_slices(m, 0) < 0 || stacks_resolve(m) < 0)
        return -ENOMEM;
    gpu_join(m);
    fix_extent(m);
    if ((rc = clocks_align(m)) < 0)
        return rc;
    if (m->call && calls_to_store(m->ncall))
        model_calls_compact(m); /* -ENOMEM: the array stays */
    return 0;
}

void model_exit(struct model *m)
{
    for (int i = 0; i < m->nruns; i++) {
        cs_run_free(m->runs[i].run);
        free(m->runs[i].capture);
    }
    free(m->runs);
    free(m->proc);
    free(m->thr);
    model_free_big(m->call);
    model_calls_free(m);
    model_free_big(m->off);
    free(m->pwin);
    free(m->sys);
    free(m->gpu);
    free(m->gcov);
    free(m->nvtx);
    free(m->pys);
    model_free_big(m->call_seq);
    free(m->cstack);
    free(m->fold);
    free(m->mrec);
    model_free_big(m->call_stack);
    m_hash_free(m->proc_ix);
    m_hash_free(m->thr_ix);
    memset(m, 0, sizeof(*m));
}

/* ---- lookups (all slices are sorted by start and do not overlap) ---- */

uint64_t model_off_after(const struct model *m, uint32_t t, uint64_t t_ns)
{
    uint64_t lo = m->thr[t].first_off;

    return M_FIRST_GT(struct m_off, m->off, t_end_ns, lo, lo + m->thr[t].noff, t_ns);
}

uint64_t model_sys_after(const struct model *m, uint32_t r, uint64_t t_ns)
{
    uint64_t lo = m->runs[r].first_sys;

    return M_FIRST_GT(struct cs_rec_syswin, m->sys, t_end_ns, lo, lo + m->runs[r].nsys, t_ns);
}

uint64_t model_pwin_after(const struct model *m, uint32_t p, uint64_t t_ns)
{
    uint64_t lo = m->proc[p].first_pwin;

    return M_FIRST_GT(struct cs_rec_pwin, m->pwin, t_end_ns, lo, lo + m->proc[p].npwin, t_ns);
}
