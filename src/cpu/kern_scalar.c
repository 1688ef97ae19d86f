/* Portable kernels: the reference every SIMD level is tested against, and the level used
 * where no SIMD level is available. f32 compute format (see cpu.h). */
#include <math.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"

#define R KILN_CPU_ROWS
#define T KILN_CPU_TILE

static void pack_q(void *dst, const void *src, int d, int dpad, kiln_dtype dt) {
    float *o = dst;
    for (int t = 0; t < d; t++) o[t] = kiln_load_f32(src, t, dt);
    for (int t = d; t < dpad; t++) o[t] = 0.0f;
}

static void pack_k(void *dst, const void *const *rows, int n, int d, kiln_dtype dt) {
    float *o = dst;
    for (int t = 0; t < d; t++)
        for (int j = 0; j < T; j++) o[t * T + j] = j < n ? kiln_load_f32(rows[j], t, dt) : 0.0f;
}

static void pack_v(void *dst, const void *const *rows, int n, int d, int dpad, kiln_dtype dt) {
    float *o = dst;
    for (int j = 0; j < T; j++)
        for (int t = 0; t < dpad; t++)
            o[j * dpad + t] = (j < n && t < d) ? kiln_load_f32(rows[j], t, dt) : 0.0f;
}

static void block(const kiln_cpu_block *b) {
    float s[R * T];
    const float *q = b->q, *k = b->k, *v = b->v;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < T; j++) {
            float acc = 0.0f;
            for (int t = 0; t < b->d; t++) acc += q[r * b->q_ld + t] * k[t * T + j];
            s[r * T + j] = acc * b->scale;
        }
    if (b->fixup) b->fixup(b->fixup_ctx, s, b->r0, b->j0);
    for (int r = 0; r < R; r++) {
        float *row = s + r * T;
        float mx = -INFINITY;
        for (int j = 0; j < T; j++) mx = kiln_cpu_max_nan(mx, row[j]);
        float mnew = kiln_cpu_max_nan(b->m[r], mx);
        if (mnew == -INFINITY) continue; /* nothing visible yet */
        float alpha = expf(b->m[r] - mnew), sum = 0.0f;
        for (int j = 0; j < T; j++) {
            row[j] = expf(row[j] - mnew);
            sum += row[j];
        }
        b->m[r] = mnew;
        b->l[r * KILN_CPU_LSTRIDE] = b->l[r * KILN_CPU_LSTRIDE] * alpha + sum;
        float *o = b->o + r * b->o_ld;
        for (int t = 0; t < b->dpad; t++) o[t] *= alpha;
        for (int j = 0; j < T; j++) {
            float pj = row[j];
            if (pj == 0.0f) continue;
            for (int t = 0; t < b->dpad; t++) o[t] += pj * v[j * b->dpad + t];
        }
    }
}

static float act_f(kiln_activation act, float x) {
    switch (act) {
    case KILN_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case KILN_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    default: return x / (1.0f + expf(-x));
    }
}

static void act(kiln_activation a, kiln_dtype dt, const void *gate, const void *up, void *out,
                int64_t n) {
    for (int64_t i = 0; i < n; i++)
        kiln_store_f32(out, i, dt, act_f(a, kiln_load_f32(gate, i, dt)) * kiln_load_f32(up, i, dt));
}

static double fma_loop(int64_t iters) {
    float a[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const float x = 0.999999f, y = 1e-7f;
    for (int64_t i = 0; i < iters; i++)
        for (int u = 0; u < 8; u++) a[u] = a[u] * x + y;
    volatile float sink = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
    (void)sink;
    return 16.0 * (double)iters;
}

static void store_row(void *dst, const float *src, float mul, int d, kiln_dtype dt) {
    for (int t = 0; t < d; t++) kiln_store_f32(dst, t, dt, src[t] * mul);
}

static const kiln_cpu_kernels kernels = {
    "scalar", 0, 1, sizeof(float), pack_q, pack_k, pack_v, block, act, fma_loop, store_row,
};

const kiln_cpu_kernels *kiln_cpu_kernels_scalar(void) { return &kernels; }
