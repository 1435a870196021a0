/* bench_sampler.c: what the host sampler (tier A) costs and how fast it
 * keeps up. A pipe ping-pong tree is traced in-process with a counting
 * collector; the sampler's own CPU comes from getrusage(RUSAGE_SELF) over
 * the run, the switch rate from /proc/stat ctxt (every switch on the box is
 * a CPU-wide record the sampler reads). Paced runs step the rate up to find
 * the highest one with 0 lost records. Last, what tracing adds to each
 * page fault of a traced process (its own clock, pages touched fresh),
 * untraced vs page allocations and faults or faults alone, sampled every
 * event or 1 in 16, interleaved; and what it adds to a blocking hand-off
 * between two CPUs (pipe round trips), the way threads pass work.
 * Usage: bench_sampler [SECONDS=3 (0: page faults only)] [RING_PAGES] [PAGE_ROUNDS=5] */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "procfs.h"

/* ---- a collector that only counts ---- */

struct collector {
    uint64_t recs[CS_REC_KIND_COUNT];
    uint64_t tree_switches;
    uint64_t lost;
};

int collector_emit(struct collector *c, unsigned kind, uint32_t pid, const void *rec)
{
    (void)pid;
    if (kind >= CS_REC_KIND_COUNT)
        return -EINVAL;
    c->recs[kind]++;
    if (kind == CS_REC_PWIN) {
        const struct cs_rec_pwin *w = rec;

        c->tree_switches += w->vcsw + w->ivcsw;
    }
    return 0;
}

int collector_proc(struct collector *c, const struct cs_proc *p) { (void)c, (void)p; return 0; }
int collector_thread(struct collector *c, const struct cs_thread *t) { (void)c, (void)t; return 0; }
int collector_has_pid(struct collector *c, uint32_t pid) { (void)c, (void)pid; return 0; }

int collector_intern(struct collector *c, const char *s, size_t len, uint32_t *id)
{
    (void)c, (void)s, (void)len;
    *id = 1;
    return 0;
}

int collector_meta(struct collector *c, const char *key, const char *val)
{
    (void)c, (void)key, (void)val;
    return 0;
}

int collector_meta_u64(struct collector *c, const char *key, uint64_t val)
{
    if (strcmp(key, "host_lost") == 0)
        c->lost = val;
    return 0;
}

/* ---- the workload: one ping-pong pair, paced to @p rate round trips/s ---- */

static void pace(uint64_t start, uint64_t done, uint64_t rate)
{
    uint64_t due = start + done * 1000000000ull / rate, now = procfs_now_ns();

    if (due > now) {
        struct timespec ts = {(time_t)((due - now) / 1000000000ull),
                              (long)((due - now) % 1000000000ull)};

        nanosleep(&ts, NULL);
    }
}

static void pinger(int out, int in, uint64_t rate, uint64_t dur_ns)
{
    uint64_t start = procfs_now_ns(), n = 0;
    char c = 0;

    while (procfs_now_ns() - start < dur_ns) {
        if (write(out, &c, 1) != 1 || read(in, &c, 1) != 1)
            break;
        if (rate && ++n % 64 == 0)
            pace(start, n, rate);
    }
    close(out);
}

