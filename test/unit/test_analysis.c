/* test_analysis.c: analyzer/analysis.c on small run files written here with
 * the real writer, where every duration and time is known: exact
 * percentiles per API, nested driver calls kept out of the outermost rows,
 * analysis_durations(), the --since/--until window, --pid, several runs
 * kept apart, and the per-process roles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "analysis.h"
#include "model/model.h"
#include "check.h"
#include "cudaspy/api.h"

#define MS 1000000ull
#define US 1000ull
#define T0 (5000 * MS)

static char dir[] = "/tmp/cs_test_analysis.XXXXXX";

struct writer {
    struct cs_store *s;
    struct cs_rec_cuda rec[600];
    uint32_t n;
};

static void call(struct writer *w, uint16_t api, uint32_t pid, uint64_t t0, uint64_t dur,
                 uint16_t flags, uint32_t name)
{
    struct cs_rec_cuda *r = &w->rec[w->n++];

    memset(r, 0, sizeof(*r));
    r->t_enter_ns = t0;
    r->t_exit_ns = t0 + dur;
    r->pid = pid;
    r->tid = pid;
    r->api = api;
    r->flags = flags | (name ? CS_CF_HAS_NAME : 0);
    r->name_id = name;
    r->seq = w->n;
}

static int flush(struct writer *w)
{
    struct cs_blk_hdr h = {.n = w->n, .kind = CS_REC_CUDA, .rec_size = sizeof(struct cs_rec_cuda)};

    h.ts_first_ns = w->rec[0].t_enter_ns;
    h.ts_last_ns = w->rec[w->n - 1].t_exit_ns;
    return cs_store_put_block(w->s, 1, &h, w->rec);
}

static int proc_row(struct cs_store *s, uint32_t pid, uint32_t ppid, uint32_t flags,
                    const char *comm)
{
    struct cs_proc p = {.pid = pid, .ppid = ppid, .start_ns = T0, .exit_status = -1,
                        .flags = flags, .rank = CS_RANK_NONE};

    snprintf(p.comm, sizeof(p.comm), "%s", comm);
    return cs_store_put_proc(s, &p);
}

/* A run: pid @p pid makes 100 cudaStreamSynchronize calls of 1..100 us,
 * one per millisecond from T0 + 1 ms, each with a nested cuStreamSynchronize
 * of half its length, and 10 launches of kernel "k1"; pid+1 is its worker. */
static int write_run(const char *path, uint32_t pid, int with_end)
{
    struct writer *w = calloc(1, sizeof(*w));
    uint32_t k1;
    int rc;

    CHECK(w && (w->s = cs_store_new()));
    CHECK_OK(cs_store_open(w->s, path, NULL, NULL));
    CHECK_OK(cs_store_intern(w->s, "k1", 2, &k1));
    for (uint64_t i = 1; i <= 100; i++) {
        uint64_t t = T0 + i * MS;
        call(w, CS_API_cudaStreamSynchronize, pid, t, i * US, 0, 0);
        call(w, CS_API_cuStreamSynchronize, pid, t + 1, i * US / 2, CS_CF_NESTED, 0);
        if (i % 10 == 0)
            call(w, CS_API_cudaLaunchKernel, pid, t + 200 * US, 5 * US, 0, k1);
    }
    CHECK_OK(flush(w));
    CHECK_OK(proc_row(w->s, pid, 1, CS_PF_CUDA | CS_PF_ROOT, "python"));
    CHECK_OK(proc_row(w->s, pid + 1, pid, 0, "worker"));
    CHECK_OK(cs_store_put_meta_u64(w->s, "t_start_ns", T0));
    if (with_end)
        CHECK_OK(cs_store_put_meta_u64(w->s, "t_end_ns", T0 + 200 * MS));
    CHECK_OK(cs_store_put_meta(w->s, "sampler_tier", "none"));
    rc = cs_store_commit(w->s);
    cs_store_free(w->s);
    free(w);
    CHECK_OK(rc);
    return 0;
}

static char run_a[128], run_b[128], run_c[128];

static const json_t *api_row(const json_t *j, const char *name, int nested)
{
    const json_t *v;
    size_t i;

    json_array_foreach(json_object_get(j, "apis"), i, v)
        if (!strcmp(json_string_value(json_object_get(v, "api")), name) &&
            json_is_true(json_object_get(v, "nested")) == nested)
            return v;
    return NULL;
}

