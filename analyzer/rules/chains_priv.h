/* rules/chains_priv.h: what the three files of the findings share, and
 * nothing else includes: the causes, the evidence a run yields (struct ctx),
 * the findings being built, and the calls that cross files.
 * chains_evidence.c gathers the evidence, chains_findings.c builds one
 * finding per cause from it, chains.c sets the findings side by side:
 * what each owns, what-if, order and JSON. */
#ifndef CUDASPY_ANALYZER_CHAINS_PRIV_H
#define CUDASPY_ANALYZER_CHAINS_PRIV_H

#include <stdint.h>

#include "account.h"
#include "chains.h"

#define MS 1000000ull
#define HOLDERS 16
#define TOP_EX 3

enum cause {
    C_PIPE, C_TREE, C_EXT, C_PAGE, C_PAGEABLE, C_SYNC, C_CHURN, C_LAUNCH, C_IO, C_GPU, C_HOST,
    C_START, C_RETRY, C_OOM, C_RECAPTURE, C_COUNT
};

/* By enum cause (chains.c): the JSON name, and the account's cause behind it. */
extern const char *const chains_cause_names[C_COUNT];
extern const int chains_cause_acct[C_COUNT];

/* A process that held the CPU while a CUDA thread waited for it. */
struct holder {
    uint32_t run, pid, proc;
    uint64_t ns, n;
};

/* The calls that show a cause best: the most cause time first. */
struct examples {
    uint64_t call[TOP_EX];
    uint64_t ns[TOP_EX];
};

/* Outlier decomposition of one heavy-tailed API. */
struct tail {
    const struct stats_row *row;
    uint64_t n, out_ns, excess_ns;
    uint64_t cause_ns[C_COUNT]; /* C_TREE, C_EXT, C_PIPE (sleep woken by worker), C_IO, C_PAGE */
    uint64_t oncpu_ns, sleep_ns, other_ns;
    uint64_t busy_x_ns, busy_ns; /* syswin busy permille x overlap, overlap */
    uint64_t pa_hot_n, pa_win_allocs, pa_win_ns;
    struct examples ex[C_COUNT];
};

struct finding {
    int cause;
    uint64_t impact_ns;
    uint64_t impact_lo_ns, impact_hi_ns; /* 95 % interval (sampled GPU activity) */
    const struct tail *tail; /* the API whose tail this cause explains most, or NULL */
    const struct stats_row *row;
    json_t *evidence, *timeline, *examples;
    json_t *detail; /* more keys for its JSON object (oom: "oom"), or NULL */
    char summary[512], rec[640];
    char host[256]; /* the [HOST] link of the one-line chain */
    char cuda[256]; /* its [CUDA] link when no API row says it */
};

struct ctx {
    const struct model *m;
    struct stats_table *t;
    const struct feed *f;
    const struct gpu_truth *g;
    const struct account *ac;
    const struct memory *mem; /* may be NULL */
    uint64_t wall_ns; /* severities' whole: the CUDA-active windows (or the
                         user's) less the set-up and the wind-down (analysis.c
                         steady_ns()) */
    struct tail *tails;
    uint64_t *pa_median; /* per process: page allocations per second, median window */
    struct holder holders[2][HOLDERS]; /* [0] tree, [1] outside; over the whole run */
    uint64_t run_pre[2], run_pre_n[2], run_disk, run_disk_n;
    uint64_t run_pre_anon[2]; /* preempted or kept waiting, no holder known */
    uint64_t run_wake[2], run_wake_n[2]; /* runnable after a wake-up, not running */
    struct examples run_ex[C_COUNT];
    struct finding fnd[C_COUNT];
};

static inline double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* ---- calls between the files ---- */

/* chains_evidence.c: outliers, the whole run's waits, timelines, examples */
void chains_ex_keep(struct examples *e, uint64_t call, uint64_t ns);
int chains_cmp_holder(const void *a, const void *b);
const char *chains_api_name(const struct m_call *c, char *buf, size_t n);
int chains_tails(struct ctx *x);
void chains_run_host(struct ctx *x);
void chains_run_wake(struct ctx *x);
uint64_t contention(const struct ctx *x, int k);
json_t *chains_tl_sorted(json_t *tl);
void chains_tl_system(json_t *tl, const struct model *m, uint32_t run, uint64_t t0, uint64_t t1);
void chains_tl_host(json_t *tl, const struct model *m, uint32_t thr, uint64_t t0, uint64_t t1);
void chains_tl_call(json_t *tl, const struct model *m, uint64_t ci, const struct stats_row *row);
json_t *chains_tl_for_call(const struct ctx *x, const struct stats_table *t, uint64_t ci);
json_t *chains_ex_json(const struct model *m, const struct examples *e);
json_t *chains_gap_json(const struct model *m, const struct feed_gap *g);

/* chains_findings.c: one builder per cause; chains_owned() is the account's view */
uint64_t chains_owned(const struct ctx *x, int cause, uint64_t *lo, uint64_t *hi);
void chains_f_tree(struct ctx *x);
void chains_f_ext(struct ctx *x);
void chains_f_io(struct ctx *x);
void chains_f_page(struct ctx *x);
void chains_f_pipe(struct ctx *x);
void chains_f_pageable(struct ctx *x);
void chains_f_churn(struct ctx *x);
void chains_f_sync(struct ctx *x);
void chains_f_launch(struct ctx *x);
void chains_f_host(struct ctx *x);
void chains_f_gpu(struct ctx *x);
void chains_f_start(struct ctx *x);
/* chains_memory.c: device memory (issue 31) */
void chains_f_retry(struct ctx *x);
void chains_f_oom(struct ctx *x);
void chains_f_recapture(struct ctx *x);

#endif
