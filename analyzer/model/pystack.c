/* model/pystack.c: a call's or a sample's stack as sites and frames
 * (pystack.h), and the samples of a thread's host code. Reads the stacks
 * and strings of the run; owns nothing. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pystack.h"

struct pystack_ref pystack_ref_of_call(const struct model *m, uint64_t ci)
{
    struct pystack_ref r = {model_proc_of_call(m, ci)->run, model_call_stack(m, ci)};
    return r;
}

struct pystack_ref pystack_ref_of_sample(const struct model *m, const struct m_pysample *s)
{
    struct pystack_ref r = {m->proc[m->thr[s->thr].proc].run, s->stack_id};
    return r;
}

static const struct cs_frame *ref_frames(const struct model *m, struct pystack_ref r, size_t *n)
{
    *n = 0;
    return r.id ? cs_run_stack(m->runs[r.run].run, r.id, n) : NULL;
}

const struct cs_frame *pystack_frames(const struct model *m, uint64_t ci, size_t *n)
{
    return ref_frames(m, pystack_ref_of_call(m, ci), n);
}

static int is_python(const struct cs_frame *f)
{
    return (f->flags & CS_FRAME_PYTHON) != 0;
}

/* Is the directory [@p c, @p e) of @p path named @p name? */
static int dir_is(const char *c, const char *e, const char *name)
{
    size_t len = strlen(name);
    return (size_t)(e - c) == len && memcmp(c, name, len) == 0;
}

/* Is the directory [@p c, @p e) of @p path a stdlib one: "python3.12",
 * "python3.13t" or "python312.zip" in a directory "lib" or "lib64"? */
static int is_stdlib_dir(const char *path, const char *c, const char *e)
{
    const char *d = c + 6, *up = c - 1, *ver_end = e;

    if (e - c <= 6 || memcmp(c, "python", 6) != 0 || c == path || c[6] < '0' || c[6] > '9')
        return 0;
    while (up > path && up[-1] != '/')
        up--;
    if (!dir_is(up, c - 1, "lib") && !dir_is(up, c - 1, "lib64"))
        return 0;
    if (e - d > 4 && memcmp(e - 4, ".zip", 4) == 0)
        ver_end = e - 4;
    else if (e[-1] == 't')
        ver_end = e - 1;
    while (d < ver_end && ((*d >= '0' && *d <= '9') || *d == '.'))
        d++;
    return d == ver_end;
}

/* Where a library's own directory ends in @p path: after the last
 * "site-packages/", "dist-packages/" or stdlib directory (is_stdlib_dir).
 * @return the rest of the path (the module's, "torch/cuda/__init__.py"),
 * NULL when @p path lies in none. */
static const char *library_rest(const char *path)
{
    const char *rest = NULL, *e;

    for (const char *c = path; (e = strchr(c, '/')) != NULL; c = e + 1)
        if (dir_is(c, e, "site-packages") || dir_is(c, e, "dist-packages") ||
            is_stdlib_dir(path, c, e))
            rest = e + 1;
    return rest;
}

enum pystack_origin pystack_file_origin(const char *path)
{
    if (path[0] == '\0' || (path[0] == '<' && strncmp(path, "<frozen ", 8) != 0))
        return PYSTACK_PSEUDO; /* <string>, <stdin>: exec() or typed in; "": unknown */
    if (path[0] == '<' || library_rest(path))
        return PYSTACK_LIBRARY;
    return PYSTACK_USER;
}

size_t pystack_site_frame(struct cs_run *r, const struct cs_frame *f, size_t n)
{
    size_t best = n;
    int best_origin = PYSTACK_LIBRARY + 1;

    for (size_t i = 0; i < n && best_origin > PYSTACK_USER; i++) {
        int o;
        if (!is_python(&f[i]))
            continue;
        o = (int)pystack_file_origin(cs_run_string(r, f[i].module_id));
        if (o < best_origin) {
            best = i;
            best_origin = o;
        }
    }
    return best < n ? best : 0;
}

/* torch's code that warms up or records a CUDA graph: torch/cuda/graphs.py
 * but a replay, and cudagraph trees' functions that run only for a shape
 * not recorded yet (a replay passes through none of them). */
