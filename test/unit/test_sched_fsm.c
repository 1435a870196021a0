/* test_sched_fsm.c: the per-thread state machine (sampler/sched_fsm.c) on
 * hand-made event sequences: one behaviour per test, exact expected
 * records. The tracked process is this test itself (seeded from /proc);
 * every event is synthetic and dated after the seed. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "../sampler/fake_collector.h"
#include "procfs.h"
#include "sched_fsm.h"

#define OTHER 999u  /* a process outside the tree */
#define WIN 1000000ull

static struct collector *col;
static struct sched_fsm *fsm;
static uint32_t me;
static uint64_t base;

/* A fresh machine; @p tracepoints 0 is tier A without tracefs. */
static void setup_with(int tracepoints)
{
    struct sched_fsm_opts o = {.window_ns = WIN, .offcpu_min_ns = 1, .runq_min_ns = 1,
                               .ncpu = 2, .cpuwide = 1, .has_block_tp = tracepoints,
                               .has_wake_tp = tracepoints, .self = -1};

    fake_collector_free(col);
    sched_fsm_free(fsm);
    col = fake_collector_new();
    o.c = col;
    fsm = sched_fsm_new(&o);
    me = (uint32_t)getpid();
    base = procfs_now_ns() + 1000000000ull;
    base -= base % WIN;
    sched_fsm_seed_proc(fsm, (pid_t)me, procfs_now_ns(), CS_PF_ROOT);
}

static void setup(void)
{
    setup_with(1);
}

/* An event at base + @p dt on @p cpu. */
static void ev(uint8_t kind, uint64_t dt, uint16_t cpu, uint32_t pid, uint32_t tid, uint64_t a,
               uint64_t b, uint8_t flags)
{
    struct pe_ev e;

    memset(&e, 0, sizeof(e));
    e.t_ns = base + dt;
    e.kind = kind;
    e.cpu = cpu;
    e.pid = pid;
    e.tid = tid;
    e.a = a;
    e.b = b;
    e.flags = flags | ((kind == PE_EV_SWITCH_IN || kind == PE_EV_SWITCH_OUT) ? PE_F_CPUWIDE : 0);
    sched_fsm_event(fsm, &e);
}

static void in(uint64_t dt, uint16_t cpu, uint32_t pid, uint32_t prev_tid, uint32_t prev_pid)
{
    ev(PE_EV_SWITCH_IN, dt, cpu, pid, pid, prev_tid, prev_pid, 0);
}

static void out(uint64_t dt, uint16_t cpu, uint32_t pid, uint32_t next, int preempt)
{
    ev(PE_EV_SWITCH_OUT, dt, cpu, pid, pid, next, next, preempt ? PE_F_PREEMPT : 0);
}

static const struct cs_rec_offcpu *last_offcpu(void)
{
    size_t n = col->recs[CS_REC_OFFCPU].n;

    return n ? fake_rec(col, CS_REC_OFFCPU, n - 1) : NULL;
}

static int test_preempted_interval_names_the_holder(void)
{
    const struct cs_rec_offcpu *o;

    setup();
    in(100, 0, me, 0, 0);
    out(200, 0, me, OTHER, 1);
    in(201, 0, OTHER, me, me);
    out(400, 0, OTHER, me, 0);
    in(402, 0, me, OTHER, OTHER);
    o = last_offcpu();
    CHECK(o != NULL);
    CHECK_EQ(o->cls, CS_OFF_PREEMPT);
    CHECK_EQ(o->t_start_ns, base + 200);
    CHECK_EQ(o->t_end_ns, base + 400); /* the holder's switch-out is the edge */
    CHECK_EQ(o->runq_ns, 200);
    CHECK_EQ(o->holder_pid, OTHER);
    CHECK_EQ(o->holder_permille, 1000); /* from the switch-out naming it */
    CHECK_EQ(o->flags & CS_HF_HOLDER_IN_TREE, 0);
    return 0;
}

