/* commands.c: what the subcommands of commands.h share. Apart from main.c
 * so that the fuzz targets, which link every subcommand but main(), have
 * it too. */
#include <stdio.h>

#include "commands.h"

int cmd_usage_error(const char *cmd, const char *what)
{
    fprintf(stderr, "cudaspy-analyze: %s: %s\nTry 'cudaspy-analyze %s --help'\n", cmd, what, cmd);
    return 2;
}
