/* test_host_lost.c: the host sampler when its rings overflow. One data
 * page per CPU, and a burst of context switches before the first drain
 * (the rings are CPU-wide): LOST records must become CS_REC_LOST spans,
 * degraded windows and a host_lost total, and the run must still finish
 * with every process in the table (rescanned from /proc after a loss). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../sampler/harness.h"

static struct hrun run;

static int test_lost_spans_are_emitted(void)
{
    const struct cs_rec_lost *l;
    size_t n = 0;

    for (size_t i = 0; (l = fake_rec(run.c, CS_REC_LOST, i)) != NULL; i++, n++) {
        CHECK_EQ(l->what, 1);
        CHECK(l->source < (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
        CHECK(l->t_end_ns >= l->t_start_ns);
        CHECK(l->count > 0);
    }
    CHECK(n > 0);
    return 0;
}

static int test_lost_total_in_meta(void)
{
    fprintf(stderr, "host_lost %s (records %s, read %s)\n", fake_meta(run.c, "host_lost"),
            fake_meta(run.c, "host_lost_records"), fake_meta(run.c, "host_lost_read"));
    CHECK(strtoull(fake_meta(run.c, "host_lost"), NULL, 10) > 0);
    CHECK(strtoull(fake_meta(run.c, "host_lost_read"), NULL, 10) > 0);
    return 0;
}

static int test_windows_flagged_degraded(void)
{
    const struct cs_rec_pwin *w;
    size_t n = 0;

    for (size_t i = 0; (w = fake_rec(run.c, CS_REC_PWIN, i)) != NULL; i++)
        n += (w->flags & CS_HF_DEGRADED) != 0;
    CHECK(n > 0);
    return 0;
}

/* LOST records can swallow FORKs; the sampler then rescans /proc. */
static int test_processes_still_in_table(void)
{
    for (int i = 0; i < run.nrep; i++) {
        const struct cs_proc *p = fake_proc(run.c, run.rep[i].pid);

        CHECK(p != NULL);
        CHECK_EQ(p->ppid, run.rep[i].ppid);
    }
    return 0;
}

/* After the rings open, before anything drains them: 20,000 round trips
 * through two pipes, 40,000 switches that no page can hold. The
 * workload's own bursts alone overflowed it in 7 runs of 8. */
static int switch_burst(void *arg)
{
    int ab[2], ba[2], st;
    char c = 0;
    pid_t pid;

    (void)arg;
    if (pipe(ab) < 0 || pipe(ba) < 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        close(ab[1]); /* EOF when the parent closes its end */
        close(ba[0]);
        while (read(ab[0], &c, 1) == 1 && write(ba[1], &c, 1) == 1)
            ;
        _exit(0);
    }
    for (int i = 0; pid > 0 && i < 20000; i++)
        if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
            break;
    close(ab[1]);
    close(ab[0]);
    close(ba[0]);
    close(ba[1]);
    return pid > 0 && waitpid(pid, &st, 0) == pid ? 0 : -1;
}

int main(void)
{
    struct host_opts o = {.force_tier = 'A', .ring_pages = 1};

    if (geteuid() != 0) {
        fprintf(stderr, "skip: needs root for tier A\n");
        return 77;
    }
    /* the rings are still full when the tree starts, so its FORKs are lost
     * too: each process lingers 500 ms, alive for the /proc rescan */
    if (hrun_tree_hook(&run, o, 2, 500, switch_burst, NULL) < 0)
        return 1;
    RUN(test_lost_spans_are_emitted);
    RUN(test_lost_total_in_meta);
    RUN(test_windows_flagged_degraded);
    RUN(test_processes_still_in_table);
    fake_collector_free(run.c);
    return check_status();
}
