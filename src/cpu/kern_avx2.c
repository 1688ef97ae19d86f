/* AVX2 + FMA kernels, f32 compute format (head_dim is a multiple of 8, so rows need no
 * tail handling). A register block is 6 rows x 16 keys (or 16 dims) at a time: 12 ymm
 * accumulators out of 16 registers. */
#include "cpu.h"

#if defined(__AVX2__)

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "convert.h"

#define R KILN_CPU_ROWS
#define T KILN_CPU_TILE

/* exp(x); inputs below -87 give exactly 0 (masked keys), NaN gives NaN (the operand order of
 * max / min keeps a NaN x, and "not less than" keeps its lane). */
static inline __m256 exp256(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.0f);
    __m256 keep = _mm256_cmp_ps(x, lo, _CMP_NLT_UQ);
    x = _mm256_min_ps(_mm256_set1_ps(88.3f), _mm256_max_ps(lo, x));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.3888889e-3f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3333333e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1666667e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666667e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* n is in [-126, 128): 2^n built in the exponent field, split in two to reach 2^128 */
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i h = _mm256_srai_epi32(ni, 1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), _mm256_set1_epi32(127)), 23));
    return _mm256_and_ps(keep, _mm256_mul_ps(_mm256_mul_ps(p, s1), s2));
}

static inline __m256 load8(const void *src, int64_t i, kiln_dtype dt) {
    switch (dt) {
    case KILN_BF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i))), 16));
    case KILN_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i)));
    default: return _mm256_loadu_ps((const float *)src + i);
    }
}

static inline void store8(void *dst, int64_t i, kiln_dtype dt, __m256 x) {
    switch (dt) {
    case KILN_BF16: {
        __m256i u = _mm256_castps_si256(x);
        __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                                         _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1))));
        r = _mm256_srli_epi32(r, 16);
        __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
        __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128((__m128i *)((uint16_t *)dst + i), _mm256_castsi256_si128(packed));
        break;
    }
    case KILN_F16:
        _mm_storeu_si128((__m128i *)((uint16_t *)dst + i),
                         _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        break;
    default: _mm256_storeu_ps((float *)dst + i, x); break;
    }
}

static void pack_q(void *dst, const void *src, int d, int dpad, kiln_dtype dt) {
    float *o = dst;
    for (int t = 0; t < d; t += 8) _mm256_storeu_ps(o + t, load8(src, t, dt));
    for (int t = d; t < dpad; t++) o[t] = 0.0f;
}

static void pack_k(void *dst, const void *const *rows, int n, int d, kiln_dtype dt) {
    float *o = dst;
    for (int j = 0; j < T; j++) {
        if (j >= n) {
            for (int t = 0; t < d; t++) o[(size_t)t * T + j] = 0.0f;
            continue;
        }
        for (int t = 0; t < d; t += 8) {
            float tmp[8];
            _mm256_storeu_ps(tmp, load8(rows[j], t, dt));
            for (int u = 0; u < 8; u++) o[(size_t)(t + u) * T + j] = tmp[u];
        }
    }
}

static void pack_v(void *dst, const void *const *rows, int n, int d, int dpad, kiln_dtype dt) {
    float *o = dst;
    for (int j = 0; j < T; j++) {
        float *row = o + (size_t)j * dpad;
        if (j >= n) {
            memset(row, 0, (size_t)dpad * sizeof(float));
            continue;
        }
        for (int t = 0; t < d; t += 8) _mm256_storeu_ps(row + t, load8(rows[j], t, dt));
        for (int t = d; t < dpad; t++) row[t] = 0.0f;
    }
}

static inline float hmax8(__m256 x) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static inline float hsum8(__m256 x) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

#define PV_CHUNK(NZ)                                                                          \
    static inline void pv_chunk##NZ(const kiln_cpu_block *b, const float *p,                \
                                    const float *alpha, int dc) {                            \
        __m256 acc[R][NZ];                                                                   \
        for (int r = 0; r < R; r++) {                                                        \
            __m256 a = _mm256_set1_ps(alpha[r]);                                             \
            for (int c = 0; c < NZ; c++)                                                     \
                acc[r][c] = _mm256_mul_ps(a, _mm256_loadu_ps(b->o + r * b->o_ld + dc + 8 * c)); \
        }                                                                                    \
        const float *v = (const float *)b->v + dc;                                           \
        for (int j = 0; j < T; j++) {                                                        \
            __m256 vv[NZ];                                                                   \
            for (int c = 0; c < NZ; c++) vv[c] = _mm256_loadu_ps(v + (size_t)j * b->dpad + 8 * c); \
            for (int r = 0; r < R; r++) {                                                    \
                __m256 pb = _mm256_broadcast_ss(p + r * T + j);                              \
                for (int c = 0; c < NZ; c++) acc[r][c] = _mm256_fmadd_ps(pb, vv[c], acc[r][c]); \
            }                                                                                \
        }                                                                                    \
        for (int r = 0; r < R; r++)                                                          \
            for (int c = 0; c < NZ; c++)                                                     \
                _mm256_storeu_ps(b->o + r * b->o_ld + dc + 8 * c, acc[r][c]);                \
    }
PV_CHUNK(2)
PV_CHUNK(1)

