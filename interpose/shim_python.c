/* shim_python.c: the calling thread's CPython stack, read in-process
 * (docs/python.md). Owns the interpreter layouts (one table entry per
 * version for 3.10 to 3.12; from 3.13 the interpreter's own
 * _Py_DebugOffsets), finding this thread's frame chain, and turning a
 * frame into (file, function, line).
 *
 * The walk reads only the calling thread's own frames, which cannot change
 * while that thread is inside the CUDA call that asked: it takes no GIL,
 * allocates nothing and calls nothing in the interpreter but
 * PyGILState_GetThisThreadState() (one pthread_getspecific). Every code
 * object is checked to be one (its type is PyCode_Type) before anything is
 * read through it, and a process's first walks read through a pipe, which
 * fails instead of faulting, until one proves the layout. Strings and line numbers are read only for a stack not
 * seen before (shim_stack.c). A version or layout we do not know: no Python
 * frames and one notice. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudaspy/pyframe.h"
#include "shim.h"

/* Offsets read with offsetof() against each version's own headers
 * (docs/python.md says how). */
static const struct cs_py_layout py_310 = {
    .kind = CS_PY_OBJFRAME, .table = 10, .owner_skip = 0xff,
    .ts_frame = 24, .cf_frame = -1,
    .fr_code = 32, .fr_back = 24, .fr_instr = 96, .fr_owner = -1,
    .co_filename = 104, .co_qualname = 112, .co_firstlineno = 40, .co_linetable = 120,
    .co_code = 0, .ob_type = 8, .bytes_size = 16, .bytes_data = 32,
    .str_length = 16, .str_state = 32, .str_ascii = 48, .str_compact = 72,
};
static const struct cs_py_layout py_311 = {
    .kind = CS_PY_IFRAME, .table = 11, .owner_skip = 0xff,
    .ts_frame = 56, .cf_frame = 8,
    .fr_code = 32, .fr_back = 48, .fr_instr = 56, .fr_owner = 69,
    .co_filename = 112, .co_qualname = 128, .co_firstlineno = 72, .co_linetable = 136,
    .co_code = 184, .ob_type = 8, .bytes_size = 16, .bytes_data = 32,
    .str_length = 16, .str_state = 32, .str_ascii = 48, .str_compact = 72,
};
static const struct cs_py_layout py_312 = {
    .kind = CS_PY_IFRAME, .table = 11, .owner_skip = 3, /* FRAME_OWNED_BY_CSTACK */
    .ts_frame = 56, .cf_frame = 0,
    .fr_code = 0, .fr_back = 8, .fr_instr = 56, .fr_owner = 70,
    .co_filename = 112, .co_qualname = 128, .co_firstlineno = 68, .co_linetable = 136,
    .co_code = 192, .ob_type = 8, .bytes_size = 16, .bytes_data = 32,
    .str_length = 16, .str_state = 32, .str_ascii = 40, .str_compact = 56,
};

/* What the interpreter of this process is; set once, by the constructor. */
static struct {
    struct cs_py_layout L;           /* also what the ring segments publish (shim_py_publish) */
    uintptr_t code_type;             /* &PyCode_Type */
    uintptr_t str_type, bytes_type;  /* &PyUnicode_Type, &PyBytes_Type (the first walks) */
    void *(*this_tstate)(void);      /* PyGILState_GetThisThreadState */
    int (*initialized)(void);        /* Py_IsInitialized: 0 once finalisation began */
    uintptr_t base;                  /* load address of the interpreter's object */
    unsigned minor;
    unsigned sample_hz;              /* CUDASPY_PYSAMPLE_HZ: the collector's samples */
} py;

