#include "targets.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "platform/platform.h"

#define KIB 1024

/* NVIDIA: static shared memory stops at 48 KiB; the opt-in maximum is the CUDA
 * "shared memory per block optin" attribute of each compute capability. AMD: 64 KiB of
 * LDS per workgroup, 160 KiB on gfx950. CDNA's unified register file gives a wave up to
 * 512 VGPRs (architected + accumulation); RDNA addresses 256. CU defaults are the
 * products named beside them (for builds with no GPU present).
 * Occupancy columns (AMD): VGPR file per SIMD lane and granule as the AMDGPU backend of
 * LLVM 19 models them (AMDGPUBaseInfo getTotalNumVGPRs / getVGPRAllocGranule): CDNA 512
 * unified, granule 8; RDNA wave32 1536, granule 24 where the SIMD has the larger register
 * file (gfx1100, gfx1101, gfx1151, gfx1200, gfx1201: the "full VGPRs" feature), else 1024,
 * granule 16; at most 8 waves per SIMD on CDNA and 16 on RDNA; LDS 64 KiB per CU (4 SIMDs)
 * on CDNA, 160 KiB on gfx950, and 128 KiB per WGP (4 SIMDs) on RDNA in WGP mode.
 * tests/gpu/compile_matrix.c checks these figures against clang's own occupancy report. */
static const kiln_target kTargets[] = {
    {"sm_80", KILN_VENDOR_NVIDIA, "ampere", 32, 48 * KIB, 163 * KIB, 255, KILN_MATRIX_MMA_SYNC,
     108, "A100", 0, "sm_80", 0, 0, 0, 0, 0},
    {"sm_86", KILN_VENDOR_NVIDIA, "ampere", 32, 48 * KIB, 99 * KIB, 255, KILN_MATRIX_MMA_SYNC,
     82, "RTX 3090", 0, "sm_86", 0, 0, 0, 0, 0},
    {"sm_89", KILN_VENDOR_NVIDIA, "ada", 32, 48 * KIB, 99 * KIB, 255, KILN_MATRIX_MMA_SYNC,
     128, "RTX 4090", 0, "sm_89", 0, 0, 0, 0, 0},
    {"sm_90", KILN_VENDOR_NVIDIA, "hopper", 32, 48 * KIB, 227 * KIB, 255, KILN_MATRIX_WGMMA,
     132, "H100 SXM / H200", 0, "sm_90a", 0, 0, 0, 0, 0},
    {"sm_100", KILN_VENDOR_NVIDIA, "blackwell", 32, 48 * KIB, 227 * KIB, 255,
     KILN_MATRIX_MMA_SYNC, 148, "B200", 0, "sm_100", 0, 0, 0, 0, 0},
    {"sm_120", KILN_VENDOR_NVIDIA, "blackwell", 32, 48 * KIB, 99 * KIB, 255,
     KILN_MATRIX_MMA_SYNC, 170, "RTX 5090", 0, "sm_120", 0, 0, 0, 0, 0},
    {"gfx90a", KILN_VENDOR_AMD, "cdna2", 64, 64 * KIB, 64 * KIB, 512, KILN_MATRIX_MFMA, 110,
     "MI250X (one GCD)", 0, "gfx90a", 512, 8, 8, 65536, 4},
    {"gfx942", KILN_VENDOR_AMD, "cdna3", 64, 64 * KIB, 64 * KIB, 512, KILN_MATRIX_MFMA, 304,
     "MI300X", 0, "gfx942", 512, 8, 8, 65536, 4},
    {"gfx950", KILN_VENDOR_AMD, "cdna4", 64, 160 * KIB, 160 * KIB, 512, KILN_MATRIX_MFMA, 256,
     "MI350", 0, "gfx950", 512, 8, 8, 163840, 4},
    {"gfx1100", KILN_VENDOR_AMD, "rdna3", 32, 64 * KIB, 64 * KIB, 256, KILN_MATRIX_WMMA_GFX11,
     96, "RX 7900 XTX", 1, "gfx1100", 1536, 24, 16, 131072, 4},
    {"gfx1101", KILN_VENDOR_AMD, "rdna3", 32, 64 * KIB, 64 * KIB, 256, KILN_MATRIX_WMMA_GFX11,
     60, "RX 7800 XT", 1, "gfx1101", 1536, 24, 16, 131072, 4},
    {"gfx1102", KILN_VENDOR_AMD, "rdna3", 32, 64 * KIB, 64 * KIB, 256, KILN_MATRIX_WMMA_GFX11,
     32, "RX 7600", 1, "gfx1102", 1024, 16, 16, 131072, 4},
    {"gfx1103", KILN_VENDOR_AMD, "rdna3", 32, 64 * KIB, 64 * KIB, 256, KILN_MATRIX_WMMA_GFX11,
     12, "Radeon 780M", 1, "gfx1103", 1024, 16, 16, 131072, 4},
    {"gfx1150", KILN_VENDOR_AMD, "rdna3.5", 32, 64 * KIB, 64 * KIB, 256,
     KILN_MATRIX_WMMA_GFX11, 16, "Radeon 890M", 1, "gfx1150", 1024, 16, 16, 131072, 4},
    {"gfx1151", KILN_VENDOR_AMD, "rdna3.5", 32, 64 * KIB, 64 * KIB, 256,
     KILN_MATRIX_WMMA_GFX11, 40, "Radeon 8060S", 1, "gfx1151", 1536, 24, 16, 131072, 4},
    {"gfx1200", KILN_VENDOR_AMD, "rdna4", 32, 64 * KIB, 64 * KIB, 256, KILN_MATRIX_WMMA_GFX12,
     32, "RX 9060 XT", 1, "gfx1200", 1536, 24, 16, 131072, 4},
    {"gfx1201", KILN_VENDOR_AMD, "rdna4", 32, 64 * KIB, 64 * KIB, 256, KILN_MATRIX_WMMA_GFX12,
     64, "RX 9070 XT", 1, "gfx1201", 1536, 24, 16, 131072, 4},
};

