/* model/pystack.h: the stacks of CUDA calls (struct cs_frame, record.h) as the
 * analyzer names them. A stack holds native frames (module + offset) and,
 * above the interpreter, CPython frames (file, line, function), innermost
 * first. A call's site is the innermost Python frame of the user's code
 * (pystack_site_frame(): an installed library's frames are passed over),
 * else its innermost native frame; the frames outside the site are its
 * callers, the Python frames inside it the library's it went through
 * ("via"). Bad input never fails: a stack id with no stack is the site "?",
 * a string id with no string reads "?". Aggregating sites is
 * rules/pyline.c's job. */
#ifndef CUDASPY_ANALYZER_PYSTACK_H
#define CUDASPY_ANALYZER_PYSTACK_H

#include <jansson.h>
#include <stddef.h>

#include "model.h"

#define PYSTACK_CALLERS 3 /* caller frames given with a site */

/* A call site: what two calls share when they come from the same line. */
struct pystack_site {
    uint32_t run;
    uint32_t kind;      /* enum pystack_kind */
    uint32_t file_id;   /* Python: the source file; native: the module (0 = unknown) */
    uint32_t func_id;   /* Python: the function's qualified name */
    uint64_t where;     /* Python: the line (0 = unknown); native: offset or address */
};

enum pystack_kind { PYSTACK_MISSING = 0, PYSTACK_PYTHON = 1, PYSTACK_NATIVE = 2 };

/* Where a Python source file comes from, best site first. */
enum pystack_origin {
    PYSTACK_USER = 0,    /* any other path: the user's code */
    PYSTACK_PSEUDO = 1,  /* "<string>", "<stdin>", "" (unknown): exec()'d or typed in */
    PYSTACK_LIBRARY = 2, /* under site-packages/, dist-packages/, lib/python3.N/; <frozen *> */
};

/** Origin of Python file @p path (co_filename as recorded), from the path
 * alone (docs/python.md, "Which frame is the site"). */
enum pystack_origin pystack_file_origin(const char *path);

/** The site among frames @p f (@p n of them, innermost first, strings of
 * run @p r): the innermost Python frame of the lowest origin present (the
 * user's code, else a pseudo file, else the innermost Python frame), else
 * frame 0 (no Python frame: the innermost native one). The one rule every
 * output names sites by. @return its index; 0 when @p n is 0 */
size_t pystack_site_frame(struct cs_run *r, const struct cs_frame *f, size_t n);

/* A recorded stack: a call's or a sample's (its run, its stack id; id 0 =
 * none). The functions on calls below are these on pystack_ref_of_call(). */
struct pystack_ref {
    uint32_t run;
    uint32_t id;
};

struct pystack_ref pystack_ref_of_call(const struct model *m, uint64_t ci);
struct pystack_ref pystack_ref_of_sample(const struct model *m, const struct m_pysample *s);

/** Site of stack @p ref, as pystack_site() for a call. */
int pystack_ref_site(const struct model *m, struct pystack_ref ref, struct pystack_site *s);

/** pystack_callers_json() and pystack_via_json() of stack @p ref. */
json_t *pystack_ref_callers_json(const struct model *m, struct pystack_ref ref, int max);
json_t *pystack_ref_via_json(const struct model *m, struct pystack_ref ref, int max);

/* What a stack of host code was doing, for the account's host code
 * (rules/account.c): the user's code, a DataLoader's receive path (its
 * multi-process iterator, any frame: unpickling a worker's batch), the
 * framework's own Python (the innermost Python frame in torch/, outside
 * torch/utils/data/: modules, autograd, optimizers between launches), or
 * torch building a CUDA graph (any frame: torch/cuda/graphs.py but a
 * replay, or cudagraph trees warming up or recording a new shape; first). */
enum pystack_role {
    PYSTACK_ROLE_USER = 0,
    PYSTACK_ROLE_LOADER = 1,
    PYSTACK_ROLE_FRAMEWORK = 2,
    PYSTACK_ROLE_GRAPHS = 3,
    PYSTACK_ROLE_COUNT
};

