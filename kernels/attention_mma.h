/*
 * Block shape of the tensor-tier attention kernel (kernels/attention_mma.cu), shared with
 * the host that sizes its grid (src/gpu/variants.c). Threads per block are
 * KILN_ATTN_THREADS, as in the generic tier: 4 warps of 16 rows each.
 */
#ifndef KILN_ATTENTION_MMA_H
#define KILN_ATTENTION_MMA_H

#define KILN_ATTN_TENSOR_BLOCK_Q 64 /* packed (query, head) rows per block */
#define KILN_ATTN_TENSOR_BLOCK_K 64 /* keys per shared-memory tile */

#endif
