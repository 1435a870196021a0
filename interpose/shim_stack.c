/* shim_stack.c: the stacks CUDA calls carry: native ones for slow calls
 * (CUDASPY_STACK_US, off by default) and Python ones (shim_python.c walks
 * them; shim.h says which calls get one). Owns the thresholds, the
 * unwinder, the table of stacks already defined (found by a hash of their
 * instruction pointers and (code object, instruction) pairs, so a hot call
 * site costs a lookup, not a string) and the table of modules (object path
 * -> name id). Native frames leave as (module name id, offset in module)
 * so the analyzer can symbolise offline; everything here is slow path.
 * libunwind is loaded with dlopen only when native stacks are asked for, so
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

#define STACK_MAX 4096u   /* distinct stacks per process */
#define STACK_NATIVE 32   /* native frames kept per stack */
#define STACK_FRAMES (STACK_NATIVE + SHIM_PY_FRAMES) /* frames kept per stack */
#define INDEX_SLOTS 8192u /* hash -> stack id, at most half full */
#define STACK_US_MAX 60000000ull /* CUDASPY_STACK_US at most (60 s) */
#define MOD_MAX 256u      /* distinct objects */

struct stack_ent {
    uint64_t hash;
    uint32_t n;
    _Atomic uint32_t sent_gen; /* stack_gen it was last sent in (read without the lock) */
    struct cs_frame f[STACK_FRAMES];
};

struct mod_ent {
    uint64_t base;
    uint32_t id;
};

static struct stack_ent stacks[STACK_MAX + 1]; /* index = local id, 0 unused */
static uint16_t stack_index[INDEX_SLOTS];       /* by hash; 0 = empty */
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

/* Python stacks also go to calls of CUDASPY_STACK_US or more, by default
 * PY_SLOW_US. */
#define PY_SLOW_US 1000u