/** The role of stack @p ref (PYSTACK_ROLE_USER without a stack). */
int pystack_ref_role(const struct model *m, struct pystack_ref ref);

/** For a stack of PYSTACK_ROLE_GRAPHS, a key of its outermost frame of
 * torch's graph code and the frame that called it: two calls with the
 * same key can lie in one run of that code (a warm-up's calls), two with
 * different keys cannot (a warm-up, then a recording). @return 0 for
 * another role */
uint64_t pystack_ref_graph_key(const struct model *m, struct pystack_ref ref);

/* ---- samples of host code (docs/python.md, "Host code") ---- */

typedef void (*pystack_sample_fn)(void *arg, const struct m_pysample *s);

/** Call @p fn (may be NULL: count only) for each Python sample of thread
 * @p thr (index in model.thr) taken in [@p t0_ns, @p t1_ns), in time
 * order: the Python lines its host code was running then. O(log samples +
 * samples in the stretch). @return how many */
uint64_t pystack_samples_in(const struct model *m, uint32_t thr, uint64_t t0_ns, uint64_t t1_ns,
                            pystack_sample_fn fn, void *arg);

/** Samples of thread @p thr in the window (0: none, e.g. the run predates
 * them or CUDASPY_PYSAMPLE_HZ=0). */
uint64_t pystack_thread_samples(const struct model *m, uint32_t thr);

/** Frames of call @p ci's stack, innermost first. @return borrowed (valid
 * while the model is), NULL when it has none or its id names no stack;
 * *n gets the count. */
const struct cs_frame *pystack_frames(const struct model *m, uint64_t ci, size_t *n);

/** Site of call @p ci into @p s. @return -1 when the call has no stack id;
 * else the index of the site's frame in pystack_frames() (0 and kind
 * PYSTACK_MISSING when the id names no stack). */
int pystack_site(const struct model *m, uint64_t ci, struct pystack_site *s);

/** Whether two sites are the same line. */
int pystack_site_eq(const struct pystack_site *a, const struct pystack_site *b);

/** A hash of site @p s (FNV-1a over its fields): equal sites hash equal. */
uint64_t pystack_site_hash(const struct pystack_site *s);

/** Python file @p path as the text forms name it: a library's from its
 * package on ("torch/cuda/__init__.py": "__init__.py" alone says little),
 * any other by its base name. @return a suffix of @p path */
const char *pystack_short_name(const char *path);

/** "train.py:57 in train_step" (basename of the file; a library's file
 * from its package on, "torch/cuda/__init__.py:1162 in synchronize"), "libtorch.so+0x1a2b",
 * "0x7f12..." (no module) or "?" into @p buf. @return buf */
const char *pystack_site_text(const struct model *m, const struct pystack_site *s, char *buf,
                              size_t n);

/** Frame @p f of run @p r as text, as pystack_site_text() does (the
 * Perfetto export, which reads records rather than the model, uses it). */
const char *pystack_frame_text(struct cs_run *r, const struct cs_frame *f, char *buf, size_t n);

/** The site as a JSON frame: {"file", "function", "line"} or {"module",
 * "offset"} (docs/json.md); {"file": "?", ...} for a missing stack.
 * @return new reference */
json_t *pystack_site_json(const struct model *m, const struct pystack_site *s);

/** The frames of call @p ci outside its site (callers), innermost first,
 * at most @p max, Python frames only when the site is one; as JSON frames
 * into a new array. */
json_t *pystack_callers_json(const struct model *m, uint64_t ci, int max);

/** The Python frames of call @p ci inside its site (the library's frames its
 * line went through, "via"), innermost first, at most @p max; as JSON frames
 * into a new array, empty when the site is the innermost Python frame. */
json_t *pystack_via_json(const struct model *m, uint64_t ci, int max);

/** "train.py:80 in main <- train.py:90 in <module>" (callers, as above)
 * into @p buf; "" when none. @return buf */
const char *pystack_callers_text(const struct model *m, uint64_t ci, int max, char *buf,
                                 size_t n);

/** Every frame of call @p ci, innermost first, as JSON frames. */
json_t *pystack_stack_json(const struct model *m, uint64_t ci);

#endif
