/* fake_procaddr.c: cuGetProcAddress and cuGetProcAddress_v2 of the fake
 * driver, answering from fake_procs.def like the real driver: the request
 * names a BASE symbol ("cuMemAlloc"), a CUDA version and flags, and gets the
 * newest export whose version is <= the requested one; with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM it gets that export's
 * _ptsz/_ptds twin when one exists, else the legacy export (cuda.h 24319). */
#include "fake_driver.h"

#include <string.h>

struct proc {
    const char *base;
    int version;
    int is_per_thread; /* a _ptsz/_ptds twin */
    const char *export_name;
    void *fn;
};

/* Each row's export must have exactly the toolkit's PFN type for that version. */
#define P(base, ver, exp, sfx)                                                       \
    _Static_assert(__builtin_types_compatible_p(PFN_##base##_v##ver##sfx, __typeof__(&exp)), \
                   #exp " does not match PFN_" #base "_v" #ver #sfx);
#include "fake_procs.def"
#undef P

static const struct proc procs[] = {
#define P(base, ver, exp, sfx) {#base, ver, sizeof(#sfx) > 1, #exp, (void *)&exp},
#include "fake_procs.def"
#undef P
};
#define N_PROCS (sizeof procs / sizeof procs[0])

static const struct proc *find_twin(const struct proc *legacy)
{
    size_t len = strlen(legacy->export_name);
    for (size_t i = 0; i < N_PROCS; i++) {
        const struct proc *p = &procs[i];
        if (p->is_per_thread && strncmp(p->export_name, legacy->export_name, len) == 0 &&
            strlen(p->export_name) == len + 5)
            return p;
    }
    return NULL;
}

static CUresult resolve(const char *symbol, void **pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status)
{
    const struct proc *best = NULL;
    int is_known = 0;
    if (pfn == NULL || symbol == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    for (size_t i = 0; i < N_PROCS; i++) {
        const struct proc *p = &procs[i];
        if (p->is_per_thread || strcmp(p->base, symbol) != 0)
            continue;
        is_known = 1;
        if (p->version <= version && (best == NULL || p->version > best->version))
            best = p;
    }
    if (best == NULL) {
        if (status)
            *status = is_known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                               : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        const struct proc *twin = find_twin(best);
        if (twin)
            best = twin;
    }
    *pfn = best->fn;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version,
                                           cuuint64_t flags)
{
    FAKE_ENTER(cuGetProcAddress);
    return resolve(symbol, pfn, version, flags, NULL);
}

FAKE_API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                              cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *status)
{
    FAKE_ENTER(cuGetProcAddress_v2);
    return resolve(symbol, pfn, version, flags, status);
}
