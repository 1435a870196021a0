/* views/metrics.c: `cudaspy-analyze metrics --listen ADDR RUN|PID`, a run's
 * live figures for Prometheus (issue 33, docs/live.md): one thread, one
 * poll() loop over a listening socket and its clients; GET /metrics gets
 * the text exposition (metrics_text.c) of samples at most a second old
 * (the whole run's at most every 10 times what one costs), any other path
 * 404, a request that is not HTTP 400. Started by `cudaspy record
 * --metrics ADDR` with the sampler's pid (sampler/metrics.c), it ends with
 * that sampler, after sampling the finished run once more. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "cudaspy/inetaddr.h"
#include "metrics.h"
#include "model/steps.h"

#define PROG        "cudaspy-analyze"
#define MET_CLIENTS 32                 /* connections served at once; more wait in the backlog */
#define MET_REQ_MAX 8192               /* a request's head, at most */
#define MET_IDLE_NS 10000000000ull     /* a client silent this long is closed */
#define MET_FRESH_NS 1000000000ull     /* samples at most this old are served */
#define MET_RUN_COST_X 10              /* the whole run's sample: at most a tenth of the time */

static const char metrics_usage[] =
    "Usage: cudaspy-analyze metrics --listen HOST:PORT [--window S] [--linger S] RUN|PID\n"
    "       cudaspy-analyze metrics --once [--window S] RUN|PID\n"
    "\n"
    "Serve a run's live figures in Prometheus' text format (0.0.4) at\n"
    "http://HOST:PORT/metrics while it is recorded: the step-time histogram, steps,\n"
    "the account's seconds per bucket, dropped records and collector CPU of the\n"
    "whole run (counters); step p50/p99, GPU busy and findings of the last --window\n"
    "seconds (default 10; gauges). HOST: an IPv4 address, localhost, [IPv6], or\n"
    "empty for every interface. RUN is a run file; PID a recorded program's pid or\n"
    "its cudaspy-sampler's: the server then ends with that sampler, --linger S\n"
    "seconds after serving the finished run (default 0). --once prints the\n"
    "exposition once and exits. 'cudaspy record --metrics HOST:PORT' starts one.\n"
    "\n"
    "Exit status: 0 ok; 2 usage error, no such pid, or (--once) a run file that\n"
    "cannot be read; 3 the address cannot be listened on.\n";

struct metrics_opts {
    const char *listen;
    uint64_t window_ns, linger_ns;
    int once;
};

struct client {
    int fd;                  /* -1: free slot */
    char req[MET_REQ_MAX];
    size_t nreq;
    char *out;               /* the response, once the request is complete */
    size_t nout, off;
    int draining;            /* answered: reading what else it sends until it closes */
    uint64_t t0_ns;
};

struct metrics {
    struct metrics_opts o;
    struct live_target tg;
    struct live *l;
    struct live_sample run, win;   /* released (live.h): their JSON alone */
    uint64_t *step_ns;             /* the run sample's step durations, ascending */
    size_t nsteps;
    pid_t collector;               /* the run sample's collector while it writes */
    uint64_t t_run_ns, t_win_ns;   /* when each was taken (CLOCK_MONOTONIC) */
    double run_cost_s, win_cost_s;
    int final;                     /* the run ended and was sampled since */
    uint64_t final_ns;
    struct metrics_text *mt;
    char *text;                    /* the exposition of the last refresh */
    size_t ntext;
    int lfd;
    struct client cl[MET_CLIENTS];
};

static volatile sig_atomic_t met_stop;

