#include "variants.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "platform/platform.h"
#include "variant_key.h"

static const kiln_dtype kAttnDtypes[] = {KILN_F16, KILN_BF16};
static const kiln_dtype kActDtypes[] = {KILN_F32, KILN_F16, KILN_BF16};
static const int32_t kHeadDims[] = {64, 128, 256};
static const int32_t kTensorHeadDims[] = KILN_ATTN_TENSOR_HEAD_DIMS;
static const int32_t kAmdTensorHeadDims[] = {64, 128};
static const int32_t kHopperHeadDims[] = {64, 128, 256};
static const int32_t kMasks[] = {KILN_MASK_FULL, KILN_MASK_CAUSAL, KILN_MASK_WINDOW};
static const kiln_attn_mode kModes[] = {KILN_MODE_FIXED, KILN_MODE_VARLEN, KILN_MODE_PAGED};
static const kiln_activation kActs[] = {KILN_ACT_SILU, KILN_ACT_GELU, KILN_ACT_GELU_TANH};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Host enums passed to the kernels as compile-time numbers (kiln_gpu_variant_defines). */
_Static_assert(KILN_F32 == 0 && KILN_F16 == 1 && KILN_BF16 == 2,
               "kiln_dtype values are the kernels' KILN_DTYPE numbers");
_Static_assert(KILN_ACT_SILU == 0 && KILN_ACT_GELU == 1 && KILN_ACT_GELU_TANH == 2,
               "kiln_activation values are the kernels' KILN_ACT numbers");

static void put(kiln_gpu_variant *out, size_t cap, size_t *n, kiln_gpu_variant v)
{
    if (*n < cap) out[*n] = v;
    ++*n;
}

/* mma.sync m16n8k16 with bf16 / f16 inputs: every NVIDIA target from sm_80 on. */
static int has_mma_sync(const kiln_target *t)
{
    return t && t->vendor == KILN_VENDOR_NVIDIA && strncmp(t->name, "sm_", 3) == 0 &&
           atoi(t->name + 3) >= 80;
}

/* wgmma, TMA and setmaxnreg: sm_90 (compiled for sm_90a). */
static int has_wgmma(const kiln_target *t)
{
    return t && t->vendor == KILN_VENDOR_NVIDIA && t->matrix == KILN_MATRIX_WGMMA;
}

/* The AMD instruction family of a target's tensor tier (KILN_WM_*), 0 when it has none.
 * The family numbers are the target table's matrix kinds. */
_Static_assert(KILN_WM_GFX11 == KILN_MATRIX_WMMA_GFX11 && KILN_WM_GFX12 == KILN_MATRIX_WMMA_GFX12 &&
                   KILN_WM_MFMA == KILN_MATRIX_MFMA,
               "kernels/attention_wmma.h and src/gpu/targets.h number the families alike");
static int32_t amd_family(const kiln_target *t)
{
    if (!t || t->vendor != KILN_VENDOR_AMD) return 0;
    return t->matrix == KILN_MATRIX_WMMA_GFX11 || t->matrix == KILN_MATRIX_WMMA_GFX12 ||
                   t->matrix == KILN_MATRIX_MFMA
               ? (int32_t)t->matrix
               : 0;
}

/* The tensor tier's shape flags (kernels/attention_mma.h) of an NVIDIA variant. */
static int tq_flags(const kiln_gpu_variant *v)
{
    return (v->mode == KILN_MODE_PAGED ? KILN_TQ_PAGED : 0) | (v->wide ? KILN_TQ_LONG : 0);
}

/* Whether the NVIDIA tensor-tier variant of head dim d and mode on t takes the long key
 * tiles: t is sm_90 and they differ there from the other targets' (attention_mma.h). */
static int32_t tq_long(const kiln_target *t, int32_t d, kiln_attn_mode mode)
{
    const int p = mode == KILN_MODE_PAGED ? KILN_TQ_PAGED : 0;
    return has_wgmma(t) && KILN_TQ_BLOCK_K(d, p | KILN_TQ_LONG) != KILN_TQ_BLOCK_K(d, p);
}

