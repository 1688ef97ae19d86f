/*
 * Random attention cases vs the fp64 reference: mode, dtype, head dim, GQA ratio, lengths,
 * masks, soft-cap, ALiBi, layouts and splits drawn from one seed, so combinations no
 * hand-written case names get exercised. Each failure prints the full case; KILN_TEST_SEED
 * replays a run and KILN_TEST_CASES sets how many cases each target runs.
 */
#include "conformance.h"

static uint64_t seed = 20261130;
static int64_t cases = 150;

static int32_t pick_len(tc_rng *r, int64_t max) {
    /* Empty and single-token sequences are common edge cases; weight them. */
    int64_t u = tc_below(r, 10);
    if (u == 0) return 0;
    if (u == 1) return 1;
    return (int32_t)(1 + tc_below(r, max));
}

static tc_attn_case draw(tc_rng *r, const tc_env *env, int64_t n) {
    static const int64_t dims[] = {8, 16, 32, 40, 64, 80, 96, 128, 160, 192, 256};
    static const int64_t groups[] = {1, 2, 4, 8};
    static const int32_t splits[] = {1, 1, 2, 3, 7, 0};
    static const int pages[] = {16, 64, 8, 32};
    static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};
    /* Same draws on every backend, so one seed names the same cases everywhere; GPUs have
     * no f32 attention and run those cases in bf16. */
    kiln_dtype dt = dtypes[tc_below(r, 3)];
    if (dt == KILN_F32 && env->backend != KILN_BACKEND_CPU) dt = KILN_BF16;
    tc_attn_case c = tc_attn_defaults((kiln_attn_mode)tc_below(r, 3), dt);
    c.d = dims[tc_below(r, sizeof dims / sizeof dims[0])];
    c.hkv = 1 + tc_below(r, 3);
    c.hq = c.hkv * groups[tc_below(r, 4)];
    c.batch = 1 + tc_below(r, 4);
    c.sq = pick_len(r, 40);
    c.sk = pick_len(r, 90);
    for (int64_t b = 0; b < c.batch; b++) {
        c.lq[b] = pick_len(r, 24);
        c.lk[b] = pick_len(r, 100);
    }
    if (c.mode == KILN_MODE_PAGED) {
        c.prefill = (int)tc_below(r, 2);
        if (!c.prefill) c.sq = 1 + tc_below(r, 4);
        c.page_size = pages[tc_below(r, 4)];
        c.shuffle = (int)tc_below(r, 4) != 0;
        c.shared_page = (int)tc_below(r, 4) == 0;
        c.nan_tail = (int)tc_below(r, 3) == 0;
    }
    if (c.mode != KILN_MODE_FIXED) c.extra_rows = tc_below(r, 3);
    c.max_q_slack = tc_below(r, 3);
    c.layout = (int)tc_below(r, 4);
    switch (tc_below(r, 4)) {
    case 0: break;
    case 1: c.causal = 1; break;
    case 2:
        c.causal = (int)tc_below(r, 2);
        c.wl = (int)tc_below(r, 20);
        break;
    default:
        c.wl = (int)tc_below(r, 12) - 1;
        c.wr = (int)tc_below(r, 12) - 1;
        break;
    }
    if (tc_below(r, 3) == 0) {
        c.scale = (float)(1.0 + 0.1 * tc_uniform(r)); /* logits near 1: the cap bites */
        c.softcap = (float)(1.0 + tc_below(r, 30));
    }
    c.alibi = (int)tc_below(r, 4);
    if (c.alibi == 3) c.alibi = 0;
    c.lse = (int)tc_below(r, 3);
    c.num_splits = splits[tc_below(r, sizeof splits / sizeof splits[0])];
    c.caller_ws = (int)tc_below(r, 2);
    c.seed = seed * 1000 + (uint64_t)n;
    return c;
}

static void body(tc_env *env) {
    tc_rng r = {seed};
    for (int64_t n = 0; n < cases; n++) {
        tc_attn_case c = draw(&r, env, n);
        tc_attn_run(env, &c);
    }
}

int main(int argc, char **argv) {
    char buf[32];
    if (kiln_env_get("KILN_TEST_SEED", buf, sizeof buf)) seed = strtoull(buf, NULL, 10);
    if (kiln_env_get("KILN_TEST_CASES", buf, sizeof buf)) cases = strtoll(buf, NULL, 10);
    printf("conformance_random: seed %llu, %lld cases per target (KILN_TEST_SEED, "
           "KILN_TEST_CASES)\n", (unsigned long long)seed, (long long)cases);
    return tc_main(argc, argv, "conformance_random", body);
}
