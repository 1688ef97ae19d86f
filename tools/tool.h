/* The kiln command: the table of subcommands and what every subcommand shares. */
#ifndef KILN_TOOL_H
#define KILN_TOOL_H

typedef struct tool_cmd {
    const char *name;
    const char *summary; /* one line for `kiln --help` */
    const char *usage;   /* the full text of `kiln help <name>` */
    /* argv[0] is the command's name; returns the process exit status. */
    int (*run)(const struct tool_cmd *self, int argc, char **argv);
} tool_cmd;

/* Exit statuses: 0 success, 1 the work ran and found a failure (or could not run),
 * 2 the command line was wrong. */
enum { TOOL_EXIT_OK = 0, TOOL_EXIT_FAIL = 1, TOOL_EXIT_USAGE = 2 };

extern const tool_cmd tool_cmd_info;
extern const tool_cmd tool_cmd_check;
extern const tool_cmd tool_cmd_bench;
extern const tool_cmd tool_cmd_targets;
extern const tool_cmd tool_cmd_cache;
extern const tool_cmd tool_cmd_build;

#endif
