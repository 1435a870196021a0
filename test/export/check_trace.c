/* check_trace.c: a strict checker of Chrome Trace Event JSON as the format
 * document (catapult docs/trace-event-format.md) and Perfetto's importer
 * read it, for cudaspy-analyze export. Checks: container; required fields
 * per phase; ts/dur exact to the nanosecond (3 decimals); X slices nest per
 * (pid, tid); B/E balanced and monotonic per thread; every s has one f with
 * the same id and cat, at or after it, both inside a slice of their thread;
 * counters numeric; a process_name for every pid and a thread_name for
 * every thread with slices. Usage: check_trace FILE.json; exit 0 when valid,
 * 1 with one line per problem (first 20). */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slice {
    int64_t pid, tid, start, end; /* ns */
    size_t ev;
};

struct flow {
    char key[160]; /* cat/id */
    int64_t pid, tid, ts;
    int is_start;
    size_t ev;
};

struct checker {
    const char *path;
    int errors;
    struct slice *sl;
    size_t nsl, capsl;
    struct flow *fl;
    size_t nfl, capfl;
    json_t *pnames, *tnames, *pids_used; /* sets as objects keyed by "pid" / "pid/tid" */
    size_t nev, nflows, ncounters;
};

static void bad(struct checker *c, size_t ev, const char *what, const char *detail)
{
    if (c->errors++ < 20)
        fprintf(stderr, "check_trace: %s: event %zu: %s%s%s\n", c->path, ev, what,
                detail ? ": " : "", detail ? detail : "");
}

static void *push(void *arr, size_t *n, size_t *cap, size_t size)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        arr = realloc(arr, *cap * size);
        if (!arr) {
            fprintf(stderr, "check_trace: out of memory\n");
            exit(2);
        }
    }
    (*n)++;
    return arr;
}

/* ts/dur in µs -> ns; -1 on a non-number or more than ns precision. */
static int us_to_ns(json_t *v, int64_t *ns)
{
    if (!json_is_number(v))
        return -1;
    double us = json_number_value(v), x = us * 1000.0;
    if (!isfinite(x) || fabs(x - llround(x)) > 1e-3 * (1 + fabs(x) * 1e-12))
        return -1;
    *ns = llround(x);
    return 0;
}

static void key_pid(char *b, size_t n, int64_t pid) { snprintf(b, n, "%lld", (long long)pid); }
static void key_thr(char *b, size_t n, int64_t pid, int64_t tid)
{
    snprintf(b, n, "%lld/%lld", (long long)pid, (long long)tid);
}

static void check_meta(struct checker *c, json_t *e, size_t i, int64_t pid, int64_t tid)
{
    const char *name = json_string_value(json_object_get(e, "name"));
    json_t *an = json_object_get(json_object_get(e, "args"), "name");
    char k[64];
    if (strcmp(name, "process_name") == 0 || strcmp(name, "thread_name") == 0) {
        if (!json_is_string(an))
            return bad(c, i, "M event without string args.name", name);
        if (name[0] == 'p') {
            key_pid(k, sizeof(k), pid);
            json_object_set_new(c->pnames, k, json_true());
        } else {
            key_thr(k, sizeof(k), pid, tid);
            json_object_set_new(c->tnames, k, json_true());
        }
    } else if (strcmp(name, "process_sort_index") && strcmp(name, "thread_sort_index") &&
               strcmp(name, "process_labels")) {
        bad(c, i, "unknown metadata name", name);
    }
}

static void check_counter(struct checker *c, json_t *e, size_t i)
{
    json_t *args = json_object_get(e, "args"), *v;
    const char *k;
    if (!json_is_object(args) || json_object_size(args) == 0)
        return bad(c, i, "C event without args", NULL);
    json_object_foreach(args, k, v)
        if (!json_is_number(v))
            bad(c, i, "counter series is not a number", k);
    c->ncounters++;
}