const kiln_target *kiln_targets(size_t *count)
{
    if (count) *count = sizeof kTargets / sizeof kTargets[0];
    return kTargets;
}

const char *kiln_vendor_name(kiln_vendor v)
{
    return v == KILN_VENDOR_NVIDIA ? "nvidia" : "amd";
}

const char *kiln_matrix_kind_name(kiln_matrix_kind m)
{
    switch (m) {
    case KILN_MATRIX_MMA_SYNC: return "mma.sync";
    case KILN_MATRIX_WGMMA: return "wgmma";
    case KILN_MATRIX_WMMA_GFX11: return "wmma-gfx11";
    case KILN_MATRIX_WMMA_GFX12: return "wmma-gfx12";
    case KILN_MATRIX_MFMA: return "mfma";
    }
    return "?";
}

/* Copies the base name of a target spelling into buf, lower-cased: whitespace trimmed,
 * ":feature+" suffixes and the "a" of arch-specific NVIDIA names ("sm_90a") dropped. */
static void base_name(const char *name, size_t len, char *buf, size_t cap)
{
    size_t n = 0;
    while (len > 0 && isspace((unsigned char)*name)) ++name, --len;
    while (len > 0 && isspace((unsigned char)name[len - 1])) --len;
    for (size_t i = 0; i < len && name[i] != ':' && n + 1 < cap; ++i)
        buf[n++] = (char)tolower((unsigned char)name[i]);
    buf[n] = '\0';
    if (n > 3 && strncmp(buf, "sm_", 3) == 0 && buf[n - 1] == 'a') buf[n - 1] = '\0';
}

static const kiln_target *find_n(const char *name, size_t len)
{
    char base[32];
    base_name(name, len, base, sizeof base);
    for (size_t i = 0; i < sizeof kTargets / sizeof kTargets[0]; ++i)
        if (strcmp(kTargets[i].name, base) == 0) return &kTargets[i];
    return NULL;
}

const kiln_target *kiln_target_find(const char *name)
{
    return name ? find_n(name, strlen(name)) : NULL;
}

static int64_t round_up(int64_t x, int64_t g) { return g > 0 ? (x + g - 1) / g * g : x; }

