/*
 * Where one sequence's rows live, for every attention kernel: the per-sequence lengths and
 * offsets of a batch entry (fixed, varlen or paged per KILN_MODE), and the offset of a key's
 * row in k and v (through the block table when paged), the mask band and the visibility
 * test, and where a finished row is stored. Include after kiln_device.h and kiln_args.h.
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

/* Paged: offsets of key j's row (head 0) in k and v, bt being its sequence's block-table
 * row. */
KILN_DEV void kiln_page_row(const kiln_attn_args *a, const kiln_i32 *bt, kiln_i64 j,
                            kiln_i64 *ko, kiln_i64 *vo)
{
    const kiln_i64 page = bt[j / a->page_size], slot = j % a->page_size;
    *ko = page * a->k_stride_batch + slot * a->k_stride_row;
    *vo = page * a->v_stride_batch + slot * a->v_stride_row;
}

/* Offsets of key j's row (head 0) in k and v. */
KILN_DEV void kiln_kv_row(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b, kiln_i64 j,
                          kiln_i64 *ko, kiln_i64 *vo)
{
#if KILN_MODE == KILN_MODE_ID_PAGED
    (void)s;
    kiln_page_row(a, a->block_table + b * a->block_table_stride, j, ko, vo);
#else
    (void)b;
    *ko = s->k_off + j * a->k_stride_row;
    *vo = s->v_off + j * a->v_stride_row;
#endif
}

/* The K and V row offsets (KV head hk) of keys kt .. kt + n - 1 below hi, rows[jj][0] for
 * K and rows[jj][1] for V, so a tile's page lookups happen once per key: thread jj < n
 * fills row jj (a barrier must follow before others read it). */
KILN_DEV void kiln_kv_rows(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b, kiln_i64 hk,
                           kiln_i64 kt, kiln_i64 hi, kiln_i32 n, kiln_i64 (*rows)[2])
{
    const kiln_i32 jj = kiln_thread_x();
    if (jj < n && kt + jj < hi) {
        kiln_i64 ko, vo;
        kiln_kv_row(a, s, b, kt + jj, &ko, &vo);
        rows[jj][0] = ko + hk * a->k_stride_head;
        rows[jj][1] = vo + hk * a->v_stride_head;
    }
}

/* The mask band: key j is visible to query i when lo <= j - (i + diag) <= hi (diag =
 * sk - sq puts the last query on the last key). Offsets are 32-bit (sequence lengths are
 * int32); an unbounded side is the int32 extreme, a window wider than any sequence is cut
 * to it. */
typedef struct kiln_band {
    kiln_i32 lo, hi;
} kiln_band;

KILN_DEV kiln_band kiln_band_of(const kiln_attn_args *a)
{
    kiln_band m;
    const kiln_i64 big = 0x7fffffff;
    m.lo = -(kiln_i32)big;
    m.hi = (kiln_i32)big;
#if KILN_MASK != KILN_MASK_FULL
    if (a->window_left >= 0) m.lo = -(kiln_i32)(a->window_left < big ? a->window_left : big);
#if KILN_MASK == KILN_MASK_CAUSAL
    m.hi = 0;
#else
    if (a->window_right >= 0) m.hi = (kiln_i32)(a->window_right < big ? a->window_right : big);
#endif
#else
    (void)a;
#endif
    return m;
}

/* The keys [*f, *e) of [0, n) that queries whose diagonal keys run from d0 to d1 (in those
 * coordinates) can see: the band from d0's left edge to d1's right one, clamped to [0, n]
 * (empty when *f >= *e). 64-bit sums: a band side may be the int32 extreme. */
KILN_DEV void kiln_band_span(kiln_band m, kiln_i64 d0, kiln_i64 d1, kiln_i64 n, kiln_i64 *f,
                             kiln_i64 *e)
{
    kiln_i64 x = d0 + m.lo, y = d1 + m.hi + 1;
    *f = x < 0 ? 0 : x > n ? n : x;
    *e = y < 0 ? 0 : y > n ? n : y;
}

/* The key-visibility test: off = j - (i + diag) inside the band. */
KILN_DEV int kiln_key_visible(kiln_band m, kiln_i32 off)
{
#if KILN_MASK == KILN_MASK_FULL
    (void)m, (void)off;
    return 1;
#else
    return off >= m.lo && off <= m.hi;
#endif
}

/* Keys [*lo, *hi) that the block of packed rows p0 .. p0 + block_rows - 1 (rows in all,
 * group query heads per row's query) can see in split number split: the band around the
 * diagonal of its first and last query, cut to the split's share of the keys. */
