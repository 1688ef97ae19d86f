/*
 * Attention forward, NVIDIA tensor tier (sm_80+): the generic kernel's contract (same
 * arguments, row packing, masks, soft-cap, ALiBi, LSE, split-KV workspace) with both
 * products on warp-level mma.sync (kernels/mma.h). A variant is this file plus
 *   KILN_DTYPE     1 f16 | 2 bf16
 *   KILN_HEAD_DIM  32 | 64 | 80 | 96 | 128 | 160 | 192 | 256: the compiled width; the
 *                  runtime head_dim (a multiple of 8) may be smaller, its extra columns
 *                  are zero in shared memory and never stored
 *   KILN_MASK, KILN_MODE             as in attention.cu
 *   KILN_TQ_LONG_TILES  1 for sm_90's long key tiles (attention_mma.h), else absent
 * The launch shape per head dim (warps, m16 tiles per warp, keys per tile, stages, where
 * the Q fragments live) is in attention_mma.h with how it was chosen. The host picks this
 * kernel only when Q, K and V rows can be read 16 bytes at a time (base pointers 16-byte
 * aligned, every stride a multiple of 8 elements) and the shared memory fits the device.
 *
 * Grid (ceil(rows / BQ), heads_kv, batch * num_splits); a block owns BQ = 16 * MT * warps
 * packed (query, head) rows, warp w the MT m16 tiles w * MT .. w * MT + MT - 1, and:
 *   Q (128 x D) is copied to shared memory once; where the shape keeps Q in registers its
 *   A fragments are read from there once, else each k-step reads them (ldmatrix)
 *   K and V tiles of BK keys go through a ring of ST stages filled by cp.async: while tile
 *   t is computed, tiles t + 1 .. t + ST - 1 are in flight (a paged row is looked up once
 *   per key, into a ring of row offsets)
 *   per tile: S = Q K^T on mma (K fragments by ldmatrix, each used by all MT tiles of the
 *   warp), then scale, soft-cap, ALiBi and mask on the accumulator registers
 *   online softmax in registers: a row lives in the 4 lanes of a quad, so its max needs
 *   two xor-shuffles; its sum stays per lane until the end
 *   P is rounded to the element type straight from the accumulator layout (an m16n8 C
 *   tile pair is exactly an m16k16 A fragment) and O += P V on mma, V's fragments read
 *   transposed by ldmatrix.trans
 * NaN / inf follow the fp64 reference: whether a row has a visible key is decided from the
 * mask and key range, never from its running max, so a NaN score or exp(inf - inf) makes
 * the row NaN. Keys past the block's range are zero-filled, never read.
 */
#include "kiln_device.h"
#include "kiln_args.h"
#include "mma.h"
#include "attention_mma.h"
#include "attn_seq.h"
#include "memory.h"

#if !defined(KILN_HEAD_DIM) || !defined(KILN_MASK) || !defined(KILN_MODE)
#error "KILN_HEAD_DIM, KILN_MASK and KILN_MODE must be defined"
#endif
#if KILN_HEAD_DIM != 32 && KILN_HEAD_DIM != 64 && KILN_HEAD_DIM != 80 && KILN_HEAD_DIM != 96 && \
    KILN_HEAD_DIM != 128 && KILN_HEAD_DIM != 160 && KILN_HEAD_DIM != 192 && KILN_HEAD_DIM != 256
#error "the tensor tier compiles head_dim 32, 64, 80, 96, 128, 160, 192 and 256"
#endif
#if KILN_DTYPE != 1 && KILN_DTYPE != 2
#error "the tensor tier takes f16 or bf16"
#endif

#define D KILN_HEAD_DIM
/* The shape macros' flags (attention_mma.h): KILN_TQ_LONG_TILES=1 from the host for sm_90. */
#ifndef KILN_TQ_LONG_TILES
#define KILN_TQ_LONG_TILES 0
#endif
#define PG ((KILN_MODE == KILN_MODE_ID_PAGED ? KILN_TQ_PAGED : 0) | (KILN_TQ_LONG_TILES ? KILN_TQ_LONG : 0))
#define NW KILN_TQ_WARPS(D, PG)
#define MT KILN_TQ_MTILES(D, PG)
#define BK KILN_TQ_BLOCK_K(D, PG)
#define ST KILN_TQ_STAGES(D, PG)
#define QREG KILN_TQ_Q_IN_REGS(D, PG)
#define BQ KILN_TQ_BLOCK_Q(D, PG)
#define NT KILN_TQ_THREADS(D, PG)
#define LDS KILN_TQ_LDS(D)
#define NKT (BK / 8)  /* score tiles (n = 8 keys) per m16 tile */
#define NDT (D / 8)   /* output tiles (n = 8 dims) per m16 tile */
#define NKC (D / 16)  /* k-steps of Q K^T over the head dim */
#define NPC (BK / 16) /* k-steps of P V over the keys */
#define KILN_LOG2E 1.4426950408889634f
#define KILN_LN2 0.6931471805599453f

