/* main.c: cudaspy-sampler, the collector process. Parses options, starts
 * the traced command (launch mode) or follows a running pid (attach mode),
 * and runs the poll loop that drives the collector (collector.c) and the
 * host sampler (host.c, when built in). Never signals or ptraces the tree. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "collector_priv.h"
#include "cudaspy/flight.h"
#include "cudaspy/version.h"
#include "beside.h"
#include "nvml.h"
#include "privs.h"
#ifdef CS_HAVE_HOST
#include "host.h"
#endif

#define PROG       "cudaspy-sampler"
#define MAX_PFDS   4096
#define GRACE_NS   3000000000ull /* launch mode: wait this long for the tree after SIGINT */
#define NVML_WAIT_NS 2000000000ull /* at the end of a run shorter than nvmlInit: wait this
                                      long for the GPUs' meta */

enum { EXIT_USAGE = 2, EXIT_SYSTEM = 3 };

struct sampler_args {
    const char *output, *listen, *preload, *events;
    const char *metrics; /* --metrics HOST:PORT, or NULL */
    char **cmd;       /* launch mode */
    pid_t pid;        /* attach mode */
    int ready_fd, quiet, no_host, tier, page_source, sched;
    uint64_t window_ns, offcpu_ns, runq_ns, map_bytes, max_map_bytes, duty_ns, max_size;
    unsigned page_period, ring_pages;
    struct capture_opts capture;
    const char *keep_on; /* --keep-on EXPR: the flight recorder's trigger (beside.h) */
};

/* sig_capture: the last capture request from outside (--capture signal):
 * 1 start (SIGUSR1), 2 stop (SIGUSR2), 0 none since the loop took it */
static volatile sig_atomic_t sig_term, sig_int, sig_capture;
/* keep_from: where the trigger's window starts (SIGRTMIN's value, absolute
 * ns), 0 when none came since the loop took it */
static _Atomic uint64_t keep_from;

static void on_signal(int sig)
{
    if (sig == SIGUSR1 || sig == SIGUSR2)
        sig_capture = sig == SIGUSR1 ? 1 : 2;
    else if (sig == SIGINT || sig == SIGHUP)
        sig_int++;
    else
        sig_term = 1;
}

