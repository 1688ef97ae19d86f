/*
 * Attention forward, NVIDIA hopper tier (sm_90a): the tensor tier's contract (masks,
 * soft-cap, ALiBi, LSE, split-KV workspace) on warpgroup MMA fed by the tensor copy engine.
 * A variant is this file plus
 *   KILN_DTYPE     1 f16 | 2 bf16
 *   KILN_HEAD_DIM  64 | 128 | 256    exactly the runtime head_dim
 *   KILN_MASK      as in attention.cu
 *   KILN_MODE      0 (fixed-length q, k, v; other modes run on the tensor tier)
 *   KILN_HOPPER_LONG  1 for the long variant: three consumers at head dim 64 (attention_hopper.h)
 * compiled for sm_90a. Parameters: the usual kiln_attn_args and four tensor maps (q, k, v
 * and out; out's is used where the output is stored by the copy engine,
 * KILN_HOPPER_TMA_STORE) the host builds with cuTensorMapEncodeTiled over
 * [batch][seq][heads][head_dim] (innermost last), boxes of 64 elements x BM query rows,
 * x BN key rows or x 64 output rows (attention_hopper.h),
 * 128-byte swizzle (src/gpu/hopper_launch.c).
 *
 * Grid (ceil(seqlen_q / BM), heads_q, batch * num_splits), BM = 64 NC query rows, and
 * 128 (1 + NC) threads in 1 + NC warpgroups, NC = 2 or 3 consumers (KILN_HOPPER_CONSUMERS,
 * kernels/attention_hopper.h):
 *   warpgroup 0, the producer, gives up registers (setmaxnreg) and one thread of it issues
 *   the copies: the block's Q tile once, then K and V tiles of BN keys into a ring of
 *   KILN_HOPPER_STAGES(d, m) slots, each slot guarded by a "full" mbarrier (the copy engine
 *   completes its bytes there) and an "empty" one (the consumers' warps arrive when they
 *   have read it);
 *   warpgroups 1 .. NC, the consumers, take the registers and own 64 query rows each:
 *   S = Q K^T by wgmma with both operands in shared memory (64 x BN fp32 accumulators),
 *   scale, soft-cap, ALiBi and masks on the accumulators, the online softmax in registers
 *   (a row lives in the 4 lanes of a quad), then O += P V by wgmma with P straight from the
 *   accumulator registers (an m64n16 slice of the accumulator is exactly the A-fragment
 *   layout) and V read transposed from shared memory. Inside a consumer the products are
 *   pipelined: S of tile t and P V of tile t - 1 are issued together, and the softmax of
 *   tile t runs while the tensor cores finish P V.
 * The consumers run the same loop on different rows, so the warp schedulers also overlap
 * one's softmax with another's matrix work. Query blocks that see more keys under a
 * causal or window mask start first.
 * Rows past the sequence end read zeros (the copy engine fills out-of-range elements with
 * zeros) and are not stored; keys past the end are zeros and masked.
 */
#include "kiln_device.h"
#include "kiln_args.h"
#include "mma.h"
#include "hopper.h"
#include "attention_hopper.h"

#if !defined(KILN_HEAD_DIM) || !defined(KILN_MASK) || !defined(KILN_MODE)
#error "KILN_HEAD_DIM, KILN_MASK and KILN_MODE must be defined"
#endif
#if KILN_HEAD_DIM != 64 && KILN_HEAD_DIM != 128 && KILN_HEAD_DIM != 256
#error "the hopper tier compiles head_dim 64, 128 and 256"
#endif
#if !KILN_HOPPER_MASK_OK(KILN_HEAD_DIM, KILN_MASK)
#error "the hopper tier compiles head dim 256 without a window mask (attention_hopper.h)"
#endif
#if KILN_DTYPE != 1 && KILN_DTYPE != 2
#error "the hopper tier takes f16 or bf16"
#endif
#if KILN_MODE != KILN_MODE_ID_FIXED
#error "the hopper tier compiles fixed-length attention"
#endif

#define D KILN_HEAD_DIM
#ifndef KILN_HOPPER_LONG
#define KILN_HOPPER_LONG 0
#endif
#define NC KILN_HOPPER_CONSUMERS(D, KILN_MASK, KILN_HOPPER_LONG) /* consumer warpgroups */
#define BM KILN_HOPPER_BLOCK_Q(D, KILN_MASK, KILN_HOPPER_LONG)
#if NC != 2 && NC != 3
#error "the hopper tier runs two or three consumer warpgroups"
#endif
#if KILN_HOPPER_LONG && !KILN_HOPPER_LONG_COVERS(D, KILN_MASK)
#error "the long hopper variant is head dim 64 without a mask or causal"
#endif
#define BN KILN_HOPPER_BLOCK_K(D, KILN_MASK)
#define NS KILN_HOPPER_STAGES(D, KILN_MASK)
#define DB (D / 64)                 /* 64-column blocks of a row */
#define TILE_Q (BM * D * 2)         /* bytes */
#define TILE_K (BN * D * 2)
#define NACC_S (BN / 2)             /* S accumulators per thread (64 rows x BN / 128) */
#define NACC_O (D / 2)              /* O accumulators per thread */
#define KILN_LOG2E 1.4426950408889634f
#define KILN_LN2 0.6931471805599453f

#if BN == 64
#define kiln_wgmma_s kiln_wgmma_ss_n64
#elif BN == 128
#define kiln_wgmma_s kiln_wgmma_ss_n128
#elif BN == 160
#define kiln_wgmma_s kiln_wgmma_ss_n160
#elif BN == 176
#define kiln_wgmma_s kiln_wgmma_ss_n176
#elif BN == 192
#define kiln_wgmma_s kiln_wgmma_ss_n192
#else
#error "the hopper tier's key tile is 64, 128, 160, 176 or 192 keys"
#endif
#if D == 256
#define kiln_wgmma_pv kiln_wgmma_rs_n256
#define kiln_wgmma_pv_if kiln_wgmma_rs_n256_if
#elif D == 128
#define kiln_wgmma_pv kiln_wgmma_rs_n128
#define kiln_wgmma_pv_if kiln_wgmma_rs_n128_if
#else
#define kiln_wgmma_pv kiln_wgmma_rs_n64
#define kiln_wgmma_pv_if kiln_wgmma_rs_n64_if
#endif

/* Ping-pong: the consumers take turns in a ring (named barriers 2 .. 1 + NC, one per
 * consumer; consumer c passes to c + 1, the last to the first), either at issuing their
 * matrix products, so that one's products run while another does its softmax, or at the
 * exponentials of their softmax, so that each has the MUFU units to itself while the
 * others' products run (KILN_HOPPER_TURN_EXP, attention_hopper.h). Every phase waits for
 * its turn and passes it on; all consumers have the same phases. */
