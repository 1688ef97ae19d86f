/*
 * Launch shape of the tensor-tier attention kernel (kernels/attention_mma.cu) per compiled
 * head dim, shared with the host that sizes its grid, block and dynamic shared memory
 * (src/gpu/variants.c). Every default shape holds 128 packed (query, head) rows per block:
 *
 *   head dim   warps  m16 tiles  keys per  stages  Q fragments   registers (sm_90)
 *                     per warp   tile
 *   32         4      2          64        2       registers     216 - 239
 *   64         4      2          64        2       shared memory 234 - 246
 *   80         4      2          48        2       shared memory 219 - 234
 *   96         4      2          48 (a)    2       shared memory 209 - 255
 *   128        4      2          32        2       shared memory 243 - 252
 *   128 paged  8      1          64        2       registers     209 - 215
 *   160, 192   8      1          64        2       shared memory 198 - 232
 *   256        8      1          32 (a)    2       shared memory 240 - 252
 * (a) on sm_90 (KILN_TQ_LONG below) 64 keys, except head dim 96 paged: 32 keys everywhere.
 *
 * Two m16 tiles per warp read each K / V fragment from shared memory once for both (half
 * the ldmatrix traffic per mma of one tile per warp, and two independent mma chains), and
 * longer key tiles spread the per-tile costs (the barrier, the row-max shuffles, the O
 * rescale) over more keys. Both need registers: O is MT x D / 2 floats per lane and the
 * scores MT x BK / 2. What made them fit (ptxas -Xptxas -v, every dtype / mask / mode,
 * sm_80 / 86 / 89 / 90, no stack frame in any; the compile matrix log prints each
 * variant's registers and shared memory and fails on any stack frame):
 *   - nothing per row or per sequence held through the key loop: each row's diagonal,
 *     first visible key, ALiBi slope and output / LSE pointers sit in shared memory (28
 *     bytes a row) and are read where used; K / V addresses are affine in the key except
 *     when paged (then a ring of row offsets, from the sequence's block-table row)
 *   - the copies' per-thread addresses recomputed each tile from a fresh thread index
 *     (kiln_thread_x_fresh), not hoisted out of the loop: 40 - 50 registers at D = 128
 *   - __launch_bounds__ with its blocks-per-SM argument even at 1 (else ptxas capped D =
 *     32 at 168 registers and spilled)
 * Before those, D = 64 spilled over 64-key tiles and D = 128 could not take 2 m16 tiles.
 * Outside the key loop (Nsight Compute's per-instruction samples, bench/ncu_run.sh, D = 64,
 * S = 1k: code run once per block was 21% of the samples, 40% under the causal mask): an
 * unsplit block's output goes through shared memory and out as 16-byte pieces of rows
 * (it was two-element stores, each element rounded on its own: 12% of the samples), and
 * each row's Q offset is computed once into shared memory instead of a division per
 * 16-byte copy. In one A/B against the kernel before (bench/tensor_ab.sh, ALTS="new pre",
 * bench/results/tensor-ab_stageout-*): S = 1k 1.09-1.17x, S = 4k 1.01-1.05x, 16k 1.01-1.02x.
 * D = 128 over 64-key tiles spilled 48 - 96 bytes and D = 64 over 128 48 - 56 before the
 * copies took one address computation per tile (kiln_tile_issue); with it both spill 16 - 32
 * bytes on sm_80 - 90 (none for D = 64 without a mask on sm_90) and measured 0.95 - 1.01x of
 * the defaults on an H100 (bench/results/tensor-ab_tiles2_*). D = 96 over 64 spills 28 - 44
 * on sm_80 - 89 (and 8 - 32 paged on sm_90); D = 160 and up cannot take 2 m16 tiles (O
 * alone is 160 - 256 registers). The registers above are the compile matrix's (sm_90,
 * every dtype, mask and mode, 2026-12-06).
 *
 * Longer key tiles at D = 80, 96 and 256 (bench/tensor_ab.sh, ALTS="new k64 k48 d256k64
 * d256st3", 2026-12-04, bench/results/tensor-ab_tiles_summary-*; TFLOP/s of the shapes
 * before, FA2 in the same run): D = 96 S = 4k over 64-key tiles 299 / 247 (no mask / causal)
 * against 273 / 224 over 32, over 48 290 / 242; D = 256 over 64 267 / 243 against 247 / 221
 * (3 stages of 32 instead: 249 / 233). D = 128 over 64 was no faster (0.95 - 1.00x), and D
 * = 80, not in the suite, takes D = 96's 48 where 64 spills (16 bytes on sm_90). Against
 * the kernel before in one run (ALTS="new pre", bench/results/tensor-ab_tiles-vs-pre_*):
 * D = 96 1.10x / 1.05x, D = 256 1.07x / 1.13x, D = 80 (kiln bench attention, 24 heads, S =
 * 4k) 1.08x / 1.10x, D = 64 0.99 - 1.01x.
 *
 * Measured on an H200 (bench/tensor_ab.sh, suite 2, FlashAttention-2 in the same run,
 * 2026-12-02, bench/results/tensor-ab_diet-*): against the shapes before (D = 64 over
 * 32-key tiles, D = 128 as 8 warps x 1 tile over 64-key tiles with Q in registers, and
 * the per-row values in registers), D = 64 1.08-1.24x and D = 128 1.06-1.13x; D = 64 over
 * 32-key tiles with the rest of this change 0.85-0.91x of 64-key tiles, D = 128 as 8 warps
 * x 1 tile with it 0.89-0.92x. D = 96 and 256 (shapes unchanged) 0.96-1.04x.
 *
 * Earlier measurements (2026-12-01): 2 blocks of 8 warps (128 registers) spilled; the
 * schedule switches below each faster on; 3 stages no faster than 2. Which shape is faster
 * (warps, tiles per warp, keys per tile, stages, each switch) is what bench/tensor_ab.sh
 * measures, one build per alternative.
 */
