/* test_shim_rtld_wrap.c: libshim_rtld_wrap.so, an interposer of
 * shim_rtld_probe (returns 2) that finds the next definition the usual way,
 * dlsym(RTLD_NEXT). If libcudaspy's dlsym did not tail-call glibc, "next"
 * would be computed from libcudaspy and land on this library again. */
#include <dlfcn.h>

int shim_rtld_probe(void);
int shim_rtld_next_probe(void);

int shim_rtld_probe(void) { return 2; }

int shim_rtld_next_probe(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "shim_rtld_probe");
    return next ? next() : -1;
}
