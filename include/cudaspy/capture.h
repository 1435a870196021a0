/* capture.h: what `record --capture MODE` (and CUDASPY_CAPTURE) asks for,
 * parsed once for the sampler, which keeps the ranges, and for the shim,
 * which sees the program's own bounds (docs/capture.md). Written in
 * store/cs_capture.c, part of cs_core. */
#ifndef CUDASPY_CAPTURE_H
#define CUDASPY_CAPTURE_H

#include <stdint.h>

enum cs_capture_kind {
    CS_CAPTURE_NONE = 0,
    CS_CAPTURE_SIGNAL = 1,   /* "signal": SIGUSR1 / SIGUSR2 from outside (cudaspy ctl) */
    CS_CAPTURE_PROFILER = 2, /* "cudaProfilerApi": between cuProfilerStart and Stop */
    CS_CAPTURE_NVTX = 3,     /* "nvtx:NAME[:N]": the first N NVTX ranges NAME (default 1) */
    CS_CAPTURE_STEPS = 4     /* "steps:A-B[:NAME]": the A-th to the B-th top-level range
                                NAME (default: the first range pushed at the top) */
};

#define CS_CAPTURE_NAME_MAX 256

struct cs_capture_spec {
    enum cs_capture_kind kind;
    char name[CS_CAPTURE_NAME_MAX]; /* NVTX range name; "" = steps' default */
    uint64_t a, b;                  /* steps A..B (from 1); nvtx: b = N */
};

/** Parse @p s into @p out. @return 0, or -EINVAL (out->kind NONE) */
int cs_capture_parse(const char *s, struct cs_capture_spec *out);

/** Does @p kind come from the program itself (profiler, nvtx, steps)? */
static inline int cs_capture_by_program(enum cs_capture_kind kind)
{
    return kind >= CS_CAPTURE_PROFILER;
}

#endif
