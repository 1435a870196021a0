/* test_hostclock.c: unit.hostclock, the host's clock pairs of a run
 * (sampler/hostclock.h, docs/multihost.md) on the real clocks: the test
 * shift lands in the pairs and the real-time offset, a long run keeps at
 * most HC_MAX pairs spread over all of it (first pair kept, interval
 * doubled), the text lists every pair, malformed shifts are refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "hostclock.h"

static int64_t rt_minus_mono(void)
{
    struct timespec r, m;

    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    return (int64_t)(r.tv_sec - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

static uint64_t mono(void)
{
    struct timespec m;

    clock_gettime(CLOCK_MONOTONIC, &m);
    return (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec;
}

static int64_t dist(int64_t a, int64_t b)
{
    return a > b ? a - b : b - a;
}

static int test_shift(void)
{
    struct hostclock h;

    setenv("CUDASPY_TEST_REALTIME_SHIFT", "1500000000:40", 1);
    CHECK_EQ(hostclock_init(&h, mono()), 0);
    CHECK_EQ(h.n, 1);
    CHECK(dist((int64_t)(h.p[0].rt_ns - h.p[0].mono_ns), rt_minus_mono() + 1500000000) < 1000000);
    CHECK(dist((int64_t)hostclock_rt_offset(&h), rt_minus_mono() + 1500000000) < 1000000);
    CHECK_EQ(h.p[0].ptp_ns == 0, h.ptp_fd < 0);
    hostclock_close(&h);
    unsetenv("CUDASPY_TEST_REALTIME_SHIFT");
    CHECK_EQ(hostclock_init(&h, mono()), 0);
    CHECK(dist((int64_t)(h.p[0].rt_ns - h.p[0].mono_ns), rt_minus_mono()) < 1000000);
    hostclock_close(&h);
    return 0;
}

static int test_thinning(void)
{
    struct hostclock h;
    uint64_t t = mono(), first;
    char buf[HC_MAX * 64];
    size_t len, words = 1;

    CHECK_EQ(hostclock_init(&h, t), 0);
    first = h.p[0].mono_ns;
    CHECK_EQ(hostclock_tick(&h, t + HC_EVERY_NS / 2, 0), 0); /* not due */
    for (int i = 0; i < 300; i++) {
        t = h.next_ns;
        CHECK_EQ(hostclock_tick(&h, t, 0), 1);
        CHECK(h.n <= HC_MAX);
    }
    CHECK(h.n > HC_MAX / 2);
    CHECK_EQ(h.p[0].mono_ns, first);
    CHECK(h.every_ns >= 4 * HC_EVERY_NS); /* 301 pairs: thinned at least twice */
    for (size_t i = 1; i < h.n; i++)
        CHECK(h.p[i].mono_ns >= h.p[i - 1].mono_ns);
    len = hostclock_str(&h, buf, sizeof(buf));
    CHECK(len < sizeof(buf));
    CHECK_EQ(hostclock_str(&h, NULL, 0), len);
    for (size_t i = 0; i < len; i++)
        words += buf[i] == ' ';
    CHECK_EQ(words, h.n);
    CHECK(strchr(buf, ':') != NULL);
    hostclock_close(&h);
    return 0;
}

static int test_bad_shift(void)
{
    const char *bad[] = {"abc", "5:", "5:x", "1e9", "12 "};
    struct hostclock h;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("CUDASPY_TEST_REALTIME_SHIFT", bad[i], 1);
        CHECK_EQ(hostclock_init(&h, mono()), -EINVAL);
        CHECK_EQ(h.n, 1); /* the true clock's pair */
        CHECK(dist((int64_t)(h.p[0].rt_ns - h.p[0].mono_ns), rt_minus_mono()) < 1000000);
        hostclock_close(&h);
    }
    unsetenv("CUDASPY_TEST_REALTIME_SHIFT");
    return 0;
}

int main(void)
{
    RUN(test_shift);
    RUN(test_thinning);
    RUN(test_bad_shift);
    return check_status();
}
