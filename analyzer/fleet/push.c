/* push.c: `cudaspy-analyze push --clickhouse URL RUN...` (docs/fleet.md):
 * runs into ClickHouse tables for fleet-wide SQL. Owns the schema (the
 * tables, created when missing, and its version), a run's identity, and
 * the rows: every CUDA call, GPU activity record and off-CPU interval
 * streamed from the run file block by block (Native blocks of a bounded
 * size, never the whole table in memory), then what the analysis says
 * (steps, the account, findings, Python call sites), then the run's own
 * row, last. Queries
 * count a run only through its row in cudaspy_runs, so a push cut short
 * counts nothing; the next push of that run clears what it left. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "commands.h"
#include "cudaspy/api.h"
#include "cudaspy/record.h"
#include "fleet/ch.h"
#include "model/steps.h"

#define PROG "cudaspy-analyze"
#define FLEET_SCHEMA 1u /* cudaspy_schema.version this build writes */
#define PUSH_DELETE_WAIT_MS 30000 /* a run's leftovers deleted within this, or exit 2 */

/* Every table: ordered by run and time, so one run's rows sit together
 * (a re-push's clean-up and a run's queries read only those). */
static const struct table {
    const char *name, *cols, *order;
} tables[] = {
    {"cudaspy_calls",
     "run_id UInt64, t_ns UInt64, dur_ns UInt64, pid UInt32, tid UInt32, api String, "
     "nested UInt8, stream UInt64, bytes UInt64, result Int32, device UInt16, kernel String",
     "run_id, t_ns"},
    {"cudaspy_gpu",
     "run_id UInt64, t_ns UInt64, dur_ns UInt64, pid UInt32, device UInt16, kind String, "
     "name String, stream UInt32, bytes UInt64",
     "run_id, t_ns"},
    {"cudaspy_offcpu",
     "run_id UInt64, t_ns UInt64, dur_ns UInt64, pid UInt32, tid UInt32, class String, "
     "waker_pid UInt32, holder_pid UInt32, runq_ns UInt64",
     "run_id, t_ns"},
    {"cudaspy_steps", "run_id UInt64, step UInt32, t_ns UInt64, dur_ns UInt64, pid UInt32",
     "run_id, step"},
    {"cudaspy_account",
     "run_id UInt64, bucket String, ns UInt64, pct Float64, owner String", "run_id, bucket"},
    {"cudaspy_findings",
     "run_id UInt64, rank UInt16, severity String, cause String, api String, impact_ns UInt64, "
     "impact_pct Float64, summary String",
     "run_id, rank"},
    {"cudaspy_pylines",
     "run_id UInt64, site String, file String, line UInt32, function String, api String, "
     "calls UInt64, total_ns UInt64, p99_ns UInt64, idle_after_ns UInt64",
     "run_id, site"},
    {"cudaspy_runs",
     "run_id UInt64, job String, commit String, host String, command String, path String, "
     "start DateTime, t_start_ns UInt64, duration_ns UInt64, cuda_records UInt64, "
     "host_records UInt64, degraded UInt8, steps UInt64, step_p50_ns UInt64, "
     "step_p99_ns UInt64, schema UInt32",
     "run_id"},
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))
#define RUNS_TABLE (NTABLES - 1)

struct push_cli {
    const char *url, *job, *commit, *host;
    int help, quiet;
    int first; /* argv index of the first run */
};

/* What one push of one run has and counts. */
struct pusher {
    const struct ch_url *u;
    const struct push_cli *c;
    const char *path;
    struct analysis *a;
    struct cs_run *run;
    json_t *j;
    uint64_t id, rt_off; /* run id; the run's realtime minus monotonic clock */
    uint64_t rows[NTABLES];
    char (*api_names)[64]; /* cs_api_display() by api * 3 + variant, made once */
    double stream_s, stream_cpu_s; /* streaming the run file's records: wall, CPU */
    struct ch_insert in;
    struct ch_err e;
};

