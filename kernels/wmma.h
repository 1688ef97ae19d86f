/*
 * Wave-level matrix operations of the AMD tensor tier, the only place their instructions
 * appear. KILN_WM_FAMILY (kernels/attention_wmma.h) picks the family; every family
 * computes D = A B + C on one 16 x 16 x 16 tile per wave with fp32 accumulation, the element
 * type from KILN_DTYPE. With lane = the lane in the wave and h = lane / 16:
 *   A (16 x 16, M x K): lane holds row m = lane % 16, its element e is A[m][kiln_wm_ab_k(lane, e)]
 *   B (16 x 16, K x N): lane holds column n = lane % 16, element e is B[kiln_wm_ab_k(lane, e)][n]
 *   C, D (16 x 16 fp32): lane holds column n = lane % 16, element e is C[kiln_wm_c_row(lane, e)][n]
 * per family (the instruction's operand and result layouts in AMD's ISA guides):
 *   gfx11  "RDNA3" Instruction Set Architecture Reference Guide, section 7.9 "Wave Matrix
 *          Multiply Accumulate (WMMA)": A and B hold all 16 K values per lane (KILN_WM_AB_N
 *          16), lanes 16-31 repeating lanes 0-15; C/D VGPR e holds row 2e in lanes 0-15
 *          and row 2e + 1 in lanes 16-31: ab_k = e, c_row = 2e + h.
 *   gfx12  "RDNA4" Instruction Set Architecture Reference Guide, WMMA matrix layouts: no
 *          repetition, 8 K values per lane (lanes 0-15 K 0-7, lanes 16-31 K 8-15); C/D VGPR
 *          e holds row e in lanes 0-15 and row e + 8 in lanes 16-31: ab_k = 8h + e,
 *          c_row = 8h + e.
 *   MFMA   "AMD Instinct MI300" (CDNA3) ISA Reference Guide, section 7 "Matrix Arithmetic
 *          Instructions", and AMD's matrix instruction calculator for
 *          v_mfma_f32_16x16x16_{f16,bf16}: wave64, A[i][k] in lane i + 16 (k / 4) item
 *          k % 4 (B likewise by column), D[i][j] in lane j + 16 (i / 4) item i % 4:
 *          ab_k = 4h + e, c_row = 4h + e.
 * The CPU emulation (tests/gpu/host_amd_matrix.h, named by KILN_HOST_AMD_MATRIX_H) replaces
 * the instructions below with its own transcription of the same layouts; the kernel's
 * helpers here (kiln_wm_ab_k, kiln_wm_c_row, kiln_wm_p_operand) are what it checks.
 *
 * kiln_wm_mma(a, b, c): D = A B + C.
 * kiln_wm_shfl_xor(x, m): x from lane (lane ^ m) of the same wave (ds_bpermute).
 * kiln_wm_load8(p), kiln_wm_store8(p, x): 8 elements (16 bytes, 16-byte aligned).
 * Every lane of the wave must make each call (wave-uniform control flow).
 */
#ifndef KILN_WMMA_H
#define KILN_WMMA_H

#include "kiln_device.h"
#include "attention_wmma.h"

#ifndef KILN_WM_FAMILY
#error "KILN_WM_FAMILY must be defined (kernels/attention_wmma.h)"
#endif

#if KILN_WM_FAMILY == KILN_WM_MFMA
#define KILN_WM_WAVE 64
#define KILN_WM_AB_N 4
#define KILN_WM_C_N 4
#elif KILN_WM_FAMILY == KILN_WM_GFX12
#define KILN_WM_WAVE 32
#define KILN_WM_AB_N 8
#define KILN_WM_C_N 8
#elif KILN_WM_FAMILY == KILN_WM_GFX11
#define KILN_WM_WAVE 32
#define KILN_WM_AB_N 16
#define KILN_WM_C_N 8
#else
#error "unknown KILN_WM_FAMILY"
#endif

KILN_DEV kiln_i32 kiln_wm_ab_k(kiln_i32 lane, kiln_i32 e)
{
#if KILN_WM_FAMILY == KILN_WM_GFX11
    (void)lane;
    return e;
#elif KILN_WM_FAMILY == KILN_WM_GFX12
    return 8 * ((lane >> 4) & 1) + e;
#else
    return 4 * (lane >> 4) + e;
#endif
}

KILN_DEV kiln_i32 kiln_wm_c_row(kiln_i32 lane, kiln_i32 e)
{
#if KILN_WM_FAMILY == KILN_WM_GFX11
    return 2 * e + ((lane >> 4) & 1);
#elif KILN_WM_FAMILY == KILN_WM_GFX12
    return 8 * ((lane >> 4) & 1) + e;
#else
    return 4 * (lane >> 4) + e;
#endif
}

#if defined(KILN_HOST_AMD_MATRIX_H)
#include KILN_HOST_AMD_MATRIX_H
#else /* clang -x hip / hipRTC for amdgcn */

#define KILN_WM_ALIGN16 __attribute__((aligned(16)))
#define kiln_wm_grid_x() \
    ((kiln_i64)(__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x()))

typedef unsigned short kiln_wm_ab __attribute__((ext_vector_type(KILN_WM_AB_N)));
typedef float kiln_wm_c __attribute__((ext_vector_type(KILN_WM_C_N)));
typedef unsigned short kiln_wm_u16x8 __attribute__((ext_vector_type(8)));
typedef short kiln_wm_s16v __attribute__((ext_vector_type(KILN_WM_AB_N)));
typedef _Float16 kiln_wm_h16v __attribute__((ext_vector_type(KILN_WM_AB_N)));

