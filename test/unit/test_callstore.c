/* test_callstore.c: analyzer/model/callstore.c: calls set into the compact
 * store in any order come back exactly as they went in (every field, the
 * enter time alone, the seq and stack id kept beside; by index in order, at
 * random, across block and chunk ends), for calls of every shape (times that go backwards across threads, a call that ends
 * before it starts, 64-bit streams and byte counts, threads and kinds that
 * change every call), and a launch loop's calls take under 8 bytes each.
 * Loading's placement (model/calls.c) puts two threads' calls that arrive
 * interleaved and up to 64 late in enter order, and says -EAGAIN for one
 * that arrives later than that.
 * Prints its seed (CS_TEST_SEED). */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "model/callstore.h"
#include "model/model.h"
#include "unit/u64.h"

static unsigned seed;

/* What is kept beside call @p i of a series of @p shape: none in a loop;
 * else seqs one apart in odd blocks (stored less the row), three in even. */
#define SEQ(shape, i) ((uint32_t)((shape) ? ((i) / 64 % 2 ? (i) + 7 : (i) * 3) : 0))
#define STACK(shape, i) ((uint32_t)((i) % 5 * (uint64_t)(shape)))

/* Call @p i of a series of shape @p shape, after @p prev. */
static void make_call(uint64_t *s, int shape, uint64_t i, const struct m_call *prev,
                      struct m_call *c)
{
    static const uint16_t kernels[] = {3, 7, 11};

    memset(c, 0, sizeof(*c));
    if (shape == 0) { /* a launch loop: 3 kernels in turn, a sync every 600 */
        c->t_enter_ns = prev->t_exit_ns + 900 + rnd(s) % 200;
        c->t_exit_ns = c->t_enter_ns + 6000 + rnd(s) % 500;
        c->api = i % 601 == 600 ? 2 : 1;
        c->bytes_or_name = c->api == 1 ? kernels[i % 3] : 0;
        c->stream = 0x7f0000001000ull;
        c->thr = 4;
        c->flags = c->api == 1 ? 0x40 : 0;
        return;
    }
    c->t_enter_ns = rnd(s) % 4 ? prev->t_enter_ns + rnd(s) % 100000 : rnd(s);
    c->t_exit_ns = rnd(s) % 8 ? c->t_enter_ns + rnd(s) % 10000000 : rnd(s);
    c->stream = rnd(s) % 2 ? rnd(s) : prev->stream;
    c->bytes_or_name = rnd(s) % 2 ? rnd(s) >> (rnd(s) % 64) : prev->bytes_or_name;
    c->thr = rnd(s) % 3 ? prev->thr : (uint32_t)rnd(s);
    c->api = rnd(s) % 2048, c->variant = rnd(s) % 4, c->dir = rnd(s) % 8;
    c->flags = (uint16_t)rnd(s);
}

static struct m_call *fill(struct callstore *st, int shape, uint64_t n, uint64_t *s)
{
    struct m_call *want = malloc(n * sizeof(*want)), prev;

    memset(&prev, 0, sizeof(prev));
    if (want == NULL)
        return NULL;
    callstore_init(st);
    if (callstore_open(st, n) < 0)
        goto fail;
    for (uint64_t i = 0; i < n; i++) {
        make_call(s, shape, i, &prev, &want[i]);
        prev = want[i];
    }
    for (uint64_t k = 0; k < n; k++) { /* in an order of their own: out of order by block */
        uint64_t i = (k * 7919) % n;
        if (callstore_set(st, i, &want[i], SEQ(shape, i), STACK(shape, i)) < 0)
            goto fail;
    }
    if (callstore_close(st) < 0)
        goto fail;
    return want;
fail:
    free(want);
    return NULL;
}

/* Does call @p i of @p st come back as want[i], whole and its enter time? */
static int same(const struct callstore *st, int shape, uint64_t i, const struct m_call *want)
{
    struct m_call c;

    memset(&c, 0xa5, sizeof(c));
    callstore_get(st, i, &c);
    return memcmp(&c, &want[i], sizeof(c)) != 0 || callstore_enter(st, i) != want[i].t_enter_ns ||
           callstore_kept(st, i, CSC_SEQ) != SEQ(shape, i) ||
           callstore_kept(st, i, CSC_STACK) != STACK(shape, i);
}

