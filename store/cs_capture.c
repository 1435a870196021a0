/* cs_capture.c: the --capture mode's words (capture.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cudaspy/capture.h"

/* "A-B" into a, b (1 <= A <= B). @return the rest, or NULL */
static const char *parse_steps(const char *s, struct cs_capture_spec *o)
{
    char *end;

    if (*s < '0' || *s > '9')
        return NULL;
    o->a = strtoull(s, &end, 10);
    if (*end != '-' || o->a == 0 || end[1] < '0' || end[1] > '9')
        return NULL;
    o->b = strtoull(end + 1, &end, 10);
    return o->b < o->a ? NULL : end;
}

/* NAME[:N] into name and b (N, default 1). @return 0 or -1 */
static int parse_nvtx(const char *s, struct cs_capture_spec *o)
{
    const char *colon = strrchr(s, ':');
    size_t len = strlen(s);
    char *end;

    o->b = 1;
    if (colon && colon[1] >= '0' && colon[1] <= '9') {
        o->b = strtoull(colon + 1, &end, 10);
        if (*end || o->b == 0)
            return -1;
        len = (size_t)(colon - s);
    }
    if (len == 0 || len >= sizeof(o->name))
        return -1;
    memcpy(o->name, s, len);
    o->name[len] = '\0';
    return 0;
}

int cs_capture_parse(const char *s, struct cs_capture_spec *out)
{
    const char *rest;

    memset(out, 0, sizeof(*out));
    if (strcmp(s, "signal") == 0)
        out->kind = CS_CAPTURE_SIGNAL;
    else if (strcmp(s, "cudaProfilerApi") == 0)
        out->kind = CS_CAPTURE_PROFILER;
    else if (strncmp(s, "nvtx:", 5) == 0 && parse_nvtx(s + 5, out) == 0)
        out->kind = CS_CAPTURE_NVTX;
    else if (strncmp(s, "steps:", 6) == 0 && (rest = parse_steps(s + 6, out)) != NULL &&
             (*rest == '\0' || (*rest == ':' && rest[1] && strlen(rest + 1) < sizeof(out->name)))) {
        out->kind = CS_CAPTURE_STEPS;
        if (*rest)
            strcpy(out->name, rest + 1);
    }
    if (out->kind != CS_CAPTURE_NONE)
        return 0;
    memset(out, 0, sizeof(*out));
    return -EINVAL;
}
