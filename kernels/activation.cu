/*
 * Gated activations: out[r, c] = act(x[r, c]) * x[r, d + c] for c < d, in fp32.
 *   KILN_DTYPE  0 f32 | 1 f16 | 2 bf16
 *   KILN_ACT    0 silu: x / (1 + e^-x) | 1 gelu: 0.5 x (1 + erf(x / sqrt 2))
 *               2 gelu_tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
 * Grid (rows, ceil(d / (KILN_ACT_THREADS * a.vec))): one block per row and column chunk.
 * With a.vec > 1 (the host found d, both pointers and every stride 16-byte aligned) each
 * thread moves 16 bytes of each half at once: the kernel is bound by memory, and one element
 * per thread leaves most of each load's width and most of the threads' time to indexing.
 */
#include "kiln_device.h"
#include "kiln_args.h"

#if !defined(KILN_ACT)
#error "KILN_ACT must be defined (0 silu, 1 gelu, 2 gelu_tanh)"
#endif

KILN_DEV float kiln_act(float x)
{
#if KILN_ACT == 0
    return x / (1.0f + kiln_expf(-x));
#elif KILN_ACT == 1
    return 0.5f * x * (1.0f + kiln_erff(x * 0.70710678118654752f));
#elif KILN_ACT == 2
    return 0.5f * x * (1.0f + kiln_tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
#else
#error "unknown KILN_ACT"
#endif
}

typedef struct __attribute__((aligned(16))) kiln_v16 {
    kiln_u32 w[4];
} kiln_v16;

#define KILN_ACT_VEC ((kiln_i32)(16 / sizeof(kiln_elem)))

/* One 16-byte load seen as elements. */
typedef union kiln_act_pack {
    kiln_v16 v;
    kiln_elem e[16 / sizeof(kiln_elem)];
} kiln_act_pack;

KILN_KERNEL(KILN_ACT_THREADS) kiln_act_and_mul(kiln_act_args a)
{
    /* The stream's previous kernel may still run (kernels/vendor/cuda.h): no global access
     * before this. */
    kiln_grid_wait();
    kiln_grid_release();
    const kiln_i64 r = kiln_block_x();
    const kiln_i64 c = ((kiln_i64)kiln_block_y() * KILN_ACT_THREADS + kiln_thread_x()) * a.vec;
    if (r >= a.rows || c >= a.d) return;
    kiln_i64 rest = r, xo = 0, oo = 0;
    /* Constant indices once unrolled: a runtime index into the argument arrays would copy
     * them to local memory. */
#pragma unroll
    for (kiln_i32 l = 2; l >= 0; --l) {
        if (l < a.lead_rank) {
            kiln_i64 digit = rest % a.lead_shape[l];
            rest /= a.lead_shape[l];
            xo += digit * a.x_stride[l];
            oo += digit * a.o_stride[l];
        }
    }
    const kiln_elem *x = (const kiln_elem *)a.x;
    kiln_elem *o = (kiln_elem *)a.out;
    if (a.vec > 1) {
        kiln_act_pack g, u, y;
        g.v = *(const kiln_v16 *)(x + xo + c);
        u.v = *(const kiln_v16 *)(x + xo + a.d + c);
#pragma unroll
        for (kiln_i32 i = 0; i < KILN_ACT_VEC; ++i)
            y.e[i] = kiln_f32_to_elem(kiln_act(kiln_elem_to_f32(g.e[i])) *
                                      kiln_elem_to_f32(u.e[i]));
        *(kiln_v16 *)(o + oo + c) = y.v;
        return;
    }
    const float g = kiln_elem_to_f32(x[xo + c]);
    const float u = kiln_elem_to_f32(x[xo + a.d + c]);
    o[oo + c] = kiln_f32_to_elem(kiln_act(g) * u);
}
