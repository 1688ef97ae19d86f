/* Element loads and stores in any storage dtype, for edges and the scalar level; the
 * bit-exact conversions themselves are the core's (half.h), shared with the reference. */
#ifndef KILN_CPU_CONVERT_H
#define KILN_CPU_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "half.h"
#include "kiln.h"

static inline float kiln_load_f32(const void *base, int64_t i, kiln_dtype dt) {
    switch (dt) {
    case KILN_BF16: return kiln_bf16_to_f32(((const uint16_t *)base)[i]);
    case KILN_F16: return kiln_f16_to_f32(((const uint16_t *)base)[i]);
    default: return ((const float *)base)[i];
    }
}

static inline void kiln_store_f32(void *base, int64_t i, kiln_dtype dt, float v) {
    switch (dt) {
    case KILN_BF16: ((uint16_t *)base)[i] = kiln_f32_to_bf16(v); break;
    case KILN_F16: ((uint16_t *)base)[i] = kiln_f32_to_f16(v); break;
    default: ((float *)base)[i] = v; break;
    }
}

#endif
