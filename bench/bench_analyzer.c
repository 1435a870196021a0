/* bench_analyzer.c: time `cudaspy-analyze --json` on a big synthetic run
 * (default 10 M CUDA records + 10 M host records from test/analyzer/gen_run,
 * cached in WORKDIR): wall time, CPU time and peak RSS of the child, from
 * wait4()'s rusage. The target is <= 5 s and <= 2 GB on a 2-core machine;
 * the load average is printed because wall time means little on a busy box.
 * Usage: bench_analyzer [CUDASPY_ANALYZE GEN_RUN WORKDIR [EVENTS] [REPEAT]]
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
    long rss_kb;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv with stdout to /dev/null; fills @p s from the child's rusage. */
static int run(char *const argv[], struct sample *s)
{
    struct rusage ru;
    int status;
    double t0 = now_s();
    pid_t pid = fork();

    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, STDOUT_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    if (wait4(pid, &status, 0, &ru) < 0)
        return -errno;
    s->wall_s = now_s() - t0;
    s->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    s->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    s->rss_kb = ru.ru_maxrss;
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
    snprintf(events_s, sizeof(events_s), "%llu", events);
    snprintf(run_path, sizeof(run_path), "%s/bench_analyzer_%llu.lmdb", work, events);
    printf("# cudaspy-bench cmd=\"bench_analyzer %s %s %s %llu %d\"\n", analyze, gen, work, events,
           repeat);
    if (stat(run_path, &st) < 0) {
        char *gargv[] = {gen, "big", run_path, "--big", events_s, NULL};
        if (run(gargv, &g) < 0) {
            fprintf(stderr, "bench_analyzer: %s: gen_run failed\n", run_path);
            return 3;
        }
        printf("analyzer.gen_run          wall      %8.2f  s      events=%llu+%llu\n", g.wall_s,
               events, events);
    }
    for (int i = 0; i < repeat; i++) {
        char *aargv[] = {analyze, "--json", run_path, NULL};
        if (run(aargv, &s[i]) < 0) {
            fprintf(stderr, "bench_analyzer: %s: cudaspy-analyze failed\n", run_path);
            return 3;
        }
    }
    getloadavg(load, 3);
    long rss = 0;
    for (int i = 0; i < repeat; i++)
        rss = s[i].rss_kb > rss ? s[i].rss_kb : rss;
    qsort(s, (size_t)repeat, sizeof(s[0]), cmp_wall);
    const struct sample *med = &s[repeat / 2];
    printf("analyzer.report_json      wall_p50  %8.2f  s      cuda=%llu host=%llu runs=%d "
           "load1=%.1f\n", med->wall_s, events, events, repeat, load[0]);
    printf("analyzer.report_json      cpu_p50   %8.2f  s      user=%.2f sys=%.2f\n",
           med->user_s + med->sys_s, med->user_s, med->sys_s);
    printf("analyzer.report_json      max_rss   %8.0f  MB     runs=%d\n", (double)rss / 1024.0,
           repeat);
    return 0;
}
