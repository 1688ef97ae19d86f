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

#endif
