/*
 * Attention forward for decode-shaped calls, NVIDIA tensor tier (sm_80+): a few queries per
 * sequence (at most KILN_DECODE_MAX_Q) over a long dense, packed or paged KV cache. The
 * attention kernels' contract (kernels/kiln_args.h: masks, soft-cap, ALiBi, LSE, GQA row
 * packing), with the split-KV merge done by the last block of each split group instead of a
 * second launch. A variant is this file plus
 *   KILN_DTYPE     1 f16 | 2 bf16
 *   KILN_HEAD_DIM  64 | 128          exactly the runtime head_dim
 *   KILN_MASK, KILN_MODE             as in attention.cu
 * The host picks it when the tensor tier covers the call (16-byte K / V rows) and the call
 * is decode-shaped (kernels/decode.h).
 *
 * Grid (row_blocks * num_splits, heads_kv, batch), row_blocks = ceil(seqlen_q * group /
 * KILN_DECODE_ROWS), block x = split * row_blocks + row block, so the blocks that read the
 * same keys for different rows run side by side and share them in L2. A block owns 8 packed
 * (query, head) rows of one KV head: every K / V byte it needs is read once for all of them.
 *
 * Memory is the limit, so the kernel is built around the loads. Each warp streams its own
 * 16-key steps (warp w takes steps w, w + 4, ... of the block's share) straight from global
 * memory into registers with 16-byte loads: the next step's K and V (8 + 8 loads per lane
 * at D = 128) are issued before this step's scores, so a step's 8 KiB per warp is always
 * in flight while the current one is computed; no
 * shared memory on that path, no block barrier. The products run on mma.sync with the
 * keys as M and the 8 rows as N (the GQA group fills N, not a 16-row M that would be mostly
 * padding):
 *   S^T (16 keys x 8 rows) = K Q^T: lane (g, t) loads key rows g and g + 8 as the A
 *   fragments. The dot product is a sum over head dims, so any permutation of the dims
 *   that K and Q share is free: lane (g, t) takes dims 32j + 8t .. 32j + 8t + 7 of its
 *   rows (16 contiguous bytes), which are exactly its fragment slots of k-steps 2j and
 *   2j + 1; Q, staged once in shared memory, is read back in the same order as the B
 *   fragments (16-byte shared loads).
 *   O^T (dims x 8 rows) += V^T P^T: P^T's C layout is transposed into a B fragment with two
 *   movmatrix, and V^T's A fragments need two keys of one dim per register: lane (g, t)
 *   loads keys 2t, 2t + 1, 2t + 8, 2t + 9, 16 bytes (8 dims) of each, and pairs them with
 *   prmt. The dims a lane owns in O^T follow from that choice (see dec_store_warp).
 * Online softmax per row in base-2 units; a row's scores sit in the 8 lanes of one t, so
 * its max is three xor-shuffles. Keys outside the block's range are never loaded (their
 * registers are zeros and their scores -inf), so no stale or past-the-end value reaches a
 * sum.
 * At the end the 4 warps' partial states merge through shared memory (18 KiB at D = 128,
 * rows padded against bank conflicts; 28 KiB of shared memory in all with Q and the split
 * weights).
 * With num_splits == 1 the block writes out and LSE. Otherwise it writes its normalised
 * partial output and LSE to the workspace (layout of kernels/kiln_args.h), and the block
 * that arrives last in its split group (a 64-bit counter per group after the LSE, see
 * KILN_DECODE_TAG) merges the group's partials into out and LSE and resets the count, so
 * a caller's workspace and a CUDA graph replay need no clearing.
 */
#include "kiln_device.h"
#include "kiln_args.h"
#include "mma.h"
#include "memory.h"
#include "attn_seq.h"
#include "decode.h"

#if !defined(KILN_HEAD_DIM) || !defined(KILN_MASK) || !defined(KILN_MODE)
#error "KILN_HEAD_DIM, KILN_MASK and KILN_MODE must be defined"
#endif
#if KILN_HEAD_DIM != 64 && KILN_HEAD_DIM != 128
#error "the decode kernel compiles head_dim 64 and 128"
#endif
#if KILN_DTYPE != 1 && KILN_DTYPE != 2
#error "the decode kernel takes f16 or bf16"
#endif

#define D KILN_HEAD_DIM
#define NT KILN_DECODE_THREADS
#define NW (NT / 32)
#define ROWS KILN_DECODE_ROWS
#define STEP KILN_DECODE_STEP
#define NJ (D / 32)  /* 16-byte pieces of a K or Q row per lane */
#define NH (D / 64)  /* 16-byte pieces of a V row per lane, for each of its 4 keys */
#define NKS (D / 16) /* k-steps of K Q^T */
#define NMT (D / 16) /* m-tiles (16 dims) of O^T */
#define DPT (D / 16) /* dims per thread in the merges: 16 threads per row */
/* Row pitch of the warps' O^T states in shared memory: D + 17 floats, so a warp's scattered
 * stores of one fragment slot (rows 2t + c, dims 8g + ..., dec_store_warp) fall on 16 banks
 * instead of 4, and the merge's reads of dims i + 16e (thread i of a row) from two rows on
 * 31 of 32. With a pitch of D, both were 8-way conflicts on every block's way out of the key
 * loop. */
