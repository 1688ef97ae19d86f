/*
 * Attention entry points: every argument is checked here, turned into a kiln_attn_problem
 * and handed to the context's backend. Nothing is written before all checks pass.
 */
#include <math.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "context.h"
#include "error.h"

void kiln_attention_params_init(kiln_attention_params *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->window_left = -1;
    p->window_right = -1;
    kiln_tensor_init(&p->alibi_slopes);
}

void kiln_attention_plan_init(kiln_attention_plan *plan)
{
    if (!plan) return;
    memset(plan, 0, sizeof *plan);
    plan->struct_size = sizeof *plan;
}

static int host_visible(const kiln_context *ctx)
{
    return ctx->iface->kind == KILN_BACKEND_CPU;
}

/* The split count a call of this shape runs with: as requested, or the backend's choice
 * from the planning bounds (which for paged calls are block_table columns x page_size, the
 * only bound known without reading device memory). An explicit request is honoured as
 * given, up to KILN_MAX_SPLITS, so a caller's workspace query never depends on contents:
 * pieces left without keys contribute nothing to the merge. */
#define KILN_MAX_SPLITS 256
static int32_t resolve_splits(kiln_context *ctx, int32_t requested, int64_t batch,
                              int64_t max_sq, int64_t max_sk, int64_t heads_q,
                              int64_t heads_kv, int64_t d)
{
    int32_t s = requested;
    if (s == 0) {
        s = ctx->iface->choose_splits(ctx->state, batch, max_sq, max_sk, heads_q, heads_kv, d);
        if ((int64_t)s > max_sk) s = max_sk > 1 ? (int32_t)max_sk : 1;
    }
    if (s < 1) s = 1;
    if (s > KILN_MAX_SPLITS) s = KILN_MAX_SPLITS;
    return s;
}

static kiln_status begin(kiln_context *ctx, const kiln_attention_params *params,
                         kiln_attention_params *prm)
{
    KILN_FAIL_IF(!ctx, KILN_INVALID_ARGUMENT, "ctx is NULL");
    if (params) {
        KILN_FORWARD(kiln_check_struct_size(params->struct_size, sizeof *params, "params",
                                            "kiln_attention_params"));
        *prm = *params;
    } else {
        kiln_attention_params_init(prm);
    }
    KILN_FAIL_IF(!isfinite(prm->softmax_scale), KILN_INVALID_ARGUMENT,
                 "params.softmax_scale is not finite");
    KILN_FAIL_IF(!isfinite(prm->softcap) || prm->softcap < 0, KILN_INVALID_ARGUMENT,
                 "params.softcap is %g; it must be finite and >= 0 (0 = off)",
                 (double)prm->softcap);
    KILN_FAIL_IF(prm->window_left < -1, KILN_INVALID_ARGUMENT,
                 "params.window_left is %d; it must be >= -1 (-1 = unbounded)",
                 (int)prm->window_left);
    KILN_FAIL_IF(prm->window_right < -1, KILN_INVALID_ARGUMENT,
                 "params.window_right is %d; it must be >= -1 (-1 = unbounded)",
                 (int)prm->window_right);
    KILN_FAIL_IF(prm->num_splits < 0, KILN_INVALID_ARGUMENT,
                 "params.num_splits is %d; it must be >= 0 (0 = automatic)",
                 (int)prm->num_splits);
    return KILN_OK;
}