static int test_calls_come_back_as_put(void)
{
    uint64_t s = seed, sizes[] = {0, 1, 63, 64, 65, 1000, 100003};

    for (int shape = 0; shape < 2; shape++)
        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
            struct callstore st;
            uint64_t n = sizes[z];
            struct m_call *want = fill(&st, shape, n, &s);
            CHECK(want != NULL);
            CHECK_EQ(st.n, n);
            for (uint64_t i = 0; i < n; i++) /* in order */
                CHECK(same(&st, shape, i, want) == 0);
            for (uint64_t k = 0; n && k < 20000; k++) /* at random */
                CHECK(same(&st, shape, rnd(&s) % n, want) == 0);
            free(want);
            callstore_free(&st);
        }
    return 0;
}

/* Enough calls of the worst shape for blocks to start a second chunk. */
static int test_blocks_cross_chunks(void)
{
    uint64_t s = seed ^ 0x5a5a, n = 3000000;
    struct callstore st;
    struct m_call *want = fill(&st, 1, n, &s);

    CHECK(want != NULL);
    CHECK(st.nchunk >= 2);
    for (uint64_t i = 0; i < n; i++)
        CHECK(same(&st, 1, i, want) == 0);
    free(want);
    callstore_free(&st);
    return 0;
}

static int test_launch_loop_is_compact(void)
{
    uint64_t s = seed, n = 600000;
    struct callstore st;
    struct m_call *want = fill(&st, 0, n, &s);
    double per;

    CHECK(want != NULL);
    per = (double)callstore_bytes(&st) / (double)n;
    printf("launch loop: %.2f bytes a call (struct m_call: %zu)\n", per, sizeof(struct m_call));
    CHECK(per < 8.0);
    free(want);
    callstore_free(&st);
    return 0;
}

/* Two threads of @p n calls each, enter times 10 apart, arriving
 * interleaved and in order but for call 100 of thread 1, @p late of its
 * calls late. @return callplace_put()'s first error, else 0 with every
 * call back in its thread's enter order. */
static int place_late(uint64_t n, uint64_t late)
{
    struct m_thread thr[2] = {{.first_call = 0, .ncalls = n}, {.first_call = n, .ncalls = n}};
    struct model *m = calloc(1, sizeof(*m));
    struct callplace *cp;
    struct callstore *s;
    int rc = 0;

    CHECK(m != NULL);
    m->thr = thr, m->nthr = 2, m->ncall = 2 * n;
    CHECK((cp = callplace_open(m, 2 * n)) != NULL);
    for (uint64_t k = 0; k < n + late && rc == 0; k++)
        for (uint32_t t = 0; t < 2 && rc == 0; t++) {
            uint64_t i = t == 1 && k == 100 + late ? 100 : t == 1 && k >= 100 && k < 100 + late ? k + 1 : k;
            struct m_call c = {.t_enter_ns = 1000 + 10 * i, .t_exit_ns = 1005 + 10 * i, .thr = t};
            if (i < n)
                rc = callplace_put(cp, m, t, &c, (uint32_t)i, 0);
        }
    if (rc < 0) {
        callplace_abort(cp);
        free(m);
        return rc;
    }
    CHECK((s = callplace_close(cp)) != NULL);
    for (uint64_t i = 0; i < 2 * n; i++) {
        struct m_call c;
        callstore_get(s, i, &c);
        CHECK_EQ(c.t_enter_ns, 1000 + 10 * (i % n));
        CHECK_EQ(c.thr, i / n);
        CHECK_EQ(callstore_kept(s, i, CSC_SEQ), i % n);
    }
    callstore_free(s);
    free(s);
    free(m);
    return 0;
}

static int test_placement_restores_enter_order(void)
{
    CHECK_EQ(place_late(1000, 0), 0);
    CHECK_EQ(place_late(1000, 30), 0);
    CHECK_EQ(place_late(1000, 64), 0);
    CHECK_EQ(place_late(1000, 65), -EAGAIN);
    CHECK_EQ(place_late(1000, 300), -EAGAIN);
    return 0;
}

int main(void)
{
    seed = check_seed();
    RUN(test_calls_come_back_as_put);
    RUN(test_blocks_cross_chunks);
    RUN(test_launch_loop_is_compact);
    RUN(test_placement_restores_enter_order);
    return check_status();
}
