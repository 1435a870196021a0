/* collector.c: the collector of collector.h and collector_priv.h. Owns the
 * listening socket, one connection per traced process with its mapped ring
 * segments, the staging blocks (CUDA per process, host per kind), the
 * in-memory process and thread tables and the run file (cs_store) it
 * commits them to. The protocol is include/cudaspy/ring.h; perf events are
 * host.c's business. Everything runs in the main loop, but the store writes
 * each commit in a thread of its own (cs_store_commit_start), so draining
 * never stops while LMDB writes. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collector_priv.h"
#include "flight_rec.h"
#include "hostclock.h"
#include "procfs.h"
#include "pysample.h"
#include "cudaspy/grow.h"
#include "cudaspy/ring.h"
#include "cudaspy/runfile.h"
#include "cudaspy/sockaddr.h"
#include "cudaspy/version.h"

#define CUDA_PER_BLK   2048u           /* records a block: compact (cudablk.h), 10-30 KiB;
                                          the store splits one that outgrows 64 KiB */
#define CUDA_BUF_MAX   (1u << 20)      /* records buffered per process before forced cuts */
#define SUB_BUDGET     (256u << 10)    /* ring bytes taken per sub-ring per pass: keeps the
                                          staging buffers small and cache-warm */
#define TRANS_WAIT_NS  50000000ull     /* how long a record waits for its name definition */
#define COMMIT_BYTES   (2u << 20)      /* commit early when this much is staged: keeps
                                          each transaction short (docs/format.md) */
#define COMMIT_NS      50000000ull     /* commit interval: with the write, a SIGKILL
                                          loses under 100 ms */
#define STAGE_MAX      (256u << 20)    /* staged while the commit thread still writes:
                                          past this, wait for it (the disk cannot keep up) */
#define IDLE_NS        100000000ull    /* no records for this long: poll every 10 ms */
#define LOCAL_ID_MAX   (1u << 24)      /* largest process-local name/stack id accepted */
#define SEG_NSUB_MAX   1024
#define SEG_BYTES_MAX  (16ull << 30)
#define NS_PER_S       1000000000ull
#define PY_ALL_HZ_MAX  2000u           /* Python samples a second over every thread at most:
                                          past it each thread's rate is cut to share them */

/* A mapped ring segment of one process. */
struct seg {
    void *base;
    uint64_t bytes;
    uint32_t nsub, sub_bytes, clock;
    uint64_t *drops_seen; /* per sub-ring: ctl->dropped already accounted */
    uint8_t *bad;         /* per sub-ring: malformed, no longer read */
    uint64_t *py_next_ns; /* per sub-ring: its thread's next Python sample is due */
};

enum conn_state { CONN_OPEN, CONN_DETACHED };

/* One traced process's registration. */
struct conn {
    int fd;                  /* -1 once detached (socket gone, process maybe alive) */
    enum conn_state state;
    uint32_t pid;            /* 0 until hello */
    uint64_t start_ticks;
    uint32_t clock;
    struct seg *segs;
    uint32_t nseg;
    uint32_t *names, *stacks; /* local id -> run id */
    uint32_t nnames, nstacks;
    struct cs_rec_gpu *gpu;   /* GPU records of this pass (local name ids) */
    size_t ngpu, gpu_cap;
    struct cs_rec_gpucov *cov; /* GPU coverage spans of this pass (local reason ids) */
    size_t ncov, cov_cap;
    struct nvtx_wait *nvtx;   /* NVTX ranges not staged yet (local name ids) */
    size_t nnvtx, nvtx_cap;
    struct cs_rec_cuda *buf;  /* staged CUDA records, oldest first */
    size_t n, cap, ntrans;    /* ntrans: records [0, ntrans) have run ids */
    uint64_t blk_t0_ns;       /* when the oldest staged record arrived */
    uint64_t next_check_ns;   /* detached: next liveness check */
    struct pysample *py;      /* its Python stacks, from its first segment's layout; NULL none */
    uint32_t py_hz;           /* samples a second per thread it asked for (CUDASPY_PYSAMPLE_HZ) */
    int self_capture;         /* it bounds capture ranges: its shim pauses its own rings */
};

/* Host records of one kind waiting for a block. */
struct hstage {
    uint8_t *buf;
    uint32_t n;
    uint64_t ts_first, ts_last, t0_ns;
    uint32_t pid;
    int mixed;
};

struct proc_row {
    struct cs_proc p;
    int dirty;
};

struct thr_row {
    struct cs_thread t;
    int dirty;
};

/* u64 key -> index + 1 (0 = empty); open addressing. */
struct idx_map {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap, n;
};

struct collector {
    struct collector_opts o;
    struct capture cap; /* capture ranges (capture.h) */
    struct hostclock hc; /* the host's clock pairs (hostclock.h) */
    uint64_t capture_outside; /* CUDA records dropped: entered outside every range */
    struct cs_store *st;
    char addr[108];
    int lfd;
    struct conn **conns;
    size_t nconns, conns_cap;
    struct pollfd *pfds; /* scratch for collector_step */
    size_t pfds_cap;
    struct hstage host[CS_REC_KIND_COUNT];
    struct proc_row *procs;
    size_t nprocs, procs_cap;
    struct thr_row *thr;
    size_t nthr, thr_cap;
    struct idx_map proc_idx, thr_idx;
    struct clock_cal cal;
    uint64_t t_start_ns, last_commit_ns, last_sync_ns, last_cal_ns;
    struct collector_stats stats;
    int store_failed;
    uint32_t paused; /* 1 in an off phase of o.duty_ns: the shims record nothing */
    int flushing;     /* the store's thread syncs the file (cs_store_flush_start) */
    int bg_commit;    /* commits go to the store's commit thread (cs_store_commit_start) */
    int flush_warned; /* a failed flush was reported */
    int moved;   /* records moved in the last step */
    uint64_t moved_ns; /* when a step last moved records */
    int backlog; /* a sub-ring still had data when its budget ran out */
    void (*on_reg)(void *arg, pid_t pid);
    void *on_reg_arg;
    struct flight *fl; /* o.max_size_bytes: the flight recorder (flight_rec.h) */
    uint64_t py_samples, py_failed, py_trunc; /* Python samples taken, dropped, cut short */
    uint64_t py_cpu_ns;  /* this thread's CPU time in the reads, written or not */
    uint32_t py_threads, py_threads_last; /* threads sampled in this pass and the last */
    uint64_t py_due_ns;  /* the earliest sample due after the last pass; 0 = none */
    uint64_t py_rand;    /* xorshift state: each sample's period is jittered */
};

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(2, line, (size_t)n) < 0)
        (void)0;
}

/* ---- index map ---- */

static uint64_t mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static uint32_t idx_get(const struct idx_map *m, uint64_t key)
{
    if (m->cap == 0)
        return 0;
    for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] == 0)
            return 0;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

static int idx_put(struct idx_map *m, uint64_t key, uint32_t val);

static int idx_rehash(struct idx_map *m)
{
    struct idx_map nm = {0};

    nm.cap = m->cap ? m->cap * 2 : 64;
    nm.keys = calloc(nm.cap, sizeof(*nm.keys));
    nm.vals = calloc(nm.cap, sizeof(*nm.vals));
    if (nm.keys == NULL || nm.vals == NULL) {
        free(nm.keys);
        free(nm.vals);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i])
            idx_put(&nm, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = nm;
    return 0;
}

