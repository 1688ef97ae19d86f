/*
 * Command-line parsing for the kiln command. Every mistake is reported on stderr naming the
 * option, the bad value and what is allowed, and the process exits with status 2: a script
 * driving kiln can tell a wrong command line (2) from a failed check (1).
 */
#ifndef KILN_TOOL_ARGS_H
#define KILN_TOOL_ARGS_H

#include <stdint.h>

#include "tool.h"

#define TOOL_LIST_MAX 16

typedef enum tool_opt_kind {
    TOOL_OPT_FLAG,        /* dest: int, set to 1 */
    TOOL_OPT_INT,         /* dest: int64_t, within [min, max] */
    TOOL_OPT_INT_LIST,    /* dest: tool_int_list, "128,512,1024", each within [min, max] */
    TOOL_OPT_CHOICE,      /* dest: int, the index of the value in choices */
    TOOL_OPT_CHOICE_LIST, /* dest: tool_choice_list, "bf16,f32", indices in choices */
    TOOL_OPT_STRING       /* dest: const char *, any non-empty value */
} tool_opt_kind;

typedef struct tool_int_list {
    int n;
    int64_t v[TOOL_LIST_MAX];
} tool_int_list;

typedef struct tool_choice_list {
    int n;
    int v[TOOL_LIST_MAX];
} tool_choice_list;

typedef struct tool_opt {
    const char *name; /* without the leading "--" */
    tool_opt_kind kind;
    void *dest;
    int64_t min, max;           /* INT and INT_LIST */
    const char *const *choices; /* CHOICE and CHOICE_LIST: NULL-terminated */
} tool_opt;

/* Parses argv[1..argc) ("--name value" or "--name=value"; options and positionals in any
 * order; "--" ends the options). "--help" / "-h" print cmd->usage and exit 0. Positionals go
 * to pos[0..max_pos). Returns how many positionals there were; exits 2 on any mistake. An
 * option given twice keeps its last value. */
int tool_parse(const tool_cmd *cmd, int argc, char **argv, const tool_opt *opts,
               const char **pos, int max_pos);

/* Index of value in the NULL-terminated choices, or exits 2 naming what (e.g. "subcommand")
 * and the allowed values. */
int tool_require_choice(const tool_cmd *cmd, const char *what, const char *value,
                        const char *const *choices);

/* Prints "kiln <cmd>: <message>" and a pointer to the help on stderr, then exits 2. */
_Noreturn void tool_usage_error(const tool_cmd *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
