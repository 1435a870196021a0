/* views/report.c: `cudaspy-analyze [report] RUN...`: option parsing, the text
 * report and --json. The text is rendered from the docs/json.md object, so
 * both forms always say the same thing; analysis.c builds that object. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "commands.h"
#include "jtext.h"
#include "model/model.h"
#include "model/pystack.h"
#include "rules/ranks.h"
#include "cudaspy/version.h"

#define PROG "cudaspy-analyze"

/* ---- formatting helpers ---- */

static const char *fmt_ns(char *buf, size_t n, json_int_t ns)
{
    double v = (double)ns;

    if (ns < 1000)
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT "ns", ns);
    else if (ns < 1000000)
        snprintf(buf, n, "%.1fus", v / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, n, "%.1fms", v / 1e6);
    else
        snprintf(buf, n, "%.2fs", v / 1e9);
    return buf;
}

static const char *fmt_count(char *buf, size_t n, json_int_t v)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof(tmp), "%" JSON_INTEGER_FORMAT, v), o = 0;

    for (int i = 0; i < len && o + 2 < (int)n; i++) {
        if (i > 0 && tmp[i - 1] != '-' && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

struct out {
    FILE *f;
    int color;
};

static const char *col(const struct out *o, const char *code)
{
    return o->color ? code : "";
}

#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_YEL "\033[33m"
#define C_CYAN "\033[36m"
#define C_OFF "\033[0m"

/* ---- sections ---- */

/* What tracing cost outside the tree: the collector's CPU time, also as a
 * share of one CPU over the recorded duration. */
static void print_collector_cpu(const struct out *o, const json_t *file)
{
    const json_t *cpu = json_object_get(file, "collector_cpu_ns");
    json_int_t dur = jtext_int(file, "duration_ns");
    char a[32];

    if (!json_is_integer(cpu))
        return;
    fprintf(o->f, "tracing  collector CPU %s (%.1f %% of one CPU)\n",
            fmt_ns(a, sizeof(a), json_integer_value(cpu)),
            dur > 0 ? 100.0 * (double)json_integer_value(cpu) / (double)dur : 0.0);
}

/* The idle time's split by host state, largest first, as "host code 72 %". */
#define AB_MAX 32 /* buckets an account has, at most (rules/account.h) */

static void print_split(const struct out *o, const json_t *by)
{
    const char *key[16];
    json_int_t val[16], sum = 0;
    const char *k;
    json_t *v;
    int n = 0;

    json_object_foreach((json_t *)by, k, v) {
        if (n < 16 && json_integer_value(v) > 0) {
            key[n] = k, val[n] = json_integer_value(v), sum += val[n];
            n++;
        }
    }
    for (int i = 0; i < n; i++) /* few entries: selection sort */
        for (int j = i + 1; j < n; j++)
            if (val[j] > val[i]) {
                const char *tk = key[i];
                json_int_t tv = val[i];
                key[i] = key[j], val[i] = val[j], key[j] = tk, val[j] = tv;
            }
    for (int i = 0; i < n && i < 5; i++)
        fprintf(o->f, "%s%s %.0f %%", i ? ", " : "", key[i], 100.0 * (double)val[i] / (double)sum);
}

/* Buckets outside the steps' window: the set-up, the wind-down, no CUDA. */
static int outside_steps(const char *name)
{
    return !strcmp(name, "setup") || !strcmp(name, "wind_down") || !strcmp(name, "no_cuda");
}

/* The account's buckets between the set-up and the wind-down (docs/json.md
 * "account"; no_cuda left out too), the largest first, as "name 12.3 %" of
 * those: at most @p max, GPU busy (its busy buckets) as one when
 * @p busy_too, else only the idle ones. */
static void print_account_mix(const struct out *o, const json_t *ac, int busy_too, int max)
{
    const char *key[AB_MAX];
    double val[AB_MAX], busy = 0, whole = 0;
    const json_t *v;
    size_t i;
    int n = 0;

    json_array_foreach(json_object_get(ac, "buckets"), i, v) {
        const char *name = jtext_str(v, "name");
        double ns = (double)jtext_int(v, "ns");
        if (outside_steps(name))
            continue;
        whole += ns;
        if (!strncmp(name, "gpu_", 4) && strcmp(name, "gpu_queued") &&
            strcmp(name, "gpu_busy_or_unseen"))
            busy += ns;
        else if (n < AB_MAX && ns > 0)
            key[n] = name, val[n++] = ns;
    }
    if (busy_too && n < AB_MAX && busy > 0)
        key[n] = "gpu_busy", val[n++] = busy;
    for (int a = 0; a < n; a++) /* few entries: selection sort */
        for (int b = a + 1; b < n; b++)
            if (val[b] > val[a]) {
                const char *tk = key[a];
                double tv = val[a];
                key[a] = key[b], val[a] = val[b], key[b] = tk, val[b] = tv;
            }
    for (int a = 0; a < n && a < max; a++)
        fprintf(o->f, "%s%s %.1f %%", a ? ", " : "", key[a],
                whole > 0 ? 100.0 * val[a] / whole : 0.0);
}

/* GPU busy share of the account's window between the set-up and the
 * wind-down (no_cuda left out), and its 95 % interval into @p lo, @p hi. */
static double account_busy_pct(const json_t *ac, double *lo, double *hi)
{
    const json_t *v;
    double busy = 0, whole = 0, l = 0, h = 0;
    size_t i;

    json_array_foreach(json_object_get(ac, "buckets"), i, v) {
        const char *name = jtext_str(v, "name");
        if (outside_steps(name))
            continue;
        whole += (double)jtext_int(v, "ns");
        if (!strcmp(name, "gpu_compute") || !strcmp(name, "gpu_copy") ||
            !strcmp(name, "gpu_copy_pageable") || !strcmp(name, "gpu_both")) {
            busy += (double)jtext_int(v, "ns");
            l += (double)jtext_int(v, "lo_ns");
            h += (double)jtext_int(v, "hi_ns");
        }
    }
    *lo = whole > 0 ? 100.0 * l / whole : 0.0;
    *hi = whole > 0 ? 100.0 * (h < whole ? h : whole) / whole : 0.0;
    return whole > 0 ? 100.0 * busy / whole : 0.0;
}

/* One line of what the GPU did (from the account), and why GPU activity is
 * missing. */
static void print_gpu_line(const struct out *o, const json_t *g, const json_t *ac)
{
    const char *src = jtext_str(g, "source");
    const json_t *v;
    char a[32];
    size_t i;

    if (!strcmp(src, "exact") || !strcmp(src, "sampled")) {
        double lo, hi, busy = account_busy_pct(ac, &lo, &hi);
        char iv[48] = "";
        if (hi - lo >= 0.1)
            snprintf(iv, sizeof(iv), ", 95 %% %.1f-%.1f %%", lo, hi);
        char sl[120] = "", b[32];
        if (jtext_int(g, "slices"))
            snprintf(sl, sizeof(sl), " in %d slices, %s switching, %s slower inside",
                     (int)jtext_int(g, "slices"), fmt_ns(a, sizeof(a), jtext_int(g, "switch_ns")),
                     fmt_ns(b, sizeof(b), jtext_int(g, "slowdown_ns")));
        fprintf(o->f, "GPU      busy %.1f %% of the steps' window (%s%s, %.1f %% of the "
                      "CUDA-active window covered%s); idle: ",
                busy, src, iv, json_real_value(json_object_get(g, "coverage_pct")), sl);
        print_account_mix(o, ac, 0, 5);
        fputc('\n', o->f);
    } else if (!strcmp(src, "host_lower_bound")) {
        fprintf(o->f, "GPU      idle >= %s (host lower bound: no GPU activity recorded)\n",
                fmt_ns(a, sizeof(a), jtext_int(g, "idle_ns")));
    }
    json_array_foreach(json_object_get(g, "notes"), i, v)
        fprintf(o->f, "%snote:%s %s\n", col(o, C_YEL), col(o, C_OFF), json_string_value(v));
}

/* A set-up shorter than this (or than a step) gets no line of its own. */
#define STEPS_SETUP_MIN_NS 1000000

/* "<lead> in CUDA calls 54 %, host code 45 %, ...; GPU busy 60 %" of mix @p x. */
static void print_mix(const struct out *o, const char *lead, const json_t *x, int host_data)
{
    double dur = (double)jtext_int(x, "dur_ns");

    if (!host_data) {
        fprintf(o->f, "%sin CUDA calls %.1f %%, outside them %.1f %% (no host data)\n", lead,
                100.0 * (double)jtext_int(x, "cuda_ns") / dur,
                100.0 * (double)(jtext_int(x, "dur_ns") - jtext_int(x, "cuda_ns")) / dur);
        return;
    }
    fprintf(o->f, "%sin CUDA calls %.1f %%, host code %.1f %%, asleep %.1f %%, preempted %.1f %%, "
                  "D-state %.1f %%",
            lead, 100.0 * (double)jtext_int(x, "cuda_ns") / dur, 100.0 * (double)jtext_int(x, "host_ns") / dur,
            100.0 * (double)jtext_int(x, "sleep_ns") / dur, 100.0 * (double)jtext_int(x, "preempt_ns") / dur,
            100.0 * (double)jtext_int(x, "disk_ns") / dur);
    if (json_is_number(json_object_get(x, "gpu_busy_pct")))
        fprintf(o->f, "; GPU busy %.1f %%", json_number_value(json_object_get(x, "gpu_busy_pct")));
    fputc('\n', o->f);
}

/* "STEPS    474 (inferred: ...): p50 2.10 ms  p99 ...; per step: CUDA 54 %, host code 45 %...",
 * then the set-up before the first step when it has one */
static void print_steps_line(const struct out *o, const json_t *s, int host_data,
                             const json_t *ac)
{
    const json_t *x = json_object_get(s, "mix"), *w = json_array_get(json_object_get(s, "worst"), 0);
    const json_t *su = json_object_get(s, "setup");
    char a[32], b[32], c[32], d[32], lead[96];

    if (jtext_int(s, "count") == 0)
        return;
    fprintf(o->f, "STEPS    %lld (%s): p50 %s  p90 %s  p99 %s  max %s (step %lld); "
                  "cv %.2f\n",
            (long long)jtext_int(s, "count"), jtext_str(s, "how"), fmt_ns(a, sizeof(a), jtext_int(s, "p50_ns")),
            fmt_ns(b, sizeof(b), jtext_int(s, "p90_ns")), fmt_ns(c, sizeof(c), jtext_int(s, "p99_ns")),
            fmt_ns(d, sizeof(d), jtext_int(s, "max_ns")), (long long)jtext_int(w, "step"),
            json_number_value(json_object_get(s, "cv")));
    if (host_data && json_array_size(json_object_get(ac, "buckets"))) {
        fprintf(o->f, "         of the steps' window (ACCOUNT): ");
        print_account_mix(o, ac, 1, 6);
        fputc('\n', o->f);
    } else if (jtext_int(x, "dur_ns") > 0) {
        print_mix(o, "         of step time: ", x, host_data);
    }
    if (jtext_int(su, "dur_ns") >= STEPS_SETUP_MIN_NS && jtext_int(su, "dur_ns") >= jtext_int(s, "p50_ns")) {
        snprintf(lead, sizeof(lead), "         set-up before the first step %s, once: ",
                 fmt_ns(a, sizeof(a), jtext_int(su, "dur_ns")));
        print_mix(o, lead, su, host_data);
    }
    if (jtext_int(ac, "wind_down_ns") >= STEPS_SETUP_MIN_NS &&
        jtext_int(ac, "wind_down_ns") >= jtext_int(s, "p50_ns"))
        fprintf(o->f, "         wind-down after the last step %s, once (a checkpoint saved, a "
                      "last evaluation, the exit): in the account, in no finding\n",
                fmt_ns(a, sizeof(a), jtext_int(ac, "wind_down_ns")));
}

/* A run recorded in capture ranges: which (docs/capture.md). */
static void print_capture(const struct out *o, const json_t *cp)
{
    const json_t *rg = json_object_get(cp, "ranges");
    size_t n = json_array_size(rg), i;
    char a[32];

    if (cp == NULL)
        return;
    if (n == 0) {
        fprintf(o->f, "capture  no range recorded (%s): nothing to analyse\n", jtext_str(cp, "mode"));
        return;
    }
    fprintf(o->f, "capture  %zu range%s recorded (%s):", n, n == 1 ? "" : "s", jtext_str(cp, "mode"));
    for (i = 0; i < n && i < 4; i++)
        fprintf(o->f, "%s %.2f-%.2f s", i ? "," : "",
                (double)json_integer_value(json_array_get(json_array_get(rg, i), 0)) / 1e9,
                (double)json_integer_value(json_array_get(json_array_get(rg, i), 1)) / 1e9);
    fprintf(o->f, "%s; %s recorded, the analysis covers these alone\n", i < n ? ", ..." : "",
            fmt_ns(a, sizeof(a), jtext_int(cp, "recorded_ns")));
}

/* A size-capped run: which part has every record (docs/analyzer.md). */
static void print_flight(const struct out *o, const json_t *fl)
{
    char a[32], b[32];

    if (fl == NULL)
        return;
    fprintf(o->f, "capped   run file capped at %s MiB; ",
            fmt_count(a, sizeof(a), jtext_int(fl, "max_size_bytes") >> 20));
    if (jtext_int(fl, "evicted_blocks") == 0)
        fprintf(o->f, "nothing evicted, full detail over the whole run\n");
    else
        fprintf(o->f, "full detail from %.1f s to %.1f s; before that, aggregates only "
                      "(%s records evicted)\n",
                (double)jtext_int(fl, "detail_from_ns") / 1e9, (double)jtext_int(fl, "detail_to_ns") / 1e9,
                fmt_count(b, sizeof(b), jtext_int(fl, "evicted_records")));
    fprintf(o->f, "         LATENCY covers the whole run (%s CUDA calls); findings, steps, GPU "
                  "feed and processes the detailed part\n",
            fmt_count(b, sizeof(b), jtext_int(fl, "outermost_calls")));
}

/* "; at the peak cudaMalloc 6177.8 MiB, cuMemAlloc_v2 128.3 MiB": what each
 * allocating API held, when more than one did (docs/memory.md). */
static void print_memory_apis(const struct out *o, const json_t *apis)
{
    const json_t *v;
    size_t i;

    if (json_array_size(apis) < 2)
        return;
    json_array_foreach(apis, i, v)
        fprintf(o->f, "%s %s %.1f MiB", i ? "," : "; at the peak", jtext_str(v, "api"),
                (double)jtext_int(v, "bytes") / 1048576.0);
}

/* "MEMORY   pid 8057 GPU 0: peak 200.0 MiB at 85.8ms, ..." per process and
 * GPU that allocated device memory (docs/memory.md); nothing otherwise. */
static void print_memory_lines(const struct out *o, const json_t *mem)
{
    const json_t *v;
    char a[32];
    size_t i;

    json_array_foreach(json_object_get(mem, "processes"), i, v) {
        fprintf(o->f, "MEMORY   pid %lld GPU %lld: peak %.1f MiB at %s, held at the end %.1f MiB",
                (long long)jtext_int(v, "pid"), (long long)jtext_int(v, "device"),
                (double)jtext_int(v, "peak_bytes") / 1048576.0,
                fmt_ns(a, sizeof(a), jtext_int(v, "peak_t_ns")),
                (double)jtext_int(v, "held_end_bytes") / 1048576.0);
        if (json_is_integer(json_object_get(v, "total_bytes")))
            fprintf(o->f, ", device %.1f MiB (%.1f MiB free at the last reading)",
                    (double)jtext_int(v, "total_bytes") / 1048576.0,
                    (double)jtext_int(v, "free_bytes") / 1048576.0);
        if (jtext_int(v, "failures"))
            fprintf(o->f, ", %lld out of memory (%lld retried)", (long long)jtext_int(v, "failures"),
                    (long long)jtext_int(v, "retries"));
        print_memory_apis(o, json_object_get(v, "peak_by_api"));
        fputc('\n', o->f);
    }
}

static void print_run(const struct out *o, const json_t *j)
{
    const json_t *run = json_object_get(j, "run"), *files = json_object_get(run, "files");
    const json_t *missing = json_object_get(j, "missing"), *v;
    char a[32], b[32], c[32];
    size_t i;

    json_array_foreach(files, i, v) {
        fprintf(o->f, "%srun%s     %s\n", col(o, C_BOLD), col(o, C_OFF), jtext_str(v, "path"));
        fprintf(o->f, "command  %s\n", *jtext_str(v, "command") ? jtext_str(v, "command") : "(unknown)");
        char cpus[16] = "?";
        if (jtext_int(v, "ncpu"))
            snprintf(cpus, sizeof(cpus), "%d", (int)jtext_int(v, "ncpu"));
        fprintf(o->f, "duration %s   CUDA calls %s   host records %s   sampler tier %s   CPUs %s\n",
                fmt_ns(a, sizeof(a), jtext_int(v, "window_end_ns") - jtext_int(v, "window_start_ns")),
                fmt_count(b, sizeof(b), jtext_int(json_object_get(v, "counts"), "cuda")),
                fmt_count(c, sizeof(c),
                          jtext_int(json_object_get(v, "counts"), "offcpu") +
                              jtext_int(json_object_get(v, "counts"), "runq") +
                              jtext_int(json_object_get(v, "counts"), "pwin") +
                              jtext_int(json_object_get(v, "counts"), "syswin")),
                jtext_str(v, "sampler_tier"), cpus);
        if (jtext_int(json_object_get(v, "counts"), "cuda"))
            fprintf(o->f, "start-up %s to the first CUDA call (CUDA initialisation %s)   "
                          "CUDA-active %s\n",
                    fmt_ns(a, sizeof(a), jtext_int(v, "startup_ns")),
                    fmt_ns(b, sizeof(b), jtext_int(v, "cuda_init_ns")),
                    fmt_ns(c, sizeof(c), jtext_int(v, "active_ns")));
        print_collector_cpu(o, v);
        print_flight(o, json_object_get(v, "flight"));
        print_capture(o, json_object_get(v, "capture"));
        if (json_is_true(json_object_get(v, "degraded")))
            fprintf(o->f, "%sWARNING: degraded run:%s %s CUDA records dropped, %s host records "
                          "lost%s; figures are lower bounds\n",
                    col(o, C_YEL), col(o, C_OFF), fmt_count(a, sizeof(a), jtext_int(v, "cuda_dropped")),
                    fmt_count(b, sizeof(b), jtext_int(v, "host_lost") + jtext_int(v, "shim_lost")),
                    json_is_true(json_object_get(v, "clean_shutdown"))
                        ? ""
                        : ", collector did not shut down cleanly");
    }
    print_gpu_line(o, json_object_get(j, "gpu"), json_object_get(j, "account"));
    print_memory_lines(o, json_object_get(j, "memory"));
    print_steps_line(o, json_object_get(j, "steps"),
                     strcmp(jtext_str(json_array_get(files, 0), "sampler_tier"), "none") != 0,
                     json_object_get(j, "account"));
    json_array_foreach(missing, i, v)
        fprintf(o->f, "%smissing:%s %s\n", col(o, C_YEL), col(o, C_OFF), json_string_value(v));
}

/* "a <- b <- c" of a frame array into @p buf. */
static const char *fmt_frames(char *buf, size_t n, const json_t *frames)
{
    const json_t *v;
    char one[320];
    size_t i, len = 0;

    buf[0] = '\0';
    json_array_foreach(frames, i, v) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? " <- " : "",
                         jtext_frame(one, sizeof(one), v));
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
    return buf;
}

/* A finding's "python_sites": its sentence, then who called the site. */
static void print_sites(const struct out *o, const json_t *sites)
{
    const json_t *v;
    char buf[1024];
    size_t i;

    if (json_array_size(sites) == 0)
        return;
    fprintf(o->f, "  python lines:\n");
    json_array_foreach(sites, i, v) {
        fprintf(o->f, "    - %s\n", jtext_str(v, "text"));
        if (json_array_size(json_object_get(v, "via")))
            fprintf(o->f, "      via %s\n", fmt_frames(buf, sizeof(buf), json_object_get(v, "via")));
        if (json_array_size(json_object_get(v, "callers")))
            fprintf(o->f, "      called from %s\n",
                    fmt_frames(buf, sizeof(buf), json_object_get(v, "callers")));
    }
}

static void print_chain(const struct out *o, const json_t *c)
{
    const char *sev = jtext_str(c, "severity");
    const char *sc = !strcmp(sev, "HIGH") ? C_RED : !strcmp(sev, "MEDIUM") ? C_YEL : C_CYAN;
    const json_t *v;
    char a[32], b[32], d[32];
    size_t i;

    fprintf(o->f, "%s[%s]%s %s%s%s  impact %s (%.1f %% of %s)\n", col(o, sc), sev,
            col(o, C_OFF), col(o, C_BOLD), jtext_str(c, "cause"), col(o, C_OFF),
            fmt_ns(a, sizeof(a), jtext_int(c, "impact_ns")),
            json_real_value(json_object_get(c, "impact_pct")),
            *jtext_str(c, "share_of") ? jtext_str(c, "share_of") : "the active window");
    if (jtext_int(c, "impact_hi_ns") > jtext_int(c, "impact_lo_ns"))
        fprintf(o->f, "  impact 95 %% interval %s to %s (sampled GPU activity)\n",
                fmt_ns(a, sizeof(a), jtext_int(c, "impact_lo_ns")),
                fmt_ns(b, sizeof(b), jtext_int(c, "impact_hi_ns")));
    fprintf(o->f, "  %s\n", jtext_str(c, "summary"));
    if (*jtext_str(json_object_get(c, "if_fixed"), "text"))
        fprintf(o->f, "  %s\n", jtext_str(json_object_get(c, "if_fixed"), "text"));
    fprintf(o->f, "  chain: %s\n", jtext_str(c, "chain"));
    if (*jtext_str(c, "api") && jtext_int(c, "count"))
        fprintf(o->f, "  api %s: p50 %s, p99 %s (%.1fx), %s calls\n", jtext_str(c, "api"),
                fmt_ns(a, sizeof(a), jtext_int(c, "p50_ns")), fmt_ns(b, sizeof(b), jtext_int(c, "p99_ns")),
                json_real_value(json_object_get(c, "ratio")), fmt_count(d, sizeof(d), jtext_int(c, "count")));
    fprintf(o->f, "  evidence:\n");
    json_array_foreach(json_object_get(c, "evidence"), i, v)
        fprintf(o->f, "    - %s\n", json_string_value(v));
    print_sites(o, json_object_get(c, "python_sites"));
    fprintf(o->f, "  timeline:\n");
    json_array_foreach(json_object_get(c, "timeline"), i, v)
        fprintf(o->f, "    %10.6f s  %-8s %s\n", json_real_value(json_object_get(v, "t_s")),
                jtext_str(v, "layer"), jtext_str(v, "text"));
    if (json_array_size(json_object_get(c, "examples")))
        fprintf(o->f, "  worst calls:\n");
    json_array_foreach(json_object_get(c, "examples"), i, v)
        fprintf(o->f, "    %10.6f s  %s %s (pid %d tid %d)%s%s\n",
                json_real_value(json_object_get(v, "t_s")), jtext_str(v, "api"),
                fmt_ns(a, sizeof(a), jtext_int(v, "dur_ns")), (int)jtext_int(v, "pid"), (int)jtext_int(v, "tid"),
                *jtext_str(v, "note") ? ": " : "", jtext_str(v, "note"));
    fprintf(o->f, "  %sfix:%s %s\n\n", col(o, C_BOLD), col(o, C_OFF), jtext_str(c, "recommendation"));
}

/* Was a file of this report recorded with `record --duty`? */
static int has_duty(const json_t *j)
{
    const json_t *v, *files = json_object_get(json_object_get(j, "run"), "files");
    size_t i;

    json_array_foreach(files, i, v)
        if (json_is_integer(json_object_get(v, "duty_ns")))
            return 1;
    return 0;
}

/* The account (docs/json.md "account"): every bucket of the window with
 * its share and owner, and the sum, which is the window. */
static void print_account(const struct out *o, const json_t *j)
{
    const json_t *ac = json_object_get(j, "account"), *v;
    const char *src = jtext_str(ac, "source");
    char a[32], b[32];
    size_t i;

    if (json_array_size(json_object_get(ac, "processes")) == 0)
        return; /* no CUDA process: nothing fed a GPU */
    fprintf(o->f, "\n%sACCOUNT%s (every ns of the CUDA-active window once; %s)\n",
            col(o, C_BOLD), col(o, C_OFF),
            !strcmp(src, "exact")     ? "GPU activity recorded throughout"
            : !strcmp(src, "sampled") ? "sampled GPU activity, scaled to the window, 95 % interval"
                                      : "host lower bound: GPU idle only after syncs");
    json_array_foreach(json_object_get(ac, "buckets"), i, v) {
        const char *own = jtext_str(v, "owner");
        int wide = jtext_int(v, "hi_ns") > jtext_int(v, "lo_ns");
        char line[160];
        int n = snprintf(line, sizeof(line), "  %-20s %10s %6.1f %%", jtext_str(v, "name"),
                         fmt_ns(a, sizeof(a), jtext_int(v, "ns")),
                         json_real_value(json_object_get(v, "pct")));
        if (wide && n > 0 && (size_t)n < sizeof(line))
            n += snprintf(line + n, sizeof(line) - (size_t)n, "  %s-%s",
                          fmt_ns(a, sizeof(a), jtext_int(v, "lo_ns")),
                          fmt_ns(b, sizeof(b), jtext_int(v, "hi_ns")));
        if (*own && n > 0 && (size_t)n < sizeof(line))
            snprintf(line + n, sizeof(line) - (size_t)n, "%*s-> %s", n < 58 ? 58 - n : 1, "",
                     own);
        fprintf(o->f, "%s\n", line);
    }
    fprintf(o->f, "  %-20s %10s  (the window: %s)\n", "sum", fmt_ns(a, sizeof(a), jtext_int(ac, "sum_ns")),
            fmt_ns(b, sizeof(b), jtext_int(ac, "window_ns")));
}

static void print_chains(const struct out *o, const json_t *j)
{
    const json_t *chains = json_object_get(j, "chains"), *v;
    size_t i;

    fprintf(o->f, "\n%sFINDINGS%s (%zu)\n", col(o, C_BOLD), col(o, C_OFF), json_array_size(chains));
    if (json_array_size(chains) == 0)
        fprintf(o->f, "  none: %s\n\n",
                has_duty(j) ? "not made for a record --duty run (see missing)"
                            : "no cause above the thresholds");
    json_array_foreach(chains, i, v)
        print_chain(o, v);
}

static void print_row(const struct out *o, const json_t *r, const char *prefix)
{
    char b[8][32], name[160];

    snprintf(name, sizeof(name), "%s%s", prefix, jtext_str(r, "api"));
    fprintf(o->f, "  %-34s %11s %9s %9s %9s %9s %9s %9s %9s\n", name,
            fmt_count(b[0], 32, jtext_int(r, "count")), fmt_ns(b[1], 32, jtext_int(r, "total_ns")),
            fmt_ns(b[2], 32, jtext_int(r, "mean_ns")), fmt_ns(b[3], 32, jtext_int(r, "p50_ns")),
            fmt_ns(b[4], 32, jtext_int(r, "p90_ns")), fmt_ns(b[5], 32, jtext_int(r, "p99_ns")),
            fmt_ns(b[6], 32, jtext_int(r, "p999_ns")), fmt_ns(b[7], 32, jtext_int(r, "max_ns")));
}

static void print_table_head(const struct out *o, const char *first)
{
    fprintf(o->f, "  %-34s %11s %9s %9s %9s %9s %9s %9s %9s\n", first, "count", "total", "mean",
            "p50", "p90", "p99", "p99.9", "max");
}

/* Driver calls the shim folded into runtime records (CS_CF_FOLDED). */
static void print_folded(const struct out *o, const json_t *folded)
{
    const json_t *v;
    size_t i;

    if (json_array_size(folded) == 0)
        return;
    fprintf(o->f, "  driver calls folded into the runtime calls above (timed with them, not "
                  "apart; CUDASPY_FOLD=0 records both):\n");
    json_array_foreach(folded, i, v) {
        if (i == 8) {
            fprintf(o->f, "    and %zu pairs more (--json: folded_driver_calls)\n",
                    json_array_size(folded) - i);
            break;
        }
        fprintf(o->f, "    %-38s %8lld  in %s\n", json_string_value(json_object_get(v, "driver")),
                (long long)json_integer_value(json_object_get(v, "count")),
                json_string_value(json_object_get(v, "runtime")));
    }
}

static void print_apis(const struct out *o, const json_t *j)
{
    const json_t *apis = json_object_get(j, "apis"), *v;
    int nested = 0;
    size_t i;

    if (json_object_get(j, "apis_source"))
        fprintf(o->f, "%sLATENCY%s (whole run, from per-second aggregates: counts, totals, min "
                      "and max exact; percentiles within 0.4 %%)\n",
                col(o, C_BOLD), col(o, C_OFF));
    else
        fprintf(o->f, "%sLATENCY%s (exact over every call; nearest-rank percentiles)\n",
                col(o, C_BOLD), col(o, C_OFF));
    if (json_array_size(apis) == 0) {
        fprintf(o->f, "  no CUDA calls\n");
        return;
    }
    print_table_head(o, "api");
    json_array_foreach(apis, i, v) {
        if (json_is_true(json_object_get(v, "nested"))) {
            nested = 1;
            continue;
        }
        print_row(o, v, "");
    }
    if (nested) {
        fprintf(o->f,
                "  nested driver calls (inside the runtime calls above; not in their totals):\n");
        json_array_foreach(apis, i, v)
            if (json_is_true(json_object_get(v, "nested")))
                print_row(o, v, "  ");
    }
    print_folded(o, json_object_get(j, "folded_driver_calls"));
}

static void print_by(const struct out *o, const json_t *j, const char *key, const char *what)
{
    const json_t *rows = json_object_get(j, key), *v;
    char pre[160];
    size_t i;

    if (rows == NULL)
        return;
    fprintf(o->f, "\n%sLATENCY BY %s%s\n", col(o, C_BOLD), what, col(o, C_OFF));
    print_table_head(o, "api");
    json_array_foreach(rows, i, v) {
        if (json_object_get(v, "kernel"))
            snprintf(pre, sizeof(pre), "%.80s ", jtext_str(v, "kernel"));
        else if (json_object_get(v, "stream"))
            snprintf(pre, sizeof(pre), "%d/0x%" JSON_INTEGER_FORMAT "x ", (int)jtext_int(v, "pid"),
                     jtext_int(v, "stream"));
        else
            snprintf(pre, sizeof(pre), "%d ", (int)jtext_int(v, "pid"));
        print_row(o, v, pre);
    }
}

/* `--by pyline`: latency and the GPU idle that followed, per call site. */
static void print_pylines(const struct out *o, const json_t *j)
{
    const json_t *p = json_object_get(j, "pylines"), *v;
    int gpu = !strcmp(jtext_str(p, "idle_source"), "gpu");
    char b[6][32], site[320], next[320];
    size_t i;

    if (p == NULL)
        return;
    fprintf(o->f, "\n%sLATENCY BY PYTHON LINE%s (call site: innermost frame of the user's code, else native; "
            "idle after: %s)\n", col(o, C_BOLD), col(o, C_OFF),
            gpu ? "GPU idle measured" : "GPU idle lower bound, sync returned -> next enqueue");
    if (json_array_size(json_object_get(p, "rows")) == 0) {
        fprintf(o->f, "  no call has a stack (record with Python frames or CUDASPY_STACK_US)\n");
        return;
    }
    fprintf(o->f, "  %-40s %-22s %9s %9s %9s %9s %9s %10s\n", "site", "api", "calls", "total",
            "p50", "p99", "max", "idle after");
    json_array_foreach(json_object_get(p, "rows"), i, v) {
        fprintf(o->f, "  %-40s %-22s %9s %9s %9s %9s %9s %10s\n",
                jtext_frame(site, sizeof(site), v), jtext_str(v, "api"),
                fmt_count(b[0], 32, jtext_int(v, "calls")), fmt_ns(b[1], 32, jtext_int(v, "total_ns")),
                fmt_ns(b[2], 32, jtext_int(v, "p50_ns")), fmt_ns(b[3], 32, jtext_int(v, "p99_ns")),
                fmt_ns(b[4], 32, jtext_int(v, "max_ns")), fmt_ns(b[5], 32, jtext_int(v, "idle_after_ns")));
        if (json_is_object(json_object_get(v, "next_enqueue")))
            fprintf(o->f, "    next GPU work enqueued at %s\n",
                    jtext_frame(next, sizeof(next), json_object_get(v, "next_enqueue")));
        if (json_array_size(json_object_get(v, "via")))
            fprintf(o->f, "    via %s\n", fmt_frames(site, sizeof(site), json_object_get(v, "via")));
        if (json_array_size(json_object_get(v, "callers")))
            fprintf(o->f, "    called from %s\n",
                    fmt_frames(site, sizeof(site), json_object_get(v, "callers")));
    }
}

static void print_feed(const struct out *o, const json_t *j)
{
    const json_t *feed = json_object_get(j, "gpu_feed"), *v, *w;
    char a[32], b[32], c[32], d[32], e[32], f[32];
    size_t i, k;

    fprintf(o->f, "\n%sGPU FEED%s (GPU idle lower bound: sync returned -> next enqueue)\n",
            col(o, C_BOLD), col(o, C_OFF));
    if (json_array_size(json_object_get(feed, "processes")) == 0) {
        fprintf(o->f, "  no CUDA process\n");
        return;
    }
    json_array_foreach(json_object_get(feed, "processes"), i, v) {
        const json_t *ft = json_object_get(v, "feeding_thread");
        fprintf(o->f, "  pid %d %s: %s enqueues, %s syncs (%s); GPU idle >= %s (%.1f %%) in %s "
                      "gaps, longest %s\n",
                (int)jtext_int(v, "pid"), jtext_str(v, "comm"), fmt_count(a, 32, jtext_int(v, "enqueues")),
                fmt_count(b, 32, jtext_int(v, "syncs")), fmt_ns(c, 32, jtext_int(v, "sync_ns")),
                fmt_ns(d, 32, jtext_int(v, "idle_ns")), json_real_value(json_object_get(v, "idle_pct")),
                fmt_count(e, 32, jtext_int(v, "gaps")), fmt_ns(f, 32, jtext_int(v, "max_gap_ns")));
        if (jtext_int(v, "gaps") == 0)
            continue;
        fprintf(o->f, "    feeding thread in the gaps: on-CPU %s, asleep %s, preempted %s, "
                      "uninterruptible %s\n",
                fmt_ns(a, 32, jtext_int(ft, "oncpu_ns")), fmt_ns(b, 32, jtext_int(ft, "sleep_ns")),
                fmt_ns(c, 32, jtext_int(ft, "preempted_ns")), fmt_ns(d, 32, jtext_int(ft, "disk_ns")));
        json_array_foreach(json_object_get(ft, "wakers"), k, w)
            fprintf(o->f, "      woken by pid %d %s (%s): %s\n", (int)jtext_int(w, "pid"),
                    jtext_str(w, "comm"), jtext_str(w, "role"), fmt_ns(a, 32, jtext_int(w, "ns")));
    }
}

/* What CUDA graph replays ran (gpu.graphs), when any did. */
static void print_graphs(const struct out *o, const json_t *gr)
{
    char a[32], b[32], c[32], d[32];

    if (jtext_int(gr, "kernels") + jtext_int(gr, "copies") + jtext_int(gr, "memsets") == 0)
        return;
    fprintf(o->f, "  CUDA graphs: %d graph(s), %d nodes, %s launches ran %s kernels, %s copies, "
                  "%d memsets (%s of GPU time)\n",
            (int)jtext_int(gr, "graphs"), (int)jtext_int(gr, "nodes"), fmt_count(a, 32, jtext_int(gr, "launches")),
            fmt_count(b, 32, jtext_int(gr, "kernels")), fmt_count(c, 32, jtext_int(gr, "copies")),
            (int)jtext_int(gr, "memsets"), fmt_ns(d, 32, jtext_int(gr, "gpu_ns")));
}

static void print_gpu(const struct out *o, const json_t *j)
{
    const json_t *g = json_object_get(j, "gpu"), *v, *w;
    char a[32], b[32], c[32], d[32], e[32];
    size_t i, k;

    if (json_array_size(json_object_get(g, "devices")) == 0)
        return;
    fprintf(o->f, "\n%sGPU%s (what the GPU ran, from CUPTI: %s)\n", col(o, C_BOLD), col(o, C_OFF),
            jtext_str(g, "source"));
    json_array_foreach(json_object_get(g, "devices"), i, v) {
        fprintf(o->f, "  pid %d device %d: busy %.1f %% of %s covered; %s kernels (median %s), "
                      "%s copies, %s memsets\n",
                (int)jtext_int(v, "pid"), (int)jtext_int(v, "device"),
                json_real_value(json_object_get(v, "busy_pct")),
                fmt_ns(a, 32, jtext_int(v, "covered_ns")), fmt_count(b, 32, jtext_int(v, "kernels")),
                fmt_ns(c, 32, jtext_int(v, "kernel_p50_ns")), fmt_count(d, 32, jtext_int(v, "copies")),
                fmt_count(e, 32, jtext_int(v, "memsets")));
        fprintf(o->f, "    kernels at once %.1f %% of kernel time; copies overlapping kernels "
                      "%.1f %% of copy time\n",
                json_real_value(json_object_get(v, "concurrent_kernels_pct")),
                json_real_value(json_object_get(v, "copy_compute_overlap_pct")));
        fprintf(o->f, "    idle %s, by what the feeding thread did: ",
                fmt_ns(a, 32, jtext_int(v, "idle_ns")));
        print_split(o, json_object_get(v, "idle_by_host_state"));
        fputc('\n', o->f);
    }
    fprintf(o->f, "  top kernels by GPU time:\n");
    json_array_foreach(json_object_get(g, "top_kernels_by_time"), k, w) {
        if (k == 5)
            break;
        fprintf(o->f, "    %10s  %9s x %9s  %s\n", fmt_ns(a, 32, jtext_int(w, "total_ns")),
                fmt_count(b, 32, jtext_int(w, "count")), fmt_ns(c, 32, jtext_int(w, "mean_ns")),
                jtext_str(w, "kernel"));
    }
    print_graphs(o, json_object_get(g, "graphs"));
}

/* `--by kernel`: the kernels graph replays ran, by name (GPU records). */
static void print_graph_kernels(const struct out *o, const json_t *j)
{
    const json_t *rows = json_object_get(j, "kernels_in_graphs"), *w;
    char a[32], b[32], c[32];
    size_t k;

    if (json_array_size(rows) == 0)
        return;
    fprintf(o->f, "\n%sKERNELS IN CUDA GRAPHS%s (GPU time, from CUPTI)\n", col(o, C_BOLD),
            col(o, C_OFF));
    json_array_foreach(rows, k, w)
        fprintf(o->f, "    %10s  %9s x %9s  %s\n", fmt_ns(a, 32, jtext_int(w, "total_ns")),
                fmt_count(b, 32, jtext_int(w, "count")), fmt_ns(c, 32, jtext_int(w, "mean_ns")),
                jtext_str(w, "kernel"));
}

static void print_procs(const struct out *o, const json_t *j)
{
    const json_t *v;
    char b[12][32];
    size_t i;

    fprintf(o->f, "\n%sPROCESSES%s\n", col(o, C_BOLD), col(o, C_OFF));
    if (json_array_size(json_object_get(j, "processes")) == 0) {
        fprintf(o->f, "  none recorded\n");
        return;
    }
    fprintf(o->f, "  %7s %7s %-15s %-9s %9s %8s %8s %8s %8s %8s %8s %8s %8s %9s %9s %8s\n", "pid",
            "ppid", "comm", "role", "cuda", "cuda t", "on-CPU", "sleep", "disk", "preempt", "runq",
            "stall", "vcsw", "ivcsw", "pg alloc", "faults");
    json_array_foreach(json_object_get(j, "processes"), i, v)
        fprintf(o->f, "  %7d %7d %-15s %-9s %9s %8s %8s %8s %8s %8s %8s %8s %8s %9s %9s %8s\n",
                (int)jtext_int(v, "pid"), (int)jtext_int(v, "ppid"), jtext_str(v, "comm"), jtext_str(v, "role"),
                fmt_count(b[0], 32, jtext_int(v, "cuda_calls")), fmt_ns(b[1], 32, jtext_int(v, "cuda_ns")),
                fmt_ns(b[2], 32, jtext_int(v, "oncpu_ns")), fmt_ns(b[3], 32, jtext_int(v, "sleep_ns")),
                fmt_ns(b[4], 32, jtext_int(v, "disk_ns")), fmt_ns(b[5], 32, jtext_int(v, "preempted_ns")),
                fmt_ns(b[6], 32, jtext_int(v, "runq_delay_ns")),
                fmt_ns(b[7], 32, jtext_int(v, "max_stall_ns")), fmt_count(b[8], 32, jtext_int(v, "vcsw")),
                fmt_count(b[9], 32, jtext_int(v, "ivcsw")),
                fmt_count(b[10], 32, jtext_int(v, "page_allocs")),
                fmt_count(b[11], 32, jtext_int(v, "page_faults")));
}

void analysis_print(const struct analysis *a, FILE *out, int color)
{
    struct out o = {out, color};
    json_t *j = analysis_json(a);

    print_run(&o, j);
    print_account(&o, j);
    print_chains(&o, j);
    print_apis(&o, j);
    print_by(&o, j, "apis_by_pid", "PROCESS");
    print_by(&o, j, "apis_by_stream", "STREAM");
    print_by(&o, j, "apis_by_kernel", "KERNEL");
    print_graph_kernels(&o, j);
    print_pylines(&o, j);
    print_gpu(&o, j);
    print_feed(&o, j);
    ranks_print(out, j, color);
    clocks_print(out, j);
    print_procs(&o, j);
    json_decref(j);
}

/* ---- options ---- */

static const char usage_text[] =
    "NAME\n"
    "    cudaspy-analyze - report on cudaspy run files: exact latency, GPU feed,\n"
    "    per-process breakdown and causal chains\n"
    "\n"
    "SYNOPSIS\n"
    "    cudaspy-analyze [report] [OPTIONS] RUN.lmdb [RUN2.lmdb ...]\n"
    "    cudaspy-analyze report --html OUT.html RUN.lmdb\n"
    "    cudaspy-analyze gate --baseline BASE RUN.lmdb\n"
    "    cudaspy-analyze summary --save BASE.json RUN.lmdb\n"
    "    cudaspy-analyze export --chrome OUT.json RUN.lmdb\n"
    "    cudaspy-analyze mcp RUN.lmdb...\n"
    "    cudaspy-analyze top [--interval S] [--window S] [--once] RUN|PID\n"
    "    cudaspy-analyze metrics --listen HOST:PORT [--window S] RUN|PID\n"
    "    cudaspy-analyze push --clickhouse URL [--job NAME] [--commit ID] RUN...\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads one or more run files (for example one per rank; their processes are\n"
    "    kept apart) and prints: the run summary (and what the run lacks), findings\n"
    "    sorted by impact, each a causal chain with evidence, a timestamped timeline\n"
    "    and a fix; latency per CUDA API over every call (count, total, mean, p50,\n"
    "    p90, p99, p99.9, max; percentiles by nearest rank); GPU feed (a lower bound\n"
    "    of GPU idle time from host-side syncs); and the per-process breakdown.\n"
    "    top and metrics read a run while it is recorded (RUN, or the recorded\n"
    "    program's PID): a live terminal view, and Prometheus metrics served at\n"
    "    http://HOST:PORT/metrics (docs/live.md; each has its own --help). push\n"
    "    writes runs into ClickHouse tables for SQL over many runs (docs/fleet.md).\n"
    "\n"
    "OPTIONS\n"
    "    --json              print the report as one JSON object (docs/json.md)\n"
    "    --pid PID           only PID and its descendants\n"
    "    --since SEC         start of the window, seconds from run start\n"
    "    --until SEC         end of the window, seconds from run start\n"
    "    --top N             keep the N findings with the largest impact\n"
    "    --by LIST           extra latency tables: pid, stream, kernel, pyline (per\n"
    "                        Python call site; comma-separated)\n"
    "    --fail-on SEV       exit 1 if a finding has severity SEV or above\n"
    "                        (high, medium or low)\n"
    "    --tail-ratio X      heavy tail: p99/p50 at least X (default 3)\n"
    "    --tail-min-calls N  and at least N calls (default 20)\n"
    "    --color WHEN        auto (default: only on a terminal), always, never\n"
    "    --step NAME         steps are the NVTX range NAME; none: no steps (default:\n"
    "                        the most frequent top-level range that tiles the run,\n"
    "                        else inferred from the repeating calls)\n"
    "    -h, --help          this text\n"
    "    -V, --version       print the version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 ok; 1 a finding at or above --fail-on; 2 usage error or bad input\n"
    "    (missing, corrupt, truncated or newer-format run file); 3 system failure\n"
    "\n"
    "EXAMPLES\n"
    "    cudaspy-analyze run.lmdb\n"
    "    cudaspy-analyze --json run.lmdb > report.json\n"
    "    cudaspy-analyze --since 10 --until 20 --by pid,stream run.lmdb\n"
    "    cudaspy-analyze --fail-on high rank0.lmdb rank1.lmdb\n"
    "    cudaspy-analyze top run.lmdb\n"
    "    cudaspy-analyze metrics --listen 127.0.0.1:9464 $(pgrep -f train.py)\n";

struct report_opts {
    struct analysis_opts a;
    int json, fail_on, color;
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '" PROG " --help'\n");
    return 2;
}

static int parse_secs(const char *s, uint64_t *ns)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end != '\0' || !(v >= 0) || v > 1e9)
        return -1;
    *ns = (uint64_t)llround(v * 1e9);
    return 0;
}