static json_int_t field(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static struct analysis *load(const char *const *paths, int n, const struct analysis_opts *o)
{
    struct analysis *a = NULL;
    struct cs_err err = {""};
    int rc = analysis_load(paths, n, o, &a, &err);

    if (rc < 0)
        fprintf(stderr, "analysis_load: %s\n", err.msg);
    return a;
}

static int test_percentiles_are_exact_nearest_rank(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a};
    struct analysis *a;
    json_t *j;
    const json_t *r;

    analysis_opts_init(&o);
    CHECK(a = load(paths, 1, &o));
    j = analysis_json(a);
    CHECK(r = api_row(j, "cudaStreamSynchronize", 0));
    CHECK_EQ(field(r, "count"), 100);
    CHECK_EQ(field(r, "p50_ns"), 50 * US);
    CHECK_EQ(field(r, "p90_ns"), 90 * US);
    CHECK_EQ(field(r, "p99_ns"), 99 * US);
    CHECK_EQ(field(r, "p999_ns"), 100 * US);
    CHECK_EQ(field(r, "max_ns"), 100 * US);
    CHECK_EQ(field(r, "total_ns"), 5050 * US);
    json_decref(j);
    analysis_free(a);
    return 0;
}

static int test_nested_driver_calls_have_their_own_row(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a};
    struct analysis *a;
    json_t *j;
    const json_t *r;

    analysis_opts_init(&o);
    CHECK(a = load(paths, 1, &o));
    j = analysis_json(a);
    CHECK(api_row(j, "cuStreamSynchronize", 0) == NULL);
    CHECK(r = api_row(j, "cuStreamSynchronize", 1));
    CHECK_EQ(field(r, "count"), 100);
    CHECK_EQ(field(json_object_get(j, "run"), "outermost_calls"), 110);
    CHECK_EQ(field(json_object_get(j, "run"), "nested_calls"), 100);
    json_decref(j);
    analysis_free(a);
    return 0;
}

static int test_durations_sorted_by_api_pid_kernel(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a};
    struct analysis *a;
    const uint64_t *d;
    size_t n;

    analysis_opts_init(&o);
    CHECK(a = load(paths, 1, &o));
    CHECK(d = analysis_durations(a, "cudaStreamSynchronize", 0, NULL, &n));
    CHECK_EQ(n, 100);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(d[i], (i + 1) * US);
    CHECK(analysis_durations(a, "cudaStreamSynchronize", 999, NULL, &n) == NULL);
    CHECK_EQ(n, 0);
    CHECK(d = analysis_durations(a, "cudaLaunchKernel", 100, "k1", &n));
    CHECK_EQ(n, 10);
    CHECK(analysis_durations(a, "cudaLaunchKernel", 0, "nope", &n) == NULL);
    CHECK(analysis_durations(a, "noSuchApi", 0, NULL, &n) == NULL);
    analysis_free(a);
    return 0;
}

static int test_window_keeps_calls_entered_inside(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a};
    struct analysis *a;
    const uint64_t *d;
    size_t n;

    analysis_opts_init(&o);
    o.since_ns = 10 * MS;  /* calls 10..19 enter at T0 + 10..19 ms */
    o.until_ns = 20 * MS;
    CHECK(a = load(paths, 1, &o));
    CHECK(d = analysis_durations(a, "cudaStreamSynchronize", 0, NULL, &n));
    CHECK_EQ(n, 10);
    CHECK_EQ(d[0], 10 * US);
    CHECK_EQ(d[9], 19 * US);
    analysis_free(a);
    return 0;
}

static int test_runs_are_kept_apart(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a, run_b};
    struct analysis *a;
    json_t *j;
    const json_t *v;
    size_t i, cuda = 0, workers = 0;

    analysis_opts_init(&o);
    CHECK(a = load(paths, 2, &o));
    CHECK_EQ(analysis_nruns(a), 2);
    j = analysis_json(a);
    json_array_foreach(json_object_get(j, "processes"), i, v) {
        const char *role = json_string_value(json_object_get(v, "role"));
        cuda += !strcmp(role, "cuda_main");
        workers += !strcmp(role, "worker");
        CHECK_EQ(field(v, "pid") - field(v, "run"), !strcmp(role, "worker") ? 101 : 100);
    }
    CHECK_EQ(cuda, 2);    /* pid 100 in run 0 and pid 101 in run 1 */
    CHECK_EQ(workers, 2); /* pid 101 in run 0 and pid 102 in run 1 */
    CHECK_EQ(field(api_row(j, "cudaStreamSynchronize", 0), "count"), 200);
    json_decref(j);
    analysis_free(a);
    return 0;
}

static int test_pid_filter(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a, run_b};
    struct analysis *a;
    size_t n;

    analysis_opts_init(&o);
    o.pid = 101;
    CHECK(a = load(paths, 2, &o));
    CHECK(analysis_durations(a, "cudaStreamSynchronize", 0, NULL, &n));
    CHECK_EQ(n, 100);
    analysis_free(a);
    return 0;
}

static int test_no_sampler_says_what_is_missing(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a};
    struct analysis *a;
    json_t *j;

    analysis_opts_init(&o);
    CHECK(a = load(paths, 1, &o));
    j = analysis_json(a);
    CHECK_STR(json_string_value(json_array_get(json_object_get(j, "missing"), 0)),
              "no host data (sampler tier none)");
    json_decref(j);
    analysis_free(a);
    return 0;
}

