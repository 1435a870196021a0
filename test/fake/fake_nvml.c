/* fake_nvml.c: a fake libnvidia-ml for CPU tests (libfake_nvml.so, named by
 * CUDASPY_NVML): exactly the NVML entry points sampler/nvml.c uses, with
 * nvml.h's signatures and return codes, answering from the environment,
 * read at each nvmlInit_v2:
 *   FAKE_NVML_GPUS="NVIDIA H100 80GB HBM3:5x16,Fake GPU:4x8"  the devices in
 *       index order, NAME:GENxWIDTH each (default one "Fake GPU" 5x16); a
 *       link that is not GENxWIDTH ("?") makes that device's PCIe queries
 *       fail with NVML_ERROR_NOT_SUPPORTED
 *   FAKE_NVML_INIT_FAIL=1   nvmlInit_v2 returns NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_INIT_MS=N     nvmlInit_v2 sleeps N ms first (a slow init)
 *   FAKE_NVML_LOG=path      one line per nvmlInit_v2 ("init") and
 *                           nvmlShutdown ("shutdown"), appended */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))
#define FAKE_MAX_DEVS 16

/* From NVML's nvml.h. */
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
} nvmlReturn_t;

struct nvmlDevice_st {
    char name[96];
    unsigned int gen, width; /* 0: not known, the queries fail */
};
typedef struct nvmlDevice_st *nvmlDevice_t;

static struct nvmlDevice_st devs[FAKE_MAX_DEVS];
static unsigned int ndevs;
static int inits; /* nvmlInit_v2 calls not yet shut down */

static void fake_log(const char *what)
{
    const char *path = getenv("FAKE_NVML_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;

    if (f) {
        fprintf(f, "%s\n", what);
        fclose(f);
    }
}

/* One "NAME:GENxWIDTH" entry of FAKE_NVML_GPUS into @p d. */
static void parse_dev(char *s, struct nvmlDevice_st *d)
{
    char *colon = strrchr(s, ':');

    d->gen = d->width = 0;
    if (colon) {
        *colon = '\0';
        if (sscanf(colon + 1, "%ux%u", &d->gen, &d->width) != 2)
            d->gen = d->width = 0;
    }
    snprintf(d->name, sizeof(d->name), "%s", s);
}

static void parse_gpus(void)
{
    const char *env = getenv("FAKE_NVML_GPUS");
    char buf[4096], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", env ? env : "Fake GPU:5x16");
    ndevs = 0;
    for (char *t = strtok_r(buf, ",", &save); t && ndevs < FAKE_MAX_DEVS;
         t = strtok_r(NULL, ",", &save))
        parse_dev(t, &devs[ndevs++]);
}

API nvmlReturn_t nvmlInit_v2(void)
{
    const char *ms = getenv("FAKE_NVML_INIT_MS");
    const char *fail = getenv("FAKE_NVML_INIT_FAIL");

    if (ms && atoi(ms) > 0) {
        struct timespec ts = {atoi(ms) / 1000, (long)(atoi(ms) % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    fake_log("init");
    if (fail && strcmp(fail, "1") == 0)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    parse_gpus();
    inits++;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlShutdown(void)
{
    fake_log("shutdown");
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    inits--;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (deviceCount == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = ndevs;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= ndevs || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devs[index];
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || name == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(device->name) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(name, device->name, strlen(device->name) + 1);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen)
{
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || maxLinkGen == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device->gen == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *maxLinkGen = device->gen;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth)
{
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || maxLinkWidth == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device->width == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *maxLinkWidth = device->width;
    return NVML_SUCCESS;
}