size_t kiln_gpu_variant_list(const kiln_target *t, kiln_gpu_variant *out, size_t cap)
{
    size_t n = 0;
    for (size_t a = 0; a < COUNT(kAttnDtypes); ++a)
        for (size_t d = 0; d < COUNT(kHeadDims); ++d) {
            for (size_t m = 0; m < COUNT(kMasks); ++m)
                for (size_t o = 0; o < COUNT(kModes); ++o) {
                    kiln_gpu_variant v = {KILN_KERNEL_ATTN, kAttnDtypes[a], kHeadDims[d],
                                          kMasks[m], kModes[o], KILN_ACT_SILU,
                                          KILN_GPU_TIER_ID_GENERIC, 0, 0};
                    put(out, cap, &n, v);
                }
            {
                kiln_gpu_variant v = {KILN_KERNEL_COMBINE, kAttnDtypes[a], kHeadDims[d],
                                      KILN_MASK_FULL, KILN_MODE_FIXED, KILN_ACT_SILU,
                                      KILN_GPU_TIER_ID_GENERIC, 0, 0};
                put(out, cap, &n, v);
            }
        }
    for (size_t a = 0; a < COUNT(kActs); ++a)
        for (size_t d = 0; d < COUNT(kActDtypes); ++d) {
            kiln_gpu_variant v = {KILN_KERNEL_ACT, kActDtypes[d], 0, KILN_MASK_FULL,
                                  KILN_MODE_FIXED, kActs[a], KILN_GPU_TIER_ID_GENERIC, 0, 0};
            put(out, cap, &n, v);
        }
    if (has_mma_sync(t) || amd_family(t)) {
        /* NVIDIA: kernels/attention_mma.h's head dims; AMD: attention_wmma.h's (64, 128). */
        const int32_t *dims = amd_family(t) ? kAmdTensorHeadDims : kTensorHeadDims;
        const size_t ndims = amd_family(t) ? COUNT(kAmdTensorHeadDims) : COUNT(kTensorHeadDims);
        for (size_t a = 0; a < COUNT(kAttnDtypes); ++a)
            for (size_t d = 0; d < ndims; ++d)
                for (size_t m = 0; m < COUNT(kMasks); ++m)
                    for (size_t o = 0; o < COUNT(kModes); ++o) {
                        kiln_gpu_variant v = {KILN_KERNEL_ATTN, kAttnDtypes[a],
                                              dims[d], kMasks[m], kModes[o],
                                              KILN_ACT_SILU, KILN_GPU_TIER_ID_TENSOR,
                                              amd_family(t), 0};
                        v.wide = !v.family && tq_long(t, dims[d], kModes[o]);
                        put(out, cap, &n, v);
                        /* The decode kernel: NVIDIA only (mma.sync fragments). */
                        v.kind = KILN_KERNEL_DECODE;
                        v.wide = 0;
                        if (has_mma_sync(t) && kiln_gpu_decode_head_dim(dims[d]))
                            put(out, cap, &n, v);
                    }
    }
    if (has_wgmma(t))
        for (size_t a = 0; a < COUNT(kAttnDtypes); ++a)
            for (size_t d = 0; d < COUNT(kHopperHeadDims); ++d)
                for (size_t m = 0; m < COUNT(kMasks); ++m) {
                    kiln_gpu_variant v = {KILN_KERNEL_ATTN, kAttnDtypes[a], kHopperHeadDims[d],
                                          kMasks[m], KILN_MODE_FIXED, KILN_ACT_SILU,
                                          KILN_GPU_TIER_ID_HOPPER, 0, 0};
                    if (!KILN_HOPPER_MASK_OK(kHopperHeadDims[d], kMasks[m])) continue;
                    put(out, cap, &n, v);
                    v.wide = 1;
                    if (KILN_HOPPER_LONG_COVERS(kHopperHeadDims[d], kMasks[m]))
                        put(out, cap, &n, v);
                }
    return n;
}

static kiln_status head_dim_bound(int64_t head_dim, int32_t *bound)
{
    KILN_FAIL_IF(head_dim <= 0 || head_dim % 8 != 0 || head_dim > 256, KILN_UNSUPPORTED,
                 "head_dim %lld: the generic GPU tier runs multiples of 8 up to 256",
                 (long long)head_dim);
    for (size_t i = 0; i < COUNT(kHeadDims); ++i)
        if (head_dim <= kHeadDims[i]) {
            *bound = kHeadDims[i];
            break;
        }
    return KILN_OK;
}

static kiln_status attn_dtype(kiln_dtype dtype)
{
    KILN_FAIL_IF(dtype != KILN_F16 && dtype != KILN_BF16, KILN_UNSUPPORTED,
                 "GPU attention takes f16 or bf16, not %s", kiln_dtype_name(dtype));
    return KILN_OK;
}

_Static_assert(KILN_MASK_FULL == 0 && KILN_MASK_CAUSAL == 1 && KILN_MASK_WINDOW == 2,
               "kiln_mask_index gives the kernels' mask values");

