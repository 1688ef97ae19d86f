/* AVX-512 helpers shared by the avx512 and avx512bf16 kernel files (both compiled with
 * AVX-512 flags; nothing else may include this). */
#ifndef KILN_CPU_SIMD512_H
#define KILN_CPU_SIMD512_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "cpu.h"

/* exp(x) for the activations: inputs clamped to [-87, 88.3] so results stay finite and
 * normal. Degree-6 polynomial on x - n ln2 (|error| ~1 ulp), then scalef by 2^n. */
static inline __m512 kiln_exp512_full(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
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
    return _mm512_scalef_ps(p, n);
}

/* 2^t for t <= 0, t < -150 giving exactly 0. DEG 6 (|rel error| ~1e-7) for f32 results,
 * DEG 4 (~4e-5) where the result is rounded to bf16 anyway. */
#define KILN_EXP2_512(DEG)                                                                    \
    static inline __m512 kiln_exp2_512_d##DEG(__m512 t) {                                    \
        t = _mm512_max_ps(_mm512_set1_ps(-160.0f), t); /* NaN in t stays NaN */             \
        __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);   \
        __m512 f = _mm512_sub_ps(t, n);                                                      \
        __m512 p;                                                                            \
        if (DEG >= 6) {                                                                      \
            p = _mm512_set1_ps(1.5403530e-4f);                                               \
            p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558e-3f));                        \
            p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291e-3f));                        \
        } else {                                                                             \
            p = _mm512_set1_ps(9.6181291e-3f);                                               \
        }                                                                                    \
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504109e-2f));                            \
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022651e-1f));                            \
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718e-1f));                            \
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));                                     \
        return _mm512_scalef_ps(p, n);                                                       \
    }
KILN_EXP2_512(6)
KILN_EXP2_512(4)

/*
 * Online-softmax update of a register block (KILN_CPU_ROWS rows of KILN_CPU_TILE scaled
 * scores in s): row maxima, the rescale factors alpha of the old accumulators, the
 * probabilities and the running sums (16 lanes per row in l, added up by the driver).
 * Probabilities go to s in place as f32 (pbf NULL) or to pbf as bf16 pairs.
 * Once a row's max has settled, most tiles raise no lane above it: those skip the
 * horizontal max and the rescale (alpha 1). A row that has seen no visible key keeps
 * m = -inf and gets probabilities exp(-inf - 0) = 0.
 */
static inline void kiln_softmax_block512(float *s, float *m, float *l, float *alpha,
                                         uint32_t *pbf) {
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
#if !defined(__AVX512BF16__)
    (void)pbf; /* bf16 probabilities only exist where the level is compiled */
#endif
    for (int r = 0; r < KILN_CPU_ROWS; r++) {
        float *x = s + r * KILN_CPU_TILE;
        __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
        __m512 x2 = _mm512_loadu_ps(x + 32), x3 = _mm512_loadu_ps(x + 48);
        __m512 vmax = _mm512_max_ps(_mm512_max_ps(x0, x1), _mm512_max_ps(x2, x3));
        __mmask16 nan = _mm512_cmp_ps_mask(x0, x1, _CMP_UNORD_Q) |
                        _mm512_cmp_ps_mask(x2, x3, _CMP_UNORD_Q);
        float mold = m[r], a = 1.0f;
        if (nan && mold == mold) {
            a = NAN;
            m[r] = mold = NAN;
        } else if (_mm512_cmp_ps_mask(vmax, _mm512_set1_ps(mold), _CMP_GT_OQ)) {
            float mnew = _mm512_reduce_max_ps(vmax);
            /* exp(mold - mnew), 0 when mold is -inf */
            a = _mm_cvtss_f32(_mm512_castps512_ps128(
                kiln_exp2_512_d6(_mm512_set1_ps((mold - mnew) * 1.44269504088896341f))));
            m[r] = mold = mnew;
        }
        alpha[r] = a;
        __m512 mb = _mm512_set1_ps(mold == -INFINITY ? 0.0f : mold * 1.44269504088896341f);
        __m512 p0, p1, p2, p3;
#if defined(__AVX512BF16__)
        if (pbf) {
            p0 = kiln_exp2_512_d4(_mm512_fmsub_ps(x0, log2e, mb));
            p1 = kiln_exp2_512_d4(_mm512_fmsub_ps(x1, log2e, mb));
            p2 = kiln_exp2_512_d4(_mm512_fmsub_ps(x2, log2e, mb));
            p3 = kiln_exp2_512_d4(_mm512_fmsub_ps(x3, log2e, mb));
            uint32_t *o = pbf + r * (KILN_CPU_TILE / 2);
            _mm512_storeu_si512(o, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));
            _mm512_storeu_si512(o + 16, (__m512i)_mm512_cvtne2ps_pbh(p3, p2));
        } else
#endif
        {
            p0 = kiln_exp2_512_d6(_mm512_fmsub_ps(x0, log2e, mb));
            p1 = kiln_exp2_512_d6(_mm512_fmsub_ps(x1, log2e, mb));
            p2 = kiln_exp2_512_d6(_mm512_fmsub_ps(x2, log2e, mb));
            p3 = kiln_exp2_512_d6(_mm512_fmsub_ps(x3, log2e, mb));
            _mm512_storeu_ps(x, p0);
            _mm512_storeu_ps(x + 16, p1);
            _mm512_storeu_ps(x + 32, p2);
            _mm512_storeu_ps(x + 48, p3);
        }
        __m512 sum = _mm512_add_ps(_mm512_add_ps(p0, p1), _mm512_add_ps(p2, p3));
        float *lr = l + r * KILN_CPU_LSTRIDE;
        __m512 lv = _mm512_loadu_ps(lr);
        lv = a == 1.0f ? _mm512_add_ps(lv, sum) : _mm512_fmadd_ps(lv, _mm512_set1_ps(a), sum);
        _mm512_storeu_ps(lr, lv);
    }
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