#ifndef KILN_HOPPER_PINGPONG
#define KILN_HOPPER_PINGPONG 1
#endif
#if KILN_HOPPER_PINGPONG
#define HP_TURN_WAIT() kiln_bar_sync(2 + cw, 256)
/* The next consumer's barrier: two pass by cw ^ 1, three around the ring. Two consumers
 * passing by the ring's compare and select (hoisted out of the key loop by the compiler)
 * ran the variants that take turns at their exponentials 10-16% slower on an H200
 * (bench/results/hopper-ab_c3_*, its staged column at head dim 128). */
#if NC == 2
#define HP_TURN_PASS() kiln_bar_arrive(2 + (cw ^ 1), 256)
#else
#define HP_TURN_PASS() kiln_bar_arrive(2 + (cw + 1 == NC ? 0 : cw + 1), 256)
#endif
#else
#define HP_TURN_WAIT() ((void)0)
#define HP_TURN_PASS() ((void)0)
#endif
/* What a turn covers (KILN_HOPPER_TURN_EXP, attention_hopper.h): the issue of the matrix
 * products (HP_MMA_TURN_*), or the exponentials of a tile's softmax (HP_EXP_TURN_*). */
#define HP_TURN_EXP (KILN_HOPPER_PINGPONG && KILN_HOPPER_TURN_EXP(D))
#if HP_TURN_EXP
#define HP_MMA_TURN_WAIT() ((void)0)
#define HP_MMA_TURN_PASS() ((void)0)
#define HP_EXP_TURN_WAIT() HP_TURN_WAIT()
#define HP_EXP_TURN_PASS() HP_TURN_PASS()
#else
#define HP_MMA_TURN_WAIT() HP_TURN_WAIT()
#define HP_MMA_TURN_PASS() HP_TURN_PASS()
#define HP_EXP_TURN_WAIT() ((void)0)
#define HP_EXP_TURN_PASS() ((void)0)
#endif
/* Output of a block through shared memory and 16-byte stores over whole rows (1), or
 * straight from the accumulators, 4 bytes per thread (0): the causal three-consumer variant
 * has no registers to spare for the staging (attention_hopper.h, KILN_HOPPER_LONG_COVERS). */
#ifndef KILN_HOPPER_STAGE_O
#define KILN_HOPPER_STAGE_O (NC == 2 || KILN_MASK != 1)
#endif
/* Staged output written by the copy engine (KILN_HOPPER_TMA_STORE, attention_hopper.h). */
#define HP_TMA_STORE (KILN_HOPPER_STAGE_O && KILN_HOPPER_TMA_STORE(D))
/* 1: each consumer warp's item goes to shared memory when the item starts and comes back
 * from there for its output; 0: the output works the item out again from the walk (about
 * 55 instructions a warp). Not under the causal mask: there, with the slot, ptxas
 * serializes the warpgroup MMAs (its C7520 "Potential Performance Loss", now an error in
 * src/gpu/driver.c; on an H100 head dim 64 S = 1k causal ran 12-14% slower, 128 17-20%), and
 * the three-consumer variant's 160 registers spill 72 bytes. */
#ifndef HP_ITEM_SLOT
#define HP_ITEM_SLOT (KILN_MASK != KILN_MASK_CAUSAL)
#endif
/* The producer's waits on empty slots and the consumers' on full ones (hints: see
 * attention_hopper.h). */
#if KILN_HOPPER_PRODUCER_HINT
#define HP_PRODUCER_WAIT(bar, ph) kiln_mbar_wait_hint(bar, ph, KILN_HOPPER_PRODUCER_HINT)
#else
#define HP_PRODUCER_WAIT(bar, ph) kiln_mbar_wait_idle(bar, ph, KILN_HOPPER_PRODUCER_SLEEP)
#endif
#if KILN_HOPPER_CONSUMER_HINT
#define HP_CONSUMER_WAIT(bar, ph) kiln_mbar_wait_hint(bar, ph, KILN_HOPPER_CONSUMER_HINT)
#else
#define HP_CONSUMER_WAIT(bar, ph) kiln_mbar_wait(bar, ph)
#endif
/* Named barriers 2 + NC + c: the 128 threads of consumer c (output staging). */
#define HP_BAR_OWN(c) (2 + NC + (c))

/* Whether the output is staged in its own shared-memory tile (so Q can be reloaded as soon
 * as the last S product has read it) rather than in the consumer's Q rows (attention_hopper.h
 * sizes the shared memory the same way). */
#define HP_O_OWN KILN_HOPPER_O_OWN(D, KILN_MASK)

/* Barrier slots in shared memory: the Q tile's full (the copy engine completes it) and empty
 * (the 4 NC consumer warps arrive when done with it), the K and V rings' full ones, then
 * their empty ones (4 NC consumer warps each). */
#define BAR_Q 0
#define BAR_QEMPTY 1
#define BAR_KFULL(s) (2 + (s))
#define BAR_VFULL(s) (2 + NS + (s))
#define BAR_KEMPTY(s) (2 + 2 * NS + (s))
#define BAR_VEMPTY(s) (2 + 3 * NS + (s))
#define NBARS (2 + 4 * NS)

/* Per-thread state of the consumer's two rows (fragment rows g and g + 8 of its warp). A
 * row's visible keys are [first, its band's end): it has seen a visible key once a tile
 * reached first. */
typedef struct hp_rows {
    kiln_i32 ri[2];          /* query index (sequences are shorter than 2^29) */
    kiln_i32 first[2];       /* first visible key (inside [lo, hi)), or the int32 maximum */
    float m[2], l[2];        /* running max (base-2 units) and sum */
} hp_rows;

/* P V products over the keys a consumer's rows see only (KILN_HOPPER_SKIP_PV,
 * attention_hopper.h): causal calls. */
#define HP_SKIP_PV (KILN_HOPPER_SKIP_PV(D) && KILN_MASK == KILN_MASK_CAUSAL)

/* Issues S = Q K^T for one tile (64 rows of this consumer x BN keys) and commits it; qd and
 * kd describe the consumer's Q rows and the K slot, each k-step's operands lie a constant
 * offset past them. */
KILN_DEV void hp_issue_s(float sc[NACC_S], kiln_u64 qd, kiln_u64 kd)
{
    #pragma unroll
    for (kiln_i32 kk = 0; kk < D / 16; ++kk) {
        const kiln_u32 off = (kiln_u32)(kk / 4) * (BM * 128) + (kiln_u32)(kk % 4) * 32;
        const kiln_u32 offk = (kiln_u32)(kk / 4) * (BN * 128) + (kiln_u32)(kk % 4) * 32;
        kiln_wgmma_s(sc, kiln_wg_desc_add(qd, off), kiln_wg_desc_add(kd, offk), kk > 0);
    }
    kiln_wgmma_commit();
}

/* Issues O += P V for one tile (P in registers, V transposed from shared memory, vd its
 * slot's descriptor) and commits it. */
KILN_DEV void hp_issue_pv(float o[NACC_O], kiln_u32 pf[BN / 16][4], kiln_u64 vd)
{
    #pragma unroll
    for (kiln_i32 kc = 0; kc < BN / 16; ++kc)
        kiln_wgmma_pv(o, pf[kc], kiln_wg_desc_add(vd, kc * 16 * 128), 1);
    kiln_wgmma_commit();
}

