/* rules/chains_memory.c: the findings of device memory pressure (issue 31)
 * from model/memory.h. allocator_retries is a view of the account (the
 * retry episodes' GPU idle, AB_ALLOC_RETRY); oom is the error the program
 * saw, HIGH whatever time it cost, kept even when the program died right
 * after it (the collector outlives the program and drains its ring). */
#include <inttypes.h>
#include <stdio.h>

#include "chains_priv.h"
#include "cudaspy/api.h"
#include "fmt.h"
#include "model/memory.h"

#define MIB (1024.0 * 1024.0)

static double mib(uint64_t bytes)
{
    return (double)bytes / MIB;
}

static const char *site_text(const struct model *m, struct pystack_ref ref, char *buf, size_t n)
{
    struct pystack_site s;

    if (ref.id == 0) {
        snprintf(buf, n, "a call site without a stack");
        return buf;
    }
    pystack_ref_site(m, ref, &s);
    return pystack_site_text(m, &s, buf, n);
}

/* "train.py:57 in step 512.0 MiB (3), ..." of holders @p h into @p buf. */
static const char *holders_text(const struct model *m, const struct mem_holder *h, char *buf,
                                size_t n)
{
    size_t l = 0;
    char s[160];

    buf[0] = '\0';
    for (int i = 0; i < MEM_TOP && h[i].bytes && l < n; i++)
        l += (size_t)snprintf(buf + l, n - l, "%s%s %.1f MiB (%u)", i ? ", " : "",
                              site_text(m, h[i].ref, s, sizeof(s)), mib(h[i].bytes), h[i].n);
    return buf;
}

static int selected(const struct ctx *x, uint32_t proc)
{
    return x->m->proc[proc].selected;
}

static const struct mem_track *track_of(const struct memory *mm, uint32_t proc, uint16_t dev)
{
    for (size_t i = 0; i < mm->ntr; i++)
        if (mm->tr[i].proc == proc && mm->tr[i].device == dev)
            return &mm->tr[i];
    return NULL;
}

/* ---- allocator_retries ---- */

void chains_f_retry(struct ctx *x)
{
    const struct memory *mm = x->mem;
    const struct mem_fail *first = NULL;
    uint64_t n = 0, ns = 0, freed = 0, tries = 0;
    struct finding *f;
    char a[32], b[32], s[160];

    for (size_t i = 0; mm && i < mm->nfail; i++) {
        const struct mem_fail *e = &mm->fail[i];
        if (e->chained && selected(x, e->proc))
            tries++;
        if (!e->retried || e->chained || !selected(x, e->proc))
            continue;
        first = first ? first : e;
        n++;
        ns += e->retry_end_ns - e->t_ns;
        freed += e->nfree;
    }
    if (n == 0)
        return;
    f = &x->fnd[C_RETRY];
    f->cause = C_RETRY;
    f->impact_ns = chains_owned(x, C_RETRY, &f->impact_lo_ns, &f->impact_hi_ns);
    f->evidence = json_array();
    f->examples = json_array();
    f->detail = json_pack("{s:{s:I, s:I, s:f, s:I, s:I}}", "retries", "episodes", (json_int_t)n,
                          "failed_calls", (json_int_t)(n + tries), "per_step",
                          x->ac->nstep ? (double)n / (double)x->ac->nstep : 0.0, "episodes_ns",
                          (json_int_t)ns, "frees", (json_int_t)freed);
    jaddf(f->evidence, "GPU idle %s while the feeding thread retried allocations",
          fmt_ns(a, 32, f->impact_ns));
    jaddf(f->evidence, "%" PRIu64 " allocations failed out of memory and succeeded when retried "
                       "(%.1f per step over %zu steps), %s from each failure to its retry "
                       "(mean %s)",
          n, x->ac->nstep ? (double)n / (double)x->ac->nstep : 0.0, x->ac->nstep,
          fmt_ns(a, 32, ns), fmt_ns(b, 32, ns / n));
    jaddf(f->evidence, "%" PRIu64 " frees in between: the allocator released its cached blocks, "
                       "and cudaFree synchronises the device", freed);
    jaddf(f->evidence, "first at %s: %s of %.1f MiB", site_text(x->m, first->ref, s, sizeof(s)),
          cs_api_table[first->api].name, mib(first->bytes));
    const struct mem_track *t = track_of(mm, first->proc, first->device);
    if (t && t->nrd)
        jaddf(f->evidence, "peak held %.1f MiB of the device's %.1f MiB", mib(t->peak_bytes),
              mib(t->rd[t->nrd - 1].total_bytes));
    snprintf(f->summary, sizeof(f->summary), "the caching allocator ran out of device memory "
             "%.1f times a step and freed its cache to retry, %s",
             x->ac->nstep ? (double)n / (double)x->ac->nstep : (double)n, fmt_ns(a, 32, ns));
    snprintf(f->host, sizeof(f->host), "%" PRIu64 " failed-then-retried allocations", n);
    snprintf(f->cuda, sizeof(f->cuda), "%s out of memory -> cudaFree x %" PRIu64 " -> retry",
             cs_api_table[first->api].name, freed);
    snprintf(f->rec, sizeof(f->rec),
             "lower the peak: a smaller batch, activation checkpointing, "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation), and free "
             "references to tensors no longer needed (del, no lists of losses on the GPU)");
}