/* q, k, v, out: dtypes and the head layout. */
static kiln_status check_qkvo(kiln_context *ctx, kiln_attn_problem *p, const kiln_tensor *q,
                              const kiln_tensor *k, const kiln_tensor *v,
                              const kiln_tensor *out, const char *kname, const char *vname)
{
    int r = q->rank;
    KILN_FAIL_IF(q->dtype != KILN_BF16 && q->dtype != KILN_F16 && q->dtype != KILN_F32,
                 KILN_INVALID_ARGUMENT, "q has dtype %s; attention takes bf16, f16 or f32",
                 kiln_dtype_name(q->dtype));
    KILN_FORWARD(kiln_check_dtype(k, kname, q->dtype));
    KILN_FORWARD(kiln_check_dtype(v, vname, q->dtype));
    KILN_FORWARD(kiln_check_dtype(out, "out", q->dtype));
    KILN_FAIL_IF(q->dtype == KILN_F32 && ctx->iface->kind != KILN_BACKEND_CPU,
                 KILN_UNSUPPORTED, "f32 attention runs on the cpu backend only; backend %s "
                 "takes bf16 or f16", ctx->iface->name);
    p->dtype = q->dtype;
    p->heads_q = q->shape[r - 2];
    p->head_dim = q->shape[r - 1];
    p->heads_kv = k->shape[k->rank - 2];
    /* heads_q may be 0 only in an empty call (a no-op, see finish()); head_dim never. */
    KILN_FAIL_IF(p->head_dim <= 0 || p->head_dim % 8 != 0 || p->head_dim > 256,
                 KILN_INVALID_ARGUMENT,
                 "head_dim (last dimension of q) is %lld; it must be a multiple of 8 from 8 "
                 "to 256", (long long)p->head_dim);
    KILN_FAIL_IF(p->heads_q < 0 || (p->heads_q == 0 && kiln_tensor_numel(q) != 0),
                 KILN_INVALID_ARGUMENT, "q has %lld heads; it needs at least 1",
                 (long long)p->heads_q);
    KILN_FAIL_IF(p->heads_kv <= 0 || p->heads_q % p->heads_kv != 0, KILN_INVALID_ARGUMENT,
                 "%s has %lld heads; q's %lld heads must be a multiple", kname,
                 (long long)p->heads_kv, (long long)p->heads_q);
    KILN_FORWARD(kiln_check_dim(k, kname, k->rank - 1, p->head_dim, "head_dim"));
    KILN_FORWARD(kiln_check_dim(v, vname, v->rank - 1, p->head_dim, "head_dim"));
    KILN_FORWARD(kiln_check_dim(v, vname, v->rank - 2, p->heads_kv, "heads_kv"));
    return KILN_OK;
}

static kiln_status check_same_shape(const kiln_tensor *a, const char *an, const kiln_tensor *b,
                                    const char *bn)
{
    int i;
    for (i = 0; i < a->rank; i++)
        KILN_FAIL_IF(a->shape[i] != b->shape[i], KILN_INVALID_ARGUMENT,
                     "%s.shape[%d] is %lld; it must match %s.shape[%d] = %lld", an, i,
                     (long long)a->shape[i], bn, i, (long long)b->shape[i]);
    return KILN_OK;
}

static kiln_status check_index(const kiln_tensor *t, const char *name, int32_t rank)
{
    KILN_FORWARD(kiln_check_tensor(t, name, rank, 1));
    KILN_FORWARD(kiln_check_dtype(t, name, KILN_I32));
    return KILN_OK;
}

/* cu_seqlens contents (host-visible backends only): starts at 0, never decreases, ends
 * within total, no sequence longer than max_len. */
static kiln_status check_cu_seqlens(const int32_t *cu, int64_t batch, int64_t total,
                                    int64_t max_len, const char *name, const char *max_name)
{
    int64_t b;
    KILN_FAIL_IF(cu[0] != 0, KILN_INVALID_ARGUMENT, "%s[0] is %d; it must be 0", name,
                 (int)cu[0]);
    for (b = 0; b < batch; b++) {
        KILN_FAIL_IF(cu[b + 1] < cu[b], KILN_INVALID_ARGUMENT,
                     "%s is not non-decreasing: entry %lld is %d after %d", name,
                     (long long)(b + 1), (int)cu[b + 1], (int)cu[b]);
        KILN_FAIL_IF(cu[b + 1] - cu[b] > max_len, KILN_INVALID_ARGUMENT,
                     "%s: sequence %lld has length %d, above %s = %lld", name, (long long)b,
                     (int)(cu[b + 1] - cu[b]), max_name, (long long)max_len);
    }
    KILN_FAIL_IF(cu[batch] > total, KILN_INVALID_ARGUMENT,
                 "%s[%lld] is %d, past the %lld rows of the packed tensor", name,
                 (long long)batch, (int)cu[batch], (long long)total);
    return KILN_OK;
}

