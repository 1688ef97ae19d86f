/* Canonical variant keys (format in variant.h). */
#include <stdio.h>

#include "variant.h"

const char *kiln_mode_name(kiln_attn_mode mode)
{
    switch (mode) {
    case KILN_MODE_FIXED: return "fixed";
    case KILN_MODE_VARLEN: return "varlen";
    case KILN_MODE_PAGED: return "paged";
    }
    return "?";
}

const char *kiln_mask_name(const kiln_attn_problem *p)
{
    if (p->causal && p->window_right == 0 && p->window_left < 0) return "causal";
    if (p->window_left >= 0 || p->window_right >= 0) return "window";
    return "full";
}

const char *kiln_activation_name(kiln_activation act)
{
    switch (act) {
    case KILN_ACT_SILU: return "silu";
    case KILN_ACT_GELU: return "gelu";
    case KILN_ACT_GELU_TANH: return "gelu_tanh";
    }
    return "?";
}

void kiln_variant_key_attn(char *buf, size_t cap, const kiln_attn_problem *p, const char *tier)
{
    snprintf(buf, cap, "attn_fwd.%s.d%lld.%s.%s.%s", kiln_dtype_name(p->dtype),
             (long long)p->head_dim, kiln_mask_name(p), kiln_mode_name(p->mode), tier);
}

void kiln_variant_key_combine(char *buf, size_t cap, kiln_dtype dtype, int64_t head_dim,
                              const char *tier)
{
    snprintf(buf, cap, "attn_combine.%s.d%lld.%s", kiln_dtype_name(dtype), (long long)head_dim,
             tier);
}

void kiln_variant_key_act(char *buf, size_t cap, kiln_activation act, kiln_dtype dtype,
                          const char *tier)
{
    snprintf(buf, cap, "%s_and_mul.%s.%s", kiln_activation_name(act), kiln_dtype_name(dtype),
             tier);
}