static int parse_u32(const char *s, unsigned long max, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (end == s || *end != '\0' || errno || v > max || *s == '-')
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_by(const char *s, struct analysis_opts *a)
{
    char buf[128], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", s);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "pid"))
            a->by_pid = 1;
        else if (!strcmp(t, "stream"))
            a->by_stream = 1;
        else if (!strcmp(t, "kernel"))
            a->by_kernel = 1;
        else if (!strcmp(t, "pyline"))
            a->by_pyline = 1;
        else
            return -1;
    }
    return 0;
}

enum { OPT_JSON = 256, OPT_PID, OPT_SINCE, OPT_UNTIL, OPT_TOP, OPT_BY, OPT_FAIL, OPT_RATIO,
       OPT_MINC, OPT_COLOR, OPT_STEP };

static const struct option long_opts[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"pid", required_argument, NULL, OPT_PID},
    {"since", required_argument, NULL, OPT_SINCE},
    {"until", required_argument, NULL, OPT_UNTIL},
    {"top", required_argument, NULL, OPT_TOP},
    {"by", required_argument, NULL, OPT_BY},
    {"fail-on", required_argument, NULL, OPT_FAIL},
    {"tail-ratio", required_argument, NULL, OPT_RATIO},
    {"tail-min-calls", required_argument, NULL, OPT_MINC},
    {"color", required_argument, NULL, OPT_COLOR},
    {"step", required_argument, NULL, OPT_STEP},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* One option; returns 0, 2 (usage error, printed) or -1 (done: help/version printed). */
