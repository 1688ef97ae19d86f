/*
 * Attention forward, generic tier: SIMT only, no matrix instructions, one source for
 * NVRTC and clang HIP. A variant is this file plus
 *   KILN_DTYPE     1 f16 | 2 bf16           (q, k, v, out)
 *   KILN_HEAD_DIM  64 | 128 | 256           the largest head_dim the variant runs; the real
 *                                           head_dim (a multiple of 8) is a runtime argument
 *   KILN_MASK      KILN_MASK_FULL | _CAUSAL | _WINDOW
 *   KILN_MODE      KILN_MODE_ID_FIXED | _VARLEN | _PAGED (paged covers decode and prefill)
 *
 * One block computes KILN_ATTN_BLOCK_Q rows of one (batch, KV head[, split]), a row being a
 * (query, head) pair among the query heads that share the KV head (GQA / MQA): each K/V
 * tile is read once for all of them, and decode (one query) still fills the block:
 *   for each key tile of KILN_ATTN_BLOCK_K keys inside the rows' visible range:
 *     stage K and V in shared memory (16-bit, as stored; a paged row looked up once)
 *     S = scale * Q K^T, soft-cap, ALiBi, mask                (4 scores per thread)
 *     online softmax in fp32: row max, P = exp(S - max), row sum (one thread per row for
 *     the reductions, every thread for the exponentials)
 *     O = O * alpha + P V                                      (thread owns rows x dims)
 * then O / l goes to out and LSE (num_splits == 1) or, with num_splits > 1, the normalised
 * partial output and its LSE go to the fp32 workspace for kernels/combine.cu.
 * Shared memory (bytes) = 2 * 16 * (D + 2) + 2 * 32 * (D + 2) + 2 * 32 * D + 4 * 16 * 33
 * + 4 * 16 * 4 + 16 * 32 + 20 * 16: 44,352 at D = 256, under NVIDIA's 48 KiB static limit
 * and AMD's 64 KiB LDS (the compile matrix checks every object against its target).
 * Nothing depends on the wave size: reductions go through shared memory.
 */
#include "kiln_device.h"
#include "kiln_args.h"
#include "attn_seq.h"

#if !defined(KILN_HEAD_DIM) || !defined(KILN_MASK) || !defined(KILN_MODE)
#error "KILN_HEAD_DIM, KILN_MASK and KILN_MODE must be defined"
#endif
#if KILN_DTYPE == 0
#error "the GPU attention kernels take f16 or bf16"
#endif

#define BQ KILN_ATTN_BLOCK_Q
#define BK KILN_ATTN_BLOCK_K
#define NT KILN_ATTN_THREADS
#define DMAX KILN_HEAD_DIM
#define LDQK (DMAX + 2) /* odd word stride: the 32 key rows read in phase 1 hit 32 banks */
/* Phase-3 ownership: TD threads along head_dim, NT / TD row groups. */
#define TD (DMAX < NT ? DMAX : NT)
#define RPT (BQ / (NT / TD)) /* rows per thread */
#define CPT (DMAX / TD)      /* dims per thread */
/* Phase-1 ownership: thread t scores key t % BK for rows t / BK + k * (NT / BK). */
#define SROWS (BQ / (NT / BK))


