/*
 * Non-finite inputs for the attention conformance tests and the kernel emulation: one NaN or
 * infinity planted in q, k, v or the ALiBi slopes of a host problem. Every backend and tier
 * must then give what the fp64 reference gives (src/core/reference.c): a NaN logit makes its
 * row NaN, a +inf logit makes it NaN through exp(inf - inf), a NaN or inf in v reaches every
 * row that sees that key; keys past a sequence's end and masked keys never count.
 *
 * v is planted at key 0, which every row sees only under a full mask: within a tile a
 * matrix-instruction kernel multiplies a masked key's v by a zero probability, and 0 * NaN
 * is NaN, so callers plant in v only for cases without causal or window masks.
 */
#ifndef KILN_TESTS_NONFINITE_H
#define KILN_TESTS_NONFINITE_H

#include <math.h>
#include <stdint.h>

#include "reference.h"

enum tc_nonfinite {
    TC_NF_NONE = 0,
    TC_NF_Q_NAN,     /* one element of one query row */
    TC_NF_K_NAN,     /* one element of the middle key */
    TC_NF_K_INF,     /* +inf there: +-inf or NaN logits, depending on q's sign */
    TC_NF_V_NAN,     /* one element of key 0 (full masks only) */
    TC_NF_V_INF,
    TC_NF_ALIBI_NAN, /* head 0's slope */
    TC_NF_ALIBI_INF,
    TC_NF_COUNT
};

static inline const char *tc_nonfinite_name(int kind) {
    static const char *const names[TC_NF_COUNT] = {
        "", "q NaN", "k NaN", "k +inf", "v NaN", "v +inf", "alibi NaN", "alibi +inf"};
    return kind > 0 && kind < TC_NF_COUNT ? names[kind] : "";
}

static inline int tc_nonfinite_needs_full_mask(int kind) {
    return kind == TC_NF_V_NAN || kind == TC_NF_V_INF;
}

static inline int tc_nonfinite_needs_alibi(int kind) {
    return kind == TC_NF_ALIBI_NAN || kind == TC_NF_ALIBI_INF;
}

/* Offset (in elements) of key j of batch entry b, kv head 0, in k (use_v 0) or v. */
static inline int64_t tc_nonfinite_kv_offset(const kiln_attn_problem *p, int64_t b, int64_t j,
                                             int use_v) {
    const int64_t sb = use_v ? p->v_stride_batch : p->k_stride_batch;
    const int64_t sr = use_v ? p->v_stride_row : p->k_stride_row;
    if (p->mode == KILN_MODE_PAGED) {
        const int64_t page = p->block_table[b * p->block_table_stride + j / p->page_size];
        return page * sb + (j % p->page_size) * sr;
    }
    if (p->cu_seqlens_k) return ((int64_t)p->cu_seqlens_k[b] + j) * sr;
    return b * sb + j * sr;
}

/* Plants kind into the host problem p (q, k, v writable; slopes = the ALiBi slopes it
 * points at, or NULL) in the first batch entry with queries and keys. Element index dim
 * (below head_dim). Returns 0 when the problem has no such entry (nothing planted). */
static inline int tc_nonfinite_plant(const kiln_attn_problem *p, int kind, float *slopes,
                                     int64_t dim) {
    const double nan = NAN, inf = INFINITY;
    int64_t b = 0, sq = 0, sk = 0;
    for (; b < p->batch; b++) {
        sq = kiln_ref_seqlen_q(p, b);
        sk = p->mode == KILN_MODE_PAGED ? p->seqlens_k[b]
             : p->cu_seqlens_k         ? p->cu_seqlens_k[b + 1] - p->cu_seqlens_k[b]
                                       : p->seqlen_k;
        if (sq > 0 && sk > 0) break;
    }
    if (b == p->batch || kind == TC_NF_NONE) return 0;
    dim %= p->head_dim;
    switch (kind) {
    case TC_NF_Q_NAN: {
        const int64_t base = p->cu_seqlens_q ? kiln_ref_row0(p, b) * p->q_stride_row
                                             : b * p->q_stride_batch;
        kiln_ref_store(p->dtype, (void *)p->q, base + (sq / 2) * p->q_stride_row + dim, nan);
        return 1;
    }
    case TC_NF_K_NAN:
    case TC_NF_K_INF:
        kiln_ref_store(p->dtype, (void *)p->k, tc_nonfinite_kv_offset(p, b, sk / 2, 0) + dim,
                       kind == TC_NF_K_NAN ? nan : inf);
        return 1;
    case TC_NF_V_NAN:
    case TC_NF_V_INF:
        kiln_ref_store(p->dtype, (void *)p->v, tc_nonfinite_kv_offset(p, b, 0, 1) + dim,
                       kind == TC_NF_V_NAN ? nan : inf);
        return 1;
    case TC_NF_ALIBI_NAN:
    case TC_NF_ALIBI_INF:
        if (!slopes) return 0;
        slopes[b * p->alibi_stride_batch] = kind == TC_NF_ALIBI_NAN ? NAN : INFINITY;
        return 1;
    default:
        return 0;
    }
}

/* got matches the fp64 reference ref: NaN for NaN, the same infinity, else within tol. */
static inline int tc_nonfinite_close(double got, double ref, double tol) {
    if (isnan(ref)) return isnan(got);
    if (isinf(ref)) return got == ref;
    return fabs(got - ref) <= tol;
}

#endif