#if BQ != 16 * MT * NW || ST < 2 || NDT % 2 || NKT % 2
#error "inconsistent tensor-tier shape"
#endif

/* Shared memory: ST stages of (K tile, V tile), the Q tile, then ST x BK x 2 row offsets.
 * Where Q's fragments live in registers, the Q tile starts at the last stage's space (the
 * fragments are read before that stage is first filled) and runs past the stages by what
 * exceeds one stage (BQ > 2 x BK rows, e.g. 128 rows over 32-key tiles); else it follows
 * the stages. */
#define Q_ELEMS (BQ * LDS)
#define TILE_ELEMS (BK * LDS)
#define STAGE_AT(x) (2 * (x) * TILE_ELEMS)
#if QREG
#define Q_AT STAGE_AT(ST - 1)
#if Q_ELEMS > 2 * TILE_ELEMS
#define ROWS_OFFSET ((Q_AT + Q_ELEMS) * 2)
#else
#define ROWS_OFFSET (STAGE_AT(ST) * 2)
#endif
#else
#define Q_AT STAGE_AT(ST)
#define ROWS_OFFSET ((STAGE_AT(ST) + Q_ELEMS) * 2)
#endif
/* Per-row constants after the row offsets, read where they are used rather than held in
 * registers through the key loop: each row's kiln_out_row (the output or workspace row and
 * the LSE slot, two pointers), its diagonal and first visible key (int32) and its ALiBi
 * slope (float). */
#define ROWINFO_OFFSET (ROWS_OFFSET + KILN_TQ_ROWS_BYTES(D, PG))
#if ROWINFO_OFFSET + BQ * 28 != KILN_TQ_SMEM_BYTES(D, PG)
#error "attention_mma.h sizes shared memory differently"
#endif

/* Paged K / V rows are looked up once per key into a ring of row offsets in shared memory;
 * otherwise a key's row is an affine function of its index, computed where it is copied
 * (nothing per sequence held in registers through the key loop). */
#define RING (KILN_MODE == KILN_MODE_ID_PAGED)

/* Whether an unsplit block's output goes through shared memory (the stages' space, which
 * must hold BQ rows of LDS elements: 2 x ST x BK rows do) as whole 16-byte pieces of rows. */
#ifndef KILN_TQ_STAGE_OUT
#define KILN_TQ_STAGE_OUT 1
#endif
#define STAGE_OUT (KILN_TQ_STAGE_OUT && BQ <= 2 * ST * BK)

/* A finished row, for both ways out of the kernel. kiln_row_sum: its sum over the quad
 * from this lane's part l (two xor-shuffles: every lane of the warp makes the call).
 * seen: whether the row has a visible key in the block's range (first visible key < nk),
 * by the mask and key range, never by the sum; a row that has one has a sum of at least 1,
 * or NaN. kiln_row_inv: what its output is multiplied by, 1 / sum or 0. kiln_row_lse: its
 * LSE from the sum and its running max m (base-2 units), or -inf. (Three functions, not
 * one: the staged output computes the LSE only in the lanes that store it.) */
KILN_DEV float kiln_row_sum(float l)
{
    l += kiln_shfl_xor(l, 1);
    return l + kiln_shfl_xor(l, 2);
}
KILN_DEV float kiln_row_inv(float sum, int seen) { return seen ? 1.0f / sum : 0.0f; }
KILN_DEV float kiln_row_lse(float sum, float m, int seen)
{
    return seen ? m * KILN_LN2 + kiln_logf(sum) : kiln_neg_inf();
}

/* The mask on one m16 tile's scores s (key tile at tk, range end nk, both less lo): the
 * lane's rows are the block's rows row and row + 8, whose diagonals less lo are in row_dr.
 * Each row's visible columns of the tile are one interval (kiln_band_span, attn_seq.h),
 * worked out once; then each score is two
 * compares against constants and a select. Written as a test per score that read the
 * row's diagonal from shared memory behind a short-circuit, it compiled to branches around
 * every score: 652 instructions a warp and 14% of the stall samples of head dim 64, S = 1k
 * causal (Nsight Compute, bench/results/ncu_tensor-d64-s1k_*). */
KILN_DEV void kiln_mask_m16(float (*s)[4], kiln_band band, kiln_i32 tk, kiln_i32 nk,
                            const kiln_i32 *row_dr, kiln_i32 row, kiln_i32 tq)
{
    const kiln_i32 lim = nk - tk < BK ? nk - tk : BK;
    kiln_i32 vlo[2], vhi[2]; /* columns [vlo, vhi) of the tile, less this lane's 2 tq */
    #pragma unroll
    for (kiln_i32 r = 0; r < 2; ++r) {
        const kiln_i64 d = (kiln_i64)row_dr[row + 8 * r] - tk;
        kiln_i64 f, e;
        kiln_band_span(band, d, d, lim, &f, &e);
        vlo[r] = (kiln_i32)f - 2 * tq;
        vhi[r] = (kiln_i32)e - 2 * tq;
    }
    #pragma unroll
    for (kiln_i32 n = 0; n < NKT; ++n)
        #pragma unroll
        for (kiln_i32 x = 0; x < 4; ++x) {
            const kiln_i32 jc = n * 8 + (x & 1), r = x >> 1;
            s[n][x] = jc >= vlo[r] && jc < vhi[r] ? s[n][x] : kiln_neg_inf();
        }
}

