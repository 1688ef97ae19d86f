/*
 * The kernel arguments: one definition read by the device code (every kernel in kernels/, passed by
 * value as the only kernel parameter) and by the host (src/gpu/variants.c fills it from a
 * kiln_attn_problem / kiln_act_problem). Plain C with 8-byte pointers, 8-byte integers
 * first, then 4-byte fields, so the layout is the same on x86-64, nvptx64 and amdgcn.
 *
 * Launch geometry (blocks are one-dimensional, KILN_*_THREADS threads):
 *   kiln_attn_fwd      grid (ceil(seqlen_q * (heads_q / heads_kv) / KILN_ATTN_BLOCK_Q),
 *                            heads_kv, batch * num_splits)
 *   kiln_attn_combine  grid (seqlen_q, heads_q, batch)        (only when num_splits > 1)
 *   kiln_attn_decode   grid (ceil(seqlen_q * group / KILN_DECODE_ROWS) * num_splits,
 *                            heads_kv, batch)  (kernels/decode.h; merges its own splits)
 *   kiln_act_and_mul   grid (rows, ceil(d / (KILN_ACT_THREADS * vec)), 1)
 * where seqlen_q is the dense length or the longest packed sequence (max_seqlen_q). Blocks
 * past a sequence's end return at once, so a generous bound is only a little slower.
 */
#ifndef KILN_ARGS_H
#define KILN_ARGS_H

#ifndef KILN_DEVICE_CODE
#include <stdint.h>
typedef int64_t kiln_i64;
typedef int32_t kiln_i32;
#endif

#define KILN_ATTN_BLOCK_Q 16  /* query rows per block */
#define KILN_ATTN_BLOCK_K 32  /* keys per shared-memory tile */
#define KILN_ATTN_THREADS 128
#define KILN_COMBINE_THREADS 128
#define KILN_ACT_THREADS 256

#if defined(__cplusplus)
#define KILN_STATIC_ASSERT(cond, why) static_assert(cond, why)
#else
#define KILN_STATIC_ASSERT(cond, why) _Static_assert(cond, why)
#endif

/* Mask kinds (KILN_MASK) as compiled into a variant. */
#define KILN_MASK_FULL 0
#define KILN_MASK_CAUSAL 1 /* right edge on the diagonal; window_left still honoured */
#define KILN_MASK_WINDOW 2

/* Attention modes: the one enum of the host (src/core/problem.h's problems carry it) and
 * the kernels. A variant's KILN_MODE is one of these values; kernels test it with #if
 * against the KILN_MODE_ID_* spellings, which the preprocessor can see (an enumerator in
 * an #if would silently read as 0). */
#define KILN_MODE_ID_FIXED 0
#define KILN_MODE_ID_VARLEN 1
#define KILN_MODE_ID_PAGED 2
typedef enum kiln_attn_mode {
    KILN_MODE_FIXED = KILN_MODE_ID_FIXED,   /* dense q, dense k/v, equal lengths per batch */
    KILN_MODE_VARLEN = KILN_MODE_ID_VARLEN, /* packed q and k/v with cu_seqlens */
    KILN_MODE_PAGED = KILN_MODE_ID_PAGED    /* q dense (decode) or packed (batch prefill) over
                                               a paged cache */
} kiln_attn_mode;
#if defined(KILN_MODE) && KILN_MODE != KILN_MODE_ID_FIXED && KILN_MODE != KILN_MODE_ID_VARLEN && \
    KILN_MODE != KILN_MODE_ID_PAGED
#error "KILN_MODE must be one of the KILN_MODE_ID_* values"
#endif

/* Attention forward and split combine. Element (b, i, h, d) addressing is exactly
 * src/core/problem.h's. The split workspace holds fp32 partial outputs
 * ws_out[split][row][heads_q][head_dim] and their LSE ws_lse[split][row][heads_q], row being
 * b * seqlen_q + i for dense q and cu_seqlens_q[b] + i for packed q. */
typedef struct kiln_attn_args {
    const void *q, *k, *v;
    void *out;
    float *lse; /* NULL: not requested */
    const kiln_i32 *cu_seqlens_q, *cu_seqlens_k, *block_table, *seqlens_k;
    const float *alibi; /* NULL: off */
    float *ws_out, *ws_lse; /* num_splits > 1 only */

    kiln_i64 batch, heads_q, heads_kv, head_dim;
    kiln_i64 seqlen_q, seqlen_k, rows_q;
    kiln_i64 q_stride_batch, q_stride_row, q_stride_head;
    kiln_i64 k_stride_batch, k_stride_row, k_stride_head;
    kiln_i64 v_stride_batch, v_stride_row, v_stride_head;
    kiln_i64 o_stride_batch, o_stride_row, o_stride_head;
    kiln_i64 lse_stride_batch, lse_stride_head, lse_stride_row;
    kiln_i64 block_table_stride, page_size;
    kiln_i64 window_left, window_right; /* -1 = unbounded; causal folded in */
    kiln_i64 alibi_stride_batch;

    float scale;   /* never 0 */
    float softcap; /* 0 = off */
    kiln_i32 num_splits; /* >= 1 */
    kiln_i32 pad_;
} kiln_attn_args;

/* The host fills this struct and the device reads it by value: both compilers must lay it
 * out alike: 12 pointers of 8 bytes, 27 8-byte integers, 4 4-byte fields, no padding. */
#define KILN_ATTN_ARGS_BYTES (12 * 8 + 27 * 8 + 4 * 4)
KILN_STATIC_ASSERT(sizeof(kiln_attn_args) == KILN_ATTN_ARGS_BYTES,
                   "kiln_attn_args has one layout on the host and every device");

/* Gated activation: rows of x hold 2 * d values, out rows d. A row index r is split into
 * lead_rank digits (the last varies fastest) that select strides. */
typedef struct kiln_act_args {
    const void *x;
    void *out;
    kiln_i64 rows, d;
    kiln_i64 lead_shape[3], x_stride[3], o_stride[3];
    kiln_i32 lead_rank;
    kiln_i32 vec; /* elements per thread: 1, or 16 bytes' worth when everything is aligned */
} kiln_act_args;

#endif
