/* json_expect.c: checks a cudaspy-analyze --json report (docs/json.md) read
 * from stdin, for the planted-cause tests and for the lead's checks on real
 * runs. Each argument is one check; the first failing one prints a line and
 * the program exits 1 (2 for unreadable JSON or an unknown check).
 *   top=CAUSE      the first chain (largest impact) has this cause
 *   has=CAUSE      some chain has this cause
 *   no=CAUSE       no chain has this cause
 *   nohigh         no chain is HIGH
 *   sev=CAUSE:SEV  the chain of CAUSE has severity SEV (HIGH, MEDIUM, LOW)
 *   impact=CAUSE:LO:HI  the chain of CAUSE has an impact of LO to HI ms
 *   missing=TEXT   "missing" holds exactly TEXT
 *   nomissing      "missing" is empty
 *   collector_cpu  every run file says what its collector's CPU time was:
 *                  more than 0, less than its duration (one thread)
 *   top_in=A,B     the first chain's cause is one of these
 *   top_sev=SEV    the first chain has severity SEV
 *   high_in=A,B    some chain of one of these causes is HIGH
 *   gpu=SOURCE     gpu.source is SOURCE (exact, sampled, host_lower_bound)
 *   busy=LO:HI     gpu.busy_pct lies in [LO, HI]
 *   busy_ext=LO:HI gpu.busy_pct plus the impact_pct of cpu_contention_external
 *                  (0 without one) lies in [LO, HI]: the GPU busy, or kept
 *                  idle by outside processes (a hog beside the test, issue 36)
 *   print_busy     print gpu.busy_pct on stdout (always holds)
 *   steps=SRC:N    steps.source is SRC (nvtx, inferred, none) and steps.count
 *                  is N within 2 % (at least 1)
 *   setup=LO:HI    the set-up before the first step (steps.setup.dur_ns)
 *                  lasts LO to HI ms
 *   site=CAUSE:LINE  the chain of CAUSE names a Python line first
 *                  (python_sites[0].line, issue 23) and it is LINE
 *   nosite=CAUSE:LINE  the chain of CAUSE names no Python site on LINE
 *   acct_setup=LO:HI   the account's set-up (account.setup_ns) lasts LO to HI ms
 * Always checked first (issue 30): the account's buckets add up to its
 * window, and each process's to its own; the findings' impact_pct add up
 * to at most 100; no finding's impact lies outside its interval. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void list_causes(const json_t *chains, char *buf, size_t n)
{
    const json_t *c;
    size_t i, l = 0;

    buf[0] = '\0';
    json_array_foreach(chains, i, c)
        l += (size_t)snprintf(buf + l, n > l ? n - l : 0, "%s%s %s", i ? ", " : "",
                              json_string_value(json_object_get(c, "severity")),
                              json_string_value(json_object_get(c, "cause")));
    if (l == 0)
        snprintf(buf, n, "(none)");
}

static int has_string(const json_t *arr, const char *key, const char *want)
{
    const json_t *v;
    size_t i;

    json_array_foreach(arr, i, v) {
        const json_t *s = key ? json_object_get(v, key) : v;
        if (json_is_string(s) && strcmp(json_string_value(s), want) == 0)
            return 1;
    }
    return 0;
}

/* The chain of cause @p want up to its colon (CAUSE:VALUE arguments), or
 * NULL with a message saying so (@p causes: the run's causes). */
static const json_t *chain_of(const json_t *chains, const char *want, const char *colon,
                              const char *causes)
{
    const json_t *c;
    size_t i;

    json_array_foreach(chains, i, c) {
        const char *cause = json_string_value(json_object_get(c, "cause"));
        if (cause && strlen(cause) == (size_t)(colon - want) &&
            strncmp(cause, want, (size_t)(colon - want)) == 0)
            return c;
    }
    fprintf(stderr, "json_expect: no %.*s chain (chains: %s)\n", (int)(colon - want), want, causes);
    return NULL;
}

