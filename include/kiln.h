/*
 * kiln — fused attention forward and gated activations on the CPU, NVIDIA and AMD GPUs.
 *
 * This header is the whole public C API. Conventions used throughout:
 *
 *  - Every fallible call returns a kiln_status. On anything but KILN_OK the thread-local
 *    kiln_last_error() holds a message naming what was wrong, and no output was written.
 *  - Tensors are views (kiln_tensor): a data pointer the caller owns, a dtype, a rank, a shape
 *    and strides counted in elements (not bytes). The last dimension must be contiguous
 *    (stride 1) unless a function says otherwise. On a GPU context the pointers are device
 *    pointers and work is queued on the caller's stream; kiln never synchronizes.
 *  - Nothing is printed unless a log callback is installed or KILN_LOG is set.
 */
#ifndef KILN_H
#define KILN_H

#include <stddef.h>
#include <stdint.h>

#if defined(KILN_BUILDING_SHARED) && defined(KILN_USING_STATIC)
#error "KILN_BUILDING_SHARED and KILN_USING_STATIC cannot both be defined"
#endif

#if defined(_WIN32)
#  if defined(KILN_BUILDING_SHARED)
#    define KILN_API __declspec(dllexport)
#  elif defined(KILN_USING_STATIC) || defined(KILN_BUILDING_STATIC)
#    define KILN_API
#  else
#    define KILN_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && defined(KILN_BUILDING_SHARED)
#  define KILN_API __attribute__((visibility("default")))
#else
#  define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------- */
/* Version                                                                                   */

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0
#define KILN_VERSION_NUMBER (KILN_VERSION_MAJOR * 10000 + KILN_VERSION_MINOR * 100 + KILN_VERSION_PATCH)
#define KILN_VERSION_STRING "0.1.0"

/* @return KILN_VERSION_NUMBER of the library actually loaded (may differ from the header). */
KILN_API unsigned kiln_version(void);
/* @return the version as "MAJOR.MINOR.PATCH". */
KILN_API const char *kiln_version_string(void);

/* ---------------------------------------------------------------------------------------- */
/* Status codes. Numeric values are stable: they never change between versions.             */

#define KILN_STATUS_MAP(XX)                                                                  \
    XX(OK, 0, "success")                                                                     \
    XX(INVALID_ARGUMENT, 1, "invalid argument")                                              \
    XX(UNSUPPORTED, 2, "unsupported by the chosen backend")                                  \
    XX(OUT_OF_MEMORY, 3, "out of memory")                                                    \
    XX(BACKEND_UNAVAILABLE, 4, "backend unavailable")                                        \
    XX(DEVICE_ERROR, 5, "device or driver error")                                            \
    XX(COMPILE_ERROR, 6, "kernel compilation failed")                                        \
    XX(KERNEL_NOT_FOUND, 7, "no kernel for this target and variant")                         \
    XX(IO_ERROR, 8, "file system error")                                                     \
    XX(WORKSPACE_TOO_SMALL, 9, "workspace too small")                                        \
    XX(INTERNAL, 10, "internal error")

typedef enum kiln_status {
#define KILN_XX_(name, value, text) KILN_##name = value,
    KILN_STATUS_MAP(KILN_XX_)
#undef KILN_XX_
} kiln_status;

/* @return a short, static description of a status ("invalid argument"); never NULL. */
KILN_API const char *kiln_status_string(kiln_status status);
/* @return the status's name without prefix ("INVALID_ARGUMENT"); never NULL. */
KILN_API const char *kiln_status_name(kiln_status status);
/* @return the detailed message of the last failed call on this thread ("" if none). The
 * pointer stays valid until the next kiln call on the same thread. */
KILN_API const char *kiln_last_error(void);

/* ---------------------------------------------------------------------------------------- */
/* Logging. By default kiln prints nothing. KILN_LOG=error|warn|info|debug prints to stderr   */
/* at that level when no callback is installed.                                              */

typedef enum kiln_log_level {
    KILN_LOG_ERROR = 0,
    KILN_LOG_WARN = 1,
    KILN_LOG_INFO = 2,
    KILN_LOG_DEBUG = 3
} kiln_log_level;

typedef void (*kiln_log_fn)(kiln_log_level level, const char *message, void *user);

/* Installs (or, with fn NULL, removes) a process-wide log callback receiving messages at
 * max_level or more severe. Thread-safe; the callback may be called from any thread. */
