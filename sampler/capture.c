/* capture.c: the capture ranges of a run (capture.h). Owns the ranges; the
 * collector pauses and resumes the shims and the perf events. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "cudaspy/grow.h"

void capture_init(struct capture *k, const struct capture_opts *o, uint64_t t_start_ns)
{
    memset(k, 0, sizeof(*k));
    k->o = *o;
    k->t_start_ns = t_start_ns;
    k->on = !capture_active(k);
}

int capture_active(const struct capture *k)
{
    return k->o.delay_ns || k->o.duration_ns || k->o.signal || k->o.program;
}

int capture_want(const struct capture *k, uint64_t now_ns)
{
    uint64_t from = k->t_start_ns + k->o.delay_ns;

    if (!capture_active(k))
        return 1;
    if (now_ns < from || (k->o.duration_ns && now_ns >= from + k->o.duration_ns))
        return 0;
    return k->o.signal ? k->sig_on : k->o.program ? k->prog_on : 1;
}

int capture_set(struct capture *k, int on, uint64_t now_ns)
{
    if (on == k->on)
        return 0;
    k->on = on;
    if (!on) {
        if (k->n && k->r[k->n - 1].t1_ns == 0)
            k->r[k->n - 1].t1_ns = now_ns;
        return 0;
    }
    if (cs_grow((void **)&k->r, &k->cap, k->n + 1, sizeof(*k->r)) < 0)
        return -ENOMEM;
    k->r[k->n++] = (struct capture_range){now_ns, 0};
    return 0;
}

int capture_holds(const struct capture *k, uint64_t t_ns)
{
    for (size_t i = k->n; i-- > 0;) { /* the newest first: records are recent */
        if (t_ns >= k->r[i].t0_ns)
            return k->r[i].t1_ns == 0 || t_ns <= k->r[i].t1_ns;
    }
    return 0;
}

void capture_signal(struct capture *k, int on)
{
    k->sig_on = on;
}

void capture_mark(struct capture *k, int on)
{
    k->prog_on = on;
}

uint64_t capture_next_ns(const struct capture *k, uint64_t now_ns)
{
    uint64_t from = k->t_start_ns + k->o.delay_ns, to = from + k->o.duration_ns;

    if (!capture_active(k))
        return UINT64_MAX;
    if (now_ns < from)
        return from - now_ns;
    if (k->o.duration_ns && now_ns < to)
        return to - now_ns;
    return UINT64_MAX;
}

size_t capture_ranges_str(const struct capture *k, uint64_t now_ns, char *buf, size_t n)
{
    size_t len = 0;

    if (n)
        buf[0] = '\0';
    for (size_t i = 0; i < k->n; i++) {
        uint64_t t1 = k->r[i].t1_ns ? k->r[i].t1_ns : now_ns;
        int w = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0,
                         "%s%" PRIu64 "-%" PRIu64, i ? "," : "", k->r[i].t0_ns, t1);
        len += w > 0 ? (size_t)w : 0;
    }
    return len;
}

void capture_mode_str(const struct capture *k, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    if (k->o.signal)
        len += (size_t)snprintf(buf, n, "signal");
    if (k->o.program)
        len += (size_t)snprintf(buf, n, "%s", k->o.spec);
    if (k->o.delay_ns && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%sdelay %.3g s", len ? ", " : "",
                                (double)k->o.delay_ns / 1e9);
    if (k->o.duration_ns && len < n)
        snprintf(buf + len, n - len, "%sduration %.3g s", len ? ", " : "",
                 (double)k->o.duration_ns / 1e9);
}

void capture_free(struct capture *k)
{
    free(k->r);
    memset(k, 0, sizeof(*k));
}