kiln_status kiln_gpu_variant_for_attn(const kiln_attn_problem *p, kiln_gpu_variant *v)
{
    KILN_FORWARD(attn_dtype(p->dtype));
    memset(v, 0, sizeof *v);
    v->kind = KILN_KERNEL_ATTN;
    v->dtype = p->dtype;
    v->mode = p->mode;
    KILN_FORWARD(head_dim_bound(p->head_dim, &v->head_dim));
    v->mask = kiln_mask_index(p);
    return KILN_OK;
}

static int aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

int32_t kiln_gpu_tensor_head_dim(int64_t head_dim)
{
    for (size_t i = 0; i < COUNT(kTensorHeadDims); ++i)
        if (head_dim <= kTensorHeadDims[i]) return kTensorHeadDims[i];
    return 0;
}

int kiln_gpu_tensor_covers(const kiln_attn_problem *p, const kiln_target *t, char *why,
                           size_t cap)
{
    if (!has_mma_sync(t) && !amd_family(t)) {
        if (why)
            snprintf(why, cap,
                     "the tensor tier needs an NVIDIA target with mma.sync (sm_80 or "
                     "later) or an AMD target with WMMA or MFMA, not %s",
                     t ? t->name : "an unknown target");
        return 0;
    }
    if (p->dtype != KILN_F16 && p->dtype != KILN_BF16) {
        if (why) snprintf(why, cap, "the tensor tier takes f16 or bf16, not %s",
                 kiln_dtype_name(p->dtype));
        return 0;
    }
    if (amd_family(t) && p->head_dim != 64 && p->head_dim != 128) {
        if (why)
            snprintf(why, cap, "the AMD tensor tier runs head_dim 64 or 128, not %lld",
                     (long long)p->head_dim);
        return 0;
    }
    if (p->head_dim <= 0 || p->head_dim % 8 != 0 || p->head_dim > 256) {
        if (why) snprintf(why, cap, "the tensor tier runs head_dim multiples of 8 up to 256, not %lld",
                 (long long)p->head_dim);
        return 0;
    }
    /* Q, K and V rows are staged with 16-byte copies: every row start must be 16-byte
     * aligned. */
    if (!aligned16(p->q) || !aligned16(p->k) || !aligned16(p->v) || p->q_stride_row % 8 ||
        p->q_stride_head % 8 || p->q_stride_batch % 8 || p->k_stride_row % 8 ||
        p->k_stride_head % 8 || p->k_stride_batch % 8 || p->v_stride_row % 8 ||
        p->v_stride_head % 8 || p->v_stride_batch % 8) {
        if (why) snprintf(why, cap, "the tensor tier reads Q, K and V 16 bytes at a time: their base "
                 "addresses must be 16-byte aligned and their strides multiples of 8 elements");
        return 0;
    }
    if (!amd_family(t)) { /* the AMD kernels' LDS is checked against the table at build */
        const int32_t d = kiln_gpu_tensor_head_dim(p->head_dim);
        const int pg = (p->mode == KILN_MODE_PAGED ? KILN_TQ_PAGED : 0) |
                       (tq_long(t, d, p->mode) ? KILN_TQ_LONG : 0);
        if (KILN_TQ_SMEM_BYTES(d, pg) > t->shared_max_bytes) {
            if (why)
                snprintf(why, cap, "the tensor tier's head_dim %d kernel needs %d bytes of shared "
                     "memory; %s allows %lld", (int)d, (int)KILN_TQ_SMEM_BYTES(d, pg), t->name,
                     (long long)t->shared_max_bytes);
            return 0;
        }
    }
    return 1;
}

static int aligned16_or_null(const void *ptr) { return ptr == NULL || aligned16(ptr); }