/* SIGRTMIN from the trigger's watcher (--keep-on): its window's start. */
static void on_keep(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (si->si_code == SI_QUEUE && si->si_value.sival_ptr)
        atomic_store(&keep_from, (uint64_t)(uintptr_t)si->si_value.sival_ptr);
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " [OPTIONS] -- CMD [ARGS...]\n"
"       " PROG " [OPTIONS] --pid PID\n"
"\n"
"The cudaspy collector: receives CUDA call records from the shim in every\n"
"traced process (shared-memory rings, socket $CUDASPY_SOCK), samples the\n"
"host (scheduling, run queue, page allocation) and writes one run file.\n"
"Launch mode starts CMD as its child (subreaper: it follows the whole tree)\n"
"and exits with CMD's exit status. Attach mode follows PID until it and\n"
"every registered process are gone. It never signals or ptraces the tree.\n"
"\n"
"Options:\n"
"  -o, --output FILE   run file (default ./cudaspy-<rootpid>.lmdb)\n"
"      --listen ADDR   socket address; \"@name\" is abstract\n"
"                      (default @cudaspy-<pid>-<random>)\n"
"      --ready-fd N    write one byte to fd N once listening, then close it\n"
"      --preload PATH  launch mode: prepend PATH to the child's LD_PRELOAD\n"
"      --no-host       no host sampling (also CUDASPY_HOST=0)\n"
"      --tier A|B|C    force a host sampler tier (default: best available)\n"
"      --window-ms N   per-process counter window (default 10)\n"
"      --offcpu-us N   record off-CPU intervals from N us (default 100)\n"
"      --runq-us N     record run-queue waits from N us (default 100)\n"
"      --page-source faults|allocs  count pages from minor faults (default)\n"
"                      or from kmem:mm_page_alloc (THP and kernel pages too,\n"
"                      but a cost on every page allocation on the machine;\n"
"                      also CUDASPY_PAGE_SOURCE)\n"
"      --page-period N sample every Nth page event (default 16 for faults,\n"
"                      1 for allocs)\n"
"      --events LIST   extra libpfm4 counters, comma-separated\n"
"      --ring-pages N  perf ring data pages per CPU (default 512)\n"
"      --sched batch|normal  the collector's scheduling policy: batch\n"
"                      (default) never preempts a traced thread when it\n"
"                      wakes up; normal is the kernel's default\n"
"      --duty MS       measure what recording costs: from the start, record\n"
"                      for MS ms, pause the shims and the perf events for MS\n"
"                      ms, in turn (run meta duty_ns; the run covers the\n"
"                      recording phases only)\n"
"      --map-mb N      initial run-file map size in MiB (default 1024; grows)\n"
"      --delay S       record nothing for the first S seconds (1.5: decimals;\n"
"                      also CUDASPY_DELAY)\n"
"      --duration S    record for S seconds after the delay, then nothing\n"
"                      (also CUDASPY_DURATION)\n"
"      --capture MODE  record only the ranges MODE names (also CUDASPY_CAPTURE):\n"
"                      signal: between a SIGUSR1 (start) and a SIGUSR2 (stop)\n"
"                      sent to this process (`cudaspy ctl PID start|stop`);\n"
"                      cudaProfilerApi: between the program's cudaProfilerStart\n"
"                      and cudaProfilerStop; nvtx:NAME[:N]: the first N NVTX\n"
"                      ranges NAME (1); steps:A-B[:NAME]: steps A to B, each a\n"
"                      top-level NVTX range NAME (default: the first one pushed)\n"
"      --max-map-mb N  the map never grows past N MiB: recording stops there\n"
"                      (also CUDASPY_MAX_MAP_MB; default no limit)\n"
"      --keep-on EXPR  with --max-size: keep the detail around the first moment\n"
"                      EXPR held (step_p99>1.5x, step_p50>20ms, high: a new\n"
"                      HIGH finding) instead of only the tail (also CUDASPY_KEEP_ON)\n"
"      --max-size SIZE flight recorder: keep the run file near SIZE (200M, 2G;\n"
"                      at least 1M) by evicting the oldest records; per-second\n"
"                      aggregates cover the whole run (also CUDASPY_MAX_SIZE)\n"
"      --metrics HOST:PORT  serve the run's live figures to Prometheus at\n"
"                      http://HOST:PORT/metrics while it is recorded, from a\n"
"                      cudaspy-analyze metrics process beside this one (also\n"
"                      CUDASPY_METRICS; docs/live.md)\n"
"  -q, --quiet         no end-of-run line (also CUDASPY_QUIET=1)\n"
"      --version       print the version and exit\n"
"      --help          print this help and exit\n"
"\n"
"Environment of the traced command: CUDASPY_SOCK=<address>, LD_PRELOAD.\n"
"Environment: CUDASPY_NVML=PATH, the NVML library that gives each GPU's PCIe\n"
"link for the run meta (default libnvidia-ml.so.1 when present; 0: none).\n"
"\n"
"Exit status:\n"
"  launch mode: CMD's exit code, 128+N if CMD died of signal N, 127 if CMD\n"
"               could not be executed\n"
"  0  attach mode finished\n"
"  2  usage error; --pid of another user's process (only root may)\n"
"  3  system failure (run file cannot be created, socket, fork)\n"
"\n"
"Examples:\n"
"  " PROG " -o run.lmdb --preload ./build/libcudaspy.so -- python train.py\n"
"  " PROG " --no-host -o run.lmdb -- ./app      (CUDA calls only)\n"
"  " PROG " --pid 4711 --listen @cs-4711 --ready-fd 3\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
    return -EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (*end || errno || v > max)
        return -1;
    *out = v;
    return 0;
}

enum {
    OPT_LISTEN = 256, OPT_READY, OPT_PRELOAD, OPT_NOHOST, OPT_TIER, OPT_WINDOW, OPT_OFFCPU,
    OPT_RUNQ, OPT_PAGE, OPT_EVENTS, OPT_RING, OPT_PID, OPT_MAP, OPT_VERSION, OPT_HELP,
    OPT_MAXMAP, OPT_PAGESRC, OPT_DUTY, OPT_SCHED, OPT_MAXSIZE, OPT_DELAY, OPT_DURATION,
    OPT_CAPTURE, OPT_KEEPON, OPT_METRICS
};

