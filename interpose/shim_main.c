/* shim_main.c: libcudaspy.so's process lifecycle. The constructor finds the
 * real dlsym, reads the switches (CUDASPY_DISABLE, inert inside the sampler),
 * registers the fork hooks and, in the first traced process of a tree,
 * starts the collector (shim_start.c). Also owns the shim's one slow-path
 * mutex and its stderr line. Everything CUDA-related stays lazy. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

static pthread_mutex_t shim_mu = PTHREAD_MUTEX_INITIALIZER;

uint32_t shim_pid_slow(void)
{
    shim_pid_ = (uint32_t)getpid();
    return shim_pid_;
}

void shim_lock(void) { pthread_mutex_lock(&shim_mu); }
void shim_unlock(void) { pthread_mutex_unlock(&shim_mu); }

/* Decimal of @p v into @p p; returns the end. */
static char *put_u32(char *p, uint32_t v)
{
    char tmp[10];
    int n = 0;

    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = tmp[--n];
    return p;
}

void shim_log(const char *msg)
{
    char line[320], *p = line;
    size_t n = strlen(msg);
    int err = errno;

    if (n > sizeof(line) - 32)
        n = sizeof(line) - 32;
    memcpy(p, "cudaspy[", 8);
    p = put_u32(p + 8, (uint32_t)getpid());
    memcpy(p, "]: ", 3);
    memcpy(p + 3, msg, n);
    p += 3 + n;
    *p++ = '\n';
    if (write(2, line, (size_t)(p - line)) < 0) {
        /* nothing else to tell */
    }
    errno = err;
}

static int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* Set to "0": a switch that is on unless turned off. */
static int env_is_zero(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "0") == 0;
}

/* The shim does nothing inside cudaspy-sampler itself (it may inherit
 * LD_PRELOAD from the program that started it). */
static int in_sampler(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    const char *base;

    if (env_on("CUDASPY_INERT"))
        return 1;
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return strcmp(base, "cudaspy-sampler") == 0;
}

static void atfork_prepare(void) { shim_lock(); }
static void atfork_parent(void) { shim_unlock(); }

/* The child is single-threaded and its one thread holds the mutex (taken
 * by atfork_prepare): release it, learn the pid, and forget what it sent
 * through its parent's ring (the ring client resets the ring, tid and
 * socket itself), and a driver record its thread kept, which is the
 * parent's to push. Re-initialising a held mutex instead left TSan counting
 * it as held, and the child's first lock a double lock. */
static void atfork_child(void)
{
    shim_unlock();
    shim_t_.held_of = 0;
    shim_pid_ = (uint32_t)getpid();
    shim_names_atfork_child();
    shim_stack_atfork_child();
    shim_gpu_atfork_child();
    shim_nvtx_atfork_child();
    shim_capture_atfork_child();
}

__attribute__((constructor)) static void shim_init(void)
{
    int err = errno;

    shim_pid_ = (uint32_t)getpid();
    shim_dlsym_init_slow();
    shim_capture_init();
    if (env_on("CUDASPY_DISABLE") || in_sampler() || shim_gpu_init() < 0 ||
        shim_nvtx_init(shim_gpu_preloaded()) < 0) {
        atomic_store(&shim_off_, 1);
        shim_cap_mode_ = CS_CAPTURE_NONE;
        errno = err;
        return;
    }
    shim_stack_init();
    shim_hot_.fold = !env_is_zero("CUDASPY_FOLD");
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    if (getenv(CS_ENV_SOCK) == NULL)
        shim_start_collector();
    errno = err;
}

#ifdef CS_SHIM_SELFTIME
/* per API: calls, cycles before the real call, after it, and in the push */
static _Atomic uint64_t st_n[CS_API_COUNT], st_pre[CS_API_COUNT], st_post[CS_API_COUNT],
    st_push[CS_API_COUNT], st_hist[40];

void shim_st_add(unsigned api, uint64_t pre, uint64_t post)
{
    uint64_t c = pre + post;
    unsigned b = c ? 63u - (unsigned)__builtin_clzll(c) : 0;

    api = api < CS_API_COUNT ? api : 0;
    atomic_fetch_add_explicit(&st_n[api], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st_pre[api], pre, memory_order_relaxed);
    atomic_fetch_add_explicit(&st_post[api], post, memory_order_relaxed);
    atomic_fetch_add_explicit(&st_hist[b < 40 ? b : 39], 1, memory_order_relaxed);
}

void shim_st_push(unsigned api, uint64_t push)
{
    atomic_fetch_add_explicit(&st_push[api < CS_API_COUNT ? api : 0], push, memory_order_relaxed);
}

/* Diagnostic build: the process's total, how the calls spread over powers
 * of two of cycles ("2^8:n" = n calls of 256-511 cycles), then one line per
 * API: calls, cycles per call before / after the real call / in the push. */
__attribute__((destructor)) static void shim_st_report(void)
{
    uint64_t n = 0, c = 0;
    char msg[1024];
    int l;

    for (unsigned a = 0; a < CS_API_COUNT; a++) {
        n += atomic_load(&st_n[a]);
        c += atomic_load(&st_pre[a]) + atomic_load(&st_post[a]);
    }
    if (n == 0)
        return;
    l = snprintf(msg, sizeof(msg), "selftime: %llu recorded calls, %llu TSC cycles in the shim (%.1f "
                 "per call); by power of two:", (unsigned long long)n, (unsigned long long)c,
                 (double)c / (double)n);
    for (unsigned b = 0; b < 40 && l > 0 && (size_t)l < sizeof(msg); b++)
        if (atomic_load(&st_hist[b]))
            l += snprintf(msg + l, sizeof(msg) - (size_t)l, " 2^%u:%llu", b,
                          (unsigned long long)atomic_load(&st_hist[b]));
    shim_log(msg);
    for (unsigned a = 0; a < CS_API_COUNT; a++) {
        double k = (double)atomic_load(&st_n[a]);
        if (k == 0)
            continue;
        snprintf(msg, sizeof(msg), "selftime: %s: %.0f calls, per call %.1f before, %.1f after "
                 "(push %.1f) cycles", cs_api_table[a].name, k, (double)atomic_load(&st_pre[a]) / k,
                 (double)atomic_load(&st_post[a]) / k, (double)atomic_load(&st_push[a]) / k);
        shim_log(msg);
    }
}
#endif
