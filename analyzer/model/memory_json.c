/* model/memory_json.c: the "memory" object of docs/json.md from memory.h's
 * replay. Times are relative to the run's start, as everywhere in the JSON;
 * sites are named here (pystack.h), once per holder. */
#include <stdio.h>

#include "cudaspy/api.h"
#include "memory.h"

#define FAILS_JSON 50 /* failures listed; the count says how many there were */

static json_int_t rel(const struct model *m, uint32_t proc, uint64_t t)
{
    uint64_t t0 = m->runs[m->proc[proc].run].t0_ns;

    return (json_int_t)(t > t0 ? t - t0 : 0);
}

static json_t *site_json(const struct model *m, struct pystack_ref ref)
{
    struct pystack_site s;
    char buf[256];

    if (ref.id == 0)
        return json_null();
    pystack_ref_site(m, ref, &s);
    return json_string(pystack_site_text(m, &s, buf, sizeof(buf)));
}

json_t *memory_holders_json(const struct model *m, const struct mem_holder *h)
{
    json_t *arr = json_array();

    for (int i = 0; i < MEM_TOP && h[i].bytes; i++)
        json_array_append_new(arr, json_pack("{s:o, s:I, s:i}", "site", site_json(m, h[i].ref),
                                             "bytes", (json_int_t)h[i].bytes, "allocations",
                                             (int)h[i].n));
    return arr;
}

static const char *why_name(int why)
{
    return why == MEM_READ_FIRST ? "first_allocation" : why == MEM_READ_OOM ? "out_of_memory"
                                                                            : "program";
}

static json_t *readings_json(const struct model *m, const struct mem_track *t)
{
    json_t *arr = json_array();

    for (size_t i = 0; i < t->nrd; i++) {
        const struct mem_reading *r = &t->rd[i];
        uint64_t others = r->total_bytes > r->free_bytes + r->held_bytes
                              ? r->total_bytes - r->free_bytes - r->held_bytes
                              : 0;
        json_array_append_new(
            arr, json_pack("{s:I, s:I, s:I, s:I, s:s}", "t_ns", rel(m, t->proc, r->t_ns),
                           "free_bytes", (json_int_t)r->free_bytes, "total_bytes",
                           (json_int_t)r->total_bytes, "others_bytes", (json_int_t)others,
                           "why", why_name(r->why)));
    }
    return arr;
}

/* [{api, bytes}] of what each allocating API held at the peak, most first. */
static json_t *by_api_json(const struct mem_api_held *h)
{
    json_t *arr = json_array();

    for (int i = 0; i < MEM_APIS && h[i].api; i++)
        json_array_append_new(arr, json_pack("{s:s, s:I}", "api", cs_api_table[h[i].api].name,
                                             "bytes", (json_int_t)h[i].bytes));
    return arr;
}

static json_t *track_json(const struct model *m, const struct mem_track *t)
{
    const struct mem_reading *last = t->nrd ? &t->rd[t->nrd - 1] : NULL;
    json_t *o = json_pack(
        "{s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i}", "pid", (int)m->proc[t->proc].pid,
        "device", (int)t->device, "peak_bytes", (json_int_t)t->peak_bytes, "peak_t_ns",
        rel(m, t->proc, t->peak_ns), "held_end_bytes", (json_int_t)t->end_bytes, "allocations",
        (json_int_t)t->nalloc, "frees", (json_int_t)t->nfree, "allocated_bytes",
        (json_int_t)t->alloc_bytes, "failures", (int)t->nfail, "retries", (int)t->nretry);

    json_object_set_new(o, "total_bytes",
                        last ? json_integer((json_int_t)last->total_bytes) : json_null());
    json_object_set_new(o, "free_bytes",
                        last ? json_integer((json_int_t)last->free_bytes) : json_null());
    json_object_set_new(o, "readings", readings_json(m, t));
    json_object_set_new(o, "top_holders", memory_holders_json(m, t->top));
    json_object_set_new(o, "peak_by_api", by_api_json(t->by_api));
    return o;
}

static json_t *fail_json(const struct model *m, const struct mem_fail *f)
{
    json_t *o = json_pack("{s:i, s:i, s:I, s:s, s:I, s:I, s:b, s:o, s:o}", "pid",
                          (int)m->proc[f->proc].pid, "device", (int)f->device, "t_ns",
                          rel(m, f->proc, f->t_ns), "api", cs_api_table[f->api].name, "bytes",
                          (json_int_t)f->bytes, "held_bytes", (json_int_t)f->held_bytes,
                          "retried", f->retried, "site", site_json(m, f->ref), "top_holders",
                          memory_holders_json(m, f->top));

    json_object_set_new(o, "free_bytes",
                        f->has_free ? json_integer((json_int_t)f->free_bytes) : json_null());
    json_object_set_new(o, "total_bytes",
                        f->has_free ? json_integer((json_int_t)f->total_bytes) : json_null());
    if (f->retried)
        json_object_set_new(o, "retry_ns", json_integer((json_int_t)(f->retry_end_ns - f->t_ns)));
    return o;
}

json_t *memory_json(const struct memory *mm, const struct model *m)
{
    json_t *procs = json_array(), *fails = json_array();

    for (size_t i = 0; i < mm->ntr; i++)
        json_array_append_new(procs, track_json(m, &mm->tr[i]));
    /* the errors first: a run of retries must not hide its out-of-memory error */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < mm->nfail && json_array_size(fails) < FAILS_JSON; i++)
            if (!mm->fail[i].chained && mm->fail[i].retried == pass)
                json_array_append_new(fails, fail_json(m, &mm->fail[i]));
    return json_pack("{s:o, s:o, s:I, s:I}", "processes", procs, "failures", fails,
                     "failures_total", (json_int_t)mm->nfail, "retry_episodes",
                     (json_int_t)mm->nep);
}
