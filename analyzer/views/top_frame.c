/* views/top_frame.c: one frame of `cudaspy-analyze top` (top.h), read from
 * a live sample's docs/json.md object: a header, then the overview, the
 * processes, the findings or the account's buckets, and on a terminal the
 * keys' footer. The terminal itself (raw mode, refresh, keys) is top.c's. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jtext.h"
#include "rules/fmt.h"
#include "top.h"

#define TOP_BUCKETS_SHOWN 5 /* the overview's largest buckets */
#define TOP_PROCS_SHOWN   3 /* the overview's busiest processes */
#define TOP_MAX_ROWS      64 /* buckets or processes sorted, at most */

static const struct {
    int key;
    const char *name;
} views[TOP_NVIEWS] = {{'1', "overview"}, {'p', "processes"}, {'f', "findings"},
                       {'b', "buckets"}};

int top_view_key(enum top_view v)
{
    return views[v].key;
}

int top_view_of_key(int c)
{
    for (int v = 0; v < TOP_NVIEWS; v++)
        if (views[v].key == c)
            return v;
    return -1;
}

int top_view_of_name(const char *name)
{
    for (int v = 0; v < TOP_NVIEWS; v++)
        if (strcmp(views[v].name, name) == 0)
            return v;
    return -1;
}

struct out {
    FILE *f;
    const struct top_frame *t;
    int row;
    uint64_t window_ns; /* the sample's window: the denominator of CPU shares */
};

/* One line, cut at the terminal's width; none past its last row but one
 * (the footer's). */
static void line(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct out *o, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (o->t->rows && o->row >= o->t->rows - (o->t->tty ? 1 : 0))
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (o->t->cols > 0 && strlen(buf) > (size_t)o->t->cols)
        buf[o->t->cols] = '\0';
    fprintf(o->f, "%s%s\n", buf, o->t->tty ? "\033[K" : "");
    o->row++;
}

static const char *ns_text(char *buf, size_t n, json_int_t ns)
{
    return fmt_ns(buf, n, ns > 0 ? (uint64_t)ns : 0);
}

static void header(struct out *o)
{
    const struct live_sample *s = o->t->s;
    char a[32], b[32];

    if (o->t->waiting) {
        line(o, "cudaspy top  %s  waiting: %s", o->t->path, o->t->waiting);
        return;
    }
    line(o, "cudaspy top  %s  %s, %s%s%s%s", o->t->path,
         o->t->finished ? "run finished" : "recording", ns_text(a, sizeof(a), (json_int_t)s->end_ns),
         o->t->stale ? "  (not refreshed: " : "", o->t->stale ? o->t->stale : "",
         o->t->stale ? ")" : "");
    line(o, "window   the last %s (%.1f-%.1f s)",
         ns_text(b, sizeof(b), (json_int_t)(s->end_ns - s->since_ns)), (double)s->since_ns / 1e9,
         (double)s->end_ns / 1e9);
}

/* Indexes of array @p arr sorted by integer field @p key, largest first. */
static size_t sorted_by(const json_t *arr, const char *key, size_t *idx, size_t max)
{
    size_t n = json_array_size(arr) < max ? json_array_size(arr) : max;

    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = 1; i < n; i++) /* insertion sort: at most TOP_MAX_ROWS rows */
        for (size_t k = i; k > 0; k--) {
            json_int_t x = jtext_int(json_array_get(arr, idx[k]), key);
            json_int_t y = jtext_int(json_array_get(arr, idx[k - 1]), key);
            size_t tmp = idx[k];
            if (x <= y)
                break;
            idx[k] = idx[k - 1];
            idx[k - 1] = tmp;
        }
    return n;
}

static void steps_line(struct out *o, const json_t *st)
{
    char a[32], b[32];

    if (jtext_int(st, "count") == 0) {
        line(o, "STEPS    none in the window (%s)", jtext_str(st, "how"));
        return;
    }
    line(o, "STEPS    %" JSON_INTEGER_FORMAT " in the window   p50 %s   p99 %s   (%s)",
         jtext_int(st, "count"), ns_text(a, sizeof(a), jtext_int(st, "p50_ns")),
         ns_text(b, sizeof(b), jtext_int(st, "p99_ns")), jtext_str(st, "source"));
}

