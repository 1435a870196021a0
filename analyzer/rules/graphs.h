/* rules/graphs.h: CUDA graph builds (issue 31). A build is a stream
 * capture (its begin's entry to its end's exit) with the instantiation that
 * made its graph executable, or an instantiation or update alone; each
 * knows how often the executable graph it made was launched before it was
 * made again. A build launched GRAPHS_AMORTISED times or more paid for
 * itself (a graph captured once and replayed: set-up); the others are what
 * graph_recapture is about (torch.compile recording anew for each shape).
 * The account (account.c) and the finding (chains_findings.c) read them. */
#ifndef CUDASPY_ANALYZER_GRAPHS_H
#define CUDASPY_ANALYZER_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

#define GRAPHS_AMORTISED 10 /* launches after which a build paid for itself */

struct graph_build {
    uint64_t t0_ns, t1_ns;  /* from the capture's begin (else the instantiation's entry) to
                               the instantiation's exit (else the capture's end) */
    uint64_t capture;       /* model.call of the capture's begin, M_CALL_NONE */
    uint64_t inst;          /* model.call of the instantiation or update, M_CALL_NONE */
    uint64_t capture_ns;    /* the capture's begin to its end */
    uint32_t thr;           /* model.thr that built it */
    uint32_t launches;      /* launches of what it made, before that was made again */
    uint8_t is_amortised;   /* launches >= GRAPHS_AMORTISED */
    uint8_t pad[7];
};

/* A stretch of a thread building graphs, for the account: a build, or
 * torch's code warming up or recording a shape (calls whose Python stacks
 * are PYSTACK_ROLE_GRAPHS, one after another: the host code between them
 * ran inside that code too), or both where they overlap. A stretch with no
 * build is as amortised as the thread's next build (the one it warmed up
 * for); with no build after it, not amortised. */
struct graph_span {
    uint64_t t0_ns, t1_ns;
    uint32_t thr;
    uint8_t is_amortised;
    uint8_t has_build;
    uint8_t pad[2];
};

/* Every thread's builds, in thread order, each thread's in time order. */
struct graph_builds {
    struct graph_build *b;
    size_t n;
    uint64_t *first; /* per model.thr: its first build in b; [nthr] = n */
    struct graph_span *s; /* the stretches, ordered as the builds, none overlapping */
    size_t ns;
    uint64_t *sfirst; /* per model.thr: its first stretch in s; [nthr] = ns */
};

/** Find the builds of @p m's outermost calls that succeeded.
 * @return 0 or -ENOMEM (@p gb then empty) */
int graphs_builds(const struct model *m, struct graph_builds *gb);

void graphs_exit(struct graph_builds *gb);

/** The eager run of the code build @p b captured, right before its
 * capture on its thread (torch.compile's warm-up of a new shape): the
 * launches before the capture's begin whose kernel names are, in order,
 * those of the launches the capture recorded (copies and other calls in
 * between are passed over), after the thread's previous build.
 * @return how many launches (0: none found), their first into @p first */
size_t graphs_warmup(const struct model *m, const struct graph_builds *gb, size_t bi,
                     uint64_t *first);

/** Is @p api a capture's begin (driver or runtime)? */
int graphs_is_capture_begin(unsigned api);

#endif
