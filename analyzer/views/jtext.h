/* views/jtext.h: reading the docs/json.md object for the text views (the
 * report, `top`, the metrics): typed getters and a frame as people read
 * it. Written once, in jtext.c. */
#ifndef CUDASPY_ANALYZER_JTEXT_H
#define CUDASPY_ANALYZER_JTEXT_H

#include <jansson.h>
#include <stddef.h>

/** Integer @p k of object @p o; 0 when absent or not an integer. */
json_int_t jtext_int(const json_t *o, const char *k);

/** Number @p k of @p o (integer or real); 0 when absent. */
double jtext_num(const json_t *o, const char *k);

/** String @p k of @p o; "" when absent. @return borrowed from @p o */
const char *jtext_str(const json_t *o, const char *k);

/** A JSON frame (docs/json.md) as "train.py:57 in train_step" or
 * "libtorch_cuda.so+0x1a2b" (the file's or module's base name) into
 * @p buf. @return buf */
const char *jtext_frame(char *buf, size_t n, const json_t *f);

#endif
