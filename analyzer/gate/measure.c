/* gate/measure.c: fills the run part of a gate summary from the analysis of
 * the run file: the CUDA-active window and the findings as the report sees
 * them (analysis_json), the steps the analysis found (analysis_steps). What
 * the gate makes of them is criteria.c's business. */
#include "measure.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "bootstrap.h"
#include "model/steps.h"

static uint64_t get_u64(json_t *o, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(o, key));
    return v > 0 ? (uint64_t)v : 0;
}

/* Outermost launches: the unit of work when a run has no steps. */
static uint64_t count_launches(json_t *apis)
{
    uint64_t n = 0;
    size_t i;
    json_t *row;
    json_array_foreach(apis, i, row) {
        const char *fam = json_string_value(json_object_get(row, "family"));
        if (fam && strcmp(fam, "launch") == 0 && !json_is_true(json_object_get(row, "nested")))
            n += get_u64(row, "count");
    }
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Causes of the HIGH findings, sorted, each once. @return 0 or -ENOMEM */
static int high_findings(struct summary_run *r, json_t *chains)
{
    size_t i;
    json_t *f;
    r->high = calloc(json_array_size(chains) + 1, sizeof(*r->high));
    if (!r->high)
        return -ENOMEM;
    json_array_foreach(chains, i, f) {
        const char *sev = json_string_value(json_object_get(f, "severity"));
        const char *cause = json_string_value(json_object_get(f, "cause"));
        if (!sev || !cause || strcmp(sev, "HIGH") != 0)
            continue;
        if (!(r->high[r->nhigh++] = strdup(cause)))
            return -ENOMEM;
    }
    qsort(r->high, r->nhigh, sizeof(*r->high), cmp_str);
    size_t k = 0;
    for (i = 0; i < r->nhigh; i++) {
        if (k && strcmp(r->high[k - 1], r->high[i]) == 0)
            free(r->high[i]);
        else
            r->high[k++] = r->high[i];
    }
    r->nhigh = k;
    return 0;
}

/* GPU idle share of the covered time, when GPU activity was recorded. */
static int gpu_idle(struct summary_run *r, json_t *gpu)
{
    const char *src = json_string_value(json_object_get(gpu, "source"));
    double busy = json_number_value(json_object_get(gpu, "busy_pct")) / 100.0;
    if (!src || (strcmp(src, "exact") != 0 && strcmp(src, "sampled") != 0) ||
        get_u64(gpu, "covered_ns") == 0)
        return 0;
    if (!(r->gpu_source = strdup(src)))
        return -ENOMEM;
    r->gpu_idle = busy >= 1.0 ? 0.0 : busy <= 0.0 ? 1.0 : 1.0 - busy;
    r->gpu_covered_ns = get_u64(gpu, "covered_ns");
    return 0;
}

/* The same steps as the GPU ran them, where GPU activity recorded some. */
static int gpu_steps(struct summary *s, const struct analysis *a, const struct steps *st,
                     size_t max_samples)
{
    char how[96];
    uint64_t *v = malloc(st->n * sizeof(*v)), *host = malloc(st->n * sizeof(*host));
    size_t n;
    int rc;

    if (!v || !host) {
        free(v);
        free(host);
        return -ENOMEM;
    }
    n = analysis_step_gpu_durations(a, v, host);
    snprintf(how, sizeof(how), "GPU side: %zu of %zu steps inside recorded GPU activity", n,
             st->n);
    s->run.gpu_steps.host_p50_ns = n ? bootstrap_quantile(host, n, 0.5) : 0;
    free(host);
    rc = summary_set_steps(s, 1, steps_source_name(st->source), how, v, n, max_samples);
    if (n == 0)
        s->run.gpu_steps.host_p50_ns = 0;
    return rc;
}

/* The steps the analysis found (model/steps.h). */
static int steps(struct summary *s, const struct analysis *a, size_t max_samples)
{
    uint32_t pid, tid;
    const struct steps *st = analysis_steps(a, &pid, &tid);
    if (st->source == STEPS_NONE || st->n == 0)
        return 0;
    uint64_t *v = malloc(st->n * sizeof(*v));
    if (!v)
        return -ENOMEM;
    steps_durations(st, v);
    int rc = summary_set_steps(s, 0, steps_source_name(st->source), st->how, v,
                               st->n, max_samples);
    if (rc < 0)
        return rc;
    return gpu_steps(s, a, st, max_samples);
}

int measure_analysis(const struct analysis *a, json_t *j, size_t max_samples, struct summary *s)
{
    json_t *run = json_object_get(j, "run");
    int rc;

    s->run.window_ns = get_u64(run, "active_ns");
    s->run.launches = count_launches(json_object_get(j, "apis"));
    rc = steps(s, a, max_samples);
    if (rc == 0)
        rc = gpu_idle(&s->run, json_object_get(j, "gpu"));
    if (rc == 0)
        rc = high_findings(&s->run, json_object_get(j, "chains"));
    if (rc == 0)
        s->has_run = 1;
    return rc;
}

int measure_run(const char *path, size_t max_samples, const char *step, struct summary *s,
                struct cs_err *err)
{
    struct analysis_opts o;
    struct analysis *a = NULL;
    struct cs_err e2 = {{0}};
    json_t *j;
    int rc;

    analysis_opts_init(&o);
    o.step = step;
    rc = analysis_load(&path, 1, &o, &a, &e2);
    if (rc < 0) /* "--step: ..." without the file, a run-file error with it */
        return cs_err_set(err, rc, "%s%s%s", rc == -ENOENT ? path : "",
                          rc == -ENOENT ? ": " : "", e2.msg[0] ? e2.msg : cs_strerror(rc));
    j = analysis_json(a);
    rc = j ? measure_analysis(a, j, max_samples, s) : -ENOMEM;
    json_decref(j);
    analysis_free(a);
    if (rc < 0)
        return cs_err_set(err, rc, "%s: %s", path, cs_strerror(rc));
    return 0;
}
