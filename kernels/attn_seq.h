/*
 * Where one sequence's rows live, for every attention kernel: the per-sequence lengths and
 * offsets of a batch entry (fixed, varlen or paged per KILN_MODE), and the offset of a key's
 * row in k and v (through the block table when paged). Include after kiln_args.h.
 */
#ifndef KILN_ATTN_SEQ_H
#define KILN_ATTN_SEQ_H

typedef struct kiln_seq {
    kiln_i64 sq, sk;  /* this sequence's query and key counts */
    kiln_i64 row0;    /* workspace / packed row of query 0 */
    kiln_i64 q_off, o_off, lse_off, k_off, v_off;
} kiln_seq;

KILN_DEV kiln_seq kiln_seq_of(const kiln_attn_args *a, kiln_i64 b)
{
    kiln_seq s;
    if (a->cu_seqlens_q) {
        kiln_i64 q0 = a->cu_seqlens_q[b];
        s.sq = a->cu_seqlens_q[b + 1] - q0;
        s.row0 = q0;
        s.q_off = q0 * a->q_stride_row;
        s.o_off = q0 * a->o_stride_row;
        s.lse_off = q0 * a->lse_stride_row;
    } else {
        s.sq = a->seqlen_q;
        s.row0 = b * a->seqlen_q;
        s.q_off = b * a->q_stride_batch;
        s.o_off = b * a->o_stride_batch;
        s.lse_off = b * a->lse_stride_batch;
    }
#if KILN_MODE == KILN_MODE_ID_FIXED
    s.sk = a->seqlen_k;
    s.k_off = b * a->k_stride_batch;
    s.v_off = b * a->v_stride_batch;
#elif KILN_MODE == KILN_MODE_ID_VARLEN
    s.sk = a->cu_seqlens_k[b + 1] - a->cu_seqlens_k[b];
    s.k_off = (kiln_i64)a->cu_seqlens_k[b] * a->k_stride_row;
    s.v_off = (kiln_i64)a->cu_seqlens_k[b] * a->v_stride_row;
#else
    s.sk = a->seqlens_k[b];
    s.k_off = 0;
    s.v_off = 0;
#endif
    return s;
}

/* Offsets of key j's row (head 0) in k and v. */
KILN_DEV void kiln_kv_row(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b, kiln_i64 j,
                          kiln_i64 *ko, kiln_i64 *vo)
{
#if KILN_MODE == KILN_MODE_ID_PAGED
    kiln_i64 page = a->block_table[b * a->block_table_stride + j / a->page_size];
    kiln_i64 slot = j % a->page_size;
    *ko = page * a->k_stride_batch + slot * a->k_stride_row;
    *vo = page * a->v_stride_batch + slot * a->v_stride_row;
#else
    *ko = s->k_off + j * a->k_stride_row;
    *vo = s->v_off + j * a->v_stride_row;
#endif
}

/* Keys [*lo, *hi) that the block of packed rows p0 .. p0 + block_rows - 1 (rows in all,
 * group query heads per row's query) can see in split number split: the mask's band around
 * the diagonal of its first and last query, cut to the split's share of the keys. */
KILN_DEV void kiln_key_range(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 p0,
                             kiln_i64 block_rows, kiln_i64 rows, kiln_i64 group, kiln_i64 split,
                             kiln_i64 *lo, kiln_i64 *hi)
{
    const kiln_i64 diag = s->sk - s->sq;
    *lo = 0;
    *hi = s->sk;
#if KILN_MASK != KILN_MASK_FULL
    const kiln_i64 i0 = p0 / group;
    const kiln_i64 i_last = ((p0 + block_rows < rows ? p0 + block_rows : rows) - 1) / group;
    if (a->window_left >= 0 && i0 + diag - a->window_left > *lo) *lo = i0 + diag - a->window_left;
#if KILN_MASK == KILN_MASK_CAUSAL
    if (i_last + diag + 1 < *hi) *hi = i_last + diag + 1;
#else
    if (a->window_right >= 0 && i_last + diag + a->window_right + 1 < *hi)
        *hi = i_last + diag + a->window_right + 1;
#endif
#else
    (void)p0, (void)block_rows, (void)rows, (void)group, (void)diag;
#endif
    if (a->num_splits > 1) {
        kiln_i64 chunk = (s->sk + a->num_splits - 1) / a->num_splits;
        kiln_i64 c0 = split * chunk, c1 = c0 + chunk;
        if (c0 > *lo) *lo = c0;
        if (c1 < *hi) *hi = c1;
    }
}

#endif
