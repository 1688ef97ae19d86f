/* kiln check: every op on every backend this machine can run, against the fp64 reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "check_cases.h"
#include "cpu/cpu.h"
#include "dtypes.h"
#include "json.h"
#include "jsonv.h"
#include "platform/platform.h"

static const char *const backend_choices[] = {"all", "cpu", "cuda", "hip", NULL};
enum { SEL_ALL, SEL_CPU, SEL_CUDA, SEL_HIP };

typedef struct checker {
    int json;
    int passed, failed;
    kiln_json out; /* rows and skips, when --json */
} checker;

static void print_header(void) {
    printf("%-23s %-14s %-5s %-44s %9s %6s %-6s %s\n", "op", "backend", "dtype", "shape",
           "max err", "tol", "result", "ran");
}

static void on_row(const check_row *r, void *user) {
    checker *c = user;
    if (r->pass) c->passed++;
    else c->failed++;
    if (c->json) {
        kiln_json *j = &c->out;
        kiln_json_object_begin(j, NULL);
        kiln_json_string(j, "op", r->op);
        kiln_json_string(j, "backend", r->backend);
        kiln_json_string(j, "dtype", kiln_dtype_name(r->dtype));
        kiln_json_string(j, "shape", r->shape);
        kiln_json_number(j, "max_abs_err", r->err); /* NaN (did not run) becomes null */
        kiln_json_number(j, "tolerance", r->tol);
        kiln_json_bool(j, "pass", r->pass);
        kiln_json_string(j, "variant", r->ran.variant[0] ? r->ran.variant : NULL);
        kiln_json_string(j, "target", r->ran.target[0] ? r->ran.target : NULL);
        kiln_json_string(j, "tier", r->ran.tier[0] ? r->ran.tier : NULL);
        kiln_json_int(j, "num_splits", r->ran.num_splits);
        if (r->error[0]) kiln_json_string(j, "error", r->error);
        kiln_json_object_end(j);
        return;
    }
    char err[16], ran[64] = "";
    if (isnan(r->err)) snprintf(err, sizeof err, "-");
    else snprintf(err, sizeof err, "%.2e", r->err);
    if (r->ran.target[0]) {
        snprintf(ran, sizeof ran, "%s %s", r->ran.target, r->ran.tier);
        if (r->ran.num_splits > 1)
            snprintf(ran + strlen(ran), sizeof ran - strlen(ran), " splits=%d",
                     (int)r->ran.num_splits);
    }
    printf("%-23s %-14s %-5s %-44s %9s %6.0e %-6s %s\n", r->op, r->backend,
           kiln_dtype_name(r->dtype), r->shape, err, r->tol, r->pass ? "PASS" : "FAIL", ran);
    if (r->error[0]) printf("    %s\n", r->error);
    fflush(stdout);
}

/* A backend that was not checked, and why. Counted as a failure only if it was asked for by
 * name: "all" means whatever this machine has. */
static void skipped(checker *c, const char *backend, const char *why, int is_failure) {
    if (is_failure) c->failed++;
    if (c->json) {
        kiln_json_object_begin(&c->out, NULL);
        kiln_json_string(&c->out, "backend", backend);
        kiln_json_string(&c->out, "skipped", why);
        kiln_json_bool(&c->out, "pass", !is_failure);
        kiln_json_object_end(&c->out);
    } else {
        printf("%s: %s: %s\n", backend, is_failure ? "FAIL, cannot run" : "not checked", why);
    }
}

static void check_context(checker *c, kiln_context *ctx, const char *name,
                          const tool_choice_list *dtypes) {
    for (int d = 0; d < dtypes->n; d++)
        check_run_all(ctx, name, tool_dtype_values[dtypes->v[d]], on_row, c);
}

/* Creates a context of backend and checks it; -1 when it could not start (why in err). */
static int check_backend(checker *c, kiln_backend backend, const char *name,
                         const tool_choice_list *dtypes, char *err, size_t errcap) {
    kiln_context *ctx = NULL;
    kiln_status st = kiln_context_create(backend, 0, &ctx);
    if (st != KILN_OK) {
        snprintf(err, errcap, "%s: %s", kiln_status_string(st), kiln_last_error());
        return -1;
    }
    check_context(c, ctx, name, dtypes);
    kiln_context_free(ctx);
    return 0;
}

