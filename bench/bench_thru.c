/* bench_thru.c: the collector's sustained throughput (issue 25, point 1).
 * Runs PROCS cs_producer processes, one thread each, at RATE records a
 * second each for SECS seconds under the real cudaspy-sampler, into a run
 * file on disk; reads every record back and checks each (tid, seq) landed
 * once. One line per try:
 *   thru.<P>x<R>  dropped  <%>  landed= dropped= dup= missing= ...
 *   thru.<P>x<R>  collector  <ns/rec>  cores_per_2M= ...
 * missing: records neither landed nor counted as dropped (must be 0).
 * cores_per_2M: collector CPU seconds per second at 2 M records/s, from
 * its own CPU time per landed record (meta collector_cpu_ns).
 * With -K MS, SIGKILL the collector MS ms into each try instead and print
 * how long before the kill the newest record that survived was taken:
 *   thru.<P>x<R>  killed  <ms>  kept= ...
 * With -x, after the tries, raise the total rate by 1.25x from P x R until
 * a try drops or loses a record, and print the highest lossless total.
 *
 * Usage: bench_thru [-p PROCS] [-r RATE] [-s SECS] [-n TRIES] [-d DIR]
 *                   [-k RING_KB] [-S SAMPLER] [-K MS] [-x]
 *   defaults 2, 400000, 10, 1, $CS_BENCH_DISK_DIR or /var/tmp, the shim's
 *   default ring. cudaspy-sampler (unless -S) and cs_producer come from
 *   this binary's directory. Example (the 16-CPU host): bench_thru -p 8 -r 500000 -s 60 */
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cudaspy/runfile.h"

struct thru_opts {
    int procs, tries, search;
    long rate, secs;
    const char *dir, *ring_kb;
    const char *sampler; /* -S: another cudaspy-sampler (interleaved comparisons) */
    long kill_ms;        /* -K: SIGKILL the collector this long into the run */
};

/* One try's outcome. */
struct thru_res {
    uint64_t produced, landed, unique, dropped, cpu_ns;
    uint64_t t_min_ns, t_max_ns; /* first enter, last exit over all records */
    double wall_s;
    uint64_t kill_ns; /* -K: when the collector was killed (CLOCK_MONOTONIC) */
};

/* Seen-bits of one producer thread's sequence numbers (1..n). */
struct seen {
    uint32_t tid;
    uint64_t *bits;
};

