/* kiln info: what the library is, what it found on this machine, and what auto picks. */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "describe.h"
#include "jsonv.h"
#include "context.h"
#include "kiln.h"

static int run(const tool_cmd *self, int argc, char **argv) {
    int json = 0;
    const tool_opt opts[] = {
        {"json", TOOL_OPT_FLAG, &json, 0, 0, NULL},
        {NULL, TOOL_OPT_FLAG, NULL, 0, 0, NULL},
    };
    tool_parse(self, argc, argv, opts, NULL, 0);

    if (json) {
        kiln_json j;
        tool_json_init(&j);
        kiln_info_write(&j, NULL, NULL);
        int oom = tool_json_print(stdout, &j, "kiln info");
        kiln_json_free(&j);
        return oom ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
    }
    char *text = tool_info_json();
    if (!text) return TOOL_EXIT_FAIL;
    char err[128];
    jv *doc = jv_parse(text, err, sizeof err);
    if (!doc) {
        /* Still show what the library said: the text is the evidence of the bug. */
        fprintf(stderr, "kiln info: the library's JSON does not parse (%s):\n%s\n", err, text);
        free(text);
        return TOOL_EXIT_FAIL;
    }
    jv_print_text(stdout, doc);
    jv_free(doc);
    free(text);
    return TOOL_EXIT_OK;
}

const tool_cmd tool_cmd_info = {
    "info",
    "describe the library, the backends and devices found, and what auto picks",
    "usage: kiln info [--json]\n"
    "\n"
    "Describes the library (version, build), the machine, every backend found (device,\n"
    "target, compute units, memory, driver and compiler versions), the code-object targets\n"
    "shipped, and which backend 'auto' picks and why.\n"
    "\n"
    "options:\n"
    "  --json   print the description as JSON (the text kiln_info_json() returns)\n",
    run,
};
