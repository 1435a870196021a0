/* fuzz_mcp.c: libFuzzer target for the MCP server's request handler
 * (analyzer/mcp/mcp_proto.c mcp_proto_handle() and every tool and prompt behind
 * it). Two runs are loaded once, as `cudaspy-analyze mcp RUN RUN` would load
 * them (analysis, its JSON, the query index, the gate summary); each input
 * is split into lines and every line is answered in-process. Each response
 * is also serialised, so what a tool returns is read to the last byte.
 * The run file is $CS_FUZZ_RUN, else the seed run compiled in, copied to a
 * scratch file first (opening it leaves a -lock file beside it). */
#include "analysis.h"
#include "fuzz_common.h"
#include "mcp/mcp.h"
#include "gate/summary.h"

#ifndef CS_FUZZ_RUN
#define CS_FUZZ_RUN "run.lmdb"
#endif
#define NRUNS 2

static struct mcp_server server;
static const char *paths[NRUNS];
static const char *names[NRUNS] = {"base.lmdb", "new.lmdb"};
static struct analysis *an[NRUNS];
static json_t *aj[NRUNS];
static struct mcp_index *idx[NRUNS];
static struct summary *sum[NRUNS];

/* The loading mcp.c does at startup, from analyzer/ public functions. */
static int load_run(int i)
{
    struct analysis_opts o;
    struct cs_err err = {""};
    int rc;

    analysis_opts_init(&o);
    o.top = 0;
    if ((rc = analysis_load(&paths[i], 1, &o, &an[i], &err)) < 0)
        goto fail;
    if ((aj[i] = analysis_json(an[i])) == NULL)
        return -1;
    struct cs_run *r = analysis_run(an[i], 0);
    if ((rc = mcp_index_build(r, analysis_t0(an[i], 0), &idx[i], &err)) < 0)
        goto fail;
    if ((rc = summary_from_run(r, names[i], SUMMARY_SAMPLES_DEFAULT, 0, &sum[i], &err)) < 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "fuzz_mcp: %s: %s\n", paths[i], err.msg[0] ? err.msg : cs_strerror(rc));
    return -1;
}

/* Copy @p src to the scratch file. @return its path, or NULL */
static const char *scratch_copy(const char *src)
{
    static uint8_t buf[16 << 20];
    const char *dst = fuzz_scratch("mcp-run");
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

    if (fd >= 0)
        close(fd);
    if (n <= 0 || fuzz_write_file(dst, buf, (size_t)n) < 0) {
        fprintf(stderr, "fuzz_mcp: %s: cannot copy the run file\n", src);
        return NULL;
    }
    return dst;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *env = getenv("CS_FUZZ_RUN");
    const char *run = scratch_copy(env && *env ? env : CS_FUZZ_RUN);

    (void)argc;
    (void)argv;
    if (run == NULL)
        exit(1);
    for (int i = 0; i < NRUNS; i++) {
        paths[i] = run;
        if (load_run(i) < 0)
            exit(1);
    }
    server.nruns = NRUNS;
    server.paths = paths;
    server.names = names;
    server.an = an;
    server.aj = aj;
    server.idx = idx;
    server.sum = sum;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    const char *p = (const char *)d, *end = p + n;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_t *resp = mcp_proto_handle(&server, p, len);
        if (resp) {
            char *s = json_dumps(resp, JSON_COMPACT);
            if (s == NULL)
                abort(); /* a response jansson cannot serialise would hang the client */
            free(s);
            json_decref(resp);
        }
        p += len + 1;
    }
    return 0;
}
