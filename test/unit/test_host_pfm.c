/* test_host_pfm.c: --events counters through libpfm4 (sampler/pe_pfm.c):
 * known names give CS_REC_COUNTER deltas per process; a name libpfm4 does
 * not know, and one the kernel cannot count here (cycles: no hardware PMU),
 * make host_open fail with CS_E_USAGE and a message naming the event. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../sampler/harness.h"

static struct hrun run;

static uint64_t counter_sum(const char *name, uint32_t pid)
{
    const struct cs_rec_counter *r;
    uint64_t sum = 0;

    for (size_t i = 0; (r = fake_rec(run.c, CS_REC_COUNTER, i)) != NULL; i++) {
        const char *s = fake_string(run.c, r->name_id);

        if (s && strcmp(s, name) == 0 && r->pid == pid)
            sum += r->value;
    }
    return sum;
}

static int test_page_faults_counted_for_the_tree(void)
{
    uint64_t pf = counter_sum("perf::PAGE-FAULTS", (uint32_t)run.root);

    fprintf(stderr, "root page faults %llu\n", (unsigned long long)pf);
    CHECK(pf >= WL_PAGES_K);
    return 0;
}

static int test_context_switches_counted(void)
{
    CHECK(counter_sum("perf::CONTEXT-SWITCHES", (uint32_t)run.root) > 100);
    return 0;
}

/* host_open with @p events over a sleeping child; @return its code. */
static int open_with_events(const char *events, char *msg, size_t n)
{
    struct host_opts o = {.force_tier = 'A', .events = events, .ring_pages = 8};
    struct collector *c = fake_collector_new();
    struct cs_err err = {""};
    struct host *h;
    pid_t pid = fork();
    int rc;

    if (pid == 0) {
        sleep(30);
        _exit(0);
    }
    o.root = pid;
    h = host_new(&o);
    rc = host_open(h, c, &err);
    snprintf(msg, n, "%s", err.msg);
    host_free(h);
    fake_collector_free(c);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return rc;
}

static int test_cycles_without_pmu_is_a_usage_error_naming_it(void)
{
    char msg[256];

    CHECK_ERR(open_with_events("perf::PAGE-FAULTS,cycles", msg, sizeof(msg)), CS_E_USAGE);
    CHECK_STR(msg, "--events: cycles: not supported here (No such file or directory)");
    return 0;
}

static int test_unknown_event_is_a_usage_error_naming_it(void)
{
    char msg[256];

    CHECK_ERR(open_with_events("no::such_event", msg, sizeof(msg)), CS_E_USAGE);
    CHECK(strncmp(msg, "--events: no::such_event: unknown event (libpfm4: ", 50) == 0);
    return 0;
}

int main(void)
{
    struct host_opts o = {.force_tier = 'A', .ring_pages = 2048,
                          .events = "perf::PAGE-FAULTS,perf::CONTEXT-SWITCHES"};

    if (geteuid() != 0) {
        fprintf(stderr, "skip: needs root for tier A\n");
        return 77;
    }
    if (hrun_tree(&run, o, 4, 0) < 0)
        return 1;
    RUN(test_page_faults_counted_for_the_tree);
    RUN(test_context_switches_counted);
    RUN(test_cycles_without_pmu_is_a_usage_error_naming_it);
    RUN(test_unknown_event_is_a_usage_error_naming_it);
    fake_collector_free(run.c);
    return check_status();
}