static const char push_usage[] =
    "Usage: " PROG " push --clickhouse URL [--job NAME] [--commit ID] [--host NAME] RUN...\n"
    "Writes each run (calls, GPU activity, off-CPU intervals, steps, the account,\n"
    "findings, Python call sites) into ClickHouse tables, creating them when\n"
    "missing (docs/fleet.md). A run already stored is left as it is.\n"
    "  --clickhouse URL  http://[USER[:PASSWORD]@]HOST[:PORT][/?database=DB]\n"
    "  --job NAME        the job the run belongs to (default: its command's program)\n"
    "  --commit ID       the code version it ran (for regressions across commits)\n"
    "  --host NAME       the host it ran on (default: the run's own)\n"
    "  -q, --quiet       no line per run\n"
    "Exit: 0 pushed or already stored, 2 usage, bad run or the server refused, 3 no memory.\n";

static int usage_error(const char *what)
{
    return cmd_usage_error("push", what);
}

static int push_parse(struct push_cli *c, int argc, char **argv)
{
    static const struct option lo[] = {
        {"clickhouse", required_argument, 0, 'c'}, {"job", required_argument, 0, 'j'},
        {"commit", required_argument, 0, 'm'},     {"host", required_argument, 0, 'H'},
        {"quiet", no_argument, 0, 'q'},            {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int opt;

    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "hq", lo, NULL)) != -1) {
        switch (opt) {
        case 'c': c->url = optarg; break;
        case 'j': c->job = optarg; break;
        case 'm': c->commit = optarg; break;
        case 'H': c->host = optarg; break;
        case 'q': c->quiet = 1; break;
        case 'h': c->help = 1; break;
        default: return usage_error(optopt ? "option needs an argument" : "unknown option");
        }
    }
    if (c->help)
        return 0;
    if (c->url == NULL)
        return usage_error("--clickhouse URL is required");
    if (optind >= argc)
        return usage_error("expected at least one RUN");
    c->first = optind;
    return 0;
}

/* ---- the schema ---- */

static int schema_ensure(const struct ch_url *u, struct ch_err *e)
{
    char sql[1024], out[64];
    int rc;

    rc = ch_query(u, "CREATE TABLE IF NOT EXISTS cudaspy_schema (version UInt32) "
                     "ENGINE = MergeTree ORDER BY version",
                  NULL, 0, e);
    for (size_t i = 0; rc == 0 && i < NTABLES; i++) {
        snprintf(sql, sizeof(sql),
                 "CREATE TABLE IF NOT EXISTS %s (%s) ENGINE = MergeTree ORDER BY (%s)",
                 tables[i].name, tables[i].cols, tables[i].order);
        rc = ch_query(u, sql, NULL, 0, e);
    }
    if (rc == 0)
        rc = ch_query(u, "SELECT max(version) FROM cudaspy_schema", out, sizeof(out), e);
    if (rc == 0 && strtoul(out, NULL, 10) > FLEET_SCHEMA) {
        snprintf(e->msg, sizeof(e->msg),
                 "%s: the tables are of schema %lu, newer than this build's %u", u->text,
                 strtoul(out, NULL, 10), FLEET_SCHEMA);
        return -EPROTO;
    }
    if (rc == 0 && strtoul(out, NULL, 10) < FLEET_SCHEMA) {
        snprintf(sql, sizeof(sql), "INSERT INTO cudaspy_schema VALUES (%u)", FLEET_SCHEMA);
        rc = ch_query(u, sql, NULL, 0, e);
    }
    return rc;
}

/* ---- a run's identity ---- */

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ^ 0xff; /* a field's end: "ab"+"c" differs from "a"+"bc" */
}

/* The collector that wrote it, on its host, at its start: the same run
 * wherever its file is copied to, another run however alike. */
static uint64_t run_id(struct cs_run *r)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const char *keys[] = {"host", "collector_pid", "t_start_ns", "realtime_offset_ns"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        h = fnv(h, cs_run_meta(r, keys[i]));
    return h & 0x7fffffffffffffffull; /* prints the same signed or not */
}

/* ---- rows streamed from the run file ---- */

typedef int (*rows_fn)(struct pusher *p, const void *rec); /* 1: a row written */

