#include "check_cases.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "context.h"
#include "dtypes.h"
#include "reference.h"
#include "variant_key.h"

#define MAX_BATCH 8

/* One attention case. Lengths per sequence: lens_q / lens_k for packed layouts, else the
 * fixed seqlen_q / seqlen_k. */
typedef struct attn_spec {
    const char *op;
    kiln_attn_mode mode;
    int packed_q; /* VARLEN always; PAGED: batch prefill (else decode) */
    int64_t batch, heads_q, heads_kv, head_dim;
    int64_t seqlen_q, seqlen_k;
    int32_t lens_q[MAX_BATCH], lens_k[MAX_BATCH];
    int64_t page_size;
    int causal, window_left, window_right, alibi;
    float softcap, scale;
    int32_t num_splits;
} attn_spec;

/* Everything a case allocates, freed in one place whatever happened. */
enum { A_Q, A_K, A_V, A_OUT, A_LSE, A_CUQ, A_CUK, A_BT, A_SEQK, A_ALIBI, A_COUNT };
static const char *const array_names[A_COUNT] = {
    "q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_k", "block_table", "seqlens_k",
    "alibi_slopes"};

typedef struct case_arrays {
    kiln_context *ctx;
    tool_array a[A_COUNT];
} case_arrays;

static void arrays_free(case_arrays *c) {
    for (int i = 0; i < A_COUNT; i++) tool_array_free(c->ctx, &c->a[i]);
}

static int alloc(case_arrays *c, int which, kiln_dtype dt, int64_t count) {
    return tool_array_alloc(c->ctx, &c->a[which], array_names[which], dt, count);
}

static int64_t gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void fail_row(check_row *row, const char *what, kiln_status st) {
    row->pass = 0;
    row->err = NAN;
    snprintf(row->error, sizeof row->error, "%s: %s: %s", what, kiln_status_string(st),
             kiln_last_error());
}

/* |got - want| where both may be -inf (a row with no visible key): equal infinities agree. */
static double diff(double got, double want) {
    if (got == want) return 0.0;
    double e = fabs(got - want);
    return e == e ? e : INFINITY;
}

