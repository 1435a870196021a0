/* fuzz_runfile.c: libFuzzer target for the run-file reader (store/runfile_read.c)
 * and the analysis built on it (analyzer/analysis.c). The input is a whole
 * run file: the seed is a small recorded run, so mutations hit both the
 * records (block headers, cs_rec_cuda fields, process rows, strings, stacks)
 * and the LMDB pages around them. Each input is written to a scratch file,
 * opened with cs_run_open(), every cursor, table, string and stack is read,
 * then the same file goes through analysis_load() and analysis_json().
 *
 * LMDB trusts the page numbers it reads, so a corrupt page can fault inside
 * liblmdb itself; cudaspy-analyze turns that fault into "corrupt run file"
 * and exit 2 (report.c). This target does the same: a SIGSEGV/SIGBUS whose
 * faulting instruction lies in liblmdb's text jumps back and counts as a
 * rejected input. A fault anywhere else, and every ASan/UBSan report, is a
 * crash. Leak checking is off for this target (a jump out of LMDB leaves its
 * environment behind).
 *
 * LMDB can also loop on a corrupt page (found by this target: cudaspy-analyze
 * then hangs in mdb_dbi_open; docs/reliability.md). So that the campaign
 * goes on past it, each input gets 1 s of CPU: an input still inside
 * liblmdb then (a frame of the interrupted stack in its text) is counted as
 * an LMDB hang and abandoned like a fault. A loop in our code is left to
 * libFuzzer's -timeout. */
#include <execinfo.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <ucontext.h>

#include "analysis.h"
#include "cudaspy/runfile.h"
#include "fuzz_common.h"

static uintptr_t lmdb_lo, lmdb_hi;
static sigjmp_buf fault_jmp;
static volatile sig_atomic_t fault_armed;
static unsigned long lmdb_faults, lmdb_hangs;
static struct sigaction old_segv, old_bus;

#define CPU_LIMIT_S 1

static int in_lmdb(uintptr_t pc)
{
    return pc >= lmdb_lo && pc < lmdb_hi;
}

/* Is liblmdb on the interrupted stack (its own code, or a libc/ASan
 * function it called)? Harness only: backtrace() in a handler. */
static int stack_in_lmdb(uintptr_t pc)
{
    void *f[16];
    int n;

    if (in_lmdb(pc))
        return 1;
    n = backtrace(f, 16);
    for (int i = 0; i < n; i++)
        if (in_lmdb((uintptr_t)f[i]))
            return 1;
    return 0;
}

static void cpu_limit(int secs)
{
    struct itimerval it = {{0, 0}, {secs, 0}};
    setitimer(ITIMER_PROF, &it, NULL);
}

static void on_cpu_limit(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;

    (void)sig;
    (void)si;
    if (fault_armed && stack_in_lmdb((uintptr_t)uc->uc_mcontext.gregs[REG_RIP])) {
        fault_armed = 0;
        lmdb_hangs++;
        siglongjmp(fault_jmp, 2);
    }
}

static int find_lmdb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "liblmdb") == NULL)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            lmdb_lo = info->dlpi_addr + ph->p_vaddr;
            lmdb_hi = lmdb_lo + ph->p_memsz;
        }
    }
    return 1;
}

static void on_fault(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

    if (fault_armed && stack_in_lmdb(pc)) {
        fault_armed = 0;
        siglongjmp(fault_jmp, 1);
    }
    /* ours: hand it to the sanitizer (report, crash file) */
    struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
    if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, si, uc_);
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

