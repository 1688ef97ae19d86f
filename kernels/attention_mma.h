/*
 * Launch shape of the tensor-tier attention kernel (kernels/attention_mma.cu) per compiled
 * head dim, shared with the host that sizes its grid, block and dynamic shared memory
 * (src/gpu/variants.c). Every default shape holds 128 packed (query, head) rows per block:
 *
 *   head dim   warps  m16 tiles  keys per  stages  Q fragments   registers (sm_90)
 *                     per warp   tile
 *   32         4      2          64        2       registers     255
 *   64 - 96    4      2          32        2       shared memory 213 - 255
 *   128        8      1          64        2       registers     246 - 253
 *   160, 192   8      1          64        2       shared memory 243 - 254
 *   256        8      1          32        2       shared memory 255
 *
 * Measured on an H200 (bench/tensor_ab.sh, suite 2, FlashAttention-2 in the same run,
 * 2026-12-01): 4 warps x 2 m16 tiles over 32-key tiles ran D = 64 9-13% and D = 96 4-9%
 * faster than 8 warps x 1 m16 tile over 64-key tiles (D = 64 S = 16k 229 against 211
 * TFLOP/s); each K / V fragment read from shared memory feeds two m16 tiles. D = 128 and
 * up cannot take that shape without a spill (below), so they keep 8 warps x 1 tile.
 *
 * How: ptxas (-Xptxas -v, sm_90, bf16 causal with soft-cap / ALiBi code present) decided
 * what fits without a spill. Two m16 tiles per warp read each K / V fragment once for both
 * and would halve the shared-memory traffic per mma, but at 4 warps x 32 rows the kernel
 * spilled from D = 64 on (40 bytes at D = 64, 248 at D = 128 with Q read from shared
 * memory): only D = 32 keeps that shape. Q fragments stay in registers up to D = 128 (at
 * D = 160 they cost an 8-byte spill, at 192 56 bytes); above, each k-step reads them by
 * ldmatrix (one per 8 mma). D = 256 with 64-key tiles spilled 56 bytes; 32-key tiles do
 * not. The compile matrix log prints every variant's registers and shared memory, and
 * fails on any stack frame.
 *
 * With the schedule switches below on (bf16, sm_90, no stack frame in any): D = 64 185
 * registers full / 189 causal, 96 212 / 216, 128 253 / 246, so one block of 8 warps per
 * SM from D = 64 up (Nsight Compute on D = 128 before them: issue slots 35% busy, 0.51
 * eligible warps per scheduler). The register cap of 3 blocks per SM (KILN_TQ_MIN_BLOCKS,
 * 168 at 4 warps) fits D = 64 without a spill; 2 blocks of 8 warps (128) spill 88 bytes,
 * and 2 m16 tiles per warp at D = 64 still spill (24 bytes, 40 with Q in shared memory).
 * Which shape is faster on the GPU (8 warps against 4 warps and 2 or 3 blocks per SM, 2
 * against 3 stages, each switch on against off) is what bench/tensor_ab.sh measures, one
 * build per alternative.
 *
 * 4 warps x 2 m16 tiles (128 rows) with 32-key tiles, the S accumulators half those of
 * 64-key tiles (ptxas, every dtype / mask / mode, sm_80 / 86 / 89 / 90): no stack frame at D = 64, 80 and 96 with Q fragments read from shared memory
 * (sm_90: 213 - 224 registers at 64, 232 - 244 at 80, 247 - 255 at 96; sm_80 / 86 / 89
 * within 3 of those; 37, 45 and 53 KiB of shared memory). Q in registers (bf16 causal
 * fixed and window paged tried): D = 64 fits at 247 - 254, 80 spills 24 bytes, 96 64 -
 * 88. D = 128 spills 32 - 48 bytes with Q in shared memory (364 - 388 in registers), 160
 * from 216; 192 and 256 cannot fit (O alone is 192 / 256 registers per lane). With 64-key
 * tiles only D = 32 fits (D = 64: 24 - 40 bytes of spill stores).
 */
#ifndef KILN_ATTENTION_MMA_H
#define KILN_ATTENTION_MMA_H

/* The compiled head dims, ascending; another head dim runs on the next larger one with
 * the extra columns zero. */
