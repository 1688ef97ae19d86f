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
/* Arrival counters: 64-bit words whose high half is this tag and whose low half counts the
 * blocks of a split group that have arrived; the group's last block puts the count back to
 * 0 and keeps the tag, so the next call (or graph replay) counts with one atomic add per
 * block. A word without the tag (zero, or whatever a fresh workspace holds) is claimed by a
 * compare-and-swap that installs the tag, so no workspace needs clearing. */
#define KILN_DECODE_TAG 0x6b696c6eu

#endif