static int test_split_tables(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a, run_b};
    struct analysis *a;
    json_t *j;
    const json_t *k, *p;

    analysis_opts_init(&o);
    o.by_pid = o.by_stream = o.by_kernel = 1;
    CHECK(a = load(paths, 2, &o));
    j = analysis_json(a);
    CHECK_EQ(json_array_size(json_object_get(j, "apis_by_kernel")), 1); /* "k1" of both runs */
    k = json_array_get(json_object_get(j, "apis_by_kernel"), 0);
    CHECK_STR(json_string_value(json_object_get(k, "kernel")), "k1");
    CHECK_EQ(field(k, "count"), 20);
    /* by pid: sync, nested sync and launch rows for each of the two runs */
    CHECK_EQ(json_array_size(json_object_get(j, "apis_by_pid")), 6);
    p = json_array_get(json_object_get(j, "apis_by_pid"), 0);
    CHECK_EQ(field(p, "count"), 100);
    CHECK(json_object_get(json_array_get(json_object_get(j, "apis_by_stream"), 0), "stream"));
    json_decref(j);
    analysis_free(a);
    return 0;
}

/* A collector that died wrote no t_end_ns: the run ends with its last call
 * (the 100th sync: enters at 100 ms, lasts 100 us). */
static int test_run_without_end_ends_at_last_record(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_c};
    struct analysis *a;
    json_t *j;

    analysis_opts_init(&o);
    CHECK(a = load(paths, 1, &o));
    j = analysis_json(a);
    CHECK_EQ(field(json_object_get(j, "run"), "duration_ns"), 100 * MS + 200 * US + 5 * US);
    json_decref(j);
    analysis_free(a);
    return 0;
}

/* Mappings of /proc/self/maps under the scratch folder @p d: the unlinked
 * scratch files the model holds. */
static int scratch_maps(const char *d)
{
    char line[4608];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");

    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, d) != NULL && strstr(line, "(deleted)") != NULL;
    if (f)
        fclose(f);
    return n;
}

/* CUDASPY_SCRATCH=DIR (issue 36): the big arrays are unlinked files in DIR
 * while the analysis lives, gone after it, and the JSON is the same. */
static int test_scratch_files_hold_the_model(void)
{
    struct analysis_opts o;
    const char *paths[] = {run_a};
    struct analysis *a;
    char *anon, *file;
    struct statfs fs;
    json_t *j;

    if (statfs(dir, &fs) == 0 && fs.f_type == 0x01021994) { /* tmpfs: never scratch */
        printf("skip test_scratch_files_hold_the_model: %s is tmpfs\n", dir);
        return 0;
    }
    analysis_opts_init(&o);
    setenv("CUDASPY_SCRATCH", "off", 1);
    CHECK(a = load(paths, 1, &o));
    CHECK(model_scratch_dir() == NULL);
    anon = json_dumps(j = analysis_json(a), JSON_COMPACT);
    json_decref(j);
    analysis_free(a);
    setenv("CUDASPY_SCRATCH", dir, 1);
    a = load(paths, 1, &o);
    unsetenv("CUDASPY_SCRATCH");
    CHECK(a);
    CHECK_STR(model_scratch_dir(), dir);
    CHECK(scratch_maps(dir) >= 1);
    file = json_dumps(j = analysis_json(a), JSON_COMPACT);
    json_decref(j);
    analysis_free(a);
    CHECK_EQ(scratch_maps(dir), 0);
    CHECK(anon && file);
    CHECK_STR(file, anon);
    free(anon);
    free(file);
    return 0;
}

int main(void)
{
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(run_a, sizeof(run_a), "%s/a.lmdb", dir);
    snprintf(run_b, sizeof(run_b), "%s/b.lmdb", dir);
    snprintf(run_c, sizeof(run_c), "%s/c.lmdb", dir);
    if (write_run(run_a, 100, 1) < 0 || write_run(run_b, 101, 1) < 0 || write_run(run_c, 100, 0) < 0)
        return 1;
    RUN(test_percentiles_are_exact_nearest_rank);
    RUN(test_nested_driver_calls_have_their_own_row);
    RUN(test_durations_sorted_by_api_pid_kernel);
    RUN(test_window_keeps_calls_entered_inside);
    RUN(test_runs_are_kept_apart);
    RUN(test_pid_filter);
    RUN(test_no_sampler_says_what_is_missing);
    RUN(test_run_without_end_ends_at_last_record);
    RUN(test_split_tables);
    RUN(test_scratch_files_hold_the_model);
    unlink(run_a);
    unlink(run_b);
    unlink(run_c);
    char lock[160];
    snprintf(lock, sizeof(lock), "%s-lock", run_a);
    unlink(lock);
    snprintf(lock, sizeof(lock), "%s-lock", run_b);
    unlink(lock);
    snprintf(lock, sizeof(lock), "%s-lock", run_c);
    unlink(lock);
    rmdir(dir);
    return check_status();
}
