/*
 * The structure growth rule (kiln.h, "Structures that grow") seen from a program built
 * against kiln 0.1's header, which had no struct_size fields. This file keeps a copy of the
 * 0.1 layouts (kiln.h at a749547) and hands such structures to today's library, as that
 * program would: each one must be refused with KILN_ABI_MISMATCH naming the argument, with
 * nothing written (outputs keep their sentinel bytes, and no byte past an old structure's
 * end is touched). Structures filled by today's *_init functions are accepted, and sizes
 * the library does not know (0, a newer header's) are refused the same way.
 *
 * On Linux and macOS it links the shared library, like the programs it stands for.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "test_check.h"

/* ---- kiln.h 0.1 (a749547): the layouts as a program built then laid them out ---------- */

typedef struct v01_tensor {
    void *data;
    int dtype;
    int32_t rank;
    int64_t shape[4];
    int64_t stride[4];
} v01_tensor;

typedef struct v01_attention_params {
    float softmax_scale;
    int32_t causal;
    int32_t window_left;
    int32_t window_right;
    float softcap;
    v01_tensor alibi_slopes;
    int32_t num_splits;
    void *workspace;
    size_t workspace_size;
    void *stream;
} v01_attention_params;

typedef struct v01_dispatch {
    int backend;
    char target[32];
    char tier[16];
    char variant[128];
    int32_t num_splits;
} v01_dispatch;

/* 0.1's sizes on LP64 / LLP64, so a mistake in the copy above shows. */
_Static_assert(sizeof(void *) != 8 || sizeof(v01_tensor) == 80, "0.1 kiln_tensor layout");
_Static_assert(sizeof(void *) != 8 || sizeof(v01_attention_params) == 136,
               "0.1 kiln_attention_params layout");
_Static_assert(sizeof(v01_dispatch) == 184, "0.1 kiln_dispatch layout");

/* ---- fixture ---------------------------------------------------------------------------- */

enum { B = 1, S = 4, H = 2, D = 8, N = B * S * H * D };
#define SENTINEL 0x5A

static uint16_t qd[N], kd[N], vd[N], od[N], xd[2 * N], yd[N];
static const int64_t shape[4] = {B, S, H, D};

static void v01_contiguous(v01_tensor *t, void *data, int dtype, int rank, const int64_t *sh) {
    int64_t stride = 1;
    memset(t, 0, sizeof *t);
    t->data = data;
    t->dtype = dtype;
    t->rank = rank;
    for (int i = rank - 1; i >= 0; i--) {
        t->shape[i] = sh[i];
        t->stride[i] = stride;
        stride *= sh[i];
    }
}

static void fill(void) {
    for (int i = 0; i < N; i++) {
        qd[i] = kd[i] = vd[i] = (uint16_t)(0x3C00 + (i % 7)); /* small f16 values */
        xd[i] = xd[N + i] = (uint16_t)(0x3800 + (i % 5));
    }
}

/* The refusal every case expects: ABI_MISMATCH, a message naming the argument and its
 * struct_size, and out unchanged. */
static void expect_refused(kiln_status st, const char *arg, const void *out, size_t n) {
    static unsigned char sentinel[sizeof od > sizeof(kiln_dispatch) ? sizeof od
                                                                    : sizeof(kiln_dispatch)];
    memset(sentinel, SENTINEL, sizeof sentinel);
    CHECK_STATUS(st, KILN_ABI_MISMATCH);
    CHECK_STR_CONTAINS(kiln_last_error(), arg);
    CHECK_STR_CONTAINS(kiln_last_error(), "struct_size");
    CHECK_MEM_EQ(out, sentinel, n);
}

static void new_views(kiln_tensor *q, kiln_tensor *k, kiln_tensor *v, kiln_tensor *o) {
    kiln_tensor_contiguous(q, qd, KILN_F16, 4, shape);
    kiln_tensor_contiguous(k, kd, KILN_F16, 4, shape);
    kiln_tensor_contiguous(v, vd, KILN_F16, 4, shape);
    kiln_tensor_contiguous(o, od, KILN_F16, 4, shape);
    memset(od, SENTINEL, sizeof od);
}

