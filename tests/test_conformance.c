/* Fixed-length attention vs the fp64 reference: dtypes x head dims, GQA ratios, causal at
 * every seqlen_q / seqlen_k relation, sliding windows, soft-cap, ALiBi, LSE, strides, and on
 * GPUs a causal call long enough for the persistent grid's walk. */
#include "conformance.h"

static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* f32 runs only where the backend has it (the CPU). */
static int has_dtype(const tc_env *env, kiln_dtype dt) {
    return dt != KILN_F32 || env->backend == KILN_BACKEND_CPU;
}

static void head_dims(tc_env *env) {
    static const int64_t dims[] = {32, 64, 80, 96, 128, 192, 256};
    for (size_t t = 0; t < NDTYPES; t++) {
        if (!has_dtype(env, dtypes[t])) continue;
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
            tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
            c.d = dims[i];
            c.hq = 2, c.hkv = 1;
            c.sq = 7, c.sk = 19;
            c.seed = 10 + i;
            tc_attn_run(env, &c);
            c.causal = 1;
            c.sq = 19, c.sk = 19;
            tc_attn_run(env, &c);
        }
    }
}

static void gqa(tc_env *env) {
    static const int64_t hkv[] = {8, 4, 2, 1}; /* ratios 1, 2, 4, 8 (MQA) */
    for (size_t t = 0; t < NDTYPES; t++) {
        if (!has_dtype(env, dtypes[t])) continue;
        for (size_t i = 0; i < sizeof hkv / sizeof hkv[0]; i++) {
            tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
            c.batch = 2, c.hq = 8, c.hkv = hkv[i];
            c.sq = 5, c.sk = 23;
            c.causal = (int)(i & 1);
            c.seed = 20 + i;
            tc_attn_run(env, &c);
        }
    }
}

static void causal_shapes(tc_env *env) {
    static const int64_t shapes[][2] = {{5, 17}, {16, 16}, {17, 5}, {1, 1}, {1, 40}, {40, 1},
                                        {70, 70}, {3, 0}};
    for (size_t t = 0; t < NDTYPES; t++) {
        if (!has_dtype(env, dtypes[t])) continue;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            for (int causal = 0; causal <= 1; causal++) {
                tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
                c.sq = shapes[i][0], c.sk = shapes[i][1];
                c.d = 128, c.hq = 4, c.hkv = 2;
                c.causal = causal;
                c.seed = 30 + i;
                tc_attn_run(env, &c);
            }
        }
    }
}

static void windows(tc_env *env) {
    static const int w[][3] = {
        /* causal, left, right */
        {1, 4, -1}, {1, 0, -1}, {0, 3, 2}, {0, 0, 0}, {0, -1, 3}, {0, 2, -1}, {0, 40, 40},
        {1, 30, -1},
    };
    static const int64_t shapes[][2] = {{12, 20}, {20, 12}, {16, 16}};
    for (size_t t = 0; t < NDTYPES; t++) {
        if (!has_dtype(env, dtypes[t])) continue;
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
                c.causal = w[i][0], c.wl = w[i][1], c.wr = w[i][2];
                c.sq = shapes[s][0], c.sk = shapes[s][1];
                c.seed = 40 + i * 3 + s;
                tc_attn_run(env, &c);
            }
    }
}

static void softcap_alibi_scale(tc_env *env) {
    for (size_t t = 0; t < NDTYPES; t++) {
        if (!has_dtype(env, dtypes[t])) continue;
        /* A large scale pushes logits into tanh's curved range, so the cap matters. */
        tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
        c.sq = 9, c.sk = 21, c.scale = 1.0f, c.softcap = 2.5f;
        c.seed = 60;
        tc_attn_run(env, &c);
        c.causal = 1, c.softcap = 30.0f, c.scale = 0.3f;
        tc_attn_run(env, &c);

        for (int kind = 1; kind <= 2; kind++)
            for (int causal = 0; causal <= 1; causal++) {
                tc_attn_case a = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
                a.batch = 2, a.hq = 4, a.hkv = 2, a.sq = 11, a.sk = 17;
                a.alibi = kind, a.causal = causal;
                a.seed = 61 + (uint64_t)(kind * 2 + causal);
                tc_attn_run(env, &a);
            }
        /* soft-cap, then ALiBi, then a window: all three at once. */
        tc_attn_case all = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
        all.batch = 2, all.hq = 4, all.hkv = 1, all.sq = 13, all.sk = 29;
        all.scale = 1.0f, all.softcap = 3.0f, all.alibi = 2, all.wl = 6, all.wr = 2;
        all.seed = 70;
        tc_attn_run(env, &all);
    }
}

static void lse_and_strides(tc_env *env) {
    for (size_t t = 0; t < NDTYPES; t++) {
        if (!has_dtype(env, dtypes[t])) continue;
        for (int lse = 0; lse <= 2; lse++) {
            tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
            c.batch = 2, c.sq = 6, c.sk = 14, c.lse = lse, c.causal = 1;
            c.seed = 80 + (uint64_t)lse;
            tc_attn_run(env, &c);
        }
        for (int layout = TC_BHSD; layout <= TC_BHSD_PAD; layout++) {
            tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, dtypes[t]);
            c.batch = 2, c.hq = 4, c.hkv = 2, c.d = 96, c.sq = 10, c.sk = 18;
            c.layout = layout, c.lse = 2, c.causal = layout != TC_PADDED;
            c.seed = 90 + (uint64_t)layout;
            tc_attn_run(env, &c);
        }
    }
}

/* Enough causal query tiles that a GPU's persistent grid walks several rounds of them
 * (kernels/attention_hopper.cu, hp_step: 132 multiprocessors take 264 pairs of 128-row
 * tiles in two rounds), at an even and an odd tile count (the odd one's middle tile has no
 * partner) and with GQA. GPU backends only: the reference's cost on a CPU runner buys
 * nothing the small shapes above do not check. */
static void persistent_walk(tc_env *env) {
    if (env->backend == KILN_BACKEND_CPU) return;
    static const int64_t shapes[][5] = {
        /* d, sq, batch, hq, hkv */
        {64, 256, 2, 140, 140}, {128, 384, 1, 136, 34}, {64, 640, 1, 96, 24},
        {256, 512, 1, 68, 17}, /* head dim 256: 136 pairs, its output staged in Q's rows */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tc_attn_case c = tc_attn_defaults(KILN_MODE_FIXED, KILN_BF16);
        c.d = shapes[i][0], c.sq = c.sk = shapes[i][1];
        c.batch = shapes[i][2], c.hq = shapes[i][3], c.hkv = shapes[i][4];
        c.causal = 1;
        c.seed = 100 + i;
        tc_attn_run(env, &c);
    }
}

static void body(tc_env *env) {
    head_dims(env);
    gqa(env);
    causal_shapes(env);
    windows(env);
    softcap_alibi_scale(env);
    lse_and_strides(env);
    persistent_walk(env);
}

int main(int argc, char **argv) { return tc_main(argc, argv, "conformance", body); }
