/* Split-KV vs the fp64 reference: num_splits 1, 2, 3, 7 and 0 (automatic), with and without
 * a caller workspace sized by kiln_attention_workspace_size, in every mode; splits that see
 * no key (causal, windows, more splits than keys) must combine to the exact result. */
#include "conformance.h"

static const int32_t splits[] = {1, 2, 3, 7, 0};
#define NSPLITS (sizeof splits / sizeof splits[0])

static void each_split(tc_env *env, tc_attn_case c) {
    for (size_t s = 0; s < NSPLITS; s++)
        for (int ws = 0; ws <= 1; ws++) {
            c.num_splits = splits[s];
            c.caller_ws = ws;
            tc_attn_run(env, &c);
        }
}

static void body(tc_env *env) {
    static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        const kiln_dtype dt = dtypes[t];
        if (dt == KILN_F32 && env->backend != KILN_BACKEND_CPU) continue;

        tc_attn_case f = tc_attn_defaults(KILN_MODE_FIXED, dt);
        f.batch = 2, f.hq = 4, f.hkv = 2, f.d = 64, f.sq = 3, f.sk = 157;
        f.seed = 300;
        each_split(env, f);
        f.causal = 1, f.sq = 20, f.sk = 45, f.lse = 2; /* early rows see only early splits */
        each_split(env, f);
        f.causal = 0, f.wl = 5, f.wr = 5, f.sq = 8, f.sk = 200, f.lse = 1;
        each_split(env, f);
        f.wl = f.wr = -1, f.sq = 2, f.sk = 5, f.seed = 301; /* more splits than keys */
        each_split(env, f);

        tc_attn_case v = tc_attn_defaults(KILN_MODE_VARLEN, dt);
        v.batch = 3, v.hq = 2, v.hkv = 1, v.d = 128;
        v.lq[0] = 1, v.lq[1] = 4, v.lq[2] = 0;
        v.lk[0] = 130, v.lk[1] = 3, v.lk[2] = 50;
        v.causal = 1;
        v.seed = 310;
        each_split(env, v);

        tc_attn_case p = tc_attn_defaults(KILN_MODE_PAGED, dt);
        p.batch = 3, p.hq = 8, p.hkv = 1, p.d = 64, p.sq = 1;
        p.lk[0] = 300, p.lk[1] = 0, p.lk[2] = 77;
        p.page_size = 16, p.shuffle = 1;
        p.seed = 320;
        each_split(env, p);
        /* Short sequences in a roomy table: fewer keys than splits in every sequence. */
        tc_attn_case shortk = p;
        shortk.batch = 2, shortk.lk[0] = 3, shortk.lk[1] = 5, shortk.page_size = 64;
        shortk.seed = 325;
        each_split(env, shortk);
        p.prefill = 1, p.lq[0] = 2, p.lq[1] = 0, p.lq[2] = 5, p.causal = 1, p.page_size = 64;
        p.alibi = 1, p.softcap = 10.0f;
        each_split(env, p);
    }
}

int main(int argc, char **argv) { return tc_main(argc, argv, "conformance_splits", body); }