static void old_tensors(kiln_context *ctx) {
    kiln_tensor q, k, v, o;
    v01_tensor old;

    check_case("a 0.1 kiln_tensor as q, k, v, out");
    v01_contiguous(&old, qd, KILN_F16, 4, shape);
    const char *names[4] = {"q", "k", "v", "out"};
    for (int i = 0; i < 4; i++) {
        new_views(&q, &k, &v, &o);
        kiln_tensor *args[4] = {&q, &k, &v, &o};
        v01_tensor copy = old;
        if (i == 3) copy.data = od;
        args[i] = (kiln_tensor *)&copy;
        expect_refused(kiln_attention_fwd(ctx, args[0], args[1], args[2], args[3], NULL, NULL,
                                          NULL),
                       names[i], od, sizeof od);
    }

    check_case("a 0.1 kiln_tensor with no data (an empty view) as k");
    new_views(&q, &k, &v, &o);
    v01_tensor empty;
    int64_t zero_shape[4] = {B, 0, H, D};
    v01_contiguous(&empty, NULL, KILN_F16, 4, zero_shape);
    expect_refused(kiln_attention_fwd(ctx, &q, (kiln_tensor *)&empty, &v, &o, NULL, NULL, NULL),
                   "k", od, sizeof od);

    check_case("a 0.1 kiln_tensor as an activation's x and out");
    int64_t xs[2] = {B * S * H, 2 * D}, ys[2] = {B * S * H, D};
    v01_tensor ox, oy;
    kiln_tensor nx, ny;
    v01_contiguous(&ox, xd, KILN_F16, 2, xs);
    v01_contiguous(&oy, yd, KILN_F16, 2, ys);
    kiln_tensor_contiguous(&nx, xd, KILN_F16, 2, xs);
    kiln_tensor_contiguous(&ny, yd, KILN_F16, 2, ys);
    memset(yd, SENTINEL, sizeof yd);
    expect_refused(kiln_silu_and_mul(ctx, (kiln_tensor *)&ox, &ny, NULL), "x", yd, sizeof yd);
    expect_refused(kiln_silu_and_mul(ctx, &nx, (kiln_tensor *)&oy, NULL), "out", yd,
                   sizeof yd);

    check_case("a 0.1 kiln_tensor as lse");
    new_views(&q, &k, &v, &o);
    float lse_data[B * H * S];
    int64_t ls[3] = {B, H, S};
    v01_tensor olse;
    v01_contiguous(&olse, lse_data, KILN_F32, 3, ls);
    expect_refused(kiln_attention_fwd(ctx, &q, &k, &v, &o, (kiln_tensor *)&olse, NULL, NULL),
                   "lse", od, sizeof od);
    check_note_ran();
}

static void old_params(kiln_context *ctx) {
    kiln_tensor q, k, v, o;
    static const struct {
        float scale;
        int32_t causal;
    } settings[] = {{0.0f, 0}, {0.0f, 1}, {0.125f, 0}, {0.35355339f, 1}, {2.0f, 7}};

    check_case("a 0.1 kiln_attention_params");
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        v01_attention_params old;
        memset(&old, 0, sizeof old);
        old.softmax_scale = settings[i].scale;
        old.causal = settings[i].causal;
        old.window_left = old.window_right = -1;
        new_views(&q, &k, &v, &o);
        expect_refused(kiln_attention_fwd(ctx, &q, &k, &v, &o, NULL,
                                          (const kiln_attention_params *)&old, NULL),
                       "params", od, sizeof od);
    }

    check_case("kiln_attention_params with a 0.1 kiln_tensor as alibi_slopes");
    float slopes[H] = {0.5f, 0.25f};
    int64_t hs[1] = {H};
    kiln_attention_params prm;
    kiln_attention_params_init(&prm);
    v01_contiguous((v01_tensor *)&prm.alibi_slopes, slopes, KILN_F32, 1, hs);
    new_views(&q, &k, &v, &o);
    expect_refused(kiln_attention_fwd(ctx, &q, &k, &v, &o, NULL, &prm, NULL),
                   "params.alibi_slopes", od, sizeof od);
    check_note_ran();
}

static void old_dispatch(void) {
    /* An old report inside a larger buffer: nothing may be written, past its end or in it. */
    struct {
        v01_dispatch d;
        unsigned char after[128];
    } buf;

    check_case("a zeroed 0.1 kiln_dispatch");
    memset(&buf, SENTINEL, sizeof buf);
    memset(&buf.d, 0, sizeof buf.d);
    unsigned char before[sizeof buf];
    memcpy(before, &buf, sizeof buf);
    CHECK_STATUS(kiln_last_dispatch((kiln_dispatch *)&buf.d), KILN_ABI_MISMATCH);
    CHECK_STR_CONTAINS(kiln_last_error(), "struct_size");
    CHECK_MEM_EQ(&buf, before, sizeof buf);

    check_case("a 0.1 kiln_dispatch holding an earlier report");
    memset(&buf, SENTINEL, sizeof buf);
    buf.d.backend = KILN_BACKEND_CPU;
    strcpy(buf.d.target, "x86-64-avx2");
    strcpy(buf.d.tier, "cpu");
    strcpy(buf.d.variant, "attn_fwd.f16.d8.fixed.cpu");
    buf.d.num_splits = 1;
    memcpy(before, &buf, sizeof buf);
    CHECK_STATUS(kiln_last_dispatch((kiln_dispatch *)&buf.d), KILN_ABI_MISMATCH);
    CHECK_MEM_EQ(&buf, before, sizeof buf);

    check_case("a 0.1 kiln_dispatch of stack-like bytes");
    for (int fillv = 1; fillv < 256; fillv += 37) {
        memset(&buf, fillv, sizeof buf);
        memcpy(before, &buf, sizeof buf);
        CHECK_STATUS(kiln_last_dispatch((kiln_dispatch *)&buf.d), KILN_ABI_MISMATCH);
        CHECK_MEM_EQ(&buf, before, sizeof buf);
    }
    check_note_ran();
}

