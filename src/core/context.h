/* Internal helpers over a context, for tests and the tool (not part of the public API). */
#ifndef KILN_CORE_CONTEXT_H
#define KILN_CORE_CONTEXT_H

#include "backend.h"

void *kiln_ctx_alloc(kiln_context *ctx, size_t bytes);
void kiln_ctx_free(kiln_context *ctx, void *ptr);
kiln_status kiln_ctx_copy_to_device(kiln_context *ctx, void *dst, const void *src, size_t n);
kiln_status kiln_ctx_copy_to_host(kiln_context *ctx, void *dst, const void *src, size_t n);
kiln_status kiln_ctx_synchronize(kiln_context *ctx, void *stream);

/* Records what ran for kiln_last_dispatch() on this thread. */
void kiln_dispatch_record(const kiln_dispatch *d);

#endif