/* Set key -> val (val >= 1), replacing an existing entry. */
static int idx_put(struct idx_map *m, uint64_t key, uint32_t val)
{
    size_t i;

    if ((m->n + 1) * 2 > m->cap && idx_rehash(m) < 0)
        return -ENOMEM;
    for (i = mix64(key) & (m->cap - 1); m->vals[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 0;
}

static void idx_free(struct idx_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

/* ---- process and thread tables (collector.h) ---- */

static void proc_merge(struct cs_proc *d, const struct cs_proc *p)
{
    if (p->ppid)
        d->ppid = p->ppid;
    if (d->start_ns == 0)
        d->start_ns = p->start_ns; /* part of the key: never changes once set */
    if (p->exec_ns)
        d->exec_ns = p->exec_ns;
    if (p->exit_ns)
        d->exit_ns = p->exit_ns;
    if ((p->flags & CS_PF_EXITED) && p->exit_status != -1)
        d->exit_status = p->exit_status;
    d->flags |= p->flags;
    if (p->cmdline_id)
        d->cmdline_id = p->cmdline_id;
    if (p->rank != CS_RANK_NONE)
        d->rank = p->rank;
    if (p->comm[0])
        memcpy(d->comm, p->comm, sizeof(d->comm));
    d->comm[sizeof(d->comm) - 1] = '\0';
}

int collector_proc(struct collector *c, const struct cs_proc *p)
{
    uint32_t i = idx_get(&c->proc_idx, p->pid);
    struct proc_row *r;
    struct procfs_stat st;

    if (i) {
        r = &c->procs[i - 1];
        if (!((r->p.flags & CS_PF_EXITED) && p->start_ns > r->p.start_ns &&
              !(p->flags & CS_PF_EXITED))) {
            proc_merge(&r->p, p);
            r->dirty = 1;
            return 0;
        }
    }
    if (cs_grow((void **)&c->procs, &c->procs_cap, c->nprocs + 1, sizeof(*c->procs)) < 0)
        return -ENOMEM;
    r = &c->procs[c->nprocs];
    r->p = *p;
    r->p.comm[sizeof(r->p.comm) - 1] = '\0';
    if (!(p->flags & CS_PF_EXITED))
        r->p.exit_status = -1;
    if (r->p.start_ns == 0 && procfs_stat_read((pid_t)p->pid, 0, &st) == 0)
        r->p.start_ns = procfs_ticks_to_mono_ns(st.start_ticks);
    r->dirty = 1;
    if (idx_put(&c->proc_idx, p->pid, (uint32_t)++c->nprocs) < 0)
        return -ENOMEM;
    return 0;
}

int collector_thread(struct collector *c, const struct cs_thread *t)
{
    uint64_t key = (uint64_t)t->pid << 32 | t->tid;
    uint32_t i = idx_get(&c->thr_idx, key);
    struct thr_row *r;

    if (i && !(c->thr[i - 1].t.exit_ns && t->start_ns > c->thr[i - 1].t.start_ns)) {
        r = &c->thr[i - 1];
        if (r->t.start_ns == 0)
            r->t.start_ns = t->start_ns;
        if (t->exit_ns)
            r->t.exit_ns = t->exit_ns;
        if (t->name[0])
            memcpy(r->t.name, t->name, sizeof(r->t.name));
        r->t.name[sizeof(r->t.name) - 1] = '\0';
        r->dirty = 1;
        return 0;
    }
    if (cs_grow((void **)&c->thr, &c->thr_cap, c->nthr + 1, sizeof(*c->thr)) < 0)
        return -ENOMEM;
    r = &c->thr[c->nthr];
    r->t = *t;
    r->t.name[sizeof(r->t.name) - 1] = '\0';
    r->dirty = 1;
    return idx_put(&c->thr_idx, key, (uint32_t)++c->nthr);
}

int collector_has_pid(struct collector *c, uint32_t pid)
{
    return idx_get(&c->proc_idx, pid) != 0;
}

int collector_intern(struct collector *c, const char *s, size_t len, uint32_t *id)
{
    return cs_store_intern(c->st, s, len, id);
}

int collector_meta(struct collector *c, const char *key, const char *val)
{
    return cs_store_put_meta(c->st, key, val);
}

int collector_meta_u64(struct collector *c, const char *key, uint64_t val)
{
    return cs_store_put_meta_u64(c->st, key, val);
}

void collector_exited(struct collector *c, pid_t pid, int status, uint64_t now_ns)
{
    struct cs_proc p = {.pid = (uint32_t)pid, .exit_ns = now_ns, .exit_status = status,
                        .flags = CS_PF_EXITED, .rank = CS_RANK_NONE};
    uint32_t i = idx_get(&c->proc_idx, (uint32_t)pid);

    if (i && (c->procs[i - 1].p.flags & CS_PF_EXITED)) {
        if (status != -1 && c->procs[i - 1].p.exit_status == -1) {
            c->procs[i - 1].p.exit_status = status;
            c->procs[i - 1].dirty = 1;
        }
        return;
    }
    if (i)
        collector_proc(c, &p);
}

/* ---- host records (collector.h) ---- */

static void put_block(struct collector *c, uint32_t source, struct cs_blk_hdr *h,
                      const void *recs)
{
    int rc;

    if (c->store_failed)
        return;
    rc = cs_store_put_block(c->st, source, h, recs);
    if (rc == 0 && c->fl)
        flight_block(c->fl, h, recs);
    if (rc < 0 && rc != -EINVAL)
        warn("cudaspy-sampler: %s: cannot stage block (%s)", c->o.path, cs_strerror(rc));
}

static void host_flush(struct collector *c, unsigned kind)
{
    struct hstage *s = &c->host[kind];
    struct cs_blk_hdr h = {0};

    if (s->n == 0)
        return;
    h.ts_first_ns = s->ts_first;
    h.ts_last_ns = s->ts_last;
    h.n = s->n;
    h.kind = (uint16_t)kind;
    h.pid = s->mixed ? 0 : s->pid;
    put_block(c, kind << 24, &h, s->buf);
    s->n = 0;
}

int collector_emit(struct collector *c, unsigned kind, uint32_t pid, const void *rec)
{
    unsigned rs = cs_rec_size(kind);
    struct hstage *s;
    uint64_t t[2];

    if (kind == CS_REC_CUDA || rs == 0)
        return -EINVAL;
    s = &c->host[kind];
    if (s->buf == NULL && (s->buf = malloc(CS_BLK_MAX_BYTES)) == NULL)
        return -ENOMEM;
    if (sizeof(struct cs_blk_hdr) + (size_t)(s->n + 1) * rs > CS_BLK_MAX_BYTES)
        host_flush(c, kind);
    memcpy(t, rec, sizeof(t)); /* every host record starts with its start and end ns */
    if (s->n == 0) {
        s->ts_first = t[0];
        s->ts_last = t[1];
        s->pid = pid;
        s->mixed = 0;
        s->t0_ns = clock_mono_ns();
    }
    if (t[0] < s->ts_first)
        s->ts_first = t[0];
    if (t[1] > s->ts_last)
        s->ts_last = t[1];
    s->mixed |= pid != s->pid;
    memcpy(s->buf + (size_t)s->n * rs, rec, rs);
    s->n++;
    c->stats.host_records++;
    return 0;
}

/* ---- CUDA staging per process ---- */

static uint32_t map_id(const uint32_t *map, uint32_t n, uint32_t local)
{
    return local < n ? map[local] : 0;
}

/* Give staged records run-wide string and stack ids. A definition is pushed
 * before its first use but possibly into another thread's ring, which this
 * pass may not have reached: a record with an unknown id waits (and the ones
 * after it) until the definition arrives, or TRANS_WAIT_NS, or @p force;
 * then the id becomes 0. */
static void conn_translate(struct conn *k, uint64_t now_ns, int force)
{
    force |= now_ns - k->blk_t0_ns >= TRANS_WAIT_NS;
    for (size_t i = k->ntrans; i < k->n; i++) {
        struct cs_rec_cuda *r = &k->buf[i];
        uint32_t name = map_id(k->names, k->nnames, r->name_id);
        uint32_t stack = map_id(k->stacks, k->nstacks, r->stack_id);
        if (!force && ((r->name_id && !name) || (r->stack_id && !stack))) {
            k->ntrans = i;
            return;
        }
        r->name_id = name;
        if (name == 0)
            r->flags &= (uint16_t)~CS_CF_HAS_NAME;
        r->stack_id = stack;
    }
    k->ntrans = k->n;
}

static void cuda_block(struct collector *c, struct conn *k, size_t off, size_t n)
{
    struct cs_blk_hdr h = {0};

    h.ts_first_ns = UINT64_MAX;
    for (size_t i = off; i < off + n; i++) {
        if (k->buf[i].t_enter_ns < h.ts_first_ns)
            h.ts_first_ns = k->buf[i].t_enter_ns;
        if (k->buf[i].t_exit_ns > h.ts_last_ns)
            h.ts_last_ns = k->buf[i].t_exit_ns;
    }
    h.n = (uint32_t)n;
    h.kind = CS_REC_CUDA;
    h.pid = k->pid;
    put_block(c, k->pid, &h, k->buf + off);
}

/* Stage full blocks of translated records; with @p all (or when the oldest
 * is 100 ms old) the partial one too. */
static void conn_cut(struct collector *c, struct conn *k, uint64_t now_ns, int all)
{
    size_t off = 0;

    while (k->ntrans - off >= CUDA_PER_BLK) {
        cuda_block(c, k, off, CUDA_PER_BLK);
        off += CUDA_PER_BLK;
    }
    if (k->ntrans > off && (all || now_ns - k->blk_t0_ns >= CS_BLK_MAX_AGE_NS)) {
        cuda_block(c, k, off, k->ntrans - off);
        off = k->ntrans;
    }
    if (off == 0)
        return;
    memmove(k->buf, k->buf + off, (k->n - off) * sizeof(*k->buf));
    k->n -= off;
    k->ntrans -= off;
    k->blk_t0_ns = now_ns;
}

/* ---- ring entries ---- */

struct drain_ctx {
    struct collector *c;
    struct conn *k;
    const struct seg *s;
    uint64_t now_ns;
    int malformed;
    long budget; /* bytes this sub-ring may still give in this pass */
};

static int map_set(uint32_t **map, uint32_t *n, uint32_t local, uint32_t id)
{
    size_t cap = *n;

    if (local == 0 || local >= LOCAL_ID_MAX)
        return -EINVAL;
    if (cs_grow((void **)map, &cap, (size_t)local + 1, sizeof(**map)) < 0)
        return -ENOMEM;
    *n = (uint32_t)cap;
    (*map)[local] = id;
    return 0;
}

static int ent_cuda(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct conn *k = d->k;
    struct cs_rec_cuda *r;

    if (e->len != sizeof(*e) + sizeof(*r))
        return -1;
    if (k->n == k->cap) {
        if (k->cap >= CUDA_BUF_MAX) {
            conn_translate(k, d->now_ns, 1);
            conn_cut(d->c, k, d->now_ns, 1);
        } else if (cs_grow((void **)&k->buf, &k->cap, k->n + 1, sizeof(*k->buf)) < 0) {
            return 0; /* out of memory: this record is lost */
        }
    }
    if (k->n == 0)
        k->blk_t0_ns = d->now_ns;
    r = &k->buf[k->n++];
    memcpy(r, e + 1, sizeof(*r));
    r->pid = k->pid;
    if (d->s->clock == CS_CLOCK_TSC) {
        r->t_enter_ns = clock_tsc_to_ns(&d->c->cal, r->t_enter_ns);
        r->t_exit_ns = clock_tsc_to_ns(&d->c->cal, r->t_exit_ns);
    }
    if (capture_active(&d->c->cap) && !d->c->cap.o.program && /* the shims keep those */
        !capture_holds(&d->c->cap, r->t_enter_ns)) {
        k->n--; /* entered outside every capture range (capture.h) */
        d->c->capture_outside++;
        return 0;
    }
    d->c->stats.cuda_records++;
    d->c->moved++;
    return 0;
}

/* A GPU record or span: kept until the pass ends, when every sub-ring of
 * the process has been read and the names it uses are known (CUPTI's
 * threads define them in their own rings). Times are CLOCK_MONOTONIC. */
static int ent_stage(const struct cs_ring_ent *e, void **buf, size_t *n, size_t *cap,
                     size_t size, size_t pid_off, uint32_t pid)
{
    uint8_t *r;

    if (e->len < sizeof(*e) + size)
        return -1;
    if (cs_grow(buf, cap, *n + 1, size) < 0)
        return 0; /* out of memory: this record is lost */
    r = (uint8_t *)*buf + *n * size;
    memcpy(r, e + 1, size);
    memcpy(r + pid_off, &pid, sizeof(pid)); /* the kernel's pid, not the producer's word */
    (*n)++;
    return 0;
}

static int ent_gpu(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct conn *k = d->k;

    return ent_stage(e, (void **)&k->gpu, &k->ngpu, &k->gpu_cap, sizeof(*k->gpu),
                     offsetof(struct cs_rec_gpu, pid), k->pid);
}

static int ent_gpucov(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct conn *k = d->k;

    return ent_stage(e, (void **)&k->cov, &k->ncov, &k->cov_cap, sizeof(*k->cov),
                     offsetof(struct cs_rec_gpucov, pid), k->pid);
}

/* An NVTX range or mark and when it arrived: its message, domain or
 * registered string may be defined in another thread's ring (docs/ring.md),
 * so it waits for the definition as a CUDA record does (TRANS_WAIT_NS). */
struct nvtx_wait {
    struct cs_rec_nvtx r;
    uint64_t seen_ns;
};

static int ent_nvtx(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct conn *k = d->k;
    struct nvtx_wait *w;

    if (e->len != sizeof(*e) + sizeof(w->r))
        return -1;
    if (cs_grow((void **)&k->nvtx, &k->nvtx_cap, k->nnvtx + 1, sizeof(*k->nvtx)) < 0)
        return 0; /* out of memory: this record is lost */
    w = &k->nvtx[k->nnvtx++];
    memcpy(&w->r, e + 1, sizeof(w->r));
    w->r.pid = k->pid;
    w->seen_ns = d->now_ns;
    if (d->s->clock == CS_CLOCK_TSC) {
        w->r.t_start_ns = clock_tsc_to_ns(&d->c->cal, w->r.t_start_ns);
        w->r.t_end_ns = clock_tsc_to_ns(&d->c->cal, w->r.t_end_ns);
    }
    if (w->r.t_end_ns < w->r.t_start_ns)
        w->r.t_end_ns = w->r.t_start_ns;
    return 0;
}

static void capture_mark_at(struct collector *c, int on, uint64_t t_ns);

/* The program opened or closed a capture range (record --capture
 * cudaProfilerApi, nvtx:, steps:): its shim has set its own rings; every
 * other process and the host sampler follow from here. */
static int ent_capture(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct cs_ent_capture m;

    if (e->len != sizeof(*e) + sizeof(m))
        return -1;
    memcpy(&m, e + 1, sizeof(m));
    if (d->s->clock == CS_CLOCK_TSC)
        m.t_ns = clock_tsc_to_ns(&d->c->cal, m.t_ns);
    if (d->c->cap.o.program) {
        d->k->self_capture = 1;
        capture_mark_at(d->c, m.on != 0, m.t_ns);
    }
    return 0;
}

/* Stage the NVTX records whose names are known (or that waited long
 * enough, or all with @p force: an unknown id becomes 0); keep the rest. */
static void conn_nvtx(struct collector *c, struct conn *k, uint64_t now_ns, int force)
{
    size_t keep = 0;

    for (size_t i = 0; i < k->nnvtx; i++) {
        struct nvtx_wait *w = &k->nvtx[i];
        uint32_t name = map_id(k->names, k->nnames, w->r.name_id);
        uint32_t dom = map_id(k->names, k->nnames, w->r.domain_id);
        if (!force && now_ns - w->seen_ns < TRANS_WAIT_NS &&
            ((w->r.name_id && !name) || (w->r.domain_id && !dom))) {
            k->nvtx[keep++] = *w;
            continue;
        }
        w->r.name_id = name;
        w->r.domain_id = dom;
        collector_emit(c, CS_REC_NVTX, k->pid, &w->r);
    }
    k->nnvtx = keep;
}

/* Stage the pass's GPU records and spans with run-wide string ids. */
static void conn_gpu(struct collector *c, struct conn *k)
{
    for (size_t i = 0; i < k->ngpu; i++) {
        k->gpu[i].name_id = map_id(k->names, k->nnames, k->gpu[i].name_id);
        collector_emit(c, CS_REC_GPU, k->pid, &k->gpu[i]);
    }
    for (size_t i = 0; i < k->ncov; i++) {
        k->cov[i].reason_id = map_id(k->names, k->nnames, k->cov[i].reason_id);
        collector_emit(c, CS_REC_GPUCOV, k->pid, &k->cov[i]);
    }
    k->ngpu = k->ncov = 0;
}

static int ent_name(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct cs_ent_name n;
    uint32_t id;

    if (e->len < sizeof(*e) + sizeof(n))
        return -1;
    memcpy(&n, e + 1, sizeof(n));
    if (n.len > e->len - sizeof(*e) - sizeof(n))
        return -1;
    if (collector_intern(d->c, (const char *)(e + 1) + sizeof(n), n.len, &id) < 0)
        return 0;
    return map_set(&d->k->names, &d->k->nnames, n.local_id, id) == -EINVAL ? -1 : 0;
}

static int ent_stack(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct cs_ent_stack s;
    struct cs_frame f[256];
    uint32_t id;

    if (e->len < sizeof(*e) + sizeof(s))
        return -1;
    memcpy(&s, e + 1, sizeof(s));
    if (s.nframes == 0 || s.nframes > 256 ||
        (uint64_t)s.nframes * sizeof(f[0]) > e->len - sizeof(*e) - sizeof(s))
        return -1;
    memcpy(f, (const uint8_t *)(e + 1) + sizeof(s), s.nframes * sizeof(f[0]));
    for (uint32_t i = 0; i < s.nframes; i++) {
        f[i].module_id = map_id(d->k->names, d->k->nnames, f[i].module_id);
        f[i].flags &= CS_FRAME_PYTHON;
        if (f[i].flags)
            f[i].offset = CS_FRAME_PY_OFFSET(CS_FRAME_PY_LINE(&f[i]),
                                             map_id(d->k->names, d->k->nnames,
                                                    CS_FRAME_PY_FUNC(&f[i])));
    }
    if (cs_store_put_stack(d->c->st, f, s.nframes, &id) < 0)
        return 0;
    return map_set(&d->k->stacks, &d->k->nstacks, s.local_id, id) == -EINVAL ? -1 : 0;
}

static int ent_thread(struct drain_ctx *d, const struct cs_ring_ent *e)
{
    struct cs_ent_thread te;
    struct cs_thread t = {0};

    if (e->len < sizeof(*e) + sizeof(te))
        return -1;
    memcpy(&te, e + 1, sizeof(te));
    t.pid = d->k->pid;
    t.tid = te.tid;
    t.start_ns = d->now_ns;
    memcpy(t.name, te.name, sizeof(t.name) - 1);
    collector_thread(d->c, &t);
    return 0;
}

/* One ring entry. A malformed one is skipped and counted (returning < 0
 * would make cs_ring_consume stop before it forever). */
static int on_entry(const struct cs_ring_ent *e, void *arg)
{
    struct drain_ctx *d = arg;
    int rc = 0;

    if (d->budget <= 0) {
        d->c->backlog = 1;
        return -1; /* leave it for the next pass */
    }
    d->budget -= e->len;
    switch (e->type) {
    case CS_ENT_CUDA: rc = ent_cuda(d, e); break;
    case CS_ENT_NAME: rc = ent_name(d, e); break;
    case CS_ENT_STACK: rc = ent_stack(d, e); break;
    case CS_ENT_THREAD: rc = ent_thread(d, e); break;
    case CS_ENT_GPU: rc = ent_gpu(d, e); break;
    case CS_ENT_GPUCOV: rc = ent_gpucov(d, e); break;
    case CS_ENT_NVTX: rc = ent_nvtx(d, e); break;
    case CS_ENT_CAPTURE: rc = ent_capture(d, e); break;
    default: break; /* CS_ENT_DROPS and newer types: nothing to do */
    }
    if (rc < 0)
        d->malformed++;
    return 0;
}

/* Record drops the producer counted since the last look. */
static void seg_drops(struct collector *c, struct conn *k, struct seg *s, uint32_t i,
                      uint64_t now_ns)
{
    struct cs_subring *ctl = cs_seg_sub(s->base, i);
    uint64_t d = atomic_load_explicit(&ctl->dropped, memory_order_relaxed);
    struct cs_rec_lost l = {0};

    if (d <= s->drops_seen[i])
        return;
    l.t_start_ns = c->last_commit_ns;
    l.t_end_ns = now_ns;
    l.source = k->pid;
    l.what = 2;
    l.count = d - s->drops_seen[i];
    c->stats.cuda_dropped += l.count;
    s->drops_seen[i] = d;
    collector_emit(c, CS_REC_LOST, k->pid, &l);
}

/* One pass over every sub-ring of @p k (SUB_BUDGET bytes each), then stage
 * what translated; with @p final, stage everything. @return entries seen. */
static long conn_drain(struct collector *c, struct conn *k, uint64_t now_ns, int final)
{
    long seen = 0;

    for (uint32_t si = 0; si < k->nseg; si++) {
        struct seg *s = &k->segs[si];
        struct drain_ctx d = {c, k, s, now_ns, 0, 0};

        for (uint32_t i = 0; i < s->nsub; i++) {
            long r;
            if (s->bad[i])
                continue;
            d.budget = SUB_BUDGET;
            r = cs_ring_consume(cs_seg_sub(s->base, i), cs_seg_data(s->base, i), s->sub_bytes,
                                on_entry, &d);
            if (r < 0) {
                s->bad[i] = 1;
                warn("cudaspy-sampler: pid %" PRIu32 ": ring %" PRIu32 ".%" PRIu32
                     ": malformed entry; ignoring the rest of this ring",
                     k->pid, si, i);
            }
            seen += r > 0 ? r : 0;
            seg_drops(c, k, s, i, now_ns);
        }
        if (d.malformed)
            warn("cudaspy-sampler: pid %" PRIu32 ": %d malformed ring entries skipped", k->pid,
                 d.malformed);
    }
    conn_gpu(c, k);
    conn_nvtx(c, k, now_ns, final);
    conn_translate(k, now_ns, final);
    conn_cut(c, k, now_ns, final);
    return seen;
}

/* ---- Python samples of host code (pysample.h, docs/python.md) ---- */

static int py_intern(void *arg, const char *s, size_t len, uint32_t *id)
{
    return collector_intern(arg, s, len, id);
}

/* A sampling period of @p period_ns, jittered by up to a quarter either
 * way, so that samples do not lock onto a loop of the same period. */
static uint64_t py_period(struct collector *c, uint64_t period_ns)
{
    uint64_t x = c->py_rand ? c->py_rand : 0x9e3779b97f4a7c15ull;

    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c->py_rand = x;
    return period_ns - period_ns / 4 + x % (period_ns / 2 + 1);
}

/* This thread's CPU time: what the samples cost the collector (meta
 * py_samples_cpu_ns), a system call, about what one page read costs. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
        return 0;
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* One sample of the thread of sub-ring @p ctl of process @p k. */
static void py_sample(struct collector *c, struct conn *k, const struct cs_subring *ctl,
                      uint64_t tstate)
{
    struct cs_frame f[PYSAMPLE_FRAMES];
    struct cs_rec_pysample r = {0};
    uint64_t cpu0 = thread_cpu_ns();
    int trunc, n;

    r.tid = atomic_load_explicit(&ctl->owner_tid, memory_order_acquire);
    r.t_start_ns = clock_mono_ns();
    n = pysample_read(k->py, tstate, f, PYSAMPLE_FRAMES, &trunc, py_intern, c);
    r.t_end_ns = clock_mono_ns();
    c->py_cpu_ns += thread_cpu_ns() - cpu0;
    r.pid = k->pid;
    /* the thread exited during the read (its sub-ring given back, maybe to
     * another thread): a fresh-clone CI run kept such a sample of the
     * thread's last frame (threading's Thread._delete) under tid 0 */
    if (n > 0 && (atomic_load_explicit(&ctl->owner_tid, memory_order_acquire) != r.tid ||
                  atomic_load_explicit(&ctl->py_tstate, memory_order_relaxed) != tstate)) {
        c->py_failed++;
        return;
    }
    if (n == -EPERM || n == -EACCES) {
        warn("cudaspy-sampler: pid %" PRIu32 ": cannot read its memory (%s); no Python "
             "samples of its host code", k->pid, strerror(-n));
        warn("hint: let the sampler trace it (kernel.yama.ptrace_scope=0, or "
             "CAP_SYS_PTRACE), or record it with `cudaspy record`, its parent");
    }
    if (n == -EPERM || n == -EACCES || n == -ESRCH) {
        pysample_free(k->py);
        k->py = NULL;
        return;
    }
    if (n <= 0 || cs_store_put_stack(c->st, f, (uint32_t)n, &r.stack_id) < 0) {
        c->py_failed += n < 0;
        return;
    }
    r.nframes = (uint16_t)n;
    r.flags = trunc ? CS_PSF_TRUNC : 0;
    c->py_trunc += (uint64_t)trunc;
    c->py_samples++;
    collector_emit(c, CS_REC_PYSAMPLE, k->pid, &r);
}

/* Sample the threads of @p k whose turn it is and that run host code now
 * (in_call 0): a tick that finds one inside a CUDA call is skipped, so
 * host code is sampled evenly at py_hz, never more right after a call. */
static void conn_pysample(struct collector *c, struct conn *k, uint64_t now_ns)
{
    uint64_t period = NS_PER_S / k->py_hz;

    if ((uint64_t)c->py_threads_last * k->py_hz > PY_ALL_HZ_MAX) /* share PY_ALL_HZ_MAX */
        period = NS_PER_S / PY_ALL_HZ_MAX * c->py_threads_last;
    for (uint32_t si = 0; si < k->nseg && k->py; si++) {
        struct seg *s = &k->segs[si];
        for (uint32_t i = 0; i < s->nsub && k->py; i++) {
            const struct cs_subring *ctl = cs_seg_sub(s->base, i);
            uint64_t ts = atomic_load_explicit(&ctl->py_tstate, memory_order_relaxed);
            if (ts == 0 || atomic_load_explicit(&ctl->owner_tid, memory_order_relaxed) == 0)
                continue;
            c->py_threads++;
            if (s->py_next_ns[i] == 0) /* a new thread: a random phase */
                s->py_next_ns[i] = now_ns + py_period(c, period);
            if (now_ns < s->py_next_ns[i])
                goto due;
            if (!atomic_load_explicit(&ctl->in_call, memory_order_relaxed))
                py_sample(c, k, ctl, ts);
            s->py_next_ns[i] += py_period(c, period); /* on the tick, whenever the pass */
            if (s->py_next_ns[i] <= now_ns)
                s->py_next_ns[i] = now_ns + py_period(c, period);
        due:
            if (c->py_due_ns == 0 || s->py_next_ns[i] < c->py_due_ns)
                c->py_due_ns = s->py_next_ns[i];
        }
    }
}

/* Every process's threads whose sample is due (not during `record
 * --duty`'s off phases: the program runs unrecorded then; not a process
 * whose socket closed: one that exec'd is another program now). */
static void py_samples(struct collector *c, uint64_t now_ns)
{
    c->py_threads_last = c->py_threads; /* rates this pass */
    c->py_threads = 0;
    c->py_due_ns = 0;
    for (size_t i = 0; i < c->nconns && !c->paused; i++)
        if (c->conns[i]->py && c->conns[i]->state == CONN_OPEN)
            conn_pysample(c, c->conns[i], now_ns);
}

/* ---- connections ---- */

static void seg_unmap(struct seg *s)
{
    if (s->base)
        munmap(s->base, s->bytes);
    free(s->drops_seen);
    free(s->bad);
    free(s->py_next_ns);
    memset(s, 0, sizeof(*s));
}

static void conn_free(struct conn *k)
{
    if (k->fd >= 0)
        close(k->fd);
    for (uint32_t i = 0; i < k->nseg; i++)
        seg_unmap(&k->segs[i]);
    free(k->segs);
    free(k->names);
    free(k->stacks);
    free(k->gpu);
    free(k->cov);
    free(k->nvtx);
    free(k->buf);
    pysample_free(k->py);
    free(k);
}

/* Drop connection @p i: drain its rings a last time, stage what is left and
 * mark the process exited unless it still lives (exec, or it closed the
 * socket itself: then keep draining it as a detached entry; @p final, the
 * run's end: drop it, exited only if gone). */
static void conn_end(struct collector *c, size_t i, uint64_t now_ns, int final)
{
    struct conn *k = c->conns[i];

    if (k->fd >= 0) {
        close(k->fd);
        k->fd = -1;
    }
    k->state = CONN_DETACHED;
    if (!final && k->pid && procfs_pid_alive((pid_t)k->pid, k->start_ticks)) {
        conn_drain(c, k, now_ns, 0);
        k->next_check_ns = now_ns + CS_BLK_MAX_AGE_NS;
        return;
    }
    /* as many passes as empty the largest ring once: a process still
     * pushing (attach mode, SIGTERM) must not keep us here forever */
    for (uint64_t pass = 0, max = 2; pass < max && conn_drain(c, k, now_ns, 0) > 0; pass++)
        for (uint32_t si = 0; si < k->nseg; si++)
            if (k->segs[si].sub_bytes / SUB_BUDGET + 2 > max)
                max = k->segs[si].sub_bytes / SUB_BUDGET + 2;
    conn_drain(c, k, now_ns, 1);
    /* at the end, a process can be gone before its socket's close was read
     * (its parent reaped it, not we): gone is exited */
    if (k->pid && (!final || !procfs_pid_alive((pid_t)k->pid, k->start_ticks)))
        collector_exited(c, (pid_t)k->pid, -1, now_ns);
    conn_free(k);
    c->conns[i] = c->conns[--c->nconns];
}

static void conn_bad(struct collector *c, size_t i, const char *why, uint64_t now_ns)
{
    struct conn *k = c->conns[i];

    warn("cudaspy-sampler: connection from pid %" PRIu32 ": %s; dropping it", k->pid, why);
    c->stats.bad_conns++;
    conn_end(c, i, now_ns, 0);
}

static int on_hello(struct collector *c, struct conn *k, const uint8_t *b, size_t n)
{
    struct cs_msg_hello h;
    struct cs_proc p = {0};
    struct ucred cr;
    socklen_t cl = sizeof(cr);

    if (k->pid || n < sizeof(h))
        return -1;
    memcpy(&h, b, sizeof(h));
    if (h.cmdline_len > CS_MSG_CMDLINE_MAX || n != sizeof(h) + h.cmdline_len || h.pid == 0 ||
        (h.clock != CS_CLOCK_MONO && h.clock != CS_CLOCK_TSC))
        return -1;
    /* the kernel's word on who is talking (and in our pid namespace) */
    k->pid = getsockopt(k->fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid > 0
                 ? (uint32_t)cr.pid
                 : h.pid;
    k->start_ticks = h.start_ticks;
    k->clock = h.clock;
    p.pid = k->pid;
    p.ppid = h.ppid;
    p.start_ns = procfs_ticks_to_mono_ns(h.start_ticks);
    p.flags = CS_PF_CUDA;
    p.rank = h.rank;
    p.exit_status = -1;
    memcpy(p.comm, h.comm, sizeof(p.comm) - 1);
    if (h.cmdline_len)
        collector_intern(c, (const char *)b + sizeof(h), h.cmdline_len, &p.cmdline_id);
    collector_proc(c, &p);
    if (c->on_reg)
        c->on_reg(c->on_reg_arg, (pid_t)k->pid);
    return 0;
}

static int grow_segs(struct conn *k)
{
    size_t cap = k->nseg; /* exact-fit growth: segments are few */
    return cs_grow((void **)&k->segs, &cap, k->nseg + 1, sizeof(*k->segs));
}

/* Tell every thread of segment @p s to record (0) or not (1). */
static void seg_pause(struct seg *s, uint32_t paused)
{
    for (uint32_t i = 0; i < s->nsub; i++)
        atomic_store_explicit(&cs_seg_sub(s->base, i)->paused, paused, memory_order_relaxed);
}

/* Does @p k's shim pause its own rings (cs_seg_hdr.self_capture)? Its
 * segments say so before its marks reach this pass. */
static int conn_self_capture(struct conn *k)
{
    for (uint32_t s = 0; s < k->nseg && !k->self_capture; s++)
        k->self_capture = atomic_load_explicit(
            &((struct cs_seg_hdr *)k->segs[s].base)->self_capture, memory_order_seq_cst) != 0;
    return k->self_capture;
}

/* Bring @p k's newest segment to the run's state. Under a capture the
 * program bounds, every shim starts paused (CUDASPY_CAPTURE) and one that
 * bounds ranges keeps its own state: only an open range is passed on, and
 * not to those. */
static void seg_join(struct collector *c, struct conn *k)
{
    if (conn_self_capture(k) || (c->cap.o.program && c->paused))
        return;
    seg_pause(&k->segs[k->nseg - 1], c->paused);
}

/* Map a segment after checking the message, the memfd and its header. */
static int on_seg(struct conn *k, const uint8_t *b, size_t n, int fd)
{
    struct cs_msg_seg m;
    struct seg s = {0};
    struct stat st;
    const struct cs_seg_hdr *h;
    int seals;

    if (!k->pid || fd < 0 || n != sizeof(m))
        return -1;
    memcpy(&m, b, sizeof(m));
    if (m.nsub == 0 || m.nsub > SEG_NSUB_MAX || m.sub_bytes < 4096 ||
        (m.sub_bytes & (m.sub_bytes - 1)) || m.seg_bytes != cs_seg_bytes(m.nsub, m.sub_bytes) ||
        m.seg_bytes > SEG_BYTES_MAX || fstat(fd, &st) < 0 || (uint64_t)st.st_size != m.seg_bytes)
        return -1;
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) /* else it could shrink under us: SIGBUS */
        return -1;
    s.base = mmap(NULL, m.seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s.base == MAP_FAILED)
        return -1;
    s.bytes = m.seg_bytes;
    h = s.base;
    if (h->magic != CS_RING_MAGIC || h->version != CS_RING_VERSION || h->nsub != m.nsub ||
        h->sub_bytes != m.sub_bytes || (h->clock != CS_CLOCK_MONO && h->clock != CS_CLOCK_TSC)) {
        munmap(s.base, s.bytes);
        return -1;
    }
    s.nsub = m.nsub;
    s.sub_bytes = m.sub_bytes;
    s.clock = h->clock;
    s.drops_seen = calloc(s.nsub, sizeof(*s.drops_seen));
    s.bad = calloc(s.nsub, 1);
    s.py_next_ns = calloc(s.nsub, sizeof(*s.py_next_ns));
    if (s.drops_seen == NULL || s.bad == NULL || s.py_next_ns == NULL || grow_segs(k) < 0) {
        seg_unmap(&s);
        return -1;
    }
    k->segs[k->nseg++] = s;
    if (k->nseg == 1 && h->py.magic == CS_PY_LAYOUT_MAGIC && h->py.sample_hz) {
        k->py = pysample_new(k->pid, &h->py); /* NULL: a layout we cannot read, no samples */
        k->py_hz = h->py.sample_hz > 1000 ? 1000 : h->py.sample_hz;
    }
    return 0;
}

/* Read one message from connection @p i. @return 1 handled, 0 nothing more
 * now, -1 the connection ended (and was removed). */
static int conn_read_one(struct collector *c, size_t i, uint64_t now_ns)
{
    struct conn *k = c->conns[i];
    uint8_t b[sizeof(struct cs_msg_hello) + CS_MSG_CMDLINE_MAX + 8];
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int) * 8)];
    } cm;
    struct iovec iov = {b, sizeof(b)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
                        .msg_controllen = sizeof(cm.b)};
    struct cs_msg_hdr h;
    int fd = -1, nfd = 0, rc = -1;
    ssize_t n = recvmsg(k->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        conn_end(c, i, now_ns, 0);
        return -1;
    }
    for (struct cmsghdr *ch = CMSG_FIRSTHDR(&mh); ch; ch = CMSG_NXTHDR(&mh, ch)) {
        if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
            continue;
        for (size_t j = 0; j < (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int); j++) {
            int f;
            memcpy(&f, CMSG_DATA(ch) + j * sizeof(int), sizeof(int));
            if (nfd++ == 0)
                fd = f;
            else
                close(f);
        }
    }
    if ((size_t)n >= sizeof(h) && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && nfd <= 1) {
        memcpy(&h, b, sizeof(h));
        if (h.magic == CS_MSG_MAGIC && h.version == CS_RING_VERSION) {
            if (h.type == CS_MSG_HELLO && fd < 0)
                rc = on_hello(c, k, b, (size_t)n);
            else if (h.type == CS_MSG_SEG && (rc = on_seg(k, b, (size_t)n, fd)) == 0)
                seg_join(c, k);
        }
    }
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        conn_bad(c, i, "malformed message", now_ns);
        return -1;
    }
    return 1;
}