static int test_blocked_interval_is_labelled_and_names_the_waker(void)
{
    const struct cs_rec_offcpu *o;
    const struct cs_rec_runq *q;

    setup();
    in(100, 0, me, 0, 0);
    ev(PE_EV_BLOCK, 299, 0, me, me, 0x2, me, 0); /* D */
    out(300, 0, me, 0, 0);
    ev(PE_EV_WAKE, 500, 1, 777, 778, me, 0, 0);
    in(600, 1, me, 0, 0);
    o = last_offcpu();
    CHECK(o != NULL);
    CHECK_EQ(o->cls, CS_OFF_DISK);
    CHECK_EQ(o->waker_pid, 777);
    CHECK_EQ(o->waker_tid, 778);
    CHECK_EQ(o->runq_ns, 100);
    CHECK_EQ(col->recs[CS_REC_RUNQ].n, 1);
    q = fake_rec(col, CS_REC_RUNQ, 0);
    CHECK_EQ(q->t_enqueue_ns, base + 500);
    CHECK_EQ(q->t_run_ns, base + 600);
    return 0;
}

static int test_wakeup_in_irq_context_has_no_waker(void)
{
    setup();
    in(100, 0, me, 0, 0);
    ev(PE_EV_BLOCK, 299, 0, me, me, 0x1, me, 0);
    out(300, 0, me, 0, 0);
    ev(PE_EV_WAKE, 500, 1, 777, 778, me, 0, PE_F_IRQ);
    in(600, 1, me, 0, 0);
    CHECK_EQ(last_offcpu()->cls, CS_OFF_SLEEP);
    CHECK_EQ(last_offcpu()->waker_pid, 0);
    return 0;
}

static int test_wakeup_racing_the_switch_out_makes_it_runnable(void)
{
    setup();
    in(100, 0, me, 0, 0);
    ev(PE_EV_WAKE, 290, 1, 777, 778, me, 0, 0);
    ev(PE_EV_BLOCK, 299, 0, me, me, 0x1, me, 0);
    out(300, 0, me, 0, 0);
    in(350, 1, me, 0, 0);
    CHECK_EQ(last_offcpu()->runq_ns, 50);
    CHECK_EQ(last_offcpu()->waker_pid, 777);
    return 0;
}

static int test_without_tracepoints_blocks_are_unlabelled(void)
{
    setup_with(0);
    in(100, 0, me, 0, 0);
    out(300, 0, me, 0, 0);
    in(600, 1, me, 0, 0);
    CHECK_EQ(last_offcpu()->cls, CS_OFF_BLOCKED);
    CHECK_EQ(last_offcpu()->runq_ns, 0);
    CHECK_EQ(sched_fsm_stats(fsm)->wake_unknown, 1);
    return 0;
}

static int test_windows_split_on_cpu_time(void)
{
    const struct cs_rec_pwin *w;
    uint64_t on[3] = {0};

    setup();
    out(0, 0, me, 0, 0); /* ends the on-CPU time since the seed */
    in(WIN, 0, me, 0, 0);
    out(3 * WIN + WIN / 2, 0, me, 0, 0);
    sched_fsm_advance(fsm, base + 4 * WIN);
    for (size_t i = 0; (w = fake_rec(col, CS_REC_PWIN, i)) != NULL; i++)
        if (w->pid == me && w->t_start_ns >= base + WIN && w->t_start_ns < base + 4 * WIN)
            on[(w->t_start_ns - base) / WIN - 1] = w->oncpu_ns;
    CHECK_EQ(on[0], WIN);
    CHECK_EQ(on[1], WIN);
    CHECK_EQ(on[2], WIN / 2);
    return 0;
}

