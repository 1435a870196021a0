/* mcp/mcp_proto.c: the MCP server's wire side: newline-delimited JSON-RPC 2.0 on
 * stdio, the legacy initialize handshake (2025-06-18, 2025-11-25) and
 * stateless requests carrying a `_meta` protocol version (2026-07-28), with
 * the JSON-RPC errors. What the tools and the prompt answer is mcp_tools.c's
 * job. Nothing but protocol messages goes to stdout; the server never exits
 * on bad input, only on EOF of its input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudaspy/version.h"
#include "mcp.h"

#define RPC_PARSE_ERROR (-32700)
#define RPC_INVALID_REQUEST (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS (-32602)
#define RPC_INTERNAL_ERROR (-32603)
#define RPC_UNSUPPORTED_VERSION (-32022)

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define VERSION_MODERN "2026-07-28"
#define VERSION_LEGACY_LATEST "2025-11-25"
#define LIST_TTL_MS 3600000 /* tools and prompts never change while we run */

/* Versions we speak, newest first: the modern one answers requests carrying
 * _meta, the legacy ones come from initialize. */
static const char *const proto_versions[] = {VERSION_MODERN, VERSION_LEGACY_LATEST, "2025-06-18"};
#define NVERSIONS (sizeof(proto_versions) / sizeof(proto_versions[0]))

/* One request being answered. */
struct proto_req {
    struct mcp_server *s;
    json_t *id;         /* borrowed */
    const char *method; /* borrowed */
    json_t *params;     /* borrowed object, or NULL */
    int is_modern;      /* _meta said 2026-07-28: stateless result shapes */
};

static int proto_version_known(const char *v)
{
    for (size_t i = 0; i < NVERSIONS; i++)
        if (strcmp(v, proto_versions[i]) == 0)
            return 1;
    return 0;
}

static json_t *proto_versions_json(void)
{
    json_t *a = json_array();
    for (size_t i = 0; i < NVERSIONS; i++)
        json_array_append_new(a, json_string(proto_versions[i]));
    return a;
}

static json_t *proto_error(json_t *id, int code, const char *msg, json_t *data)
{
    json_t *e = json_pack("{s:i, s:s}", "code", code, "message", msg);
    if (data)
        json_object_set_new(e, "data", data);
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e);
}

/* Wrap @p result (consumed) as the response to @p r, adding the modern
 * envelope (resultType, serverInfo) when the request asked for 2026-07-28. */
static json_t *proto_result(const struct proto_req *r, json_t *result)
{
    if (!result)
        return proto_error(r->id, RPC_INTERNAL_ERROR, "Internal error (out of memory)", NULL);
    if (r->is_modern) {
        json_object_set_new(result, "resultType", json_string("complete"));
        json_object_set_new(result, "_meta",
                            json_pack("{s:{s:s, s:s}}", META_SERVER_INFO, "name", "cudaspy-analyze",
                                      "version", CS_VERSION));
    }
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", r->id, "result", result);
}

/* Cacheable results (lists, discover) carry freshness hints in 2026-07-28. */
static void proto_cacheable(const struct proto_req *r, json_t *result)
{
    if (r->is_modern && result) {
        json_object_set_new(result, "ttlMs", json_integer(LIST_TTL_MS));
        json_object_set_new(result, "cacheScope", json_string("private"));
    }
}

static json_t *proto_capabilities(void)
{
    return json_pack("{s:{s:b}, s:{s:b}}", "tools", "listChanged", 0, "prompts", "listChanged", 0);
}

static json_t *proto_server_info(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", "cudaspy-analyze", "title", "cudaspy run analyzer",
                     "version", CS_VERSION);
}

/* initialize: answer the client's version if we speak it, else our latest
 * legacy one; the client decides whether it can continue. */
static json_t *proto_initialize(struct proto_req *r)
{
    json_t *v = r->params ? json_object_get(r->params, "protocolVersion") : NULL;
    if (!json_is_string(v))
        return proto_error(r->id, RPC_INVALID_PARAMS,
                           "Invalid params: initialize needs a protocolVersion string", NULL);
    const char *want = json_string_value(v);
    const char *got = VERSION_LEGACY_LATEST;
    if (proto_version_known(want) && strcmp(want, VERSION_MODERN) != 0)
        got = want;
    fprintf(stderr, "cudaspy-analyze: mcp: initialize: client asked %.40s, answering %s\n", want,
            got);
    char *instr = mcp_tools_instructions(r->s);
    json_t *res = json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", got, "capabilities",
                            proto_capabilities(), "serverInfo", proto_server_info(), "instructions",
                            instr ? instr : "");
    free(instr);
    return proto_result(r, res);
}

static json_t *proto_discover(struct proto_req *r)
{
    char *instr = mcp_tools_instructions(r->s);
    json_t *res = json_pack("{s:o, s:o, s:o, s:s}", "supportedVersions", proto_versions_json(),
                            "capabilities", proto_capabilities(), "serverInfo", proto_server_info(),
                            "instructions", instr ? instr : "");
    free(instr);
    proto_cacheable(r, res);
    return proto_result(r, res);
}

