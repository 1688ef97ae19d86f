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
 * compare-and-swap that installs the tag, so no workspace needs clearing. With the step
 * pool (KILN_DECODE_POOL) the same word counts the group's claimed steps too: arrivals in
 * the low KILN_DECODE_CLAIM_SHIFT bits (at most KILN_DECODE_MAX_SPLITS of them), claims in
 * the bits above, up to the tag; the last block's reset clears both. */
#define KILN_DECODE_TAG 0x6b696c6eu
#define KILN_DECODE_CLAIM_SHIFT 12 /* a claim adds 1 << this */
#define KILN_DECODE_ARRIVE_MASK ((1u << KILN_DECODE_CLAIM_SHIFT) - 1u)
/* Claims a group may count: 2^20 in the 20 bits between the arrivals and the tag. */
#define KILN_DECODE_CLAIM_LIMIT (1 << (32 - KILN_DECODE_CLAIM_SHIFT))
#if KILN_DECODE_MAX_SPLITS > (1 << KILN_DECODE_CLAIM_SHIFT) - 1
#error "the arrival count needs more bits"
#endif
/* The step pool (kernels/decode.cu, "Step pool"): 1 lets the blocks of a split group with
 * one row block take their 16-key steps from the group's arrival counter word at run time
 * instead of each streaming a fixed share. Off by default: not yet measured on a GPU. It
 * needs no workspace beyond the arrival counters (src/core/problem.h) and no host change:
 * a decode.cu that defines it before its includes is enough (bench/decode_ab.sh). */
#ifndef KILN_DECODE_POOL
#define KILN_DECODE_POOL 0
#endif

#endif