/* Read every queued message of connection @p i. @return -1 if it ended. */
static int conn_read(struct collector *c, size_t i, uint64_t now_ns)
{
    int rc;

    while ((rc = conn_read_one(c, i, now_ns)) > 0)
        ;
    return rc;
}

static void accept_all(struct collector *c)
{
    for (;;) {
        int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct conn *k;

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        k = calloc(1, sizeof(*k));
        if (k == NULL || cs_grow((void **)&c->conns, &c->conns_cap, c->nconns + 1,
                              sizeof(*c->conns)) < 0) {
            free(k);
            close(fd);
            continue;
        }
        k->fd = fd;
        k->state = CONN_OPEN;
        c->conns[c->nconns++] = k;
        c->stats.conns++;
    }
}

int collector_pollfds(struct collector *c, struct pollfd *fds, int max)
{
    int n = 0;

    if (c->lfd >= 0 && n < max)
        fds[n++] = (struct pollfd){c->lfd, POLLIN, 0};
    for (size_t i = 0; i < c->nconns && n < max; i++)
        if (c->conns[i]->fd >= 0)
            fds[n++] = (struct pollfd){c->conns[i]->fd, POLLIN, 0};
    return n;
}

/* Which open connections have something to read (one poll, no waiting). */
static int poll_conns(struct collector *c)
{
    if (cs_grow((void **)&c->pfds, &c->pfds_cap, c->nconns + 1, sizeof(*c->pfds)) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < c->nconns; i++)
        c->pfds[i] = (struct pollfd){c->conns[i]->fd, POLLIN, 0}; /* fd -1 is skipped */
    return poll(c->pfds, c->nconns, 0) < 0 ? -errno : 0;
}

