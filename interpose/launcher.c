/* launcher.c: `cudaspy record`, the front door for recording a command. It
 * only checks the command line and execs cudaspy-sampler in launch mode with
 * the shim next to it preloaded into the command (the sampler sets
 * CUDASPY_SOCK and LD_PRELOAD for the child only and exits with the child's
 * status). Recording itself is the sampler's and the shim's business. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "cudaspy/flight.h"
#include "cudaspy/version.h"

#ifndef LAUNCH_BIN_TO_LIB
#define LAUNCH_BIN_TO_LIB "../lib"
#endif
#define LAUNCH_EXTRA_ARGS 4 /* sampler path, --preload SO, NULL; options reuse argv's slots */

static const char usage_text[] =
    "Usage: cudaspy record [-o FILE] [--no-host] [--gpu-activity MODE] [--duty MS] [-q]\n"
    "                      [--max-size SIZE] [--delay S] [--duration S]\n"
    "                      [--capture MODE] [--keep-on EXPR] [--metrics HOST:PORT]\n"
    "                      -- COMMAND [ARGS...]\n"
    "\n"
    "Run COMMAND with the CUDA shim preloaded and record its CUDA calls and host\n"
    "scheduling into one run file.\n"
    "\n"
    "  -o FILE     run file to write (default: the sampler's, ./cudaspy-<pid>.lmdb)\n"
    "  --no-host   record CUDA calls only, no host sampling\n"
    "  --gpu-activity MODE\n"
    "              what the GPU itself ran, from CUPTI: sampled (default: a slice of\n"
    "              every second), full, or off (CUDASPY_GPU_ACTIVITY; docs/gpu.md)\n"
    "  --duty MS   measure what recording costs: record for MS ms, pause for MS ms,\n"
    "              and so on (the run covers the recording phases only)\n"
    "  --max-size SIZE\n"
    "              flight recorder for long jobs: the run file stays near SIZE (200M,\n"
    "              2G; at least 1M) with every record of the last part of the run\n"
    "              and per-second aggregates of all of it (CUDASPY_MAX_SIZE)\n"
    "  --keep-on EXPR\n"
    "              with --max-size: keep the detail around the first moment EXPR\n"
    "              held (step_p99>1.5x, step_p50>20ms, high: a new HIGH finding)\n"
    "              instead of only the tail (CUDASPY_KEEP_ON)\n"
    "  --delay S   record nothing for the first S seconds (decimals: 1.5)\n"
    "  --duration S\n"
    "              record for S seconds after the delay, then nothing\n"
    "  --capture MODE\n"
    "              record only the ranges MODE names; the analysis looks at them\n"
    "              alone (docs/capture.md). signal: between 'cudaspy ctl PID start'\n"
    "              and 'stop'; cudaProfilerApi: between the program's\n"
    "              cudaProfilerStart and Stop; nvtx:NAME[:N]: the first N NVTX\n"
    "              ranges NAME; steps:A-B[:NAME]: steps A to B, each a top-level\n"
    "              NVTX range NAME (default: the first one the program pushes)\n"
    "  --metrics HOST:PORT\n"
    "              serve the run's live figures to Prometheus at\n"
    "              http://HOST:PORT/metrics while it is recorded (docs/live.md)\n"
    "  -q          no summary line at the end\n"
    "\n"
    "Environment: CUDASPY_SAMPLER overrides the sampler path (default: next to\n"
    "this program); CUDASPY_DISABLE=1 makes the shim a pass-through.\n"
    "NVTX_INJECTION64_PATH, unless set, names the shim: NVTX ranges are recorded.\n"
    "\n"
    "Exit status: COMMAND's; 2 usage error; 3 the sampler could not be started.\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy record -o run.lmdb -- python train.py\n"
    "  cudaspy record -o run.lmdb --gpu-activity full -- ./my_cuda_app\n"
    "  cudaspy record -o run.lmdb --max-size 2G -- python train.py\n"
    "  cudaspy record -o run.lmdb --metrics 127.0.0.1:9464 -- python train.py\n"
    "  LD_PRELOAD=/usr/local/lib/libcudaspy.so python train.py   (auto-start)\n";

