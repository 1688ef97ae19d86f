/* Gated activations: argument checks, then the backend. */
#include <string.h>

#include "backend.h"
#include "check.h"
#include "context.h"
#include "error.h"

kiln_status kiln_act_and_mul(kiln_context *ctx, kiln_activation act, const kiln_tensor *x,
                             kiln_tensor *out, void *stream)
{
    kiln_act_problem p;
    kiln_dispatch_note note;
    int r, i;
    kiln_error_clear();
    KILN_FAIL_IF(!ctx, KILN_INVALID_ARGUMENT, "ctx is NULL");
    KILN_FAIL_IF(act != KILN_ACT_SILU && act != KILN_ACT_GELU && act != KILN_ACT_GELU_TANH,
                 KILN_INVALID_ARGUMENT, "act is %d; expected KILN_ACT_SILU, KILN_ACT_GELU or "
                 "KILN_ACT_GELU_TANH", (int)act);
    KILN_FAIL_IF(!x, KILN_INVALID_ARGUMENT, "x is NULL");
    KILN_FORWARD(kiln_check_struct_size(x->struct_size, sizeof *x, "x", "kiln_tensor"));
    KILN_FAIL_IF(x->rank < 1 || x->rank > KILN_MAX_RANK, KILN_INVALID_ARGUMENT,
                 "x has rank %d; expected 1..%d", (int)x->rank, KILN_MAX_RANK);
    r = x->rank;
    KILN_FORWARD(kiln_check_tensor(x, "x", r, 1));
    KILN_FORWARD(kiln_check_tensor(out, "out", r, 1));
    KILN_FAIL_IF(x->dtype != KILN_BF16 && x->dtype != KILN_F16 && x->dtype != KILN_F32,
                 KILN_INVALID_ARGUMENT, "x has dtype %s; activations take bf16, f16 or f32",
                 kiln_dtype_name(x->dtype));
    KILN_FORWARD(kiln_check_dtype(out, "out", x->dtype));
    KILN_FAIL_IF(x->shape[r - 1] % 2 != 0, KILN_INVALID_ARGUMENT,
                 "x's last dimension is %lld; it must be even (2 * d)",
                 (long long)x->shape[r - 1]);
    for (i = 0; i < r - 1; i++)
        KILN_FORWARD(kiln_check_dim(out, "out", i, x->shape[i], "leading dimension of x"));
    KILN_FORWARD(kiln_check_dim(out, "out", r - 1, x->shape[r - 1] / 2,
                                "half of x's last dimension"));
    KILN_FORWARD(kiln_check_no_overlap(out, "out", x, "x"));

    memset(&p, 0, sizeof p);
    p.act = act;
    p.dtype = x->dtype;
    p.d = out->shape[r - 1];
    p.lead_rank = r - 1;
    p.rows = 1;
    for (i = 0; i < r - 1; i++) {
        p.lead_shape[i] = x->shape[i];
        p.x_stride[i] = x->stride[i];
        p.o_stride[i] = out->stride[i];
        p.rows *= x->shape[i];
    }
    p.x = x->data;
    p.out = out->data;
    p.stream = stream;

    if (p.rows == 0 || p.d == 0) { /* an empty tensor: nothing to compute */
        kiln_dispatch_record_empty(ctx->iface->kind);
        return KILN_OK;
    }

    KILN_FORWARD(ctx->iface->act_and_mul(ctx->state, &p, &note));
    kiln_dispatch_record(ctx->iface->kind, &note);
    return KILN_OK;
}

kiln_status kiln_silu_and_mul(kiln_context *ctx, const kiln_tensor *x, kiln_tensor *out,
                              void *stream)
{
    return kiln_act_and_mul(ctx, KILN_ACT_SILU, x, out, stream);
}

kiln_status kiln_gelu_and_mul(kiln_context *ctx, const kiln_tensor *x, kiln_tensor *out,
                              void *stream)
{
    return kiln_act_and_mul(ctx, KILN_ACT_GELU, x, out, stream);
}

kiln_status kiln_gelu_tanh_and_mul(kiln_context *ctx, const kiln_tensor *x, kiln_tensor *out,
                                   void *stream)
{
    return kiln_act_and_mul(ctx, KILN_ACT_GELU_TANH, x, out, stream);
}