/* Lists come in one page: a cursor can only be one we never gave out. */
static int proto_has_cursor(const struct proto_req *r)
{
    return r->params && json_object_get(r->params, "cursor") != NULL;
}

static json_t *proto_list(struct proto_req *r, const char *key, json_t *items)
{
    if (proto_has_cursor(r)) {
        json_decref(items);
        return proto_error(r->id, RPC_INVALID_PARAMS, "Invalid params: unknown cursor", NULL);
    }
    json_t *res = json_pack("{s:o}", key, items);
    proto_cacheable(r, res);
    return proto_result(r, res);
}

static json_t *proto_tools_call(struct proto_req *r)
{
    json_t *name = r->params ? json_object_get(r->params, "name") : NULL;
    if (!json_is_string(name))
        return proto_error(r->id, RPC_INVALID_PARAMS,
                           "Invalid params: tools/call needs a tool name string", NULL);
    json_t *args = json_object_get(r->params, "arguments");
    json_t *res = NULL;
    if (mcp_tools_call(r->s, json_string_value(name), args, &res) == -ENOENT) {
        char msg[200];
        snprintf(msg, sizeof(msg), "Unknown tool: %.128s", json_string_value(name));
        return proto_error(r->id, RPC_INVALID_PARAMS, msg, NULL);
    }
    return proto_result(r, res);
}

static json_t *proto_prompts_get(struct proto_req *r)
{
    json_t *name = r->params ? json_object_get(r->params, "name") : NULL;
    if (!json_is_string(name))
        return proto_error(r->id, RPC_INVALID_PARAMS,
                           "Invalid params: prompts/get needs a prompt name string", NULL);
    char why[200] = "";
    json_t *res = NULL;
    int rc = mcp_prompts_get(r->s, json_string_value(name), json_object_get(r->params, "arguments"),
                             &res, why, sizeof(why));
    if (rc == -ENOENT) {
        snprintf(why, sizeof(why), "Unknown prompt: %.128s", json_string_value(name));
        return proto_error(r->id, RPC_INVALID_PARAMS, why, NULL);
    }
    if (rc < 0)
        return proto_error(r->id, RPC_INVALID_PARAMS, why, NULL);
    return proto_result(r, res);
}

/* Request methods. ping is a legacy method but costs nothing to keep for
 * modern clients too. */
static json_t *proto_dispatch(struct proto_req *r)
{
    const char *m = r->method;
    if (strcmp(m, "initialize") == 0)
        return proto_initialize(r);
    if (strcmp(m, "ping") == 0)
        return proto_result(r, json_object());
    if (strcmp(m, "server/discover") == 0)
        return proto_discover(r);
    if (strcmp(m, "tools/list") == 0)
        return proto_list(r, "tools", mcp_tools_list());
    if (strcmp(m, "tools/call") == 0)
        return proto_tools_call(r);
    if (strcmp(m, "prompts/list") == 0)
        return proto_list(r, "prompts", mcp_prompts_list());
    if (strcmp(m, "prompts/get") == 0)
        return proto_prompts_get(r);
    char msg[200];
    snprintf(msg, sizeof(msg), "Method not found: %.128s", m);
    return proto_error(r->id, RPC_METHOD_NOT_FOUND, msg, NULL);
}

/* Per-request version in params._meta (2026-07-28): absent means the legacy
 * session; a version we do not speak is answered with -32022.
 * @return NULL to go on, or the error response */
static json_t *proto_check_meta(struct proto_req *r)
{
    json_t *meta = r->params ? json_object_get(r->params, "_meta") : NULL;
    json_t *v = json_is_object(meta) ? json_object_get(meta, META_VERSION) : NULL;
    if (!v)
        return NULL;
    if (!json_is_string(v))
        return proto_error(r->id, RPC_INVALID_PARAMS,
                           "Invalid params: _meta protocolVersion must be a string", NULL);
    if (!proto_version_known(json_string_value(v)))
        return proto_error(
            r->id, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
            json_pack("{s:o, s:O}", "supported", proto_versions_json(), "requested", v));
    r->is_modern = strcmp(json_string_value(v), VERSION_MODERN) == 0;
    return NULL;
}

static int proto_id_valid(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id) || json_is_real(id);
}

/* A parsed message: a request gets an answer, a notification or a response
 * (we send no requests, so any response is stray) gets none. */
static json_t *proto_message(struct mcp_server *s, json_t *msg)
{
    if (json_is_array(msg))
        return proto_error(NULL, RPC_INVALID_REQUEST,
                           "Invalid Request: batches are not supported (removed in 2025-06-18)",
                           NULL);
    if (!json_is_object(msg))
        return proto_error(NULL, RPC_INVALID_REQUEST, "Invalid Request: not an object", NULL);
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    json_t *jv = json_object_get(msg, "jsonrpc");
    int has_id = id != NULL;
    if (has_id && !proto_id_valid(id))
        return proto_error(NULL, RPC_INVALID_REQUEST,
                           "Invalid Request: id must be a string or a number", NULL);
    if (!json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0)
        return proto_error(id, RPC_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"",
                           NULL);
    if (!method && has_id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
        return NULL;
    if (!json_is_string(method))
        return proto_error(id, RPC_INVALID_REQUEST, "Invalid Request: method must be a string",
                           NULL);
    if (!has_id)
        return NULL; /* notifications/initialized, cancelled, ...: never answered */
    struct proto_req r = {s, id, json_string_value(method), NULL, 0};
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params))
        return proto_error(id, RPC_INVALID_PARAMS, "Invalid params: params must be an object",
                           NULL);
    r.params = params;
    json_t *err = proto_check_meta(&r);
    return err ? err : proto_dispatch(&r);
}