int kiln_gpu_hopper_covers(const kiln_attn_problem *p, const kiln_target *t, char *why,
                           size_t cap)
{
    const int64_t big = (int64_t)1 << 29;
    if (!has_wgmma(t)) {
        if (why) snprintf(why, cap, "the hopper tier needs an sm_90 target (wgmma and TMA), not %s",
                 t ? t->name : "an unknown target");
        return 0;
    }
    if (p->dtype != KILN_F16 && p->dtype != KILN_BF16) {
        if (why) snprintf(why, cap, "the hopper tier takes f16 or bf16, not %s",
                 kiln_dtype_name(p->dtype));
        return 0;
    }
    if (!KILN_HOPPER_HEAD_DIM_OK(p->head_dim)) {
        if (why) snprintf(why, cap, "the hopper tier runs head_dim 64, 128 or 256, not %lld",
                 (long long)p->head_dim);
        return 0;
    }
    if (!KILN_HOPPER_MASK_OK(p->head_dim, kiln_mask_index(p))) {
        if (why) snprintf(why, cap, "the hopper tier runs head_dim %lld without a sliding window; "
                 "windowed calls run on the tensor tier", (long long)p->head_dim);
        return 0;
    }
    if (p->mode != KILN_MODE_FIXED) {
        if (why) snprintf(why, cap, "the hopper tier runs fixed-length attention; %s runs on the "
                 "tensor tier", p->mode == KILN_MODE_VARLEN ? "varlen" : "paged KV");
        return 0;
    }
    if (p->seqlen_q >= big || p->seqlen_k >= big || p->batch >= big || p->heads_q >= big) {
        if (why) snprintf(why, cap, "the hopper tier needs seqlen_q, seqlen_k, batch and heads below "
                 "2^29 (32-bit tensor-map coordinates and mask arithmetic)");
        return 0;
    }
    {
        const int64_t st[] = {p->q_stride_batch, p->q_stride_row, p->q_stride_head,
                              p->k_stride_batch, p->k_stride_row, p->k_stride_head,
                              p->v_stride_batch, p->v_stride_row, p->v_stride_head,
                              p->o_stride_batch, p->o_stride_row, p->o_stride_head};
        int ok = aligned16_or_null(p->q) && aligned16_or_null(p->k) &&
                 aligned16_or_null(p->v) && aligned16_or_null(p->out);
        for (size_t i = 0; i < COUNT(st); ++i)
            ok = ok && st[i] % 8 == 0 && st[i] >= 0 && st[i] < ((int64_t)1 << 38);
        if (!ok) {
            if (why) snprintf(why, cap, "the hopper tier reads q, k and v through the tensor copy "
                     "engine: q, k, v and out must start on 16-byte boundaries and every "
                     "stride must be a multiple of 8 elements");
            return 0;
        }
    }
    return 1;
}

kiln_status kiln_gpu_variant_for_attn_tier(const kiln_attn_problem *p, const kiln_target *t,
                                           kiln_gpu_tier_request want, kiln_gpu_variant *v)
{
    char why[256];
    int covered;
    if (want == KILN_GPU_TIER_WANT_GENERIC) return kiln_gpu_variant_for_attn(p, v);
    if (want == KILN_GPU_TIER_WANT_HOPPER || want == KILN_GPU_TIER_AUTO) {
        /* The reason is formatted only when it becomes an error. */
        covered = kiln_gpu_hopper_covers(p, t, want == KILN_GPU_TIER_WANT_HOPPER ? why : NULL,
                                         sizeof why);
        KILN_FAIL_IF(want == KILN_GPU_TIER_WANT_HOPPER && !covered, KILN_UNSUPPORTED,
                     "KILN_GPU_TIER=hopper: %s", why);
        if (covered && (want == KILN_GPU_TIER_WANT_HOPPER || p->seqlen_q >= 64)) {
            KILN_FORWARD(kiln_gpu_variant_for_attn(p, v));
            v->head_dim = (int32_t)p->head_dim;
            v->tier = KILN_GPU_TIER_ID_HOPPER;
            /* Long key ranges take the long variant (attention_hopper.h says why). */
            const int64_t per_split = p->seqlen_k / (p->num_splits > 1 ? p->num_splits : 1);
            v->wide = KILN_HOPPER_LONG_COVERS(v->head_dim, v->mask) &&
                      per_split >= KILN_HOPPER_LONG_MIN_KEYS;
            return KILN_OK;
        }
    }
    /* The reason is formatted only when it becomes an error. */
    covered = kiln_gpu_tensor_covers(p, t, want == KILN_GPU_TIER_WANT_TENSOR ? why : NULL,
                                     sizeof why);
    KILN_FAIL_IF(want == KILN_GPU_TIER_WANT_TENSOR && !covered, KILN_UNSUPPORTED,
                 "KILN_GPU_TIER=tensor: %s", why);
    KILN_FORWARD(kiln_gpu_variant_for_attn(p, v));
    if (covered) {
        v->head_dim = kiln_gpu_tensor_head_dim(p->head_dim);
        v->tier = KILN_GPU_TIER_ID_TENSOR;
        v->family = amd_family(t);
        v->wide = !v->family && tq_long(t, v->head_dim, v->mode);
        if (!v->family && kiln_gpu_decode_shaped(p->seqlen_q, p->heads_q, p->heads_kv) &&
            kiln_gpu_decode_head_dim(p->head_dim) && p->num_splits <= KILN_DECODE_MAX_SPLITS) {
            v->kind = KILN_KERNEL_DECODE;
            v->head_dim = (int32_t)p->head_dim;
            v->wide = 0;
        }
    }
    return KILN_OK;
}