static kiln_status check_lse(kiln_attn_problem *p, const kiln_tensor *lse, int packed)
{
    if (!lse) return KILN_OK;
    KILN_FORWARD(kiln_check_tensor(lse, "lse", packed ? 2 : 3, 0));
    KILN_FORWARD(kiln_check_dtype(lse, "lse", KILN_F32));
    if (packed) {
        KILN_FORWARD(kiln_check_dim(lse, "lse", 0, p->heads_q, "heads_q"));
        KILN_FORWARD(kiln_check_dim(lse, "lse", 1, p->rows_q, "total_q"));
        p->lse_stride_batch = 0;
        p->lse_stride_head = lse->stride[0];
        p->lse_stride_row = lse->stride[1];
    } else {
        KILN_FORWARD(kiln_check_dim(lse, "lse", 0, p->batch, "batch"));
        KILN_FORWARD(kiln_check_dim(lse, "lse", 1, p->heads_q, "heads_q"));
        KILN_FORWARD(kiln_check_dim(lse, "lse", 2, p->seqlen_q, "seqlen_q"));
        p->lse_stride_batch = lse->stride[0];
        p->lse_stride_head = lse->stride[1];
        p->lse_stride_row = lse->stride[2];
    }
    p->lse = (float *)lse->data;
    return KILN_OK;
}

static void take_strides(const kiln_tensor *t, int packed, int64_t *sb, int64_t *sr,
                         int64_t *sh)
{
    if (packed) {
        *sb = 0;
        *sr = t->stride[0];
        *sh = t->stride[1];
    } else {
        *sb = t->stride[0];
        *sr = t->stride[1];
        *sh = t->stride[2];
    }
}

/* Common tail: parameters, ALiBi, aliasing, splits and workspace, then the backend. */
static kiln_status finish(kiln_context *ctx, kiln_attn_problem *p,
                          const kiln_attention_params *prm, const kiln_tensor *const *inputs,
                          const char *const *names, int n_inputs, const kiln_tensor *out,
                          const kiln_tensor *lse, void *stream)
{
    const kiln_tensor *a = &prm->alibi_slopes;
    kiln_dispatch_note note;
    size_t need;
    int i;

    p->scale = prm->softmax_scale != 0 ? prm->softmax_scale : 1.0f / sqrtf((float)p->head_dim);
    p->softcap = prm->softcap;
    p->causal = prm->causal != 0;
    p->window_left = prm->window_left;
    /* Causal is the window (left, 0): it caps any right extent at the diagonal. */
    p->window_right = p->causal ? 0 : prm->window_right;

    if (a->data) {
        KILN_FORWARD(kiln_check_struct_size(a->struct_size, sizeof *a, "params.alibi_slopes",
                                            "kiln_tensor"));
        KILN_FAIL_IF(a->rank != 1 && a->rank != 2, KILN_INVALID_ARGUMENT,
                     "params.alibi_slopes has rank %d; expected 1 [heads_q] or 2 "
                     "[batch, heads_q]", (int)a->rank);
        KILN_FORWARD(kiln_check_tensor(a, "params.alibi_slopes", a->rank, 1));
        KILN_FORWARD(kiln_check_dtype(a, "params.alibi_slopes", KILN_F32));
        KILN_FORWARD(kiln_check_dim(a, "params.alibi_slopes", a->rank - 1, p->heads_q,
                                    "heads_q"));
        if (a->rank == 2)
            KILN_FORWARD(kiln_check_dim(a, "params.alibi_slopes", 0, p->batch, "batch"));
        p->alibi = (const float *)a->data;
        p->alibi_stride_batch = a->rank == 2 ? a->stride[0] : 0;
    }

    for (i = 0; i < n_inputs; i++) {
        if (!inputs[i]) continue;
        KILN_FORWARD(kiln_check_no_overlap(out, "out", inputs[i], names[i]));
        if (lse) KILN_FORWARD(kiln_check_no_overlap(lse, "lse", inputs[i], names[i]));
    }
    if (a->data) {
        KILN_FORWARD(kiln_check_no_overlap(out, "out", a, "params.alibi_slopes"));
        if (lse) KILN_FORWARD(kiln_check_no_overlap(lse, "lse", a, "params.alibi_slopes"));
    }
    if (lse) KILN_FORWARD(kiln_check_no_overlap(lse, "lse", out, "out"));

    /* No query row (batch, sequence or heads 0): every check passed, nothing to compute. */
    if (p->rows_q == 0 || p->heads_q == 0) {
        kiln_dispatch_record_empty(ctx->iface->kind);
        return KILN_OK;
    }

    p->num_splits = resolve_splits(ctx, prm->num_splits, p->batch, p->seqlen_q, p->seqlen_k,
                                   p->heads_q, p->heads_kv, p->head_dim);
    need = kiln_split_workspace_bytes(p->num_splits, p->rows_q, p->heads_q, p->head_dim);
    KILN_FAIL_IF(prm->workspace && prm->workspace_size < need, KILN_WORKSPACE_TOO_SMALL,
                 "params.workspace_size is %zu bytes; %d splits of this shape need %zu",
                 prm->workspace_size, (int)p->num_splits, need);
    p->workspace = prm->workspace;
    p->workspace_size = prm->workspace_size;
    p->stream = stream;

    KILN_FORWARD(ctx->iface->attention(ctx->state, p, &note));
    kiln_dispatch_record(ctx->iface->kind, &note);
    return KILN_OK;
}