const uint8_t shim_py_when_[CS_API_COUNT] = {
#define PY_WHEN_(name, layer, fam, sync)                                                   \
    [CS_API_##name] = (sync)                                             ? SHIM_PY_SYNC    \
                      : ((fam) == CS_FAM_ALLOC || (fam) == CS_FAM_FREE)  ? SHIM_PY_ALLOC   \
                      : ((fam) == CS_FAM_CAPTURE || (fam) == CS_FAM_GRAPH) ? SHIM_PY_RARE  \
                      : ((fam) == CS_FAM_LAUNCH || (fam) == CS_FAM_COPY || \
                         (fam) == CS_FAM_MEMSET)                         ? SHIM_PY_ENQUEUE \
                                                                         : 0,
    CS_API_LIST(PY_WHEN_)
#undef PY_WHEN_
};

static inline uintptr_t rd_ptr(uintptr_t p) { return *(const uintptr_t *)p; }

/* ---- the layout ---- */

/* _Py_DebugOffsets, which 3.13 and later publish at the start of
 * _PyRuntime (3.13: Include/internal/pycore_runtime.h, 3.14:
 * pycore_debug_offsets.h): the cookie "xdebugpy", the version, a
 * free_threaded word, then groups of u64 offsets, each led by its
 * structure's size. Groups grow between versions: how many words each of
 * those before the ones read here has. */
struct py_dbg_shape {
    uint8_t interp, frame, code; /* words of interpreter_state, interpreter_frame, code_object */
    uint8_t between;             /* words from type_object to bytes_object */
};
static const struct py_dbg_shape dbg_313 = {13, 6, 10, 4 + 3 + 3 + 3 + 2 + 3};
static const struct py_dbg_shape dbg_314 = {16, 8, 11, 4 + 3 + 3 + 4 + 3 + 2 + 3};

/* The layout from the debug offsets @p w (words after the header).
 * @return 0, -1 if an offset is out of range. */
static int layout_from_words(const uint64_t *w, const struct py_dbg_shape *sh, unsigned minor)
{
    size_t ts = 3 + sh->interp, fr = ts + 9, co = fr + sh->frame, ob = co + sh->code;
    size_t by = ob + 2 + sh->between, st = by + 3;
    const uint64_t want[] = {w[ts + 4], w[fr + 1], w[fr + 2], w[fr + 3], w[fr + 5], w[co + 1],
                             w[co + 3], w[co + 4], w[co + 5], w[co + 9], w[ob + 1], w[by + 1],
                             w[by + 2], w[st + 1], w[st + 2], w[st + 3]};

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (want[i] > INT16_MAX - 16)
            return -1;
    py.L = (struct cs_py_layout){
        .kind = CS_PY_IFRAME, .table = 11,
        .owner_skip = 3, /* CSTACK (3.13), INTERPRETER and CSTACK (3.14: 3, 4) */
        .tag_mask = minor >= 14 ? 7 : 0, /* 3.14: f_executable is a tagged _PyStackRef */
        .ts_frame = (int16_t)w[ts + 4], .cf_frame = -1,
        .fr_back = (int16_t)w[fr + 1], .fr_code = (int16_t)w[fr + 2],
        .fr_instr = (int16_t)w[fr + 3], .fr_owner = (int16_t)w[fr + 5],
        .co_filename = (int16_t)w[co + 1], .co_qualname = (int16_t)w[co + 3],
        .co_linetable = (int16_t)w[co + 4], .co_firstlineno = (int16_t)w[co + 5],
        .co_code = (int16_t)w[co + 9], .ob_type = (int16_t)w[ob + 1],
        .bytes_size = (int16_t)w[by + 1], .bytes_data = (int16_t)w[by + 2],
        .str_state = (int16_t)w[st + 1], .str_length = (int16_t)w[st + 2],
        .str_ascii = (int16_t)w[st + 3],
        .str_compact = (int16_t)(w[st + 3] + 16), /* + utf8_length, utf8 */
    };
    return 0;
}

/* 3.13+'s layout from its debug offsets at @p rt. @return 0, -1 if they
 * are not what we know (a later version, a free-threaded 3.14). */
static int layout_debug(const uint8_t *rt, unsigned minor)
{
    uint64_t w[160], head[3];

    if ((minor != 13 && minor != 14) || memcmp(rt, "xdebugpy", 8) != 0)
        return -1;
    memcpy(head, rt, sizeof(head));
    if ((head[1] >> 16 & 0xff) != minor || head[2] > 1 || (minor >= 14 && head[2]))
        return -1; /* 3.14t: thread-local bytecode, another str state */
    memcpy(w, rt + sizeof(head), sizeof(w));
    return layout_from_words(w, minor == 13 ? &dbg_313 : &dbg_314, minor);
}

/* Host-code samples a second per CUDA thread (docs/python.md, "Host code"):
 * $CUDASPY_PYSAMPLE_HZ, 0 = none, at most PY_SAMPLE_HZ_MAX; anything else
 * gets one warning and the default. */
#define PY_SAMPLE_HZ 100u
#define PY_SAMPLE_HZ_MAX 1000ul
static unsigned env_sample_hz(void)
{
    const char *v = getenv("CUDASPY_PYSAMPLE_HZ");
    char *end;
    unsigned long hz;
    int e = errno;

    if (v == NULL || *v == '\0')
        return PY_SAMPLE_HZ;
    errno = 0;
    hz = strtoul(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || errno || hz > PY_SAMPLE_HZ_MAX) {
        shim_log("warning: CUDASPY_PYSAMPLE_HZ is not a number from 0 to 1000; "
                 "sampling host code at 100 Hz");
        hz = PY_SAMPLE_HZ;
    }
    errno = e;
    return (unsigned)hz;
}

static const char *env_python(void)
{
    const char *v = getenv("CUDASPY_PYTHON");
    return v ? v : "1";
}

/* 0x030b02f0 from Py_Version (3.11+), else parsed from Py_GetVersion(). */
static unsigned long py_hexversion(shim_dlsym_fn sym)
{
    const unsigned long *v = sym(RTLD_DEFAULT, "Py_Version");
    const char *(*get)(void) = (const char *(*)(void))(uintptr_t)sym(RTLD_DEFAULT, "Py_GetVersion");
    unsigned major = 0, minor = 0;

    if (v)
        return *v;
    if (get && sscanf(get(), "%u.%u", &major, &minor) == 2)
        return (unsigned long)major << 24 | (unsigned long)minor << 16;
    return 0;
}

/* The free-threaded build's objects have another header: not read. */
static int py_free_threaded(shim_dlsym_fn sym)
{
    const char *(*get)(void) = (const char *(*)(void))(uintptr_t)sym(RTLD_DEFAULT, "Py_GetVersion");
    return get && strstr(get(), "free-threading") != NULL;
}

static void py_notice(const char *what, unsigned long hex)
{
    char msg[160];

    snprintf(msg, sizeof(msg), "python: CPython %lu.%lu: %s; no Python frames (docs/python.md)",
             hex >> 24 & 0xff, hex >> 16 & 0xff, what);
    shim_log(msg);
}

void shim_python_init(void)
{
    shim_dlsym_fn sym = __atomic_load_n(&shim_real_dlsym_, __ATOMIC_ACQUIRE);
    unsigned long hex;
    void *tstate, *code, *rt, *eval;
    Dl_info di;

    if (sym == NULL || strcmp(env_python(), "0") == 0)
        return;
    tstate = sym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    code = sym(RTLD_DEFAULT, "PyCode_Type");
    if (tstate == NULL || code == NULL)
        return; /* not a Python program */
    hex = py_hexversion(sym);
    rt = sym(RTLD_DEFAULT, "_PyRuntime");
    eval = sym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    py.minor = (unsigned)(hex >> 16 & 0xff);
    if ((hex >> 24) != 3 || py.minor < 10) {
        py_notice("version not supported (3.10 and later are)", hex);
        return;
    }
    if (py.minor < 13 && py_free_threaded(sym)) {
        py_notice("free-threaded build not supported", hex);
        return;
    }
    if (py.minor == 10)
        py.L = py_310;
    else if (py.minor == 11)
        py.L = py_311;
    else if (py.minor == 12)
        py.L = py_312;
    else if (rt == NULL || layout_debug(rt, py.minor) < 0) {
        py_notice("no _Py_DebugOffsets we can read", hex);
        return;
    }
    py.code_type = (uintptr_t)code;
    py.str_type = (uintptr_t)sym(RTLD_DEFAULT, "PyUnicode_Type");
    py.bytes_type = (uintptr_t)sym(RTLD_DEFAULT, "PyBytes_Type");
    py.this_tstate = (void *(*)(void))(uintptr_t)tstate;
    py.initialized = (int (*)(void))(uintptr_t)sym(RTLD_DEFAULT, "Py_IsInitialized");
    if (eval && dladdr(eval, &di) && di.dli_fbase)
        py.base = (uintptr_t)di.dli_fbase;
    py.L.minor = (uint8_t)py.minor;
    py.L.code_type = py.code_type;
    py.L.str_type = py.str_type;
    py.L.bytes_type = py.bytes_type;
    py.sample_hz = env_sample_hz();
    atomic_fetch_or_explicit(&shim_stacks_, SHIM_STK_PYTHON, memory_order_relaxed);
}

uintptr_t shim_py_base(void) { return py.base; }

void shim_py_publish(struct cs_py_layout *out)
{
    memset(out, 0, sizeof(*out));
    if (py.sample_hz == 0 || !(atomic_load(&shim_stacks_) & SHIM_STK_PYTHON))
        return;
    *out = py.L;
    out->sample_hz = (uint16_t)py.sample_hz;
    out->magic = CS_PY_LAYOUT_MAGIC;
}

/* ---- the first walk: proving the layout ---- */

/* 1 once a walk with checked reads found the layout right in this process. */
static _Atomic int proven;

/* Copy @p n bytes at @p p, failing instead of faulting where nothing is
 * mapped: write() of them into a pipe returns EFAULT. */
static int safe_read(const int fd[2], uintptr_t p, void *out, size_t n)
{
    if (p == 0 || write(fd[1], (const void *)p, n) != (ssize_t)n)
        return -1;
    return read(fd[0], out, n) == (ssize_t)n ? 0 : -1;
}

static int safe_ptr(const int fd[2], uintptr_t p, uintptr_t *out)
{
    return safe_read(fd, p, out, sizeof(*out));
}

/* Is @p obj (read through @p fd) of type @p type? */
static int safe_is(const int fd[2], uintptr_t obj, uintptr_t type)
{
    uintptr_t t;
    return obj != 0 && safe_ptr(fd, obj + py.L.ob_type, &t) == 0 && t == type;
}

/* One frame with checked reads: its code object, file (str) and line
 * table (bytes). @return 1 checked, 0 skipped (a C entry frame), -1 wrong. */
static int prove_frame(const int fd[2], uintptr_t fr)
{
    uint8_t owner = 0;
    uintptr_t co, s;

    if (py.L.fr_owner >= 0 && safe_read(fd, fr + py.L.fr_owner, &owner, 1) < 0)
        return -1;
    if (py.L.fr_owner >= 0 && owner >= py.L.owner_skip)
        return 0;
    if (safe_ptr(fd, fr + py.L.fr_code, &co) < 0)
        return -1;
    co &= ~(uintptr_t)py.L.tag_mask;
    if (!safe_is(fd, co, py.code_type) || safe_ptr(fd, co + py.L.co_filename, &s) < 0 ||
        !safe_is(fd, s, py.str_type) || safe_ptr(fd, co + py.L.co_linetable, &s) < 0 ||
        !safe_is(fd, s, py.bytes_type))
        return -1;
    return 1;
}

/* Walk this thread's first frames with checked reads, so that a layout we
 * got wrong (a bug-fix release that moved a field) costs a notice, not the
 * program. @return 1 it holds, 0 nothing to check yet, -1 it does not. */
static int prove(void)
{
    int fd[2], rc = 0, checked = 0, err = errno;
    uintptr_t ts = (uintptr_t)py.this_tstate(), fr = 0;

    if (ts == 0 || pipe2(fd, O_CLOEXEC) < 0) {
        errno = err;
        return 0;
    }
    if (safe_ptr(fd, ts + py.L.ts_frame, &fr) < 0 ||
        (py.L.cf_frame >= 0 && fr != 0 && safe_ptr(fd, fr + py.L.cf_frame, &fr) < 0))
        rc = -1;
    for (int hops = 0; rc == 0 && fr != 0 && checked < 8 && hops < SHIM_PY_HOPS; hops++) {
        int r = prove_frame(fd, fr);
        if (r < 0 || safe_ptr(fd, fr + py.L.fr_back, &fr) < 0)
            rc = -1;
        checked += r > 0;
    }
    close(fd[0]);
    close(fd[1]);
    errno = err;
    return rc < 0 ? -1 : checked > 0;
}

/* The first walks of a process prove the layout; one that fails turns
 * Python stacks off. @return 1 go on walking. */
static int layout_proven(void)
{
    int r;

    if (SHIM_LIKELY(atomic_load_explicit(&proven, memory_order_acquire)))
        return 1;
    r = prove();
    if (r > 0) {
        atomic_store_explicit(&proven, 1, memory_order_release);
        return 1;
    }
    if (r < 0 && (atomic_fetch_and(&shim_stacks_, ~SHIM_STK_PYTHON) & SHIM_STK_PYTHON)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "python: CPython 3.%u: its frames are not laid out as we "
                 "read them; no Python frames from here on (docs/python.md)", py.minor);
        shim_log(msg);
    }
    return 0;
}

