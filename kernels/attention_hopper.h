/*
 * Block shape of the hopper-tier attention kernel (kernels/attention_hopper.cu), shared with
 * the host that sizes its grid and its dynamic shared memory (src/gpu/variants.c,
 * src/gpu/hopper_launch.c).
 */
#ifndef KILN_ATTENTION_HOPPER_H
#define KILN_ATTENTION_HOPPER_H

#define KILN_HOPPER_BLOCK_Q 128 /* query rows of one head per block: 64 per consumer */
#define KILN_HOPPER_BLOCK_K 128 /* keys per shared-memory tile */
#define KILN_HOPPER_STAGES 3    /* K and V tiles in flight */
#define KILN_HOPPER_THREADS 384 /* producer warpgroup + two consumer warpgroups */

/* Dynamic shared memory of a head-dim-d block: the Q tile, the K and V rings, 1024 bytes of
 * alignment slack and the barriers. */
#define KILN_HOPPER_SMEM_BYTES(d)                                                          \
    ((KILN_HOPPER_BLOCK_Q + 2 * KILN_HOPPER_STAGES * KILN_HOPPER_BLOCK_K) * (d) * 2 +      \
     1024 + 256)

#endif
