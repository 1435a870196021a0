/* shim_stack.c: native stacks for slow CUDA calls (CUDASPY_STACK_US, off by
 * default). Owns the threshold, the unwinder, the table of stacks already
 * defined (by a hash of their instruction pointers) and the table of modules
 * (object path -> name id). Frames leave as (module name id, offset in
 * module) so the analyzer can symbolise offline; everything here is slow
 * path. libunwind is loaded with dlopen only when stacks are asked for, so
 * the shim has no link-time dependency that could keep it from loading
 * (and Debian's libunwind.a is not PIC); without it, glibc's backtrace(). */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"

typedef int (*unwind_fn)(void **ips, int n);
static unwind_fn unwind = backtrace;

#define STACK_MAX 1024u   /* distinct stacks per process */
#define STACK_FRAMES 32   /* frames kept per stack */
#define STACK_US_MAX 60000000ull /* CUDASPY_STACK_US at most (60 s) */
#define MOD_MAX 256u      /* distinct objects */

struct stack_ent {
    uint64_t hash;
    uint32_t n;
    uint32_t sent_gen;
    struct cs_frame f[STACK_FRAMES];
};

struct mod_ent {
    uint64_t base;
    uint32_t id;
};

static struct stack_ent stacks[STACK_MAX + 1]; /* index = local id, 0 unused */
static uint32_t nstacks;
static struct mod_ent mods[MOD_MAX];
static uint32_t nmods;
static uint32_t stack_gen = 1;

/* TSC ticks per microsecond, measured over ~2 ms. */
static uint64_t tsc_per_us(void)
{
    struct timespec d = {0, 2000000}, a, b;
    uint64_t t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &a);
    t0 = shim_ring_now();
    nanosleep(&d, NULL);
    t1 = shim_ring_now();
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)b.tv_nsec -
                  (uint64_t)a.tv_nsec;
    return ns ? (t1 - t0) * 1000 / ns : 1;
}

/* $CUDASPY_STACK_US: 0 (off, the default) to 60000000 us; anything else
 * gets one warning and stays off. */
static uint64_t stack_us(void)
{
    const char *v = getenv("CUDASPY_STACK_US");
    char *end;
    uint64_t us;
    int e = errno;

    if (v == NULL || *v == '\0')
        return 0;
    errno = 0;
    us = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || errno || us > STACK_US_MAX) {
        shim_log("warning: CUDASPY_STACK_US is not a number of microseconds from 0 to "
                 "60000000; stacks off");
        us = 0;
    }
    errno = e;
    return us;
}

/* libunwind's unw_backtrace if libunwind.so.8 is installed, else glibc's. */
static void unwind_init(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    shim_dlsym_fn real = __atomic_load_n(&shim_real_dlsym_, __ATOMIC_ACQUIRE);
    void *f = h && real ? real(h, "unw_backtrace") : NULL;
    void *warm[4];

    if (f)
        unwind = (unwind_fn)f;
    unwind(warm, 4); /* first use may load the unwinder's own helpers */
}

void shim_stack_init(void)
{
    uint64_t us = stack_us();
    int e = errno;

    if (us == 0)
        return;
    unwind_init();
    errno = e;
    shim_ring_now(); /* decides the clock */
    us *= shim_ring_clock() == CS_CLOCK_TSC ? tsc_per_us() : 1000;
    shim_stack_min_ = us ? us : 1;
}

void shim_stack_atfork_child(void) { stack_gen++; }

/* Module name id of the object at @p base (path @p path); under shim_lock(). */
static uint32_t mod_id(uint64_t base, const char *path)
{
    for (uint32_t i = 0; i < nmods; i++)
        if (mods[i].base == base)
            return mods[i].id;
    if (nmods == MOD_MAX)
        return 0;
    mods[nmods].base = base;
    mods[nmods].id = 0;
    shim_unlock(); /* interning takes the lock itself */
    uint32_t id = shim_name_intern_slow(path, strlen(path), base, CS_NAME_MODULE);
    shim_lock();
    mods[nmods++].id = id;
    return id;
}

static uint32_t frames_of(void *const *ip, int n, struct cs_frame *f)
{
    for (int i = 0; i < n; i++) {
        Dl_info di;
        memset(&f[i], 0, sizeof(f[i]));
        f[i].offset = (uint64_t)(uintptr_t)ip[i];
        if (dladdr(ip[i], &di) && di.dli_fname && di.dli_fbase) {
            f[i].offset -= (uint64_t)(uintptr_t)di.dli_fbase;
            shim_lock();
            f[i].module_id = mod_id((uint64_t)(uintptr_t)di.dli_fbase, di.dli_fname);
            shim_unlock();
            shim_name_touch(f[i].module_id);
        }
    }
    return (uint32_t)n;
}

static uint32_t capture(void)
{
    void *ip[STACK_FRAMES + 8];
    struct cs_frame f[STACK_FRAMES];
    int n = unwind(ip, STACK_FRAMES + 8), first = 0;
    uint64_t h = 1469598103934665603ull;
    uint32_t id = 0;

    while (first < n && shim_is_self(ip[first]))
        first++;
    n -= first;
    if (n > STACK_FRAMES)
        n = STACK_FRAMES;
    if (n <= 0)
        return 0;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)ip[first + i]) * 1099511628211ull;
    shim_lock();
    for (uint32_t i = 1; i <= nstacks && !id; i++)
        if (stacks[i].hash == h)
            id = i;
    shim_unlock();
    if (id && stacks[id].sent_gen == stack_gen)
        return id;
    uint32_t nf = frames_of(ip + first, n, f);
    shim_lock();
    if (!id && nstacks < STACK_MAX) {
        id = ++nstacks;
        stacks[id].hash = h;
        stacks[id].n = nf;
        memcpy(stacks[id].f, f, nf * sizeof(f[0]));
    }
    shim_unlock();
    if (id && shim_ring_push_stack(id, f, nf) == 0)
        stacks[id].sent_gen = stack_gen;
    return id;
}

/* errno kept: the wrappers do not save it (shim.h) */
uint32_t shim_stack_capture_slow(void)
{
    int err = errno;
    uint32_t id = capture();

    errno = err;
    return id;
}