static void check_cpu(checker *c, const tool_choice_list *levels, int all_levels,
                      const tool_choice_list *dtypes) {
    char err[1024], name[32];
    if (levels->n == 0 && !all_levels) {
        if (check_backend(c, KILN_BACKEND_CPU, "cpu", dtypes, err, sizeof err))
            skipped(c, "cpu", err, 1);
        return;
    }
    /* The level is read from KILN_CPU_SIMD when a context starts; put the caller's value
     * back afterwards. */
    char saved[64];
    int had = kiln_env_get("KILN_CPU_SIMD", saved, sizeof saved);
    const int top = (int)kiln_cpu_detect_level();
    const int n = all_levels ? top + 1 : levels->n;
    for (int i = 0; i < n; i++) {
        const char *level = kiln_cpu_level_name((kiln_cpu_level)(all_levels ? i : levels->v[i]));
        snprintf(name, sizeof name, "cpu:%s", level);
        kiln_env_set("KILN_CPU_SIMD", level);
        /* With "all", a level this build did not compile is not a failure of the library. */
        if (check_backend(c, KILN_BACKEND_CPU, name, dtypes, err, sizeof err))
            skipped(c, name, err, !all_levels);
    }
    kiln_env_set("KILN_CPU_SIMD", had ? saved : NULL);
}

static const char *const tier_choices[] = {"generic", "tensor", "auto", "hopper", NULL};

/* A GPU backend on each requested tier (KILN_GPU_TIER, read at every call). With no --tier
 * and no KILN_GPU_TIER set: the generic tier, then auto (the tensor tier where it covers
 * the case), so both kinds of kernel are checked. */
static void check_gpu(checker *c, kiln_backend kind, const char *backend,
                      const tool_choice_list *tiers, const tool_choice_list *dtypes,
                      int required) {
    char err[1024], name[96], saved[64];
    kiln_context *ctx = NULL;
    kiln_status st = kiln_context_create(kind, 0, &ctx);
    if (st != KILN_OK) {
        snprintf(err, sizeof err, "%s: %s", kiln_status_string(st), kiln_last_error());
        skipped(c, backend, err, required);
        return;
    }
    const int had = kiln_env_get("KILN_GPU_TIER", saved, sizeof saved) && saved[0];
    if (had && tiers->n == 0) {
        snprintf(name, sizeof name, "%s:%s", backend, saved);
        check_context(c, ctx, name, dtypes);
    } else {
        static const tool_choice_list both = {2, {0, 2}};
        const tool_choice_list *list = tiers->n ? tiers : &both;
        for (int i = 0; i < list->n; i++) {
            snprintf(name, sizeof name, "%s:%s", backend, tier_choices[list->v[i]]);
            kiln_env_set("KILN_GPU_TIER", tier_choices[list->v[i]]);
            check_context(c, ctx, name, dtypes);
        }
        kiln_env_set("KILN_GPU_TIER", had ? saved : NULL);
    }
    kiln_context_free(ctx);
}

