/* fake_collector.c: in-memory collector.h for host sampler tests
 * (see fake_collector.h). Aborts on allocation failure: test code. */
#include "fake_collector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "fake_collector: out of memory\n");
        abort();
    }
    return p;
}

struct collector *fake_collector_new(void)
{
    struct collector *c = calloc(1, sizeof(*c));

    if (!c)
        abort();
    return c;
}

void fake_collector_free(struct collector *c)
{
    if (!c)
        return;
    for (int k = 0; k < CS_REC_KIND_COUNT; k++)
        free(c->recs[k].data);
    for (size_t i = 0; i < c->nstrings; i++)
        free(c->strings[i]);
    for (size_t i = 0; i < c->nmeta; i++)
        free(c->meta[i]);
    free(c->strings);
    free(c->meta);
    free(c->procs);
    free(c->threads);
    free(c);
}

int collector_emit(struct collector *c, unsigned kind, uint32_t pid, const void *rec)
{
    unsigned sz = cs_rec_size(kind);
    struct fake_recs *r;

    (void)pid;
    if (!sz || kind == CS_REC_CUDA)
        return -22;
    r = &c->recs[kind];
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->data = xrealloc(r->data, r->cap * sz);
    }
    memcpy(r->data + r->n * sz, rec, sz);
    r->n++;
    return 0;
}

const void *fake_rec(const struct collector *c, unsigned kind, size_t i)
{
    return i < c->recs[kind].n ? c->recs[kind].data + i * cs_rec_size(kind) : NULL;
}

static void merge_u64(uint64_t *dst, uint64_t v)
{
    if (v)
        *dst = v;
}

int collector_proc(struct collector *c, const struct cs_proc *p)
{
    for (size_t i = c->nprocs; i-- > 0;) {
        struct cs_proc *q = &c->procs[i];

        if (q->pid != p->pid)
            continue;
        if ((q->flags & CS_PF_EXITED) && p->start_ns > q->start_ns)
            break; /* a new row */
        if (p->ppid)
            q->ppid = p->ppid;
        merge_u64(&q->start_ns, p->start_ns);
        merge_u64(&q->exec_ns, p->exec_ns);
        merge_u64(&q->exit_ns, p->exit_ns);
        if (p->exit_status != -1)
            q->exit_status = p->exit_status;
        q->flags |= p->flags;
        if (p->cmdline_id)
            q->cmdline_id = p->cmdline_id;
        if (p->rank != CS_RANK_NONE)
            q->rank = p->rank;
        if (p->comm[0])
            memcpy(q->comm, p->comm, sizeof(q->comm));
        return 0;
    }
    if (c->nprocs == c->capprocs) {
        c->capprocs = c->capprocs ? 2 * c->capprocs : 64;
        c->procs = xrealloc(c->procs, c->capprocs * sizeof(*c->procs));
    }
    c->procs[c->nprocs++] = *p;
    return 0;
}

int collector_thread(struct collector *c, const struct cs_thread *t)
{
    for (size_t i = c->nthreads; i-- > 0;) {
        struct cs_thread *q = &c->threads[i];

        if (q->tid != t->tid || q->pid != t->pid)
            continue;
        merge_u64(&q->start_ns, t->start_ns);
        merge_u64(&q->exit_ns, t->exit_ns);
        if (t->name[0])
            memcpy(q->name, t->name, sizeof(q->name));
        return 0;
    }
    if (c->nthreads == c->capthreads) {
        c->capthreads = c->capthreads ? 2 * c->capthreads : 64;
        c->threads = xrealloc(c->threads, c->capthreads * sizeof(*c->threads));
    }
    c->threads[c->nthreads++] = *t;
    return 0;
}

int collector_intern(struct collector *c, const char *s, size_t len, uint32_t *id)
{
    for (size_t i = 0; i < c->nstrings; i++) {
        if (strlen(c->strings[i]) == len && memcmp(c->strings[i], s, len) == 0) {
            *id = (uint32_t)i + 1;
            return 0;
        }
    }
    c->strings = xrealloc(c->strings, (c->nstrings + 1) * sizeof(*c->strings));
    c->strings[c->nstrings] = strndup(s, len);
    *id = (uint32_t)++c->nstrings;
    return 0;
}

int collector_meta(struct collector *c, const char *key, const char *val)
{
    size_t n = strlen(key) + strlen(val) + 2;
    char *kv = xrealloc(NULL, n);

    snprintf(kv, n, "%s=%s", key, val);
    c->meta = xrealloc(c->meta, (c->nmeta + 1) * sizeof(*c->meta));
    c->meta[c->nmeta++] = kv;
    return 0;
}

int collector_meta_u64(struct collector *c, const char *key, uint64_t val)
{
    char b[32];

    snprintf(b, sizeof(b), "%llu", (unsigned long long)val);
    return collector_meta(c, key, b);
}

int collector_has_pid(struct collector *c, uint32_t pid)
{
    return fake_proc(c, pid) != NULL;
}

const struct cs_proc *fake_proc(const struct collector *c, uint32_t pid)
{
    for (size_t i = c->nprocs; i-- > 0;)
        if (c->procs[i].pid == pid)
            return &c->procs[i];
    return NULL;
}

const struct cs_thread *fake_thread(const struct collector *c, uint32_t tid)
{
    for (size_t i = c->nthreads; i-- > 0;)
        if (c->threads[i].tid == tid)
            return &c->threads[i];
    return NULL;
}

const char *fake_meta(const struct collector *c, const char *key)
{
    size_t n = strlen(key);

    for (size_t i = c->nmeta; i-- > 0;) /* latest wins */
        if (strncmp(c->meta[i], key, n) == 0 && c->meta[i][n] == '=')
            return c->meta[i] + n + 1;
    return NULL;
}

const char *fake_string(const struct collector *c, uint32_t id)
{
    return id && id <= c->nstrings ? c->strings[id - 1] : NULL;
}