/* 16 elements of dtype dt at src[i..] (only lanes in mask) as f32. Full vectors take plain
 * loads: masked 16-bit loads and stores are several times slower on some cores (Zen 4). */
static inline __m512 kiln_load16(const void *src, int64_t i, kiln_dtype dt, __mmask16 mask) {
    if (mask == (__mmask16)0xffff) {
        switch (dt) {
        case KILN_BF16:
            return _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)src + i))), 16));
        case KILN_F16:
            return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)src + i)));
        default: return _mm512_loadu_ps((const float *)src + i);
        }
    }
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
        __m256i h = _mm512_cvtepi32_epi16(r);
        if (mask == (__mmask16)0xffff)
            _mm256_storeu_si256((__m256i *)((uint16_t *)dst + i), h);
        else
            _mm256_mask_storeu_epi16((uint16_t *)dst + i, mask, h);
        break;
    }
    case KILN_F16: {
        __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (mask == (__mmask16)0xffff)
            _mm256_storeu_si256((__m256i *)((uint16_t *)dst + i), h);
        else
            _mm256_mask_storeu_epi16((uint16_t *)dst + i, mask, h);
        break;
    }
    default:
        if (mask == (__mmask16)0xffff)
            _mm512_storeu_ps((float *)dst + i, x);
        else
            _mm512_mask_storeu_ps((float *)dst + i, mask, x);
        break;
    }
}

static inline __mmask16 kiln_mask16(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* act(x) for the gated activations. */
static inline __m512 kiln_act16(kiln_activation a, __m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    switch (a) {
    case KILN_ACT_GELU: {
        /* erf by Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7) */
        __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
        __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), one));
        __m512 y = _mm512_set1_ps(1.061405429f);
        y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(-1.453152027f));
        y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(1.421413741f));
        y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(-0.284496736f));
        y = _mm512_fmadd_ps(y, t, _mm512_set1_ps(0.254829592f));
        y = _mm512_mul_ps(y, t);
        __m512 e = kiln_exp512_full(_mm512_mul_ps(_mm512_mul_ps(z, z), _mm512_set1_ps(-1.0f)));
        __m512 erf_abs = _mm512_fnmadd_ps(y, e, one);
        /* 0.5 x (1 + erf(x / sqrt 2)) with erf odd in x */
        __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(
            _mm512_castps_si512(erf_abs),
            _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
        return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(one, erf));
    }
    case KILN_ACT_GELU_TANH: {
        /* 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)) */
        __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
        __m512 u = _mm512_mul_ps(_mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x),
                                 _mm512_set1_ps(-2.0f * 0.79788456080286536f));
        return _mm512_div_ps(x, _mm512_add_ps(one, kiln_exp512_full(u)));
    }
    default:
        return _mm512_div_ps(x, _mm512_add_ps(one, kiln_exp512_full(_mm512_sub_ps(_mm512_setzero_ps(), x))));
    }
}

/* Register-block helpers over KILN_CPU_ROWS (6) rows of four accumulators a<r><c>, with
 * b (the kiln_cpu_block), s (scores), alpha and dc in scope. */
#define KILN_ROWS_X(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ACC_DECL(r)                                                                           \
    __m512 a##r##0 = _mm512_setzero_ps(), a##r##1 = _mm512_setzero_ps(),                     \
           a##r##2 = _mm512_setzero_ps(), a##r##3 = _mm512_setzero_ps();
#define ACC_STORE_S(r)                                                                        \
    _mm512_storeu_ps(s + r * KILN_CPU_TILE, _mm512_mul_ps(a##r##0, sc));                      \
    _mm512_storeu_ps(s + r * KILN_CPU_TILE + 16, _mm512_mul_ps(a##r##1, sc));                 \
    _mm512_storeu_ps(s + r * KILN_CPU_TILE + 32, _mm512_mul_ps(a##r##2, sc));                 \
    _mm512_storeu_ps(s + r * KILN_CPU_TILE + 48, _mm512_mul_ps(a##r##3, sc));
#define ACC_LOAD_O(r)                                                                         \
    __m512 a##r##0, a##r##1, a##r##2, a##r##3;                                                \
    {                                                                                         \
        __m512 al = _mm512_set1_ps(alpha[r]);                                                 \
        const float *o_ = b->o + r * b->o_ld + dc;                                            \
        a##r##0 = _mm512_mul_ps(al, _mm512_loadu_ps(o_));                                     \
        a##r##1 = _mm512_mul_ps(al, _mm512_loadu_ps(o_ + 16));                                \
        a##r##2 = _mm512_mul_ps(al, _mm512_loadu_ps(o_ + 32));                                \
        a##r##3 = _mm512_mul_ps(al, _mm512_loadu_ps(o_ + 48));                                \
    }
#define ACC_STORE_O(r)                                                                        \
    {                                                                                         \
        float *o_ = b->o + r * b->o_ld + dc;                                                  \
        _mm512_storeu_ps(o_, a##r##0);                                                        \
        _mm512_storeu_ps(o_ + 16, a##r##1);                                                   \
        _mm512_storeu_ps(o_ + 32, a##r##2);                                                   \
        _mm512_storeu_ps(o_ + 48, a##r##3);                                                   \
    }

#endif
