/*
 * Launching the hopper tier's attention kernel (kernels/attention_hopper.cu): its tensor
 * maps and its dynamic shared memory. Called by the GPU backend for variants of tier
 * KILN_GPU_TIER_ID_HOPPER only.
 */
#ifndef KILN_GPU_HOPPER_LAUNCH_H
#define KILN_GPU_HOPPER_LAUNCH_H

#include "gpu.h"
#include "variants.h"

/* Builds the q, k and v tensor maps of a (and the problem's element type) and queues fn
 * on stream with smem bytes of dynamic shared memory (the function opted in already): grid
 * as kiln_gpu_attn_grid_for made it, or, where KILN_HOPPER_PERSISTENT(head dim) holds, its
 * work items on at most compute_units blocks. The caller has entered dev (kiln_gpu_enter).
 * KILN_UNSUPPORTED when the driver cannot make tensor maps or refuses these. */
kiln_status kiln_gpu_hopper_launch(kiln_gpu_device *dev, void *fn,
                                   const kiln_gpu_variant *v, kiln_attn_args *a,
                                   const unsigned grid[3], const unsigned block[3],
                                   unsigned smem, int compute_units, void *stream);

#endif