static void gpu_line(struct out *o, const json_t *g)
{
    if (strcmp(jtext_str(g, "source"), "none") == 0 || json_object_get(g, "busy_pct") == NULL)
        line(o, "GPU      busy unknown (no GPU activity or syncs in the window)");
    else
        line(o, "GPU      busy %.1f %% (%s)", jtext_num(g, "busy_pct"), jtext_str(g, "source"));
}

typedef int (*item_fmt)(char *b, size_t n, const struct out *o, const json_t *e);

/* One line "@p lead" and the @p shown largest elements of @p arr by @p key,
 * each as @p fmt writes it, three spaces apart; @p none when there are none. */
static void top_line(struct out *o, const char *lead, const json_t *arr, const char *key,
                     size_t shown, item_fmt fmt, const char *none)
{
    size_t idx[TOP_MAX_ROWS], k = sorted_by(arr, key, idx, TOP_MAX_ROWS), len = 0;
    char buf[512];

    buf[0] = '\0';
    for (size_t i = 0; i < k && i < shown && len < sizeof(buf); i++) {
        if (i)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "   ");
        if (len < sizeof(buf))
            len += (size_t)fmt(buf + len, sizeof(buf) - len, o, json_array_get(arr, idx[i]));
    }
    line(o, "%s%s", lead, k ? buf : none);
}

static int bucket_fmt(char *b, size_t n, const struct out *o, const json_t *e)
{
    (void)o;
    return snprintf(b, n, "%s %.1f %%", jtext_str(e, "name"), jtext_num(e, "pct"));
}

static void buckets_line(struct out *o, const json_t *buckets)
{
    top_line(o, "ACCOUNT  ", buckets, "ns", TOP_BUCKETS_SHOWN, bucket_fmt,
             "nothing CUDA-active in the window");
}

/* Where finding @p c's time is spent in the user's code, if it knows. */
static const char *site_of(char *buf, size_t n, const json_t *c)
{
    const json_t *site = json_array_get(json_object_get(c, "python_sites"), 0);

    return site ? jtext_frame(buf, n, site) : NULL;
}

static void finding_lines(struct out *o, const json_t *c, const char *lead)
{
    char site[320];

    line(o, "%s[%s] %s  %.1f %% of the window: %s", lead, jtext_str(c, "severity"),
         jtext_str(c, "cause"), jtext_num(c, "impact_pct"), jtext_str(c, "summary"));
    if (site_of(site, sizeof(site), c))
        line(o, "%*s  at %s", (int)strlen(lead), "", site);
}

static double cpu_pct(const struct out *o, const json_t *p)
{
    return o->window_ns ? 100.0 * (double)jtext_int(p, "oncpu_ns") / (double)o->window_ns : 0;
}

static int proc_fmt(char *b, size_t n, const struct out *o, const json_t *e)
{
    return snprintf(b, n, "%s (%" JSON_INTEGER_FORMAT ") %.1f %%", jtext_str(e, "comm"),
                    jtext_int(e, "pid"), cpu_pct(o, e));
}

static void cpu_line(struct out *o, const json_t *procs)
{
    top_line(o, "CPU      ", procs, "oncpu_ns", TOP_PROCS_SHOWN, proc_fmt, "no process data");
}

static void dropped_line(struct out *o, const json_t *run)
{
    const json_t *f = json_array_get(json_object_get(run, "files"), 0);

    line(o, "DROPPED  cuda %" JSON_INTEGER_FORMAT "   host %" JSON_INTEGER_FORMAT
         "   shim %" JSON_INTEGER_FORMAT, jtext_int(f, "cuda_dropped"), jtext_int(f, "host_lost"),
         jtext_int(f, "shim_lost"));
}

