/* pysample.c: a traced process's Python stacks read from outside it
 * (pysample.h), as py-spy reads them: process_vm_readv of the frames its
 * shim's layout says where to find, never stopping or writing the process.
 * Owns the pages read during one sample and the code objects already named
 * (file, qualified name, line table), per process. The frames may change
 * while they are read (the thread runs on): every code object, file name
 * and line table must have its type's address before it is believed, and a
 * read that fails ends the walk, so a torn chain costs a sample or its
 * outer frames, never a wrong line from garbage it could have checked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "pysample.h"

#define PAGE 4096u
#define PAGES 16u                 /* pages one sample keeps read (frames, code objects) */
#define CODE_MAX 8192u            /* code objects named per process; past it, start over */
#define TAB_MAX (64u << 10)       /* bytes of a line table kept (lines past it read 0) */
#define NAME_MAX_BYTES 512u       /* UTF-8 bytes of a file or function name (as the shim) */
#define HOPS_MAX 1024             /* frames walked at most, C entry frames included */
#define FRAME_BUF 256u            /* the largest frame span read (cs_py_frame_span) */
#define CODE_BUF 512u             /* the largest code object span read */

struct page {
    uint64_t addr; /* page-aligned address in the process; 0 = empty */
    uint8_t *b;
};

/* A code object as named, valid while the object still points at the same
 * file, name and line table (a freed object's address may be reused). */
struct code_ent {
    uint64_t code;                   /* its address; 0 = empty slot */
    uint64_t file_p, name_p, tab_p;  /* what it pointed at when named */
    uint32_t file_id, func_id;       /* run string ids */
    int32_t first;                   /* co_firstlineno */
    uint32_t ntab;
    uint8_t *tab;                    /* copy of the line table */
};

struct pysample {
    uint32_t pid;
    struct cs_py_layout L;
    size_t frame_span, code_span;
    struct page pg[PAGES];
    unsigned pg_next;                /* next page slot to reuse (round robin) */
    uint8_t *pgbuf;
    struct code_ent *code;           /* open addressing by address */
    size_t ncode, code_cap;          /* code_cap: power of two, > 2 * ncode */
};

struct pysample *pysample_new(uint32_t pid, const struct cs_py_layout *L)
{
    struct pysample *ps;

    if (cs_py_frame_span(L) > FRAME_BUF || cs_py_code_span(L) > CODE_BUF || L->fr_code < 0 ||
        L->fr_back < 0 || L->fr_instr < 0 || L->ts_frame < 0 || L->co_filename < 0 ||
        L->co_qualname < 0 || L->co_linetable < 0 || L->co_firstlineno < 0 || L->ob_type < 0 ||
        L->str_state < 0 || L->str_length < 0 || L->bytes_size < 0 || L->bytes_data < 0 ||
        (L->kind != CS_PY_OBJFRAME && L->kind != CS_PY_IFRAME))
        return NULL; /* not a layout we can read with these buffers */
    if ((ps = calloc(1, sizeof(*ps))) == NULL)
        return NULL;
    ps->pid = pid;
    ps->L = *L;
    ps->frame_span = cs_py_frame_span(L);
    ps->code_span = cs_py_code_span(L);
    ps->pgbuf = malloc((size_t)PAGES * PAGE);
    ps->code_cap = 256;
    ps->code = calloc(ps->code_cap, sizeof(*ps->code));
    if (ps->pgbuf == NULL || ps->code == NULL) {
        pysample_free(ps);
        return NULL;
    }
    for (unsigned i = 0; i < PAGES; i++)
        ps->pg[i].b = ps->pgbuf + (size_t)i * PAGE;
    return ps;
}

static void code_clear(struct pysample *ps)
{
    for (size_t i = 0; i < ps->code_cap; i++)
        free(ps->code[i].tab);
    memset(ps->code, 0, ps->code_cap * sizeof(*ps->code));
    ps->ncode = 0;
}

