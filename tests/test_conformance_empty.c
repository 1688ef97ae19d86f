/* Empty tensors on every entry point and backend: a batch of 0, sequences of 0 query rows,
 * varlen with total_q = 0, paged with batch 0 and packed prefill with no query, activations
 * with 0 rows. Each is a successful no-op: status OK, nothing written (the poisoned outputs
 * keep every byte), the report says nothing ran, and the empty views' strides (0, as numpy
 * gives empty arrays) are not judged. */
#include "conformance.h"

/* An empty view of shape with every stride 0 and no data, as numpy hands them over. */
static kiln_tensor empty_view(kiln_dtype dt, int32_t rank, const int64_t *shape) {
    kiln_tensor t;
    kiln_tensor_init(&t);
    t.dtype = dt;
    t.rank = rank;
    for (int32_t i = 0; i < rank; i++) t.shape[i] = shape[i];
    return t;
}

static void expect_noop(tc_env *env, kiln_status st, tc_tensor *keep, const char *what) {
    check_case("%s: %s", env->label, what);
    check_note_ran();
    CHECK_OK(st);
    if (st != KILN_OK) fprintf(stderr, "  %s\n", kiln_last_error());
    kiln_dispatch d;
    kiln_dispatch_init(&d);
    CHECK_OK(kiln_last_dispatch(&d));
    CHECK_EQ(d.backend, env->backend);
    CHECK_STR_EQ(d.variant, "none");
    if (keep && keep->dev.data) {
        unsigned char *now = malloc(keep->bytes);
        if (now && kiln_ctx_copy_to_host(env->ctx, now, keep->dev.data, keep->bytes) == KILN_OK)
            CHECK_MEM_EQ(now, keep->host.data, keep->bytes);
        free(now);
    }
}