/* snprintf at the end of what buf holds; output past cap is cut off. */
static void appendf(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void appendf(char *buf, size_t cap, const char *fmt, ...) {
    size_t len = strlen(buf);
    va_list ap;
    if (len + 1 >= cap) return;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

static void append_lens(char *buf, size_t cap, const char *name, const int32_t *lens,
                        int64_t n) {
    appendf(buf, cap, "%s", name);
    for (int64_t b = 0; b < n; b++) appendf(buf, cap, "%s%d", b ? "," : "", (int)lens[b]);
}

static void describe_attn(const attn_spec *s, char *buf, size_t cap) {
    buf[0] = '\0';
    appendf(buf, cap, "b%lld ", (long long)s->batch);
    if (s->mode == KILN_MODE_VARLEN || s->packed_q)
        append_lens(buf, cap, "sq", s->lens_q, s->batch);
    else
        appendf(buf, cap, "sq%lld", (long long)s->seqlen_q);
    if (s->mode == KILN_MODE_FIXED) appendf(buf, cap, " sk%lld", (long long)s->seqlen_k);
    else append_lens(buf, cap, " sk", s->lens_k, s->batch);
    if (s->mode == KILN_MODE_PAGED) appendf(buf, cap, " page%lld", (long long)s->page_size);
    appendf(buf, cap, " h%lld/%lld d%lld", (long long)s->heads_q, (long long)s->heads_kv,
            (long long)s->head_dim);
    if (s->causal) appendf(buf, cap, " causal");
    if (s->window_left >= 0 || s->window_right >= 0)
        appendf(buf, cap, " win%d,%d", s->window_left, s->window_right);
    if (s->softcap > 0) appendf(buf, cap, " cap%g", (double)s->softcap);
    if (s->alibi) appendf(buf, cap, " alibi");
    if (s->num_splits) appendf(buf, cap, " splits%d", (int)s->num_splits);
}

static void run_attention(kiln_context *ctx, const attn_spec *s, kiln_dtype dt, uint64_t *seed,
                          check_row *row) {
    case_arrays c = {ctx, {{0}}};
    const int64_t B = s->batch, H = s->heads_q, Hk = s->heads_kv, D = s->head_dim;
    const int packed_q = s->mode == KILN_MODE_VARLEN || s->packed_q;
    int64_t total_q = 0, total_k = 0, max_q = 0, max_k = 0, pages_used = 0, max_pages = 1;
    for (int64_t b = 0; b < B; b++) {
        int64_t lq = packed_q ? s->lens_q[b] : s->seqlen_q;
        int64_t lk = s->mode == KILN_MODE_FIXED ? s->seqlen_k : s->lens_k[b];
        total_q += lq;
        total_k += lk;
        if (lq > max_q) max_q = lq;
        if (lk > max_k) max_k = lk;
        if (s->mode == KILN_MODE_PAGED) {
            int64_t np = (lk + s->page_size - 1) / s->page_size;
            pages_used += np;
            if (np > max_pages) max_pages = np;
        }
    }
    /* Spare pages nobody references: a kernel reading past a sequence's pages would pick
     * up their (different) values. */
    const int64_t num_pages = pages_used + 2;
    const int64_t rows_kv = s->mode == KILN_MODE_PAGED ? num_pages * s->page_size : total_k;

    row->tol = tool_tolerance(dt);
    describe_attn(s, row->shape, sizeof row->shape);
    if (alloc(&c, A_Q, dt, total_q * H * D) || alloc(&c, A_K, dt, rows_kv * Hk * D) ||
        alloc(&c, A_V, dt, rows_kv * Hk * D) || alloc(&c, A_OUT, dt, total_q * H * D) ||
        alloc(&c, A_LSE, KILN_F32, total_q * H) || alloc(&c, A_CUQ, KILN_I32, B + 1) ||
        alloc(&c, A_CUK, KILN_I32, B + 1) || alloc(&c, A_BT, KILN_I32, B * max_pages) ||
        alloc(&c, A_SEQK, KILN_I32, B) || alloc(&c, A_ALIBI, KILN_F32, H)) {
        fail_row(row, "allocation", KILN_OUT_OF_MEMORY);
        arrays_free(&c);
        return;
    }
    tool_array_fill(&c.a[A_Q], seed, -2.0, 2.0);
    tool_array_fill(&c.a[A_K], seed, -1.0, 1.0);
    tool_array_fill(&c.a[A_V], seed, -1.0, 1.0);
    /* Outputs start far from any valid value, so an element left unwritten fails. */
    tool_array_fill(&c.a[A_OUT], seed, 5.0, 6.0);
    tool_array_fill(&c.a[A_LSE], seed, 40.0, 50.0);

    int32_t *cuq = c.a[A_CUQ].host, *cuk = c.a[A_CUK].host, *bt = c.a[A_BT].host;
    int32_t *seqk = c.a[A_SEQK].host;
    float *slopes = c.a[A_ALIBI].host;
    cuq[0] = cuk[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        cuq[b + 1] = cuq[b] + (packed_q ? s->lens_q[b] : (int32_t)s->seqlen_q);
        seqk[b] = s->mode == KILN_MODE_FIXED ? (int32_t)s->seqlen_k : s->lens_k[b];
        cuk[b + 1] = cuk[b] + seqk[b];
    }
    for (int64_t h = 0; h < H; h++)
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)H);
    if (s->mode == KILN_MODE_PAGED) {
        /* The pages in use are handed out in a scrambled order (a stride coprime with their
         * count); slots past a sequence's last page name a spare page no sequence uses. */
        int64_t next = 0, stride = 7;
        while (gcd(stride, pages_used) != 1) stride++;
        for (int64_t b = 0; b < B; b++) {
            const int64_t np = (seqk[b] + s->page_size - 1) / s->page_size;
            for (int64_t p = 0; p < max_pages; p++)
                bt[b * max_pages + p] =
                    (int32_t)(p < np ? (next++ * stride) % pages_used : num_pages - 1);
        }
    }
    for (int i = 0; i < A_COUNT; i++)
        if (tool_array_upload(ctx, &c.a[i])) {
            fail_row(row, "upload", KILN_DEVICE_ERROR);
            arrays_free(&c);
            return;
        }

    /* Shapes, shared by the device views and the host views the reference reads. */
    const int64_t q4[4] = {B, s->seqlen_q, H, D}, q3[3] = {total_q, H, D};
    const int64_t k4[4] = {B, s->seqlen_k, Hk, D}, k3[3] = {total_k, Hk, D};
    const int64_t kp[4] = {num_pages, s->page_size, Hk, D};
    const int64_t l3[3] = {B, H, s->seqlen_q}, l2[2] = {H, total_q};
    const int64_t nb1[1] = {B + 1}, nb[1] = {B}, bts[2] = {B, max_pages}, nh[1] = {H};
    const int64_t *kshape = s->mode == KILN_MODE_FIXED   ? k4
                            : s->mode == KILN_MODE_PAGED ? kp
                                                         : k3;
    const int32_t krank = s->mode == KILN_MODE_VARLEN ? 3 : 4;
    kiln_tensor dev[A_COUNT], host[A_COUNT];
    for (int pass = 0; pass < 2; pass++) {
        kiln_tensor *t = pass ? host : dev;
        kiln_tensor (*view)(const tool_array *, int32_t, const int64_t *) =
            pass ? tool_host_view : tool_view;
        t[A_Q] = packed_q ? view(&c.a[A_Q], 3, q3) : view(&c.a[A_Q], 4, q4);
        t[A_OUT] = packed_q ? view(&c.a[A_OUT], 3, q3) : view(&c.a[A_OUT], 4, q4);
        t[A_LSE] = packed_q ? view(&c.a[A_LSE], 2, l2) : view(&c.a[A_LSE], 3, l3);
        t[A_K] = view(&c.a[A_K], krank, kshape);
        t[A_V] = view(&c.a[A_V], krank, kshape);
        t[A_CUQ] = view(&c.a[A_CUQ], 1, nb1);
        t[A_CUK] = view(&c.a[A_CUK], 1, nb1);
        t[A_BT] = view(&c.a[A_BT], 2, bts);
        t[A_SEQK] = view(&c.a[A_SEQK], 1, nb);
        t[A_ALIBI] = view(&c.a[A_ALIBI], 1, nh);
    }

    kiln_attention_params prm;
    kiln_attention_params_init(&prm);
    prm.softmax_scale = s->scale;
    prm.causal = s->causal;
    prm.window_left = s->window_left;
    prm.window_right = s->window_right;
    prm.softcap = s->softcap;
    prm.num_splits = s->num_splits;
    if (s->alibi) prm.alibi_slopes = dev[A_ALIBI];

    kiln_status st = KILN_OK;
    switch (s->mode) {
    case KILN_MODE_FIXED:
        st = kiln_attention_fwd(ctx, &dev[A_Q], &dev[A_K], &dev[A_V], &dev[A_OUT], &dev[A_LSE],
                                &prm, NULL);
        break;
    case KILN_MODE_VARLEN:
        st = kiln_attention_fwd_varlen(ctx, &dev[A_Q], &dev[A_K], &dev[A_V], &dev[A_CUQ],
                                       &dev[A_CUK], max_q, max_k, &dev[A_OUT], &dev[A_LSE],
                                       &prm, NULL);
        break;
    case KILN_MODE_PAGED:
        st = kiln_attention_fwd_paged(ctx, &dev[A_Q], &dev[A_K], &dev[A_V], &dev[A_BT],
                                      &dev[A_SEQK], packed_q ? &dev[A_CUQ] : NULL, max_q,
                                      &dev[A_OUT], &dev[A_LSE], &prm, NULL);
        break;
    }
    if (st == KILN_OK) {
        kiln_dispatch_init(&row->ran);
        kiln_last_dispatch(&row->ran);
    }
    if (st != KILN_OK || (st = kiln_ctx_synchronize(ctx, NULL)) != KILN_OK) {
        fail_row(row, "the call", st);
        arrays_free(&c);
        return;
    }
    if (tool_array_download(ctx, &c.a[A_OUT]) || tool_array_download(ctx, &c.a[A_LSE])) {
        fail_row(row, "download", KILN_DEVICE_ERROR);
        arrays_free(&c);
        return;
    }

    if (s->alibi) prm.alibi_slopes = host[A_ALIBI];
    kiln_attn_problem p;
    kiln_ref_attn_problem(&p, s->mode, &host[A_Q], &host[A_K], &host[A_V],
                          packed_q ? &host[A_CUQ] : NULL,
                          s->mode == KILN_MODE_VARLEN ? &host[A_CUK] : NULL,
                          s->mode == KILN_MODE_PAGED ? &host[A_BT] : NULL,
                          s->mode == KILN_MODE_PAGED ? &host[A_SEQK] : NULL, max_q, max_k,
                          &host[A_OUT], &host[A_LSE], &prm);
    double *want = calloc((size_t)(total_q * H * D + 1), sizeof *want);
    double *want_lse = calloc((size_t)(total_q * H + 1), sizeof *want_lse);
    if (!want || !want_lse || kiln_ref_attention(&p, want, want_lse) != KILN_OK) {
        fail_row(row, "reference", KILN_OUT_OF_MEMORY);
    } else {
        double err = 0.0;
        const float *lse = c.a[A_LSE].host;
        for (int64_t i = 0; i < total_q * H * D; i++) {
            double e = diff(kiln_ref_load(dt, c.a[A_OUT].host, i), want[i]);
            if (e > err) err = e;
        }
        /* LSE: [batch, heads, seqlen_q] for dense q, [heads, total_q] for packed q. */
        for (int64_t r = 0; r < total_q; r++)
            for (int64_t h = 0; h < H; h++) {
                int64_t at = packed_q ? h * total_q + r
                                      : ((r / s->seqlen_q) * H + h) * s->seqlen_q +
                                            r % s->seqlen_q;
                double e = diff((double)lse[at], want_lse[r * H + h]);
                if (e > err) err = e;
            }
        row->err = err;
        row->pass = err <= row->tol;
    }
    free(want);
    free(want_lse);
    arrays_free(&c);
}

