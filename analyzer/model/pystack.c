/* model/pystack.c: a call's stack as sites and frames (pystack.h). Reads the
 * stacks and strings of the call's run; owns nothing. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pystack.h"

static struct cs_run *call_run(const struct model *m, uint64_t ci, uint32_t *run)
{
    *run = model_call_proc(m, &m->call[ci])->run;
    return m->runs[*run].run;
}

const struct cs_frame *pystack_frames(const struct model *m, uint64_t ci, size_t *n)
{
    uint32_t id = model_call_stack(m, ci), run;

    *n = 0;
    if (id == 0)
        return NULL;
    return cs_run_stack(call_run(m, ci, &run), id, n);
}

static int is_python(const struct cs_frame *f)
{
    return (f->flags & CS_FRAME_PYTHON) != 0;
}

int pystack_site(const struct model *m, uint64_t ci, struct pystack_site *s)
{
    size_t n, at = 0;
    const struct cs_frame *f = pystack_frames(m, ci, &n);

    memset(s, 0, sizeof(*s));
    if (model_call_stack(m, ci) == 0)
        return -1;
    call_run(m, ci, &s->run);
    if (f == NULL || n == 0)
        return 0; /* PYSTACK_MISSING: the id names no stack */
    while (at < n && !is_python(&f[at]))
        at++;
    if (at == n) { /* no Python frame: the innermost native one */
        s->kind = PYSTACK_NATIVE;
        s->file_id = f[0].module_id;
        s->where = f[0].offset;
        return 0;
    }
    s->kind = PYSTACK_PYTHON;
    s->file_id = f[at].module_id;
    s->func_id = CS_FRAME_PY_FUNC(&f[at]);
    s->where = CS_FRAME_PY_LINE(&f[at]);
    return (int)at;
}

int pystack_site_eq(const struct pystack_site *a, const struct pystack_site *b)
{
    return a->run == b->run && a->kind == b->kind && a->file_id == b->file_id &&
           a->func_id == b->func_id && a->where == b->where;
}

/* String @p id of run @p r, "?" when the run has no such string. */
static const char *str_q(struct cs_run *r, uint32_t id)
{
    const char *s = cs_run_string(r, id);
    return *s ? s : "?";
}

static const char *str_or_q(const struct model *m, uint32_t run, uint32_t id)
{
    return str_q(m->runs[run].run, id);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b && b[1] ? b + 1 : path;
}

static const char *text_of(struct cs_run *r, uint32_t kind, uint32_t file_id, uint32_t func_id,
                           uint64_t where, char *buf, size_t n)
{
    if (kind == PYSTACK_PYTHON) {
        const char *file = base_name(str_q(r, file_id));
        if (where)
            snprintf(buf, n, "%s:%" PRIu64 " in %s", file, where, str_q(r, func_id));
        else
            snprintf(buf, n, "%s:? in %s", file, str_q(r, func_id));
    } else if (kind == PYSTACK_NATIVE && file_id) {
        snprintf(buf, n, "%s+0x%" PRIx64, base_name(str_q(r, file_id)), where);
    } else if (kind == PYSTACK_NATIVE) {
        snprintf(buf, n, "0x%" PRIx64, where);
    } else {
        snprintf(buf, n, "?");
    }
    return buf;
}

const char *pystack_site_text(const struct model *m, const struct pystack_site *s, char *buf,
                              size_t n)
{
    return text_of(m->runs[s->run].run, s->kind, s->file_id, s->func_id, s->where, buf, n);
}

const char *pystack_frame_text(struct cs_run *r, const struct cs_frame *f, char *buf, size_t n)
{
    if (is_python(f))
        return text_of(r, PYSTACK_PYTHON, f->module_id, CS_FRAME_PY_FUNC(f),
                       CS_FRAME_PY_LINE(f), buf, n);
    return text_of(r, PYSTACK_NATIVE, f->module_id, 0, f->offset, buf, n);
}

static json_t *json_of(const struct model *m, uint32_t run, uint32_t kind, uint32_t file_id,
                       uint32_t func_id, uint64_t where)
{
    if (kind == PYSTACK_NATIVE)
        return json_pack("{s:s, s:I}", "module", file_id ? str_or_q(m, run, file_id) : "?",
                         "offset", (json_int_t)where);
    if (kind == PYSTACK_PYTHON)
        return json_pack("{s:s, s:s, s:I}", "file", str_or_q(m, run, file_id), "function",
                         str_or_q(m, run, func_id), "line", (json_int_t)where);
    return json_pack("{s:s, s:s, s:i}", "file", "?", "function", "?", "line", 0);
}

json_t *pystack_site_json(const struct model *m, const struct pystack_site *s)
{
    return json_of(m, s->run, s->kind, s->file_id, s->func_id, s->where);
}

static json_t *frame_json(const struct model *m, uint32_t run, const struct cs_frame *f)
{
    if (is_python(f))
        return json_of(m, run, PYSTACK_PYTHON, f->module_id, CS_FRAME_PY_FUNC(f),
                       CS_FRAME_PY_LINE(f));
    return json_of(m, run, PYSTACK_NATIVE, f->module_id, 0, f->offset);
}

/* Callers of call @p ci: the frames after its site, Python ones only when
 * the site is one. Fills @p out (at most @p max) and returns the count. */
static int callers(const struct model *m, uint64_t ci, int max, const struct cs_frame **out)
{
    struct pystack_site s;
    size_t n;
    const struct cs_frame *f = pystack_frames(m, ci, &n);
    int at = pystack_site(m, ci, &s), k = 0;

    if (at < 0 || s.kind == PYSTACK_MISSING)
        return 0;
    for (size_t i = (size_t)at + 1; i < n && k < max; i++)
        if (s.kind == PYSTACK_NATIVE || is_python(&f[i]))
            out[k++] = &f[i];
    return k;
}

json_t *pystack_callers_json(const struct model *m, uint64_t ci, int max)
{
    const struct cs_frame *f[16];
    json_t *a = json_array();
    uint32_t run = model_call_proc(m, &m->call[ci])->run;
    int k = callers(m, ci, max < 16 ? max : 16, f);

    for (int i = 0; i < k; i++)
        json_array_append_new(a, frame_json(m, run, f[i]));
    return a;
}

const char *pystack_callers_text(const struct model *m, uint64_t ci, int max, char *buf, size_t n)
{
    const struct cs_frame *f[16];
    uint32_t run = model_call_proc(m, &m->call[ci])->run;
    int k = callers(m, ci, max < 16 ? max : 16, f);
    size_t len = 0;
    char one[256];

    buf[0] = '\0';
    for (int i = 0; i < k && len + 1 < n; i++) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? " <- " : "",
                         pystack_frame_text(m->runs[run].run, f[i], one, sizeof(one)));
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return buf;
}

json_t *pystack_stack_json(const struct model *m, uint64_t ci)
{
    size_t n;
    const struct cs_frame *f = pystack_frames(m, ci, &n);
    uint32_t run = model_call_proc(m, &m->call[ci])->run;
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, frame_json(m, run, &f[i]));
    return a;
}
