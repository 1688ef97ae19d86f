/* fp64 reference for attention and gated activations (see reference.h). */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

#include "half.h"

double kiln_ref_load(kiln_dtype dtype, const void *base, int64_t idx) {
    switch (dtype) {
    case KILN_F32: return (double)((const float *)base)[idx];
    case KILN_F16: return (double)kiln_f16_to_f32(((const uint16_t *)base)[idx]);
    case KILN_BF16: return (double)kiln_bf16_to_f32(((const uint16_t *)base)[idx]);
    case KILN_I32: return (double)((const int32_t *)base)[idx];
    }
    return NAN;
}

void kiln_ref_store(kiln_dtype dtype, void *base, int64_t idx, double v) {
    switch (dtype) {
    case KILN_F32: ((float *)base)[idx] = (float)v; break;
    case KILN_F16: ((uint16_t *)base)[idx] = kiln_f32_to_f16((float)v); break;
    case KILN_BF16: ((uint16_t *)base)[idx] = kiln_f32_to_bf16((float)v); break;
    case KILN_I32: ((int32_t *)base)[idx] = (int32_t)v; break;
    }
}

double kiln_ref_round(kiln_dtype dtype, double v) {
    switch (dtype) {
    case KILN_F32: return (double)(float)v;
    case KILN_F16: return (double)kiln_f16_to_f32(kiln_f32_to_f16((float)v));
    case KILN_BF16: return (double)kiln_bf16_to_f32(kiln_f32_to_bf16((float)v));
    case KILN_I32: return (double)(int32_t)v;
    }
    return NAN;
}

int64_t kiln_ref_seqlen_q(const kiln_attn_problem *p, int64_t b) {
    if (p->cu_seqlens_q) return (int64_t)p->cu_seqlens_q[b + 1] - p->cu_seqlens_q[b];
    return p->seqlen_q;
}

int64_t kiln_ref_seqlen_k(const kiln_attn_problem *p, int64_t b) {
    switch (p->mode) {
    case KILN_MODE_FIXED: return p->seqlen_k;
    case KILN_MODE_VARLEN: return (int64_t)p->cu_seqlens_k[b + 1] - p->cu_seqlens_k[b];
    case KILN_MODE_PAGED: return p->seqlens_k[b];
    }
    return 0;
}

int64_t kiln_ref_row0(const kiln_attn_problem *p, int64_t b) {
    return p->cu_seqlens_q ? (int64_t)p->cu_seqlens_q[b] : b * p->seqlen_q;
}

/* Element offset of (b, j, h, 0) in k or v; the strides passed pick which. */
static int64_t kv_offset(const kiln_attn_problem *p, int64_t b, int64_t j, int64_t h,
                         int64_t s_batch, int64_t s_row, int64_t s_head) {
    if (p->mode == KILN_MODE_PAGED) {
        int64_t page = p->block_table[b * p->block_table_stride + j / p->page_size];
        return page * s_batch + (j % p->page_size) * s_row + h * s_head;
    }
    int64_t base = p->cu_seqlens_k ? (int64_t)p->cu_seqlens_k[b] * s_row : b * s_batch;
    return base + j * s_row + h * s_head;
}

/* Whether query i of a sequence (sq queries, sk keys) sees key j. */
static int visible(const kiln_attn_problem *p, int64_t i, int64_t j, int64_t sq, int64_t sk) {
    int64_t diag = i + sk - sq;
    if (p->window_left >= 0 && j < diag - p->window_left) return 0;
    if (p->window_right >= 0 && j > diag + p->window_right) return 0;
    return 1;
}