int kiln_gpu_decode_head_dim(int64_t head_dim) { return head_dim == 64 || head_dim == 128; }

int kiln_gpu_decode_shaped(int64_t seqlen_q, int64_t heads_q, int64_t heads_kv)
{
    const int64_t group = heads_kv > 0 ? heads_q / heads_kv : 1;
    return seqlen_q >= 1 && seqlen_q <= KILN_DECODE_MAX_Q &&
           seqlen_q * group <= KILN_DECODE_MAX_ROWS;
}

kiln_status kiln_gpu_tier_from_env(kiln_gpu_tier_request *want)
{
    char env[32];
    *want = KILN_GPU_TIER_AUTO;
    if (kiln_env_get("KILN_GPU_TIER", env, sizeof env) && env[0]) {
        if (strcmp(env, "generic") == 0)
            *want = KILN_GPU_TIER_WANT_GENERIC;
        else if (strcmp(env, "tensor") == 0)
            *want = KILN_GPU_TIER_WANT_TENSOR;
        else if (strcmp(env, "hopper") == 0)
            *want = KILN_GPU_TIER_WANT_HOPPER;
        else
            KILN_FAIL_IF(strcmp(env, "auto") != 0, KILN_INVALID_ARGUMENT,
                         "KILN_GPU_TIER=%s: expected auto, generic, tensor or hopper", env);
    }
    return KILN_OK;
}

const char *kiln_gpu_variant_tier_name(const kiln_gpu_variant *v)
{
    return v->tier == KILN_GPU_TIER_ID_HOPPER   ? KILN_GPU_TIER_HOPPER
           : v->tier == KILN_GPU_TIER_ID_TENSOR ? KILN_GPU_TIER_TENSOR
                                                : KILN_GPU_TIER_GENERIC;
}

kiln_status kiln_gpu_variant_for_combine(kiln_dtype dtype, int64_t head_dim,
                                         kiln_gpu_variant *v)
{
    KILN_FORWARD(attn_dtype(dtype));
    memset(v, 0, sizeof *v);
    v->kind = KILN_KERNEL_COMBINE;
    v->dtype = dtype;
    return head_dim_bound(head_dim, &v->head_dim);
}

kiln_status kiln_gpu_variant_for_act(kiln_activation act, kiln_dtype dtype,
                                     kiln_gpu_variant *v)
{
    KILN_FAIL_IF(dtype != KILN_F32 && dtype != KILN_F16 && dtype != KILN_BF16,
                 KILN_UNSUPPORTED, "activations take f32, f16 or bf16, not %s",
                 kiln_dtype_name(dtype));
    KILN_FAIL_IF(act != KILN_ACT_SILU && act != KILN_ACT_GELU && act != KILN_ACT_GELU_TANH,
                 KILN_UNSUPPORTED, "unknown activation %d", (int)act);
    memset(v, 0, sizeof *v);
    v->kind = KILN_KERNEL_ACT;
    v->dtype = dtype;
    v->act = act;
    return KILN_OK;
}

void kiln_gpu_variant_desc(const kiln_gpu_variant *v, kiln_variant_desc *d)
{
    static const kiln_variant_op ops[] = {KILN_VARIANT_ATTN, KILN_VARIANT_COMBINE,
                                          KILN_VARIANT_ACT, KILN_VARIANT_DECODE};
    d->op = ops[v->kind];
    d->dtype = v->dtype;
    d->head_dim = v->head_dim;
    d->mask = v->mask;
    d->mode = v->mode;
    d->act = v->act;
    d->tier = v->kind == KILN_KERNEL_ATTN || v->kind == KILN_KERNEL_DECODE
                  ? kiln_gpu_variant_tier_name(v)
                  : KILN_GPU_TIER_GENERIC;
    d->block_k = !v->wide || v->tier == KILN_GPU_TIER_ID_HOPPER
                     ? 0
                     : KILN_TQ_BLOCK_K(v->head_dim, tq_flags(v));
    d->block_q = v->wide && v->tier == KILN_GPU_TIER_ID_HOPPER ? kiln_gpu_hopper_block_q(v) : 0;
}

void kiln_gpu_variant_key(const kiln_gpu_variant *v, char *buf, size_t cap)
{
    kiln_variant_desc d;
    kiln_gpu_variant_desc(v, &d);
    kiln_variant_key(&d, buf, cap);
}

