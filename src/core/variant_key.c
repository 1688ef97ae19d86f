/* Canonical variant keys (format in variant_key.h). */
#include <stdio.h>

#include "variant_key.h"

const char *kiln_mode_name(kiln_attn_mode mode)
{
    switch (mode) {
    case KILN_MODE_FIXED: return "fixed";
    case KILN_MODE_VARLEN: return "varlen";
    case KILN_MODE_PAGED: return "paged";
    }
    return "?";
}

int kiln_mask_index(const kiln_attn_problem *p)
{
    if (p->causal && p->window_right == 0 && p->window_left < 0) return 1;
    if (p->window_left >= 0 || p->window_right >= 0) return 2;
    return 0;
}

static const char *const mask_names[] = {"full", "causal", "window"};

const char *kiln_mask_name(const kiln_attn_problem *p) { return mask_names[kiln_mask_index(p)]; }

const char *kiln_activation_name(kiln_activation act)
{
    switch (act) {
    case KILN_ACT_SILU: return "silu";
    case KILN_ACT_GELU: return "gelu";
    case KILN_ACT_GELU_TANH: return "gelu_tanh";
    }
    return "?";
}

static void key_attn(char *buf, size_t cap, kiln_dtype dtype, int64_t head_dim, int mask,
                     kiln_attn_mode mode, const char *tier)
{
    snprintf(buf, cap, "attn_fwd.%s.d%lld.%s.%s.%s", kiln_dtype_name(dtype), (long long)head_dim,
             mask >= 0 && mask <= 2 ? mask_names[mask] : "?", kiln_mode_name(mode), tier);
}

void kiln_variant_key_attn(char *buf, size_t cap, const kiln_attn_problem *p, const char *tier)
{
    key_attn(buf, cap, p->dtype, p->head_dim, kiln_mask_index(p), p->mode, tier);
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

void kiln_variant_key(const kiln_variant_desc *d, char *buf, size_t cap)
{
    switch (d->op) {
    case KILN_VARIANT_ATTN: {
        /* A key or query tile other than the tier's default goes before the tier. */
        char tier[48];
        if (d->block_k > 0)
            snprintf(tier, sizeof tier, "k%d.%s", (int)d->block_k, d->tier);
        else if (d->block_q > 0)
            snprintf(tier, sizeof tier, "q%d.%s", (int)d->block_q, d->tier);
        key_attn(buf, cap, d->dtype, d->head_dim, d->mask, d->mode,
                 d->block_k > 0 || d->block_q > 0 ? tier : d->tier);
        return;
    }
    case KILN_VARIANT_COMBINE:
        kiln_variant_key_combine(buf, cap, d->dtype, d->head_dim, d->tier);
        return;
    case KILN_VARIANT_ACT: kiln_variant_key_act(buf, cap, d->act, d->dtype, d->tier); return;
    case KILN_VARIANT_DECODE: {
        char rest[128];
        key_attn(rest, sizeof rest, d->dtype, d->head_dim, d->mask, d->mode, d->tier);
        snprintf(buf, cap, "attn_decode.%s", rest + 9); /* after "attn_fwd." */
        return;
    }
    case KILN_VARIANT_NONE: break;
    }
    snprintf(buf, cap, "none");
}
