/* The GPU target table, GPU_ARCHS / CU_NUM parsing, WGP-to-CU conversion and the generic
 * variant set (src/gpu/targets.h, src/gpu/variants.h). No GPU needed. */
#include <string.h>

#include "test_check.h"
#include "gpu/code_object.h"
#include "gpu/kernel_source.h"
#include "gpu/targets.h"
#include "gpu/variants.h"
#include "platform/platform.h"

static void test_defaults(void)
{
    static const struct {
        const char *name;
        int cus;
        const char *product;
        int wave;
        const char *family;
    } want[] = {
        {"gfx1100", 96, "RX 7900 XTX", 32, "rdna3"}, {"gfx1101", 60, "RX 7800 XT", 32, "rdna3"},
        {"gfx1102", 32, "RX 7600", 32, "rdna3"},     {"gfx1103", 12, "Radeon 780M", 32, "rdna3"},
        {"gfx1151", 40, "Radeon 8060S", 32, "rdna3.5"}, {"gfx1201", 64, "RX 9070 XT", 32, "rdna4"},
        {"gfx942", 304, "MI300X", 64, "cdna3"},      {"gfx950", 256, "MI350", 64, "cdna4"},
        {"sm_90", 132, "H100 SXM / H200", 32, "hopper"}, {"sm_80", 108, "A100", 32, "ampere"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        const kiln_target *t = kiln_target_find(want[i].name);
        check_case("default %s", want[i].name);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK_STR_EQ(t->name, want[i].name);
        CHECK_EQ(t->default_cus, want[i].cus);
        CHECK_STR_EQ(t->product, want[i].product);
        CHECK_EQ(t->wave_size, want[i].wave);
        CHECK_STR_EQ(t->family, want[i].family);
        check_note_ran();
    }
    check_case("limits");
    CHECK_EQ(kiln_target_find("gfx1201")->shared_max_bytes, 65536);
    CHECK_EQ(kiln_target_find("gfx1100")->shared_static_bytes, 65536);
    CHECK_EQ(kiln_target_find("sm_90")->shared_static_bytes, 49152);
    CHECK_STR_EQ(kiln_target_find("sm_90")->compile_arch, "sm_90a");
    CHECK_STR_EQ(kiln_matrix_kind_name(kiln_target_find("sm_90")->matrix), "wgmma");
    CHECK_STR_EQ(kiln_matrix_kind_name(kiln_target_find("gfx942")->matrix), "mfma");
    CHECK_STR_EQ(kiln_matrix_kind_name(kiln_target_find("gfx1151")->matrix), "wmma-gfx11");
    CHECK_STR_EQ(kiln_matrix_kind_name(kiln_target_find("gfx1201")->matrix), "wmma-gfx12");
    CHECK_STR_EQ(kiln_matrix_kind_name(kiln_target_find("sm_80")->matrix), "mma.sync");

    /* Every row is complete. */
    size_t n;
    const kiln_target *all = kiln_targets(&n);
    CHECK_GE(n, 14);
    for (size_t i = 0; i < n; ++i) {
        check_case("row %s", all[i].name);
        CHECK(all[i].wave_size == 32 || all[i].wave_size == 64);
        CHECK_GT(all[i].shared_static_bytes, 0);
        CHECK_GE(all[i].shared_max_bytes, all[i].shared_static_bytes);
        CHECK_GT(all[i].max_registers, 0);
        CHECK_GT(all[i].default_cus, 0);
        CHECK(all[i].product && all[i].product[0]);
        CHECK(all[i].compile_arch && all[i].compile_arch[0]);
        CHECK(kiln_target_find(all[i].name) == &all[i]);
    }
}

static void test_lookup(void)
{
    check_case("lookup");
    CHECK(kiln_target_find("gfx942:sramecc+:xnack-") == kiln_target_find("gfx942"));
    CHECK(kiln_target_find("  GFX1151 ") == kiln_target_find("gfx1151"));
    CHECK(kiln_target_find("sm_90a") == kiln_target_find("sm_90"));
    CHECK(kiln_target_find("gfx9999") == NULL);
    CHECK(kiln_target_find("") == NULL);
    CHECK(kiln_target_find(NULL) == NULL);
}

static void test_gpu_archs(void)
{
    const kiln_target *t[32];
    size_t n = 0;

    check_case("every entry honoured");
    CHECK_OK(kiln_targets_parse("gfx1100;gfx1101;gfx1151;gfx1201", t, 32, &n));
    CHECK_EQ(n, 4);
    if (n == 4) {
        CHECK_STR_EQ(t[0]->name, "gfx1100");
        CHECK_STR_EQ(t[1]->name, "gfx1101");
        CHECK_STR_EQ(t[2]->name, "gfx1151");
        CHECK_STR_EQ(t[3]->name, "gfx1201");
    }

    check_case("commas, whitespace, empty entries, suffixes, duplicates");
    CHECK_OK(kiln_targets_parse(" sm_80 , sm_90a;;gfx942:xnack- ,sm_80; gfx942 ", t, 32, &n));
    CHECK_EQ(n, 3);
    if (n == 3) {
        CHECK_STR_EQ(t[0]->name, "sm_80");
        CHECK_STR_EQ(t[1]->name, "sm_90");
        CHECK_STR_EQ(t[2]->name, "gfx942");
    }

    check_case("every known target at once");
    {
        size_t count, i;
        const kiln_target *all = kiln_targets(&count);
        char list[1024] = "";
        for (i = 0; i < count; ++i) {
            strcat(list, all[i].name);
            strcat(list, i % 2 ? ";" : ",");
        }
        CHECK_OK(kiln_targets_parse(list, t, 32, &n));
        CHECK_EQ(n, count);
        for (i = 0; i < n && i < count; ++i) CHECK(t[i] == &all[i]);
    }

    check_case("unknown target");
    CHECK_STATUS(kiln_targets_parse("gfx1100;gfx1234", t, 32, &n), KILN_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(kiln_last_error(), "gfx1234");
    CHECK_STR_CONTAINS(kiln_last_error(), "known: sm_80");
    CHECK_STR_CONTAINS(kiln_last_error(), "gfx1201");
    CHECK_EQ(n, 0);

    check_case("empty list");
    CHECK_STATUS(kiln_targets_parse(" ; , ", t, 32, &n), KILN_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_targets_parse("", t, 32, &n), KILN_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_targets_parse("gfx1100;gfx1101", t, 1, &n), KILN_INVALID_ARGUMENT);
    check_note_ran();
}

static void test_cu(void)
{
    const kiln_target *rx7800 = kiln_target_find("gfx1101");
    const kiln_target *mi300 = kiln_target_find("gfx942");
    int64_t cus = 0;
    const char *src = NULL;

    check_case("WGP to CU");
    CHECK_EQ(kiln_target_wgp_to_cu(rx7800, 30), 60);
    CHECK_EQ(kiln_target_wgp_to_cu(kiln_target_find("gfx1201"), 32), 64);
    CHECK_EQ(kiln_target_wgp_to_cu(mi300, 304), 304);
    CHECK_EQ(kiln_target_wgp_to_cu(kiln_target_find("sm_90"), 132), 132);

    check_case("CU_NUM parse");
    CHECK_OK(kiln_cu_num_parse(" 48 ", &cus));
    CHECK_EQ(cus, 48);
    CHECK_STATUS(kiln_cu_num_parse("0", &cus), KILN_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_cu_num_parse("-3", &cus), KILN_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_cu_num_parse("12x", &cus), KILN_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_cu_num_parse("", &cus), KILN_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(kiln_last_error(), "CU_NUM");

    check_case("CU count sources");
    kiln_env_set("CU_NUM", NULL);
    CHECK_OK(kiln_target_cu_count(rx7800, 0, &cus, &src));
    CHECK_EQ(cus, 60);
    CHECK_STR_EQ(src, "default");
    CHECK_OK(kiln_target_cu_count(rx7800, 54, &cus, &src));
    CHECK_EQ(cus, 54);
    CHECK_STR_EQ(src, "device");
    kiln_env_set("CU_NUM", "20");
    CHECK_OK(kiln_target_cu_count(rx7800, 54, &cus, &src));
    CHECK_EQ(cus, 20);
    CHECK_STR_EQ(src, "CU_NUM");
    kiln_env_set("CU_NUM", "lots");
    CHECK_STATUS(kiln_target_cu_count(rx7800, 54, &cus, &src), KILN_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(kiln_last_error(), "lots");
    kiln_env_set("CU_NUM", NULL);
    check_note_ran();
}

static int in_set(const kiln_gpu_variant *set, size_t n, const kiln_gpu_variant *v)
{
    char a[128], b[128];
    kiln_gpu_variant_key(v, a, sizeof a);
    for (size_t i = 0; i < n; ++i) {
        kiln_gpu_variant_key(&set[i], b, sizeof b);
        if (strcmp(a, b) == 0) return 1;
    }
    return 0;
}

static kiln_attn_problem problem(kiln_attn_mode mode, int64_t head_dim, int causal, int64_t wl,
                                 int64_t wr)
{
    kiln_attn_problem p;
    memset(&p, 0, sizeof p);
    p.mode = mode;
    p.dtype = KILN_BF16;
    p.head_dim = head_dim;
    p.causal = causal;
    p.window_left = wl;
    p.window_right = wr;
    return p;
}

static void test_variants(void)
{
    static kiln_gpu_variant set[512];
    size_t count;
    const kiln_target *all = kiln_targets(&count);
    for (size_t ti = 0; ti < count; ++ti) {
        const kiln_target *t = &all[ti];
        size_t n = kiln_gpu_variant_list(t, set, 512);
        kiln_gpu_variant v;
        check_case("variants on %s", t->name);
        CHECK_GT(n, 0);
        CHECK_LE(n, 512);
        /* Fixed, varlen, paged decode, batch prefill (paged + cu_seqlens_q: the same
         * variant), each with its split-KV combine, for every head dim the API allows. */
        for (int64_t d = 8; d <= 256; d += 8) {
            static const kiln_attn_mode modes[] = {KILN_MODE_FIXED, KILN_MODE_VARLEN,
                                                   KILN_MODE_PAGED};
            for (int m = 0; m < 3; ++m) {
                kiln_attn_problem p = problem(modes[m], d, 0, -1, -1);
                CHECK_OK(kiln_gpu_variant_for_attn(&p, &v));
                CHECK(in_set(set, n, &v));
                CHECK_GE(v.head_dim, d);
                p = problem(modes[m], d, 1, -1, 0);
                CHECK_OK(kiln_gpu_variant_for_attn(&p, &v));
                CHECK_EQ(v.mask, KILN_MASK_CAUSAL);
                CHECK(in_set(set, n, &v));
                p = problem(modes[m], d, 0, 64, 0);
                CHECK_OK(kiln_gpu_variant_for_attn(&p, &v));
                CHECK_EQ(v.mask, KILN_MASK_WINDOW);
                CHECK(in_set(set, n, &v));
            }
            CHECK_OK(kiln_gpu_variant_for_combine(KILN_F16, d, &v));
            CHECK(in_set(set, n, &v));
            /* Where the tensor tier covers a head dim, its variant is listed too. */
            {
                kiln_attn_problem p = problem(KILN_MODE_FIXED, d, 1, -1, 0);
                char why[256];
                const int covered = kiln_gpu_tensor_covers(&p, t, why, sizeof why);
                if (strcmp(t->name, "sm_90") == 0) CHECK(covered); /* every head dim */
                if (covered) {
                    CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_WANT_TENSOR,
                                                            &v));
                    CHECK_EQ(v.tier, KILN_GPU_TIER_ID_TENSOR);
                    CHECK_GE(v.head_dim, d);
                    CHECK(in_set(set, n, &v));
                }
            }
        }
        for (int act = 0; act < 3; ++act)
            for (int dt = 0; dt < 3; ++dt) {
                CHECK_OK(kiln_gpu_variant_for_act((kiln_activation)act, (kiln_dtype)dt, &v));
                CHECK(in_set(set, n, &v));
            }
        check_note_ran();
    }

    check_case("keys and defines");
    {
        kiln_attn_problem p = problem(KILN_MODE_PAGED, 72, 1, -1, 0);
        kiln_gpu_variant v;
        kiln_gpu_defines defs;
        char key[128];
        CHECK_OK(kiln_gpu_variant_for_attn(&p, &v));
        kiln_gpu_variant_key(&v, key, sizeof key);
        CHECK_STR_EQ(key, "attn_fwd.bf16.d128.causal.paged.generic");
        CHECK_EQ(kiln_gpu_variant_defines(&v, &defs), 4);
        CHECK_STR_EQ(defs.ptr[0], "-DKILN_DTYPE=2");
        CHECK_STR_EQ(defs.ptr[1], "-DKILN_HEAD_DIM=128");
        CHECK_STR_EQ(defs.ptr[2], "-DKILN_MASK=1");
        CHECK_STR_EQ(defs.ptr[3], "-DKILN_MODE=2");
        CHECK_STR_EQ(kiln_gpu_variant_kernel(&v), "kiln_attn_fwd");
        CHECK_OK(kiln_gpu_variant_for_combine(KILN_F16, 64, &v));
        kiln_gpu_variant_key(&v, key, sizeof key);
        CHECK_STR_EQ(key, "attn_combine.f16.d64.generic");
        CHECK_OK(kiln_gpu_variant_for_act(KILN_ACT_GELU_TANH, KILN_F32, &v));
        kiln_gpu_variant_key(&v, key, sizeof key);
        CHECK_STR_EQ(key, "gelu_tanh_and_mul.f32.generic");

        p = problem(KILN_MODE_FIXED, 264, 0, -1, -1);
        CHECK_STATUS(kiln_gpu_variant_for_attn(&p, &v), KILN_UNSUPPORTED);
        CHECK_STR_CONTAINS(kiln_last_error(), "264");
        p = problem(KILN_MODE_FIXED, 64, 0, -1, -1);
        p.dtype = KILN_F32;
        CHECK_STATUS(kiln_gpu_variant_for_attn(&p, &v), KILN_UNSUPPORTED);
    }

    check_case("embedded sources resolve");
    {
        static const char *files[] = {"attention.cu", "combine.cu", "activation.cu"};
        for (int i = 0; i < 3; ++i) {
            const char *text = NULL;
            size_t len = 0;
            char hash[17];
            CHECK_OK(kiln_kernel_source(files[i], &text, &len));
            CHECK(text && len > 1000);
            if (!text) continue;
            CHECK(strstr(text, "#include \"") == NULL);
            CHECK(strstr(text, "KILN_VENDOR_CUDA_H") != NULL);
            CHECK(strstr(text, "KILN_VENDOR_HIP_H") != NULL);
            CHECK(strstr(text, "typedef struct kiln_attn_args") != NULL);
            CHECK_OK(kiln_kernel_source_hash(files[i], hash));
            CHECK_EQ(strlen(hash), 16);
        }
        CHECK_STATUS(kiln_kernel_source("nope.cu", NULL, NULL), KILN_INTERNAL);
    }
}

/* The limits check of every AOT object (the gfx1201 story: 65,792 bytes of LDS where the
 * hardware has 65,536). */
static void test_resource_check(void)
{
    kiln_code_object_info info;
    const kiln_target *rdna4 = kiln_target_find("gfx1201");
    const kiln_target *hopper = kiln_target_find("sm_90");
    const char *key = "attn_fwd.bf16.d256.causal.paged.generic";

    check_case("resource check");
    memset(&info, 0, sizeof info);
    info.vendor = KILN_VENDOR_AMD;
    info.registers = 128;
    info.wave_size = 32;
    info.max_threads = 128;
    info.shared_bytes = 65536;
    CHECK_OK(kiln_code_object_check(rdna4, key, 128, &info));
    info.shared_bytes = 65792;
    CHECK_STATUS(kiln_code_object_check(rdna4, key, 128, &info), KILN_COMPILE_ERROR);
    CHECK_STR_CONTAINS(kiln_last_error(), key);
    CHECK_STR_CONTAINS(kiln_last_error(), "gfx1201");
    CHECK_STR_CONTAINS(kiln_last_error(), "65792");
    CHECK_STR_CONTAINS(kiln_last_error(), "65536");
    info.shared_bytes = 1024;
    info.wave_size = 64;
    CHECK_STATUS(kiln_code_object_check(rdna4, key, 128, &info), KILN_COMPILE_ERROR);
    CHECK_STR_CONTAINS(kiln_last_error(), "wave64");
    info.wave_size = 32;
    info.registers = 300;
    CHECK_STATUS(kiln_code_object_check(rdna4, key, 128, &info), KILN_COMPILE_ERROR);
    info.registers = 64;
    CHECK_STATUS(kiln_code_object_check(rdna4, key, 256, &info), KILN_COMPILE_ERROR);
    CHECK_STATUS(kiln_code_object_check(hopper, key, 128, &info), KILN_COMPILE_ERROR);

    info.vendor = KILN_VENDOR_NVIDIA;
    info.max_threads = 0;
    info.shared_bytes = 49152;
    CHECK_OK(kiln_code_object_check(hopper, key, 128, &info));
    info.shared_bytes = 49153;
    CHECK_STATUS(kiln_code_object_check(hopper, key, 128, &info), KILN_COMPILE_ERROR);
    info.shared_bytes = 0;
    info.registers = 255;
    CHECK_STATUS(kiln_code_object_check(hopper, key, 512, &info), KILN_COMPILE_ERROR);

    check_case("code object parsing rejects garbage");
    CHECK_STATUS(kiln_code_object_inspect("not an elf", 10, "k", &info), KILN_INVALID_ARGUMENT);
    {
        unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1};
        CHECK_STATUS(kiln_code_object_inspect(elf, sizeof elf, "k", &info),
                     KILN_INVALID_ARGUMENT);
    }
    check_note_ran();
}

int main(void)
{
    test_resource_check();
    test_defaults();
    test_lookup();
    test_gpu_archs();
    test_cu();
    test_variants();
    return check_finish("test_targets");
}