static void ponger(int in, int out)
{
    char c;

    while (read(in, &c, 1) == 1)
        if (write(out, &c, 1) != 1)
            break;
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

/* Fork a ponger pinned to @p cpu; @p to and @p from get the caller's ends
 * of its two pipes. Exits the process with @p fail when that fails. */
static void spawn_ponger(int cpu, int *to, int *from, int fail)
{
    int ab[2], ba[2];

    if (pipe(ab) < 0 || pipe(ba) < 0)
        _exit(fail);
    if (fork() == 0) {
        pin(cpu);
        close(ab[1]);
        close(ba[0]);
        ponger(ab[0], ba[1]);
        _exit(0);
    }
    close(ab[0]);
    close(ba[1]);
    *to = ab[1];
    *from = ba[0];
}

/* One pair, both ends on @p cpu (the most switches per second). */
static void pair(int cpu, uint64_t rate, uint64_t dur_ns)
{
    int to, from;

    pin(cpu);
    spawn_ponger(cpu, &to, &from, 3);
    pinger(to, from, rate, dur_ns);
    while (wait(NULL) > 0)
        ;
    _exit(0);
}

/* Root of the traced tree: one pair per CPU after a second for attach. */
static pid_t start_tree(int npairs, uint64_t rate, uint64_t dur_ns)
{
    pid_t root = fork();

    if (root == 0) {
        sleep(1);
        for (int i = 0; i < npairs; i++)
            if (fork() == 0)
                pair(i % (int)sysconf(_SC_NPROCESSORS_ONLN), rate, dur_ns);
        while (wait(NULL) > 0)
            ;
        _exit(0);
    }
    return root;
}

/* ---- one measured run ---- */

struct result {
    double sys_rate, tree_rate;  /* switches per second */
    double cpu_pct;              /* sampler CPU, % of one CPU */
    uint64_t lost, records;
};

static uint64_t cpu_self_ns(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000 +
           (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000;
}

static uint64_t ctxt_total(void)
{
    char buf[8192], *p;
    FILE *f = fopen("/proc/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

    if (f)
        fclose(f);
    buf[n] = 0;
    p = strstr(buf, "\nctxt ");
    return p ? strtoull(p + 6, NULL, 10) : 0;
}

static void drain_loop(struct host *h, pid_t root, uint64_t *t0, uint64_t *cpu0, uint64_t *sw0)
{
    int status, started = 0;

    for (;;) {
        struct pollfd fds[256];
        int n = host_pollfds(h, fds, 256);

        poll(fds, (nfds_t)n, 100);
        host_drain(h, procfs_now_ns());
        if (!started && procfs_now_ns() >= *t0) { /* the pair starts after 1 s */
            started = 1;
            *cpu0 = cpu_self_ns();
            *sw0 = ctxt_total();
            *t0 = procfs_now_ns();
        }
        if (waitpid(root, &status, WNOHANG) == root)
            return;
    }
}

static int run_once(int npairs, uint64_t rate, uint64_t dur_ns, unsigned ring_pages,
                    struct result *r)
{
    struct collector c;
    struct host_opts o = {.force_tier = 'A', .ring_pages = ring_pages};
    struct cs_err err = {""};
    struct host *h;
    uint64_t t0, cpu0 = 0, sw0 = 0, t1, cpu1, sw1;

    memset(&c, 0, sizeof(c));
    memset(r, 0, sizeof(*r));
    o.root = start_tree(npairs, rate, dur_ns);
    h = host_new(&o);
    if (!h || host_open(h, &c, &err) < 0) {
        fprintf(stderr, "bench_sampler: host_open: %s\n", err.msg);
        kill(o.root, SIGKILL);
        return -1;
    }
    t0 = procfs_now_ns() + 1000000000ull;
    drain_loop(h, o.root, &t0, &cpu0, &sw0);
    t1 = procfs_now_ns();
    cpu1 = cpu_self_ns();
    sw1 = ctxt_total();
    host_finish(h, procfs_now_ns());
    host_free(h);
    r->sys_rate = (double)(sw1 - sw0) * 1e9 / (double)(t1 - t0);
    r->tree_rate = (double)c.tree_switches * 1e9 / (double)(t1 - t0);
    r->cpu_pct = (double)(cpu1 - cpu0) * 100.0 / (double)(t1 - t0);
    r->lost = c.lost;
    for (int k = 0; k < CS_REC_KIND_COUNT; k++)
        r->records += c.recs[k];
    return 0;
}

/* ---- what tracing adds to a page fault ---- */

#define FAULT_CHUNK (16u << 20) /* bytes mapped, touched and unmapped per loop */
#define FAULT_PAGES 131072u     /* pages a child touches: 512 MiB */

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Child: wait for the go byte, touch FAULT_PAGES fresh pages, send back
 * the ns per page. Never returns. */
static void toucher(int go, int res)
{
    char b;
    uint64_t t0, done = 0;
    double ns;

    if (read(go, &b, 1) != 1)
        _exit(1);
    t0 = mono_ns();
    while (done < FAULT_PAGES) {
        char *m = mmap(NULL, FAULT_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED)
            _exit(1);
        for (size_t k = 0; k < FAULT_CHUNK; k += 4096, done++)
            m[k] = 1;
        munmap(m, FAULT_CHUNK);
    }
    ns = (double)(mono_ns() - t0) / (double)done;
    _exit(write(res, &ns, sizeof(ns)) == sizeof(ns) ? 0 : 1);
}

/* How a child is traced: page source and sample period; period 0 =
 * untraced. */
struct fault_var {
    int source;
    unsigned period;
    const char *what;
};

/* Fork @p child(go, res) as the root of a tree traced as @p v says, start
 * it, drain until it exits, and return the double it sent back (its own
 * timing). @return < 0 on failure. */
static double child_once(void (*child)(int go, int res), const struct fault_var *v)
{
    int go[2], res[2], status;
    unsigned period = v->period;
    struct collector c;
    struct host_opts o = {.force_tier = 'A', .page_alloc_period = period,
                          .page_source = v->source};
    struct cs_err err = {""};
    struct host *h = NULL;
    double ns = -1;

    if (pipe(go) < 0 || pipe(res) < 0)
        return -1;
    memset(&c, 0, sizeof(c));
    o.root = fork();
    if (o.root == 0)
        child(go[0], res[1]);
    if (period && ((h = host_new(&o)) == NULL || host_open(h, &c, &err) < 0)) {
        fprintf(stderr, "bench_sampler: host_open: %s\n", err.msg);
        host_free(h);
        h = NULL;
        kill(o.root, SIGKILL);
    }
    if (write(go[1], "g", 1) != 1)
        kill(o.root, SIGKILL);
    while (h && waitpid(o.root, &status, WNOHANG) == 0) {
        struct pollfd fds[256];
        int n = host_pollfds(h, fds, 256);
        poll(fds, (nfds_t)n, 10);
        host_drain(h, procfs_now_ns());
    }
    if (!h)
        waitpid(o.root, &status, 0);
    if (read(res[0], &ns, sizeof(ns)) != sizeof(ns))
        ns = -1;
    if (h) {
        host_finish(h, procfs_now_ns());
        host_free(h);
    }
    close(go[0]), close(go[1]), close(res[0]), close(res[1]);
    return ns;
}

static double fault_once(const struct fault_var *v) { return child_once(toucher, v); }

/* ---- what tracing adds to a blocking hand-off between two CPUs ---- */

#define HANDOFF_TRIPS 20000u

/* Child: wait for the go byte, then HANDOFF_TRIPS round trips of one byte
 * with a ponger on another CPU (each trip: two wake-ups of a blocked task,
 * four context switches, as threads handing work to each other do); send
 * back the ns per round trip. Never returns. */
static void handoff(int go, int res)
{
    int to, from;
    char b = 'x';
    uint64_t t0;
    double ns;

    pin(0);
    spawn_ponger(sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0, &to, &from, 1);
    if (read(go, &b, 1) != 1)
        _exit(1);
    t0 = mono_ns();
    for (unsigned i = 0; i < HANDOFF_TRIPS; i++)
        if (write(to, &b, 1) != 1 || read(from, &b, 1) != 1)
            _exit(1);
    ns = (double)(mono_ns() - t0) / HANDOFF_TRIPS;
    close(to);
    while (wait(NULL) > 0)
        ;
    _exit(write(res, &ns, sizeof(ns)) == sizeof(ns) ? 0 : 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

#define NVAR 5

/* Rounds of every variant (untraced first in the table) in rotating order;
 * each traced variant's median of (traced - untraced of its round). */
static int fault_cost(int rounds)
{
    static const struct fault_var var[NVAR] = {
        {0, 0, "untraced"},
        {HOST_PAGES_ALLOCS, 1, "kmem:mm_page_alloc + minor faults, 1 in 1"},
        {HOST_PAGES_ALLOCS, 16, "kmem:mm_page_alloc + minor faults, 1 in 16"},
        {HOST_PAGES_FAULTS, 1, "minor faults only, 1 in 1"},
        {HOST_PAGES_FAULTS, 16, "minor faults only, 1 in 16"},
    };
    double ns[NVAR][64], d[64];

    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NVAR; k++) {
            int m = (r + k) % NVAR;
            if ((ns[m][r] = fault_once(&var[m])) < 0)
                return -1;
        }
    printf("%-30s untraced_p50    %10.1f  ns     per fault, n=%u pages x %d rounds\n",
           "sampler.page_fault", median(ns[0], rounds), FAULT_PAGES, rounds);
    for (int m = 1; m < NVAR; m++) {
        for (int r = 0; r < rounds; r++)
            d[r] = ns[m][r] - ns[0][r];
        printf("%-30s added_p50       %10.1f  ns     per fault, %s\n", "sampler.page_fault",
               median(d, rounds), var[m].what);
    }
    return 0;
}

/* Rounds of untraced and traced (the default page source) hand-offs in
 * turn; the median of (traced - untraced of its round). */
static int handoff_cost(int rounds)
{
    static const struct fault_var var[2] = {{0, 0, "untraced"},
                                            {HOST_PAGES_FAULTS, 16, "traced"}};
    double ns[2][64], d[64];

    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            int m = (r + k) % 2;
            if ((ns[m][r] = child_once(handoff, &var[m])) < 0)
                return -1;
        }
    printf("%-30s untraced_p50    %10.1f  ns     per round trip, n=%u x %d rounds\n",
           "sampler.handoff", median(ns[0], rounds), HANDOFF_TRIPS, rounds);
    for (int r = 0; r < rounds; r++)
        d[r] = ns[1][r] - ns[0][r];
    printf("%-30s added_p50       %10.1f  ns     per round trip, tier A as `cudaspy record` runs it\n",
           "sampler.handoff", median(d, rounds));
    return 0;
}

static void header(int argc, char **argv)
{
    char host[64] = "?", commit[64] = "unknown";
    FILE *f = popen("git -C " CS_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null", "r");

    if (f) {
        if (fgets(commit, sizeof(commit), f))
            commit[strcspn(commit, "\n")] = 0;
        pclose(f);
    }
    gethostname(host, sizeof(host) - 1);
    printf("# cudaspy-bench commit=%s host=%s cmd=\"bench_sampler", commit, host);
    for (int i = 1; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\"\n");
}

static void print_run(const char *subj, const struct result *r, int npairs, uint64_t target)
{
    printf("%-30s switch_rate     %10.0f  /s     tree=%.0f/s pairs=%d round_trips=%llu/s/pair\n",
           subj, r->sys_rate, r->tree_rate, npairs, (unsigned long long)target);
    printf("%-30s sampler_cpu     %10.2f  %%      of one CPU\n", subj, r->cpu_pct);
    printf("%-30s cpu_per_10k_sw  %10.3f  %%      per 10k switches/s\n", subj,
           r->sys_rate > 0 ? r->cpu_pct * 10000.0 / r->sys_rate : 0);
    printf("%-30s lost            %10llu  rec    of %llu emitted\n", subj,
           (unsigned long long)r->lost, (unsigned long long)r->records);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    uint64_t dur_ns = (uint64_t)(argc > 1 ? atof(argv[1]) : 3.0) * 1000000000ull;
    unsigned pages = argc > 2 ? (unsigned)atoi(argv[2]) : 512;
    int page_rounds = argc > 3 ? atoi(argv[3]) : 5;
    static const uint64_t rates[] = {5000, 20000, 40000, 0};
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    double best = 0;
    struct result r;

    if (geteuid() != 0) {
        fprintf(stderr, "bench_sampler: needs root (tier A)\n");
        return 2;
    }
    if (page_rounds < 1 || page_rounds > 64) {
        fprintf(stderr, "bench_sampler: PAGE_ROUNDS must be 1-64\n");
        return 2;
    }
    header(argc, argv);
    for (size_t i = 0; dur_ns && i < sizeof(rates) / sizeof(rates[0]); i++) {
        char subj[64];

        snprintf(subj, sizeof(subj), "sampler.pingpong_%s", rates[i] ? "paced" : "full");
        if (run_once(ncpu, rates[i], dur_ns, pages, &r) < 0)
            return 3;
        print_run(subj, &r, ncpu, rates[i]);
        if (r.lost == 0 && r.sys_rate > best)
            best = r.sys_rate;
    }
    if (dur_ns)
        printf("%-30s switch_rate     %10.0f  /s     lost=0 ring_pages=%u ncpu=%ld\n",
               "sampler.max_rate_0_lost", best, pages, sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
    if (handoff_cost(page_rounds) < 0)
        return 3;
    return fault_cost(page_rounds) < 0 ? 3 : 0;
}