int collector_step(struct collector *c, uint64_t now_ns)
{
    size_t i;

    if (c->moved)
        c->moved_ns = now_ns;
    c->moved = 0;
    c->backlog = 0;
    accept_all(c);
    if (poll_conns(c) == 0) {
        /* walk backwards: conn_end moves the last entry into the slot */
        for (i = c->nconns; i-- > 0;)
            if (c->pfds[i].revents)
                conn_read(c, i, now_ns);
    }
    for (i = c->nconns; i-- > 0;) {
        struct conn *k = c->conns[i];
        if (k->state == CONN_DETACHED && now_ns >= k->next_check_ns)
            conn_end(c, i, now_ns, 0);
        else
            conn_drain(c, k, now_ns, 0);
    }
    py_samples(c, now_ns);
    return c->store_failed ? CS_E_LMDB : 0;
}

int collector_live_conns(struct collector *c)
{
    return (int)c->nconns;
}

/* Phase of @p now_ns under o.duty_ns and the capture ranges: 0 = record,
 * 1 = pause. */
static uint32_t duty_phase(const struct collector *c, uint64_t now_ns)
{
    if (c->o.duty_ns)
        return (uint32_t)(((now_ns - c->t_start_ns) / c->o.duty_ns) & 1);
    return !capture_want(&c->cap, now_ns);
}

