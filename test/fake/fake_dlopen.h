/* fake_dlopen.h: dlopen("libcuda.so.1") as the real runtime does, plus a
 * fallback for sanitizer builds: ASan's dlopen interceptor makes libasan
 * the caller, so the caller's RUNPATH ($ORIGIN) is not searched. The
 * fallback opens libcuda.so.1 next to the object holding @p self, then next
 * to the executable. Used by the fake runtime and the clients. */
#ifndef FAKE_DLOPEN_H
#define FAKE_DLOPEN_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline void *fake_dlopen_beside(const char *file, int flags)
{
    char path[PATH_MAX];
    const char *slash = strrchr(file, '/');
    if (slash == NULL || (size_t)(slash - file) + sizeof "/libcuda.so.1" > sizeof path)
        return NULL;
    snprintf(path, sizeof path, "%.*s/libcuda.so.1", (int)(slash - file), file);
    return dlopen(path, flags);
}

static inline void *fake_dlopen_cuda(const void *self, int flags)
{
    void *lib = dlopen("libcuda.so.1", flags);
    Dl_info info;
    char exe[PATH_MAX];
    ssize_t n;
    if (lib != NULL || (flags & RTLD_NOLOAD))
        return lib;
    if (dladdr(self, &info) != 0 && info.dli_fname != NULL &&
        (lib = fake_dlopen_beside(info.dli_fname, flags)) != NULL)
        return lib;
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    return fake_dlopen_beside(exe, flags);
}

#endif