void pysample_free(struct pysample *ps)
{
    if (ps == NULL)
        return;
    if (ps->code)
        code_clear(ps);
    free(ps->code);
    free(ps->pgbuf);
    free(ps);
}

/* ---- reading the process ---- */

/* @p n bytes at @p addr of the process into @p out. @return 0, -EFAULT
 * (not all of it mapped), -EPERM, -ESRCH, ... */
static int rd_raw(const struct pysample *ps, uint64_t addr, void *out, size_t n)
{
    struct iovec l = {out, n}, r = {(void *)(uintptr_t)addr, n};
    ssize_t got;

    if (addr < PAGE || addr + n < addr)
        return -EFAULT; /* NULL and its neighbours, wrap-around: a torn pointer */
    got = process_vm_readv((pid_t)ps->pid, &l, 1, &r, 1, 0);
    if (got == (ssize_t)n)
        return 0;
    return got >= 0 || errno == ENOMEM || errno == EINVAL ? -EFAULT : -errno;
}

/* The page at @p base, read once per sample. @return it, or NULL (*@p rc) */
static const uint8_t *page_get(struct pysample *ps, uint64_t base, int *rc)
{
    struct page *p;

    for (unsigned i = 0; i < PAGES; i++)
        if (ps->pg[i].addr == base)
            return ps->pg[i].b;
    p = &ps->pg[ps->pg_next];
    p->addr = 0;
    if ((*rc = rd_raw(ps, base, p->b, PAGE)) < 0)
        return NULL;
    p->addr = base;
    ps->pg_next = (ps->pg_next + 1) % PAGES;
    return p->b;
}

/* @p n bytes at @p addr through the pages of this sample: the frames of a
 * 3.11+ thread sit side by side in its data stack, and a code object's
 * fields in one page. @return 0 or as rd_raw */
static int rd(struct pysample *ps, uint64_t addr, void *out, size_t n)
{
    uint8_t *o = out;
    int rc = 0;

    if (addr < PAGE || addr + n < addr)
        return -EFAULT;
    while (n) {
        uint64_t base = addr & ~(uint64_t)(PAGE - 1), off = addr - base;
        size_t take = n < PAGE - off ? n : PAGE - off;
        const uint8_t *p = page_get(ps, base, &rc);
        if (p == NULL)
            return rc;
        memcpy(o, p + off, take);
        o += take, addr += take, n -= take;
    }
    return 0;
}

static uint64_t u64_at(const uint8_t *b, int16_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}

static int rd_u64(struct pysample *ps, uint64_t addr, uint64_t *v)
{
    return rd(ps, addr, v, sizeof(*v));
}

/* Is the object at @p obj of type @p type? @return 1, 0, or < 0 (a read failed) */
static int is_type(struct pysample *ps, uint64_t obj, uint64_t type)
{
    uint64_t t;
    int rc = rd_u64(ps, obj + (uint64_t)ps->L.ob_type, &t);
    return rc < 0 ? rc : t == type;
}

/* ---- naming a code object (a code object not seen before) ---- */

/* The str object at @p s as UTF-8 into @p out (NAME_MAX_BYTES). @return its
 * length, or < 0 when it is not a compact str we read. */
static int rd_str(struct pysample *ps, uint64_t s, char *out)
{
    const struct cs_py_layout *L = &ps->L;
    uint8_t d[NAME_MAX_BYTES * 4];
    uint32_t state;
    int64_t len;
    unsigned kind;
    size_t off;
    int rc;

    if ((rc = is_type(ps, s, L->str_type)) <= 0)
        return rc < 0 ? rc : -EFAULT;
    if ((rc = rd(ps, s + (uint64_t)L->str_state, &state, sizeof(state))) < 0 ||
        (rc = rd(ps, s + (uint64_t)L->str_length, &len, sizeof(len))) < 0)
        return rc;
    if ((off = cs_py_str_data(L, state, len, &kind)) == 0)
        return -EFAULT;
    if (len > (int64_t)NAME_MAX_BYTES)
        len = NAME_MAX_BYTES; /* the UTF-8 of more is cut anyway */
    if (len && (rc = rd(ps, s + off, d, (size_t)len * kind)) < 0)
        return rc;
    return (int)cs_py_str_utf8(d, kind, len, out, NAME_MAX_BYTES);
}

