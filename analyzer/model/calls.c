/* model/calls.c: the model's calls once loaded (model.h, model_call()).
 * Owns moving them from the array that loading sorts and shifts into the
 * compact store (model/callstore.h), the cache of blocks decoded last, and
 * the search by enter time over the store. */
#include <errno.h>
#include <stdlib.h>

#include "callstore.h"
#include "model.h"

#define CC_SLOTS 64 /* blocks kept decoded: direct-mapped by block number */

struct callcache {
    uint64_t tag[CC_SLOTS]; /* the block in each slot, UINT64_MAX: none */
    struct m_call c[CC_SLOTS][CALLSTORE_BLOCK];
};

int model_calls_compact(struct model *m)
{
    struct callstore *s = malloc(sizeof(*s));
    struct callcache *cc = malloc(sizeof(*cc));

    if (s == NULL || cc == NULL)
        goto keep;
    callstore_init(s);
    for (uint64_t i = 0; i < m->ncall; i++)
        if (callstore_put(s, &m->call[i]) < 0) {
            callstore_free(s);
            goto keep;
        }
    for (int k = 0; k < CC_SLOTS; k++)
        cc->tag[k] = UINT64_MAX;
    model_free_big(m->call);
    m->call = NULL;
    m->cstore = s, m->ccache = cc;
    return 0;
keep: /* the array stays: model_call() reads it */
    free(s), free(cc);
    return -ENOMEM;
}

void model_calls_free(struct model *m)
{
    if (m->cstore)
        callstore_free(m->cstore);
    free(m->cstore), free(m->ccache);
    m->cstore = NULL, m->ccache = NULL;
}

static const struct m_call *block_of(const struct model *m, uint64_t b)
{
    struct callcache *cc = m->ccache;
    uint32_t slot = (uint32_t)(b % CC_SLOTS);

    if (cc->tag[slot] != b) {
        callstore_decode(m->cstore, b, cc->c[slot]);
        cc->tag[slot] = b;
    }
    return cc->c[slot];
}

struct m_call model_call_stored(const struct model *m, uint64_t i)
{
    return block_of(m, i / CALLSTORE_BLOCK)[i % CALLSTORE_BLOCK];
}

/* Is call @p i entered before @p t (at @p t too when @p strict)? */
static int before(const struct model *m, uint64_t i, uint64_t t, int strict)
{
    uint64_t e = model_call_stored(m, i).t_enter_ns;

    return e < t || (strict && e == t);
}

/* The blocks that start inside [lo, hi) say which block holds the answer,
 * by their first calls' enter times; one block is then searched. */
uint64_t model_call_search_stored(const struct model *m, uint64_t lo, uint64_t hi, uint64_t t,
                                  int strict)
{
    const struct callstore_blk *blk = m->cstore->blk;
    uint64_t bl, bh, a, b;

    if (lo >= hi)
        return lo;
    bl = lo / CALLSTORE_BLOCK + 1, bh = (hi - 1) / CALLSTORE_BLOCK + 1; /* starts in (lo, hi) */
    while (bl < bh) { /* first block start not before t */
        uint64_t mid = bl + (bh - bl) / 2;
        if (blk[mid].enter < t || (strict && blk[mid].enter == t))
            bl = mid + 1;
        else
            bh = mid;
    }
    a = bl * CALLSTORE_BLOCK - CALLSTORE_BLOCK, b = bl * CALLSTORE_BLOCK;
    a = a > lo ? a : lo, b = b < hi ? b : hi;
    while (a < b && before(m, a, t, strict))
        a++;
    return a;
}
