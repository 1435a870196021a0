/* nvml.h: each GPU's name and PCIe link capability, read once per run from
 * NVIDIA's NVML, which nvml.c dlopens and closes again (never linked: a
 * machine without it records exactly as before). Writing the answer into
 * the run file's meta, and any message, is the caller's (main.c).
 *
 * Usage: j = nvml_job_new(lib); nvml_job_open(j); then, from the loop,
 * nvml_job_wait(j, 0, ...) until it stops answering -EAGAIN (at the end of
 * a run, with a timeout); nvml_job_free(j). nvml_read() is the same read
 * made in the caller's thread. */
#ifndef CUDASPY_SAMPLER_NVML_H
#define CUDASPY_SAMPLER_NVML_H

#include <stdint.h>

#include "cudaspy/error.h"

#define NVML_LIB_DEFAULT "libnvidia-ml.so.1"
#define NVML_GPUS_MAX    64 /* devices listed; NVML's later indexes are left out */

struct nvml_gpus {
    unsigned count;                  /* devices listed, in NVML index order (PCI bus order,
                                        which may differ from CUDA's device order) */
    char pcie_max[NVML_GPUS_MAX * 8]; /* "GENxWIDTH" per device, ','-joined ("5x16,4x8");
                                        "?" for a device whose query failed */
    char names[NVML_GPUS_MAX * 96];  /* device names, ';'-joined (a ';' in a name becomes
                                        ' '); "?" for a device whose name query failed */
};

/** Load the NVML library @p lib (a path or a soname for dlopen), nvmlInit_v2,
 * read every device's name and maximum PCIe link generation and width,
 * nvmlShutdown and dlclose. Blocks for as long as nvmlInit_v2 does: about
 * 100 ms, seconds on a machine whose GPUs are not in persistence mode.
 * @param g    filled on success; count 0 when NVML sees no device
 * @param err  optional; on failure one line: "LIB: what" for a library that
 *             does not load or lacks an entry point, else the call that failed
 * @return 0; -ENOENT (@p lib does not load); -ENOSYS (it lacks an NVML entry
 *         point); -EIO (nvmlInit_v2 or nvmlDeviceGetCount_v2 failed) */
int nvml_read(const char *lib, struct nvml_gpus *g, struct cs_err *err);

struct nvml_job;

/** A job that makes one nvml_read(@p lib) in a thread of its own, so that
 * neither the traced command's start nor draining waits for nvmlInit.
 * @return the job (not started), or NULL (out of memory) */
struct nvml_job *nvml_job_new(const char *lib);

/** Start the job's thread (all signals blocked in it: they stay the caller's).
 * @return 0 or -errno of pthread_create */
int nvml_job_open(struct nvml_job *j);

/** Wait up to @p timeout_ns (0: do not wait) for the started job's read.
 * @param g, err  nvml_read's answer, copied out once it is done
 * @return -EAGAIN while the read goes on, else what nvml_read returned */
int nvml_job_wait(struct nvml_job *j, uint64_t timeout_ns, struct nvml_gpus *g,
                  struct cs_err *err);

/** Free @p j (NULL is fine). A thread still inside NVML is not waited for:
 * it is detached and frees the job itself when its read returns. */
void nvml_job_free(struct nvml_job *j);

#endif
