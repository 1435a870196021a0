/* fake_core.c: the fake driver's configuration (FAKECUDA_* environment),
 * per-export call counters, latency and failure injection, tallies for the
 * expectation file, and the init/device/context/error-string exports.
 * Memory is fake_mem.c's, streams fake_stream.c's, kernels fake_launch.c's. */
#include "fake_driver.h"
#include "fakecuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const fake_export_names[FAKE_N_EXPORTS] = {
#define P(base, ver, exp, sfx) #exp,
#include "fake_procs.def"
#undef P
};

struct fake_cfg fake_cfg;
_Atomic uint64_t fake_calls[FAKE_N_EXPORTS];

/* Per-export injected latency and failure, from FAKECUDA_LAT_NS / FAKECUDA_FAIL. */
static uint64_t lat_ns[FAKE_N_EXPORTS];
#define FAIL_MAX 32
static struct {
    int id;
    uint64_t nth; /* 0: every call */
    CUresult rc;
} fails[FAIL_MAX];
static int n_fails;

/* Kernel-time table from FAKECUDA_KERNEL_US ("name=us,...,*=us" or "us"). */
#define KTIME_MAX 64
static struct {
    char name[64];
    uint64_t ns;
} ktimes[KTIME_MAX];
static int n_ktimes;

static int export_id(const char *name, size_t len)
{
    for (int i = 0; i < FAKE_N_EXPORTS; i++)
        if (strlen(fake_export_names[i]) == len && memcmp(fake_export_names[i], name, len) == 0)
            return i;
    return -1;
}

static void warn_spec(const char *var, const char *item)
{
    fprintf(stderr, "fakecuda: %s: ignoring bad item '%s'\n", var, item);
}

/* Calls fn(item) for each comma-separated item of env var, in a copy. */
static void for_each_item(const char *var, void (*fn)(const char *var, char *item))
{
    const char *v = getenv(var);
    if (v == NULL || *v == '\0')
        return;
    char *copy = strdup(v), *save = NULL;
    for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save))
        fn(var, it);
    free(copy);
}

static void parse_lat(const char *var, char *item)
{
    char *eq = strchr(item, '=');
    if (eq == NULL)
        return warn_spec(var, item);
    uint64_t ns = strtoull(eq + 1, NULL, 10);
    if (eq - item == 1 && item[0] == '*') {
        for (int i = 0; i < FAKE_N_EXPORTS; i++)
            lat_ns[i] = ns;
        return;
    }
    int id = export_id(item, (size_t)(eq - item));
    if (id < 0)
        return warn_spec(var, item);
    lat_ns[id] = ns;
}

/* name@N=code or name@*=code */
static void parse_fail(const char *var, char *item)
{
    char *at = strchr(item, '@'), *eq = strchr(item, '=');
    int id = at ? export_id(item, (size_t)(at - item)) : -1;
    if (id < 0 || eq == NULL || eq < at || n_fails == FAIL_MAX)
        return warn_spec(var, item);
    fails[n_fails].id = id;
    fails[n_fails].nth = at[1] == '*' ? 0 : strtoull(at + 1, NULL, 10);
    fails[n_fails].rc = (CUresult)strtol(eq + 1, NULL, 10);
    n_fails++;
}

static void parse_ktime(const char *var, char *item)
{
    char *eq = strchr(item, '=');
    if (eq == NULL) {
        fake_cfg.kernel_ns = strtoull(item, NULL, 10) * 1000;
        return;
    }
    if (eq - item == 1 && item[0] == '*') {
        fake_cfg.kernel_ns = strtoull(eq + 1, NULL, 10) * 1000;
        return;
    }
    if (n_ktimes == KTIME_MAX || (size_t)(eq - item) >= sizeof ktimes[0].name)
        return warn_spec(var, item);
    memcpy(ktimes[n_ktimes].name, item, (size_t)(eq - item));
    ktimes[n_ktimes].ns = strtoull(eq + 1, NULL, 10) * 1000;
    n_ktimes++;
}

