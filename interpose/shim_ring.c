/* shim_ring.c: the ring client of shim_ring.h. Owns the process's socket to
 * the collector, its memfd segments, the claim and release of sub-rings and
 * the fork-child reset. Everything here runs in the traced process: no
 * stdio, no stdout, errno preserved, fds O_CLOEXEC, sends never raise
 * SIGPIPE. The protocol is include/cudaspy/ring.h (docs/ring.md). */
#include <errno.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <stdio.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cudaspy/sockaddr.h"
#include "shim_ring.h"

#define SEG_MAX        256 /* segments per process: 4096 threads at 16 sub-rings */
#define SEG_NSUB       16
#define RING_KB_DEF    1024
#define SEND_TRIES     50  /* x 100 ms waiting for socket space */

__thread struct shim_thread shim_t_ __attribute__((tls_model("initial-exec")));
struct shim_hot shim_hot_ = {.name_epoch = 1, .name_gen = 1, .gpu_next = UINT64_MAX};

static struct {
    pthread_mutex_t lock; /* everything below; slow path only */
    int fd;               /* socket to the collector, -1 = none */
    int tried;            /* connect attempted in this process */
    uint32_t start_paused; /* new sub-rings start paused (start_paused()) */
    uint32_t self_capture; /* this shim bounds capture ranges (cs_seg_hdr) */
    uint32_t pid;
    void *seg[SEG_MAX];
    uint64_t seg_bytes[SEG_MAX];
    uint32_t nseg;
    uint32_t sub_bytes;
    char addr[108];
    int (*autostart)(char *addr, size_t n);
    void (*py_publish)(struct cs_py_layout *out); /* shim_ring_set_py() */
    uintptr_t (*py_tstate)(void);
    _Atomic uint32_t epoch; /* registrations so far (see shim_ring_epoch) */
    pthread_key_t key;
    int key_ok;
    int atfork_ok;
    _Atomic int warned;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static uint32_t sys_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

uint32_t shim_ring_tid_slow(void)
{
    int e = errno;

    shim_t_.tid = sys_gettid();
    errno = e;
    return shim_t_.tid;
}

/* Decimal @p v into @p p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char t[24];
    int n = 0;

    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = t[--n];
    return p;
}

int shim_ring_enabled(void)
{
    return !atomic_load_explicit(&shim_ring_off_, memory_order_relaxed);
}

/* One line "cudaspy[PID]: <what><msg>" on stderr, without stdio; errno kept. */
static void ring_say(const char *what, const char *msg)
{
    char line[256], *p = line;
    size_t w = strlen(what), n = strlen(msg);
    int e = errno;

    if (w > 40)
        w = 40;
    if (n > 180)
        n = 180;
    memcpy(p, "cudaspy[", 8);
    p = put_u64(p + 8, (uint64_t)getpid());
    memcpy(p, "]: ", 3);
    p += 3;
    memcpy(p, what, w);
    p += w;
    memcpy(p, msg, n);
    p += n;
    *p++ = '\n';
    if (write(2, line, (size_t)(p - line)) < 0)
        (void)0;
    errno = e;
}

void shim_ring_stop(const char *why)
{
    atomic_store(&shim_ring_off_, 1);
    if (atomic_exchange(&g.warned, 1))
        return;
    ring_say("recording stopped: ", why);
}

void shim_ring_set_sock(const char *addr)
{
    pthread_mutex_lock(&g.lock);
    strncpy(g.addr, addr, sizeof(g.addr) - 1);
    g.addr[sizeof(g.addr) - 1] = '\0';
    pthread_mutex_unlock(&g.lock);
}

void shim_ring_set_autostart(int (*fn)(char *addr, size_t n))
{
    pthread_mutex_lock(&g.lock);
    g.autostart = fn;
    pthread_mutex_unlock(&g.lock);
}

void shim_ring_set_py(void (*publish)(struct cs_py_layout *out), uintptr_t (*tstate)(void))
{
    pthread_mutex_lock(&g.lock);
    g.py_publish = publish;
    g.py_tstate = tstate;
    pthread_mutex_unlock(&g.lock);
}

/* Read up to @p n - 1 bytes of a small file; returns bytes read or -1. */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got, total = 0;

