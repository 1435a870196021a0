/* mcp.c: `cudaspy-analyze mcp RUN.lmdb...`, the Model Context Protocol
 * server over stdio. Placeholder so the analyzer links; the server lands
 * in the next commits. */
#include <stdio.h>

#include "commands.h"

int mcp_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "cudaspy-analyze: mcp: not implemented yet\n");
    return 2;
}