kiln_status kiln_attention_fwd(kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k,
                               const kiln_tensor *v, kiln_tensor *out, kiln_tensor *lse,
                               const kiln_attention_params *params, void *stream)
{
    const kiln_tensor *inputs[] = {q, k, v};
    const char *names[] = {"q", "k", "v"};
    kiln_attention_params prm;
    kiln_attn_problem p;
    kiln_error_clear();
    memset(&p, 0, sizeof p);
    KILN_FORWARD(begin(ctx, params, &prm));
    KILN_FORWARD(kiln_check_tensor(q, "q", 4, 1));
    KILN_FORWARD(kiln_check_tensor(k, "k", 4, 1));
    KILN_FORWARD(kiln_check_tensor(v, "v", 4, 1));
    KILN_FORWARD(kiln_check_tensor(out, "out", 4, 1));
    KILN_FORWARD(check_qkvo(ctx, &p, q, k, v, out, "k", "v"));
    KILN_FORWARD(kiln_check_dim(k, "k", 0, q->shape[0], "batch"));
    KILN_FORWARD(check_same_shape(v, "v", k, "k"));
    KILN_FORWARD(check_same_shape(out, "out", q, "q"));

    p.mode = KILN_MODE_FIXED;
    p.batch = q->shape[0];
    p.seqlen_q = q->shape[1];
    p.seqlen_k = k->shape[1];
    p.rows_q = p.batch * p.seqlen_q;
    KILN_FORWARD(check_lse(&p, lse, 0));
    p.q = q->data;
    p.k = k->data;
    p.v = v->data;
    p.out = out->data;
    take_strides(q, 0, &p.q_stride_batch, &p.q_stride_row, &p.q_stride_head);
    take_strides(k, 0, &p.k_stride_batch, &p.k_stride_row, &p.k_stride_head);
    take_strides(v, 0, &p.v_stride_batch, &p.v_stride_row, &p.v_stride_head);
    take_strides(out, 0, &p.o_stride_batch, &p.o_stride_row, &p.o_stride_head);
    return finish(ctx, &p, &prm, inputs, names, 3, out, lse, stream);
}

