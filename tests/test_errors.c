/*
 * Every argument check of the public API: each bad call returns its status, kiln_last_error()
 * names the offending argument, and no byte of any buffer (outputs included) changes.
 *
 * Each case starts from a valid fixture (checked once to succeed), breaks one thing, and
 * compares the whole arena the tensors live in before and after the call.
 */
#include <stdint.h>

#include "test_check.h"
#include "half.h"

#define ARENA_BYTES (64 * 1024)
#define SENTINEL 0xA5

typedef struct fixture {
    unsigned char *arena, *before;
    size_t used;
    kiln_context *ctx;
    kiln_attention_params prm;
    kiln_tensor q, k, v, out, lse, cu_q, cu_k, block_table, seqlens_k, alibi, x, y;
    int64_t max_q, max_k;
    void *ws;
} fixture;

static void *region(fixture *f, size_t bytes) {
    void *p = f->arena + f->used;
    f->used += (bytes + 63) & ~(size_t)63;
    if (f->used > ARENA_BYTES) {
        fprintf(stderr, "fixture arena too small\n");
        exit(1);
    }
    return p;
}

static void tensor(fixture *f, kiln_tensor *t, kiln_dtype dt, int32_t rank, int64_t a,
                   int64_t b, int64_t c, int64_t d) {
    const int64_t shape[4] = {a, b, c, d};
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) n *= shape[i];
    kiln_tensor_contiguous(t, region(f, (size_t)n * kiln_dtype_size(dt)), dt, rank, shape);
}

/* A workspace query's bounds (one at a time: the tests run on one thread). */
static const kiln_attention_plan *plan(int64_t batch, int64_t rows_q, int64_t max_seqlen_q,
                                       int64_t max_seqlen_k, int64_t heads_q, int64_t heads_kv,
                                       int64_t head_dim, int32_t num_splits) {
    static kiln_attention_plan p;
    kiln_attention_plan_init(&p);
    p.batch = batch;
    p.rows_q = rows_q;
    p.max_seqlen_q = max_seqlen_q;
    p.max_seqlen_k = max_seqlen_k;
    p.heads_q = heads_q;
    p.heads_kv = heads_kv;
    p.head_dim = head_dim;
    p.num_splits = num_splits;
    return &p;
}

static void fill_inputs(kiln_tensor *t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++) n *= t->shape[i];
    for (int64_t i = 0; i < n; i++) {
        float x = (float)((i * 37) % 17) / 17.0f - 0.5f;
        if (t->dtype == KILN_BF16) ((uint16_t *)t->data)[i] = kiln_f32_to_bf16(x);
        else if (t->dtype == KILN_F16) ((uint16_t *)t->data)[i] = kiln_f32_to_f16(x);
        else if (t->dtype == KILN_F32) ((float *)t->data)[i] = x;
    }
}

static void reset(fixture *f) {
    kiln_context *ctx = f->ctx;
    unsigned char *arena = f->arena, *before = f->before;
    memset(f, 0, sizeof *f);
    f->ctx = ctx, f->arena = arena, f->before = before;
    memset(f->arena, SENTINEL, ARENA_BYTES);
    kiln_attention_params_init(&f->prm);
}

static void set_i32(kiln_tensor *t, const int32_t *vals, int n) {
    memcpy(t->data, vals, (size_t)n * sizeof *vals);
}

/* Fixed: q/out [2, 3, 4, 8], k/v [2, 5, 2, 8] bf16, lse [2, 4, 3]. */
static void fixed(fixture *f) {
    reset(f);
    tensor(f, &f->q, KILN_BF16, 4, 2, 3, 4, 8);
    tensor(f, &f->k, KILN_BF16, 4, 2, 5, 2, 8);
    tensor(f, &f->v, KILN_BF16, 4, 2, 5, 2, 8);
    tensor(f, &f->out, KILN_BF16, 4, 2, 3, 4, 8);
    tensor(f, &f->lse, KILN_F32, 3, 2, 4, 3, 0);
    fill_inputs(&f->q), fill_inputs(&f->k), fill_inputs(&f->v);
    f->max_k = 5;
}

/* Varlen: q/out [6, 4, 8], k/v [9, 2, 8], cu_seqlens_q {0, 2, 6}, cu_seqlens_k {0, 4, 9}. */
static void varlen(fixture *f) {
    static const int32_t cq[3] = {0, 2, 6}, ck[3] = {0, 4, 9};
    reset(f);
    tensor(f, &f->q, KILN_BF16, 3, 6, 4, 8, 0);
    tensor(f, &f->k, KILN_BF16, 3, 9, 2, 8, 0);
    tensor(f, &f->v, KILN_BF16, 3, 9, 2, 8, 0);
    tensor(f, &f->out, KILN_BF16, 3, 6, 4, 8, 0);
    tensor(f, &f->lse, KILN_F32, 2, 4, 6, 0, 0);
    tensor(f, &f->cu_q, KILN_I32, 1, 3, 0, 0, 0);
    tensor(f, &f->cu_k, KILN_I32, 1, 3, 0, 0, 0);
    set_i32(&f->cu_q, cq, 3), set_i32(&f->cu_k, ck, 3);
    fill_inputs(&f->q), fill_inputs(&f->k), fill_inputs(&f->v);
    f->max_q = 4, f->max_k = 5;
}

