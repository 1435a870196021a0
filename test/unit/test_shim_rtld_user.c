/* test_shim_rtld_user.c: libshim_rtld_user.so, dlopened RTLD_LOCAL; finds a
 * function of its own dependency with dlsym(RTLD_DEFAULT), which glibc
 * resolves in the caller's scope. Through a shim that did not tail-call,
 * the caller would be the shim and the function would not be found. */
#include <dlfcn.h>

int cuShimLocalProbe(void);
int shim_rtld_default_probe(void);

int shim_rtld_default_probe(void)
{
    int (*f)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cuShimLocalProbe");
    return f ? f() + 0 * cuShimLocalProbe() : -1;
}
