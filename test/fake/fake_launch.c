/* fake_launch.c: the fake driver's modules, libraries, kernels and launches.
 * A fake "image" (cuModuleLoadData, cuLibraryLoadData) is text: kernel names
 * separated by whitespace or commas. A launch does no work on memory; it takes
 * simulated time (FAKECUDA_KERNEL_US) and is counted by kernel name. */
#include "fake_driver.h"
#include "fakecuda.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define FUNC_MAGIC 0x46554e43u
#define KERN_MAGIC 0x4b45524eu
#define MOD_MAGIC 0x4d4f4455u
#define LIB_MAGIC 0x4c494252u

/* CUfunction; a CUkernel embeds one, and both start with their magic, so a
 * CUkernel cast to CUfunction (as the runtime passes it) is recognised. */
struct CUfunc_st {
    uint32_t magic;
    struct fake_name_tally *tally;
    uint64_t work_ns;
};
struct CUkern_st {
    uint32_t magic;
    struct CUfunc_st fn;
};
struct CUmod_st {
    uint32_t magic;
    size_t n;
    struct CUfunc_st *fns;
};
struct CUlib_st {
    uint32_t magic;
    size_t n;
    struct CUkern_st *kerns;
};

static void func_init(struct CUfunc_st *f, const char *name)
{
    f->magic = FUNC_MAGIC;
    f->tally = fake_tally_name(name);
    f->work_ns = fake_kernel_time_ns(name);
}

/* Splits the image into names; calls init(i, name) for each. Returns the count. */
static size_t image_names(const char *image, void *objs, size_t elem,
                          void (*init)(void *obj, const char *name))
{
    size_t n = 0;
    const char *p = image;
    while (*p) {
        while (*p && (isspace((unsigned char)*p) || *p == ','))
            p++;
        const char *start = p;
        while (*p && !isspace((unsigned char)*p) && *p != ',')
            p++;
        if (p == start)
            break;
        if (objs) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(p - start), start);
            init((char *)objs + n * elem, name);
        }
        n++;
    }
    return n;
}

static void init_func(void *obj, const char *name)
{
    func_init(obj, name);
}

static void init_kern(void *obj, const char *name)
{
    struct CUkern_st *k = obj;
    k->magic = KERN_MAGIC;
    func_init(&k->fn, name);
}

