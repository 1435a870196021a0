/* test_fake_clients.c: unit.fake_clients: every client runs, prints its
 * checksum, and writes an expectation file whose counts agree with the
 * runtime -> driver mapping (README.md). Runs the clients in the current
 * directory (build/fake). */
#include "check.h"

#include <sys/wait.h>
#include <unistd.h>

#define EXPECT_MAX 256

struct expect {
    int n;
    char key[EXPECT_MAX][256]; /* "call driver cuLaunchKernel ptsz", "copy HtoD", ... */
    unsigned long long val[EXPECT_MAX];
    char checksum[32];
    char out_checksum[32]; /* from the client's stdout */
};

static char tmpdir[] = "/tmp/fake_clients.XXXXXX";

static void add(struct expect *e, const char *key, const char *val)
{
    if (e->n == EXPECT_MAX)
        return;
    snprintf(e->key[e->n], sizeof e->key[0], "%s", key);
    e->val[e->n++] = strtoull(val, NULL, 10);
}

/* "call L A V n" -> key "call L A V"; "copy D n b" -> "copy D" = n and
 * "bytes D" = b; "kernel K n r" -> "kernel K" = n (launches). */
static void parse_line(struct expect *e, char *line)
{
    char a[64], b[96], c[32], d[32];
    int n = sscanf(line, "%63s %95s %31s %31s", a, b, c, d);
    if (strcmp(a, "checksum") == 0 && n >= 2) {
        snprintf(e->checksum, sizeof e->checksum, "%.16s", b);
    } else if ((strcmp(a, "copy") == 0 || strcmp(a, "kernel") == 0) && n == 4) {
        char key[256];
        snprintf(key, sizeof key, "%s %s", a, b);
        add(e, key, c);
        snprintf(key, sizeof key, "bytes %s", b);
        if (strcmp(a, "copy") == 0)
            add(e, key, d);
    } else {
        char *last = strrchr(line, ' ');
        if (last == NULL)
            return;
        *last = '\0';
        add(e, line, last + 1);
    }
}

static int read_expect(const char *path, struct expect *e)
{
    char line[256];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        parse_line(e, line);
    }
    fclose(f);
    return 0;
}

static unsigned long long get(const struct expect *e, const char *key)
{
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->key[i], key) == 0)
            return e->val[i];
    return 0;
}

static int has_prefix_suffix(const struct expect *e, const char *prefix, const char *suffix)
{
    size_t lp = strlen(prefix), ls = strlen(suffix);
    for (int i = 0; i < e->n; i++) {
        size_t lk = strlen(e->key[i]);
        if (strncmp(e->key[i], prefix, lp) == 0 && lk >= ls &&
            strcmp(e->key[i] + lk - ls, suffix) == 0)
            return 1;
    }
    return 0;
}

/* Runs ./client args... with FAKECUDA_EXPECT and @p env ("" or "VAR=value ")
 * set; fills e. Returns exit status. */
