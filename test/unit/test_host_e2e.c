/* test_host_e2e.c: the host sampler through the real cudaspy-sampler and
 * run file. Launches `cudaspy-sampler --tier A -- wl_main REPORT`, then
 * reads the run file back and checks it against the workload's reports.
 * Usage: test_host_e2e SAMPLER WL_MAIN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../sampler/workload.h"
#include "cudaspy/runfile.h"

static struct cs_run *run;
static struct wl_report rep[32];
static int nrep;

static int launch(const char *sampler, const char *wl, const char *out, const char *report)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        execl(sampler, sampler, "-q", "--tier", "A", "--ring-pages", "2048", "-o", out, "--", wl,
              report, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const struct cs_proc *proc_of(uint32_t pid)
{
    size_t n;
    const struct cs_proc *p = cs_run_procs(run, &n);

    for (size_t i = 0; i < n; i++)
        if (p[i].pid == pid)
            return &p[i];
    return NULL;
}

/* Sum of a pwin field over every window of @p pid. */
static void pwin_sums(uint32_t pid, uint64_t *vcsw, uint64_t *pages, uint64_t *flags)
{
    struct cs_cursor *c = NULL;
    const struct cs_blk_hdr *h;
    const void *recs;

    *vcsw = *pages = *flags = 0;
    if (cs_cursor_open(run, CS_REC_PWIN, 0, UINT64_MAX, &c) < 0)
        return;
    while (cs_cursor_next(c, &h, &recs, NULL) == 1) {
        const struct cs_rec_pwin *w = recs;

        for (uint32_t i = 0; i < h->n; i++)
            if (w[i].pid == pid) {
                *vcsw += w[i].vcsw;
                *pages += w[i].page_allocs;
                *flags |= w[i].flags;
            }
    }
    cs_cursor_close(c);
}

static int test_meta_says_tier_a_and_nothing_lost(void)
{
    CHECK_STR(cs_run_meta(run, "sampler_tier"), "A");
    /* main() asked for the tracepoint through the environment */
    CHECK_STR(cs_run_meta(run, "host_page_source"), "kmem:mm_page_alloc");
    CHECK_EQ(cs_run_meta_u64(run, "host_lost", 1), 0);
    CHECK(cs_run_count(run, CS_REC_OFFCPU) > 0);
    CHECK(cs_run_count(run, CS_REC_SYSWIN) > 0);
    return 0;
}

static int test_every_process_with_parent_comm_and_exit(void)
{
    for (int i = 0; i < nrep; i++) {
        const struct cs_proc *p = proc_of(rep[i].pid);

        CHECK(p != NULL);
        CHECK_EQ(p->ppid, rep[i].ppid);
        if (rep[i].pid == rep[i].tid)
            CHECK_STR(p->comm, rep[i].comm);
        CHECK(p->flags & CS_PF_EXITED);
        CHECK(p->exit_ns >= rep[i].t1);
    }
    return 0;
}

static int is_parent(uint32_t pid)
{
    for (int i = 0; i < nrep; i++)
        if (rep[i].ppid == pid)
            return 1;
    return 0;
}

/* Single-thread processes without children: windows hold every voluntary
 * switch of their life (the report's count, plus the few of reporting and
 * exiting); parents also block in wait() after reporting. */
static int test_window_switch_totals_match_status(void)
{
    for (int i = 0; i < nrep; i++) {
        uint64_t vcsw, pages, flags;

        if (rep[i].kind == WL_THREAD || is_parent(rep[i].pid))
            continue;
        pwin_sums(rep[i].pid, &vcsw, &pages, &flags);
        if (vcsw < rep[i].vol1 || vcsw > rep[i].vol1 + 5)
            fprintf(stderr, "pid %u %s: vcsw %llu status %llu\n", rep[i].pid, rep[i].comm,
                    (unsigned long long)vcsw, (unsigned long long)rep[i].vol1);
        CHECK(vcsw >= rep[i].vol1 && vcsw <= rep[i].vol1 + 5);
    }
    return 0;
}

static int test_page_allocs_in_run_file(void)
{
    for (int i = 0; i < nrep; i++) {
        uint64_t vcsw, pages, flags;

        if (rep[i].kind != WL_PAGES)
            continue;
        pwin_sums(rep[i].pid, &vcsw, &pages, &flags);
        CHECK(pages >= WL_PAGES_K * 9 / 10 && pages <= WL_PAGES_K * 11 / 10);
        return 0;
    }
    CHECK(0);
    return 0;
}

int main(int argc, char **argv)
{
    char out[] = "/tmp/cs_host_e2e_XXXXXX", path[64], report[64];
    struct cs_err err = {""};
    FILE *f;
    int rc;

    if (argc != 3)
        return 2;
    if (geteuid() != 0) {
        fprintf(stderr, "skip: needs root for tier A\n");
        return 77;
    }
    if (!mkdtemp(out))
        return 1;
    snprintf(path, sizeof(path), "%s/run.lmdb", out);
    snprintf(report, sizeof(report), "%s/report", out);
    setenv("CUDASPY_PAGE_SOURCE", "allocs", 1); /* the non-default source, by env */
    rc = launch(argv[1], argv[2], path, report);
    if (rc != 0) {
        fprintf(stderr, "cudaspy-sampler exited %d\n", rc);
        return 1;
    }
    f = fopen(report, "r");
    nrep = f ? (int)fread(rep, sizeof(rep[0]), 32, f) : 0;
    if (f)
        fclose(f);
    run = cs_run_new();
    if (nrep < 10 || !run || cs_run_open(run, path, &err) < 0) {
        fprintf(stderr, "reports %d, run file: %s\n", nrep, err.msg);
        return 1;
    }
    RUN(test_meta_says_tier_a_and_nothing_lost);
    RUN(test_every_process_with_parent_comm_and_exit);
    RUN(test_window_switch_totals_match_status);
    RUN(test_page_allocs_in_run_file);
    cs_run_free(run);
    return check_finish(out);
}
