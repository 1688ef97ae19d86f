/*
 * CPU backend internals: SIMD levels, the per-level kernel tables, the thread pool.
 *
 * SIMD level. The level is chosen at context creation from CPUID and XGETBV (what the CPU
 * has and the OS saves), never from build flags alone: each level's kernels live in their own
 * file compiled with that level's flags, and a file built by a compiler that cannot emit the
 * level compiles to a stub that reports the level as absent.
 *   scalar      portable C, every machine
 *   avx2        AVX2 + FMA + F16C
 *   avx512      AVX-512 F/BW/DQ/VL
 *   avx512bf16  avx512 plus AVX512_BF16 (vdpbf16ps): bf16 attention runs on bf16 dot products
 * The default is the highest level, except that avx512bf16 is the default only where
 * vdpbf16ps has twice the throughput of an fp32 FMA (AMD Zen 4 and later). On Intel CPUs
 * (Cooper Lake, Sapphire Rapids and later) it issues on one port where FMAs use two, so the
 * bf16 kernels do the same work at no gain and measured slower than the avx512 level (which
 * widens bf16 to fp32 while packing); there avx512 is the default.
 * KILN_CPU_SIMD=scalar|avx2|avx512|avx512bf16 forces a level. Asking for a level this CPU (or
 * this build) lacks, or an unknown name, makes context creation fail with
 * KILN_BACKEND_UNAVAILABLE and a message naming the levels available: tests that force a
 * level must not silently measure another one.
 *
 * KILN_NUM_THREADS=n (n >= 1) sets the pool size; otherwise kiln_cpu_count().
 */
#ifndef KILN_CPU_CPU_H
#define KILN_CPU_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "problem.h"

typedef enum kiln_cpu_level {
    KILN_CPU_SCALAR = 0,
    KILN_CPU_AVX2 = 1,
    KILN_CPU_AVX512 = 2,
    KILN_CPU_AVX512BF16 = 3
} kiln_cpu_level;

#define KILN_CPU_LEVEL_COUNT 4

/* Highest level both the CPU and the OS support (ignores what this build compiled). */
kiln_cpu_level kiln_cpu_detect_level(void);
/* 1 where bf16 dot products outrun fp32 FMAs two to one (see the level notes above). */
int kiln_cpu_bf16_dot_is_fast(void);
/* "scalar", "avx2", "avx512", "avx512bf16". */
const char *kiln_cpu_level_name(kiln_cpu_level level);
/* CPU brand string from CPUID ("" where unavailable). */
void kiln_cpu_model_name(char *buf, size_t cap);

/* ---- attention tiles ----------------------------------------------------------------- */

/* Query rows per register block and keys per tile, shared by every level so that the
 * driver (attn.c) is level-independent. */
/* max(a, b) where a NaN in either gives NaN (a row's running softmax max: a NaN score must
 * reach the output, as in the reference, never be dropped as fmaxf would). */
static inline float kiln_cpu_max_nan(float a, float b) {
    return (a != a || b != b) ? a + b : (a > b ? a : b);
}

#define KILN_CPU_ROWS 6
#define KILN_CPU_TILE 64
/* Floats per row of the running softmax sum: kernels may keep a row's sum spread over these
 * lanes (no horizontal add per tile); the driver adds them up at the end. */
#define KILN_CPU_LSTRIDE 16

/* Mask / soft-cap / ALiBi / short-tile hook: rewrites the scaled scores s[KILN_CPU_ROWS]
 * [KILN_CPU_TILE] of block rows r0.. against keys j0.. (invisible ones become -inf). */
typedef void (*kiln_cpu_fixup_fn)(const void *ctx, float *s, int r0, int64_t j0);

/* One register block against one key tile. q, k, v are in the kernel's packed layout (see
 * kiln_cpu_kernels). o, m, l hold the running output (unnormalised), row max and row sum of
 * KILN_CPU_ROWS rows. The driver pads a row block to KILN_CPU_ROWS with spare rows of its
 * scratch (zero q, the last row's mask), so kernels never branch on the row count. */
typedef struct kiln_cpu_block {
    const void *q;     /* KILN_CPU_ROWS rows of dpad elements, row stride q_ld elements */
    int64_t q_ld;
    const void *k, *v; /* packed tile */
    float *o;          /* KILN_CPU_ROWS rows, stride o_ld floats, dpad used */
    int64_t o_ld;
    float *m;
    float *l; /* KILN_CPU_LSTRIDE floats per row */
    int d, dpad;
    float scale;
    kiln_cpu_fixup_fn fixup; /* NULL: every score is visible and plain */
    const void *fixup_ctx;
    int r0;
    int64_t j0;
} kiln_cpu_block;