/* `cudaspy --help`: the subcommands; each has its own --help. */
static const char main_usage_text[] =
    "Usage: cudaspy COMMAND [ARGS...]\n"
    "       cudaspy --help | --version\n"
    "\n"
    "Record the CUDA calls of a program and what its host did meanwhile into one\n"
    "run file, for cudaspy-analyze.\n"
    "\n"
    "Commands:\n"
    "  record      run a command with the CUDA shim preloaded and record it;\n"
    "              'cudaspy record --help' gives its options\n"
    "  ctl         start or stop recording a running program (record --capture\n"
    "              signal): 'cudaspy ctl PID start|stop'\n"
    "  top         a live view of a run while it is recorded: 'cudaspy top\n"
    "              RUN|PID' (cudaspy-analyze top; keys 1 p f b, q quits)\n"
    "\n"
    "Options:\n"
    "  -h, --help  print this help and exit\n"
    "  --version   print the version and exit\n"
    "\n"
    "Exit status: 0 for --help and --version; 2 usage error (record: its --help).\n"
    "\n"
    "EXAMPLES\n"
    "  cudaspy record -o run.lmdb -- python train.py\n"
    "  cudaspy top run.lmdb\n"
    "  cudaspy-analyze run.lmdb\n";

static int usage_error_in(const char *help, const char *what)
{
    fprintf(stderr, "cudaspy: %s\nTry '%s --help'\n", what, help);
    return 2;
}

static int usage_error(const char *what)
{
    return usage_error_in("cudaspy record", what);
}

/* Directory of this executable into @p dir. @return 0 or -1 */
static int self_dir(char *dir, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", dir, n - 1);
    char *slash;

    if (len <= 0)
        return -1;
    dir[len] = '\0';
    slash = strrchr(dir, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return 0;
}

/* --gpu-activity MODE: for the shim in every process of the command
 * (CUDASPY_GPU_ACTIVITY), which the driver loads again as its injection
 * (CUDA_INJECTION64_PATH) unless another tool holds that. @return 0 or -1 */
static int gpu_activity(const char *mode, const char *preload)
{
    char real[PATH_MAX];

    if (strcmp(mode, "sampled") != 0 && strcmp(mode, "full") != 0 && strcmp(mode, "off") != 0)
        return -1;
    setenv("CUDASPY_GPU_ACTIVITY", mode, 1);
    if (strcmp(mode, "off") != 0 && getenv("CUDA_INJECTION64_PATH") == NULL &&
        realpath(preload, real) != NULL)
        setenv("CUDA_INJECTION64_PATH", real, 1);
    return 0;
}

/* NVTX ranges: NVTX v3 loads its tool from NVTX_INJECTION64_PATH at a
 * process's first NVTX call, which may come before the shim's constructor
 * sets it (a library's constructor): set it here for the whole command,
 * unless another tool holds it (docs/shim.md, "NVTX"). */
static void nvtx_injection(const char *preload)
{
    char real[PATH_MAX];

    if (getenv("NVTX_INJECTION64_PATH") == NULL && realpath(preload, real) != NULL)
        setenv("NVTX_INJECTION64_PATH", real, 1);
}

/* --max-size SIZE or --max-size=SIZE at argv[*i]: checked here, so that a
 * bad size is one line from us and no sampler starts; passed on as given. */
static int max_size(int argc, char **argv, int *i, char **av, int *n)
{
    const char *arg = argv[*i][10] == '=' ? argv[*i] + 11 : NULL;
    uint64_t bytes;
    char msg[320];
    int rc;

    if (arg == NULL && (*i + 1 >= argc || strcmp(argv[*i + 1], "--") == 0))
        return -usage_error("option --max-size needs a size (200M, 2G)");
    av[(*n)++] = argv[*i];
    if (arg == NULL)
        av[(*n)++] = argv[++*i];
    if ((rc = cs_parse_size(arg ? arg : argv[*i], &bytes)) == 0)
        return 0;
    snprintf(msg, sizeof(msg), "--max-size: invalid size '%.200s' (%s)", arg ? arg : argv[*i],
             rc == -ERANGE ? "from 1M to 8E bytes" : "digits and K, M, G or T: 200M, 2G");
    return -usage_error(msg);
}

/* What option @p opt, passed on to the sampler with its value (which the
 * sampler checks), needs; NULL for another option. */
static const char *takes_value(const char *opt)
{
    static const char *const o[][2] = {
        {"-o", "a file name"}, {"--duty", "milliseconds"}, {"--delay", "seconds"},
        {"--duration", "seconds"}, {"--capture", "a mode (signal, steps:A-B...)"},
        {"--keep-on", "an expression (step_p99>1.5x)"},
        {"--metrics", "an address (127.0.0.1:9464)"}};

    for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++)
        if (strcmp(opt, o[i][0]) == 0)
            return o[i][1];
    return NULL;
}

