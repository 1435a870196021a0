/* ch.c: ClickHouse's HTTP interface (ch.h). Owns the URL, the request
 * (Basic credentials, the query in the URL for inserts and in the body
 * otherwise, chunked bodies for inserts) and the answer (status line,
 * headers, a chunked or plain body). A request has its own connection
 * (Connection: close), so nothing is pooled and nothing leaks between
 * requests. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ch.h"

#define CH_ANSWER_MAX (1u << 20) /* an answer's body kept, at most */

static void b64(const char *s, char *out, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = strlen(s), o = 0;

    for (size_t i = 0; i < len && o + 5 < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
        v |= i + 1 < len ? (uint32_t)(unsigned char)s[i + 1] << 8 : 0;
        v |= i + 2 < len ? (uint32_t)(unsigned char)s[i + 2] : 0;
        out[o++] = t[v >> 18 & 63];
        out[o++] = t[v >> 12 & 63];
        out[o++] = i + 1 < len ? t[v >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? t[v & 63] : '=';
    }
    out[o] = '\0';
}

static int url_fail(struct ch_err *e, const char *s, const char *why)
{
    snprintf(e->msg, sizeof(e->msg), "%s: bad ClickHouse URL: %s", s, why);
    return -EINVAL;
}

int ch_url_parse(const char *s, struct ch_url *u, struct ch_err *e)
{
    const char *p = s, *at, *end, *colon, *q;
    char cred[256];

    memset(u, 0, sizeof(*u));
    if (strncmp(p, "http://", 7) != 0)
        return url_fail(e, s, "want http://HOST[:PORT]");
    p += 7;
    end = p + strcspn(p, "/?");
    at = memchr(p, '@', (size_t)(end - p));
    if (at) {
        if ((size_t)(at - p) >= sizeof(cred))
            return url_fail(e, s, "credentials too long");
        snprintf(cred, sizeof(cred), "%.*s", (int)(at - p), p);
        if (strchr(cred, ':') == NULL)
            strcat(cred, ":");
        memcpy(u->auth, "Basic ", 6);
        b64(cred, u->auth + 6, sizeof(u->auth) - 6);
        p = at + 1;
    }
    colon = memchr(p, ':', (size_t)(end - p));
    if (p == end || colon == p)
        return url_fail(e, s, "no host");
    if ((size_t)((colon ? colon : end) - p) >= sizeof(u->host))
        return url_fail(e, s, "host name too long");
    snprintf(u->host, sizeof(u->host), "%.*s", (int)((colon ? colon : end) - p), p);
    snprintf(u->port, sizeof(u->port), "8123");
    if (colon) {
        size_t n = (size_t)(end - colon - 1);
        if (n == 0 || n >= sizeof(u->port) || strspn(colon + 1, "0123456789") < n)
            return url_fail(e, s, "bad port");
        snprintf(u->port, sizeof(u->port), "%.*s", (int)n, colon + 1);
    }
    q = strstr(end, "database=");
    if (q) {
        size_t n = strcspn(q + 9, "&");
        if (n == 0 || n >= sizeof(u->db) || strspn(q + 9, "abcdefghijklmnopqrstuvwxyz"
                                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") < n)
            return url_fail(e, s, "bad database name");
        snprintf(u->db, sizeof(u->db), "%.*s", (int)n, q + 9);
    } else if (*end && strcmp(end, "/") != 0) {
        return url_fail(e, s, "only ?database=NAME may follow the host");
    }
    snprintf(u->text, sizeof(u->text), "http://%s:%s%s%s", u->host, u->port,
             u->db[0] ? "/?database=" : "", u->db);
    return 0;
}

static int dial(const struct ch_url *u, struct ch_err *e)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai, *a;
    int fd = -1, rc = getaddrinfo(u->host, u->port, &hints, &ai), err = 0;

    if (rc != 0) {
        snprintf(e->msg, sizeof(e->msg), "%s: %s", u->text, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    for (a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(e->msg, sizeof(e->msg), "%s: cannot connect (%s)", u->text, strerror(err));
        return -(err ? err : ECONNREFUSED);
    }
    return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void url_escape(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (; *s && o + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-_.~", c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

/* The request line and headers; @p query goes in the URL (inserts), else
 * the body of @p body_len bytes follows (-1: chunked). */
static int send_head(int fd, const struct ch_url *u, const char *query, long body_len)
{
    char q[4096] = "", h[8192];
    int n;

    if (query)
        url_escape(query, q, sizeof(q));
    n = snprintf(h, sizeof(h),
                 "POST /?%s%s%s%s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n"
                 "%s%s%s",
                 u->db[0] ? "database=" : "", u->db, query ? (u->db[0] ? "&query=" : "query=") : "",
                 q, u->host, u->port, u->auth[0] ? "Authorization: " : "", u->auth,
                 u->auth[0] ? "\r\n" : "");
    if (body_len < 0)
        n += snprintf(h + n, sizeof(h) - (size_t)n, "Transfer-Encoding: chunked\r\n\r\n");
    else
        n += snprintf(h + n, sizeof(h) - (size_t)n, "Content-Length: %ld\r\n\r\n", body_len);
    return n > 0 && (size_t)n < sizeof(h) ? send_all(fd, h, (size_t)n) : -1;
}

/* The whole answer into a new buffer (NUL-terminated), at most CH_ANSWER_MAX. */
static char *read_answer(int fd, size_t *len)
{
    size_t cap = 16384, n = 0;
    char *b = malloc(cap);
    ssize_t r;

    if (b == NULL)
        return NULL;
    while ((r = recv(fd, b + n, cap - n - 1, 0)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        n += (size_t)r;
        if (n + 1 == cap && cap < CH_ANSWER_MAX) {
            char *nb = realloc(b, cap * 2);
            if (nb == NULL)
                break;
            b = nb, cap *= 2;
        } else if (n + 1 == cap) {
            break;
        }
    }
    b[n] = '\0';
    *len = n;
    return b;
}

/* A chunked body decoded in place. @return its length */
static size_t dechunk(char *b, size_t n)
{
    size_t in = 0, out = 0;

    while (in < n) {
        char *end;
        unsigned long k = strtoul(b + in, &end, 16);
        char *crlf = strstr(end, "\r\n");
        if (crlf == NULL || k == 0 || (size_t)(crlf + 2 - b) + k > n)
            break;
        in = (size_t)(crlf + 2 - b);
        memmove(b + out, b + in, k);
        out += k;
        in += k + 2;
    }
    b[out] = '\0';
    return out;
}

/* Status and body of the answer on @p fd; closes it. */
static int finish(int fd, const struct ch_url *u, char *out, size_t outn, struct ch_err *e)
{
    size_t n;
    char *b = read_answer(fd, &n), *body;
    int status = 0, rc = 0;

    close(fd);
    if (b == NULL)
        return -ENOMEM;
    body = strstr(b, "\r\n\r\n");
    if (sscanf(b, "HTTP/1.%*d %d", &status) != 1 || body == NULL) {
        snprintf(e->msg, sizeof(e->msg), "%s: no HTTP answer (is it ClickHouse's HTTP port?)",
                 u->text);
        free(b);
        return -EPROTO;
    }
    *body = '\0';
    body += 4;
    n -= (size_t)(body - b);
    if (strcasestr(b, "transfer-encoding: chunked"))
        n = dechunk(body, n);
    if (status != 200) {
        body[strcspn(body, "\n")] = '\0';
        snprintf(e->msg, sizeof(e->msg), "%s: %s%s", u->text,
                 status == 401 || strstr(body, "Code: 193") || strstr(body, "Code: 192")
                     ? "wrong user or password: "
                     : "",
                 *body ? body : "the server answered an error");
        rc = status == 401 || strstr(body, "Code: 193") || strstr(body, "Code: 192") ? -EACCES
                                                                                    : -EPROTO;
    } else if (out && outn) {
        snprintf(out, outn, "%s", body);
    }
    free(b);
    return rc;
}

int ch_query(const struct ch_url *u, const char *sql, char *out, size_t outn, struct ch_err *e)
{
    int fd = dial(u, e);

    if (fd < 0)
        return fd;
    /* a failed send still reads what the server answered before it closed */
    if (send_head(fd, u, NULL, (long)strlen(sql)) == 0)
        (void)send_all(fd, sql, strlen(sql));
    return finish(fd, u, out, outn, e);
}

/* The bytes a value of @p type takes in Native (0: String), or -1. */
static int type_width(const char *type)
{
    static const struct {
        const char *prefix;
        int width;
    } w[] = {{"UInt8", 1},  {"Int8", 1},    {"Enum8", 1},    {"UInt16", 2},  {"Int16", 2},
             {"Enum16", 2}, {"UInt32", 4},  {"Int32", 4},    {"DateTime", 4}, {"Float32", 4},
             {"UInt64", 8}, {"Int64", 8},   {"Float64", 8},  {"String", 0}};

    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
        if (strcmp(type, w[i].prefix) == 0 ||
            (w[i].prefix[0] == 'E' && strncmp(type, w[i].prefix, strlen(w[i].prefix)) == 0))
            return w[i].width;
    return -1;
}

/* "name Type, name Type(a, b), ..." into @p in's columns. */
static int parse_cols(struct ch_insert *in, const char *cols, struct ch_err *e)
{
    const char *p = cols;

    in->ncol = 0;
    while (*p) {
        struct ch_col *c = &in->col[in->ncol];
        const char *sp = strchr(p, ' '), *end = p;
        int depth = 0, w;

        while (*end && (depth || *end != ','))
            depth += *end == '(' ? 1 : *end == ')' ? -1 : 0, end++;
        if (in->ncol == CH_COLS_MAX || sp == NULL || sp > end ||
            (size_t)(sp - p) >= sizeof(c->name) || (size_t)(end - sp - 1) >= sizeof(c->type))
            goto bad;
        snprintf(c->name, sizeof(c->name), "%.*s", (int)(sp - p), p);
        snprintf(c->type, sizeof(c->type), "%.*s", (int)(end - sp - 1), sp + 1);
        if ((w = type_width(c->type)) < 0)
            goto bad;
        c->width = (unsigned)w;
        c->n = 0;
        in->ncol++;
        p = *end ? end + 1 + strspn(end + 1, " ") : end;
    }
    return in->ncol ? 0 : -EINVAL;
bad:
    snprintf(e->msg, sizeof(e->msg), "internal: a column this writer cannot send: %.60s", p);
    return -EINVAL;
}

static void free_cols(struct ch_insert *in)
{
    for (unsigned i = 0; i < in->ncol; i++) {
        free(in->col[i].buf);
        in->col[i].buf = NULL;
        in->col[i].cap = in->col[i].n = 0;
    }
}

int ch_insert_begin(const struct ch_url *u, const char *table, const char *cols,
                    struct ch_insert *in, struct ch_err *e)
{
    char q[1024];
    int fd, rc;

    memset(in, 0, sizeof(*in));
    if ((rc = parse_cols(in, cols, e)) < 0)
        return rc;
    if ((fd = dial(u, e)) < 0)
        return fd;
    snprintf(q, sizeof(q), "INSERT INTO %s FORMAT Native", table);
    in->u = u;
    in->fd = fd;
    in->failed = send_head(fd, u, q, -1) < 0;
    return 0;
}

/* @p n bytes as one chunk of the body. */
static void send_chunk(struct ch_insert *in, const void *p, size_t n)
{
    char h[24];
    int k;

    if (n == 0 || in->failed)
        return;
    k = snprintf(h, sizeof(h), "%zx\r\n", n);
    in->failed = send_all(in->fd, h, (size_t)k) < 0 || send_all(in->fd, p, n) < 0 ||
                 send_all(in->fd, "\r\n", 2) < 0;
    in->bytes += n;
}

static size_t put_var(unsigned char *b, uint64_t n)
{
    size_t k = 0;

    do {
        b[k++] = (unsigned char)((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
        n >>= 7;
    } while (n);
    return k;
}

/* This block out, Native: columns and rows, then each column's name, type
 * and values. */
static void send_block(struct ch_insert *in)
{
    unsigned char h[160];
    size_t k;

    if (in->rows == 0 || in->failed)
        goto reset;
    k = put_var(h, in->ncol);
    k += put_var(h + k, in->rows);
    send_chunk(in, h, k);
    for (unsigned i = 0; i < in->ncol; i++) {
        const struct ch_col *c = &in->col[i];
        k = put_var(h, strlen(c->name));
        memcpy(h + k, c->name, strlen(c->name)), k += strlen(c->name);
        k += put_var(h + k, strlen(c->type));
        memcpy(h + k, c->type, strlen(c->type)), k += strlen(c->type);
        send_chunk(in, h, k);
        send_chunk(in, c->buf, c->n);
    }
reset:
    for (unsigned i = 0; i < in->ncol; i++)
        in->col[i].n = 0;
    in->rows = 0;
}

/* Room for @p n more bytes in column @p c; 0, or -1 (no memory: failed). */
static int col_room(struct ch_insert *in, struct ch_col *c, size_t n)
{
    size_t cap = c->cap ? c->cap : (c->width ? c->width : 16u) * (size_t)CH_BLOCK_ROWS;
    unsigned char *b;

    while (cap < c->n + n)
        cap *= 2;
    if (cap == c->cap)
        return 0;
    if ((b = realloc(c->buf, cap)) == NULL) {
        snprintf(in->bad, sizeof(in->bad), "out of memory for column %s", c->name);
        in->failed = 1;
        return -1;
    }
    c->buf = b, c->cap = cap;
    return 0;
}

/* The value just put ended a column: the row, maybe the block. */
static void next_col(struct ch_insert *in)
{
    if (++in->cur < in->ncol)
        return;
    in->cur = 0;
    if (++in->rows == CH_BLOCK_ROWS)
        send_block(in);
}

void ch_val(struct ch_insert *in, const void *v, unsigned width)
{
    struct ch_col *c = &in->col[in->cur];

    if (in->failed)
        return;
    if (c->width != width) {
        snprintf(in->bad, sizeof(in->bad), "internal: column %s is %s, not %u bytes", c->name,
                 c->type, width);
        in->failed = 1;
        return;
    }
    if (c->n + width > c->cap && col_room(in, c, width) < 0)
        return;
    memcpy(c->buf + c->n, v, width);
    c->n += width;
    next_col(in);
}

void ch_str(struct ch_insert *in, const char *s)
{
    struct ch_col *c = &in->col[in->cur];
    size_t n = s ? strlen(s) : 0;

    if (in->failed)
        return;
    if (c->width != 0) {
        snprintf(in->bad, sizeof(in->bad), "internal: column %s is %s, not a String", c->name,
                 c->type);
        in->failed = 1;
        return;
    }
    if (c->n + n + 10 > c->cap && col_room(in, c, n + 10) < 0)
        return;
    c->n += put_var(c->buf + c->n, n);
    memcpy(c->buf + c->n, s ? s : "", n);
    c->n += n;
    next_col(in);
}

void ch_insert_abort(struct ch_insert *in)
{
    in->failed = 1;
}

int ch_insert_end(struct ch_insert *in, struct ch_err *e)
{
    int rc;

    if (in->cur != 0 && !in->failed) {
        snprintf(in->bad, sizeof(in->bad), "internal: a row of %u values, not %u", in->cur,
                 in->ncol);
        in->failed = 1;
    }
    send_block(in);
    if (!in->failed)
        in->failed = send_all(in->fd, "0\r\n\r\n", 5) < 0;
    if (in->failed) /* cut short: the server sees the body end early */
        shutdown(in->fd, SHUT_WR);
    rc = finish(in->fd, in->u, NULL, 0, e);
    free_cols(in);
    if (in->bad[0]) { /* ours, whatever the server made of the request cut short */
        snprintf(e->msg, sizeof(e->msg), "%s", in->bad);
        rc = rc < 0 ? rc : -EPROTO;
    }
    return rc;
}
