/*
 * Split-KV combine: merges the num_splits partial results that kiln_attn_fwd wrote to the
 * workspace (normalised fp32 output + LSE per split) into out and LSE:
 *   lse = log(sum_s exp(lse_s)),  out = sum_s exp(lse_s - lse) * out_s
 * A row whose splits all saw no key gets out 0 and LSE -inf. One block per (row, head,
 * batch); KILN_HEAD_DIM bounds the runtime head_dim. Same arguments as attention.
 */
#include "kiln_device.h"
#include "kiln_args.h"

#if !defined(KILN_HEAD_DIM)
#error "KILN_HEAD_DIM must be defined"
#endif

#define NT KILN_COMBINE_THREADS
#define DPT ((KILN_HEAD_DIM + NT - 1) / NT)

KILN_KERNEL(NT) kiln_attn_combine(kiln_attn_args a)
{
    /* The stream's previous kernel may still run (kernels/vendor/cuda.h): no global access
     * before this. */
    kiln_grid_wait();
    kiln_grid_release();
    const kiln_i32 t = kiln_thread_x();
    const kiln_i64 i = kiln_block_x();
    const kiln_i64 h = kiln_block_y();
    const kiln_i64 b = kiln_block_z();
    kiln_i64 sq, row, o_off, lse_off;
    if (a.cu_seqlens_q) {
        kiln_i64 q0 = a.cu_seqlens_q[b];
        sq = a.cu_seqlens_q[b + 1] - q0;
        row = q0 + i;
        o_off = q0 * a.o_stride_row;
        lse_off = q0 * a.lse_stride_row;
    } else {
        sq = a.seqlen_q;
        row = b * a.seqlen_q + i;
        o_off = b * a.o_stride_batch;
        lse_off = b * a.lse_stride_batch;
    }
    if (i >= sq) return;

    const kiln_i64 split_stride = a.rows_q * a.heads_q; /* workspace rows per split */
    const kiln_i64 base = row * a.heads_q + h;
    float m = kiln_neg_inf();
    for (kiln_i32 sp = 0; sp < a.num_splits; ++sp)
        m = kiln_fmax_nan(m, a.ws_lse[sp * split_stride + base]);
    float lse = kiln_neg_inf();
    if (m != kiln_neg_inf()) {
        float sum = 0.0f;
        for (kiln_i32 sp = 0; sp < a.num_splits; ++sp)
            sum += kiln_expf(a.ws_lse[sp * split_stride + base] - m);
        lse = m + kiln_logf(sum);
    }

    float acc[DPT];
#pragma unroll
    for (kiln_i32 c = 0; c < DPT; ++c) acc[c] = 0.0f;
    if (lse != kiln_neg_inf()) {
        for (kiln_i32 sp = 0; sp < a.num_splits; ++sp) {
            const float w = kiln_expf(a.ws_lse[sp * split_stride + base] - lse);
            const float *po = a.ws_out + (sp * split_stride + base) * a.head_dim;
        #pragma unroll
    for (kiln_i32 c = 0; c < DPT; ++c) {
                kiln_i64 d = t + c * NT;
                if (d < a.head_dim) acc[c] += w * po[d];
            }
        }
    }
    kiln_elem *o = (kiln_elem *)a.out;
#pragma unroll
    for (kiln_i32 c = 0; c < DPT; ++c) {
        kiln_i64 d = t + c * NT;
        if (d < a.head_dim)
            o[o_off + i * a.o_stride_row + h * a.o_stride_head + d] = kiln_f32_to_elem(acc[c]);
    }
    if (t == 0 && a.lse) a.lse[lse_off + h * a.lse_stride_head + i * a.lse_stride_row] = lse;
}