static const struct option long_opts[] = {
    {"output", required_argument, 0, 'o'},   {"listen", required_argument, 0, OPT_LISTEN},
    {"ready-fd", required_argument, 0, OPT_READY}, {"preload", required_argument, 0, OPT_PRELOAD},
    {"no-host", no_argument, 0, OPT_NOHOST}, {"tier", required_argument, 0, OPT_TIER},
    {"window-ms", required_argument, 0, OPT_WINDOW}, {"offcpu-us", required_argument, 0, OPT_OFFCPU},
    {"runq-us", required_argument, 0, OPT_RUNQ}, {"page-period", required_argument, 0, OPT_PAGE},
    {"events", required_argument, 0, OPT_EVENTS}, {"ring-pages", required_argument, 0, OPT_RING},
    {"pid", required_argument, 0, OPT_PID},  {"map-mb", required_argument, 0, OPT_MAP},
    {"quiet", no_argument, 0, 'q'},          {"version", no_argument, 0, OPT_VERSION},
    {"help", no_argument, 0, OPT_HELP},      {"max-map-mb", required_argument, 0, OPT_MAXMAP},
    {"page-source", required_argument, 0, OPT_PAGESRC}, {"duty", required_argument, 0, OPT_DUTY},
    {"sched", required_argument, 0, OPT_SCHED}, {"max-size", required_argument, 0, OPT_MAXSIZE},
    {"delay", required_argument, 0, OPT_DELAY}, {"duration", required_argument, 0, OPT_DURATION},
    {"capture", required_argument, 0, OPT_CAPTURE}, {"keep-on", required_argument, 0, OPT_KEEPON},
    {"metrics", required_argument, 0, OPT_METRICS},
    {0, 0, 0, 0}};

/* Seconds, decimals allowed ("1.5"), into *@p ns. @return 0 or -1 */
static int parse_secs(const char *s, uint64_t *ns)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= 0) || v > 1e7)
        return -1;
    *ns = (uint64_t)(v * 1e9 + 0.5);
    return 0;
}

/* --delay, --duration, --capture or their CUDASPY_* (@p what: its name). */
static int parse_capture(struct sampler_args *a, int opt, const char *what, const char *arg)
{
    uint64_t *to = opt == OPT_DELAY ? &a->capture.delay_ns : &a->capture.duration_ns;

    if (opt == OPT_CAPTURE) {
        struct cs_capture_spec c;
        if (cs_capture_parse(arg, &c) < 0 || strlen(arg) >= sizeof(a->capture.spec))
            return usage_error("invalid capture '%s' (signal, cudaProfilerApi, nvtx:NAME[:N], "
                               "steps:A-B[:NAME])", arg);
        a->capture.signal = c.kind == CS_CAPTURE_SIGNAL;
        a->capture.program = cs_capture_by_program(c.kind);
        snprintf(a->capture.spec, sizeof(a->capture.spec), "%s", arg);
        return 0;
    }
    if (parse_secs(arg, to) < 0 || (opt == OPT_DURATION && *to == 0)) {
        char msg[400]; /* what is the user's too (--delay=...): never a format */
        snprintf(msg, sizeof(msg), "%.100s: invalid seconds '%.200s'", what, arg);
        return usage_error("%s", msg);
    }
    return 0;
}

/* CUDASPY_DELAY, CUDASPY_DURATION, CUDASPY_CAPTURE where the options did
 * not say (LD_PRELOAD users: the shim starts the sampler). */
static int capture_env(struct sampler_args *a)
{
    static const struct { int opt; const char *name; } e[] = {
        {OPT_DELAY, "CUDASPY_DELAY"}, {OPT_DURATION, "CUDASPY_DURATION"},
        {OPT_CAPTURE, "CUDASPY_CAPTURE"}};
    const uint64_t set[] = {a->capture.delay_ns, a->capture.duration_ns,
                            (uint64_t)(a->capture.signal || a->capture.program)};
    const char *v;
    int rc;

    for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
        if (!set[i] && (v = getenv(e[i].name)) && *v &&
            (rc = parse_capture(a, e[i].opt, e[i].name, v)) < 0)
            return rc;
    return 0;
}

/* --max-size or CUDASPY_MAX_SIZE (@p what) into a->max_size. */
static int parse_max_size(struct sampler_args *a, const char *what, const char *arg)
{
    char msg[160];
    int rc = cs_parse_size(arg, &a->max_size);

    if (rc == 0)
        return 0;
    snprintf(msg, sizeof(msg), "%s: invalid size '%%s' (%s)", what,
             rc == -ERANGE ? "from 1M to 8E bytes" : "digits and K, M, G or T: 200M, 2G");
    return usage_error(msg, arg);
}

/* 'a' or 'f' for a page source named "allocs" or "faults", else 0. */
static int page_source_of(const char *s)
{
    return strcmp(s, "allocs") == 0 || strcmp(s, "faults") == 0 ? s[0] : 0;
}

