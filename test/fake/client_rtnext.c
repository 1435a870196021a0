/* client_rtnext.c: prints what dlsym(RTLD_NEXT, "puts") and
 * dlsym(RTLD_DEFAULT, "cuInit") resolve to, as "<lookup> <object> <symbol>
 * +<offset in object>" lines that do not depend on ASLR, so a run under
 * LD_PRELOAD can be compared with a plain run. Usage: client_rtnext [load]
 * "load" first dlopens libcuda.so.1 with RTLD_GLOBAL. */
#include "fake_dlopen.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void show(const char *lookup, void *p)
{
    Dl_info info;
    if (p == NULL || dladdr(p, &info) == 0) {
        printf("%s none\n", lookup);
        return;
    }
    const char *slash = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
    printf("%s %s %s +%#lx\n", lookup, slash ? slash + 1 : info.dli_fname,
           info.dli_sname ? info.dli_sname : "?",
           (unsigned long)((char *)p - (char *)info.dli_fbase));
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "load") == 0 &&
        fake_dlopen_cuda((const void *)show, RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "client_rtnext: libcuda.so.1: %s\n", dlerror());
        return 3;
    }
    show("RTLD_NEXT:puts", dlsym(RTLD_NEXT, "puts"));
    show("RTLD_DEFAULT:cuInit", dlsym(RTLD_DEFAULT, "cuInit"));
    return 0;
}
