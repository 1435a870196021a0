/* pe_tracefs.c: tracepoint ids and raw-field offsets from tracefs.
 * Owns the tracefs mount decision (mount it when missing and we are root)
 * and the parsing of events/<sys>/<ev>/{id,format}. */
#include "pe_tracefs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static const char *const tracefs_roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

static int has_events(const char *root)
{
    char p[128];

    snprintf(p, sizeof(p), "%s/events/sched", root);
    return access(p, R_OK) == 0;
}

static int find_root(char *out, size_t n)
{
    for (size_t i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
        if (has_events(tracefs_roots[i])) {
            snprintf(out, n, "%s", tracefs_roots[i]);
            return 0;
        }
    }
    if (geteuid() == 0 && mount("nodev", tracefs_roots[0], "tracefs", 0, NULL) == 0 &&
        has_events(tracefs_roots[0])) {
        snprintf(out, n, "%s", tracefs_roots[0]);
        return 0;
    }
    return -ENOENT;
}

static int64_t read_id(const char *root, const char *sys, const char *ev)
{
    char p[160];
    long long id = -1;
    FILE *f;

    snprintf(p, sizeof(p), "%s/events/%s/%s/id", root, sys, ev);
    f = fopen(p, "re");
    if (!f)
        return -1;
    if (fscanf(f, "%lld", &id) != 1)
        id = -1;
    fclose(f);
    return id;
}

/* Match "field:<type> <name>;" or "<name>[N];" on one format line. */
static int line_names(const char *line, const char *name)
{
    const char *semi = strchr(line, ';');
    const char *end, *start;
    size_t n = strlen(name);

    if (!semi || strncmp(line, "field:", 6) != 0)
        return 0;
    end = semi;
    for (const char *b = line; b < semi; b++)
        if (*b == '[') {
            end = b;
            break;
        }
    start = end;
    while (start > line && start[-1] != ' ' && start[-1] != '\t')
        start--;
    return (size_t)(end - start) == n && strncmp(start, name, n) == 0;
}

int pe_tracefs_field(const char *root, const char *sys, const char *ev, const char *name,
                     struct pe_field *f)
{
    char p[160], line[512];
    FILE *fp;
    int rc = -ENOENT;

    f->off = -1;
    f->size = 0;
    snprintf(p, sizeof(p), "%s/events/%s/%s/format", root, sys, ev);
    fp = fopen(p, "re");
    if (!fp)
        return -errno;
    while (fgets(line, sizeof(line), fp)) {
        const char *s = line, *o, *z;

        while (*s == ' ' || *s == '\t')
            s++;
        if (!line_names(s, name))
            continue;
        o = strstr(s, "offset:");
        z = strstr(s, "size:");
        if (o && z) {
            f->off = (int16_t)atoi(o + 7);
            f->size = (int16_t)atoi(z + 5);
            rc = 0;
        }
        break;
    }
    fclose(fp);
    return rc;
}

uint64_t pe_field_get(const struct pe_field *f, const void *raw, uint32_t raw_size)
{
    const uint8_t *p = (const uint8_t *)raw + f->off;

    if (f->off < 0 || (uint32_t)(f->off + f->size) > raw_size)
        return 0;
    switch (f->size) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
    default: return 0;
    }
}

/* Drop an event whose fields we cannot find: better no tracepoint than a
 * misread one. */
static void load_fields(struct pe_tracefs *t)
{
    const char *r = t->root;

    pe_tracefs_field(r, "sched", "sched_switch", "common_flags", &t->common_flags);
    pe_tracefs_field(r, "sched", "sched_switch", "common_pid", &t->common_pid);
    if (pe_tracefs_field(r, "sched", "sched_switch", "prev_pid", &t->sw_prev_pid) < 0 ||
        pe_tracefs_field(r, "sched", "sched_switch", "prev_state", &t->sw_prev_state) < 0 ||
        pe_tracefs_field(r, "sched", "sched_switch", "next_pid", &t->sw_next_pid) < 0)
        t->id_switch = -1;
    if (pe_tracefs_field(r, "sched", "sched_waking", "pid", &t->wk_pid) < 0) {
        t->id_waking = -1;
        t->id_wakeup_new = -1;
    }
    if (pe_tracefs_field(r, "kmem", "mm_page_alloc", "order", &t->pa_order) < 0)
        t->id_page_alloc = -1;
}

int pe_tracefs_load(struct pe_tracefs *t)
{
    int rc;

    memset(t, 0, sizeof(*t));
    t->id_switch = t->id_waking = t->id_wakeup_new = t->id_page_alloc = -1;
    rc = find_root(t->root, sizeof(t->root));
    if (rc < 0) {
        t->root[0] = 0;
        return rc;
    }
    t->id_switch = read_id(t->root, "sched", "sched_switch");
    t->id_waking = read_id(t->root, "sched", "sched_waking");
    t->id_wakeup_new = read_id(t->root, "sched", "sched_wakeup_new");
    t->id_page_alloc = read_id(t->root, "kmem", "mm_page_alloc");
    load_fields(t);
    return 0;
}
