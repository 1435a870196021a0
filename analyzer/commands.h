/* commands.h: cudaspy-analyze's subcommands. main.c parses the global
 * options and hands argv (starting at the subcommand name) to one of these.
 * Each returns the process exit code: 0 ok, 1 gate failed / finding at or
 * above --fail-on, 2 usage or bad input, 3 system failure. */
#ifndef CUDASPY_ANALYZER_COMMANDS_H
#define CUDASPY_ANALYZER_COMMANDS_H

int report_main(int argc, char **argv);  /* default: text/--json report; also `report --html` */
int gate_main(int argc, char **argv);    /* gate --baseline BASE RUN (gate.c) */
int summary_main(int argc, char **argv); /* summary --save base.json RUN (gate.c) */
int export_main(int argc, char **argv);  /* export --chrome OUT.json RUN (export_chrome.c) */
int html_main(int argc, char **argv);    /* report --html OUT.html RUN (report_html.c) */
int mcp_main(int argc, char **argv);     /* mcp RUN.lmdb... (mcp.c) */
int watch_main(int argc, char **argv);   /* watch --keep-on EXPR RUN (live/watch.c) */
int top_main(int argc, char **argv);     /* top RUN|PID: the live view (views/top.c) */
int metrics_main(int argc, char **argv); /* metrics --listen ADDR RUN|PID (views/metrics.c) */
int push_main(int argc, char **argv);    /* push --clickhouse URL RUN... (fleet/push.c) */

/** "cudaspy-analyze: CMD: WHAT" and where help is, on stderr (commands.c).
 * @return 2 */
int cmd_usage_error(const char *cmd, const char *what);

#endif