KILN_KERNEL(NT) kiln_attn_fwd(kiln_attn_args a)
{
    KILN_SHARED kiln_elem qs[BQ][LDQK];
    KILN_SHARED kiln_elem ks[BK][LDQK];
    KILN_SHARED kiln_elem vs[BK][DMAX];
    KILN_SHARED float ss[BQ][BK + 1];
    KILN_SHARED float row_m[BQ], row_use[BQ], row_l[BQ], row_alpha[BQ];
    KILN_SHARED kiln_i64 kv_row[BK][2];
    KILN_SHARED kiln_i64 row_i[BQ], row_h[BQ];
    KILN_SHARED float row_slope[BQ];
    /* The stream's previous kernel may still run (kernels/vendor/cuda.h): no global access
     * before this. */
    kiln_grid_wait();
    kiln_grid_release();

    /* Block rows are packed (query, head) pairs of the heads_q / heads_kv query heads that
     * share KV head hk: packed row p is query p / group of head hk * group + p % group. */
    const kiln_i32 t = kiln_thread_x();
    const kiln_i64 hk = kiln_block_y();
    const kiln_i64 b = kiln_block_z() / a.num_splits;
    const kiln_i64 split = kiln_block_z() % a.num_splits;
    const kiln_i64 group = a.heads_q / a.heads_kv;
    const kiln_i64 hd = a.head_dim;
    const kiln_seq s = kiln_seq_of(&a, b);
    const kiln_i64 p0 = kiln_block_x() * BQ;
    kiln_span sp;
    if (!kiln_span_of(&a, &s, p0, BQ, group, split, &sp)) return;

    const kiln_elem *q = (const kiln_elem *)a.q;
    const kiln_elem *k = (const kiln_elem *)a.k;
    const kiln_elem *v = (const kiln_elem *)a.v;

    for (kiln_i32 e = t; e < BQ * DMAX; e += NT) {
        kiln_i32 r = e / DMAX, d = e % DMAX;
        kiln_elem x = kiln_f32_to_elem(0.0f);
        if (p0 + r < sp.rows && d < hd) {
            kiln_i64 i = (p0 + r) / group, h = hk * group + (p0 + r) % group;
            x = q[s.q_off + i * a.q_stride_row + h * a.q_stride_head + d];
        }
        qs[r][d] = x;
    }
    if (t < BQ) {
        /* Rows past the end keep a valid head so every index stays in range. */
        kiln_i64 p = p0 + t < sp.rows ? p0 + t : sp.rows - 1;
        row_i[t] = p / group;
        row_h[t] = hk * group + p % group;
        row_slope[t] = a.alibi ? a.alibi[b * a.alibi_stride_batch + row_h[t]] : 0.0f;
        row_m[t] = kiln_neg_inf();
        row_l[t] = 0.0f;
    }

    const kiln_i32 pd = t % TD;      /* phase-3 first dim */
    const kiln_i32 pr = (t / TD) * RPT; /* phase-3 first row */
    float acc[RPT][CPT];
    #pragma unroll
    for (kiln_i32 r = 0; r < RPT; ++r)
        #pragma unroll
        for (kiln_i32 c = 0; c < CPT; ++c) acc[r][c] = 0.0f;

    for (kiln_i64 kt = sp.lo; kt < sp.hi; kt += BK) {
        kiln_sync(); /* previous tile fully consumed (and qs / row state written) */
        /* Row offsets once per key, so the page lookup is not repeated per element. */
        kiln_kv_rows(&a, &s, b, hk, kt, sp.hi, BK, kv_row);
        kiln_sync();
        for (kiln_i32 e = t; e < BK * DMAX; e += NT) {
            kiln_i32 jj = e / DMAX, d = e % DMAX;
            kiln_elem kx = kiln_f32_to_elem(0.0f), vx = kiln_f32_to_elem(0.0f);
            if (kt + jj < sp.hi && d < hd) {
                kx = k[kv_row[jj][0] + d];
                vx = v[kv_row[jj][1] + d];
            }
            ks[jj][d] = kx;
            vs[jj][d] = vx;
        }
        kiln_sync();

        /* Phase 1: scores. */
        {
            const kiln_i32 c = t % BK;
            const kiln_i32 rg = t / BK;
            float dot[SROWS];
            #pragma unroll
            for (kiln_i32 r = 0; r < SROWS; ++r) dot[r] = 0.0f;
            for (kiln_i64 d = 0; d < hd; ++d) {
                float kv = kiln_elem_to_f32(ks[c][d]);
                #pragma unroll
                for (kiln_i32 r = 0; r < SROWS; ++r)
                    dot[r] += kiln_elem_to_f32(qs[rg + r * (NT / BK)][d]) * kv;
            }
            #pragma unroll
            for (kiln_i32 r = 0; r < SROWS; ++r) {
                const kiln_i32 row = rg + r * (NT / BK);
                const kiln_i64 i = row_i[row], j = kt + c;
                float x = dot[r] * a.scale;
                if (a.softcap != 0.0f) x = a.softcap * kiln_tanhf(x / a.softcap);
                if (a.alibi) {
                    kiln_i64 dist = i + sp.diag - j;
                    x -= row_slope[row] * (float)(dist < 0 ? -dist : dist);
                }
                const int visible =
                    j < sp.hi && kiln_key_visible(sp.band, (kiln_i32)(j - (i + sp.diag)));
                ss[row][c] = visible ? x : kiln_neg_inf();
            }
        }
        kiln_sync();

        /* Phase 2: online softmax. A row with nothing visible yet keeps max -inf and uses 0
         * as its reference so exp() gives 0, never NaN. A NaN score makes the max NaN (and
         * the row NaN, as in the reference); +inf gives exp(inf - inf) = NaN likewise. */
        if (t < BQ) {
            float m_old = row_m[t], m_new = m_old;
            for (kiln_i32 c = 0; c < BK; ++c) m_new = kiln_fmax_nan(m_new, ss[t][c]);
            float use = m_new == kiln_neg_inf() ? 0.0f : m_new;
            row_m[t] = m_new;
            row_use[t] = use;
            row_alpha[t] = kiln_expf(m_old - use);
        }
        kiln_sync();
        for (kiln_i32 e = t; e < BQ * BK; e += NT) {
            kiln_i32 r = e / BK, c = e % BK;
            ss[r][c] = kiln_expf(ss[r][c] - row_use[r]);
        }
        kiln_sync();
        if (t < BQ) {
            float sum = 0.0f;
            for (kiln_i32 c = 0; c < BK; ++c) sum += ss[t][c];
            row_l[t] = row_l[t] * row_alpha[t] + sum;
        }

        /* Phase 3: O = O * alpha + P V. */
        #pragma unroll
        for (kiln_i32 r = 0; r < RPT; ++r) {
            float al = row_alpha[pr + r];
            #pragma unroll
            for (kiln_i32 c = 0; c < CPT; ++c) acc[r][c] *= al;
        }
        for (kiln_i32 jj = 0; jj < BK; ++jj) {
            float vv[CPT];
            #pragma unroll
            for (kiln_i32 c = 0; c < CPT; ++c) vv[c] = kiln_elem_to_f32(vs[jj][pd + c * TD]);
            #pragma unroll
            for (kiln_i32 r = 0; r < RPT; ++r) {
                float p = ss[pr + r][jj];
                #pragma unroll
                for (kiln_i32 c = 0; c < CPT; ++c) acc[r][c] += p * vv[c];
            }
        }
    }
    kiln_sync(); /* row_m / row_l final; row_i / row_h written even when no tile ran */

    #pragma unroll
    for (kiln_i32 r = 0; r < RPT; ++r) {
        if (p0 + pr + r >= sp.rows) continue;
        const kiln_i64 i = row_i[pr + r], h = row_h[pr + r];
        const float l = row_l[pr + r];
        /* l is 0 exactly when no visible key contributed; NaN propagates. */
        const float inv = l != 0.0f ? 1.0f / l : 0.0f;
        const float lse = l != 0.0f ? row_m[pr + r] + kiln_logf(l) : kiln_neg_inf();
        const kiln_out_row o = kiln_out_row_of(&a, &s, split, i, h);
        #pragma unroll
        for (kiln_i32 c = 0; c < CPT; ++c) {
            const kiln_i64 d = pd + c * TD;
            if (d < hd) kiln_out_put(&o, d, acc[r][c] * inv);
        }
        if (pd == 0) kiln_out_lse(&o, lse);
    }
}