/* Numeric option @p opt into @p a. */
static int parse_num(struct sampler_args *a, int opt, const char *arg)
{
    uint64_t v;

    if (parse_u64(arg, UINT32_MAX, &v) < 0)
        return usage_error("invalid number '%s'", arg);
    switch (opt) {
    case OPT_READY: a->ready_fd = (int)v; break;
    case OPT_WINDOW: a->window_ns = v * 1000000; break;
    case OPT_OFFCPU: a->offcpu_ns = v * 1000; break;
    case OPT_RUNQ: a->runq_ns = v * 1000; break;
    case OPT_PAGE: a->page_period = (unsigned)v; break;
    case OPT_RING: a->ring_pages = (unsigned)v; break;
    case OPT_PID: a->pid = (pid_t)v; break;
    case OPT_MAP: a->map_bytes = v << 20; break;
    case OPT_MAXMAP: a->max_map_bytes = v << 20; break;
    case OPT_DUTY: a->duty_ns = v * 1000000; break;
    }
    if ((opt == OPT_PID || opt == OPT_MAP || opt == OPT_MAXMAP || opt == OPT_DUTY) && v == 0)
        return usage_error("invalid number '%s'", arg);
    if (v > INT_MAX)
        return usage_error("invalid number '%s'", arg);
    return 0;
}

/* @return 0 to run, 1 when done (help/version), or -exit code. */
static int parse_args(int argc, char **argv, struct sampler_args *a)
{
    int opt, rc;
    const char *env;

    a->ready_fd = -1;
    a->sched = SCHED_BATCH;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+o:q", long_opts, NULL)) != -1) {
        switch (opt) {
        case 'o': a->output = optarg; break;
        case 'q': a->quiet = 1; break;
        case OPT_LISTEN: a->listen = optarg; break;
        case OPT_PRELOAD: a->preload = optarg; break;
        case OPT_NOHOST: a->no_host = 1; break;
        case OPT_EVENTS: a->events = optarg; break;
        case OPT_TIER:
            if (strlen(optarg) != 1 || !strchr("ABC", optarg[0]))
                return usage_error("invalid tier '%s' (A, B or C)", optarg);
            a->tier = optarg[0];
            break;
        case OPT_PAGESRC:
            if ((a->page_source = page_source_of(optarg)) == 0)
                return usage_error("invalid page source '%s' (allocs or faults)", optarg);
            break;
        case OPT_SCHED:
            if (strcmp(optarg, "batch") != 0 && strcmp(optarg, "normal") != 0)
                return usage_error("invalid policy '%s' (batch or normal)", optarg);
            a->sched = optarg[0] == 'n' ? SCHED_OTHER : SCHED_BATCH;
            break;
        case OPT_MAXSIZE:
            if ((rc = parse_max_size(a, "--max-size", optarg)) < 0)
                return rc;
            break;
        case OPT_KEEPON: a->keep_on = optarg; break;
        case OPT_DELAY:
        case OPT_DURATION:
        case OPT_CAPTURE:
            if ((rc = parse_capture(a, opt, opt == OPT_DELAY      ? "--delay"
                                            : opt == OPT_DURATION ? "--duration"
                                                                  : "--capture",
                                    optarg)) < 0)
                return rc;
            break;
        case OPT_METRICS: a->metrics = optarg; break;
        case OPT_VERSION: printf(PROG " " CS_VERSION "\n"); return 1;
        case OPT_HELP: usage(stdout); return 1;
        case '?':
            return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        default:
            if ((rc = parse_num(a, opt, optarg)) < 0)
                return rc;
        }
    }
    if (optind < argc)
        a->cmd = argv + optind;
    if ((a->cmd != NULL) == (a->pid != 0))
        return usage_error("%s", a->pid ? "give either --pid or a command, not both"
                                        : "no command given (-- CMD ...) and no --pid");
    if ((env = getenv("CUDASPY_HOST")) && strcmp(env, "0") == 0)
        a->no_host = 1;
    if (!a->page_source && (env = getenv("CUDASPY_PAGE_SOURCE")) && *env &&
        (a->page_source = page_source_of(env)) == 0)
        fprintf(stderr, PROG ": warning: CUDASPY_PAGE_SOURCE='%s' is not allocs or faults; "
                        "faults\n", env);
    /* a bad cap is an error, not "no cap": a flight recorder that silently
     * grows can fill the disk of a week-long job */
    if (a->max_size == 0 && (env = getenv("CUDASPY_MAX_SIZE")) && *env &&
        (rc = parse_max_size(a, "CUDASPY_MAX_SIZE", env)) < 0)
        return rc;
    if ((rc = capture_env(a)) < 0)
        return rc;
    if (a->keep_on == NULL && (env = getenv("CUDASPY_KEEP_ON")) && *env)
        a->keep_on = env;
    if (a->keep_on && a->max_size == 0)
        return usage_error("%s", "--keep-on keeps a window of a size-capped run: give --max-size");
    if (a->metrics == NULL && (env = getenv("CUDASPY_METRICS")) && *env)
        a->metrics = env;
    if (a->metrics && metrics_check_addr(a->metrics) < 0)
        return usage_error("--metrics: invalid address '%s' (HOST:PORT: 127.0.0.1:9464)",
                           a->metrics);
    if (a->duty_ns && (a->capture.delay_ns || a->capture.duration_ns || a->capture.signal ||
                       a->capture.program))
        return usage_error("%s", "--duty measures the cost of recording: no capture ranges "
                                 "with it");
    if ((env = getenv("CUDASPY_QUIET")) && strcmp(env, "1") == 0)
        a->quiet = 1;
    if (a->max_map_bytes == 0 && (env = getenv("CUDASPY_MAX_MAP_MB")) && *env) {
        uint64_t mb;
        if (parse_u64(env, 1ull << 30, &mb) == 0 && mb > 0)
            a->max_map_bytes = mb << 20;
        else
            fprintf(stderr, PROG ": warning: CUDASPY_MAX_MAP_MB='%s' is not a size in MiB; "
                            "no limit\n", env);
    }
    return 0;
}