kiln_status kiln_attention_fwd_varlen(kiln_context *ctx, const kiln_tensor *q,
                                      const kiln_tensor *k, const kiln_tensor *v,
                                      const kiln_tensor *cu_seqlens_q,
                                      const kiln_tensor *cu_seqlens_k, int64_t max_seqlen_q,
                                      int64_t max_seqlen_k, kiln_tensor *out, kiln_tensor *lse,
                                      const kiln_attention_params *params, void *stream)
{
    const kiln_tensor *inputs[] = {q, k, v, cu_seqlens_q, cu_seqlens_k};
    const char *names[] = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k"};
    kiln_attention_params prm;
    kiln_attn_problem p;
    kiln_error_clear();
    memset(&p, 0, sizeof p);
    KILN_FORWARD(begin(ctx, params, &prm));
    KILN_FORWARD(kiln_check_tensor(q, "q", 3, 1));
    KILN_FORWARD(kiln_check_tensor(k, "k", 3, 1));
    KILN_FORWARD(kiln_check_tensor(v, "v", 3, 1));
    KILN_FORWARD(kiln_check_tensor(out, "out", 3, 1));
    KILN_FORWARD(check_qkvo(ctx, &p, q, k, v, out, "k", "v"));
    KILN_FORWARD(check_same_shape(v, "v", k, "k"));
    KILN_FORWARD(check_same_shape(out, "out", q, "q"));
    KILN_FORWARD(check_index(cu_seqlens_q, "cu_seqlens_q", 1));
    KILN_FORWARD(check_index(cu_seqlens_k, "cu_seqlens_k", 1));
    KILN_FAIL_IF(cu_seqlens_q->shape[0] < 1, KILN_INVALID_ARGUMENT,
                 "cu_seqlens_q is empty; it needs batch + 1 entries");
    KILN_FORWARD(kiln_check_dim(cu_seqlens_k, "cu_seqlens_k", 0, cu_seqlens_q->shape[0],
                                "batch + 1"));
    KILN_FAIL_IF(max_seqlen_q < 0, KILN_INVALID_ARGUMENT, "max_seqlen_q is %lld (negative)",
                 (long long)max_seqlen_q);
    KILN_FAIL_IF(max_seqlen_k < 0, KILN_INVALID_ARGUMENT, "max_seqlen_k is %lld (negative)",
                 (long long)max_seqlen_k);

    p.mode = KILN_MODE_VARLEN;
    p.batch = cu_seqlens_q->shape[0] - 1;
    p.seqlen_q = max_seqlen_q;
    p.seqlen_k = max_seqlen_k;
    p.rows_q = q->shape[0];
    if (host_visible(ctx)) {
        KILN_FORWARD(check_cu_seqlens((const int32_t *)cu_seqlens_q->data, p.batch,
                                      q->shape[0], max_seqlen_q, "cu_seqlens_q",
                                      "max_seqlen_q"));
        KILN_FORWARD(check_cu_seqlens((const int32_t *)cu_seqlens_k->data, p.batch,
                                      k->shape[0], max_seqlen_k, "cu_seqlens_k",
                                      "max_seqlen_k"));
    }
    KILN_FORWARD(check_lse(&p, lse, 1));
    p.q = q->data;
    p.k = k->data;
    p.v = v->data;
    p.out = out->data;
    p.cu_seqlens_q = (const int32_t *)cu_seqlens_q->data;
    p.cu_seqlens_k = (const int32_t *)cu_seqlens_k->data;
    take_strides(q, 1, &p.q_stride_batch, &p.q_stride_row, &p.q_stride_head);
    take_strides(k, 1, &p.k_stride_batch, &p.k_stride_row, &p.k_stride_head);
    take_strides(v, 1, &p.v_stride_batch, &p.v_stride_row, &p.v_stride_head);
    take_strides(out, 1, &p.o_stride_batch, &p.o_stride_row, &p.o_stride_head);
    return finish(ctx, &p, &prm, inputs, names, 5, out, lse, stream);
}

