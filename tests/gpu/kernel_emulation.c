/*
 * The generic-tier kernels (attention, combine, activation) and the tensor tier's attention
 * (mma.sync and warp shuffles emulated lane by lane in kernels/mma.h) run on CPU threads
 * through tests/gpu/host_vendor.h and are compared with the fp64 reference: every mode (fixed,
 * varlen, paged decode, batch prefill), split-KV with the combine kernel, GQA / MQA groups,
 * causal / window / soft-cap / ALiBi, LSE, empty sequences, permuted strides, odd head dims;
 * and the three gated activations. Every attention case runs on the generic tier and, where
 * it covers the case, on the tensor tier. Each variant must have an emulated build (so none
 * is left untested).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "nonfinite.h"
#include "emulated_kernels.h"
#include "reference.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;

static double uniform(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void *fill(kiln_dtype dt, int64_t n)
{
    void *p = calloc((size_t)(n > 0 ? n : 1), kiln_dtype_size(dt));
    for (int64_t i = 0; i < n; ++i) kiln_ref_store(dt, p, i, uniform());
    return p;
}

static kiln_tensor tensor(void *data, kiln_dtype dt, int rank, const int64_t *shape)
{
    kiln_tensor t;
    kiln_tensor_contiguous(&t, data, dt, rank, shape);
    return t;
}

typedef struct attn_case {
    const char *name;
    kiln_attn_mode mode;
    int prefill; /* paged: q packed with cu_seqlens_q */
    kiln_dtype dtype;
    int64_t batch, hq, hkv, d;
    int64_t sq, sk;     /* fixed and paged decode */
    const int *qlens;   /* varlen / prefill, batch entries */
    const int *klens;   /* varlen / paged */
    int causal, wl, wr;
    float softcap;
    int alibi, splits, lse, permuted;
    int64_t page_size;
    int decode_only; /* long cases for the decode kernel: not run on the other kernels */
} attn_case;

static int64_t max_of(const int *v, int64_t n)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) m = v[i] > m ? v[i] : m;
    return m;
}

static int32_t *cumsum(const int *lens, int64_t batch, int64_t *total)
{
    int32_t *cu = malloc(sizeof(int32_t) * (size_t)(batch + 1));
    cu[0] = 0;
    for (int64_t b = 0; b < batch; ++b) cu[b + 1] = cu[b] + lens[b];
    *total = cu[batch];
    return cu;
}

/* Launches per emulated kernel, to prove every AMD tensor variant ran. */
static int g_launched[1024];

static int launch(const kiln_gpu_variant *v, const kiln_attn_args *a, int combine)
{
    const kiln_emulated_kernel *k = kiln_emulated_find(v);
    unsigned grid[3], block[3];
    if (!k) return -1;
    if (k - kiln_emulated_kernels < 1024) ++g_launched[k - kiln_emulated_kernels];
    if ((combine ? kiln_gpu_combine_grid(a, grid, block)
                 : kiln_gpu_attn_grid_for(v, a, grid, block)) != KILN_OK)
        return -1;
    return kiln_emulated_launch(k, a, grid, block);
}

static int g_attn_kernel; /* run the tensor tier's attention kernel even where decode would */

/* One case on one tier, the variant chosen for target; nonfinite (enum tc_nonfinite,
 * src/testing/nonfinite.h) plants a NaN or inf in the inputs, 0 none. */