json_t *mcp_proto_handle(struct mcp_server *s, const char *line, size_t len)
{
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, JSON_DECODE_ANY, &jerr);
    if (!msg) {
        char text[200];
        snprintf(text, sizeof(text), "Parse error: %.120s (column %d)", jerr.text, jerr.column);
        return proto_error(NULL, RPC_PARSE_ERROR, text, NULL);
    }
    json_t *resp = proto_message(s, msg);
    json_decref(msg);
    return resp;
}

/* ---- stdio framing ---- */

/* Line reader over a file descriptor with a bounded buffer: a line longer
 * than MCP_LINE_MAX is skipped up to its newline and reported once. */
struct proto_reader {
    int fd;
    char *buf;
    size_t cap, start, len; /* bytes [start, len) are unread */
    int is_skipping;        /* inside an overlong line */
    int is_eof;
};

enum { LINE_EOF = 0, LINE_OK = 1, LINE_TOO_LONG = 2 };

static int reader_fill(struct proto_reader *rd)
{
    if (rd->start > 0) {
        memmove(rd->buf, rd->buf + rd->start, rd->len - rd->start);
        rd->len -= rd->start;
        rd->start = 0;
    }
    for (;;) {
        ssize_t n = read(rd->fd, rd->buf + rd->len, rd->cap - rd->len);
        if (n > 0) {
            rd->len += (size_t)n;
            return 0;
        }
        if (n == 0 || errno != EINTR) {
            rd->is_eof = 1;
            return n == 0 ? 0 : -errno;
        }
    }
}

/* Next line into (*line, *n), newline and a trailing CR removed.
 * @return LINE_OK, LINE_TOO_LONG (skipped) or LINE_EOF */
static int reader_next(struct proto_reader *rd, const char **line, size_t *n)
{
    for (;;) {
        char *from = rd->buf + rd->start;
        char *nl = memchr(from, '\n', rd->len - rd->start);
        if (nl) {
            size_t k = (size_t)(nl - from);
            rd->start += k + 1;
            if (rd->is_skipping || k > MCP_LINE_MAX) {
                rd->is_skipping = 0;
                return LINE_TOO_LONG;
            }
            *line = from;
            *n = k > 0 && from[k - 1] == '\r' ? k - 1 : k;
            return LINE_OK;
        }
        if (rd->is_skipping || rd->len - rd->start > MCP_LINE_MAX) {
            rd->is_skipping = 1; /* drop what we have, keep reading to the newline */
            rd->start = rd->len = 0;
        }
        if (!rd->is_eof) {
            reader_fill(rd);
            continue;
        }
        if (rd->is_skipping) {
            rd->is_skipping = 0;
            return LINE_TOO_LONG;
        }
        if (rd->len == rd->start)
            return LINE_EOF;
        *line = rd->buf + rd->start; /* last line, without a newline */
        *n = rd->len - rd->start;
        rd->start = rd->len;
        return LINE_OK;
    }
}

static int proto_send(FILE *out, json_t *resp)
{
    char *text = json_dumps(resp, JSON_COMPACT);
    json_decref(resp);
    if (!text)
        return 0; /* out of memory: nothing sane to send */
    int bad = fputs(text, out) < 0 || fputc('\n', out) == EOF || fflush(out) != 0;
    free(text);
    return bad ? -EIO : 0;
}

static int blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return 0;
    return 1;
}

int mcp_proto_serve(struct mcp_server *s, int in_fd, FILE *out)
{
    struct proto_reader rd = {in_fd, NULL, MCP_LINE_MAX + 65536, 0, 0, 0, 0};
    rd.buf = malloc(rd.cap);
    if (!rd.buf)
        return -ENOMEM;
    int rc = 0;
    const char *line;
    size_t n;
    for (int k; rc == 0 && (k = reader_next(&rd, &line, &n)) != LINE_EOF;) {
        json_t *resp = NULL;
        if (k == LINE_TOO_LONG) {
            fprintf(stderr, "cudaspy-analyze: mcp: request over %d bytes skipped\n", MCP_LINE_MAX);
            resp = proto_error(NULL, RPC_INVALID_REQUEST,
                               "Invalid Request: message longer than 1048576 bytes", NULL);
        } else if (!blank(line, n)) {
            resp = mcp_proto_handle(s, line, n);
        }
        if (resp)
            rc = proto_send(out, resp);
    }
    free(rd.buf);
    return rc;
}