static void add_flow(struct checker *c, json_t *e, size_t i, int64_t pid, int64_t tid,
                     int64_t ts, const char *ph)
{
    json_t *id = json_object_get(e, "id");
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (!cat)
        return bad(c, i, "flow event without cat", NULL);
    if (!json_is_integer(id) && !json_is_string(id))
        return bad(c, i, "flow event without id", NULL);
    if (ph[0] == 'f') {
        json_t *bp = json_object_get(e, "bp");
        if (bp && (!json_is_string(bp) || strcmp(json_string_value(bp), "e")))
            return bad(c, i, "flow bp must be \"e\"", NULL);
    }
    c->fl = push(c->fl, &c->nfl, &c->capfl, sizeof(*c->fl));
    struct flow *f = &c->fl[c->nfl - 1];
    if (json_is_integer(id))
        snprintf(f->key, sizeof(f->key), "%s/%lld", cat, (long long)json_integer_value(id));
    else
        snprintf(f->key, sizeof(f->key), "%s/%s", cat, json_string_value(id));
    f->pid = pid, f->tid = tid, f->ts = ts, f->is_start = ph[0] == 's', f->ev = i;
}

static void add_slice(struct checker *c, size_t i, int64_t pid, int64_t tid, int64_t s, int64_t e)
{
    c->sl = push(c->sl, &c->nsl, &c->capsl, sizeof(*c->sl));
    c->sl[c->nsl - 1] = (struct slice){pid, tid, s, e, i};
    char k[64];
    key_thr(k, sizeof(k), pid, tid);
    json_object_set_new(c->pids_used, k, json_integer(pid));
}

static void check_event(struct checker *c, json_t *e, size_t i)
{
    const char *ph = json_string_value(json_object_get(e, "ph"));
    json_t *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid");
    int64_t ts, dur;
    if (!json_is_object(e) || !ph)
        return bad(c, i, "not an object with a string ph", NULL);
    if (!json_is_string(json_object_get(e, "name")))
        return bad(c, i, "missing name", ph);
    if (!json_is_integer(pid) || !json_is_integer(tid))
        return bad(c, i, "pid/tid missing or not integers", ph);
    if (us_to_ns(json_object_get(e, "ts"), &ts) < 0)
        return bad(c, i, "ts missing or finer than 1 ns", ph);
    int64_t p = json_integer_value(pid), t = json_integer_value(tid);
    if (strcmp(ph, "X") == 0) {
        if (us_to_ns(json_object_get(e, "dur"), &dur) < 0 || dur < 0)
            return bad(c, i, "X without a valid dur", NULL);
        add_slice(c, i, p, t, ts, ts + dur);
    } else if (strcmp(ph, "M") == 0) {
        check_meta(c, e, i, p, t);
    } else if (strcmp(ph, "C") == 0) {
        check_counter(c, e, i);
    } else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
        add_flow(c, e, i, p, t, ts, ph);
    } else if (strcmp(ph, "B") == 0 || strcmp(ph, "E") == 0) {
        bad(c, i, "B/E events are not produced by cudaspy (use X)", NULL);
    } else if (strcmp(ph, "i") && strcmp(ph, "I")) {
        bad(c, i, "unknown phase", ph);
    }
}

static int cmp_slice(const void *a, const void *b)
{
    const struct slice *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->end < y->end) - (x->end > y->end); /* longer first: parents before children */
}

/* X slices of one thread must form a forest: a slice starting inside another ends inside it. */
static void check_nesting(struct checker *c)
{
    struct slice **stack = malloc((c->nsl + 1) * sizeof(*stack));
    size_t depth = 0;
    char msg[160];
    if (c->nsl)
        qsort(c->sl, c->nsl, sizeof(*c->sl), cmp_slice);
    for (size_t i = 0; i < c->nsl; i++) {
        struct slice *s = &c->sl[i];
        if (i && (s->pid != c->sl[i - 1].pid || s->tid != c->sl[i - 1].tid))
            depth = 0;
        while (depth && stack[depth - 1]->end <= s->start)
            depth--;
        if (depth && s->end > stack[depth - 1]->end) {
            snprintf(msg, sizeof(msg), "[%lld, %lld] ns overlaps event %zu [%lld, %lld] on %lld/%lld",
                     (long long)s->start, (long long)s->end, stack[depth - 1]->ev,
                     (long long)stack[depth - 1]->start, (long long)stack[depth - 1]->end,
                     (long long)s->pid, (long long)s->tid);
            bad(c, s->ev, "X slices do not nest", msg);
            continue;
        }
        stack[depth++] = s;
    }
    free(stack);
}

