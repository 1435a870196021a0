/* fake_interposer.c: libfake_interposer.so, a minimal LD_PRELOAD library
 * exporting a few driver names (forwarding with RTLD_NEXT), for
 * unit.fake_procaddr_preloaded: the fake driver's cuGetProcAddress must still
 * answer with its own functions, as the real driver does. */
#include <cuda.h>

#include <dlfcn.h>

#define FORWARD(exp, params, args)                                   \
    CUresult CUDAAPI exp params                                      \
    {                                                                \
        CUresult (*next) params = (CUresult(*) params)dlsym(RTLD_NEXT, #exp); \
        return next ? next args : CUDA_ERROR_NOT_FOUND;             \
    }

#undef cuMemAlloc
FORWARD(cuMemAlloc_v2, (CUdeviceptr * p, size_t n), (p, n))
FORWARD(cuCtxSynchronize_v2, (CUcontext c), (c))
FORWARD(cuStreamSynchronize_ptsz, (CUstream s), (s))
FORWARD(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned sh, CUstream s, void **a, void **e),
        (f, gx, gy, gz, bx, by, bz, sh, s, a, e))
