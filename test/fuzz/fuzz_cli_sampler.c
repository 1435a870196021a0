/* fuzz_cli_sampler.c: cudaspy-sampler's option parser for fuzz_cli.c. The
 * parser is static in sampler/main.c, so that file is compiled here with
 * its main() renamed; only parse_args() is called (main would launch the
 * command line the fuzzer made up). */
#define main cs_sampler_main
#include "../../sampler/main.c"
#undef main

int fuzz_sampler_parse(int argc, char **argv);

int fuzz_sampler_parse(int argc, char **argv)
{
    struct sampler_args a;

    memset(&a, 0, sizeof(a));
    return parse_args(argc, argv, &a);
}