int collector_wait_ms(struct collector *c)
{
    /* a producer that pushes in bursts leaves passes with nothing new:
     * waiting 10 ms after one of those cost a quarter of a busy ring */
    int ms = c->backlog                                          ? 0
             : c->moved || clock_mono_ns() - c->moved_ns < IDLE_NS ? 1
                                                               : 10;

    if (c->py_due_ns) { /* the next Python sample, at most 1 ms late */
        uint64_t now = clock_mono_ns();
        uint64_t left = c->py_due_ns > now ? (c->py_due_ns - now + 999999) / 1000000 : 0;
        if ((uint64_t)ms > left)
            ms = (int)left;
    }
    if (c->o.duty_ns) { /* wake up at the next phase boundary, at most 1 ms late */
        uint64_t in = (clock_mono_ns() - c->t_start_ns) % c->o.duty_ns;
        uint64_t left = (c->o.duty_ns - in + 999999) / 1000000;
        if ((uint64_t)ms > left)
            ms = (int)left;
    }
    if (capture_active(&c->cap)) { /* the delay's or the duration's end, at most 1 ms late */
        uint64_t left = capture_next_ns(&c->cap, clock_mono_ns());
        left = left == UINT64_MAX ? UINT64_MAX : (left + 999999) / 1000000;
        if ((uint64_t)ms > left)
            ms = (int)left;
    }
    return ms;
}

