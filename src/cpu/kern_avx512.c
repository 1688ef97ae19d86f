/* AVX-512 kernels, f32 compute format (f32 and f16 inputs; bf16 too below avx512bf16).
 * A register block is 6 rows x 64 keys: 24 accumulators, 4 K (or V) vectors, and the
 * Q (or P) value folded into each FMA as an embedded broadcast. */
#include "cpu.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)

#include <string.h>

#include "simd512.h"

#define R KILN_CPU_ROWS
#define T KILN_CPU_TILE

static void pack_q(void *dst, const void *src, int d, int dpad, kiln_dtype dt) {
    float *o = dst;
    for (int t = 0; t < dpad; t += 16) _mm512_storeu_ps(o + t, kiln_load16(src, t, dt, kiln_mask16(d - t)));
}

/* k [d][T]: 16 x 16 transposes of (key, dim) blocks. */
static void pack_k(void *dst, const void *const *rows, int n, int d, kiln_dtype dt) {
    float *o = dst;
    for (int jb = 0; jb < T; jb += 16) {
        for (int t0 = 0; t0 < d; t0 += 16) {
            __m512 r[16];
            __mmask16 mk = kiln_mask16(d - t0);
            for (int u = 0; u < 16; u++)
                r[u] = jb + u < n ? kiln_load16(rows[jb + u], t0, dt, mk) : _mm512_setzero_ps();
            kiln_transpose16(r);
            int nt = d - t0 < 16 ? d - t0 : 16;
            for (int u = 0; u < nt; u++) _mm512_storeu_ps(o + (size_t)(t0 + u) * T + jb, r[u]);
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
        for (int t = 0; t < dpad; t += 16)
            _mm512_storeu_ps(row + t, kiln_load16(rows[j], t, dt, kiln_mask16(d - t)));
    }
}

/* o[r][dc .. dc + 16 NZ) = alpha[r] o + sum_j p[r][j] v[j][..] */
#define PV_CHUNK(NZ)                                                                          \
    static inline void pv_chunk##NZ(const kiln_cpu_block *b, const float *p,                \
                                    const float *alpha, int dc) {                            \
        __m512 acc[R][NZ];                                                                   \
        for (int r = 0; r < R; r++) {                                                        \
            __m512 a = _mm512_set1_ps(alpha[r]);                                             \
            for (int c = 0; c < NZ; c++)                                                     \
                acc[r][c] = _mm512_mul_ps(a, _mm512_loadu_ps(b->o + r * b->o_ld + dc + 16 * c)); \
        }                                                                                    \
        const float *v = (const float *)b->v + dc;                                           \
        for (int j = 0; j < T; j++) {                                                        \
            __m512 vv[NZ];                                                                   \
            for (int c = 0; c < NZ; c++) vv[c] = _mm512_loadu_ps(v + (size_t)j * b->dpad + 16 * c); \
            for (int r = 0; r < R; r++) {                                                    \
                __m512 pb = _mm512_set1_ps(p[r * T + j]);                                    \
                for (int c = 0; c < NZ; c++) acc[r][c] = _mm512_fmadd_ps(pb, vv[c], acc[r][c]); \
            }                                                                                \
        }                                                                                    \
        for (int r = 0; r < R; r++)                                                          \
            for (int c = 0; c < NZ; c++)                                                     \
                _mm512_storeu_ps(b->o + r * b->o_ld + dc + 16 * c, acc[r][c]);               \
    }
PV_CHUNK(2)
PV_CHUNK(1)

/* The full-width chunk (64 dims) with named accumulators. */
static inline void pv_chunk4(const kiln_cpu_block *b, const float *p, const float *alpha,
                             int dc) {
    KILN_ROWS_X(ACC_LOAD_O)
    const float *v = (const float *)b->v + dc;
    for (int j = 0; j < T; j++) {
        const float *vj = v + (size_t)j * b->dpad;
        __m512 v0 = _mm512_loadu_ps(vj), v1 = _mm512_loadu_ps(vj + 16);
        __m512 v2 = _mm512_loadu_ps(vj + 32), v3 = _mm512_loadu_ps(vj + 48);
#define PV_ROW(r)                                                                             \
    {                                                                                         \
        __m512 pb = _mm512_set1_ps(p[r * T + j]);                                             \
        a##r##0 = _mm512_fmadd_ps(pb, v0, a##r##0);                                           \
        a##r##1 = _mm512_fmadd_ps(pb, v1, a##r##1);                                           \
        a##r##2 = _mm512_fmadd_ps(pb, v2, a##r##2);                                           \
        a##r##3 = _mm512_fmadd_ps(pb, v3, a##r##3);                                           \
    }
        KILN_ROWS_X(PV_ROW)
#undef PV_ROW
    }
    KILN_ROWS_X(ACC_STORE_O)
}