/* "LO:HI" into @p lo, @p hi. @return 0, or -1 (a message names @p what) */
static int parse_range(const char *what, const char *arg, double *lo, double *hi)
{
    char *end;

    *lo = strtod(arg, &end);
    if (*end != ':' || (*hi = strtod(end + 1, &end), *end != '\0')) {
        fprintf(stderr, "json_expect: %s%s: want %sLO:HI\n", what, arg, what);
        return -1;
    }
    return 0;
}

/* impact=CAUSE:LO:HI; @return 0 when the chain of CAUSE has an impact of
 * LO to HI ms. */
static int check_impact(const json_t *chains, const char *want, const char *causes)
{
    const char *colon = strchr(want, ':');
    const json_t *c;
    double lo, hi, ms;

    if (colon == NULL || parse_range("impact=CAUSE:", colon + 1, &lo, &hi) < 0)
        return 2;
    if ((c = chain_of(chains, want, colon, causes)) == NULL)
        return 1;
    ms = (double)json_integer_value(json_object_get(c, "impact_ns")) / 1e6;
    if (ms >= lo && ms <= hi)
        return 0;
    fprintf(stderr, "json_expect: %.*s impact %.1f ms, want %g..%g\n", (int)(colon - want), want,
            ms, lo, hi);
    return 1;
}

/* sev=CAUSE:SEV; @return 0 when the chain of CAUSE has severity SEV. */
static int check_sev(const json_t *chains, const char *want, const char *causes)
{
    const char *colon = strchr(want, ':'), *sev;
    const json_t *c;

    if (colon == NULL) {
        fprintf(stderr, "json_expect: sev=%s: want CAUSE:SEV\n", want);
        return 2;
    }
    if ((c = chain_of(chains, want, colon, causes)) == NULL)
        return 1;
    sev = json_string_value(json_object_get(c, "severity"));
    if (sev && strcmp(sev, colon + 1) == 0)
        return 0;
    fprintf(stderr, "json_expect: %.*s is %s, want %s (chains: %s)\n", (int)(colon - want), want,
            sev ? sev : "none", colon + 1, causes);
    return 1;
}

/* collector_cpu: 0 when every file has 0 < collector_cpu_ns < duration_ns. */
static int check_collector_cpu(const json_t *j)
{
    const json_t *f, *files = json_object_get(json_object_get(j, "run"), "files");
    size_t i;

    if (json_array_size(files) == 0) {
        fprintf(stderr, "json_expect: no run files\n");
        return 1;
    }
    json_array_foreach(files, i, f) {
        const json_t *cpu = json_object_get(f, "collector_cpu_ns");
        json_int_t dur = json_integer_value(json_object_get(f, "duration_ns"));
        if (!json_is_integer(cpu) || json_integer_value(cpu) <= 0 ||
            json_integer_value(cpu) >= dur) {
            fprintf(stderr, "json_expect: file %zu: collector_cpu_ns %lld, duration %lld ns\n", i,
                    json_is_integer(cpu) ? (long long)json_integer_value(cpu) : -1LL,
                    (long long)dur);
            return 1;
        }
    }
    return 0;
}

/* The impact_pct of the chain of @p cause, 0 without one. */
static double chain_pct(const json_t *j, const char *cause)
{
    const json_t *chains = json_object_get(j, "chains"), *c;
    size_t i;

    json_array_foreach(chains, i, c) {
        const char *name = json_string_value(json_object_get(c, "cause"));
        if (name && strcmp(name, cause) == 0)
            return json_number_value(json_object_get(c, "impact_pct"));
    }
    return 0;
}

