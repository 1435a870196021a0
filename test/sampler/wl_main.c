/* wl_main.c: the workload tree (workload.h) as a program, for tests that
 * trace it through the real cudaspy-sampler. Usage: wl_main REPORT_FILE
 * Writes every thread's struct wl_report to REPORT_FILE, then exits 0. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

int main(int argc, char **argv)
{
    struct wl_report rep[32];
    struct wl w;
    int n = 0, status, root_done = 0;
    FILE *f;

    if (argc != 2) {
        fprintf(stderr, "usage: wl_main REPORT_FILE\n");
        return 2;
    }
    if (wl_start(&w, 2, 0) < 0)
        return 3;
    wl_go(&w);
    for (int i = 0; i < 3000 && (n < w.nexpect || !root_done); i++) {
        usleep(10000);
        wl_read(&w, rep, 32, &n);
        if (!root_done && waitpid(w.root, &status, WNOHANG) == w.root)
            root_done = 1;
    }
    f = fopen(argv[1], "w");
    if (!f || fwrite(rep, sizeof(rep[0]), (size_t)n, f) != (size_t)n || fclose(f) != 0)
        return 3;
    return n == w.nexpect ? 0 : 1;
}
