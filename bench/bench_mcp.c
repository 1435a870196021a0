/* bench_mcp.c: time `cudaspy-analyze mcp` on a big synthetic run (default
 * 10 M CUDA records + as many host records from test/analyzer/gen_run,
 * cached in WORKDIR): the startup (spawn to the initialize answer, which
 * waits for every run to load), spawn to the first tools/call answer
 * (issue 25: <= 10 s on 200 M + 100 M), then each tool's first call and the
 * p50/max of repeated calls, driven over pipes as a client would.
 * REPEAT 0 times only the first answer (get_causal_chains), twice: from a
 * start without the analysis kept beside the run (which keeps it), then
 * from a start that reads it (mcp_keep.c): at 200 M + 100 M the index the
 * other tools need does not fit in memory.
 * Usage: bench_mcp CUDASPY_ANALYZE GEN_RUN WORKDIR [EVENTS] [REPEAT] [HOST_EVENTS] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mcp/mcp_pipe.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One tool and its arguments (a JSON object). */
struct bench_case {
    const char *tool, *args, *label;
};

static const struct bench_case cases[] = {
    {"get_trace_stats", "{}", "get_trace_stats"},
    {"get_trace_stats", "{\"pid\":1000}", "get_trace_stats.pid"},
    {"get_trace_stats", "{\"since_ms\":1000,\"until_ms\":2000}", "get_trace_stats.window"},
    {"get_causal_chains", "{}", "get_causal_chains"},
    {"get_per_process_breakdown", "{}", "get_per_process_breakdown"},
    {"get_api_latency", "{\"api\":\"cudaLaunchKernel\"}", "get_api_latency"},
    {"get_api_latency", "{\"api\":\"cudaLaunchKernel\",\"kernel\":\"sgemm_kernel\"}",
     "get_api_latency.kernel"},
    {"get_gpu_feed", "{}", "get_gpu_feed"},
    {"get_timeline", "{\"pid\":1000,\"since_ms\":5000,\"limit\":500}", "get_timeline"},
    {"get_top_stalls", "{}", "get_top_stalls"},
    {"get_top_stalls", "{\"class\":\"preempt\"}", "get_top_stalls.class"},
    {"compare_runs", "{\"base\":0,\"new\":0}", "compare_runs"},
};

/* Timed first, in this order, from the server's spawn: cases[] indexes. */
static const size_t first_cases[2] = {3, 0}; /* get_causal_chains, get_trace_stats */

/* One call: its wall time, or a negative value if it failed. */
static double timed_call(struct mcp_pipe *p, const struct bench_case *c, int id)
{
    char line[512];
    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
             "{\"name\":\"%s\",\"arguments\":%s}}",
             id, c->tool, c->args);
    double t = now_ms();
    /* a first call may build the run's index or gate summary: minutes at scale */
    json_t *r = mcp_pipe_send(p, line) < 0 ? NULL : mcp_pipe_recv(p, 600000);
    t = now_ms() - t;
    json_t *res = json_object_get(r, "result");
    int ok = res && !json_is_true(json_object_get(res, "isError"));
    if (!ok) {
        char *d = r ? json_dumps(r, JSON_COMPACT) : NULL;
        fprintf(stderr, "bench_mcp: %s: failed: %.300s\n", c->label, d ? d : "no answer");
        free(d);
    }
    json_decref(r);
    return ok ? t : -1;
}

static int bench_case(struct mcp_pipe *p, const struct bench_case *c, int repeat, int *id)
{
    double first = timed_call(p, c, (*id)++), *t = calloc((size_t)repeat, sizeof(*t));
    if (first < 0 || !t) {
        free(t);
        return -1;
    }
    for (int i = 0; i < repeat; i++)
        if ((t[i] = timed_call(p, c, (*id)++)) < 0) {
            free(t);
            return -1;
        }
    qsort(t, (size_t)repeat, sizeof(*t), cmp_double);
    printf("mcp.%-28s first       %9.2f  ms\n", c->label, first);
    printf("mcp.%-28s p50         %9.2f  ms     n=%d\n", c->label, t[repeat / 2], repeat);
    printf("mcp.%-28s max         %9.2f  ms     n=%d\n", c->label, t[repeat - 1], repeat);
    free(t);
    return 0;
}

/* The run file for @p events, generated once. */
static int ensure_run(const char *gen, const char *path, unsigned long long events,
                      unsigned long long hosts)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return 0;
    char cmd[8400];
    snprintf(cmd, sizeof(cmd), "'%s' big '%s' --big %llu --big-host %llu", gen, path, events,
             hosts);
    double t = now_ms();
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_mcp: %s: gen_run failed\n", path);
        return -1;
    }
    fprintf(stderr, "bench_mcp: wrote %s in %.1f s\n", path, (now_ms() - t) / 1e3);
    return 0;
}

