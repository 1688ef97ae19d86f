/*
 * Launch shape of the tensor-tier attention kernel (kernels/attention_mma.cu) per compiled
 * head dim, shared with the host that sizes its grid, block and dynamic shared memory
 * (src/gpu/variants.c). Every shape holds 128 packed (query, head) rows per block:
 *
 *   head dim   warps  m16 tiles  keys per  stages  Q fragments   registers (sm_90)
 *                     per warp   tile
 *   32         4      2          64        2       registers     255
 *   64 - 128   8      1          64        2       registers     207 - 251
 *   160, 192   8      1          64        2       shared memory 243 - 254
 *   256        8      1          32        2       shared memory 255
 *
 * How: ptxas (-Xptxas -v, sm_90, bf16 causal with soft-cap / ALiBi code present) decided
 * what fits without a spill. Two m16 tiles per warp read each K / V fragment once for both
 * and would halve the shared-memory traffic per mma, but at 4 warps x 32 rows the kernel
 * spilled from D = 64 on (40 bytes at D = 64, 248 at D = 128 with Q read from shared
 * memory): only D = 32 keeps that shape. Q fragments stay in registers up to D = 128 (at
 * D = 160 they cost an 8-byte spill, at 192 56 bytes); above, each k-step reads them by
 * ldmatrix (one per 8 mma). D = 256 with 64-key tiles spilled 56 bytes; 32-key tiles do
 * not. The compile matrix log prints every variant's registers and shared memory, and
 * fails on any stack frame. H200 throughput of these shapes: bench/results/tensor_*.
 */
#ifndef KILN_ATTENTION_MMA_H
#define KILN_ATTENTION_MMA_H

#define KILN_ATTN_TENSOR_BLOCK_Q 128 /* packed (query, head) rows per block, every shape */

/* The compiled head dims, ascending; another head dim runs on the next larger one with
 * the extra columns zero. */
#define KILN_ATTN_TENSOR_HEAD_DIMS {32, 64, 80, 96, 128, 160, 192, 256}

#define KILN_TQ_WARPS(d) ((d) <= 32 ? 4 : 8)
#define KILN_TQ_MTILES(d) ((d) <= 32 ? 2 : 1)
#define KILN_TQ_BLOCK_K(d) ((d) <= 192 ? 64 : 32)
#define KILN_TQ_STAGES(d) 2
#define KILN_TQ_Q_IN_REGS(d) ((d) <= 128)
#define KILN_TQ_THREADS(d) (32 * KILN_TQ_WARPS(d))
/* Shared-memory row stride in elements: 8 more than a row, so the 8 rows of an ldmatrix
 * fall in 8 different 16-byte bank groups for every head dim above. */
#define KILN_TQ_LDS(d) ((d) + 8)
/* Dynamic shared memory: the Q tile, stages x (K tile + V tile) of 16-bit elements, and
 * stages x keys x 2 row offsets. */
#define KILN_TQ_SMEM_BYTES(d)                                                               \
    ((KILN_ATTN_TENSOR_BLOCK_Q + 2 * KILN_TQ_STAGES(d) * KILN_TQ_BLOCK_K(d)) * KILN_TQ_LDS(d) * \
         2 +                                                                                 \
     KILN_TQ_STAGES(d) * KILN_TQ_BLOCK_K(d) * 16)

#endif