void shim_stack_init(void)
{
    uint64_t us = stack_us(), per_us;
    int e = errno;

    shim_python_init();
    shim_ring_set_py(shim_py_publish, shim_py_tstate);
    if (us == 0 && !(shim_stacks_ & SHIM_STK_PYTHON))
        return;
    if (us)
        unwind_init();
    errno = e;
    shim_ring_now(); /* decides the clock */
    per_us = shim_ring_clock() == CS_CLOCK_TSC ? tsc_per_us() : 1000;
    shim_py_min_ = (us ? us : PY_SLOW_US) * per_us;
    if (us) {
        shim_stack_min_ = us * per_us;
        atomic_fetch_or(&shim_stacks_, SHIM_STK_NATIVE);
    }
    errno = e;
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

/* Native frames of @p ip as (module, offset), up to the first in the
 * object at @p stop (the interpreter, where the Python frames take over;
 * 0 = all). @return frames kept. */
static uint32_t frames_of(void *const *ip, int n, uintptr_t stop, struct cs_frame *f)
{
    uint32_t k = 0;

    for (int i = 0; i < n; i++) {
        Dl_info di;
        memset(&f[k], 0, sizeof(f[k]));
        f[k].offset = (uint64_t)(uintptr_t)ip[i];
        if (dladdr(ip[i], &di) && di.dli_fname && di.dli_fbase) {
            if (stop && (uintptr_t)di.dli_fbase == stop)
                break;
            f[k].offset -= (uint64_t)(uintptr_t)di.dli_fbase;
            shim_lock();
            f[k].module_id = mod_id((uint64_t)(uintptr_t)di.dli_fbase, di.dli_fname);
            shim_unlock();
        }
        k++;
    }
    return k;
}

/* Slot of hash @p h in the index: its stack's, or the empty one where it
 * goes; under shim_lock(). */
static uint32_t index_slot(uint64_t h)
{
    uint32_t i = (uint32_t)h & (INDEX_SLOTS - 1);

    while (stack_index[i] != 0 && stacks[stack_index[i]].hash != h)
        i = (i + 1) & (INDEX_SLOTS - 1);
    return i;
}

/* Define name @p id before a stack that uses it, once per stack (@p done:
 * the ids defined so far, @p n of them). */
static void define_once(uint32_t id, uint32_t *done, uint32_t *n)
{
    for (uint32_t i = 0; i < *n; i++)
        if (done[i] == id)
            return;
    done[(*n)++] = id;
    shim_name_define(id);
}

/* Send stack @p id, its names first in the same ring: another thread may
 * have interned them into its own ring, which the collector may drain
 * after this one (cli.python_stress caught files named ""). */
static void send_stack(uint32_t id)
{
    struct stack_ent *s = &stacks[id];
    uint32_t done[2 * STACK_FRAMES], n = 0;

    for (uint32_t i = 0; i < s->n; i++) {
        define_once(s->f[i].module_id, done, &n);
        if (s->f[i].flags & CS_FRAME_PYTHON)
            define_once(CS_FRAME_PY_FUNC(&s->f[i]), done, &n);
    }
    if (shim_ring_push_stack(id, s->f, s->n) == 0)
        atomic_store_explicit(&s->sent_gen, stack_gen, memory_order_relaxed);
}

/* The frames of a stack not seen before: native ones below the interpreter
 * when there are Python frames, then those. */
static uint32_t resolve(void *const *ip, int n, const struct shim_py_raw *pr, int np,
                        struct cs_frame *f)
{
    uint32_t k = n > 0 ? frames_of(ip, n, np > 0 ? shim_py_base() : 0, f) : 0;

    for (int i = 0; i < np && k < STACK_FRAMES; i++)
        shim_py_frame(&pr[i], &f[k++]);
    return k;
}

static uint32_t capture(unsigned want)
{
    void *ip[STACK_NATIVE + 8];
    struct shim_py_raw pr[SHIM_PY_FRAMES];
    struct cs_frame f[STACK_FRAMES];
    int n = 0, first = 0, np = 0;
    uint64_t h = 1469598103934665603ull;
    uint32_t id = 0, slot, nf;

    if (want & SHIM_STK_NATIVE) {
        n = unwind(ip, STACK_NATIVE + 8);
        while (first < n && shim_is_self(ip[first]))
            first++;
        n = n - first > STACK_NATIVE ? STACK_NATIVE : n - first;
    }
    if (want & SHIM_STK_PYTHON)
        np = shim_py_walk(pr, SHIM_PY_FRAMES);
    if (n <= 0 && np <= 0)
        return 0;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)ip[first + i]) * 1099511628211ull;
    for (int i = 0; i < np; i++)
        h = ((h ^ pr[i].code) * 1099511628211ull ^ (uint64_t)pr[i].instr) * 1099511628211ull;
    h |= 1; /* 0 = empty */
    shim_lock();
    id = stack_index[index_slot(h)];
    shim_unlock();
    if (id && atomic_load_explicit(&stacks[id].sent_gen, memory_order_relaxed) == stack_gen)
        return id;
    if (id) {
        send_stack(id);
        return id;
    }
    nf = resolve(ip + first, n, pr, np, f);
    shim_lock();
    slot = index_slot(h);
    if (stack_index[slot] == 0 && nstacks < STACK_MAX && nf > 0) {
        id = ++nstacks;
        stacks[id].hash = h;
        stacks[id].n = nf;
        memcpy(stacks[id].f, f, nf * sizeof(f[0]));
        stack_index[slot] = (uint16_t)id;
    } else {
        id = stack_index[slot];
    }
    shim_unlock();
    if (id && atomic_load_explicit(&stacks[id].sent_gen, memory_order_relaxed) != stack_gen)
        send_stack(id);
    return id;
}

/* errno kept: the wrappers do not save it (shim.h) */
uint32_t shim_stack_capture_slow(unsigned want)
{
    int err = errno;
    uint32_t id = capture(want);

    errno = err;
    return id;
}