static void header(int argc, char **argv)
{
    char commit[64] = "unknown", host[256] = "unknown";
    FILE *f = popen("git rev-parse --short HEAD 2>/dev/null", "r");
    if (f) {
        if (fscanf(f, "%63s", commit) != 1)
            snprintf(commit, sizeof(commit), "unknown");
        pclose(f);
    }
    gethostname(host, sizeof(host) - 1);
    printf("# cudaspy-bench commit=%s host=%s cmd=\"bench_mcp", commit, host);
    for (int i = 3; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\"\n");
}

/* The MCP handshake on @p p: the server's answer, or NULL (10 min at most). */
static json_t *initialize(struct mcp_pipe *p)
{
    return mcp_pipe_send(p, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                            "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                            "\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}") == 0
               ? mcp_pipe_recv(p, 600000)
               : NULL;
}

/* Spawn to the initialize answer and to the first get_causal_chains answer
 * of one server, printed as @p label. @return 0 or -1 */
static int first_answer(const char *bin, const char *run, const char *label,
                        unsigned long long events, unsigned long long hosts)
{
    struct mcp_pipe *p = malloc(sizeof(*p));
    double t = now_ms(), load1 = 0;
    int rc = -1;

    if (!p || mcp_pipe_start(p, bin, run, 2) < 0) {
        free(p);
        return -1;
    }
    json_t *r = initialize(p);
    if (json_object_get(r, "result")) {
        printf("mcp.startup.%-21s load        %9.2f  s      cuda=%llu host=%llu\n", label,
               (now_ms() - t) / 1e3, events, hosts);
        rc = timed_call(p, &cases[first_cases[0]], 1) < 0 ? -1 : 0;
        getloadavg(&load1, 1);
        printf("mcp.first_answer.%-16s %-9s %9.2f  s      load1=%.1f tool=%s\n", label,
               rc < 0 ? "failed" : "spawn", (now_ms() - t) / 1e3, load1,
               cases[first_cases[0]].tool);
    }
    json_decref(r);
    if (mcp_pipe_stop(p) != 0)
        rc = -1;
    free(p);
    return rc;
}


/* REPEAT 0: the first answer without, then with the analysis kept. */
static int first_answers(const char *bin, const char *run, unsigned long long events,
                         unsigned long long hosts)
{
    char kept[4200];

    snprintf(kept, sizeof(kept), "%s-analysis", run);
    unlink(kept);
    if (first_answer(bin, run, "analysed", events, hosts) < 0)
        return 1;
    return first_answer(bin, run, "kept", events, hosts) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_mcp CUDASPY_ANALYZE GEN_RUN WORKDIR [EVENTS] [REPEAT] "
                        "[HOST_EVENTS]\n");
        return 2;
    }
    unsigned long long events = argc > 4 ? strtoull(argv[4], NULL, 0) : 10000000ull;
    int repeat = argc > 5 ? atoi(argv[5]) : 20, id = 1;
    unsigned long long hosts = argc > 6 ? strtoull(argv[6], NULL, 0) : events;
    char run[4096];
    if (hosts == events)
        snprintf(run, sizeof(run), "%s/mcp-big-%llu.lmdb", argv[3], events);
    else
        snprintf(run, sizeof(run), "%s/mcp-big-%llu_%llu.lmdb", argv[3], events, hosts);
    if (repeat < 0 || ensure_run(argv[2], run, events, hosts) < 0)
        return 2;
    header(argc, argv);
    if (repeat == 0)
        return first_answers(argv[1], run, events, hosts);
    struct mcp_pipe *p = malloc(sizeof(*p));
    double t = now_ms();
    if (!p || mcp_pipe_start(p, argv[1], run, 2) < 0)
        return 3;
    json_t *r = initialize(p);
    if (!json_object_get(r, "result")) {
        fprintf(stderr, "bench_mcp: %s: no initialize answer\n", run);
        return 3;
    }
    json_decref(r);
    printf("mcp.startup                      load        %9.2f  s      cuda=%llu host=%llu\n",
           (now_ms() - t) / 1e3, events, hosts);
    /* the first answer: a tool that needs only the analysis, then one that
     * needs the index too (both cached after, so the cases below see them) */
    int rc = 0;
    double load1 = 0;
    for (size_t k = 0; k < 2 && rc == 0; k++) {
        const struct bench_case *fc = &cases[first_cases[k]];
        rc = timed_call(p, fc, id++) < 0 ? -1 : 0;
        getloadavg(&load1, 1);
        printf("mcp.first_answer.%-17s %-9s %9.2f  s      load1=%.1f\n", fc->label,
               rc < 0 ? "failed" : "spawn", (now_ms() - t) / 1e3, load1);
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && rc == 0; i++)
        rc = bench_case(p, &cases[i], repeat, &id);
    int st = mcp_pipe_stop(p);
    free(p);
    return rc < 0 || st != 0 ? 1 : 0;
}
