/* ctl.c: `cudaspy ctl PID start|stop`, capture ranges from outside (issue
 * 33, docs/capture.md): finds the cudaspy-sampler recording PID and sends
 * it SIGUSR1 (start) or SIGUSR2 (stop); the sampler was started with
 * --capture signal (record --capture signal, or CUDASPY_CAPTURE=signal for
 * LD_PRELOAD users). Owns nothing; finding the sampler is
 * sampler_find.c's. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "ctl.h"
#include "cudaspy/samplerfind.h"

static const char ctl_usage_text[] =
    "Usage: cudaspy ctl PID start|stop\n"
    "\n"
    "Start or stop recording a program that runs under 'cudaspy record --capture\n"
    "signal' (or with CUDASPY_CAPTURE=signal and LD_PRELOAD): each start..stop is\n"
    "one capture range of the run file, and the analysis looks at those alone.\n"
    "PID is the program's, or its cudaspy-sampler's.\n"
    "\n"
    "Exit status: 0 sent; 1 no sampler records PID; 2 usage error.\n"
    "\n"
    "EXAMPLE\n"
    "  cudaspy record --capture signal -o run.lmdb -- python train.py &\n"
    "  cudaspy ctl $(pgrep -f train.py) start; sleep 30; cudaspy ctl ... stop\n";

int ctl_main(int argc, char **argv)
{
    pid_t pid, s;
    char *end;
    int sig;

    if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        fputs(ctl_usage_text, stdout);
        return 0;
    }
    if (argc != 4 || (strcmp(argv[3], "start") != 0 && strcmp(argv[3], "stop") != 0)) {
        fprintf(stderr, "cudaspy: ctl needs a PID and start or stop\n"
                        "Try 'cudaspy ctl --help'\n");
        return 2;
    }
    errno = 0;
    pid = (pid_t)strtol(argv[2], &end, 10);
    if (*end || errno || pid <= 0) {
        fprintf(stderr, "cudaspy: ctl: invalid pid '%s'\nTry 'cudaspy ctl --help'\n", argv[2]);
        return 2;
    }
    if ((s = cs_sampler_find(pid)) == 0) {
        fprintf(stderr, "cudaspy: ctl: pid %d: no cudaspy-sampler records it\n", (int)pid);
        return 1;
    }
    sig = argv[3][2] == 'a' ? SIGUSR1 : SIGUSR2; /* "start" : "stop" */
    if (kill(s, sig) < 0) {
        fprintf(stderr, "cudaspy: ctl: pid %d: cannot signal its sampler %d (%s)\n", (int)pid,
                (int)s, strerror(errno));
        return 1;
    }
    return 0;
}