/* Paged decode: caches [4, 16, 2, 8], block_table {{2, 0}, {3, 1}}, seqlens_k {20, 5},
 * q/out [2, 1, 4, 8], lse [2, 4, 1]. prefill: q/out [3, 4, 8], cu_seqlens_q {0, 2, 3}. */
static void paged(fixture *f, int prefill) {
    static const int32_t bt[4] = {2, 0, 3, 1}, sl[2] = {20, 5}, cq[3] = {0, 2, 3};
    reset(f);
    if (prefill) {
        tensor(f, &f->q, KILN_BF16, 3, 3, 4, 8, 0);
        tensor(f, &f->out, KILN_BF16, 3, 3, 4, 8, 0);
        tensor(f, &f->lse, KILN_F32, 2, 4, 3, 0, 0);
        tensor(f, &f->cu_q, KILN_I32, 1, 3, 0, 0, 0);
        set_i32(&f->cu_q, cq, 3);
        f->max_q = 2;
    } else {
        tensor(f, &f->q, KILN_BF16, 4, 2, 1, 4, 8);
        tensor(f, &f->out, KILN_BF16, 4, 2, 1, 4, 8);
        tensor(f, &f->lse, KILN_F32, 3, 2, 4, 1, 0);
    }
    tensor(f, &f->k, KILN_BF16, 4, 4, 16, 2, 8);
    tensor(f, &f->v, KILN_BF16, 4, 4, 16, 2, 8);
    tensor(f, &f->block_table, KILN_I32, 2, 2, 2, 0, 0);
    tensor(f, &f->seqlens_k, KILN_I32, 1, 2, 0, 0, 0);
    set_i32(&f->block_table, bt, 4), set_i32(&f->seqlens_k, sl, 2);
    f->max_k = 32;
    fill_inputs(&f->q), fill_inputs(&f->k), fill_inputs(&f->v);
}

/* Activation: x [3, 5, 16] -> out [3, 5, 8], bf16. */
static void act(fixture *f) {
    reset(f);
    tensor(f, &f->x, KILN_BF16, 3, 3, 5, 16, 0);
    tensor(f, &f->y, KILN_BF16, 3, 3, 5, 8, 0);
    fill_inputs(&f->x);
}

static void paged_decode(fixture *f) { paged(f, 0); }
static void paged_prefill(fixture *f) { paged(f, 1); }

static kiln_status run_fixed(fixture *f) {
    return kiln_attention_fwd(f->ctx, &f->q, &f->k, &f->v, &f->out, &f->lse, &f->prm, NULL);
}
static kiln_status run_varlen(fixture *f) {
    return kiln_attention_fwd_varlen(f->ctx, &f->q, &f->k, &f->v, &f->cu_q, &f->cu_k, f->max_q,
                                      f->max_k, &f->out, &f->lse, &f->prm, NULL);
}
static kiln_status run_paged(fixture *f) {
    return kiln_attention_fwd_paged(f->ctx, &f->q, &f->k, &f->v, &f->block_table, &f->seqlens_k,
                                    f->cu_q.data ? &f->cu_q : NULL, f->max_q, &f->out, &f->lse,
                                    &f->prm, NULL);
}
static kiln_status run_act(fixture *f) {
    return kiln_act_and_mul(f->ctx, KILN_ACT_SILU, &f->x, &f->y, NULL);
}

/* Does the message name one of the '|'-separated names as a whole word? */
static int names_one_of(const char *msg, const char *names) {
    char buf[128];
    const char *s = names;
    while (*s) {
        size_t n = strcspn(s, "|");
        if (n >= sizeof buf) n = sizeof buf - 1;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (check_has_word_(msg, buf)) return 1;
        s += n;
        if (*s == '|') s++;
    }
    return 0;
}

