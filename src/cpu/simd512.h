/* AVX-512 helpers shared by the avx512 and avx512bf16 kernel files (both compiled with
 * AVX-512 flags; nothing else may include this). */
#ifndef KILN_CPU_SIMD512_H
#define KILN_CPU_SIMD512_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "cpu.h"

/* exp(x) for the softmax: x <= 0 after the row max is subtracted. Inputs below -87 give 0
 * exactly (masked keys, and no denormals reach the P.V products). Degree-6 polynomial on
 * x - n ln2, |error| ~ 1 ulp, then scalef by 2^n. */
static inline __m512 kiln_exp512(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.0f);
    __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ);
    x = _mm512_max_ps(x, lo);
    x = _mm512_min_ps(x, _mm512_set1_ps(88.3f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.3888889e-3f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3333333e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1666667e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666667e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
}

/* exp over the whole float range, clamped to finite results (for activations). */
static inline __m512 kiln_exp512_full(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    return kiln_exp512(x);
}

/* Online-softmax update of one row of a register block from its 64 scaled scores: new max,
 * rescale factor, probabilities p[4] and running sum. Returns 0 when the row has seen no
 * visible key yet (p is zero, alpha 1, state unchanged). */
static inline int kiln_softmax_row512(const float *srow, float *m, float *l, float *alpha,
                                      __m512 p[4]) {
    __m512 x0 = _mm512_loadu_ps(srow), x1 = _mm512_loadu_ps(srow + 16);
    __m512 x2 = _mm512_loadu_ps(srow + 32), x3 = _mm512_loadu_ps(srow + 48);
    float mx = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(x0, x1), _mm512_max_ps(x2, x3)));
    float mold = *m, mnew = mold > mx ? mold : mx;
    if (mnew == -INFINITY) {
        p[0] = p[1] = p[2] = p[3] = _mm512_setzero_ps();
        *alpha = 1.0f;
        return 0;
    }
    __m512 mb = _mm512_set1_ps(mnew);
    p[0] = kiln_exp512(_mm512_sub_ps(x0, mb));
    p[1] = kiln_exp512(_mm512_sub_ps(x1, mb));
    p[2] = kiln_exp512(_mm512_sub_ps(x2, mb));
    p[3] = kiln_exp512(_mm512_sub_ps(x3, mb));
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(p[0], p[1]), _mm512_add_ps(p[2], p[3])));
    float a = mold == -INFINITY ? 0.0f : expf(mold - mnew);
    *alpha = a;
    *m = mnew;
    *l = *l * a + sum;
    return 1;
}

/* 16 x 16 transpose of 32-bit lanes. */
static inline void kiln_transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

/* 16 elements of dtype dt at src[i..] (only lanes in mask) as f32. */
static inline __m512 kiln_load16(const void *src, int64_t i, kiln_dtype dt, __mmask16 mask) {
    switch (dt) {
    case KILN_BF16:
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, (const uint16_t *)src + i)), 16));
    case KILN_F16:
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, (const uint16_t *)src + i));
    default: return _mm512_maskz_loadu_ps(mask, (const float *)src + i);
    }
}

/* Stores the lanes in mask of x to dst[i..] as dtype dt (round to nearest even). */
static inline void kiln_store16(void *dst, int64_t i, kiln_dtype dt, __m512 x, __mmask16 mask) {
    switch (dt) {
    case KILN_BF16: {
        __m512i u = _mm512_castps_si512(x);
        __m512i r = _mm512_add_epi32(
            u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
        r = _mm512_srli_epi32(r, 16);
        __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
        _mm256_mask_storeu_epi16((uint16_t *)dst + i, mask, _mm512_cvtepi32_epi16(r));
        break;
    }
    case KILN_F16:
        _mm256_mask_storeu_epi16((uint16_t *)dst + i, mask,
                                 _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        break;
    default: _mm512_mask_storeu_ps((float *)dst + i, mask, x); break;
    }
}

static inline __mmask16 kiln_mask16(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

#endif