KILN_API void kiln_set_log_callback(kiln_log_fn fn, kiln_log_level max_level, void *user);

/* ---------------------------------------------------------------------------------------- */
/* Tensors                                                                                   */

typedef enum kiln_dtype {
    KILN_F32 = 0,
    KILN_F16 = 1,
    KILN_BF16 = 2,
    KILN_I32 = 3
} kiln_dtype;

#define KILN_MAX_RANK 4

/* A strided view. shape[i] and stride[i] are meaningful for i < rank; strides are in
 * elements and may be any non-negative value (0 included) except where a function requires
 * the last dimension to be contiguous. */
typedef struct kiln_tensor {
    void *data;
    kiln_dtype dtype;
    int32_t rank;
    int64_t shape[KILN_MAX_RANK];
    int64_t stride[KILN_MAX_RANK];
} kiln_tensor;

/* Fills *t as a contiguous (row-major) view of data with the given shape.
 * @return KILN_INVALID_ARGUMENT if t is NULL, rank is outside 1..KILN_MAX_RANK, shape is
 * NULL or a dimension is negative. */
KILN_API kiln_status kiln_tensor_contiguous(kiln_tensor *t, void *data, kiln_dtype dtype,
                                            int32_t rank, const int64_t *shape);
/* @return the size of one element of dtype in bytes, or 0 for an unknown dtype. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);
/* @return "f32", "f16", "bf16", "i32" or "?". */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);

/* ---------------------------------------------------------------------------------------- */
/* Contexts                                                                                  */

typedef enum kiln_backend {
    KILN_BACKEND_AUTO = 0, /* KILN_BACKEND environment variable, else the best available */
    KILN_BACKEND_CPU = 1,
    KILN_BACKEND_CUDA = 2,
    KILN_BACKEND_HIP = 3
} kiln_backend;

/* One backend on one device, with its kernel store. A context may be used from several
 * threads at once. */
typedef struct kiln_context kiln_context;

/* Creates a context. backend AUTO reads KILN_BACKEND (auto|cpu|cuda|hip) and otherwise picks
 * the best available backend (the reason is in kiln_info_json()). A named backend that
 * cannot start fails with KILN_BACKEND_UNAVAILABLE and a message saying what was missing;
 * it never falls back. device is the GPU ordinal (ignored by the CPU backend).
 * @return KILN_OK and *out set, or an error and *out set to NULL. */
KILN_API kiln_status kiln_context_create(kiln_backend backend, int device, kiln_context **out);
/* Frees a context. NULL is accepted. */
KILN_API void kiln_context_free(kiln_context *ctx);
/* @return the backend the context runs on (never AUTO). */
KILN_API kiln_backend kiln_context_backend(const kiln_context *ctx);
/* @return "cpu", "cuda", "hip" or "auto". */
KILN_API const char *kiln_backend_name(kiln_backend backend);

/* Writes a JSON object describing the library, the machine, every backend found (device,
 * target, compute units, memory, driver and compiler versions), the code-object targets
 * shipped and which backend auto picks and why. ctx may be NULL (everything is probed) or a
 * context (its device is described too). Writes at most cap bytes including the final NUL.
 * @return KILN_OK with *needed (if not NULL) set to the full length + 1; if cap is too small
 * the text is truncated and KILN_WORKSPACE_TOO_SMALL is returned with *needed set. */
KILN_API kiln_status kiln_info_json(kiln_context *ctx, char *buf, size_t cap, size_t *needed);

/* ---------------------------------------------------------------------------------------- */
/* Attention forward                                                                         */
/*
 * Semantics follow FlashAttention:
 *   out[b, i, h, :] = sum_j softmax_j(s_ij) * v[b, j, h / (heads_q / heads_kv), :]
 *   s_ij = scale * q_i . k_j  (then soft-cap: cap * tanh(s / cap), then + ALiBi bias
 *          -slope[h] * |i + seqlen_k - seqlen_q - j|), masked as below.
 * Masks use the bottom-right diagonal: key j is visible to query i iff
 *   causal:          j <= i + seqlen_k - seqlen_q
 *   window (l, r):   j >= i + seqlen_k - seqlen_q - l  (l = -1: unbounded)
 *                    j <= i + seqlen_k - seqlen_q + r  (r = -1: unbounded)
 * causal is the same as window (l, 0). A row with no visible key writes 0 and LSE -inf.
 * Requirements common to all modes: heads_q % heads_kv == 0; head_dim a multiple of 8, at
 * most 256; q, k, v, out of one dtype (bf16, f16; f32 on the CPU only); the last dimension
 * of each contiguous; out must not overlap any input. Accumulation is in fp32.
 * LSE (optional, NULL for none) is fp32, natural log, [batch, heads_q, seqlen_q] (varlen and
 * paged with cu_seqlens_q: [heads_q, total_q]), any strides.
 */

