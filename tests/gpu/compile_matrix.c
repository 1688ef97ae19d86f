/*
 * Compile matrix for one target (no GPU needed): every variant compiled by kiln_aot_build
 * (NVRTC for sm_*, clang for gfx*), every object's resources checked against the target
 * table, the manifest complete, and no tensor- or hopper-tier object with a stack frame
 * (those kernels keep their fragments in registers; a stack there means spills). Every
 * sm_90 compile also fails where ptxas serialized the warpgroup MMAs (src/gpu/driver.c).
 * AMD tensor-tier objects are also disassembled (KILN_OBJDUMP, llvm-objdump): the family's
 * matrix instructions (v_wmma_* on gfx11 / gfx12, v_mfma_* on gfx9) must be there and no
 * scratch access; each must leave at least 2 waves per SIMD, and the occupancy kiln
 * computes from the target table is compared with clang's own report
 * (-Rpass-analysis=kernel-resource-usage) for one variant. A line per object gives LDS,
 * VGPRs (the metadata's count: AGPRs included on CDNA), AGPRs and waves per SIMD.
 *   test_compile_matrix TARGET OUT_DIR [KEY_FILTER]
 * Exit 77 (skipped) when the compiler is absent or does not accept the target (asked with a
 * probe kernel, not guessed from its name); under KILN_TEST_STRICT=1 that is a failure,
 * except for a target listed in KILN_OPTIONAL_TARGETS (one no packaged compiler knows yet).
 */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "manifest_text.h"
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
    size_t n = 0;
    *missing = 0;
    char *text = tc_manifest_text(out_dir);
    if (!text) return 0;
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

/* Tensor- and hopper-tier objects in the manifest with a stack frame (spills; printed);
 * *count gets how many such objects there are. Head dim 64 causal in three consumers kept
 * an 8-byte one (one register spilled outside the key loop) until the output's reordering
 * (kernels/attention_hopper.cu: row sums and staging before the item is worked out again,
 * the LSE only where it is stored) freed that register; none is allowed now. */
static size_t tensor_objects_with_stack(const char *out_dir, size_t *count)
{
    size_t bad = 0;
    *count = 0;
    char *text = tc_manifest_text(out_dir);
    if (!text) return 0;
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
        {
            const size_t kl = strlen(key);
            const int tensor = kl >= 7 && strcmp(key + kl - 7, ".tensor") == 0;
            const int hopper = kl >= 7 && strcmp(key + kl - 7, ".hopper") == 0;
            if (!tensor && !hopper) continue;
        }
        ++*count;
        if (st) sscanf(st + strlen("\"stack_bytes\":"), " %lld", &stack);
        if (rg) sscanf(rg + strlen("\"registers\":"), " %lld", &regs);
        if (sh) sscanf(sh + strlen("\"shared_bytes\":"), " %lld", &shared);
        if (dy) sscanf(dy + strlen("\"dynamic_shared_bytes\":"), " %lld", &dyn);
        printf("%s: %lld registers, %lld bytes static + %lld dynamic shared memory, stack %lld\n",
               key, regs, shared, dyn, stack);
        if (stack != 0) {
            printf("%s: stack frame of %lld bytes (spills; none allowed)\n", key, stack);
            ++bad;
        }
    }
    free(text);
    return bad;
}

#ifdef _WIN32
#define popen _popen
#define pclose _pclose
#endif

/* The string / integer value of "name" in the JSON object text obj (up to its end). */
static int json_str(const char *obj, const char *end, const char *name, char *buf, size_t cap)
{
    char pat[64];
    const char *p;
    size_t n = 0;
    snprintf(pat, sizeof pat, "\"%s\":", name);
    p = strstr(obj, pat);
    if (!p || p > end) return 0;
    p = strchr(p + strlen(pat), '"');
    if (!p) return 0;
    for (++p; *p && *p != '"' && n + 1 < cap; ++p) buf[n++] = *p;
    buf[n] = '\0';
    return 1;
}
static long long json_int(const char *obj, const char *end, const char *name)
{
    char pat[64];
    const char *p;
    snprintf(pat, sizeof pat, "\"%s\":", name);
    p = strstr(obj, pat);
    if (!p || p > end) return -1;
    return strtoll(p + strlen(pat), NULL, 10);
}

/* Lines of cmd's output (stdout and stderr) containing needle; -1 if it cannot run. When
 * value is not NULL, the integer after the first match is stored there. */
static long count_output(const char *cmd, const char *needle, long *value)
{
    char line[4096];
    long n = 0;
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        char *at = strstr(line, needle);
        if (!at) continue;
        if (value && n == 0) *value = strtol(at + strlen(needle), NULL, 10);
        ++n;
    }
    return pclose(f) == 0 ? n : -1;
}