/* The checks of what the GPU did (docs/json.md "gpu"). */
static int check_gpu(const json_t *j, const char *arg)
{
    const json_t *g = json_object_get(j, "gpu");
    const char *src = json_string_value(json_object_get(g, "source"));
    double busy = json_number_value(json_object_get(g, "busy_pct")), lo, hi;
    int ext = strncmp(arg, "busy_ext=", 9) == 0;

    if (strcmp(arg, "print_busy") == 0) {
        printf("%.3f\n", busy);
        return 0;
    }
    if (strncmp(arg, "gpu=", 4) == 0) {
        if (src && strcmp(src, arg + 4) == 0)
            return 0;
        fprintf(stderr, "json_expect: gpu source is %s, want %s\n", src ? src : "none", arg + 4);
        return 1;
    }
    if (parse_range(ext ? "busy_ext=" : "busy=", arg + (ext ? 9 : 5), &lo, &hi) < 0)
        return 2;
    if (ext)
        busy += chain_pct(j, "cpu_contention_external");
    if (busy >= lo && busy <= hi)
        return 0;
    fprintf(stderr, "json_expect: GPU busy%s %.1f %% (%s), want %g..%g\n",
            ext ? " plus outside contention" : "", busy, src ? src : "none", lo, hi);
    return 1;
}

/* high_in=A,B,...: a chain of one of them is HIGH. */
static int check_high_in(const json_t *chains, const char *list, const char *causes)
{
    const json_t *c;
    size_t i;

    json_array_foreach(chains, i, c) {
        const char *cause = json_string_value(json_object_get(c, "cause"));
        const char *sev = json_string_value(json_object_get(c, "severity"));
        size_t n = cause ? strlen(cause) : 0;
        for (const char *p = list; cause && sev && strcmp(sev, "HIGH") == 0 && *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (len == n && strncmp(p, cause, n) == 0)
                return 0;
            p += len + (e != NULL);
        }
    }
    fprintf(stderr, "json_expect: none of %s is HIGH (chains: %s)\n", list, causes);
    return 1;
}

/* top_in=A,B,...: the first chain's cause is one of them. */
static int check_top_in(const json_t *chains, const char *list, const char *causes)
{
    const char *top = json_string_value(json_object_get(json_array_get(chains, 0), "cause"));
    size_t n = top ? strlen(top) : 0;

    for (const char *p = list; top && *p;) {
        size_t l = strcspn(p, ",");
        if (l == n && strncmp(p, top, n) == 0)
            return 0;
        p += l + (p[l] == ',');
    }
    fprintf(stderr, "json_expect: top cause is %s, want one of %s (chains: %s)\n",
            top ? top : "none", list, causes);
    return 1;
}

static int check_steps(const json_t *j, const char *arg)
{
    const json_t *s = json_object_get(j, "steps");
    const char *src = json_string_value(json_object_get(s, "source")), *colon = strchr(arg, ':');
    long long got = json_integer_value(json_object_get(s, "count")), want, tol;

    if (colon == NULL)
        return 2;
    want = atoll(colon + 1);
    tol = want / 50 > 1 ? want / 50 : 1;
    if (src && strncmp(src, arg, (size_t)(colon - arg)) == 0 && strlen(src) == (size_t)(colon - arg) &&
        got >= want - tol && got <= want + tol)
        return 0;
    fprintf(stderr, "json_expect: steps: %s %lld (%s), want %.*s %lld +- %lld\n",
            src ? src : "none", got, json_string_value(json_object_get(s, "how")),
            (int)(colon - arg), arg, want, tol);
    return 1;
}

/* setup=LO:HI (ms): the set-up before the first step. */
static int check_setup(const json_t *j, const char *arg)
{
    const json_t *su = json_object_get(json_object_get(j, "steps"), "setup");
    double ms = (double)json_integer_value(json_object_get(su, "dur_ns")) / 1e6, lo, hi;

    if (parse_range("setup=", arg, &lo, &hi) < 0)
        return 2;
    if (su && ms >= lo && ms <= hi)
        return 0;
    fprintf(stderr, "json_expect: set-up before the first step %.1f ms, want %g..%g\n", ms, lo,
            hi);
    return 1;
}

/* site= (@p first 1: LINE is the chain's first Python site) or nosite=
 * (@p first 0: no site of the chain is on LINE).
 * @return 0 when the check holds, 1 when not, 2 when unknown. */
