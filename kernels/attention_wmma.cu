/*
 * Attention forward, AMD tensor tier: the generic kernel's contract (same arguments, row
 * packing, masks, soft-cap, ALiBi, LSE, split-KV workspace) with both products on
 * wave-level matrix instructions (kernels/wmma.h: WMMA on gfx11 / gfx12, MFMA on gfx9). A
 * variant is this file plus
 *   KILN_DTYPE      1 f16 | 2 bf16
 *   KILN_HEAD_DIM   64 | 128          exactly the runtime head_dim (others run generic)
 *   KILN_MASK, KILN_MODE              as in attention.cu
 *   KILN_WM_FAMILY  the target's instruction family (kernels/attention_wmma.h)
 * The host picks this kernel only when K and V rows can be read 16 bytes at a time.
 *
 * Grid (ceil(rows / 64), heads_kv, batch * num_splits), four waves: wave w owns packed
 * (query, head) rows 16w..16w+15 of the block's 64, and for each tile of 64 keys in the
 * block's visible range:
 *   K staged in LDS row-major and V transposed (global loads of 16 bytes, keys at or past
 *   the range's end stored as zeros, a paged row looked up once)
 *   S^T = K Q^T, one 16 x 16 tile per 16 keys: K rows are the A operand (read from LDS),
 *   Q^T the B operand (this lane's query; kept in registers for the whole loop), so the
 *   result puts one query in each lane column and its keys down the rows
 *   scale, soft-cap, ALiBi and mask on the accumulators, online softmax per lane column:
 *   a query's keys live in the lanes l, l ^ 16 (and l ^ 32, l ^ 48 on wave64), so its max
 *   takes one or two shuffles and its sum stays per lane until the end
 *   O^T += V^T P^T: V^T rows from LDS as A, the probabilities as B (the C layout already
 *   is the B layout on gfx12 and MFMA; gfx11 swaps half of it with lane ^ 16)
 * LDS: 64 * (D + 8) * 2 + D * 72 * 2 + 64 * 16 bytes = 37,888 at D = 128, within the
 * 64 KiB of every AMD target. Registers per lane at D = 128: Q^T 8 B operands, O^T 8
 * accumulators, S^T 4 accumulators (x 8 / 4 / 2 VGPRs on gfx11 / gfx12 / MFMA).
 */
#include "kiln_device.h"
#include "kiln_args.h"
#include "attention_wmma.h"
#include "wmma.h"
#include "attn_seq.h"

#if !defined(KILN_HEAD_DIM) || !defined(KILN_MASK) || !defined(KILN_MODE)
#error "KILN_HEAD_DIM, KILN_MASK and KILN_MODE must be defined"
#endif
#if KILN_HEAD_DIM != 64 && KILN_HEAD_DIM != 128
#error "the tensor tier compiles head_dim 64 and 128"
#endif
#if KILN_DTYPE != 1 && KILN_DTYPE != 2
#error "the tensor tier takes f16 or bf16"
#endif

#define D KILN_HEAD_DIM
#define BQ KILN_ATTN_WMMA_BLOCK_Q
#define BK KILN_ATTN_WMMA_BLOCK_K
#define WAVE KILN_WM_WAVE
#define NT (KILN_ATTN_WMMA_WAVES * WAVE)
#define LDK (D + 8)  /* K row pitch in LDS */
#define LDV (BK + 8) /* V^T row pitch */
#define NKT (BK / 16) /* key tiles of S^T */
#define NDT (D / 16)  /* head-dim tiles: k-steps of S^T, row tiles of O^T */
#define KILN_LOG2E 1.4426950408889634f
#define KILN_LN2 0.6931471805599453f

/* gfx11 repeats B in both half-waves, so Q^T in registers costs D / 2 VGPRs: at D = 128
 * that pushes the kernel past 256 VGPRs, and Q is read from LDS instead. */
#if KILN_WM_FAMILY == KILN_WM_GFX11 && D == 128
#define KILN_WM_Q_LDS 1
#else
#define KILN_WM_Q_LDS 0
#endif

#if BQ != 16 * KILN_ATTN_WMMA_WAVES
#error "one wave per 16 rows"
#endif

/* The same value in every lane of a query's column group: max (NaN-propagating) or sum
 * over the lanes l, l ^ 16, ... of the wave. */
