/* kiln: inspect, check and benchmark the library from the command line. */
#include <stdio.h>
#include <string.h>

#include "kiln.h"
#include "platform/platform.h"
#include "tool.h"

static const tool_cmd *const commands[] = {
    &tool_cmd_info,
    &tool_cmd_check,
    &tool_cmd_bench,
#if KILN_WITH_GPU
    &tool_cmd_targets,
    &tool_cmd_cache,
    &tool_cmd_build,
#endif
};
#define NUM_COMMANDS (sizeof commands / sizeof commands[0])

static void print_help(FILE *f) {
    fprintf(f,
            "kiln %s: fused attention and gated activations on the CPU, NVIDIA and AMD GPUs.\n"
            "\n"
            "usage: kiln <command> [options]\n"
            "       kiln help <command>    (or kiln <command> --help)\n"
            "       kiln --version\n"
            "\n"
            "commands:\n",
            kiln_version_string());
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f,
            "\n"
            "environment: KILN_BACKEND=auto|cpu|cuda|hip picks the backend of 'auto';\n"
            "KILN_LOG=error|warn|info|debug prints the library's log on stderr.\n"
            "Exit status: 0 success, 1 a check failed or work could not run, 2 a wrong "
            "command line.\n");
}

static const tool_cmd *find_command(const char *name) {
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

static int unknown_command(const char *name) {
    fprintf(stderr, "kiln: unknown command '%s' (commands:", name);
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        fprintf(stderr, "%s %s", i ? "," : "", commands[i]->name);
    fprintf(stderr, ")\nRun 'kiln --help' for usage.\n");
    return TOOL_EXIT_USAGE;
}

int main(int argc, char **argv) {
    /* File names given to --out must reach the library as UTF-8 on Windows too. */
    argv = kiln_process_utf8_args(argc, argv);
    if (argc < 2) {
        print_help(stderr);
        return TOOL_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_help(stdout);
        return TOOL_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("kiln %s\n", kiln_version_string());
        return TOOL_EXIT_OK;
    }
    if (strcmp(name, "help") == 0) {
        if (argc == 2) {
            print_help(stdout);
            return TOOL_EXIT_OK;
        }
        if (argc > 3) {
            fprintf(stderr, "kiln help: takes one command name, got %d arguments\n", argc - 2);
            return TOOL_EXIT_USAGE;
        }
        const tool_cmd *cmd = find_command(argv[2]);
        if (!cmd) return unknown_command(argv[2]);
        fputs(cmd->usage, stdout);
        return TOOL_EXIT_OK;
    }
    const tool_cmd *cmd = find_command(name);
    if (!cmd) {
        if (name[0] == '-') {
            fprintf(stderr, "kiln: unknown option '%s' (allowed before a command: --help, "
                            "--version)\nRun 'kiln --help' for usage.\n", name);
            return TOOL_EXIT_USAGE;
        }
        return unknown_command(name);
    }
    return cmd->run(cmd, argc - 1, argv + 1);
}
