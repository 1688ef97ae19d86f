/* kiln build: ahead-of-time code objects for a list of GPU targets. */
#include <stdio.h>

#include "args.h"
#include "gpu/aot.h"
#include "platform/platform.h"

static void on_progress(const kiln_aot_progress *p, void *user) {
    (void)user;
    printf("[%4lu/%lu] %-8s %-44s %s %6.1f s\n", (unsigned long)p->done,
           (unsigned long)p->total, p->target, p->variant,
           p->status == KILN_OK ? "ok  " : "FAIL", p->seconds);
    if (p->status != KILN_OK && p->message && p->message[0]) printf("    %s\n", p->message);
    fflush(stdout);
}

static int run(const tool_cmd *self, int argc, char **argv) {
    const char *targets = NULL, *out = NULL, *filter = NULL;
    int64_t jobs = 0;
    const tool_opt opts[] = {
        {"targets", TOOL_OPT_STRING, &targets, 0, 0, NULL},
        {"out", TOOL_OPT_STRING, &out, 0, 0, NULL},
        {"jobs", TOOL_OPT_INT, &jobs, 1, 1024, NULL},
        {"filter", TOOL_OPT_STRING, &filter, 0, 0, NULL},
        {NULL, TOOL_OPT_FLAG, NULL, 0, 0, NULL},
    };
    char env_targets[1024];
    const char *from = "--targets";
    tool_parse(self, argc, argv, opts, NULL, 0);
    /* --targets wins; else GPU_ARCHS, the variable the build itself reads. */
    if (!targets && kiln_env_get("GPU_ARCHS", env_targets, sizeof env_targets) &&
        env_targets[0]) {
        targets = env_targets;
        from = "GPU_ARCHS";
    }
    if (!targets)
        tool_usage_error(self, "--targets is required when GPU_ARCHS is not set (see 'kiln "
                               "targets')");
    if (!out) tool_usage_error(self, "--out is required");

    kiln_status st =
        kiln_aot_build_filtered(targets, out, (int)jobs, filter, on_progress, NULL);
    if (st == KILN_INVALID_ARGUMENT) {
        /* A bad target list is a command-line mistake, reported like one. */
        tool_usage_error(self, "%s: %s", from, kiln_last_error());
    }
    if (st != KILN_OK) {
        fprintf(stderr, "kiln build: %s: %s\n", kiln_status_string(st), kiln_last_error());
        return TOOL_EXIT_FAIL;
    }
    printf("\ncode objects and manifest.json in %s; point KILN_AOT_DIR there to use them\n",
           out);
    return TOOL_EXIT_OK;
}

const tool_cmd tool_cmd_build = {
    "build",
    "compile GPU code objects ahead of time for a list of targets",
    "usage: kiln build [--targets LIST] --out DIR [--jobs N] [--filter TEXT]\n"
    "\n"
    "Compiles every generic variant (attention in every mode, the split-KV combine, the\n"
    "activations) for every target in LIST, in parallel, and checks each code object\n"
    "against the target's limits (registers, shared memory / LDS, wave size). Writes\n"
    "DIR/<target>/<variant>.<source hash>.cubin|.hsaco and DIR/manifest.json; a library\n"
    "run with KILN_AOT_DIR=DIR loads them instead of compiling on first use, where its\n"
    "kernel sources are the ones they were built from. NVIDIA targets compile\n"
    "with NVRTC, AMD targets with clang (KILN_CLANG, else clang-19/-20/-18/clang on PATH);\n"
    "no GPU is needed. Every object is attempted even after a failure.\n"
    "\n"
    "options:\n"
    "  --targets LIST  ',' or ';' separated target names, every one honoured (the names\n"
    "                  'kiln targets' lists; the same syntax as GPU_ARCHS). Without it\n"
    "                  the GPU_ARCHS environment variable gives the list\n"
    "  --out DIR       output folder (created if missing)\n"
    "  --jobs N        parallel compiles (default: MAX_JOBS, else every core)\n"
    "  --filter TEXT   only variants whose key contains TEXT (e.g. 'attn_fwd.bf16.d128')\n"
    "\n"
    "Exit status: 0 when every object compiled and fits its target, 1 otherwise.\n",
    run,
};
