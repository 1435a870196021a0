/* test_summary.c: unit.summary: the saved gate summary (summary.c) reads
 * back what it wrote and refuses everything else with CS_E_CORRUPT or
 * CS_E_VERSION, never a crash: wrong format or version, bad fields, samples
 * out of order, and every truncation of a valid file. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../analyzer/gate/summary.h"
#include "check.h"

static const char good[] =
    "{\"format\":\"cudaspy-gate-summary\",\"version\":1,\"source\":\"b.lmdb\",\"groups\":["
    "{\"api\":\"cuStreamSynchronize\",\"kernel\":null,\"count\":5,\"min_ns\":10,\"max_ns\":50,"
    "\"p50_ns\":30,\"p90_ns\":50,\"p99_ns\":50,\"p999_ns\":50,\"samples_ns\":[10,20,30,40,50]},"
    "{\"api\":\"cudaLaunchKernel\",\"kernel\":\"gemm\",\"count\":3,\"min_ns\":1,\"max_ns\":3,"
    "\"p50_ns\":2,\"p90_ns\":3,\"p99_ns\":3,\"p999_ns\":3,\"samples_ns\":[1,2,3]}]}";

/* Format 2: the run part, and a total per group. */
static const char good2[] =
    "{\"format\":\"cudaspy-gate-summary\",\"version\":2,\"source\":\"b.lmdb\","
    "\"window_ns\":300000000,\"launches\":200,"
    "\"steps\":{\"source\":\"inferred\",\"how\":\"every cuStreamSynchronize\",\"count\":4,"
    "\"p50_ns\":3000,\"p99_ns\":3300,\"samples_ns\":[2900,3000,3100,3300]},"
    "\"gpu\":{\"source\":\"sampled\",\"idle_fraction\":0.25},"
    "\"high_findings\":[\"host_bound\"],\"groups\":["
    "{\"api\":\"cuStreamSynchronize\",\"kernel\":null,\"count\":5,\"min_ns\":10,\"max_ns\":50,"
    "\"p50_ns\":30,\"p90_ns\":50,\"p99_ns\":50,\"p999_ns\":50,\"total_ns\":150,"
    "\"samples_ns\":[10,20,30,40,50]}]}";

/* Parse @p text as a summary. @return summary_from_json's code (-1: not JSON) */
static int parse(const char *text, struct summary **s)
{
    struct cs_err err = {{0}};
    json_t *j = json_loads(text, 0, NULL);
    if (!j)
        return -1;
    int rc = summary_from_json(j, "t.json", s, &err);
    json_decref(j);
    if (rc == 0)
        CHECK(err.msg[0] == '\0');
    return rc;
}

/* @p s written as JSON and parsed back into *@p t. */
static int reparse(const struct summary *s, struct summary **t)
{
    json_t *j = summary_to_json(s);
    char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
    int rc = txt ? parse(txt, t) : -1;

    json_decref(j);
    free(txt);
    return rc;
}

/* @p good with the first @p from replaced by @p to. */
static char *edit(const char *from, const char *to)
{
    static char buf[sizeof(good) + 64];
    const char *p = strstr(good, from);
    snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(p - good), good, to, p + strlen(from));
    return buf;
}

static int test_round_trip_keeps_every_field(void)
{
    struct summary *s = NULL, *t = NULL;
    CHECK_OK(parse(good, &s));
    CHECK_EQ(s->n, 2);
    CHECK_OK(reparse(s, &t));
    const struct summary_group *g = summary_find(t, "cudaLaunchKernel", "gemm");
    CHECK(g != NULL);
    CHECK_EQ(g->count, 3);
    CHECK_EQ(g->q_ns[SUMMARY_P50], 2);
    CHECK_EQ(g->nsamples, 3);
    CHECK_EQ(g->samples_ns[2], 3);
    CHECK(summary_find(t, "cuStreamSynchronize", NULL) != NULL);
    CHECK(summary_find(t, "cuStreamSynchronize", "gemm") == NULL);
    summary_free(s);
    summary_free(t);
    return 0;
}

/* A version 1 file loads with no run part, and is written back as version 1. */
static int test_version_1_still_loads(void)
{
    struct summary *s = NULL;
    CHECK_OK(parse(good, &s));
    CHECK_EQ(s->has_run, 0);
    CHECK_EQ(s->groups[0].total_ns, 0);
    json_t *j = summary_to_json(s);
    CHECK_EQ(json_integer_value(json_object_get(j, "version")), 1);
    CHECK(json_object_get(j, "steps") == NULL);
    CHECK(json_object_get(json_array_get(json_object_get(j, "groups"), 0), "total_ns") == NULL);
    json_decref(j);
    summary_free(s);
    return 0;
}