FAKE_API CUresult CUDAAPI cuModuleLoadData(CUmodule *pm, const void *image)
{
    FAKE_ENTER(cuModuleLoadData);
    if (pm == NULL || image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = image_names(image, NULL, 0, NULL);
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (n == 0 || m == NULL || (m->fns = calloc(n, sizeof *m->fns)) == NULL) {
        free(m);
        return n == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->magic = MOD_MAGIC;
    m->n = image_names(image, m->fns, sizeof *m->fns, init_func);
    *pm = m;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name)
{
    FAKE_ENTER(cuModuleGetFunction);
    if (pf == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (m == NULL || m->magic != MOD_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(fake_tally_name_str(m->fns[i].tally), name) == 0) {
            *pf = &m->fns[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

FAKE_API CUresult CUDAAPI cuModuleUnload(CUmodule m)
{
    FAKE_ENTER(cuModuleUnload);
    if (m == NULL || m->magic != MOD_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < m->n; i++)
        m->fns[i].magic = 0;
    m->magic = 0;
    free(m->fns);
    free(m);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuLibraryLoadData(CUlibrary *pl, const void *code,
                                            CUjit_option *jit_opts, void **jit_vals,
                                            unsigned int n_jit, CUlibraryOption *lib_opts,
                                            void **lib_vals, unsigned int n_lib)
{
    FAKE_ENTER(cuLibraryLoadData);
    if (pl == NULL || code == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = image_names(code, NULL, 0, NULL);
    struct CUlib_st *l = calloc(1, sizeof *l);
    if (n == 0 || l == NULL || (l->kerns = calloc(n, sizeof *l->kerns)) == NULL) {
        free(l);
        return n == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_OUT_OF_MEMORY;
    }
    l->magic = LIB_MAGIC;
    l->n = image_names(code, l->kerns, sizeof *l->kerns, init_kern);
    *pl = l;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pk, CUlibrary l, const char *name)
{
    FAKE_ENTER(cuLibraryGetKernel);
    if (pk == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (l == NULL || l->magic != LIB_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(fake_tally_name_str(l->kerns[i].fn.tally), name) == 0) {
            *pk = &l->kerns[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

FAKE_API CUresult CUDAAPI cuLibraryUnload(CUlibrary l)
{
    FAKE_ENTER(cuLibraryUnload);
    if (l == NULL || l->magic != LIB_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < l->n; i++)
        l->kerns[i].magic = l->kerns[i].fn.magic = 0;
    l->magic = 0;
    free(l->kerns);
    free(l);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuKernelGetFunction(CUfunction *pf, CUkernel k)
{
    FAKE_ENTER(cuKernelGetFunction);
    if (pf == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (k == NULL || k->magic != KERN_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    *pf = &k->fn;
    return CUDA_SUCCESS;
}

/* Like the real driver, cuFuncGetName rejects a CUkernel handle: callers
 * fall back to cuKernelGetName. */
FAKE_API CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction f)
{
    FAKE_ENTER(cuFuncGetName);
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL || f->magic != FUNC_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = fake_tally_name_str(f->tally);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel k)
{
    FAKE_ENTER(cuKernelGetName);
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (k == NULL || k->magic != KERN_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = fake_tally_name_str(k->fn.tally);
    return CUDA_SUCCESS;
}

/* ---- launches ---- */

static struct CUfunc_st *func_of(CUfunction f)
{
    if (f == NULL)
        return NULL;
    if (f->magic == FUNC_MAGIC)
        return f;
    struct CUkern_st *k = (struct CUkern_st *)f;
    return k->magic == KERN_MAGIC ? &k->fn : NULL;
}

static CUresult launch(CUfunction hf, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, CUstream hs, int pt)
{
    struct CUfunc_st *f = func_of(hf);
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (f == NULL || s == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (gx * gy * gz == 0 || bx * by * bz == 0 || bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    fake_tally_launch(f->tally, 0);
    struct fake_node n = {.kind = FAKE_NODE_KERNEL, .kernel = f->tally, .work_ns = f->work_ns};
    if (s->capture)
        return fake_graph_add(s->capture, &n) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    fake_act_note(s, FAKECUDA_ACT_KERNEL, fake_tally_name_str(f->tally), 0, 0,
                  fake_stream_enqueue(s, f->work_ns), f->work_ns);
    return CUDA_SUCCESS;
}

#define DEF_LAUNCH(exp, pt)                                                                   \
    FAKE_API CUresult CUDAAPI exp(CUfunction f, unsigned int gx, unsigned int gy,             \
                                  unsigned int gz, unsigned int bx, unsigned int by,          \
                                  unsigned int bz, unsigned int shmem, CUstream s,            \
                                  void **params, void **extra)                                \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return launch(f, gx, gy, gz, bx, by, bz, s, pt);                                      \
    }
DEF_LAUNCH(cuLaunchKernel, 0)
DEF_LAUNCH(cuLaunchKernel_ptsz, 1)

#define DEF_LAUNCH_COOP(exp, pt)                                                              \
    FAKE_API CUresult CUDAAPI exp(CUfunction f, unsigned int gx, unsigned int gy,             \
                                  unsigned int gz, unsigned int bx, unsigned int by,          \
                                  unsigned int bz, unsigned int shmem, CUstream s,            \
                                  void **params)                                              \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        return launch(f, gx, gy, gz, bx, by, bz, s, pt);                                      \
    }
DEF_LAUNCH_COOP(cuLaunchCooperativeKernel, 0)
DEF_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz, 1)

#define DEF_LAUNCH_EX(exp, pt)                                                                \
    FAKE_API CUresult CUDAAPI exp(const CUlaunchConfig *c, CUfunction f, void **params,       \
                                  void **extra)                                               \
    {                                                                                         \
        FAKE_ENTER(exp);                                                                      \
        if (c == NULL)                                                                        \
            return CUDA_ERROR_INVALID_VALUE;                                                  \
        return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,   \
                      c->blockDimZ, c->hStream, pt);                                          \
    }
DEF_LAUNCH_EX(cuLaunchKernelEx, 0)
DEF_LAUNCH_EX(cuLaunchKernelEx_ptsz, 1)

/* The host function runs once the stream's queued work is done (SIM), and
 * sees the bytes of the deferred copies it follows. */
static CUresult launch_host_func(CUstream hs, CUhostFn fn, void *data, int pt)
{
    struct CUstream_st *s = fake_stream_resolve(hs, pt);
    if (s == NULL || fn == NULL)
        return s == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_queue_run_upto(fake_stream_deps(s));
    fake_stream_wait_idle(s);
    fn(data);
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    FAKE_ENTER(cuLaunchHostFunc);
    return launch_host_func(s, fn, data, 0);
}

FAKE_API CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data)
{
    FAKE_ENTER(cuLaunchHostFunc_ptsz);
    return launch_host_func(s, fn, data, 1);
}