static int parse_one(int c, const char *arg, struct report_opts *r)
{
    uint32_t u;
    char *end;

    switch (c) {
    case OPT_JSON: r->json = 1; return 0;
    case OPT_PID:
        if (parse_u32(arg, 0x7fffffff, &u) < 0 || u == 0)
            return usage_error("--pid: not a process id: '%s'", arg);
        r->a.pid = u;
        return 0;
    case OPT_SINCE:
        return parse_secs(arg, &r->a.since_ns) < 0
                   ? usage_error("--since: not a number of seconds: '%s'", arg) : 0;
    case OPT_UNTIL:
        return parse_secs(arg, &r->a.until_ns) < 0
                   ? usage_error("--until: not a number of seconds: '%s'", arg) : 0;
    case OPT_TOP:
        if (parse_u32(arg, 1000000, &u) < 0)
            return usage_error("--top: not a count: '%s'", arg);
        r->a.top = (int)u;
        return 0;
    case OPT_BY:
        return parse_by(arg, &r->a) < 0
                   ? usage_error("--by: expected pid, stream, kernel or pyline: '%s'", arg) : 0;
    case OPT_FAIL:
        r->fail_on = !strcmp(arg, "high") ? 3 : !strcmp(arg, "medium") ? 2
                   : !strcmp(arg, "low") ? 1 : -1;
        return r->fail_on < 0 ? usage_error("--fail-on: expected high, medium or low: '%s'", arg)
                              : 0;
    case OPT_RATIO:
        r->a.tail_ratio = strtod(arg, &end);
        return (*end || end == arg || !(r->a.tail_ratio >= 1))
                   ? usage_error("--tail-ratio: not a ratio >= 1: '%s'", arg) : 0;
    case OPT_MINC:
        return parse_u32(arg, 1u << 30, &r->a.tail_min_calls) < 0
                   ? usage_error("--tail-min-calls: not a count: '%s'", arg) : 0;
    case OPT_COLOR:
        r->color = !strcmp(arg, "always") ? 1 : !strcmp(arg, "never") ? 0
                 : !strcmp(arg, "auto") ? -1 : -2;
        return r->color == -2 ? usage_error("--color: expected auto, always or never: '%s'", arg)
                              : 0;
    case OPT_STEP:
        if (*arg == '\0')
            return usage_error("--step: expected a range name or none: '%s'", arg);
        r->a.step = arg;
        return 0;
    case 'h': fputs(usage_text, stdout); return -1;
    case 'V': printf(PROG " %s (run format %d)\n", CS_VERSION, CS_FORMAT_VERSION); return -1;
    default: return 2;
    }
}

