#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "context.h"
#include "reference.h"

/* Rows of the output checked against the reference: the last ones of batch 0, head 0, which
 * see the most keys (and every key under the causal mask). */
#define VERIFY_ROWS 32

int bench_item_setup(kiln_context *ctx, const bench_shape *shape, bench_item *it,
                     const bench_item *prev, uint64_t *seed) {
    if (shape->kind == BENCH_ATTENTION) {
        const int64_t B = shape->batch, S = it->seqlen, D = shape->head_dim;
        const int64_t qshape[4] = {B, S, shape->heads, D};
        const int64_t kvshape[4] = {B, S, shape->kv_heads, D};
        const int64_t nq = B * S * shape->heads * D, nkv = B * S * shape->kv_heads * D;
        if (tool_array_alloc(ctx, &it->in[0], "q", it->dtype, nq) ||
            tool_array_alloc(ctx, &it->in[1], "k", it->dtype, nkv) ||
            tool_array_alloc(ctx, &it->in[2], "v", it->dtype, nkv) ||
            tool_array_alloc(ctx, &it->out, "out", it->dtype, nq))
            return -1;
        /* q spread wider than k so the softmax is not flat. */
        tool_array_fill(&it->in[0], seed, -2.0, 2.0);
        tool_array_fill(&it->in[1], seed, -1.0, 1.0);
        tool_array_fill(&it->in[2], seed, -1.0, 1.0);
        for (int i = 0; i < 3; i++) {
            if (tool_array_upload(ctx, &it->in[i])) return -1;
            it->tin[i] = tool_view(&it->in[i], 4, i == 0 ? qshape : kvshape);
        }
        it->tout = tool_view(&it->out, 4, qshape);
        it->flops = 4.0 * (double)B * (double)shape->heads * (double)S * (double)S * (double)D;
        if (shape->causal) it->flops *= 0.5;
        it->bytes = (double)(it->in[0].bytes + it->in[1].bytes + it->in[2].bytes +
                             it->out.bytes);
        return 0;
    }
    if (prev && prev->kind == BENCH_ACTIVATION && prev->dtype == it->dtype) {
        const bench_item *owner = prev->borrowed_from ? prev->borrowed_from : prev;
        it->in[0] = owner->in[0];
        it->out = owner->out;
        it->tin[0] = owner->tin[0];
        it->tout = owner->tout;
        it->bytes = owner->bytes;
        it->borrowed_from = owner;
        return 0;
    }
    const int64_t xshape[2] = {shape->rows, 2 * shape->dim};
    const int64_t oshape[2] = {shape->rows, shape->dim};
    if (tool_array_alloc(ctx, &it->in[0], "x", it->dtype, shape->rows * 2 * shape->dim) ||
        tool_array_alloc(ctx, &it->out, "out", it->dtype, shape->rows * shape->dim))
        return -1;
    tool_array_fill(&it->in[0], seed, -1.0, 1.0);
    if (tool_array_upload(ctx, &it->in[0])) return -1;
    it->tin[0] = tool_view(&it->in[0], 2, xshape);
    it->tout = tool_view(&it->out, 2, oshape);
    it->bytes = (double)(it->in[0].bytes + it->out.bytes);
    return 0;
}

kiln_status bench_item_call(kiln_context *ctx, const bench_shape *shape, bench_item *it) {
    if (shape->kind == BENCH_ACTIVATION)
        return kiln_act_and_mul(ctx, it->act, &it->tin[0], &it->tout, NULL);
    kiln_attention_params prm;
    kiln_attention_params_init(&prm);
    prm.causal = shape->causal;
    return kiln_attention_fwd(ctx, &it->tin[0], &it->tin[1], &it->tin[2], &it->tout, NULL,
                              &prm, NULL);
}

static double max_abs_diff(kiln_dtype dt, const void *got, int64_t got_off, const double *want,
                           int64_t n) {
    double err = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(kiln_ref_load(dt, got, got_off + i) - want[i]);
        if (!(e <= err)) err = e; /* NaN propagates as the worst error */
    }
    return err;
}

