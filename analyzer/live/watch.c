/* live/watch.c: `cudaspy-analyze watch`, the flight recorder's trigger
 * (record --max-size SIZE --keep-on EXPR, issue 33): while the run (a file,
 * or the pid of a process being recorded: live.h's live_target) is
 * written, analyse its last seconds every interval (live.h) and, the first
 * time EXPR holds, tell the collector (--notify PID: SIGRTMIN with the
 * matched window's start, CLOCK_MONOTONIC ns) to keep every record from
 * there on for a while, whatever its cap evicts. The sampler starts it
 * (sampler/main.c); it ends when the run does, or after it fired.
 * EXPR: step_p50>Fx, step_p99>Fx (the last window's step time against F
 * times the median of the earlier windows'), step_p99>20ms (against a
 * time: ns, us, ms, s), or high (a HIGH finding of a cause not HIGH in the
 * earlier windows). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "cudaspy/grow.h"
#include "live.h"

#define PROG "cudaspy-analyze watch"
#define WATCH_MIN_BASE 2 /* earlier windows a relative limit needs */

struct expr {
    int high;          /* "high" */
    const char *stat;  /* "p50_ns", "p99_ns" */
    double factor;     /* > 0: relative to the earlier windows' median */
    uint64_t limit_ns; /* else this */
};

struct watch {
    struct expr e;
    double *base; /* each earlier window's statistic */
    size_t nbase, cap;
    char **high;  /* causes HIGH in an earlier window */
    size_t nhigh, hcap;
    int looked;   /* a sample was had */
    int past;     /* high: the first window, which sets what is usual, is past */
};