/* The same for an item's last tile, of whose keys any row of this consumer sees the first
 * nvis (uniform across the warpgroup): with HP_SKIP_PV the k-steps of 16 keys past them,
 * whose weights are all 0, are predicated off. Only here: predicated products in the key
 * loop ran head dim 128 causal 4-10% slower on an H100 (bench/hopper_ab.sh, skip0). */
KILN_DEV void hp_issue_pv_last(float o[NACC_O], kiln_u32 pf[BN / 16][4], kiln_u64 vd,
                               kiln_i32 nvis)
{
#if HP_SKIP_PV
    #pragma unroll
    for (kiln_i32 kc = 0; kc < BN / 16; ++kc)
        kiln_wgmma_pv_if(o, pf[kc], kiln_wg_desc_add(vd, kc * 16 * 128), 1, kc * 16 < nvis);
    kiln_wgmma_commit();
#else
    (void)nvis;
    hp_issue_pv(o, pf, vd);
#endif
}

/* The slot and phase of the ring tile after (*st, *ph). */
KILN_DEV void hp_ring_next(kiln_i32 *st, kiln_u32 *ph)
{
    if (++*st == NS) {
        *st = 0;
        *ph ^= 1u;
    }
}

/* The softmax's exponential of accumulator x: of every 8, the last KILN_HOPPER_FMA_EXP(D)
 * on the FMA pipes (kiln_hp_exp2_fma), the rest on the MUFU unit. */
#define HP_EXP2(x, v) \
    ((x) % 8 >= 8 - KILN_HOPPER_FMA_EXP(D) ? kiln_hp_exp2_fma(v) : kiln_hp_exp2(v))

/* Softmax of one tile of scores (keys kt ..): masks, the online max and sum, and the
 * weights left in sc; alpha gets each row's rescale factor for O. */
KILN_DEV void hp_softmax(const kiln_attn_args *a, hp_rows *w, float sc[NACC_S], float alpha[2],
                         kiln_i32 kt, kiln_i32 hi, kiln_i32 i0, kiln_i32 i_last,
                         kiln_i32 diag, kiln_i32 tq4, int plain, float slope, kiln_i32 cw)
{
    (void)cw;
    const float scale2 = a->scale * KILN_LOG2E, softcap2 = a->softcap * KILN_LOG2E;
    const float kexp = plain ? scale2 : 1.0f;
    /* Block-uniform: no key of this tile is masked for any row of the block. */
    int whole = kt + BN <= hi;
#if KILN_MASK != KILN_MASK_FULL
    if (a->window_left >= 0 && kt < i_last + diag - a->window_left) whole = 0;
#if KILN_MASK == KILN_MASK_CAUSAL
    if (kt + BN - 1 > i0 + diag) whole = 0;
#else
    if (a->window_right >= 0 && kt + BN - 1 > i0 + diag + a->window_right) whole = 0;
#endif
    const kiln_i32 wl = (kiln_i32)(a->window_left > (1 << 29) ? (1 << 29) : a->window_left);
#if KILN_MASK == KILN_MASK_WINDOW
    const kiln_i32 wr = (kiln_i32)(a->window_right > (1 << 29) ? (1 << 29) : a->window_right);
#endif
#else
    (void)i0, (void)i_last;
#endif
    const kiln_i32 lim = (kiln_i32)(hi - kt < BN ? hi - kt : BN);
    kiln_i32 dr[2];
    dr[0] = w->ri[0] + (kiln_i32)(diag - kt);
    dr[1] = w->ri[1] + (kiln_i32)(diag - kt);
    if (!plain) {
        #pragma unroll
        for (kiln_i32 x = 0; x < NACC_S; ++x) {
            const kiln_i32 r = (x >> 1) & 1;
            const kiln_i32 jj = (x >> 2) * 8 + 2 * tq4 + (x & 1);
            float y;
            if (a->softcap != 0.0f)
                y = softcap2 * kiln_tanhf(sc[x] * a->scale / a->softcap);
            else
                y = sc[x] * scale2;
            if (a->alibi) {
                const kiln_i32 dist = dr[r] - jj;
                y -= slope * (float)(dist < 0 ? -dist : dist);
            }
            sc[x] = y;
        }
    }
    if (!whole) {
        /* Each row's visible keys in tile coordinates, [jlo, jhi). Accumulator x holds key
         * jc + 2 tq4 of the tile, jc = (x >> 2) * 8 + (x & 1) a constant, so each bound is
         * one compare of jc with the row's bound less 2 tq4; the lower one only where a
         * left window can raise it above 0. */
        kiln_i32 thi[2];
#if KILN_MASK != KILN_MASK_FULL
        kiln_i32 tlo[2];
#endif
        #pragma unroll
        for (kiln_i32 r = 0; r < 2; ++r) {
            kiln_i32 jhi = lim;
#if KILN_MASK != KILN_MASK_FULL
            kiln_i32 jlo = 0;
            if (wl >= 0 && dr[r] - wl > jlo) jlo = dr[r] - wl;
            tlo[r] = jlo - 2 * tq4;
#if KILN_MASK == KILN_MASK_CAUSAL
            if (dr[r] + 1 < jhi) jhi = dr[r] + 1;
#else
            if (wr >= 0 && dr[r] + wr + 1 < jhi) jhi = dr[r] + wr + 1;
#endif
#endif
            thi[r] = jhi - 2 * tq4;
        }
#if KILN_MASK != KILN_MASK_FULL
        if (wl >= 0) {
            #pragma unroll
            for (kiln_i32 x = 0; x < NACC_S; ++x) {
                const kiln_i32 r = (x >> 1) & 1, jc = (x >> 2) * 8 + (x & 1);
                if (jc < tlo[r] || jc >= thi[r]) sc[x] = kiln_neg_inf();
            }
        } else
#endif
        {
            #pragma unroll
            for (kiln_i32 x = 0; x < NACC_S; ++x) {
                const kiln_i32 r = (x >> 1) & 1, jc = (x >> 2) * 8 + (x & 1);
                if (jc >= thi[r]) sc[x] = kiln_neg_inf();
            }
        }
    }
    float mx[2];
#if KILN_HOPPER_TREE
    /* Four partial maxima per row (accumulator x feeds partial (x & 1) + 2 ((x >> 2) & 1)),
     * so the chains are NACC_S / 8 long instead of NACC_S / 2; each starts at its first
     * score (fmax drops a NaN as the -inf start would: the same result once w->m joins). */
    float mp[2][4];
    #pragma unroll
    for (kiln_i32 x = 0; x < NACC_S; ++x) {
        const kiln_i32 r = (x >> 1) & 1, p = (x & 1) + 2 * ((x >> 2) & 1);
        mp[r][p] = x < 8 ? sc[x] : kiln_fmaxf(mp[r][p], sc[x]);
    }
    #pragma unroll
    for (kiln_i32 r = 0; r < 2; ++r)
        mx[r] = kiln_fmaxf(kiln_fmaxf(mp[r][0], mp[r][1]), kiln_fmaxf(mp[r][2], mp[r][3]));
#else
    mx[0] = mx[1] = kiln_neg_inf();
    #pragma unroll
    for (kiln_i32 x = 0; x < NACC_S; ++x)
        mx[(x >> 1) & 1] = kiln_fmaxf(mx[(x >> 1) & 1], sc[x]);
#endif
    /* Whether a row has seen a visible key comes from its key range, never from the running
     * max (a visible score may be -inf or NaN and must reach the output). Until it has, the
     * row's reference is 0, so exp() of masked scores gives 0. */
    float use[2];
    #pragma unroll
    for (kiln_i32 r = 0; r < 2; ++r) {
        mx[r] = kiln_fmaxf(mx[r], kiln_shfl_xor(mx[r], 1));
        mx[r] = kiln_fmaxf(mx[r], kiln_shfl_xor(mx[r], 2));
        mx[r] = kiln_fmaxf(w->m[r], mx[r] * kexp);
#if KILN_HOPPER_LAZY_RESCALE(D)
        /* The reference moves only past the slack (attention_hopper.h). */
        if (mx[r] <= w->m[r] + KILN_HOPPER_RESCALE_SLACK) mx[r] = w->m[r];
#endif
        const int seen = w->first[r] < kt + BN;
        use[r] = seen ? mx[r] : 0.0f;
        alpha[r] = kiln_hp_exp2(w->m[r] - use[r]);
        w->m[r] = seen ? mx[r] : w->m[r];
        w->l[r] *= alpha[r];
    }
    HP_EXP_TURN_WAIT();
#if KILN_HOPPER_TREE
    /* The tile's row sums in four partials each, as the maxima above. */
    float lp[2][4];
    #pragma unroll
    for (kiln_i32 x = 0; x < NACC_S; ++x) {
        const kiln_i32 r = (x >> 1) & 1, p = (x & 1) + 2 * ((x >> 2) & 1);
        sc[x] = HP_EXP2(x, sc[x] * kexp - use[r]);
        lp[r][p] = x < 8 ? sc[x] : lp[r][p] + sc[x];
    }
    #pragma unroll
    for (kiln_i32 r = 0; r < 2; ++r) w->l[r] += (lp[r][0] + lp[r][1]) + (lp[r][2] + lp[r][3]);
#else
    #pragma unroll
    for (kiln_i32 x = 0; x < NACC_S; ++x) {
        const kiln_i32 r = (x >> 1) & 1;
        sc[x] = HP_EXP2(x, sc[x] * kexp - use[r]);
        w->l[r] += sc[x];
    }
#endif
    HP_EXP_TURN_PASS();
}