static char bindir[PATH_MAX - 64];

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double loadavg(void)
{
    double l;
    return getloadavg(&l, 1) == 1 ? l : 0;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Run argv in a process group of its own; with @p kill_ms > 0 SIGKILL its
 * leader (the collector) that long after the start, and then the group.
 * @return the exit status, 0 after the kill, or -1. */
static int run_wait(char *const argv[], long kill_ms, uint64_t *kill_ns)
{
    pid_t pid;
    int st;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        if (freopen("/dev/null", "w", stdout) == NULL)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid < 0)
        return -1;
    setpgid(pid, pid);
    if (kill_ms > 0) {
        struct timespec d = {kill_ms / 1000, (kill_ms % 1000) * 1000000};
        nanosleep(&d, NULL);
        *kill_ns = mono_ns();
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        kill(-pid, SIGKILL); /* the producers */
        return 0;
    }
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Mark (tid, seq) seen; @return 1 if it was already. */
static int seen_mark(struct seen *s, int nthr, uint32_t tid, uint32_t seq, uint64_t n)
{
    for (int i = 0; i < nthr; i++) {
        if (s[i].tid != tid && s[i].tid != 0)
            continue;
        if (s[i].tid == 0) {
            s[i].tid = tid;
            s[i].bits = calloc((n + 64) / 64, sizeof(uint64_t));
            if (s[i].bits == NULL)
                return 1;
        }
        if (seq == 0 || seq > n)
            return 1; /* not a record of ours: count it as a duplicate */
        if (s[i].bits[seq / 64] & (1ull << (seq % 64)))
            return 1;
        s[i].bits[seq / 64] |= 1ull << (seq % 64);
        return 0;
    }
    return 1; /* more threads than producers */
}

/* Read every CUDA record of @p file into @p res. */
static int thru_check(const char *file, int procs, uint64_t per_proc, struct thru_res *res)
{
    struct cs_run *r = cs_run_new();
    struct seen *s = calloc((size_t)procs, sizeof(*s));
    struct cs_cursor *c;
    const struct cs_blk_hdr *h;
    const void *recs;
    struct cs_err err = {""};
    int rc = -1;

    if (r == NULL || s == NULL || cs_run_open(r, file, &err) < 0 ||
        cs_cursor_open(r, CS_REC_CUDA, 0, UINT64_MAX, &c) < 0)
        goto out;
    res->t_min_ns = UINT64_MAX;
    while ((rc = cs_cursor_next(c, &h, &recs, &err)) == 1) {
        const struct cs_rec_cuda *rec = recs;
        for (uint32_t i = 0; i < h->n; i++) {
            res->landed++;
            res->unique += !seen_mark(s, procs, rec[i].tid, rec[i].seq, per_proc);
            if (rec[i].t_enter_ns < res->t_min_ns)
                res->t_min_ns = rec[i].t_enter_ns;
            if (rec[i].t_exit_ns > res->t_max_ns)
                res->t_max_ns = rec[i].t_exit_ns;
        }
    }
    cs_cursor_close(c);
    res->dropped = cs_run_meta_u64(r, "cuda_dropped", 0);
    res->cpu_ns = cs_run_meta_u64(r, "collector_cpu_ns", 0);
out:
    if (rc < 0)
        fprintf(stderr, "bench_thru: %s: cannot read run (%s)\n", file, err.msg);
    for (int i = 0; s && i < procs; i++)
        free(s[i].bits);
    free(s);
    cs_run_free(r);
    return rc < 0 ? -1 : 0;
}

/* One try: P producers at @p rate records/s each for o->secs seconds. */
static int thru_try(const struct thru_opts *o, long rate, struct thru_res *res)
{
    char sampler[PATH_MAX], producer[PATH_MAX], file[PATH_MAX - 16], lock[PATH_MAX];
    char pbuf[16], nbuf[32], rbuf[32];
    char *argv[] = {sampler, "--no-host", "-q", "-o", file, "--", producer, "-p", pbuf,
                    "-t", "1", "-n", nbuf, "-r", rbuf, NULL};
    uint64_t per_proc = (uint64_t)rate * (uint64_t)o->secs;
    double t0;
    int rc;

    memset(res, 0, sizeof(*res));
    if (o->sampler)
        snprintf(sampler, sizeof(sampler), "%s", o->sampler);
    else
        snprintf(sampler, sizeof(sampler), "%s/cudaspy-sampler", bindir);
    snprintf(producer, sizeof(producer), "%s/cs_producer", bindir);
    snprintf(file, sizeof(file), "%s/bench_thru-%d.lmdb", o->dir, (int)getpid());
    snprintf(lock, sizeof(lock), "%s-lock", file);
    snprintf(pbuf, sizeof(pbuf), "%d", o->procs);
    snprintf(nbuf, sizeof(nbuf), "%llu", (unsigned long long)per_proc);
    snprintf(rbuf, sizeof(rbuf), "%ld", rate / 1000 > 0 ? rate / 1000 : 1);
    t0 = now_s();
    rc = run_wait(argv, o->kill_ms, &res->kill_ns);
    res->wall_s = now_s() - t0;
    res->produced = per_proc * (uint64_t)o->procs;
    if (rc != 0)
        fprintf(stderr, "bench_thru: %s exited %d\n", sampler, rc);
    else
        rc = thru_check(file, o->procs, per_proc, res);
    unlink(file);
    unlink(lock);
    return rc;
}

static int thru_lossless(const struct thru_res *r)
{
    return r->dropped == 0 && r->unique == r->produced && r->landed == r->unique;
}

static void thru_print(const struct thru_opts *o, long rate, int try, const struct thru_res *r)
{
    char subj[64];
    double span = r->t_max_ns > r->t_min_ns ? (double)(r->t_max_ns - r->t_min_ns) / 1e9 : 0;
    double ns_rec = r->landed ? (double)r->cpu_ns / (double)r->landed : 0;
    uint64_t missing = r->produced - r->unique - r->dropped;

    if (r->unique + r->dropped > r->produced)
        missing = 0;
    snprintf(subj, sizeof(subj), "thru.%dx%ldk", o->procs, rate / 1000);
    printf("%-20s dropped    %8.4f  %%      produced=%llu landed=%llu dropped=%llu dup=%llu "
           "missing=%llu try=%d secs=%ld span_s=%.2f wall_s=%.2f ring_kb=%s dir=%s load=%.1f\n",
           subj, r->produced ? 100.0 * (double)r->dropped / (double)r->produced : 0,
           (unsigned long long)r->produced, (unsigned long long)r->landed,
           (unsigned long long)r->dropped, (unsigned long long)(r->landed - r->unique),
           (unsigned long long)missing, try, o->secs, span, r->wall_s,
           o->ring_kb ? o->ring_kb : "default", o->dir, loadavg());
    if (r->kill_ns) {
        printf("%-20s killed     %8.1f  ms     kept=%llu newest_record_before_kill kill_ms=%ld\n",
               subj, r->kill_ns > r->t_max_ns ? (double)(r->kill_ns - r->t_max_ns) / 1e6 : 0,
               (unsigned long long)r->landed, o->kill_ms);
        fflush(stdout);
        return;
    }
    printf("%-20s collector  %8.1f  ns/rec cores_per_2M=%.3f collector_cpu_s=%.2f "
           "rate=%.0fk/s try=%d\n",
           subj, ns_rec, ns_rec * 2e6 / 1e9, (double)r->cpu_ns / 1e9,
           span > 0 ? (double)r->landed / span / 1e3 : 0, try);
    fflush(stdout);
}

/* Raise the total rate 1.25x a step from P x R until a try is not
 * lossless; print the last lossless total. */
static int thru_search(const struct thru_opts *o)
{
    long rate = o->rate, best = 0;
    struct thru_res r;

    for (int step = 0; step < 12; step++, rate = rate * 5 / 4) {
        if (thru_try(o, rate, &r) < 0)
            return -1;
        thru_print(o, rate, 1, &r);
        if (!thru_lossless(&r))
            break;
        best = rate;
    }
    printf("thru.max_lossless      total      %8.0f  k/s    procs=%d per_proc=%ldk/s secs=%ld "
           "first_loss=%ldk/s ring_kb=%s load=%.1f\n",
           (double)best * o->procs / 1e3, o->procs, best / 1000, o->secs,
           best == rate ? 0 : rate / 1000, o->ring_kb ? o->ring_kb : "default", loadavg());
    return 0;
}

int main(int argc, char **argv)
{
    struct thru_opts o = {2, 1, 0, 400000, 10, getenv("CS_BENCH_DISK_DIR"), NULL, NULL, 0};
    char self[PATH_MAX], host[64] = "";
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    int opt, rc = 0;

    while ((opt = getopt(argc, argv, "p:r:s:n:d:k:S:K:x")) != -1) {
        switch (opt) {
        case 'p': o.procs = atoi(optarg); break;
        case 'r': o.rate = atol(optarg); break;
        case 's': o.secs = atol(optarg); break;
        case 'n': o.tries = atoi(optarg); break;
        case 'd': o.dir = optarg; break;
        case 'k': o.ring_kb = optarg; break;
        case 'S': o.sampler = optarg; break;
        case 'K': o.kill_ms = atol(optarg); break;
        case 'x': o.search = 1; break;
        default:
            fprintf(stderr, "usage: bench_thru [-p PROCS] [-r RATE] [-s SECS] [-n TRIES] "
                            "[-d DIR] [-k RING_KB] [-S SAMPLER] [-K MS] [-x]\n");
            return 2;
        }
    }
    if (len <= 0 || o.procs < 1 || o.procs > 1024 || o.rate < 1000 || o.secs < 1 || o.tries < 0)
        return 2;
    if (o.dir == NULL || *o.dir == '\0')
        o.dir = "/var/tmp";
    self[len] = '\0';
    snprintf(bindir, sizeof(bindir), "%s", dirname(self));
    if (o.ring_kb)
        setenv("CUDASPY_RING_KB", o.ring_kb, 1);
    setenv("CUDASPY_CLOCK", "tsc", 1); /* the default where the clocksource is tsc */
    gethostname(host, sizeof(host) - 1);
    printf("# cudaspy-bench host=%s cmd=\"bench_thru -p %d -r %ld -s %ld -n %d -d %s -K %ld%s%s%s%s%s\"\n",
           host, o.procs, o.rate, o.secs, o.tries, o.dir, o.kill_ms, o.ring_kb ? " -k " : "",
           o.ring_kb ? o.ring_kb : "", o.sampler ? " -S " : "", o.sampler ? o.sampler : "",
           o.search ? " -x" : "");
    for (int t = 1; t <= o.tries; t++) {
        struct thru_res r;
        if (thru_try(&o, o.rate, &r) < 0) {
            rc = 1;
            continue;
        }
        thru_print(&o, o.rate, t, &r);
    }
    if (o.search && thru_search(&o) < 0)
        rc = 1;
    return rc;
}
