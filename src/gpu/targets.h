/*
 * The GPU target table: every limit and default kiln knows about a target lives in one
 * array (targets.c), so adding a target is adding a row. Used by the ahead-of-time build
 * (which targets, resource checks), by the runtime (CU count for split planning, wave size)
 * and by `kiln info`.
 */
#ifndef KILN_GPU_TARGETS_H
#define KILN_GPU_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

typedef enum kiln_vendor { KILN_VENDOR_NVIDIA = 0, KILN_VENDOR_AMD = 1 } kiln_vendor;

typedef enum kiln_matrix_kind {
    KILN_MATRIX_MMA_SYNC = 0, /* sm_80+: warp-level mma.sync */
    KILN_MATRIX_WGMMA = 1,    /* sm_90a: warpgroup wgmma (+ TMA) */
    KILN_MATRIX_WMMA_GFX11 = 2,
    KILN_MATRIX_WMMA_GFX12 = 3,
    KILN_MATRIX_MFMA = 4
} kiln_matrix_kind;

typedef struct kiln_target {
    const char *name;    /* "sm_90", "gfx1151": what GPU_ARCHS and the driver say */
    kiln_vendor vendor;
    const char *family;  /* ampere | ada | hopper | blackwell | cdna2 | cdna3 | cdna4 | rdna3 |
                            rdna3.5 | rdna4 */
    int32_t wave_size;
    /* Shared memory / LDS per workgroup: the most a kernel may use with static allocation,
     * and with the opt-in (NVIDIA dynamic shared memory above 48 KiB; equal on AMD). */
    int64_t shared_static_bytes;
    int64_t shared_max_bytes;
    int32_t max_registers; /* per thread (NVIDIA) / architected VGPRs per lane (AMD) */
    kiln_matrix_kind matrix;
    int32_t default_cus;   /* compute units (SMs) of the product below */
    const char *product;   /* where default_cus comes from */
    /* 1 where a runtime may report work-group processors (2 CUs each) as its "multiprocessor
     * count" (RDNA in WGP mode: 30 for a 60-CU RX 7800 XT). */
    int32_t reports_wgp;
    const char *compile_arch; /* NVRTC --gpu-architecture / clang --offload-arch value */
    /* AMD occupancy (0 on NVIDIA): VGPRs per lane of one SIMD at the target's wave size,
     * their allocation granule, the most waves a SIMD holds, the LDS that co-resident
     * workgroups share and the SIMDs sharing it (a CU on CDNA, a WGP in WGP mode on RDNA). */
    int32_t vgpr_file, vgpr_granule, max_waves_per_simd;
    int32_t lds_per_cu, simds_per_cu;
} kiln_target;

const kiln_target *kiln_targets(size_t *count);
const char *kiln_vendor_name(kiln_vendor v);       /* "nvidia" | "amd" */
const char *kiln_matrix_kind_name(kiln_matrix_kind m); /* "mma.sync", "wgmma", ... */

/* Finds a target by the name a driver or a user gives: feature suffixes are ignored
 * ("gfx942:sramecc+:xnack-" -> gfx942, "sm_90a" -> sm_90), case-insensitive, surrounding
 * whitespace ignored. NULL if unknown. */
const kiln_target *kiln_target_find(const char *name);

/* Waves of a kernel one SIMD can hold at once on AMD target t: the least of the VGPR limit
 * (vgpr_count as the code object's metadata gives it, allocated in granules; on CDNA, whose
 * one register file holds both kinds, that count already includes the AGPRs), the LDS
 * limit (workgroups of lds_bytes each that fit the shared LDS, times their waves, over the
 * SIMDs) and the hardware's maximum. 0 for NVIDIA targets. */
int32_t kiln_target_waves_per_simd(const kiln_target *t, int64_t vgpr_count, int64_t lds_bytes,
                                   int32_t block_threads);

/* Writes "sm_80, sm_86, ..., gfx1201" (every known name) into buf. */
void kiln_target_names(char *buf, size_t cap);

/* Parses a GPU_ARCHS list: entries separated by ';' or ',', whitespace trimmed, empty
 * entries skipped, duplicates collapsed, order kept. Every entry is honoured.
 * @return KILN_OK with out[0..*count) set; KILN_INVALID_ARGUMENT naming the unknown entry
 * and listing the known targets, or if the list is empty or has more than cap targets. */
kiln_status kiln_targets_parse(const char *list, const kiln_target **out, size_t cap,
                               size_t *count);

/* CUs for a count a runtime reported in WGPs (x2 where the target has WGPs). */
int64_t kiln_target_wgp_to_cu(const kiln_target *t, int64_t wgps);

/* Parses a CU_NUM value: a positive decimal integer with optional surrounding whitespace.
 * @return KILN_OK or KILN_INVALID_ARGUMENT naming the bad text. */
kiln_status kiln_cu_num_parse(const char *text, int64_t *out);

/* The CU count to plan with: CU_NUM from the environment when set, else reported_cus when
 * > 0 (already in CUs), else the target's default. *source (may be NULL) gets "CU_NUM",
 * "device" or "default". A malformed CU_NUM is an error, never ignored. */
kiln_status kiln_target_cu_count(const kiln_target *t, int64_t reported_cus, int64_t *out,
                                 const char **source);

#endif