/* Paged contents (host-visible backends only): lengths fit the table, and every page a
 * sequence uses exists. */
static kiln_status check_pages(const kiln_attn_problem *p)
{
    int64_t b, j;
    for (b = 0; b < p->batch; b++) {
        int32_t len = p->seqlens_k[b];
        int64_t used;
        KILN_FAIL_IF(len < 0 || len > p->max_pages * p->page_size, KILN_INVALID_ARGUMENT,
                     "seqlens_k[%lld] is %d; it must be 0..%lld (block_table columns x "
                     "page_size)", (long long)b, (int)len,
                     (long long)(p->max_pages * p->page_size));
        used = (len + p->page_size - 1) / p->page_size;
        for (j = 0; j < used; j++) {
            int32_t page = p->block_table[b * p->block_table_stride + j];
            KILN_FAIL_IF(page < 0 || page >= p->num_pages, KILN_INVALID_ARGUMENT,
                         "block_table[%lld][%lld] is %d; the cache has pages 0..%lld",
                         (long long)b, (long long)j, (int)page, (long long)(p->num_pages - 1));
        }
    }
    return KILN_OK;
}

kiln_status kiln_attention_fwd_paged(kiln_context *ctx, const kiln_tensor *q,
                                     const kiln_tensor *k_cache, const kiln_tensor *v_cache,
                                     const kiln_tensor *block_table,
                                     const kiln_tensor *seqlens_k,
                                     const kiln_tensor *cu_seqlens_q, int64_t max_seqlen_q,
                                     kiln_tensor *out, kiln_tensor *lse,
                                     const kiln_attention_params *params, void *stream)
{
    const kiln_tensor *inputs[] = {q, k_cache, v_cache, block_table, seqlens_k, cu_seqlens_q};
    const char *names[] = {"q", "k_cache", "v_cache", "block_table", "seqlens_k",
                           "cu_seqlens_q"};
    int packed = cu_seqlens_q != NULL;
    kiln_attention_params prm;
    kiln_attn_problem p;
    kiln_error_clear();
    memset(&p, 0, sizeof p);
    KILN_FORWARD(begin(ctx, params, &prm));
    KILN_FORWARD(kiln_check_tensor(q, "q", packed ? 3 : 4, 1));
    KILN_FORWARD(kiln_check_tensor(k_cache, "k_cache", 4, 1));
    KILN_FORWARD(kiln_check_tensor(v_cache, "v_cache", 4, 1));
    KILN_FORWARD(kiln_check_tensor(out, "out", packed ? 3 : 4, 1));
    KILN_FORWARD(check_qkvo(ctx, &p, q, k_cache, v_cache, out, "k_cache", "v_cache"));
    KILN_FORWARD(check_same_shape(v_cache, "v_cache", k_cache, "k_cache"));
    KILN_FORWARD(check_same_shape(out, "out", q, "q"));
    KILN_FAIL_IF(k_cache->shape[1] <= 0, KILN_INVALID_ARGUMENT,
                 "page size (k_cache.shape[1]) is %lld; it must be at least 1",
                 (long long)k_cache->shape[1]);
    KILN_FORWARD(check_index(block_table, "block_table", 2));
    KILN_FORWARD(check_index(seqlens_k, "seqlens_k", 1));
    p.batch = block_table->shape[0];
    KILN_FORWARD(kiln_check_dim(seqlens_k, "seqlens_k", 0, p.batch, "batch"));
    if (packed) {
        KILN_FORWARD(check_index(cu_seqlens_q, "cu_seqlens_q", 1));
        KILN_FORWARD(kiln_check_dim(cu_seqlens_q, "cu_seqlens_q", 0, p.batch + 1,
                                    "batch + 1"));
        KILN_FAIL_IF(max_seqlen_q < 0, KILN_INVALID_ARGUMENT,
                     "max_seqlen_q is %lld (negative)", (long long)max_seqlen_q);
        p.seqlen_q = max_seqlen_q;
        p.rows_q = q->shape[0];
    } else {
        KILN_FORWARD(kiln_check_dim(q, "q", 0, p.batch, "batch (block_table rows)"));
        p.seqlen_q = q->shape[1];
        p.rows_q = p.batch * p.seqlen_q;
    }

    p.mode = KILN_MODE_PAGED;
    p.page_size = k_cache->shape[1];
    p.num_pages = k_cache->shape[0];
    p.max_pages = block_table->shape[1];
    p.block_table_stride = block_table->stride[0];
    p.seqlen_k = p.max_pages * p.page_size;
    p.block_table = (const int32_t *)block_table->data;
    p.seqlens_k = (const int32_t *)seqlens_k->data;
    p.cu_seqlens_q = packed ? (const int32_t *)cu_seqlens_q->data : NULL;
    if (host_visible(ctx)) {
        if (packed)
            KILN_FORWARD(check_cu_seqlens(p.cu_seqlens_q, p.batch, q->shape[0], max_seqlen_q,
                                          "cu_seqlens_q", "max_seqlen_q"));
        KILN_FORWARD(check_pages(&p));
    }
    KILN_FORWARD(check_lse(&p, lse, packed));
    p.q = q->data;
    p.k = k_cache->data;
    p.v = v_cache->data;
    p.out = out->data;
    take_strides(q, packed, &p.q_stride_batch, &p.q_stride_row, &p.q_stride_head);
    take_strides(k_cache, 0, &p.k_stride_batch, &p.k_stride_row, &p.k_stride_head);
    take_strides(v_cache, 0, &p.v_stride_batch, &p.v_stride_row, &p.v_stride_head);
    take_strides(out, packed, &p.o_stride_batch, &p.o_stride_row, &p.o_stride_head);
    return finish(ctx, &p, &prm, inputs, names, 6, out, lse, stream);
}