/* Sizes other than the library's own: 0 (not initialised) and a newer header's. */
static void unknown_sizes(kiln_context *ctx) {
    kiln_tensor q, k, v, o;
    kiln_attention_params prm;

    check_case("struct_size 0 and a newer size");
    const size_t sizes[2] = {0, sizeof(kiln_tensor) + 8};
    for (int i = 0; i < 2; i++) {
        new_views(&q, &k, &v, &o);
        q.struct_size = sizes[i];
        expect_refused(kiln_attention_fwd(ctx, &q, &k, &v, &o, NULL, NULL, NULL), "q", od,
                       sizeof od);
        new_views(&q, &k, &v, &o);
        kiln_attention_params_init(&prm);
        prm.struct_size = sizes[i] ? sizeof prm + 8 : 0;
        expect_refused(kiln_attention_fwd(ctx, &q, &k, &v, &o, NULL, &prm, NULL), "params", od,
                       sizeof od);
    }
    prm.struct_size = 0;
    CHECK_STATUS(kiln_attention_fwd(ctx, &q, &k, &v, &o, NULL, &prm, NULL), KILN_ABI_MISMATCH);
    CHECK_STR_CONTAINS(kiln_last_error(), "init");

    kiln_attention_plan plan;
    size_t bytes = 12345;
    kiln_attention_plan_init(&plan);
    plan.batch = plan.rows_q = plan.max_seqlen_q = 1;
    plan.max_seqlen_k = 64;
    plan.heads_q = plan.heads_kv = 1;
    plan.head_dim = D;
    plan.struct_size = 0;
    CHECK_STATUS(kiln_attention_workspace_size(ctx, &plan, &bytes), KILN_ABI_MISMATCH);
    CHECK_STR_CONTAINS(kiln_last_error(), "plan");
    CHECK_EQ(bytes, 12345);

    kiln_dispatch d;
    kiln_dispatch_init(&d);
    d.struct_size = sizeof d + 64;
    CHECK_STATUS(kiln_last_dispatch(&d), KILN_ABI_MISMATCH);
    check_note_ran();
}

/* What the *_init functions fill is accepted, and the report fills exactly its size. */
static void current_layout(kiln_context *ctx) {
    kiln_tensor q, k, v, o;
    kiln_attention_params prm;

    check_case("structures from today's kiln.h");
    kiln_tensor_init(&q);
    CHECK_EQ(q.struct_size, sizeof q);
    CHECK_EQ(q.data == NULL, 1);
    new_views(&q, &k, &v, &o);
    kiln_attention_params_init(&prm);
    CHECK_EQ(prm.struct_size, sizeof prm);
    CHECK_EQ(prm.alibi_slopes.struct_size, sizeof prm.alibi_slopes);
    CHECK_OK(kiln_attention_fwd(ctx, &q, &k, &v, &o, NULL, &prm, NULL));
    CHECK_OK(kiln_attention_fwd(ctx, &q, &k, &v, &o, NULL, NULL, NULL));

    struct {
        kiln_dispatch d;
        unsigned char after[64];
    } buf;
    memset(&buf, SENTINEL, sizeof buf);
    kiln_dispatch_init(&buf.d);
    CHECK_OK(kiln_last_dispatch(&buf.d));
    CHECK_EQ(buf.d.struct_size, sizeof buf.d);
    CHECK_EQ(buf.d.backend, KILN_BACKEND_CPU);
    CHECK_STR_CONTAINS(buf.d.variant, "attn_fwd");
    unsigned char zero[sizeof buf.d.reserved], sentinel[sizeof buf.after];
    memset(zero, 0, sizeof zero);
    memset(sentinel, SENTINEL, sizeof sentinel);
    CHECK_MEM_EQ(buf.d.reserved, zero, sizeof zero);
    CHECK_MEM_EQ(buf.after, sentinel, sizeof sentinel);
    check_note_ran();
}

int main(void) {
    kiln_context *ctx = NULL;
    fill();
    old_dispatch(); /* before any op, and again after one below */
    if (kiln_context_create(KILN_BACKEND_CPU, 0, &ctx) != KILN_OK) {
        check_case("CPU context");
        check_fail_(__FILE__, __LINE__, "kiln_context_create(cpu): %s", kiln_last_error());
        return check_finish("abi_old_layout");
    }
    old_tensors(ctx);
    old_params(ctx);
    unknown_sizes(ctx);
    current_layout(ctx);
    old_dispatch();
    kiln_context_free(ctx);
    return check_finish("abi_old_layout");
}