#ifndef KILN_ATTENTION_MMA_H
#define KILN_ATTENTION_MMA_H

/* The compiled head dims, ascending; another head dim runs on the next larger one with
 * the extra columns zero. */
#define KILN_ATTN_TENSOR_HEAD_DIMS {32, 64, 80, 96, 128, 160, 192, 256}

/* Every shape macro takes the head dim d and the variant's shape flags p:
 *   KILN_TQ_PAGED  a paged variant: at head dim 128 it keeps 8 warps x 1 m16 tile, as 2
 *                  tiles per warp left it a few registers short on some targets (8 - 24
 *                  bytes of spill), and at 96 it keeps 32-key tiles (48 spill 8 bytes)
 *   KILN_TQ_LONG   compiled for sm_90 (the host passes KILN_TQ_LONG_TILES=1 and names the
 *                  variant by its keys per tile, e.g. attn_fwd.bf16.d256.full.fixed.k64.tensor):
 *                  its ptxas fits head dim 96 over 64-key tiles with no spill (sm_80 - 89
 *                  spill 28 - 44 bytes) and its 227 KB hold head dim 256's (204 KB) */
#define KILN_TQ_PAGED 1
#define KILN_TQ_LONG 2
#ifndef KILN_TQ_WIDE
#define KILN_TQ_WIDE(d, p) ((d) <= 96 || ((d) <= 128 && !((p) & KILN_TQ_PAGED))) /* 4 warps x 2 m16 tiles */
#endif
#ifndef KILN_TQ_WARPS
#define KILN_TQ_WARPS(d, p) (KILN_TQ_WIDE(d, p) ? 4 : 8)
#endif
#ifndef KILN_TQ_MTILES
#define KILN_TQ_MTILES(d, p) (KILN_TQ_WIDE(d, p) ? 2 : 1)
#endif
/* Keys per tile (the table above); head dims 80 and 96 by KILN_TQ_BLOCK_K_96. */
#define KILN_TQ_BLOCK_K_96(d, p) \
    ((p) & KILN_TQ_PAGED && (d) == 96 ? 32 : (p) & KILN_TQ_LONG && (d) == 96 ? 64 : 48)