/* Snapshot the arena, run the call, then check status, message and untouched memory. */
#define EXPECT_ERROR(f, call, want, names)                                                   \
    do {                                                                                     \
        memcpy((f)->before, (f)->arena, ARENA_BYTES);                                        \
        expect_error_(__FILE__, __LINE__, #call, (call), (want), (names), (f));              \
    } while (0)

static void expect_error_(const char *file, int line, const char *expr, kiln_status got,
                          kiln_status want, const char *names, const fixture *f) {
    const char *msg = kiln_last_error();
    check_state_.checks += 3;
    check_note_ran();
    if (got != want) {
        check_fail_(file, line, "%s returned %s, expected %s (message \"%s\")", expr,
                    kiln_status_name(got), kiln_status_name(want), msg);
        return;
    }
    if (names && !names_one_of(msg, names))
        check_fail_(file, line, "%s: message \"%s\" does not name %s", expr, msg, names);
    if (memcmp(f->before, f->arena, ARENA_BYTES) != 0) {
        size_t i = 0;
        while (f->before[i] == f->arena[i]) i++;
        check_fail_(file, line, "%s failed with %s but changed memory at arena byte %zu", expr,
                    kiln_status_name(got), i);
    }
}

static void control(fixture *f, kiln_status (*run)(fixture *), const char *what) {
    check_case("valid %s fixture", what);
    CHECK_OK(run(f));
}

/* ---- statuses, versions, small functions -------------------------------------------- */

static void misc(void) {
    check_case("statuses");
#define XX(name, value, text)                                                                \
    CHECK_EQ(KILN_##name, value);                                                            \
    CHECK_STR_EQ(kiln_status_name(KILN_##name), #name);                                      \
    CHECK_STR_EQ(kiln_status_string(KILN_##name), text);
    KILN_STATUS_MAP(XX)
#undef XX
    CHECK(kiln_status_name((kiln_status)1234) != NULL);
    CHECK(kiln_status_string((kiln_status)1234) != NULL);
    CHECK(kiln_status_string((kiln_status)-1) != NULL);

    check_case("versions and names");
    CHECK_EQ(kiln_version(), KILN_VERSION_NUMBER);
    CHECK_STR_EQ(kiln_version_string(), KILN_VERSION_STRING);
    CHECK_EQ(kiln_dtype_size(KILN_F32), 4);
    CHECK_EQ(kiln_dtype_size(KILN_F16), 2);
    CHECK_EQ(kiln_dtype_size(KILN_BF16), 2);
    CHECK_EQ(kiln_dtype_size(KILN_I32), 4);
    CHECK_EQ(kiln_dtype_size((kiln_dtype)99), 0);
    CHECK_STR_EQ(kiln_dtype_name(KILN_F32), "f32");
    CHECK_STR_EQ(kiln_dtype_name(KILN_F16), "f16");
    CHECK_STR_EQ(kiln_dtype_name(KILN_BF16), "bf16");
    CHECK_STR_EQ(kiln_dtype_name(KILN_I32), "i32");
    CHECK_STR_EQ(kiln_dtype_name((kiln_dtype)99), "?");
    CHECK_STR_EQ(kiln_backend_name(KILN_BACKEND_AUTO), "auto");
    CHECK_STR_EQ(kiln_backend_name(KILN_BACKEND_CPU), "cpu");
    CHECK_STR_EQ(kiln_backend_name(KILN_BACKEND_CUDA), "cuda");
    CHECK_STR_EQ(kiln_backend_name(KILN_BACKEND_HIP), "hip");
    kiln_context_free(NULL);
    check_note_ran();
}

static void dispatch_and_contexts(void) {
    kiln_dispatch d;
    check_case("kiln_last_dispatch before any op");
    kiln_dispatch_init(&d);
    CHECK_STATUS(kiln_last_dispatch(&d), KILN_NOTHING_RAN);
    CHECK_STATUS(kiln_last_dispatch(NULL), KILN_INVALID_ARGUMENT);

    check_case("kiln_context_create");
    kiln_context *ctx = (kiln_context *)&d;
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_CPU, 0, NULL), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "out"));
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_CPU, -1, &ctx), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "device"));
    CHECK(ctx == NULL);
    ctx = (kiln_context *)&d;
    CHECK_STATUS(kiln_context_create((kiln_backend)42, 0, &ctx), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "backend"));
    CHECK(ctx == NULL);

    check_case("kiln_tensor_contiguous");
    kiln_tensor t, t0;
    int64_t shape[5] = {2, 3, 4, 5, 6}, neg[2] = {2, -1};
    float buf[4];
    CHECK_STATUS(kiln_tensor_contiguous(NULL, buf, KILN_F32, 1, shape), KILN_INVALID_ARGUMENT);
    memset(&t, SENTINEL, sizeof t);
    t0 = t;
    CHECK_STATUS(kiln_tensor_contiguous(&t, buf, KILN_F32, 0, shape), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "rank"));
    CHECK_STATUS(kiln_tensor_contiguous(&t, buf, KILN_F32, 5, shape), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "rank"));
    CHECK_STATUS(kiln_tensor_contiguous(&t, buf, KILN_F32, 2, NULL), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "shape"));
    CHECK_STATUS(kiln_tensor_contiguous(&t, buf, KILN_F32, 2, neg), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "shape"));
    CHECK_MEM_EQ(&t, &t0, sizeof t);
    CHECK_OK(kiln_tensor_contiguous(&t, buf, KILN_F32, 4, shape));
    CHECK_EQ(t.stride[0], 60);
    CHECK_EQ(t.stride[1], 20);
    CHECK_EQ(t.stride[2], 5);
    CHECK_EQ(t.stride[3], 1);
    check_note_ran();
}

