/*
 * Compile matrix for one target (no GPU needed): every variant compiled by kiln_aot_build
 * (NVRTC for sm_*, clang for gfx*), every object's resources checked against the target
 * table, the manifest complete, and no tensor-tier object with a stack frame (the tensor
 * kernels keep their fragments in registers; a stack there means spills).
 *   test_compile_matrix TARGET OUT_DIR [KEY_FILTER]
 * Exit 77 (skipped) when the compiler is absent or does not accept the target (asked with a
 * probe kernel, not guessed from its name); under KILN_TEST_STRICT=1 that is a failure,
 * except for a target listed in KILN_OPTIONAL_TARGETS (one no packaged compiler knows yet).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "gpu/aot.h"
#include "gpu/gpu.h"
#include "gpu/targets.h"
#include "gpu/variants.h"
#include "platform/platform.h"

#ifndef KILN_TEST_CLANG_VERSION
#define KILN_TEST_CLANG_VERSION "unknown version"
#endif

static void progress(const kiln_aot_progress *p, void *user)
{
    (void)user;
    if (p->status != KILN_OK)
        printf("FAILED %s %s: %s\n", p->target, p->variant, p->message);
    if (p->done == p->total || p->done % 20 == 0)
        printf("[%zu/%zu] %s %s (%.1f s)\n", p->done, p->total, p->target, p->variant,
               p->seconds);
    fflush(stdout);
}

static int optional_target(const char *name)
{
    char list[256];
    if (!kiln_env_get("KILN_OPTIONAL_TARGETS", list, sizeof list)) return 0;
    for (char *tok = strtok(list, ";, "); tok; tok = strtok(NULL, ";, "))
        if (strcmp(tok, name) == 0) return 1;
    return 0;
}

/* Counts "\"variant\"" entries in the manifest and checks each listed file exists. */
static size_t manifest_objects(const char *out_dir, size_t *missing)
{
    char path[1024], err[256];
    void *data = NULL;
    size_t len = 0, n = 0;
    *missing = 0;
    snprintf(path, sizeof path, "%s%cmanifest.json", out_dir, kiln_fs_sep());
    if (kiln_fs_read(path, &data, &len, err, sizeof err) != 0) return 0;
    char *text = realloc(data, len + 1);
    if (!text) {
        free(data);
        return 0;
    }
    text[len] = '\0';
    for (char *p = strstr(text, "\"file\":"); p; p = strstr(p + 1, "\"file\":")) {
        char rel[256], full[1300];
        if (sscanf(p, "\"file\": \"%255[^\"]\"", rel) != 1 &&
            sscanf(p, "\"file\":\"%255[^\"]\"", rel) != 1)
            continue;
        snprintf(full, sizeof full, "%s%c%s", out_dir, kiln_fs_sep(), rel);
        if (!kiln_fs_exists(full)) ++*missing;
        ++n;
    }
    free(text);
    return n;
}

/* Tensor-tier objects in the manifest whose stack_bytes is not 0 (printed); *count gets
 * how many tensor-tier objects there are. */
static size_t tensor_objects_with_stack(const char *out_dir, size_t *count)
{
    char path[1024], err[256];
    void *data = NULL;
    size_t len = 0, bad = 0;
    *count = 0;
    snprintf(path, sizeof path, "%s%cmanifest.json", out_dir, kiln_fs_sep());
    if (kiln_fs_read(path, &data, &len, err, sizeof err) != 0) return 0;
    char *text = realloc(data, len + 1);
    if (!text) {
        free(data);
        return 0;
    }
    text[len] = '\0';
    for (char *p = strstr(text, "\"variant\":"); p; p = strstr(p + 1, "\"variant\":")) {
        char key[160];
        long long stack = -1, regs = -1, shared = -1, dyn = -1;
        const char *st = strstr(p, "\"stack_bytes\":");
        const char *rg = strstr(p, "\"registers\":");
        const char *sh = strstr(p, "\"shared_bytes\":");
        const char *dy = strstr(p, "\"dynamic_shared_bytes\":");
        if (sscanf(p, "\"variant\": \"%159[^\"]\"", key) != 1 &&
            sscanf(p, "\"variant\":\"%159[^\"]\"", key) != 1)
            continue;
        if (strlen(key) < 7 || strcmp(key + strlen(key) - 7, ".tensor") != 0) continue;
        ++*count;
        if (st) sscanf(st + strlen("\"stack_bytes\":"), " %lld", &stack);
        if (rg) sscanf(rg + strlen("\"registers\":"), " %lld", &regs);
        if (sh) sscanf(sh + strlen("\"shared_bytes\":"), " %lld", &shared);
        if (dy) sscanf(dy + strlen("\"dynamic_shared_bytes\":"), " %lld", &dyn);
        printf("%s: %lld registers, %lld bytes static + %lld dynamic shared memory, stack %lld\n",
               key, regs, shared, dyn, stack);
        if (stack != 0) {
            printf("%s: stack frame of %lld bytes (spills)\n", key, stack);
            ++bad;
        }
    }
    free(text);
    return bad;
}

