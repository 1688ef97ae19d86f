/* Non-finite inputs vs the fp64 reference, every mode: one NaN or +inf in q, k, v or the
 * ALiBi slopes must reach the rows the reference says it reaches (a NaN logit or a +inf
 * one makes its row NaN), never vanish into a plausible zero, and nothing leaks from keys
 * past a sequence's end (NaN-filled padding and stale cache slots). With and without
 * split-KV, so the combine is covered too. */
#include "test_conformance.h"

static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};

static void one(tc_env *env, tc_attn_case c, int kind) {
    c.nonfinite = kind;
    if (tc_nonfinite_needs_full_mask(kind)) c.causal = 0, c.wl = c.wr = -1;
    if (tc_nonfinite_needs_alibi(kind) && !c.alibi) c.alibi = 1;
    tc_attn_run(env, &c);
}

static void body(tc_env *env) {
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        if (dtypes[t] == KILN_F32 && env->backend != KILN_BACKEND_CPU) continue;
        for (int kind = 1; kind < TC_NF_COUNT; kind++)
            for (int splits = 1; splits <= 3; splits += 2) {
                /* fixed, head dims the tensor tier covers (64) and one it does not (40) */
                tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
                c.batch = 2, c.hq = 4, c.hkv = 2, c.sq = 9, c.sk = 70;
                c.causal = 1, c.num_splits = splits, c.layout = TC_PADDED;
                c.seed = 500 + (uint64_t)(kind * 4 + splits);
                one(env, c, kind);
                c.d = 40, c.causal = 0, c.wl = 20, c.wr = 3;
                one(env, c, kind);

                /* varlen with an empty sequence first, padding rows after the last */
                c = tc_attn_defaults(KILN_MODE_VARLEN, dtypes[t]);
                c.batch = 3, c.hq = 2, c.hkv = 1, c.d = 64;
                c.lq[0] = 0, c.lq[1] = 7, c.lq[2] = 3;
                c.lk[0] = 5, c.lk[1] = 40, c.lk[2] = 66;
                c.extra_rows = 2, c.causal = 1, c.num_splits = splits;
                c.seed = 540 + (uint64_t)(kind * 4 + splits);
                one(env, c, kind);

                /* paged decode and prefill over caches whose unused slots hold NaN */
                c = tc_attn_defaults(KILN_MODE_PAGED, dtypes[t]);
                c.batch = 2, c.hq = 8, c.hkv = 2, c.d = 128, c.sq = 1;
                c.lk[0] = 37, c.lk[1] = 130;
                c.page_size = 16, c.shuffle = 1, c.nan_tail = 1, c.num_splits = splits;
                c.seed = 580 + (uint64_t)(kind * 4 + splits);
                one(env, c, kind);
                c.prefill = 1, c.hq = 4, c.d = 64, c.page_size = 64, c.causal = 1;
                c.lq[0] = 6, c.lq[1] = 20;
                one(env, c, kind);
            }
    }
}

int main(int argc, char **argv) { return tc_main(argc, argv, "conformance_nonfinite", body); }
