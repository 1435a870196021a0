/* views/top.c: `cudaspy-analyze top [--interval S] [--window S] RUN|PID`, a
 * live view of a run while it is recorded (issue 33, docs/live.md): a
 * live_sample() of the last window every interval, drawn by top_frame.c.
 * On a terminal: the alternate screen and raw keys (termios, ANSI escapes,
 * no curses), the terminal restored on every way out, SIGINT and SIGTERM
 * included; otherwise one plain frame per interval, until the run ends. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "top.h"

#define PROG "cudaspy-analyze"
#define TOP_WAIT_MS 200 /* while there is nothing to read yet: look again this soon */

static const char top_usage[] =
    "Usage: cudaspy-analyze top [--interval S] [--window S] [--view NAME] [--once] RUN|PID\n"
    "\n"
    "A live view of a run while it is recorded: step time p50/p99, GPU busy, the\n"
    "account's largest buckets, the top finding with its Python line, CPU per\n"
    "process and dropped records, of the last --window seconds (default 10),\n"
    "redrawn every --interval seconds (default 1). RUN is a run file (it may not\n"
    "exist yet); PID a recorded program's pid, or its cudaspy-sampler's.\n"
    "\n"
    "Keys: 1 overview, p processes, f findings, b buckets, q quit.\n"
    "When stdout is not a terminal, one plain frame per interval until the run\n"
    "ends (--view picks the view); --once prints one frame and exits.\n"
    "\n"
    "Exit status: 0 ok; 2 usage error, no such run or pid, or a run file that\n"
    "cannot be read (--once); 3 system failure.\n";

struct top_opts {
    uint64_t interval_ns, window_ns;
    int once;
    enum top_view view;
};

static volatile sig_atomic_t top_stop, top_resized;

static void on_signal(int sig)
{
    if (sig == SIGWINCH)
        top_resized = 1;
    else
        top_stop = 1;
}

/* ---- the terminal ---- */

struct term {
    int on;                 /* raw mode and the alternate screen are set */
    int keys;               /* stdin is a terminal: keys are read */
    struct termios saved;
};

static void term_enter(struct term *tm)
{
    struct termios raw;

    tm->keys = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &tm->saved) == 0;
    if (tm->keys) {
        raw = tm->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG kept: ^C is SIGINT, handled */
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout); /* alternate screen, no cursor */
    fflush(stdout);
    tm->on = 1;
}

