/* test_shim_rtld.c: prints what dlsym(RTLD_NEXT, ...) finds from a library
 * and from the executable, for cli.shim_rtld_next: the output must be the
 * same with and without libcudaspy.so preloaded. Links libshim_rtld_wrap.so
 * before libshim_rtld_a.so; dlopens libshim_rtld_user.so RTLD_LOCAL. */
#include <dlfcn.h>
#include <stdio.h>

int shim_rtld_next_probe(void);

/* dlsym(RTLD_DEFAULT) from a library loaded RTLD_LOCAL (7 when found). */
static int default_probe(void)
{
    void *h = dlopen("libshim_rtld_user.so", RTLD_NOW | RTLD_LOCAL);
    int (*f)(void) = h ? (int (*)(void))dlsym(h, "shim_rtld_default_probe") : NULL;
    return f ? f() : -2;
}

int main(void)
{
    void *next_puts = dlsym(RTLD_NEXT, "puts");
    void *def_puts = dlsym(RTLD_DEFAULT, "puts");
    void *next_self = dlsym(RTLD_NEXT, "shim_rtld_next_probe");

    printf("next from library: %d\n", shim_rtld_next_probe());
    printf("next puts from executable is the default one: %d\n", next_puts == def_puts);
    printf("next of a library function found: %d\n", next_self != NULL);
    printf("default from a local-scope library: %d\n", default_probe());
    return 0;
}
