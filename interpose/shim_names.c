/* shim_names.c: kernel names, looked up once per handle and sent once per
 * process. Owns the handle -> name-id caches (lock-free reads, writes under
 * shim_lock()), the id -> string arena and the "sent in this process"
 * marks, which a fork child clears so that it defines its names again in its
 * own ring. Names come from the driver (cuFuncGetName, then cuKernelGetName:
 * runtimes and cuBLASLt pass CUkernel handles as CUfunction) or the runtime
 * (cudaFuncGetName for host stubs and cudaKernel_t), always through the real
 * functions, after the launch returned (the driver is initialised then).
 * A hit reads one cache line: the slot holds the id and whether this process
 * sent it. A runtime launch takes the name of the driver launch it made
 * (shim_driver.c kernel_name); only a runtime launch that reached no wrapped
 * driver launch looks its stub up here. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "shim.h"

#define NAME_PROBES 32u      /* linear probes before giving up */
#define NAME_MAX_IDS 262144u /* process-local string ids (kernels and modules); < 2^24 */
#define ARENA_CHUNK (1u << 20)

/* A slot's value: shim.h (SHIM_NAME_VAL_*). */

struct name_info {
    const char *s;
    uint32_t len;
    uint32_t kind;
    uint64_t handle;
    _Atomic uint32_t sent_gen; /* name_gen when last defined in our ring */
};

struct shim_name_cache shim_name_drv_; /* CUfunction / CUkernel -> id */
static struct shim_name_cache cache_rt;  /* host stub / cudaKernel_t -> id */
static struct name_info infos[NAME_MAX_IDS];
static uint32_t next_id;                 /* under shim_lock() */
#define name_epoch (shim_hot_.name_epoch) /* bumped on module/library unload */
#define name_gen (shim_hot_.name_gen)     /* bumped in a fork child */
static char *arena;
static size_t arena_left;

typedef int (*name_fn)(const char **, uint64_t);
static _Atomic(uintptr_t) fn_func_name, fn_kernel_name, fn_rt_name;

/* @return 1 and the slot's value in *v on a hit of the current epoch, 0 on a miss. */
static inline int cache_get(struct shim_name_cache *c, uint64_t h, uint64_t *v)
{
    uint32_t i = shim_name_slot_of(h);

    for (uint32_t n = 0; n < NAME_PROBES; n++, i = (i + 1) & (SHIM_NAME_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&c->slot[i].key, memory_order_acquire);
        if (k == h) {
            *v = atomic_load_explicit(&c->slot[i].val, memory_order_acquire);
            return shim_name_val_current(*v);
        }
        if (k == 0)
            return 0;
    }
    return 0;
}

/* Cache @p id for @p h, as sent in this process if it is. */
static void cache_put(struct shim_name_cache *c, uint64_t h, uint32_t id)
{
    uint32_t i = shim_name_slot_of(h), sent = id ? atomic_load(&infos[id].sent_gen) : 0;
    uint64_t v = SHIM_NAME_VAL(atomic_load(&name_epoch), sent, id);

    shim_lock();
    for (uint32_t n = 0; n < NAME_PROBES; n++, i = (i + 1) & (SHIM_NAME_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&c->slot[i].key, memory_order_relaxed);
        if (k == h || k == 0) {
            atomic_store_explicit(&c->slot[i].val, v, memory_order_release);
            atomic_store_explicit(&c->slot[i].key, h, memory_order_release);
            break;
        }
    }
    shim_unlock();
}

static void name_send(uint32_t id)
{
    struct name_info *in = &infos[id];
    uint32_t gen = atomic_load(&name_gen);

    if (shim_ring_push_name(id, in->handle, in->kind, in->s, in->len) == 0)
        atomic_store(&in->sent_gen, gen);
}

/* A hit on a name this process has not defined (a fork child): define it
 * unless the other cache did, and mark the slot. */
static void name_resend_slow(struct shim_name_cache *c, uint64_t h, uint32_t id) SHIM_COLD;
static void name_resend_slow(struct shim_name_cache *c, uint64_t h, uint32_t id)
{
    if (atomic_load(&infos[id].sent_gen) != atomic_load(&name_gen))
        name_send(id);
    cache_put(c, h, id);
}

