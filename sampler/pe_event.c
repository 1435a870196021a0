/* pe_event.c: one perf_event file descriptor (open, configure, read).
 * The attr recipe here is the one every event of a per-CPU ring shares
 * (same clock, same sample_id subset), which SET_OUTPUT requires. */
#include "pe_event.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void pe_event_attr(struct perf_event_attr *a, uint32_t type, uint64_t config)
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    a->type = type;
    a->config = config;
    a->sample_period = 1;
    a->sample_type = PE_SAMPLE_BASE;
    a->read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
    a->sample_id_all = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->disabled = 1;
}

int pe_event_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
    long fd = syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

    return fd < 0 ? -errno : (int)fd;
}

int pe_event_id(int fd, uint64_t *id)
{
    return ioctl(fd, PERF_EVENT_IOC_ID, id) < 0 ? -errno : 0;
}

int pe_event_set_output(int fd, int out_fd)
{
    return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, out_fd) < 0 ? -errno : 0;
}

int pe_event_set_filter(int fd, const char *filter)
{
    return ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0 ? -errno : 0;
}

int pe_event_enable(int fd)
{
    return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0 ? -errno : 0;
}

int pe_event_disable(int fd)
{
    return ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) < 0 ? -errno : 0;
}

int pe_event_read(int fd, uint64_t *value, uint64_t *lost)
{
    uint64_t buf[3]; /* value, id, lost */
    ssize_t n = read(fd, buf, sizeof(buf));

    if (n < 0)
        return -errno;
    if (n != (ssize_t)sizeof(buf))
        return -EIO;
    if (value)
        *value = buf[0];
    if (lost)
        *lost = buf[2];
    return 0;
}
