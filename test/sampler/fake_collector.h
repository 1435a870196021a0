/* fake_collector.h: an in-memory implementation of sampler/collector.h for
 * the host sampler's tests: records by kind, process and thread tables with
 * the collector's merge rules, strings and metadata. Test-only storage. */
#ifndef CUDASPY_TEST_FAKE_COLLECTOR_H
#define CUDASPY_TEST_FAKE_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"

struct fake_recs {
    uint8_t *data;   /* n records of cs_rec_size(kind) bytes */
    size_t n, cap;
};

struct collector {
    struct fake_recs recs[CS_REC_KIND_COUNT];
    struct cs_proc *procs;
    size_t nprocs, capprocs;
    struct cs_thread *threads;
    size_t nthreads, capthreads;
    char **strings;   /* id i+1 = strings[i] */
    size_t nstrings;
    char **meta;      /* "key=value" */
    size_t nmeta;
};

struct collector *fake_collector_new(void);
void fake_collector_free(struct collector *c);

/** Record @p i of @p kind, or NULL. */
const void *fake_rec(const struct collector *c, unsigned kind, size_t i);

/** Latest process row of @p pid, or NULL. */
const struct cs_proc *fake_proc(const struct collector *c, uint32_t pid);
const struct cs_thread *fake_thread(const struct collector *c, uint32_t tid);

/** Metadata value of @p key, or NULL. */
const char *fake_meta(const struct collector *c, const char *key);
const char *fake_string(const struct collector *c, uint32_t id);

#endif