/* The AMD tensor-tier checks above, on every such object of the manifest. */
static void amd_tensor_objects(const kiln_target *t, const char *out_dir)
{
    char path[1024], err[256], objdump[256], clang[256];
    void *data = NULL;
    size_t len = 0, count = 0;
    int compared = 0;
    const char *mnemonic = t->matrix == KILN_MATRIX_MFMA ? "v_mfma_" : "v_wmma_";
    if (!kiln_env_get("KILN_OBJDUMP", objdump, sizeof objdump) || !objdump[0]) {
        check_skip_tool("%s: no llvm-objdump found (Debian: apt-get install llvm-19, or set KILN_OBJDUMP)", t->name);
        return;
    }
    if (!kiln_env_get("KILN_CLANG", clang, sizeof clang) || !clang[0])
        snprintf(clang, sizeof clang, "clang");
    snprintf(path, sizeof path, "%s%cmanifest.json", out_dir, kiln_fs_sep());
    CHECK(kiln_fs_read(path, &data, &len, err, sizeof err) == 0);
    char *text = realloc(data, len + 1);
    if (!text) {
        free(data);
        return;
    }
    text[len] = '\0';
    printf("%-8s %-44s %7s %5s %5s %11s %s\n", "target", "variant", "LDS", "VGPRs", "AGPRs",
           "waves/SIMD", "matrix instructions");
    for (char *p = strstr(text, "\"target\":"); p; p = strstr(p + 1, "\"target\":")) {
        char key[160], file[256], options[256], source[64], cmd[2048];
        const char *end = strchr(p, '}');
        long long vgprs, agprs, lds, waves;
        long mm, scratch;
        if (!end || !json_str(p, end, "variant", key, sizeof key) ||
            !json_str(p, end, "file", file, sizeof file) ||
            !json_str(p, end, "options", options, sizeof options) ||
            !json_str(p, end, "source", source, sizeof source))
            continue;
        if (strlen(key) < 7 || strcmp(key + strlen(key) - 7, ".tensor") != 0) continue;
        ++count;
        vgprs = json_int(p, end, "registers");
        agprs = json_int(p, end, "agprs");
        lds = json_int(p, end, "shared_bytes");
        waves = json_int(p, end, "waves_per_simd");
        snprintf(cmd, sizeof cmd, "\"%s\" -d \"%s%c%s\" 2>&1", objdump, out_dir, kiln_fs_sep(),
                 file);
        mm = count_output(cmd, mnemonic, NULL);
        scratch = count_output(cmd, "scratch_", NULL);
        printf("%-8s %-44s %7lld %5lld %5lld %11lld %ld %s*\n", t->name, key, lds, vgprs, agprs,
               waves, mm, mnemonic);
        if (mm <= 0)
            check_fail_(__FILE__, __LINE__, "%s for %s: no %s* instruction in the disassembly",
                        key, t->name, mnemonic);
        if (scratch != 0)
            check_fail_(__FILE__, __LINE__, "%s for %s: %ld scratch instructions", key,
                        t->name, scratch);
        if (waves < 2)
            check_fail_(__FILE__, __LINE__, "%s for %s: %lld waves per SIMD (at least 2)", key,
                        t->name, waves);
        check_state_.checks += 3;
        if (!compared) {
            /* clang's occupancy for the same source and options as the build used. */
            long occ = -1, vg = -1, ag = 0;
            compared = 1;
            snprintf(cmd, sizeof cmd,
                     "\"%s\" -x hip --offload-arch=%s -nogpulib -nogpuinc --cuda-device-only "
                     "--no-gpu-bundle-output -O3 %s -Rpass-analysis=kernel-resource-usage -o "
                     "\"%s%c.occupancy.o\" \"%s%c.src%c%s\" 2>&1",
                     clang, t->compile_arch, options, out_dir, kiln_fs_sep(), out_dir,
                     kiln_fs_sep(), kiln_fs_sep(), source);
            CHECK(count_output(cmd, "Occupancy [waves/SIMD]: ", &occ) == 1);
            CHECK(count_output(cmd, " VGPRs: ", &vg) == 1);
            CHECK(count_output(cmd, " AGPRs: ", &ag) == (t->matrix == KILN_MATRIX_MFMA ? 1 : 0));
            printf("%s: clang reports %ld VGPRs, %ld AGPRs and %ld waves per SIMD for %s; the "
                   "target table gives %lld\n", t->name, vg, ag, occ, key, waves);
            CHECK_EQ(occ, waves);
            /* The metadata's count: on CDNA the AGPRs follow the VGPRs rounded up to 4. */
            CHECK_EQ(ag > 0 ? (vg + 3) / 4 * 4 + ag : vg, vgprs);
        }
    }
    if (count) printf("%s: %zu AMD tensor-tier objects disassembled\n", t->name, count);
    free(text);
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
        const kiln_gpu_driver *cuda = kiln_gpu_driver_for(KILN_BACKEND_CUDA);
        if (!cuda) {
            check_note_skip("%s: this build leaves the cuda backend out", t->name);
            return check_finish("test_compile_matrix");
        }
        if (cuda->load_compiler() != KILN_OK) {
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
        const size_t over = tensor_objects_with_stack(argv[2], &tensor);
        CHECK_EQ(over, 0);
        if (tensor && over == 0)
            printf("%s: %zu tensor / hopper-tier objects, none with a stack frame\n", t->name,
                   tensor);
    }
    CHECK_EQ(built, expected);
    CHECK_EQ(missing, 0);
    if (t->vendor == KILN_VENDOR_AMD && st == KILN_OK) amd_tensor_objects(t, argv[2]);
    check_note_ran();
    printf("%s: %zu of %zu variants built and within limits (shared <= %lld bytes, registers "
           "<= %d, wave%d)\n",
           t->name, built, expected, (long long)t->shared_static_bytes, (int)t->max_registers,
           (int)t->wave_size);
    return check_finish("test_compile_matrix");
}