KILN_DEV float kiln_wm_col_max(float x)
{
    #pragma unroll
    for (kiln_i32 m = 16; m < WAVE; m *= 2)
        x = kiln_fmax_nan(x, kiln_bits_f32(kiln_wm_shfl_xor(kiln_f32_bits(x), m)));
    return x;
}
KILN_DEV float kiln_wm_col_sum(float x)
{
    #pragma unroll
    for (kiln_i32 m = 16; m < WAVE; m *= 2)
        x += kiln_bits_f32(kiln_wm_shfl_xor(kiln_f32_bits(x), m));
    return x;
}

KILN_KERNEL(NT) kiln_attn_fwd(kiln_attn_args a)
{
    KILN_SHARED KILN_WM_ALIGN16 kiln_elem ks[BK][LDK];
    KILN_SHARED KILN_WM_ALIGN16 kiln_elem vt[D][LDV];
    KILN_SHARED kiln_i64 kv_row[BK][2];
#if KILN_WM_Q_LDS
    KILN_SHARED KILN_WM_ALIGN16 kiln_elem qs[BQ][LDK];
#endif
    /* The stream's previous kernel may still run (kernels/vendor/cuda.h): no global access
     * before this. */
    kiln_grid_wait();
    kiln_grid_release();

    const kiln_i32 tid = kiln_thread_x();
    const kiln_i32 lane = tid % WAVE, wave = tid / WAVE, col = lane % 16;
    const kiln_i64 hk = kiln_block_y();
    const kiln_i64 b = kiln_block_z() / a.num_splits;
    const kiln_i64 split = kiln_block_z() % a.num_splits;
    const kiln_i64 group = a.heads_q / a.heads_kv;
    const kiln_seq s = kiln_seq_of(&a, b);
    /* Under a causal mask (or a window open to the left) blocks of later queries see more
     * keys: those start first, so the short ones fill the tail of the grid. */
#if KILN_MASK == KILN_MASK_FULL
    const kiln_i64 p0 = kiln_block_x() * BQ;
#else
    const kiln_i64 p0 = (kiln_wm_grid_x() - 1 - kiln_block_x()) * BQ;
#endif
    const kiln_i64 rows = s.sq * group;
    if (p0 >= rows) return; /* whole block leaves together: no barrier is skipped */

    const kiln_i64 diag = s.sk - s.sq; /* key j is on row i's diagonal when j == i + diag */
    kiln_i64 lo, hi;
    kiln_key_range(&a, &s, p0, BQ, rows, group, split, &lo, &hi);
#if KILN_MASK != KILN_MASK_FULL
    const kiln_i64 i0 = p0 / group;
    const kiln_i64 i_last = ((p0 + BQ < rows ? p0 + BQ : rows) - 1) / group;
    const kiln_i32 wl = (kiln_i32)(a.window_left > (1 << 30) ? (1 << 30) : a.window_left);
#if KILN_MASK == KILN_MASK_WINDOW
    const kiln_i32 wr = (kiln_i32)(a.window_right > (1 << 30) ? (1 << 30) : a.window_right);
#endif
#endif

    const kiln_elem *q = (const kiln_elem *)a.q;
    const kiln_elem *k = (const kiln_elem *)a.k;
    const kiln_elem *v = (const kiln_elem *)a.v;

    /* This lane's row: column col of the wave's tiles. A row past the end computes on the
     * last row's data and is not stored. */
    const kiln_i64 p = p0 + wave * 16 + col;
    const int live = p < rows;
    const kiln_i64 pc = live ? p : rows - 1;
    const kiln_i64 ri = pc / group, rh = hk * group + pc % group;
    const float slope = a.alibi ? a.alibi[b * a.alibi_stride_batch + rh] * KILN_LOG2E : 0.0f;
    /* Scores live in base-2 units (natural logit * log2 e) so each weight is one exp2. */
    const float scale2 = a.scale * KILN_LOG2E, softcap2 = a.softcap * KILN_LOG2E;
    const float capin = a.softcap != 0.0f ? a.scale / a.softcap : 0.0f;

#if KILN_WM_Q_LDS
    /* Each wave stages its 16 rows; only it reads them. */
    for (kiln_i32 x = lane; x < 16 * D; x += WAVE) {
        const kiln_i32 r = x / D, c = x % D;
        const kiln_i64 pr = p0 + wave * 16 + r < rows ? p0 + wave * 16 + r : rows - 1;
        qs[wave * 16 + r][c] = q[s.q_off + pr / group * a.q_stride_row +
                                 (hk * group + pr % group) * a.q_stride_head + c];
    }
    kiln_sync();
#else
    kiln_wm_ab qf[NDT];
    {
        const kiln_i64 at = s.q_off + ri * a.q_stride_row + rh * a.q_stride_head;
        #pragma unroll
        for (kiln_i32 kc = 0; kc < NDT; ++kc)
            #pragma unroll
            for (kiln_i32 e = 0; e < KILN_WM_AB_N; ++e)
                qf[kc][e] = q[at + kc * 16 + kiln_wm_ab_k(lane, e)];
    }
#endif
    kiln_wm_c o[NDT];
    #pragma unroll
    for (kiln_i32 n = 0; n < NDT; ++n)
        #pragma unroll
        for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) o[n][e] = 0.0f;
    float m = kiln_neg_inf(), l = 0.0f;

    const kiln_i64 ntiles = hi > lo ? (hi - lo + BK - 1) / BK : 0;
    for (kiln_i64 t = 0; t < ntiles; ++t) {
        const kiln_i64 kt = lo + t * BK;
        if (tid < BK && kt + tid < hi) {
            kiln_i64 ko, vo;
            kiln_kv_row(&a, &s, b, kt + tid, &ko, &vo);
            kv_row[tid][0] = ko + hk * a.k_stride_head;
            kv_row[tid][1] = vo + hk * a.v_stride_head;
        }
        kiln_sync();
        /* Keys at or past hi become zeros, not stale rows: a masked key's weight is 0, and
         * 0 * NaN would not be. */
        #pragma unroll 1
        for (kiln_i32 x = tid; x < BK * (D / 8); x += NT) {
            const kiln_i32 jj = x / (D / 8), c = (x % (D / 8)) * 8;
            kiln_wm_u16x8 kx = {0}, vx = {0};
            if (kt + jj < hi) {
                kx = kiln_wm_load8(k + kv_row[jj][0] + c);
                vx = kiln_wm_load8(v + kv_row[jj][1] + c);
            }
            kiln_wm_store8(&ks[jj][c], kx);
            #pragma unroll
            for (kiln_i32 i = 0; i < 8; ++i) vt[c + i][jj] = vx[i];
        }
        kiln_sync();

        kiln_wm_c sc[NKT];
        #pragma unroll
        for (kiln_i32 n = 0; n < NKT; ++n)
            #pragma unroll
            for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) sc[n][e] = 0.0f;
