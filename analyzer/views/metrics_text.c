/* views/metrics_text.c: a run's live figures in Prometheus' text exposition
 * format 0.0.4 (metrics.h, docs/live.md): counters from a sample of the
 * whole run, gauges from one of its last window. Owns the values served so
 * far, which keep the counters from going back; serving them is
 * metrics.c's. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudaspy/version.h"
#include "jtext.h"
#include "metrics.h"

/* The step-time histogram's upper bounds, seconds (Prometheus' defaults,
 * from 1 ms: a training step lasts milliseconds to seconds). */
static const double step_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                 0.25,  0.5,    1,     2.5,  5,    10};
#define NLE (sizeof(step_le) / sizeof(step_le[0]))

struct served {
    char key[256]; /* name{labels} */
    double v;
};

struct metrics_text {
    struct served *c; /* every counter series served, its highest value */
    size_t n, cap;
};

struct metrics_text *metrics_text_new(void)
{
    return calloc(1, sizeof(struct metrics_text));
}

void metrics_text_free(struct metrics_text *m)
{
    if (m == NULL)
        return;
    free(m->c);
    free(m);
}

/* @p v, or the highest value series @p key was served with. */
static double held(struct metrics_text *m, const char *key, double v)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->c[i].key, key) == 0)
            return v > m->c[i].v ? (m->c[i].v = v) : m->c[i].v;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct served *c = realloc(m->c, cap * sizeof(*c));
        if (c == NULL)
            return v; /* not held: the value as it is */
        m->c = c;
        m->cap = cap;
    }
    snprintf(m->c[m->n].key, sizeof(m->c[m->n].key), "%.255s", key);
    m->c[m->n++].v = v;
    return v;
}

/* A label value with \, " and newline escaped into @p buf. @return buf */
static const char *esc(char *buf, size_t n, const char *s)
{
    size_t o = 0;

    for (; *s && o + 3 < n; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n')
            buf[o++] = '\\';
        buf[o++] = *s == '\n' ? 'n' : *s;
    }
    buf[o] = '\0';
    return buf;
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample line; counters (@p m not NULL) held at their highest. */
static void val(FILE *f, struct metrics_text *m, const char *name, const char *labels, double v)
{
    char key[2400];

    snprintf(key, sizeof(key), "%s%s%s%s", name, labels ? "{" : "", labels ? labels : "",
             labels ? "}" : "");
    v = m ? held(m, key, v) : v;
    if (v < 9007199254740992.0 && v > -9007199254740992.0 && v == (double)(int64_t)v)
        fprintf(f, "%s %" PRId64 "\n", key, (int64_t)v); /* counts exactly, however large */
    else
        fprintf(f, "%s %.9g\n", key, v);
}

static void one(FILE *f, const char *name, const char *type, const char *help, double v)
{
    head(f, name, type, help);
    val(f, NULL, name, NULL, v);
}

static const json_t *file0(const struct live_sample *s)
{
    return json_array_get(json_object_get(json_object_get(s->json, "run"), "files"), 0);
}

static void info(FILE *f, const struct metrics_in *in)
{
    const json_t *run = in->run ? json_object_get(in->run->json, "run") : NULL;
    char p[1024], c[1024], l[2200];

    head(f, "cudaspy_run_info", "gauge", "The run served: its file, command and cudaspy version");
    snprintf(l, sizeof(l), "path=\"%s\",command=\"%s\",version=\"%s\"",
             esc(p, sizeof(p), in->path), esc(c, sizeof(c), run ? jtext_str(run, "command") : ""),
             CS_VERSION);
    val(f, NULL, "cudaspy_run_info", l, 1);
    one(f, "cudaspy_recording", "gauge", "1 while the collector writes the run, 0 once it ended",
        in->collector ? 1 : 0);
    if (in->run)
        one(f, "cudaspy_run_duration_seconds", "gauge", "Time from the run's start to now",
            (double)in->run->end_ns / 1e9);
    head(f, "cudaspy_sample_duration_seconds", "gauge",
         "What the last analysis of the run took (sample: run or window)");
    val(f, NULL, "cudaspy_sample_duration_seconds", "sample=\"run\"", in->run_cost_s);
    val(f, NULL, "cudaspy_sample_duration_seconds", "sample=\"window\"", in->window_cost_s);
}

/* The whole run's steps as a histogram of their durations. */
static void step_histogram(FILE *f, struct metrics_text *m, const struct metrics_in *in)
{
    size_t k = 0, n = in->nsteps;
    double sum = 0;
    char l[32];

    head(f, "cudaspy_step_duration_seconds", "histogram", "Step time of every step of the run");
    for (size_t i = 0; i < NLE; i++) {
        while (k < n && (double)in->step_ns[k] / 1e9 <= step_le[i])
            k++;
        snprintf(l, sizeof(l), "le=\"%g\"", step_le[i]);
        val(f, m, "cudaspy_step_duration_seconds_bucket", l, (double)k);
    }
    for (size_t i = 0; i < n; i++)
        sum += (double)in->step_ns[i] / 1e9;
    val(f, m, "cudaspy_step_duration_seconds_bucket", "le=\"+Inf\"", (double)n);
    val(f, m, "cudaspy_step_duration_seconds_sum", NULL, sum);
    val(f, m, "cudaspy_step_duration_seconds_count", NULL, (double)n);
    head(f, "cudaspy_steps_total", "counter", "Steps (training iterations) found in the run");
    val(f, m, "cudaspy_steps_total", NULL, (double)n);
}

static void account(FILE *f, struct metrics_text *m, const json_t *j)
{
    const json_t *b;
    char name[160], l[200];
    size_t i;

    head(f, "cudaspy_account_seconds_total", "counter",
         "The run's CUDA-active time by what the GPU and its feeding threads did (bucket)");
    json_array_foreach(json_object_get(json_object_get(j, "account"), "buckets"), i, b) {
        snprintf(l, sizeof(l), "bucket=\"%s\"", esc(name, sizeof(name), jtext_str(b, "name")));
        val(f, m, "cudaspy_account_seconds_total", l, (double)jtext_int(b, "ns") / 1e9);
    }
}

static void processes(FILE *f, struct metrics_text *m, const json_t *j)
{
    const json_t *p;
    char comm[64], l[128];
    size_t i;

    head(f, "cudaspy_process_cpu_seconds_total", "counter", "On-CPU time of each traced process");
    json_array_foreach(json_object_get(j, "processes"), i, p) {
        snprintf(l, sizeof(l), "pid=\"%" JSON_INTEGER_FORMAT "\",comm=\"%s\"", jtext_int(p, "pid"),
                 esc(comm, sizeof(comm), jtext_str(p, "comm")));
        val(f, m, "cudaspy_process_cpu_seconds_total", l, (double)jtext_int(p, "oncpu_ns") / 1e9);
    }
}

/* The collector's CPU time: the run's figure once it ended, else its
 * process's as it stands (/proc/PID/stat utime + stime). */
static double collector_cpu_s(const json_t *file, pid_t collector)
{
    char path[64], st[1024], *p;
    unsigned long long ut, stt;
    FILE *fp;
    size_t got;

    if (json_is_integer(json_object_get(file, "collector_cpu_ns")))
        return (double)jtext_int(file, "collector_cpu_ns") / 1e9;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)collector);
    if (collector <= 0 || (fp = fopen(path, "r")) == NULL)
        return 0;
    got = fread(st, 1, sizeof(st) - 1, fp);
    fclose(fp);
    st[got] = '\0';
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if ((p = strrchr(st, ')')) == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) != 2)
        return 0;
    return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