    if (fd < 0)
        return -1;
    while ((size_t)total < n - 1 &&
           ((got = read(fd, buf + total, n - 1 - (size_t)total)) > 0 || (got < 0 && errno == EINTR)))
        if (got > 0)
            total += got;
    close(fd);
    buf[total] = '\0';
    return total;
}

static uint32_t clock_init_slow(void) __attribute__((cold, noinline));
static uint32_t clock_init_slow(void)
{
    const char *env = getenv("CUDASPY_CLOCK");
    uint32_t clk = CS_CLOCK_MONO;
    char src[32];
    int e = errno;

#if defined(__x86_64__) || defined(__i386__)
    if (env && strcmp(env, "tsc") == 0)
        clk = CS_CLOCK_TSC;
    else if (env == NULL || strcmp(env, "mono") != 0) {
        if (read_small("/sys/devices/system/clocksource/clocksource0/current_clocksource", src,
                       sizeof(src)) >= 3 &&
            strncmp(src, "tsc", 3) == 0 && (src[3] == '\n' || src[3] == '\0'))
            clk = CS_CLOCK_TSC;
    }
#else
    (void)env;
    (void)src;
#endif
    __atomic_store_n(&shim_ring_clock_, clk, __ATOMIC_RELAXED);
    errno = e;
    return clk;
}

