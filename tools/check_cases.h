/*
 * The cases `kiln check` runs: every op on one context, each against the fp64 reference
 * computed from the same rounded inputs. Shapes are small (the whole set takes well under a
 * second on the CPU) but reach the edges: GQA, seqlen_q > seqlen_k under the causal mask,
 * empty varlen sequences, shuffled and partly filled pages, split-KV, odd widths.
 */
#ifndef KILN_TOOL_CHECK_CASES_H
#define KILN_TOOL_CHECK_CASES_H

#include "kiln.h"

typedef struct check_row {
    char op[40];
    char backend[24];
    kiln_dtype dtype;
    char shape[96];
    double err; /* max abs error over out (and LSE where requested) */
    double tol;
    int pass;
    kiln_dispatch ran; /* what the library ran (zeroed if the call failed) */
    char error[1024];  /* why the case failed to run ("" when it ran) */
} check_row;

/* Called once per finished case. */
typedef void (*check_sink)(const check_row *row, void *user);

/* Runs every case in dtype on ctx; backend names the context in the rows. Returns the
 * number of failed cases. */
int check_run_all(kiln_context *ctx, const char *backend, kiln_dtype dtype, check_sink sink,
                  void *user);

#endif