static const char *const graph_funcs[] = {
    "cudagraphify",               "CUDAGraphTreeManager.add_function",
    "CUDAGraphTreeManager.run_eager", "CUDAWarmupNode.run",
    "CUDAGraphTreeManager.record_function", "CUDAGraphNode.__init__",
    "CUDAGraphNode._record",      "CUDAGraphNode.run_first_inputs",
};

static int is_graph_build(const char *rest, const char *func)
{
    if (!strcmp(rest, "torch/cuda/graphs.py"))
        return strcmp(func, "CUDAGraph.replay") != 0;
    if (strcmp(rest, "torch/_inductor/cudagraph_trees.py"))
        return 0;
    for (size_t i = 0; i < sizeof(graph_funcs) / sizeof(graph_funcs[0]); i++)
        if (!strcmp(func, graph_funcs[i]))
            return 1;
    return 0;
}

/* The outermost of frames @p f (@p n, innermost first) in that code, or
 * SIZE_MAX. */
static size_t outermost_graph_frame(struct cs_run *r, const struct cs_frame *f, size_t n)
{
    size_t out = SIZE_MAX;

    for (size_t i = 0; f && i < n; i++) {
        const char *rest;
        if (is_python(&f[i]) && (rest = library_rest(cs_run_string(r, f[i].module_id))) &&
            is_graph_build(rest, cs_run_string(r, CS_FRAME_PY_FUNC(&f[i]))))
            out = i;
    }
    return out;
}

uint64_t pystack_ref_graph_key(const struct model *m, struct pystack_ref ref)
{
    size_t n;
    const struct cs_frame *f = ref_frames(m, ref, &n);
    size_t out = outermost_graph_frame(m->runs[ref.run].run, f, n);
    uint64_t key = 1469598103934665603ull; /* FNV-1a over the frames' ids */

    if (out == SIZE_MAX)
        return 0;
    for (size_t i = out; i < n && i <= out + 1; i++) {
        uint64_t v[3] = {f[i].module_id, f[i].offset, f[i].flags};
        for (int j = 0; j < 3; j++)
            key = (key ^ v[j]) * 1099511628211ull;
    }
    return key ? key : 1;
}

int pystack_ref_role(const struct model *m, struct pystack_ref ref)
{
    size_t n;
    const struct cs_frame *f = ref_frames(m, ref, &n);
    struct cs_run *r = m->runs[ref.run].run;
    int inner = 1;

    if (ref.id == 0 || f == NULL)
        return PYSTACK_ROLE_USER;
    if (outermost_graph_frame(r, f, n) != SIZE_MAX)
        return PYSTACK_ROLE_GRAPHS;
    for (size_t i = 0; i < n; i++) {
        const char *rest;
        if (!is_python(&f[i]))
            continue;
        rest = library_rest(cs_run_string(r, f[i].module_id));
        if (rest && !strncmp(rest, "torch/utils/data/", 17) &&
            strstr(cs_run_string(r, CS_FRAME_PY_FUNC(&f[i])), "_MultiProcessingDataLoaderIter"))
            return PYSTACK_ROLE_LOADER;
        if (inner && rest && !strncmp(rest, "torch/", 6) && strncmp(rest, "torch/utils/data/", 17))
            inner = 2; /* the framework's, unless a receive path lies further out */
        else if (inner == 1)
            inner = 0;
    }
    return inner == 2 ? PYSTACK_ROLE_FRAMEWORK : PYSTACK_ROLE_USER;
}