static int parse(int argc, char **argv, struct report_opts *r)
{
    int c, rc;

    analysis_opts_init(&r->a);
    r->json = r->fail_on = 0;
    r->color = -1;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+hV", long_opts, NULL)) != -1) {
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            return usage_error(optopt ? "unknown option '-%c'" : "unknown option '%s'",
                               optopt ? (char[2]){(char)optopt, 0} : bad);
        }
        if ((rc = parse_one(c, optarg, r)) != 0)
            return rc;
    }
    if (r->a.until_ns <= r->a.since_ns)
        return usage_error("%s", "--until must be after --since");
    if (optind >= argc)
        return usage_error("%s", "no run file given");
    return 0;
}

/* LMDB follows page numbers without checking them, so a corrupt page can
 * fault inside the reader. The file is then bad input: say so, exit 2. */
static void put_err(const char *s)
{
    if (write(STDERR_FILENO, s, strlen(s)) < 0)
        _exit(2);
}

static void on_fault(int sig)
{
    const char *path = model_reading();

    if (path == NULL) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    put_err(PROG ": "); /* only write(2) here: we are in a signal handler */
    put_err(path);
    put_err(sig == SIGBUS ? ": corrupt run file (bus error reading a page)\n"
                          : ": corrupt run file (segmentation fault reading a page)\n");
    _exit(2);
}

