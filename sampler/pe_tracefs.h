/* pe_tracefs.h: tracepoint ids and raw-field offsets from tracefs format
 * files, read once at start-up (RAW layouts are not ABI). Mounts tracefs
 * when it is missing and we may. Opening the events is host.c's job. */
#ifndef CUDASPY_SAMPLER_PE_TRACEFS_H
#define CUDASPY_SAMPLER_PE_TRACEFS_H

#include <stdint.h>

/* A raw field: offset and size in bytes inside PERF_SAMPLE_RAW data. */
struct pe_field {
    int16_t off;  /* -1 = absent */
    int16_t size;
};

/* Everything the sampler reads from tracepoint payloads. */
struct pe_tracefs {
    int64_t id_switch, id_waking, id_wakeup_new, id_page_alloc; /* -1 = absent */
    struct pe_field common_flags, common_pid;
    struct pe_field sw_prev_pid, sw_prev_state, sw_next_pid;
    struct pe_field wk_pid;      /* sched_waking / sched_wakeup_new: wakee tid */
    struct pe_field pa_order;    /* mm_page_alloc */
    char root[64];               /* mount point used, "" = none */
};

/** Find (or mount, when root) tracefs and read ids and offsets.
 * @return 0 (some ids may still be -1), -ENOENT (no tracefs), -errno */
int pe_tracefs_load(struct pe_tracefs *t);

/** Read field @p name of event @p sys/@p ev. @return 0, -ENOENT, -errno */
int pe_tracefs_field(const char *root, const char *sys, const char *ev, const char *name,
                     struct pe_field *f);

/** Read a raw integer field (1, 2, 4 or 8 bytes, zero-extended); 0 if absent
 * or out of @p raw_size. */
uint64_t pe_field_get(const struct pe_field *f, const void *raw, uint32_t raw_size);

#endif