#define SOP (D + 17)
#define MSL (NT / (D / 4)) /* split lanes of the split merge: D / 4 threads per lane */
#define MU 4               /* splits a merge lane loads at once */
#define SO_FLOATS (NW * ROWS * SOP > MSL * ROWS * D ? NW * ROWS * SOP : MSL * ROWS * D)
#define KILN_LOG2E 1.4426950408889634f
#define KILN_LN2 0.6931471805599453f

#if ROWS != 8 || STEP != 16 || NT != 16 * ROWS
#error "decode.h's block shape is the one this kernel is written for"
#endif

/* One step's registers: K rows g, g + 8; V rows 2t, 2t + 1, 2t + 8, 2t + 9. */
typedef struct dec_kbuf {
    kiln_v4 k[2][NJ];
} dec_kbuf;
typedef struct dec_vbuf {
    kiln_v4 v[4][NH];
} dec_vbuf;

/* Element offset of key j's K (which 0) or V (which 1) row, head 0. */
KILN_DEV kiln_i64 dec_row(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b, kiln_i64 j,
                          int which)
{
    kiln_i64 ko, vo;
    kiln_kv_row(a, s, b, j, &ko, &vo);
    return which ? vo : ko;
}

/* Where a step's first key's K and V rows start (k0, v0), when a step never straddles a
 * page (one_page: always, unless paged with pages of other sizes than multiples of STEP;
 * then rows are looked up one by one). */
typedef struct dec_at {
    kiln_i64 k0, v0;
    int one_page;
} dec_at;

#if KILN_MODE == KILN_MODE_ID_PAGED
/* The pages of a warp's steps, 32 at a time: lane l holds the block-table entry of the
 * warp's step j0 + l (its steps are first, first + NW * STEP, ... after base), read in one
 * load per lane when the window starts rather than by every step before its K and V loads
 * can go out (pages of a multiple of STEP keys). */
typedef struct dec_pages {
    kiln_i32 page, j0;
} dec_pages;

KILN_DEV kiln_i32 dec_page_of_lane(const kiln_attn_args *a, kiln_i64 b, kiln_i64 base,
                                   kiln_i32 first, kiln_i32 j0, kiln_i32 mine)
{
    const kiln_i32 j = j0 + kiln_thread_x() % 32;
    if (j >= mine || a->page_size % STEP != 0) return 0;
    const kiln_u32 key = (kiln_u32)(base + first + j * NW * STEP);
    return a->block_table[b * a->block_table_stride + key / (kiln_u32)a->page_size];
}
#endif

/* The rows of the warp's step j, at key base + rel (rel a multiple of STEP). Warp-uniform:
 * every lane calls it with the same j, and j never decreases. */
KILN_DEV void dec_step_at(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b,
                          kiln_i64 base, kiln_i32 first, kiln_i32 mine, kiln_i32 j, kiln_i32 rel,
                          void *pages_v, dec_at *at)
{
    const kiln_i64 kb = base + rel;
#if KILN_MODE == KILN_MODE_ID_PAGED
    dec_pages *pages = (dec_pages *)pages_v;
    (void)s;
    at->one_page = a->page_size % STEP == 0;
    at->k0 = at->v0 = 0;
    if (at->one_page) {
        while (j - pages->j0 >= 32) {
            pages->j0 += 32;
            pages->page = dec_page_of_lane(a, b, base, first, pages->j0, mine);
        }
        const kiln_u32 ps = (kiln_u32)a->page_size;
        const kiln_i64 page = kiln_shfl_idx(pages->page, j - pages->j0);
        const kiln_i64 slot = (kiln_u32)kb % ps;
        at->k0 = page * a->k_stride_batch + slot * a->k_stride_row;
        at->v0 = page * a->v_stride_batch + slot * a->v_stride_row;
    }
#elif KILN_MODE == KILN_MODE_ID_VARLEN
    /* From the sequence's first key (one 32-bit value) rather than its two 64-bit offsets,
     * which would stay live through the key loop. */
    (void)s, (void)first, (void)mine, (void)j, (void)pages_v;
    at->one_page = 1;
    at->k0 = ((kiln_i64)a->cu_seqlens_k[b] + kb) * a->k_stride_row;
    at->v0 = ((kiln_i64)a->cu_seqlens_k[b] + kb) * a->v_stride_row;
#else
    (void)b, (void)first, (void)mine, (void)j, (void)pages_v;
    at->one_page = 1;
    at->k0 = s->k_off + kb * a->k_stride_row;
    at->v0 = s->v_off + kb * a->v_stride_row;
#endif
}

/* Issues the K loads of the step at key base + rel (rows at); keys base + [lo_r, hi_r) are
 * the block's, the others stay zeros. */
KILN_DEV void dec_load_k(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b, kiln_i64 hk,
                         kiln_i64 base, kiln_i32 rel, const dec_at *at, kiln_i32 lo_r,
                         kiln_i32 hi_r, kiln_i32 g, kiln_i32 t, dec_kbuf *buf)
{
    const kiln_elem *k = (const kiln_elem *)a->k + hk * a->k_stride_head + 8 * t;
    const kiln_i64 k0 = at->k0;
    const int one_page = at->one_page;
    #pragma unroll
    for (kiln_i32 x = 0; x < 2; ++x) {
        const kiln_i32 key = g + 8 * x;
        const int valid = rel + key >= lo_r && rel + key < hi_r;
        kiln_i64 off = k0 + key * a->k_stride_row;
        if (!one_page && valid) off = dec_row(a, s, b, base + rel + key, 0);
        #pragma unroll
        for (kiln_i32 j = 0; j < NJ; ++j) {
            kiln_v4 z;
            z.c[0] = z.c[1] = z.c[2] = z.c[3] = 0u;
            buf->k[x][j] = valid ? kiln_ldg16(k + off + 32 * j) : z;
        }
    }
}

