/*
 * Arrays the tool hands to the library: a host copy (filled and checked on the CPU) and the
 * same bytes in a context's memory (device memory on a GPU, through kiln_ctx_alloc).
 */
#ifndef KILN_TOOL_BUFFERS_H
#define KILN_TOOL_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

typedef struct tool_array {
    kiln_dtype dtype;
    int64_t count;
    size_t bytes;
    void *host;
    void *dev;
} tool_array;

/* Allocates count elements on both sides (zeroed on the host). On failure prints which
 * array could not be allocated and returns -1; the array is then safe to free. */
int tool_array_alloc(kiln_context *ctx, tool_array *a, const char *name, kiln_dtype dtype,
                     int64_t count);
void tool_array_free(kiln_context *ctx, tool_array *a);
/* Host -> context memory and back; -1 with a message on failure. */
int tool_array_upload(kiln_context *ctx, tool_array *a);
int tool_array_download(kiln_context *ctx, tool_array *a);

/* Uniform values in [lo, hi), rounded to the array's dtype, from a deterministic stream. */
void tool_array_fill(tool_array *a, uint64_t *seed, double lo, double hi);

/* A contiguous view of the context-side data with the given shape. */
kiln_tensor tool_view(const tool_array *a, int32_t rank, const int64_t *shape);
/* The same view over the host copy, for the reference. */
kiln_tensor tool_host_view(const tool_array *a, int32_t rank, const int64_t *shape);

#endif
