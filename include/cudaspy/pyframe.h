/* pyframe.h: how CPython lays out its frames, for the two readers of them
 * (docs/python.md): the shim, which walks its own thread's frames at a CUDA
 * call (interpose/shim_python.c), and the collector, which samples a CUDA
 * thread's frames from outside the process while it runs host code
 * (sampler/pysample.c). Owns the layout both read by (struct cs_py_layout:
 * the shim chooses it, by version, and publishes it in its ring segments,
 * include/cudaspy/ring.h) and the decoding of what they read: a code
 * object's line table and a str object's text, from bytes already copied
 * or mapped. Reading memory is each reader's own business. */
#ifndef CUDASPY_PYFRAME_H
#define CUDASPY_PYFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "utf8.h"

#define CS_PY_LAYOUT_MAGIC 0x50594c31u /* "1LYP": struct cs_py_layout is filled */

/* How a frame says where it is (cs_py_layout.kind). */
enum cs_py_kind {
    CS_PY_OBJFRAME = 1, /* 3.10: PyFrameObject chain, int f_lasti in code units */
    CS_PY_IFRAME = 2    /* 3.11+: _PyInterpreterFrame chain, pointer to the instruction */
};

/* Byte offsets into one interpreter's structures (x86_64 / aarch64 LP64)
 * and the addresses of its type objects in that process. 0 in magic: no
 * layout (not a Python program, Python frames off, a version we cannot
 * read). Fixed-width: it crosses the process boundary in the ring
 * segment's header. */
struct cs_py_layout {
    uint32_t magic;        /* CS_PY_LAYOUT_MAGIC when filled */
    uint8_t minor;         /* CPython 3.minor */
    uint8_t kind;          /* enum cs_py_kind */
    uint8_t table;         /* line table: 10 = 3.10's (PEP 626), 11 = 3.11+'s (PEP 657) */
    uint8_t owner_skip;    /* frame owners from this on are skipped (C entry frames); 0xff none */
    uint8_t tag_mask;      /* low bits of a tagged executable pointer (3.14+) */
    uint8_t pad0;
    uint16_t sample_hz;    /* host-code samples a second per thread (collector); 0 = none */
    int16_t ts_frame;      /* PyThreadState -> frame (3.10), cframe (3.11, 3.12), current_frame */
    int16_t cf_frame;      /* _PyCFrame.current_frame (3.11, 3.12); -1 = ts_frame is the frame */
    int16_t fr_code, fr_back, fr_instr, fr_owner; /* fr_owner -1 = none */
    int16_t co_filename, co_qualname, co_firstlineno, co_linetable, co_code;
    int16_t ob_type;
    int16_t bytes_size, bytes_data;
    int16_t str_length, str_state, str_ascii, str_compact; /* last two: data offsets */
    uint64_t code_type;    /* &PyCode_Type in the process */
    uint64_t str_type;     /* &PyUnicode_Type */
    uint64_t bytes_type;   /* &PyBytes_Type */
};
_Static_assert(sizeof(struct cs_py_layout) == 72, "cs_py_layout is 72 bytes");

/* Bytes of a frame and of a code object a reader needs (every offset read
 * is below these). */
static inline size_t cs_py_frame_span(const struct cs_py_layout *L)
{
    int16_t m = L->fr_code;
    m = L->fr_back > m ? L->fr_back : m;
    m = L->fr_instr > m ? L->fr_instr : m;
    m = L->fr_owner > m ? L->fr_owner : m;
    return (size_t)m + 8;
}

static inline size_t cs_py_code_span(const struct cs_py_layout *L)
{
    int16_t m = L->ob_type;
    m = L->co_filename > m ? L->co_filename : m;
    m = L->co_qualname > m ? L->co_qualname : m;
    m = L->co_firstlineno > m ? L->co_firstlineno : m;
    m = L->co_linetable > m ? L->co_linetable : m;
    return (size_t)m + 8;
}

/* ---- line tables ---- */

