/* Contexts: choosing and starting a backend, memory helpers, the dispatch report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "context.h"
#include "error.h"
#include "platform/platform.h"

static KILN_THREAD_LOCAL kiln_dispatch_note last_note;
static KILN_THREAD_LOCAL kiln_backend last_backend;
static KILN_THREAD_LOCAL int have_dispatch;

const char *kiln_backend_name(kiln_backend backend)
{
    switch (backend) {
    case KILN_BACKEND_AUTO: return "auto";
    case KILN_BACKEND_CPU: return "cpu";
    case KILN_BACKEND_CUDA: return "cuda";
    case KILN_BACKEND_HIP: return "hip";
    }
    return "?";
}

const kiln_backend_iface *kiln_backend_lookup(kiln_backend backend)
{
    size_t n;
    const kiln_backend_iface *const *all = kiln_backends(&n);
    for (size_t i = 0; i < n; i++)
        if (all[i]->kind == backend) return all[i];
    return NULL;
}

static kiln_status start(const kiln_backend_iface *iface, int device, kiln_context **out)
{
    kiln_context *ctx = calloc(1, sizeof *ctx);
    kiln_status st;
    KILN_FAIL_IF(!ctx, KILN_OUT_OF_MEMORY, "out of memory allocating a context");
    KILN_FAIL_IF(iface->version != KILN_BACKEND_IFACE_VERSION, KILN_INTERNAL,
                 "backend %s has interface version %d, expected %d", iface->name,
                 iface->version, KILN_BACKEND_IFACE_VERSION);
    st = iface->init(device, &ctx->state);
    if (st != KILN_OK) {
        free(ctx);
        return st;
    }
    ctx->iface = iface;
    ctx->device = device;
    *out = ctx;
    return KILN_OK;
}

kiln_status kiln_context_create(kiln_backend backend, int device, kiln_context **out)
{
    kiln_backend_decision decision;
    const kiln_backend_iface *iface;
    kiln_error_clear();
    KILN_FAIL_IF(!out, KILN_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    KILN_FAIL_IF(backend != KILN_BACKEND_AUTO && backend != KILN_BACKEND_CPU &&
                     backend != KILN_BACKEND_CUDA && backend != KILN_BACKEND_HIP,
                 KILN_INVALID_ARGUMENT,
                 "backend is %d; expected KILN_BACKEND_AUTO, _CPU, _CUDA or _HIP", (int)backend);
    KILN_FAIL_IF(device < 0, KILN_INVALID_ARGUMENT, "device is %d; it must be >= 0", device);
    if (backend == KILN_BACKEND_AUTO) {
        KILN_FORWARD(kiln_backend_decide(&decision));
        backend = decision.backend;
    }
    iface = kiln_backend_lookup(backend);
    KILN_FAIL_IF(!iface, KILN_BACKEND_UNAVAILABLE,
                 "backend '%s' is not built into this library", kiln_backend_name(backend));
    return start(iface, device, out);
}

void kiln_context_free(kiln_context *ctx)
{
    if (!ctx) return;
    if (ctx->iface && ctx->iface->free) ctx->iface->free(ctx->state);
    free(ctx);
}

kiln_backend kiln_context_backend(const kiln_context *ctx)
{
    return ctx && ctx->iface ? ctx->iface->kind : KILN_BACKEND_AUTO;
}

void *kiln_ctx_alloc(kiln_context *ctx, size_t bytes)
{
    return ctx->iface->mem_alloc(ctx->state, bytes ? bytes : 1);
}

void kiln_ctx_free(kiln_context *ctx, void *ptr)
{
    if (ptr) ctx->iface->mem_free(ctx->state, ptr);
}

kiln_status kiln_ctx_copy_to_device(kiln_context *ctx, void *dst, const void *src, size_t n)
{
    return ctx->iface->mem_copy(ctx->state, dst, src, n, 1);
}

kiln_status kiln_ctx_copy_to_host(kiln_context *ctx, void *dst, const void *src, size_t n)
{
    return ctx->iface->mem_copy(ctx->state, dst, src, n, 0);
}

kiln_status kiln_ctx_synchronize(kiln_context *ctx, void *stream)
{
    return ctx->iface->synchronize(ctx->state, stream);
}

void kiln_dispatch_record(kiln_backend backend, const kiln_dispatch_note *note)
{
    last_note = *note;
    last_backend = backend;
    have_dispatch = 1;
}

void kiln_dispatch_record_empty(kiln_backend backend)
{
    memset(&last_note, 0, sizeof last_note);
    memcpy(last_note.target, "none", 5);
    last_note.variant.op = KILN_VARIANT_NONE;
    last_note.variant.tier = "none";
    last_backend = backend;
    have_dispatch = 1;
}

void kiln_dispatch_init(kiln_dispatch *d)
{
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
}

kiln_status kiln_last_dispatch(kiln_dispatch *out)
{
    KILN_FAIL_IF(!out, KILN_INVALID_ARGUMENT, "out is NULL");
    KILN_FORWARD(kiln_check_struct_size(out->struct_size, sizeof *out, "out", "kiln_dispatch"));
    KILN_FAIL_IF(!have_dispatch, KILN_NOTHING_RAN, "no operation has run on this thread");
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->backend = last_backend;
    snprintf(out->target, sizeof out->target, "%s", last_note.target);
    snprintf(out->tier, sizeof out->tier, "%s", last_note.variant.tier);
    kiln_variant_key(&last_note.variant, out->variant, sizeof out->variant);
    out->num_splits = last_note.num_splits;
    return KILN_OK;
}
