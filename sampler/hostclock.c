/* hostclock.c: the host's identity and clock pairs of a run (hostclock.h).
 * Owns the pair list, its thinning, the PTP clock's file and the test-only
 * real-time shift. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hostclock.h"

#define FD_TO_CLOCKID(fd) ((~(clockid_t)(fd) << 3) | 3) /* the kernel's dynamic clocks */
#define HC_TRIES 8       /* brackets read for one pair, at most */
#define HC_TIGHT_NS 5000 /* a bracket this tight ends the tries */

static uint64_t clock_ns(clockid_t id)
{
    struct timespec t;

    if (clock_gettime(id, &t) < 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* "NS[:PPM]", NS signed. */
static int parse_shift(struct hostclock *h, const char *s)
{
    char *end;

    errno = 0;
    h->shift_ns = strtoll(s, &end, 10);
    if (errno || end == s)
        return -EINVAL;
    if (*end == ':') {
        const char *p = end + 1;
        h->shift_ppm = strtod(p, &end);
        if (end == p)
            return -EINVAL;
    }
    return *end ? -EINVAL : 0;
}

static void read_others(void *arg, void *val)
{
    const struct hostclock *h = arg;
    struct hc_pair *q = val;

    q->rt_ns = clock_ns(CLOCK_REALTIME);
    q->ptp_ns = h->ptp_fd >= 0 ? clock_ns(FD_TO_CLOCKID(h->ptp_fd)) : 0;
}

/* One pair: the monotonic time is the middle of two reads around the
 * others, the tightest of up to HC_TRIES brackets (a preemption between two
 * reads once put a pair, and the real-time error fitted through it, 8 ms
 * off under ASan beside a busy loop). */
static struct hc_pair take(const struct hostclock *h)
{
    struct hc_pair p = {0, 0, 0}, q = {0, 0, 0};

    p.mono_ns = clock_bracket(HC_TRIES, HC_TIGHT_NS, read_others, (void *)h, &p, &q, sizeof(q));
    p.rt_ns += (uint64_t)(h->shift_ns +
                          (int64_t)(h->shift_ppm * 1e-6 * (double)(p.mono_ns - h->t0_ns)));
    return p;
}

int hostclock_init(struct hostclock *h, uint64_t now_ns)
{
    const char *s = getenv("CUDASPY_TEST_REALTIME_SHIFT");
    int rc = 0;

    memset(h, 0, sizeof(*h));
    h->ptp_fd = open("/dev/ptp0", O_RDONLY | O_CLOEXEC);
    if (h->ptp_fd >= 0 && clock_ns(FD_TO_CLOCKID(h->ptp_fd)) == 0) {
        close(h->ptp_fd); /* not a clock we can read */
        h->ptp_fd = -1;
    }
    h->every_ns = HC_EVERY_NS;
    h->t0_ns = now_ns;
    if (s && *s && (rc = parse_shift(h, s)) < 0)
        h->shift_ns = 0, h->shift_ppm = 0; /* the true clock, then */
    hostclock_tick(h, now_ns, 1);
    return rc;
}

int hostclock_tick(struct hostclock *h, uint64_t now_ns, int force)
{
    if (!force && now_ns < h->next_ns)
        return 0;
    if (h->n == HC_MAX) { /* keep every other pair, take them half as often */
        for (size_t i = 1; i < HC_MAX / 2; i++)
            h->p[i] = h->p[2 * i];
        h->n = HC_MAX / 2;
        h->every_ns *= 2;
    }
    h->p[h->n++] = take(h);
    h->next_ns = now_ns + h->every_ns;
    return 1;
}

size_t hostclock_str(const struct hostclock *h, char *buf, size_t n)
{
    size_t len = 0;

    if (n)
        buf[0] = '\0';
    for (size_t i = 0; i < h->n; i++) {
        const struct hc_pair *p = &h->p[i];
        int w = p->ptp_ns ? snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0,
                                     "%s%" PRIu64 ":%" PRIu64 ":%" PRIu64, i ? " " : "",
                                     p->mono_ns, p->rt_ns, p->ptp_ns)
                          : snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0,
                                     "%s%" PRIu64 ":%" PRIu64, i ? " " : "", p->mono_ns,
                                     p->rt_ns);
        len += w > 0 ? (size_t)w : 0;
    }
    return len;
}

uint64_t hostclock_rt_offset(const struct hostclock *h)
{
    struct hc_pair p = take(h);

    return p.rt_ns - p.mono_ns;
}

void hostclock_host(char *buf, size_t n)
{
    const char *v = getenv("CUDASPY_HOST");

    buf[0] = '\0';
    if (v && *v)
        snprintf(buf, n, "%s", v);
    else if (gethostname(buf, n - 1) < 0)
        buf[0] = '\0';
    buf[n - 1] = '\0';
}

void hostclock_boot_id(char *buf, size_t n)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

    buf[0] = '\0';
    if (f == NULL)
        return;
    if (fgets(buf, (int)n, f) == NULL)
        buf[0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

void hostclock_close(struct hostclock *h)
{
    if (h->ptp_fd >= 0)
        close(h->ptp_fd);
    h->ptp_fd = -1;
}