static void info_json(kiln_context *ctx) {
    check_case("kiln_info_json with a small buffer");
    char buf[8];
    size_t needed = 0;
    memset(buf, SENTINEL, sizeof buf);
    CHECK_STATUS(kiln_info_json(ctx, buf, sizeof buf, &needed), KILN_BUFFER_TOO_SMALL);
    CHECK_GT(needed, sizeof buf);
    CHECK_EQ(buf[sizeof buf - 1], '\0');
    check_note_ran();
}

/* ---- attention ------------------------------------------------------------------------ */

static void common_attention(fixture *f, void (*setup)(fixture *), kiln_status (*run)(fixture *),
                             const char *mode) {
    check_case("%s: context and tensor pointers", mode);
    setup(f);
    kiln_context *ctx = f->ctx;
    f->ctx = NULL;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "ctx");
    f->ctx = ctx;

    static const char *const which[] = {"q", "k", "v", "out"};
    for (int i = 0; i < 4; i++) {
        check_case("%s: %s data NULL", mode, which[i]);
        setup(f);
        kiln_tensor *t = i == 0 ? &f->q : i == 1 ? &f->k : i == 2 ? &f->v : &f->out;
        t->data = NULL;
        EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT,
                     i == 1 ? "k|k_cache" : i == 2 ? "v|v_cache" : which[i]);

        check_case("%s: %s wrong rank", mode, which[i]);
        setup(f);
        t->rank = t->rank == 4 ? 3 : 4;
        t->shape[3] = t->shape[2], t->stride[3] = 1;
        EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT,
                     i == 1 ? "k|k_cache" : i == 2 ? "v|v_cache" : which[i]);

        check_case("%s: %s last dimension not contiguous", mode, which[i]);
        setup(f);
        t->stride[t->rank - 1] = 2;
        EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT,
                     i == 1 ? "k|k_cache" : i == 2 ? "v|v_cache" : which[i]);

        check_case("%s: %s negative stride", mode, which[i]);
        setup(f);
        t->stride[0] = -t->stride[0];
        EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT,
                     i == 1 ? "k|k_cache" : i == 2 ? "v|v_cache" : which[i]);

        check_case("%s: %s negative dimension", mode, which[i]);
        setup(f);
        t->shape[0] = -1;
        EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT,
                     i == 1 ? "k|k_cache|block_table" : i == 2 ? "v|v_cache|block_table"
                                                               : "q|out|block_table");
    }

    check_case("%s: dtypes", mode);
    setup(f);
    f->k.dtype = KILN_F16;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "k|k_cache");
    setup(f);
    f->v.dtype = KILN_F32;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "v|v_cache");
    setup(f);
    f->out.dtype = KILN_F16;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out");
    setup(f);
    f->q.dtype = f->k.dtype = f->v.dtype = f->out.dtype = KILN_I32;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "q");
    setup(f);
    f->q.dtype = (kiln_dtype)77;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "q");
    setup(f);
    f->lse.dtype = KILN_BF16;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "lse");

    check_case("%s: heads_q not a multiple of heads_kv", mode);
    setup(f);
    f->k.shape[f->k.rank - 2] = f->v.shape[f->v.rank - 2] = 3;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "k|k_cache|heads_kv|heads_q|q");

    check_case("%s: k and v disagree", mode);
    setup(f);
    f->v.shape[f->v.rank - 2] = 1;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "v|v_cache");
    setup(f);
    f->v.shape[f->v.rank - 1] = 16;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "v|v_cache");

    static const int64_t bad_dims[] = {12, 4, 264, 0};
    for (size_t i = 0; i < sizeof bad_dims / sizeof bad_dims[0]; i++) {
        check_case("%s: head dim %lld", mode, (long long)bad_dims[i]);
        setup(f);
        kiln_tensor *ts[4] = {&f->q, &f->k, &f->v, &f->out};
        for (int j = 0; j < 4; j++) ts[j]->shape[ts[j]->rank - 1] = bad_dims[i];
        EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "head_dim|q");
    }

    check_case("%s: head dim of k differs from q", mode);
    setup(f);
    f->k.shape[f->k.rank - 1] = f->v.shape[f->v.rank - 1] = 16;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "k|k_cache|head_dim");

    check_case("%s: out shape differs from q", mode);
    setup(f);
    f->out.shape[f->out.rank - 2] = 2;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out");
    setup(f);
    f->out.shape[0] += 1;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out");

    check_case("%s: lse shape", mode);
    setup(f);
    f->lse.shape[f->lse.rank - 1] += 1;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "lse");
    setup(f);
    f->lse.rank = f->lse.rank == 3 ? 2 : 3;
    f->lse.shape[2] = 1;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "lse");
    setup(f);
    f->lse.data = NULL;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "lse");

    check_case("%s: output aliasing an input", mode);
    setup(f);
    f->out.data = f->q.data;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out");
    setup(f);
    f->out.data = (uint16_t *)f->q.data + 8; /* partial overlap */
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out");
    setup(f);
    f->out.data = (uint16_t *)f->k.data + 24;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out");
    setup(f);
    f->out.data = f->v.data;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out");
    setup(f);
    f->lse.data = (float *)f->q.data + 2;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "lse");
    setup(f);
    f->lse.data = f->out.data;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "lse|out");

    check_case("%s: params", mode);
    setup(f);
    f->prm.num_splits = -1;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "num_splits");
    setup(f);
    f->prm.window_left = -2;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "window_left");
    setup(f);
    f->prm.window_right = -7;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "window_right");
    setup(f);
    f->prm.softcap = -1.0f;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "softcap");
    setup(f);
    f->prm.softcap = NAN;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "softcap");
    setup(f);
    f->prm.softmax_scale = NAN;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "softmax_scale");

    check_case("%s: alibi slopes", mode);
    const int64_t batch = f->block_table.data ? f->block_table.shape[0]
                          : f->cu_q.data     ? f->cu_q.shape[0] - 1
                                             : f->q.shape[0];
    setup(f);
    tensor(f, &f->alibi, KILN_F32, 1, 3, 0, 0, 0); /* heads_q is 4 */
    f->prm.alibi_slopes = f->alibi;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "alibi_slopes");
    setup(f);
    tensor(f, &f->alibi, KILN_BF16, 1, 4, 0, 0, 0);
    f->prm.alibi_slopes = f->alibi;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "alibi_slopes");
    setup(f);
    tensor(f, &f->alibi, KILN_F32, 2, batch + 1, 4, 0, 0);
    f->prm.alibi_slopes = f->alibi;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "alibi_slopes");
    setup(f);
    tensor(f, &f->alibi, KILN_F32, 3, 1, batch, 4, 0);
    f->prm.alibi_slopes = f->alibi;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "alibi_slopes");
    setup(f);
    tensor(f, &f->alibi, KILN_F32, 1, 4, 0, 0, 0);
    f->alibi.stride[0] = 2;
    f->prm.alibi_slopes = f->alibi;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "alibi_slopes");
    setup(f);
    tensor(f, &f->alibi, KILN_F32, 1, 4, 0, 0, 0);
    f->prm.alibi_slopes = f->alibi;
    f->out.data = f->alibi.data;
    EXPECT_ERROR(f, run(f), KILN_INVALID_ARGUMENT, "out|alibi_slopes");

    check_case("%s: workspace", mode);
    setup(f);
    size_t need = 0;
    CHECK_OK(kiln_attention_workspace_size(f->ctx,
                                           plan(batch,
                                                f->q.rank == 4 ? f->q.shape[0] * f->q.shape[1]
                                                               : f->q.shape[0],
                                                f->max_q ? f->max_q : f->q.shape[1], f->max_k,
                                                4, 2, 8, 2),
                                           &need));
    /* kiln.h: an explicit split count always sizes a workspace. */
    CHECK(need > 0);
    if (need > 0) {
        f->prm.num_splits = 2;
        f->prm.workspace = region(f, need);
        f->prm.workspace_size = need - 1;
        EXPECT_ERROR(f, run(f), KILN_WORKSPACE_TOO_SMALL, "workspace|workspace_size");
    }
}