#define KILN_ATTN_TENSOR_HEAD_DIMS {32, 64, 80, 96, 128, 160, 192, 256}

#ifndef KILN_TQ_WARPS
#define KILN_TQ_WARPS(d) ((d) <= 96 ? 4 : 8)
#endif
#ifndef KILN_TQ_MTILES
#define KILN_TQ_MTILES(d) ((d) <= 96 ? 2 : 1)
#endif
#ifndef KILN_TQ_BLOCK_K
#define KILN_TQ_BLOCK_K(d) ((d) <= 32 || ((d) > 96 && (d) <= 192) ? 64 : 32)
#endif
#ifndef KILN_TQ_STAGES
#define KILN_TQ_STAGES(d) 2
#endif
#ifndef KILN_TQ_Q_IN_REGS
#define KILN_TQ_Q_IN_REGS(d) ((d) <= 32 || ((d) > 96 && (d) <= 128))
#endif
#define KILN_TQ_THREADS(d) (32 * KILN_TQ_WARPS(d))
/* Blocks per SM the register allocation must allow (__launch_bounds__'s second argument:
 * ptxas caps registers at 65536 / (threads x this)). */
#ifndef KILN_TQ_MIN_BLOCKS
#define KILN_TQ_MIN_BLOCKS(d) 1
#endif
/* Packed (query, head) rows per block. */
#define KILN_TQ_BLOCK_Q(d) (16 * KILN_TQ_MTILES(d) * KILN_TQ_WARPS(d))

/* Schedule switches, each 0 or 1 (bench/tensor_ab.sh times both sides):
 *   ONE_BARRIER  one barrier per key tile: the copy of tile t + ST - 1 starts after the
 *                barrier that follows the wait for tile t (that barrier also ends every
 *                warp's use of the stage it overwrites); 0 issues it before the wait and
 *                adds a barrier at the end of each step
 *   FOLD_SCALE   without soft-cap or ALiBi, scores stay unscaled up to the softmax: the
 *                row max is scaled once and each weight is exp2 of one FFMA
 *   HEAVY_FIRST  under a mask that makes later query blocks heavier, the block order
 *                runs over the query blocks slowest, last first, across every head and
 *                batch (0: last first within each head)
 *   WARP_SKIP    a warp whose rows see no key of a tile (a causal block's last tiles)
 *                skips its products and softmax for that tile
 *   LAZY_RESCALE O and the row sum are rescaled only where the row max moved (a branch
 *                per row half; exact, since the factor is otherwise 1); default 0 */
#define KILN_TQ_ONE_BARRIER 1
#define KILN_TQ_FOLD_SCALE 1
#define KILN_TQ_HEAVY_FIRST 1
#define KILN_TQ_WARP_SKIP 1
#define KILN_TQ_LAZY_RESCALE 0
/* Shared-memory row stride in elements: 8 more than a row, so the 8 rows of an ldmatrix
 * fall in 8 different 16-byte bank groups for every head dim above. */
#define KILN_TQ_LDS(d) ((d) + 8)
/* Rows of the Q tile past the stages: all of them, unless its fragments live in
 * registers; then the tile starts at the last stage's space (read before that stage is
 * first filled) and only what exceeds that stage's 2 x keys rows follows the stages. */
#define KILN_TQ_Q_EXTRA_ROWS(d)                                                              \
    (!KILN_TQ_Q_IN_REGS(d) ? KILN_TQ_BLOCK_Q(d)                                             \
     : KILN_TQ_BLOCK_Q(d) > 2 * KILN_TQ_BLOCK_K(d) ? KILN_TQ_BLOCK_Q(d) - 2 * KILN_TQ_BLOCK_K(d) \
                                                   : 0)
/* Dynamic shared memory: stages x (K tile + V tile) of 16-bit elements, the Q rows past
 * them, and stages x keys x 2 row offsets. */
#define KILN_TQ_SMEM_BYTES(d)                                                               \
    ((KILN_TQ_Q_EXTRA_ROWS(d) + 2 * KILN_TQ_STAGES(d) * KILN_TQ_BLOCK_K(d)) *              \
         KILN_TQ_LDS(d) * 2 +                                                                \
     KILN_TQ_STAGES(d) * KILN_TQ_BLOCK_K(d) * 16)

#endif
