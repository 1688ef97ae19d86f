/* Scalar conversions between f32 and the 16-bit storage formats, bit-exact and portable
 * (no compiler half types), for edges and the scalar level. */
#ifndef KILN_CPU_CONVERT_H
#define KILN_CPU_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "kiln.h"

static inline float kiln_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t kiln_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float kiln_bf16_to_f32(uint16_t h) { return kiln_f32_from_bits((uint32_t)h << 16); }

/* Round to nearest even; NaN stays NaN (quiet). */
static inline uint16_t kiln_f32_to_bf16(float f) {
    uint32_t u = kiln_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float kiln_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return kiln_f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* subnormal: value is man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return kiln_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* Round to nearest even, overflow to inf, NaN kept. */
static inline uint16_t kiln_f32_to_f16(float f) {
    uint32_t u = kiln_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520 */
    if (a < 0x38800000u) {
        /* below the smallest normal half: round a * 2^24 to an integer count of 2^-24 */
        float v = kiln_f32_from_bits(a) * 16777216.0f;
        uint32_t n = (uint32_t)v;
        float rem = v - (float)n;
        if (rem > 0.5f || (rem == 0.5f && (n & 1u))) n++;
        return (uint16_t)(sign | n);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

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