static double env_double(const char *var, double dflt)
{
    const char *v = getenv(var);
    return v && *v ? strtod(v, NULL) : dflt;
}

static void atfork_child(void);

__attribute__((constructor)) static void fake_cfg_load(void)
{
    const char *sim = getenv("FAKECUDA_SIM"), *mode = getenv("FAKECUDA_LAT_MODE");
    const char *err = getenv("FAKECUDA_ERRNO");
    fake_cfg.is_sim = sim && strcmp(sim, "1") == 0;
    fake_cfg.is_lat_sleep = mode && strcmp(mode, "sleep") == 0;
    fake_cfg.is_errno = err && strcmp(err, "1") == 0;
    fake_cfg.kernel_ns = 10000;
    fake_cfg.pinned_bps = env_double("FAKECUDA_PINNED_GBPS", 20.0) * 1e9;
    fake_cfg.pageable_bps = env_double("FAKECUDA_PAGEABLE_GBPS", 10.0) * 1e9;
    fake_cfg.d2d_bps = env_double("FAKECUDA_D2D_GBPS", 1000.0) * 1e9;
    fake_cfg.total_mem_bytes = (uint64_t)(env_double("FAKECUDA_MEM_GB", 80.0) * (1 << 30));
    if (getenv("FAKECUDA_MEM_LIMIT") && *getenv("FAKECUDA_MEM_LIMIT")) /* exact bytes */
        fake_cfg.total_mem_bytes = strtoull(getenv("FAKECUDA_MEM_LIMIT"), NULL, 10);
    for_each_item("FAKECUDA_LAT_NS", parse_lat);
    for_each_item("FAKECUDA_FAIL", parse_fail);
    for_each_item("FAKECUDA_KERNEL_US", parse_ktime);
    for (int i = 0; i < FAKE_N_EXPORTS; i++)
        if (lat_ns[i])
            fake_cfg.is_slow = 1;
    if (n_fails || fake_cfg.is_errno)
        fake_cfg.is_slow = 1;
    pthread_atfork(NULL, NULL, atfork_child);
}

uint64_t fake_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fake_sleep_until_ns(uint64_t t_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000u),
                          .tv_nsec = (long)(t_ns % 1000000000u)};
    int saved = errno;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
    errno = saved;
}

uint64_t fake_kernel_time_ns(const char *name)
{
    for (int i = 0; i < n_ktimes; i++)
        if (strcmp(ktimes[i].name, name) == 0)
            return ktimes[i].ns;
    return fake_cfg.kernel_ns;
}

static void delay_ns(uint64_t ns)
{
    uint64_t end = fake_now_ns() + ns;
    if (fake_cfg.is_lat_sleep) {
        fake_sleep_until_ns(end);
        return;
    }
    while (fake_now_ns() < end)
        ;
}

/* Injected failures return before doing anything and leave errno at EDOM,
 * so a test can check that an interposer hands both back unchanged. With
 * FAKECUDA_ERRNO=1 a call that succeeds leaves errno at 1000 + its id, as a
 * real driver may: a call an interposer makes for itself after the
 * program's (cuFuncGetName, cuCtxGetDevice) then shows in errno unless the
 * interposer keeps it. */
CUresult fake_enter_slow(enum fake_id id, uint64_t nth)
{
    if (lat_ns[id])
        delay_ns(lat_ns[id]);
    for (int i = 0; i < n_fails; i++) {
        if (fails[i].id == (int)id && (fails[i].nth == 0 || fails[i].nth == nth)) {
            errno = EDOM;
            return fails[i].rc;
        }
    }
    if (fake_cfg.is_errno)
        errno = 1000 + (int)id;
    return CUDA_SUCCESS;
}

/* ---- tallies ---- */

struct fake_name_tally {
    struct fake_name_tally *next;
    _Atomic uint64_t n_launch;  /* launch API calls, captured ones included */
    _Atomic uint64_t n_replay;  /* executions through cuGraphLaunch */
    char name[];
};