/* The same for V. */
KILN_DEV void dec_load_v(const kiln_attn_args *a, const kiln_seq *s, kiln_i64 b, kiln_i64 hk,
                         kiln_i64 base, kiln_i32 rel, const dec_at *at, kiln_i32 lo_r,
                         kiln_i32 hi_r, kiln_i32 g, kiln_i32 t, dec_vbuf *buf)
{
    const kiln_elem *v = (const kiln_elem *)a->v + hk * a->v_stride_head + 8 * g;
    const kiln_i64 v0 = at->v0;
    const int one_page = at->one_page;
    #pragma unroll
    for (kiln_i32 x = 0; x < 4; ++x) {
        const kiln_i32 key = 2 * t + (x & 1) + 8 * (x >> 1);
        const int valid = rel + key >= lo_r && rel + key < hi_r;
        kiln_i64 off = v0 + key * a->v_stride_row;
        if (!one_page && valid) off = dec_row(a, s, b, base + rel + key, 1);
        #pragma unroll
        for (kiln_i32 h = 0; h < NH; ++h) {
            kiln_v4 z;
            z.c[0] = z.c[1] = z.c[2] = z.c[3] = 0u;
            buf->v[x][h] = valid ? kiln_ldg16(v + off + 64 * h) : z;
        }
    }
}

/* What a lane knows about its two score columns (rows 2t and 2t + 1 of the block). */
typedef struct dec_rows {
    /* Keys base + [vlo, vhi) are visible to the row (the block's share, cut by the row's
     * own mask), base + dr is on its diagonal; clamped so they fit 32 bits. */
    kiln_i32 vlo[2], vhi[2], dr[2];
    float slope[2]; /* ALiBi slope in base-2 units */
} dec_rows;

/* The online-softmax state of a lane's two rows, and its share of O^T. */
typedef struct dec_state {
    float m[2], l[2];
    float o[NMT][4];
} dec_state;

/* Scores of the step at base + rel, the online-softmax update, and P^T as the B fragment
 * of O^T += V^T P^T in pb. */
KILN_DEV void dec_scores(const kiln_attn_args *a, const dec_rows *r, const kiln_elem *qrow,
                         const dec_kbuf *buf, kiln_i32 rel, kiln_i32 g, dec_state *st,
                         kiln_u32 pb[2])
{
    /* Two accumulators (k-steps 2j and 2j + 1), so the products form two chains of
     * dependent mma, not one twice as long. */
    float sc[4], sc2[2][4];
    #pragma unroll
    for (kiln_i32 x = 0; x < 4; ++x) sc2[0][x] = sc2[1][x] = 0.0f;
    #pragma unroll
    for (kiln_i32 j = 0; j < NJ; ++j) {
        /* Q's B fragments for k-steps 2j and 2j + 1, from shared memory (fewer live
         * registers than keeping them). */
        const kiln_v4 qv = kiln_lds16(qrow + 32 * j);
        #pragma unroll
        for (kiln_i32 hh = 0; hh < 2; ++hh) {
            kiln_u32 af[4], bf[2];
            af[0] = buf->k[0][j].c[2 * hh];
            af[1] = buf->k[1][j].c[2 * hh];
            af[2] = buf->k[0][j].c[2 * hh + 1];
            af[3] = buf->k[1][j].c[2 * hh + 1];
            bf[0] = qv.c[2 * hh];
            bf[1] = qv.c[2 * hh + 1];
            kiln_mma16816(sc2[hh], af, bf, sc2[hh]);
        }
    }
    #pragma unroll
    for (kiln_i32 x = 0; x < 4; ++x) sc[x] = sc2[0][x] + sc2[1][x];
    /* sc[x]: key kb + g + 8 (x >> 1), row 2t + (x & 1). Scores in base-2 units. */
    const float scale2 = a->scale * KILN_LOG2E, softcap2 = a->softcap * KILN_LOG2E;
    float mx[2];
    mx[0] = mx[1] = kiln_neg_inf();
    #pragma unroll
    for (kiln_i32 x = 0; x < 4; ++x) {
        const kiln_i32 c = x & 1;
        const kiln_i32 j = rel + g + 8 * (x >> 1);
        float y;
        if (a->softcap != 0.0f)
            y = softcap2 * kiln_tanhf(sc[x] * a->scale / a->softcap);
        else
            y = sc[x] * scale2;
        if (a->alibi) {
            const kiln_i32 dist = r->dr[c] - j;
            y -= r->slope[c] * (float)(dist < 0 ? -dist : dist);
        }
        sc[x] = j >= r->vlo[c] && j < r->vhi[c] ? y : kiln_neg_inf();
        mx[c] = kiln_fmaxf(mx[c], sc[x]);
    }
    float use[2];
    #pragma unroll
    for (kiln_i32 c = 0; c < 2; ++c) {
        mx[c] = kiln_fmaxf(mx[c], kiln_shfl_xor(mx[c], 4));
        mx[c] = kiln_fmaxf(mx[c], kiln_shfl_xor(mx[c], 8));
        mx[c] = kiln_fmaxf(mx[c], kiln_shfl_xor(mx[c], 16));
        mx[c] = kiln_fmaxf(mx[c], st->m[c]);
        /* A row with nothing visible yet keeps max -inf and uses 0 as its reference, so
         * its weights are exp2(-inf) = 0, never -inf - -inf. */
        use[c] = mx[c] == kiln_neg_inf() ? 0.0f : mx[c];
        const float alpha = kiln_exp2f(st->m[c] - use[c]);
        st->m[c] = mx[c];
        st->l[c] *= alpha;
        #pragma unroll
        for (kiln_i32 mt = 0; mt < NMT; ++mt) {
            st->o[mt][c] *= alpha;
            st->o[mt][2 + c] *= alpha;
        }
    }
    float p[4];
    #pragma unroll
    for (kiln_i32 x = 0; x < 4; ++x) p[x] = kiln_exp2f(sc[x] - use[x & 1]);
    st->l[0] += p[0] + p[2];
    st->l[1] += p[1] + p[3];
    /* Keys 0-7 and 8-15 of the step, transposed into B fragments. */
    pb[0] = kiln_movmatrix_trans(kiln_pack2(p[0], p[1]));
    pb[1] = kiln_movmatrix_trans(kiln_pack2(p[2], p[3]));
}