int pystack_ref_site(const struct model *m, struct pystack_ref ref, struct pystack_site *s)
{
    size_t n, at;
    const struct cs_frame *f = ref_frames(m, ref, &n);

    memset(s, 0, sizeof(*s));
    if (ref.id == 0)
        return -1;
    s->run = ref.run;
    if (f == NULL || n == 0)
        return 0; /* PYSTACK_MISSING: the id names no stack */
    at = pystack_site_frame(m->runs[ref.run].run, f, n);
    if (!is_python(&f[at])) { /* no Python frame: the innermost native one */
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

int pystack_site(const struct model *m, uint64_t ci, struct pystack_site *s)
{
    return pystack_ref_site(m, pystack_ref_of_call(m, ci), s);
}

int pystack_site_eq(const struct pystack_site *a, const struct pystack_site *b)
{
    return a->run == b->run && a->kind == b->kind && a->file_id == b->file_id &&
           a->func_id == b->func_id && a->where == b->where;
}

uint64_t pystack_site_hash(const struct pystack_site *s)
{
    uint64_t h = 1469598103934665603ull;
    const uint64_t v[5] = {s->run, s->kind, s->file_id, s->func_id, s->where};

    for (int i = 0; i < 5; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h;
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

const char *pystack_short_name(const char *path)
{
    const char *rest = path[0] == '<' ? NULL : library_rest(path);
    return rest && *rest ? rest : base_name(path);
}

static const char *text_of(struct cs_run *r, uint32_t kind, uint32_t file_id, uint32_t func_id,
                           uint64_t where, char *buf, size_t n)
{
    if (kind == PYSTACK_PYTHON) {
        const char *file = pystack_short_name(str_q(r, file_id));
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

/* Frames of call @p ci around its site: its callers (@p inside 0), the
 * frames after the site, Python ones only when the site is one; or the
 * Python frames before it (@p inside 1: the library frames its line went
 * through). Fills @p out (at most @p max, innermost first) and returns the
 * count. */
static int around(const struct model *m, struct pystack_ref ref, int inside, int max,
                  const struct cs_frame **out)
{
    struct pystack_site s;
    size_t n;
    const struct cs_frame *f = ref_frames(m, ref, &n);
    int at = pystack_ref_site(m, ref, &s), k = 0;

    if (at < 0 || s.kind == PYSTACK_MISSING)
        return 0;
    for (size_t i = inside ? 0 : (size_t)at + 1; i < (inside ? (size_t)at : n) && k < max; i++)
        if ((!inside && s.kind == PYSTACK_NATIVE) || is_python(&f[i]))
            out[k++] = &f[i];
    return k;
}

static json_t *around_json(const struct model *m, struct pystack_ref ref, int inside, int max)
{
    const struct cs_frame *f[16];
    json_t *a = json_array();
    int k = around(m, ref, inside, max < 16 ? max : 16, f);

    for (int i = 0; i < k; i++)
        json_array_append_new(a, frame_json(m, ref.run, f[i]));
    return a;
}

json_t *pystack_ref_callers_json(const struct model *m, struct pystack_ref ref, int max)
{
    return around_json(m, ref, 0, max);
}

json_t *pystack_ref_via_json(const struct model *m, struct pystack_ref ref, int max)
{
    return around_json(m, ref, 1, max);
}

json_t *pystack_callers_json(const struct model *m, uint64_t ci, int max)
{
    return around_json(m, pystack_ref_of_call(m, ci), 0, max);
}

json_t *pystack_via_json(const struct model *m, uint64_t ci, int max)
{
    return around_json(m, pystack_ref_of_call(m, ci), 1, max);
}

const char *pystack_callers_text(const struct model *m, uint64_t ci, int max, char *buf, size_t n)
{
    const struct cs_frame *f[16];
    uint32_t run = model_proc_of_call(m, ci)->run;
    int k = around(m, pystack_ref_of_call(m, ci), 0, max < 16 ? max : 16, f);
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
    uint32_t run = model_proc_of_call(m, ci)->run;
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, frame_json(m, run, &f[i]));
    return a;
}

/* ---- samples of host code ---- */

/* First sample of thread @p thr at or after @p t_ns (model.pys is sorted
 * by thread, then time). */
static uint64_t sample_at(const struct model *m, uint32_t thr, uint64_t t_ns)
{
    uint64_t lo = 0, hi = m->npys;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const struct m_pysample *s = &m->pys[mid];
        if (s->thr < thr || (s->thr == thr && s->t_ns < t_ns))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t pystack_samples_in(const struct model *m, uint32_t thr, uint64_t t0_ns, uint64_t t1_ns,
                            pystack_sample_fn fn, void *arg)
{
    uint64_t n = 0;

    for (uint64_t i = sample_at(m, thr, t0_ns);
         i < m->npys && m->pys[i].thr == thr && m->pys[i].t_ns < t1_ns; i++, n++)
        if (fn)
            fn(arg, &m->pys[i]);
    return n;
}

uint64_t pystack_thread_samples(const struct model *m, uint32_t thr)
{
    return pystack_samples_in(m, thr, 0, UINT64_MAX, NULL, NULL);
}
