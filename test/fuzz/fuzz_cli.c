/* fuzz_cli.c: libFuzzer target for the command lines of cudaspy-analyze
 * (analyzer/main.c and each subcommand's option parser: report, gate,
 * summary, export, report --html) and cudaspy-sampler (sampler/main.c
 * parse_args, through fuzz_cli_sampler.c). The first input byte picks the
 * program (odd, e.g. 'A': the analyzer; even, 'B': the sampler), the rest is split at NUL bytes into argv.
 *
 * The analyzer's entry points run for real: after parsing they try to load
 * the run files named, which in the empty scratch directory this target
 * works in fail with a message (no file the fuzzer can name is a valid run).
 * `mcp` is skipped: with a valid run it would serve stdin; so are the live
 * views, `top` and `metrics` but with --once (they follow a run, or serve
 * HTTP, until stopped) and `watch` (it waits LIVE_WAIT_NS for a run to
 * appear). stdout and stderr are closed to the fuzzer's output with
 * -close_fd_mask=3. */
#include <getopt.h>
#include <sys/stat.h>

#include "fuzz_common.h"

#define ARGS_MAX 64

int cs_analyze_main(int argc, char **argv); /* analyzer/main.c, renamed */
int fuzz_sampler_parse(int argc, char **argv); /* fuzz_cli_sampler.c */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char dir[] = "/tmp/cs-fuzz-cli-XXXXXX";

    (void)argc;
    (void)argv;
    if (mkdtemp(dir) == NULL || chdir(dir) < 0) {
        perror("fuzz_cli: scratch directory");
        exit(1);
    }
    return 0;
}

/* Does the analyzer's command line @p argv run until stopped? */
static int long_running(int argc, char **argv)
{
    if (argc < 2)
        return 0;
    if (strcmp(argv[1], "mcp") == 0 || strcmp(argv[1], "watch") == 0)
        return 1;
    if (strcmp(argv[1], "top") != 0 && strcmp(argv[1], "metrics") != 0)
        return 0;
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--once") == 0)
            return 0;
    return 1;
}

/* glibc's getopt keeps a pointer into the previous argv unless optind is 0
 * at the next call; a real process parses once, the fuzzer many times. */
static void getopt_reset(void)
{
    char *av[] = {"x", NULL};

    optind = 0;
    opterr = 0;
    (void)getopt(1, av, "");
    optind = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    char *argv[ARGS_MAX + 1], *buf;
    int argc;

    if (n < 1 || n > 4096)
        return 0;
    buf = malloc(n);
    if (buf == NULL)
        return 0;
    getopt_reset();
    if (d[0] & 1) { /* 'A' */
        argc = fuzz_argv(d + 1, n - 1, buf, argv, ARGS_MAX, "cudaspy-analyze");
        if (!long_running(argc, argv))
            (void)cs_analyze_main(argc, argv);
    } else { /* 'B' */
        argc = fuzz_argv(d + 1, n - 1, buf, argv, ARGS_MAX, "cudaspy-sampler");
        (void)fuzz_sampler_parse(argc, argv);
    }
    free(buf);
    return 0;
}