static int in_slice(const struct checker *c, int64_t pid, int64_t tid, int64_t ts)
{
    for (size_t i = 0; i < c->nsl; i++)
        if (c->sl[i].pid == pid && c->sl[i].tid == tid && c->sl[i].start <= ts &&
            ts <= c->sl[i].end)
            return 1;
    return 0;
}

static int cmp_flow(const void *a, const void *b)
{
    const struct flow *x = a, *y = b;
    int k = strcmp(x->key, y->key);
    return k ? k : y->is_start - x->is_start; /* s before f */
}

static void check_flows(struct checker *c)
{
    if (c->nfl == 0)
        return;
    qsort(c->fl, c->nfl, sizeof(*c->fl), cmp_flow);
    for (size_t i = 0; i < c->nfl; i++) {
        struct flow *f = &c->fl[i];
        if (!in_slice(c, f->pid, f->tid, f->ts))
            bad(c, f->ev, "flow event outside every slice of its thread", f->key);
        if (!f->is_start) {
            bad(c, f->ev, "flow finish without a start", f->key);
            continue;
        }
        if (i + 1 >= c->nfl || strcmp(c->fl[i + 1].key, f->key) || c->fl[i + 1].is_start) {
            bad(c, f->ev, "flow start without a finish", f->key);
            continue;
        }
        struct flow *g = &c->fl[++i];
        if (!in_slice(c, g->pid, g->tid, g->ts))
            bad(c, g->ev, "flow event outside every slice of its thread", g->key);
        if (g->ts < f->ts)
            bad(c, g->ev, "flow finishes before it starts", g->key);
        if (i + 1 < c->nfl && strcmp(c->fl[i + 1].key, f->key) == 0)
            bad(c, c->fl[i + 1].ev, "flow id reused", f->key);
        c->nflows++;
    }
}

static void check_names(struct checker *c)
{
    const char *k;
    json_t *v;
    char pk[32];
    json_object_foreach(c->pids_used, k, v) {
        key_pid(pk, sizeof(pk), json_integer_value(v));
        if (!json_object_get(c->pnames, pk))
            bad(c, 0, "process without process_name", pk);
        if (!json_object_get(c->tnames, k))
            bad(c, 0, "thread with slices but no thread_name", k);
    }
}

int main(int argc, char **argv)
{
    json_error_t je;
    struct checker c = {.path = argc > 1 ? argv[1] : "?"};
    if (argc != 2) {
        fprintf(stderr, "usage: check_trace FILE.json\n");
        return 2;
    }
    json_t *root = json_load_file(argv[1], 0, &je);
    if (!root) {
        fprintf(stderr, "check_trace: %s: invalid JSON (line %d: %s)\n", argv[1], je.line, je.text);
        return 1;
    }
    json_t *evs = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(evs)) {
        fprintf(stderr, "check_trace: %s: no traceEvents array\n", argv[1]);
        return 1;
    }
    c.pnames = json_object(), c.tnames = json_object(), c.pids_used = json_object();
    c.nev = json_array_size(evs);
    for (size_t i = 0; i < c.nev; i++)
        check_event(&c, json_array_get(evs, i), i);
    check_nesting(&c);
    check_flows(&c);
    check_names(&c);
    if (c.errors == 0)
        printf("check_trace: ok: %zu events, %zu slices, %zu flows, %zu counters\n", c.nev, c.nsl,
               c.nflows, c.ncounters);
    else
        fprintf(stderr, "check_trace: %s: %d problems\n", argv[1], c.errors);
    json_decref(c.pnames);
    json_decref(c.tnames);
    json_decref(c.pids_used);
    json_decref(root);
    free(c.sl);
    free(c.fl);
    return c.errors ? 1 : 0;
}
