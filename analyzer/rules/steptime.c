/* rules/steptime.c: the per-step report (steptime.h): exact step time
 * percentiles, and what each step's thread did: inside CUDA calls, host
 * code, asleep, preempted, D-state (off-CPU time inside a CUDA call counts
 * as CUDA time), with the GPU's busy share where activity covered it. */
#include "steptime.h"

#include <stdlib.h>
#include <string.h>

#include "model/stats.h"

struct mix {
    uint64_t dur_ns, cuda_ns, host_ns, sleep_ns, preempt_ns, disk_ns;
    double gpu;  /* busy share, -1 = not covered */
};

static void step_mix(const struct model *m, const struct gpu_truth *g, const struct m_step *s,
                     struct mix *x)
{
    const struct m_thread *th = &m->thr[s->thr];
    uint64_t end = th->first_off + th->noff, off = 0;

    memset(x, 0, sizeof(*x));
    x->dur_ns = s->t_end_ns - s->t_start_ns;
    x->cuda_ns = model_calls_inside(m, s->thr, s->t_start_ns, s->t_end_ns);
    for (uint64_t i = model_off_after(m, s->thr, s->t_start_ns);
         i < end && m->off[i].t_start_ns < s->t_end_ns; i++) {
        const struct m_off *o = &m->off[i];
        uint64_t a = o->t_start_ns > s->t_start_ns ? o->t_start_ns : s->t_start_ns;
        uint64_t b = o->t_end_ns < s->t_end_ns ? o->t_end_ns : s->t_end_ns, d;
        if (b <= a)
            continue;
        d = (b - a) - model_calls_inside(m, s->thr, a, b);
        off += d;
        if (o->cls == CS_OFF_PREEMPT)
            x->preempt_ns += d;
        else if (o->cls == CS_OFF_DISK)
            x->disk_ns += d;
        else
            x->sleep_ns += d;
    }
    x->host_ns = x->dur_ns > x->cuda_ns + off ? x->dur_ns - x->cuda_ns - off : 0;
    x->gpu = -1;
    if (g && g->source >= GPU_SRC_SAMPLED)
        gpu_bins(g, m, th->proc, s->t_start_ns, s->t_end_ns, 1, &x->gpu);
}

static json_t *mix_json(const struct mix *x)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "dur_ns", (json_int_t)x->dur_ns,
                          "cuda_ns", (json_int_t)x->cuda_ns, "host_ns", (json_int_t)x->host_ns,
                          "sleep_ns", (json_int_t)x->sleep_ns, "preempt_ns",
                          (json_int_t)x->preempt_ns, "disk_ns", (json_int_t)x->disk_ns);
    if (o)
        json_object_set_new(o, "gpu_busy_pct", x->gpu >= 0 ? json_real(100.0 * x->gpu)
                                                            : json_null());
    return o;
}

static json_t *row_json(const struct steps *s, size_t i, const struct mix *x, uint64_t t0_ns)
{
    json_t *o = mix_json(x);

    if (o) {
        json_object_set_new(o, "step", json_integer((json_int_t)i));
        json_object_set_new(o, "start_ns", json_integer((json_int_t)(s->s[i].t_start_ns - t0_ns)));
    }
    return o;
}

/* Causes of @p chains with an example inside [t0, t1) (relative ns). */
static json_t *step_causes(const json_t *chains, uint64_t t0, uint64_t t1)
{
    json_t *out = json_array();
    size_t i, k;
    const json_t *f, *e;

    json_array_foreach(chains, i, f) {
        json_array_foreach(json_object_get(f, "examples"), k, e) {
            json_int_t t = json_integer_value(json_object_get(e, "t_ns"));
            if (t >= (json_int_t)t0 && t < (json_int_t)t1) {
                json_array_append(out, json_object_get(f, "cause"));
                break;
            }
        }
    }
    return out;
}

/* The STEPTIME_WORST slowest steps, slowest first, into @p ix. */
static size_t worst(const struct steps *s, size_t *ix)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n; i++) {
        uint64_t d = s->s[i].t_end_ns - s->s[i].t_start_ns;
        size_t k;
        if (n == STEPTIME_WORST &&
            s->s[ix[n - 1]].t_end_ns - s->s[ix[n - 1]].t_start_ns >= d)
            continue;
        k = n < STEPTIME_WORST ? n++ : n - 1;
        while (k > 0 && s->s[ix[k - 1]].t_end_ns - s->s[ix[k - 1]].t_start_ns < d) {
            ix[k] = ix[k - 1];
            k--;
        }
        ix[k] = i;
    }
    return n;
}

