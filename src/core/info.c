/* kiln_info_json(): the library, every backend this build has, and what auto picks. */
#include <string.h>

#include "context.h"
#include "error.h"
#include "json.h"

static void describe_missing(kiln_json *j, kiln_backend kind)
{
    kiln_json_object_begin(j, NULL);
    kiln_json_string(j, "name", kiln_backend_name(kind));
    kiln_json_bool(j, "available", 0);
    kiln_json_string(j, "reason", "not built into this library");
    kiln_json_object_end(j);
}

static void describe_backend(kiln_json *j, const kiln_backend_iface *iface, kiln_context *ctx)
{
    void *state = NULL;
    kiln_json_object_begin(j, NULL);
    kiln_json_string(j, "name", iface->name);
    kiln_json_string(j, "description", iface->description);
    if (ctx && ctx->iface == iface) {
        kiln_json_bool(j, "available", 1);
        kiln_json_int(j, "device", ctx->device);
        if (iface->describe) iface->describe(ctx->state, j);
    } else if (iface->init(0, &state) != KILN_OK) {
        kiln_json_bool(j, "available", 0);
        kiln_json_string(j, "reason", kiln_last_error());
    } else {
        kiln_json_bool(j, "available", 1);
        kiln_json_int(j, "device", 0);
        if (iface->describe) iface->describe(state, j);
        iface->free(state);
    }
    kiln_json_object_end(j);
}

void kiln_info_write(kiln_json *j, const char *key, kiln_context *ctx)
{
    static const kiln_backend kinds[] = {KILN_BACKEND_CPU, KILN_BACKEND_CUDA, KILN_BACKEND_HIP};
    size_t n_built, i;
    const kiln_backend_iface *const *built = kiln_backends(&n_built);
    kiln_backend_decision decision;
    kiln_status decided;

    kiln_json_object_begin(j, key);
    kiln_json_string(j, "version", kiln_version_string());
    kiln_json_int(j, "version_number", kiln_version());
    if (ctx) kiln_json_string(j, "context_backend", kiln_backend_name(ctx->iface->kind));
    kiln_json_array_begin(j, "backends");
    for (i = 0; i < n_built; i++) describe_backend(j, built[i], ctx);
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!kiln_backend_lookup(kinds[i])) describe_missing(j, kinds[i]);
    kiln_json_array_end(j);
    decided = kiln_backend_decide(&decision);
    kiln_json_object_begin(j, "auto");
    if (decided == KILN_OK) {
        kiln_json_string(j, "backend", kiln_backend_name(decision.backend));
        kiln_json_string(j, "reason", decision.reason);
    } else {
        kiln_json_null(j, "backend");
        kiln_json_string(j, "reason", kiln_last_error());
    }
    kiln_json_object_end(j);
    for (i = 0; i < n_built; i++) {
        size_t k;
        if (!built[i]->describe_build) continue;
        for (k = 0; k < i && built[k]->describe_build != built[i]->describe_build; k++) {}
        if (k == i) built[i]->describe_build(j);
    }
    kiln_json_object_end(j);
}

kiln_status kiln_info_json(kiln_context *ctx, char *buf, size_t cap, size_t *needed)
{
    kiln_json j;
    size_t i;
    kiln_error_clear();
    KILN_FAIL_IF(!buf && cap > 0, KILN_INVALID_ARGUMENT, "buf is NULL but cap is %zu", cap);

    kiln_json_init(&j);
    kiln_info_write(&j, NULL, ctx);

    if (j.oom) {
        kiln_json_free(&j);
        return kiln_fail(KILN_OUT_OF_MEMORY, "out of memory building the info text");
    }
    kiln_error_clear();
    if (needed) *needed = j.len + 1;
    if (cap > 0) {
        size_t n = j.len < cap - 1 ? j.len : cap - 1;
        memcpy(buf, j.buf, n);
        buf[n] = '\0';
    }
    i = j.len;
    kiln_json_free(&j);
    KILN_FAIL_IF(i + 1 > cap, KILN_BUFFER_TOO_SMALL,
                 "buf holds %zu bytes; the info text needs %zu", cap, i + 1);
    return KILN_OK;
}