static void varlen_errors(fixture *f) {
    static const struct {
        int32_t cq[3], ck[3];
        const char *names, *what;
    } bad[] = {
        {{1, 2, 6}, {0, 4, 9}, "cu_seqlens_q", "cu_seqlens_q[0] != 0"},
        {{0, 2, 6}, {1, 4, 9}, "cu_seqlens_k", "cu_seqlens_k[0] != 0"},
        {{0, 3, 2}, {0, 4, 9}, "cu_seqlens_q", "cu_seqlens_q decreasing"},
        {{0, 2, 6}, {0, 5, 4}, "cu_seqlens_k", "cu_seqlens_k decreasing"},
        {{0, 2, 7}, {0, 4, 9}, "cu_seqlens_q", "cu_seqlens_q last > total_q"},
        {{0, 2, 6}, {0, 4, 10}, "cu_seqlens_k", "cu_seqlens_k last > total_k"},
        {{0, 2, 6}, {0, -1, 9}, "cu_seqlens_k", "cu_seqlens_k negative"},
        {{0, 1, 6}, {0, 4, 9}, "max_seqlen_q|cu_seqlens_q", "sequence longer than max_seqlen_q"},
        {{0, 2, 6}, {0, 1, 9}, "max_seqlen_k|cu_seqlens_k", "sequence longer than max_seqlen_k"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        check_case("varlen: %s", bad[i].what);
        varlen(f);
        set_i32(&f->cu_q, bad[i].cq, 3);
        set_i32(&f->cu_k, bad[i].ck, 3);
        EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, bad[i].names);
    }
    check_case("varlen: cu_seqlens tensors");
    varlen(f);
    f->cu_q.dtype = KILN_F32;
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "cu_seqlens_q");
    varlen(f);
    f->cu_k.dtype = KILN_F16;
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "cu_seqlens_k");
    varlen(f);
    f->cu_k.shape[0] = 2;
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "cu_seqlens_k");
    varlen(f);
    f->cu_q.rank = 2, f->cu_q.shape[1] = 1, f->cu_q.stride[1] = 1;
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "cu_seqlens_q");
    varlen(f);
    f->cu_q.shape[0] = 0;
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "cu_seqlens_q");
    varlen(f);
    EXPECT_ERROR(f, kiln_attention_fwd_varlen(f->ctx, &f->q, &f->k, &f->v, NULL, &f->cu_k, 4, 5,
                                              &f->out, &f->lse, &f->prm, NULL),
                 KILN_INVALID_ARGUMENT, "cu_seqlens_q");
    varlen(f);
    EXPECT_ERROR(f, kiln_attention_fwd_varlen(f->ctx, &f->q, &f->k, &f->v, &f->cu_q, NULL, 4, 5,
                                              &f->out, &f->lse, &f->prm, NULL),
                 KILN_INVALID_ARGUMENT, "cu_seqlens_k");
    varlen(f);
    f->max_k = -1;
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "max_seqlen_k");
    varlen(f);
    f->max_q = -1;
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "max_seqlen_q");
    varlen(f);
    f->cu_q.data = f->out.data; /* output aliasing an integer input */
    EXPECT_ERROR(f, run_varlen(f), KILN_INVALID_ARGUMENT, "out|cu_seqlens_q");
}