static int test_version_2_round_trip(void)
{
    struct summary *s = NULL, *t = NULL;
    CHECK_OK(parse(good2, &s));
    CHECK_EQ(s->has_run, 1);
    CHECK_OK(reparse(s, &t));
    CHECK_EQ(t->run.window_ns, 300000000);
    CHECK_EQ(t->run.launches, 200);
    CHECK_STR(t->run.steps.source, "inferred");
    CHECK_EQ(t->run.steps.count, 4);
    CHECK_EQ(t->run.steps.p99_ns, 3300);
    CHECK_EQ(t->run.steps.nsamples, 4);
    CHECK_STR(t->run.gpu_source, "sampled");
    CHECK(t->run.gpu_idle == 0.25);
    CHECK_EQ(t->run.nhigh, 1);
    CHECK_STR(t->run.high[0], "host_bound");
    CHECK_EQ(t->groups[0].total_ns, 150);
    summary_free(s);
    summary_free(t);
    return 0;
}

/* Steps and GPU may be null; the rest of the run part must be there. */
static int test_version_2_fields(void)
{
    struct summary *s = NULL;
    static const struct {
        const char *from, *to;
        int rc;
    } cases[] = {
        {"\"steps\":{", "\"steps\":null,\"x\":{", 0},
        {"\"gpu\":{", "\"gpu\":null,\"x\":{", 0},
        {"\"window_ns\":300000000,", "", CS_E_CORRUPT},
        {"\"launches\":200", "\"launches\":-1", CS_E_CORRUPT},
        {"\"count\":4", "\"count\":3", CS_E_CORRUPT}, /* 4 samples */
        {"[2900,3000", "[3000,2900", CS_E_CORRUPT},
        {"\"idle_fraction\":0.25", "\"idle_fraction\":1.5", CS_E_CORRUPT},
        {"[\"host_bound\"]", "[7]", CS_E_CORRUPT},
        {"\"total_ns\":150,", "", CS_E_CORRUPT},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[sizeof(good2) + 64];
        const char *p = strstr(good2, cases[i].from);
        CHECK(p != NULL);
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(p - good2), good2, cases[i].to,
                 p + strlen(cases[i].from));
        int rc = parse(buf, &s);
        if (rc != cases[i].rc)
            fprintf(stderr, "case %zu: %s -> %s\n", i, cases[i].from, cases[i].to);
        CHECK_EQ(rc, cases[i].rc);
        if (rc == 0)
            summary_free(s);
    }
    return 0;
}

static int test_other_version_is_cs_e_version(void)
{
    struct summary *s = NULL;
    CHECK_ERR(parse(edit("\"version\":1", "\"version\":3"), &s), CS_E_VERSION);
    CHECK_ERR(parse(edit("\"version\":1", "\"version\":0"), &s), CS_E_VERSION);
    CHECK_ERR(parse(edit("\"version\":1", "\"version\":\"1\""), &s), CS_E_VERSION);
    return 0;
}

static int test_bad_fields_are_cs_e_corrupt(void)
{
    struct summary *s = NULL;
    CHECK_ERR(parse(edit("cudaspy-gate-summary", "cudaspy-run"), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("\"groups\":[", "\"groupz\":["), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("\"count\":5", "\"count\":-5"), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("\"count\":5", "\"count\":4"), &s), CS_E_CORRUPT); /* 5 samples */
    CHECK_ERR(parse(edit("\"count\":5", "\"count\":0"), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("[10,20,30,40,50]", "[10,30,20,40,50]"), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("[10,20,30,40,50]", "[]"), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("\"p99_ns\":50", "\"p99_ns\":5.5"), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("\"kernel\":\"gemm\"", "\"kernel\":7"), &s), CS_E_CORRUPT);
    CHECK_ERR(parse(edit("\"api\":\"cudaLaunchKernel\",", ""), &s), CS_E_CORRUPT);
    return 0;
}

/* Every prefix of a valid file (version 1 or 2) is refused cleanly (JSON
 * error or CS_E_*). */
static int test_every_truncation_is_refused(void)
{
    const char *const texts[] = {good, good2};
    char buf[sizeof(good2) > sizeof(good) ? sizeof(good2) : sizeof(good)];
    for (int t = 0; t < 2; t++) {
        for (size_t n = 0; n < strlen(texts[t]); n++) {
            struct summary *s = NULL;
            memcpy(buf, texts[t], n);
            buf[n] = '\0';
            int rc = parse(buf, &s);
            if (rc == 0)
                summary_free(s);
            CHECK(rc == -1 || rc == CS_E_CORRUPT || rc == CS_E_VERSION);
        }
    }
    return 0;
}

int main(void)
{
    RUN(test_round_trip_keeps_every_field);
    RUN(test_version_1_still_loads);
    RUN(test_version_2_round_trip);
    RUN(test_version_2_fields);
    RUN(test_other_version_is_cs_e_version);
    RUN(test_bad_fields_are_cs_e_corrupt);
    RUN(test_every_truncation_is_refused);
    return check_status();
}
