/* bench_analyzer.c: time `cudaspy-analyze --json` on a big synthetic run
 * (default 10 M CUDA records + as many host records from
 * test/analyzer/gen_run, cached in WORKDIR): wall time, CPU time and peak
 * RSS of the child, from wait4()'s rusage, and its peak anonymous memory
 * (RssAnon, polled every 10 ms: RSS also counts the run file's mapped pages,
 * which the kernel can drop). With CGROUP (a memory cgroup directory, v1 or
 * v2, made by the caller) each run is started inside it, and the cgroup's
 * peak usage and limit are printed: a run that the limit kills fails. Issue
 * 25's target: 200 M + 100 M in <= 60 s and 4 GB on a 2-core machine; the
 * load average is printed because wall time means little on a busy box.
 * Usage: bench_analyzer [CUDASPY_ANALYZE GEN_RUN WORKDIR [EVENTS] [REPEAT]
 *                        [HOST_EVENTS] [CGROUP]]
 * (without arguments: binaries next to this one, WORKDIR /tmp) */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct sample {
    double wall_s, user_s, sys_s;
    long rss_kb, anon_kb;
    unsigned long long cg_peak, cg_limit; /* bytes; 0 without a cgroup */
    int status;                           /* from wait4() */
};

static const char *cgroup; /* memory cgroup directory, or NULL */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes @p text into file @p name of the cgroup. @return 0 or -errno */
static int cg_write(const char *name, const char *text)
{
    char path[4400];
    int fd, rc = 0;

    snprintf(path, sizeof(path), "%s/%s", cgroup, name);
    if ((fd = open(path, O_WRONLY)) < 0)
        return -errno;
    if (write(fd, text, strlen(text)) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* The number in the first of the cgroup's files @p a, @p b that exists. */
static unsigned long long cg_read(const char *a, const char *b)
{
    char path[4400];
    unsigned long long v = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", cgroup, a);
    if ((f = fopen(path, "r")) == NULL) {
        snprintf(path, sizeof(path), "%s/%s", cgroup, b);
        f = fopen(path, "r");
    }
    if (f && fscanf(f, "%llu", &v) != 1)
        v = 0; /* "max": no limit */
    if (f)
        fclose(f);
    return v;
}

/* The child's RssAnon (kB) now, 0 once it is gone. */
static long anon_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "RssAnon: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* In the child: join the cgroup, stdout to /dev/null, exec. */
static void child(char *const argv[])
{
    char pid[32];
    int fd = open("/dev/null", O_WRONLY);

    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (cgroup && cg_write("cgroup.procs", pid) < 0)
        _exit(126);
    if (fd >= 0)
        dup2(fd, STDOUT_FILENO);
    execv(argv[0], argv);
    _exit(127);
}

/* Runs argv with stdout to /dev/null; fills @p s from the child's rusage,
 * its polled RssAnon and the cgroup's peak. */
static int run(char *const argv[], struct sample *s)
{
    struct rusage ru;
    int status;
    double t0 = now_s();
    pid_t pid;

    memset(s, 0, sizeof(*s));
    if (cgroup) /* v1 resets its peak on a write; v2's memory.peak is per cgroup life */
        cg_write("memory.max_usage_in_bytes", "0");
    if ((pid = fork()) < 0)
        return -errno;
    if (pid == 0)
        child(argv);
    for (;;) {
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        long kb = anon_kb(pid);
        if (w < 0)
            return -errno;
        if (w == pid)
            break;
        s->anon_kb = kb > s->anon_kb ? kb : s->anon_kb;
        usleep(10000);
    }
    if (cgroup) {
        s->cg_peak = cg_read("memory.max_usage_in_bytes", "memory.peak");
        s->cg_limit = cg_read("memory.limit_in_bytes", "memory.max");
    }
    s->wall_s = now_s() - t0;
    s->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    s->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    s->rss_kb = ru.ru_maxrss;
    s->status = status;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

static int cmp_wall(const void *a, const void *b)
{
    const struct sample *x = a, *y = b;
    return x->wall_s < y->wall_s ? -1 : x->wall_s > y->wall_s;
}

int main(int argc, char **argv)
{
    char self[4096] = "", analyze[4200], gen[4200], run_path[4400], events_s[32];
    const char *work = argc > 3 ? argv[3] : "/tmp";
    unsigned long long events = argc > 4 ? strtoull(argv[4], NULL, 0) : 10000000ull;
    int repeat = argc > 5 ? atoi(argv[5]) : 3;
    unsigned long long hosts = argc > 6 ? strtoull(argv[6], NULL, 0) : events;
    char hosts_s[32];
    struct sample s[16], g;
    double load[3] = {0};
    struct stat st;

    if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0)
        return 3;
    snprintf(analyze, sizeof(analyze), "%s", argc > 2 ? argv[1] : "");
    snprintf(gen, sizeof(gen), "%s", argc > 2 ? argv[2] : "");
    if (argc <= 2) {
        snprintf(analyze, sizeof(analyze), "%s/cudaspy-analyze", dirname(strdup(self)));
        snprintf(gen, sizeof(gen), "%s/gen_run", dirname(strdup(self)));
    }
    repeat = repeat < 1 ? 1 : repeat > 16 ? 16 : repeat;
    cgroup = argc > 7 ? argv[7] : NULL;
    snprintf(events_s, sizeof(events_s), "%llu", events);
    snprintf(hosts_s, sizeof(hosts_s), "%llu", hosts);
    if (hosts == events) /* the name the 10 M + 10 M file always had */
        snprintf(run_path, sizeof(run_path), "%s/bench_analyzer_%llu.lmdb", work, events);
    else
        snprintf(run_path, sizeof(run_path), "%s/bench_analyzer_%llu_%llu.lmdb", work, events,
                 hosts);
    printf("# cudaspy-bench cmd=\"bench_analyzer %s %s %s %llu %d %llu%s%s\"\n", analyze, gen,
           work, events, repeat, hosts, cgroup ? " " : "", cgroup ? cgroup : "");
    if (stat(run_path, &st) < 0) {
        char *gargv[] = {gen, "big", run_path, "--big", events_s, "--big-host", hosts_s, NULL};
        const char *cg = cgroup;
        cgroup = NULL; /* the writer is not what is measured */
        if (run(gargv, &g) < 0) {
            fprintf(stderr, "bench_analyzer: %s: gen_run failed\n", run_path);
            return 3;
        }
        cgroup = cg;
        printf("analyzer.gen_run          wall      %8.2f  s      events=%llu+%llu\n", g.wall_s,
               events, hosts);
    }
    for (int i = 0; i < repeat; i++) {
        char *aargv[] = {analyze, "--json", run_path, NULL};
        if (run(aargv, &s[i]) < 0) { /* a figure too: what the limit did */
            printf("analyzer.report_json      failed    %8.2f  s      status=0x%x anon=%.0fMB "
                   "cg_peak=%.0fMB\n", s[i].wall_s, s[i].status, (double)s[i].anon_kb / 1024.0,
                   (double)s[i].cg_peak / 1048576.0);
            fprintf(stderr, "bench_analyzer: %s: cudaspy-analyze failed\n", run_path);
            return 3;
        }
    }
    getloadavg(load, 3);
    long rss = 0, anon = 0;
    unsigned long long cg_peak = 0;
    for (int i = 0; i < repeat; i++) {
        rss = s[i].rss_kb > rss ? s[i].rss_kb : rss;
        anon = s[i].anon_kb > anon ? s[i].anon_kb : anon;
        cg_peak = s[i].cg_peak > cg_peak ? s[i].cg_peak : cg_peak;
    }
    qsort(s, (size_t)repeat, sizeof(s[0]), cmp_wall);
    const struct sample *med = &s[repeat / 2];
    printf("analyzer.report_json      wall_p50  %8.2f  s      cuda=%llu host=%llu runs=%d "
           "load1=%.1f\n", med->wall_s, events, hosts, repeat, load[0]);
    printf("analyzer.report_json      cpu_p50   %8.2f  s      user=%.2f sys=%.2f\n",
           med->user_s + med->sys_s, med->user_s, med->sys_s);
    printf("analyzer.report_json      max_rss   %8.0f  MB     runs=%d (with the run file's pages)\n",
           (double)rss / 1024.0, repeat);
    printf("analyzer.report_json      max_anon  %8.0f  MB     runs=%d polled=10ms\n",
           (double)anon / 1024.0, repeat);
    if (cgroup)
        printf("analyzer.report_json      cg_peak   %8.0f  MB     limit=%.0fMB cgroup=%s\n",
               (double)cg_peak / 1048576.0, (double)s[0].cg_limit / 1048576.0, cgroup);
    return 0;
}