static int check_site(const json_t *chains, const char *want, const char *causes, int first)
{
    const char *colon = strchr(want, ':');
    const json_t *c, *s;
    size_t i;

    if (colon == NULL) {
        fprintf(stderr, "json_expect: %s: want CAUSE:LINE\n", want);
        return 2;
    }
    if ((c = chain_of(chains, want, colon, causes)) == NULL)
        return 1;
    if (!first) {
        json_array_foreach(json_object_get(c, "python_sites"), i, s)
            if (json_integer_value(json_object_get(s, "line")) == atoll(colon + 1)) {
                fprintf(stderr, "json_expect: %.*s names %s\n", (int)(colon - want), want,
                        json_string_value(json_object_get(s, "text")));
                return 1;
            }
        return 0;
    }
    s = json_array_get(json_object_get(c, "python_sites"), 0);
    if (json_integer_value(json_object_get(s, "line")) == atoll(colon + 1))
        return 0;
    fprintf(stderr, "json_expect: %.*s names %s first, want line %s\n", (int)(colon - want), want,
            s ? json_string_value(json_object_get(s, "text")) : "no Python line", colon + 1);
    return 1;
}

static int check_acct_setup(const json_t *j, const char *arg);

static int check(const json_t *j, const char *arg, const char *causes)
{
    const json_t *chains = json_object_get(j, "chains"), *missing = json_object_get(j, "missing");

    if (strncmp(arg, "top=", 4) == 0) {
        const char *top = json_string_value(json_object_get(json_array_get(chains, 0), "cause"));
        if (top && strcmp(top, arg + 4) == 0)
            return 0;
        fprintf(stderr, "json_expect: top cause is %s, want %s (chains: %s)\n", top ? top : "none",
                arg + 4, causes);
        return 1;
    }
    if (strncmp(arg, "has=", 4) == 0) {
        if (has_string(chains, "cause", arg + 4))
            return 0;
        fprintf(stderr, "json_expect: no %s chain (chains: %s)\n", arg + 4, causes);
        return 1;
    }
    if (strncmp(arg, "no=", 3) == 0) {
        if (!has_string(chains, "cause", arg + 3))
            return 0;
        fprintf(stderr, "json_expect: a %s chain (chains: %s)\n", arg + 3, causes);
        return 1;
    }
    if (strncmp(arg, "sev=", 4) == 0)
        return check_sev(chains, arg + 4, causes);
    if (strncmp(arg, "impact=", 7) == 0)
        return check_impact(chains, arg + 7, causes);
    if (strcmp(arg, "nohigh") == 0) {
        if (!has_string(chains, "severity", "HIGH"))
            return 0;
        fprintf(stderr, "json_expect: a HIGH finding (chains: %s)\n", causes);
        return 1;
    }
    if (strncmp(arg, "missing=", 8) == 0) {
        if (has_string(missing, NULL, arg + 8))
            return 0;
        fprintf(stderr, "json_expect: missing lacks \"%s\"\n", arg + 8);
        return 1;
    }
    if (strcmp(arg, "nomissing") == 0) {
        if (json_array_size(missing) == 0)
            return 0;
        fprintf(stderr, "json_expect: missing is not empty: %s\n",
                json_string_value(json_array_get(missing, 0)));
        return 1;
    }
    if (strcmp(arg, "collector_cpu") == 0)
        return check_collector_cpu(j);
    if (strncmp(arg, "top_in=", 7) == 0)
        return check_top_in(chains, arg + 7, causes);
    if (strncmp(arg, "high_in=", 8) == 0)
        return check_high_in(chains, arg + 8, causes);
    if (strncmp(arg, "top_sev=", 8) == 0) {
        const char *sev =
            json_string_value(json_object_get(json_array_get(chains, 0), "severity"));
        if (sev && strcmp(sev, arg + 8) == 0)
            return 0;
        fprintf(stderr, "json_expect: top finding is %s, want %s (chains: %s)\n",
                sev ? sev : "none", arg + 8, causes);
        return 1;
    }
    if (strncmp(arg, "gpu=", 4) == 0 || strncmp(arg, "busy=", 5) == 0 ||
        strncmp(arg, "busy_ext=", 9) == 0 || strcmp(arg, "print_busy") == 0)
        return check_gpu(j, arg);
    if (strncmp(arg, "steps=", 6) == 0)
        return check_steps(j, arg + 6);
    if (strncmp(arg, "site=", 5) == 0)
        return check_site(chains, arg + 5, causes, 1);
    if (strncmp(arg, "nosite=", 7) == 0)
        return check_site(chains, arg + 7, causes, 0);
    if (strncmp(arg, "setup=", 6) == 0)
        return check_setup(j, arg + 6);
    if (strncmp(arg, "acct_setup=", 11) == 0)
        return check_acct_setup(j, arg + 11);
    fprintf(stderr, "json_expect: unknown check '%s'\n", arg);
    return 2;
}

