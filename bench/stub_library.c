/*
 * A library with kiln's exported API whose operations return KILN_OK at once and touch
 * nothing. bench/binding_bench.py loads it (KILN_LIBRARY) to time the Python binding alone:
 * the per-call cost left when the C call costs nothing but the foreign call itself.
 * Not installed, and never a substitute for the library.
 */
#include <string.h>

#include "kiln.h"

static int dummy_context;

unsigned kiln_version(void) { return KILN_VERSION_NUMBER; }
const char *kiln_version_string(void) { return KILN_VERSION_STRING; }
const char *kiln_status_string(kiln_status s) { (void)s; return "stub"; }
const char *kiln_status_name(kiln_status s) { (void)s; return "STUB"; }
const char *kiln_last_error(void) { return ""; }
void kiln_set_log_callback(kiln_log_fn fn, kiln_log_level level, void *user)
{
    (void)fn, (void)level, (void)user;
}
size_t kiln_dtype_size(kiln_dtype d) { return d == KILN_F16 || d == KILN_BF16 ? 2 : 4; }
const char *kiln_dtype_name(kiln_dtype d) { (void)d; return "?"; }
void kiln_tensor_init(kiln_tensor *t) { memset(t, 0, sizeof *t), t->struct_size = sizeof *t; }
kiln_status kiln_context_create(kiln_backend b, int device, kiln_context **out)
{
    (void)b, (void)device;
    *out = (kiln_context *)&dummy_context;
    return KILN_OK;
}
void kiln_context_free(kiln_context *ctx) { (void)ctx; }
kiln_backend kiln_context_backend(const kiln_context *ctx) { (void)ctx; return KILN_BACKEND_CPU; }
const char *kiln_backend_name(kiln_backend b) { (void)b; return "stub"; }
kiln_status kiln_info_json(kiln_context *ctx, char *buf, size_t cap, size_t *needed)
{
    (void)ctx;
    if (needed) *needed = 3;
    if (cap >= 3) memcpy(buf, "{}", 3);
    return cap >= 3 ? KILN_OK : KILN_BUFFER_TOO_SMALL;
}
void kiln_attention_params_init(kiln_attention_params *p)
{
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->window_left = p->window_right = -1;
    kiln_tensor_init(&p->alibi_slopes);
}
void kiln_attention_plan_init(kiln_attention_plan *p) { memset(p, 0, sizeof *p); }
void kiln_dispatch_init(kiln_dispatch *d) { memset(d, 0, sizeof *d); }

kiln_status kiln_attention_fwd(kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k,
                               const kiln_tensor *v, kiln_tensor *out, kiln_tensor *lse,
                               const kiln_attention_params *params, void *stream)
{
    (void)ctx, (void)q, (void)k, (void)v, (void)out, (void)lse, (void)params, (void)stream;
    return KILN_OK;
}
kiln_status kiln_attention_fwd_varlen(kiln_context *ctx, const kiln_tensor *q,
                                      const kiln_tensor *k, const kiln_tensor *v,
                                      const kiln_tensor *cu_q, const kiln_tensor *cu_k,
                                      int64_t max_q, int64_t max_k, kiln_tensor *out,
                                      kiln_tensor *lse, const kiln_attention_params *params,
                                      void *stream)
{
    (void)ctx, (void)q, (void)k, (void)v, (void)cu_q, (void)cu_k, (void)max_q, (void)max_k;
    (void)out, (void)lse, (void)params, (void)stream;
    return KILN_OK;
}
kiln_status kiln_attention_fwd_paged(kiln_context *ctx, const kiln_tensor *q,
                                     const kiln_tensor *kc, const kiln_tensor *vc,
                                     const kiln_tensor *bt, const kiln_tensor *sk,
                                     const kiln_tensor *cu_q, int64_t max_q, kiln_tensor *out,
                                     kiln_tensor *lse, const kiln_attention_params *params,
                                     void *stream)
{
    (void)ctx, (void)q, (void)kc, (void)vc, (void)bt, (void)sk, (void)cu_q, (void)max_q;
    (void)out, (void)lse, (void)params, (void)stream;
    return KILN_OK;
}
kiln_status kiln_attention_workspace_size(kiln_context *ctx, const kiln_attention_plan *plan,
                                          size_t *bytes)
{
    (void)ctx, (void)plan;
    *bytes = 0;
    return KILN_OK;
}
kiln_status kiln_act_and_mul(kiln_context *ctx, kiln_activation act, const kiln_tensor *x,
                             kiln_tensor *out, void *stream)
{
    (void)ctx, (void)act, (void)x, (void)out, (void)stream;
    return KILN_OK;
}
kiln_status kiln_last_dispatch(kiln_dispatch *out)
{
    (void)out;
    return KILN_NOTHING_RAN;
}