static void run_activation(kiln_context *ctx, kiln_activation act, kiln_dtype dt,
                           uint64_t *seed, check_row *row) {
    /* A rank-3 x with a width no vector length divides, so the tails run too. */
    const int64_t xs[3] = {3, 5, 2 * 100}, os[3] = {3, 5, 100};
    tool_array x, out;
    row->tol = tool_tolerance(dt);
    snprintf(row->shape, sizeof row->shape, "x [3, 5, 200] -> out [3, 5, 100]");
    if (tool_array_alloc(ctx, &x, "x", dt, 3 * 5 * 200) ||
        tool_array_alloc(ctx, &out, "out", dt, 3 * 5 * 100)) {
        tool_array_free(ctx, &x);
        fail_row(row, "allocation", KILN_OUT_OF_MEMORY);
        return;
    }
    tool_array_fill(&x, seed, -1.0, 1.0);
    tool_array_fill(&out, seed, 5.0, 6.0);
    kiln_tensor tx = tool_view(&x, 3, xs), to = tool_view(&out, 3, os);
    kiln_status st = KILN_DEVICE_ERROR;
    if (!tool_array_upload(ctx, &x) && !tool_array_upload(ctx, &out)) {
        st = kiln_act_and_mul(ctx, act, &tx, &to, NULL);
        if (st == KILN_OK) {
            kiln_dispatch_init(&row->ran);
            kiln_last_dispatch(&row->ran);
        }
        if (st == KILN_OK) st = kiln_ctx_synchronize(ctx, NULL);
        if (st == KILN_OK && tool_array_download(ctx, &out)) st = KILN_DEVICE_ERROR;
    }
    if (st != KILN_OK) {
        fail_row(row, "the call", st);
    } else {
        kiln_tensor hx = tool_host_view(&x, 3, xs), ho = tool_host_view(&out, 3, os);
        kiln_act_problem p;
        double want[3 * 5 * 100];
        kiln_ref_act_problem(&p, act, &hx, &ho);
        kiln_ref_act_and_mul(&p, want);
        double err = 0.0;
        for (int64_t i = 0; i < 3 * 5 * 100; i++) {
            double e = diff(kiln_ref_load(dt, out.host, i), want[i]);
            if (e > err) err = e;
        }
        row->err = err;
        row->pass = err <= row->tol;
    }
    tool_array_free(ctx, &x);
    tool_array_free(ctx, &out);
}

