/* Variable-length attention vs the fp64 reference: empty sequences, per-sequence
 * seqlen_q > seqlen_k under causal, trailing rows no sequence covers, strides, GQA, masks. */
#include "conformance.h"

static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};

typedef struct lens {
    int64_t batch;
    int32_t q[TC_MAX_BATCH], k[TC_MAX_BATCH];
} lens;

static void set_lens(tc_attn_case *c, const lens *l) {
    c->batch = l->batch;
    memcpy(c->lq, l->q, sizeof c->lq);
    memcpy(c->lk, l->k, sizeof c->lk);
}

static void body(tc_env *env) {
    static const lens shapes[] = {
        {4, {3, 0, 7, 1}, {5, 4, 0, 9}},    /* empty q, empty k */
        {2, {9, 2}, {4, 6}},                /* seqlen_q > seqlen_k in the first */
        {2, {0, 0}, {0, 0}},                /* nothing at all */
        {8, {1, 1, 1, 1, 1, 1, 1, 1}, {1, 17, 3, 0, 40, 8, 2, 25}}, /* decode-like */
        {3, {70, 1, 33}, {70, 66, 1}},      /* across tile boundaries */
    };
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        if (dtypes[t] == KILN_F32 && env->backend != KILN_BACKEND_CPU) continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int causal = 0; causal <= 1; causal++) {
                tc_attn_case c = tc_attn_defaults(KILN_MODE_VARLEN, dtypes[t]);
                set_lens(&c, &shapes[s]);
                c.hq = 4, c.hkv = 2, c.d = 64;
                c.causal = causal;
                c.seed = 100 + s;
                tc_attn_run(env, &c);
            }

        /* Trailing packed rows, loose max bounds, strided views and a strided LSE. */
        for (int layout = TC_DENSE; layout <= TC_BHSD_PAD; layout++) {
            tc_attn_case c = tc_attn_defaults(KILN_MODE_VARLEN, dtypes[t]);
            set_lens(&c, &shapes[0]);
            c.hq = 8, c.hkv = 2, c.d = 128;
            c.extra_rows = 3, c.max_q_slack = 5;
            c.layout = layout, c.lse = layout == TC_DENSE ? 1 : 2;
            c.causal = 1;
            c.seed = 110 + (uint64_t)layout;
            tc_attn_run(env, &c);
        }

        /* Masks and biases per sequence. */
        tc_attn_case w = tc_attn_defaults(KILN_MODE_VARLEN, dtypes[t]);
        set_lens(&w, &shapes[1]);
        w.hq = 4, w.hkv = 1, w.d = 80;
        w.wl = 2, w.wr = 1, w.alibi = 2, w.softcap = 4.0f, w.scale = 0.8f;
        w.seed = 120;
        tc_attn_run(env, &w);
        w.wl = 3, w.wr = -1, w.causal = 1, w.alibi = 1, w.softcap = 0, w.scale = 0;
        set_lens(&w, &shapes[0]);
        tc_attn_run(env, &w);
        w.causal = 0, w.wl = -1, w.wr = 0, w.lse = 0, w.d = 256;
        set_lens(&w, &shapes[3]);
        tc_attn_run(env, &w);
    }
}

int main(int argc, char **argv) { return tc_main(argc, argv, "conformance_varlen", body); }
