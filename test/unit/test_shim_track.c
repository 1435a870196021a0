/* test_shim_track.c: unit tests of interpose/shim_track.c, the pinned-range
 * table (sorted array under a sequence lock) and the capturing-stream set.
 * The file is compiled in directly; shim_lock() is a plain mutex here. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "shim.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
void shim_lock(void) { pthread_mutex_lock(&mu); }
void shim_unlock(void) { pthread_mutex_unlock(&mu); }

/* The per-thread state (shim_ring.c's): the thread id cache shim_capture_key needs. */
__thread struct shim_thread shim_t_;
struct shim_hot shim_hot_; /* shim_ring.c's, which this test does not link */
static _Atomic uint32_t next_tid = 100;
uint32_t shim_ring_tid_slow(void) { return shim_t_.tid = atomic_fetch_add(&next_tid, 1); }

static int test_pinned_inside_and_edges(void)
{
    shim_pinned_add(0x10000, 0x1000);
    CHECK_EQ(shim_pinned_flag(0x10000), CS_CF_PINNED);
    CHECK_EQ(shim_pinned_flag(0x10fff), CS_CF_PINNED);
    CHECK_EQ(shim_pinned_flag(0x11000), CS_CF_PAGEABLE);
    CHECK_EQ(shim_pinned_flag(0xffff), CS_CF_PAGEABLE);
    CHECK_EQ(shim_pinned_del(0x10000), 0x1000);
    CHECK_EQ(shim_pinned_flag(0x10000), CS_CF_PAGEABLE);
    return 0;
}

static int test_pinned_many_ranges_any_order(void)
{
    for (uint64_t i = 0; i < 1000; i++)
        shim_pinned_add(0x100000 + ((i * 7919) % 1000) * 0x2000, 0x1000);
    for (uint64_t i = 0; i < 1000; i++) {
        CHECK_EQ(shim_pinned_flag(0x100000 + i * 0x2000 + 0x800), CS_CF_PINNED);
        CHECK_EQ(shim_pinned_flag(0x100000 + i * 0x2000 + 0x1800), CS_CF_PAGEABLE);
    }
    for (uint64_t i = 0; i < 1000; i++)
        CHECK_EQ(shim_pinned_del(0x100000 + i * 0x2000), 0x1000);
    CHECK_EQ(shim_pinned_flag(0x100000), CS_CF_PAGEABLE);
    return 0;
}

static int test_pinned_add_same_start_replaces(void)
{
    shim_pinned_add(0x50000, 0x100);
    shim_pinned_add(0x50000, 0x4000);
    CHECK_EQ(shim_pinned_flag(0x53000), CS_CF_PINNED);
    CHECK_EQ(shim_pinned_del(0x50000), 0x4000);
    CHECK_EQ(shim_pinned_del(0x50000), 0);
    return 0;
}

static int test_pinned_del_unknown_is_zero(void)
{
    CHECK_EQ(shim_pinned_del(0xdead000), 0);
    return 0;
}

/* A writer keeps inserting and removing ranges around a fixed one; readers
 * must always see the fixed range pinned and never a torn answer. */
static _Atomic int stop;
static _Atomic uint64_t wrong;

static void *reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        if (shim_pinned_flag(0x800000 + 0x10) == CS_CF_PAGEABLE)
            atomic_fetch_add(&wrong, 1);
    return NULL;
}

static int test_pinned_readers_during_writes(void)
{
    pthread_t r[2];

    shim_pinned_add(0x800000, 0x100);
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    for (uint64_t i = 0; i < 20000; i++) {
        shim_pinned_add(0x400000 + (i % 64) * 0x1000, 0x800);
        if (i % 3 == 0)
            shim_pinned_del(0x400000 + ((i / 3) % 64) * 0x1000);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    CHECK_EQ(atomic_load(&wrong), 0);
    return 0;
}

static int test_capture_begin_end(void)
{
    struct cs_rec_cuda r = {.stream = 0x1234};

    shim_rec_capture(&r);
    CHECK_EQ(r.flags & CS_CF_CAPTURING, 0);
    shim_capture_begin(0x1234);
    shim_rec_capture(&r);
    CHECK_EQ(r.flags & CS_CF_CAPTURING, CS_CF_CAPTURING);
    r.flags = 0;
    r.stream = 0x5678;
    shim_rec_capture(&r);
    CHECK_EQ(r.flags & CS_CF_CAPTURING, 0);
    shim_capture_end(0x1234);
    r.stream = 0x1234;
    shim_rec_capture(&r);
    CHECK_EQ(r.flags & CS_CF_CAPTURING, 0);
    CHECK_EQ(atomic_load(&shim_ncapturing_), 0);
    return 0;
}

static int test_capture_legacy_stream_zero(void)
{
    struct cs_rec_cuda r = {.stream = 0};

    shim_capture_begin(0);
    shim_rec_capture(&r);
    CHECK_EQ(r.flags & CS_CF_CAPTURING, CS_CF_CAPTURING);
    shim_capture_end(0);
    CHECK_EQ(atomic_load(&shim_ncapturing_), 0);
    return 0;
}

static void *capture_other_thread(void *arg)
{
    struct cs_rec_cuda r = {.stream = CS_STREAM_PER_THREAD};

    shim_rec_capture(&r);
    *(int *)arg = (r.flags & CS_CF_CAPTURING) != 0;
    return NULL;
}

/* Capturing this thread's default stream says nothing about another's. */
static int test_capture_per_thread_stream_is_per_thread(void)
{
    struct cs_rec_cuda r = {.stream = CS_STREAM_PER_THREAD};
    pthread_t t;
    int other = -1;

    shim_capture_begin(shim_capture_key(CS_STREAM_PER_THREAD));
    shim_rec_capture(&r);
    CHECK_EQ(r.flags & CS_CF_CAPTURING, CS_CF_CAPTURING);
    pthread_create(&t, NULL, capture_other_thread, &other);
    pthread_join(t, NULL);
    CHECK_EQ(other, 0);
    shim_capture_end(shim_capture_key(CS_STREAM_PER_THREAD));
    CHECK_EQ(atomic_load(&shim_ncapturing_), 0);
    return 0;
}

int main(void)
{
    RUN(test_pinned_inside_and_edges);
    RUN(test_pinned_many_ranges_any_order);
    RUN(test_pinned_add_same_start_replaces);
    RUN(test_pinned_del_unknown_is_zero);
    RUN(test_pinned_readers_during_writes);
    RUN(test_capture_begin_end);
    RUN(test_capture_legacy_stream_zero);
    RUN(test_capture_per_thread_stream_is_per_thread);
    return check_status();
}