static void records(FILE *f, struct metrics_text *m, const struct metrics_in *in)
{
    const json_t *file = file0(in->run), *run = json_object_get(in->run->json, "run");

    head(f, "cudaspy_dropped_records_total", "counter",
         "Records lost (kind: cuda, a shim's ring full; host, perf rings; shim, shims that lost theirs)");
    val(f, m, "cudaspy_dropped_records_total", "kind=\"cuda\"", (double)jtext_int(file, "cuda_dropped"));
    val(f, m, "cudaspy_dropped_records_total", "kind=\"host\"", (double)jtext_int(file, "host_lost"));
    val(f, m, "cudaspy_dropped_records_total", "kind=\"shim\"", (double)jtext_int(file, "shim_lost"));
    head(f, "cudaspy_cuda_calls_total", "counter", "Outermost CUDA calls recorded");
    val(f, m, "cudaspy_cuda_calls_total", NULL, (double)jtext_int(run, "outermost_calls"));
    head(f, "cudaspy_collector_cpu_seconds_total", "counter",
         "CPU time the collector spent on the run (user + system)");
    val(f, m, "cudaspy_collector_cpu_seconds_total", NULL, collector_cpu_s(file, in->collector));
}

/* Does a finding before the @p i-th have its cause (one series each)? */
static int cause_seen(const json_t *chains, size_t i)
{
    const char *cause = jtext_str(json_array_get(chains, i), "cause");

    for (size_t k = 0; k < i; k++)
        if (strcmp(jtext_str(json_array_get(chains, k), "cause"), cause) == 0)
            return 1;
    return 0;
}

static void window(FILE *f, const struct live_sample *s)
{
    const json_t *st = json_object_get(s->json, "steps"), *g = json_object_get(s->json, "gpu"), *c;
    char cause[96], l[160];
    size_t i;

    one(f, "cudaspy_window_seconds", "gauge", "The window the window_ gauges cover",
        (double)(s->end_ns - s->since_ns) / 1e9);
    one(f, "cudaspy_window_step_p50_seconds", "gauge", "Median step time in the window",
        (double)jtext_int(st, "p50_ns") / 1e9);
    one(f, "cudaspy_window_step_p99_seconds", "gauge", "p99 step time in the window",
        (double)jtext_int(st, "p99_ns") / 1e9);
    if (json_object_get(g, "busy_pct") && strcmp(jtext_str(g, "source"), "none") != 0)
        one(f, "cudaspy_gpu_busy_ratio", "gauge",
            "GPU busy share of the window (summed over the GPUs fed)", jtext_num(g, "busy_pct") / 100);
    head(f, "cudaspy_finding_impact_ratio", "gauge",
         "Each finding of the window: its impact as a share of the window's active time");
    json_array_foreach(json_object_get(s->json, "chains"), i, c) {
        if (cause_seen(json_object_get(s->json, "chains"), i))
            continue;
        snprintf(l, sizeof(l), "cause=\"%s\",severity=\"%s\"",
                 esc(cause, sizeof(cause), jtext_str(c, "cause")), jtext_str(c, "severity"));
        val(f, NULL, "cudaspy_finding_impact_ratio", l, jtext_num(c, "impact_pct") / 100);
    }
}

char *metrics_text_render(struct metrics_text *m, const struct metrics_in *in, size_t *n)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, n);
    int up = in->run && in->run->json;

    if (f == NULL)
        return NULL;
    one(f, "cudaspy_up", "gauge", "1 when the run file could be read at the last refresh", up);
    info(f, in);
    if (up) {
        step_histogram(f, m, in);
        account(f, m, in->run->json);
        processes(f, m, in->run->json);
        records(f, m, in);
    }
    if (in->window && in->window->json)
        window(f, in->window);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