uint64_t shim_ring_now_slow(void)
{
    struct timespec ts;

#if defined(__x86_64__) || defined(__i386__)
    if (shim_ring_clock() == CS_CLOCK_TSC) /* it was undecided */
        return __rdtsc();
#endif
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t shim_ring_clock(void)
{
    uint32_t c = __atomic_load_n(&shim_ring_clock_, __ATOMIC_RELAXED);
    return c ? c : clock_init_slow();
}

uint32_t shim_ring_epoch(void)
{
    return atomic_load_explicit(&g.epoch, memory_order_acquire);
}

uint64_t shim_ring_dropped(void)
{
    uint64_t n = 0;

    pthread_mutex_lock(&g.lock);
    for (uint32_t s = 0; s < g.nseg; s++)
        for (uint32_t i = 0; i < SEG_NSUB; i++)
            n += atomic_load_explicit(&cs_seg_sub(g.seg[s], i)->dropped, memory_order_relaxed);
    pthread_mutex_unlock(&g.lock);
    return n;
}

/* ---- socket ---- */

/* Send one datagram (optionally with an fd); waits for socket space up to
 * SEND_TRIES x 100 ms since registration must not be lost. */
static int send_msg(const void *buf, size_t len, int fd)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } cm;
    struct iovec iov = {(void *)buf, len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

    if (fd >= 0) {
        memset(&cm, 0, sizeof(cm));
        mh.msg_control = cm.b;
        mh.msg_controllen = sizeof(cm.b);
        cm.h.cmsg_level = SOL_SOCKET;
        cm.h.cmsg_type = SCM_RIGHTS;
        cm.h.cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(&cm.h), &fd, sizeof(int));
    }
    for (int tries = 0; tries < SEND_TRIES;) {
        struct pollfd p = {g.fd, POLLOUT, 0};
        if (sendmsg(g.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return -errno;
        poll(&p, 1, 100);
        tries++;
    }
    return -ETIMEDOUT;
}

/* Field 22 of /proc/self/stat: start time in clock ticks since boot. */
static uint64_t self_start_ticks(void)
{
    char buf[1024], *p;
    int field = 2;

    if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0 || (p = strrchr(buf, ')')) == NULL)
        return 0;
    for (p++; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    return strtoull(p, NULL, 10);
}

/* Do this process's rings start paused? The run records only capture
 * ranges and none may be open now: CUDASPY_PAUSED=1 (the sampler of
 * `record --delay/--capture` sets it), or, for LD_PRELOAD, CUDASPY_CAPTURE
 * or CUDASPY_DELAY. The collector sets the true state once it maps the
 * segment; until then nothing is recorded that it would have to drop. */
static uint32_t start_paused(void)
{
    const char *p = getenv("CUDASPY_PAUSED"), *c = getenv("CUDASPY_CAPTURE"),
               *d = getenv("CUDASPY_DELAY");

    return (p && strcmp(p, "1") == 0) || (c && *c) || (d && *d && strtod(d, NULL) > 0);
}

static uint32_t env_rank(const char *name)
{
    const char *v = getenv(name);
    char *end;
    unsigned long r;

    if (v == NULL || *v < '0' || *v > '9')
        return CS_RANK_NONE;
    r = strtoul(v, &end, 10);
    return *end == '\0' && r < CS_RANK_NONE ? (uint32_t)r : CS_RANK_NONE;
}

static int send_hello(void)
{
    struct {
        struct cs_msg_hello m;
        char cmd[CS_MSG_CMDLINE_MAX];
    } b;
    struct timespec ts;
    ssize_t n;

    memset(&b, 0, sizeof(b));
    b.m.h.magic = CS_MSG_MAGIC;
    b.m.h.version = CS_RING_VERSION;
    b.m.h.type = CS_MSG_HELLO;
    b.m.pid = g.pid;
    b.m.ppid = (uint32_t)getppid();
    b.m.start_ticks = self_start_ticks();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    b.m.t_hello_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    b.m.clock = shim_ring_clock();
    b.m.rank = env_rank("RANK");
    b.m.local_rank = env_rank("LOCAL_RANK");
    if (read_small("/proc/self/comm", b.cmd, sizeof(b.m.comm)) > 0)
        memcpy(b.m.comm, b.cmd, sizeof(b.m.comm) - 1);
    b.m.comm[strcspn(b.m.comm, "\n")] = '\0';
    n = read_small("/proc/self/cmdline", b.cmd, sizeof(b.cmd));
    while (n > 0 && b.cmd[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (b.cmd[i] == '\0')
            b.cmd[i] = ' ';
    b.m.cmdline_len = n > 0 ? (uint32_t)n : 0;
    return send_msg(&b, sizeof(b.m) + b.m.cmdline_len, -1);
}

/* Connect to the collector and register; under g.lock. */
static int connect_collector(void)
{
    struct sockaddr_un sa;
    socklen_t len;
    const char *env;
    int rc;

    g.tried = 1;
    g.pid = (uint32_t)getpid();
    g.start_paused = start_paused();
    if (g.addr[0] == '\0' && (env = getenv(CS_ENV_SOCK)) != NULL && *env)
        strncpy(g.addr, env, sizeof(g.addr) - 1);
    if (g.addr[0] == '\0' && (g.autostart == NULL || g.autostart(g.addr, sizeof(g.addr)) < 0))
        return -ENOENT;
    if (cs_sockaddr(g.addr, &sa, &len) < 0)
        return -EINVAL;
    g.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (g.fd < 0)
        return -errno;
    do
        rc = connect(g.fd, (struct sockaddr *)&sa, len);
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        rc = send_hello();
    else
        rc = -errno;
    if (rc == 0)
        atomic_fetch_add(&g.epoch, 1);
    if (rc < 0) {
        close(g.fd);
        g.fd = -1;
    }
    return rc;
}

/* $CUDASPY_RING_KB, 4..1048576 KiB; anything else (letters, a sign, out
 * of range) gets one warning and the default. */
static unsigned long ring_kb(void)
{
    const char *v = getenv("CUDASPY_RING_KB");
    unsigned long kb;
    char *end, msg[128];
    int e = errno;

    if (v == NULL || *v == '\0')
        return RING_KB_DEF;
    errno = 0;
    kb = strtoul(v, &end, 10);
    if (*v >= '0' && *v <= '9' && *end == '\0' && errno == 0 && kb >= 4 && kb <= (1ul << 20)) {
        errno = e;
        return kb;
    }
    snprintf(msg, sizeof(msg), "'%.32s' is not a size from 4 to 1048576 KiB; using %d", v,
             RING_KB_DEF);
    ring_say("warning: CUDASPY_RING_KB=", msg);
    errno = e;
    return RING_KB_DEF;
}

static uint32_t ring_bytes(void)
{
    unsigned long kb = ring_kb();
    uint32_t b = 4096;

    while ((uint64_t)b < (uint64_t)kb * 1024)
        b <<= 1;
    return b;
}

/* Create, map and register a new segment; under g.lock. */
static int seg_create(void)
{
    uint32_t sub = g.sub_bytes ? g.sub_bytes : (g.sub_bytes = ring_bytes());
    uint64_t bytes = cs_seg_bytes(SEG_NSUB, sub);
    struct cs_msg_seg m = {{CS_MSG_MAGIC, CS_RING_VERSION, CS_MSG_SEG}, 0, SEG_NSUB, sub, 0, 0};
    struct cs_seg_hdr *h;
    void *p;
    int fd, rc;

    if (g.nseg == SEG_MAX)
        return -ENOSPC;
    fd = memfd_create("cudaspy-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)bytes) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
        (p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        rc = -errno;
        close(fd);
        return rc;
    }
    h = p;
    h->magic = CS_RING_MAGIC;
    h->version = CS_RING_VERSION;
    h->nsub = SEG_NSUB;
    h->sub_bytes = sub;
    h->seg_index = g.nseg;
    h->pid = g.pid;
    h->clock = shim_ring_clock();
    atomic_store_explicit(&h->self_capture, g.self_capture, memory_order_relaxed);
    for (uint32_t i = 0; i < SEG_NSUB; i++)
        atomic_store_explicit(&cs_seg_sub(p, i)->paused, g.start_paused, memory_order_relaxed);
    if (g.py_publish)
        g.py_publish(&h->py);
    m.seg_index = g.nseg;
    m.seg_bytes = bytes;
    rc = send_msg(&m, sizeof(m), fd);
    close(fd);
    if (rc < 0) {
        munmap(p, bytes);
        return rc;
    }
    g.seg[g.nseg] = p;
    g.seg_bytes[g.nseg++] = bytes;
    return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* PREFETCHW when the CPU has it (CPUID 0x80000001 ECX bit 8; older ones
 * may fault on it), else a read prefetch; none with CUDASPY_RING_PREFETCH=0.
 * Decided at the first claim; under g.lock. */
static void detect_prefetchw(void)
{
    static int decided;
    const char *env;
    uint8_t how = SHIM_PF_READ;
#if defined(__x86_64__)
    unsigned a, b, c, d;
#endif

    if (decided)
        return;
    decided = 1;
    env = getenv("CUDASPY_RING_PREFETCH");
#if defined(__x86_64__)
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8)))
        how = SHIM_PF_WRITE;
#endif
    if (env && strcmp(env, "0") == 0)
        how = SHIM_PF_NONE;
    __atomic_store_n(&shim_ring_pfw_, how, __ATOMIC_RELAXED);
}

/* Map the sub-ring's pages now, so that the hot path never takes a page
 * fault on first touch (a fault per 4 KiB costs more than 40 records). An
 * older kernel says EINVAL: the pages then come on first touch. */
static void prefault(const struct cs_ring_prod *p)
{
    int e = errno;

    (void)madvise(p->data, p->size, MADV_POPULATE_WRITE);
    errno = e;
}

/* Claim a free sub-ring for thread @p tid; under g.lock. */
static int claim(uint32_t tid, struct cs_ring_prod *prod)
{
    for (int round = 0; round < 2; round++) {
        for (uint32_t s = 0; s < g.nseg; s++)
            for (uint32_t i = 0; i < SEG_NSUB; i++) {
                uint32_t free_tid = 0;
                if (atomic_compare_exchange_strong(&cs_seg_sub(g.seg[s], i)->owner_tid,
                                                   &free_tid, tid)) {
                    cs_ring_prod_init(prod, g.seg[s], i);
                    atomic_store_explicit(&prod->ctl->py_tstate,
                                          g.py_tstate ? g.py_tstate() : 0,
                                          memory_order_relaxed);
                    prefault(prod);
                    detect_prefetchw();
                    return 0;
                }
            }
        if (round == 0) {
            int rc = seg_create();
            if (rc < 0)
                return rc;
        }
    }
    return -ENOSPC;
}

/* Thread exit (pthread key destructor): give the sub-ring back. Entries
 * already in it stay for the collector. */
static void release_thread(void *arg)
{
    struct cs_ring_prod *p = &shim_t_.prod;
    int e = errno;

    (void)arg;
    if (p->ctl) {
        atomic_store_explicit(&p->ctl->py_tstate, 0, memory_order_relaxed);
        atomic_store_explicit(&p->ctl->in_call, 0, memory_order_relaxed);
        atomic_store_explicit(&p->ctl->owner_tid, 0, memory_order_release);
    }
    memset(p, 0, sizeof(*p));
    errno = e;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g.lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&g.lock);
}

/* Child: the parent's segments are shared memory, not copies, so forget
 * them (unmap our view), drop the inherited socket and this thread's
 * producer; the child registers itself on its first event. */
static void atfork_child(void)
{
    int e = errno;

    /* atfork_prepare took the lock in the forking thread, the child's only
     * one: release it (re-initialising a held mutex is what TSan reports
     * as a double lock at the child's first attach). */
    pthread_mutex_unlock(&g.lock);
    if (g.fd >= 0)
        close(g.fd);
    g.fd = -1;
    g.tried = 0;
    for (uint32_t s = 0; s < g.nseg; s++)
        munmap(g.seg[s], g.seg_bytes[s]);
    g.nseg = 0;
    memset(&shim_t_.prod, 0, sizeof(shim_t_.prod)); /* the interposer keeps its fields */
    shim_t_.tid = shim_t_.in_slow = 0;
    errno = e;
}

/* Once per process image, under g.lock. */
static void init_once(void)
{
    if (!g.key_ok)
        g.key_ok = pthread_key_create(&g.key, release_thread) == 0;
    if (!g.atfork_ok)
        g.atfork_ok = pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0;
}

/* Push this thread's current name as a CS_ENT_THREAD entry. */
static int push_thread_name(struct cs_ring_prod *p, const char *name)
{
    struct cs_ring_ent *e = cs_ring_reserve(p, sizeof(*e) + sizeof(struct cs_ent_thread));
    struct cs_ent_thread *t;

    if (e == NULL) {
        atomic_fetch_add_explicit(&p->ctl->dropped, 1, memory_order_relaxed);
        return -ENOSPC;
    }
    e->len = sizeof(*e) + sizeof(*t);
    e->type = CS_ENT_THREAD;
    e->aux = 0;
    t = (struct cs_ent_thread *)(e + 1);
    memset(t, 0, sizeof(*t));
    t->tid = shim_ring_tid();
    strncpy(t->name, name, sizeof(t->name) - 1);
    cs_ring_commit(p);
    return 0;
}

/* This thread's producer, or NULL if it has none yet (call the slow path)
 * or recording is off: for the pushes below, made whenever (the CUDA
 * records' push trusts the check made before the call: shim_ring.h). */
static inline struct cs_ring_prod *shim_ring_tls(void)
{
    struct cs_ring_prod *p = &shim_t_.prod;

    if (__builtin_expect(p->ctl == NULL, 0))
        return NULL;
    if (__builtin_expect(atomic_load_explicit(&shim_ring_off_, memory_order_relaxed), 0))
        return NULL;
    return p;
}

struct cs_ring_prod *shim_ring_attach_slow(void)
{
    struct shim_thread *t = &shim_t_;
    char name[17] = "";
    int e = errno, rc = 0;

    if (t->prod.ctl)
        goto out;
    if (atomic_load(&shim_ring_off_) || t->in_slow) {
        errno = e;
        return NULL;
    }
    t->in_slow = 1;
    pthread_mutex_lock(&g.lock);
    init_once();
    if (g.fd < 0)
        rc = g.tried ? -ENOTCONN : connect_collector();
    if (rc == 0)
        rc = claim(shim_ring_tid(), &t->prod);
    pthread_mutex_unlock(&g.lock);
    t->in_slow = 0;
    if (rc < 0) {
        shim_ring_stop(rc == -ENOENT      ? "no collector address (CUDASPY_SOCK unset)"
                       : rc == -ENOSPC    ? "too many threads for the ring segments"
                       : rc == -ENOTCONN  ? "not connected to the collector"
                                          : "cannot reach the collector");
        errno = e;
        return NULL;
    }
    if (g.key_ok)
        pthread_setspecific(g.key, (void *)1);
    prctl(PR_GET_NAME, name);
    push_thread_name(&t->prod, name);
out:
    errno = e;
    return shim_ring_tls() ? &t->prod : NULL;
}

/* Reserve @p len bytes (rounded to 8) for a definition entry of @p type. */
static struct cs_ring_ent *def_reserve(struct cs_ring_prod **pp, size_t len, uint16_t type)
{
    struct cs_ring_prod *p = shim_ring_tls();
    struct cs_ring_ent *e;

    if (p == NULL && (p = shim_ring_attach_slow()) == NULL)
        return NULL;
    len = (len + 7) & ~(size_t)7;
    e = cs_ring_reserve(p, (uint32_t)len);
    if (e == NULL) {
        atomic_fetch_add_explicit(&p->ctl->dropped, 1, memory_order_relaxed);
        *pp = p;
        return NULL;
    }
    e->len = (uint32_t)len;
    e->type = type;
    e->aux = 0;
    *pp = p;
    return e;
}

int shim_ring_push_name(uint32_t local_id, uint64_t handle, uint32_t kind, const char *name,
                        size_t len)
{
    struct cs_ring_prod *p = NULL;
    struct cs_ring_ent *e;
    struct cs_ent_name *n;
    size_t hdr = sizeof(*e) + sizeof(*n);
    int err = errno;

    if (shim_ring_tls() == NULL && shim_ring_attach_slow() == NULL)
        return -ENOTCONN;
    if (len > shim_t_.prod.size / 4 - hdr)
        len = shim_t_.prod.size / 4 - hdr;
    e = def_reserve(&p, hdr + len, CS_ENT_NAME);
    if (e == NULL) {
        errno = err;
        return p ? -ENOSPC : -ENOTCONN;
    }
    n = (struct cs_ent_name *)(e + 1);
    n->local_id = local_id;
    n->len = (uint32_t)len;
    n->handle = handle;
    n->kind = kind;
    n->pad = 0;
    memcpy(n + 1, name, len);
    cs_ring_commit(p);
    errno = err;
    return 0;
}

int shim_ring_push_stack(uint32_t local_id, const struct cs_frame *f, uint32_t nf)
{
    struct cs_ring_prod *p = NULL;
    struct cs_ring_ent *e;
    struct cs_ent_stack *s;
    size_t hdr = sizeof(*e) + sizeof(*s);
    int err = errno;

    if (shim_ring_tls() == NULL && shim_ring_attach_slow() == NULL)
        return -ENOTCONN;
    if ((size_t)nf * sizeof(*f) > shim_t_.prod.size / 4 - hdr)
        nf = (uint32_t)((shim_t_.prod.size / 4 - hdr) / sizeof(*f));
    e = def_reserve(&p, hdr + (size_t)nf * sizeof(*f), CS_ENT_STACK);
    if (e == NULL) {
        errno = err;
        return p ? -ENOSPC : -ENOTCONN;
    }
    s = (struct cs_ent_stack *)(e + 1);
    s->local_id = local_id;
    s->nframes = nf;
    memcpy(s + 1, f, (size_t)nf * sizeof(*f));
    cs_ring_commit(p);
    errno = err;
    return 0;
}

int shim_ring_push_raw(uint16_t type, const void *body, size_t len)
{
    struct cs_ring_prod *p = NULL;
    struct cs_ring_ent *e;
    int err = errno;

    if (shim_ring_tls() == NULL && shim_ring_attach_slow() == NULL)
        return -ENOTCONN;
    if (len > shim_t_.prod.size / 4 - sizeof(*e))
        return -EINVAL;
    e = def_reserve(&p, sizeof(*e) + len, type);
    if (e == NULL) {
        errno = err;
        return p ? -ENOSPC : -ENOTCONN;
    }
    memcpy(e + 1, body, len);
    cs_ring_commit(p);
    errno = err;
    return 0;
}

void shim_ring_capture(int on, uint64_t t)
{
    struct cs_ent_capture c = {.t_ns = t, .on = (uint32_t)on};
    int err = errno;

    pthread_mutex_lock(&g.lock);
    g.start_paused = !on;
    g.self_capture = 1;
    for (uint32_t s = 0; s < g.nseg; s++) {
        atomic_store_explicit(&((struct cs_seg_hdr *)g.seg[s])->self_capture, 1,
                              memory_order_seq_cst); /* before the paused words */
        for (uint32_t i = 0; i < SEG_NSUB; i++)
            atomic_store_explicit(&cs_seg_sub(g.seg[s], i)->paused, (uint32_t)!on,
                                  memory_order_relaxed);
    }
    pthread_mutex_unlock(&g.lock);
    (void)shim_ring_push_raw(CS_ENT_CAPTURE, &c, sizeof(c));
    errno = err;
}

int shim_ring_push_thread(const char *name)
{
    struct cs_ring_prod *p = shim_ring_tls();
    int err = errno, rc;

    if (p == NULL && (p = shim_ring_attach_slow()) == NULL)
        return -ENOTCONN;
    rc = push_thread_name(p, name);
    errno = err;
    return rc;
}