typedef struct kiln_attention_params {
    float softmax_scale;  /* 0 = 1 / sqrt(head_dim) */
    int32_t causal;       /* nonzero: bottom-right causal mask */
    int32_t window_left;  /* -1 = unbounded */
    int32_t window_right; /* -1 = unbounded */
    float softcap;        /* 0 = off; else logits become cap * tanh(s / cap) */
    /* fp32 ALiBi slopes, rank 1 [heads_q] or rank 2 [batch, heads_q]; data NULL = off. */
    kiln_tensor alibi_slopes;
    /* Split-KV: number of pieces the key range is cut into. 0 = choose from the device and
     * the shape; 1 = no split. Partial results are combined exactly (fp32 LSE merge). */
    int32_t num_splits;
    /* Optional caller-owned scratch for split-KV (device memory on a GPU context), at least
     * kiln_attention_workspace_size() bytes; NULL = kiln allocates its own. Its contents
     * need no initialisation and carry nothing from one call to the next, so one buffer
     * serves every call on its stream and every replay of a captured CUDA graph. */
    void *workspace;
    size_t workspace_size;
    /* GPU stream (cudaStream_t / hipStream_t) to queue work on; NULL = the default stream. */
    void *stream;
} kiln_attention_params;

/* Fills *p with the defaults: scale 0, no mask, no soft-cap, no ALiBi, num_splits 0,
 * no workspace, default stream. */
KILN_API void kiln_attention_params_init(kiln_attention_params *p);

/* Fixed length.
 *   q   [batch, seqlen_q, heads_q, head_dim]
 *   k,v [batch, seqlen_k, heads_kv, head_dim]
 *   out [batch, seqlen_q, heads_q, head_dim]   (written)
 *   lse [batch, heads_q, seqlen_q] fp32 or NULL (written)
 *   params NULL = defaults.
 * Any strides with the last dimension contiguous, so [batch, heads, seq, dim] tensors are
 * passed as permuted views. */
KILN_API kiln_status kiln_attention_fwd(kiln_context *ctx, const kiln_tensor *q,
                                        const kiln_tensor *k, const kiln_tensor *v,
                                        kiln_tensor *out, kiln_tensor *lse,
                                        const kiln_attention_params *params);

/* Variable length (packed sequences).
 *   q   [total_q, heads_q, head_dim];  k, v [total_k, heads_kv, head_dim]
 *   cu_seqlens_q, cu_seqlens_k: i32 [batch + 1], starting at 0, non-decreasing, last entry
 *   at most total_q / total_k. Zero-length sequences are legal.
 *   max_seqlen_q / max_seqlen_k: upper bounds of the per-sequence lengths (used for
 *   planning; a sequence longer than its bound is an error on the CPU).
 *   out [total_q, heads_q, head_dim]; lse [heads_q, total_q] fp32 or NULL. */
KILN_API kiln_status kiln_attention_fwd_varlen(kiln_context *ctx, const kiln_tensor *q,
                                               const kiln_tensor *k, const kiln_tensor *v,
                                               const kiln_tensor *cu_seqlens_q,
                                               const kiln_tensor *cu_seqlens_k,
                                               int64_t max_seqlen_q, int64_t max_seqlen_k,
                                               kiln_tensor *out, kiln_tensor *lse,
                                               const kiln_attention_params *params);

/* Paged KV cache: decode (q dense) and batch prefill (q packed).
 *   k_cache, v_cache [num_pages, page_size, heads_kv, head_dim]
 *   block_table i32 [batch, max_pages_per_seq]: page ids of each sequence, in order
 *   seqlens_k   i32 [batch]: keys per sequence (at most max_pages_per_seq * page_size)
 *   With cu_seqlens_q NULL (decode): q [batch, seqlen_q, heads_q, head_dim], out likewise,
 *     lse [batch, heads_q, seqlen_q]; max_seqlen_q is ignored.
 *   With cu_seqlens_q i32 [batch + 1] (batch prefill): q [total_q, heads_q, head_dim], out
 *     likewise, lse [heads_q, total_q]; max_seqlen_q bounds each sequence's query count.
 * Pages may appear in any order and be shared between sequences. */