int32_t kiln_target_waves_per_simd(const kiln_target *t, int64_t vgpr_count, int64_t lds_bytes,
                                   int32_t block_threads)
{
    int64_t regs, waves, groups, per_group;
    if (!t || t->vendor != KILN_VENDOR_AMD || t->vgpr_file <= 0) return 0;
    regs = round_up(vgpr_count, t->vgpr_granule);
    if (regs < t->vgpr_granule) regs = t->vgpr_granule;
    waves = t->vgpr_file / regs;
    if (waves > t->max_waves_per_simd) waves = t->max_waves_per_simd;
    per_group = (block_threads + t->wave_size - 1) / t->wave_size;
    if (lds_bytes > 0 && per_group > 0) {
        groups = t->lds_per_cu / lds_bytes;
        if (groups * per_group / t->simds_per_cu < waves)
            waves = groups * per_group / t->simds_per_cu;
    }
    return (int32_t)waves;
}

void kiln_target_names(char *buf, size_t cap)
{
    size_t n = 0;
    if (cap == 0) return;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof kTargets / sizeof kTargets[0]; ++i) {
        int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", kTargets[i].name);
        if (w < 0 || (size_t)w >= cap - n) return;
        n += (size_t)w;
    }
}

kiln_status kiln_targets_parse(const char *list, const kiln_target **out, size_t cap,
                               size_t *count)
{
    size_t n = 0;
    const char *p = list ? list : "";
    *count = 0;
    while (*p) {
        size_t len = strcspn(p, ";,");
        const char *e = p;
        size_t elen = len;
        while (elen > 0 && isspace((unsigned char)*e)) ++e, --elen;
        while (elen > 0 && isspace((unsigned char)e[elen - 1])) --elen;
        if (elen > 0) {
            const kiln_target *t = find_n(e, elen);
            int dup = 0;
            if (!t) {
                char known[512];
                kiln_target_names(known, sizeof known);
                return kiln_fail(KILN_INVALID_ARGUMENT,
                                 "GPU_ARCHS entry '%.*s' is not a known target; known: %s",
                                 (int)elen, e, known);
            }
            for (size_t i = 0; i < n; ++i) dup |= out[i] == t;
            if (!dup) {
                if (n == cap)
                    return kiln_fail(KILN_INVALID_ARGUMENT,
                                     "GPU_ARCHS lists more than %zu targets", cap);
                out[n++] = t;
            }
        }
        p += len;
        if (*p) ++p;
    }
    if (n == 0)
        return kiln_fail(KILN_INVALID_ARGUMENT, "GPU_ARCHS '%s' names no target", list ? list : "");
    *count = n;
    return KILN_OK;
}

int64_t kiln_target_wgp_to_cu(const kiln_target *t, int64_t wgps)
{
    return t && t->reports_wgp ? wgps * 2 : wgps;
}

kiln_status kiln_cu_num_parse(const char *text, int64_t *out)
{
    const char *p = text;
    int64_t v = 0;
    int digits = 0;
    while (isspace((unsigned char)*p)) ++p;
    while (isdigit((unsigned char)*p)) {
        if (v > 1000000) break;
        v = v * 10 + (*p++ - '0');
        ++digits;
    }
    while (isspace((unsigned char)*p)) ++p;
    if (!digits || *p || v <= 0 || v > 1000000)
        return kiln_fail(KILN_INVALID_ARGUMENT,
                         "CU_NUM '%s' is not a positive number of compute units", text);
    *out = v;
    return KILN_OK;
}

kiln_status kiln_target_cu_count(const kiln_target *t, int64_t reported_cus, int64_t *out,
                                 const char **source)
{
    char env[64];
    if (kiln_env_get("CU_NUM", env, sizeof env)) {
        KILN_FORWARD(kiln_cu_num_parse(env, out));
        if (source) *source = "CU_NUM";
        return KILN_OK;
    }
    if (reported_cus > 0) {
        *out = reported_cus;
        if (source) *source = "device";
        return KILN_OK;
    }
    if (!t) return kiln_fail(KILN_INVALID_ARGUMENT, "no target and no device CU count");
    *out = t->default_cus;
    if (source) *source = "default";
    return KILN_OK;
}
