/* client_nvtx.c: a program annotated with NVTX v3 (the toolkit's header-only
 * nvtx3, as PyTorch and most CUDA programs use it), making a known set of
 * ranges for cli.shim_nvtx_* (test_nvtx_check knows the set): nested
 * push/pop to depth 3 with ASCII, event-attribute and wide messages; two
 * domains (one created from a wide name) with a registered string,
 * categories, interleaved pops and marks; start/end ranges ended on another
 * thread; a fork child; ranges left open at thread and process exit. It
 * makes no CUDA call.
 *
 * Usage: client_nvtx THREADS ITERS. Prints one line; exit 0, or 1 when a
 * push or pop returned a level other than NVTX's (a tool returns the
 * level, no tool -2). */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 64

static nvtxDomainHandle_t dom_a, dom_b;
static nvtxStringHandle_t reg_step;
static int iters, bad;
static nvtxRangeId_t handoff[MAX_THREADS];

/* A push or pop returns the range's level, or < 0 without a tool. */
static void level(int got, int want)
{
    if (got >= 0 && got != want) {
        fprintf(stderr, "client_nvtx: level %d, want %d\n", got, want);
        __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
    }
}

static nvtxEventAttributes_t attr_ascii(const char *msg)
{
    nvtxEventAttributes_t a = {0};

    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    return a;
}

static void one_step(int j)
{
    nvtxEventAttributes_t mid = attr_ascii("middle"), ra = {0}, b0 = attr_ascii("b level 0"),
                          b1 = attr_ascii("b level 1"), dm = attr_ascii("domain mark");

    mid.category = 3;
    mid.colorType = NVTX_COLOR_ARGB;
    mid.color = 0xff00ff00u;
    mid.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    mid.payload.ullValue = (uint64_t)j;
    ra.version = NVTX_VERSION;
    ra.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    ra.category = 7;
    ra.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    ra.message.registered = reg_step;

    level(nvtxRangePushA("outer"), 0);
    level(nvtxRangePushEx(&mid), 1);
    level(nvtxRangePushW(L"inner \u00e9"), 2);
    level(nvtxDomainRangePushEx(dom_a, &ra), 0);
    level(nvtxDomainRangePushEx(dom_b, &b0), 0);
    level(nvtxDomainRangePushEx(dom_b, &b1), 1);
    level(nvtxDomainRangePop(dom_a), 0); /* not the innermost: per-domain stacks */
    level(nvtxDomainRangePop(dom_b), 1);
    level(nvtxDomainRangePop(dom_b), 0);
    level(nvtxRangePop(), 2);
    level(nvtxRangePop(), 1);
    level(nvtxRangePop(), 0);
    nvtxDomainMarkEx(dom_a, &dm);
}

static void *worker(void *arg)
{
    int i = (int)(long)arg;
    nvtxEventAttributes_t se = attr_ascii("b start/end");

    for (int j = 0; j < iters; j++) {
        nvtxRangeId_t id = nvtxDomainRangeStartEx(dom_b, &se);
        one_step(j);
        nvtxDomainRangeEnd(dom_b, id);
    }
    nvtxRangeEnd(handoff[i]); /* started by the main thread */
    level(nvtxRangePushA("worker open"), 0); /* still open when the thread ends */
    return NULL;
}

/* The fork child: under the range its parent left open ("main open"). */
static int child(void)
{
    level(nvtxRangePushA("child range"), 1);
    nvtxMarkA("child mark");
    level(nvtxRangePop(), 1);
    level(nvtxRangePushA("child open"), 1);
    return bad;
}

int main(int argc, char **argv)
{
    int nthr = argc > 1 ? atoi(argv[1]) : 4, st = 0;
    pthread_t t[MAX_THREADS];
    pid_t pid;

    iters = argc > 2 ? atoi(argv[2]) : 50;
    if (nthr < 1 || nthr > MAX_THREADS || iters < 1) {
        fprintf(stderr, "usage: client_nvtx THREADS(1-64) ITERS\n");
        return 2;
    }
    dom_a = nvtxDomainCreateA("cudaspy.test.a");
    dom_b = nvtxDomainCreateW(L"cudaspy.test.b");
    reg_step = nvtxDomainRegisterStringA(dom_a, "registered step");
    nvtxMarkA("start mark");
    for (int i = 0; i < nthr; i++)
        handoff[i] = nvtxRangeStartA("handoff");
    for (int i = 0; i < nthr; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(long)i) != 0)
            return 3;
    for (int i = 0; i < nthr; i++)
        pthread_join(t[i], NULL);
    level(nvtxRangePushA("main open"), 0);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        exit(child());
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad = 1;
    nvtxRangeStartA("never ended");
    printf("client_nvtx: %d threads x %d steps, child %s\n", nthr, iters,
           bad ? "failed" : "done");
    return bad;
}