/* ---- the walk (every capture) ---- */

/* This thread's state, 0 when it has none or the interpreter finalises. */
static uintptr_t this_tstate(void)
{
    if (py.initialized && !py.initialized())
        return 0; /* finalising: thread states are being freed */
    return (uintptr_t)py.this_tstate(); /* 0: a thread Python never ran on */
}

uintptr_t shim_py_tstate(void)
{
    if (py.sample_hz == 0 || !(atomic_load(&shim_stacks_) & SHIM_STK_PYTHON) ||
        !atomic_load_explicit(&proven, memory_order_acquire))
        return 0;
    return this_tstate();
}

/* The frame chain's first frame, or 0; *@p ts gets the thread's state. */
static uintptr_t first_frame(uintptr_t *ts_out)
{
    uintptr_t ts = this_tstate(), fr;

    *ts_out = ts;
    if (ts == 0)
        return 0;
    fr = rd_ptr(ts + py.L.ts_frame);
    if (py.L.cf_frame >= 0 && fr != 0)
        fr = rd_ptr(fr + py.L.cf_frame);
    return fr;
}

/* Code object of frame @p fr, 0 if it is not running one (a C entry frame). */
static uintptr_t frame_code(uintptr_t fr)
{
    uintptr_t co;

    if (py.L.fr_owner >= 0 && *(const uint8_t *)(fr + py.L.fr_owner) >= py.L.owner_skip)
        return 0;
    co = rd_ptr(fr + py.L.fr_code) & ~(uintptr_t)py.L.tag_mask;
    return co && rd_ptr(co + py.L.ob_type) == py.code_type ? co : 0;
}