#ifndef KILN_TQ_BLOCK_K
#define KILN_TQ_BLOCK_K(d, p) ((d) <= 64 || ((d) > 96 && (d) <= 192 && !KILN_TQ_WIDE(d, p)) ? 64 : (d) > 64 && (d) <= 96 ? KILN_TQ_BLOCK_K_96(d, p) : (d) == 256 && ((p) & KILN_TQ_LONG) ? 64 : 32)
#endif
#ifndef KILN_TQ_STAGES
#define KILN_TQ_STAGES(d, p) 2
#endif
#ifndef KILN_TQ_Q_IN_REGS
#define KILN_TQ_Q_IN_REGS(d, p) ((d) <= 32 || ((d) > 96 && (d) <= 128 && !KILN_TQ_WIDE(d, p)))
#endif
#define KILN_TQ_THREADS(d, p) (32 * KILN_TQ_WARPS(d, p))
/* Blocks per SM the register allocation must allow (__launch_bounds__'s second argument:
 * ptxas caps registers at 65536 / (threads x this)). */
#ifndef KILN_TQ_MIN_BLOCKS
#define KILN_TQ_MIN_BLOCKS(d, p) 1
#endif
/* Packed (query, head) rows per block. */
#define KILN_TQ_BLOCK_Q(d, p) (16 * KILN_TQ_MTILES(d, p) * KILN_TQ_WARPS(d, p))

/* Schedule switches, each 0 or 1 (bench/tensor_ab.sh times both sides):
 *   ONE_BARRIER  one barrier per key tile: the copy of tile t + ST - 1 starts after the
 *                barrier that follows the wait for tile t (that barrier also ends every
 *                warp's use of the stage it overwrites); 0 issues it before the wait and
 *                adds a barrier at the end of each step
 *   FOLD_SCALE   without soft-cap or ALiBi, scores stay unscaled up to the softmax: the
 *                row max is scaled once and each weight is exp2 of one FFMA
 *   HEAVY_FIRST  under a mask that makes later query blocks heavier, the block order
 *                runs over the query blocks slowest, last first, across every head and
 *                batch; 0: last first within each head, so the blocks running at once
 *                share their heads' K and V in L2. Against 1 on an H100 (ALTS="new perhead",
 *                bench/results/tensor-ab_order_*), causal: head dim 64 S = 4k 1.13x, 16k
 *                1.07x, 1k 1.02x; 96 1.10x; 128 1.07x / 1.08x / 1.03x at 1k / 4k / 16k;
 *                256 0.98x. Nsight Compute at head dim 64, S = 1k causal with 1: 38% L2
 *                hits and 1.7 TB/s from DRAM, against 84% and 0.5 TB/s without the mask
 *                (bench/results/ncu_tensor-d64-s1k_*)
 *   WARP_SKIP    a warp whose rows see no key of a tile (a causal block's last tiles)
 *                skips its products and softmax for that tile
 *   LAZY_RESCALE each row's reference (the running max its weights are taken against,
 *                base-2 units) moves only when a tile's max passes it by more than
 *                KILN_TQ_RESCALE_SLACK, or is NaN; O and the row sums are rescaled only
 *                after a tile where some row of the warp moved (one vote per tile). Each
 *                weight is then at most 2^slack (256: far inside fp16's range, and the
 *                element types' relative rounding does not depend on magnitude); the
 *                output and LSE divide by a sum taken against the same reference. 0:
 *                every row follows its max and O is rescaled after every tile. Against 0
 *                on an H200 (ALTS="new eager", bench/results/tensor-ab_slack_*): head dim
 *                128 1.03 - 1.06x, 96 1.01x, 64 0.97 - 1.01x, 256 1.00x
 * A switch INTERLEAVE (warp w owning the block's m16 tiles w and w + warps, so that under a
 * causal mask no warp waits at the barriers through the block's last key tile while others
 * finish it) measured within noise of the defaults on an H100 (-3.4 .. +2.9% per suite-2
 * shape, alone and with the affine copies; bench/results/tensor-ab_aff_*) and was taken
 * out. A switch BALANCED_ROWS (with 2 m16 tiles per warp, warp w owning the block's m16 tiles w
 * and 2 x warps - 1 - w, each skipping and masking key tiles by its own rows) measured 16-32%
 * slower under the causal mask on an H100 (bench/results/tensor-ab_bal_*): its per-m16-tile
 * flags guarded every product, exp and rescale of the key loop. It was taken out. An
 * EARLY_TILE switch (the first K / V tile's copy issued before the per-row setup, whose
 * divisions by the GQA group and barrier would then run under its latency) measured
 * within noise on an H100 (ALTS="new late", -3.5 .. +1.7% per suite-2 shape, the short
 * shapes it aimed at +0.9 .. +1.7%; bench/results/tensor-ab_early-tile_*, patch beside it)
 * and was not kept. */
