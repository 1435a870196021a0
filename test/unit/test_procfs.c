/* test_procfs.c: /proc parsing and the tree walk (sampler/procfs.c) and
 * the tracefs format reader (sampler/pe_tracefs.c): a comm with spaces and
 * parentheses, status and schedstat texts, this process's children, a
 * zombie and a start time that does not match, and the sched_switch field
 * offsets of the running kernel. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "pe_tracefs.h"
#include "procfs.h"

static int test_stat_parse_survives_odd_comm(void)
{
    struct procfs_stat st;
    const char *text = "4242 (a) (b c) S 17 4242 4242 0 -1 4194560 123 0 7 0 5 6 0 0 20 0 1 0 "
                       "99887 1000 100 18446744073709551615";

    CHECK_OK(procfs_stat_parse(text, &st));
    CHECK_STR(st.comm, "a) (b c");
    CHECK_EQ(st.state, 'S');
    CHECK_EQ(st.ppid, 17);
    CHECK_EQ(st.minflt, 123);
    CHECK_EQ(st.majflt, 7);
    CHECK_EQ(st.start_ticks, 99887);
    return 0;
}

static int test_status_and_schedstat_parse(void)
{
    struct procfs_schedstat ss;
    uint64_t vol, invol;

    CHECK_OK(procfs_status_ctxt("Name:\tx\nvoluntary_ctxt_switches:\t12\n"
                                "nonvoluntary_ctxt_switches:\t3\n", &vol, &invol));
    CHECK_EQ(vol, 12);
    CHECK_EQ(invol, 3);
    CHECK_ERR(procfs_status_ctxt("Name:\tx\n", &vol, &invol), -EINVAL);
    CHECK_OK(procfs_schedstat_parse("1000 2000 3\n", &ss));
    CHECK_EQ(ss.oncpu_ns, 1000);
    CHECK_EQ(ss.run_delay_ns, 2000);
    CHECK_EQ(ss.pcount, 3);
    return 0;
}

static int test_tree_finds_children_and_grandchildren(void)
{
    struct procfs_pids tree = {0};
    int p[2];
    pid_t child, gc = 0;

    CHECK(pipe(p) == 0);
    child = fork();
    if (child == 0) {
        pid_t g = fork();

        if (g == 0) {
            pause();
            _exit(0);
        }
        if (write(p[1], &g, sizeof(g)) != sizeof(g))
            _exit(1);
        pause();
        _exit(0);
    }
    CHECK(read(p[0], &gc, sizeof(gc)) == sizeof(gc));
    CHECK_OK(procfs_tree(getpid(), 0, &tree));
    kill(gc, SIGKILL);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(procfs_pids_has(&tree, getpid()));
    CHECK(procfs_pids_has(&tree, child));
    CHECK(procfs_pids_has(&tree, gc));
    procfs_pids_free(&tree);
    close(p[0]);
    close(p[1]);
    return 0;
}

/* The collector's checks, folded in from collector.c (issue 36): a live
 * process is alive only as the one that started when it did, a zombie is
 * gone, and an unknown start time (0) stays unknown. */
static int test_pid_alive_knows_a_zombie_and_a_reused_pid(void)
{
    struct procfs_stat st;
    pid_t child;

    CHECK_OK(procfs_stat_read(getpid(), 0, &st));
    CHECK(procfs_pid_alive(getpid(), 0));
    CHECK(procfs_pid_alive(getpid(), st.start_ticks));
    CHECK(!procfs_pid_alive(getpid(), st.start_ticks + 1));
    child = fork();
    if (child == 0)
        _exit(0);
    for (int i = 0; i < 1000 && procfs_pid_alive(child, 0); i++)
        usleep(1000); /* until it is a zombie: not reaped yet */
    CHECK(!procfs_pid_alive(child, 0));
    waitpid(child, NULL, 0);
    CHECK_EQ(procfs_ticks_to_mono_ns(0), 0);
    CHECK(procfs_ticks_to_mono_ns(st.start_ticks) <= procfs_now_ns());
    return 0;
}

static int test_tracefs_offsets_of_sched_switch(void)
{
    struct pe_tracefs tf;

    if (pe_tracefs_load(&tf) < 0) {
        fprintf(stderr, "skip: no tracefs\n");
        return 0;
    }
    CHECK(tf.id_switch > 0);
    CHECK(tf.id_waking > 0);
    CHECK(tf.id_page_alloc > 0);
    CHECK_EQ(tf.sw_prev_state.size, 8);
    CHECK(tf.sw_prev_state.off > tf.sw_prev_pid.off);
    CHECK_EQ(tf.wk_pid.size, 4);
    CHECK_EQ(tf.common_flags.off, 2);
    return 0;
}

int main(void)
{
    RUN(test_stat_parse_survives_odd_comm);
    RUN(test_status_and_schedstat_parse);
    RUN(test_tree_finds_children_and_grandchildren);
    RUN(test_pid_alive_knows_a_zombie_and_a_reused_pid);
    RUN(test_tracefs_offsets_of_sched_switch);
    return check_status();
}
