/* client_ranks.c: a two-rank "data-parallel job" on the fake driver, for
 * the straggler finding (issue 10). The parent forks rank 0 and rank 1
 * (RANK, LOCAL_RANK and WORLD_SIZE set in each child before its first CUDA
 * call) and makes no CUDA call itself. Every step of every rank:
 *   launch a kernel; cuStreamSynchronize (the step's compute);
 *   pipe barrier with the peer (write a byte, read a byte);
 *   cuStreamSynchronize (the "collective wait").
 * In `straggle` mode rank 1 burns ~20 ms of CPU before every 10th step (the
 * planted straggler: its peer waits in the barrier); `control` does not;
 * `relay` straggles too, but a helper thread of each rank runs the barrier
 * and wakes the main thread (as gloo's threads do): cli.ranks_relay.
 * `host R N DIR [straggler=-1] [steps=300] [burn_ms=20]` is rank R of N
 * on its own "host": one process, recorded by its own `cudaspy record`
 * (cli.hosts_*, docs/multihost.md), its barrier a mesh of FIFOs in DIR
 * (DIR/pS_R from rank S to rank R, for every pair; the test makes them):
 * a rank sends a byte to every other, then takes one from every other, so
 * the last to arrive releases the others, whichever it is, as in an
 * all-reduce, and the collective's wait is a cuCtxSynchronize (the fake
 * delay of cuStreamSynchronize stands for the step's compute alone); rank
 * STRAGGLER burns before every 10th step.
 * Usage: client_ranks [straggle|control|relay] [steps=300] [burn_ms=20]
 * Prints "ranks 2", "steps N" and "checksum <hex>" (identical traced or
 * untraced); exits 0, or 3 after one line naming the failed call. */
#include <cuda.h>

#include "fake_client.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NAME "client_ranks"
#define CHECK_CU(call) CLIENT_CHECK(NAME, call)

#define MAX_RANKS 16

struct rank_cfg {
    int rank, nranks;
    int to_peer, from_peer; /* pipe ends (not in host mode) */
    int in[MAX_RANKS], out[MAX_RANKS]; /* host mode: DIR/p<r>_<rank>, DIR/p<rank>_<r> */
    long steps, burn_ms;
    int straggle, relay;
    int mesh;               /* host mode: the barrier is mesh_barrier() */
    int straggler;          /* the rank that straggles */
};

/* The relay thread's hand-off with the main thread. */
static pthread_mutex_t relay_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t relay_cv = PTHREAD_COND_INITIALIZER;
static int relay_go, relay_done;

static volatile uint64_t burn_sink; /* keeps burn()'s work */

static uint64_t now_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spin on CPU for @p ms of this thread's CPU time; returns a value the
 * compiler cannot drop. Like real host work it also takes a few fresh
 * pages (64): far too few to be why the rank is late, which the analyzer
 * must see (cli.ranks_straggler wants the cause "busy", not "page_alloc"). */
static uint64_t burn(long ms)
{
    uint64_t end = now_cpu_ns() + (uint64_t)ms * 1000000ull, x = 1;
    size_t len = 64 * 4096;
    char *fresh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (fresh != MAP_FAILED) {
        for (size_t i = 0; i < len; i += 4096)
            fresh[i] = (char)i;
        munmap(fresh, len);
    }

    while (now_cpu_ns() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static void peer_gone(const struct rank_cfg *c)
{
    fprintf(stderr, "%s: rank %d: barrier: peer gone\n", NAME, c->rank);
    _exit(3);
}

/* Host mode's mesh: a byte to every other rank, then one from each. */
static void mesh_barrier(const struct rank_cfg *c)
{
    char b = (char)c->rank;

    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && write(c->out[r], &b, 1) != 1)
            peer_gone(c);
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && read(c->in[r], &b, 1) != 1)
            peer_gone(c);
}

static void barrier(const struct rank_cfg *c)
{
    char b = (char)c->rank;

    if (c->mesh) {
        mesh_barrier(c);
        return;
    }
    if (write(c->to_peer, &b, 1) != 1 || read(c->from_peer, &b, 1) != 1)
        peer_gone(c);
}

/* Helper thread: runs the barrier whenever the main thread asks. */
static void *relay_main(void *arg)
{
    for (;;) {
        pthread_mutex_lock(&relay_mu);
        while (!relay_go)
            pthread_cond_wait(&relay_cv, &relay_mu);
        relay_go = 0;
        pthread_mutex_unlock(&relay_mu);
        barrier(arg);
        pthread_mutex_lock(&relay_mu);
        relay_done = 1;
        pthread_cond_broadcast(&relay_cv);
        pthread_mutex_unlock(&relay_mu);
    }
    return NULL;
}

static void relay_barrier(void)
{
    pthread_mutex_lock(&relay_mu);
    relay_go = 1;
    pthread_cond_broadcast(&relay_cv);
    while (!relay_done)
        pthread_cond_wait(&relay_cv, &relay_mu);
    relay_done = 0;
    pthread_mutex_unlock(&relay_mu);
}

static void set_rank_env(int rank, int nranks, int local)
{
    char v[16];

    snprintf(v, sizeof(v), "%d", rank);
    setenv("RANK", v, 1);
    snprintf(v, sizeof(v), "%d", local);
    setenv("LOCAL_RANK", v, 1);
    snprintf(v, sizeof(v), "%d", nranks);
    setenv("WORLD_SIZE", v, 1);
}

