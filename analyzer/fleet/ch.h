/* ch.h: a ClickHouse server over its HTTP interface, as `push` and the
 * fleet tests need it (docs/fleet.md): small queries whose answer fits a
 * buffer, and inserts streamed in chunks (RowBinary rows, never the whole
 * table in memory). One connection a request, plain HTTP/1.1; no TLS. */
#ifndef CUDASPY_ANALYZER_FLEET_CH_H
#define CUDASPY_ANALYZER_FLEET_CH_H

#include <stddef.h>
#include <stdint.h>

/* http://[USER[:PASSWORD]@]HOST[:PORT][/][?database=DB] (port 8123) */
struct ch_url {
    char host[256];
    char port[8];
    char auth[256]; /* "Basic ..." or "" */
    char db[128];   /* "" = the user's default */
    char text[512]; /* as given, without the password: for messages */
};

/* What went wrong, one line (a server's own message is its first line). */
struct ch_err {
    char msg[1024];
};

/** Parse @p s. @return 0, or -EINVAL with @p e saying why. */
int ch_url_parse(const char *s, struct ch_url *u, struct ch_err *e);

/** Run @p sql; its answer (TabSeparated, NUL-terminated, cut at @p outn)
 * into @p out (NULL: dropped). @return 0, -ECONNREFUSED and the like for
 * the connection, -EPROTO for an answer other than 200 (the server's
 * message in @p e), -EACCES for wrong credentials. */
int ch_query(const struct ch_url *u, const char *sql, char *out, size_t outn, struct ch_err *e);

/* One streamed INSERT. */
struct ch_insert {
    const struct ch_url *u;
    int fd;
    int failed;      /* a send failed: the answer says why */
    size_t n;        /* bytes in buf */
    uint64_t bytes;  /* sent in all */
    unsigned char buf[1 << 20];
};

/** Start `INSERT INTO table FORMAT RowBinary` (@p into: "table" or
 * "table (cols)"). @return 0 or as ch_query() */
int ch_insert_begin(const struct ch_url *u, const char *into, struct ch_insert *in,
                    struct ch_err *e);

/** Append @p n bytes of rows; a full buffer goes out as one chunk. */
void ch_put_slow(struct ch_insert *in, const void *p, size_t n);
static inline void ch_put(struct ch_insert *in, const void *p, size_t n)
{
    if (n <= sizeof(in->buf) - in->n) { /* the common case: room left */
        __builtin_memcpy(in->buf + in->n, p, n);
        in->n += n;
        if (in->n < sizeof(in->buf))
            return;
        n = 0;
    }
    ch_put_slow(in, p, n);
}

/** The last chunk, then the server's answer. @return 0 or as ch_query();
 * the server keeps none of the rows unless this returns 0. */
int ch_insert_end(struct ch_insert *in, struct ch_err *e);

/* RowBinary encoders (little-endian, as ClickHouse reads them). */
static inline void ch_u8(struct ch_insert *in, uint8_t v) { ch_put(in, &v, 1); }
static inline void ch_u16(struct ch_insert *in, uint16_t v) { ch_put(in, &v, 2); }
static inline void ch_u32(struct ch_insert *in, uint32_t v) { ch_put(in, &v, 4); }
static inline void ch_u64(struct ch_insert *in, uint64_t v) { ch_put(in, &v, 8); }
static inline void ch_f64(struct ch_insert *in, double v) { ch_put(in, &v, 8); }
void ch_str(struct ch_insert *in, const char *s);

#endif