static int run(const tool_cmd *self, int argc, char **argv) {
    int backend = SEL_ALL, json = 0;
    tool_choice_list tiers = {0, {0}};
    tool_choice_list dtypes = {3, {0, 1, 2}};
    tool_choice_list levels = {0, {0}};
    const char *simd_choices[KILN_CPU_LEVEL_COUNT + 2];
    for (int l = 0; l < KILN_CPU_LEVEL_COUNT; l++)
        simd_choices[l] = kiln_cpu_level_name((kiln_cpu_level)l);
    simd_choices[KILN_CPU_LEVEL_COUNT] = "all";
    simd_choices[KILN_CPU_LEVEL_COUNT + 1] = NULL;
    const tool_opt opts[] = {
        {"backend", TOOL_OPT_CHOICE, &backend, 0, 0, backend_choices},
        {"dtype", TOOL_OPT_CHOICE_LIST, &dtypes, 0, 0, tool_dtype_names},
        {"simd", TOOL_OPT_CHOICE_LIST, &levels, 0, 0, simd_choices},
        {"tier", TOOL_OPT_CHOICE_LIST, &tiers, 0, 0, tier_choices},
        {"json", TOOL_OPT_FLAG, &json, 0, 0, NULL},
        {NULL, TOOL_OPT_FLAG, NULL, 0, 0, NULL},
    };
    tool_parse(self, argc, argv, opts, NULL, 0);
    int all_levels = 0;
    for (int i = 0; i < levels.n; i++)
        if (levels.v[i] == KILN_CPU_LEVEL_COUNT) all_levels = 1;
    if (levels.n && backend != SEL_ALL && backend != SEL_CPU)
        tool_usage_error(self, "--simd picks CPU levels; it does not apply to --backend %s",
                         backend_choices[backend]);
    if (tiers.n && backend == SEL_CPU)
        tool_usage_error(self, "--tier picks GPU tiers; it does not apply to --backend cpu");

    checker c = {0};
    c.json = json;
    if (json) {
        tool_json_init(&c.out);
        kiln_json_object_begin(&c.out, NULL);
        kiln_json_string(&c.out, "kiln_version", kiln_version_string());
        kiln_json_array_begin(&c.out, "checks");
    } else {
        print_header();
    }

    if (backend == SEL_ALL || backend == SEL_CPU) check_cpu(&c, &levels, all_levels, &dtypes);
    static const struct {
        int sel;
        kiln_backend kind;
        const char *name;
    } gpus[] = {{SEL_CUDA, KILN_BACKEND_CUDA, "cuda"}, {SEL_HIP, KILN_BACKEND_HIP, "hip"}};
    for (size_t g = 0; g < sizeof gpus / sizeof gpus[0]; g++)
        if (backend == SEL_ALL || backend == gpus[g].sel)
            check_gpu(&c, gpus[g].kind, gpus[g].name, &tiers, &dtypes, backend == gpus[g].sel);

    if (json) {
        kiln_json_array_end(&c.out);
        kiln_json_int(&c.out, "passed", c.passed);
        kiln_json_int(&c.out, "failed", c.failed);
        kiln_json_object_end(&c.out);
        tool_json_print(stdout, &c.out, "kiln check");
        kiln_json_free(&c.out);
    } else {
        printf("\n%d passed, %d failed\n", c.passed, c.failed);
    }
    return c.failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

const tool_cmd tool_cmd_check = {
    "check",
    "run every op on every available backend against the fp64 reference",
    "usage: kiln check [--backend all|cpu|cuda|hip] [--dtype LIST] [--simd LIST]\n"
    "                  [--tier LIST] [--json]\n"
    "\n"
    "Runs attention (fixed, varlen, paged decode, paged prefill, split-KV; with GQA, causal,\n"
    "sliding window, soft-cap and ALiBi among the cases) and silu/gelu/gelu_tanh_and_mul on\n"
    "small shapes, and compares each output (and the LSE) with an fp64 reference computed\n"
    "from the same rounded inputs. Tolerances on the max abs error: f32 1e-5, f16 1e-3,\n"
    "bf16 8e-3. GPU backends run attention in bf16 and f16 (f32 attention is CPU-only)\n"
    "and activations in all three.\n"
    "\n"
    "options:\n"
    "  --backend B   all (default: the CPU, and each GPU backend whose context starts),\n"
    "                or one backend, which then must start\n"
    "  --dtype LIST  bf16,f16,f32 (default all three)\n"
    "  --simd LIST   CPU SIMD levels to check, each in its own context: scalar, avx2,\n"
    "                avx512, avx512bf16, or all (every level this CPU has); default: the\n"
    "                level the CPU backend picks\n"
    "  --tier LIST   GPU tiers to check: generic, tensor or hopper (cases the tier does\n"
    "                not cover fail), auto (hopper, then tensor where they cover the\n"
    "                case, else generic); default:\n"
    "                generic,auto, or only what KILN_GPU_TIER says when it is set\n"
    "  --json        print the results as JSON\n"
    "\n"
    "Exit status: 0 if every case passed, 1 if any failed or a named backend could not start.\n",
    run,
};
