/* model/offpass.c: the off-CPU intervals' first pass beside the calls'
 * (offpass.h). Owns the per-thread keys and their totals; what a total
 * means is model.c's off_totals(), which this pass must match. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "offpass.h"

/* m_hash maps u64 keys: (run, pid, tid) is 96 bits, so the key is a hash
 * of them and the entry's own fields are checked, the next slot of the
 * probe (key + 1, ...) taken on a collision. */
static uint64_t key_hash(uint32_t run, uint32_t pid, uint32_t tid)
{
    uint64_t h = ((uint64_t)run << 32 | pid) * 0x9e3779b97f4a7c15ull;

    return (h ^ (h >> 29) ^ tid) * 0xbf58476d1ce4e5b9ull;
}

static int same(const struct offpass_key *k, uint32_t run, uint32_t pid, uint32_t tid)
{
    return k->run == run && k->pid == pid && k->tid == tid;
}

/* The key of (run, pid, tid), added when first seen. @return its index or M_NONE */
static uint32_t key_get(struct offpass *op, uint32_t run, uint32_t pid, uint32_t tid)
{
    uint64_t h = key_hash(run, pid, tid);
    uint32_t i;

    if (op->nk && same(&op->k[op->last], run, pid, tid))
        return op->last;
    if (op->ix == NULL && (op->ix = m_hash_new()) == NULL)
        return M_NONE;
    for (;; h++) {
        if ((i = m_hash_get(op->ix, h)) == M_NONE)
            break;
        if (same(&op->k[i], run, pid, tid))
            return op->last = i;
    }
    if (op->nk == op->cap) {
        uint32_t cap = op->cap ? 2 * op->cap : 64;
        void *p = realloc(op->k, (size_t)cap * sizeof(*op->k));
        if (p == NULL)
            return M_NONE;
        op->k = p;
        op->cap = cap;
    }
    i = op->nk;
    memset(&op->k[i], 0, sizeof(op->k[i]));
    op->k[i].run = run, op->k[i].pid = pid, op->k[i].tid = tid;
    if (m_hash_put(op->ix, h, i) < 0)
        return M_NONE;
    op->nk++;
    return op->last = i;
}

int offpass_add(struct offpass *op, uint32_t run, const struct m_run *mr,
                const struct cs_rec_offcpu *r, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++, r++) {
        struct offpass_key *k;
        uint64_t d;
        uint32_t ki;
        if (r->t_end_ns <= mr->win_lo_ns || r->t_start_ns >= mr->win_hi_ns ||
            r->t_end_ns < r->t_start_ns)
            continue; /* as off_block() */
        if ((ki = key_get(op, run, r->pid, r->tid)) == M_NONE)
            return -ENOMEM;
        k = &op->k[ki];
        d = model_overlap(r->t_start_ns, r->t_end_ns, mr->win_lo_ns, mr->win_hi_ns);
        op->pos++;
        k->n++;
        if (d > k->max_ns) {
            k->max_ns = d;
            k->max_at_ns = r->t_start_ns;
            k->max_pos = op->pos;
        }
        if (r->cls == CS_OFF_PREEMPT) {
            k->preempt_ns += d;
            k->invol++;
        } else {
            *(r->cls == CS_OFF_DISK ? &k->disk_ns : &k->sleep_ns) += d;
            k->vol++;
        }
        k->runq_ns += r->runq_ns;
        if (r->t_end_ns > k->end_ns)
            k->end_ns = r->t_end_ns;
    }
    return 0;
}

void offpass_free(struct offpass *op)
{
    free(op->k);
    if (op->ix)
        m_hash_free(op->ix);
    memset(op, 0, sizeof(*op));
}