static inline uint32_t cs_py_varint(const uint8_t **p, const uint8_t *end)
{
    uint32_t v = 0, b;
    unsigned shift = 0;

    do {
        if (*p >= end || shift > 28)
            return v;
        b = *(*p)++;
        v |= (b & 63u) << shift;
        shift += 6;
    } while (b & 64);
    return v;
}

/* Line of code unit @p ix in 3.11+'s location table (Objects/locations.md):
 * entries of a first byte 1cccclll (code c, l+1 code units), then c's data. */
static inline int cs_py_line_311(const uint8_t *p, const uint8_t *end, int line, int64_t ix)
{
    int64_t at = 0;

    while (p < end) {
        unsigned code = (*p >> 3) & 15;
        int64_t len = (*p & 7) + 1;
        const uint8_t *q = p + 1;

        if (code == 13 || code == 14) { /* no column / long form: signed line delta */
            uint32_t u = cs_py_varint(&q, end);
            line += (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
        } else if (code >= 10 && code <= 12) { /* one line, delta 0..2 */
            line += (int)code - 10;
        }
        if (ix < at + len)
            return code == 15 ? 0 : line; /* 15: no location */
        at += len;
        for (p++; p < end && !(*p & 0x80); p++)
            ;
    }
    return 0;
}

/* 3.10's table (Objects/lnotab_notes.txt): (bytes, signed line delta)
 * pairs, -128 = no line. */
static inline int cs_py_line_310(const uint8_t *p, const uint8_t *end, int line, int64_t ix)
{
    int64_t at = 0, addr = ix * 2;

    for (; p + 1 < end; p += 2) {
        int8_t d = (int8_t)p[1];
        if (d != -128)
            line += d;
        at += p[0];
        if (addr < at)
            return d == -128 ? 0 : line;
    }
    return 0;
}

/** Line of instruction @p ix (code units; < 0: not started, the first
 * line) of a code object whose first line is @p first and whose line table
 * is the @p n bytes at @p tab (table @p L->table). @return the line, 0 =
 * unknown */
static inline uint32_t cs_py_line(const struct cs_py_layout *L, const uint8_t *tab, int64_t n,
                                  int first, int64_t ix)
{
    int line;

    if (ix < 0)
        return first > 0 ? (uint32_t)first : 0;
    if (tab == NULL || n < 0 || n > (1 << 26))
        return 0;
    line = L->table == 10 ? cs_py_line_310(tab, tab + n, first, ix)
                          : cs_py_line_311(tab, tab + n, first, ix);
    return line > 0 ? (uint32_t)line : 0;
}

/* ---- str objects ---- */

/** Where a compact str object's characters are: from its @p state word
 * and @p len (read at str_state and str_length). @return the offset of its
 * data in the object and *@p kind (bytes a character: 1, 2 or 4), or 0
 * when it is not a compact str we read (a legacy string). */
static inline size_t cs_py_str_data(const struct cs_py_layout *L, uint32_t state, int64_t len,
                                    unsigned *kind)
{
    *kind = (state >> 2) & 7;
    if (!(state & 0x20) || len < 0 || (*kind != 1 && *kind != 2 && *kind != 4))
        return 0;
    return (size_t)((state & 0x40) ? L->str_ascii : L->str_compact);
}

/** UTF-8 of @p len characters of @p kind bytes each at @p d into @p out
 * (@p cap bytes; cut at a whole character). @return bytes written */
static inline size_t cs_py_str_utf8(const uint8_t *d, unsigned kind, int64_t len, char *out,
                                    size_t cap)
{
    size_t n = 0;

    for (int64_t i = 0; i < len && n + 4 <= cap; i++) {
        uint32_t c = kind == 1   ? d[i]
                     : kind == 2 ? ((const uint16_t *)(const void *)d)[i]
                                 : ((const uint32_t *)(const void *)d)[i];
        n += cs_utf8_put(c, out + n);
    }
    return n;
}

#endif
