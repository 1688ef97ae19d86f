/*
 * The conformance driver of the testing library (src/testing, not part of libkiln), linked
 * by the tests/test_conformance*.c and test_activation*.c programs: runs one op on every backend this machine has against the fp64 reference.
 *
 * Targets: the CPU at every SIMD level the processor supports (KILN_CPU_SIMD set before each
 * context is created), and a GPU backend when one starts (KILN_TEST_BACKEND=cuda|hip makes
 * it mandatory). A program's first argument picks "cpu", "gpu" or (default) both, so ctest
 * can list the GPU run separately and report it skipped where there is no GPU.
 *
 * Every case: inputs are random in [-1, 1] rounded to the dtype; memory outside a view
 * (padding, unused cache slots) holds NaN so reading it shows; outputs are poisoned with NaN
 * so an element left unwritten shows, and bytes outside the output view must keep the
 * poison. Data reaches the device through kiln_ctx_alloc / copy, so one case runs anywhere.
 */
#ifndef KILN_TESTING_CONFORMANCE_H
#define KILN_TESTING_CONFORMANCE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "context.h"
#include "nonfinite.h"
#include "half.h"
#include "platform/platform.h"
#include "reference.h"



/* ---- random numbers (splitmix64: same stream on every platform) ---------------------- */

typedef struct tc_rng {
    uint64_t s;
} tc_rng;
uint64_t tc_next(tc_rng *r);
double tc_uniform(tc_rng *r);
int64_t tc_below(tc_rng *r, int64_t n);

/* ---- targets ------------------------------------------------------------------------- */

typedef struct tc_target {
    kiln_backend backend;
    const char *simd; /* KILN_CPU_SIMD value, NULL for GPUs */
    int required;     /* failing to start is a failure, not a skip */
} tc_target;

typedef struct tc_env {
    kiln_context *ctx;
    kiln_backend backend;
    const char *simd;
    char label[32];
    int reported_target, simd_mismatch;
} tc_env;
int tc_cpu_has(const char *level);
int tc_targets(const char *which, tc_target *t);
int tc_main(int argc, char **argv, const char *program, void (*body)(tc_env *));

/* ---- tensors held on the host and on the target -------------------------------------- */

typedef struct tc_tensor {
    kiln_tensor host, dev; /* same shape and strides; host.data is a host mirror */
    size_t elems;          /* elements in the allocation (view plus padding) */
    size_t bytes;
    kiln_context *ctx;
} tc_tensor;
double tc_nan_value(void);
int tc_tensor_make(tc_tensor *t, kiln_context *ctx, kiln_dtype dtype,
                                 int32_t rank, const int64_t *shape, const int *order,
                                 int64_t pad);
void tc_tensor_free(tc_tensor *t);
void tc_each(const kiln_tensor *t, void (*fn)(int64_t off, const int64_t *idx, void *u),
                           void *u);

typedef struct tc_fill_ctx {
    const kiln_tensor *t;
    tc_rng *rng;
    double lo, hi;
} tc_fill_ctx;
/* tc_each's callback that tc_fill uses (ctx: a tc_fill_ctx), for callers with their own
 * walk. */
void tc_fill_one_(int64_t off, const int64_t *idx, void *u);
void tc_fill(tc_tensor *t, tc_rng *rng, double lo, double hi);
int tc_upload(tc_tensor *t);
int tc_download(tc_tensor *t);
double tc_tolerance(kiln_dtype dtype);

/* ---- output bookkeeping --------------------------------------------------------------- */

/* Per allocation element: 0 outside the view, 1 in the view, 2 checked against the
 * reference. After a run, 0 must still hold the poison bits and 1 is left unjudged (rows
 * no sequence covers). */
typedef struct tc_marks {
    unsigned char *m;
    size_t n;
} tc_marks;
void tc_marks_init(tc_marks *mk, const tc_tensor *t);
void tc_check_untouched(const tc_tensor *t, const tc_marks *mk, const char *name);
void tc_check_dispatch(tc_env *env, kiln_dtype dtype, int bf16_level,
                                     const char *prefix, int64_t head_dim, const char *mode,
                                     int32_t asked_splits);

/* ---- attention cases ------------------------------------------------------------------ */

enum { TC_MAX_BATCH = 8 };

enum tc_layout {
    TC_DENSE = 0,    /* row-major [b, s, h, d] */
    TC_BHSD = 1,     /* [b, h, s, d] in memory, passed as a permuted view */
    TC_PADDED = 2,   /* row-major order with padding after every dimension */
    TC_BHSD_PAD = 3  /* both */
};

typedef struct tc_attn_case {
    kiln_attn_mode mode;
    kiln_dtype dtype;
    int64_t batch, hq, hkv, d;
    int64_t sq, sk;                  /* FIXED; PAGED decode: sq */
    int32_t lq[TC_MAX_BATCH];        /* VARLEN, PAGED prefill: query lengths */
    int32_t lk[TC_MAX_BATCH];        /* VARLEN, PAGED: key lengths */
    int64_t extra_rows;              /* VARLEN/prefill: packed rows after the last sequence */
    int64_t max_q_slack;             /* added to the longest q and k lengths passed as bounds */
    int layout;                      /* enum tc_layout, for q, k, v and out */
    int causal, wl, wr;
    float softcap, scale;
    int alibi; /* 0 none, 1 [heads_q], 2 [batch, heads_q] */
    int lse;   /* 0 none, 1 dense, 2 strided view */
    int32_t num_splits;
    int caller_ws;
    int page_size, shuffle, prefill, nan_tail, shared_page;
    int corrupt; /* nonzero: break one argument (tc_corrupt) and expect a clean error */
    uint64_t seed;
    int nonfinite; /* enum tc_nonfinite: one NaN / inf planted in the inputs */
} tc_attn_case;
tc_attn_case tc_attn_defaults(kiln_attn_mode mode, kiln_dtype dtype);
const char *tc_mode_name(kiln_attn_mode m);
void tc_describe(const tc_env *env, const tc_attn_case *c, char *buf, size_t cap);
void tc_layout_of(int layout, const int **order, int64_t *pad);

typedef struct tc_cmp {
    double max_err;
    int64_t worst[4];
    double worst_got, worst_ref;
    int64_t bad;
} tc_cmp;
void tc_compare_attention(const kiln_attn_problem *p, const double *ref_out,
                                        const double *ref_lse, tc_marks *mo, tc_marks *ml,
                                        double tol, const char *what);

/* Pages of each sequence (in order) laid out in a shuffled or sequential pool. */
typedef struct tc_pages {
    int32_t *table; /* [batch, max_pages] */
    int64_t max_pages, num_pages;
} tc_pages;

/* The arguments of one attention call, for tc_corrupt. */
typedef struct tc_attn_args {
    tc_tensor *q, *k, *v, *out, *lse, *cuq, *cuk, *bt, *slk;
    kiln_attention_params *prm;
    int64_t *max_q, *max_k;
} tc_attn_args;
const char *tc_corrupt(const tc_attn_case *c, tc_rng *rng, tc_attn_args *a,
                                     int host_data);
void tc_attn_run(tc_env *env, const tc_attn_case *c);

#endif
