/*
 * Attention forward, NVIDIA tensor tier (sm_80+): the generic kernel's contract (same
 * arguments, row packing, masks, soft-cap, ALiBi, LSE, split-KV workspace) with both
 * products on warp-level mma.sync (kernels/mma.h). A variant is this file plus
 *   KILN_DTYPE     1 f16 | 2 bf16
 *   KILN_HEAD_DIM  64 | 128          exactly the runtime head_dim (others run generic)
 *   KILN_MASK, KILN_MODE             as in attention.cu
 * The host picks this kernel only when K and V rows can be read 16 bytes at a time (base
 * pointers 16-byte aligned, every K / V stride a multiple of 8 elements).
 *
 * Grid (ceil(rows / KILN_ATTN_TENSOR_BLOCK_Q), heads_kv, batch * num_splits), 4 warps: a
 * block owns 64 packed (query, head) rows, warp w rows 16w..16w+15, and for each tile of
 * 64 keys in the block's visible range:
 *   K and V tiles staged in shared memory by cp.async, V_t while S_t is computed and
 *   K_t+1 while P_t V_t is (16-byte copies; a paged row looked up once)
 *   S = Q K^T on mma (Q fragments stay in registers for the whole loop), then scale,
 *   soft-cap, ALiBi and mask on the accumulator registers
 *   online softmax in registers: a row lives in the 4 lanes of a quad, so its max needs
 *   two xor-shuffles; its sum stays per lane until the end
 *   P is rounded to the element type straight from the accumulator layout (an m16n8 C
 *   tile pair is exactly an m16k16 A fragment) and O += P V on mma, V's fragments read
 *   transposed by ldmatrix.trans
 * Shared memory: 2 * 64 * (D + 8) * 2 + 2 * 64 * 16 bytes = 36,864 at D = 128. The row
 * pad of 8 elements puts the 8 rows of each fragment load in different banks.
 */
#include "kiln_device.h"
#include "kiln_args.h"
#include "mma.h"
#include "attention_mma.h"
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
#define BQ KILN_ATTN_TENSOR_BLOCK_Q
#define BK KILN_ATTN_TENSOR_BLOCK_K
#define NT KILN_ATTN_THREADS
#define LDS (D + 8)
#define NKT (BK / 8)  /* score tiles (n = 8 keys) per warp */
#define NDT (D / 8)   /* output tiles (n = 8 dims) per warp */
#define NKC (D / 16)  /* k-steps of Q K^T over the head dim */
#define NPC (BK / 16) /* k-steps of P V over the keys */
#define KILN_LOG2E 1.4426950408889634f
#define KILN_LN2 0.6931471805599453f

#if BQ != 16 * (NT / 32)
#error "one warp per 16 rows"
#endif


/* Offsets of the K and V rows (head hk) of keys kt.. kt + BK - 1 below hi. */
KILN_DEV void kiln_kv_rows(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b, kiln_i64 hk,
                           kiln_i64 kt, kiln_i64 hi, kiln_i64 rows[BK][2])
{
    const kiln_i32 tid = kiln_thread_x();
    if (tid < BK && kt + tid < hi) {
        kiln_i64 ko, vo;
        kiln_kv_row(a, s, b, kt + tid, &ko, &vo);
        rows[tid][0] = ko + hk * a->k_stride_head;
        rows[tid][1] = vo + hk * a->v_stride_head;
    }
}

/* Starts the copy of one K or V tile (which: 0 K, 1 V); keys at or past hi become zeros,
 * not stale rows: a masked key's weight is 0, and 0 * NaN would not be. */
KILN_DEV void kiln_tile_issue(kiln_elem dst[BK][LDS], const kiln_elem *src,
                              const kiln_i64 rows[BK][2], kiln_i32 which, kiln_i64 kt,
                              kiln_i64 hi)
{
    for (kiln_i32 e = kiln_thread_x(); e < BK * (D / 8); e += NT) {
        const kiln_i32 jj = e / (D / 8), c = (e % (D / 8)) * 8;
        const int valid = kt + jj < hi;
        kiln_cp_async16(&dst[jj][c], valid ? src + rows[jj][which] + c : src, valid);
    }
}