/* Every record of @p kind, each through @p fn, into table @p t. */
static int stream_kind(struct pusher *p, size_t t, unsigned kind, rows_fn fn)
{
    struct cs_cursor *cur = NULL;
    const struct cs_blk_hdr *h;
    const void *recs;
    struct cs_err err = {{0}};
    int rc = ch_insert_begin(p->u, tables[t].name, tables[t].cols, &p->in, &p->e);

    if (rc < 0)
        return rc;
    rc = cs_cursor_open(p->run, kind, 0, UINT64_MAX, &cur);
    if (rc == 0)
        cs_cursor_release_pages(cur);
    while (rc == 0 && !p->in.failed && (rc = cs_cursor_next(cur, &h, &recs, &err)) == 1) {
        rc = 0;
        if (h->kind != kind || h->rec_size != cs_rec_size(kind))
            continue;
        for (uint32_t i = 0; i < h->n; i++)
            p->rows[t] += (uint64_t)fn(p, (const char *)recs + (size_t)i * h->rec_size);
    }
    cs_cursor_close(cur);
    if (rc < 0) { /* a bad run: the server must not keep a part of it */
        snprintf(p->e.msg, sizeof(p->e.msg), "%s: %s", p->path,
                 err.msg[0] ? err.msg : cs_strerror(rc));
        ch_insert_abort(&p->in);
        ch_insert_end(&p->in, &(struct ch_err){{0}});
        return rc;
    }
    return ch_insert_end(&p->in, &p->e);
}

/* The program's calls: not the tracer's own (CS_CF_TRACER), as in the report. */
static int call_row(struct pusher *p, const void *rec)
{
    const struct cs_rec_cuda *r = rec;
    const char *api_name;
    char api[64];

    if (r->flags & CS_CF_TRACER)
        return 0;
    if (r->api < CS_API_COUNT && r->variant <= CS_VAR_PTDS) {
        char *name = p->api_names[r->api * 3u + r->variant];
        if (name[0] == '\0')
            cs_api_display((enum cs_api)r->api, (enum cs_variant)r->variant, name, 64);
        api_name = name;
    } else {
        api_name = cs_api_display((enum cs_api)r->api, (enum cs_variant)r->variant, api,
                                  sizeof(api));
    }
    ch_u64(&p->in, p->id);
    ch_u64(&p->in, r->t_enter_ns + p->rt_off);
    ch_u64(&p->in, r->t_exit_ns > r->t_enter_ns ? r->t_exit_ns - r->t_enter_ns : 0);
    ch_u32(&p->in, r->pid);
    ch_u32(&p->in, r->tid);
    ch_str(&p->in, api_name);
    ch_u8(&p->in, (r->flags & CS_CF_NESTED) != 0);
    ch_u64(&p->in, r->stream);
    ch_u64(&p->in, r->bytes);
    ch_u32(&p->in, (uint32_t)r->result);
    ch_u16(&p->in, r->device);
    ch_str(&p->in, r->flags & CS_CF_HAS_NAME ? cs_run_string(p->run, r->name_id) : "");
    return 1;
}

static int gpu_row(struct pusher *p, const void *rec)
{
    static const char *kinds[] = {"", "kernel", "memcpy", "memset"};
    const struct cs_rec_gpu *r = rec;

    ch_u64(&p->in, p->id);
    ch_u64(&p->in, r->t_start_ns + p->rt_off);
    ch_u64(&p->in, r->t_end_ns > r->t_start_ns ? r->t_end_ns - r->t_start_ns : 0);
    ch_u32(&p->in, r->pid);
    ch_u16(&p->in, r->device);
    ch_str(&p->in, r->kind <= CS_GPU_MEMSET ? kinds[r->kind] : "");
    ch_str(&p->in, r->kind == CS_GPU_KERNEL ? cs_run_string(p->run, r->name_id) : "");
    ch_u32(&p->in, r->stream_id);
    ch_u64(&p->in, r->bytes);
    return 1;
}

static int offcpu_row(struct pusher *p, const void *rec)
{
    static const char *cls[] = {"", "sleep", "disk", "preempted", "blocked", "other"};
    const struct cs_rec_offcpu *r = rec;

    ch_u64(&p->in, p->id);
    ch_u64(&p->in, r->t_start_ns + p->rt_off);
    ch_u64(&p->in, r->t_end_ns > r->t_start_ns ? r->t_end_ns - r->t_start_ns : 0);
    ch_u32(&p->in, r->pid);
    ch_u32(&p->in, r->tid);
    ch_str(&p->in, r->cls <= CS_OFF_OTHER ? cls[r->cls] : "");
    ch_u32(&p->in, r->waker_pid);
    ch_u32(&p->in, r->holder_pid);
    ch_u64(&p->in, r->runq_ns);
    return 1;
}