KILN_DEV float kiln_wm_exp2f(float x) { return __builtin_exp2f(x); }

KILN_DEV kiln_wm_u16x8 kiln_wm_load8(const kiln_elem *p) { return *(const kiln_wm_u16x8 *)p; }
KILN_DEV void kiln_wm_store8(kiln_elem *p, kiln_wm_u16x8 x) { *(kiln_wm_u16x8 *)p = x; }

KILN_DEV kiln_u32 kiln_wm_shfl_xor(kiln_u32 x, kiln_i32 m)
{
    const kiln_i32 lane = kiln_thread_x() % KILN_WM_WAVE;
    return (kiln_u32)__builtin_amdgcn_ds_bpermute((lane ^ m) << 2, (int)x);
}

KILN_DEV kiln_wm_c kiln_wm_mma(kiln_wm_ab a, kiln_wm_ab b, kiln_wm_c c)
{
#if KILN_WM_FAMILY == KILN_WM_GFX11 && KILN_DTYPE == 2
    return __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(kiln_wm_s16v, a),
                                                       __builtin_bit_cast(kiln_wm_s16v, b), c);
#elif KILN_WM_FAMILY == KILN_WM_GFX11
    return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(kiln_wm_h16v, a),
                                                      __builtin_bit_cast(kiln_wm_h16v, b), c);
#elif KILN_WM_FAMILY == KILN_WM_GFX12 && KILN_DTYPE == 2
    return __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(
        __builtin_bit_cast(kiln_wm_s16v, a), __builtin_bit_cast(kiln_wm_s16v, b), c);
#elif KILN_WM_FAMILY == KILN_WM_GFX12
    return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(
        __builtin_bit_cast(kiln_wm_h16v, a), __builtin_bit_cast(kiln_wm_h16v, b), c);
#elif KILN_DTYPE == 2
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(kiln_wm_s16v, a),
                                                     __builtin_bit_cast(kiln_wm_s16v, b), c,
                                                     0, 0, 0);
#else
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(kiln_wm_h16v, a),
                                                 __builtin_bit_cast(kiln_wm_h16v, b), c, 0, 0,
                                                 0);
#endif
}

#endif

/* The A operand of a row-major 16 x 16 tile at t (pitch elements between rows), or the B
 * operand of a column-major one: lane % 16 picks the row, and in every family a lane's
 * elements are consecutive (ab_k(lane, e) = ab_k(lane, 0) + e), so the device reads them
 * with one or two vector loads (t and pitch keep them 16-byte aligned on gfx11 / gfx12,
 * 8-byte on MFMA). */
KILN_DEV kiln_wm_ab kiln_wm_load_frag(const kiln_elem *t, kiln_i32 pitch)
{
    const kiln_i32 lane = kiln_thread_x() % KILN_WM_WAVE;
    const kiln_elem *r = t + (lane % 16) * pitch;
    kiln_wm_ab f;
#if defined(KILN_HOST_AMD_MATRIX_H)
    for (kiln_i32 e = 0; e < KILN_WM_AB_N; ++e) f[e] = r[kiln_wm_ab_k(lane, e)];
#elif KILN_WM_FAMILY == KILN_WM_GFX11
    const kiln_wm_u16x8 lo = *(const kiln_wm_u16x8 *)(r + kiln_wm_ab_k(lane, 0));
    const kiln_wm_u16x8 hi = *(const kiln_wm_u16x8 *)(r + kiln_wm_ab_k(lane, 8));
    f = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    f = *(const kiln_wm_ab *)(r + kiln_wm_ab_k(lane, 0));
#endif
    return f;
}

/* The B operand (keys along K, this lane's query as the column) of probabilities laid out
 * as a C result (keys as rows): on gfx12 and MFMA the two layouts put the same keys in the
 * same lane, so B is the rounded C. On gfx11 a lane's C holds the keys of one parity while
 * its B needs all 16: the other parity comes from lane ^ 16, two keys per shuffle. */
KILN_DEV kiln_wm_ab kiln_wm_p_operand(const float p[KILN_WM_C_N])
{
    kiln_wm_ab b;
#if KILN_WM_FAMILY == KILN_WM_GFX11
    const int h = (kiln_thread_x() >> 4) & 1;
    kiln_u32 mine[4], other[4];
    #pragma unroll
    for (kiln_i32 i = 0; i < 4; ++i) {
        mine[i] = (kiln_u32)kiln_f32_to_elem(p[2 * i]) |
                  ((kiln_u32)kiln_f32_to_elem(p[2 * i + 1]) << 16);
        other[i] = kiln_wm_shfl_xor(mine[i], 16);
    }
    #pragma unroll
    for (kiln_i32 e = 0; e < 8; ++e) {
        const kiln_u16 own = (kiln_u16)(e & 1 ? mine[e / 2] >> 16 : mine[e / 2] & 0xffffu);
        const kiln_u16 far = (kiln_u16)(e & 1 ? other[e / 2] >> 16 : other[e / 2] & 0xffffu);
        b[2 * e] = h ? far : own;
        b[2 * e + 1] = h ? own : far;
    }
#else
    #pragma unroll
    for (kiln_i32 e = 0; e < KILN_WM_AB_N; ++e) b[e] = kiln_f32_to_elem(p[e]);
#endif
    return b;
}

#endif