static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_name_tally *names;
static _Atomic uint64_t copy_bytes[FAKE_DIR_N], copy_count[FAKE_DIR_N];
static _Atomic uint64_t n_pinned, n_pageable, memset_bytes;
static const char *const dir_names[FAKE_DIR_N] = {"HtoD", "DtoH", "DtoD", "HtoH"};

struct fake_name_tally *fake_tally_name(const char *name)
{
    pthread_mutex_lock(&tally_lock);
    struct fake_name_tally *t = names;
    while (t && strcmp(t->name, name) != 0)
        t = t->next;
    if (t == NULL && (t = calloc(1, sizeof *t + strlen(name) + 1)) != NULL) {
        strcpy(t->name, name);
        t->next = names;
        names = t;
    }
    pthread_mutex_unlock(&tally_lock);
    return t;
}

const char *fake_tally_name_str(const struct fake_name_tally *t)
{
    return t->name;
}

void fake_tally_launch(struct fake_name_tally *t, int is_replay)
{
    atomic_fetch_add_explicit(is_replay ? &t->n_replay : &t->n_launch, 1, memory_order_relaxed);
}

void fake_tally_copy(enum fake_dir dir, uint64_t len_bytes, int host_is_pinned)
{
    atomic_fetch_add_explicit(&copy_bytes[dir], len_bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&copy_count[dir], 1, memory_order_relaxed);
    if (dir == FAKE_DIR_HTOD || dir == FAKE_DIR_DTOH)
        atomic_fetch_add_explicit(host_is_pinned ? &n_pinned : &n_pageable, 1,
                                  memory_order_relaxed);
}

void fake_tally_memset(uint64_t len_bytes)
{
    atomic_fetch_add_explicit(&memset_bytes, len_bytes, memory_order_relaxed);
}

/* A forked child counts only its own calls. */
void fake_tally_reset(void)
{
    for (int i = 0; i < FAKE_N_EXPORTS; i++)
        atomic_store(&fake_calls[i], 0);
    for (int d = 0; d < FAKE_DIR_N; d++) {
        atomic_store(&copy_bytes[d], 0);
        atomic_store(&copy_count[d], 0);
    }
    atomic_store(&n_pinned, 0);
    atomic_store(&n_pageable, 0);
    atomic_store(&memset_bytes, 0);
    for (struct fake_name_tally *t = names; t; t = t->next) {
        atomic_store(&t->n_launch, 0);
        atomic_store(&t->n_replay, 0);
    }
}

static void atfork_child(void)
{
    pthread_mutex_init(&tally_lock, NULL);
    fake_tally_reset();
}

/* "cuMemcpyHtoD_v2_ptds" -> api "cuMemcpyHtoD_v2", variant "ptds" */
static void split_variant(const char *exp, char *api, size_t n, const char **variant)
{
    size_t len = strlen(exp);
    *variant = "legacy";
    if (len > 5 && (strcmp(exp + len - 5, "_ptsz") == 0 || strcmp(exp + len - 5, "_ptds") == 0)) {
        *variant = exp + len - 4;
        len -= 5;
    }
    snprintf(api, n, "%.*s", (int)len, exp);
}

FAKE_API int fakecuda_expect_write(FILE *f)
{
    char api[128];
    const char *variant;
    for (int i = 0; i < FAKE_N_EXPORTS; i++) {
        uint64_t n = atomic_load(&fake_calls[i]);
        if (n == 0)
            continue;
        split_variant(fake_export_names[i], api, sizeof api, &variant);
        fprintf(f, "call driver %s %s %llu\n", api, variant, (unsigned long long)n);
    }
    for (int d = 0; d < FAKE_DIR_N; d++)
        fprintf(f, "copy %s %llu %llu\n", dir_names[d],
                (unsigned long long)atomic_load(&copy_count[d]),
                (unsigned long long)atomic_load(&copy_bytes[d]));
    fprintf(f, "host pinned %llu\nhost pageable %llu\nmemset bytes %llu\n",
            (unsigned long long)atomic_load(&n_pinned),
            (unsigned long long)atomic_load(&n_pageable),
            (unsigned long long)atomic_load(&memset_bytes));
    pthread_mutex_lock(&tally_lock);
    for (struct fake_name_tally *t = names; t; t = t->next)
        if (atomic_load(&t->n_launch) || atomic_load(&t->n_replay))
            fprintf(f, "kernel %s %llu %llu\n", t->name,
                    (unsigned long long)atomic_load(&t->n_launch),
                    (unsigned long long)atomic_load(&t->n_replay));
    pthread_mutex_unlock(&tally_lock);
    return ferror(f) ? -EIO : 0;
}

