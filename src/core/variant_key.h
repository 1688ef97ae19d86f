/*
 * Canonical variant keys, the one name of a kernel variant used in AOT file names, cache
 * entries, error messages and the dispatch report:
 *   attn_fwd.<dtype>.d<head_dim>.<mask>.<mode>[.k<keys>].<tier>
 *                                 mask: full | causal | window; mode: fixed | varlen | paged;
 *                                 k<keys>: a variant's key tile when not its tier's default
 *   attn_combine.<dtype>.d<head_dim>.<tier>
 *   <act>_and_mul.<dtype>.<tier>                        act: silu | gelu | gelu_tanh
 * dtype is kiln_dtype_name(): f32 | f16 | bf16. tier: cpu | generic | tensor | hopper.
 */
#ifndef KILN_CORE_VARIANT_KEY_H
#define KILN_CORE_VARIANT_KEY_H

#include <stddef.h>

#include "problem.h"

const char *kiln_mode_name(kiln_attn_mode mode);
/* 0 full, 1 causal (window (-1|any, 0) from the causal flag), 2 window: the values of the
 * kernels' KILN_MASK_*. */
int kiln_mask_index(const kiln_attn_problem *p);
/* "full", "causal" or "window". */
const char *kiln_mask_name(const kiln_attn_problem *p);
const char *kiln_activation_name(kiln_activation act); /* silu | gelu | gelu_tanh */

void kiln_variant_key_attn(char *buf, size_t cap, const kiln_attn_problem *p, const char *tier);
void kiln_variant_key_combine(char *buf, size_t cap, kiln_dtype dtype, int64_t head_dim,
                              const char *tier);
void kiln_variant_key_act(char *buf, size_t cap, kiln_activation act, kiln_dtype dtype,
                          const char *tier);

/* A variant as fields, cheap to fill on every call; kiln_variant_key formats its key only
 * when someone reads it (the dispatch report, messages). */
typedef enum kiln_variant_op {
    KILN_VARIANT_ATTN = 0,
    KILN_VARIANT_COMBINE = 1,
    KILN_VARIANT_ACT = 2,
    KILN_VARIANT_NONE = 3, /* nothing ran (an empty tensor): key "none" */
    KILN_VARIANT_DECODE = 4 /* attention by the decode kernel: attn_decode.<as attn_fwd> */
} kiln_variant_op;
typedef struct kiln_variant_desc {
    kiln_variant_op op;
    kiln_dtype dtype;
    int32_t head_dim;    /* attention, combine */
    int32_t mask;        /* attention: kiln_mask_index */
    kiln_attn_mode mode; /* attention */
    kiln_activation act; /* activations */
    const char *tier;    /* static text: "cpu", "generic", "tensor" */
    int32_t block_k;     /* attention: keys per tile when not the tier's default, else 0 */
    int32_t block_q;     /* attention: query rows per tile when not the tier's default, else 0 */
} kiln_variant_desc;
void kiln_variant_key(const kiln_variant_desc *d, char *buf, size_t cap);

#endif
