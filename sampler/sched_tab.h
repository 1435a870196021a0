/* sched_tab.h: a small open-addressing map from u32 keys (pids, tids) to
 * u64 values, used by sched_fsm.c for threads, processes and per-window
 * outsiders. Linear probing, backward-shift deletion, grows at 1/2 full. */
#ifndef CUDASPY_SAMPLER_SCHED_TAB_H
#define CUDASPY_SAMPLER_SCHED_TAB_H

#include <stddef.h>
#include <stdint.h>

struct sched_tab {
    uint32_t *keys;  /* 0 = empty slot (pid/tid 0 is never stored) */
    uint64_t *vals;
    size_t cap, n;
};

/** Value of @p key, or NULL if absent. Borrowed until the next put/del. */
uint64_t *sched_tab_get(const struct sched_tab *t, uint32_t key);

/** Slot for @p key, inserted with value 0 when absent. @return NULL on ENOMEM */
uint64_t *sched_tab_put(struct sched_tab *t, uint32_t key);

void sched_tab_del(struct sched_tab *t, uint32_t key);

/** Remove every key (keeps capacity). */
void sched_tab_clear(struct sched_tab *t);

void sched_tab_free(struct sched_tab *t);

#endif