static void paged_errors(fixture *f) {
    for (int prefill = 0; prefill <= 1; prefill++) {
        const char *mode = prefill ? "paged prefill" : "paged decode";
        static const struct {
            int32_t bt[4], sl[2];
            const char *names, *what;
        } bad[] = {
            {{2, 4, 3, 1}, {20, 5}, "block_table", "block_table entry == num_pages"},
            {{-1, 0, 3, 1}, {20, 5}, "block_table", "block_table entry negative"},
            {{2, 0, 3, 1}, {33, 5}, "seqlens_k", "seqlens_k beyond the table's capacity"},
            {{2, 0, 3, 1}, {20, -1}, "seqlens_k", "seqlens_k negative"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            check_case("%s: %s", mode, bad[i].what);
            paged(f, prefill);
            set_i32(&f->block_table, bad[i].bt, 4);
            set_i32(&f->seqlens_k, bad[i].sl, 2);
            EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, bad[i].names);
        }
        check_case("%s: page size 0", mode);
        paged(f, prefill);
        f->k.shape[1] = f->v.shape[1] = 0;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "k_cache|page_size");
        check_case("%s: caches disagree", mode);
        paged(f, prefill);
        f->v.shape[0] = 3;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "v_cache");
        paged(f, prefill);
        f->v.shape[1] = 8;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "v_cache");
        check_case("%s: integer tensors", mode);
        paged(f, prefill);
        f->block_table.dtype = KILN_F32;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "block_table");
        paged(f, prefill);
        f->seqlens_k.dtype = KILN_F32;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "seqlens_k");
        paged(f, prefill);
        f->seqlens_k.shape[0] = 3;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "seqlens_k");
        paged(f, prefill);
        f->block_table.rank = 1;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "block_table");
        paged(f, prefill);
        f->block_table.stride[1] = 2;
        EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "block_table");
        paged(f, prefill);
        EXPECT_ERROR(f, kiln_attention_fwd_paged(f->ctx, &f->q, &f->k, &f->v, NULL, &f->seqlens_k,
                                                 prefill ? &f->cu_q : NULL, f->max_q, &f->out,
                                                 &f->lse, &f->prm, NULL),
                     KILN_INVALID_ARGUMENT, "block_table");
        paged(f, prefill);
        EXPECT_ERROR(f, kiln_attention_fwd_paged(f->ctx, &f->q, &f->k, &f->v, &f->block_table,
                                                 NULL, prefill ? &f->cu_q : NULL, f->max_q,
                                                 &f->out, &f->lse, &f->prm, NULL),
                     KILN_INVALID_ARGUMENT, "seqlens_k");
        if (prefill) {
            static const int32_t bad_cq[][3] = {{0, 2, 4}, {1, 2, 3}, {0, 3, 2}};
            for (int i = 0; i < 3; i++) {
                check_case("paged prefill: cu_seqlens_q {%d, %d, %d}", bad_cq[i][0],
                           bad_cq[i][1], bad_cq[i][2]);
                paged(f, 1);
                set_i32(&f->cu_q, bad_cq[i], 3);
                f->max_q = 3;
                EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "cu_seqlens_q");
            }
            check_case("paged prefill: cu_seqlens_q length != batch + 1");
            paged(f, 1);
            f->cu_q.shape[0] = 2;
            EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "cu_seqlens_q");
            check_case("paged prefill: sequence longer than max_seqlen_q");
            paged(f, 1);
            f->max_q = 1;
            EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "max_seqlen_q|cu_seqlens_q");
        } else {
            check_case("paged decode: q batch != block_table rows");
            paged(f, 0);
            f->q.shape[0] = f->out.shape[0] = 1;
            f->lse.shape[0] = 1;
            EXPECT_ERROR(f, run_paged(f), KILN_INVALID_ARGUMENT, "q|block_table|seqlens_k");
        }
    }
}

