/* fake_expect.c: writes a client's expectation file (FAKECUDA_EXPECT): what
 * the fake runtime and fake driver saw this process do, which an interposer's
 * records must match. Linked into every client; format in README.md. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Copies path into buf with each "%p" replaced by the pid. */
static void expand_path(const char *path, char *buf, size_t n)
{
    size_t o = 0;
    for (const char *p = path; *p && o + 1 < n; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(buf + o, n - o, "%d", (int)getpid());
            p++;
        } else {
            buf[o++] = *p;
        }
    }
    buf[o < n ? o : n - 1] = '\0';
}

static void write_driver(FILE *f)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    fakecuda_expect_write_fn fn =
        lib ? (fakecuda_expect_write_fn)dlsym(lib, "fakecuda_expect_write") : NULL;
    if (fn)
        fn(f);
    else
        fprintf(f, "# fake driver not loaded\n");
    if (lib)
        dlclose(lib);
}

int fake_expect_write(const char *client, int (*rt_write)(FILE *f), uint64_t checksum)
{
    const char *path = getenv("FAKECUDA_EXPECT");
    char buf[4096];
    if (path == NULL || *path == '\0')
        return 0;
    expand_path(path, buf, sizeof buf);
    FILE *f = fopen(buf, "w");
    if (f == NULL) {
        fprintf(stderr, "%s: %s: cannot write expectation file (%s)\n", client, buf,
                strerror(errno));
        return -1;
    }
    fprintf(f, "fakecuda-expect 1\nclient %s\npid %d\n", client, (int)getpid());
    if (rt_write)
        rt_write(f);
    write_driver(f);
    fprintf(f, "checksum %016llx\n", (unsigned long long)checksum);
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: %s: write failed (%s)\n", client, buf, strerror(errno));
        return -1;
    }
    return 0;
}