/* One rank's process: never returns. */
static void rank_main(const struct rank_cfg *c)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    uint64_t h = CLIENT_FNV_INIT, sink = 0;

    int local = c->mesh ? 0 : c->rank; /* a host of its own: its only GPU */
    set_rank_env(c->rank, c->nranks, local);
    int ndev = 1;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGetCount(&ndev));
    CHECK_CU(cuDeviceGet(&dev, local % ndev)); /* one GPU per rank, as LOCAL_RANK */
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuModuleLoadData(&mod, "rank_step"));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "rank_step"));
    /* rank 1 syncs twice more while setting up, as ranks may during
       init: the analyzer must shift its sequence to align the steps */
    for (int i = 0; c->rank == 1 && i < 2; i++)
        CHECK_CU(cuStreamSynchronize(NULL));
    pthread_t relay;
    if (c->relay && pthread_create(&relay, NULL, relay_main, (void *)c) != 0)
        CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY);
    for (long s = 0; s < c->steps; s++) {
        if (c->straggle && c->rank == c->straggler && s % 10 == 9)
            sink += burn(c->burn_ms);
        CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        CHECK_CU(cuStreamSynchronize(NULL));
        if (c->relay)
            relay_barrier();
        else
            barrier(c);
        if (c->mesh) /* the wait for the all-reduce: done when the last rank came */
            CHECK_CU(cuCtxSynchronize());
        else
            CHECK_CU(cuStreamSynchronize(NULL));
        h = client_fnv(h, &s, sizeof(s));
    }
    CHECK_CU(cuModuleUnload(mod));
    burn_sink = sink ^ h;
    _exit(0);
}

static pid_t spawn(struct rank_cfg *c)
{
    pid_t pid = fork();

    if (pid == 0)
        rank_main(c);
    return pid;
}

/* Host mode: open the mesh's FIFOs (this rank's own ones for reading and
 * writing first, so that no open waits on a rank that waits on this one)
 * and be rank R. */
static int host_main(int argc, char **argv)
{
    struct rank_cfg c = {0};
    char path[4096];

    if (argc < 5) {
        fprintf(stderr, "usage: %s host R N DIR [straggler=-1] [steps=300] [burn_ms=20]\n", NAME);
        return 2;
    }
    c.rank = atoi(argv[2]), c.nranks = atoi(argv[3]);
    c.straggler = (int)client_arg(argc, argv, 5, -1);
    c.steps = client_arg(argc, argv, 6, 300), c.burn_ms = client_arg(argc, argv, 7, 20);
    c.straggle = c.straggler >= 0, c.mesh = 1;
    if (c.nranks < 2 || c.nranks > MAX_RANKS || c.rank < 0 || c.rank >= c.nranks) {
        fprintf(stderr, "%s: host: want 0 <= R < N <= %d\n", NAME, MAX_RANKS);
        return 2;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < c.nranks; r++) {
            if (r == c.rank)
                continue;
            snprintf(path, sizeof(path), "%s/p%d_%d", argv[4], pass ? c.rank : r,
                     pass ? r : c.rank);
            int fd = open(path, pass ? O_WRONLY : O_RDWR);
            if (fd < 0) {
                fprintf(stderr, "%s: rank %d: %s: cannot open\n", NAME, c.rank, path);
                return 3;
            }
            *(pass ? &c.out[r] : &c.in[r]) = fd;
        }
    rank_main(&c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "host") == 0)
        return host_main(argc, argv);
    int relay = argc > 1 && strcmp(argv[1], "relay") == 0;
    int straggle = relay || (argc > 1 && strcmp(argv[1], "straggle") == 0);
    long steps = client_arg(argc, argv, 2, 300), burn_ms = client_arg(argc, argv, 3, 20);
    int p01[2], p10[2], bad = 0;
    pid_t pid[2];
    uint64_t h = CLIENT_FNV_INIT;

    if (argc > 1 && !straggle && strcmp(argv[1], "control") != 0) {
        fprintf(stderr, "usage: %s [straggle|control|relay] [steps=300] [burn_ms=20]\n", NAME);
        return 2;
    }
    if (pipe(p01) != 0 || pipe(p10) != 0)
        CHECK_CU(CUDA_ERROR_OUT_OF_MEMORY);
    fflush(stdout);
    struct rank_cfg c0 = {.rank = 0, .nranks = 2, .to_peer = p01[1], .from_peer = p10[0],
                          .steps = steps, .burn_ms = burn_ms, .straggle = straggle,
                          .relay = relay, .straggler = 1};
    struct rank_cfg c1 = c0;

    c1.rank = 1, c1.to_peer = p10[1], c1.from_peer = p01[0];
    pid[0] = spawn(&c0);
    pid[1] = spawn(&c1);
    close(p01[0]), close(p01[1]), close(p10[0]), close(p10[1]);
    for (int r = 0; r < 2; r++) {
        int st;
        if (pid[r] < 0 || waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "%s: a rank failed\n", NAME);
        return 3;
    }
    for (long s = 0; s < steps; s++)
        h = client_fnv(h, &s, sizeof(s));
    printf("ranks 2\nsteps %ld\nchecksum %016llx\n", steps, (unsigned long long)h);
    return 0;
}