FAKE_API uint64_t fakecuda_calls(const char *export_name)
{
    uint64_t sum = 0;
    if (export_name == NULL) {
        for (int i = 0; i < FAKE_N_EXPORTS; i++)
            sum += atomic_load(&fake_calls[i]);
        return sum;
    }
    int id = export_id(export_name, strlen(export_name));
    return id < 0 ? 0 : atomic_load(&fake_calls[id]);
}

/* ---- init, devices, contexts ---- */

struct CUctx_st {
    uint32_t magic;
    CUdevice dev;
};
#define FAKE_MAX_DEVICES 8
#define FAKE_CTX(i) {.magic = 0x43545831u, .dev = (i)}
static struct CUctx_st primary_ctx[FAKE_MAX_DEVICES] = {
    FAKE_CTX(0), FAKE_CTX(1), FAKE_CTX(2), FAKE_CTX(3),
    FAKE_CTX(4), FAKE_CTX(5), FAKE_CTX(6), FAKE_CTX(7),
};
static _Thread_local CUcontext current_ctx;
static _Atomic int is_initialised;
static int n_devices = 1; /* FAKECUDA_DEVICES, read once by cuInit */
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

static void read_devices(void)
{
    const char *v = getenv("FAKECUDA_DEVICES");
    long n = v ? strtol(v, NULL, 10) : 1;

    n_devices = n >= 1 && n <= FAKE_MAX_DEVICES ? (int)n : 1;
}

static int is_device(CUdevice dev)
{
    return dev >= 0 && dev < n_devices;
}

/* The driver's documented injection: the library named by
 * CUDA_INJECTION64_PATH is loaded at the first cuInit and its
 * InitializeInjection() called once, on that thread (CUPTI's injection
 * samples, Nsight Systems). A library that does not load is skipped. */
static void inject(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    void *h;
    int (*init)(void);

    if (path == NULL || *path == '\0' || (h = dlopen(path, RTLD_NOW)) == NULL)
        return;
    init = (int (*)(void))dlsym(h, "InitializeInjection");
    if (init)
        init();
}

static pthread_once_t inject_once = PTHREAD_ONCE_INIT;

FAKE_API CUresult CUDAAPI cuInit(unsigned int flags)
{
    FAKE_ENTER(cuInit);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&devices_once, read_devices);
    atomic_store(&is_initialised, 1);
    pthread_once(&inject_once, inject);
    return CUDA_SUCCESS;
}

/* ---- the activity hook (fakecuda.h) ---- */

static _Atomic(fakecuda_act_fn) act_fn;

FAKE_API void fakecuda_act_hook(fakecuda_act_fn fn)
{
    atomic_store(&act_fn, fn);
}

/* Inside fake_act_begin/end, notes add up to one (a 2D copy is one copy). */
static _Thread_local struct {
    int depth, any;
    struct fakecuda_act a;
} act_batch;

/* The graph node being launched on this thread (graph_launch). */
static _Thread_local struct {
    uint32_t graph_id;
    uint64_t node_id;
} act_graph;

void fake_act_graph(uint32_t graph_id, uint64_t node_id)
{
    act_graph.graph_id = graph_id;
    act_graph.node_id = node_id;
}

void fake_act_begin(void)
{
    if (act_batch.depth++ == 0)
        act_batch.any = 0;
}