static void add_mix(struct mix *sum, const struct mix *x, double *gpu_w, uint64_t *gpu_ns)
{
    sum->dur_ns += x->dur_ns;
    sum->cuda_ns += x->cuda_ns;
    sum->host_ns += x->host_ns;
    sum->sleep_ns += x->sleep_ns;
    sum->preempt_ns += x->preempt_ns;
    sum->disk_ns += x->disk_ns;
    if (x->gpu >= 0) {
        *gpu_w += x->gpu * (double)x->dur_ns;
        *gpu_ns += x->dur_ns;
    }
}

static int rows_json(json_t *o, const struct steps *s, const struct model *m,
                     const struct gpu_truth *g, const json_t *chains, uint64_t t0_ns)
{
    json_t *rows = json_array(), *wj = json_array();
    size_t every = s->n > STEPTIME_ROWS ? (s->n + STEPTIME_ROWS - 1) / STEPTIME_ROWS : 1;
    size_t ix[STEPTIME_WORST], nw = worst(s, ix);
    struct mix sum = {0}, x;
    double gpu_w = 0;
    uint64_t gpu_ns = 0;

    if (!rows || !wj)
        goto nomem;
    for (size_t i = 0; i < s->n; i++) {
        step_mix(m, g, &s->s[i], &x);
        add_mix(&sum, &x, &gpu_w, &gpu_ns);
        if (i % every == 0 && json_array_append_new(rows, row_json(s, i, &x, t0_ns)) < 0)
            goto nomem;
    }
    for (size_t k = 0; k < nw; k++) {
        json_t *r;
        step_mix(m, g, &s->s[ix[k]], &x);
        if ((r = row_json(s, ix[k], &x, t0_ns)) == NULL)
            goto nomem;
        json_object_set_new(r, "chains",
                            step_causes(chains, s->s[ix[k]].t_start_ns - t0_ns,
                                        s->s[ix[k]].t_end_ns - t0_ns));
        json_array_append_new(wj, r);
    }
    sum.gpu = gpu_ns ? gpu_w / (double)gpu_ns : -1;
    json_object_set_new(o, "mix", mix_json(&sum));
    json_object_set_new(o, "rows_every", json_integer((json_int_t)every));
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "worst", wj);
    return 0;
nomem:
    json_decref(rows);
    json_decref(wj);
    return -1;
}

/* The set-up: from the steps' process's first CUDA call to the first step,
 * on the steps' thread, as a step's mix; NULL when the first step is first. */
static json_t *setup_json(const struct steps *s, const struct model *m, const struct gpu_truth *g,
                          uint64_t t0_ns)
{
    struct m_step su = {0, 0, s->thr, 0};
    struct mix x;
    json_t *o;

    if (!steps_setup(m, s, &su.t_start_ns, &su.t_end_ns))
        return NULL;
    step_mix(m, g, &su, &x);
    if ((o = mix_json(&x)) != NULL)
        json_object_set_new(o, "start_ns", json_integer((json_int_t)(su.t_start_ns - t0_ns)));
    return o;
}

json_t *steptime_json(const struct steps *s, const struct model *m, const struct gpu_truth *g,
                      const json_t *chains, uint64_t t0_ns)
{
    json_t *o = json_pack("{s:s, s:s, s:I}", "source", steps_source_name(s->source), "how", s->how,
                          "count", (json_int_t)s->n);
    struct stats_summary q = {0};
    uint64_t *d;

    if (o == NULL || s->n == 0)
        return o;
    if ((d = malloc(s->n * sizeof(*d))) == NULL) {
        json_decref(o);
        return NULL;
    }
    steps_durations(s, d);
    stats_summarize(d, s->n, &q);
    free(d);
    if (json_object_update_new(
            o, json_pack("{s:s, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "name", s->name, "tid",
                         (json_int_t)m->thr[s->thr].tid, "cv", s->cv, "p50_ns",
                         (json_int_t)q.p50_ns, "p90_ns", (json_int_t)q.p90_ns, "p99_ns",
                         (json_int_t)q.p99_ns, "max_ns", (json_int_t)q.max_ns, "mean_ns",
                         (json_int_t)q.mean_ns, "total_ns", (json_int_t)q.total_ns)) < 0 ||
        rows_json(o, s, m, g, chains, t0_ns) < 0) {
        json_decref(o);
        return NULL;
    }
    json_t *su = setup_json(s, m, g, t0_ns);
    json_object_set_new(o, "setup", su ? su : json_null());
    return o;
}