/* ---- launch mode ---- */

static void child_exec(struct sampler_args *a, const char *addr, int gate)
{
    const char *old = getenv("LD_PRELOAD");
    ssize_t got;
    char c;

    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    setenv("CUDASPY_SOCK", addr, 1);
    if (a->capture.delay_ns || a->capture.signal || a->capture.program)
        setenv("CUDASPY_PAUSED", "1", 1); /* the shims start paused (capture.h) */
    else
        unsetenv("CUDASPY_PAUSED");
    if (a->capture.program) /* the shims watch for the program's bounds */
        setenv("CUDASPY_CAPTURE", a->capture.spec, 1);
    if (a->preload) {
        size_t n = strlen(a->preload) + (old ? strlen(old) + 1 : 0) + 1;
        char *v = malloc(n);
        if (v) {
            snprintf(v, n, "%s%s%s", a->preload, old && *old ? ":" : "", old ? old : "");
            setenv("LD_PRELOAD", v, 1);
        }
    }
    /* wait until the parent is set up (listening, host sampler watching);
     * EOF without the byte means it failed: leave quietly */
    while ((got = read(gate, &c, 1)) < 0 && errno == EINTR)
        ;
    if (got != 1)
        _exit(126);
    close(gate);
    execvp(a->cmd[0], a->cmd);
    fprintf(stderr, PROG ": %s: %s\n", a->cmd[0], strerror(errno));
    _exit(127);
}

static pid_t launch(struct sampler_args *a, const char *addr, int *gate_w)
{
    int gate[2];
    pid_t pid;

    if (pipe2(gate, O_CLOEXEC) < 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        close(gate[1]);
        child_exec(a, addr, gate[0]);
    }
    close(gate[0]);
    if (pid < 0) {
        close(gate[1]);
        return -1;
    }
    *gate_w = gate[1];
    return pid;
}

/* ---- the loop ---- */

struct loop {
    struct sampler_args *a;
    struct collector *c;
#ifdef CS_HAVE_HOST
    struct host *h;
    int h_paused;     /* host_pause() state, following collector_paused() */
#endif
    struct nvml_job *nv; /* the GPUs' PCIe links being read; NULL once written */
    int nv_named;     /* CUDASPY_NVML named the library: say if it does not load */
    pid_t root;
    int root_status;  /* wait status of the root, -1 while unknown */
    int tree_gone;
    uint64_t stop_at; /* launch mode after SIGINT: give up waiting then */
};

static int proc_running(pid_t pid)
{
    char path[64], buf[512], *p;
    int fd;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Launch mode: reap every descendant (we are their subreaper). */
/* ---- the flight recorder's trigger (--keep-on) ---- */

#define KEEP_AFTER_NS 1000000000ull /* kept past the moment the trigger matched */

/* The trigger matched: keep from its window's start to a while from now. */
static void watch_keep(struct loop *l, uint64_t now)
{
    uint64_t from = atomic_exchange(&keep_from, 0);

    if (from == 0 || collector_flight_keep(l->c, from, now + KEEP_AFTER_NS) < 0)
        return;
    collector_meta(l->c, "flight_keep_on", l->a->keep_on);
    if (!l->a->quiet)
        fprintf(stderr, PROG ": --keep-on '%s' matched: keeping %.1f s of detail\n",
                l->a->keep_on, (double)(now + KEEP_AFTER_NS - from) / 1e9);
}

static void reap(struct loop *l, uint64_t now)
{
    int st;
    pid_t p;

    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        collector_exited(l->c, p, st, now);
        if (p == l->root)
            l->root_status = st;
    }
    if (p < 0 && errno == ECHILD)
        l->tree_gone = 1;
}

