/*
 * The GPU kernel variants: which instances exist, how each is compiled (source file, macro
 * definitions, kernel name), its canonical key (src/core/variant_key.h) and how it is called
 * (arguments, launch geometry).
 *
 * Generic tier (SIMT), compact by design so that "every variant" stays small:
 *   attention  dtype {f16, bf16} x head-dim bound {64, 128, 256} x mask {full, causal, window}
 *              x mode {fixed, varlen, paged}; the real head_dim (any multiple of 8 up to the
 *              bound) and the mask's window sizes, soft-cap, ALiBi, LSE and split count are
 *              runtime arguments. Paged covers decode (dense q) and batch prefill
 *              (cu_seqlens_q); split-KV is the same kernel writing to the workspace.
 *   combine    dtype {f16, bf16} x head-dim bound {64, 128, 256}
 *   activation {silu, gelu, gelu_tanh} x dtype {f32, f16, bf16}
 * A variant's key names its head-dim bound: a head_dim 72 problem runs
 * attn_fwd.bf16.d128.causal.paged.generic.
 *
 * Tensor tier (NVIDIA sm_80 and later: warp-level mma.sync, kernels/attention_mma.cu; AMD
 * gfx11 / gfx12 / gfx9: WMMA or MFMA, kernels/attention_wmma.cu, the family from the
 * target table's matrix kind):
 *   attention  dtype {f16, bf16} x head dim {32, 64, 80, 96, 128, 160, 192, 256} on NVIDIA,
 *              {64, 128} on AMD, x mask x mode, as above; split-KV too, the generic combine
 *              merging its partial outputs. A head_dim between the compiled ones runs on
 *              the next larger (its extra columns zero). It runs a problem when Q, K and V
 *              can be read 16 bytes at a time and the kernel's shared memory fits the
 *              target; everything else stays on the generic tier. On sm_90 the variants
 *              whose key tiles are longer there than elsewhere name them
 *              (attn_fwd.bf16.d256.full.fixed.k64.tensor; kernels/attention_mma.h).
 * Hopper tier (NVIDIA sm_90, compiled for sm_90a: wgmma + TMA + mbarriers, warp-specialized,
 * kernels/attention_hopper.cu):
 *   attention  dtype {f16, bf16} x head dim {64, 128} (exact) x mask {full, causal, window}
 *              x mode {fixed}, and head dim 256 x mask {full, causal}. It covers a problem
 *              when: the target is sm_90; head_dim is 64, 128 or 256 (256 without a
 *              window); the mode is fixed-length (varlen and paged run on the tensor tier);
 *              q, k, v and out start on 16-byte
 *              boundaries and every q / k / v / out stride is a multiple of 8 elements (the
 *              copy engine's rule); lengths, batch and heads are below 2^29. Inside that
 *              it runs every option: GQA / MQA, bottom-right causal, windows, soft-cap,
 *              ALiBi, LSE, split-KV partials (merged by the generic combine). auto takes it
 *              only when seqlen_q >= 64 (its 128-row query tiles of one head waste most of
 *              their work on decode-sized q, where the tensor tier packs the query heads of
 *              a KV head into one block); KILN_GPU_TIER=hopper runs it at any seqlen_q.
 *              Head dim 64 without a mask or causal also has a long variant (three
 *              consumer warpgroups, query tiles of 192 rows,
 *              attn_fwd.<dtype>.d64.<full|causal>.fixed.q192.hopper), taken for calls with
 *              at least KILN_HOPPER_LONG_MIN_KEYS keys per split.
 * KILN_GPU_TIER=auto|generic|tensor|hopper picks the tier (auto: hopper, then tensor, where
 * they cover the problem on the target, else generic; tensor / hopper: KILN_UNSUPPORTED
 * saying why when that tier does not cover it).
 * Decode (NVIDIA sm_80 and later, kernels/decode.cu): attention for decode-shaped calls,
 *              dtype {f16, bf16} x head dim {64, 128} x mask x mode, keyed
 *              attn_decode.<dtype>.d<D>.<mask>.<mode>.tensor. It runs a call the tensor tier
 *              covers whose seqlen_q (max_seqlen_q when packed) is 1 to KILN_DECODE_MAX_Q
 *              and whose seqlen_q x (heads_q / heads_kv) is at most KILN_DECODE_MAX_ROWS
 *              (kernels/decode.h), under KILN_GPU_TIER auto or tensor; its split-KV merge
 *              is part of the kernel (no combine launch).
 * KILN_GPU_TIER=auto|generic|tensor picks the tier (auto: tensor where it covers the
 * problem on the target, else generic; tensor: KILN_UNSUPPORTED saying why when it does
 * not cover it).
 */