/* ---- oom ---- */

static json_t *oom_json(const struct ctx *x, const struct mem_fail *e)
{
    const struct model *m = x->m;
    char s[256];
    json_t *o = json_pack("{s:i, s:i, s:I, s:s, s:I, s:I, s:o}", "pid", (int)m->proc[e->proc].pid,
                          "device", (int)e->device, "t_ns",
                          (json_int_t)chains_rel(m, m->proc[e->proc].run, e->t_ns), "api",
                          cs_api_table[e->api].name, "bytes", (json_int_t)e->bytes,
                          "held_bytes", (json_int_t)e->held_bytes, "top_holders",
                          memory_holders_json(m, e->top));

    json_object_set_new(o, "site", e->ref.id ? json_string(site_text(m, e->ref, s, sizeof(s)))
                                             : json_null());
    json_object_set_new(o, "free_bytes",
                        e->has_free ? json_integer((json_int_t)e->free_bytes) : json_null());
    json_object_set_new(o, "total_bytes",
                        e->has_free ? json_integer((json_int_t)e->total_bytes) : json_null());
    return json_pack("{s:o}", "oom", o);
}

/* The last failure that was not retried: the one the program saw. */
static const struct mem_fail *last_oom(const struct ctx *x, uint64_t *n)
{
    const struct memory *mm = x->mem;
    const struct mem_fail *last = NULL;

    *n = 0;
    for (size_t i = 0; mm && i < mm->nfail; i++) {
        const struct mem_fail *e = &mm->fail[i];
        if (e->retried || e->chained || !selected(x, e->proc))
            continue;
        last = e;
        ++*n;
    }
    return last;
}

void chains_f_oom(struct ctx *x)
{
    uint64_t n;
    const struct mem_fail *e = last_oom(x, &n);
    struct finding *f;
    char s[160], h[512];

    if (e == NULL)
        return;
    f = &x->fnd[C_OOM];
    f->cause = C_OOM;
    f->evidence = json_array();
    f->examples = json_array();
    f->detail = oom_json(x, e);
    site_text(x->m, e->ref, s, sizeof(s));
    jaddf(f->evidence, "%s of %.1f MiB failed out of memory at %s", cs_api_table[e->api].name,
          mib(e->bytes), s);
    jaddf(f->evidence, "the process held %.1f MiB on device %u", mib(e->held_bytes), e->device);
    if (e->has_free) /* the reading follows the failure: the process held what it held */
        jaddf(f->evidence, "the device had %.1f MiB free of %.1f MiB; other processes and the "
                           "CUDA context held %.1f MiB", mib(e->free_bytes), mib(e->total_bytes),
              mib(e->total_bytes > e->free_bytes + e->held_bytes
                      ? e->total_bytes - e->free_bytes - e->held_bytes
                      : 0));
    if (e->top[0].bytes)
        jaddf(f->evidence, "largest holders: %s", holders_text(x->m, e->top, h, sizeof(h)));
    if (n > 1)
        jaddf(f->evidence, "%" PRIu64 " allocations failed out of memory without a retry", n);
    snprintf(f->summary, sizeof(f->summary), "out of device memory: %.1f MiB asked at %s with "
             "%.1f MiB held", mib(e->bytes), s, mib(e->held_bytes));
    snprintf(f->host, sizeof(f->host), "%s", s);
    snprintf(f->cuda, sizeof(f->cuda), "%s %.1f MiB: out of memory", cs_api_table[e->api].name,
             mib(e->bytes));
    snprintf(f->rec, sizeof(f->rec),
             "lower the peak: a smaller batch, activation checkpointing, mixed precision, "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation, and free "
             "references to tensors no longer needed; see the largest holders");
}