/* ---- rows from the analysis ---- */

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static uint64_t ju64(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
                                                           : 0;
}

static uint64_t step_dur(const struct m_step *s)
{
    return s->t_end_ns > s->t_start_ns ? s->t_end_ns - s->t_start_ns : 0;
}

static int push_steps(struct pusher *p, size_t t)
{
    uint32_t pid = 0, tid = 0;
    const struct steps *s = analysis_steps(p->a, &pid, &tid);
    int rc = ch_insert_begin(p->u, tables[t].name, tables[t].cols, &p->in, &p->e);

    for (size_t i = 0; rc == 0 && s && i < s->n; i++) {
        ch_u64(&p->in, p->id);
        ch_u32(&p->in, (uint32_t)i);
        ch_u64(&p->in, s->s[i].t_start_ns + p->rt_off);
        ch_u64(&p->in, step_dur(&s->s[i]));
        ch_u32(&p->in, pid);
        p->rows[t]++;
    }
    return rc < 0 ? rc : ch_insert_end(&p->in, &p->e);
}

/* The rows of JSON array @p arr (an object's key @p key), each by @p fn. */
typedef void (*json_row_fn)(struct pusher *p, const json_t *o, size_t i);

static int push_json(struct pusher *p, size_t t, const json_t *arr, json_row_fn fn)
{
    int rc = ch_insert_begin(p->u, tables[t].name, tables[t].cols, &p->in, &p->e);
    size_t i;
    json_t *o;

    if (rc < 0)
        return rc;
    json_array_foreach(arr, i, o) {
        fn(p, o, i);
        p->rows[t]++;
    }
    return ch_insert_end(&p->in, &p->e);
}

static void account_row(struct pusher *p, const json_t *o, size_t i)
{
    (void)i;
    ch_u64(&p->in, p->id);
    ch_str(&p->in, jstr(o, "name"));
    ch_u64(&p->in, ju64(o, "ns"));
    ch_f64(&p->in, json_number_value(json_object_get(o, "pct")));
    ch_str(&p->in, jstr(o, "owner"));
}

static void finding_row(struct pusher *p, const json_t *o, size_t i)
{
    ch_u64(&p->in, p->id);
    ch_u16(&p->in, (uint16_t)(i + 1));
    ch_str(&p->in, jstr(o, "severity"));
    ch_str(&p->in, jstr(o, "cause"));
    ch_str(&p->in, jstr(o, "api"));
    ch_u64(&p->in, ju64(o, "impact_ns"));
    ch_f64(&p->in, json_number_value(json_object_get(o, "impact_pct")));
    ch_str(&p->in, jstr(o, "summary"));
}

static void pyline_row(struct pusher *p, const json_t *o, size_t i)
{
    (void)i;
    ch_u64(&p->in, p->id);
    ch_str(&p->in, jstr(o, "text"));
    ch_str(&p->in, jstr(o, "file"));
    ch_u32(&p->in, (uint32_t)ju64(o, "line"));
    ch_str(&p->in, jstr(o, "function"));
    ch_str(&p->in, jstr(o, "api"));
    ch_u64(&p->in, ju64(o, "calls"));
    ch_u64(&p->in, ju64(o, "total_ns"));
    ch_u64(&p->in, ju64(o, "p99_ns"));
    ch_u64(&p->in, ju64(o, "idle_after_ns"));
}