KILN_DEV void dec_pv(const dec_vbuf *buf, const kiln_u32 pb[2], dec_state *st)
{
    #pragma unroll
    for (kiln_i32 mt = 0; mt < NMT; ++mt) {
        const kiln_i32 h = mt / 4, w = mt % 4;
        kiln_u32 af[4];
        af[0] = kiln_prmt(buf->v[0][h].c[w], buf->v[1][h].c[w], 0x5410u);
        af[1] = kiln_prmt(buf->v[0][h].c[w], buf->v[1][h].c[w], 0x7632u);
        af[2] = kiln_prmt(buf->v[2][h].c[w], buf->v[3][h].c[w], 0x5410u);
        af[3] = kiln_prmt(buf->v[2][h].c[w], buf->v[3][h].c[w], 0x7632u);
        kiln_mma16816(st->o[mt], af, pb, st->o[mt]);
    }
}

/* Lane (g, t)'s O^T values: m-tile mt = 4h + w, C slot 2 half + c is row 2t + c, dim
 * 8 (g + 8h) + 2w + half (the dims its V pieces held). */
KILN_DEV void dec_store_warp(const dec_state *st, kiln_i32 g, kiln_i32 t, float so[ROWS][SOP])
{
    #pragma unroll
    for (kiln_i32 mt = 0; mt < NMT; ++mt) {
        const kiln_i32 h = mt / 4, w = mt % 4;
        const kiln_i32 d = 8 * (g + 8 * h) + 2 * w;
        so[2 * t][d] = st->o[mt][0];
        so[2 * t + 1][d] = st->o[mt][1];
        so[2 * t][d + 1] = st->o[mt][2];
        so[2 * t + 1][d + 1] = st->o[mt][3];
    }
}

/* The merge's loads of splits sp0, sp0 + MSL, ... (nu of them): 4 dims (wr[rr] gives the
 * offset) of the block's first nr rows, x[u * nr + rr]; zeros for rows past the live ones.
 * nu x nr is MU x ROWS: MU splits of every row, or twice as many of the first half of the
 * rows where only those are live (a GQA group of 4 at one query). nu and nr are constants
 * at every call, so x stays in registers. */
KILN_DEV void dec_merge_load(const kiln_attn_args *a, kiln_i64 split_rows, kiln_i32 sp0,
                             kiln_i32 p0, kiln_i32 rows, const kiln_i64 wr[ROWS],
                             kiln_v4 x[MU * ROWS], kiln_i32 nu, kiln_i32 nr)
{
    #pragma unroll
    for (kiln_i32 u = 0; u < nu; ++u) {
        const kiln_i32 sp = sp0 + u * MSL;
        const float *po = a->ws_out + sp * split_rows * D;
        #pragma unroll
        for (kiln_i32 rr = 0; rr < nr; ++rr) {
            kiln_v4 *y = &x[u * nr + rr];
            y->c[0] = y->c[1] = y->c[2] = y->c[3] = 0u;
            if (sp < a->num_splits && p0 + rr < rows) *y = kiln_ldcg16(po + wr[rr]);
        }
    }
}

/* The merge's sums of a thread's splits lane_s, lane_s + MSL, ... into m4, nu splits of nr
 * rows a round (as dec_merge_load, whose first round x already holds), in the same order
 * for either shape of round. */
KILN_DEV void dec_merge_sum(const kiln_attn_args *a, kiln_i64 split_rows, kiln_i32 lane_s,
                            kiln_i32 p0, kiln_i32 rows, const kiln_i64 wr[ROWS],
                            kiln_v4 x[MU * ROWS], const float sw[ROWS][KILN_DECODE_MAX_SPLITS],
                            float m4[ROWS][4], kiln_i32 nu, kiln_i32 nr)
{
    /* All of a round's loads are issued before any is used: with many splits this merge is
     * the grid's tail, and its time is round trips. */
    for (kiln_i32 sp0 = lane_s; sp0 < a->num_splits; sp0 += MSL * nu) {
        if (sp0 != lane_s) dec_merge_load(a, split_rows, sp0, p0, rows, wr, x, nu, nr);
        #pragma unroll
        for (kiln_i32 u = 0; u < nu; ++u) {
            const kiln_i32 sp = sp0 + u * MSL;
            if (sp >= a->num_splits) break;
            #pragma unroll
            for (kiln_i32 rr = 0; rr < nr; ++rr)
                #pragma unroll
                for (kiln_i32 e = 0; e < 4; ++e)
                    m4[rr][e] += sw[rr][sp] * kiln_bits_f32(x[u * nr + rr].c[e]);
        }
    }
}

