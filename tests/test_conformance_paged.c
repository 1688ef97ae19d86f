/* Paged-KV attention vs the fp64 reference: decode (dense q) and batch prefill (packed q),
 * page sizes 16 and 64, pages in shuffled order and shared between sequences, empty and
 * partially filled pages, and stale NaN in cache slots no sequence uses. */
#include "conformance.h"

static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};

static void decode(tc_env *env, kiln_dtype dt) {
    static const int32_t lk[][4] = {{37, 1, 0, 130}, {64, 16, 15, 17}};
    static const int64_t sqs[] = {1, 4};
    static const int pages[] = {16, 64};
    for (size_t p = 0; p < 2; p++)
        for (size_t l = 0; l < 2; l++)
            for (size_t s = 0; s < 2; s++) {
                tc_attn_case c = tc_attn_defaults(KILN_MODE_PAGED, dt);
                c.batch = 4, c.hq = 8, c.hkv = 2, c.d = 128;
                memcpy(c.lk, lk[l], sizeof lk[l]);
                c.sq = sqs[s];
                c.page_size = pages[p], c.shuffle = 1;
                c.causal = s == 1; /* 4 queries over 1 key: the first three see nothing */
                c.seed = 200 + p * 4 + l * 2 + s;
                tc_attn_run(env, &c);
            }
}

static void prefill(tc_env *env, kiln_dtype dt) {
    static const int pages[] = {16, 64};
    for (size_t p = 0; p < 2; p++)
        for (int causal = 0; causal <= 1; causal++) {
            tc_attn_case c = tc_attn_defaults(KILN_MODE_PAGED, dt);
            c.prefill = 1;
            c.batch = 3, c.hq = 4, c.hkv = 4, c.d = 64;
            c.lq[0] = 5, c.lq[1] = 0, c.lq[2] = 12;
            c.lk[0] = 20, c.lk[1] = 7, c.lk[2] = 80;
            c.page_size = pages[p], c.shuffle = 1, c.causal = causal;
            c.seed = 210 + p * 2 + (uint64_t)causal;
            tc_attn_run(env, &c);
            c.extra_rows = 2, c.lse = 2, c.max_q_slack = 3, c.layout = TC_BHSD_PAD;
            tc_attn_run(env, &c);
        }
    /* More queries than keys in one sequence, causal: leading rows see nothing. */
    tc_attn_case c = tc_attn_defaults(KILN_MODE_PAGED, dt);
    c.prefill = 1, c.batch = 2, c.hq = 2, c.hkv = 1, c.d = 96;
    c.lq[0] = 9, c.lq[1] = 3, c.lk[0] = 4, c.lk[1] = 33;
    c.causal = 1, c.shuffle = 1;
    c.seed = 220;
    tc_attn_run(env, &c);
}

static void extras(tc_env *env, kiln_dtype dt) {
    tc_attn_case c = tc_attn_defaults(KILN_MODE_PAGED, dt);
    c.batch = 3, c.hq = 4, c.hkv = 1, c.d = 64, c.sq = 2;
    c.lk[0] = 40, c.lk[1] = 19, c.lk[2] = 5;
    c.shuffle = 1, c.shared_page = 1;
    c.seed = 230;
    tc_attn_run(env, &c);
    c.wl = 8, c.wr = 0, c.alibi = 2, c.softcap = 5.0f, c.scale = 1.0f;
    tc_attn_run(env, &c);
    c.prefill = 1, c.lq[0] = 6, c.lq[1] = 1, c.lq[2] = 5, c.alibi = 1, c.causal = 1, c.wl = 4;
    tc_attn_run(env, &c);

    /* A stale cache: slots past each sequence's end hold NaN. Masked keys must not leak. */
    tc_attn_case n = tc_attn_defaults(KILN_MODE_PAGED, dt);
    n.batch = 2, n.hq = 4, n.hkv = 2, n.d = 64, n.sq = 1;
    n.lk[0] = 21, n.lk[1] = 50, n.nan_tail = 1, n.shuffle = 1;
    n.seed = 240;
    tc_attn_run(env, &n);
    n.prefill = 1, n.lq[0] = 3, n.lq[1] = 4, n.causal = 1, n.page_size = 64;
    tc_attn_run(env, &n);
}

static void body(tc_env *env) {
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        if (dtypes[t] == KILN_F32 && env->backend != KILN_BACKEND_CPU) continue;
        decode(env, dtypes[t]);
        prefill(env, dtypes[t]);
        extras(env, dtypes[t]);
    }
}

int main(int argc, char **argv) { return tc_main(argc, argv, "conformance_paged", body); }