/* The program's name from its command line: the job by default. */
static void command_job(const char *cmd, char *out, size_t n)
{
    size_t len = strcspn(cmd, " ");
    const char *slash = memrchr(cmd, '/', len);
    const char *b = slash ? slash + 1 : cmd;

    snprintf(out, n, "%.*s", (int)(len - (size_t)(b - cmd)), b);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank, as the analyzer reports percentiles. */
static uint64_t step_pct(const struct steps *s, double q)
{
    uint64_t *d, v;
    size_t k;

    if (s == NULL || s->n == 0 || (d = malloc(s->n * sizeof(*d))) == NULL)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        d[i] = step_dur(&s->s[i]);
    qsort(d, s->n, sizeof(*d), cmp_u64);
    k = (size_t)(q * (double)s->n + 0.999999);
    v = d[k ? k - 1 : 0];
    free(d);
    return v;
}

static int push_run_row(struct pusher *p)
{
    const json_t *file = json_array_get(json_object_get(json_object_get(p->j, "run"), "files"), 0);
    const char *cmd = jstr(file, "command");
    uint32_t pid, tid;
    const struct steps *s = analysis_steps(p->a, &pid, &tid);
    uint64_t start = cs_run_meta_u64(p->run, "t_start_ns", 0) + p->rt_off;
    char job[256];
    int rc;

    command_job(cmd, job, sizeof(job));
    rc = ch_insert_begin(p->u, tables[RUNS_TABLE].name, tables[RUNS_TABLE].cols, &p->in,
                         &p->e);
    if (rc < 0)
        return rc;
    ch_u64(&p->in, p->id);
    ch_str(&p->in, p->c->job ? p->c->job : job);
    ch_str(&p->in, p->c->commit ? p->c->commit : "");
    ch_str(&p->in, p->c->host ? p->c->host : jstr(file, "host"));
    ch_str(&p->in, cmd);
    ch_str(&p->in, p->path);
    ch_u32(&p->in, (uint32_t)(start / 1000000000ull));
    ch_u64(&p->in, start);
    ch_u64(&p->in, ju64(file, "duration_ns"));
    ch_u64(&p->in, ju64(json_object_get(p->j, "run"), "cuda_records"));
    ch_u64(&p->in, ju64(json_object_get(p->j, "run"), "host_records"));
    ch_u8(&p->in, json_is_true(json_object_get(file, "degraded")));
    ch_u64(&p->in, s ? s->n : 0);
    ch_u64(&p->in, step_pct(s, 0.5));
    ch_u64(&p->in, step_pct(s, 0.99));
    ch_u32(&p->in, FLEET_SCHEMA);
    p->rows[RUNS_TABLE] = 1;
    return ch_insert_end(&p->in, &p->e);
}

/* ---- one run ---- */

/* ClickHouse deletes in the background: wait (bounded) until the deletes
 * of a run's leftovers are done, so that its new rows are not mixed with
 * them even for a moment. */
static int deletes_wait(struct pusher *p)
{
    char out[64];
    int rc;

    for (int i = 0; i < PUSH_DELETE_WAIT_MS / 50; i++) {
        rc = ch_query(p->u,
                      "SELECT count() FROM system.mutations WHERE is_done = 0 AND "
                      "table LIKE 'cudaspy_%' AND database = currentDatabase()",
                      out, sizeof(out), &p->e);
        if (rc < 0 || strtoull(out, NULL, 10) == 0)
            return rc;
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    snprintf(p->e.msg, sizeof(p->e.msg),
             "%s: the rows an earlier push of run %" PRIu64 " left are still being deleted "
             "after %d s; push it again later",
             p->u->text, p->id, PUSH_DELETE_WAIT_MS / 1000);
    return -ETIMEDOUT;
}

/* Is the run stored (1), or not (0: rows a push cut short left are
 * deleted first)? */
static int stored(struct pusher *p)
{
    char sql[4096], out[64];
    size_t n = 0;
    int rc;

    snprintf(sql, sizeof(sql), "SELECT count() FROM cudaspy_runs WHERE run_id = %" PRIu64,
             p->id);
    if ((rc = ch_query(p->u, sql, out, sizeof(out), &p->e)) < 0)
        return rc;
    if (strtoull(out, NULL, 10) > 0)
        return 1;
    n = (size_t)snprintf(sql, sizeof(sql), "SELECT 0");
    for (size_t i = 0; i < RUNS_TABLE; i++)
        n += (size_t)snprintf(sql + n, sizeof(sql) - n,
                              " + (SELECT count() FROM %s WHERE run_id = %" PRIu64 ")",
                              tables[i].name, p->id);
    if ((rc = ch_query(p->u, sql, out, sizeof(out), &p->e)) < 0 || strtoull(out, NULL, 10) == 0)
        return rc;
    for (size_t i = 0; i < RUNS_TABLE; i++) {
        snprintf(sql, sizeof(sql), "ALTER TABLE %s DELETE WHERE run_id = %" PRIu64,
                 tables[i].name, p->id);
        if ((rc = ch_query(p->u, sql, NULL, 0, &p->e)) < 0)
            return rc;
    }
    return deletes_wait(p);
}

static double now_s(void);

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int push_rows(struct pusher *p)
{
    json_t *pyl = analysis_pylines(p->a);
    double t0 = now_s(), c0 = cpu_s();
    int rc = stream_kind(p, 0, CS_REC_CUDA, call_row);

    if (rc == 0)
        rc = stream_kind(p, 1, CS_REC_GPU, gpu_row);
    if (rc == 0)
        rc = stream_kind(p, 2, CS_REC_OFFCPU, offcpu_row);
    p->stream_s = now_s() - t0;
    p->stream_cpu_s = cpu_s() - c0;
    if (rc == 0)
        rc = push_steps(p, 3);
    if (rc == 0)
        rc = push_json(p, 4, json_object_get(json_object_get(p->j, "account"), "buckets"),
                       account_row);
    if (rc == 0)
        rc = push_json(p, 5, json_object_get(p->j, "chains"), finding_row);
    if (rc == 0)
        rc = push_json(p, 6, json_object_get(pyl, "rows"), pyline_row);
    json_decref(pyl);
    return rc == 0 ? push_run_row(p) : rc;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int push_one(const struct push_cli *c, const struct ch_url *u, const char *path,
                    struct pusher *p)
{
    struct analysis_opts o;
    struct cs_err err = {{0}};
    double t0 = now_s();
    int rc;

    memset(p->rows, 0, sizeof(p->rows));
    p->u = u, p->c = c, p->path = path, p->e.msg[0] = '\0';
    analysis_opts_init(&o);
    o.by_pyline = 1;
    if ((rc = analysis_load(&path, 1, &o, &p->a, &err)) < 0) {
        if (err.msg[0]) /* it names the file */
            fprintf(stderr, PROG ": push: %s\n", err.msg);
        else
            fprintf(stderr, PROG ": push: %s: %s\n", path, cs_strerror(rc));
        return rc == -ENOMEM ? 3 : 2;
    }
    p->run = analysis_run(p->a, 0);
    p->id = run_id(p->run);
    p->rt_off = cs_run_meta_u64(p->run, "realtime_offset_ns", 0);
    p->j = analysis_json(p->a);
    rc = p->j ? stored(p) : -ENOMEM;
    if (rc == 1 && !c->quiet)
        printf("push: %s: already stored (run %" PRIu64 ")\n", path, p->id);
    else if (rc == 0 && (rc = push_rows(p)) == 0 && !c->quiet)
        printf("push: %s: run %" PRIu64 ": %" PRIu64 " calls, %" PRIu64 " GPU, %" PRIu64
               " off-CPU, %" PRIu64 " steps, %" PRIu64 " findings into %s in %.2f s"
               " (records streamed in %.2f s, %.2f s of CPU)\n",
               path, p->id, p->rows[0], p->rows[1], p->rows[2], p->rows[3], p->rows[5],
               u->text, now_s() - t0, p->stream_s, p->stream_cpu_s);
    json_decref(p->j);
    analysis_free(p->a);
    if (rc < 0)
        fprintf(stderr, PROG ": push: %s\n", p->e.msg[0] ? p->e.msg : cs_strerror(rc));
    return rc < 0 ? (rc == -ENOMEM ? 3 : 2) : 0;
}

int push_main(int argc, char **argv)
{
    struct push_cli c = {0};
    struct ch_url u;
    struct ch_err e = {{0}};
    struct pusher *p;
    int rc = push_parse(&c, argc, argv);

    if (rc || c.help) {
        if (c.help)
            fputs(push_usage, stdout);
        return rc;
    }
    if (ch_url_parse(c.url, &u, &e) < 0 || schema_ensure(&u, &e) < 0) {
        fprintf(stderr, PROG ": push: %s\n", e.msg);
        return 2;
    }
    if ((p = calloc(1, sizeof(*p))) == NULL ||
        (p->api_names = calloc(CS_API_COUNT * 3u, sizeof(*p->api_names))) == NULL) {
        free(p);
        return 3;
    }
    for (int i = c.first; i < argc && rc == 0; i++)
        rc = push_one(&c, &u, argv[i], p);
    free(p->api_names);
    free(p);
    return rc;
}
