/*
 * Block shape of the decode kernel (kernels/decode.cu), shared with the host that plans its
 * grid, split count and workspace (src/gpu/variants.c, src/gpu/backend_gpu.c).
 */
#ifndef KILN_DECODE_H
#define KILN_DECODE_H

#define KILN_DECODE_THREADS 128 /* 4 warps, each streaming its own 16-key steps */
#define KILN_DECODE_ROWS 8      /* packed (query, head) rows per block: an mma's N */
#define KILN_DECODE_STEP 16     /* keys per step: an mma's M (scores) and K (P V) */
/* Calls the decode kernel takes: at most this many queries per sequence, and at most
 * KILN_DECODE_MAX_ROWS query rows per KV head (seqlen_q x the GQA group). */
#define KILN_DECODE_MAX_Q 8
#define KILN_DECODE_MAX_ROWS 64
/* The most splits the in-kernel merge holds weights for (the most a call may ask for). */
#define KILN_DECODE_MAX_SPLITS 256
/* Arrival counters: 64-bit words whose high half is this tag while a split group counts,
 * and 0 once its last block has merged it. A word that does not carry the tag (zero, or
 * whatever a fresh workspace holds) starts a new count, so no workspace needs clearing. */
#define KILN_DECODE_TAG 0x6b696c6eu

#endif
