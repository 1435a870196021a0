/* ranks_expect.c: checks the multi-rank parts of a cudaspy-analyze --json
 * report (docs/json.md "ranks" and the rank_straggler chain) read from
 * stdin. Each argument is one check; the first failing one prints a line
 * and the program exits 1 (2 for unreadable JSON or an unknown check).
 *   ranks=N          the "ranks" array has N entries, ranks 0..N-1 in order
 *   straggler=R      a HIGH rank_straggler chain names rank R, with lost_ns > 0
 *                    and straggled_steps > 0, and only chains of the shared
 *                    box's own CPU contention (cpu_contention_*) come first
 *   busy_dominates   that chain's straggler was on CPU (host_cause_ns.busy)
 *                    longer than asleep, in D state and in CUDA calls
 *   cause_in=A,B     that chain's host_cause is one of A, B, ...
 *   no_high_straggler no rank_straggler chain is HIGH, unless the box's own
 *                    load explains it: its host_cause is preempted_tree or
 *                    preempted_external (a loaded box does delay a rank)
 *   may_precede=A,B  (before the checks it applies to) chains of these causes
 *                    may also come before the straggler's: in a helper-thread
 *                    barrier the main thread's own wait on that thread is
 *                    reported as data_pipeline_starvation too; the
 *                    straggler's own host work is host_bound in the account
 *                    of the rank that stands for the job (the one with the
 *                    most time off the GPU: the straggler), and in a slower
 *                    build it can outweigh rank_straggler, whose impact is
 *                    capped at what the account's findings leave */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_int_t geti(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static const char *gets_(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "ranks_expect: %s: %s\n", what, detail);
    return 1;
}

static int check_ranks(const json_t *j, long want)
{
    const json_t *ranks = json_object_get(j, "ranks"), *r;
    char buf[64];
    size_t i;

    if ((long)json_array_size(ranks) != want) {
        snprintf(buf, sizeof(buf), "%zu entries, want %ld", json_array_size(ranks), want);
        return fail("ranks", buf);
    }
    json_array_foreach(ranks, i, r)
        if (geti(r, "rank") != (json_int_t)i || json_array_size(json_object_get(r, "pids")) == 0 ||
            geti(r, "cuda_calls") <= 0 || json_array_size(json_object_get(r, "apis")) == 0)
            return fail("ranks", "an entry lacks its rank, pids, calls or sync apis");
    json_array_foreach(ranks, i, r) /* the clients put rank r on device r */
        if (geti(r, "device") != (json_int_t)i)
            return fail("ranks", "a rank's device is not its GPU ordinal");
    return 0;
}

/* The first rank_straggler chain; NULL (with a message) if another cause
 * than the box's CPU contention comes before it, or there is none. */
static const char *may_precede = ""; /* may_precede=A,B */

/* Is @p cause one of the comma-separated may_precede list? */
static int may_come_first(const char *cause)
{
    size_t n = strlen(cause);

    for (const char *p = may_precede; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && strncmp(p, cause, n) == 0)
            return 1;
        p += l + (e != NULL);
    }
    return 0;
}

static const json_t *straggler_chain(const json_t *chains)
{
    const json_t *c;
    size_t i;

    json_array_foreach(chains, i, c) {
        const char *cause = gets_(c, "cause");
        if (strcmp(cause, "rank_straggler") == 0)
            return c;
        if (strncmp(cause, "cpu_contention_", 15) != 0 && !may_come_first(cause)) {
            fail("straggler", cause);
            return NULL;
        }
    }
    fail("straggler", "no rank_straggler chain");
    return NULL;
}

static int check_straggler(const json_t *top, long want)
{
    char buf[128];

    if (top == NULL)
        return 1;
    if (strcmp(gets_(top, "severity"), "HIGH") != 0)
        return fail("straggler", gets_(top, "severity"));
    if (geti(top, "rank") != want || geti(top, "lost_ns") <= 0 ||
        geti(top, "straggled_steps") <= 0) {
        snprintf(buf, sizeof(buf), "rank %lld lost_ns %lld straggled_steps %lld, want rank %ld",
                 (long long)geti(top, "rank"), (long long)geti(top, "lost_ns"),
                 (long long)geti(top, "straggled_steps"), want);
        return fail("straggler", buf);
    }
    return 0;
}

static int check_busy(const json_t *top)
{
    if (top == NULL)
        return 1;

    const json_t *c = json_object_get(top, "host_cause_ns");
    json_int_t busy = geti(c, "busy");
    char *dump;
    int rc;

    if (busy > geti(c, "sleep") && busy > geti(c, "io_wait") && busy > geti(c, "cuda"))
        return 0;
    dump = json_dumps(c, JSON_COMPACT);
    rc = fail("busy_dominates", dump ? dump : "no host_cause_ns");
    free(dump);
    return rc;
}

static int check_cause_in(const json_t *top, const char *list)
{
    if (top == NULL)
        return 1;
    const char *want = gets_(top, "host_cause");
    size_t n = strlen(want);

    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && strncmp(p, want, n) == 0)
            return 0;
        p += l + (e != NULL);
    }
    return fail("cause_in", want);
}

static int check(const json_t *j, const char *arg)
{
    const json_t *chains = json_object_get(j, "chains"), *c;
    size_t i;

    if (strncmp(arg, "may_precede=", 12) == 0) {
        may_precede = arg + 12;
        return 0;
    }
    if (strncmp(arg, "ranks=", 6) == 0)
        return check_ranks(j, strtol(arg + 6, NULL, 10));
    if (strncmp(arg, "straggler=", 10) == 0)
        return check_straggler(straggler_chain(chains), strtol(arg + 10, NULL, 10));
    if (strcmp(arg, "busy_dominates") == 0)
        return check_busy(straggler_chain(chains));
    if (strncmp(arg, "cause_in=", 9) == 0)
        return check_cause_in(straggler_chain(chains), arg + 9);
    if (strcmp(arg, "no_high_straggler") == 0) {
        json_array_foreach(chains, i, c)
            if (strcmp(gets_(c, "cause"), "rank_straggler") == 0 &&
                strcmp(gets_(c, "severity"), "HIGH") == 0 &&
                strncmp(gets_(c, "host_cause"), "preempted_", 10) != 0)
                return fail("no_high_straggler", gets_(c, "summary"));
        return 0;
    }
    fprintf(stderr, "ranks_expect: unknown check %s\n", arg);
    return 2;
}

int main(int argc, char **argv)
{
    json_error_t e;
    json_t *j = json_loadf(stdin, 0, &e);
    int rc = 0;

    if (j == NULL) {
        fprintf(stderr, "ranks_expect: stdin: %s (line %d)\n", e.text, e.line);
        return 2;
    }
    for (int i = 1; i < argc && rc == 0; i++)
        rc = check(j, argv[i]);
    json_decref(j);
    return rc;
}
