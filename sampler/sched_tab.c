/* sched_tab.c: u32 -> u64 open-addressing map (see sched_tab.h). */
#include "sched_tab.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint32_t key, size_t cap)
{
    return (size_t)((key * 2654435761u) & (cap - 1));
}

uint64_t *sched_tab_get(const struct sched_tab *t, uint32_t key)
{
    if (t->cap == 0 || key == 0)
        return NULL;
    for (size_t i = slot_of(key, t->cap);; i = (i + 1) & (t->cap - 1)) {
        if (t->keys[i] == key)
            return &t->vals[i];
        if (t->keys[i] == 0)
            return NULL;
    }
}

static int grow(struct sched_tab *t)
{
    struct sched_tab n = {0};

    n.cap = t->cap ? 2 * t->cap : 64;
    n.keys = calloc(n.cap, sizeof(*n.keys));
    n.vals = calloc(n.cap, sizeof(*n.vals));
    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++)
        if (t->keys[i])
            *sched_tab_put(&n, t->keys[i]) = t->vals[i];
    free(t->keys);
    free(t->vals);
    *t = n;
    return 0;
}

uint64_t *sched_tab_put(struct sched_tab *t, uint32_t key)
{
    size_t i;

    if (key == 0)
        return NULL;
    if (2 * (t->n + 1) > t->cap && grow(t) < 0)
        return NULL;
    for (i = slot_of(key, t->cap); t->keys[i] && t->keys[i] != key; i = (i + 1) & (t->cap - 1))
        ;
    if (t->keys[i] == 0) {
        t->keys[i] = key;
        t->vals[i] = 0;
        t->n++;
    }
    return &t->vals[i];
}

void sched_tab_del(struct sched_tab *t, uint32_t key)
{
    uint64_t *v = sched_tab_get(t, key);
    size_t i, j;

    if (!v)
        return;
    i = (size_t)(v - t->vals);
    t->keys[i] = 0;
    t->n--;
    /* Backward shift: re-place the rest of the cluster. */
    for (j = (i + 1) & (t->cap - 1); t->keys[j]; j = (j + 1) & (t->cap - 1)) {
        uint32_t k = t->keys[j];
        uint64_t val = t->vals[j];

        t->keys[j] = 0;
        t->n--;
        *sched_tab_put(t, k) = val;
    }
}

void sched_tab_clear(struct sched_tab *t)
{
    if (t->cap)
        memset(t->keys, 0, t->cap * sizeof(*t->keys));
    t->n = 0;
}

void sched_tab_free(struct sched_tab *t)
{
    free(t->keys);
    free(t->vals);
    memset(t, 0, sizeof(*t));
}
