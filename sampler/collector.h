/* collector.h: the collector's interface to the host sampler (host.c and
 * the pe_*.c objects). The collector owns the run file (struct cs_store),
 * the shim connections and their rings, the in-memory process table and the
 * staging blocks; the host sampler hands it records through these calls.
 * All calls run on the collector's single thread. */
#ifndef CUDASPY_SAMPLER_COLLECTOR_H
#define CUDASPY_SAMPLER_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "cudaspy/record.h"

struct collector;

/** Append one host record of @p kind (CS_REC_OFFCPU..CS_REC_LOST) produced for
 * process @p pid (0 = system) to its staging block; blocks are closed at
 * 64 KiB or 100 ms and committed at the next commit (every <= 100 ms).
 * @return 0, -ENOMEM, -EINVAL (unknown kind) */
int collector_emit(struct collector *c, unsigned kind, uint32_t pid, const void *rec);

/** Merge @p p into the process table: a live row with the same pid is
 * updated (non-zero fields of @p p win, flags are ORed; comm if non-empty);
 * if that row has exited and p->start_ns is later, a new row starts.
 * Rows are written at every commit. @return 0, -ENOMEM */
int collector_proc(struct collector *c, const struct cs_proc *p);

/** Same merge rules for a thread row (by pid, tid). */
int collector_thread(struct collector *c, const struct cs_thread *t);

/** Intern a string into the run's strings table. @return 0, -ENOMEM */
int collector_intern(struct collector *c, const char *s, size_t len, uint32_t *id);

/** Set run metadata (text). @return 0, -ENOMEM */
int collector_meta(struct collector *c, const char *key, const char *val);
int collector_meta_u64(struct collector *c, const char *key, uint64_t val);

/** Is @p pid a process the collector knows as part of the traced tree
 * (registered by a shim or added by the host sampler)? */
int collector_has_pid(struct collector *c, uint32_t pid);

#endif
