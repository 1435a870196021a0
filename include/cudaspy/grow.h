/* grow.h: the growable-array helper the collector and the run-file code
 * share (written once in store/cs_grow.c, part of cs_core). */
#ifndef CUDASPY_GROW_H
#define CUDASPY_GROW_H

#include <stddef.h>

/** Make the array at *@p p (capacity *@p cap elements of @p elem bytes) hold
 * at least @p want elements, doubling from 16; new elements are zeroed.
 * @return 0, or -ENOMEM with *@p p and *@p cap unchanged */
int cs_grow(void **p, size_t *cap, size_t want, size_t elem);

#endif