#if RING
/* The ring's row offsets of keys lo + tk .. lo + tk + BK - 1 below lo + nk, from the KV
 * head's first row (page 0, slot 0): thread jj < BK fills row jj. bt is the sequence's
 * block-table row. */
KILN_DEV void kiln_tile_rows(const kiln_attn_args *a, const kiln_i32 *bt, kiln_i64 lo,
                             kiln_i32 tk, kiln_i32 nk, kiln_i64 (*rows)[2])
{
    const kiln_i32 jj = kiln_thread_x_fresh();
    if (jj < BK && tk + jj < nk) kiln_page_row(a, bt, lo + tk + jj, &rows[jj][0], &rows[jj][1]);
}
#endif

/* Starts the copy of the K and V tiles of keys tk .. tk + BK - 1 (counted from the block's
 * first key) into stage (ks, vs): keys at or past nk and columns at or past the runtime
 * head_dim become zeros, not stale or foreign data (a masked key's weight is 0, and 0 * NaN
 * would not be). Paged: k and v point at the KV head's first row and rows[jj] holds the
 * tile's row offsets from there; else they point at the block's first key of its KV head
 * and rows are a->k_stride_row / a->v_stride_row apart. */
KILN_DEV void kiln_tile_issue(kiln_sptr ks, kiln_sptr vs, const kiln_elem *k,
                              const kiln_elem *v, const kiln_attn_args *a, kiln_i64 (*rows)[2],
                              kiln_i32 tk, kiln_i32 nk, kiln_i32 hd)
{
    /* Thread t0 copies the 16-byte column c of rows j0, j0 + R, j0 + 2R, ... (R rows a
     * pass; where D / 8 does not divide the threads, the last NT % (D / 8) sit out): its
     * row and column worked out once per tile, then constant steps (affine rows: one
     * address computation per tile). Against the address of each copy worked out from its
     * element index (bench/tensor_ab.sh, aff, on an H100, bench/results/tensor-ab_aff_*):
     * suite 2 1.00 - 1.08x, head dim 64 S = 4k 1.08x, 256 1.05 - 1.07x; Nsight Compute had
     * put 149 instructions a tile (a fifth of the key loop's) at head dim 64 in those
     * copies. (The fresh index keeps the per-thread offsets out of the registers the key
     * loop holds.) */
    const kiln_i32 C = D / 8, R = NT / C;
    const kiln_i32 t0 = kiln_thread_x_fresh();
    if (NT % C && t0 >= R * C) return;
    const kiln_i32 j0 = t0 / C, c = (t0 % C) * 8;
    const kiln_sptr kd = kiln_sptr_add(ks, j0 * LDS + c), vd = kiln_sptr_add(vs, j0 * LDS + c);
    const int cok = c < hd;
#if RING
    (void)a;
#else
    (void)rows;
    const kiln_i64 ksr = a->k_stride_row, vsr = a->v_stride_row;
    const kiln_elem *kr = k + (kiln_i64)(tk + j0) * ksr + c;
    const kiln_elem *vr = v + (kiln_i64)(tk + j0) * vsr + c;
#endif
    #pragma unroll
    for (kiln_i32 x = 0; x < (BK + R - 1) / R; ++x) {
        const kiln_i32 jj = j0 + x * R;
        if (BK % R && jj >= BK) break;
        const int valid = cok && tk + jj < nk;
#if RING
        const kiln_elem *kx = k + rows[jj][0] + c, *vx = v + rows[jj][1] + c;
#else
        const kiln_elem *kx = kr + x * R * ksr, *vx = vr + x * R * vsr;
#endif
        kiln_cp_async16(kiln_sptr_add(kd, x * R * LDS), valid ? kx : k, valid);
        kiln_cp_async16(kiln_sptr_add(vd, x * R * LDS), valid ? vx : v, valid);
    }
}

/* The blocks per SM are given even when 1: without them ptxas may cap the registers for
 * more blocks on its own (head dim 32 without a mask: 168 registers and a spill). */