static int run_client_env(const char *env, const char *const argv[], struct expect *e)
{
    char path[256], out[256], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.exp", tmpdir, argv[0]);
    snprintf(out, sizeof out, "%s/%s.out", tmpdir, argv[0]);
    snprintf(cmd, sizeof cmd, "%s", env);
    for (int i = 0; argv[i]; i++) {
        strcat(cmd, i ? " " : "FAKECUDA_EXPECT=");
        if (i == 0)
            strcat(cmd, path), strcat(cmd, " ./");
        strcat(cmd, argv[i]);
    }
    strcat(cmd, " > "), strcat(cmd, out);
    memset(e, 0, sizeof *e);
    int st = system(cmd);
    if (st != 0)
        return st;
    FILE *f = fopen(out, "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "checksum ", 9) == 0)
            snprintf(e->out_checksum, sizeof e->out_checksum, "%.16s", line + 9);
    if (f)
        fclose(f);
    return read_expect(path, e);
}

static int run_client(const char *const argv[], struct expect *e)
{
    return run_client_env("", argv, e);
}

static int test_rt_shared_maps_runtime_to_driver(void)
{
    const char *argv[] = {"client_rt_shared", "3", "16", NULL};
    struct expect e;
    CHECK_EQ(run_client(argv, &e), 0);
    CHECK_STR(e.checksum, e.out_checksum);
    CHECK_EQ(get(&e, "call runtime cudaMalloc legacy"), 2);
    CHECK_EQ(get(&e, "call driver cuMemAlloc_v2 legacy"), 2);
    CHECK_EQ(get(&e, "call runtime __cudaLaunchKernel legacy") +
                 get(&e, "call runtime cudaLaunchKernel legacy"),
             get(&e, "call driver cuLaunchKernel legacy"));
    CHECK_EQ(get(&e, "call runtime cudaDeviceSynchronize legacy"),
             get(&e, "call driver cuCtxSynchronize_v2 legacy"));
    CHECK_EQ(get(&e, "call runtime cudaMemcpy legacy"),
             get(&e, "call driver cuMemcpyHtoD_v2 legacy") +
                 get(&e, "call driver cuMemcpyDtoH_v2 legacy"));
    CHECK_EQ(get(&e, "call driver cuGetProcAddress legacy"), 1);
    CHECK(!has_prefix_suffix(&e, "call driver", "ptsz"));
    CHECK(!has_prefix_suffix(&e, "call driver", "ptds"));
    CHECK(get(&e, "host pinned") > 0 && get(&e, "host pageable") > 0);
    CHECK_EQ(get(&e, "kernel vec_add"), 4); /* 3 steps + 1 captured */
    return 0;
}

static int test_rt_ptds_uses_per_thread_exports(void)
{
    const char *argv[] = {"client_rt_ptds", "3", "16", NULL};
    struct expect e;
    CHECK_EQ(run_client(argv, &e), 0);
    CHECK_EQ(get(&e, "call runtime __cudaLaunchKernel ptsz"), 4);
    CHECK_EQ(get(&e, "call driver cuLaunchKernel ptsz"), 8);
    CHECK_EQ(get(&e, "call driver cuLaunchKernel legacy"), 0);
    CHECK_EQ(get(&e, "call driver cuMemcpyHtoD_v2 ptds"), 3);
    CHECK_EQ(get(&e, "call driver cuMemcpyHtoDAsync_v2 ptsz"), 3);
    CHECK_EQ(get(&e, "call driver cuStreamSynchronize ptsz"), 4);
    CHECK_EQ(get(&e, "call driver cuStreamSynchronize legacy"), 0);
    return 0;
}

static int test_rt_static_has_static_layer_and_same_checksum(void)
{
    const char *a1[] = {"client_rt_static", "3", "16", NULL};
    const char *a2[] = {"client_rt_shared", "3", "16", NULL};
    struct expect e1, e2;
    CHECK_EQ(run_client(a1, &e1), 0);
    CHECK_EQ(run_client(a2, &e2), 0);
    CHECK_EQ(get(&e1, "call static_runtime cudaMalloc legacy"), 2);
    CHECK_EQ(get(&e1, "call runtime cudaMalloc legacy"), 0);
    CHECK_EQ(get(&e1, "call driver cuLaunchKernel legacy"),
             get(&e2, "call driver cuLaunchKernel legacy"));
    CHECK_STR(e1.checksum, e2.checksum);
    return 0;
}

static int test_dlsym_client_counts_exact_exports(void)
{
    const char *argv[] = {"client_dlsym", "5", "8", NULL};
    struct expect e;
    CHECK_EQ(run_client(argv, &e), 0);
    CHECK_STR(e.checksum, e.out_checksum);
    CHECK_EQ(get(&e, "call driver cuLaunchKernelEx legacy"), 5);
    CHECK_EQ(get(&e, "call driver cuMemcpyHtoD_v2 legacy"), 5);
    CHECK_EQ(get(&e, "copy HtoD"), 5);
    CHECK_EQ(get(&e, "kernel add_kernel"), 5);
    return 0;
}

static int test_gpa_client_pt_gets_twins(void)
{
    const char *a_pt[] = {"client_gpa", "2", "8", "pt", NULL};
    const char *a_legacy[] = {"client_gpa", "2", "8", NULL};
    struct expect pt, legacy;
    CHECK_EQ(run_client(a_pt, &pt), 0);
    CHECK_EQ(run_client(a_legacy, &legacy), 0);
    CHECK_EQ(get(&pt, "call driver cuMemcpyBatchAsync_v2 ptsz"), 2);
    CHECK_EQ(get(&pt, "call driver cuLaunchKernel legacy"), 0);
    CHECK_EQ(get(&legacy, "call driver cuMemcpyBatchAsync_v2 legacy"), 2);
    CHECK_EQ(get(&legacy, "call driver cuCtxSynchronize_v2 legacy"), 1);
    CHECK_STR(pt.checksum, legacy.checksum);
    return 0;
}

static int test_direct_client_runs(void)
{
    const char *argv[] = {"client_direct", "2", "8", NULL};
    struct expect e;
    CHECK_EQ(run_client(argv, &e), 0);
    CHECK_STR(e.checksum, e.out_checksum);
    CHECK_EQ(get(&e, "call driver cuStreamBeginCapture_v2 legacy"), 1);
    CHECK_EQ(get(&e, "call driver cuGraphLaunch legacy"), 2);
    CHECK_EQ(get(&e, "call driver cuCtxSynchronize legacy"), 1);
    return 0;
}

/* 3 workers x 2 threads x 5 x 10 workload calls, parent 5 x 10. */
static int test_forker_totals(void)
{
    const char *argv[] = {"client_forker", "3", "2", "10", NULL};
    struct expect e;
    char out[256], line[256];
    unsigned long long calls = 0;
    CHECK_EQ(run_client(argv, &e), 0);
    snprintf(out, sizeof out, "%s/client_forker.out", tmpdir);
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    while (fgets(line, sizeof line, f))
        sscanf(line, "driver calls %llu", &calls);
    fclose(f);
    CHECK_EQ(calls, 3 * 2 * 50 + 50);
    CHECK_EQ(get(&e, "call driver cuLaunchKernel legacy"), 10); /* parent's own file */
    return 0;
}

/* On the simulated GPU, asynchronous pinned and device-to-device copies
 * move their bytes later (fake_queue.c): the downloaded bytes, and so the
 * checksums, must not change. Not client_rt_ptds: its step races there, as
 * it would on a GPU (its cudaMemset runs on the per-thread default stream,
 * which does not wait for the pinned upload on the blocking stream s). */
static int test_sim_keeps_checksums(void)
{
    const char *const clients[][5] = {{"client_rt_shared", "3", "16", NULL},
                                      {"client_direct", "2", "8", NULL},
                                      {"client_gpa", "2", "8", NULL},
                                      {"client_gpa", "2", "8", "pt", NULL}};
    for (size_t i = 0; i < sizeof clients / sizeof clients[0]; i++) {
        struct expect plain, sim;
        CHECK_EQ(run_client(clients[i], &plain), 0);
        CHECK_EQ(run_client_env("FAKECUDA_SIM=1 ", clients[i], &sim), 0);
        CHECK_STR(sim.out_checksum, plain.out_checksum);
    }
    return 0;
}

int main(void)
{
    if (mkdtemp(tmpdir) == NULL)
        return 1;
    RUN(test_rt_shared_maps_runtime_to_driver);
    RUN(test_rt_ptds_uses_per_thread_exports);
    RUN(test_rt_static_has_static_layer_and_same_checksum);
    RUN(test_dlsym_client_counts_exact_exports);
    RUN(test_gpa_client_pt_gets_twins);
    RUN(test_direct_client_runs);
    RUN(test_forker_totals);
    RUN(test_sim_keeps_checksums);
    return check_finish(tmpdir);
}