static void on_signal(int sig)
{
    (void)sig;
    met_stop = 1;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- samples ---- */

/* What the whole run's sample says beyond its JSON: its steps' durations
 * and its collector. */
static void run_extras(struct metrics *m, const struct live_sample *s)
{
    uint32_t pid, tid;
    const struct steps *st = analysis_steps(s->a, &pid, &tid);
    uint64_t *d = st && st->n ? malloc(st->n * sizeof(*d)) : NULL;

    if (d)
        steps_durations(st, d);
    free(m->step_ns);
    m->step_ns = d;
    m->nsteps = d ? st->n : 0;
    m->collector = s->writing ? (pid_t)cs_run_meta_u64(analysis_run(s->a, 0), "collector_pid", 0)
                              : 0;
}

/* A new sample of the last @p window_ns (0: the whole run) into @p s and
 * its cost; @p s keeps the last good one when this fails. */
static void take(struct metrics *m, uint64_t window_ns, struct live_sample *s, double *cost_s,
                 uint64_t *t_ns)
{
    struct live_sample n;
    struct cs_err err = {""};
    uint64_t t0 = mono_ns();

    if (live_sample(m->l, window_ns, &n, &err) < 0)
        return;
    if (window_ns == 0)
        run_extras(m, &n);
    live_sample_release(&n); /* one open of the run file at a time (live.h) */
    live_sample_clear(s);
    *s = n;
    *t_ns = mono_ns();
    *cost_s = (double)(*t_ns - t0) / 1e9;
}

/* Sample the run again where the last samples are stale (@p force: all
 * now) and render the exposition. */
static void refresh(struct metrics *m, int force)
{
    uint64_t now = mono_ns(), run_every = (uint64_t)(m->run_cost_s * 1e9) * MET_RUN_COST_X;
    int alive = live_target_poll(&m->tg);
    struct metrics_in in = {.path = m->tg.path};
    size_t n;
    char *t;

    if (m->final && m->text)
        return;
    if (m->l == NULL && m->tg.path[0] && live_open(m->tg.path, NULL, &m->l) < 0)
        return;
    if (m->l && (force || !alive || now - m->t_win_ns >= MET_FRESH_NS))
        take(m, m->o.window_ns, &m->win, &m->win_cost_s, &m->t_win_ns);
    if (m->l && (force || !alive || (m->win.json && !m->win.writing) ||
                 now - m->t_run_ns >= (run_every > MET_FRESH_NS ? run_every : MET_FRESH_NS)))
        take(m, 0, &m->run, &m->run_cost_s, &m->t_run_ns);
    if ((m->run.json && !m->run.writing) || !alive) {
        m->final = 1;
        m->final_ns = now;
    }
    in.run = m->run.json ? &m->run : NULL;
    in.window = m->win.json ? &m->win : NULL;
    in.collector = m->collector;
    in.step_ns = m->step_ns;
    in.nsteps = m->nsteps;
    in.run_cost_s = m->run_cost_s;
    in.window_cost_s = m->win_cost_s;
    if ((t = metrics_text_render(m->mt, &in, &n)) != NULL) {
        free(m->text);
        m->text = t;
        m->ntext = n;
    }
}

/* ---- HTTP ---- */

static void client_close(struct client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    c->out = NULL;
    c->fd = -1;
}

/* The response of @p status with @p body (NULL: none) into c->out. */
static void respond(struct client *c, const char *status, const char *body, size_t nbody,
                    int head_only)
{
    const char *type = body ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain";
    char hdr[320];
    int nh;

    if (body == NULL) {
        body = status + 4; /* "404 Not Found" -> "Not Found" */
        nbody = strlen(body);
    }
    nh = snprintf(hdr, sizeof(hdr), "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                  "%sConnection: close\r\n\r\n", status, type, nbody,
                  strncmp(status, "405", 3) == 0 ? "Allow: GET, HEAD\r\n" : "");
    if (head_only)
        nbody = 0;
    if ((c->out = malloc((size_t)nh + nbody)) == NULL) {
        client_close(c);
        return;
    }
    memcpy(c->out, hdr, (size_t)nh);
    memcpy(c->out + nh, body, nbody);
    c->nout = (size_t)nh + nbody;
    c->off = 0;
}

/* Is @p s an HTTP method token (upper-case letters)? */
static int is_method(const char *s)
{
    for (const char *p = s; *p; p++)
        if (*p < 'A' || *p > 'Z')
            return 0;
    return *s != '\0';
}

/* Answer the complete request head in c->req. */
static void handle(struct metrics *m, struct client *c)
{
    char method[16], target[1024], version[16];
    size_t plen;

    c->req[c->nreq] = '\0';
    if (sscanf(c->req, "%15s %1023s %15s", method, target, version) != 3 || !is_method(method) ||
        strncmp(version, "HTTP/1.", 7) != 0 || target[0] != '/') {
        respond(c, "400 Bad Request", NULL, 0, 0);
        return;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        respond(c, "405 Method Not Allowed", NULL, 0, 0);
        return;
    }
    plen = strcspn(target, "?");
    if (plen != 8 || strncmp(target, "/metrics", 8) != 0) {
        respond(c, "404 Not Found", NULL, 0, method[0] == 'H');
        return;
    }
    refresh(m, 0);
    if (m->text)
        respond(c, "200 OK", m->text, m->ntext, method[0] == 'H');
    else
        respond(c, "503 Service Unavailable", NULL, 0, method[0] == 'H');
}

/* Read what came; answer once the head is complete. */
static void client_read(struct metrics *m, struct client *c)
{
    ssize_t got = recv(c->fd, c->req + c->nreq, sizeof(c->req) - 1 - c->nreq, 0);

    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (got <= 0) {
        client_close(c);
        return;
    }
    c->nreq += (size_t)got;
    c->req[c->nreq] = '\0';
    if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n"))
        handle(m, c);
    else if (c->nreq == sizeof(c->req) - 1 || memchr(c->req, '\0', c->nreq))
        respond(c, "400 Bad Request", NULL, 0, 0); /* too long, or binary */
}

/* Send what is left of the response. Once sent, the client's rest of the
 * request (a head cut at MET_REQ_MAX) is read and dropped until it closes:
 * closing with unread input resets the connection, and the client may
 * lose the response. */
static void client_write(struct client *c)
{
    ssize_t put = send(c->fd, c->out + c->off, c->nout - c->off, MSG_NOSIGNAL);

    if (put < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (put <= 0) {
        client_close(c);
    } else if ((c->off += (size_t)put) == c->nout) {
        shutdown(c->fd, SHUT_WR);
        c->draining = 1;
    }
}

static void client_drain(struct client *c)
{
    char buf[4096];
    ssize_t got = recv(c->fd, buf, sizeof(buf), 0);

    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
        client_close(c);
}

static void accept_one(struct metrics *m, uint64_t now)
{
    int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0)
        return;
    for (int i = 0; i < MET_CLIENTS; i++)
        if (m->cl[i].fd < 0) {
            m->cl[i] = (struct client){.fd = fd, .t0_ns = now};
            return;
        }
    close(fd); /* not polled while full: does not happen */
}

/* ---- the loop ---- */

static int listen_on(struct metrics *m)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1;

    if (cs_inet_addr(m->o.listen, &ss, &len) < 0)
        return -EINVAL;
    if ((m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(m->lfd, (struct sockaddr *)&ss, len) < 0 || listen(m->lfd, 64) < 0)
        return -errno;
    return 0;
}

/* One poll() round over the socket and the clients. */
static void serve_once(struct metrics *m)
{
    struct pollfd p[MET_CLIENTS + 1];
    int idx[MET_CLIENTS + 1], n = 0, busy = 0;
    uint64_t now;

    for (int i = 0; i < MET_CLIENTS; i++) {
        struct client *c = &m->cl[i];
        if (c->fd < 0)
            continue;
        p[n] = (struct pollfd){.fd = c->fd,
                               .events = c->out && !c->draining ? POLLOUT : POLLIN};
        idx[n++] = i;
        busy++;
    }
    p[n] = (struct pollfd){.fd = m->lfd, .events = busy < MET_CLIENTS ? POLLIN : 0};
    poll(p, (nfds_t)n + 1, 1000);
    now = mono_ns();
    for (int k = 0; k < n; k++) {
        struct client *c = &m->cl[idx[k]];
        if (p[k].revents & (POLLIN | POLLHUP | POLLERR) && c->draining)
            client_drain(c);
        else if (p[k].revents & (POLLIN | POLLHUP | POLLERR) && !c->out)
            client_read(m, c);
        else if (p[k].revents & (POLLOUT | POLLHUP | POLLERR) && c->out)
            client_write(c);
        if (c->fd >= 0 && now - c->t0_ns > MET_IDLE_NS)
            client_close(c);
    }
    if (p[n].revents & POLLIN)
        accept_one(m, now);
}

static int serve(struct metrics *m)
{
    int rc = listen_on(m);

    if (rc < 0) {
        fprintf(stderr, PROG ": metrics: %s: cannot listen (%s)\n", m->o.listen,
                rc == -EINVAL ? "not HOST:PORT" : strerror(-rc));
        return rc == -EINVAL ? 2 : 3;
    }
    for (int i = 0; i < MET_CLIENTS; i++)
        m->cl[i].fd = -1;
    while (!met_stop) {
        serve_once(m);
        /* a pid's server ends with its sampler, after sampling the end */
        if (m->tg.sampler && !m->final && !live_target_poll(&m->tg))
            refresh(m, 1);
        if (m->tg.sampler && m->final && mono_ns() - m->final_ns >= m->o.linger_ns)
            break;
    }
    for (int i = 0; i < MET_CLIENTS; i++)
        client_close(&m->cl[i]);
    close(m->lfd);
    return 0;
}

/* ---- options ---- */


/* @return 0 to run, 1 after --help, else the exit status (2) */
static int parse(int argc, char **argv, struct metrics_opts *o)
{
    static const struct option lo[] = {{"listen", required_argument, 0, 'l'},
                                       {"window", required_argument, 0, 'w'},
                                       {"linger", required_argument, 0, 'g'},
                                       {"once", no_argument, 0, '1'},
                                       {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    struct sockaddr_storage ss;
    socklen_t len;
    int c;

    *o = (struct metrics_opts){.window_ns = 10000000000ull};
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (c == 'h') {
            fputs(metrics_usage, stdout);
            return 1;
        } else if (c == 'l' && cs_inet_addr(optarg, &ss, &len) < 0) {
            return live_usage_error("metrics", "invalid address (HOST:PORT):", optarg);
        } else if (c == 'l') {
            o->listen = optarg;
        } else if (c == '1') {
            o->once = 1;
        } else if ((c == 'w' || c == 'g') &&
                   live_parse_secs(optarg, c == 'w' ? &o->window_ns : &o->linger_ns, c == 'g') < 0) {
            return live_usage_error("metrics", "invalid seconds:", optarg);
        } else if (c == '?') {
            return live_usage_error("metrics", "unknown or incomplete option",
                                    argv[optind - 1]);
        }
    }
    if (live_one_target("metrics", argc, optind))
        return 2;
    if (!o->once && o->listen == NULL)
        return live_usage_error("metrics", "--listen HOST:PORT or --once needed", NULL);
    return 0;
}

static void signals_setup(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* --once: the exposition of the run as it stands, on stdout. */
static int print_once(struct metrics *m)
{
    refresh(m, 1);
    if (m->run.json == NULL) {
        fprintf(stderr, PROG ": metrics: %s: cannot be read\n",
                m->tg.path[0] ? m->tg.path : "no run file");
        return 2;
    }
    return fwrite(m->text, 1, m->ntext, stdout) == m->ntext && fflush(stdout) == 0 ? 0 : 3;
}

int metrics_main(int argc, char **argv)
{
    struct metrics m = {.lfd = -1};
    int rc = parse(argc, argv, &m.o);

    if (rc)
        return rc == 1 ? 0 : rc;
    if (live_target_init(&m.tg, argv[optind]) < 0) {
        fprintf(stderr, PROG ": metrics: pid %s: no cudaspy-sampler records it\n", argv[optind]);
        return 2;
    }
    if ((m.mt = metrics_text_new()) == NULL)
        return 3;
    signals_setup();
    rc = m.o.once ? print_once(&m) : serve(&m);
    live_sample_clear(&m.run);
    live_sample_clear(&m.win);
    live_close(m.l);
    metrics_text_free(m.mt);
    free(m.text);
    free(m.step_ns);
    return rc;
}
