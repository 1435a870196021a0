/* views/top.h: `cudaspy-analyze top`'s frames (top_frame.c), apart from
 * the terminal and the refresh loop (top.c). */
#ifndef CUDASPY_ANALYZER_TOP_H
#define CUDASPY_ANALYZER_TOP_H

#include <stdio.h>

#include "live/live.h"

enum top_view { TOP_OVERVIEW, TOP_PROCS, TOP_FINDINGS, TOP_BUCKETS, TOP_NVIEWS };

/* What one frame shows. */
struct top_frame {
    const char *path;                /* the run file, or what is awaited */
    const struct live_sample *s;     /* NULL, or s->json NULL: nothing to show yet */
    const char *waiting;             /* why there is no sample (NULL: there is one) */
    const char *stale;               /* why the last refresh failed (NULL: it did not) */
    int finished;                    /* the collector is done: the frame is final */
    enum top_view view;
    int cols, rows;                  /* the terminal's size; 0: no limit (not a terminal) */
    int tty;                         /* erase each line's end, add the key footer */
};

/** The key that selects view @p v ('1', 'p', 'f', 'b'). */
int top_view_key(enum top_view v);

/** The view key @p c selects, or -1. */
int top_view_of_key(int c);

/** The view named @p name ("overview", "processes", "findings",
 * "buckets"), or -1. */
int top_view_of_name(const char *name);

/** Print frame @p t to @p f: a header, the view, and on a terminal the
 * footer naming the keys, in at most t->rows lines of t->cols columns. */
void top_frame_print(FILE *f, const struct top_frame *t);

#endif
