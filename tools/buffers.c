#include "buffers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "reference.h"

int tool_array_alloc(kiln_context *ctx, tool_array *a, const char *name, kiln_dtype dtype,
                     int64_t count) {
    memset(a, 0, sizeof *a);
    a->dtype = dtype;
    a->count = count;
    a->bytes = (size_t)count * kiln_dtype_size(dtype);
    /* Empty arrays (a zero-length varlen batch) still get a valid pointer. */
    a->host = calloc(1, a->bytes ? a->bytes : 1);
    a->dev = a->host ? kiln_ctx_alloc(ctx, a->bytes) : NULL;
    if (!a->host || !a->dev) {
        fprintf(stderr, "kiln: cannot allocate %s (%.1f MiB of %s)\n", name,
                (double)a->bytes / (1024.0 * 1024.0), a->host ? "device memory" : "host memory");
        tool_array_free(ctx, a);
        return -1;
    }
    return 0;
}

void tool_array_free(kiln_context *ctx, tool_array *a) {
    if (a->dev) kiln_ctx_free(ctx, a->dev);
    free(a->host);
    a->host = a->dev = NULL;
}

static int copy(kiln_context *ctx, tool_array *a, int up) {
    if (a->bytes == 0) return 0;
    kiln_status st = up ? kiln_ctx_copy_to_device(ctx, a->dev, a->host, a->bytes)
                        : kiln_ctx_copy_to_host(ctx, a->host, a->dev, a->bytes);
    if (st == KILN_OK) return 0;
    fprintf(stderr, "kiln: copy %s failed: %s: %s\n", up ? "to the device" : "to the host",
            kiln_status_string(st), kiln_last_error());
    return -1;
}

int tool_array_upload(kiln_context *ctx, tool_array *a) { return copy(ctx, a, 1); }
int tool_array_download(kiln_context *ctx, tool_array *a) { return copy(ctx, a, 0); }

/* splitmix64: tiny, seedable, and the same on every platform, so a failing case can be
 * reproduced anywhere. */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void tool_array_fill(tool_array *a, uint64_t *seed, double lo, double hi) {
    for (int64_t i = 0; i < a->count; i++) {
        double u = (double)(next_u64(seed) >> 11) * (1.0 / 9007199254740992.0);
        kiln_ref_store(a->dtype, a->host, i, lo + (hi - lo) * u);
    }
}

static kiln_tensor view(void *data, kiln_dtype dtype, int32_t rank, const int64_t *shape) {
    kiln_tensor t;
    kiln_tensor_contiguous(&t, data, dtype, rank, shape);
    return t;
}

kiln_tensor tool_view(const tool_array *a, int32_t rank, const int64_t *shape) {
    return view(a->dev, a->dtype, rank, shape);
}

kiln_tensor tool_host_view(const tool_array *a, int32_t rank, const int64_t *shape) {
    return view(a->host, a->dtype, rank, shape);
}