static int verify_attention(const bench_shape *shape, bench_item *it) {
    const int64_t S = it->seqlen, D = shape->head_dim, H = shape->heads;
    const int64_t Hk = shape->kv_heads, rows = S < VERIFY_ROWS ? S : VERIFY_ROWS;
    /* Views of head 0 of batch 0: the last `rows` queries against every key. Bottom-right
     * alignment makes this slice's causal mask the same as in the full problem. */
    kiln_tensor q, k, v;
    kiln_tensor_init(&q);
    kiln_tensor_init(&k);
    kiln_tensor_init(&v);
    const int64_t qs[4] = {S * H * D, H * D, D, 1}, ks[4] = {S * Hk * D, Hk * D, D, 1};
    const int64_t qsh[4] = {1, rows, 1, D}, ksh[4] = {1, S, 1, D};
    q.data = (char *)it->in[0].host + (size_t)((S - rows) * H * D) * kiln_dtype_size(it->dtype);
    k.data = it->in[1].host;
    v.data = it->in[2].host;
    kiln_tensor *views[3] = {&q, &k, &v};
    for (int t = 0; t < 3; t++) {
        views[t]->dtype = it->dtype;
        views[t]->rank = 4;
        memcpy(views[t]->shape, t == 0 ? qsh : ksh, sizeof qsh);
        memcpy(views[t]->stride, t == 0 ? qs : ks, sizeof qs);
    }
    kiln_attention_params prm;
    kiln_attention_params_init(&prm);
    prm.causal = shape->causal;
    kiln_attn_problem p;
    kiln_ref_attn_problem(&p, KILN_MODE_FIXED, &q, &k, &v, NULL, NULL, NULL, NULL, rows, S,
                          NULL, NULL, &prm);
    double *want = malloc((size_t)(rows * D) * sizeof *want);
    if (!want || kiln_ref_attention(&p, want, NULL) != KILN_OK) {
        free(want);
        return -1;
    }
    double err = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        double e = max_abs_diff(it->dtype, it->out.host, (S - rows + r) * H * D, want + r * D,
                                D);
        if (!(e <= err)) err = e;
    }
    free(want);
    it->max_err = err;
    return 0;
}

static int verify_activation(const bench_shape *shape, bench_item *it) {
    const int64_t rows = shape->rows < VERIFY_ROWS ? shape->rows : VERIFY_ROWS;
    const int64_t xshape[2] = {rows, 2 * shape->dim}, oshape[2] = {rows, shape->dim};
    kiln_tensor x = tool_host_view(&it->in[0], 2, xshape);
    kiln_tensor out = tool_host_view(&it->out, 2, oshape);
    kiln_act_problem p;
    kiln_ref_act_problem(&p, it->act, &x, &out);
    double *want = malloc((size_t)(rows * shape->dim) * sizeof *want);
    if (!want) return -1;
    kiln_ref_act_and_mul(&p, want);
    it->max_err = max_abs_diff(it->dtype, it->out.host, 0, want, rows * shape->dim);
    free(want);
    return 0;
}

int bench_item_verify(kiln_context *ctx, const bench_shape *shape, bench_item *it) {
    kiln_status st = bench_item_call(ctx, shape, it);
    if (st == KILN_OK) st = kiln_ctx_synchronize(ctx, NULL);
    if (st != KILN_OK || tool_array_download(ctx, &it->out)) return -1;
    int rc = shape->kind == BENCH_ATTENTION ? verify_attention(shape, it)
                                            : verify_activation(shape, it);
    it->verified = rc == 0;
    return rc;
}

void bench_item_free(kiln_context *ctx, bench_item *it) {
    if (!it->borrowed_from) {
        for (int i = 0; i < 3; i++) tool_array_free(ctx, &it->in[i]);
        tool_array_free(ctx, &it->out);
    }
    free(it->times_us);
    it->times_us = NULL;
}