/* The line table (a bytes object at @p tab) into a new buffer. @return 0, < 0 */
static int rd_table(struct pysample *ps, uint64_t tab, uint8_t **out, uint32_t *n)
{
    const struct cs_py_layout *L = &ps->L;
    int64_t size;
    int rc;

    *out = NULL;
    *n = 0;
    if ((rc = is_type(ps, tab, L->bytes_type)) <= 0)
        return rc < 0 ? rc : -EFAULT;
    if ((rc = rd(ps, tab + (uint64_t)L->bytes_size, &size, sizeof(size))) < 0)
        return rc;
    if (size <= 0)
        return 0;
    *n = size > (int64_t)TAB_MAX ? TAB_MAX : (uint32_t)size;
    if ((*out = malloc(*n)) == NULL)
        return -ENOMEM;
    if ((rc = rd_raw(ps, tab + (uint64_t)L->bytes_data, *out, *n)) < 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* Name code object @p co (its first bytes in @p cb) into @p e, which owns
 * the table copy only on success. */
static int code_name(struct pysample *ps, uint64_t co, const uint8_t *cb, struct code_ent *e,
                     pysample_intern_fn intern, void *arg)
{
    const struct cs_py_layout *L = &ps->L;
    char file[NAME_MAX_BYTES], name[NAME_MAX_BYTES];
    int nf, nn, rc;

    e->file_p = u64_at(cb, L->co_filename);
    e->name_p = u64_at(cb, L->co_qualname);
    e->tab_p = u64_at(cb, L->co_linetable);
    memcpy(&e->first, cb + L->co_firstlineno, sizeof(e->first));
    if ((nf = rd_str(ps, e->file_p, file)) < 0)
        return nf;
    if ((nn = rd_str(ps, e->name_p, name)) < 0)
        return nn;
    if ((rc = rd_table(ps, e->tab_p, &e->tab, &e->ntab)) < 0)
        return rc;
    if ((rc = intern(arg, file, (size_t)nf, &e->file_id)) < 0 ||
        (rc = intern(arg, name, (size_t)nn, &e->func_id)) < 0) {
        free(e->tab);
        return rc;
    }
    e->code = co;
    return 0;
}

static int code_grow(struct pysample *ps)
{
    size_t cap = ps->code_cap * 2;
    struct code_ent *n = calloc(cap, sizeof(*n)), *old = ps->code;

    if (n == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < ps->code_cap; i++) {
        size_t j = (old[i].code >> 4) & (cap - 1);
        if (old[i].code == 0)
            continue;
        while (n[j].code)
            j = (j + 1) & (cap - 1);
        n[j] = old[i];
    }
    free(old);
    ps->code = n;
    ps->code_cap = cap;
    return 0;
}

/* The named entry of code object @p co (its first bytes in @p cb): the one
 * kept if the object still points where it did, else named now. @return it,
 * or NULL (*@p rc) */
static const struct code_ent *code_get(struct pysample *ps, uint64_t co, const uint8_t *cb,
                                       pysample_intern_fn intern, void *arg, int *rc)
{
    const struct cs_py_layout *L = &ps->L;
    size_t j;

    if (ps->ncode >= CODE_MAX)
        code_clear(ps); /* a program that makes code without end: start over */
    if (2 * (ps->ncode + 1) > ps->code_cap && (*rc = code_grow(ps)) < 0)
        return NULL;
    for (j = (co >> 4) & (ps->code_cap - 1); ps->code[j].code && ps->code[j].code != co;
         j = (j + 1) & (ps->code_cap - 1))
        ;
    if (ps->code[j].code == co && ps->code[j].file_p == u64_at(cb, L->co_filename) &&
        ps->code[j].name_p == u64_at(cb, L->co_qualname) &&
        ps->code[j].tab_p == u64_at(cb, L->co_linetable))
        return &ps->code[j];
    struct code_ent e = {0};
    if ((*rc = code_name(ps, co, cb, &e, intern, arg)) < 0)
        return NULL; /* the slot stays as it was */
    ps->ncode += ps->code[j].code == 0;
    free(ps->code[j].tab);
    ps->code[j] = e;
    return &ps->code[j];
}

/* ---- the walk ---- */

/* Frame @p fr into @p f; *@p next gets the frame it was called from.
 * @return 1 a frame, 0 none (a C entry frame, not a code object's), < 0 */
static int one_frame(struct pysample *ps, uint64_t fr, struct cs_frame *f, uint64_t *next,
                     pysample_intern_fn intern, void *arg)
{
    const struct cs_py_layout *L = &ps->L;
    uint8_t fb[FRAME_BUF], cb[CODE_BUF];
    const struct code_ent *e;
    uint64_t co;
    int64_t instr;
    int rc;

    if ((rc = rd(ps, fr, fb, ps->frame_span)) < 0)
        return rc;
    *next = u64_at(fb, L->fr_back);
    if (L->fr_owner >= 0 && fb[L->fr_owner] >= L->owner_skip)
        return 0;
    co = u64_at(fb, L->fr_code) & ~(uint64_t)L->tag_mask;
    if (co == 0 || rd(ps, co, cb, ps->code_span) < 0 || u64_at(cb, L->ob_type) != L->code_type)
        return 0; /* as the shim: not running a code object */
    if (L->kind == CS_PY_OBJFRAME) {
        int32_t lasti;
        memcpy(&lasti, fb + L->fr_instr, sizeof(lasti));
        instr = lasti;
    } else {
        instr = ((int64_t)u64_at(fb, L->fr_instr) - (int64_t)(co + (uint64_t)L->co_code)) / 2;
    }
    if ((e = code_get(ps, co, cb, intern, arg, &rc)) == NULL)
        return rc;
    memset(f, 0, sizeof(*f));
    f->flags = CS_FRAME_PYTHON;
    f->module_id = e->file_id;
    f->offset = CS_FRAME_PY_OFFSET(cs_py_line(L, e->tab, e->ntab, e->first, instr), e->func_id);
    return 1;
}

int pysample_read(struct pysample *ps, uint64_t tstate, struct cs_frame *f, int max, int *trunc,
                  pysample_intern_fn intern, void *arg)
{
    const struct cs_py_layout *L = &ps->L;
    uint64_t fr = 0;
    int n = 0, rc;

    *trunc = 0;
    for (unsigned i = 0; i < PAGES; i++)
        ps->pg[i].addr = 0; /* what the last sample read is stale now */
    if ((rc = rd_u64(ps, tstate + (uint64_t)L->ts_frame, &fr)) < 0 ||
        (L->cf_frame >= 0 && fr && (rc = rd_u64(ps, fr + (uint64_t)L->cf_frame, &fr)) < 0))
        return rc;
    for (int hops = 0; fr != 0; hops++) {
        if (n == max || hops == HOPS_MAX) {
            *trunc = 1;
            break;
        }
        rc = one_frame(ps, fr, &f[n], &fr, intern, arg);
        if (rc == -EPERM || rc == -EACCES || rc == -ESRCH || rc == -ENOMEM ||
            (rc < 0 && n == 0))
            return rc;
        if (rc < 0) { /* torn further out: keep the frames read so far */
            *trunc = 1;
            break;
        }
        n += rc;
    }
    return n;
}