static int test_syswin_busy_from_idle_tracking(void)
{
    const struct cs_rec_syswin *w;

    setup();
    in(0, 0, OTHER, 0, 0);        /* CPU 0 busy the whole window */
    in(0, 1, me, 0, 0);
    out(WIN / 2, 1, me, 0, 0);    /* CPU 1 idle for the second half */
    sched_fsm_advance(fsm, base + WIN);
    w = fake_rec(col, CS_REC_SYSWIN, col->recs[CS_REC_SYSWIN].n - 1);
    CHECK_EQ(w->t_start_ns, base);
    CHECK_EQ(w->busy_permille, 750);
    CHECK_EQ(w->tree_oncpu_ns, WIN / 2);
    CHECK_EQ(w->ext_oncpu_ns, WIN);
    CHECK_EQ(w->top_pid[0], OTHER);
    CHECK_EQ(w->top_ns[0], WIN);
    return 0;
}

static int test_lost_record_becomes_a_span_and_degrades(void)
{
    const struct cs_rec_lost *l;
    const struct cs_rec_pwin *w;
    int degraded = 0;

    setup();
    in(100, 1, me, 0, 0);
    ev(PE_EV_LOST, 900, 1, 0, 0, 42, 0, 0);
    sched_fsm_advance(fsm, base + WIN);
    CHECK_EQ(col->recs[CS_REC_LOST].n, 1);
    l = fake_rec(col, CS_REC_LOST, 0);
    CHECK_EQ(l->t_start_ns, base + 100);
    CHECK_EQ(l->t_end_ns, base + 900);
    CHECK_EQ(l->source, 1);
    CHECK_EQ(l->count, 42);
    for (size_t i = 0; (w = fake_rec(col, CS_REC_PWIN, i)) != NULL; i++)
        degraded |= w->pid == me && (w->flags & CS_HF_DEGRADED);
    CHECK(degraded);
    CHECK_EQ(sched_fsm_stats(fsm)->lost, 42);
    return 0;
}

static int test_dead_thread_switch_out_is_matched_by_cpu(void)
{
    uint32_t child = me + 100000;

    setup();
    ev(PE_EV_FORK, 10, 0, child, child, me, me, 0);
    in(20, 0, child, 0, 0);
    ev(PE_EV_EXIT, 30, 0, child, child, me, me, 0);
    ev(PE_EV_SWITCH_OUT, 40, 0, UINT32_MAX, UINT32_MAX, 0, 0, 0);
    CHECK(fake_proc(col, child) != NULL);
    CHECK(fake_proc(col, child)->flags & CS_PF_EXITED);
    CHECK_EQ(fake_proc(col, child)->exit_ns, base + 30);
    CHECK_EQ(fake_proc(col, child)->ppid, me);
    CHECK(!sched_fsm_tracked(fsm, child));
    CHECK(fake_thread(col, UINT32_MAX) == NULL);
    return 0;
}

static int test_exec_renames_the_process(void)
{
    struct pe_ev e;

    setup();
    memset(&e, 0, sizeof(e));
    e.t_ns = base + 10;
    e.kind = PE_EV_COMM;
    e.pid = e.tid = me;
    e.flags = PE_F_EXEC;
    strcpy(e.comm, "python3");
    sched_fsm_event(fsm, &e);
    CHECK_STR(fake_proc(col, me)->comm, "python3");
    CHECK(fake_proc(col, me)->flags & CS_PF_EXEC);
    CHECK_EQ(fake_proc(col, me)->exec_ns, base + 10);
    return 0;
}

int main(void)
{
    RUN(test_preempted_interval_names_the_holder);
    RUN(test_blocked_interval_is_labelled_and_names_the_waker);
    RUN(test_wakeup_in_irq_context_has_no_waker);
    RUN(test_wakeup_racing_the_switch_out_makes_it_runnable);
    RUN(test_without_tracepoints_blocks_are_unlabelled);
    RUN(test_windows_split_on_cpu_time);
    RUN(test_syswin_busy_from_idle_tracking);
    RUN(test_lost_record_becomes_a_span_and_degrades);
    RUN(test_dead_thread_switch_out_is_matched_by_cpu);
    RUN(test_exec_renames_the_process);
    sched_fsm_free(fsm);
    fake_collector_free(col);
    return check_status();
}