static void block(const kiln_cpu_block *b) {
    float s[R * T], alpha[R];
    const float *q = b->q, *k = b->k;
    /* Named accumulators: compilers keep these in registers, not an array. */
    KILN_ROWS_X(ACC_DECL)
    for (int t = 0; t < b->d; t++) {
        const float *kt = k + (size_t)t * T;
        __m512 k0 = _mm512_loadu_ps(kt), k1 = _mm512_loadu_ps(kt + 16);
        __m512 k2 = _mm512_loadu_ps(kt + 32), k3 = _mm512_loadu_ps(kt + 48);
#define QK_ROW(r)                                                                             \
    {                                                                                         \
        __m512 qb = _mm512_set1_ps(q[r * b->q_ld + t]);                                       \
        a##r##0 = _mm512_fmadd_ps(qb, k0, a##r##0);                                           \
        a##r##1 = _mm512_fmadd_ps(qb, k1, a##r##1);                                           \
        a##r##2 = _mm512_fmadd_ps(qb, k2, a##r##2);                                           \
        a##r##3 = _mm512_fmadd_ps(qb, k3, a##r##3);                                           \
    }
        KILN_ROWS_X(QK_ROW)
#undef QK_ROW
    }
    __m512 sc = _mm512_set1_ps(b->scale);
    KILN_ROWS_X(ACC_STORE_S)
    if (b->fixup) b->fixup(b->fixup_ctx, s, b->r0, b->j0);
    kiln_softmax_block512(s, b->m, b->l, alpha, NULL);
    int dc = 0;
    for (; dc + 64 <= b->dpad; dc += 64) pv_chunk4(b, s, alpha, dc);
    if (dc + 32 <= b->dpad) {
        pv_chunk2(b, s, alpha, dc);
        dc += 32;
    }
    if (dc < b->dpad) pv_chunk1(b, s, alpha, dc);
}

static void act(kiln_activation a, kiln_dtype dt, const void *gate, const void *up, void *out,
                int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 g = kiln_load16(gate, i, dt, 0xffff), u = kiln_load16(up, i, dt, 0xffff);
        kiln_store16(out, i, dt, _mm512_mul_ps(kiln_act16(a, g), u), 0xffff);
    }
    if (i < n) {
        __mmask16 m = kiln_mask16(n - i);
        __m512 g = kiln_load16(gate, i, dt, m), u = kiln_load16(up, i, dt, m);
        kiln_store16(out, i, dt, _mm512_mul_ps(kiln_act16(a, g), u), m);
    }
}

static double fma_loop(int64_t iters) {
    __m512 a[12];
    for (int u = 0; u < 12; u++) a[u] = _mm512_set1_ps(1.0f + (float)u * 1e-3f);
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int64_t i = 0; i < iters; i++)
        for (int u = 0; u < 12; u++) a[u] = _mm512_fmadd_ps(a[u], x, y);
    __m512 s = a[0];
    for (int u = 1; u < 12; u++) s = _mm512_add_ps(s, a[u]);
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return 12.0 * 32.0 * (double)iters;
}

static void store_row(void *dst, const float *src, float mul, int d, kiln_dtype dt) {
    __m512 m = _mm512_set1_ps(mul);
    for (int t = 0; t < d; t += 16) {
        __mmask16 k = kiln_mask16(d - t);
        kiln_store16(dst, t, dt, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, src + t), m), k);
    }
}

static const kiln_cpu_kernels kernels = {
    "x86-64-avx512", 0, 16, sizeof(float), pack_q, pack_k, pack_v, block, act, fma_loop, store_row,
};

const kiln_cpu_kernels *kiln_cpu_kernels_avx512(void) { return &kernels; }

#else

const kiln_cpu_kernels *kiln_cpu_kernels_avx512(void) { return NULL; }

#endif