KILN_KERNEL(NT) kiln_attn_fwd(kiln_attn_args a)
{
    KILN_SHARED KILN_ALIGN16 kiln_elem ks[BK][LDS];
    KILN_SHARED KILN_ALIGN16 kiln_elem vs[BK][LDS];
    KILN_SHARED kiln_i64 kv_row[2][BK][2];

    const kiln_i32 tid = kiln_thread_x();
    const kiln_i32 lane = tid % 32, warp = tid / 32;
    const kiln_i32 g = lane / 4, tq = lane % 4;
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
    const kiln_i64 p0 = (kiln_grid_x() - 1 - kiln_block_x()) * BQ;
#endif
    const kiln_i64 rows = s.sq * group;
    if (p0 >= rows) return; /* whole block leaves together: no barrier is skipped */

    const kiln_i64 diag = s.sk - s.sq; /* key j is on row i's diagonal when j == i + diag */
    kiln_i64 lo, hi;
    kiln_key_range(&a, &s, p0, BQ, rows, group, split, &lo, &hi);
#if KILN_MASK != KILN_MASK_FULL
    /* The block's first and last query, to tell tiles no row masks. */
    const kiln_i64 i0 = p0 / group;
    const kiln_i64 i_last = ((p0 + BQ < rows ? p0 + BQ : rows) - 1) / group;
#endif

    const kiln_elem *q = (const kiln_elem *)a.q;
    const kiln_elem *k = (const kiln_elem *)a.k;
    const kiln_elem *v = (const kiln_elem *)a.v;

    /* This lane's two rows (fragment rows g and g + 8 of the warp's 16). Rows past the end
     * compute on the last row's data and are not stored. */
    kiln_i64 ri[2], rh[2];
    float slope[2];
    int live[2];
    #pragma unroll
    for (kiln_i32 r = 0; r < 2; ++r) {
        const kiln_i64 p = p0 + warp * 16 + g + 8 * r;
        const kiln_i64 pc = p < rows ? p : rows - 1;
        live[r] = p < rows;
        ri[r] = pc / group;
        rh[r] = hk * group + pc % group;
        slope[r] = a.alibi ? a.alibi[b * a.alibi_stride_batch + rh[r]] * KILN_LOG2E : 0.0f;
    }

#if KILN_MASK != KILN_MASK_FULL
    const kiln_i32 wl = (kiln_i32)(a.window_left > (1 << 30) ? (1 << 30) : a.window_left);
#if KILN_MASK == KILN_MASK_WINDOW
    const kiln_i32 wr = (kiln_i32)(a.window_right > (1 << 30) ? (1 << 30) : a.window_right);
#endif
#endif
    /* Scores live in base-2 units (natural logit * log2 e) so each weight is one exp2. */
    const float scale2 = a.scale * KILN_LOG2E, softcap2 = a.softcap * KILN_LOG2E;
    kiln_u32 qf[NKC][4];
    #pragma unroll
    for (kiln_i32 kc = 0; kc < NKC; ++kc)
        #pragma unroll
        for (kiln_i32 x = 0; x < 4; ++x) {
            const kiln_i32 r = x & 1, half = x >> 1;
            const kiln_i64 at = s.q_off + ri[r] * a.q_stride_row + rh[r] * a.q_stride_head +
                                kc * 16 + half * 8 + 2 * tq;
            qf[kc][x] = (kiln_u32)q[at] | ((kiln_u32)q[at + 1] << 16);
        }

    float o[NDT][4];
    #pragma unroll
    for (kiln_i32 n = 0; n < NDT; ++n)
        #pragma unroll
        for (kiln_i32 x = 0; x < 4; ++x) o[n][x] = 0.0f;
    float m[2], l[2];
    m[0] = m[1] = kiln_neg_inf();
    l[0] = l[1] = 0.0f;

    /* Pipeline, one buffer each for K and V: V_t is copied while S_t and the softmax run,
     * K_t+1 while O += P_t V_t runs. cp.async groups retire in order, so "at most one in
     * flight" always means "all but the newest". Row offsets go through shared memory,
     * double-buffered, so a page is looked up once per key. */
    const kiln_i64 ntiles = hi > lo ? (hi - lo + BK - 1) / BK : 0;
    if (ntiles > 0) {
        kiln_kv_rows(&a, &s, b, hk, lo, hi, kv_row[0]);
        kiln_sync();
        kiln_tile_issue(ks, k, kv_row[0], 0, lo, hi);
    }
    kiln_cp_async_commit();

    for (kiln_i64 t = 0; t < ntiles; ++t) {
        const kiln_i64 kt = lo + t * BK;
        const kiln_i32 cur = (kiln_i32)(t & 1);
        kiln_tile_issue(vs, v, kv_row[cur], 1, kt, hi);
        kiln_cp_async_commit();
        if (t + 1 < ntiles) kiln_kv_rows(&a, &s, b, hk, kt + BK, hi, kv_row[cur ^ 1]);
        kiln_cp_async_wait1(); /* K_t */
        kiln_sync();

        float sc[NKT][4];
        #pragma unroll
        for (kiln_i32 n = 0; n < NKT; ++n) {
            #pragma unroll
            for (kiln_i32 x = 0; x < 4; ++x) sc[n][x] = 0.0f;
            #pragma unroll
            for (kiln_i32 kc = 0; kc < NKC; ++kc) {
                kiln_u32 bf[2];
                bf[0] = kiln_lds32(&ks[n * 8 + g][kc * 16 + 2 * tq]);
                bf[1] = kiln_lds32(&ks[n * 8 + g][kc * 16 + 8 + 2 * tq]);
                kiln_mma16816(sc[n], qf[kc], bf, sc[n]);
            }
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
        /* Masks in 32-bit tile coordinates: key kt + jj of row r is on the diagonal when
         * jj == dr[r]; window sizes beyond any sequence are clamped so they still fit. */
        const kiln_i32 lim = (kiln_i32)(hi - kt < BK ? hi - kt : BK);
        kiln_i32 dr[2];
        dr[0] = (kiln_i32)(ri[0] + diag - kt);
        dr[1] = (kiln_i32)(ri[1] + diag - kt);
        float mx[2];
        mx[0] = m[0];
        mx[1] = m[1];
        #pragma unroll
        for (kiln_i32 n = 0; n < NKT; ++n)
            #pragma unroll
            for (kiln_i32 x = 0; x < 4; ++x) {
                const kiln_i32 r = x >> 1;
                const kiln_i32 jj = n * 8 + 2 * tq + (x & 1);
                float y;
                if (a.softcap != 0.0f)
                    y = softcap2 * kiln_tanhf(sc[n][x] * a.scale / a.softcap);
                else
                    y = sc[n][x] * scale2;
                if (a.alibi) {
                    const kiln_i32 dist = dr[r] - jj;
                    y -= slope[r] * (float)(dist < 0 ? -dist : dist);
                }
                int visible = 1;
                if (!whole) {
                    visible = jj < lim;
#if KILN_MASK != KILN_MASK_FULL
                    if (wl >= 0 && jj < dr[r] - wl) visible = 0;
#if KILN_MASK == KILN_MASK_CAUSAL
                    if (jj > dr[r]) visible = 0;
#else
                    if (wr >= 0 && jj > dr[r] + wr) visible = 0;
#endif
#endif
                }
                sc[n][x] = visible ? y : kiln_neg_inf();
                mx[r] = kiln_fmax_nan(mx[r], sc[n][x]);
            }
        /* A row with nothing visible yet keeps max -inf and uses 0 as its reference, so
         * exp() gives 0, never NaN; a NaN score makes the max, and the row, NaN. */
        float use[2], alpha[2];
        #pragma unroll
        for (kiln_i32 r = 0; r < 2; ++r) {
            mx[r] = kiln_fmax_nan(mx[r], kiln_shfl_xor(mx[r], 1));
            mx[r] = kiln_fmax_nan(mx[r], kiln_shfl_xor(mx[r], 2));
            use[r] = mx[r] == kiln_neg_inf() ? 0.0f : mx[r];
            alpha[r] = kiln_exp2f(m[r] - use[r]);
            m[r] = mx[r];
            l[r] *= alpha[r];
        }
        #pragma unroll
        for (kiln_i32 n = 0; n < NDT; ++n) {
            o[n][0] *= alpha[0];
            o[n][1] *= alpha[0];
            o[n][2] *= alpha[1];
            o[n][3] *= alpha[1];
        }

        kiln_sync(); /* every warp is done with ks */
        if (t + 1 < ntiles) kiln_tile_issue(ks, k, kv_row[cur ^ 1], 0, kt + BK, hi);
        kiln_cp_async_commit();
        kiln_cp_async_wait1(); /* V_t */
        kiln_sync();

        #pragma unroll
        for (kiln_i32 kc = 0; kc < NPC; ++kc) {
            kiln_u32 pf[4];
            #pragma unroll
            for (kiln_i32 hf = 0; hf < 2; ++hf) {
                const float *c = sc[2 * kc + hf];
                const float e0 = kiln_exp2f(c[0] - use[0]), e1 = kiln_exp2f(c[1] - use[0]);
                const float e2 = kiln_exp2f(c[2] - use[1]), e3 = kiln_exp2f(c[3] - use[1]);
                l[0] += e0 + e1;
                l[1] += e2 + e3;
                pf[2 * hf] = kiln_pack2(e0, e1);
                pf[2 * hf + 1] = kiln_pack2(e2, e3);
            }
            /* B[k][n] = V[key][dim] pairs two keys of one dim: V read transposed, two
             * output tiles per ldmatrix (matrices: keys 0-7 and 8-15 of dims n, then of
             * dims n + 1). */
            #pragma unroll
            for (kiln_i32 n = 0; n < NDT; n += 2) {
                const kiln_i32 mi = lane / 8;
                kiln_u32 bf[4];
                kiln_ldmatrix_x4_trans(
                    bf, &vs[kc * 16 + (mi & 1) * 8 + lane % 8][(n + (mi >> 1)) * 8]);
                kiln_mma16816(o[n], pf, bf, o[n]);
                kiln_mma16816(o[n + 1], pf, bf + 2, o[n + 1]);
            }
        }
        kiln_sync(); /* every warp is done with vs */
    }

    #pragma unroll
    for (kiln_i32 r = 0; r < 2; ++r) {
        l[r] += kiln_shfl_xor(l[r], 1);
        l[r] += kiln_shfl_xor(l[r], 2);
    }
    #pragma unroll
    for (kiln_i32 r = 0; r < 2; ++r) {
        if (!live[r]) continue;
        const kiln_i64 i = ri[r], h = rh[r];
        /* l is 0 exactly when no visible key contributed; NaN propagates. */
        const float inv = l[r] != 0.0f ? 1.0f / l[r] : 0.0f;
        const float lse = l[r] != 0.0f ? m[r] * KILN_LN2 + kiln_logf(l[r]) : kiln_neg_inf();
        if (a.num_splits > 1) {
            const kiln_i64 wrow = (split * a.rows_q + s.row0 + i) * a.heads_q + h;
            #pragma unroll
            for (kiln_i32 n = 0; n < NDT; ++n) {
                const kiln_i64 d = n * 8 + 2 * tq;
                a.ws_out[wrow * D + d] = o[n][2 * r] * inv;
                a.ws_out[wrow * D + d + 1] = o[n][2 * r + 1] * inv;
            }
            if (tq == 0) a.ws_lse[wrow] = lse;
        } else {
            kiln_elem *out = (kiln_elem *)a.out;
            const kiln_i64 at = s.o_off + i * a.o_stride_row + h * a.o_stride_head + 2 * tq;
            #pragma unroll
            for (kiln_i32 n = 0; n < NDT; ++n) {
                out[at + n * 8] = kiln_f32_to_elem(o[n][2 * r] * inv);
                out[at + n * 8 + 1] = kiln_f32_to_elem(o[n][2 * r + 1] * inv);
            }
            if (tq == 0 && a.lse)
                a.lse[s.lse_off + h * a.lse_stride_head + i * a.lse_stride_row] = lse;
        }
    }
}