int collector_paused(struct collector *c)
{
    return (int)c->paused;
}

/* The capture ranges so far into the meta (capture_ranges), an open one
 * ending at @p now_ns: a reader of a run being written sees them too. */
static void capture_meta(struct collector *c, uint64_t now_ns)
{
    size_t n = capture_ranges_str(&c->cap, now_ns, NULL, 0) + 1;
    char *s = malloc(n);

    if (s == NULL)
        return;
    capture_ranges_str(&c->cap, now_ns, s, n);
    collector_meta(c, "capture_ranges", s);
    free(s);
}

/* Start or end an off phase: every mapped segment of every process but
 * those whose shims set their own as they mark their bounds (this pass may
 * read a mark after the shim has already closed the range again). */
static void duty_set(struct collector *c, uint64_t now_ns)
{
    uint32_t ph = duty_phase(c, now_ns);

    if (ph == c->paused)
        return;
    c->paused = ph;
    for (size_t i = 0; i < c->nconns; i++) {
        if (conn_self_capture(c->conns[i]))
            continue;
        for (uint32_t s = 0; s < c->conns[i]->nseg; s++)
            seg_pause(&c->conns[i]->segs[s], ph);
    }
    if (capture_active(&c->cap)) {
        capture_set(&c->cap, !ph, now_ns);
        capture_meta(c, now_ns);
    }
}