static void say_faults(void)
{
    fprintf(stderr, "fuzz_runfile: inputs abandoned inside liblmdb: %lu faults, %lu hangs "
            "(> %d s CPU)\n", lmdb_faults, lmdb_hangs, CPU_LIMIT_S);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct sigaction sa;

    (void)argc;
    (void)argv;
    dl_iterate_phdr(find_lmdb, NULL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    sa.sa_sigaction = on_cpu_limit;
    sigaction(SIGPROF, &sa, NULL);
    atexit(say_faults);
    return 0;
}

/* Touch everything the reader hands out, so ASan sees every byte. */
static uint64_t read_all(struct cs_run *r)
{
    static const char *const keys[] = {"format", "format_version", "t_start_ns", "t_end_ns",
                                       "cmdline", "clock", "sampler_tier"};
    uint64_t sum = 0;
    size_t n;

    for (unsigned k = CS_REC_CUDA; k <= CS_REC_LOST; k++) {
        struct cs_cursor *c;
        const struct cs_blk_hdr *h;
        const void *recs;
        if (cs_cursor_open(r, k, 0, UINT64_MAX, &c) < 0)
            continue;
        while (cs_cursor_next(c, &h, &recs, NULL) == 1)
            for (uint64_t i = 0; i < (uint64_t)h->n * h->rec_size; i++)
                sum += ((const uint8_t *)recs)[i];
        cs_cursor_close(c);
    }
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        sum += cs_run_meta(r, keys[i]) ? strlen(cs_run_meta(r, keys[i])) : 0;
    const struct cs_proc *p = cs_run_procs(r, &n);
    for (size_t i = 0; i < n; i++)
        sum += p[i].pid + strlen(cs_run_string(r, p[i].pid));
    const struct cs_thread *t = cs_run_threads(r, &n);
    for (size_t i = 0; i < n; i++)
        sum += t[i].tid;
    for (uint32_t id = 0; id < 64; id++) {
        const struct cs_frame *f = cs_run_stack(r, id, &n);
        for (size_t i = 0; f && i < n; i++)
            sum += f[i].offset + strlen(cs_run_string(r, f[i].module_id));
        sum += strlen(cs_run_string(r, id));
    }
    return sum;
}

/* Run @p fn(@p arg) with the LMDB fault guard and CPU limit armed.
 * @return 0, or 1 when it faulted or hung inside liblmdb (counted). */
static int guarded(void (*fn)(void *), void *arg)
{
    int why = sigsetjmp(fault_jmp, 1);

    if (why) {
        cpu_limit(0);
        if (why == 1)
            lmdb_faults++;
        return 1;
    }
    cpu_limit(CPU_LIMIT_S);
    fault_armed = 1;
    fn(arg);
    fault_armed = 0;
    cpu_limit(0);
    return 0;
}

struct job {
    const char *path;
    struct cs_run *r;
    struct analysis *a;
    uint64_t sink;
};

static void job_read(void *arg)
{
    struct job *j = arg;
    struct cs_err err = {""};

    j->r = cs_run_new();
    if (j->r && cs_run_open(j->r, j->path, &err) == 0)
        j->sink += read_all(j->r);
}

static void job_analyse(void *arg)
{
    struct job *j = arg;
    struct cs_err err = {""};
    struct analysis_opts o;

    analysis_opts_init(&o);
    if (analysis_load(&j->path, 1, &o, &j->a, &err) == 0) {
        json_t *js = analysis_json(j->a);
        char *s = js ? json_dumps(js, JSON_COMPACT) : NULL;
        j->sink += s ? strlen(s) : 0;
        free(s);
        json_decref(js);
    }
}

static void job_free_run(void *arg)
{
    struct job *j = arg;
    cs_run_free(j->r);
    j->r = NULL;
}

static void job_free_analysis(void *arg)
{
    struct job *j = arg;
    analysis_free(j->a);
    j->a = NULL;
}

/* The reader, then the analysis, on the file at @p path. After a fault the
 * objects are still freed (guarded again: closing the env releases its map
 * and fd, so a long campaign does not run out of them). */
static void fuzz_one(const char *path)
{
    static struct job j;

    memset(&j, 0, sizeof(j));
    j.path = path;
    guarded(job_read, &j);
    guarded(job_free_run, &j);
    guarded(job_analyse, &j);
    guarded(job_free_analysis, &j);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    const char *path = fuzz_scratch("runfile");
    char lock[300];

    if (fuzz_write_file(path, d, n) < 0)
        return 0;
    fuzz_one(path);
    snprintf(lock, sizeof(lock), "%s-lock", path);
    unlink(lock);
    unlink(path);
    return 0;
}
