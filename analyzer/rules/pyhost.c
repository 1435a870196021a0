/* rules/pyhost.c: host-code stretches weighed by the Python sites sampled in
 * them (pyhost.h). Owns the sites and their weights; reads the model's
 * samples through model/pystack.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "model/pystack.h"
#include "pyhost.h"

struct pyhost_site {
    struct pystack_site site;
    struct pystack_ref first; /* its first sample's stack: via and callers */
    double w;                 /* sum over its samples of their stretch's cost per ns */
    uint64_t samples;
};

struct pyhost {
    struct pyhost_site *site;
    uint32_t nsite, cap;
    struct m_hash *ix;  /* site hash -> index (probing on a clash, as rules/pyline.c) */
    double w;           /* every sample's weight */
    uint64_t samples;
    uint64_t covered_ns; /* the cost of every stretch of a thread with samples */
    uint32_t last_thr;   /* pystack_thread_samples() of it, cached */
    uint64_t last_thr_samples;
    /* pyhost_add()'s stretch while its samples are visited */
    const struct model *m;
    double rate;
    int err;
};

struct pyhost *pyhost_new(void)
{
    struct pyhost *h = calloc(1, sizeof(*h));

    if (h && (h->ix = m_hash_new()) == NULL) {
        free(h);
        return NULL;
    }
    if (h)
        h->last_thr = M_NONE;
    return h;
}

void pyhost_free(struct pyhost *h)
{
    if (h == NULL)
        return;
    m_hash_free(h->ix);
    free(h->site);
    free(h);
}

/* Index of site @p s, added when new. @return it, or M_NONE (out of memory) */
static uint32_t site_get(struct pyhost *h, const struct pystack_site *s, struct pystack_ref ref)
{
    uint64_t key = pystack_site_hash(s);
    uint32_t i;

    while ((i = m_hash_get(h->ix, key)) != M_NONE && !pystack_site_eq(&h->site[i].site, s))
        key++;
    if (i != M_NONE)
        return i;
    if (h->nsite == h->cap) {
        uint32_t c = h->cap ? h->cap * 2 : 32;
        struct pyhost_site *q = realloc(h->site, c * sizeof(*q));
        if (q == NULL)
            return M_NONE;
        h->site = q;
        h->cap = c;
    }
    h->site[h->nsite] = (struct pyhost_site){*s, ref, 0, 0};
    if (m_hash_put(h->ix, key, h->nsite) < 0)
        return M_NONE;
    return h->nsite++;
}

static void on_sample(void *arg, const struct m_pysample *smp)
{
    struct pyhost *h = arg;
    struct pystack_ref ref = pystack_ref_of_sample(h->m, smp);
    struct pystack_site s;
    uint32_t i;

    pystack_ref_site(h->m, ref, &s);
    if ((i = site_get(h, &s, ref)) == M_NONE) {
        h->err = -ENOMEM;
        return;
    }
    h->site[i].w += h->rate;
    h->site[i].samples++;
    h->w += h->rate;
    h->samples++;
}

int64_t pyhost_add(struct pyhost *h, const struct model *m, uint32_t thr, uint64_t t0_ns,
                   uint64_t t1_ns, uint64_t cost_ns)
{
    uint64_t n;

    if (thr != h->last_thr) {
        h->last_thr = thr;
        h->last_thr_samples = pystack_thread_samples(m, thr);
    }
    if (h->last_thr_samples == 0 || t1_ns <= t0_ns)
        return 0;
    h->covered_ns += cost_ns;
    h->m = m;
    h->rate = (double)cost_ns / (double)(t1_ns - t0_ns);
    h->err = 0;
    n = pystack_samples_in(m, thr, t0_ns, t1_ns, on_sample, h);
    return h->err ? h->err : (int64_t)n;
}

uint64_t pyhost_samples(const struct pyhost *h)
{
    return h->samples;
}

/* Site @p i as a python_sites entry. */
static json_t *site_json(const struct pyhost *h, const struct model *m, uint32_t i,
                         uint64_t ns, uint64_t total_ns, const char *what)
{
    const struct pyhost_site *s = &h->site[i];
    double share = total_ns ? (double)ns / (double)total_ns : 0;
    char text[1024], site[512], d[32];
    json_t *o = pystack_site_json(m, &s->site);

    pystack_site_text(m, &s->site, site, sizeof(site));
    fmt_ns(d, sizeof(d), ns);
    snprintf(text, sizeof(text), "%s of %s while the host ran %s (%.0f %%; %" PRIu64 " samples)",
             d, what, site, share * 100, s->samples);
    json_object_set_new(o, "ns", json_integer((json_int_t)ns));
    json_object_set_new(o, "share", json_real(share));
    json_object_set_new(o, "samples", json_integer((json_int_t)s->samples));
    json_object_set_new(o, "source", json_string("samples"));
    json_object_set_new(o, "text", json_string(text));
    json_object_set_new(o, "via", pystack_ref_via_json(m, s->first, PYSTACK_CALLERS));
    json_object_set_new(o, "callers", pystack_ref_callers_json(m, s->first, PYSTACK_CALLERS));
    return o;
}

json_t *pyhost_sites_json(const struct pyhost *h, const struct model *m, uint64_t total_ns,
                          int max, const char *what)
{
    json_t *a = json_array();
    uint8_t *used = calloc((size_t)h->nsite + 1, 1);

    for (int k = 0; used && k < max && h->w > 0; k++) {
        uint32_t best = M_NONE;
        uint64_t ns;
        for (uint32_t i = 0; i < h->nsite; i++)
            if (!used[i] && (best == M_NONE || h->site[i].w > h->site[best].w))
                best = i;
        if (best == M_NONE)
            break;
        ns = (uint64_t)((double)h->covered_ns * (h->site[best].w / h->w));
        if (ns == 0 || (k > 0 && ns * 100 < total_ns))
            break; /* under 1 %: not worth a line once one is named */
        json_array_append_new(a, site_json(h, m, best, ns, total_ns, what));
        used[best] = 1;
    }
    free(used);
    return a;
}