#define KILN_TQ_BOUNDS NT, KILN_TQ_MIN_BLOCKS(D, PG)
KILN_KERNEL(KILN_TQ_BOUNDS) kiln_attn_fwd(kiln_attn_args a)
{
    KILN_DYNAMIC_SHARED(smem, KILN_TQ_SMEM_BYTES(D, PG));
    /* The stream's previous kernel may still run (kernels/vendor/cuda.h): no global access
     * before this. */
    kiln_grid_wait();
    kiln_grid_release();
    const kiln_sptr sbase = kiln_sptr_of((kiln_elem *)smem);
    const kiln_sptr qs = kiln_sptr_add(sbase, Q_AT);
    kiln_i64(*kv_row)[BK][2] = (kiln_i64(*)[BK][2])(smem + ROWS_OFFSET);
    kiln_i64 *row_q = (kiln_i64 *)(smem + ROWS_OFFSET); /* before the ring's first use */
    void **row_dst = (void **)(smem + ROWINFO_OFFSET);
    float **row_lse = (float **)(row_dst + BQ);
    kiln_i32 *row_dr = (kiln_i32 *)(row_lse + BQ);
    kiln_i32 *row_first = row_dr + BQ;
    float *row_slope = (float *)(row_first + BQ);

    const kiln_i32 tid = kiln_thread_x();
    const kiln_i32 lane = tid % 32, warp = tid / 32;
    const kiln_i32 g = lane / 4, tq = lane % 4;
    /* Under a causal mask (or a window open to the left) blocks of later queries see more
     * keys: those start first, so the short ones fill the tail of the grid. */
#if KILN_MASK == KILN_MASK_FULL
    const kiln_i64 bx = kiln_block_x(), hk = kiln_block_y(), bz = kiln_block_z();
    const kiln_i64 p0 = bx * BQ;
#elif KILN_TQ_HEAVY_FIRST
    /* The linear block number, with the query block the slowest index: every head's and
     * batch's last query block runs before any one's second last. */
    const kiln_i64 nyz = kiln_grid_y() * kiln_grid_z();
    const kiln_i64 lin = kiln_block_x() + kiln_grid_x() * (kiln_block_y() + kiln_grid_y() * kiln_block_z());
    const kiln_i64 hk = lin % nyz % kiln_grid_y(), bz = lin % nyz / kiln_grid_y();
    const kiln_i64 p0 = (kiln_grid_x() - 1 - lin / nyz) * BQ;
#else
    const kiln_i64 hk = kiln_block_y(), bz = kiln_block_z();
    const kiln_i64 p0 = (kiln_grid_x() - 1 - kiln_block_x()) * BQ;
#endif
    const kiln_i64 b = bz / a.num_splits;
    const kiln_i64 split = bz % a.num_splits;
    const kiln_i64 group = a.heads_q / a.heads_kv;
    const kiln_i32 hd = (kiln_i32)a.head_dim;
    const kiln_seq s = kiln_seq_of(&a, b);
    kiln_span sp;
    if (!kiln_span_of(&a, &s, p0, BQ, group, split, &sp)) return;
    const kiln_i64 rows = sp.rows, diag = sp.diag, lo = sp.lo, hi = sp.hi;
    const kiln_band band = sp.band;

    const kiln_elem *q = (const kiln_elem *)a.q;
#if RING
    const kiln_elem *k = (const kiln_elem *)a.k + hk * a.k_stride_head;
    const kiln_elem *v = (const kiln_elem *)a.v + hk * a.v_stride_head;
    const kiln_i32 *bt = a.block_table + b * a.block_table_stride;
#else
    const kiln_elem *k = (const kiln_elem *)a.k + s.k_off + hk * a.k_stride_head + lo * a.k_stride_row;
    const kiln_elem *v = (const kiln_elem *)a.v + s.v_off + hk * a.v_stride_head + lo * a.v_stride_row;
#endif
    const kiln_i32 nk = (kiln_i32)(hi - lo); /* keys in the block's range */

    /* The block's rows, spread over the threads: row x of the block is fragment row x % 16
     * of m16 tile x / 16. Rows past the end compute on the last row's data and are not
     * stored (their dst is NULL). dr is the row's diagonal key less lo; first is its first
     * visible key less lo (the int32 maximum when it sees none in this block's range). */
    for (kiln_i32 x = tid; x < BQ; x += NT) {
        const kiln_i64 p = p0 + x;
        const kiln_i64 pc = p < rows ? p : rows - 1;
        const kiln_i64 i = pc / group;
        kiln_i64 f, e;
        kiln_band_span(band, i + diag - lo, i + diag - lo, hi - lo, &f, &e);
        row_dr[x] = (kiln_i32)(i + diag - lo);
        row_first[x] = f < e ? (kiln_i32)f : 0x7fffffff;
        row_slope[x] = a.alibi ? a.alibi[b * a.alibi_stride_batch + hk * group + pc % group] *
                                     KILN_LOG2E
                               : 0.0f;
        const kiln_out_row out = kiln_out_row_of(&a, &s, split, i, hk * group + pc % group);
        row_dst[x] = p < rows ? (a.num_splits > 1 ? (void *)out.ws : (void *)out.out) : 0;
        row_lse[x] = out.lse;
        /* The row's Q offset (-1: past the end) for the copy below, in the row-offset
         * space (the paged ring fills it only after that copy has read it). */
        row_q[x] = p < rows ? s.q_off + i * a.q_stride_row + (hk * group + pc % group) * a.q_stride_head
                            : -1;
    }
    kiln_sync();

    /* Q rows to shared memory (rows past the end and columns past head_dim as zeros): per
     * element one shared-memory read of its row's offset, not a division by the group. */
    #pragma unroll
    for (kiln_i32 x = 0; x < (BQ * (D / 8) + NT - 1) / NT; ++x) {
        const kiln_i32 e = tid + x * NT;
        if ((BQ * (D / 8)) % NT && e >= BQ * (D / 8)) break;
        const kiln_i32 r = e / (D / 8), c = (e % (D / 8)) * 8;
        const kiln_i64 at = row_q[r];
        const int valid = at >= 0 && c < hd;
        kiln_cp_async16(kiln_sptr_add(qs, r * LDS + c), q + (valid ? at + c : 0), valid);
    }
    /* This lane's rows in the block: fragment rows g and g + 8 of each of its warp's m16
     * tiles are row_at + mt * 16 + 8 * r. */
    const kiln_i32 row_at = warp * MT * 16 + g;

    /* The warp's first and last query (rows past the end count as the last row), to tell
     * tiles that none of its rows masks; and keys [wf, we) less lo, those some row of the
     * warp can see (rows are in query order, and the band's ends grow with the query). */
    const kiln_i64 pw = p0 + warp * MT * 16;
    const kiln_i64 wi0 = (pw < rows ? pw : rows - 1) / group;
    const kiln_i64 wi1 = (pw + MT * 16 < rows ? pw + MT * 16 - 1 : rows - 1) / group;
    /* Their diagonal keys less lo. */
    const kiln_i32 wd0 = (kiln_i32)(wi0 + diag - lo), wd1 = (kiln_i32)(wi1 + diag - lo);
#if KILN_TQ_WARP_SKIP
    kiln_i32 wf, we;
    {
        kiln_i64 f, e;
        kiln_band_span(band, wi0 + diag - lo, wi1 + diag - lo, hi - lo, &f, &e);
        wf = (kiln_i32)f;
        we = f < e ? (kiln_i32)e : 0;
    }
#endif

    /* Scores live in base-2 units (natural logit * log2 e) so each weight is one exp2. */
    const float scale2 = a.scale * KILN_LOG2E, softcap2 = a.softcap * KILN_LOG2E;
    const float capscale = a.softcap != 0.0f ? a.scale / a.softcap : 0.0f;

    float o[MT][NDT][4];
    #pragma unroll
    for (kiln_i32 mt = 0; mt < MT; ++mt)
        #pragma unroll
        for (kiln_i32 n = 0; n < NDT; ++n)
            #pragma unroll
            for (kiln_i32 x = 0; x < 4; ++x) o[mt][n][x] = 0.0f;
    float m[MT][2], l[MT][2];
    #pragma unroll
    for (kiln_i32 mt = 0; mt < MT; ++mt)
        #pragma unroll
        for (kiln_i32 r = 0; r < 2; ++r) {
            m[mt][r] = kiln_neg_inf();
            l[mt][r] = 0.0f;
        }

    /* Pipeline prologue: row offsets of tiles 0 .. ST - 1, copies of tiles 0 .. ST - 2
     * (the Q copies join the first group). Tile x uses stage x % ST. */
    const kiln_i32 ntiles = hi > lo ? (kiln_i32)((hi - lo + BK - 1) / BK) : 0;
#if RING
    kiln_sync(); /* every Q offset is read: the ring may be filled */
    #pragma unroll
    for (kiln_i32 x = 0; x < ST; ++x)
        if (x < ntiles) kiln_tile_rows(&a, bt, lo, x * BK, nk, kv_row[x]);
    kiln_sync();
#endif
    #pragma unroll
    for (kiln_i32 x = 0; x < ST - 1; ++x) {
        const kiln_sptr ks = kiln_sptr_add(sbase, STAGE_AT(x));
        if (x < ntiles)
            kiln_tile_issue(ks, kiln_sptr_add(ks, TILE_ELEMS), k, v, &a, kv_row[x], x * BK, nk, hd);
        kiln_cp_async_commit();
    }

    /* Each lane's ldmatrix row address (elements from the tile start) in the Q tile (for
     * m16 tile 0, k-step 0), a K tile (score tiles 0 and 1, k-step 0) and a V tile (keys
     * 0-15, output tiles 0 and 1); the loops add constants to them. */
    const kiln_i32 mi = lane / 8;
    const kiln_i32 q_lane = (warp * MT * 16 + (mi & 1) * 8 + lane % 8) * LDS + (mi >> 1) * 8;
    const kiln_i32 k_lane = ((mi >> 1) * 8 + lane % 8) * LDS + (mi & 1) * 8;
    const kiln_i32 v_lane = ((mi & 1) * 8 + lane % 8) * LDS + (mi >> 1) * 8;

#if QREG
    kiln_u32 qf[MT][NKC][4];
    kiln_cp_async_wait_n(ST - 2 > 0 ? ST - 2 : 0); /* Q (with tile 0) */
    kiln_sync();
    #pragma unroll
    for (kiln_i32 mt = 0; mt < MT; ++mt)
        #pragma unroll
        for (kiln_i32 kc = 0; kc < NKC; ++kc)
            kiln_ldmatrix_x4(qf[mt][kc], kiln_sptr_add(qs, q_lane + mt * 16 * LDS + kc * 16));
#if !KILN_TQ_ONE_BARRIER /* else the first step's barrier comes before that stage is filled */
    kiln_sync(); /* every warp has its Q fragments: the last stage may be filled */
#endif
#endif

    for (kiln_i32 t = 0; t < ntiles; ++t) {
        const kiln_i32 tk = t * BK;
        const kiln_i32 slot = t % ST;
        const kiln_sptr ks = kiln_sptr_add(sbase, STAGE_AT(slot));
        const kiln_sptr vs = kiln_sptr_add(ks, TILE_ELEMS);
#if KILN_TQ_ONE_BARRIER
        kiln_cp_async_wait_n(ST - 2); /* tile t (tiles t + 1 .. t + ST - 2 may be in flight) */
        kiln_sync(); /* tile t is visible; every warp is done with tile t - 1's stage */
#endif
        {
            /* Tile t + ST - 1 goes to the stage tile t - 1 left. */
            const kiln_i32 nx = t + ST - 1;
            const kiln_sptr kn = kiln_sptr_add(sbase, STAGE_AT(nx % ST));
            if (nx < ntiles)
                kiln_tile_issue(kn, kiln_sptr_add(kn, TILE_ELEMS), k, v, &a, kv_row[nx % ST],
                                nx * BK, nk, hd);
            kiln_cp_async_commit();
        }
#if KILN_TQ_ONE_BARRIER
        /* Row offsets of tile t + ST into the ring slot of tile t (issued steps ago; read
         * after the next step's barrier). */
#if RING
        if (t + ST < ntiles) kiln_tile_rows(&a, bt, lo, tk + ST * BK, nk, kv_row[slot]);
#endif
#else
        kiln_cp_async_wait_n(ST - 1); /* tile t */
        kiln_sync();
#endif
#if KILN_TQ_WARP_SKIP
        if (tk + BK > wf && tk < we) {
#endif

        /* S = Q K^T: per k-step, two score tiles' K fragments per ldmatrix, used by every
         * m16 tile of the warp. */
        float sc[MT][NKT][4];
        #pragma unroll
        for (kiln_i32 mt = 0; mt < MT; ++mt)
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; ++n)
                #pragma unroll
                for (kiln_i32 x = 0; x < 4; ++x) sc[mt][n][x] = 0.0f;
        #pragma unroll
        for (kiln_i32 kc = 0; kc < NKC; ++kc) {
#if QREG
#define QF(mt) qf[mt][kc]
#else
            kiln_u32 qa[MT][4];
            #pragma unroll
            for (kiln_i32 mt = 0; mt < MT; ++mt)
                kiln_ldmatrix_x4(qa[mt], kiln_sptr_add(qs, q_lane + mt * 16 * LDS + kc * 16));
#define QF(mt) qa[mt]
#endif
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; n += 2) {
                kiln_u32 bf[4];
                kiln_ldmatrix_x4(bf, kiln_sptr_add(ks, k_lane + n * 8 * LDS + kc * 16));
                #pragma unroll
                for (kiln_i32 mt = 0; mt < MT; ++mt) {
                    kiln_mma16816(sc[mt][n], QF(mt), bf, sc[mt][n]);
                    kiln_mma16816(sc[mt][n + 1], QF(mt), bf + 2, sc[mt][n + 1]);
                }
            }
#undef QF
        }

        /* Logits: scale or soft-cap, ALiBi, mask. Each test is uniform over the block, so
         * it is made once per tile, not per score (the mask's once per warp). fold is the factor still to apply (the
         * scale, where it is positive and nothing else transforms the score; else 1). */
        float fold = 1.0f;
        if (a.softcap != 0.0f) {
            #pragma unroll
            for (kiln_i32 mt = 0; mt < MT; ++mt)
                #pragma unroll
                for (kiln_i32 n = 0; n < NKT; ++n)
                    #pragma unroll
                    for (kiln_i32 x = 0; x < 4; ++x)
                        sc[mt][n][x] = softcap2 * kiln_tanhf(sc[mt][n][x] * capscale);
        } else if (!KILN_TQ_FOLD_SCALE || a.alibi || !(scale2 > 0.0f)) {
            #pragma unroll
            for (kiln_i32 mt = 0; mt < MT; ++mt)
                #pragma unroll
                for (kiln_i32 n = 0; n < NKT; ++n)
                    #pragma unroll
                    for (kiln_i32 x = 0; x < 4; ++x) sc[mt][n][x] *= scale2;
        } else {
            fold = scale2;
        }
        /* Tile coordinates: key lo + tk + jj of a row is on its diagonal when jj == dr - tk. */
        if (a.alibi) {
            #pragma unroll
            for (kiln_i32 mt = 0; mt < MT; ++mt)
                #pragma unroll
                for (kiln_i32 n = 0; n < NKT; ++n)
                    #pragma unroll
                    for (kiln_i32 x = 0; x < 4; ++x) {
                        const kiln_i32 row = row_at + mt * 16 + 8 * (x >> 1);
                        const kiln_i32 dist = row_dr[row] - tk - (n * 8 + 2 * tq + (x & 1));
                        sc[mt][n][x] -= row_slope[row] * (float)(dist < 0 ? -dist : dist);
                    }
        }
        /* (The test in coordinates less lo: keys tk .., the range's end nk, diagonals wd0
         * and wd1.) */
        if (!kiln_tile_whole(band, tk, BK, nk, wd0, wd1, 0)) { /* per warp: uniform */
            #pragma unroll
            for (kiln_i32 mt = 0; mt < MT; ++mt)
                kiln_mask_m16(sc[mt], band, tk, nk, row_dr, row_at + mt * 16, tq);
        }

        /* Online softmax. A row that has seen no visible key yet (by the mask, not by its
         * max) uses 0 as its reference, so its masked scores weigh exp(-inf) = 0. */
        float use[MT][2], alpha[MT][2];
        int moved = 0; /* some seen row of this lane's changed its reference */
        #pragma unroll
        for (kiln_i32 mt = 0; mt < MT; ++mt) {
            float mx[2];
            mx[0] = sc[mt][0][0];
            mx[1] = sc[mt][0][2];
            #pragma unroll
            for (kiln_i32 n = 0; n < NKT; ++n)
                #pragma unroll
                for (kiln_i32 x = 0; x < 4; ++x)
                    if (n || (x & 1)) mx[x >> 1] = kiln_fmax_nan(mx[x >> 1], sc[mt][n][x]);
            #pragma unroll
            for (kiln_i32 r = 0; r < 2; ++r) {
                mx[r] = kiln_fmax_nan(mx[r], kiln_shfl_xor(mx[r], 1));
                mx[r] = kiln_fmax_nan(mx[r], kiln_shfl_xor(mx[r], 2));
                /* The tile's max in base-2 units (-inf stays -inf: fold > 0), then the
                 * running one. */
                mx[r] = kiln_fmax_nan(m[mt][r], mx[r] * fold);
#if KILN_TQ_LAZY_RESCALE
                /* The reference stays where the new max is within the slack above it (a
                 * NaN or a max past it moves it, as it would without the slack). */
                if (mx[r] <= m[mt][r] + KILN_TQ_RESCALE_SLACK) mx[r] = m[mt][r];
#endif
                const int seen = row_first[row_at + mt * 16 + 8 * r] < tk + BK;
                use[mt][r] = seen ? mx[r] : 0.0f;
                alpha[mt][r] = kiln_exp2f(m[mt][r] - use[mt][r]);
                m[mt][r] = mx[r];
                /* (a row yet to see a key has O and sum 0: its factor does not matter) */
                if (seen && alpha[mt][r] != 1.0f) moved = 1; /* NaN too */
            }
        }
        /* Warp-uniform: rescale where some row of the warp moved its reference. */
        if (!KILN_TQ_LAZY_RESCALE || kiln_warp_any(moved)) {
            #pragma unroll
            for (kiln_i32 mt = 0; mt < MT; ++mt)
                #pragma unroll
                for (kiln_i32 r = 0; r < 2; ++r) {
                    l[mt][r] *= alpha[mt][r];
                    #pragma unroll
                    for (kiln_i32 n = 0; n < NDT; ++n) {
                        o[mt][n][2 * r] *= alpha[mt][r];
                        o[mt][n][2 * r + 1] *= alpha[mt][r];
                    }
                }
        }

        /* O += P V, 16 keys per k-step; two output tiles' V fragments per ldmatrix.trans
         * (matrices: keys 0-7 and 8-15 of dims n, then of dims n + 1). */
        #pragma unroll
        for (kiln_i32 kc = 0; kc < NPC; ++kc) {
            kiln_u32 pf[MT][4];
            #pragma unroll
            for (kiln_i32 mt = 0; mt < MT; ++mt)
                #pragma unroll
                for (kiln_i32 hf = 0; hf < 2; ++hf) {
                    const float *c = sc[mt][2 * kc + hf];
                    const float e0 = kiln_exp2f(c[0] * fold - use[mt][0]);
                    const float e1 = kiln_exp2f(c[1] * fold - use[mt][0]);
                    const float e2 = kiln_exp2f(c[2] * fold - use[mt][1]);
                    const float e3 = kiln_exp2f(c[3] * fold - use[mt][1]);
                    l[mt][0] += e0 + e1;
                    l[mt][1] += e2 + e3;
                    pf[mt][2 * hf] = kiln_pack2(e0, e1);
                    pf[mt][2 * hf + 1] = kiln_pack2(e2, e3);
                }
            #pragma unroll
            for (kiln_i32 n = 0; n < NDT; n += 2) {
                kiln_u32 bf[4];
                kiln_ldmatrix_x4_trans(bf, kiln_sptr_add(vs, v_lane + kc * 16 * LDS + n * 8));
                #pragma unroll
                for (kiln_i32 mt = 0; mt < MT; ++mt) {
                    kiln_mma16816(o[mt][n], pf[mt], bf, o[mt][n]);
                    kiln_mma16816(o[mt][n + 1], pf[mt], bf + 2, o[mt][n + 1]);
                }
            }
        }

#if KILN_TQ_WARP_SKIP
        }
