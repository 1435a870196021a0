/* mcp/mcp.c: `cudaspy-analyze mcp RUN.lmdb...`, the Model Context Protocol
 * server. Owns the command line and the startup: each run file's analysis
 * JSON is read from the analysis an earlier start kept beside it
 * (mcp_keep.c), or the run is analysed once at startup and its JSON kept;
 * the analysis itself (when the JSON was kept), the query index and the
 * gate summary are built by the first tool that needs them, and every
 * request is answered from memory. The protocol is mcp_proto.c's, the tools
 * mcp_tools.c's and mcp_query.c's. Logs go to stderr; stdout carries only
 * protocol messages. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "commands.h"
#include "mcp.h"
#include "gate/measure.h"
#include "gate/summary.h"

static const char mcp_usage[] =
    "Usage: cudaspy-analyze mcp RUN.lmdb [MORE.lmdb ...]\n"
    "\n"
    "Serve the run files to an LLM over the Model Context Protocol: newline-delimited\n"
    "JSON-RPC 2.0 on stdin/stdout (protocol versions 2025-06-18, 2025-11-25 with the\n"
    "initialize handshake; 2026-07-28 stateless requests). Read-only: tools reach only\n"
    "the files named here, by index (0 = first) or basename. Logs go to stderr.\n"
    "Tools: get_trace_stats, get_causal_chains, get_account, get_per_process_breakdown,\n"
    "get_api_latency, get_gpu_feed, get_gpu_timeline, get_steps, get_hotspots, get_timeline,\n"
    "get_top_stalls, compare_runs, get_memory.\n"
    "Prompt: investigate. Details and client configuration: docs/mcp.md.\n"
    "\n"
    "Exit status: 0 when stdin ends, 2 usage or unreadable run file, 3 system failure.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy-analyze mcp run.lmdb\n"
    "  cudaspy-analyze mcp base.lmdb new.lmdb   # compare_runs {\"base\":0,\"new\":1}\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void server_free(struct mcp_server *s)
{
    for (int i = 0; i < s->nruns; i++) {
        if (s->idx)
            mcp_index_free(s->idx[i]);
        if (s->sum)
            summary_free(s->sum[i]);
        if (s->aj)
            json_decref(s->aj[i]);
        if (s->an)
            analysis_free(s->an[i]);
    }
    free(s->idx);
    free(s->sum);
    free(s->aj);
    free(s->an);
    free(s->names);
}

/* See mcp.h. */
int mcp_server_analysis(struct mcp_server *s, int i)
{
    struct analysis_opts o;
    struct cs_err err = {""};
    double t = now_s();
    int rc;

    if (s->an[i])
        return 0;
    analysis_opts_init(&o);
    o.top = 0;
    rc = analysis_load(&s->paths[i], 1, &o, &s->an[i], &err);
    if (rc == 0 && s->aj[i] == NULL && (s->aj[i] = analysis_json(s->an[i])) == NULL)
        rc = -ENOMEM;
    if (rc < 0) {
        fprintf(stderr, "cudaspy-analyze: %s: %s\n", s->paths[i],
                err.msg[0] ? err.msg : cs_strerror(rc));
        analysis_free(s->an[i]);
        s->an[i] = NULL;
        return rc;
    }
    fprintf(stderr, "cudaspy-analyze: mcp: run %d %s: analysed in %.2f s\n", i, s->names[i],
            now_s() - t);
    return 0;
}

/* Is the analysis kept beside the run (or in the cache folder)? Keeping is
 * on unless CUDASPY_KEEP=off. */
static int keep_on(void)
{
    const char *env = getenv("CUDASPY_KEEP");
    return !(env && strcmp(env, "off") == 0);
}

/* Run @p i's JSON from its kept analysis, beside the run first, then in the
 * cache folder. A stale or corrupt one is said and passed over.
 * @return 1 when read, else 0 */
static int keep_read(struct mcp_server *s, int i, const struct mcp_keep_stamp *st)
{
    char path[PATH_MAX + 64];
    double t = now_s();

    for (int where = MCP_KEEP_BESIDE; where <= MCP_KEEP_CACHE; where++) {
        const char *why = "";
        int rc = mcp_keep_path(s->paths[i], where, path, sizeof(path));
        if (rc == 0)
            rc = mcp_keep_load(path, st, &s->aj[i], &why);
        if (rc == 0) {
            fprintf(stderr, "cudaspy-analyze: mcp: run %d %s: analysis read from %s in %.2f s\n",
                    i, s->names[i], path, now_s() - t);
            return 1;
        }
        if (rc == MCP_KEEP_STALE || rc == MCP_KEEP_CORRUPT)
            fprintf(stderr, "cudaspy-analyze: mcp: %s: %s kept analysis (%s): not used\n", path,
                    rc == MCP_KEEP_STALE ? "stale" : "corrupt", why);
    }
    return 0;
}

/* Keep run @p i's JSON for the next start: beside the run, else in the
 * cache folder; not at all when the run changed while it was analysed
 * (stamp @p st taken before). Says where, or why not. */