/* `cudaspy top ARGS`: cudaspy-analyze top ARGS ($CUDASPY_ANALYZE, else the
 * one beside us), argv reused with its program replaced. */
static int top(char **argv)
{
    char dir[PATH_MAX], prog[PATH_MAX + 32];
    const char *env = getenv("CUDASPY_ANALYZE");

    if (env && *env) {
        snprintf(prog, sizeof(prog), "%s", env);
    } else if (self_dir(dir, sizeof(dir)) == 0) {
        snprintf(prog, sizeof(prog), "%s/cudaspy-analyze", dir);
    } else {
        fprintf(stderr, "cudaspy: cannot find my own directory (%s)\n", strerror(errno));
        return 3;
    }
    argv[0] = prog;
    execv(prog, argv);
    fprintf(stderr, "cudaspy: %s: cannot execute (%s)\n", prog, strerror(errno));
    return 3;
}

/* Build the sampler's argv: sampler [opts] --preload SO -- CMD... */
static int record(int argc, char **argv)
{
    char dir[PATH_MAX], sampler[PATH_MAX + 32], preload[PATH_MAX + 32];
    const char *env = getenv("CUDASPY_SAMPLER");
    char **av = calloc((size_t)argc + LAUNCH_EXTRA_ARGS, sizeof(*av));
    int i, n = 1;

    if (av == NULL || self_dir(dir, sizeof(dir)) < 0) {
        fprintf(stderr, "cudaspy: cannot find my own directory (%s)\n", strerror(errno));
        return 3;
    }
    snprintf(sampler, sizeof(sampler), "%s/cudaspy-sampler", dir);
    snprintf(preload, sizeof(preload), "%s/libcudaspy.so", dir);
    if (access(preload, R_OK) != 0) /* installed tree: bindir -> libdir */
        snprintf(preload, sizeof(preload), "%s/%s/libcudaspy.so", dir, LAUNCH_BIN_TO_LIB);
    av[0] = env && *env ? (char *)env : sampler;
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (takes_value(argv[i])) {
            if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0) {
                char msg[128];
                snprintf(msg, sizeof(msg), "option %s needs %s", argv[i], takes_value(argv[i]));
                return usage_error(msg);
            }
            av[n++] = argv[i];
            av[n++] = argv[++i];
        } else if (strcmp(argv[i], "--max-size") == 0 || strncmp(argv[i], "--max-size=", 11) == 0) {
            if (max_size(argc, argv, &i, av, &n) < 0)
                return 2;
        } else if (strcmp(argv[i], "--no-host") == 0 || strcmp(argv[i], "-q") == 0) {
            av[n++] = argv[i];
        } else if (strcmp(argv[i], "--gpu-activity") == 0 ||
                   strncmp(argv[i], "--gpu-activity=", 15) == 0) {
            const char *mode = argv[i][14] == '=' ? argv[i] + 15 : i + 1 < argc ? argv[++i] : "";
            if (gpu_activity(mode, preload) < 0)
                return usage_error("option --gpu-activity needs sampled, full or off");
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else {
            char msg[256];
            snprintf(msg, sizeof(msg), "unknown option '%.200s'", argv[i]);
            return usage_error(msg);
        }
    }
    if (i + 1 >= argc)
        return usage_error("no command to record (put it after --)");
    nvtx_injection(preload);
    av[n++] = "--preload";
    av[n++] = preload;
    for (; i < argc; i++)
        av[n++] = argv[i];
    av[n] = NULL;
    execv(av[0], av);
    fprintf(stderr, "cudaspy: %s: cannot execute (%s)\n", av[0], strerror(errno));
    return 3;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(main_usage_text, stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        puts("cudaspy " CS_VERSION);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "ctl") == 0)
        return ctl_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "top") == 0)
        return top(argv);
    if (argc < 2 || strcmp(argv[1], "record") != 0)
        return usage_error_in("cudaspy", argc < 2 ? "no subcommand"
                                                  : "unknown subcommand (record, ctl or top)");
    return record(argc, argv);
}