kiln_status kiln_attention_workspace_size(kiln_context *ctx, const kiln_attention_plan *plan,
                                          size_t *bytes)
{
    int32_t s;
    kiln_error_clear();
    KILN_FAIL_IF(!ctx, KILN_INVALID_ARGUMENT, "ctx is NULL");
    KILN_FAIL_IF(!plan, KILN_INVALID_ARGUMENT, "plan is NULL");
    KILN_FAIL_IF(!bytes, KILN_INVALID_ARGUMENT, "bytes is NULL");
    KILN_FORWARD(kiln_check_struct_size(plan->struct_size, sizeof *plan, "plan",
                                        "kiln_attention_plan"));
    KILN_FAIL_IF(plan->batch < 0 || plan->rows_q < 0 || plan->max_seqlen_q < 0 ||
                     plan->max_seqlen_k < 0 || plan->heads_q < 1 || plan->head_dim < 1,
                 KILN_INVALID_ARGUMENT,
                 "plan.batch, rows_q, max_seqlen_q and max_seqlen_k must be >= 0 and heads_q, "
                 "head_dim >= 1");
    KILN_FAIL_IF(plan->heads_kv < 1 || plan->heads_q % plan->heads_kv != 0,
                 KILN_INVALID_ARGUMENT,
                 "plan.heads_kv is %lld; it must be >= 1 and divide heads_q (%lld)",
                 (long long)plan->heads_kv, (long long)plan->heads_q);
    KILN_FAIL_IF(plan->num_splits < 0, KILN_INVALID_ARGUMENT,
                 "plan.num_splits is %d; it must be >= 0 (0 = automatic)",
                 (int)plan->num_splits);
    s = resolve_splits(ctx, plan->num_splits, plan->batch, plan->max_seqlen_q,
                       plan->max_seqlen_k, plan->heads_q, plan->heads_kv, plan->head_dim);
    *bytes = kiln_split_workspace_bytes(s, plan->rows_q, plan->heads_q, plan->head_dim);
    return KILN_OK;
}