static void duty_tick(struct collector *c, uint64_t now_ns)
{
    duty_set(c, now_ns);
}

/* A bound the program set at @p t_ns: never before the last range's
 * edge (another process's bound may come late), never in the future. */
static void capture_mark_at(struct collector *c, int on, uint64_t t_ns)
{
    uint64_t now = clock_mono_ns();

    if (c->cap.n) {
        const struct capture_range *r = &c->cap.r[c->cap.n - 1];
        uint64_t edge = r->t1_ns ? r->t1_ns : r->t0_ns;
        t_ns = t_ns < edge ? edge : t_ns;
    }
    capture_mark(&c->cap, on);
    duty_set(c, t_ns > now ? now : t_ns);
}

int collector_flight_keep(struct collector *c, uint64_t t0_ns, uint64_t t1_ns)
{
    char v[48];

    if (c->fl == NULL)
        return -EINVAL;
    cs_store_evict_keep(c->st, t0_ns, t1_ns);
    snprintf(v, sizeof(v), "%" PRIu64 "-%" PRIu64, t0_ns, t1_ns);
    collector_meta(c, "flight_kept", v);
    return 0;
}

void collector_capture_signal(struct collector *c, int on, uint64_t now_ns)
{
    capture_signal(&c->cap, on);
    duty_tick(c, now_ns);
}

/* Stage dirty process and thread rows. */
static void stage_tables(struct collector *c)
{
    for (size_t i = 0; i < c->nprocs; i++)
        if (c->procs[i].dirty && cs_store_put_proc(c->st, &c->procs[i].p) == 0)
            c->procs[i].dirty = 0;
    for (size_t i = 0; i < c->nthr; i++)
        if (c->thr[i].dirty && cs_store_put_thread(c->st, &c->thr[i].t) == 0)
            c->thr[i].dirty = 0;
}

static void meta_clock(struct collector *c)
{
    collector_meta_u64(c, "tsc_hz", clock_tsc_hz(&c->cal));
    collector_meta_u64(c, "tsc_ref_ticks", c->cal.tsc1);
    collector_meta_u64(c, "tsc_ref_ns", c->cal.ns1);
}

/* The host's clock pairs so far (hostclock.h) into the meta. */
static void meta_pairs(struct collector *c)
{
    char buf[HC_MAX * 64];

    hostclock_str(&c->hc, buf, sizeof(buf));
    collector_meta(c, "clock_pairs", buf);
}

/* LMDB reports a short write as EIO; tell the user when it was space. */
static int disk_nearly_full(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    struct statvfs fs;

    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    return statvfs(dir, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < (16u << 20);
}

/* Most bytes staged while the commit thread still writes: a capped run's
 * eviction budget keeps room for a few commits, so theirs stay small. */
static size_t stage_max(const struct collector *c)
{
    uint64_t cap = c->fl ? c->o.max_size_bytes / 8 : STAGE_MAX;

    return cap < STAGE_MAX ? (size_t)cap : STAGE_MAX;
}

/* Commit what is staged: in the store's commit thread unless @p wait (or
 * it cannot run), so the loop goes on draining rings while LMDB writes.
 * While the thread still writes the last one, staging goes on and the next
 * tick tries again, unless STAGE_MAX is staged: then wait for it. */
static int commit(struct collector *c, uint64_t now_ns, int wait)
{
    int rc = -EAGAIN;

    if (c->store_failed)
        return CS_E_LMDB;
    if (!wait && c->bg_commit && cs_store_commit_busy(c->st) &&
        cs_store_pending(c->st) < stage_max(c))
        return 0;
    /* every record staged so far goes into this commit, however young its
     * block: a SIGKILLed collector then loses at most one commit interval
     * and a commit's write, not a block's age on top (130 ms at 10k
     * records/s before) */
    for (size_t i = 0; i < c->nconns; i++)
        conn_cut(c, c->conns[i], now_ns, 1);
    for (unsigned k = CS_REC_CUDA + 1; k < CS_REC_KIND_COUNT; k++)
        host_flush(c, k);
    stage_tables(c);
    collector_meta_u64(c, "cuda_dropped", c->stats.cuda_dropped);
    rc = c->fl ? flight_stage(c->fl, c->st) : 0;
    if (rc == 0 && c->fl) /* a capped run evicts after each commit, in its thread */
        rc = flight_evict(c->fl, c->st);
    if (rc == 0) {
        rc = !wait && c->bg_commit ? cs_store_commit_start(c->st) : -1;
        if (rc < 0) /* waiting asked for, busy past the stage limit, or the thread failed */
            rc = cs_store_commit(c->st);
    }
    c->last_commit_ns = now_ns;
    if (rc < 0) {
        c->store_failed = 1;
        warn("cudaspy-sampler: %s: cannot commit (%s); recording stopped", c->o.path,
             cs_strerror(rc));
        if (disk_nearly_full(c->o.path))
            warn("hint: the file system holding %s is full", c->o.path);
    }
    return rc;
}

/* The store's flush thread syncs the file (cs_store_flush_start); here,
 * at the same interval, free dead readers' slots and say once if a flush
 * failed. */
static int flush_check(struct collector *c)
{
    int rc = cs_store_flush_error(c->st);

    cs_store_readers_check(c->st);
    if (rc < 0 && !c->flush_warned) {
        c->flush_warned = 1;
        warn("cudaspy-sampler: %s: cannot flush to disk (%s)", c->o.path, cs_strerror(rc));
    }
    return rc;
}

int collector_tick(struct collector *c, uint64_t now_ns)
{
    int rc = 0;

    duty_tick(c, now_ns);
    if (hostclock_tick(&c->hc, now_ns, 0))
        meta_pairs(c);
    if (now_ns - c->last_cal_ns >= NS_PER_S / 10) {
        clock_cal_update(&c->cal);
        c->last_cal_ns = now_ns;
    }
    for (unsigned k = CS_REC_CUDA + 1; k < CS_REC_KIND_COUNT; k++)
        if (c->host[k].n && now_ns - c->host[k].t0_ns >= CS_BLK_MAX_AGE_NS)
            host_flush(c, k);
    if (now_ns - c->last_commit_ns >= c->o.commit_ns || cs_store_pending(c->st) >= COMMIT_BYTES)
        rc = commit(c, now_ns, 0);
    if (rc == 0 && now_ns - c->last_sync_ns >= c->o.sync_ns) {
        rc = c->flushing ? flush_check(c) : cs_store_sync(c->st);
        c->last_sync_ns = now_ns;
    }
    return rc;
}

/* CPU time this process used so far (user + system). */
static uint64_t self_cpu_ns(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) < 0)
        return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * NS_PER_S +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000;
}

