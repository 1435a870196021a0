/* shim_capture.c: capture ranges that the program itself bounds (issue 33,
 * docs/capture.md): record --capture cudaProfilerApi (between the
 * program's cuProfilerStart and cuProfilerStop, as cudaProfilerStart and
 * torch.cuda.profiler call them), nvtx:NAME[:N] (the first N NVTX ranges
 * named NAME) and steps:A-B[:NAME] (the A-th to the B-th top-level NVTX
 * range NAME, by default the first one the program pushes at the top).
 * Owns the mode (CUDASPY_CAPTURE, which the sampler passes on to every
 * process it records) and the counts; shim_nvtx.c reports the matching
 * pushes and pops, shim_driver.c the profiler calls, and
 * shim_ring_capture() turns this process's recording on or off and tells
 * the collector, which follows with the rest of the tree. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "shim_ring.h"

int shim_cap_mode_;

static struct {
    pthread_mutex_t lock;
    struct cs_capture_spec want; /* CUDASPY_CAPTURE */
    uint64_t count;              /* matching ranges pushed so far */
    int on;                      /* a range is being recorded */
} cap = {.lock = PTHREAD_MUTEX_INITIALIZER};

void shim_capture_init(void)
{
    const char *v = getenv("CUDASPY_CAPTURE");

    /* anything else (signal, a typo) is the sampler's to judge */
    if (v && cs_capture_parse(v, &cap.want) == 0 && cs_capture_by_program(cap.want.kind))
        shim_cap_mode_ = (int)cap.want.kind;
}

void shim_capture_atfork_child(void)
{
    pthread_mutex_init(&cap.lock, NULL); /* another thread may have held it at the fork */
}

const char *shim_capture_range_name(void)
{
    return shim_cap_mode_ == CS_CAPTURE_NVTX || shim_cap_mode_ == CS_CAPTURE_STEPS ? cap.want.name
                                                                                : NULL;
}

/* Turn recording on or off at @p t (this process's clock); under cap.lock. */
static void cap_set(int on, uint64_t t)
{
    if (on == cap.on)
        return;
    cap.on = on;
    shim_ring_capture(on, t);
}

void shim_capture_profiler(int on)
{
    int err = errno;

    if (shim_cap_mode_ != CS_CAPTURE_PROFILER)
        return;
    pthread_mutex_lock(&cap.lock);
    cap_set(on, shim_ring_now());
    pthread_mutex_unlock(&cap.lock);
    errno = err;
}

int shim_capture_nvtx_push(uint64_t t, int top)
{
    int mine = 0, err = errno;

    pthread_mutex_lock(&cap.lock);
    if (shim_cap_mode_ == CS_CAPTURE_NVTX) {
        if (cap.count < cap.want.b) {
            cap.count++;
            cap_set(1, t);
            mine = 1;
        }
    } else if (top) {
        uint64_t k = ++cap.count;
        if (k == cap.want.a)
            cap_set(1, t);
        mine = k >= cap.want.a && k <= cap.want.b;
    }
    pthread_mutex_unlock(&cap.lock);
    errno = err;
    return mine;
}

void shim_capture_nvtx_pop(uint64_t t)
{
    int err = errno;

    pthread_mutex_lock(&cap.lock);
    if (shim_cap_mode_ == CS_CAPTURE_NVTX || cap.count >= cap.want.b)
        cap_set(0, t);
    pthread_mutex_unlock(&cap.lock);
    errno = err;
}
