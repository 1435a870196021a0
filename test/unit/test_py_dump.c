/* test_py_dump.c: the Python stacks of a run's CUDA records, one line per
 * record that has one, for test/python/py_check.py (cli.python_*):
 *
 *   pid tid api duration_ns nframes file:line:function [| file:line:function ...]
 *
 * frames innermost first, Python frames only, then "native N m1,m2,..."
 * when the stack also holds N native frames (which must come first): the
 * basenames of their modules. Waits for the
 * collector's clean shutdown like the other checkers.
 *
 * With --samples, the Python samples of host code instead (docs/python.md,
 * "Host code"), one line each:
 *
 *   pid tid t_start_ns read_ns nframes flags file:line:function [| ...]
 *
 * With --meta KEY, the run's meta value KEY (empty when absent) instead.
 *
 * Usage: test_py_dump [--samples | --meta KEY] RUN. Exit 0, 1 when the run cannot be
 * read or a stack is malformed (a native frame after a Python one, a stack
 * id without a stack; a sample's stack must be Python frames only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "cudaspy/runfile.h"
#include "run_wait.h"

/* One record's line. @return 0, -1 if its stack is malformed. */
static int dump_one(struct cs_run *run, const struct cs_rec_cuda *r)
{
    size_t n, py = 0, native = 0;
    const struct cs_frame *f = cs_run_stack(run, r->stack_id, &n);
    char name[96];

    if (f == NULL) {
        fprintf(stderr, "test_py_dump: stack %u of a record is missing\n", r->stack_id);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (f[i].flags & CS_FRAME_PYTHON)
            py++;
        else if (py) {
            fprintf(stderr, "test_py_dump: stack %u: native frame %zu after a Python one\n",
                    r->stack_id, i);
            return -1;
        } else {
            native++;
        }
    }
    if (py == 0)
        return 0;
    printf("%u %u %s %llu %zu", r->pid, r->tid,
           cs_api_display((enum cs_api)r->api, (enum cs_variant)r->variant, name, sizeof(name)),
           (unsigned long long)(r->t_exit_ns - r->t_enter_ns), py);
    for (size_t i = native, k = 0; i < n; i++, k++)
        printf("%s%s:%u:%s", k ? " | " : " ", cs_run_string(run, f[i].module_id),
               CS_FRAME_PY_LINE(&f[i]), cs_run_string(run, CS_FRAME_PY_FUNC(&f[i])));
    if (native)
        printf(" native %zu ", native);
    for (size_t i = 0; i < native; i++) {
        const char *m = cs_run_string(run, f[i].module_id), *b = strrchr(m, '/');
        printf("%s%s", i ? "," : "", b ? b + 1 : *m ? m : "?");
    }
    putchar('\n');
    return 0;
}

/* One sample's line. @return 0, -1 if its stack is malformed. */
static int dump_sample(struct cs_run *run, const struct cs_rec_pysample *s)
{
    size_t n;
    const struct cs_frame *f = cs_run_stack(run, s->stack_id, &n);

    if (f == NULL || n != s->nframes) {
        fprintf(stderr, "test_py_dump: sample's stack %u: %zu frames, want %u\n", s->stack_id,
                n, s->nframes);
        return -1;
    }
    printf("%u %u %llu %llu %zu %u", s->pid, s->tid, (unsigned long long)s->t_start_ns,
           (unsigned long long)(s->t_end_ns - s->t_start_ns), n, s->flags);
    for (size_t i = 0; i < n; i++) {
        if (!(f[i].flags & CS_FRAME_PYTHON)) {
            fprintf(stderr, "test_py_dump: sample's stack %u: frame %zu is native\n",
                    s->stack_id, i);
            return -1;
        }
        printf("%s%s:%u:%s", i ? " | " : " ", cs_run_string(run, f[i].module_id),
               CS_FRAME_PY_LINE(&f[i]), cs_run_string(run, CS_FRAME_PY_FUNC(&f[i])));
    }
    putchar('\n');
    return 0;
}

int main(int argc, char **argv)
{
    struct cs_run *run = NULL;
    struct cs_cursor *c = NULL;
    struct cs_err err = {""};
    const struct cs_blk_hdr *h;
    const void *p;
    int rc, bad = 0, samples = argc == 3 && strcmp(argv[1], "--samples") == 0;
    const char *meta = argc == 4 && strcmp(argv[1], "--meta") == 0 ? argv[2] : NULL;

    if (argc != 2 && !samples && !meta) {
        fprintf(stderr, "usage: test_py_dump [--samples | --meta KEY] RUN\n");
        return 2;
    }
    argv += samples + (meta ? 2 : 0);
    if ((rc = run_open_wait(&run, argv[1], 30, &err)) != 0) {
        fprintf(stderr, "test_py_dump: %s: %s\n", argv[1],
                rc < 0 ? err.msg : "collector never finished (clean_shutdown=0)");
        return 1;
    }
    if (meta) {
        const char *v = cs_run_meta(run, meta);
        printf("%s\n", v ? v : "");
        cs_run_free(run);
        return 0;
    }
    if (cs_cursor_open(run, samples ? CS_REC_PYSAMPLE : CS_REC_CUDA, 0, UINT64_MAX, &c) < 0) {
        cs_run_free(run);
        return 1;
    }
    while ((rc = cs_cursor_next(c, &h, &p, &err)) == 1) {
        const struct cs_rec_cuda *r = p;
        for (uint32_t i = 0; i < h->n; i++)
            if (samples ? dump_sample(run, (const struct cs_rec_pysample *)p + i) < 0
                        : r[i].stack_id && dump_one(run, &r[i]) < 0)
                bad = 1;
    }
    if (rc < 0) {
        fprintf(stderr, "test_py_dump: %s\n", err.msg);
        bad = 1;
    }
    cs_cursor_close(c);
    cs_run_free(run);
    return bad;
}
