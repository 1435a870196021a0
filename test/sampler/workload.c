/* workload.c: the traced tree for the host sampler tests (workload.h).
 * Children are forked from the test process itself, so no exec: each
 * process names itself with prctl(PR_SET_NAME). */
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WL_WAITERS 3 /* root, pre-attach child, pre-attach grandchild */

static int go_r = -1, rep_w = -1, ready_w = -1;
static int scale_g = 1, linger_ms_g;

static uint64_t clk(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void read_text(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, buf, n - 1) : -1;

    buf[got > 0 ? got : 0] = 0;
    if (fd >= 0)
        close(fd);
}

static uint64_t field(const char *text, const char *key)
{
    const char *p = strstr(text, key);

    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* Status counts and schedstat of the calling thread. */
static void snap(uint64_t *ta, uint64_t *t, uint64_t *cpu, uint64_t *on, uint64_t *rd,
                 uint64_t *vol, uint64_t *invol)
{
    char path[96], buf[4096];
    pid_t tid = (pid_t)syscall(SYS_gettid);
    unsigned long long a = 0, b = 0;

    *ta = clk(CLOCK_MONOTONIC);
    snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
    read_text(path, buf, sizeof(buf));
    *vol = field(buf, "\nvoluntary_ctxt_switches:");
    *invol = field(buf, "\nnonvoluntary_ctxt_switches:");
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
    read_text(path, buf, sizeof(buf));
    sscanf(buf, "%llu %llu", &a, &b);
    *on = a;
    *rd = b;
    *cpu = clk(CLOCK_THREAD_CPUTIME_ID);
    *t = clk(CLOCK_MONOTONIC);
}

struct job {
    enum wl_kind kind;
    int preattach;
    int fd_in, fd_out; /* WL_PING */
    int starts;        /* WL_PING: writes first */
};

static void spin_ns(uint64_t ns)
{
    uint64_t end = clk(CLOCK_THREAD_CPUTIME_ID) + ns;

    while (clk(CLOCK_THREAD_CPUTIME_ID) < end)
        ;
}

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};

    nanosleep(&ts, NULL);
}

static uint64_t touch_pages(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = WL_PAGES_K * page;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return 0;
    madvise(p, len, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < len; i += page)
        p[i] = 1;
    munmap(p, len);
    return WL_PAGES_K;
}

static void ping(const struct job *j)
{
    char c = 0;
    int rounds = 400 / scale_g;

    for (int i = 0; i < rounds; i++) {
        if (j->starts && write(j->fd_out, &c, 1) != 1)
            return;
        if (read(j->fd_in, &c, 1) != 1)
            return;
        if (!j->starts && write(j->fd_out, &c, 1) != 1)
            return;
    }
}

static void work(const struct job *j, struct wl_report *r)
{
    int rounds = 20 / scale_g;

    switch (j->kind) {
    case WL_SLEEP:
        for (int i = 0; i < 10 * rounds; i++)
            sleep_ns(1000000);
        break;
    case WL_SPIN:
    case WL_THREAD:
        for (int i = 0; i < rounds; i++) {
            spin_ns(10000000);
            sleep_ns(2000000);
        }
        break;
    case WL_PING:
        ping(j);
        break;
    case WL_PAGES:
        r->pages = touch_pages();
        break;
    }
}