static void term_leave(struct term *tm)
{
    if (!tm->on)
        return;
    fputs("\033[0m\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    if (tm->keys)
        tcsetattr(STDIN_FILENO, TCSANOW, &tm->saved);
    tm->on = 0;
}

static void term_size(int *cols, int *rows)
{
    struct winsize ws;

    *cols = 80;
    *rows = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

static void signals_setup(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGWINCH, &sa, NULL);
}

/* ---- options ---- */


/* @return 0 to run, 1 after --help, else the exit status (2) */
static int parse(int argc, char **argv, struct top_opts *o)
{
    static const struct option lo[] = {{"interval", required_argument, 0, 'i'},
                                       {"window", required_argument, 0, 'w'},
                                       {"view", required_argument, 0, 'v'},
                                       {"once", no_argument, 0, '1'},
                                       {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c, v;

    *o = (struct top_opts){.interval_ns = 1000000000ull, .window_ns = 10000000000ull};
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (c == 'h') {
            fputs(top_usage, stdout);
            return 1;
        } else if (c == '1') {
            o->once = 1;
        } else if (c == 'v' && (v = top_view_of_name(optarg)) >= 0) {
            o->view = (enum top_view)v;
        } else if (c == 'v') {
            return live_usage_error(
                "top", "invalid view (overview, processes, findings or buckets):", optarg);
        } else if ((c == 'i' || c == 'w') &&
                   live_parse_secs(optarg, c == 'i' ? &o->interval_ns : &o->window_ns, 0) < 0) {
            return live_usage_error("top", "invalid seconds:", optarg);
        } else if (c == '?') {
            return live_usage_error("top", "unknown or incomplete option", argv[optind - 1]);
        }
    }
    if (live_one_target("top", argc, optind))
        return 2;
    return 0;
}

/* ---- the loop ---- */

struct top {
    struct top_opts o;
    struct live_target tg;
    struct live *l;          /* once the run file is known */
    struct live_sample s;    /* the last good sample (released: its JSON alone) */
    int have;                /* s holds one */
    int finished;            /* its collector is done (or gone): s is final */
    uint64_t start_ns;       /* when top started (CLOCK_MONOTONIC) */
    int bad;                 /* no run there after LIVE_WAIT_NS: why says why */
    char why[320];           /* why there is no sample, "" when there is one */
    struct term tm;
};

static uint64_t top_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Take a new sample into @p t (the last one stays when this one fails).
 * @return 0, or the run file's error */
static int refresh(struct top *t)
{
    struct live_sample s;
    struct cs_err err = {""};
    int alive = live_target_poll(&t->tg), rc;

    if (t->tg.path[0] == '\0') {
        snprintf(t->why, sizeof(t->why), alive ? "pid %d: its sampler has no run file open yet"
                 : "pid %d: its sampler ended before it opened a run file", (int)t->tg.pid);
        t->finished = !alive;
        return -ENOENT;
    }
    if (t->l == NULL && (rc = live_open(t->tg.path, NULL, &t->l)) < 0)
        return rc;
    if ((rc = live_sample(t->l, t->o.window_ns, &s, &err)) < 0) {
        snprintf(t->why, sizeof(t->why), "%s", err.msg[0] ? err.msg : cs_strerror(rc));
        t->finished = !alive;
        t->bad = !t->have && live_error_final(rc, top_now_ns() - t->start_ns);
        return rc;
    }
    live_sample_release(&s); /* the frames read its JSON alone */
    live_sample_clear(&t->s);
    t->s = s;
    t->have = 1;
    t->why[0] = '\0';
    t->finished = !s.writing;
    return 0;
}

static void draw(struct top *t)
{
    struct top_frame f = {.path = t->tg.path[0] ? t->tg.path : "(no run file yet)",
                          .s = t->have ? &t->s : NULL, .finished = t->finished,
                          .view = t->o.view, .tty = t->tm.on};

    f.waiting = !t->have ? t->why : NULL;
    f.stale = t->have && t->why[0] ? t->why : NULL;
    if (f.tty)
        term_size(&f.cols, &f.rows);
    top_frame_print(stdout, &f);
}

/* Wait up to @p ms (-1: until a key or a signal) for a key; act on it.
 * @return 1 to quit */
static int keys(struct top *t, int ms)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    char c;
    int v;

    if (!t->tm.keys) {
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
        if (ms < 0)
            pause();
        else
            nanosleep(&ts, NULL);
        return 0;
    }
    if (poll(&p, 1, ms) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
        return 0;
    if (c == 'q' || c == 'Q')
        return 1;
    if ((v = top_view_of_key(c)) >= 0) {
        t->o.view = (enum top_view)v;
        draw(t);
    }
    return 0;
}

/* Sleep @p ms, or return at a signal. */
static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

/* On a terminal: redraw every interval until q, a signal, or (the run
 * finished) only on keys. */
static void run_tty(struct top *t)
{
    int ms = (int)(t->o.interval_ns / 1000000);

    term_enter(&t->tm);
    while (!top_stop) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (!t->finished || !t->have)
            refresh(t);
        if (t->bad)
            break;
        draw(t);
        do {
            int wait = t->finished ? -1 : t->have ? ms : TOP_WAIT_MS, left;
            clock_gettime(CLOCK_MONOTONIC, &b);
            left = wait < 0 ? -1 : wait - (int)((b.tv_sec - a.tv_sec) * 1000 +
                                                (b.tv_nsec - a.tv_nsec) / 1000000);
            if (wait >= 0 && left <= 0)
                break;
            if (keys(t, left))
                top_stop = 1;
            if (top_resized) {
                top_resized = 0;
                draw(t);
            }
        } while (!top_stop);
    }
    term_leave(&t->tm);
    if (t->bad)
        fprintf(stderr, PROG ": top: %s\n", t->why);
}

/* Not a terminal: a frame per interval until the run ends (--once: one).
 * @return the exit status */
static int run_plain(struct top *t)
{
    for (;;) {
        int rc = refresh(t);
        if (rc < 0 && (t->o.once || t->bad)) {
            fprintf(stderr, PROG ": top: %s\n", t->why);
            return rc == -ENOMEM ? 3 : 2;
        }
        if (rc == 0 || t->finished)
            draw(t);
        if (t->o.once || t->finished || top_stop)
            return 0;
        nap(rc == 0 ? (int)(t->o.interval_ns / 1000000) : TOP_WAIT_MS);
    }
}

int top_main(int argc, char **argv)
{
    struct top t = {0};
    int rc = parse(argc, argv, &t.o);

    if (rc)
        return rc == 1 ? 0 : rc;
    if (live_target_init(&t.tg, argv[optind]) < 0) {
        fprintf(stderr, PROG ": top: pid %s: no cudaspy-sampler records it\n", argv[optind]);
        return 2;
    }
    signals_setup();
    t.start_ns = top_now_ns();
    if (isatty(STDOUT_FILENO) && !t.o.once)
        run_tty(&t);
    else
        rc = run_plain(&t);
    if (t.bad)
        rc = 2;
    live_sample_clear(&t.s);
    live_close(t.l);
    return rc;
}
