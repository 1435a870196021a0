/* live/live_target.c: the run that `top` and `metrics` read, named by a
 * file or by a pid being recorded (live.h). The /proc work is
 * sampler_find.c's (cudaspy/samplerfind.h), shared with `cudaspy ctl`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cudaspy/samplerfind.h"
#include "live.h"

/* Digits only, and no file of that name: a pid. */
static pid_t pid_of(const char *arg)
{
    struct stat st;
    char *end;
    long v;

    if (arg[0] < '0' || arg[0] > '9' || stat(arg, &st) == 0)
        return 0;
    v = strtol(arg, &end, 10);
    return *end == '\0' && v > 0 && v <= INT_MAX ? (pid_t)v : 0;
}

int live_target_init(struct live_target *t, const char *arg)
{
    memset(t, 0, sizeof(*t));
    if ((t->pid = pid_of(arg)) == 0) {
        snprintf(t->path, sizeof(t->path), "%s", arg);
        return 0;
    }
    if ((t->sampler = cs_sampler_find(t->pid)) == 0)
        return -ESRCH;
    live_target_poll(t);
    return 0;
}

int live_target_poll(struct live_target *t)
{
    int alive;

    if (t->sampler == 0)
        return 1;
    alive = cs_sampler_is(t->sampler);
    if (alive && t->path[0] == '\0' && cs_sampler_run(t->sampler, t->path, sizeof(t->path)) < 0)
        t->path[0] = '\0';
    return alive;
}