#endif
#if !KILN_TQ_ONE_BARRIER
        /* Row offsets of tile t + ST into the ring slot tile t used (its copies are done). */
#if RING
        if (t + ST < ntiles) kiln_tile_rows(&a, bt, lo, tk + ST * BK, nk, kv_row[slot]);
#endif
        kiln_sync(); /* every warp is done with this stage and the offsets are written */
#endif
    }
    kiln_cp_async_wait0(); /* nothing in flight when the block ends */

#if STAGE_OUT
    if (a.num_splits == 1) { /* block-uniform */
        /* The output through shared memory: each lane's two-element pieces rounded in
         * pairs into the stages' space, then whole 16-byte row pieces to global memory
         * (the stores of two elements at a time and the rounding one by one were an
         * eighth of a block's time at S = 1k). */
        kiln_u32 *ot = (kiln_u32 *)smem; /* rows of LDS elements from stage 0 */
        kiln_sync();                     /* every warp is done with the stages and Q */
        #pragma unroll
        for (kiln_i32 mt = 0; mt < MT; ++mt)
            #pragma unroll
            for (kiln_i32 r = 0; r < 2; ++r) {
                const float sum = kiln_row_sum(l[mt][r]);
                const kiln_i32 row = row_at + mt * 16 + 8 * r;
                const int seen = row_first[row] < nk;
                const float inv = kiln_row_inv(sum, seen);
                #pragma unroll
                for (kiln_i32 n = 0; n < NDT; ++n)
                    ot[row * (LDS / 2) + n * 4 + tq] =
                        kiln_pack2(o[mt][n][2 * r] * inv, o[mt][n][2 * r + 1] * inv);
                float *lse_at = row_lse[row];
                if (tq == 0 && lse_at && row_dst[row]) *lse_at = kiln_row_lse(sum, m[mt][r], seen);
            }
        kiln_sync();
        #pragma unroll
        for (kiln_i32 x = 0; x < (BQ * (D / 8) + NT - 1) / NT; ++x) {
            /* (a fresh index: tid held through the key loop costs a spill at D = 128) */
            const kiln_i32 e = kiln_thread_x_fresh() + x * NT;
            if ((BQ * (D / 8)) % NT && e >= BQ * (D / 8)) break;
            const kiln_i32 r = e / (D / 8), c = (e % (D / 8)) * 8;
            kiln_elem *dst = (kiln_elem *)row_dst[r];
            if (!dst || c >= hd) continue;
            const kiln_v4 y = kiln_lds16((const kiln_elem *)smem + r * LDS + c);
            if (((kiln_u64)(dst + c) & 15u) == 0) {
                kiln_stg16((float *)(dst + c), y); /* raw bits */
            } else {
                #pragma unroll
                for (kiln_i32 u = 0; u < 4; ++u) {
                    dst[c + 2 * u] = (kiln_elem)(y.c[u] & 0xffffu);
                    dst[c + 2 * u + 1] = (kiln_elem)(y.c[u] >> 16);
                }
            }
        }
        return;
    }
#endif
    /* Split partials (float, to the workspace) straight from the accumulators. */
    const int to_ws = a.num_splits > 1; /* block-uniform */
    #pragma unroll
    for (kiln_i32 mt = 0; mt < MT; ++mt)
        #pragma unroll
        for (kiln_i32 r = 0; r < 2; ++r) {
            const float sum = kiln_row_sum(l[mt][r]);
            const kiln_i32 row = row_at + mt * 16 + 8 * r;
            void *dst = row_dst[row];
            if (!dst) continue;
            const int seen = row_first[row] < nk;
            const float inv = kiln_row_inv(sum, seen);
            const float lse = kiln_row_lse(sum, m[mt][r], seen);
            kiln_out_row out;
            out.out = to_ws ? 0 : (kiln_elem *)dst;
            out.ws = to_ws ? (float *)dst : 0;
            out.lse = row_lse[row];
            #pragma unroll
            for (kiln_i32 n = 0; n < NDT; ++n)
                if (n * 8 < hd)
                    kiln_out_put2(&out, n * 8 + 2 * tq, o[mt][n][2 * r] * inv,
                                  o[mt][n][2 * r + 1] * inv);
            if (tq == 0) kiln_out_lse(&out, lse);
        }
}
