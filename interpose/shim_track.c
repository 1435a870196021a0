/* shim_track.c: what the shim remembers between calls. Pinned host ranges
 * (allocated or registered through CUDA, as the shim saw them) so that a
 * copy can be called pinned or pageable without asking the driver; and the
 * streams being captured into a graph. Readers are lock-free; writers hold
 * shim_lock(). The pinned ranges are a sorted array under a sequence lock:
 * a reader retries if a writer moved entries under it. */
#include <stdatomic.h>
#include <stdint.h>

#include "shim.h"

#define PIN_MAX 65536u  /* ranges remembered; more are not tracked */
#define PIN_RETRIES 64  /* reader gives up (no flag) after this many */

struct pin_range {
    _Atomic uint64_t start;
    _Atomic uint64_t len;
};

static struct pin_range pins[PIN_MAX];
static _Atomic uint32_t pin_n;
static _Atomic uint32_t pin_seq; /* odd while a writer moves entries */

/* First index whose start is > p. */
static uint32_t pin_upper(uint64_t p, uint32_t n)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (atomic_load_explicit(&pins[mid].start, memory_order_relaxed) <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void pin_write_begin(void)
{
    atomic_fetch_add_explicit(&pin_seq, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void pin_write_end(void) { atomic_fetch_add_explicit(&pin_seq, 1, memory_order_release); }

static void pin_move(uint32_t to, uint32_t from)
{
    atomic_store_explicit(&pins[to].start, atomic_load(&pins[from].start), memory_order_relaxed);
    atomic_store_explicit(&pins[to].len, atomic_load(&pins[from].len), memory_order_relaxed);
}

void shim_pinned_add(uint64_t p, uint64_t n)
{
    shim_lock();
    uint32_t cnt = atomic_load(&pin_n), i = pin_upper(p, cnt);

    pin_write_begin();
    if (i > 0 && atomic_load(&pins[i - 1].start) == p) {
        atomic_store_explicit(&pins[i - 1].len, n, memory_order_relaxed);
    } else if (cnt < PIN_MAX) {
        for (uint32_t j = cnt; j > i; j--)
            pin_move(j, j - 1);
        atomic_store_explicit(&pins[i].start, p, memory_order_relaxed);
        atomic_store_explicit(&pins[i].len, n, memory_order_relaxed);
        atomic_store_explicit(&pin_n, cnt + 1, memory_order_relaxed);
    }
    pin_write_end();
    shim_unlock();
}

uint64_t shim_pinned_del(uint64_t p)
{
    uint64_t len = 0;

    shim_lock();
    uint32_t cnt = atomic_load(&pin_n), i = pin_upper(p, cnt);

    if (i > 0 && atomic_load(&pins[i - 1].start) == p) {
        len = atomic_load(&pins[i - 1].len);
        pin_write_begin();
        for (uint32_t j = i - 1; j + 1 < cnt; j++)
            pin_move(j, j + 1);
        atomic_store_explicit(&pin_n, cnt - 1, memory_order_relaxed);
        pin_write_end();
    }
    shim_unlock();
    return len;
}

uint16_t shim_pinned_flag(uint64_t p)
{
    for (int tries = 0; tries < PIN_RETRIES; tries++) {
        uint32_t s0 = atomic_load_explicit(&pin_seq, memory_order_acquire);
        if (s0 & 1)
            continue;
        uint32_t cnt = atomic_load_explicit(&pin_n, memory_order_relaxed);
        uint32_t i = cnt ? pin_upper(p, cnt) : 0;
        int hit = i > 0 &&
                  p - atomic_load_explicit(&pins[i - 1].start, memory_order_relaxed) <
                      atomic_load_explicit(&pins[i - 1].len, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pin_seq, memory_order_relaxed) == s0)
            return hit ? CS_CF_PINNED : CS_CF_PAGEABLE;
    }
    return 0;
}

/* ---- streams being captured ---- */

#define CAP_SLOTS 64u

static _Atomic uint64_t cap_stream[CAP_SLOTS]; /* stream + 1, 0 = free */

void shim_capture_begin(uint64_t stream)
{
    shim_lock();
    for (uint32_t i = 0; i < CAP_SLOTS; i++) {
        if (atomic_load(&cap_stream[i]) == stream + 1)
            break;
        if (atomic_load(&cap_stream[i]) == 0) {
            atomic_store(&cap_stream[i], stream + 1);
            atomic_fetch_add(&shim_ncapturing_, 1);
            break;
        }
    }
    shim_unlock();
}

void shim_capture_end(uint64_t stream)
{
    shim_lock();
    for (uint32_t i = 0; i < CAP_SLOTS; i++) {
        if (atomic_load(&cap_stream[i]) == stream + 1) {
            atomic_store(&cap_stream[i], 0);
            atomic_fetch_sub(&shim_ncapturing_, 1);
            break;
        }
    }
    shim_unlock();
}

int shim_capture_has_slow(uint64_t stream)
{
    for (uint32_t i = 0; i < CAP_SLOTS; i++)
        if (atomic_load_explicit(&cap_stream[i], memory_order_relaxed) == stream + 1)
            return 1;
    return 0;
}
