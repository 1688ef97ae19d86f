/* AVX-512 BF16 kernels for bf16 inputs: S = Q K^T and O += P V both run on vdpbf16ps, which
 * multiplies bf16 pairs and accumulates in fp32 (twice the FLOPs of an fp32 FMA). Q stays
 * bf16, P is rounded to bf16 after the fp32 softmax, as in GPU flash attention. */
#include "cpu.h"

#if defined(__AVX512BF16__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__)

#include <string.h>

#include "simd512.h"

#define R KILN_CPU_ROWS
#define T KILN_CPU_TILE

static void pack_q(void *dst, const void *src, int d, int dpad, kiln_dtype dt) {
    (void)dt;
    memcpy(dst, src, (size_t)d * 2);
    memset((uint16_t *)dst + d, 0, (size_t)(dpad - d) * 2);
}

/* k [d/2][T][2]: a 16 x 16 transpose of 32-bit (dimension pair) lanes per block. */
static void pack_k(void *dst, const void *const *rows, int n, int d, kiln_dtype dt) {
    (void)dt;
    uint32_t *o = dst;
    int pairs = d / 2;
    for (int jb = 0; jb < T; jb += 16) {
        for (int p0 = 0; p0 < pairs; p0 += 16) {
            __m512 r[16];
            __mmask16 mk = kiln_mask16(pairs - p0);
            for (int u = 0; u < 16; u++)
                r[u] = jb + u < n ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(
                                        mk, (const uint32_t *)rows[jb + u] + p0))
                                  : _mm512_setzero_ps();
            kiln_transpose16(r);
            int np = pairs - p0 < 16 ? pairs - p0 : 16;
            for (int u = 0; u < np; u++)
                _mm512_storeu_si512(o + (size_t)(p0 + u) * T + jb, _mm512_castps_si512(r[u]));
        }
    }
}

/* v [T/2][dpad][2]: keys 2jp and 2jp+1 interleaved per dimension. */
static void pack_v(void *dst, const void *const *rows, int n, int d, int dpad, kiln_dtype dt) {
    (void)dt;
    uint32_t *o = dst;
    for (int jp = 0; jp < T / 2; jp++) {
        const uint16_t *a = 2 * jp < n ? rows[2 * jp] : NULL;
        const uint16_t *b = 2 * jp + 1 < n ? rows[2 * jp + 1] : NULL;
        for (int t = 0; t < dpad; t += 16) {
            __mmask16 mk = kiln_mask16(d - t);
            __m512i lo = a ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, a + t)) : _mm512_setzero_si512();
            __m512i hi = b ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, b + t)) : _mm512_setzero_si512();
            _mm512_storeu_si512(o + (size_t)jp * dpad + t, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
    }
}

#define DP(acc, a, b) _mm512_dpbf16_ps((acc), (__m512bh)(a), (__m512bh)(b))

#define PV_CHUNK(NZ)                                                                          \
    static inline void pv_chunk##NZ(const kiln_cpu_block *b, const uint32_t *p,             \
                                    const float *alpha, int dc) {                            \
        __m512 acc[R][NZ];                                                                   \
        for (int r = 0; r < R; r++) {                                                        \
            __m512 a = _mm512_set1_ps(alpha[r]);                                             \
            for (int c = 0; c < NZ; c++)                                                     \
                acc[r][c] = _mm512_mul_ps(a, _mm512_loadu_ps(b->o + r * b->o_ld + dc + 16 * c)); \
        }                                                                                    \
        const uint32_t *v = (const uint32_t *)b->v + dc;                                     \
        for (int jp = 0; jp < T / 2; jp++) {                                                 \
            __m512i vv[NZ];                                                                  \
            for (int c = 0; c < NZ; c++)                                                     \
                vv[c] = _mm512_loadu_si512(v + (size_t)jp * b->dpad + 16 * c);               \
            for (int r = 0; r < R; r++) {                                                    \
                __m512i pb = _mm512_set1_epi32((int)p[r * (T / 2) + jp]);                    \
                for (int c = 0; c < NZ; c++) acc[r][c] = DP(acc[r][c], pb, vv[c]);           \
            }                                                                                \
        }                                                                                    \
        for (int r = 0; r < R; r++)                                                          \
            for (int c = 0; c < NZ; c++)                                                     \
                _mm512_storeu_ps(b->o + r * b->o_ld + dc + 16 * c, acc[r][c]);               \
    }
