/* pe_pfm.c: --events named counters through libpfm4 (pe_pfm.h).
 * Owns the libpfm4 encoding, the counting fds (one per event per tracked
 * thread at open, inherit=1) and the per-process deltas. Uses libpfm4's own
 * perf_event.h, so it never includes <linux/perf_event.h>. */
#include "pe_pfm.h"

#include <errno.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PFM_MAX_EVENTS 16

struct pfm_event {
    char name[64];
    uint32_t name_id;
    struct perf_event_attr attr;
    unsigned opened;   /* fds open */
    int first_rc;      /* first open failure, 0 = none */
};

struct pfm_fd {
    int fd;
    uint32_t pid;
    int ev;
    uint64_t last;
};

struct pe_pfm {
    struct collector *c;
    struct pfm_event ev[PFM_MAX_EVENTS];
    int nev;
    struct pfm_fd *fds;
    size_t nfds, cap;
    int sorted;
    uint64_t t_last;
};

static int encode(struct pe_pfm *p, const char *name, size_t len, struct cs_err *err)
{
    struct pfm_event *e = &p->ev[p->nev];
    pfm_perf_encode_arg_t arg;
    char *fstr = NULL;
    int rc;

    if (p->nev == PFM_MAX_EVENTS)
        return cs_err_set(err, CS_E_USAGE, "--events: more than %d events", PFM_MAX_EVENTS);
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%.*s", (int)len, name);
    memset(&arg, 0, sizeof(arg));
    arg.attr = &e->attr;
    arg.fstr = &fstr;
    arg.size = sizeof(arg);
    rc = pfm_get_os_event_encoding(e->name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    free(fstr);
    if (rc != PFM_SUCCESS)
        return cs_err_set(err, CS_E_USAGE, "--events: %s: unknown event (libpfm4: %s)", e->name,
                          pfm_strerror(rc));
    e->attr.size = sizeof(e->attr);
    e->attr.inherit = 1;
    e->attr.disabled = 0;
    e->attr.read_format = 0;
    e->attr.sample_period = 0;
    e->attr.sample_type = 0;
    if (collector_intern(p->c, e->name, strlen(e->name), &e->name_id) < 0)
        return -ENOMEM;
    p->nev++;
    return 0;
}

int pe_pfm_open(struct pe_pfm **out, const char *events, struct collector *c,
                struct cs_err *err)
{
    struct pe_pfm *p;
    int rc = 0;

    *out = NULL;
    if (pfm_initialize() != PFM_SUCCESS)
        return cs_err_set(err, CS_E_USAGE, "--events: libpfm4 failed to initialise");
    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->c = c;
    for (const char *s = events; rc == 0 && *s;) {
        size_t n = strcspn(s, ",");

        if (n)
            rc = encode(p, s, n, err);
        s += n + (s[n] == ',');
    }
    if (rc < 0) {
        pe_pfm_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

static int keep(struct pe_pfm *p, int fd, uint32_t pid, int ev)
{
    if (p->nfds == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        struct pfm_fd *v = realloc(p->fds, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        p->fds = v;
        p->cap = cap;
    }
    p->fds[p->nfds++] = (struct pfm_fd){fd, pid, ev, 0};
    p->sorted = 0;
    return 0;
}

void pe_pfm_attach_cb(void *arg, uint32_t pid, uint32_t tid)
{
    struct pe_pfm *p = arg;

    for (int i = 0; i < p->nev; i++) {
        struct pfm_event *e = &p->ev[i];
        long fd = syscall(SYS_perf_event_open, &e->attr, (pid_t)tid, -1, -1,
                          PERF_FLAG_FD_CLOEXEC);

        if (fd < 0) {
            if (!e->first_rc)
                e->first_rc = -errno;
            continue;
        }
        if (keep(p, (int)fd, pid, i) < 0) {
            close((int)fd);
            continue;
        }
        e->opened++;
    }
}

int pe_pfm_status(struct pe_pfm *p, struct cs_err *err)
{
    for (int i = 0; i < p->nev; i++) {
        const struct pfm_event *e = &p->ev[i];

        if (!e->opened && e->first_rc)
            return cs_err_set(err, CS_E_USAGE, "--events: %s: not supported here (%s)",
                              e->name, strerror(-e->first_rc));
    }
    return 0;
}

static int fd_cmp(const void *a, const void *b)
{
    const struct pfm_fd *x = a, *y = b;

    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->ev - y->ev;
}

static void emit(struct pe_pfm *p, uint32_t pid, int ev, uint64_t delta, uint64_t t)
{
    struct cs_rec_counter r;

    memset(&r, 0, sizeof(r));
    r.t_start_ns = p->t_last ? p->t_last : t;
    r.t_end_ns = t;
    r.pid = pid;
    r.name_id = p->ev[ev].name_id;
    r.value = delta;
    collector_emit(p->c, CS_REC_COUNTER, pid, &r);
}

void pe_pfm_read(struct pe_pfm *p, uint64_t t_ns)
{
    size_t i = 0;

    if (!p->sorted) {
        qsort(p->fds, p->nfds, sizeof(p->fds[0]), fd_cmp);
        p->sorted = 1;
    }
    while (i < p->nfds) {
        uint32_t pid = p->fds[i].pid;
        int ev = p->fds[i].ev;
        uint64_t delta = 0;

        for (; i < p->nfds && p->fds[i].pid == pid && p->fds[i].ev == ev; i++) {
            uint64_t v;

            if (read(p->fds[i].fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
                continue;
            delta += v - p->fds[i].last;
            p->fds[i].last = v;
        }
        emit(p, pid, ev, delta, t_ns);
    }
    p->t_last = t_ns;
}

void pe_pfm_free(struct pe_pfm *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nfds; i++)
        close(p->fds[i].fd);
    free(p->fds);
    free(p);
}
