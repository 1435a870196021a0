/* test_fake_procaddr.c: unit.fake_procaddr: the fake driver's
 * cuGetProcAddress(_v2) answers (base name, version, flags) with the exact
 * export a real driver would, checked by name and object with dladdr.
 * unit.fake_procaddr_preloaded runs it again under LD_PRELOAD of a library
 * exporting some of the same names: the answers must not change. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include "check.h"
#include "fake_dlopen.h"

#include <dlfcn.h>

static void *lib;
static PFN_cuGetProcAddress_v12000 gpa2;
static PFN_cuGetProcAddress_v11030 gpa1;

/* Export name dladdr gives for what gpa returns, or "" on failure. */
static const char *resolved(const char *sym, int version, cuuint64_t flags)
{
    void *p = NULL;
    Dl_info info;
    CUdriverProcAddressQueryResult st;
    if (gpa2(sym, &p, version, flags, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS)
        return "";
    if (dladdr(p, &info) == 0 || info.dli_sname == NULL || info.dli_saddr != p)
        return "";
    const char *slash = strrchr(info.dli_fname, '/');
    if (strcmp(slash ? slash + 1 : info.dli_fname, "libcuda.so.1") != 0)
        return "(not in libcuda.so.1)";
    return info.dli_sname;
}

#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static int test_versions_pick_newest_not_above(void)
{
    CHECK_STR(resolved("cuMemAlloc", 3020, 0), "cuMemAlloc_v2");
    CHECK_STR(resolved("cuMemAlloc", 12000, 0), "cuMemAlloc_v2");
    CHECK_STR(resolved("cuMemAlloc", 3010, 0), "cuMemAlloc");
    CHECK_STR(resolved("cuCtxSynchronize", 13000, 0), "cuCtxSynchronize_v2");
    CHECK_STR(resolved("cuCtxSynchronize", 12090, 0), "cuCtxSynchronize");
    CHECK_STR(resolved("cuMemcpyBatchAsync", 13000, 0), "cuMemcpyBatchAsync_v2");
    CHECK_STR(resolved("cuMemcpyBatchAsync", 12080, 0), "cuMemcpyBatchAsync");
    CHECK_STR(resolved("cuGetProcAddress", 12000, 0), "cuGetProcAddress_v2");
    CHECK_STR(resolved("cuGetProcAddress", 11030, 0), "cuGetProcAddress");
    CHECK_STR(resolved("cuStreamGetCaptureInfo", 12030, 0), "cuStreamGetCaptureInfo_v3");
    return 0;
}

static int test_per_thread_flag_picks_twin(void)
{
    CHECK_STR(resolved("cuLaunchKernel", 7000, PT), "cuLaunchKernel_ptsz");
    CHECK_STR(resolved("cuLaunchKernel", 7000, 0), "cuLaunchKernel");
    CHECK_STR(resolved("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_LEGACY_STREAM),
              "cuLaunchKernel");
    CHECK_STR(resolved("cuMemcpyHtoD", 3020, PT), "cuMemcpyHtoD_v2_ptds");
    CHECK_STR(resolved("cuMemcpyHtoDAsync", 7000, PT), "cuMemcpyHtoDAsync_v2_ptsz");
    CHECK_STR(resolved("cuMemcpyBatchAsync", 13000, PT), "cuMemcpyBatchAsync_v2_ptsz");
    CHECK_STR(resolved("cuStreamBeginCapture", 10010, PT), "cuStreamBeginCapture_v2_ptsz");
    return 0;
}

static int test_per_thread_flag_falls_back_to_legacy(void)
{
    CHECK_STR(resolved("cuMemAlloc", 3020, PT), "cuMemAlloc_v2");
    CHECK_STR(resolved("cuCtxSynchronize", 13000, PT), "cuCtxSynchronize_v2");
    CHECK_STR(resolved("cuMemcpyHtoD", 2000, PT), "cuMemcpyHtoD");
    return 0;
}

static int test_unknown_symbol_not_found(void)
{
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK_EQ(gpa2("cuNoSuchFunction", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK(p == NULL);
    CHECK_EQ(gpa2("cuMemAlloc_v2", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    return 0;
}

static int test_version_too_low_not_sufficient(void)
{
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK_EQ(gpa2("cuLaunchKernelEx", &p, 11000, 0, &st), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CHECK(p == NULL);
    return 0;
}

static int test_legacy_gateway_agrees(void)
{
    void *p1 = NULL, *p2 = NULL;
    CHECK_EQ(gpa1("cuLaunchKernel", &p1, 7000, PT), CUDA_SUCCESS);
    CHECK_EQ(gpa2("cuLaunchKernel", &p2, 7000, PT, NULL), CUDA_SUCCESS);
    CHECK(p1 != NULL && p1 == p2);
    CHECK(p1 == dlsym(lib, "cuLaunchKernel_ptsz"));
    return 0;
}

/* Every table row is reachable: (base, version) gives the legacy export;
 * (base, version, per-thread) gives the per-thread twin. */
static int test_every_row_resolves_to_its_export(void)
{
    int n = 0;
#define P(base, ver, exp, sfx)                                                      \
    CHECK_STR(resolved(#base, ver, sizeof(#sfx) > 1 ? PT : 0), #exp);               \
    CHECK(dlsym(lib, #exp) != NULL);                                                \
    n++;
#include "fake_procs.def"
#undef P
    CHECK(n > 150);
    return 0;
}

static int test_exports_are_distinct(void)
{
    const char *names[] = {
#define P(base, ver, exp, sfx) #exp,
#include "fake_procs.def"
#undef P
    };
    size_t n = sizeof names / sizeof names[0];
    for (size_t i = 0; i < n; i++) {
        Dl_info info;
        void *p = dlsym(lib, names[i]);
        CHECK(p != NULL && dladdr(p, &info) != 0);
        CHECK_STR(info.dli_sname, names[i]);
    }
    return 0;
}

int main(void)
{
    lib = fake_dlopen_cuda((const void *)resolved, RTLD_NOW);
    if (lib == NULL) {
        fprintf(stderr, "test_fake_procaddr: libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    gpa2 = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    gpa1 = (PFN_cuGetProcAddress_v11030)dlsym(lib, "cuGetProcAddress");
    if (gpa1 == NULL || gpa2 == NULL)
        return 1;
    RUN(test_versions_pick_newest_not_above);
    RUN(test_per_thread_flag_picks_twin);
    RUN(test_per_thread_flag_falls_back_to_legacy);
    RUN(test_unknown_symbol_not_found);
    RUN(test_version_too_low_not_sufficient);
    RUN(test_legacy_gateway_agrees);
    RUN(test_every_row_resolves_to_its_export);
    RUN(test_exports_are_distinct);
    return check_status();
}
