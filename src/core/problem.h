/*
 * Validated, normalised descriptions of the work a public call asks for. The core checks
 * every argument (src/core/attention.c, src/core/activation.c) and hands backends one of
 * these: backends never see a kiln_tensor and never re-check shapes.
 *
 * All strides are in elements. Every layout is expressed as if it were the varlen/paged
 * general case, so one loop nest serves the three public modes:
 *   q element (b, i, h, d)   at q + q_off(b) + i * q_stride_row + h * q_stride_head + d
 *   where q_off(b) = cu_seqlens_q ? cu_seqlens_q[b] * q_stride_row : b * q_stride_batch.
 *   k/v element (b, j, h, d): dense  -> k + k_off(b) + j * k_stride_row + h * k_stride_head + d
 *                             paged  -> page = block_table[b * bt_stride + j / page_size],
 *                                       k + page * k_stride_batch + (j % page_size) *
 *                                       k_stride_row + h * k_stride_head + d
 *   lse element (b, h, i)     at lse + lse_off(b) + h * lse_stride_head + i * lse_stride_row
 *   where lse_off(b) = cu_seqlens_q ? cu_seqlens_q[b] * lse_stride_row : b * lse_stride_batch.
 */
#ifndef KILN_CORE_PROBLEM_H
#define KILN_CORE_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
/* kiln_attn_mode: one enum for the core and the kernels, whose variants compile a mode in. */
#include "../../kernels/kiln_args.h"

typedef struct kiln_attn_problem {
    kiln_attn_mode mode;
    kiln_dtype dtype; /* of q, k, v, out */
    int64_t batch, heads_q, heads_kv, head_dim;
    /* FIXED: the lengths. VARLEN: the caller's max bounds. PAGED: seqlen_q is the dense
     * q length (decode) or max_seqlen_q (prefill); seqlen_k is max_pages * page_size. */
    int64_t seqlen_q, seqlen_k;
    int64_t rows_q; /* batch * seqlen_q (dense q) or total_q (packed q) */

    const void *q, *k, *v;
    void *out;
    float *lse; /* NULL = not requested */

    int64_t q_stride_batch, q_stride_row, q_stride_head;
    int64_t k_stride_batch, k_stride_row, k_stride_head; /* paged: batch = page */
    int64_t v_stride_batch, v_stride_row, v_stride_head;
    int64_t o_stride_batch, o_stride_row, o_stride_head;
    int64_t lse_stride_batch, lse_stride_head, lse_stride_row;

    const int32_t *cu_seqlens_q; /* VARLEN always, PAGED prefill; else NULL */
    const int32_t *cu_seqlens_k; /* VARLEN only */
    const int32_t *block_table;  /* PAGED only */
    int64_t block_table_stride;  /* elements between rows of block_table */
    int64_t max_pages;           /* columns of block_table */
    const int32_t *seqlens_k;    /* PAGED only */
    int64_t page_size, num_pages;

    float scale;   /* resolved: never 0 */
    float softcap; /* 0 = off */
    int32_t causal;
    int64_t window_left, window_right; /* resolved: causal folded in, -1 = unbounded */
    const float *alibi;                /* NULL = off */
    int64_t alibi_stride_batch;        /* 0 for [heads_q] slopes */

    int32_t num_splits; /* resolved by the core: >= 1 (1 = no split) */
    void *workspace;
    size_t workspace_size;
    void *stream;
} kiln_attn_problem;

typedef struct kiln_act_problem {
    kiln_activation act;
    kiln_dtype dtype;
    int64_t rows; /* product of leading dimensions */
    int64_t d;    /* output width; x rows hold 2 * d */
    /* Leading dims flattened in up to 3 levels so any strides are honoured. */
    int32_t lead_rank;
    int64_t lead_shape[3];
    int64_t x_stride[3], o_stride[3];
    const void *x;
    void *out;
    void *stream;
} kiln_act_problem;

/* Split-KV planning shared by every backend and by kiln_attention_workspace_size():
 * partial outputs are fp32 [splits, rows_q, heads_q, head_dim] followed by fp32 LSE
 * [splits, rows_q, heads_q]. Inline here so backends and the core share it without either
 * calling the other. */
static inline size_t kiln_split_workspace_bytes(int32_t splits, int64_t rows_q,
                                                int64_t heads_q, int64_t head_dim)
{
    if (splits <= 1) return 0;
    /* Partial outputs and LSE, then one 8-byte arrival counter per (row, head)
     * (kernels/decode.cu merges its splits in the last block to arrive), and 32 bytes for
     * the GPU's alignment of the partials (16) and of the counters (8). */
    return (size_t)splits * (size_t)rows_q * (size_t)heads_q * ((size_t)head_dim + 1) *
               sizeof(float) +
           (size_t)rows_q * (size_t)heads_q * 8 + 32;
}

#endif