uint32_t kiln_gpu_variant_id(const kiln_gpu_variant *v)
{
    return (uint32_t)v->kind | (uint32_t)v->dtype << 2 | (uint32_t)v->head_dim << 5 |
           (uint32_t)v->mask << 14 | (uint32_t)v->mode << 16 | (uint32_t)v->act << 18 |
           (uint32_t)v->tier << 20 | (uint32_t)v->family << 24 | (uint32_t)v->wide << 28;
}

const char *kiln_gpu_variant_file(const kiln_gpu_variant *v)
{
    switch (v->kind) {
    case KILN_KERNEL_ATTN:
        if (v->tier == KILN_GPU_TIER_ID_HOPPER) return "attention_hopper.cu";
        if (v->tier != KILN_GPU_TIER_ID_TENSOR) return "attention.cu";
        return v->family ? "attention_wmma.cu" : "attention_mma.cu";
    case KILN_KERNEL_COMBINE: return "combine.cu";
    case KILN_KERNEL_ACT: return "activation.cu";
    case KILN_KERNEL_DECODE: return "decode.cu";
    }
    return "?";
}

const char *kiln_gpu_variant_kernel(const kiln_gpu_variant *v)
{
    switch (v->kind) {
    case KILN_KERNEL_ATTN: return "kiln_attn_fwd";
    case KILN_KERNEL_COMBINE: return "kiln_attn_combine";
    case KILN_KERNEL_ACT: return "kiln_act_and_mul";
    case KILN_KERNEL_DECODE: return "kiln_attn_decode";
    }
    return "?";
}

int kiln_gpu_variant_defines(const kiln_gpu_variant *v, kiln_gpu_defines *s)
{
    int n = 0;
    /* kiln_dtype values are the KILN_DTYPE numbers the kernels expect. */
    snprintf(s->text[n++], sizeof s->text[0], "-DKILN_DTYPE=%d", (int)v->dtype);
    if (v->kind == KILN_KERNEL_ACT) {
        snprintf(s->text[n++], sizeof s->text[0], "-DKILN_ACT=%d", (int)v->act);
    } else {
        snprintf(s->text[n++], sizeof s->text[0], "-DKILN_HEAD_DIM=%d", (int)v->head_dim);
        if (v->kind == KILN_KERNEL_ATTN || v->kind == KILN_KERNEL_DECODE) {
            snprintf(s->text[n++], sizeof s->text[0], "-DKILN_MASK=%d", (int)v->mask);
            snprintf(s->text[n++], sizeof s->text[0], "-DKILN_MODE=%d", (int)v->mode);
            if (v->family)
                snprintf(s->text[n++], sizeof s->text[0], "-DKILN_WM_FAMILY=%d",
                         (int)v->family);
            if (v->wide)
                snprintf(s->text[n++], sizeof s->text[0], "%s",
                         v->tier == KILN_GPU_TIER_ID_HOPPER ? "-DKILN_HOPPER_LONG=1"
                                                            : "-DKILN_TQ_LONG_TILES=1");
        }
    }
    for (int i = 0; i < n; ++i) s->ptr[i] = s->text[i];
    return n;
}

void kiln_gpu_attn_args(kiln_attn_args *a, const kiln_attn_problem *p, int32_t num_splits,
                        void *workspace)
{
    memset(a, 0, sizeof *a);
    a->q = p->q;
    a->k = p->k;
    a->v = p->v;
    a->out = p->out;
    a->lse = p->lse;
    a->cu_seqlens_q = p->cu_seqlens_q;
    a->cu_seqlens_k = p->cu_seqlens_k;
    a->block_table = p->block_table;
    a->seqlens_k = p->seqlens_k;
    a->alibi = p->alibi;
    a->num_splits = num_splits > 1 ? num_splits : 1;
    if (a->num_splits > 1) {
        /* 16-byte aligned (the workspace size leaves room), so kernels may read the
         * partial outputs 16 bytes at a time. */
        a->ws_out = (float *)(((uintptr_t)workspace + 15u) & ~(uintptr_t)15u);
        a->ws_lse = a->ws_out + (size_t)a->num_splits * (size_t)p->rows_q *
                                    (size_t)p->heads_q * (size_t)p->head_dim;
    }
    a->batch = p->batch;
    a->heads_q = p->heads_q;
    a->heads_kv = p->heads_kv;
    a->head_dim = p->head_dim;
    a->seqlen_q = p->seqlen_q;
    a->seqlen_k = p->seqlen_k;
    a->rows_q = p->rows_q;
    a->q_stride_batch = p->q_stride_batch;
    a->q_stride_row = p->q_stride_row;
    a->q_stride_head = p->q_stride_head;
    a->k_stride_batch = p->k_stride_batch;
    a->k_stride_row = p->k_stride_row;
    a->k_stride_head = p->k_stride_head;
    a->v_stride_batch = p->v_stride_batch;
    a->v_stride_row = p->v_stride_row;
    a->v_stride_head = p->v_stride_head;
    a->o_stride_batch = p->o_stride_batch;
    a->o_stride_row = p->o_stride_row;
    a->o_stride_head = p->o_stride_head;
    a->lse_stride_batch = p->lse_stride_batch;
    a->lse_stride_head = p->lse_stride_head;
    a->lse_stride_row = p->lse_stride_row;
    a->block_table_stride = p->block_table_stride;
    a->page_size = p->page_size > 0 ? p->page_size : 1;
    a->window_left = p->window_left;
    a->window_right = p->window_right;
    a->alibi_stride_batch = p->alibi_stride_batch;
    a->scale = p->scale;
    a->softcap = p->softcap;
}