kiln_status kiln_ref_attention(const kiln_attn_problem *p, double *out, double *lse) {
    int64_t max_sk = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        int64_t sk = kiln_ref_seqlen_k(p, b);
        if (sk > max_sk) max_sk = sk;
    }
    const int64_t D = p->head_dim;
    double *s = malloc((size_t)(max_sk > 0 ? max_sk : 1) * sizeof *s);
    double *qrow = malloc((size_t)(D > 0 ? D : 1) * sizeof *qrow);
    double *acc = malloc((size_t)(D > 0 ? D : 1) * sizeof *acc);
    if (!s || !qrow || !acc) {
        free(s);
        free(qrow);
        free(acc);
        return KILN_OUT_OF_MEMORY;
    }
    const int64_t group = p->heads_q / p->heads_kv;
    const double scale = (double)p->scale;
    const double cap = (double)p->softcap;

    for (int64_t b = 0; b < p->batch; b++) {
        const int64_t sq = kiln_ref_seqlen_q(p, b), sk = kiln_ref_seqlen_k(p, b);
        const int64_t row0 = kiln_ref_row0(p, b);
        const int64_t q_base = p->cu_seqlens_q ? row0 * p->q_stride_row : b * p->q_stride_batch;
        for (int64_t i = 0; i < sq; i++) {
            for (int64_t h = 0; h < p->heads_q; h++) {
                const int64_t hk = h / group;
                const int64_t qo = q_base + i * p->q_stride_row + h * p->q_stride_head;
                for (int64_t d = 0; d < D; d++) qrow[d] = kiln_ref_load(p->dtype, p->q, qo + d);
                const double slope =
                    p->alibi ? (double)p->alibi[b * p->alibi_stride_batch + h] : 0.0;

                /* Pass 1: logits of visible keys and their maximum. */
                double m = -INFINITY;
                for (int64_t j = 0; j < sk; j++) {
                    if (!visible(p, i, j, sq, sk)) continue;
                    const int64_t ko = kv_offset(p, b, j, hk, p->k_stride_batch,
                                                 p->k_stride_row, p->k_stride_head);
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        dot += qrow[d] * kiln_ref_load(p->dtype, p->k, ko + d);
                    double x = scale * dot;
                    if (cap > 0.0) x = cap * tanh(x / cap);
                    if (p->alibi) x -= slope * fabs((double)(i + sk - sq - j));
                    s[j] = x;
                    if (x > m || isnan(x)) m = isnan(m) ? m : x; /* a NaN logit wins */
                }

                /* Pass 2: normalised weighted sum of v. */
                double denom = 0.0;
                for (int64_t d = 0; d < D; d++) acc[d] = 0.0;
                /* m is -inf when no key is visible (or every visible logit is -inf): the
                 * row is 0 with LSE -inf. NaN and +inf logits go on through IEEE arithmetic:
                 * exp(NaN - m) and exp(inf - inf) are NaN, and so is the row. */
                if (m != -INFINITY) {
                    for (int64_t j = 0; j < sk; j++) {
                        if (!visible(p, i, j, sq, sk)) continue;
                        const double w = exp(s[j] - m);
                        denom += w;
                        const int64_t vo = kv_offset(p, b, j, hk, p->v_stride_batch,
                                                     p->v_stride_row, p->v_stride_head);
                        for (int64_t d = 0; d < D; d++)
                            acc[d] += w * kiln_ref_load(p->dtype, p->v, vo + d);
                    }
                }
                double *o = out + ((row0 + i) * p->heads_q + h) * D;
                for (int64_t d = 0; d < D; d++) o[d] = m != -INFINITY ? acc[d] / denom : 0.0;
                if (lse)
                    lse[(row0 + i) * p->heads_q + h] =
                        m != -INFINITY ? m + log(denom) : -INFINITY;
            }
        }
    }
    free(s);
    free(qrow);
    free(acc);
    return KILN_OK;
}

