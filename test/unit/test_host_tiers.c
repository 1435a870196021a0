/* test_host_tiers.c: the host sampler's fallback tiers, forced with
 * host_opts.force_tier over the same workload tree as test_host.c. Each
 * tier is checked for what it claims: tier B exact switch counts and
 * process table without tracepoints; tier C polled windows whose totals
 * match the threads' own counters within the poll resolution. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "../sampler/harness.h"

static struct hrun run_b, run_c;

static int test_tier_b_meta(void)
{
    CHECK_STR(fake_meta(run_b.c, "sampler_tier"), "B");
    CHECK(strstr(fake_meta(run_b.c, "sampler_tier_reason"), "forced tier B") != NULL);
    CHECK_STR(fake_meta(run_b.c, "host_busy_source"), "proc-stat");
    return 0;
}

static int test_tier_b_switch_counts_match_status(void)
{
    for (int i = 0; i < run_b.nrep; i++) {
        CHECK(hrun_counts_agree(&run_b, &run_b.rep[i], 0));
        CHECK(hrun_counts_agree(&run_b, &run_b.rep[i], 1));
    }
    return 0;
}

static int test_tier_b_classes_without_tracepoints(void)
{
    const struct cs_rec_offcpu *o;

    for (size_t i = 0; (o = fake_rec(run_b.c, CS_REC_OFFCPU, i)) != NULL; i++) {
        CHECK(o->cls == CS_OFF_BLOCKED || o->cls == CS_OFF_PREEMPT);
        CHECK_EQ(o->holder_pid, 0);
    }
    return 0;
}

/* Per-task switch records come ~3 us after the kernel starts charging a
 * thread (no CPU-wide edge to correct with): allow 4 us per switch. */
static int test_tier_b_on_cpu_within_5_percent_of_span(void)
{
    struct hrun_on_cpu acc = {0};

    for (int i = 0; i < run_b.nrep; i++)
        hrun_on_cpu_agrees(&run_b, &run_b.rep[i], 20, 4000, &acc);
    CHECK(hrun_on_cpu_verdict(&run_b, &acc));
    return 0;
}

static int test_tier_b_process_table(void)
{
    for (int i = 0; i < run_b.nrep; i++) {
        const struct cs_proc *p = fake_proc(run_b.c, run_b.rep[i].pid);

        CHECK(p != NULL);
        CHECK_EQ(p->ppid, run_b.rep[i].ppid);
        CHECK(p->flags & CS_PF_EXITED);
    }
    return 0;
}

static int test_tier_c_meta(void)
{
    CHECK_STR(fake_meta(run_c.c, "sampler_tier"), "C");
    return 0;
}

static int test_tier_c_windows_are_polled(void)
{
    const struct cs_rec_pwin *w;
    size_t n = 0;

    for (size_t i = 0; (w = fake_rec(run_c.c, CS_REC_PWIN, i)) != NULL; i++, n++)
        CHECK(w->flags & CS_HF_POLLED);
    CHECK(n > 0);
    CHECK(fake_rec(run_c.c, CS_REC_OFFCPU, 0) == NULL);
    return 0;
}

/* Single-thread processes forked after attach: their whole life is polled. */
static int test_tier_c_totals_match_thread_counters(void)
{
    int checked = 0;

    for (int i = 0; i < run_c.nrep; i++) {
        const struct wl_report *r = &run_c.rep[i];
        const struct cs_rec_pwin *w;
        uint64_t on = 0, vol = 0;

        if (r->preattach || r->kind == WL_THREAD || r->pid == (uint32_t)run_c.root)
            continue;
        for (size_t k = 0; (w = fake_rec(run_c.c, CS_REC_PWIN, k)) != NULL; k++)
            if (w->pid == r->pid) {
                on += w->oncpu_ns;
                vol += w->vcsw;
            }
        if (!hrun_near(on, r->cpu1, 5.0, 5000000) || vol < r->vol1 || vol > r->vol1 + 5)
            fprintf(stderr, "pid %u %s: on %llu/%llu us vol %llu/%llu\n", r->pid, r->comm,
                    (unsigned long long)on / 1000, (unsigned long long)r->cpu1 / 1000,
                    (unsigned long long)vol, (unsigned long long)r->vol1);
        CHECK(hrun_near(on, r->cpu1, 5.0, 5000000));
        CHECK(vol >= r->vol1 && vol <= r->vol1 + 5);
        checked++;
    }
    CHECK(checked >= 5);
    return 0;
}

static int test_tier_c_process_table(void)
{
    for (int i = 0; i < run_c.nrep; i++) {
        const struct cs_proc *p = fake_proc(run_c.c, run_c.rep[i].pid);

        CHECK(p != NULL);
        CHECK_EQ(p->ppid, run_c.rep[i].ppid);
        CHECK(p->flags & CS_PF_EXITED);
    }
    return 0;
}

int main(void)
{
    struct host_opts b = {.force_tier = 'B', .offcpu_min_ns = 1, .runq_min_ns = 1,
                          .ring_pages = 2048};
    struct host_opts c = {.force_tier = 'C'};

    if (hrun_tree(&run_b, b, 2, 0) < 0 || hrun_tree(&run_c, c, 2, 300) < 0)
        return 1;
    RUN(test_tier_b_meta);
    RUN(test_tier_b_switch_counts_match_status);
    RUN(test_tier_b_classes_without_tracepoints);
    RUN(test_tier_b_on_cpu_within_5_percent_of_span);
    RUN(test_tier_b_process_table);
    RUN(test_tier_c_meta);
    RUN(test_tier_c_windows_are_polled);
    RUN(test_tier_c_totals_match_thread_counters);
    RUN(test_tier_c_process_table);
    fake_collector_free(run_b.c);
    fake_collector_free(run_c.c);
    return check_status();
}