/* The weights in the A-fragment layout: keys 16 kc .. 16 kc + 15 are accumulator tiles
 * 2 kc and 2 kc + 1. */
KILN_DEV void hp_pack_p(kiln_u32 pf[BN / 16][4], const float sc[NACC_S])
{
    #pragma unroll
    for (kiln_i32 kc = 0; kc < BN / 16; ++kc)
        #pragma unroll
        for (kiln_i32 hf = 0; hf < 2; ++hf) {
            const float *c = &sc[(2 * kc + hf) * 4];
            pf[kc][2 * hf] = kiln_pack2(c[0], c[1]);
            pf[kc][2 * hf + 1] = kiln_pack2(c[2], c[3]);
        }
}

/* One work item: query tile q0 of head h, batch entry b, split, and its keys [lo, hi) in
 * ntiles tiles. 32-bit: the host keeps sequences below 2^29 and the unit count below 2^31. */
typedef struct hp_item {
    kiln_i32 h, b, split, q0, lo, hi, ntiles;
} hp_item;

/* Division by a divisor d >= 1 fixed for the kernel, of dividends below 2^31, as a multiply
 * and a shift: with l = ceil(log2 d) and m = ceil(2^(31 + l) / d) (below 2^32), m d exceeds
 * 2^(31 + l) by less than 2^l, so n m / 2^(31 + l) is n / d plus less than 1 / d and its
 * integer part is n / d's. Each block works the three divisors out once. */
typedef struct hp_div {
    kiln_u32 m, sh;
} hp_div;

KILN_DEV hp_div hp_div_of(kiln_u32 d)
{
    hp_div v;
    if (d == 0) d = 1; /* an empty grid never steps */
    v.sh = 31u + (d > 1u ? 32u - (kiln_u32)__clz(d - 1u) : 0u);
    v.m = (kiln_u32)((((kiln_u64)1 << v.sh) + d - 1u) / d);
    return v;
}

KILN_DEV kiln_u32 hp_quot(kiln_u32 n, hp_div v)
{
    return (kiln_u32)(((kiln_u64)n * v.m) >> v.sh);
}

/* setmaxnreg moves registers within what the block was launched with: its threads times
 * the per-thread count, which __launch_bounds__ (one block per SM) caps at 65536 / threads
 * rounded down to a multiple of 8 (168 a thread for two consumers: 64512 in all). A split
 * that asks for more leaves the consumers' setmaxnreg.inc waiting for ever (a producer at
 * 48 beside consumers at 232 hung so). */
KILN_STATIC_ASSERT(128 * KILN_HOPPER_REGS_LOAD(D, KILN_MASK) +
                           128 * NC * KILN_HOPPER_REGS_MMA(D, KILN_MASK, NC) <=
                       128 * (1 + NC) * (65536 / (128 * (1 + NC)) / 8 * 8),
                   "the warpgroups' registers after setmaxnreg exceed the block's");

/* The divisors of a block's walk over the work items: units per group (query tiles, or
 * pairs of them under a mask on the persistent grid), heads, splits. */
typedef struct hp_walk {
    hp_div units, heads, splits;
} hp_walk;

KILN_DEV hp_walk hp_walk_of(const kiln_attn_args *a)
{
    const kiln_u32 nq = (kiln_u32)((a->seqlen_q + BM - 1) / BM);
    hp_walk wk;
    wk.units = hp_div_of(KILN_HOPPER_PERSISTENT(D, KILN_MASK) && KILN_MASK != KILN_MASK_FULL
                             ? (nq + 1) / 2 : nq);
    wk.heads = hp_div_of((kiln_u32)a->heads_q);
    wk.splits = hp_div_of((kiln_u32)a->num_splits);
    return wk;
}

/* A window's reach (window_left / right, >= 0) as a 32-bit count: longer than any sequence
 * the host lets through (2^29) is as good as unbounded. */
#if KILN_MASK != KILN_MASK_FULL
KILN_DEV kiln_i32 hp_reach(kiln_i64 w) { return (kiln_i32)(w > (1 << 29) ? (1 << 29) : w); }
#endif

/* Query tile x of head h, z = batch entry x splits + split: its keys as kiln_key_range
 * (attn_seq.h) gives them for fixed-length q, k and v, in 32-bit arithmetic (this runs once
 * per item in every thread: the 64-bit general form was most of a block's per-item setup). */