void fake_act_end(void)
{
    fakecuda_act_fn fn = atomic_load_explicit(&act_fn, memory_order_acquire);

    if (--act_batch.depth == 0 && act_batch.any && fn)
        fn(&act_batch.a);
}

void fake_act_note(struct CUstream_st *s, int kind, const char *name, uint64_t bytes, int dir,
                   uint64_t end_ns, uint64_t dur_ns)
{
    fakecuda_act_fn fn = atomic_load_explicit(&act_fn, memory_order_acquire);
    struct fakecuda_act a = {kind, name, 0, 0, bytes, 0, 0, dir & 0xff, (dir >> 8) & 1, 0, 0};

    if (fn == NULL)
        return;
    if (end_ns == 0) /* not SIM: the work is done when the call returns */
        end_ns = fake_now_ns(), dur_ns = 0;
    a.start_ns = end_ns - dur_ns;
    a.end_ns = end_ns;
    a.stream_id = (uint32_t)s->id;
    a.graph_id = act_graph.graph_id;
    a.graph_node_id = act_graph.node_id;
    a.device = current_ctx ? (uint32_t)current_ctx->dev : 0;
    if (act_batch.depth == 0) {
        fn(&a);
    } else if (!act_batch.any++) {
        act_batch.a = a;
    } else {
        act_batch.a.bytes += a.bytes;
        act_batch.a.end_ns = a.end_ns > act_batch.a.end_ns ? a.end_ns : act_batch.a.end_ns;
    }
}

FAKE_API CUresult CUDAAPI cuDriverGetVersion(int *version)
{
    FAKE_ENTER(cuDriverGetVersion);
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    FAKE_ENTER(cuDeviceGetCount);
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = n_devices;
    return atomic_load(&is_initialised) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

FAKE_API CUresult CUDAAPI cuDeviceGet(CUdevice *dev, int ordinal)
{
    FAKE_ENTER(cuDeviceGet);
    if (!atomic_load(&is_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev == NULL || !is_device(ordinal))
        return !is_device(ordinal) ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FAKE_ENTER(cuDeviceGetName);
    if (name == NULL || len <= 0 || !is_device(dev))
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "cudaspy fake device");
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    FAKE_ENTER(cuDeviceGetAttribute);
    if (pi == NULL || !is_device(dev))
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FAKE_ENTER(cuDevicePrimaryCtxRetain);
    if (pctx == NULL || !is_device(dev))
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = &primary_ctx[dev];
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    FAKE_ENTER(cuDevicePrimaryCtxRelease);
    return is_device(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_API CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    FAKE_ENTER(cuDevicePrimaryCtxRelease_v2);
    return is_device(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    FAKE_ENTER(cuCtxSetCurrent);
    current_ctx = ctx;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    FAKE_ENTER(cuCtxGetCurrent);
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx;
    return CUDA_SUCCESS;
}

static CUresult ctx_device(CUdevice *dev, CUcontext ctx)
{
    if (dev == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = ctx->dev;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *dev)
{
    FAKE_ENTER(cuCtxGetDevice);
    return ctx_device(dev, current_ctx);
}

FAKE_API CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
    FAKE_ENTER(cuCtxGetDevice_v2);
    return ctx_device(dev, ctx ? ctx : current_ctx);
}

FAKE_API CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    FAKE_ENTER(cuCtxGetId);
    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *id = 1;
    return (ctx ? ctx : current_ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---- error strings ---- */

static const struct {
    CUresult rc;
    const char *name, *text;
} errs[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int err_index(CUresult rc)
{
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
        if (errs[i].rc == rc)
            return (int)i;
    return -1;
}

FAKE_API CUresult CUDAAPI cuGetErrorString(CUresult rc, const char **str)
{
    FAKE_ENTER(cuGetErrorString);
    int i = err_index(rc);
    if (str == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *str = i < 0 ? NULL : errs[i].text;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuGetErrorName(CUresult rc, const char **str)
{
    FAKE_ENTER(cuGetErrorName);
    int i = err_index(rc);
    if (str == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *str = i < 0 ? NULL : errs[i].name;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