static int64_t bucket_sum(const json_t *buckets)
{
    const json_t *b;
    int64_t sum = 0;
    size_t i;

    json_array_foreach(buckets, i, b)
        sum += json_integer_value(json_object_get(b, "ns"));
    return sum;
}

/* The account's invariants (see the top of the file). */
static int check_invariants(const json_t *j)
{
    const json_t *ac = json_object_get(j, "account"), *v;
    double pct = 0;
    size_t i;

    if (ac == NULL)
        return 0;
    if (bucket_sum(json_object_get(ac, "buckets")) !=
        json_integer_value(json_object_get(ac, "window_ns"))) {
        fprintf(stderr, "json_expect: account buckets sum to %lld ns, its window is %lld ns\n",
                (long long)bucket_sum(json_object_get(ac, "buckets")),
                (long long)json_integer_value(json_object_get(ac, "window_ns")));
        return 1;
    }
    json_array_foreach(json_object_get(ac, "processes"), i, v) {
        int64_t s = bucket_sum(json_object_get(v, "buckets"));
        if (s != json_integer_value(json_object_get(v, "window_ns"))) {
            fprintf(stderr, "json_expect: pid %lld: account buckets sum to %lld ns, its window is "
                            "%lld ns\n",
                    (long long)json_integer_value(json_object_get(v, "pid")), (long long)s,
                    (long long)json_integer_value(json_object_get(v, "window_ns")));
            return 1;
        }
    }
    json_array_foreach(json_object_get(j, "chains"), i, v) {
        int64_t ns = json_integer_value(json_object_get(v, "impact_ns"));
        const json_t *lo = json_object_get(v, "impact_lo_ns"), *hi = json_object_get(v, "impact_hi_ns");
        pct += json_number_value(json_object_get(v, "impact_pct"));
        if (lo && hi && (json_integer_value(lo) > ns || json_integer_value(hi) < ns)) {
            fprintf(stderr, "json_expect: %s: impact %lld ns outside its interval\n",
                    json_string_value(json_object_get(v, "cause")), (long long)ns);
            return 1;
        }
    }
    if (pct > 100.05) {
        fprintf(stderr, "json_expect: the findings' impacts add up to %.2f %% of the window\n", pct);
        return 1;
    }
    return 0;
}

static int check_acct_setup(const json_t *j, const char *arg)
{
    double lo, hi, ms = (double)json_integer_value(
                           json_object_get(json_object_get(j, "account"), "setup_ns")) / 1e6;

    if (sscanf(arg, "%lf:%lf", &lo, &hi) != 2) {
        fprintf(stderr, "json_expect: acct_setup=%s: want LO:HI\n", arg);
        return 2;
    }
    if (ms < lo || ms > hi) {
        fprintf(stderr, "json_expect: account set-up %.1f ms, want %g to %g\n", ms, lo, hi);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    json_error_t e;
    json_t *j = json_loadf(stdin, 0, &e);
    char causes[1024];
    int rc = 0;

    if (j == NULL) {
        fprintf(stderr, "json_expect: stdin: malformed JSON (line %d: %s)\n", e.line, e.text);
        return 2;
    }
    list_causes(json_object_get(j, "chains"), causes, sizeof(causes));
    rc = check_invariants(j);
    for (int i = 1; i < argc && rc == 0; i++)
        rc = check(j, argv[i], causes);
    json_decref(j);
    return rc;
}
