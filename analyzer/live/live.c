/* live/live.c: samples of a run file that is still being written: find
 * where the run stands now (the collector's clock, or its recorded end) and
 * analyse its last window (live.h). The analysis is analysis.c's, read
 * without waiting for the collector (analysis_opts.live). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "live.h"
#include "model/model.h"

struct live {
    char *path;
    struct analysis_opts o;
};

int live_open(const char *path, const struct analysis_opts *o, struct live **out)
{
    struct live *l = calloc(1, sizeof(*l));

    *out = NULL;
    if (l == NULL || (l->path = strdup(path)) == NULL) {
        free(l);
        return -ENOMEM;
    }
    if (o)
        l->o = *o;
    else
        analysis_opts_init(&l->o);
    l->o.live = 1;
    *out = l;
    return 0;
}

/* Where run @p r stands: ns from its start. */
static uint64_t run_end_ns(struct cs_run *r, int writing)
{
    uint64_t t0 = cs_run_meta_u64(r, "t_start_ns", 0);
    uint64_t t1 = cs_run_meta_u64(r, "t_end_ns", 0);
    struct timespec ts;

    if (writing && clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
        t1 = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return t1 > t0 ? t1 - t0 : 0;
}

int live_sample(struct live *l, uint64_t window_ns, struct live_sample *s, struct cs_err *err)
{
    struct cs_run *r = cs_run_new();
    struct analysis_opts o = l->o;
    const char *paths[1] = {l->path};
    int rc;

    memset(s, 0, sizeof(*s));
    if (r == NULL)
        return cs_err_set(err, -ENOMEM, "%s: out of memory", l->path);
    if ((rc = cs_run_open(r, l->path, err)) < 0) {
        cs_run_free(r);
        return rc;
    }
    if (cs_run_meta(r, "t_start_ns") == NULL) { /* created, its first commit to come */
        cs_run_free(r);
        return cs_err_set(err, -EAGAIN, "%s: not written yet", l->path);
    }
    s->writing = model_writer_alive(r);
    s->end_ns = run_end_ns(r, s->writing);
    cs_run_free(r);
    s->since_ns = window_ns && s->end_ns > window_ns ? s->end_ns - window_ns : 0;
    o.since_ns = s->since_ns;
    o.until_ns = UINT64_MAX;
    if ((rc = analysis_load(paths, 1, &o, &s->a, err)) < 0)
        return rc;
    s->json = analysis_json(s->a);
    if (s->json == NULL) {
        live_sample_clear(s);
        return cs_err_set(err, -ENOMEM, "%s: out of memory", l->path);
    }
    return 0;
}

void live_sample_clear(struct live_sample *s)
{
    json_decref(s->json);
    analysis_free(s->a);
    s->json = NULL;
    s->a = NULL;
}

void live_sample_release(struct live_sample *s)
{
    analysis_free(s->a);
    s->a = NULL;
}

const char *live_path(const struct live *l)
{
    return l->path;
}

void live_close(struct live *l)
{
    if (l == NULL)
        return;
    free(l->path);
    free(l);
}

int live_parse_secs(const char *s, uint64_t *ns, int zero_ok)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= 0) || (v == 0 && !zero_ok) || v > 86400)
        return -1;
    *ns = (uint64_t)(v * 1e9 + 0.5);
    return 0;
}

int live_usage_error(const char *cmd, const char *what, const char *arg)
{
    fprintf(stderr, "cudaspy-analyze: %s: %s%s%s\nTry 'cudaspy-analyze %s --help'\n", cmd, what,
            arg ? " " : "", arg ? arg : "", cmd);
    return 2;
}

int live_one_target(const char *cmd, int argc, int optind)
{
    if (optind == argc - 1)
        return 0;
    return live_usage_error(cmd, optind < argc ? "one run file or pid only" : "no run file or pid",
                            NULL);
}

int live_error_final(int rc, uint64_t waited_ns)
{
    /* a file just created is empty, or not yet a run: give it time */
    return rc < 0 && rc != -EAGAIN && waited_ns >= LIVE_WAIT_NS;
}