static void run_job(const struct job *j)
{
    struct wl_report r;

    memset(&r, 0, sizeof(r));
    r.pid = (uint32_t)getpid();
    r.tid = (uint32_t)syscall(SYS_gettid);
    r.ppid = (uint32_t)getppid();
    r.kind = j->kind;
    r.preattach = (uint32_t)j->preattach;
    prctl(PR_GET_NAME, r.comm);
    snap(&r.t0a, &r.t0, &r.cpu0, &r.ss_on0, &r.ss_rd0, &r.vol0, &r.invol0);
    work(j, &r);
    snap(&r.t1a, &r.t1, &r.cpu1, &r.ss_on1, &r.ss_rd1, &r.vol1, &r.invol1);
    if (write(rep_w, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(3);
    if (linger_ms_g)
        sleep_ns(linger_ms_g * 1000000l);
}

static void *thread_main(void *arg)
{
    run_job(arg);
    return NULL;
}

static void wait_children(void)
{
    while (wait(NULL) > 0 || errno == EINTR)
        ;
}

/* Fork a child named @p name that runs @p j then exits. */
static pid_t spawn(const char *name, const struct job *j)
{
    pid_t pid = fork();

    if (pid == 0) {
        prctl(PR_SET_NAME, name);
        run_job(j);
        _exit(0);
    }
    return pid;
}

static void wait_go(void)
{
    char c;

    if (write(ready_w, "r", 1) != 1 || read(go_r, &c, 1) != 1)
        _exit(4);
}

static void threads_proc(void)
{
    struct job j = {.kind = WL_THREAD};
    pthread_t t;

    prctl(PR_SET_NAME, "wl_threads");
    pthread_create(&t, NULL, thread_main, &j);
    run_job(&j);
    pthread_join(t, NULL);
    _exit(0);
}

static void forker_proc(void)
{
    struct job sl = {.kind = WL_SLEEP}, sp = {.kind = WL_SPIN};

    prctl(PR_SET_NAME, "wl_forker");
    spawn("wl_gc", &sp);
    run_job(&sl);
    wait_children();
    _exit(0);
}

static void after_go(void)
{
    struct job sp = {.kind = WL_SPIN}, pg = {.kind = WL_PAGES}, sl = {.kind = WL_SLEEP};
    struct job pa = {.kind = WL_PING, .starts = 1}, pb = {.kind = WL_PING};
    int ab[2], ba[2];

    if (pipe(ab) < 0 || pipe(ba) < 0)
        _exit(5);
    pa.fd_out = ab[1], pa.fd_in = ba[0];
    pb.fd_in = ab[0], pb.fd_out = ba[1];
    spawn("wl_spin1", &sp);
    spawn("wl_spin2", &sp);
    spawn("wl_ping_a", &pa);
    spawn("wl_ping_b", &pb);
    spawn("wl_pages", &pg);
    if (fork() == 0)
        threads_proc();
    if (fork() == 0)
        forker_proc();
    run_job(&sl);
    wait_children();
}

static void preattach_child(void)
{
    struct job sp = {.kind = WL_SPIN, .preattach = 1}, sl = {.kind = WL_SLEEP, .preattach = 1};

    prctl(PR_SET_NAME, "wl_pre");
    if (fork() == 0) {
        prctl(PR_SET_NAME, "wl_pre_gc");
        wait_go();
        run_job(&sl);
        _exit(0);
    }
    wait_go();
    run_job(&sp);
    wait_children();
    _exit(0);
}

static void root_main(void)
{
    prctl(PR_SET_NAME, "wl_root");
    if (fork() == 0)
        preattach_child();
    wait_go();
    after_go();
    _exit(0);
}

int wl_start(struct wl *w, int scale, int linger_ms)
{
    int go[2], rep[2], ready[2];
    char buf[WL_WAITERS];

    memset(w, 0, sizeof(*w));
    w->scale = scale_g = scale > 0 ? scale : 1;
    linger_ms_g = linger_ms;
    if (pipe(go) < 0 || pipe(rep) < 0 || pipe(ready) < 0)
        return -errno;
    go_r = go[0], rep_w = rep[1], ready_w = ready[1];
    w->root = fork();
    if (w->root < 0)
        return -errno;
    if (w->root == 0) {
        close(go[1]);
        close(rep[0]);
        close(ready[0]);
        root_main();
    }
    close(go[0]);
    close(rep[1]);
    close(ready[1]);
    w->go_w = go[1];
    w->report_r = rep[0];
    fcntl(w->report_r, F_SETFL, O_NONBLOCK);
    w->nexpect = 12; /* threads that report, see root_main */
    for (size_t got = 0; got < WL_WAITERS;) {
        ssize_t n = read(ready[0], buf, WL_WAITERS - got);

        if (n <= 0)
            return -EIO;
        got += (size_t)n;
    }
    close(ready[0]);
    return 0;
}

void wl_go(struct wl *w)
{
    if (write(w->go_w, "ggg", WL_WAITERS) != WL_WAITERS)
        perror("wl_go");
    close(w->go_w);
}

void wl_read(struct wl *w, struct wl_report *out, int max, int *n)
{
    struct wl_report r;

    while (*n < max && read(w->report_r, &r, sizeof(r)) == (ssize_t)sizeof(r))
        out[(*n)++] = r;
}
