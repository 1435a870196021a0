/* fake_queue.c: the simulated GPU's deferred data movement (SIM only). A real
 * driver does no CPU work for an asynchronous copy whose host side is pinned,
 * a device-to-device copy or an asynchronous memset: it queues a DMA and
 * returns. So the fake does not memmove inside those calls: it queues them
 * here, and whichever host thread next needs their bytes runs them. Owns the
 * queue, its sequence numbers and its locks; which work is deferred, and the
 * bytes' movement itself, are fake_mem.c's; who depends on what (dep_seq) is
 * fake_stream.c's.
 *
 * Items get sequence numbers 1, 2, ... in the order they are queued, and run
 * in that order, always. Enqueue order is a valid order for any CUDA program:
 * every dependency (same stream, legacy stream, event wait, host sync) points
 * from earlier-queued work to later. So running a prefix of the queue early
 * is always right, and "make item N's effects visible" is "run the prefix up
 * to N", whatever streams the prefix holds.
 *
 * Locks: queue_lock guards the list for the instant of a push or a pop;
 * run_lock is held by the one thread running items, so items run one at a
 * time, in order, and a thread that needs item N waits for a runner that has
 * already popped it. Pushing never waits behind a running memmove. */
#include "fake_driver.h"

#include <stdlib.h>

struct item {
    struct item *next;
    uint64_t seq;
    struct fake_node node;
};

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static struct item *head, *tail;      /* queue_lock */
static _Atomic uint64_t last_seq;     /* the newest item's; written under queue_lock */
static _Atomic uint64_t done_seq;     /* items 1..done_seq have run; release after the run */

int fake_queue_push(struct CUstream_st *s, const struct fake_node *n)
{
    if (!fake_cfg.is_sim)
        return -1;
    struct item *it = malloc(sizeof *it);
    if (it == NULL)
        return -1;
    it->next = NULL;
    it->node = *n;
    pthread_mutex_lock(&queue_lock);
    uint64_t seq = atomic_load_explicit(&last_seq, memory_order_relaxed) + 1;
    it->seq = seq;
    if (tail)
        tail->next = it;
    else
        head = it;
    tail = it;
    atomic_store_explicit(&last_seq, seq, memory_order_release);
    pthread_mutex_unlock(&queue_lock);
    fake_stream_add_dep(s, seq); /* not it->seq: another thread may have run and freed it */
    return 0;
}

static struct item *pop(void)
{
    pthread_mutex_lock(&queue_lock);
    struct item *it = head;
    head = it->next;
    if (head == NULL)
        tail = NULL;
    pthread_mutex_unlock(&queue_lock);
    return it;
}

/* Items done_seq+1 .. last_seq are in the list, in order, since only the
 * run_lock holder pops: when done_seq < upto <= last_seq, head exists. */
void fake_queue_run_upto(uint64_t upto)
{
    uint64_t last = atomic_load_explicit(&last_seq, memory_order_acquire);
    if (upto > last)
        upto = last;
    if (atomic_load_explicit(&done_seq, memory_order_acquire) >= upto)
        return;
    pthread_mutex_lock(&run_lock);
    while (atomic_load_explicit(&done_seq, memory_order_relaxed) < upto) {
        struct item *it = pop();
        fake_node_exec(&it->node);
        atomic_store_explicit(&done_seq, it->seq, memory_order_release);
        free(it);
    }
    pthread_mutex_unlock(&run_lock);
}

/* fork() waits for a running item, so the child's copy of memory holds no
 * half-done memmove and its locks are free; the child keeps the queue (its
 * memory holds the parent's bytes, and its syncs run the items). */
static void queue_prepare(void)
{
    pthread_mutex_lock(&run_lock);
    pthread_mutex_lock(&queue_lock);
}

static void queue_resume(void)
{
    pthread_mutex_unlock(&queue_lock);
    pthread_mutex_unlock(&run_lock);
}

__attribute__((constructor)) static void queue_init(void)
{
    pthread_atfork(queue_prepare, queue_resume, queue_resume);
}