#if KILN_WM_Q_LDS
        /* Not unrolled fully: the compiler would hoist every fragment load of the tile. */
        #pragma unroll 2
#else
        #pragma unroll
#endif
        for (kiln_i32 kc = 0; kc < NDT; ++kc) {
#if KILN_WM_Q_LDS
            const kiln_wm_ab qb = kiln_wm_load_frag(&qs[wave * 16][kc * 16], LDK);
#else
            const kiln_wm_ab qb = qf[kc];
#endif
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; ++n)
                sc[n] = kiln_wm_mma(kiln_wm_load_frag(&ks[n * 16][kc * 16], LDK), qb, sc[n]);
        }

        /* Block-uniform: no key of this tile is masked for any row of the block. */
        int whole = kt + BK <= hi;
#if KILN_MASK != KILN_MASK_FULL
        if (a.window_left >= 0 && kt < i_last + diag - a.window_left) whole = 0;
#if KILN_MASK == KILN_MASK_CAUSAL
        if (kt + BK - 1 > i0 + diag) whole = 0;
#else
        if (a.window_right >= 0 && kt + BK - 1 > i0 + diag + a.window_right) whole = 0;
#endif
#endif
        /* Masks in 32-bit tile coordinates: key kt + jj is on this row's diagonal when
         * jj == dr; window sizes beyond any sequence are clamped so they still fit. */
        const kiln_i32 lim = (kiln_i32)(hi - kt < BK ? hi - kt : BK);
        const kiln_i32 dr = (kiln_i32)(ri + diag - kt);
        /* Each pass is one branch around an unrolled loop, not a branch per element. */
        if (a.softcap != 0.0f) {
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; ++n)
                #pragma unroll
                for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e)
                    sc[n][e] = softcap2 * kiln_tanhf(sc[n][e] * capin);
        } else {
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; ++n)
                #pragma unroll
                for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) sc[n][e] *= scale2;
        }
        if (a.alibi) {
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; ++n)
                #pragma unroll
                for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) {
                    const kiln_i32 dist = dr - n * 16 - kiln_wm_c_row(lane, e);
                    sc[n][e] -= slope * (float)(dist < 0 ? -dist : dist);
                }
        }
        if (!whole) {
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; ++n)
                #pragma unroll
                for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) {
                    const kiln_i32 jj = n * 16 + kiln_wm_c_row(lane, e);
                    int visible = jj < lim;
#if KILN_MASK != KILN_MASK_FULL
                    if (wl >= 0 && jj < dr - wl) visible = 0;
#if KILN_MASK == KILN_MASK_CAUSAL
                    if (jj > dr) visible = 0;
#else
                    if (wr >= 0 && jj > dr + wr) visible = 0;
#endif
#endif
                    if (!visible) sc[n][e] = kiln_neg_inf();
                }
        }
        float mx = m;
        #pragma unroll
        for (kiln_i32 n = 0; n < NKT; ++n)
            #pragma unroll
            for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) mx = kiln_fmax_nan(mx, sc[n][e]);
        mx = kiln_wm_col_max(mx);
        /* A row with nothing visible yet keeps max -inf and uses 0 as its reference, so
         * exp() gives 0, never NaN; a NaN score makes the max, and the row, NaN, and +inf
         * gives exp(inf - inf) = NaN, as in the reference. */
        const float use = mx == kiln_neg_inf() ? 0.0f : mx;
        const float alpha = kiln_wm_exp2f(m - use);
        m = mx;
        l *= alpha;
        #pragma unroll
        for (kiln_i32 n = 0; n < NDT; ++n)
            #pragma unroll
            for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) o[n][e] *= alpha;

        /* One key tile at a time: its probabilities become a B operand and are consumed
         * by every O^T row tile before the next tile's are made. */
        #pragma unroll
        for (kiln_i32 n = 0; n < NKT; ++n) {
            float pr[KILN_WM_C_N];
            #pragma unroll
            for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e) {
                pr[e] = kiln_wm_exp2f(sc[n][e] - use);
                l += pr[e];
            }
            const kiln_wm_ab pb = kiln_wm_p_operand(pr);
            #pragma unroll
            for (kiln_i32 dn = 0; dn < NDT; ++dn) {
                o[dn] = kiln_wm_mma(kiln_wm_load_frag(&vt[dn * 16][n * 16], LDV), pb, o[dn]);
            }
        }
        kiln_sync(); /* every wave is done with ks, vt and kv_row */
    }

    l = kiln_wm_col_sum(l);
    if (!live) return;
    {
        const kiln_i64 i = ri, h = rh;
        /* l is 0 exactly when no visible key contributed; NaN propagates. */
        const float inv = l != 0.0f ? 1.0f / l : 0.0f;
        const float lse = l != 0.0f ? m * KILN_LN2 + kiln_logf(l) : kiln_neg_inf();
        if (a.num_splits > 1) {
            const kiln_i64 wrow = (split * a.rows_q + s.row0 + i) * a.heads_q + h;
            #pragma unroll
            for (kiln_i32 dn = 0; dn < NDT; ++dn)
                #pragma unroll
                for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e)
                    a.ws_out[wrow * D + dn * 16 + kiln_wm_c_row(lane, e)] = o[dn][e] * inv;
            if (lane < 16) a.ws_lse[wrow] = lse;
        } else {
            kiln_elem *out = (kiln_elem *)a.out;
            const kiln_i64 at = s.o_off + i * a.o_stride_row + h * a.o_stride_head;
            #pragma unroll
            for (kiln_i32 dn = 0; dn < NDT; ++dn)
                #pragma unroll
                for (kiln_i32 e = 0; e < KILN_WM_C_N; ++e)
                    out[at + dn * 16 + kiln_wm_c_row(lane, e)] = kiln_f32_to_elem(o[dn][e] * inv);
            if (lane < 16 && a.lse)
                a.lse[s.lse_off + h * a.lse_stride_head + i * a.lse_stride_row] = lse;
        }
    }
}