#ifndef KILN_GPU_VARIANTS_H
#define KILN_GPU_VARIANTS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "problem.h"
#include "variant_key.h"
#include "../../kernels/kiln_args.h"
#include "../../kernels/attention_mma.h"
#include "../../kernels/attention_hopper.h"
#include "../../kernels/attention_wmma.h"
#include "../../kernels/decode.h"
#include "targets.h"

typedef enum kiln_kernel_kind {
    KILN_KERNEL_ATTN = 0,
    KILN_KERNEL_COMBINE = 1,
    KILN_KERNEL_ACT = 2,
    KILN_KERNEL_DECODE = 3 /* attention by kernels/decode.cu (tensor tier) */
} kiln_kernel_kind;

typedef struct kiln_gpu_variant {
    kiln_kernel_kind kind;
    kiln_dtype dtype;
    int32_t head_dim;    /* compile-time bound (attention, combine); 0 for activations */
    int32_t mask;        /* KILN_MASK_* (attention) */
    kiln_attn_mode mode; /* attention */
    kiln_activation act; /* activations */
    int32_t tier;        /* KILN_GPU_TIER_ID_* (0, generic, when zero-initialised) */
    /* AMD tensor tier: the instruction family KILN_WM_* (kernels/attention_wmma.h), the
     * target's matrix kind; 0 everywhere else. Not part of the key, which names the same
     * variant on every vendor: the target tells the families apart. */
    int32_t family;
    /* Hopper tier: 1 for the long variant (three consumers, KILN_HOPPER_LONG; key
     * ...q192.hopper). NVIDIA tensor tier: 1 on sm_90 where its long key tiles differ
     * from the other targets' (kernels/attention_mma.h's KILN_TQ_LONG; key ...k64.tensor).
     * 0 everywhere else. */
    int32_t wide;
} kiln_gpu_variant;

#define KILN_GPU_TIER_GENERIC "generic"
#define KILN_GPU_TIER_TENSOR "tensor"
#define KILN_GPU_TIER_ID_GENERIC 0
#define KILN_GPU_TIER_ID_TENSOR 1
#define KILN_GPU_TIER_HOPPER "hopper"
#define KILN_GPU_TIER_ID_HOPPER 2

typedef enum kiln_gpu_tier_request {
    KILN_GPU_TIER_AUTO = 0,
    KILN_GPU_TIER_WANT_GENERIC = 1,
    KILN_GPU_TIER_WANT_TENSOR = 2,
    KILN_GPU_TIER_WANT_HOPPER = 3,
    /* auto on a device whose driver cannot make tensor maps: tensor, else generic */
    KILN_GPU_TIER_AUTO_NO_HOPPER = 4
} kiln_gpu_tier_request;

/* "generic", "tensor" or "hopper". */
const char *kiln_gpu_variant_tier_name(const kiln_gpu_variant *v);
#define KILN_GPU_MAX_DEFINES 6

/* Every variant for target t: the generic set everywhere, plus the tensor tier's on NVIDIA
 * sm_80 and later and on AMD targets with WMMA or MFMA. Writes up to cap variants.
 * @return the total number of variants (call with cap 0 to size out). */
size_t kiln_gpu_variant_list(const kiln_target *t, kiln_gpu_variant *out, size_t cap);

/* The variant that runs a problem. KILN_UNSUPPORTED (with the reason) for f32 or a head_dim
 * the generic tier does not cover. */
kiln_status kiln_gpu_variant_for_attn(const kiln_attn_problem *p, kiln_gpu_variant *v);
/* The tier KILN_GPU_TIER asks for (read once, when a context starts): unset or empty means
 * auto, anything else than auto / generic / tensor is KILN_INVALID_ARGUMENT. */
kiln_status kiln_gpu_tier_from_env(kiln_gpu_tier_request *want);
/* The same with the tier given. KILN_GPU_TIER_WANT_TENSOR on a problem or target the tensor
 * tier does not cover is KILN_UNSUPPORTED naming the reason. */
kiln_status kiln_gpu_variant_for_attn_tier(const kiln_attn_problem *p, const kiln_target *t,
                                           kiln_gpu_tier_request want, kiln_gpu_variant *v);
/* Whether the tensor tier has a variant for this problem on t: 1, or 0 with the reason in
 * why (when why is not NULL). */
int kiln_gpu_tensor_covers(const kiln_attn_problem *p, const kiln_target *t, char *why,
                           size_t cap);