/* Index of the instruction frame @p fr is at, in code units. */
static int64_t frame_instr(uintptr_t fr, uintptr_t co)
{
    if (py.L.kind == CS_PY_OBJFRAME)
        return *(const int32_t *)(fr + py.L.fr_instr);
    return ((intptr_t)rd_ptr(fr + py.L.fr_instr) - (intptr_t)(co + py.L.co_code)) / 2;
}

int shim_py_walk(struct shim_py_raw *raw, int max)
{
    uintptr_t fr, ts;
    int n = 0;

    if (!layout_proven())
        return 0;
    fr = first_frame(&ts);
    if (py.sample_hz)
        shim_ring_py_tstate(ts); /* the collector samples it between calls */

    for (int hops = 0; fr != 0 && n < max && hops < SHIM_PY_HOPS; hops++) {
        uintptr_t co = frame_code(fr);
        if (co != 0) {
            raw[n].code = co;
            raw[n].instr = frame_instr(fr, co);
            n++;
        }
        fr = rd_ptr(fr + py.L.fr_back);
    }
    return n;
}

/* ---- resolving a frame (a stack not seen before) ---- */

static uint32_t frame_line(uintptr_t co, int64_t ix)
{
    uintptr_t tab = rd_ptr(co + py.L.co_linetable);
    int first = *(const int32_t *)(co + py.L.co_firstlineno);

    if (tab == 0 && ix >= 0)
        return 0;
    return cs_py_line(&py.L, tab ? (const uint8_t *)(tab + py.L.bytes_data) : NULL,
                      tab ? *(const int64_t *)(tab + py.L.bytes_size) : 0, first, ix);
}