static void run_attn_nf(const attn_case *c, kiln_gpu_tier_request tier, const char *target,
                        int nonfinite)
{
    const kiln_dtype dt = c->dtype;
    const int64_t B = c->batch, HQ = c->hq, HK = c->hkv, D = c->d;
    int64_t total_q = 0, total_k = 0, max_q = c->sq, max_k = c->sk;
    int32_t *cu_q = NULL, *cu_k = NULL, *bt = NULL, *seqk = NULL;
    kiln_tensor q, k, v, out, lse, tcu_q, tcu_k, tbt, tseqk;
    void *qd, *kd, *vd, *od;
    float *ld = NULL, *slopes = NULL;
    int64_t max_pages = 0;
    kiln_attention_params prm;
    kiln_attn_problem p;

    check_case("attention %s%s%s (%s tier, %s)", c->name, nonfinite ? " with " : "",
               tc_nonfinite_name(nonfinite),
               tier == KILN_GPU_TIER_WANT_TENSOR ? "tensor" : "generic", target);
    kiln_attention_params_init(&prm);
    prm.causal = c->causal;
    prm.window_left = c->wl;
    prm.window_right = c->wr;
    prm.softcap = c->softcap;
    prm.num_splits = c->splits;

    if (c->qlens) {
        cu_q = cumsum(c->qlens, B, &total_q);
        max_q = 0;
        for (int64_t b = 0; b < B; ++b) max_q = c->qlens[b] > max_q ? c->qlens[b] : max_q;
    }
    if (c->mode == KILN_MODE_VARLEN) {
        cu_k = cumsum(c->klens, B, &total_k);
        max_k = 0;
        for (int64_t b = 0; b < B; ++b) max_k = c->klens[b] > max_k ? c->klens[b] : max_k;
    }

    /* q / out / lse */
    if (cu_q) {
        int64_t s[3] = {total_q, HQ, D}, ls[2] = {HQ, total_q}, cs[1] = {B + 1};
        qd = fill(dt, total_q * HQ * D);
        od = fill(dt, total_q * HQ * D);
        ld = calloc((size_t)(HQ * total_q + 1), sizeof(float));
        q = tensor(qd, dt, 3, s);
        out = tensor(od, dt, 3, s);
        lse = tensor(ld, KILN_F32, 2, ls);
        tcu_q = tensor(cu_q, KILN_I32, 1, cs);
    } else {
        int64_t s[4] = {B, c->sq, HQ, D}, ls[3] = {B, HQ, c->sq};
        qd = fill(dt, B * c->sq * HQ * D);
        od = fill(dt, B * c->sq * HQ * D);
        ld = calloc((size_t)(B * HQ * c->sq + 1), sizeof(float));
        q = tensor(qd, dt, 4, s);
        out = tensor(od, dt, 4, s);
        lse = tensor(ld, KILN_F32, 3, ls);
        if (c->permuted) { /* [B, H, S, D] storage viewed as [B, S, H, D] */
            q.stride[1] = D;
            q.stride[2] = c->sq * D;
        }
    }
    /* k / v */
    if (c->mode == KILN_MODE_PAGED) {
        int64_t pages_total = 0;
        max_k = 0;
        for (int64_t b = 0; b < B; ++b) {
            int64_t np = (c->klens[b] + c->page_size - 1) / c->page_size;
            pages_total += np;
            max_pages = np > max_pages ? np : max_pages;
        }
        if (max_pages == 0) max_pages = 1;
        {
            int64_t s[4] = {pages_total + 1, c->page_size, HK, D}, bs[2] = {B, max_pages},
                    ss[1] = {B};
            int64_t next = pages_total; /* pages handed out back to front: any order works */
            kd = fill(dt, (pages_total + 1) * c->page_size * HK * D);
            vd = fill(dt, (pages_total + 1) * c->page_size * HK * D);
            k = tensor(kd, dt, 4, s);
            v = tensor(vd, dt, 4, s);
            bt = calloc((size_t)(B * max_pages), sizeof(int32_t));
            seqk = malloc(sizeof(int32_t) * (size_t)B);
            for (int64_t b = 0; b < B; ++b) {
                seqk[b] = c->klens[b];
                for (int64_t j = 0; j * c->page_size < c->klens[b]; ++j)
                    bt[b * max_pages + j] = (int32_t)next--;
            }
            if (c->decode_only) {
                /* Stale slots: past each sequence's end and the page no one uses hold NaN,
                 * which must never reach a sum (not even times 0). */
                const int64_t row = HK * D, page = c->page_size * row;
                for (int64_t e = 0; e < page; ++e) {
                    kiln_ref_store(dt, kd, e, NAN);
                    kiln_ref_store(dt, vd, e, NAN);
                }
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t j = c->klens[b]; j % c->page_size; ++j) {
                        const int64_t at = bt[b * max_pages + j / c->page_size] * page +
                                           (j % c->page_size) * row;
                        for (int64_t e = 0; e < row; ++e) {
                            kiln_ref_store(dt, kd, at + e, NAN);
                            kiln_ref_store(dt, vd, at + e, NAN);
                        }
                    }
            }
            tbt = tensor(bt, KILN_I32, 2, bs);
            tseqk = tensor(seqk, KILN_I32, 1, ss);
            max_k = max_pages * c->page_size;
        }
    } else if (cu_k) {
        int64_t s[3] = {total_k, HK, D}, cs[1] = {B + 1};
        kd = fill(dt, total_k * HK * D);
        vd = fill(dt, total_k * HK * D);
        k = tensor(kd, dt, 3, s);
        v = tensor(vd, dt, 3, s);
        tcu_k = tensor(cu_k, KILN_I32, 1, cs);
    } else {
        int64_t s[4] = {B, c->sk, HK, D};
        kd = fill(dt, B * c->sk * HK * D);
        vd = fill(dt, B * c->sk * HK * D);
        k = tensor(kd, dt, 4, s);
        v = tensor(vd, dt, 4, s);
    }
    if (c->alibi) {
        int64_t s[1] = {HQ};
        slopes = malloc(sizeof(float) * (size_t)HQ);
        for (int64_t h = 0; h < HQ; ++h) slopes[h] = 0.5f / (float)(h + 1);
        prm.alibi_slopes = tensor(slopes, KILN_F32, 1, s);
    }

    kiln_ref_attn_problem(&p, c->mode, &q, &k, &v, cu_q ? &tcu_q : NULL,
                          cu_k ? &tcu_k : NULL, bt ? &tbt : NULL, seqk ? &tseqk : NULL, max_q,
                          max_k, &out, c->lse ? &lse : NULL, &prm);
    p.num_splits = c->splits;
    if (nonfinite) {
        check_state_.checks++;
        if (!tc_nonfinite_plant(&p, nonfinite, slopes, 5))
            check_fail_(__FILE__, __LINE__, "no entry to plant %s in",
                        tc_nonfinite_name(nonfinite));
    }

    {
        kiln_gpu_variant var, comb;
        kiln_attn_args a;
        const int64_t rows = p.rows_q;
        double *ref_o = calloc((size_t)(rows * HQ * D + 1), sizeof(double));
        double *ref_l = calloc((size_t)(rows * HQ + 1), sizeof(double));
        void *ws = NULL;
        const double tol = dt == KILN_BF16 ? 8e-3 : 1e-3; /* the conformance tolerances */
        const size_t ws_bytes = kiln_split_workspace_bytes(c->splits, rows, HQ, D);
        if (c->splits > 1) {
            /* Uninitialised on purpose: the decode kernel's counters must not need zeros. */
            ws = malloc(ws_bytes);
            memset(ws, 0xa5, ws_bytes);
        }
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, kiln_target_find(target), tier, &var));
        CHECK_EQ(var.tier, tier == KILN_GPU_TIER_WANT_TENSOR ? KILN_GPU_TIER_ID_TENSOR
                                                             : KILN_GPU_TIER_ID_GENERIC);
        /* The tensor tier gives decode-shaped calls to the decode kernel on NVIDIA targets;
         * g_attn_kernel runs the tier's attention kernel on them instead. */
        CHECK_EQ(var.kind == KILN_KERNEL_DECODE,
                 tier == KILN_GPU_TIER_WANT_TENSOR && !var.family &&
                     kiln_gpu_decode_head_dim(p.head_dim) &&
                     kiln_gpu_decode_shaped(p.seqlen_q, p.heads_q, p.heads_kv));
        if (g_attn_kernel) var.kind = KILN_KERNEL_ATTN;
        const int decode = var.kind == KILN_KERNEL_DECODE;
        kiln_gpu_attn_args(&a, &p, c->splits, ws);
        /* The decode kernel runs twice on one workspace: its last block of each split group
         * must leave the counters ready for the next call (a graph replay). */
        for (int rep = 0; rep < (decode && c->splits > 1 ? 2 : 1); ++rep) {
            if (rep) memset(od, 0x7f, (size_t)(rows * HQ * D) * kiln_dtype_size(dt));
            CHECK_EQ(launch(&var, &a, 0), 0);
        }
        if (c->splits > 1 && !decode) {
            CHECK_OK(kiln_gpu_variant_for_combine(dt, D, &comb));
            CHECK_EQ(launch(&comb, &a, 1), 0);
        }
        CHECK_OK(kiln_ref_attention(&p, ref_o, ref_l));

        long bad = 0;
        for (int64_t b = 0; b < B; ++b) {
            const int64_t sq = kiln_ref_seqlen_q(&p, b), r0 = kiln_ref_row0(&p, b);
            const int64_t qo = cu_q ? cu_q[b] * p.o_stride_row : b * p.o_stride_batch;
            const int64_t lo = cu_q ? cu_q[b] * p.lse_stride_row : b * p.lse_stride_batch;
            for (int64_t i = 0; i < sq; ++i)
                for (int64_t h = 0; h < HQ; ++h) {
                    const int64_t r = (r0 + i) * HQ + h;
                    for (int64_t d = 0; d < D && bad < 5; ++d) {
                        double got = kiln_ref_load(dt, od, qo + i * p.o_stride_row +
                                                               h * p.o_stride_head + d);
                        double want = ref_o[r * D + d];
                        if (!tc_nonfinite_close(got, want, tol)) {
                            ++bad;
                            check_fail_(__FILE__, __LINE__,
                                        "out[b=%lld i=%lld h=%lld d=%lld] %.6f vs %.6f",
                                        (long long)b, (long long)i, (long long)h, (long long)d,
                                        got, want);
                        }
                    }
                    if (c->lse && bad < 5) {
                        double got = ld[lo + h * p.lse_stride_head + i * p.lse_stride_row];
                        double want = ref_l[r];
                        int ok = tc_nonfinite_close(got, want, 1e-4 * (1 + fabs(want)));
                        if (!ok) {
                            ++bad;
                            check_fail_(__FILE__, __LINE__,
                                        "lse[b=%lld i=%lld h=%lld] %.6f vs %.6f", (long long)b,
                                        (long long)i, (long long)h, got, want);
                        }
                    }
                }
        }
        check_state_.checks++;
        check_note_ran();
        free(ref_o);
        free(ref_l);
        free(ws);
    }
    free(qd), free(kd), free(vd), free(od), free(ld), free(slopes);
    free(cu_q), free(cu_k), free(bt), free(seqk);
}

