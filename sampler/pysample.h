/* pysample.h: one traced process's Python stacks, read from outside it
 * (process_vm_readv) by the collector while a CUDA thread runs host code
 * (docs/python.md, "Host code"). Owns the process's read state: the layout
 * its shim published (include/cudaspy/pyframe.h) and the code objects
 * already named. Whom to sample and when, and storing the samples, is
 * collector.c's business.
 *
 * Usage: ps = pysample_new(pid, layout); for each sample:
 *        n = pysample_read(ps, tstate, frames, max, &trunc, intern, arg);
 *        ... pysample_free(ps). */
#ifndef CUDASPY_SAMPLER_PYSAMPLE_H
#define CUDASPY_SAMPLER_PYSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "cudaspy/pyframe.h"
#include "cudaspy/record.h"

#define PYSAMPLE_FRAMES 32 /* Python frames kept a sample, innermost first (as the shim) */

struct pysample;

/* Names a string in the run: @return 0 and *@p id, or < 0 (collector_intern). */
typedef int (*pysample_intern_fn)(void *arg, const char *s, size_t len, uint32_t *id);

/** For process @p pid whose shim published layout @p L (copied; its magic
 * checked by the caller). @return NULL when out of memory */
struct pysample *pysample_new(uint32_t pid, const struct cs_py_layout *L);

/** Read the stack of the thread whose PyThreadState is at @p tstate in the
 * process into @p f (at most @p max frames, CS_FRAME_PYTHON, innermost
 * first; file and function named through @p intern). The process is never
 * stopped or written: a frame that changes while it is read fails its
 * checks (its code object must be one, PyCode_Type, and so must its file
 * name and line table be str and bytes) and ends the walk there.
 * @return frames read (0: none, the thread runs no Python now), *@p trunc
 *         1 when the chain was cut (a frame failed, or more than @p max);
 *         -EPERM or -EACCES (its memory may not be read: stop sampling it),
 *         -ESRCH (it is gone), -EFAULT (this read failed: drop the sample),
 *         -ENOMEM */
int pysample_read(struct pysample *ps, uint64_t tstate, struct cs_frame *f, int max, int *trunc,
                  pysample_intern_fn intern, void *arg);

/** Free. Accepts NULL. */
void pysample_free(struct pysample *ps);

#endif
