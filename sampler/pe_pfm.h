/* pe_pfm.h: named counters (--events) through libpfm4: encode each name,
 * open one counting event per tracked thread (inherit=1, cpu=-1, so
 * threads and processes forked later count into their creator's counter),
 * and emit CS_REC_COUNTER deltas per process at every read.
 * Usage: pe_pfm_open -> pe_pfm_attach... -> pe_pfm_status -> loop
 *        pe_pfm_read -> pe_pfm_free */
#ifndef CUDASPY_SAMPLER_PE_PFM_H
#define CUDASPY_SAMPLER_PE_PFM_H

#include <stdint.h>

#include "collector.h"
#include "cudaspy/error.h"

struct pe_pfm;

/** Encode the comma-separated @p events. @return 0, CS_E_USAGE (unknown
 * name: @p err names it), -ENOMEM */
int pe_pfm_open(struct pe_pfm **out, const char *events, struct collector *c,
                struct cs_err *err);

/** Open every event on thread @p tid of process @p pid (failures are kept
 * for pe_pfm_status). Signature fits sched_foreach_thread. */
void pe_pfm_attach_cb(void *pfm, uint32_t pid, uint32_t tid);

/** @return 0, or CS_E_USAGE when an event could not be opened anywhere
 * (@p err names the event and the errno, e.g. cycles without a PMU) */
int pe_pfm_status(struct pe_pfm *p, struct cs_err *err);

/** Read all counters and emit per-process deltas since the last read. */
void pe_pfm_read(struct pe_pfm *p, uint64_t t_ns);

/** Close and free; accepts NULL. */
void pe_pfm_free(struct pe_pfm *p);

#endif