#define KILN_TQ_ONE_BARRIER 1
#define KILN_TQ_FOLD_SCALE 1
#define KILN_TQ_HEAVY_FIRST 0
#define KILN_TQ_WARP_SKIP 1
#define KILN_TQ_LAZY_RESCALE 1
#ifndef KILN_TQ_RESCALE_SLACK
#define KILN_TQ_RESCALE_SLACK 8.0f
#endif
/* Shared-memory row stride in elements: 8 more than a row, so the 8 rows of an ldmatrix
 * fall in 8 different 16-byte bank groups for every head dim above. */
#define KILN_TQ_LDS(d) ((d) + 8)
/* Rows of the Q tile past the stages: all of them, unless its fragments live in
 * registers; then the tile starts at the last stage's space (read before that stage is
 * first filled) and only what exceeds that stage's 2 x keys rows follows the stages. */
#define KILN_TQ_Q_EXTRA_ROWS(d, p)                                                              \
    (!KILN_TQ_Q_IN_REGS(d, p) ? KILN_TQ_BLOCK_Q(d, p)                                             \
     : KILN_TQ_BLOCK_Q(d, p) > 2 * KILN_TQ_BLOCK_K(d, p) ? KILN_TQ_BLOCK_Q(d, p) - 2 * KILN_TQ_BLOCK_K(d, p) \
                                                   : 0)
/* Bytes of the row-offset space: stages x keys x 2 offsets of K / V rows (paged), and
 * before the key loop each query row's Q offset (8 bytes a row), whichever is larger. */
#define KILN_TQ_ROWS_BYTES(d, p)                                                               \
    (KILN_TQ_STAGES(d, p) * KILN_TQ_BLOCK_K(d, p) * 16 > KILN_TQ_BLOCK_Q(d, p) * 8             \
         ? KILN_TQ_STAGES(d, p) * KILN_TQ_BLOCK_K(d, p) * 16                                   \
         : KILN_TQ_BLOCK_Q(d, p) * 8)
/* Dynamic shared memory: stages x (K tile + V tile) of 16-bit elements, the Q rows past
 * them, the row offsets, and 28 bytes of constants per row. */
#define KILN_TQ_SMEM_BYTES(d, p)                                                               \
    ((KILN_TQ_Q_EXTRA_ROWS(d, p) + 2 * KILN_TQ_STAGES(d, p) * KILN_TQ_BLOCK_K(d, p)) *              \
         KILN_TQ_LDS(d) * 2 +                                                                \
     KILN_TQ_ROWS_BYTES(d, p) + KILN_TQ_BLOCK_Q(d, p) * 28)

#endif