/* UTF-8 of a compact str object into @p out (@p cap bytes). @return bytes. */
static size_t str_utf8(uintptr_t s, char *out, size_t cap)
{
    unsigned kind;
    int64_t len;
    size_t off;

    if (s == 0)
        return 0;
    len = *(const int64_t *)(s + py.L.str_length);
    off = cs_py_str_data(&py.L, *(const uint32_t *)(s + py.L.str_state), len, &kind);
    return off ? cs_py_str_utf8((const uint8_t *)(s + off), kind, len, out, cap) : 0;
}

/* Strings already interned, by a hash of their bytes (a file is named by
 * many code objects); under shim_lock(). */
#define PY_STRS 8192u
static struct {
    uint64_t h;
    uint32_t id;
} strs[PY_STRS];
static uint32_t nstrs; /* at most 3/4 full: a probe always ends */

static uint32_t intern_str(uintptr_t s, uintptr_t handle)
{
    char buf[512];
    size_t n = str_utf8(s, buf, sizeof(buf));
    uint64_t h = 1469598103934665603ull;
    uint32_t id = 0, i;

    if (n == 0)
        return 0;
    for (size_t k = 0; k < n; k++)
        h = (h ^ (uint8_t)buf[k]) * 1099511628211ull;
    h |= 1; /* 0 = empty slot */
    shim_lock();
    for (i = (uint32_t)h % PY_STRS; strs[i].h != 0 && strs[i].h != h; i = (i + 1) % PY_STRS)
        ;
    id = strs[i].h == h ? strs[i].id : 0;
    shim_unlock();
    if (id) {
        shim_name_touch(id); /* sent again in a fork child */
        return id;
    }
    id = shim_name_intern_slow(buf, n, handle, CS_NAME_PYTHON);
    shim_lock();
    if (id && strs[i].h == 0 && nstrs < PY_STRS / 4 * 3) {
        strs[i].h = h;
        strs[i].id = id;
        nstrs++;
    }
    shim_unlock();
    return id;
}

void shim_py_frame(const struct shim_py_raw *r, struct cs_frame *f)
{
    uintptr_t co = r->code;

    memset(f, 0, sizeof(*f));
    f->flags = CS_FRAME_PYTHON;
    f->module_id = intern_str(rd_ptr(co + py.L.co_filename), co);
    f->offset = CS_FRAME_PY_OFFSET(frame_line(co, r->instr),
                                   intern_str(rd_ptr(co + py.L.co_qualname), co));
}