static void run_attn(const attn_case *c, kiln_gpu_tier_request tier, const char *target)
{
    run_attn_nf(c, tier, target, 0);
    /* A decode-shaped case on NVIDIA ran on the decode kernel: the tensor tier's attention
     * kernel takes it too. */
    const int64_t sq = c->qlens ? max_of(c->qlens, c->batch) : c->sq;
    if (tier == KILN_GPU_TIER_WANT_TENSOR && strncmp(target, "sm_", 3) == 0 &&
        kiln_gpu_decode_head_dim(c->d) && kiln_gpu_decode_shaped(sq, c->hq, c->hkv)) {
        g_attn_kernel = 1;
        run_attn_nf(c, tier, target, 0);
        g_attn_kernel = 0;
    }
}

static void run_act(kiln_activation act, kiln_dtype dt, int64_t rows, int64_t d)
{
    /* x [2, rows / 2, 2d] with a padded middle stride, out [2, rows / 2, d] contiguous. */
    const int64_t r0 = 2, r1 = rows / 2, pad = 8;
    int64_t xs[3] = {r0, r1, 2 * d + pad}, os[3] = {r0, r1, d};
    void *xd = fill(dt, r0 * r1 * (2 * d + pad));
    void *od = fill(dt, r0 * r1 * d);
    double *ref = calloc((size_t)(r0 * r1 * d), sizeof(double));
    kiln_tensor x = tensor(xd, dt, 3, xs), out = tensor(od, dt, 3, os);
    kiln_act_problem p;
    kiln_gpu_variant var;
    kiln_act_args a;
    unsigned grid[3], block[3];
    const double tol = dt == KILN_BF16 ? 1e-2 : dt == KILN_F16 ? 2e-3 : 1e-5;
    long bad = 0;

    check_case("activation %d %s rows %lld d %lld", (int)act, kiln_dtype_name(dt),
               (long long)rows, (long long)d);
    for (int64_t i = 0; i < r0 * r1 * (2 * d + pad); ++i) /* reach the saturating ranges */
        kiln_ref_store(dt, xd, i, 6.0 * kiln_ref_load(dt, xd, i));
    x.shape[2] = 2 * d; /* the padding is outside the view */
    kiln_ref_act_problem(&p, act, &x, &out);
    CHECK_OK(kiln_gpu_variant_for_act(act, dt, &var));
    kiln_gpu_act_args(&a, &p);
    if (d % 8 == 0) CHECK(a.vec > 1); /* aligned rows take the 16-byte path */
    CHECK_OK(kiln_gpu_act_grid(&a, grid, block));
    {
        const kiln_emulated_kernel *k = kiln_emulated_find(&var);
        CHECK(k != NULL);
        if (k) CHECK_EQ(kiln_emulated_launch(k, &a, grid, block), 0);
    }
    kiln_ref_act_and_mul(&p, ref);
    for (int64_t i = 0; i < r0 * r1 && bad < 5; ++i)
        for (int64_t c = 0; c < d && bad < 5; ++c) {
            double got = kiln_ref_load(dt, od, i * d + c), want = ref[i * d + c];
            if (!(fabs(got - want) <= tol * (1 + fabs(want)))) {
                ++bad;
                check_fail_(__FILE__, __LINE__, "out[%lld, %lld] %.7f vs %.7f", (long long)i,
                            (long long)c, got, want);
            }
        }
    check_state_.checks++;
    check_note_ran();
    free(xd), free(od), free(ref);
}

