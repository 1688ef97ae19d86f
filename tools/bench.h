/* The workloads `kiln bench` times: one item per (op, dtype, size) sample. */
#ifndef KILN_TOOL_BENCH_H
#define KILN_TOOL_BENCH_H

#include <stdint.h>

#include "buffers.h"
#include "kiln.h"
#include "stats.h"
#include "tool.h"

typedef enum bench_kind { BENCH_ATTENTION = 0, BENCH_ACTIVATION = 1 } bench_kind;

typedef struct bench_shape {
    bench_kind kind;
    /* attention: q [batch, seqlen, heads, head_dim], k/v [batch, seqlen, kv_heads, head_dim] */
    int64_t batch, heads, kv_heads, head_dim;
    int causal;
    /* activation: x [rows, 2 * dim] -> out [rows, dim] */
    int64_t rows, dim;
} bench_shape;

typedef struct bench_item {
    bench_kind kind;
    kiln_dtype dtype;
    int64_t seqlen;         /* attention */
    kiln_activation act;    /* activation */
    double flops, bytes;    /* work of one call: FLOPs (attention) or bytes moved */
    tool_array in[3], out;  /* attention q, k, v; activation x */
    kiln_tensor tin[3], tout;
    /* Activations of one dtype share one x and one out (the rows are large); only the
     * first item owns them. */
    const struct bench_item *borrowed_from;

    /* Results. */
    kiln_dispatch ran;
    double *times_us;
    int ntimes;
    tool_stats stats;
    double max_err; /* against the fp64 reference on a slice of the output */
    int verified;   /* 1 when max_err was measured */
} bench_item;

/* Allocates and fills the item's arrays for shape (kind, dtype, seqlen / act already set),
 * or, for an activation whose dtype an earlier item `prev` has, uses that item's arrays;
 * 0 on success, -1 with a message. */
int bench_item_setup(kiln_context *ctx, const bench_shape *shape, bench_item *it,
                     const bench_item *prev, uint64_t *seed);
/* One call of the op, not synchronised. */
kiln_status bench_item_call(kiln_context *ctx, const bench_shape *shape, bench_item *it);
/* Runs the op once more and compares a slice of its output with the fp64 reference (cheap
 * even at large sizes: a few rows of one head); sets max_err and verified. -1 when it could
 * not run. */
int bench_item_verify(kiln_context *ctx, const bench_shape *shape, bench_item *it);
void bench_item_free(kiln_context *ctx, bench_item *it);

#endif
