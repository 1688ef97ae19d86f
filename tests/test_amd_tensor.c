/*
 * The AMD tensor tier's dispatch and compile path, no AMD GPU needed:
 *  - auto picks the tensor tier on devices that describe themselves as gfx1151, gfx1201 and
 *    gfx942 (the target names a HIP runtime reports, feature suffixes included), each with
 *    its instruction family, source file, options and block size; and not where it cannot;
 *  - the JIT path hands hipRTC (a capturing stand-in driver here) exactly the source text
 *    and options that the ahead-of-time clang build compiled (its OUT/.src/ file and the
 *    manifest's options), so the code CI compiles for the seven targets is the code a user's
 *    first call compiles.
 * The second part needs clang (exit 77 without it; KILN_TEST_STRICT=1 makes that a failure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "manifest_text.h"
#include "gpu/aot.h"
#include "gpu/gpu.h"
#include "gpu/kernel_source.h"
#include "gpu/targets.h"
#include "gpu/variants.h"
#include "helpers/stand_in_rtc.h"
#include "platform/platform.h"

static void problem(kiln_attn_problem *p, int64_t head_dim)
{
    memset(p, 0, sizeof *p);
    p->mode = KILN_MODE_FIXED;
    p->dtype = KILN_BF16;
    p->head_dim = head_dim;
    p->heads_q = p->heads_kv = 8;
    p->causal = 1;
    p->window_left = -1;
    p->window_right = 0;
    p->k = p->v = (const void *)(uintptr_t)4096; /* 16-byte aligned device addresses */
    p->k_stride_row = p->v_stride_row = 8 * head_dim;
    p->k_stride_head = p->v_stride_head = head_dim;
}

typedef struct device {
    const char *reported; /* what the runtime calls the device */
    int32_t family;
    int32_t threads;
} device;

static const device kDevices[] = {
    {"gfx1151", KILN_WM_GFX11, 128},
    {"gfx1201", KILN_WM_GFX12, 128},
    {"gfx942:sramecc+:xnack-", KILN_WM_MFMA, 256},
};

static void auto_dispatch(void)
{
    check_case("auto picks the AMD tensor tier");
    kiln_env_set("KILN_GPU_TIER", "");
    for (size_t i = 0; i < sizeof kDevices / sizeof kDevices[0]; ++i) {
        const kiln_target *t = kiln_target_find(kDevices[i].reported);
        kiln_attn_problem p;
        kiln_gpu_variant v;
        kiln_gpu_defines defs;
        char key[128], want[48];
        int n, found = 0;
        CHECK(t != NULL);
        if (!t) continue;
        problem(&p, 128);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_AUTO, &v));
        CHECK_STR_EQ(kiln_gpu_variant_tier_name(&v), "tensor");
        CHECK_EQ(v.family, kDevices[i].family);
        CHECK_STR_EQ(kiln_gpu_variant_file(&v), "attention_wmma.cu");
        CHECK_EQ(kiln_gpu_variant_threads(&v), kDevices[i].threads);
        kiln_gpu_variant_key(&v, key, sizeof key);
        CHECK_STR_EQ(key, "attn_fwd.bf16.d128.causal.fixed.tensor");
        n = kiln_gpu_variant_defines(&v, &defs);
        snprintf(want, sizeof want, "-DKILN_WM_FAMILY=%d", (int)kDevices[i].family);
        for (int d = 0; d < n; ++d) found |= strcmp(defs.ptr[d], want) == 0;
        CHECK(found);
        {
            kiln_attn_args a;
            unsigned grid[3], block[3];
            p.batch = 1;
            p.seqlen_q = p.seqlen_k = p.rows_q = 100;
            kiln_gpu_attn_args(&a, &p, 1, NULL);
            CHECK_OK(kiln_gpu_attn_grid_for(&v, &a, grid, block));
            CHECK_EQ(block[0], (unsigned)kDevices[i].threads);
            CHECK_EQ(grid[0], 2u); /* ceil(100 queries x 1 query head per KV head / 64) */
            CHECK_EQ(grid[1], 8u); /* KV heads */
        }

        /* What the tier does not cover stays generic under auto, and forcing says why. */
        problem(&p, 96);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_AUTO, &v));
        CHECK_STR_EQ(kiln_gpu_variant_tier_name(&v), "generic");
        CHECK_EQ(v.family, 0);
        problem(&p, 128);
        p.k_stride_row = 8 * 128 + 4; /* rows no longer 16-byte aligned */
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_AUTO, &v));
        CHECK_STR_EQ(kiln_gpu_variant_tier_name(&v), "generic");
        CHECK_STATUS(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_WANT_TENSOR, &v),
                     KILN_UNSUPPORTED);
        CHECK_STR_CONTAINS(kiln_last_error(), "16 bytes");
        problem(&p, 128);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_WANT_GENERIC, &v));
        CHECK_STR_EQ(kiln_gpu_variant_tier_name(&v), "generic");
    }
    {
        /* A target without matrix instructions in the table: generic, with the reason. */
        kiln_attn_problem p;
        kiln_gpu_variant v;
        char why[256];
        problem(&p, 128);
        CHECK(!kiln_gpu_tensor_covers(&p, NULL, why, sizeof why));
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, NULL, KILN_GPU_TIER_AUTO, &v));
        CHECK_STR_EQ(kiln_gpu_variant_tier_name(&v), "generic");
    }
    check_note_ran();
}

/* ---- the hipRTC path ---------------------------------------------------------------- */

static struct {
    const char *source;
    char arch[64];
    char options[256];
    int calls;
} g_seen;

/* A stand-in hipRTC: records the source it is handed and the options of the compile (the
 * first is the target, --offload-arch=<name>), and returns a 16-byte image. */