/* clang-format off */
static const attn_spec attn_cases[] = {
    {.op = "attention fixed", .mode = KILN_MODE_FIXED, .batch = 2, .heads_q = 4, .heads_kv = 4,
     .head_dim = 64, .seqlen_q = 37, .seqlen_k = 37, .window_left = -1, .window_right = -1},
    {.op = "attention fixed", .mode = KILN_MODE_FIXED, .batch = 2, .heads_q = 8, .heads_kv = 2,
     .head_dim = 128, .seqlen_q = 33, .seqlen_k = 70, .causal = 1, .window_left = -1,
     .window_right = -1},
    /* More queries than keys: the first rows see no key (output 0, LSE -inf). */
    {.op = "attention fixed", .mode = KILN_MODE_FIXED, .batch = 1, .heads_q = 2, .heads_kv = 1,
     .head_dim = 32, .seqlen_q = 40, .seqlen_k = 24, .causal = 1, .window_left = -1,
     .window_right = -1},
    {.op = "attention fixed", .mode = KILN_MODE_FIXED, .batch = 2, .heads_q = 4, .heads_kv = 2,
     .head_dim = 80, .seqlen_q = 29, .seqlen_k = 50, .window_left = 16, .window_right = 4,
     .softcap = 1.5f, .scale = 0.5f, .alibi = 1},
    {.op = "attention varlen", .mode = KILN_MODE_VARLEN, .batch = 4, .heads_q = 4,
     .heads_kv = 2, .head_dim = 64, .lens_q = {5, 0, 17, 1}, .lens_k = {9, 0, 30, 1},
     .causal = 1, .window_left = -1, .window_right = -1},
    {.op = "attention paged decode", .mode = KILN_MODE_PAGED, .batch = 3, .heads_q = 8,
     .heads_kv = 2, .head_dim = 128, .seqlen_q = 1, .lens_k = {37, 64, 5}, .page_size = 16,
     .window_left = -1, .window_right = -1},
    {.op = "attention paged prefill", .mode = KILN_MODE_PAGED, .packed_q = 1, .batch = 3,
     .heads_q = 4, .heads_kv = 4, .head_dim = 64, .lens_q = {3, 8, 1}, .lens_k = {20, 40, 7},
     .page_size = 16, .causal = 1, .window_left = -1, .window_right = -1},
    {.op = "attention split-kv", .mode = KILN_MODE_FIXED, .batch = 2, .heads_q = 4,
     .heads_kv = 2, .head_dim = 64, .seqlen_q = 3, .seqlen_k = 300, .causal = 1,
     .window_left = -1, .window_right = -1, .num_splits = 4},
    {.op = "attention split-kv", .mode = KILN_MODE_PAGED, .batch = 3, .heads_q = 8,
     .heads_kv = 2, .head_dim = 128, .seqlen_q = 2, .lens_k = {150, 64, 5}, .page_size = 32,
     .window_left = -1, .window_right = -1, .num_splits = 3},
};
/* clang-format on */