static int host_live_count(struct loop *l)
{
#ifdef CS_HAVE_HOST
    return l->h ? host_live(l->h) : 0;
#else
    (void)l;
    return 0;
#endif
}

static int loop_done(struct loop *l, uint64_t now)
{
    if (sig_term)
        return 1;
    if (l->a->cmd) {
        if (sig_int && l->stop_at == 0)
            l->stop_at = now + GRACE_NS;
        return l->tree_gone || sig_int > 1 || (l->stop_at && now >= l->stop_at);
    }
    if (sig_int)
        return 1;
    /* paused (outside a capture range), the perf events see no exits: the
     * host's count of live processes is stale */
    return !proc_running(l->root) && collector_live_conns(l->c) == 0 &&
           (host_live_count(l) == 0 || collector_paused(l->c));
}

#ifdef CS_HAVE_HOST
/* --duty: pause or restart the perf events with the shims. */
static void host_follow_duty(struct loop *l)
{
    static int warned;
    int rc;

    l->h_paused = collector_paused(l->c);
    rc = host_pause(l->h, l->h_paused);
    if (rc < 0 && !warned++)
        fprintf(stderr, PROG ": duty: perf events not %s (%s); host data covers off phases too\n",
                l->h_paused ? "paused" : "restarted", strerror(-rc));
}
#endif

static void gpus_meta(struct loop *l, uint64_t wait_ns);

static void loop_run(struct loop *l)
{
    static struct pollfd fds[MAX_PFDS];

    for (;;) {
        int n = collector_pollfds(l->c, fds, MAX_PFDS);
        uint64_t now;
#ifdef CS_HAVE_HOST
        if (l->h)
            n += host_pollfds(l->h, fds + n, MAX_PFDS - n);
#endif
        poll(fds, (nfds_t)n, collector_wait_ms(l->c));
        now = clock_mono_ns();
        if (sig_capture) { /* --capture signal */
            int on = sig_capture == 1;
            sig_capture = 0;
            if (l->a->capture.signal)
                collector_capture_signal(l->c, on, now);
        }
        if (atomic_load(&keep_from))
            watch_keep(l, now);
        collector_step(l->c, now);
#ifdef CS_HAVE_HOST
        if (l->h)
            host_drain(l->h, now);
#endif
        if (l->a->cmd)
            reap(l, now);
        collector_tick(l->c, now);
        if (l->nv)
            gpus_meta(l, 0);
#ifdef CS_HAVE_HOST
        if (l->h && collector_paused(l->c) != l->h_paused)
            host_follow_duty(l);
#endif
        if (loop_done(l, now))
            return;
    }
}

/* ---- setup ---- */

static void on_register(void *arg, pid_t pid)
{
#ifdef CS_HAVE_HOST
    struct loop *l = arg;
    if (l->h)
        host_add_pid(l->h, pid);
#else
    (void)arg;
    (void)pid;
#endif
}

/* Start host sampling, or record why there is none. */
static void host_start(struct loop *l)
{
    const char *reason = "built without host sampler";

#ifdef CS_HAVE_HOST
    struct host_opts ho = {.root = l->root, .launched = l->a->cmd != NULL,
                           .force_tier = l->a->tier, .window_ns = l->a->window_ns,
                           .offcpu_min_ns = l->a->offcpu_ns, .runq_min_ns = l->a->runq_ns,
                           .page_alloc_period = l->a->page_period, .events = l->a->events,
                           .page_source = l->a->page_source,
                           .ring_pages = l->a->ring_pages};
    struct cs_err err = {""};

    if (l->a->no_host) {
        reason = "disabled";
    } else if ((l->h = host_new(&ho)) == NULL) {
        reason = "out of memory";
    } else if (host_open(l->h, l->c, &err) < 0) {
        fprintf(stderr, PROG ": warning: no host sampling: %s\n", err.msg);
        host_free(l->h);
        l->h = NULL;
        reason = err.msg[0] ? err.msg : "host sampler failed";
    } else {
        return; /* host_open wrote sampler_tier and its reason */
    }
#else
    if (l->a->no_host)
        reason = "disabled";
#endif
    collector_meta(l->c, "sampler_tier", "none");
    collector_meta(l->c, "sampler_tier_reason", reason);
}