static double act_fn(kiln_activation act, double x) {
    switch (act) {
    case KILN_ACT_SILU: return x / (1.0 + exp(-x));
    case KILN_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case KILN_ACT_GELU_TANH: {
        const double k = sqrt(2.0 / 3.14159265358979323846);
        return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    }
    return NAN;
}

void kiln_ref_act_and_mul(const kiln_act_problem *p, double *out) {
    int64_t shape[3] = {1, 1, 1}, xs[3] = {0, 0, 0};
    /* Right-align the leading dims into three levels so one loop nest covers ranks 1..4. */
    for (int32_t l = 0; l < p->lead_rank; l++) {
        shape[3 - p->lead_rank + l] = p->lead_shape[l];
        xs[3 - p->lead_rank + l] = p->x_stride[l];
    }
    int64_t r = 0;
    for (int64_t a = 0; a < shape[0]; a++)
        for (int64_t b = 0; b < shape[1]; b++)
            for (int64_t c = 0; c < shape[2]; c++, r++) {
                const int64_t xo = a * xs[0] + b * xs[1] + c * xs[2];
                for (int64_t d = 0; d < p->d; d++) {
                    const double g = kiln_ref_load(p->dtype, p->x, xo + d);
                    const double u = kiln_ref_load(p->dtype, p->x, xo + p->d + d);
                    out[r * p->d + d] = act_fn(p->act, g) * u;
                }
            }
}

void kiln_ref_attn_problem(kiln_attn_problem *p, kiln_attn_mode mode, const kiln_tensor *q,
                           const kiln_tensor *k, const kiln_tensor *v,
                           const kiln_tensor *cu_seqlens_q, const kiln_tensor *cu_seqlens_k,
                           const kiln_tensor *block_table, const kiln_tensor *seqlens_k,
                           int64_t max_seqlen_q, int64_t max_seqlen_k, const kiln_tensor *out,
                           const kiln_tensor *lse, const kiln_attention_params *params) {
    kiln_attention_params defaults;
    if (!params) {
        kiln_attention_params_init(&defaults);
        params = &defaults;
    }
    *p = (kiln_attn_problem){0};
    p->mode = mode;
    p->dtype = q->dtype;
    p->q = q->data;
    p->k = k->data;
    p->v = v->data;
    p->out = out ? out->data : NULL;
    p->cu_seqlens_q = cu_seqlens_q ? (const int32_t *)cu_seqlens_q->data : NULL;

    const int packed_q = p->cu_seqlens_q != NULL;
    const int32_t qr = packed_q ? 3 : 4; /* rank of q */
    p->head_dim = q->shape[qr - 1];
    p->heads_q = q->shape[qr - 2];
    p->heads_kv = k->shape[k->rank - 2];
    p->q_stride_head = q->stride[qr - 2];
    p->q_stride_row = q->stride[qr - 3];
    p->q_stride_batch = packed_q ? 0 : q->stride[0];
    if (out) {
        p->o_stride_head = out->stride[qr - 2];
        p->o_stride_row = out->stride[qr - 3];
        p->o_stride_batch = packed_q ? 0 : out->stride[0];
    }
    if (packed_q) {
        p->batch = cu_seqlens_q->shape[0] - 1;
        p->rows_q = q->shape[0];
        p->seqlen_q = max_seqlen_q;
    } else {
        p->batch = q->shape[0];
        p->seqlen_q = q->shape[1];
        p->rows_q = p->batch * p->seqlen_q;
    }

    /* k/v: [batch|pages, rows, heads, d] (rank 4) or packed [rows, heads, d] (rank 3). */
    const int packed_k = k->rank == 3;
    p->k_stride_head = k->stride[k->rank - 2];
    p->k_stride_row = k->stride[k->rank - 3];
    p->k_stride_batch = packed_k ? 0 : k->stride[0];
    p->v_stride_head = v->stride[v->rank - 2];
    p->v_stride_row = v->stride[v->rank - 3];
    p->v_stride_batch = packed_k ? 0 : v->stride[0];

    switch (mode) {
    case KILN_MODE_FIXED: p->seqlen_k = k->shape[1]; break;
    case KILN_MODE_VARLEN:
        p->cu_seqlens_k = (const int32_t *)cu_seqlens_k->data;
        p->seqlen_k = max_seqlen_k;
        break;
    case KILN_MODE_PAGED:
        p->block_table = (const int32_t *)block_table->data;
        p->block_table_stride = block_table->stride[0];
        p->max_pages = block_table->shape[1];
        p->seqlens_k = (const int32_t *)seqlens_k->data;
        p->num_pages = k->shape[0];
        p->page_size = k->shape[1];
        p->seqlen_k = p->max_pages * p->page_size;
        break;
    }

    if (lse && lse->data) {
        p->lse = (float *)lse->data;
        if (packed_q) {
            p->lse_stride_head = lse->stride[0];
            p->lse_stride_row = lse->stride[1];
        } else {
            p->lse_stride_batch = lse->stride[0];
            p->lse_stride_head = lse->stride[1];
            p->lse_stride_row = lse->stride[2];
        }
    }

    p->scale = params->softmax_scale != 0.0f ? params->softmax_scale
                                              : 1.0f / sqrtf((float)p->head_dim);
    p->softcap = params->softcap;
    p->causal = params->causal != 0;
    p->window_left = params->window_left;
    p->window_right = params->causal ? 0 : params->window_right;
    if (params->alibi_slopes.data) {
        p->alibi = (const float *)params->alibi_slopes.data;
        p->alibi_stride_batch = params->alibi_slopes.rank == 2 ? params->alibi_slopes.stride[0] : 0;
    }
    p->num_splits = params->num_splits;
    p->workspace = params->workspace;
    p->workspace_size = params->workspace_size;
}

void kiln_ref_act_problem(kiln_act_problem *p, kiln_activation act, const kiln_tensor *x,
                          const kiln_tensor *out) {
    *p = (kiln_act_problem){0};
    p->act = act;
    p->dtype = x->dtype;
    p->x = x->data;
    p->out = out ? out->data : NULL;
    p->d = x->shape[x->rank - 1] / 2;
    p->lead_rank = x->rank - 1;
    p->rows = 1;
    for (int32_t l = 0; l < p->lead_rank; l++) {
        p->lead_shape[l] = x->shape[l];
        p->x_stride[l] = x->stride[l];
        p->o_stride[l] = out ? out->stride[l] : 0;
        p->rows *= x->shape[l];
    }
}