KILN_DEV void hp_item_at(const kiln_attn_args *a, const hp_walk *wk, kiln_u32 x, kiln_u32 h,
                         kiln_u32 z, hp_item *it)
{
    const kiln_u32 b = hp_quot(z, wk->splits);
    const kiln_i32 sk = (kiln_i32)a->seqlen_k;
    const kiln_i32 q0 = (kiln_i32)x * BM;
    it->h = (kiln_i32)h;
    it->b = (kiln_i32)b;
    it->split = (kiln_i32)(z - b * (kiln_u32)a->num_splits);
    it->q0 = q0;
    kiln_i32 lo = 0, hi = sk;
#if KILN_MASK != KILN_MASK_FULL
    const kiln_i32 sq = (kiln_i32)a->seqlen_q, diag = sk - sq;
    const kiln_i32 i_last = (q0 + BM < sq ? q0 + BM : sq) - 1;
    if (a->window_left >= 0 && q0 + diag - hp_reach(a->window_left) > lo)
        lo = q0 + diag - hp_reach(a->window_left);
#if KILN_MASK == KILN_MASK_CAUSAL
    if (i_last + diag + 1 < hi) hi = i_last + diag + 1;
#else
    if (a->window_right >= 0 && i_last + diag + hp_reach(a->window_right) + 1 < hi)
        hi = i_last + diag + hp_reach(a->window_right) + 1;
#endif
#endif
    if (a->num_splits > 1) {
        const kiln_i32 chunk = (sk + a->num_splits - 1) / a->num_splits;
        const kiln_i32 c0 = it->split * chunk;
        if (c0 > lo) lo = c0;
        if (c0 + chunk < hi) hi = c0 + chunk;
    }
    it->lo = lo;
    it->hi = hi;
    it->ntiles = hi > lo ? (hi - lo + BN - 1) / BN : 0;
}

/* The block's step j: 0 when it has no more; otherwise 1 with *it filled, or with
 * it->q0 < 0 for a step that has nothing to do. Producer and consumers walk the same steps.
 * Per-tile grid: the one item of (blockIdx.x, y, z), the tiles that see the most keys first
 * under a causal or window mask. Persistent grid: units numbered with the query tile
 * fastest (blocks running at once share K and V in L2), block i takes units i, i + P,
 * i + 2P, ...; without a mask a unit is one tile, with one it is the pair of tiles of ranks
 * p and nq - 1 - p in heaviest-first order (both steps of a unit), so every unit weighs
 * about the same and the static order stays balanced. Indices are 32-bit (the host keeps
 * the unit count below 2^31), which keeps the producer's 24 registers enough. */
KILN_DEV int hp_step(const kiln_attn_args *a, const hp_walk *wk, kiln_i32 j, hp_item *it)
{
    const kiln_u32 nq = (kiln_u32)((a->seqlen_q + BM - 1) / BM);
#if KILN_HOPPER_PERSISTENT(D, KILN_MASK)
    const kiln_u32 groups = (kiln_u32)(a->heads_q * a->batch * a->num_splits);
#if KILN_MASK == KILN_MASK_FULL
    const kiln_u32 u = blockIdx.x + (kiln_u32)j * gridDim.x;
    if (u >= nq * groups) return 0;
    const kiln_u32 grp = hp_quot(u, wk->units), z = hp_quot(grp, wk->heads);
    hp_item_at(a, wk, u - grp * nq, grp - z * (kiln_u32)a->heads_q, z, it);
#else
    const kiln_u32 np = (nq + 1) / 2;
    const kiln_u32 u = blockIdx.x + (kiln_u32)(j >> 1) * gridDim.x;
    if (u >= np * groups) return 0;
    const kiln_u32 grp = hp_quot(u, wk->units), z = hp_quot(grp, wk->heads);
    const kiln_u32 p = u - grp * np;
    const kiln_u32 rank = (j & 1) ? nq - 1 - p : p;
    if ((j & 1) && rank == p) {
        it->q0 = -1; /* the middle tile of an odd count has no partner */
        return 1;
    }
    hp_item_at(a, wk, nq - 1 - rank, grp - z * (kiln_u32)a->heads_q, z, it);
#endif
#else
    if (j > 0) return 0;
#if KILN_MASK == KILN_MASK_FULL
    (void)nq;
    hp_item_at(a, wk, blockIdx.x, blockIdx.y, blockIdx.z, it);
#else
    hp_item_at(a, wk, nq - 1 - blockIdx.x, blockIdx.y, blockIdx.z, it);
#endif
#endif
    if (it->q0 >= a->seqlen_q) it->q0 = -1;
    return 1;
}

/* Byte offset of row r (of the tile's BM), 16-byte chunk c (of the row's D / 8) in a tile
 * stored as the copy engine writes Q: 64-column blocks of BM rows, 128-byte swizzle. */
KILN_DEV kiln_u32 hp_tile_off(kiln_i32 r, kiln_i32 c)
{
    return (kiln_u32)(c / 8) * (BM * 128) + (kiln_u32)r * 128 + (kiln_u32)((c % 8) ^ (r % 8)) * 16;
}

