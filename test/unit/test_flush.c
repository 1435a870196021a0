/* test_flush.c: the run file reaches the disk from a thread of the store's
 * own (store/runfile_commit.c, cs_store_flush_start), so that a slow disk never
 * holds up the collector's loop, which must drain the shims' rings before
 * they fill: a 90-100 ms fdatasync() on the dev VM dropped 0.7 % of a
 * 300k calls/s loop's records. fdatasync() here is this file's: the real one
 * after flush_delay_ms, or a failure with flush_errno. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "collector_priv.h"
#include "cudaspy/runfile.h"

#define MS UINT64_C(1000000)

static _Atomic int flush_delay_ms, flush_errno, flush_calls;

int fdatasync(int fd)
{
    int e = atomic_load(&flush_errno), ms = atomic_load(&flush_delay_ms);

    atomic_fetch_add(&flush_calls, 1);
    if (ms)
        usleep((useconds_t)ms * 1000);
    if (e) {
        errno = e;
        return -1;
    }
    return (int)syscall(SYS_fdatasync, fd);
}

static char dir[] = "/tmp/cs_test_flush.XXXXXX";
static char path[128];
static char sock1[64], sock2[64]; /* abstract, this process's own: tests run side by side */

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Tick @p c for @p ms; @return the longest tick, in ns. */
static uint64_t tick_for(struct collector *c, unsigned ms, int *rc)
{
    uint64_t end = now_ns() + ms * MS, worst = 0;

    *rc = 0;
    while (now_ns() < end) {
        uint64_t t0 = now_ns();
        int r = collector_tick(c, t0);
        if (now_ns() - t0 > worst)
            worst = now_ns() - t0;
        if (r < 0)
            *rc = r;
        usleep(1000);
    }
    return worst;
}

/* Flushes of 400 ms every 20 ms: the loop's ticks stay short, flushes do
 * happen, and the end of the run waits for the one under way. */
static int test_tick_never_waits_for_the_disk(void)
{
    struct collector_opts o = {.path = path, .listen = sock1, .sync_ns = 20 * MS};
    struct collector *c = collector_new();
    struct cs_err err = {""};
    uint64_t worst, t0;
    int rc;

    CHECK(c != NULL);
    CHECK_OK(collector_open(c, &o, &err));
    CHECK_OK(collector_flush_start(c));
    atomic_store(&flush_delay_ms, 400);
    atomic_store(&flush_calls, 0);
    worst = tick_for(c, 600, &rc);
    CHECK_OK(rc);
    CHECK(atomic_load(&flush_calls) >= 1);
    if (worst >= 200 * MS) {
        fprintf(stderr, "test_flush: a tick took %" PRIu64 " ms while a flush took 400\n",
                worst / MS);
        CHECK(worst < 200 * MS);
    }
    atomic_store(&flush_delay_ms, 0);
    t0 = now_ns();
    CHECK_OK(collector_finish(c, 1, t0));
    collector_free(c);
    CHECK(now_ns() - t0 < 2000 * MS);
    return 0;
}

/* A failed flush comes back from collector_tick (after the thread's next
 * try), and the run still closes. */
static int test_failed_flush_is_reported(void)
{
    struct collector_opts o = {.path = path, .listen = sock2, .sync_ns = 10 * MS};
    struct collector *c = collector_new();
    struct cs_err err = {""};
    int rc = 0;

    CHECK(c != NULL);
    CHECK_OK(collector_open(c, &o, &err));
    CHECK_OK(collector_flush_start(c));
    atomic_store(&flush_errno, EIO);
    for (int i = 0; i < 100 && rc == 0; i++)
        tick_for(c, 20, &rc);
    atomic_store(&flush_errno, 0);
    CHECK_EQ(rc, -EIO);
    collector_finish(c, 1, now_ns());
    collector_free(c);
    return 0;
}

/* Signals blocked in the threads of this process other than the caller's
 * (the flusher: its SigBlk mask from /proc), or 0 when there are none. */
static unsigned long long other_threads_sigblk(void)
{
    unsigned long long mask = 0;
    char path[300], line[256];
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;

    while (d && (e = readdir(d)) != NULL) {
        FILE *f;
        if (e->d_name[0] == '.' || atoi(e->d_name) == (int)syscall(SYS_gettid))
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        while (fgets(line, sizeof(line), f))
            if (strncmp(line, "SigBlk:", 7) == 0)
                mask = strtoull(line + 7, NULL, 16);
        fclose(f);
    }
    if (d)
        closedir(d);
    return mask;
}

/* The store's own contract: one thread per store, which takes no signals
 * (SIGTERM must reach the collector's loop), none on a closed store. */
static int test_flush_start_contract(void)
{
    struct cs_store *s = cs_store_new();
    unsigned long long blk;
    int calls;

    CHECK(s != NULL);
    atomic_store(&flush_delay_ms, 0);
    CHECK_EQ(cs_store_flush_start(s, 10 * MS), -EBADF);
    CHECK_OK(cs_store_open(s, path, NULL, NULL));
    calls = atomic_load(&flush_calls);
    CHECK_OK(cs_store_flush_start(s, 10 * MS));
    CHECK_EQ(cs_store_flush_start(s, 10 * MS), -EBUSY);
    blk = other_threads_sigblk();
    CHECK(blk & (1ull << (SIGTERM - 1)));
    CHECK(blk & (1ull << (SIGINT - 1)));
    CHECK(blk & (1ull << (SIGHUP - 1)));
    usleep(100 * 1000);
    CHECK(atomic_load(&flush_calls) - calls >= 2); /* every 10 ms */
    cs_store_close(s);
    calls = atomic_load(&flush_calls);
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&flush_calls), calls); /* the thread is gone */
    cs_store_free(s);
    return 0;
}

int main(void)
{
    if (mkdtemp(dir) == NULL)
        return 2;
    snprintf(path, sizeof(path), "%s/run.lmdb", dir);
    snprintf(sock1, sizeof(sock1), "@cs_test_flush.%d.1", (int)getpid());
    snprintf(sock2, sizeof(sock2), "@cs_test_flush.%d.2", (int)getpid());
    RUN(test_tick_never_waits_for_the_disk);
    RUN(test_failed_flush_is_reported);
    RUN(test_flush_start_contract);
    return check_finish(dir);
}