/* Whether the hopper tier has a variant for this problem on t: 1, or 0 with the reason in
 * why (the rules are in the comment at the top of this file). */
int kiln_gpu_hopper_covers(const kiln_attn_problem *p, const kiln_target *t, char *why,
                           size_t cap);
/* Whether a call of this shape is decode-shaped (kernels/decode.h): seqlen_q the dense
 * length or the longest packed sequence. */
int kiln_gpu_decode_shaped(int64_t seqlen_q, int64_t heads_q, int64_t heads_kv);
/* Whether the decode kernel is compiled for this head dim (64, 128). */
int kiln_gpu_decode_head_dim(int64_t head_dim);
kiln_status kiln_gpu_variant_for_combine(kiln_dtype dtype, int64_t head_dim,
                                         kiln_gpu_variant *v);
kiln_status kiln_gpu_variant_for_act(kiln_activation act, kiln_dtype dtype,
                                     kiln_gpu_variant *v);

/* Canonical key ("attn_fwd.bf16.d128.causal.paged.generic"). */
void kiln_gpu_variant_key(const kiln_gpu_variant *v, char *buf, size_t cap);
/* The variant as the fields of its key (formatted later, src/core/variant_key.h). */
void kiln_gpu_variant_desc(const kiln_gpu_variant *v, kiln_variant_desc *d);
/* A small integer, distinct for distinct variants: what a context's table of loaded
 * functions is keyed by. */
uint32_t kiln_gpu_variant_id(const kiln_gpu_variant *v);
/* Embedded source file ("attention.cu") and entry point ("kiln_attn_fwd"). */
const char *kiln_gpu_variant_file(const kiln_gpu_variant *v);
const char *kiln_gpu_variant_kernel(const kiln_gpu_variant *v);
/* Compiler options defining the variant's macros ("-DKILN_DTYPE=2", ...); returns the
 * count. The strings live in *storage. */
typedef struct kiln_gpu_defines {
    char text[KILN_GPU_MAX_DEFINES][40];
    const char *ptr[KILN_GPU_MAX_DEFINES];
} kiln_gpu_defines;
int kiln_gpu_variant_defines(const kiln_gpu_variant *v, kiln_gpu_defines *storage);

/* Kernel arguments for a problem. num_splits > 1 points ws_out / ws_lse into workspace
 * (kiln_split_workspace_bytes(num_splits, rows_q, heads_q, head_dim) bytes, device memory):
 * fp32 partial outputs first, then the LSE. */
void kiln_gpu_attn_args(kiln_attn_args *a, const kiln_attn_problem *p, int32_t num_splits,
                        void *workspace);
void kiln_gpu_act_args(kiln_act_args *a, const kiln_act_problem *p);

/* Launch geometry (kernels/kiln_args.h); see kiln_gpu_variant_dynamic_smem for the bytes.
 * KILN_UNSUPPORTED naming the dimension when a grid exceeds the 65,535 y / z limit. The
 * grid may have a zero dimension (nothing to launch) for empty problems. */
kiln_status kiln_gpu_attn_grid(const kiln_attn_args *a, unsigned grid[3], unsigned block[3]);
/* The same for the variant v's tier (the tensor kernel's blocks hold more rows and, per
 * head dim, more threads). */
kiln_status kiln_gpu_attn_grid_for(const kiln_gpu_variant *v, const kiln_attn_args *a,
                                   unsigned grid[3], unsigned block[3]);
/* Threads per block of v's kernel, and the dynamic shared memory it launches with (the
 * tensor tier's; 0 for kernels with static shared memory only). */
int32_t kiln_gpu_variant_threads(const kiln_gpu_variant *v);
int32_t kiln_gpu_variant_dynamic_smem(const kiln_gpu_variant *v);
/* Keys per shared-memory tile, and query rows per block, of a hopper-tier variant. */
int32_t kiln_gpu_hopper_block_k(const kiln_gpu_variant *v);
int32_t kiln_gpu_hopper_block_q(const kiln_gpu_variant *v);
/* The tensor-tier head dim that runs head_dim (the smallest compiled one at least as wide;
 * 0 above 256). */
int32_t kiln_gpu_tensor_head_dim(int64_t head_dim);
kiln_status kiln_gpu_combine_grid(const kiln_attn_args *a, unsigned grid[3],
                                  unsigned block[3]);
kiln_status kiln_gpu_act_grid(const kiln_act_args *a, unsigned grid[3], unsigned block[3]);

#endif
