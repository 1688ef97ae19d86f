/*
 * Scalar conversions between fp32 and the 16-bit float formats, round-to-nearest-even,
 * with infinities, NaNs and subnormals preserved. Host-only; exact bit-level behaviour so
 * tests, the reference and the tool round data the same way as the hardware.
 */
#ifndef KILN_CORE_HALF_H
#define KILN_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t kiln_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float kiln_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float kiln_bf16_to_f32(uint16_t h) { return kiln_bits_f32((uint32_t)h << 16); }

static inline uint16_t kiln_f32_to_bf16(float f) {
    uint32_t u = kiln_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float kiln_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return kiln_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return kiln_bits_f32(sign);
        /* Subnormal: value is man * 2^-24, exact in fp32. */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return kiln_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t kiln_f32_to_f16(float f) {
    uint32_t u = kiln_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (a < 0x38800000u) {
        /* Result is subnormal or zero: round a * 2^24 to an integer, ties to even. */
        if (a < 0x33000000u) return sign; /* below half the smallest subnormal */
        uint32_t exp = a >> 23;
        uint32_t man = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - exp; /* 14..24 */
        uint32_t q = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
    return (uint16_t)(sign | (r >> 13));
}

#endif