static void catch_faults(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
}

/* Exit status for a load failure: bad input is 2, the system's fault 3. */
static int load_status(int rc)
{
    return rc == -ENOMEM || rc == -EIO || rc == -ENOSPC || rc == -EMFILE ? 3 : 2;
}

static int highest_severity(const json_t *chains)
{
    const json_t *v;
    size_t i;
    int worst = 0;

    json_array_foreach(chains, i, v) {
        const char *s = json_string_value(json_object_get(v, "severity"));
        int sev = !s ? 0 : !strcmp(s, "HIGH") ? 3 : !strcmp(s, "MEDIUM") ? 2 : 1;
        worst = sev > worst ? sev : worst;
    }
    return worst;
}

int report_main(int argc, char **argv)
{
    struct report_opts r;
    struct analysis *a = NULL;
    struct cs_err err = {""};
    json_t *j;
    int rc = parse(argc, argv, &r), status = 0;

    if (rc != 0)
        return rc < 0 ? 0 : rc;
    catch_faults();
    rc = analysis_load((const char *const *)argv + optind, argc - optind, &r.a, &a, &err);
    if (rc < 0) {
        fprintf(stderr, PROG ": %s\n", err.msg[0] ? err.msg : cs_strerror(rc));
        return load_status(rc);
    }
    j = analysis_json(a);
    if (r.fail_on && highest_severity(json_object_get(j, "chains")) >= r.fail_on)
        status = 1;
    if (r.json) {
        if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 ||
            fputc('\n', stdout) == EOF)
            status = 3;
    } else {
        analysis_print(a, stdout, r.color == -1 ? isatty(STDOUT_FILENO) : r.color);
    }
    json_decref(j);
    analysis_free(a);
    if (fflush(stdout) != 0) {
        fprintf(stderr, PROG ": stdout: %s\n", strerror(errno));
        return 3;
    }
    return status;
}