KILN_API kiln_status kiln_attention_fwd_paged(kiln_context *ctx, const kiln_tensor *q,
                                              const kiln_tensor *k_cache,
                                              const kiln_tensor *v_cache,
                                              const kiln_tensor *block_table,
                                              const kiln_tensor *seqlens_k,
                                              const kiln_tensor *cu_seqlens_q,
                                              int64_t max_seqlen_q, kiln_tensor *out,
                                              kiln_tensor *lse,
                                              const kiln_attention_params *params);

/* Bytes of workspace a split-KV call of this shape needs (0 when it will not split), for
 * callers who pass their own workspace (graph capture). rows_q is batch * seqlen_q (fixed,
 * decode) or total_q (varlen, batch prefill); heads_q and heads_kv as in the call. max_seqlen_q and max_seqlen_k are the bounds
 * the call plans with: seqlen_q / seqlen_k (fixed), max_seqlen_q / max_seqlen_k (varlen),
 * and for paged calls q's length (or max_seqlen_q) and block_table columns x page_size.
 * num_splits as in kiln_attention_params: an explicit count (at most 256) needs the same
 * bytes whatever the shape; with 0 the automatic choice here equals the one the call makes
 * given the same bounds. */
KILN_API kiln_status kiln_attention_workspace_size(kiln_context *ctx, int64_t batch,
                                                   int64_t rows_q, int64_t max_seqlen_q,
                                                   int64_t max_seqlen_k, int64_t heads_q,
                                                   int64_t heads_kv, int64_t head_dim,
                                                   int32_t num_splits, size_t *bytes);

/* ---------------------------------------------------------------------------------------- */
/* Gated activations: x [..., 2 * d] -> out [..., d] = act(x[..., :d]) * x[..., d:]          */
/* x and out of one dtype (bf16, f16, f32), same leading shape (rank 1..4), last dimension    */
/* contiguous, any other strides; out must not overlap x. stream as in attention.            */

typedef enum kiln_activation {
    KILN_ACT_SILU = 0,      /* x * sigmoid(x) */
    KILN_ACT_GELU = 1,      /* exact: 0.5 x (1 + erf(x / sqrt 2)) */
    KILN_ACT_GELU_TANH = 2  /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
} kiln_activation;

KILN_API kiln_status kiln_act_and_mul(kiln_context *ctx, kiln_activation act,
                                      const kiln_tensor *x, kiln_tensor *out, void *stream);
KILN_API kiln_status kiln_silu_and_mul(kiln_context *ctx, const kiln_tensor *x,
                                       kiln_tensor *out, void *stream);
KILN_API kiln_status kiln_gelu_and_mul(kiln_context *ctx, const kiln_tensor *x,
                                       kiln_tensor *out, void *stream);
KILN_API kiln_status kiln_gelu_tanh_and_mul(kiln_context *ctx, const kiln_tensor *x,
                                            kiln_tensor *out, void *stream);

/* ---------------------------------------------------------------------------------------- */
/* Dispatch report: what the last successful op on this thread ran.                          */

typedef struct kiln_dispatch {
    kiln_backend backend;
    char target[32];   /* "x86-64-avx512bf16", "sm_90", "gfx1151" */
    char tier[16];     /* "cpu", "generic", "tensor" */
    char variant[128]; /* canonical variant key, e.g. "attn_fwd.bf16.d128.causal.paged" */
    int32_t num_splits;
} kiln_dispatch;

/* Copies the report of the last successful op on this thread into *out. A call whose
 * tensors are empty (a zero batch, sequence or row count) succeeds without running
 * anything; its report names the backend, with target, tier and variant "none".
 * @return KILN_INVALID_ARGUMENT if out is NULL, KILN_KERNEL_NOT_FOUND if no op ran yet. */
KILN_API kiln_status kiln_last_dispatch(kiln_dispatch *out);

#ifdef __cplusplus
}
#endif

#endif /* KILN_H */
