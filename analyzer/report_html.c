/* report_html.c: cudaspy-analyze subcommand entry points (being written; see issue 6). */
#include <stdio.h>

#include "commands.h"

int html_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "cudaspy-analyze: %s: not implemented yet\n", argv[0]);
    return 3;
}