static int rtc_version(int *major, int *minor) { *major = 6, *minor = 4; return 0; }
static int rtc_create(void **prog, const char *src, const char *name, int num_headers,
                      const char *const *headers, const char *const *include_names)
{
    (void)name, (void)num_headers, (void)headers, (void)include_names;
    g_seen.source = src;
    *prog = &g_seen;
    return 0;
}
static int rtc_destroy(void **prog) { *prog = NULL; return 0; }
static int rtc_compile(void *prog, int num_options, const char *const *options)
{
    (void)prog;
    const char *eq = num_options > 0 ? strchr(options[0], '=') : NULL;
    snprintf(g_seen.arch, sizeof g_seen.arch, "%s", eq ? eq + 1 : "");
    g_seen.options[0] = '\0';
    for (int i = 1; i < num_options; ++i) {
        size_t used = strlen(g_seen.options);
        snprintf(g_seen.options + used, sizeof g_seen.options - used, "%s%s", i > 1 ? " " : "",
                 options[i]);
    }
    ++g_seen.calls;
    return 0;
}
static int rtc_log_size(void *prog, size_t *size) { (void)prog; *size = 0; return 0; }
static int rtc_log(void *prog, char *log) { (void)prog, (void)log; return 0; }
static kiln_rtc_entries stand_in_rtc = {rtc_version, rtc_create, rtc_destroy, rtc_compile,
                                        rtc_log_size, rtc_log, rtc_code_size, rtc_code,
                                        rtc_error};

/* The "options" of variant key in OUT/manifest.json. */
static int manifest_options(const char *dir, const char *key, char *buf, size_t cap)
{
    char pat[192];
    const char *p, *o, *end;
    char *text = tc_manifest_text(dir);
    if (!text) return 0;
    snprintf(pat, sizeof pat, "\"%s\"", key);
    p = strstr(text, pat);
    end = p ? strchr(p, '}') : NULL;
    o = p ? strstr(p, "\"options\":") : NULL;
    buf[0] = '\0';
    if (o && end && o < end) {
        o = strchr(o + 10, '"');
        if (o) {
            size_t n = 0;
            for (++o; *o && *o != '"' && n + 1 < cap; ++o) buf[n++] = *o;
            buf[n] = '\0';
        }
    }
    free(text);
    return buf[0] != '\0';
}

static void hiprtc_path(void)
{
    kiln_gpu_driver fake;
    char scratch[128], compiler[256], version[64], dir[32];
    check_case("the source and options hipRTC gets are the ones clang compiled");
    snprintf(dir, sizeof dir, "amd_tensor_aot");
    snprintf(scratch, sizeof scratch, "%s%c.probe", dir, kiln_fs_sep());
    if (kiln_aot_amd_compiler_supports("gfx1151", scratch, compiler, sizeof compiler) != 1) {
        check_note_skip("no clang that compiles for gfx1151 (set KILN_CLANG)");
        return;
    }
    memset(&fake, 0, sizeof fake);
    fake.kind = KILN_BACKEND_HIP;
    fake.name = "hip";
    fake.compiler = "hiprtc";
    fake.compiler_label = "hipRTC";
    fake.arch_option = "--offload-arch=";
    fake.image_label = "code object";
    fake.rtc = &stand_in_rtc;
    fake.load_compiler = rtc_load;
    /* A compiler version no cache entry has, so the cache always calls the compiler. */
    snprintf(version, sizeof version, "capture-%llu", (unsigned long long)kiln_time_ns());
    for (size_t i = 0; i < sizeof kDevices / sizeof kDevices[0]; ++i) {
        const kiln_target *t = kiln_target_find(kDevices[i].reported);
        kiln_attn_problem p;
        kiln_gpu_variant v;
        char key[128], src_path[512], err[256], options[256];
        void *image = NULL, *built = NULL;
        size_t len = 0, built_len = 0;
        const char *text = NULL;
        size_t text_len = 0;
        problem(&p, 128);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_AUTO, &v));
        kiln_gpu_variant_key(&v, key, sizeof key);
        memset(&g_seen, 0, sizeof g_seen);
        CHECK_OK(kiln_gpu_variant_image(&fake, kDevices[i].reported, version, &v, &image, &len,
                                        NULL));
        free(image);
        CHECK_EQ(g_seen.calls, 1);
        CHECK_STR_EQ(g_seen.arch, kDevices[i].reported);

        /* The ahead-of-time build CI runs, for this one variant. */
        CHECK_OK(kiln_aot_build_filtered(t->name, dir, 1, key, NULL, NULL));
        snprintf(src_path, sizeof src_path, "%s%c.src%c%s", dir, kiln_fs_sep(), kiln_fs_sep(),
                 kiln_gpu_variant_file(&v));
        CHECK(kiln_fs_read(src_path, &built, &built_len, err, sizeof err) == 0);
        CHECK_OK(kiln_kernel_source(kiln_gpu_variant_file(&v), &text, &text_len));
        CHECK(g_seen.source == text);
        CHECK_EQ(built_len, text_len);
        CHECK(built && g_seen.source && built_len == text_len &&
              memcmp(built, g_seen.source, built_len) == 0);
        free(built);
        CHECK(manifest_options(dir, key, options, sizeof options));
        CHECK_STR_EQ(g_seen.options, options);
        printf("%s (%s): hipRTC would get %s [%s], as clang compiled it\n", key,
               kDevices[i].reported, kiln_gpu_variant_file(&v), options);
    }
    check_note_ran();
}

int main(void)
{
    auto_dispatch();
    hiprtc_path();
    return check_finish("test_amd_tensor");
}