static char *arena_copy(const char *s, size_t len)
{
    char *p;

    if (len + 1 > arena_left) {
        size_t n = len + 1 > ARENA_CHUNK ? len + 1 : ARENA_CHUNK;
        void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        arena = m;
        arena_left = n;
    }
    p = arena;
    memcpy(p, s, len);
    p[len] = '\0';
    arena += len + 1;
    arena_left -= len + 1;
    return p;
}

uint32_t shim_name_intern_slow(const char *s, size_t len, uint64_t handle, uint32_t kind)
{
    uint32_t id = 0;
    char *copy;

    shim_lock();
    if (next_id + 1 < NAME_MAX_IDS && (copy = arena_copy(s, len)) != NULL) {
        id = ++next_id;
        infos[id].s = copy;
        infos[id].len = (uint32_t)len;
        infos[id].kind = kind;
        infos[id].handle = handle;
    }
    shim_unlock();
    if (id)
        name_send(id);
    return id;
}

/* The name function @p sym from the object that holds @p near (the real
 * driver or runtime), else from RTLD_NEXT. */
static void *find_near(const void *near, const char *sym, int runtime)
{
    Dl_info di;
    void *h, *p = NULL;
    shim_dlsym_fn real = __atomic_load_n(&shim_real_dlsym_, __ATOMIC_ACQUIRE);

    if (real && near && dladdr(near, &di) && di.dli_fname &&
        (h = dlopen(di.dli_fname, RTLD_NOLOAD | RTLD_LAZY)) != NULL) {
        p = real(h, sym);
        dlclose(h);
    }
    if (p == NULL)
        p = runtime ? shim_find_runtime_slow(sym) : shim_find_driver_slow(sym);
    return p;
}

static name_fn name_fn_get(_Atomic(uintptr_t) *slot, const void *near, const char *sym,
                           int runtime)
{
    uintptr_t f = atomic_load(slot);

    if (f == 0) {
        f = (uintptr_t)find_near(near, sym, runtime);
        if (f == 0)
            f = 1; /* looked for, absent */
        atomic_store(slot, f);
    }
    return f > 1 ? (name_fn)f : NULL;
}

static uint32_t lookup_slow(struct shim_name_cache *c, uint64_t h, const void *near, int runtime)
    SHIM_COLD;
static uint32_t lookup_slow(struct shim_name_cache *c, uint64_t h, const void *near, int runtime)
{
    const char *name = NULL;
    name_fn f;
    uint32_t id = 0;
    int err = errno;

    if (runtime) {
        f = name_fn_get(&fn_rt_name, near, "cudaFuncGetName", 1);
        if (f && f(&name, h) != 0)
            name = NULL;
    } else {
        f = name_fn_get(&fn_func_name, near, "cuFuncGetName", 0);
        if (f && f(&name, h) != 0)
            name = NULL;
        f = name ? NULL : name_fn_get(&fn_kernel_name, near, "cuKernelGetName", 0);
        if (f && f(&name, h) != 0)
            name = NULL;
    }
    if (name)
        id = shim_name_intern_slow(name, strlen(name), h, CS_NAME_KERNEL);
    cache_put(c, h, id);
    errno = err;
    return id;
}

static inline uint32_t name_get(struct shim_name_cache *c, uint64_t h, const void *near,
                                int runtime)
{
    uint64_t v;
    uint32_t id;

    if (SHIM_UNLIKELY(!cache_get(c, h, &v)))
        return lookup_slow(c, h, near, runtime);
    id = SHIM_NAME_VAL_ID(v);
    if (id && SHIM_UNLIKELY(!shim_name_val_sent(v)))
        name_resend_slow(c, h, id);
    return id;
}

uint32_t shim_name_driver_slow(uint64_t f, const void *real_launch)
{
    return name_get(&shim_name_drv_, f, real_launch, 0);
}

uint32_t shim_name_runtime(uint64_t stub, const void *real_launch)
{
    return name_get(&cache_rt, stub, real_launch, 1);
}

void shim_name_touch(uint32_t id)
{
    if (id && id < NAME_MAX_IDS && atomic_load(&infos[id].sent_gen) != atomic_load(&name_gen))
        name_send(id);
}

void shim_name_define(uint32_t id)
{
    if (id && id < NAME_MAX_IDS && infos[id].s != NULL)
        name_send(id);
}

void shim_name_invalidate(void) { atomic_fetch_add(&name_epoch, 1); }

void shim_names_atfork_child(void) { atomic_fetch_add(&name_gen, 1); }
