/*
 * Block shape and instruction families of the AMD tensor-tier attention kernel
 * (kernels/attention_wmma.cu), shared with the host that sizes its grid and picks the
 * family (src/gpu/variants.c). A variant is compiled with KILN_WM_FAMILY set from the
 * target table's matrix-instruction kind (src/gpu/targets.h, same numbers):
 *   KILN_WM_GFX11  wave32 v_wmma_f32_16x16x16_{f16,bf16}, gfx1100-1103, gfx1150/1151
 *   KILN_WM_GFX12  wave32 v_wmma_f32_16x16x16_{f16,bf16} in the gfx12 encoding, gfx1200/1201
 *   KILN_WM_MFMA   wave64 v_mfma_f32_16x16x16_{f16,bf16}, gfx90a / gfx942 / gfx950
 * Every family works on 16 x 16 x 16 tiles: a block is four waves of 16 query rows each,
 * so a block always owns 64 packed (query, head) rows and only its thread count depends on
 * the wave size.
 */
#ifndef KILN_ATTENTION_WMMA_H
#define KILN_ATTENTION_WMMA_H

#define KILN_WM_GFX11 2
#define KILN_WM_GFX12 3
#define KILN_WM_MFMA 4

#define KILN_ATTN_WMMA_WAVES 4
#define KILN_ATTN_WMMA_BLOCK_Q 64 /* packed (query, head) rows per block: 16 per wave */
#define KILN_ATTN_WMMA_BLOCK_K 32 /* keys per LDS tile */
/* Threads of a block for a family. */
#define KILN_ATTN_WMMA_THREADS(family) (KILN_ATTN_WMMA_WAVES * ((family) == KILN_WM_MFMA ? 64 : 32))

#endif