static const kiln_activation acts[] = {KILN_ACT_SILU, KILN_ACT_GELU, KILN_ACT_GELU_TANH};

int check_run_all(kiln_context *ctx, const char *backend, kiln_dtype dtype, check_sink sink,
                  void *user) {
    int failed = 0;
    /* A fixed seed per dtype: a failing case reproduces run after run. */
    uint64_t seed = 0x636865636bull + (uint64_t)dtype;
    /* Attention in fp32 is CPU-only by design (kiln.h); activations take fp32 everywhere. */
    const int attention = dtype != KILN_F32 || kiln_context_backend(ctx) == KILN_BACKEND_CPU;
    for (size_t i = 0; attention && i < sizeof attn_cases / sizeof attn_cases[0]; i++) {
        check_row row = {0};
        snprintf(row.op, sizeof row.op, "%s", attn_cases[i].op);
        snprintf(row.backend, sizeof row.backend, "%s", backend);
        row.dtype = dtype;
        run_attention(ctx, &attn_cases[i], dtype, &seed, &row);
        failed += !row.pass;
        sink(&row, user);
    }
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        check_row row = {0};
        snprintf(row.op, sizeof row.op, "%s_and_mul", kiln_activation_name(acts[i]));
        snprintf(row.backend, sizeof row.backend, "%s", backend);
        row.dtype = dtype;
        run_activation(ctx, acts[i], dtype, &seed, &row);
        failed += !row.pass;
        sink(&row, user);
    }
    return failed;
}