KILN_DEV void kiln_key_range(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 p0,
                             kiln_i64 block_rows, kiln_i64 rows, kiln_i64 group, kiln_i64 split,
                             kiln_i64 *lo, kiln_i64 *hi)
{
    const kiln_i64 diag = s->sk - s->sq;
    const kiln_i64 i0 = p0 / group;
    const kiln_i64 i_last = ((p0 + block_rows < rows ? p0 + block_rows : rows) - 1) / group;
    kiln_band_span(kiln_band_of(a), i0 + diag, i_last + diag, s->sk, lo, hi);
    if (a->num_splits > 1) {
        kiln_i64 chunk = (s->sk + a->num_splits - 1) / a->num_splits;
        kiln_i64 c0 = split * chunk, c1 = c0 + chunk;
        if (c0 > *lo) *lo = c0;
        if (c1 < *hi) *hi = c1;
    }
}

/* What a block of the attention kernels covers: packed (query, head) rows p0 .. p0 + bq - 1
 * of its sequence's rows (s->sq x group in all), the keys lo .. hi - 1 that this split of
 * them sees, and the mask's band; key j is on row i's diagonal when j == i + diag. 0 when
 * the block holds no row: then the whole block leaves together, so no barrier is skipped. */
typedef struct kiln_span {
    kiln_i64 rows, diag, lo, hi;
    kiln_band band;
} kiln_span;

KILN_DEV int kiln_span_of(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 p0,
                          kiln_i64 bq, kiln_i64 group, kiln_i64 split, kiln_span *sp)
{
    sp->rows = s->sq * group;
    if (p0 >= sp->rows) return 0;
    sp->diag = s->sk - s->sq;
    kiln_key_range(a, s, p0, bq, sp->rows, group, split, &sp->lo, &sp->hi);
    sp->band = kiln_band_of(a);
    return 1;
}

/* Whether no key of kt .. kt + n - 1 (all below hi) is masked for any query i0 .. i_last:
 * the band is an interval, so its two far corners decide. */
KILN_DEV int kiln_tile_whole(kiln_band m, kiln_i64 kt, kiln_i64 n, kiln_i64 hi, kiln_i64 i0,
                             kiln_i64 i_last, kiln_i64 diag)
{
    return kt + n <= hi && kiln_key_visible(m, (kiln_i32)(kt - (i_last + diag))) &&
           kiln_key_visible(m, (kiln_i32)(kt + n - 1 - (i0 + diag)));
}

/* Where a finished row goes: num_splits == 1, the output row and LSE slot (NULL when the
 * LSE is not requested); num_splits > 1, the row's fp32 partial output and LSE in the split
 * workspace (head_dim wide) for kernels/combine.cu. */
typedef struct kiln_out_row {
    kiln_elem *out;
    float *ws;
    float *lse;
} kiln_out_row;

KILN_DEV kiln_out_row kiln_out_row_of(const kiln_attn_args *a, const kiln_seq *s,
                                      kiln_i64 split, kiln_i64 i, kiln_i64 h)
{
    kiln_out_row r;
    if (a->num_splits > 1) {
        const kiln_i64 wrow = (split * a->rows_q + s->row0 + i) * a->heads_q + h;
        r.out = 0;
        r.ws = a->ws_out + wrow * a->head_dim;
        r.lse = a->ws_lse + wrow;
    } else {
        r.out = (kiln_elem *)a->out + s->o_off + i * a->o_stride_row + h * a->o_stride_head;
        r.ws = 0;
        r.lse = a->lse ? a->lse + s->lse_off + h * a->lse_stride_head + i * a->lse_stride_row
                       : 0;
    }
    return r;
}

/* Stores dims d and d + 1 of the row (already divided by the row sum). */
KILN_DEV void kiln_out_put2(const kiln_out_row *r, kiln_i64 d, float x0, float x1)
{
    if (r->ws) {
        r->ws[d] = x0;
        r->ws[d + 1] = x1;
    } else {
        r->out[d] = kiln_f32_to_elem(x0);
        r->out[d + 1] = kiln_f32_to_elem(x1);
    }
}

KILN_DEV void kiln_out_put(const kiln_out_row *r, kiln_i64 d, float x)
{
    if (r->ws)
        r->ws[d] = x;
    else
        r->out[d] = kiln_f32_to_elem(x);
}

KILN_DEV void kiln_out_lse(const kiln_out_row *r, float lse)
{
    if (r->lse) *r->lse = lse;
}

#endif
