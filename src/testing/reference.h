/*
 * The fp64 reference every kernel is checked against (tests and `kiln check`).
 *
 * Host-only: every pointer in the problems below must be CPU memory. Inputs are read in
 * their own dtype (bf16, f16, f32) and widened exactly, so a reference computed from the
 * same rounded inputs a kernel saw differs from the kernel only by the kernel's own error.
 * It is written for clarity, not speed: plain loops, two passes over the keys per row.
 */
#ifndef KILN_CORE_REFERENCE_H
#define KILN_CORE_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "problem.h"

/* Reads element idx (in elements) of a bf16 / f16 / f32 array as a double. */
double kiln_ref_load(kiln_dtype dtype, const void *base, int64_t idx);
/* Rounds v to dtype and stores it at element idx. */
void kiln_ref_store(kiln_dtype dtype, void *base, int64_t idx, double v);
/* The value v becomes once rounded to dtype (identity for f32 beyond the fp32 rounding). */
double kiln_ref_round(kiln_dtype dtype, double v);

/* Query length and key length of sequence b, as the layout comment in problem.h defines. */
int64_t kiln_ref_seqlen_q(const kiln_attn_problem *p, int64_t b);
int64_t kiln_ref_seqlen_k(const kiln_attn_problem *p, int64_t b);
/* Index of the first q row of sequence b among the problem's rows_q rows. */
int64_t kiln_ref_row0(const kiln_attn_problem *p, int64_t b);

/*
 * Attention forward in fp64 over p (any mode). Results go to plain row-major arrays indexed
 * by q row r = kiln_ref_row0(p, b) + i:
 *   out  [rows_q, heads_q, head_dim]  (rows no sequence covers are left as they were)
 *   lse  [rows_q, heads_q] or NULL; natural log; -INFINITY where no key is visible.
 * p->out and p->lse are not read or written.
 * @return KILN_OUT_OF_MEMORY if scratch cannot be allocated, else KILN_OK.
 */
kiln_status kiln_ref_attention(const kiln_attn_problem *p, double *out, double *lse);

/* act(x[..., :d]) * x[..., d:] in fp64 into out [rows, d], rows in row-major order of the
 * leading dimensions. p->out is not touched. */
void kiln_ref_act_and_mul(const kiln_act_problem *p, double *out);

/*
 * Builds a problem from public arguments without validating them (the caller passes
 * arguments the library accepts; use the library's own checks for anything else). It
 * follows the public contract in kiln.h: scale 0 resolves to 1/sqrt(head_dim), causal is
 * folded into window_right, slopes of rank 1 are broadcast over the batch.
 *   FIXED:  q, k, v, out, lse as kiln_attention_fwd.
 *   VARLEN: plus cu_seqlens_q/k, max_seqlen_q/k (block_table, seqlens_k NULL).
 *   PAGED:  k, v are the caches; block_table, seqlens_k, optional cu_seqlens_q.
 * Data pointers are copied as given, so host views give a problem for kiln_ref_attention.
 */
void kiln_ref_attn_problem(kiln_attn_problem *p, kiln_attn_mode mode, const kiln_tensor *q,
                           const kiln_tensor *k, const kiln_tensor *v,
                           const kiln_tensor *cu_seqlens_q, const kiln_tensor *cu_seqlens_k,
                           const kiln_tensor *block_table, const kiln_tensor *seqlens_k,
                           int64_t max_seqlen_q, int64_t max_seqlen_k, const kiln_tensor *out,
                           const kiln_tensor *lse, const kiln_attention_params *params);

/* Same for a gated activation: x [..., 2d], out [..., d] (rank 1..4). */
void kiln_ref_act_problem(kiln_act_problem *p, kiln_activation act, const kiln_tensor *x,
                          const kiln_tensor *out);

#endif