/* Start reading each GPU's PCIe link capability from NVML (sampler/nvml.c)
 * for the analyzer's pinned-copy estimates. In a thread: nvmlInit may take
 * ~100 ms, seconds on GPUs without persistence mode, which would hold up
 * the traced command's start (an auto-started collector has 3 s to get
 * ready) or, in the loop, drop records. CUDASPY_NVML=0: no NVML at all. */
static void gpus_start(struct loop *l)
{
    const char *env = getenv("CUDASPY_NVML");

    if (env && strcmp(env, "0") == 0)
        return;
    l->nv_named = env && *env;
    l->nv = nvml_job_new(l->nv_named ? env : NVML_LIB_DEFAULT);
    if (l->nv && nvml_job_open(l->nv) < 0) {
        nvml_job_free(l->nv);
        l->nv = NULL;
    }
}

/* Once the read is done (waiting up to @p wait_ns for it), write meta
 * gpu_pcie_max and gpu_names (docs/format.md). Without NVML, or when
 * nvmlInit fails, nothing is written and nothing said, unless the library
 * CUDASPY_NVML names does not load. */
static void gpus_meta(struct loop *l, uint64_t wait_ns)
{
    struct nvml_gpus g;
    struct cs_err err = {""};
    int rc = nvml_job_wait(l->nv, wait_ns, &g, &err);

    if (rc == -EAGAIN && wait_ns == 0)
        return;
    nvml_job_free(l->nv);
    l->nv = NULL;
    if (rc == 0 && g.count > 0) {
        collector_meta(l->c, "gpu_pcie_max", g.pcie_max);
        collector_meta(l->c, "gpu_names", g.names);
    } else if ((rc == -ENOENT || rc == -ENOSYS) && l->nv_named) {
        fprintf(stderr, PROG ": nvml: %s\n", err.msg);
    }
}

static void meta_cmdline(struct loop *l)
{
    char buf[4096];
    size_t n = 0;

    buf[0] = '\0';
    if (l->a->cmd) {
        for (char **p = l->a->cmd; *p && n < sizeof(buf) - 1; p++)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? " " : "", *p);
    } else {
        char path[64];
        int fd;
        ssize_t got;
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)l->root);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        got = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        n = got > 0 ? (size_t)got : 0;
        for (size_t i = 0; i < n; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        while (n && buf[n - 1] == ' ')
            n--;
        buf[n] = '\0';
    }
    collector_meta(l->c, "cmdline", buf);
    collector_meta_u64(l->c, "root_pid", (uint64_t)l->root);
}

static void root_row(struct loop *l)
{
    struct cs_proc p = {.pid = (uint32_t)l->root, .exit_status = -1, .rank = CS_RANK_NONE,
                        .flags = CS_PF_ROOT};

    if (l->a->cmd) {
        const char *b = strrchr(l->a->cmd[0], '/');
        p.ppid = (uint32_t)getpid();
        p.start_ns = clock_mono_ns();
        snprintf(p.comm, sizeof(p.comm), "%s", b ? b + 1 : l->a->cmd[0]);
    } else {
        p.flags |= CS_PF_PREATTACH;
    }
    collector_proc(l->c, &p);
}

static void ready(struct sampler_args *a)
{
    if (a->ready_fd < 0)
        return;
    if (write(a->ready_fd, "r", 1) < 0)
        fprintf(stderr, PROG ": --ready-fd %d: %s\n", a->ready_fd, strerror(errno));
    close(a->ready_fd);
}

static void summary(struct loop *l, const char *path)
{
    struct collector_stats st;

    if (l->a->quiet)
        return;
    collector_stats(l->c, &st);
    fprintf(stderr, "cudaspy: %s: %" PRIu64 " CUDA calls, %" PRIu64 " host records, %" PRIu64
            " dropped%s\n", path, st.cuda_records, st.host_records, st.cuda_dropped,
            st.write_failed ? " (run file incomplete: a write failed)" : "");
}

static int exit_code(struct loop *l)
{
    int st = l->root_status;

    if (!l->a->cmd || st == -1)
        return 0;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 0;
}