static void overview(struct out *o, const json_t *j)
{
    const json_t *c = json_array_get(json_object_get(j, "chains"), 0);

    steps_line(o, json_object_get(j, "steps"));
    gpu_line(o, json_object_get(j, "gpu"));
    buckets_line(o, json_object_get(json_object_get(j, "account"), "buckets"));
    if (c)
        finding_lines(o, c, "FINDING  ");
    else
        line(o, "FINDING  none in the window");
    cpu_line(o, json_object_get(j, "processes"));
    dropped_line(o, json_object_get(j, "run"));
}

static void processes(struct out *o, const json_t *j)
{
    const json_t *procs = json_object_get(j, "processes"), *p;
    char a[32], b[32];
    size_t i;

    line(o, "%7s  %-16s %-9s %6s %10s %10s %10s", "PID", "COMM", "ROLE", "CPU%", "CUDA calls",
         "CUDA time", "off-CPU");
    json_array_foreach(procs, i, p)
        line(o, "%7" JSON_INTEGER_FORMAT "  %-16.16s %-9s %6.1f %10" JSON_INTEGER_FORMAT
             " %10s %10s", jtext_int(p, "pid"), jtext_str(p, "comm"), jtext_str(p, "role"),
             cpu_pct(o, p), jtext_int(p, "cuda_calls"), ns_text(a, sizeof(a), jtext_int(p, "cuda_ns")),
             ns_text(b, sizeof(b), jtext_int(p, "offcpu_ns")));
}

static void findings(struct out *o, const json_t *j)
{
    const json_t *chains = json_object_get(j, "chains"), *c;
    size_t i;

    line(o, "FINDINGS (%zu in the window)", json_array_size(chains));
    json_array_foreach(chains, i, c) {
        finding_lines(o, c, "");
        line(o, "  fix: %s", jtext_str(c, "recommendation"));
    }
}

static void buckets(struct out *o, const json_t *j)
{
    const json_t *ac = json_object_get(j, "account"), *bs = json_object_get(ac, "buckets");
    size_t idx[TOP_MAX_ROWS], n = sorted_by(bs, "ns", idx, TOP_MAX_ROWS);
    char a[32];

    line(o, "ACCOUNT (every ns of the window's CUDA-active time once; %s)", jtext_str(ac, "source"));
    for (size_t i = 0; i < n; i++) {
        const json_t *b = json_array_get(bs, idx[i]);
        double pct = jtext_num(b, "pct");
        char bar[41];
        int w = (int)(pct * 40 / 100 + 0.5);
        memset(bar, '#', sizeof(bar) - 1);
        bar[w < 0 ? 0 : w > 40 ? 40 : w] = '\0';
        line(o, "  %-20s %10s %5.1f %%  %-40s %s", jtext_str(b, "name"),
             ns_text(a, sizeof(a), jtext_int(b, "ns")), pct, bar,
             json_string_value(json_object_get(b, "owner")) ? jtext_str(b, "owner") : "");
    }
}

static void footer(struct out *o)
{
    char buf[256];
    int len = 0;

    for (int v = 0; v < TOP_NVIEWS; v++)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len, v == (int)o->t->view ? "[%c %s]  "
                        : " %c %s   ", views[v].key, views[v].name);
    snprintf(buf + len, sizeof(buf) - (size_t)len, " q quit");
    if (o->t->cols > 0 && strlen(buf) > (size_t)o->t->cols)
        buf[o->t->cols] = '\0';
    fprintf(o->f, "\033[J\033[%d;1H\033[7m%s\033[0m\033[K", o->t->rows > 0 ? o->t->rows : o->row + 1,
            buf);
}

void top_frame_print(FILE *f, const struct top_frame *t)
{
    static void (*const draw[TOP_NVIEWS])(struct out *, const json_t *) = {
        overview, processes, findings, buckets};
    const json_t *j = t->s && !t->waiting ? t->s->json : NULL;
    struct out o = {.f = f, .t = t};

    if (t->tty)
        fputs("\033[H", f);
    header(&o);
    if (t->s && !t->waiting && !j)
        line(&o, "nothing recorded yet");
    if (j) {
        o.window_ns = t->s->end_ns - t->s->since_ns;
        line(&o, "%s", "");
        draw[t->view](&o, j);
    }
    if (t->tty)
        footer(&o);
    else
        fputc('\n', f);
    fflush(f);
}