extern "C" __global__ void __launch_bounds__(KILN_HOPPER_THREADS(D, KILN_MASK, KILN_HOPPER_LONG), 1)
kiln_attn_fwd(const __grid_constant__ kiln_attn_args a, const __grid_constant__ kiln_tmap tq,
              const __grid_constant__ kiln_tmap tk, const __grid_constant__ kiln_tmap tv,
              const __grid_constant__ kiln_tmap to)
{
    extern __shared__ unsigned char kiln_smem_raw[];
    /* 128-byte swizzling repeats every 1024 bytes: tiles start on such a boundary. */
    unsigned char *sm = kiln_smem_raw + ((1024u - (kiln_smem_addr(kiln_smem_raw) & 1023u)) & 1023u);
    unsigned char *qs = sm;
    unsigned char *ks = qs + TILE_Q;
    unsigned char *vs = ks + NS * TILE_K;
#if HP_O_OWN
    unsigned char *os = vs + NS * TILE_K;
    kiln_u64 *bars = (kiln_u64 *)(os + TILE_Q);
#else
    unsigned char *os = qs; /* each consumer stages its output in its own Q rows */
    kiln_u64 *bars = (kiln_u64 *)(vs + NS * TILE_K);
#endif
    /* Per consumer warp, its item's query tile, head, batch entry and split, written when
     * the item starts and read back for its output (HP_ITEM_SLOT), rather than kept in
     * registers through the key loop or worked out again. */
#if HP_ITEM_SLOT
    int4 *items = (int4 *)(bars + NBARS);
#endif
    KILN_STATIC_ASSERT(NBARS * 8 + NC * 4 * 16 <= 512, "barriers and item slots exceed their room");

    const kiln_i32 tid = kiln_thread_x();
    const kiln_i32 wg = tid / 128;
    const kiln_i64 group = a.heads_q / a.heads_kv;
    const hp_walk wk = hp_walk_of(&a);

    if (tid == 0) {
        for (kiln_i32 i = 0; i < NBARS; ++i)
            kiln_mbar_init(&bars[i], i == BAR_QEMPTY || i >= BAR_KEMPTY(0) ? 4u * NC : 1u);
        kiln_mbar_init_fence();
    }
    /* The stream's previous kernel may still run (kernels/vendor/cuda.h): every thread
     * waits for it before any global access; the barriers' setup above overlaps it. */
    kiln_grid_wait();
    kiln_grid_release();
    kiln_sync();

    if (wg == 0) {
        /* ---- producer: one thread issues every copy ---- */
        kiln_setmaxnreg_dec(KILN_HOPPER_REGS_LOAD(D, KILN_MASK));
        if (tid != 0) return;
        kiln_i32 qn = 0; /* Q tiles loaded so far */
        kiln_i32 st = 0;  /* the ring's next slot, and its phase */
        kiln_u32 ph = 0;
        hp_item it;
        for (kiln_i32 j = 0; hp_step(&a, &wk, j, &it); ++j) {
            if (it.q0 < 0 || it.ntiles == 0) continue;
            const kiln_i32 hq = (kiln_i32)it.h, hkv = (kiln_i32)(it.h / group);
            const kiln_i32 bb = (kiln_i32)it.b;
            for (kiln_i32 t = 0; t < it.ntiles; ++t, hp_ring_next(&st, &ph)) {
                const kiln_i32 kt = (kiln_i32)(it.lo + (kiln_i64)t * BN);
                HP_PRODUCER_WAIT(&bars[BAR_KEMPTY(st)], ph ^ 1u);
                kiln_mbar_expect_tx(&bars[BAR_KFULL(st)], TILE_K);
                for (kiln_i32 c = 0; c < DB; ++c)
                    kiln_tma_load_4d(ks + st * TILE_K + c * (BN * 128), &tk,
                                     &bars[BAR_KFULL(st)], c * 64, kt, hkv, bb);
                if (t == 0) {
                    /* The consumers are done with the previous item's Q (and, when they
                     * stage their output there, with that too). */
                    HP_PRODUCER_WAIT(&bars[BAR_QEMPTY], ((kiln_u32)qn & 1u) ^ 1u);
                    kiln_mbar_expect_tx(&bars[BAR_Q], TILE_Q);
                    for (kiln_i32 c = 0; c < DB; ++c)
                        kiln_tma_load_4d(qs + c * (BM * 128), &tq, &bars[BAR_Q], c * 64,
                                         (kiln_i32)it.q0, hq, bb);
                    ++qn;
                }
                HP_PRODUCER_WAIT(&bars[BAR_VEMPTY(st)], ph ^ 1u);
                kiln_mbar_expect_tx(&bars[BAR_VFULL(st)], TILE_K);
                for (kiln_i32 c = 0; c < DB; ++c)
                    kiln_tma_load_4d(vs + st * TILE_K + c * (BN * 128), &tv,
                                     &bars[BAR_VFULL(st)], c * 64, kt, hkv, bb);
            }
        }
        return;
    }

    /* ---- consumers ---- */
    kiln_setmaxnreg_inc(KILN_HOPPER_REGS_MMA(D, KILN_MASK, NC));
    const kiln_i32 cw = wg - 1;               /* consumer 0 .. NC - 1: rows 64 cw .. */
    const kiln_i32 wtid = tid % 128;
    const kiln_i32 warp = wtid / 32, lane = tid % 32;
    const kiln_i32 g = lane / 4, tq4 = lane % 4;
    /* Scores are kept raw when nothing but the scale acts on them (scale > 0 keeps the max
     * where it is), so scale and max fold into one multiply-add before each exp. */
    const int plain = a.softcap == 0.0f && !a.alibi && a.scale > 0.0f;
    const kiln_u64 qd = kiln_wg_desc(kiln_smem_addr(qs) + cw * 64 * 128, 16, 1024);
    const kiln_u64 kd = kiln_wg_desc(kiln_smem_addr(ks), 16, 1024);
    const kiln_u64 vd = kiln_wg_desc(kiln_smem_addr(vs), BN * 128, 1024);
    kiln_i32 qn = 0;
    kiln_i32 rs = 0; /* the ring's next slot, and its phase */
    kiln_u32 rph = 0;
#if KILN_HOPPER_PINGPONG
    int turns = 0; /* the last consumer has passed the first turn */
#endif

    hp_item it;
    for (kiln_i32 j = 0; hp_step(&a, &wk, j, &it); ++j) {
        if (it.q0 < 0) continue;
#if HP_ITEM_SLOT
        /* Every lane writes the same values, so each reads back its own write. */
        items[kiln_thread_x_fresh() / 32 - 4] = make_int4(it.q0, it.h, it.b, it.split);
#endif
        /* 32-bit inside the tile loop (the host keeps sequences below 2^29): registers. */
        const kiln_i32 q0i = (kiln_i32)it.q0, lo = (kiln_i32)it.lo, hi = (kiln_i32)it.hi;
        const kiln_i32 sq = (kiln_i32)a.seqlen_q;
        const kiln_i32 ntiles = it.ntiles;
        const kiln_i32 diag = (kiln_i32)a.seqlen_k - sq;

        hp_rows w;
        int live[2];
        #pragma unroll
        for (kiln_i32 r = 0; r < 2; ++r) {
            const kiln_i32 i = q0i + cw * 64 + warp * 16 + g + 8 * r;
            kiln_i32 vl = lo, vh = hi;
#if KILN_MASK != KILN_MASK_FULL
            if (a.window_left >= 0 && i + diag - a.window_left > vl) vl = i + diag - a.window_left;
#if KILN_MASK == KILN_MASK_CAUSAL
            if (i + diag + 1 < vh) vh = i + diag + 1;
#else
            if (a.window_right >= 0 && i + diag + a.window_right + 1 < vh)
                vh = i + diag + a.window_right + 1;
#endif
#endif
            if (vl < lo) vl = lo;
            if (vh > hi) vh = hi;
            w.first[r] = vl < vh ? vl : 0x7fffffff;
            w.ri[r] = i;
            w.m[r] = kiln_neg_inf();
            w.l[r] = 0.0f;
        }
        const kiln_i32 i0 = q0i;
        const kiln_i32 i_last = (q0i + BM < sq ? q0i + BM : sq) - 1;
#if HP_SKIP_PV
        /* One past the last key any row of this consumer sees; the shuffle makes it uniform
         * in ptxas's eyes, so the products predicated on it stay asynchronous. */
        kiln_i32 vend = q0i + cw * 64 + 64 + diag;
        if (vend > hi) vend = hi;
        vend = kiln_shfl_idx(vend, 0);
#else
        const kiln_i32 vend = hi;
#endif
        /* One head per item: one ALiBi slope (base-2 units) for all its rows. */
        const float slope = a.alibi ? a.alibi[it.b * a.alibi_stride_batch + it.h] * KILN_LOG2E : 0.0f;

        float o[NACC_O];
        #pragma unroll
        for (kiln_i32 x = 0; x < NACC_O; ++x) o[x] = 0.0f;
        float sc[NACC_S], alpha[2];
        kiln_u32 pf[BN / 16][4];

        /* Pipeline inside the warpgroup, step t >= 1: issue S_t = Q K_t^T and O += P_{t-1}
         * V_{t-1}, wait for S_t only, run the softmax of S_t while the tensor cores finish
         * the P V product, wait for it, rescale O and make P_t. P_{t-1} stays in pf (the
         * product reads it asynchronously) until that wait.
         * Turns: consumer 0 issues first; each issue phase (tile 0's S, then S_t with P V of
         * t - 1, then the last P V: ntiles + 1 of them per item) waits for its turn and
         * passes it on. The last consumer gives consumer 0 its first turn once, and consumer
         * 0 takes the turn the last one passes after its last phase before it leaves, so
         * every arrival is consumed. */
        if (ntiles > 0) {
            kiln_i32 st = rs; /* the slot of the tile being worked on, and its phase */
            kiln_u32 ph = rph;
#if KILN_HOPPER_PINGPONG
            if (cw == NC - 1 && !turns) kiln_bar_arrive(2, 256);
            turns = 1;
#endif
            HP_CONSUMER_WAIT(&bars[BAR_Q], (kiln_u32)qn & 1u);
            HP_CONSUMER_WAIT(&bars[BAR_KFULL(st)], ph);
            HP_MMA_TURN_WAIT();
            kiln_wgmma_fence();
            hp_issue_s(sc, qd, kiln_wg_desc_add(kd, st * TILE_K));
            HP_MMA_TURN_PASS();
            kiln_wgmma_wait(0);
            #pragma unroll
            for (kiln_i32 x = 0; x < NACC_S; ++x) kiln_reg_fence(sc[x]);
            if (lane == 0) {
                kiln_mbar_arrive(&bars[BAR_KEMPTY(st)]);
                if (HP_O_OWN && ntiles == 1) kiln_mbar_arrive(&bars[BAR_QEMPTY]);
            }
            hp_softmax(&a, &w, sc, alpha, lo, hi, i0, i_last, diag, tq4, plain, slope, cw);
            hp_pack_p(pf, sc);

            for (kiln_i32 t = 1; t < ntiles; ++t) {
                const kiln_i32 pst = st;
                const kiln_u32 pph = ph;
                hp_ring_next(&st, &ph);
                const kiln_i32 kt = lo + t * BN;
                HP_CONSUMER_WAIT(&bars[BAR_KFULL(st)], ph);
                HP_CONSUMER_WAIT(&bars[BAR_VFULL(pst)], pph);
                #pragma unroll
                for (kiln_i32 x = 0; x < NACC_O; ++x) kiln_reg_fence(o[x]);
                HP_MMA_TURN_WAIT();
                kiln_wgmma_fence();
                hp_issue_s(sc, qd, kiln_wg_desc_add(kd, st * TILE_K));
                hp_issue_pv(o, pf, kiln_wg_desc_add(vd, pst * TILE_K));
                HP_MMA_TURN_PASS();
                kiln_wgmma_wait(1);
                #pragma unroll
                for (kiln_i32 x = 0; x < NACC_S; ++x) kiln_reg_fence(sc[x]);
                if (lane == 0) {
                    kiln_mbar_arrive(&bars[BAR_KEMPTY(st)]);
                    if (HP_O_OWN && t == ntiles - 1) kiln_mbar_arrive(&bars[BAR_QEMPTY]);
                }
                hp_softmax(&a, &w, sc, alpha, kt, hi, i0, i_last, diag, tq4, plain, slope, cw);
                kiln_wgmma_wait(0);
                #pragma unroll
                for (kiln_i32 x = 0; x < NACC_O; ++x) kiln_reg_fence(o[x]);
                if (lane == 0) kiln_mbar_arrive(&bars[BAR_VEMPTY(pst)]);
                if (!KILN_HOPPER_LAZY_RESCALE(D) ||
                    kiln_warp_any(alpha[0] != 1.0f || alpha[1] != 1.0f)) {
                    #pragma unroll
                    for (kiln_i32 x = 0; x < NACC_O; ++x) o[x] *= alpha[(x >> 1) & 1];
                }
                hp_pack_p(pf, sc);
            }

            HP_CONSUMER_WAIT(&bars[BAR_VFULL(st)], ph);
            #pragma unroll
            for (kiln_i32 x = 0; x < NACC_O; ++x) kiln_reg_fence(o[x]);
            HP_MMA_TURN_WAIT();
            kiln_wgmma_fence();
            hp_issue_pv_last(o, pf, kiln_wg_desc_add(vd, st * TILE_K),
                             vend - (lo + (ntiles - 1) * BN));
            HP_MMA_TURN_PASS();
            kiln_wgmma_wait(0);
            #pragma unroll
            for (kiln_i32 x = 0; x < NACC_O; ++x) kiln_reg_fence(o[x]);
            if (lane == 0) kiln_mbar_arrive(&bars[BAR_VEMPTY(st)]);
            hp_ring_next(&st, &ph);
            rs = st;
            rph = ph;
        }

        /* The output. Row sums, their inverses and the staging tile first: none of them
         * needs the item, which comes after them (from its slot or worked out again), so
         * the staging stores do not wait for it. */
#if KILN_HOPPER_FRESH_OUT(D)
        /* The thread's coordinates read anew for the output: what derives from them (the
         * staging and store addresses) is the same for every item, and would otherwise be
         * hoisted out of the item loop into registers held through the key loop. */
        const kiln_i32 ft = kiln_thread_x_fresh();
        const kiln_i32 wtid = ft % 128, warp = wtid / 32, g = ft % 32 / 4, tq4 = ft % 4;
#endif
        float inv[2];
        int seen[2];
        #pragma unroll
        for (kiln_i32 r = 0; r < 2; ++r) {
            w.l[r] += kiln_shfl_xor(w.l[r], 1);
            w.l[r] += kiln_shfl_xor(w.l[r], 2);
            seen[r] = w.first[r] < hi; /* every tile has been through */
            inv[r] = seen[r] ? kiln_hp_rcp(w.l[r]) : 0.0f;
        }
        /* An unsplit item that loaded keys goes out through shared memory: the consumer's
         * 64 x D output in its own rows of the staging tile, swizzled like Q so neither
         * side has bank conflicts, then whole rows at a time (every 32-byte sector written
         * in full). An own staging tile outlives Q's handshake: without the turn barriers
         * nothing else keeps a fast thread from overwriting rows a slow one of the previous
         * item still reads. */
        const int staged = KILN_HOPPER_STAGE_O && a.num_splits == 1 && ntiles > 0;
        if (staged) {
#if HP_TMA_STORE
            /* The previous item's store has read these rows: its issuing thread waits for
             * that, the barrier tells the others. */
            if (HP_O_OWN) {
                if (wtid == 0) kiln_bulk_wait_read(0);
                kiln_bar_sync(HP_BAR_OWN(cw), 128);
            }
#else
            if (HP_O_OWN && !KILN_HOPPER_PINGPONG) kiln_bar_sync(HP_BAR_OWN(cw), 128);
#endif
            #pragma unroll
            for (kiln_i32 r = 0; r < 2; ++r) {
                const kiln_i32 row = cw * 64 + warp * 16 + g + 8 * r;
                #pragma unroll
                for (kiln_i32 n = 0; n < D / 8; ++n)
                    *(kiln_u32 *)(os + hp_tile_off(row, n) + 4 * tq4) =
                        kiln_pack2(o[4 * n + 2 * r] * inv[r], o[4 * n + 2 * r + 1] * inv[r]);
            }
        }
#if HP_ITEM_SLOT
        const int4 ii = items[wtid / 32 + 4 * cw];
#else
        int4 ii;
        {
            /* The item again, computed anew (the opaque copy of j keeps the compiler from
             * reusing the first one, which would hold it in registers). */
            kiln_i32 jr = j;
            asm volatile("" : "+r"(jr));
            hp_step(&a, &wk, jr, &it);
            ii = make_int4(it.q0, it.h, it.b, it.split);
        }
#endif
        const kiln_i32 q0 = ii.x;
        /* Fixed-length q: batch entry b's rows start at b seqlen_q (kiln_seq_of). */
        const kiln_i64 h = ii.y, split = ii.w, bb = ii.z;
        const kiln_i64 o_off = bb * a.o_stride_batch, sq64 = a.seqlen_q;
        #pragma unroll
        for (kiln_i32 r = 0; r < 2; ++r)
            live[r] = q0 + cw * 64 + warp * 16 + g + 8 * r < sq;
        /* Each row's LSE (m is in base-2 units: ln l + m ln 2 = (log2 l + m) ln 2), only
         * where it goes somewhere: the tests on the arguments are the same for the whole
         * block, so an unsplit call without LSE branches past all of it. */
#define HP_LSE(r) (seen[r] ? (w.m[r] + kiln_hp_log2(w.l[r])) * KILN_LN2 : kiln_neg_inf())
        if (a.num_splits > 1) {
            #pragma unroll
            for (kiln_i32 r = 0; r < 2; ++r) {
                if (!live[r]) continue;
                /* fp32 partials: a quad's four float2 fill a 32-byte sector. */
                const kiln_i64 wrow = (split * a.rows_q + bb * sq64 + w.ri[r]) * a.heads_q + h;
                #pragma unroll
                for (kiln_i32 n = 0; n < D / 8; ++n) {
                    float2 v2;
                    v2.x = o[4 * n + 2 * r] * inv[r];
                    v2.y = o[4 * n + 2 * r + 1] * inv[r];
                    *(float2 *)&a.ws_out[wrow * D + n * 8 + 2 * tq4] = v2;
                }
                if (tq4 == 0) a.ws_lse[wrow] = HP_LSE(r);
            }
        } else {
            if (a.lse) {
                #pragma unroll
                for (kiln_i32 r = 0; r < 2; ++r)
                    if (live[r] && tq4 == 0)
                        a.lse[bb * a.lse_stride_batch + h * a.lse_stride_head +
                              (kiln_i64)w.ri[r] * a.lse_stride_row] = HP_LSE(r);
            }
            if (!KILN_HOPPER_STAGE_O || ntiles == 0) {
                /* Straight from the accumulators (an item with no keys loaded nothing to
                 * stage through): each quad writes 16 bytes of a 32-byte sector. */
                #pragma unroll
                for (kiln_i32 r = 0; r < 2; ++r) {
                    if (!live[r]) continue;
                    kiln_elem *out = (kiln_elem *)a.out;
                    const kiln_i64 at =
                        o_off + (kiln_i64)w.ri[r] * a.o_stride_row + h * a.o_stride_head + 2 * tq4;
                    #pragma unroll
                    for (kiln_i32 n = 0; n < D / 8; ++n)
                        *(kiln_u32 *)&out[at + n * 8] =
                            kiln_pack2(o[4 * n + 2 * r] * inv[r], o[4 * n + 2 * r + 1] * inv[r]);
                }
            }
        }
#undef HP_LSE
        if (staged) {
#if HP_TMA_STORE
            /* One thread hands the consumer's 64 rows to the copy engine, which clips those
             * past the sequence's end. With the output staged in Q's rows, Q's next load
             * waits for that thread's arrival below, after the store has read them. */
            kiln_fence_proxy_async();
            kiln_bar_sync(HP_BAR_OWN(cw), 128);
            if (wtid == 0) {
                #pragma unroll
                for (kiln_i32 c = 0; c < DB; ++c)
                    kiln_tma_store_4d(&to, os + c * (BM * 128) + cw * 64 * 128, c * 64,
                                      q0 + cw * 64, ii.y, ii.z);
                kiln_bulk_commit();
                if (!HP_O_OWN) kiln_bulk_wait_read(0);
            }
#else
            kiln_bar_sync(HP_BAR_OWN(cw), 128);
            /* Thread t copies chunk t % (D / 8) of rows t / (D / 8) + k RK: one address
             * worked out, the others a fixed step from it. Every piece is read before any
             * is stored: the compiler cannot tell the staging tile from the output, so a
             * store between two reads would hold the second. */
            const kiln_i32 RK = 128 / (D / 8), r0 = wtid / (D / 8), c0 = wtid % (D / 8);
            uint4 v4[D / 16];
            #pragma unroll
            for (kiln_i32 k = 0; k < D / 16; ++k)
                v4[k] = *(const uint4 *)(os + hp_tile_off(cw * 64 + r0 + RK * k, c0));
            const kiln_i32 ir = q0 + cw * 64 + r0;
            kiln_elem *out = (kiln_elem *)a.out + o_off + h * a.o_stride_head +
                             (kiln_i64)ir * a.o_stride_row + c0 * 8;
            const kiln_i64 step = (kiln_i64)RK * a.o_stride_row;
            #pragma unroll
            for (kiln_i32 k = 0; k < D / 16; ++k)
                if (ir + RK * k < sq) *(uint4 *)(out + k * step) = v4[k];
            /* Generic accesses to the staging rows before the copy engine's next write
             * there (Q's rows); the next item's writes come after this consumer's next
             * turn barrier, which waits for all of its threads. */
            kiln_fence_proxy_async();
#endif
        }
        if (ntiles > 0) {
            __syncwarp();
            if (!HP_O_OWN && lane == 0) kiln_mbar_arrive(&bars[BAR_QEMPTY]);
            ++qn;
        }
    }
#if KILN_HOPPER_PINGPONG
    if (cw == 0 && turns) HP_TURN_WAIT(); /* the last consumer's pass after its last phase */
#endif
#if HP_TMA_STORE
    if (wtid == 0) kiln_bulk_wait(0); /* the staging rows stay until the last store is done */
#endif
}