static void signals_setup(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = NULL;
    sa.sa_sigaction = on_keep;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGRTMIN, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Release the gated child (launch mode): one byte lets it exec, closing
 * without it (@p go = 0) makes it exit. */
static void gate_release(int *gate, int go)
{
    if (*gate < 0)
        return;
    if (go && write(*gate, "g", 1) != 1)
        fprintf(stderr, PROG ": cannot start the command: %s\n", strerror(errno));
    close(*gate);
    *gate = -1;
}

/* Fork the gated child (launch mode), create the run file, listen. */
static int setup(struct loop *l, char *path, size_t n, int *gate)
{
    struct sampler_args *a = l->a;
    struct collector_opts co = {.path = path, .listen = a->listen, .map_bytes = a->map_bytes,
                                .max_map_bytes = a->max_map_bytes, .duty_ns = a->duty_ns,
                                .max_size_bytes = a->max_size, .capture = a->capture};
    struct cs_err err = {""};
    char addr[64];

    if (a->listen == NULL) {
        snprintf(addr, sizeof(addr), "@cudaspy-%d-%08" PRIx64, (int)getpid(),
                 (clock_mono_ns() * 2654435761u) & 0xffffffff);
        co.listen = addr;
    }
    if (a->cmd && (l->root = launch(a, co.listen, gate)) < 0) {
        fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
        return -1;
    }
    if (a->output)
        snprintf(path, n, "%s", a->output);
    else
        snprintf(path, n, "./cudaspy-%d.lmdb", (int)l->root);
    l->c = collector_new();
    if (l->c == NULL || collector_open(l->c, &co, &err) < 0) {
        fprintf(stderr, PROG ": %s\n", l->c ? err.msg : "out of memory");
        gate_release(gate, 0);
        return -1;
    }
    return 0;
}

/* Take the collector's policy, after the traced command was forked (it
 * keeps its own). SCHED_BATCH keeps a fair share of CPU but never preempts
 * the task it wakes next to: the traced threads' CPUs are theirs
 * (docs/sampler.md, "Where the collector runs"). */
static void sched_self(const struct sampler_args *a)
{
    struct sched_param sp = {0};

    if (a->sched != SCHED_OTHER && sched_setscheduler(0, a->sched, &sp) < 0)
        fprintf(stderr, PROG ": warning: SCHED_BATCH: %s; normal policy\n", strerror(errno));
}

int main(int argc, char **argv)
{
    struct sampler_args a = {0};
    struct loop l = {.a = &a, .root_status = -1};
    char path[PATH_MAX];
    int rc = parse_args(argc, argv, &a), gate = -1;
    char why[160];

    if (rc)
        return rc > 0 ? 0 : -rc;
    if (a.pid && privs_may_trace(a.pid, why, sizeof(why)) < 0) {
        fprintf(stderr, PROG ": %s\n", why);
        return EXIT_USAGE;
    }
    signals_setup();
    if (a.metrics && (rc = metrics_start(a.metrics)) < 0) /* before the subreaper: not ours */
        fprintf(stderr, PROG ": warning: --metrics: cannot start the server (%s)\n", strerror(-rc));
    if (a.keep_on && (rc = watch_start(a.keep_on)) < 0) /* the same */
        fprintf(stderr, PROG ": warning: --keep-on: cannot start the watcher (%s); no "
                        "trigger\n", strerror(-rc));
    if (a.cmd)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    l.root = a.pid;
    if (setup(&l, path, sizeof(path), &gate) < 0) {
        if (a.cmd && l.root > 0)
            waitpid(l.root, NULL, 0);
        collector_free(l.c);
        return EXIT_SYSTEM;
    }
    sched_self(&a);
    collector_on_register(l.c, on_register, &l);
    meta_cmdline(&l);
    root_row(&l);
    host_start(&l);
    if ((rc = privs_drop()) < 0)
        fprintf(stderr, PROG ": warning: cannot drop privileges (%s)\n", strerror(-rc));
    collector_flush_start(l.c); /* after the drop: it starts a thread */
    gpus_start(&l);             /* the same */
    ready(&a);
    gate_release(&gate, 1);
    loop_run(&l);
    if (l.nv)
        gpus_meta(&l, NVML_WAIT_NS);
#ifdef CS_HAVE_HOST
    if (l.h)
        host_finish(l.h, clock_mono_ns());
#endif
    rc = collector_finish(l.c, 1, clock_mono_ns());
    summary(&l, path);
#ifdef CS_HAVE_HOST
    host_free(l.h);
#endif
    collector_free(l.c);
    if (rc < 0 && !a.cmd)
        return EXIT_SYSTEM;
    return exit_code(&l);
}