static void keep_write(struct mcp_server *s, int i, const struct mcp_keep_stamp *st)
{
    char path[PATH_MAX + 64], first[PATH_MAX + 64] = "";
    struct mcp_keep_stamp now;
    int rc = mcp_keep_stamp(s->paths[i], &now), rc0 = 0;

    if (rc < 0 || !mcp_keep_stamp_same(st, &now)) {
        fprintf(stderr, "cudaspy-analyze: mcp: %s: changed while it was analysed: analysis not "
                        "kept\n", s->paths[i]);
        return;
    }
    for (int where = MCP_KEEP_BESIDE; where <= MCP_KEEP_CACHE; where++) {
        rc = mcp_keep_path(s->paths[i], where, path, sizeof(path));
        if (rc == 0)
            rc = mcp_keep_store(path, st, s->aj[i]);
        if (rc == 0) {
            fprintf(stderr, "cudaspy-analyze: mcp: run %d %s: analysis kept in %s\n", i,
                    s->names[i], path);
            return;
        }
        if (where == MCP_KEEP_BESIDE) {
            snprintf(first, sizeof(first), "%s", path);
            rc0 = rc;
        }
    }
    fprintf(stderr, "cudaspy-analyze: mcp: %s: analysis not kept (%s; cache folder: %s)\n", first,
            cs_strerror(rc0), cs_strerror(rc));
}

/* Load run @p i: its JSON, from the analysis kept by an earlier start when
 * it is there and valid, else from an analysis, which is then kept. The
 * index and the gate summary wait for the first tool that needs them
 * (mcp_server_index(), mcp_server_summary()): each reads the run again, and
 * several tools need neither. */
static int server_load_run(struct mcp_server *s, int i)
{
    struct mcp_keep_stamp st;
    int keep = keep_on() && mcp_keep_stamp(s->paths[i], &st) == 0, rc;

    if (keep && keep_read(s, i, &st))
        return 0;
    if ((rc = mcp_server_analysis(s, i)) < 0)
        return rc;
    if (keep)
        keep_write(s, i, &st);
    return 0;
}

/* See mcp.h. */
int mcp_server_index(struct mcp_server *s, int i)
{
    struct cs_err err = {""};
    double t = now_s();
    int rc;

    if (s->idx[i])
        return 0;
    if ((rc = mcp_server_analysis(s, i)) < 0)
        return rc;
    rc = mcp_index_build(analysis_run(s->an[i], 0), analysis_t0(s->an[i], 0), &s->idx[i], &err);
    if (rc < 0) {
        fprintf(stderr, "cudaspy-analyze: mcp: %s: index: %s\n", s->paths[i],
                err.msg[0] ? err.msg : cs_strerror(rc));
        s->idx[i] = NULL;
        return rc;
    }
    fprintf(stderr,
            "cudaspy-analyze: mcp: run %d %s: indexed in %.2f s (%llu CUDA calls, %llu off-CPU "
            "intervals)\n",
            i, s->names[i], now_s() - t, (unsigned long long)s->idx[i]->ncalls,
            (unsigned long long)s->idx[i]->noffs);
    return 0;
}

/* See mcp.h. */
int mcp_server_summary(struct mcp_server *s, int i)
{
    struct cs_err err = {""};
    double t = now_s();
    int rc;

    if (s->sum[i])
        return 0;
    if ((rc = mcp_server_analysis(s, i)) < 0)
        return rc;
    rc = summary_from_run(analysis_run(s->an[i], 0), s->names[i], SUMMARY_SAMPLES_DEFAULT, 0,
                          &s->sum[i], &err);
    if (rc == 0)
        rc = measure_analysis(s->an[i], s->aj[i], SUMMARY_SAMPLES_DEFAULT, s->sum[i]);
    if (rc < 0) {
        fprintf(stderr, "cudaspy-analyze: mcp: %s: gate summary: %s\n", s->paths[i],
                err.msg[0] ? err.msg : cs_strerror(rc));
        summary_free(s->sum[i]);
        s->sum[i] = NULL;
        return rc;
    }
    fprintf(stderr, "cudaspy-analyze: mcp: run %d %s: gate summary in %.2f s\n", i, s->names[i],
            now_s() - t);
    return 0;
}

static int server_load(struct mcp_server *s, int n, char **paths)
{
    s->nruns = n;
    s->paths = (const char **)paths;
    s->names = calloc((size_t)n, sizeof(*s->names));
    s->an = calloc((size_t)n, sizeof(*s->an));
    s->aj = calloc((size_t)n, sizeof(*s->aj));
    s->idx = calloc((size_t)n, sizeof(*s->idx));
    s->sum = calloc((size_t)n, sizeof(*s->sum));
    if (!s->names || !s->an || !s->aj || !s->idx || !s->sum)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(paths[i], '/');
        s->names[i] = slash ? slash + 1 : paths[i];
        for (int j = 0; j < i; j++)
            if (strcmp(s->names[i], s->names[j]) == 0)
                fprintf(stderr,
                        "cudaspy-analyze: mcp: %s: same basename as run %d; "
                        "reach it by index %d\n",
                        paths[i], j, i);
    }
    for (int i = 0; i < n; i++) {
        int rc = server_load_run(s, i);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int mcp_main(int argc, char **argv)
{
    int first = 1;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(mcp_usage, stdout);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--") == 0)
        first = 2;
    if (first < argc && argv[first][0] == '-' && argv[first][1]) {
        fprintf(stderr,
                "cudaspy-analyze: mcp: unknown option %s\n"
                "Try 'cudaspy-analyze mcp --help'\n",
                argv[first]);
        return 2;
    }
    if (first >= argc) {
        fprintf(stderr, "cudaspy-analyze: mcp: no run file given\n"
                        "Try 'cudaspy-analyze mcp --help'\n");
        return 2;
    }
    struct mcp_server s = {0};
    int rc = server_load(&s, argc - first, argv + first);
    if (rc < 0) {
        server_free(&s);
        return rc == -ENOMEM || rc == -EIO ? 3 : 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a vanished client shows up as a write error */
    rc = mcp_proto_serve(&s, STDIN_FILENO, stdout);
    if (rc < 0)
        fprintf(stderr, "cudaspy-analyze: mcp: stdout: %s; stopping\n", cs_strerror(rc));
    server_free(&s);
    return rc < 0 ? 3 : 0;
}
