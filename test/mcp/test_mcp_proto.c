/* test_mcp_proto.c: protocol-level tests of `cudaspy-analyze mcp`: a real
 * server process driven over pipes. Each test starts a server, sends raw
 * lines (malformed JSON, batches, huge lines, unknown methods, versions,
 * notifications...), checks the exact error, then checks the server is
 * still alive with a ping. The end-to-end test with the SDK client is
 * test/mcp/e2e.mjs. Usage: test_mcp_proto CUDASPY_ANALYZE RUN.lmdb NASTY.lmdb */
#include <signal.h>
#include <stdlib.h>

#include "check.h"
#include "mcp/mcp_pipe.h"

static const char *bin, *run_path, *nasty_path;

#define srv mcp_pipe
#define srv_start(s, run) mcp_pipe_start((s), bin, (run), -1)
#define srv_send mcp_pipe_send
#define srv_call mcp_pipe_call
#define srv_stop mcp_pipe_stop

static int error_code(json_t *r)
{
    return (int)json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

/* A ping with id 99 is answered with an empty result. */
static int alive(struct srv *s)
{
    json_t *r = srv_call(s, "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\"}");
    int ok = r && json_integer_value(json_object_get(r, "id")) == 99 &&
             json_is_object(json_object_get(r, "result"));
    json_decref(r);
    return ok;
}

/* Send @p line, expect error @p code with a null id (or @p id), then a ping. */
static int expect_error(const char *line, int code, json_int_t id)
{
    struct srv *s = malloc(sizeof(*s));
    CHECK(s);
    CHECK_OK(srv_start(s, run_path));
    json_t *r = srv_call(s, line);
    int ok = r != NULL;
    if (ok) {
        json_t *jid = json_object_get(r, "id");
        if (error_code(r) != code ||
            (id < 0 ? !json_is_null(jid) : json_integer_value(jid) != id)) {
            char *d = json_dumps(r, JSON_COMPACT);
            fprintf(stderr, "got %s, want code %d id %lld\n", d, code, (long long)id);
            free(d);
            ok = 0;
        }
    }
    json_decref(r);
    int live = ok && alive(s);
    int st = srv_stop(s);
    free(s);
    CHECK(ok);
    CHECK(live);
    CHECK_EQ(st, 0);
    return 0;
}

static int test_malformed_json_is_parse_error(void)
{
    return expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", -32700, -1);
}

static int test_non_object_is_invalid_request(void)
{
    return expect_error("42", -32600, -1);
}

static int test_batch_is_invalid_request(void)
{
    return expect_error("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600, -1);
}

static int test_missing_jsonrpc_is_invalid_request(void)
{
    return expect_error("{\"id\":3,\"method\":\"ping\"}", -32600, 3);
}

static int test_object_id_is_invalid_request(void)
{
    return expect_error("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600, -1);
}

static int test_unknown_method_not_found(void)
{
    return expect_error("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/list\"}", -32601, 4);
}

static int test_array_params_invalid(void)
{
    return expect_error("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":[1]}",
                        -32602, 5);
}

static int test_unknown_tool_invalid_params(void)
{
    return expect_error("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\","
                        "\"params\":{\"name\":\"rm_rf\",\"arguments\":{}}}",
                        -32602, 6);
}

static int test_unsupported_meta_version(void)
{
    return expect_error("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":"
                        "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\"}}}",
                        -32022, 7);
}

static int test_huge_line_rejected_and_skipped(void)
{
    size_t n = 3u << 20;
    char *line = malloc(n + 1);
    CHECK(line);
    memset(line, ' ', n);
    memcpy(line, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"x\":\"", 45);
    line[n - 2] = '"';
    line[n - 1] = '}';
    line[n] = 0;
    int rc = expect_error(line, -32600, -1);
    free(line);
    return rc;
}

static int test_notification_gets_no_answer(void)
{
    struct srv s;
    CHECK_OK(srv_start(&s, run_path));
    CHECK_OK(srv_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
    CHECK_OK(srv_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}"));
    CHECK_OK(srv_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}")); /* stray response */
    int live = alive(&s); /* the first answer must be the ping's */
    CHECK_EQ(srv_stop(&s), 0);
    CHECK(live);
    return 0;
}

static int test_eof_exits_zero(void)
{
    struct srv s;
    CHECK_OK(srv_start(&s, run_path));
    CHECK_EQ(srv_stop(&s), 0);
    return 0;
}

/* initialize with @p want; the answer's protocolVersion must be @p got. */
static int negotiate(const char *want, const char *got)
{
    struct srv s;
    char line[300];
    CHECK_OK(srv_start(&s, run_path));
    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
             "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
             "\"version\":\"1\"}}}",
             want);
    json_t *r = srv_call(&s, line);
    const char *v =
        json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion"));
    int ok =
        v && strcmp(v, got) == 0 &&
        json_object_get(json_object_get(json_object_get(r, "result"), "capabilities"), "tools");
    json_decref(r);
    CHECK_EQ(srv_stop(&s), 0);
    CHECK(ok);
    return 0;
}

static int test_initialize_echoes_2025_06_18(void)
{
    return negotiate("2025-06-18", "2025-06-18");
}

static int test_initialize_echoes_2025_11_25(void)
{
    return negotiate("2025-11-25", "2025-11-25");
}

static int test_initialize_old_version_gets_latest(void)
{
    return negotiate("2024-11-05", "2025-11-25");
}

static int test_modern_tools_list_is_cacheable(void)
{
    struct srv s;
    CHECK_OK(srv_start(&s, run_path));
    json_t *r = srv_call(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":"
                             "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                             "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    json_t *res = json_object_get(r, "result");
    int ok = res && !strcmp(json_string_value(json_object_get(res, "resultType")), "complete") &&
             json_is_integer(json_object_get(res, "ttlMs")) &&
             json_is_string(json_object_get(res, "cacheScope")) &&
             json_array_size(json_object_get(res, "tools")) == 13;
    json_decref(r);
    CHECK_EQ(srv_stop(&s), 0);
    CHECK(ok);
    return 0;
}

static int test_discover_lists_versions(void)
{
    struct srv s;
    CHECK_OK(srv_start(&s, run_path));
    json_t *r = srv_call(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\","
                             "\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                             "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    json_t *v = json_object_get(json_object_get(r, "result"), "supportedVersions");
    int ok = json_array_size(v) == 3 &&
             !strcmp(json_string_value(json_array_get(v, 0)), "2026-07-28") &&
             !strcmp(json_string_value(json_object_get(json_object_get(r, "result"), "resultType")),
                     "complete");
    json_decref(r);
    CHECK_EQ(srv_stop(&s), 0);
    CHECK(ok);
    return 0;
}

static int test_bad_argument_is_tool_error(void)
{
    struct srv s;
    CHECK_OK(srv_start(&s, run_path));
    json_t *r = srv_call(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                             "{\"name\":\"get_trace_stats\",\"arguments\":{\"pid\":\"x\"}}}");
    int ok = json_is_true(json_object_get(json_object_get(r, "result"), "isError"));
    json_decref(r);
    int live = alive(&s);
    CHECK_EQ(srv_stop(&s), 0);
    CHECK(ok);
    CHECK(live);
    return 0;
}

static int test_path_as_run_is_tool_error(void)
{
    struct srv s;
    CHECK_OK(srv_start(&s, run_path));
    json_t *r =
        srv_call(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"get_trace_stats\",\"arguments\":{\"run\":\"/etc/passwd\"}}}");
    int ok = json_is_true(json_object_get(json_object_get(r, "result"), "isError"));
    json_decref(r);
    CHECK_EQ(srv_stop(&s), 0);
    CHECK(ok);
    return 0;
}

/* The text of tools/call @p tool on the nasty run. */
static char *nasty_text(const char *tool, const char *args)
{
    struct srv s;
    char line[400];
    if (srv_start(&s, nasty_path) < 0)
        return NULL;
    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
             "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
             tool, args);
    json_t *r = srv_call(&s, line);
    json_t *c = json_array_get(json_object_get(json_object_get(r, "result"), "content"), 0);
    char *text = json_string_value(json_object_get(c, "text"))
                     ? strdup(json_string_value(json_object_get(c, "text")))
                     : NULL;
    json_decref(r);
    srv_stop(&s);
    return text;
}

/* No control character but newline; exactly two ``` fences (the JSON block). */
static int text_is_clean(const char *t)
{
    int fences = 0;
    for (const char *p = t; *p; p++) {
        if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f)
            return 0;
        if (!strncmp(p, "```", 3))
            fences++, p += 2;
    }
    return fences == 2;
}

static int test_program_strings_marked_in_breakdown(void)
{
    char *t = nasty_text("get_per_process_breakdown", "{}");
    CHECK(t);
    int ok = text_is_clean(t) && strstr(t, "\u00abdata: py[31mthon\u00bb") &&
             strstr(t, "\u00abdata: python train.py ]0;owned");
    free(t);
    CHECK(ok);
    return 0;
}

static int test_program_strings_marked_in_timeline(void)
{
    char *t = nasty_text("get_timeline", "{\"pid\":42}");
    CHECK(t);
    int ok = text_is_clean(t) && strstr(t, "kernel=\u00abdata: gemm\'\'\'data: fake\u00bb");
    free(t);
    CHECK(ok);
    return 0;
}

static int test_program_strings_marked_in_stalls(void)
{
    char *t = nasty_text("get_top_stalls", "{}");
    CHECK(t);
    int ok = text_is_clean(t) && strstr(t, "CPU held by pid 43 \u00abdata: hogrm -rf\u00bb");
    free(t);
    CHECK(ok);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_mcp_proto CUDASPY_ANALYZE RUN.lmdb NASTY.lmdb\n");
        return 2;
    }
    bin = argv[1];
    run_path = argv[2];
    nasty_path = argv[3];
    signal(SIGPIPE, SIG_IGN);
    RUN(test_malformed_json_is_parse_error);
    RUN(test_non_object_is_invalid_request);
    RUN(test_batch_is_invalid_request);
    RUN(test_missing_jsonrpc_is_invalid_request);
    RUN(test_object_id_is_invalid_request);
    RUN(test_unknown_method_not_found);
    RUN(test_array_params_invalid);
    RUN(test_unknown_tool_invalid_params);
    RUN(test_unsupported_meta_version);
    RUN(test_huge_line_rejected_and_skipped);
    RUN(test_notification_gets_no_answer);
    RUN(test_eof_exits_zero);
    RUN(test_initialize_echoes_2025_06_18);
    RUN(test_initialize_echoes_2025_11_25);
    RUN(test_initialize_old_version_gets_latest);
    RUN(test_modern_tools_list_is_cacheable);
    RUN(test_discover_lists_versions);
    RUN(test_bad_argument_is_tool_error);
    RUN(test_path_as_run_is_tool_error);
    RUN(test_program_strings_marked_in_breakdown);
    RUN(test_program_strings_marked_in_timeline);
    RUN(test_program_strings_marked_in_stalls);
    return check_status();
}