PV_CHUNK(2)
PV_CHUNK(1)

/* The full-width chunk (64 dims) with named accumulators. */
static inline void pv_chunk4(const kiln_cpu_block *b, const uint32_t *p, const float *alpha,
                             int dc) {
    KILN_ROWS_X(ACC_LOAD_O)
    const uint32_t *v = (const uint32_t *)b->v + dc;
    for (int jp = 0; jp < T / 2; jp++) {
        const uint32_t *vj = v + (size_t)jp * b->dpad;
        __m512i v0 = _mm512_loadu_si512(vj), v1 = _mm512_loadu_si512(vj + 16);
        __m512i v2 = _mm512_loadu_si512(vj + 32), v3 = _mm512_loadu_si512(vj + 48);
#define PV_ROW(r)                                                                             \
    {                                                                                         \
        __m512i pb = _mm512_set1_epi32((int)p[r * (T / 2) + jp]);                             \
        a##r##0 = DP(a##r##0, pb, v0);                                                        \
        a##r##1 = DP(a##r##1, pb, v1);                                                        \
        a##r##2 = DP(a##r##2, pb, v2);                                                        \
        a##r##3 = DP(a##r##3, pb, v3);                                                        \
    }
        KILN_ROWS_X(PV_ROW)
#undef PV_ROW
    }
    KILN_ROWS_X(ACC_STORE_O)
}

static void block(const kiln_cpu_block *b) {
    float s[R * T], alpha[R];
    uint32_t p[R * T / 2];
    const uint32_t *q = b->q, *k = b->k;
    int64_t qld = b->q_ld / 2;
    /* Named accumulators: compilers keep these in registers, not an array. */
    KILN_ROWS_X(ACC_DECL)
    for (int pp = 0; pp < b->d / 2; pp++) {
        const uint32_t *kt = k + (size_t)pp * T;
        __m512i k0 = _mm512_loadu_si512(kt), k1 = _mm512_loadu_si512(kt + 16);
        __m512i k2 = _mm512_loadu_si512(kt + 32), k3 = _mm512_loadu_si512(kt + 48);
#define QK_ROW(r)                                                                             \
    {                                                                                         \
        __m512i qb = _mm512_set1_epi32((int)q[r * qld + pp]);                                 \
        a##r##0 = DP(a##r##0, qb, k0);                                                        \
        a##r##1 = DP(a##r##1, qb, k1);                                                        \
        a##r##2 = DP(a##r##2, qb, k2);                                                        \
        a##r##3 = DP(a##r##3, qb, k3);                                                        \
    }
        KILN_ROWS_X(QK_ROW)
#undef QK_ROW
    }
    __m512 sc = _mm512_set1_ps(b->scale);
    KILN_ROWS_X(ACC_STORE_S)
    if (b->fixup) b->fixup(b->fixup_ctx, s, b->r0, b->j0);
    kiln_softmax_block512(s, b->m, b->l, alpha, p);
    int dc = 0;
    for (; dc + 64 <= b->dpad; dc += 64) pv_chunk4(b, p, alpha, dc);
    if (dc + 32 <= b->dpad) {
        pv_chunk2(b, p, alpha, dc);
        dc += 32;
    }
    if (dc < b->dpad) pv_chunk1(b, p, alpha, dc);
}

/* Activations, the FMA loop and row stores are the avx512 level's (no bf16 dot products in them). */
static void act(kiln_activation a, kiln_dtype dt, const void *gate, const void *up, void *out,
                int64_t n) {
    kiln_cpu_kernels_avx512()->act(a, dt, gate, up, out, n);
}

static double fma_loop(int64_t iters) { return kiln_cpu_kernels_avx512()->fma_loop(iters); }

static void store_row(void *dst, const float *src, float mul, int d, kiln_dtype dt) {
    kiln_cpu_kernels_avx512()->store_row(dst, src, mul, d, dt);
}

static const kiln_cpu_kernels kernels = {
    "x86-64-avx512bf16", 1, 16, 2, pack_q, pack_k, pack_v, block, act, fma_loop, store_row,
};

const kiln_cpu_kernels *kiln_cpu_kernels_avx512bf16(void) {
    /* The level also needs the avx512 file, which a compiler able to build this one built. */
    return kiln_cpu_kernels_avx512() ? &kernels : NULL;
}

#else

const kiln_cpu_kernels *kiln_cpu_kernels_avx512bf16(void) { return NULL; }

#endif