/* The arrival counter of the block's split group (see KILN_DECODE_TAG): indexed by the
 * group's first (query, head) row, unique per block row and below rows_q * heads_q; 8-byte
 * aligned after the LSE. */
KILN_DEV kiln_u64 *dec_counter(const kiln_attn_args *a, kiln_i64 row0, kiln_i32 p0,
                               kiln_i32 group, kiln_i64 hk)
{
    const kiln_u64 at = (kiln_u64)(a->ws_lse + a->num_splits * (a->rows_q * a->heads_q));
    return (kiln_u64 *)((at + 7u) & ~(kiln_u64)7u) +
           ((row0 + p0 / group) * a->heads_q + hk * group + p0 % group);
}

KILN_KERNEL(NT) kiln_attn_decode(kiln_attn_args a)
{
    KILN_SHARED KILN_ALIGN16 kiln_elem qs[ROWS][D];
    /* The warps' O^T states, then the merge's per-lane partial sums. */
    KILN_SHARED KILN_ALIGN16 float so_flat[SO_FLOATS];
    float(*so)[ROWS][SOP] = (float(*)[ROWS][SOP])so_flat;
    KILN_SHARED float sm[NW][ROWS], sl[NW][ROWS];
    KILN_SHARED float sw[ROWS][KILN_DECODE_MAX_SPLITS]; /* the merge's split weights */
    KILN_SHARED int last_flag;
    KILN_SHARED kiln_u64 ctr_seen; /* the group's counter word when the block started */
    /* The stream's previous kernel may still run (kernels/vendor/cuda.h): no global access
     * before this. */
    kiln_grid_wait();
    kiln_grid_release();

    const kiln_i32 tid = kiln_thread_x();
    const kiln_i32 lane = tid % 32, warp = tid / 32;
    const kiln_i32 g = lane / 4, t = lane % 4;
    /* Block coordinates and packed rows in 32 bits: a decode-shaped call has at most
     * KILN_DECODE_MAX_ROWS rows per KV head (kernels/decode.h), and 64-bit divisions cost
     * a hundred instructions each. */
    const kiln_i32 group = (kiln_i32)(a.heads_q / a.heads_kv);
    const kiln_i32 row_blocks = (kiln_i32)((a.seqlen_q * group + ROWS - 1) / ROWS);
    const kiln_i32 rb = (kiln_i32)kiln_block_x() % row_blocks;
    const kiln_i32 split = (kiln_i32)kiln_block_x() / row_blocks;
    const kiln_i64 hk = kiln_block_y();
    const kiln_i64 b = kiln_block_z();
    const kiln_seq s = kiln_seq_of(&a, b);
    const kiln_i32 p0 = rb * ROWS;
    const kiln_i32 rows = (kiln_i32)s.sq * group;
    if (p0 >= rows) return; /* the whole block, and every split of its rows: none counts */

    const kiln_i64 diag = s.sk - s.sq;
    /* The rows' band of keys, then this split's share of it in whole steps. */
    kiln_i64 lo, hi;
    {
        kiln_attn_args band = a;
        band.num_splits = 1;
        kiln_key_range(&band, &s, p0, ROWS, rows, group, 0, &lo, &hi);
    }
    const kiln_i64 base = lo - lo % STEP;
    const kiln_i64 nsteps = hi > lo ? (hi - base + STEP - 1) / STEP : 0;
    /* Splits differ by at most one step (a split count that does not divide the steps
     * leaves no short last split). */
    const kiln_i64 s0 = split * nsteps / a.num_splits;
    const kiln_i64 s1 = (split + 1) * nsteps / a.num_splits;

    /* This warp's steps are s0 + warp, s0 + warp + NW, ...; the first one's K and V loads
     * go out before anything else, so the block's setup below runs under their latency. */
    const kiln_i32 lo_r = (kiln_i32)(lo - base), hi_r = (kiln_i32)(hi - base);
    const kiln_i32 mine = s1 - s0 > warp ? (kiln_i32)((s1 - s0 - warp + NW - 1) / NW) : 0;
    const kiln_i32 first = (kiln_i32)(s0 + warp) * STEP;
    dec_kbuf k0, k1;
    dec_vbuf v0, v1;
#if KILN_MODE == KILN_MODE_ID_PAGED
    dec_pages pages;
    pages.j0 = 0;
    pages.page = mine > 0 ? dec_page_of_lane(&a, b, base, first, 0, mine) : 0;
    void *pv = &pages;
#else
    void *pv = 0;
#endif
    if (mine > 0) {
        dec_at at;
        dec_step_at(&a, &s, b, base, first, mine, 0, first, pv, &at);
        dec_load_k(&a, &s, b, hk, base, first, &at, lo_r, hi_r, g, t, &k0);
        dec_load_v(&a, &s, b, hk, base, first, &at, lo_r, hi_r, g, t, &v0);
    }

    /* The block's Q rows in shared memory (zeros past the last row). Lane (g, t) reads
     * row g, dims 32j + 8t .. + 7 as its B fragments: the K fragments' dim order. Thread
     * tid stages row tid / 16, dims (tid % 16) * DPT .. + DPT - 1, as in the merges at the
     * end (which find the row's query and head again: nothing of it stays live through the
     * key loop). */
    {
        const kiln_i32 row = tid / 16, d0 = (tid % 16) * DPT;
        const int live = p0 + row < rows;
        const kiln_i32 pl = live ? p0 + row : rows - 1;
        const kiln_elem *q = (const kiln_elem *)a.q + s.q_off + (pl / group) * a.q_stride_row +
                             (hk * group + pl % group) * a.q_stride_head;
        #pragma unroll
        for (kiln_i32 e = 0; e < DPT; ++e) qs[row][d0 + e] = live ? q[d0 + e] : (kiln_elem)0;
        /* Whether the group's counter carries the tag is read now, under the loads' latency,
         * not after the key loop, where the last block's merge is the grid's tail. The tag,
         * once there, stays (the last block of every call puts it back), so the value read
         * here still tells at the arrival below. */
        if (a.num_splits > 1 && tid == 0)
            ctr_seen = *(volatile kiln_u64 *)dec_counter(&a, s.row0, p0, group, hk);
        kiln_sync();
    }
    const kiln_elem *qrow = &qs[g][8 * t];
    dec_rows r;
    #pragma unroll
    for (kiln_i32 c = 0; c < 2; ++c) {
        const kiln_i32 pr = p0 + 2 * t + c;
        const kiln_i32 pc = pr < rows ? pr : rows - 1;
        const kiln_i64 dr = pc / group + diag; /* the key on this row's diagonal */
        kiln_i64 vlo = lo, vhi = hi;
#if KILN_MASK != KILN_MASK_FULL
        if (a.window_left >= 0 && dr - a.window_left > vlo) vlo = dr - a.window_left;
#if KILN_MASK == KILN_MASK_CAUSAL
        if (dr + 1 < vhi) vhi = dr + 1;
#else
        if (a.window_right >= 0 && dr + a.window_right + 1 < vhi) vhi = dr + a.window_right + 1;
#endif
#endif
        if (vhi < vlo) vhi = vlo;
        r.vlo[c] = (kiln_i32)(vlo - base);
        r.vhi[c] = (kiln_i32)(vhi - base);
        {
            const kiln_i64 d = dr - base;
            r.dr[c] = (kiln_i32)(d > (1 << 30) ? (1 << 30) : d < -(1 << 30) ? -(1 << 30) : d);
        }
        r.slope[c] = a.alibi ? a.alibi[b * a.alibi_stride_batch + hk * group + pc % group] *
                                   KILN_LOG2E
                             : 0.0f;
    }

    dec_state st;
    st.m[0] = st.m[1] = kiln_neg_inf();
    st.l[0] = st.l[1] = 0.0f;
    #pragma unroll
    for (kiln_i32 mt = 0; mt < NMT; ++mt)
        #pragma unroll
        for (kiln_i32 x = 0; x < 4; ++x) st.o[mt][x] = 0.0f;

    /* This warp's steps: two register buffers, the next step's loads issued before the
     * current step is computed. */
    {
        /* The next step's K and V are both issued before this step's scores, so a whole
         * step (8 KiB a warp at D = 128) is in flight while one is computed: all four
         * 32-register buffers live, no spill. Issuing V only after the scores (three
         * buffers live) ran 2-10% slower on an H200 (B 64, dense 4.02 against 4.22 TB/s,
         * pages of 16 3.63 against 3.98). More bytes in flight by L2 prefetches of the
         * step 2 (4) ahead, two a lane a step, ran slower everywhere: B 1, 32k keys 3.09
         * (2.97) against 3.24, B 64, 4k 3.91 (3.87) against 4.43
         * (bench/results/decode-ab_prefetch_*). */
        kiln_u32 pb[2];
        for (kiln_i32 it = 0; it < mine; it += 2) {
            const kiln_i32 rel0 = first + it * NW * STEP, rel1 = rel0 + NW * STEP;
            const kiln_i32 rel2 = rel1 + NW * STEP;
            const int more1 = it + 1 < mine, more2 = it + 2 < mine;
            if (more1) {
                dec_at at;
                dec_step_at(&a, &s, b, base, first, mine, it + 1, rel1, pv, &at);
                dec_load_k(&a, &s, b, hk, base, rel1, &at, lo_r, hi_r, g, t, &k1);
                dec_load_v(&a, &s, b, hk, base, rel1, &at, lo_r, hi_r, g, t, &v1);
            }
            dec_scores(&a, &r, qrow, &k0, rel0, g, &st, pb);
            dec_pv(&v0, pb, &st);
            if (more1) {
                if (more2) {
                    dec_at at;
                    dec_step_at(&a, &s, b, base, first, mine, it + 2, rel2, pv, &at);
                    dec_load_k(&a, &s, b, hk, base, rel2, &at, lo_r, hi_r, g, t, &k0);
                    dec_load_v(&a, &s, b, hk, base, rel2, &at, lo_r, hi_r, g, t, &v0);
                }
                dec_scores(&a, &r, qrow, &k1, rel1, g, &st, pb);
                dec_pv(&v1, pb, &st);
            }
        }
    }

    /* The warps' states meet in shared memory; thread tid then merges its row (row above)
     * at dims i + 16e, i = tid % 16 (each of a row's stores and loads then covers 16
     * neighbouring dims across its threads). */
    #pragma unroll
    for (kiln_i32 c = 0; c < 2; ++c) {
        st.l[c] += kiln_shfl_xor(st.l[c], 4);
        st.l[c] += kiln_shfl_xor(st.l[c], 8);
        st.l[c] += kiln_shfl_xor(st.l[c], 16);
    }
    dec_store_warp(&st, g, t, so[warp]);
    if (g == 0) {
        sm[warp][2 * t] = st.m[0];
        sm[warp][2 * t + 1] = st.m[1];
        sl[warp][2 * t] = st.l[0];
        sl[warp][2 * t + 1] = st.l[1];
    }
    kiln_sync();

    /* The sequence's offsets again (the loads are L1 hits): keeping them live through the
     * key loop cost the varlen variants a spill. */
    kiln_reload_barrier();
    const kiln_seq se = kiln_seq_of(&a, b);
    const kiln_i32 row = tid / 16, di = tid % 16;
    const int live = p0 + row < rows;
    const kiln_i32 pl = live ? p0 + row : rows - 1;
    const kiln_i64 i = pl / group;
    const kiln_i64 h = hk * group + pl % group;
    float acc[DPT];
    float m = kiln_neg_inf(), l = 0.0f;
    #pragma unroll
    for (kiln_i32 w = 0; w < NW; ++w) m = kiln_fmaxf(m, sm[w][row]);
    {
        const float use = m == kiln_neg_inf() ? 0.0f : m;
        #pragma unroll
        for (kiln_i32 e = 0; e < DPT; ++e) acc[e] = 0.0f;
        #pragma unroll
        for (kiln_i32 w = 0; w < NW; ++w) {
            const float f = kiln_exp2f(sm[w][row] - use);
            l += f * sl[w][row];
            #pragma unroll
            for (kiln_i32 e = 0; e < DPT; ++e) acc[e] += f * so[w][row][di + 16 * e];
        }
    }
    /* l == 0: no visible key (every weight exactly 0): out 0, LSE -inf. A NaN anywhere
     * stays NaN through l and acc. */
    const float inv = l == 0.0f ? 0.0f : 1.0f / l;
    const float lse = l == 0.0f ? kiln_neg_inf() : m * KILN_LN2 + kiln_logf(l);
    kiln_elem *out = (kiln_elem *)a.out;
    const kiln_i64 o_at = se.o_off + i * a.o_stride_row + h * a.o_stride_head + di;
    const kiln_i64 l_at = se.lse_off + h * a.lse_stride_head + i * a.lse_stride_row;

    if (a.num_splits == 1) {
        if (live) {
            #pragma unroll
            for (kiln_i32 e = 0; e < DPT; ++e) out[o_at + 16 * e] = kiln_f32_to_elem(acc[e] * inv);
            if (tid % 16 == 0 && a.lse) a.lse[l_at] = lse;
        }
        return;
    }

    /* Split: publish this block's partial, count the group's arrivals. */
    const kiln_i64 split_rows = a.rows_q * a.heads_q;
    const kiln_i64 wrow = (se.row0 + i) * a.heads_q + h;
    if (live) {
        float *wo = a.ws_out + (split * split_rows + wrow) * D + di;
        #pragma unroll
        for (kiln_i32 e = 0; e < DPT; ++e) wo[16 * e] = acc[e] * inv;
        if (tid % 16 == 0) a.ws_lse[split * split_rows + wrow] = lse;
    }
    /* The block's stores come before thread 0's count (the barrier, then its release); the
     * count's acquire half, then the barrier, put every other split's stores before the
     * last block's reads. */
    kiln_sync();
    if (tid == 0) {
        /* One atomic add where the word carries the tag (every call after a workspace's
         * first): a compare-and-swap loop would cost the group's last block one round trip
         * per block that arrived with it. A word without the tag is first claimed by
         * installing the tag with a count of 0 (a block that loses that race sees the
         * tag); then every block adds. */
        kiln_u64 *ctr = dec_counter(&a, se.row0, p0, group, hk);
        kiln_u64 old = ctr_seen;
        while ((old >> 32) != KILN_DECODE_TAG) {
            const kiln_u64 seen = kiln_cas64(ctr, old, (kiln_u64)KILN_DECODE_TAG << 32);
            if (seen == old) break; /* claimed with count 0: the add below counts us */
            old = seen;
        }
        const kiln_u64 prev = kiln_arrive64(ctr, 1u);
        last_flag = (kiln_i64)(prev & 0xffffffffu) + 1 == (kiln_i64)a.num_splits;
    }
    kiln_sync();
    if (!last_flag) return; /* block-uniform */

    /* Last of the group: merge every split's partial. The 16 threads of a row first fetch
     * its split LSEs together (independent loads) and turn them into weights in shared
     * memory; then thread tid owns 4 dims (tid % (D / 4)) of every live row for the splits
     * lane_s + k * MSL, lane_s = tid / (D / 4), so the partials stream as 16-byte loads, MU
     * splits of 8 rows in flight per thread, and the MSL partial sums meet in shared
     * memory.
     * What the tail costs (an H200, 32 / 8 heads, D 128, globaltimer stamps per block,
     * bench/decode_trace.py): the key loops end over a spread of about 5 us (blocks on
     * multiprocessors that hold two run about 10% slower than alone), then the last block
     * spends about 1 us on its warps' merge and partial, 0.7 us on the count and 2.5-3 us
     * here. Moving the counter read and reset off this path and counting with one
     * acquire-release atomic gained 1-2%; weights by shuffles, and 4-row blocks reading
     * twice the splits per round, did not (0-6% slower). Reading twice the splits per
     * round only where half the rows are live (8-row blocks kept) gained 0.6-2.2% at B 1,
     * 32k keys (32 splits in one round; bench/results/decode-ab_merge-half-*). Counting
     * a block's loop end (relaxed, under its warps' merge) apart from its publication (a
     * release add after its partial), the block whose loop ended last merging after
     * acquire loads of the publication count, so that its own count and store drain
     * leave the tail: no faster on an H100 (bench/decode_ab.sh, two passes,
     * bench/results/decode-ab_publish-late_*: B 1 32k dense 2.49 / 2.48 TB/s against
     * 2.50 / 2.51, B 8 4k 2.52 / 2.51 against 2.54 / 2.54, pages within 0.01). A split
     * group of 2-8 blocks launched as one thread-block cluster and merged through
     * distributed shared memory (no workspace or L2 round trip here) was correct but ran
     * B 8 4k at 1.78 TB/s against 2.41 and B 8 32k at 2.41 against 3.03 on an H100, with
     * programmatic launch or without. At B 8 32k the merge (about 5 us) is under 2% of a
     * 354 us call, so the loss is in the key loops: the clustered launch placed or held
     * its blocks worse (not profiled; bench/results/decode-ab_cluster_*, patch beside
     * it). Handing a group's steps out at run time (after two fixed steps, each warp
     * claiming its next with an atomic add on the group's counter word) so that a slower
     * block takes fewer steps, rather than trimming this tail, gained 1-3% at B 8 4k and
     * B 1 32k dense and lost 5-7% at B 1 4k (graph-replayed), on an H100
     * (bench/results/decode-ab_pool_*, patch beside it). */
    const kiln_i32 part = tid % 16;
    const kiln_i32 c4 = (tid % (D / 4)) * 4, lane_s = tid / (D / 4);
    kiln_i64 wr[ROWS];
    #pragma unroll
    for (kiln_i32 rr = 0; rr < ROWS; ++rr) {
        const kiln_i32 pr = p0 + rr < rows ? p0 + rr : rows - 1;
        wr[rr] = ((se.row0 + pr / group) * a.heads_q + hk * group + pr % group) * D + c4;
    }
    /* The first round of partials (MU splits, or 2 MU where at most ROWS / 2 rows are live)
     * is loaded before the weights, so its round trip overlaps theirs: with up to MSL x MU
     * (2 MU) splits the merge then waits for one round trip, not two. */
    const int half = rows - p0 <= ROWS / 2; /* block-uniform */
    kiln_v4 x[MU * ROWS];
    if (half)
        dec_merge_load(&a, split_rows, lane_s, p0, rows, wr, x, 2 * MU, ROWS / 2);
    else
        dec_merge_load(&a, split_rows, lane_s, p0, rows, wr, x, MU, ROWS);
    for (kiln_i32 sp = part; sp < a.num_splits; sp += 16)
        sw[row][sp] = kiln_ldcg(a.ws_lse + sp * split_rows + wrow);
    kiln_sync();
    float mm = kiln_neg_inf();
    for (kiln_i32 sp = 0; sp < a.num_splits; ++sp) mm = kiln_fmaxf(mm, sw[row][sp]);
    kiln_sync();
    for (kiln_i32 sp = part; sp < a.num_splits; sp += 16)
        /* A split that saw nothing has LSE -inf and weight 0; a NaN LSE (which the max
         * skips) gives a NaN weight, so the row stays NaN. */
        sw[row][sp] = kiln_expf(sw[row][sp] - (mm == kiln_neg_inf() ? 0.0f : mm));
    kiln_sync();
    float tot = 0.0f;
    for (kiln_i32 sp = 0; sp < a.num_splits; ++sp) tot += sw[row][sp];
    {
        float m4[ROWS][4];
        #pragma unroll
        for (kiln_i32 rr = 0; rr < ROWS; ++rr)
            #pragma unroll
            for (kiln_i32 e = 0; e < 4; ++e) m4[rr][e] = 0.0f;
        if (half)
            dec_merge_sum(&a, split_rows, lane_s, p0, rows, wr, x, sw, m4, 2 * MU, ROWS / 2);
        else
            dec_merge_sum(&a, split_rows, lane_s, p0, rows, wr, x, sw, m4, MU, ROWS);
        kiln_sync(); /* so is free: every thread has read its warp states */
        #pragma unroll
        for (kiln_i32 rr = 0; rr < ROWS; ++rr)
            #pragma unroll
            for (kiln_i32 e = 0; e < 4; ++e) so_flat[(lane_s * ROWS + rr) * D + c4 + e] = m4[rr][e];
        kiln_sync();
        #pragma unroll
        for (kiln_i32 e = 0; e < DPT; ++e) {
            float sum = 0.0f;
            #pragma unroll
            for (kiln_i32 l2 = 0; l2 < MSL; ++l2)
                sum += so_flat[(l2 * ROWS + row) * D + di + 16 * e];
            acc[e] = sum;
        }
    }
    const float tinv = tot == 0.0f ? 0.0f : 1.0f / tot;
    /* Every block of the group has arrived and every partial is read: the count goes back
     * to 0 for the next call, the tag stays. */
    if (tid == 0) kiln_st64(dec_counter(&a, se.row0, p0, group, hk), (kiln_u64)KILN_DECODE_TAG << 32);
    if (!live) return;
    #pragma unroll
    for (kiln_i32 e = 0; e < DPT; ++e) out[o_at + 16 * e] = kiln_f32_to_elem(acc[e] * tinv);
    if (part == 0 && a.lse) a.lse[l_at] = tot == 0.0f ? kiln_neg_inf() : mm + kiln_logf(tot);
}