int collector_finish(struct collector *c, int clean, uint64_t now_ns)
{
    int rc;

    accept_all(c);
    for (size_t i = c->nconns; i-- > 0;)
        if (c->conns[i]->fd >= 0)
            conn_read(c, i, now_ns);
    while (c->nconns)
        conn_end(c, c->nconns - 1, now_ns, 1);
    for (unsigned k = CS_REC_CUDA + 1; k < CS_REC_KIND_COUNT; k++)
        host_flush(c, k);
    clock_cal_update(&c->cal);
    meta_clock(c);
    hostclock_tick(&c->hc, now_ns, 1);
    meta_pairs(c);
    if (capture_active(&c->cap)) {
        capture_set(&c->cap, 0, now_ns);
        capture_meta(c, now_ns);
        collector_meta_u64(c, "capture_outside", c->capture_outside);
    }
    collector_meta_u64(c, "t_end_ns", now_ns);
    collector_meta_u64(c, "cuda_records", c->stats.cuda_records);
    collector_meta_u64(c, "collector_cpu_ns", self_cpu_ns());
    collector_meta_u64(c, "host_records", c->stats.host_records);
    if (c->py_samples || c->py_failed) {
        collector_meta_u64(c, "py_samples", c->py_samples);
        collector_meta_u64(c, "py_samples_failed", c->py_failed);
        collector_meta_u64(c, "py_samples_truncated", c->py_trunc);
        collector_meta_u64(c, "py_samples_cpu_ns", c->py_cpu_ns);
    }
    collector_meta_u64(c, "clean_shutdown", clean ? 1 : 0);
    rc = commit(c, now_ns, 1);
    if (rc == 0)
        rc = cs_store_sync(c->st);
    return rc;
}

void collector_stats(struct collector *c, struct collector_stats *st)
{
    *st = c->stats;
    st->write_failed = c->store_failed;
}

const char *collector_addr(struct collector *c)
{
    return c->addr;
}

void collector_on_register(struct collector *c, void (*fn)(void *arg, pid_t pid), void *arg)
{
    c->on_reg = fn;
    c->on_reg_arg = arg;
}

struct collector *collector_new(void)
{
    struct collector *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->lfd = -1;
    c->st = cs_store_new();
    if (c->st == NULL) {
        free(c);
        return NULL;
    }
    return c;
}

static int listen_on(struct collector *c, struct cs_err *err)
{
    struct sockaddr_un sa;
    socklen_t len;
    struct stat st;
    int rc = cs_sockaddr(c->addr, &sa, &len);

    if (rc < 0)
        return cs_err_set(err, rc, "%s: bad socket address", c->addr);
    if (c->addr[0] != '@' && stat(c->addr, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(c->addr); /* stale socket from an earlier run */
    c->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c->lfd < 0)
        return cs_err_set(err, -errno, "socket: %s", strerror(errno));
    if (bind(c->lfd, (struct sockaddr *)&sa, len) < 0 || listen(c->lfd, 512) < 0) {
        rc = -errno;
        close(c->lfd);
        c->lfd = -1;
        return cs_err_set(err, rc, "%s: cannot listen (%s)", c->addr, strerror(-rc));
    }
    return 0;
}

static void meta_start(struct collector *c)
{
    char host[256], boot[64];

    if (hostclock_init(&c->hc, c->t_start_ns) < 0)
        warn("cudaspy-sampler: CUDASPY_TEST_REALTIME_SHIFT: want NS[:PPM]; ignored");
    hostclock_host(host, sizeof(host));
    hostclock_boot_id(boot, sizeof(boot));
    collector_meta(c, "host", host);
    if (*boot)
        collector_meta(c, "boot_id", boot);
    /* who writes it: an analyzer started before the end waits for this
     * process (model.c, "a run still being written") */
    collector_meta_u64(c, "collector_pid", (uint64_t)getpid());
    collector_meta_u64(c, "t_start_ns", c->t_start_ns);
    collector_meta_u64(c, "t_end_ns", 0);
    collector_meta(c, "clock", "monotonic");
    collector_meta_u64(c, "realtime_offset_ns", hostclock_rt_offset(&c->hc));
    meta_pairs(c);
    collector_meta_u64(c, "cuda_dropped", 0);
    collector_meta_u64(c, "host_lost", 0);
    if (c->o.duty_ns)
        collector_meta_u64(c, "duty_ns", c->o.duty_ns);
    if (capture_active(&c->cap)) {
        char mode[96];
        capture_mode_str(&c->cap, mode, sizeof(mode));
        collector_meta(c, "capture", mode);
        capture_meta(c, c->t_start_ns);
    }
    collector_meta_u64(c, "clean_shutdown", 0);
    meta_clock(c);
}

int collector_open(struct collector *c, const struct collector_opts *o, struct cs_err *err)
{
    struct cs_store_opts so = {.map_bytes = o->map_bytes, .max_map_bytes = o->max_map_bytes};
    int rc;

    c->o = *o;
    if (c->o.commit_ns == 0)
        c->o.commit_ns = COMMIT_NS;
    if (c->o.sync_ns == 0)
        c->o.sync_ns = 5 * NS_PER_S;
    if (o->listen)
        snprintf(c->addr, sizeof(c->addr), "%s", o->listen);
    else
        snprintf(c->addr, sizeof(c->addr), "@cudaspy-%d-%08lx", (int)getpid(),
                 (unsigned long)(clock_mono_ns() ^ ((uint64_t)getpid() << 20)) & 0xffffffff);
    clock_cal_init(&c->cal);
    c->t_start_ns = c->last_commit_ns = c->last_sync_ns = c->last_cal_ns = clock_mono_ns();
    /* --duty measures recording's cost: no capture ranges with it (main.c) */
    capture_init(&c->cap, o->duty_ns ? &(struct capture_opts){0} : &o->capture, c->t_start_ns);
    c->paused = duty_phase(c, c->t_start_ns); /* before any shim maps a segment */
    if (capture_active(&c->cap) && !c->paused)
        capture_set(&c->cap, 1, c->t_start_ns);
    rc = cs_store_open(c->st, o->path, &so, err);
    if (rc < 0)
        return rc;
    if (o->max_size_bytes) {
        c->fl = flight_new(o->max_size_bytes, c->t_start_ns);
        rc = c->fl ? flight_open(c->fl, c->st) : -ENOMEM;
        if (rc < 0)
            return cs_err_set(err, rc, "%s: cannot start the size cap (%s)", o->path,
                              cs_strerror(rc));
    }
    rc = listen_on(c, err);
    if (rc < 0)
        return rc;
    meta_start(c);
    return cs_store_commit(c->st);
}

int collector_flush_start(struct collector *c)
{
    /* a slow fdatasync must not hold up draining: 90-100 ms on the dev VM
     * dropped 0.7 % of a 300k calls/s loop's records */
    int rc = cs_store_flush_start(c->st, c->o.sync_ns);

    c->flushing = rc == 0;
    c->bg_commit = 1; /* its thread starts at the first commit, after the drop too */
    return rc;
}

void collector_free(struct collector *c)
{
    if (c == NULL)
        return;
    while (c->nconns)
        conn_free(c->conns[--c->nconns]);
    if (c->lfd >= 0) {
        close(c->lfd);
        if (c->addr[0] && c->addr[0] != '@')
            unlink(c->addr);
    }
    cs_store_free(c->st);
    flight_free(c->fl);
    capture_free(&c->cap);
    hostclock_close(&c->hc);
    for (unsigned k = 0; k < CS_REC_KIND_COUNT; k++)
        free(c->host[k].buf);
    free(c->conns);
    free(c->pfds);
    free(c->procs);
    free(c->thr);
    idx_free(&c->proc_idx);
    idx_free(&c->thr_idx);
    free(c);
}
