/* main.c: cudaspy-analyze's entry point. Picks the subcommand and hands it
 * argv starting at the subcommand's name (commands.h); a bare run file list
 * is the default `report`. Option parsing is each subcommand's own. */
#include <string.h>

#include "commands.h"

struct cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
};

static const struct cmd cmds[] = {
    {"gate", gate_main},     {"summary", summary_main}, {"export", export_main},
    {"mcp", mcp_main},       {"report", report_main},   {"top", top_main},
    {"metrics", metrics_main}, {"watch", watch_main},   {"push", push_main},
};

/* `report --html OUT RUN` is the HTML report (report_html.c). */
static int has_html(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "--html") == 0 || strncmp(argv[i], "--html=", 7) == 0)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
            if (strcmp(argv[1], cmds[i].name) != 0)
                continue;
            if (cmds[i].fn == report_main && has_html(argc - 1, argv + 1))
                return html_main(argc - 1, argv + 1);
            return cmds[i].fn(argc - 1, argv + 1);
        }
    }
    return report_main(argc, argv);
}
