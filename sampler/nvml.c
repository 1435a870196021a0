/* nvml.c: the GPUs' names and PCIe link capability from NVIDIA's NVML
 * (nvml.h of this folder). Owns the dlopen handle for the length of one
 * read and the thread that makes the read off the collector's loop; what
 * the answer means and where it goes is main.c's. No NVML header is needed
 * to build: the few entry points used are declared below as NVML's public
 * nvml.h declares them. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvml.h"

/* From NVML's nvml.h (only the values used here). */
typedef enum nvmlReturn_enum { NVML_SUCCESS = 0 } nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

struct nvml_api {
    void *dl;
    nvmlReturn_t (*init)(void);                               /* nvmlInit_v2 */
    nvmlReturn_t (*shutdown)(void);                           /* nvmlShutdown */
    nvmlReturn_t (*count)(unsigned int *);                    /* nvmlDeviceGetCount_v2 */
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);     /* ...GetHandleByIndex_v2 */
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int); /* nvmlDeviceGetName */
    nvmlReturn_t (*gen)(nvmlDevice_t, unsigned int *);        /* ...GetMaxPcieLinkGeneration */
    nvmlReturn_t (*width)(nvmlDevice_t, unsigned int *);      /* ...GetMaxPcieLinkWidth */
};

static const struct {
    const char *sym;
    size_t off;
} nvml_syms[] = {
    {"nvmlInit_v2", offsetof(struct nvml_api, init)},
    {"nvmlShutdown", offsetof(struct nvml_api, shutdown)},
    {"nvmlDeviceGetCount_v2", offsetof(struct nvml_api, count)},
    {"nvmlDeviceGetHandleByIndex_v2", offsetof(struct nvml_api, handle)},
    {"nvmlDeviceGetName", offsetof(struct nvml_api, name)},
    {"nvmlDeviceGetMaxPcieLinkGeneration", offsetof(struct nvml_api, gen)},
    {"nvmlDeviceGetMaxPcieLinkWidth", offsetof(struct nvml_api, width)},
};

/* dlopen @p lib and resolve every entry point; on failure nothing stays open. */
static int api_open(struct nvml_api *api, const char *lib, struct cs_err *err)
{
    const char *why;
    size_t n = strlen(lib);

    api->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (api->dl == NULL) {
        why = dlerror();
        why = why ? why : "cannot load";
        if (strncmp(why, lib, n) == 0 && strncmp(why + n, ": ", 2) == 0)
            why += n + 2; /* glibc names the file first: say it once */
        return cs_err_set(err, -ENOENT, "%s: %s", lib, why);
    }
    for (size_t i = 0; i < sizeof(nvml_syms) / sizeof(nvml_syms[0]); i++) {
        void *p = dlsym(api->dl, nvml_syms[i].sym);
        if (p == NULL) {
            dlclose(api->dl);
            return cs_err_set(err, -ENOSYS, "%s: no %s (not an NVML library)", lib,
                              nvml_syms[i].sym);
        }
        /* POSIX: a data pointer from dlsym holds a function pointer */
        memcpy((char *)api + nvml_syms[i].off, &p, sizeof(p));
    }
    return 0;
}