static void workspace_size_errors(kiln_context *ctx) {
    size_t bytes = 12345;
    check_case("kiln_attention_workspace_size");
    CHECK_STATUS(kiln_attention_workspace_size(ctx, NULL, &bytes), KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "plan"));
    CHECK_STATUS(kiln_attention_workspace_size(NULL, plan(1, 1, 1, 64, 4, 2, 64, 2), &bytes),
                 KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "ctx"));
    CHECK_STATUS(kiln_attention_workspace_size(ctx, plan(1, 1, 1, 64, 4, 2, 64, 2), NULL),
                 KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "bytes"));
    CHECK_STATUS(kiln_attention_workspace_size(ctx, plan(1, 1, 1, 64, 4, 2, 64, -1), &bytes),
                 KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "num_splits"));
    CHECK_STATUS(kiln_attention_workspace_size(ctx, plan(-1, 1, 1, 64, 4, 2, 64, 2), &bytes),
                 KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "batch"));
    CHECK_STATUS(kiln_attention_workspace_size(ctx, plan(1, 1, 1, -64, 4, 2, 64, 2), &bytes),
                 KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "max_seqlen_k"));
    CHECK_STATUS(kiln_attention_workspace_size(ctx, plan(1, 1, 1, 64, 4, 3, 64, 2), &bytes),
                 KILN_INVALID_ARGUMENT);
    CHECK(names_one_of(kiln_last_error(), "heads_kv"));
    CHECK_EQ(bytes, 12345);
    CHECK_OK(kiln_attention_workspace_size(ctx, plan(1, 1, 1, 64, 4, 2, 64, 1), &bytes));
    CHECK_EQ(bytes, 0);
    check_note_ran();
}

/* ---- activations ---------------------------------------------------------------------- */

static void act_errors(fixture *f) {
    check_case("activation: pointers");
    act(f);
    kiln_context *ctx = f->ctx;
    f->ctx = NULL;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "ctx");
    f->ctx = ctx;
    act(f);
    EXPECT_ERROR(f, kiln_act_and_mul(f->ctx, KILN_ACT_GELU, NULL, &f->y, NULL),
                 KILN_INVALID_ARGUMENT, "x");
    act(f);
    EXPECT_ERROR(f, kiln_act_and_mul(f->ctx, KILN_ACT_GELU, &f->x, NULL, NULL),
                 KILN_INVALID_ARGUMENT, "out");
    act(f);
    f->x.data = NULL;
    EXPECT_ERROR(f, kiln_silu_and_mul(f->ctx, &f->x, &f->y, NULL), KILN_INVALID_ARGUMENT, "x");
    act(f);
    f->y.data = NULL;
    EXPECT_ERROR(f, kiln_gelu_and_mul(f->ctx, &f->x, &f->y, NULL), KILN_INVALID_ARGUMENT, "out");
    act(f);
    EXPECT_ERROR(f, kiln_gelu_tanh_and_mul(NULL, &f->x, &f->y, NULL), KILN_INVALID_ARGUMENT,
                 "ctx");

    check_case("activation: unknown activation");
    act(f);
    EXPECT_ERROR(f, kiln_act_and_mul(f->ctx, (kiln_activation)9, &f->x, &f->y, NULL),
                 KILN_INVALID_ARGUMENT, "act|activation");

    check_case("activation: odd last dimension");
    act(f);
    f->x.shape[2] = 15;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "x");

    check_case("activation: out shape");
    act(f);
    f->y.shape[2] = 7;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "out");
    act(f);
    f->y.shape[1] = 4;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "out");
    act(f);
    f->y.rank = 2, f->y.shape[1] = 8, f->y.stride[1] = 1, f->y.shape[0] = 15;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "out");

    check_case("activation: ranks");
    act(f);
    f->x.rank = 5;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "x");
    act(f);
    f->x.rank = 0;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "x");

    check_case("activation: dtypes");
    act(f);
    f->y.dtype = KILN_F16;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "out");
    act(f);
    f->x.dtype = f->y.dtype = KILN_I32;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "x");

    check_case("activation: last dimension not contiguous");
    act(f);
    f->x.stride[2] = 2;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "x");
    act(f);
    f->y.stride[2] = 3;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "out");
    act(f);
    f->x.stride[0] = -80;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "x");

    check_case("activation: out overlapping x");
    act(f);
    f->y.data = f->x.data;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "out");
    act(f);
    f->y.data = (uint16_t *)f->x.data + 100;
    EXPECT_ERROR(f, run_act(f), KILN_INVALID_ARGUMENT, "out");
}