/* "20ms", "1.5s" into ns. @return 0 or -1 */
static int parse_time(const char *s, uint64_t *ns)
{
    static const struct { const char *unit; double mul; } u[] = {
        {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    char *end;
    double v = strtod(s, &end);

    for (size_t i = 0; end != s && v > 0 && i < sizeof(u) / sizeof(u[0]); i++)
        if (strcmp(end, u[i].unit) == 0) {
            *ns = (uint64_t)(v * u[i].mul);
            return 0;
        }
    return -1;
}

static int parse_expr(const char *s, struct expr *e)
{
    char *end;

    memset(e, 0, sizeof(*e));
    if (strcmp(s, "high") == 0) {
        e->high = 1;
        return 0;
    }
    if (strncmp(s, "step_p50>", 9) == 0)
        e->stat = "p50_ns";
    else if (strncmp(s, "step_p99>", 9) == 0)
        e->stat = "p99_ns";
    else
        return -1;
    s += 9;
    e->factor = strtod(s, &end);
    if (end != s && e->factor > 0 && strcmp(end, "x") == 0)
        return 0;
    e->factor = 0;
    return parse_time(s, &e->limit_ns);
}

/* Does the HIGH finding @p cause appear in an earlier window? */
static int seen_high(const struct watch *w, const char *cause)
{
    for (size_t i = 0; i < w->nhigh; i++)
        if (strcmp(w->high[i], cause) == 0)
            return 1;
    return 0;
}

/* A new HIGH cause in @p j into @p why; every HIGH cause remembered. */
static int match_high(struct watch *w, json_t *j, char *why, size_t n)
{
    json_t *f;
    size_t i;
    int hit = 0;

    json_array_foreach(json_object_get(j, "chains"), i, f) {
        const char *sev = json_string_value(json_object_get(f, "severity"));
        const char *cause = json_string_value(json_object_get(f, "cause"));
        if (!sev || !cause || strcmp(sev, "HIGH") != 0 || seen_high(w, cause))
            continue;
        if (w->past && !hit) { /* the first window sets what is usual */
            snprintf(why, n, "a new HIGH finding: %s", cause);
            hit = 1;
        }
        if (cs_grow((void **)&w->high, &w->hcap, w->nhigh + 1, sizeof(*w->high)) == 0 &&
            (w->high[w->nhigh] = strdup(cause)) != NULL)
            w->nhigh++;
    }
    return hit;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The window's step statistic against the limit. */
static int match_step(struct watch *w, json_t *j, char *why, size_t n)
{
    json_t *st = json_object_get(j, "steps");
    double v = (double)json_integer_value(json_object_get(st, w->e.stat)), lim, *m;
    int hit = 0;

    if (json_integer_value(json_object_get(st, "count")) < 3)
        return 0; /* too few steps to say */
    if (w->e.factor == 0) {
        lim = (double)w->e.limit_ns;
        hit = v > lim;
    } else if (w->nbase >= WATCH_MIN_BASE && (m = malloc(w->nbase * sizeof(*m))) != NULL) {
        memcpy(m, w->base, w->nbase * sizeof(*m));
        qsort(m, w->nbase, sizeof(*m), cmp_double);
        lim = w->e.factor * m[w->nbase / 2];
        free(m);
        hit = v > lim;
    }
    if (hit)
        snprintf(why, n, "step %s %.3f ms > %.3f ms", w->e.stat, v / 1e6, lim / 1e6);
    else if (cs_grow((void **)&w->base, &w->cap, w->nbase + 1, sizeof(*w->base)) == 0)
        w->base[w->nbase++] = v;
    return hit;
}

static int usage_error(const char *what)
{
    fprintf(stderr, PROG ": %s\nUsage: cudaspy-analyze watch --keep-on EXPR [--notify PID] "
                    "[--window S=2] [--interval S=0.5] RUN|PID\n", what);
    return 2;
}

/* The matched window's start, absolute ns, to @p pid's collector. */
static int notify(pid_t pid, const struct live_sample *s)
{
    json_t *f = json_array_get(json_object_get(json_object_get(s->json, "run"), "files"), 0);
    uint64_t t0 = (uint64_t)json_integer_value(json_object_get(f, "t_start_ns"));
    union sigval v = {.sival_ptr = (void *)(uintptr_t)(t0 + s->since_ns)};

    return pid ? sigqueue(pid, SIGRTMIN, v) : 0;
}

/* One look at the run, @p waited_ns after the first: @return 1 when EXPR
 * held (the collector told), 0 to look again, -1 when the run is over,
 * -2 when there is no run to watch (live_error_final) */
static int watch_once(struct live *l, struct watch *w, pid_t pid, uint64_t window,
                      uint64_t waited_ns)
{
    struct live_sample s;
    struct cs_err err = {""};
    char why[200] = "";
    int hit, done, rc;

    if ((rc = live_sample(l, window, &s, &err)) < 0) {
        if (w->looked || !live_error_final(rc, waited_ns))
            return 0; /* not there yet, or between commits */
        fprintf(stderr, PROG ": %s\n", err.msg[0] ? err.msg : cs_strerror(rc));
        return -2;
    }
    w->looked = 1;
    hit = w->e.high ? match_high(w, s.json, why, sizeof(why))
                    : match_step(w, s.json, why, sizeof(why));
    if (hit) {
        int rc = notify(pid, &s);
        fprintf(stderr, PROG ": %s: %s at %.2f-%.2f s: %s\n", live_path(l), why,
                (double)s.since_ns / 1e9, (double)s.end_ns / 1e9, rc < 0 ? strerror(errno) : "kept");
    }
    w->past = 1;
    done = !s.writing;
    live_sample_clear(&s);
    return hit ? 1 : done ? -1 : 0;
}

/* Look every @p interval ns until EXPR holds or the run or @p pid ends. */
static int watch_loop(struct live_target *tg, struct watch *w, pid_t pid, uint64_t window,
                      uint64_t interval)
{
    struct timespec nap = {(time_t)(interval / 1000000000u), (long)(interval % 1000000000u)};
    struct live *l = NULL;
    uint64_t waited = 0;
    int rc = 0;

    while (rc == 0) {
        nanosleep(&nap, NULL);
        waited += interval;
        if (!live_target_poll(tg) || (pid && kill(pid, 0) < 0))
            break; /* the collector is gone */
        if (tg->path[0] == '\0')
            continue; /* its run file is not open yet */
        if (l == NULL && live_open(tg->path, NULL, &l) < 0)
            return 3;
        rc = watch_once(l, w, pid, window, waited);
    }
    live_close(l);
    return rc == -2 ? 2 : 0;
}

int watch_main(int argc, char **argv)
{
    const char *expr = NULL, *path = NULL;
    uint64_t window = 2000000000ull, interval = 500000000ull;
    struct watch w = {0};
    struct live_target tg;
    pid_t pid = 0;
    int rc;

    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (o[0] != '-') {
            if (path)
                return usage_error("one run file");
            path = o;
            continue;
        }
        if (v == NULL)
            return usage_error("an option needs a value");
        i++;
        if (strcmp(o, "--keep-on") == 0)
            expr = v;
        else if (strcmp(o, "--notify") == 0)
            pid = (pid_t)atoi(v);
        else if (strcmp(o, "--window") == 0 || strcmp(o, "--interval") == 0) {
            if (live_parse_secs(v, o[2] == 'w' ? &window : &interval, 0) < 0)
                return usage_error("invalid seconds");
        }
        else
            return usage_error("unknown option");
    }
    if (expr == NULL || path == NULL)
        return usage_error("--keep-on EXPR and a run file are needed");
    if (parse_expr(expr, &w.e) < 0)
        return usage_error("invalid EXPR (step_p99>1.5x, step_p50>20ms, high)");
    if (live_target_init(&tg, path) < 0) {
        fprintf(stderr, PROG ": %s: no cudaspy-sampler records that pid\n", path);
        return 1;
    }
    rc = watch_loop(&tg, &w, pid, window, interval);
    for (size_t i = 0; i < w.nhigh; i++)
        free(w.high[i]);
    free(w.high);
    free(w.base);
    return rc;
}
