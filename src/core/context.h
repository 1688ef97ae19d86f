/* Internal helpers over a context, for tests and the tool (not part of the public API). */
#ifndef KILN_CORE_CONTEXT_H
#define KILN_CORE_CONTEXT_H

#include "backend.h"

void *kiln_ctx_alloc(kiln_context *ctx, size_t bytes);
void kiln_ctx_free(kiln_context *ctx, void *ptr);
kiln_status kiln_ctx_copy_to_device(kiln_context *ctx, void *dst, const void *src, size_t n);
kiln_status kiln_ctx_copy_to_host(kiln_context *ctx, void *dst, const void *src, size_t n);
kiln_status kiln_ctx_synchronize(kiln_context *ctx, void *stream);

/* The backend table for a named backend, or NULL if this build has none. */
const kiln_backend_iface *kiln_backend_lookup(kiln_backend backend);

/* What KILN_BACKEND=auto (or an explicit KILN_BACKEND) resolves to on this machine, and
 * why (src/core/select.c, over the pure rule in backend_choice.h). */
typedef struct kiln_backend_decision {
    kiln_backend backend;
    char reason[256];
} kiln_backend_decision;
kiln_status kiln_backend_decide(kiln_backend_decision *out);

/* Appends the GPU half of kiln_info_json() (targets known, code objects shipped) to the
 * open object; implemented by src/gpu. */
void kiln_info_append_gpu(kiln_json *j);

/* Records what ran for kiln_last_dispatch() on this thread. */
void kiln_dispatch_record(const kiln_dispatch *d);
/* The report of a call with an empty tensor: nothing ran (target, tier, variant "none"). */
void kiln_dispatch_record_empty(kiln_backend backend);

#endif
