/* test_shim_nodriver.c: finds cuMemAlloc_v2 and cudaMalloc with
 * dlsym(RTLD_DEFAULT) in a process that has no CUDA library at all, as code
 * probing for CUDA does; under the shim those are the shim's own exports.
 * Calls each twice and prints the results, for fault.shim_no_driver. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*alloc_fn)(void *, size_t);

int main(void)
{
    alloc_fn drv = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    alloc_fn rt = (alloc_fn)dlsym(RTLD_DEFAULT, "cudaMalloc");
    uint64_t p = 0;

    for (int i = 0; i < 2; i++) {
        printf("cuMemAlloc_v2 %d\n", drv ? drv(&p, 64) : -1);
        printf("cudaMalloc %d\n", rt ? rt(&p, 64) : -1);
    }
    return 0;
}