int main(int argc, char **argv)
{
    const kiln_target *t;
    const char *filter = argc > 3 ? argv[3] : NULL;
    size_t expected, built, missing;
    kiln_status st;

    if (argc < 3) {
        fprintf(stderr, "usage: %s TARGET OUT_DIR [KEY_FILTER]\n", argv[0]);
        return 2;
    }
    t = kiln_target_find(argv[1]);
    check_case("compile matrix %s", argv[1]);
    if (!t) {
        check_fail_(__FILE__, __LINE__, "unknown target %s", argv[1]);
        return check_finish("test_compile_matrix");
    }

    if (t->vendor == KILN_VENDOR_NVIDIA) {
        if (kiln_cuda_driver()->load_compiler() != KILN_OK) {
            check_skip_tool("%s: NVRTC not found (%s); it comes with the CUDA toolkit "
                            "(libnvrtc.so), or point KILN_NVRTC_PATH at it",
                            t->name, kiln_last_error());
            return check_finish("test_compile_matrix");
        }
    } else {
        char compiler[256] = "", scratch[1024];
        int ok;
        snprintf(scratch, sizeof scratch, "%s%c.probe", argv[2], kiln_fs_sep());
        /* Ask the compiler itself: a probe kernel compiled with --offload-arch=<target>. */
        ok = kiln_aot_amd_compiler_supports(t->name, scratch, compiler, sizeof compiler);
        if (ok < 0) {
            check_skip_tool("%s: no clang found (Debian: apt-get install clang-19 lld-19 "
                            "llvm-19, or set KILN_CLANG)", t->name);
            return check_finish("test_compile_matrix");
        }
        if (ok == 0) {
            /* A target no packaged compiler knows yet (KILN_OPTIONAL_TARGETS: gfx950 needs
             * LLVM 20) stays a skip even in strict mode; any other is a missing tool. */
            if (optional_target(t->name))
                check_note_skip("%s: %s (%s) does not accept --offload-arch=%s, and no "
                                "packaged clang does yet", t->name, compiler,
                                KILN_TEST_CLANG_VERSION, t->name);
            else
                check_skip_tool("%s: %s (%s) does not accept --offload-arch=%s (Debian: "
                                "apt-get install clang-19 lld-19 llvm-19, or set KILN_CLANG)",
                                t->name, compiler, KILN_TEST_CLANG_VERSION, t->name);
            return check_finish("test_compile_matrix");
        }
    }

    st = kiln_aot_build_filtered(t->name, argv[2], 0, filter, progress, NULL);
    CHECK_OK(st);

    expected = 0;
    {
        size_t n = kiln_gpu_variant_list(t, NULL, 0);
        kiln_gpu_variant *v = calloc(n, sizeof *v);
        kiln_gpu_variant_list(t, v, n);
        for (size_t i = 0; i < n; ++i) {
            char key[128];
            kiln_gpu_variant_key(&v[i], key, sizeof key);
            if (!filter || strstr(key, filter)) ++expected;
        }
        free(v);
    }
    built = manifest_objects(argv[2], &missing);
    {
        size_t tensor = 0;
        CHECK_EQ(tensor_objects_with_stack(argv[2], &tensor), 0);
        if (tensor) printf("%s: %zu tensor-tier objects, none with a stack frame\n", t->name,
                           tensor);
    }
    CHECK_EQ(built, expected);
    CHECK_EQ(missing, 0);
    check_note_ran();
    printf("%s: %zu of %zu variants built and within limits (shared <= %lld bytes, registers "
           "<= %d, wave%d)\n",
           t->name, built, expected, (long long)t->shared_static_bytes, (int)t->max_registers,
           (int)t->wave_size);
    return check_finish("test_compile_matrix");
}