void kiln_gpu_act_args(kiln_act_args *a, const kiln_act_problem *p)
{
    memset(a, 0, sizeof *a);
    a->x = p->x;
    a->out = p->out;
    a->rows = p->rows;
    a->d = p->d;
    a->lead_rank = p->lead_rank;
    for (int i = 0; i < 3; ++i) {
        a->lead_shape[i] = p->lead_shape[i];
        a->x_stride[i] = p->x_stride[i];
        a->o_stride[i] = p->o_stride[i];
    }
    /* 16-byte accesses need every row start of both halves and of out on a 16-byte
     * boundary: aligned bases, and d and the leading strides whole multiples of a vector. */
    {
        const int64_t vec = 16 / (int64_t)kiln_dtype_size(p->dtype);
        int ok = p->d % vec == 0 && (uintptr_t)p->x % 16 == 0 && (uintptr_t)p->out % 16 == 0;
        for (int i = 0; i < p->lead_rank; ++i)
            ok = ok && p->x_stride[i] % vec == 0 && p->o_stride[i] % vec == 0;
        a->vec = ok ? (int32_t)vec : 1;
    }
}

static kiln_status fit(const char *kernel, const char *what, int64_t value, int64_t limit,
                       unsigned *out)
{
    KILN_FAIL_IF(value > limit, KILN_UNSUPPORTED,
                 "%s needs a grid %s of %lld; the launch limit is %lld", kernel, what,
                 (long long)value, (long long)limit);
    *out = (unsigned)value;
    return KILN_OK;
}

#define GRID_X_MAX 2147483647LL
#define GRID_YZ_MAX 65535LL

kiln_status kiln_gpu_attn_grid(const kiln_attn_args *a, unsigned grid[3], unsigned block[3])
{
    /* Rows are (query, head) pairs of the query heads sharing one KV head. */
    const int64_t group = a->heads_kv > 0 ? a->heads_q / a->heads_kv : 1;
    KILN_FORWARD(fit("attention", "x (query tiles)",
                     (a->seqlen_q * group + KILN_ATTN_BLOCK_Q - 1) / KILN_ATTN_BLOCK_Q,
                     GRID_X_MAX, &grid[0]));
    KILN_FORWARD(fit("attention", "y (heads_kv)", a->heads_kv, GRID_YZ_MAX, &grid[1]));
    KILN_FORWARD(fit("attention", "z (batch x splits)", a->batch * a->num_splits, GRID_YZ_MAX,
                     &grid[2]));
    block[0] = KILN_ATTN_THREADS;
    block[1] = block[2] = 1;
    return KILN_OK;
}