/* Append to @p buf, a string of @p cap bytes; what does not fit is cut. */
__attribute__((format(printf, 3, 4))) static void append(char *buf, size_t cap,
                                                         const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Add device @p i to @p g: its name and "GENxWIDTH", "?" for what fails. */
static void gpu_add(const struct nvml_api *api, struct nvml_gpus *g, unsigned i)
{
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "?";
    unsigned int gen = 0, width = 0;
    nvmlDevice_t dev;
    int ok = api->handle(i, &dev) == NVML_SUCCESS;

    if (!ok || api->name(dev, name, sizeof(name)) != NVML_SUCCESS)
        snprintf(name, sizeof(name), "?");
    name[sizeof(name) - 1] = '\0';
    for (char *p = name; (p = strchr(p, ';')) != NULL;)
        *p = ' '; /* ';' separates the names */
    ok = ok && api->gen(dev, &gen) == NVML_SUCCESS && api->width(dev, &width) == NVML_SUCCESS;
    append(g->names, sizeof(g->names), "%s%s", i ? ";" : "", name);
    if (ok)
        append(g->pcie_max, sizeof(g->pcie_max), "%s%ux%u", i ? "," : "", gen, width);
    else
        append(g->pcie_max, sizeof(g->pcie_max), "%s?", i ? "," : "");
}

static int gpus_read(const struct nvml_api *api, struct nvml_gpus *g, struct cs_err *err)
{
    unsigned int n = 0;
    nvmlReturn_t r = api->init();

    if (r != NVML_SUCCESS)
        return cs_err_set(err, -EIO, "nvmlInit_v2 failed (NVML error %d)", (int)r);
    r = api->count(&n);
    if (r == NVML_SUCCESS) {
        for (g->count = 0; g->count < n && g->count < NVML_GPUS_MAX; g->count++)
            gpu_add(api, g, g->count);
    }
    api->shutdown();
    if (r != NVML_SUCCESS)
        return cs_err_set(err, -EIO, "nvmlDeviceGetCount_v2 failed (NVML error %d)", (int)r);
    return 0;
}

int nvml_read(const char *lib, struct nvml_gpus *g, struct cs_err *err)
{
    struct nvml_api api;
    int rc;

    memset(g, 0, sizeof(*g));
    rc = api_open(&api, lib, err);
    if (rc < 0)
        return rc;
    rc = gpus_read(&api, g, err);
    dlclose(api.dl);
    return rc;
}

/* ---- the job: one read in a thread ---- */

struct nvml_job {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when done is set */
    int started;       /* the thread was created (nvml_job_open) */
    int done;          /* under mu: rc, g and err are final */
    int abandoned;     /* under mu: nvml_job_free ran first; the thread frees the job */
    int rc;
    struct nvml_gpus g;
    struct cs_err err;
    char lib[PATH_MAX];
};

static void job_destroy(struct nvml_job *j)
{
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

static void *job_main(void *arg)
{
    struct nvml_job *j = arg;
    int rc = nvml_read(j->lib, &j->g, &j->err), abandoned;

    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->done = 1;
    abandoned = j->abandoned;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (abandoned)
        job_destroy(j);
    return NULL;
}

struct nvml_job *nvml_job_new(const char *lib)
{
    struct nvml_job *j = calloc(1, sizeof(*j));
    pthread_condattr_t ca;

    if (j == NULL)
        return NULL;
    snprintf(j->lib, sizeof(j->lib), "%s", lib);
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    return j;
}

int nvml_job_open(struct nvml_job *j)
{
    sigset_t all, old;
    int rc;

    sigfillset(&all); /* signals stay the caller's: its poll() sees SIGTERM */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&j->th, NULL, job_main, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    j->started = rc == 0;
    return -rc;
}

int nvml_job_wait(struct nvml_job *j, uint64_t timeout_ns, struct nvml_gpus *g,
                  struct cs_err *err)
{
    struct timespec until;
    int rc = -EAGAIN;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(timeout_ns / 1000000000u);
    until.tv_nsec += (long)(timeout_ns % 1000000000u);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->mu);
    while (j->started && !j->done && timeout_ns &&
           pthread_cond_timedwait(&j->cv, &j->mu, &until) != ETIMEDOUT)
        ;
    if (j->done) {
        rc = j->rc;
        *g = j->g;
        if (err)
            *err = j->err;
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}

void nvml_job_free(struct nvml_job *j)
{
    pthread_t th;

    if (j == NULL)
        return;
    if (!j->started) {
        job_destroy(j);
        return;
    }
    pthread_mutex_lock(&j->mu);
    th = j->th;
    if (j->done) {
        pthread_mutex_unlock(&j->mu);
        pthread_join(th, NULL);
        job_destroy(j);
        return;
    }
    j->abandoned = 1; /* from here the job is the thread's */
    pthread_mutex_unlock(&j->mu);
    pthread_detach(th);
}