static void block(const kiln_cpu_block *b) {
    float s[R * T], alpha[R];
    const float *q = b->q, *k = b->k;
    __m256 sc = _mm256_set1_ps(b->scale);
    for (int kc = 0; kc < T; kc += 16) {
        __m256 acc[R][2];
        for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        for (int t = 0; t < b->d; t++) {
            const float *kt = k + (size_t)t * T + kc;
            __m256 k0 = _mm256_loadu_ps(kt), k1 = _mm256_loadu_ps(kt + 8);
            for (int r = 0; r < R; r++) {
                __m256 qb = _mm256_broadcast_ss(q + r * b->q_ld + t);
                acc[r][0] = _mm256_fmadd_ps(qb, k0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(qb, k1, acc[r][1]);
            }
        }
        for (int r = 0; r < R; r++) {
            _mm256_storeu_ps(s + r * T + kc, _mm256_mul_ps(acc[r][0], sc));
            _mm256_storeu_ps(s + r * T + kc + 8, _mm256_mul_ps(acc[r][1], sc));
        }
    }
    if (b->fixup) b->fixup(b->fixup_ctx, s, b->r0, b->j0);
    for (int r = 0; r < R; r++) {
        float *row = s + r * T;
        __m256 mv = _mm256_loadu_ps(row), nan = _mm256_cmp_ps(mv, mv, _CMP_UNORD_Q);
        for (int j = 8; j < T; j += 8) {
            __m256 x = _mm256_loadu_ps(row + j);
            mv = _mm256_max_ps(mv, x);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        }
        /* A NaN score makes the row's max (and so the whole row) NaN, as in the reference. */
        float mx = _mm256_movemask_ps(nan) ? NAN : hmax8(mv), mold = b->m[r];
        float mnew = kiln_cpu_max_nan(mold, mx);
        if (mnew == -INFINITY) {
            memset(row, 0, T * sizeof(float));
            alpha[r] = 1.0f;
            continue;
        }
        __m256 mb = _mm256_set1_ps(mnew), sum = _mm256_setzero_ps();
        for (int j = 0; j < T; j += 8) {
            __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(row + j), mb));
            _mm256_storeu_ps(row + j, e);
            sum = _mm256_add_ps(sum, e);
        }
        float a = mold == -INFINITY ? 0.0f : expf(mold - mnew);
        alpha[r] = a;
        b->m[r] = mnew;
        b->l[r * KILN_CPU_LSTRIDE] = b->l[r * KILN_CPU_LSTRIDE] * a + hsum8(sum);
    }
    int dc = 0;
    for (; dc + 16 <= b->dpad; dc += 16) pv_chunk2(b, s, alpha, dc);
    if (dc < b->dpad) pv_chunk1(b, s, alpha, dc);
}

static inline __m256 act8(kiln_activation a, __m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    switch (a) {
    case KILN_ACT_GELU: {
        /* erf by Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7) */
        __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
        __m256 z = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(0.70710678118654752f));
        __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(z, _mm256_set1_ps(0.3275911f), one));
        __m256 y = _mm256_set1_ps(1.061405429f);
        y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(-1.453152027f));
        y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(1.421413741f));
        y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(-0.284496736f));
        y = _mm256_fmadd_ps(y, t, _mm256_set1_ps(0.254829592f));
        y = _mm256_mul_ps(y, t);
        __m256 e = exp256(_mm256_max_ps(_mm256_mul_ps(_mm256_mul_ps(z, z), _mm256_set1_ps(-1.0f)),
                                        _mm256_set1_ps(-87.0f)));
        __m256 erf = _mm256_or_ps(_mm256_fnmadd_ps(y, e, one), sign);
        return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(one, erf));
    }
    case KILN_ACT_GELU_TANH: {
        __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        __m256 u = _mm256_mul_ps(_mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), x),
                                 _mm256_set1_ps(-2.0f * 0.79788456080286536f));
        return _mm256_div_ps(x, _mm256_add_ps(one, exp256(_mm256_max_ps(u, _mm256_set1_ps(-87.0f)))));
    }
    default: {
        __m256 nx = _mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), x), _mm256_set1_ps(-87.0f));
        return _mm256_div_ps(x, _mm256_add_ps(one, exp256(nx)));
    }
    }
}

static void act(kiln_activation a, kiln_dtype dt, const void *gate, const void *up, void *out,
                int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) store8(out, i, dt, _mm256_mul_ps(act8(a, load8(gate, i, dt)), load8(up, i, dt)));
    if (i < n) {
        float g[8] = {0}, u[8] = {0}, o[8];
        for (int64_t t = i; t < n; t++) {
            g[t - i] = kiln_load_f32(gate, t, dt);
            u[t - i] = kiln_load_f32(up, t, dt);
        }
        _mm256_storeu_ps(o, _mm256_mul_ps(act8(a, _mm256_loadu_ps(g)), _mm256_loadu_ps(u)));
        for (int64_t t = i; t < n; t++) kiln_store_f32(out, t, dt, o[t - i]);
    }
}

static double fma_loop(int64_t iters) {
    __m256 a[10];
    for (int u = 0; u < 10; u++) a[u] = _mm256_set1_ps(1.0f + (float)u * 1e-3f);
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int64_t i = 0; i < iters; i++)
        for (int u = 0; u < 10; u++) a[u] = _mm256_fmadd_ps(a[u], x, y);
    __m256 s = a[0];
    for (int u = 1; u < 10; u++) s = _mm256_add_ps(s, a[u]);
    volatile float sink = hsum8(s);
    (void)sink;
    return 10.0 * 16.0 * (double)iters;
}

static void store_row(void *dst, const float *src, float mul, int d, kiln_dtype dt) {
    __m256 m = _mm256_set1_ps(mul);
    for (int t = 0; t < d; t += 8) store8(dst, t, dt, _mm256_mul_ps(_mm256_loadu_ps(src + t), m));
}

static const kiln_cpu_kernels kernels = {
    "x86-64-avx2", 0, 8, sizeof(float), pack_q, pack_k, pack_v, block, act, fma_loop, store_row,
};

const kiln_cpu_kernels *kiln_cpu_kernels_avx2(void) { return &kernels; }

#else

const kiln_cpu_kernels *kiln_cpu_kernels_avx2(void) { return NULL; }

#endif