static void body(tc_env *env) {
    kiln_context *ctx = env->ctx;
    const kiln_dtype dt = KILN_BF16;
    kiln_attention_params prm;
    kiln_attention_params_init(&prm);
    prm.causal = 1;

    /* fixed: batch 0, every tensor empty with zero strides */
    {
        int64_t s[4] = {0, 5, 4, 64}, l[3] = {0, 4, 5};
        kiln_tensor q = empty_view(dt, 4, s), k = q, v = q, o = q;
        kiln_tensor lse = empty_view(KILN_F32, 3, l);
        expect_noop(env, kiln_attention_fwd(ctx, &q, &k, &v, &o, &lse, &prm, NULL), NULL,
                    "fixed, batch 0");
    }
    /* fixed: 0 query rows over real keys; out and lse empty too */
    {
        int64_t sq[4] = {2, 0, 4, 64}, sk[4] = {2, 9, 2, 64}, l[3] = {2, 4, 0};
        tc_tensor k, v;
        tc_tensor_make(&k, ctx, dt, 4, sk, NULL, 0);
        tc_tensor_make(&v, ctx, dt, 4, sk, NULL, 0);
        tc_upload(&k), tc_upload(&v);
        kiln_tensor q = empty_view(dt, 4, sq), o = q, lse = empty_view(KILN_F32, 3, l);
        expect_noop(env, kiln_attention_fwd(ctx, &q, &k.dev, &v.dev, &o, &lse, &prm, NULL),
                    NULL, "fixed, seqlen_q 0");
        /* and 0 heads */
        int64_t sh[4] = {2, 3, 0, 64};
        kiln_tensor qh = empty_view(dt, 4, sh), oh = qh;
        expect_noop(env, kiln_attention_fwd(ctx, &qh, &k.dev, &v.dev, &oh, NULL, NULL, NULL), NULL,
                    "fixed, 0 query heads");
        tc_tensor_free(&k), tc_tensor_free(&v);
    }
    /* varlen: two sequences of 0 queries (total_q 0) over keys */
    {
        int64_t sq[3] = {0, 2, 64}, sk[3] = {7, 1, 64}, nb = 3, l[2] = {2, 0};
        tc_tensor k, v, cuq, cuk;
        tc_tensor_make(&k, ctx, dt, 3, sk, NULL, 0);
        tc_tensor_make(&v, ctx, dt, 3, sk, NULL, 0);
        tc_tensor_make(&cuq, ctx, KILN_I32, 1, &nb, NULL, 0);
        tc_tensor_make(&cuk, ctx, KILN_I32, 1, &nb, NULL, 0);
        int32_t cq[3] = {0, 0, 0}, ck[3] = {0, 3, 7};
        memcpy(cuq.host.data, cq, sizeof cq);
        memcpy(cuk.host.data, ck, sizeof ck);
        tc_upload(&k), tc_upload(&v), tc_upload(&cuq), tc_upload(&cuk);
        kiln_tensor q = empty_view(dt, 3, sq), o = q, lse = empty_view(KILN_F32, 2, l);
        expect_noop(env, kiln_attention_fwd_varlen(ctx, &q, &k.dev, &v.dev, &cuq.dev, &cuk.dev,
                                                   0, 4, &o, &lse, &prm, NULL),
                    NULL, "varlen, total_q 0");
        tc_tensor_free(&k), tc_tensor_free(&v), tc_tensor_free(&cuq), tc_tensor_free(&cuk);
    }
    /* paged: batch 0 (empty block table and lengths), then packed prefill with no query */
    {
        int64_t kc[4] = {3, 16, 2, 64}, sq[4] = {0, 1, 4, 64}, bts[2] = {0, 2}, nb = 0;
        tc_tensor k, v;
        tc_tensor_make(&k, ctx, dt, 4, kc, NULL, 0);
        tc_tensor_make(&v, ctx, dt, 4, kc, NULL, 0);
        tc_upload(&k), tc_upload(&v);
        kiln_tensor q = empty_view(dt, 4, sq), o = q;
        kiln_tensor bt = empty_view(KILN_I32, 2, bts), sl = empty_view(KILN_I32, 1, &nb);
        expect_noop(env, kiln_attention_fwd_paged(ctx, &q, &k.dev, &v.dev, &bt, &sl, NULL, 0,
                                                  &o, NULL, &prm, NULL),
                    NULL, "paged decode, batch 0");

        int64_t two = 2, three = 3, bt2[2] = {2, 2}, pq[3] = {0, 4, 64};
        tc_tensor tbl, lens, cuq;
        tc_tensor_make(&tbl, ctx, KILN_I32, 2, bt2, NULL, 0);
        tc_tensor_make(&lens, ctx, KILN_I32, 1, &two, NULL, 0);
        tc_tensor_make(&cuq, ctx, KILN_I32, 1, &three, NULL, 0);
        int32_t t4[4] = {0, 1, 2, 2}, l2[2] = {20, 5}, c3[3] = {0, 0, 0};
        memcpy(tbl.host.data, t4, sizeof t4);
        memcpy(lens.host.data, l2, sizeof l2);
        memcpy(cuq.host.data, c3, sizeof c3);
        tc_upload(&tbl), tc_upload(&lens), tc_upload(&cuq);
        kiln_tensor pqv = empty_view(dt, 3, pq), po = pqv;
        expect_noop(env, kiln_attention_fwd_paged(ctx, &pqv, &k.dev, &v.dev, &tbl.dev,
                                                  &lens.dev, &cuq.dev, 0, &po, NULL, &prm,
                                                  NULL),
                    NULL, "paged prefill, total_q 0");
        tc_tensor_free(&tbl), tc_tensor_free(&lens), tc_tensor_free(&cuq);
        tc_tensor_free(&k), tc_tensor_free(&v);
    }
    /* activations: 0 rows, and a real output buffer that must keep its poison when x is
     * empty and out is a 0-row view of it */
    {
        int64_t xs[2] = {0, 256}, os[2] = {0, 128}, full[2] = {4, 128};
        tc_tensor keep;
        tc_tensor_make(&keep, ctx, dt, 2, full, NULL, 0);
        tc_upload(&keep);
        kiln_tensor x = empty_view(dt, 2, xs), o = empty_view(dt, 2, os);
        o.data = keep.dev.data;
        expect_noop(env, kiln_silu_and_mul(ctx, &x, &o, NULL), &keep, "silu_and_mul, 0 rows");
        int64_t x3[3] = {2, 0, 64}, o3[3] = {2, 0, 32};
        kiln_tensor xe = empty_view(KILN_F16, 3, x3), oe = empty_view(KILN_F16, 3, o3);
        expect_noop(env, kiln_gelu_and_mul(ctx, &xe, &oe, NULL), NULL, "gelu_and_mul, 0 rows");
        tc_tensor_free(&keep);
    }
}

int main(int argc, char **argv) { return tc_main(argc, argv, "conformance_empty", body); }