kiln_status kiln_gpu_attn_grid_for(const kiln_gpu_variant *v, const kiln_attn_args *a,
                                   unsigned grid[3], unsigned block[3])
{
    const int64_t group = a->heads_kv > 0 ? a->heads_q / a->heads_kv : 1;
    if (v->kind == KILN_KERNEL_DECODE) {
        const int64_t row_blocks =
            (a->seqlen_q * group + KILN_DECODE_ROWS - 1) / KILN_DECODE_ROWS;
        KILN_FORWARD(fit("decode attention", "x (row blocks x splits)",
                         row_blocks * a->num_splits, GRID_X_MAX, &grid[0]));
        KILN_FORWARD(fit("decode attention", "y (heads_kv)", a->heads_kv, GRID_YZ_MAX,
                         &grid[1]));
        KILN_FORWARD(fit("decode attention", "z (batch)", a->batch, GRID_YZ_MAX, &grid[2]));
        block[0] = KILN_DECODE_THREADS;
        block[1] = block[2] = 1;
        return KILN_OK;
    }
    KILN_FORWARD(kiln_gpu_attn_grid(a, grid, block));
    const int64_t bq = v->family ? KILN_ATTN_WMMA_BLOCK_Q : KILN_TQ_BLOCK_Q(v->head_dim, tq_flags(v));
    if (v->tier == KILN_GPU_TIER_ID_TENSOR)
        KILN_FORWARD(fit("attention", "x (query tiles)", (a->seqlen_q * group + bq - 1) / bq,
                         GRID_X_MAX, &grid[0]));
    if (v->tier == KILN_GPU_TIER_ID_HOPPER) {
        /* One head's query tile per block: (tiles, heads_q, batch x splits). */
        const int64_t rows = kiln_gpu_hopper_block_q(v);
        KILN_FORWARD(fit("attention", "x (query tiles)", (a->seqlen_q + rows - 1) / rows,
                         GRID_X_MAX, &grid[0]));
        KILN_FORWARD(fit("attention", "y (heads_q)", a->heads_q, GRID_YZ_MAX, &grid[1]));
    }
    block[0] = (unsigned)kiln_gpu_variant_threads(v);
    return KILN_OK;
}

int32_t kiln_gpu_variant_threads(const kiln_gpu_variant *v)
{
    switch (v->kind) {
    case KILN_KERNEL_ATTN:
        if (v->tier == KILN_GPU_TIER_ID_HOPPER) return KILN_HOPPER_THREADS(v->head_dim, (int)v->mask, v->wide);
        if (v->tier == KILN_GPU_TIER_ID_TENSOR)
            return v->family ? KILN_ATTN_WMMA_THREADS(v->family) : KILN_TQ_THREADS(v->head_dim, tq_flags(v));
        return KILN_ATTN_THREADS;
    case KILN_KERNEL_COMBINE: return KILN_COMBINE_THREADS;
    case KILN_KERNEL_ACT: return KILN_ACT_THREADS;
    case KILN_KERNEL_DECODE: return KILN_DECODE_THREADS;
    }
    return 0;
}

int32_t kiln_gpu_variant_dynamic_smem(const kiln_gpu_variant *v)
{
    if (v->kind != KILN_KERNEL_ATTN) return 0;
    return v->tier == KILN_GPU_TIER_ID_HOPPER
               ? KILN_HOPPER_SMEM_BYTES(v->head_dim, (int)v->mask, v->wide)
           : v->tier == KILN_GPU_TIER_ID_TENSOR ? KILN_TQ_SMEM_BYTES(v->head_dim, tq_flags(v))
                                                : 0;
}

kiln_status kiln_gpu_combine_grid(const kiln_attn_args *a, unsigned grid[3], unsigned block[3])
{
    KILN_FORWARD(fit("split combine", "x (query rows)", a->seqlen_q, GRID_X_MAX, &grid[0]));
    KILN_FORWARD(fit("split combine", "y (heads_q)", a->heads_q, GRID_YZ_MAX, &grid[1]));
    KILN_FORWARD(fit("split combine", "z (batch)", a->batch, GRID_YZ_MAX, &grid[2]));
    block[0] = KILN_COMBINE_THREADS;
    block[1] = block[2] = 1;
    return KILN_OK;
}

kiln_status kiln_gpu_act_grid(const kiln_act_args *a, unsigned grid[3], unsigned block[3])
{
    KILN_FORWARD(fit("activation", "x (rows)", a->rows, GRID_X_MAX, &grid[0]));
    const int64_t per_block = (int64_t)KILN_ACT_THREADS * (a->vec > 1 ? a->vec : 1);
    KILN_FORWARD(fit("activation", "y (column blocks)", (a->d + per_block - 1) / per_block,
                     GRID_YZ_MAX, &grid[1]));
    grid[2] = 1;
    block[0] = KILN_ACT_THREADS;
    block[1] = block[2] = 1;
    return KILN_OK;
}

int32_t kiln_gpu_hopper_block_k(const kiln_gpu_variant *v)
{
    return KILN_HOPPER_BLOCK_K(v->head_dim, (int)v->mask);
}

int32_t kiln_gpu_hopper_block_q(const kiln_gpu_variant *v)
{
    return KILN_HOPPER_BLOCK_Q(v->head_dim, (int)v->mask, v->wide);
}