/*
 * A level's kernels for one compute format. Packed layouts (dpad = d rounded up to
 * dpad_align, padding zero, tiles of KILN_CPU_TILE keys, missing keys zero):
 *   f32 compute:  q rows [dpad] f32;  k [d][TILE] f32;          v [TILE][dpad] f32
 *   bf16 compute: q rows [dpad] bf16; k [d/2][TILE][2] bf16;   v [TILE/2][dpad][2] bf16
 * Packers read rows of the input dtype through pointers (one per key), which hides the
 * difference between dense and paged key/value storage.
 */
typedef struct kiln_cpu_kernels {
    const char *target;  /* dispatch target, "x86-64-avx512bf16" */
    int compute_bf16;    /* packed layouts hold bf16 (else f32) */
    int dpad_align;
    size_t elem;         /* bytes per packed element */
    void (*pack_q)(void *dst, const void *src, int d, int dpad, kiln_dtype dt);
    void (*pack_k)(void *dst, const void *const *rows, int n, int d, kiln_dtype dt);
    void (*pack_v)(void *dst, const void *const *rows, int n, int d, int dpad, kiln_dtype dt);
    void (*block)(const kiln_cpu_block *b);
    /* out[i] = act(gate[i]) * up[i] for i < n, all of dtype dt. */
    void (*act)(kiln_activation act, kiln_dtype dt, const void *gate, const void *up,
                void *out, int64_t n);
    /* Runs a register-blocked FMA loop; returns the fp32 FLOPs it did. */
    double (*fma_loop)(int64_t iters);
    /* dst[t] = src[t] * mul for t < d (a multiple of 8), stored as dtype dt. */
    void (*store_row)(void *dst, const float *src, float mul, int d, kiln_dtype dt);
} kiln_cpu_kernels;

/* Each returns NULL when this build could not compile the level. */
const kiln_cpu_kernels *kiln_cpu_kernels_scalar(void);
const kiln_cpu_kernels *kiln_cpu_kernels_avx2(void);
const kiln_cpu_kernels *kiln_cpu_kernels_avx512(void);
const kiln_cpu_kernels *kiln_cpu_kernels_avx512bf16(void); /* bf16 inputs only */

/* The kernels a level uses for a dtype (bf16 dot products only for bf16 inputs). */
const kiln_cpu_kernels *kiln_cpu_kernels_for(kiln_cpu_level level, kiln_dtype dt);

/* ---- thread pool ---------------------------------------------------------------------- */

typedef struct kiln_cpu_pool kiln_cpu_pool;

/* A pool of n threads counting the caller (n - 1 workers). NULL on failure. */
kiln_cpu_pool *kiln_cpu_pool_create(int n);
void kiln_cpu_pool_free(kiln_cpu_pool *pool);
int kiln_cpu_pool_size(const kiln_cpu_pool *pool);
/* Calls fn(ctx, item, slot) for every item in [0, n_items), spread over the pool; slot
 * (< pool size) identifies the thread for per-thread scratch. Returns when all are done.
 * Calls from several threads at once are serialised. */
void kiln_cpu_pool_run(kiln_cpu_pool *pool, int64_t n_items,
                       void (*fn)(void *ctx, int64_t item, int slot), void *ctx);

/* ---- backend state -------------------------------------------------------------------- */

typedef struct kiln_cpu_state {
    kiln_cpu_level level;
    kiln_cpu_pool *pool;
    int threads;
    char model[64];
} kiln_cpu_state;

/* Split count for a shape: deterministic in the shape and the thread count. */
int32_t kiln_cpu_choose_splits(int threads, int64_t batch, int64_t max_seqlen_q,
                               int64_t max_seqlen_k, int64_t heads_q, int64_t head_dim);

/* Run validated problems with the state's level; *used names the kernels that ran. */
kiln_status kiln_cpu_attention(kiln_cpu_state *st, const kiln_attn_problem *p,
                               const kiln_cpu_kernels **used, int32_t *splits_used);
kiln_status kiln_cpu_act(kiln_cpu_state *st, const kiln_act_problem *p,
                         const kiln_cpu_kernels **used);

/* Measured fp32 FMA peak of this machine in GFLOP/s with `threads` threads (<= 0: all
 * cores), at the best SIMD level the CPU and the build have. Runs for a few hundred ms. */
double kiln_cpu_fma_peak_gflops(int threads);

#endif
