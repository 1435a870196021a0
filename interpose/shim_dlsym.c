/* shim_dlsym.c: the gateways through which programs and libraries reach the
 * driver without binding to its exports: dlsym() for cu* names, and
 * cuGetProcAddress / cuGetProcAddress_v2 (what libcudart, static or shared,
 * uses for every driver function). Each returned pointer is swapped for the
 * wrapper of its exact exported name (dladdr), or passed through unchanged
 * when it is not a traced function. Also finds real functions for the
 * exported wrappers. The wrappers themselves are shim_driver.c's. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "shim.h"

#define SHIM_CUDA_ERROR_NOT_FOUND 500

shim_dlsym_fn shim_real_dlsym_;

/* ---- the real dlsym ---- */

/* ASan and TSan resolve their interceptors with dlsym(RTLD_NEXT, ...) from
 * their initialisers, before their shadow memory exists, and that reaches
 * our dlsym. So dlsym and what it calls first carry no sanitizer
 * instrumentation, else a sanitized shim kills every program at start. */
#define DLSYM_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

DLSYM_NO_SANITIZE shim_dlsym_fn shim_dlsym_init_slow(void)
{
    static const char *const vers[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    void *p = NULL;

    for (size_t i = 0; p == NULL && i < sizeof(vers) / sizeof(vers[0]); i++)
        p = dlvsym(RTLD_NEXT, "dlsym", vers[i]);
    if (p == NULL)
        return NULL;
    __atomic_store_n(&shim_real_dlsym_, (shim_dlsym_fn)p, __ATOMIC_RELEASE);
    return (shim_dlsym_fn)p;
}

static inline shim_dlsym_fn real_dlsym(void)
{
    shim_dlsym_fn f = __atomic_load_n(&shim_real_dlsym_, __ATOMIC_ACQUIRE);
    return SHIM_LIKELY(f != NULL) ? f : shim_dlsym_init_slow();
}

int shim_is_self(const void *p)
{
    static void *self_base;
    Dl_info di, me;

    if (self_base == NULL && dladdr((void *)shim_is_self, &me))
        self_base = me.dli_fbase;
    return dladdr(p, &di) && di.dli_fbase == self_base;
}

/* ---- cuGetProcAddress gateways ---- */

enum { GPA_V1, GPA_V2, GPA_N };
static const char *const gpa_names[GPA_N] = {"cuGetProcAddress", "cuGetProcAddress_v2"};
static _Atomic(uintptr_t) gpa_real[GPA_N];

typedef int (*gpa_v1_fn)(const char *, void **, int, uint64_t);
typedef int (*gpa_v2_fn)(const char *, void **, int, uint64_t, void *);

SHIM_EXPORT int shim_gpa_v1(const char *sym, void **pfn, int ver, uint64_t flags)
    __asm__("cuGetProcAddress");
SHIM_EXPORT int shim_gpa_v2(const char *sym, void **pfn, int ver, uint64_t flags, void *status)
    __asm__("cuGetProcAddress_v2");

static void *const gpa_wrappers[GPA_N] = {(void *)shim_gpa_v1, (void *)shim_gpa_v2};

static void *gpa_bind(int i, void *real)
{
    uintptr_t expect = 0;

    if (atomic_compare_exchange_strong(&gpa_real[i], &expect, (uintptr_t)real) ||
        expect == (uintptr_t)real)
        return gpa_wrappers[i];
    return real;
}

void *shim_wrap_slow(void *p)
{
    Dl_info di;
    int i;

    if (p == NULL || !dladdr(p, &di) || di.dli_sname == NULL || di.dli_saddr != p ||
        shim_is_self(p))
        return p;
    for (i = 0; i < GPA_N; i++)
        if (strcmp(di.dli_sname, gpa_names[i]) == 0)
            return gpa_bind(i, p);
    i = shim_driver_index(di.dli_sname);
    if (i < 0)
        return p;
    void *w = shim_driver_bind(i, p);
    return w ? w : p;
}

static void *gpa_real_slow(int i) SHIM_COLD;
static void *gpa_real_slow(int i)
{
    void *p = shim_find_driver_slow(gpa_names[i]);

    if (p)
        gpa_bind(i, p);
    return (void *)atomic_load(&gpa_real[i]);
}

static inline void *gpa_get(int i)
{
    void *p = (void *)atomic_load_explicit(&gpa_real[i], memory_order_acquire);
    return SHIM_LIKELY(p != NULL) ? p : gpa_real_slow(i);
}

/* A runtime asks the driver for its functions through cuGetProcAddress. When
 * the asking object is not a shared libcudart (a static runtime in the
 * executable, cuBLAS's own copy), the process runs CUDA code whose runtime
 * calls the shim cannot see: mark its records CS_CF_STATIC_RT. */
static void gpa_note_caller(const void *caller)
{
    Dl_info di;
    const char *base;

    if (shim_static_rt_ || caller == NULL || !dladdr(caller, &di) || di.dli_fname == NULL ||
        shim_is_self(caller))
        return;
    base = strrchr(di.dli_fname, '/');
    base = base ? base + 1 : di.dli_fname;
    if (strncmp(base, "libcudart.so", 12) != 0 && strncmp(base, "libcuda.so", 10) != 0)
        __atomic_store_n(&shim_static_rt_, CS_CF_STATIC_RT, __ATOMIC_RELAXED);
}

/* After a successful lookup: hand back our wrapper for the exact function. */
static void gpa_wrap_result(int rc, void **pfn, const void *caller)
{
    int err = errno;

    if (rc == 0 && pfn && *pfn && !atomic_load_explicit(&shim_off_, memory_order_relaxed)) {
        *pfn = shim_wrap_slow(*pfn);
        gpa_note_caller(caller);
    }
    errno = err;
}

int shim_gpa_v1(const char *sym, void **pfn, int ver, uint64_t flags)
{
    gpa_v1_fn real = (gpa_v1_fn)gpa_get(GPA_V1);
    int rc;

    if (real == NULL)
        return SHIM_CUDA_ERROR_NOT_FOUND;
    rc = real(sym, pfn, ver, flags);
    gpa_wrap_result(rc, pfn, __builtin_return_address(0));
    return rc;
}

int shim_gpa_v2(const char *sym, void **pfn, int ver, uint64_t flags, void *status)
{
    gpa_v2_fn real = (gpa_v2_fn)gpa_get(GPA_V2);
    int rc;

    if (real == NULL)
        return SHIM_CUDA_ERROR_NOT_FOUND;
    rc = real(sym, pfn, ver, flags, status);
    gpa_wrap_result(rc, pfn, __builtin_return_address(0));
    return rc;
}

/* ---- dlsym ---- */

static void *dlsym_cu(shim_dlsym_fn real, void *handle, const char *name)
    __attribute__((noinline));
static void *dlsym_cu(shim_dlsym_fn real, void *handle, const char *name)
{
    void *p = real(handle, name);
    int err = errno;

    p = shim_wrap_slow(p);
    errno = err;
    return p;
}

/* Only lookups of driver names (cu + capital: cuLaunchKernel, not
 * cudaMalloc) in an object handle are wrapped. Everything else is a tail
 * call, because glibc resolves RTLD_NEXT and RTLD_DEFAULT from the return
 * address: called from here, "next" would start after the shim and
 * "default" would lose the caller's local scope. RTLD_DEFAULT needs no
 * wrapping anyway: the preloaded shim's own exports come first. */
SHIM_EXPORT DLSYM_NO_SANITIZE void *dlsym(void *handle, const char *name)
{
    shim_dlsym_fn real = __atomic_load_n(&shim_real_dlsym_, __ATOMIC_ACQUIRE);

    if (SHIM_UNLIKELY(real == NULL))
        real = shim_dlsym_init_slow();
    if (handle != RTLD_NEXT && handle != RTLD_DEFAULT && name[0] == 'c' && name[1] == 'u' &&
        name[2] >= 'A' && name[2] <= 'Z' &&
        !atomic_load_explicit(&shim_off_, memory_order_relaxed))
        return dlsym_cu(real, handle, name);
    SHIM_MUSTTAIL return real(handle, name);
}

/* ---- real functions for the exported wrappers ---- */

void *shim_find_driver_slow(const char *name)
{
    shim_dlsym_fn real = real_dlsym();
    void *p, *h;
    int err = errno;

    if (real == NULL)
        return NULL;
    p = real(RTLD_NEXT, name);
    if (p == NULL || shim_is_self(p)) {
        p = NULL;
        h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
        if (h) {
            p = real(h, name);
            dlclose(h);
        }
    }
    errno = err;
    return p;
}

struct cudart_find {
    char path[512];
};

static int cudart_visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct cudart_find *f = arg;
    const char *base = strrchr(info->dlpi_name, '/');

    (void)size;
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, "libcudart.so", 12) != 0 || strlen(info->dlpi_name) >= sizeof(f->path))
        return 0;
    strcpy(f->path, info->dlpi_name);
    return 1;
}

void *shim_find_runtime_slow(const char *name)
{
    shim_dlsym_fn real = real_dlsym();
    struct cudart_find f = {{0}};
    void *p = NULL, *h;
    int err = errno;

    if (real == NULL)
        return NULL;
    p = real(RTLD_NEXT, name);
    if (p == NULL && dl_iterate_phdr(cudart_visit, &f) == 1) {
        h = dlopen(f.path, RTLD_NOLOAD | RTLD_LAZY);
        if (h) {
            p = real(h, name);
            dlclose(h);
        }
    }
    if (p && shim_is_self(p))
        p = NULL;
    errno = err;
    return p;
}
