/* ch.h: a ClickHouse server over its HTTP interface, as `push` and the
 * fleet tests need it (docs/fleet.md): small queries whose answer fits a
 * buffer, and inserts streamed in chunks (Native blocks, never the whole
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

/* One column of a streamed INSERT: this block's values, ClickHouse's
 * Native layout (fixed-width values back to back, a String as its LEB128
 * length and bytes). */
struct ch_col {
    char name[64], type[64];
    unsigned width;       /* bytes a value; 0: String */
    unsigned char *buf;
    size_t n, cap;
};

#define CH_COLS_MAX 24
#define CH_BLOCK_ROWS 262144u /* rows a block: its columns are all a push holds */

/* One streamed INSERT: rows are put value by value in the table's column
 * order, and go out a block at a time in ClickHouse's Native format (a
 * column's values together: the server reads them without parsing rows). */
struct ch_insert {
    const struct ch_url *u;
    int fd;
    int failed;      /* a send failed, or a value did not fit its column */
    struct ch_col col[CH_COLS_MAX];
    unsigned ncol, cur; /* columns; the next value's */
    uint32_t rows;      /* whole rows in this block */
    uint64_t bytes;     /* sent in all */
    char bad[256];      /* why a value did not fit its column */
};

/** Start `INSERT INTO @p table FORMAT Native`; @p cols is the table's
 * column list as its CREATE TABLE has it ("run_id UInt64, api String").
 * @return 0 or as ch_query() (-EINVAL: a type this writer lacks) */
int ch_insert_begin(const struct ch_url *u, const char *table, const char *cols,
                    struct ch_insert *in, struct ch_err *e);

/** The next value of the current row (the type's width must match its
 * column's; a mismatch fails the insert, saying which column). */
void ch_val(struct ch_insert *in, const void *v, unsigned width);
void ch_str(struct ch_insert *in, const char *s);
static inline void ch_u8(struct ch_insert *in, uint8_t v) { ch_val(in, &v, 1); }
static inline void ch_u16(struct ch_insert *in, uint16_t v) { ch_val(in, &v, 2); }
static inline void ch_u32(struct ch_insert *in, uint32_t v) { ch_val(in, &v, 4); }
static inline void ch_u64(struct ch_insert *in, uint64_t v) { ch_val(in, &v, 8); }
static inline void ch_f64(struct ch_insert *in, double v) { ch_val(in, &v, 8); }

/** The last block, then the server's answer; frees the columns. @return 0
 * or as ch_query(); the server keeps none of the rows unless this returns
 * 0 (it may keep some blocks of an insert that fails: push's runs row
 * comes last for that reason). */
int ch_insert_end(struct ch_insert *in, struct ch_err *e);

/** Fail the insert (a bad run): what was sent is not a whole request. */
void ch_insert_abort(struct ch_insert *in);

#endif