/* A log callback that calls kiln, and that call fails (so kiln logs again, at debug level,
 * from inside the callback): the process must go on, not deadlock on the logger. */
static int reentry_depth, reentry_calls;
static kiln_status reentry_inner;
static void reentering_log(kiln_log_level level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    (void)user;
    reentry_calls++;
    if (reentry_depth++ == 0)
        reentry_inner = kiln_context_create((kiln_backend)99, 0, NULL);
    reentry_depth--;
}

static void log_reentry(void) {
    check_case("log callback that calls kiln");
    reentry_calls = 0;
    reentry_inner = KILN_OK;
    kiln_set_log_callback(reentering_log, KILN_LOG_DEBUG, NULL);
    kiln_status st = kiln_context_create((kiln_backend)98, 0, NULL);
    kiln_set_log_callback(NULL, KILN_LOG_WARN, NULL);
    CHECK(st != KILN_OK);
    CHECK(reentry_inner != KILN_OK);
    CHECK(reentry_calls >= 2); /* the outer failure and the one inside the callback */
}

int main(void) {
    fixture f;
    memset(&f, 0, sizeof f);
    f.arena = malloc(ARENA_BYTES);
    f.before = malloc(ARENA_BYTES);
    if (!f.arena || !f.before) return 1;

    /* First: no op has run on this thread yet. */
    dispatch_and_contexts();
    misc();
    log_reentry();

    kiln_status st = kiln_context_create(KILN_BACKEND_CPU, 0, &f.ctx);
    if (st != KILN_OK) {
        check_case("CPU context");
        check_fail_(__FILE__, __LINE__, "kiln_context_create(cpu): %s: %s", kiln_status_name(st),
                    kiln_last_error());
        return check_finish("errors");
    }
    info_json(f.ctx);
    workspace_size_errors(f.ctx);

    fixed(&f);
    control(&f, run_fixed, "fixed");
    common_attention(&f, fixed, run_fixed, "fixed");
    check_case("fixed: batch and seqlen mismatches");
    fixed(&f);
    f.k.shape[0] = f.v.shape[0] = 1;
    EXPECT_ERROR(&f, run_fixed(&f), KILN_INVALID_ARGUMENT, "k|batch");
    fixed(&f);
    f.v.shape[1] = 4;
    EXPECT_ERROR(&f, run_fixed(&f), KILN_INVALID_ARGUMENT, "v");
    fixed(&f);
    EXPECT_ERROR(&f, kiln_attention_fwd(f.ctx, NULL, &f.k, &f.v, &f.out, NULL, NULL, NULL),
                 KILN_INVALID_ARGUMENT, "q");
    fixed(&f);
    EXPECT_ERROR(&f, kiln_attention_fwd(f.ctx, &f.q, &f.k, &f.v, NULL, NULL, NULL, NULL),
                 KILN_INVALID_ARGUMENT, "out");

    varlen(&f);
    control(&f, run_varlen, "varlen");
    common_attention(&f, varlen, run_varlen, "varlen");
    varlen_errors(&f);

    paged(&f, 0);
    control(&f, run_paged, "paged decode");
    paged(&f, 1);
    control(&f, run_paged, "paged prefill");
    common_attention(&f, paged_decode, run_paged, "paged decode");
    common_attention(&f, paged_prefill, run_paged, "paged prefill");
    paged_errors(&f);

    act(&f);
    control(&f, run_act, "activation");
    act_errors(&f);

    kiln_context_free(f.ctx);
    free(f.arena);
    free(f.before);
    return check_finish("errors");
}