/* argv[1]: "generic" or "tensor" runs the attention cases on that tier only (ctest runs the
 * two halves as separate entries); none (or "all") runs both. argv[2], by hand: only the cases
 * whose name contains it (test_kernel_emulation tensor "dec "), without the AMD sweep. */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "";
    const char *pick = argc > 2 ? argv[2] : NULL;
    const int do_generic = strcmp(only, "tensor") != 0, do_tensor = strcmp(only, "generic") != 0;
    static const int q4[] = {5, 0, 37, 16}, k4[] = {40, 7, 0, 70};
    static const int q3[] = {3, 1, 20}, k3[] = {100, 33, 20};
    static const int ones[] = {1, 1, 1}, kd[] = {130, 17, 64}, kl[] = {1200, 90, 700};
    static const int kl3[] = {300, 17, 640}, kl2[] = {200, 90}, kl1[] = {1500};
    static const int klong[] = {2600, 2100};
    static const int dq3[] = {1, 0, 3}, dk3[] = {100, 0, 50};
    static const int dq3b[] = {2, 1, 0}, dk3b[] = {64, 150, 0};
    static const int dgq[] = {170, 70}, dgk[] = {170, 230};
    const attn_case cases[] = {
        /* name                mode            pf dtype      B HQ HK  D   sq  sk  ql  kl  ca  wl  wr  cap alibi spl lse perm page dec */
        {"fixed full d64",     KILN_MODE_FIXED, 0, KILN_BF16, 2, 4, 2, 64, 33, 45, 0, 0, 0, -1, -1, 0, 0, 1, 1, 0, 0, 0},
        {"fixed causal q>k",   KILN_MODE_FIXED, 0, KILN_F16, 1, 2, 1, 72, 40, 19, 0, 0, 1, -1, 0, 0, 0, 1, 1, 0, 0, 0},
        {"fixed causal d8",    KILN_MODE_FIXED, 0, KILN_BF16, 2, 2, 2, 8, 17, 50, 0, 0, 1, -1, 0, 0, 0, 1, 1, 0, 0, 0},
        {"fixed window perm",  KILN_MODE_FIXED, 0, KILN_F16, 1, 3, 3, 128, 24, 70, 0, 0, 0, 9, 4, 0, 0, 1, 1, 1, 0, 0},
        {"fixed softcap alibi",KILN_MODE_FIXED, 0, KILN_BF16, 1, 4, 1, 136, 18, 35, 0, 0, 1, -1, 0, 5.0f, 1, 1, 1, 0, 0, 0},
        {"fixed d256 split",   KILN_MODE_FIXED, 0, KILN_F16, 1, 2, 1, 256, 20, 90, 0, 0, 0, -1, -1, 0, 0, 3, 1, 0, 0, 0},
        {"fixed causal split", KILN_MODE_FIXED, 0, KILN_BF16, 2, 2, 2, 64, 9, 100, 0, 0, 1, 20, 0, 0, 0, 4, 1, 0, 0, 0},
        {"fixed sk=0",         KILN_MODE_FIXED, 0, KILN_F16, 1, 1, 1, 32, 5, 0, 0, 0, 0, -1, -1, 0, 0, 1, 1, 0, 0, 0},
        {"varlen causal",      KILN_MODE_VARLEN, 0, KILN_BF16, 4, 4, 2, 64, 0, 0, q4, k4, 1, -1, 0, 0, 0, 1, 1, 0, 0, 0},
        {"varlen full split",  KILN_MODE_VARLEN, 0, KILN_F16, 4, 2, 2, 96, 0, 0, q4, k4, 0, -1, -1, 0, 0, 3, 1, 0, 0, 0},
        {"varlen window",      KILN_MODE_VARLEN, 0, KILN_BF16, 3, 6, 3, 40, 0, 0, q3, k3, 0, 12, 3, 2.5f, 1, 2, 1, 0, 0, 0},
        {"paged decode",       KILN_MODE_PAGED, 0, KILN_BF16, 3, 8, 2, 128, 1, 0, 0, kd, 0, -1, -1, 0, 0, 1, 1, 0, 16, 0},
        {"paged decode split", KILN_MODE_PAGED, 0, KILN_F16, 3, 4, 4, 64, 2, 0, 0, kd, 1, -1, 0, 0, 0, 5, 1, 0, 8, 0},
        {"paged decode 1tok",  KILN_MODE_PAGED, 0, KILN_BF16, 3, 2, 1, 256, 0, 0, ones, kd, 1, -1, 0, 0, 1, 3, 1, 0, 32, 0},
        {"batch prefill",      KILN_MODE_PAGED, 1, KILN_F16, 3, 4, 2, 64, 0, 0, q3, k3, 1, -1, 0, 0, 0, 1, 1, 0, 16, 0},
        {"batch prefill split",KILN_MODE_PAGED, 1, KILN_BF16, 4, 2, 1, 48, 0, 0, q4, k4, 0, 30, 2, 0, 0, 2, 1, 0, 4, 0},
        {"no lse",             KILN_MODE_FIXED, 0, KILN_BF16, 1, 2, 2, 64, 16, 16, 0, 0, 1, -1, 0, 0, 0, 1, 0, 0, 0, 0},
        /* GQA groups that straddle block tiles (6 and 5 heads per KV head, 16 rows a block). */
        {"gqa 6 causal alibi", KILN_MODE_FIXED, 0, KILN_F16, 2, 12, 2, 64, 11, 30, 0, 0, 1, 4, 0, 0, 1, 1, 1, 0, 0, 0},
        {"mqa 5 window split", KILN_MODE_VARLEN, 0, KILN_BF16, 3, 5, 1, 32, 0, 0, q3, k3, 0, 7, 2, 3.0f, 1, 3, 1, 0, 0, 0},
        {"gqa 8 decode split", KILN_MODE_PAGED, 0, KILN_BF16, 3, 16, 2, 128, 2, 0, 0, kd, 1, -1, 0, 0, 1, 4, 1, 0, 16, 0},
        {"gqa 3 prefill",      KILN_MODE_PAGED, 1, KILN_F16, 4, 6, 2, 80, 0, 0, q4, k4, 1, -1, 0, 0, 0, 1, 1, 0, 8, 0},
        /* Several query blocks and key tiles of the tensor kernel (128 rows x 64 keys). */
        {"long causal d128",   KILN_MODE_FIXED, 0, KILN_BF16, 1, 2, 1, 128, 150, 200, 0, 0, 1, -1, 0, 4.0f, 1, 1, 1, 0, 0, 0},
        {"long window split",  KILN_MODE_FIXED, 0, KILN_F16, 1, 2, 2, 64, 130, 170, 0, 0, 0, 50, 20, 0, 0, 2, 1, 0, 0, 0},
        {"causal q>k d64",     KILN_MODE_FIXED, 0, KILN_F16, 1, 2, 1, 64, 100, 30, 0, 0, 1, -1, 0, 0, 0, 1, 1, 0, 0, 0},
        {"sk=0 d128 split",    KILN_MODE_FIXED, 0, KILN_BF16, 1, 2, 1, 128, 5, 0, 0, 0, 0, -1, -1, 0, 0, 2, 1, 0, 0, 0},
        /* Causal and window blocks over their diagonal key tiles, where the warps of a
         * block skip and mask different key tiles by their own rows (GQA rows packed two
         * and three a query, a partial last block, bottom-right diagonals either way). */
        {"causal diag d64 gqa",KILN_MODE_FIXED, 0, KILN_BF16, 1, 6, 2, 64, 200, 200, 0, 0, 1, -1, 0, 0, 0, 1, 1, 0, 0, 0},
        {"causal diag d32 q<k",KILN_MODE_FIXED, 0, KILN_F16, 1, 3, 1, 32, 90, 260, 0, 0, 1, -1, 0, 0, 1, 1, 1, 0, 0, 0},
        {"window diag d96",    KILN_MODE_VARLEN, 0, KILN_BF16, 2, 2, 2, 96, 0, 0, dgq, dgk, 0, 40, 0, 3.0f, 0, 1, 1, 0, 0, 0},
        {"causal diag prefill",KILN_MODE_PAGED, 1, KILN_F16, 2, 4, 2, 64, 0, 0, dgq, dgk, 1, -1, 0, 0, 0, 2, 1, 0, 16, 0},
        /* ALiBi slopes 0.5 / (h + 1) over long rows: between key tiles a row's max rises by
         * more than the lazy rescale's slack (2^8) in some heads and by less in others, so
         * rows keep a reference below their max (weights above 1) and move it. */
        {"alibi slack d64",    KILN_MODE_FIXED, 0, KILN_BF16, 1, 8, 2, 64, 40, 400, 0, 0, 0, -1, -1, 0, 1, 1, 1, 0, 0, 0},
        {"alibi slack d96",    KILN_MODE_FIXED, 0, KILN_F16, 1, 8, 2, 96, 40, 400, 0, 0, 1, -1, 0, 0, 1, 1, 1, 0, 0, 0},
        /* The tensor tier's widest shapes with their own head dims (Q from shared memory). */
        {"fixed causal d192",  KILN_MODE_FIXED, 0, KILN_F16, 1, 2, 2, 192, 21, 80, 0, 0, 1, -1, 0, 0, 1, 1, 1, 0, 0, 0},
        {"prefill window d160",KILN_MODE_PAGED, 1, KILN_BF16, 3, 2, 1, 160, 0, 0, q3, k3, 0, 10, 3, 4.0f, 0, 2, 1, 0, 16, 0},
        /* Decode kernel: long caches over many 16-key steps, pages of 16 and 64 (a warp's
         * table entries read 32 steps at a time) and of 8 (a lookup a key), split groups
         * merged by their last block, GQA groups of 1 to 8, up to 8 queries (8 row blocks
         * of 8 rows). */
        {"dec dense gqa4",     KILN_MODE_FIXED, 0, KILN_BF16, 2, 8, 2, 128, 1, 700, 0, 0, 0, -1, -1, 0, 0, 1, 1, 0, 0, 1},
        {"dec dense split",    KILN_MODE_FIXED, 0, KILN_F16, 2, 8, 2, 128, 1, 1001, 0, 0, 0, -1, -1, 0, 0, 5, 1, 0, 0, 1},
        {"dec paged16 split",  KILN_MODE_PAGED, 0, KILN_BF16, 3, 8, 2, 128, 1, 0, 0, kl3, 0, -1, -1, 0, 0, 4, 1, 0, 16, 1},
        {"dec paged64 sq4",    KILN_MODE_PAGED, 0, KILN_F16, 3, 8, 2, 64, 4, 0, 0, kl3, 1, -1, 0, 0, 0, 3, 1, 0, 64, 1},
        {"dec paged8 window",  KILN_MODE_PAGED, 0, KILN_BF16, 2, 16, 2, 128, 1, 0, 0, kl2, 0, 50, 0, 5.0f, 1, 2, 1, 0, 8, 1},
        {"dec mqa sq8 causal", KILN_MODE_FIXED, 0, KILN_BF16, 1, 8, 1, 64, 8, 333, 0, 0, 1, -1, 0, 0, 1, 2, 1, 0, 0, 1},
        {"dec varlen",         KILN_MODE_VARLEN, 0, KILN_F16, 3, 4, 4, 128, 0, 0, dq3, dk3, 0, -1, -1, 0, 0, 3, 1, 0, 0, 1},
        {"dec batch prefill",  KILN_MODE_PAGED, 1, KILN_BF16, 3, 8, 2, 128, 0, 0, dq3b, dk3b, 1, -1, 0, 0, 0, 2, 1, 0, 16, 1},
        {"dec window sq3",     KILN_MODE_FIXED, 0, KILN_F16, 1, 8, 2, 128, 3, 500, 0, 0, 0, 100, 20, 0, 0, 4, 1, 1, 0, 1},
        {"dec many splits",    KILN_MODE_PAGED, 0, KILN_BF16, 1, 4, 1, 64, 1, 0, 0, kl1, 0, -1, -1, 0, 1, 16, 0, 0, 64, 1},
        /* More than 32 steps a warp: its window of step pages moves on (pages of 16 and 64). */
        {"dec paged16 long",   KILN_MODE_PAGED, 0, KILN_BF16, 2, 4, 1, 64, 1, 0, 0, klong, 0, -1, -1, 0, 0, 1, 1, 0, 16, 1},
        {"dec paged64 long",   KILN_MODE_PAGED, 0, KILN_F16, 2, 8, 2, 128, 1, 0, 0, klong, 1, -1, 0, 0, 1, 1, 1, 0, 64, 1},
        /* The merge over many splits: several rounds of its batched loads, and splits
         * with no keys at all. */
        {"dec 37 splits",      KILN_MODE_FIXED, 0, KILN_BF16, 2, 8, 2, 128, 1, 700, 0, 0, 0, -1, -1, 0, 0, 37, 1, 0, 0, 1},
        {"dec 32 splits half", KILN_MODE_FIXED, 0, KILN_F16, 1, 8, 2, 128, 1, 1100, 0, 0, 0, -1, -1, 0, 0, 32, 1, 0, 0, 1},
        {"dec 33 splits d64",  KILN_MODE_FIXED, 0, KILN_BF16, 1, 6, 3, 64, 2, 900, 0, 0, 1, -1, 0, 0, 0, 33, 1, 0, 0, 1},
        {"dec 70 splits",      KILN_MODE_PAGED, 0, KILN_F16, 3, 4, 1, 64, 2, 0, 0, kl, 1, -1, 0, 0, 1, 70, 1, 0, 16, 1},
    };
    /* Every generic and NVIDIA tensor variant (sm_80, and sm_90's long key tiles), and each
     * AMD family's tensor set. */
    static const char *const kTargets[] = {"sm_80", "sm_90", "gfx1151", "gfx1201", "gfx942"};
    static const char *const kAmd[] = {"gfx1151", "gfx1201", "gfx942"};
    const kiln_target *t = kiln_target_find("sm_80");
    char why[256];

    check_case("every variant has an emulated build");
    for (size_t ti = 0; ti < sizeof kTargets / sizeof kTargets[0]; ++ti) {
        const kiln_target *tt = kiln_target_find(kTargets[ti]);
        size_t n = kiln_gpu_variant_list(tt, NULL, 0);
        kiln_gpu_variant *all = malloc(n * sizeof *all);
        kiln_gpu_variant_list(tt, all, n);
        for (size_t i = 0; i < n; ++i) {
            char key[128];
            /* The hopper tier's wgmma / TMA kernels have no emulation (GPU tests only). */
            if (all[i].tier == KILN_GPU_TIER_ID_HOPPER) continue;
            kiln_gpu_variant_key(&all[i], key, sizeof key);
            if (!kiln_emulated_find(&all[i]))
                check_fail_(__FILE__, __LINE__, "no emulation of %s for %s", key, tt->name);
            check_state_.checks++;
        }
        free(all);
    }

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        attn_case c = cases[i];
        if (pick && !strstr(c.name, pick)) continue;
        if (c.mode == KILN_MODE_PAGED && !c.prefill && c.qlens) { /* decode over 1 token each */
            c.qlens = NULL;
            c.sq = 1;
        }
        if (c.decode_only) { /* the decode kernel only (NVIDIA's tensor tier) */
            if (do_tensor) run_attn_nf(&c, KILN_GPU_TIER_WANT_TENSOR, "sm_90", 0);
            continue;
        }
        if (do_generic) run_attn(&c, KILN_GPU_TIER_WANT_GENERIC, "sm_90");
        if (do_tensor) {
            run_attn(&c, KILN_GPU_TIER_WANT_TENSOR, "sm_90"); /* every case: D up to 256 */
            /* Where sm_90's key tiles are longer (attention_mma.h), the other targets' too. */
            if ((c.d > 80 && c.d <= 96) || c.d > 192) run_attn(&c, KILN_GPU_TIER_WANT_TENSOR, "sm_80");
            /* The AMD families take turns (the sweep below runs every variant on each). */
            if (c.d == 64 || c.d == 128) run_attn(&c, KILN_GPU_TIER_WANT_TENSOR, kAmd[i % 3]);
        }
    }

    /* One small case per AMD tensor variant (dtype x head dim x mask x mode) on each family,
     * so none is left unrun; then the proof that each ran. */
    if (do_tensor && !pick) {
        static const int sq2[] = {13, 22}, sk2[] = {40, 9};
        static const int pq2[] = {7, 19}, pk2[] = {50, 23};
        /* Small enough that a block or two covers it, large enough for two key tiles,
         * partial tiles, a GQA group of 2 and, paged, pages out of order. */
        const kiln_dtype dts[] = {KILN_F16, KILN_BF16};
        const int hds[] = {64, 128};
        const kiln_attn_mode modes[] = {KILN_MODE_FIXED, KILN_MODE_VARLEN, KILN_MODE_PAGED};
        for (int di = 0; di < 2; ++di)
            for (int hi = 0; hi < 2; ++hi)
                for (int mask = 0; mask < 3; ++mask)
                    for (int mi = 0; mi < 3; ++mi) {
                        attn_case c;
                        memset(&c, 0, sizeof c);
                        c.name = "variant sweep";
                        c.mode = modes[mi];
                        c.dtype = dts[di];
                        c.batch = 2, c.hq = 2, c.hkv = 1, c.d = hds[hi];
                        c.sq = 21, c.sk = 45;
                        if (c.mode == KILN_MODE_VARLEN) c.qlens = sq2, c.klens = sk2;
                        if (c.mode == KILN_MODE_PAGED)
                            c.prefill = 1, c.qlens = pq2, c.klens = pk2, c.page_size = 16;
                        c.causal = mask == 1;
                        c.wl = mask == 2 ? 11 : -1;
                        c.wr = mask == 2 ? 3 : mask == 1 ? 0 : -1;
                        c.softcap = di == 1 && mi == 0 ? 4.0f : 0.0f;
                        c.alibi = mask == 2;
                        c.splits = mi == 2 ? 3 : 1;
                        c.lse = 1;
                        for (size_t ti = 0; ti < sizeof kAmd / sizeof kAmd[0]; ++ti)
                            run_attn(&c, KILN_GPU_TIER_WANT_TENSOR, kAmd[ti]);
                    }
        check_case("every AMD tensor variant ran");
        for (int i = 0; i < kiln_emulated_kernel_count; ++i) {
            const kiln_emulated_kernel *k = &kiln_emulated_kernels[i];
            if (k->family == 0) continue;
            if (i >= 1024 || g_launched[i] == 0)
                check_fail_(__FILE__, __LINE__,
                            "family %d dtype %d d%d mask %d mode %d never ran", k->family,
                            k->dtype, k->head_dim, k->mask, k->mode);
            check_state_.checks++;
        }
        check_note_ran();
    }

    /* Non-finite inputs: one NaN / inf in q, k, v or the slopes, on both tiers, with and
     * without a split (so the combine sees NaN partial results). */
    {
        static const int qv[] = {6, 0, 21}, kv[] = {30, 9, 75};
        const attn_case nf[] = {
            {"nonfinite fixed",  KILN_MODE_FIXED, 0, KILN_BF16, 2, 4, 2, 64, 9, 70, 0, 0, 1, -1, 0, 0, 1, 1, 1, 0, 0, 0},
            {"nonfinite varlen", KILN_MODE_VARLEN, 0, KILN_F16, 3, 2, 1, 128, 0, 0, qv, kv, 1, -1, 0, 0, 1, 3, 1, 0, 0, 0},
            {"nonfinite paged",  KILN_MODE_PAGED, 0, KILN_BF16, 3, 8, 2, 64, 1, 0, 0, kv, 0, -1, -1, 0, 1, 2, 1, 0, 16, 0},
        };
        for (size_t i = 0; i < sizeof nf / sizeof nf[0]; ++i)
            for (int kind = 1; kind < TC_NF_COUNT; ++kind) {
                attn_case c = nf[i];
                if (tc_nonfinite_needs_full_mask(kind)) c.causal = 0, c.wl = c.wr = -1;
                if (do_generic) run_attn_nf(&c, KILN_GPU_TIER_WANT_GENERIC, "sm_90", kind);
                if (!do_tensor) continue;
                run_attn_nf(&c, KILN_GPU_TIER_WANT_TENSOR, "sm_90", kind);
                /* The AMD families in turn: each meets every case and most kinds. */
                run_attn_nf(&c, KILN_GPU_TIER_WANT_TENSOR, kAmd[(i + (size_t)kind) % 3], kind);
            }
    }

    check_case("tier choice");
    {
        kiln_attn_problem p;
        kiln_gpu_variant v;
        memset(&p, 0, sizeof p);
        p.dtype = KILN_BF16;
        p.head_dim = 264;
        p.k = p.v = (const void *)(uintptr_t)64;
        CHECK(!kiln_gpu_tensor_covers(&p, t, why, sizeof why));
        CHECK(strstr(why, "head_dim") != NULL);
        CHECK_STATUS(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_WANT_TENSOR, &v),
                     KILN_UNSUPPORTED);
        /* A head dim between the compiled ones runs on the next wider one. */
        p.head_dim = 72;
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_TENSOR);
        CHECK_EQ(v.head_dim, 80);
        /* The widest kernel needs more shared memory than an RTX 3090 / 4090 block has. */
        p.head_dim = 256;
        CHECK(!kiln_gpu_tensor_covers(&p, kiln_target_find("sm_86"), why, sizeof why));
        CHECK(strstr(why, "shared memory") != NULL);
        CHECK(kiln_gpu_tensor_covers(&p, kiln_target_find("sm_90"), why, sizeof why));
        {
            /* sm_90's longer key tiles are their own variant, named by them; sm_80's is not. */
            char key[128];
            kiln_gpu_defines defs;
            int n, found = 0;
            p.mode = KILN_MODE_FIXED;
            p.window_left = p.window_right = -1;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, kiln_target_find("sm_90"),
                                                    KILN_GPU_TIER_WANT_TENSOR, &v));
            CHECK_EQ(v.wide, 1);
            kiln_gpu_variant_key(&v, key, sizeof key);
            CHECK_STR_EQ(key, "attn_fwd.bf16.d256.full.fixed.k64.tensor");
            CHECK_EQ(kiln_gpu_variant_dynamic_smem(&v), KILN_TQ_SMEM_BYTES(256, KILN_TQ_LONG));
            n = kiln_gpu_variant_defines(&v, &defs);
            for (int i = 0; i < n; ++i) found |= strcmp(defs.ptr[i], "-DKILN_TQ_LONG_TILES=1") == 0;
            CHECK(found);
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_WANT_TENSOR, &v));
            CHECK_EQ(v.wide, 0);
            kiln_gpu_variant_key(&v, key, sizeof key);
            CHECK_STR_EQ(key, "attn_fwd.bf16.d256.full.fixed.tensor");
            CHECK(kiln_gpu_variant_dynamic_smem(&v) <= t->shared_max_bytes);
            p.head_dim = 128; /* the same tiles everywhere */
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, kiln_target_find("sm_90"),
                                                    KILN_GPU_TIER_WANT_TENSOR, &v));
            CHECK_EQ(v.wide, 0);
            p.head_dim = 256;
            p.window_left = p.window_right = 0;
        }
        p.head_dim = 128; /* Q in registers shares a stage's space: 70 KB fits there */
        CHECK(kiln_gpu_tensor_covers(&p, kiln_target_find("sm_86"), why, sizeof why));
        p.head_dim = 256;
        p.q = (const void *)(uintptr_t)8; /* Q rows are staged 16 bytes at a time too */
        CHECK(!kiln_gpu_tensor_covers(&p, t, why, sizeof why));
        p.q = NULL;
        p.head_dim = 128;
        CHECK(kiln_gpu_tensor_covers(&p, t, why, sizeof why));
        CHECK(kiln_gpu_tensor_covers(&p, kiln_target_find("gfx942"), why, sizeof why));
        CHECK(!kiln_gpu_tensor_covers(&p, NULL, why, sizeof why));
        CHECK(strstr(why, "WMMA or MFMA") != NULL);
        p.k_stride_row = 132; /* rows 8-byte aligned only */
        CHECK(!kiln_gpu_tensor_covers(&p, t, why, sizeof why));
        p.k_stride_row = 128;
        p.v = (const void *)(uintptr_t)72;
        CHECK(!kiln_gpu_tensor_covers(&p, t, why, sizeof why));
        p.v = p.k;
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_TENSOR);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_WANT_GENERIC, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_GENERIC);
        check_note_ran();
    }

    check_case("hopper tier choice");
    {
        /* The rules of src/gpu/variants.h: sm_90 only; f16 / bf16, head_dim 64, 128 or 256
         * (256 without a window), fixed-length; 16-byte aligned q, k, v, out and strides in multiples of 8; auto
         * takes it from seqlen_q 64 on, else the tensor tier. */
        const kiln_target *h100 = kiln_target_find("sm_90");
        kiln_attn_problem p;
        kiln_gpu_variant v;
        char key[128];
        size_t nv, hopper = 0;
        kiln_gpu_variant *list;
        memset(&p, 0, sizeof p);
        p.mode = KILN_MODE_FIXED;
        p.dtype = KILN_BF16;
        p.batch = 2;
        p.heads_q = 8;
        p.heads_kv = 2;
        p.head_dim = 128;
        p.seqlen_q = 300;
        p.seqlen_k = 500;
        p.q = p.k = p.v = (const void *)(uintptr_t)256;
        p.out = (void *)(uintptr_t)4096;
        p.q_stride_row = p.k_stride_row = p.v_stride_row = p.o_stride_row = 1024;
        p.q_stride_head = p.k_stride_head = p.v_stride_head = p.o_stride_head = 128;
        p.q_stride_batch = p.k_stride_batch = p.v_stride_batch = p.o_stride_batch = 1 << 20;
        p.window_left = p.window_right = -1;
        CHECK(kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        CHECK(!kiln_gpu_hopper_covers(&p, t, why, sizeof why)); /* sm_80 */
        CHECK(strstr(why, "sm_90") != NULL);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, h100, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_HOPPER);
        kiln_gpu_variant_key(&v, key, sizeof key);
        CHECK_STR_EQ(key, "attn_fwd.bf16.d128.full.fixed.hopper");
        CHECK_STR_EQ(kiln_gpu_variant_file(&v), "attention_hopper.cu");
        CHECK_STR_EQ(kiln_gpu_variant_tier_name(&v), "hopper");
        {
            /* Head dim 64 without a mask takes the long variant (three consumers, 192-row
             * query tiles) from 4096 keys per split on; other masks and head dim 128 never
             * do. */
            kiln_attn_problem w = p;
            kiln_gpu_defines defs;
            int n, found = 0;
            w.head_dim = 64;
            unsigned grid[3], block[3];
            w.head_dim = 64;
            w.seqlen_q = 1000;
            w.seqlen_k = KILN_HOPPER_LONG_MIN_KEYS - 8;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 0);
            CHECK_EQ(kiln_gpu_variant_threads(&v), 384);
            kiln_gpu_variant_key(&v, key, sizeof key);
            CHECK_STR_EQ(key, "attn_fwd.bf16.d64.full.fixed.hopper");
            w.seqlen_k = KILN_HOPPER_LONG_MIN_KEYS;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 1);
            kiln_gpu_variant_key(&v, key, sizeof key);
            CHECK_STR_EQ(key, "attn_fwd.bf16.d64.full.fixed.q192.hopper");
            CHECK_EQ(kiln_gpu_hopper_block_k(&v), KILN_HOPPER_BLOCK_K(64, 0));
            CHECK_EQ(kiln_gpu_variant_threads(&v), 512);
            CHECK_EQ(kiln_gpu_variant_dynamic_smem(&v), KILN_HOPPER_SMEM_BYTES(64, 0, 1));
            CHECK(kiln_gpu_variant_dynamic_smem(&v) <= h100->shared_max_bytes);
            {
                /* 1000 rows in tiles of 192: 6 of them (before the persistent grid). */
                kiln_attn_args aa;
                kiln_gpu_attn_args(&aa, &w, 1, NULL);
                CHECK_OK(kiln_gpu_attn_grid_for(&v, &aa, grid, block));
                CHECK_EQ(grid[0], 6);
                CHECK_EQ(block[0], 512);
            }
            n = kiln_gpu_variant_defines(&v, &defs);
            for (int i = 0; i < n; ++i) found |= strcmp(defs.ptr[i], "-DKILN_HOPPER_LONG=1") == 0;
            CHECK(found);
            w.causal = 1;
            w.window_right = 0;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            kiln_gpu_variant_key(&v, key, sizeof key);
            CHECK_STR_EQ(key, "attn_fwd.bf16.d64.causal.fixed.q192.hopper");
            CHECK_EQ(kiln_gpu_variant_threads(&v), 512);
            w.head_dim = 128;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 0);
            CHECK_EQ(kiln_gpu_variant_threads(&v), 384);
            w.head_dim = 64;
            w.window_left = 256; /* a window: never the long variant */
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 0);
            w.causal = 0;
            w.window_left = w.window_right = -1;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            {
                kiln_gpu_variant narrow = v;
                narrow.wide = 0;
                CHECK(kiln_gpu_variant_id(&narrow) != kiln_gpu_variant_id(&v));
            }
            w.num_splits = 2; /* 2048 keys per split */
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 0);
            w.causal = 1;
            w.window_right = 0;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 0); /* causal, 2048 keys per split */
            w.num_splits = 1;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 1);
            w.causal = 0;
            w.window_right = -1;
            w.head_dim = 128;
            CHECK_OK(kiln_gpu_variant_for_attn_tier(&w, h100, KILN_GPU_TIER_AUTO, &v));
            CHECK_EQ(v.wide, 0);
        }
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_TENSOR);
        CHECK_STATUS(kiln_gpu_variant_for_attn_tier(&p, t, KILN_GPU_TIER_WANT_HOPPER, &v),
                     KILN_UNSUPPORTED);
        p.seqlen_q = 1; /* decode-sized q: the tensor tier under auto, hopper when forced */
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, h100, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_TENSOR);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, h100, KILN_GPU_TIER_WANT_HOPPER, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_HOPPER);
        p.seqlen_q = 300;
        p.mode = KILN_MODE_VARLEN;
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        CHECK(strstr(why, "varlen") != NULL);
        CHECK_STATUS(kiln_gpu_variant_for_attn_tier(&p, h100, KILN_GPU_TIER_WANT_HOPPER, &v),
                     KILN_UNSUPPORTED);
        CHECK_STR_CONTAINS(kiln_last_error(), "KILN_GPU_TIER=hopper");
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, h100, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_TENSOR);
        p.mode = KILN_MODE_PAGED;
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        p.mode = KILN_MODE_FIXED;
        p.head_dim = 96;
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        CHECK(strstr(why, "head_dim") != NULL);
        /* Head dim 256 without a mask and causal; a window runs on the tensor tier. */
        p.head_dim = 256;
        CHECK(kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, h100, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_HOPPER);
        CHECK_EQ(v.wide, 0);
        kiln_gpu_variant_key(&v, key, sizeof key);
        CHECK_STR_EQ(key, "attn_fwd.bf16.d256.full.fixed.hopper");
        CHECK_EQ(kiln_gpu_hopper_block_k(&v), 64);
        CHECK_EQ(kiln_gpu_variant_dynamic_smem(&v), KILN_HOPPER_SMEM_BYTES(256, 0, 0));
        CHECK(kiln_gpu_variant_dynamic_smem(&v) <= h100->shared_max_bytes);
        p.causal = 1;
        p.window_right = 0;
        CHECK(kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        p.window_left = 100;
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        CHECK(strstr(why, "window") != NULL);
        CHECK_OK(kiln_gpu_variant_for_attn_tier(&p, h100, KILN_GPU_TIER_AUTO, &v));
        CHECK_EQ(v.tier, KILN_GPU_TIER_ID_TENSOR);
        p.causal = 0;
        p.window_left = p.window_right = -1;
        p.head_dim = 64;
        CHECK(kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        p.dtype = KILN_F32;
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        p.dtype = KILN_F16;
        p.q_stride_head = 68; /* rows 8-byte aligned only */
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        CHECK(strstr(why, "16-byte") != NULL);
        p.q_stride_head = 64;
        p.out = (void *)(uintptr_t)4104;
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        p.out = (void *)(uintptr_t)4096;
        p.seqlen_k = (int64_t)1 << 29;
        CHECK(!kiln_gpu_hopper_covers(&p, h100, why, sizeof why));
        p.seqlen_k = 500;
        CHECK(kiln_gpu_hopper_covers(&p, h100, why, sizeof why));

        /* 20 hopper variants on sm_90 (f16 / bf16 x d64 / d128 x 3 masks and d256 x 2 (no
         * window), fixed, and the long d64 full and causal ones), none on sm_80. */
        nv = kiln_gpu_variant_list(h100, NULL, 0);
        list = malloc(nv * sizeof *list);
        kiln_gpu_variant_list(h100, list, nv);
        for (size_t i = 0; i < nv; ++i) hopper += list[i].tier == KILN_GPU_TIER_ID_HOPPER;
        CHECK_EQ(hopper, 20);
        free(list);
        nv = kiln_gpu_variant_list(t, NULL, 0);
        list = malloc(nv * sizeof *list);
        kiln_gpu_variant_list(t, list, nv);
        hopper = 0;
        for (size_t i = 0; i < nv; ++i) hopper += list[i].tier == KILN_GPU_TIER_ID_HOPPER;
        CHECK_EQ(hopper, 0);
        free(list);
        check_note_ran();
    }
    for (int act = 0; act < 3; ++act)
        for (int dt = 0; dt < 3; ++dt) {
            run_act((kiln_activation)act, (kiln_dtype)dt, 6, 300);
            run_act((kiln_activation)act, (kiln_dtype)dt, 4, 512);
        }
    return check_finish("test_kernel_emulation");
}
