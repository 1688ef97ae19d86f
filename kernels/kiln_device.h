/*
 * What every kernel includes: the vendor rename layer, the element type selected by
 * KILN_DTYPE (kiln_dtype values: 0 f32, 1 f16, 2 bf16) and the few math functions that
 * have no built-in on both compilers. Device code stays a C-like subset: no std::, no
 * templates, no host headers.
 */
#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

#if defined(KILN_HOST_VENDOR_H)
/* The CPU emulation used by the test suite names its own rename layer. */
#include KILN_HOST_VENDOR_H
#elif defined(__HIP__)
#include "vendor/hip.h"
#else
#include "vendor/cuda.h"
#endif

#define KILN_DEVICE_CODE 1

#ifndef KILN_DTYPE
#error "KILN_DTYPE must be defined (0 f32, 1 f16, 2 bf16)"
#endif

KILN_DEV float kiln_neg_inf(void) { return kiln_bits_f32(0xff800000u); }

KILN_DEV float kiln_bf16_to_f32(kiln_u16 h) { return kiln_bits_f32((kiln_u32)h << 16); }

/* Round to nearest even; NaN stays a (quiet) NaN instead of rounding into infinity. */
KILN_DEV kiln_u16 kiln_f32_to_bf16(float f)
{
    kiln_u32 u = kiln_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (kiln_u16)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (kiln_u16)(u >> 16);
}

#if KILN_DTYPE == 0
typedef float kiln_elem;
KILN_DEV float kiln_elem_to_f32(kiln_elem x) { return x; }
KILN_DEV kiln_elem kiln_f32_to_elem(float x) { return x; }
#elif KILN_DTYPE == 1
typedef kiln_u16 kiln_elem;
KILN_DEV float kiln_elem_to_f32(kiln_elem x) { return kiln_f16_to_f32(x); }
KILN_DEV kiln_elem kiln_f32_to_elem(float x) { return kiln_f32_to_f16(x); }
#elif KILN_DTYPE == 2
typedef kiln_u16 kiln_elem;
KILN_DEV float kiln_elem_to_f32(kiln_elem x) { return kiln_bf16_to_f32(x); }
KILN_DEV kiln_elem kiln_f32_to_elem(float x) { return kiln_f32_to_bf16(x); }
#else
#error "unknown KILN_DTYPE"
#endif

/* tanh from exp: the odd Taylor series near 0, where (e^2x - 1) / (e^2x + 1) would cancel,
 * and the saturating form elsewhere (e^2x overflowing to inf gives exactly 1). */
KILN_DEV float kiln_tanhf(float x)
{
    float a = kiln_fabsf(x);
    float r;
    if (a < 0.0625f) {
        float x2 = x * x;
        return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f))));
    }
    r = 1.0f - 2.0f / (kiln_expf(2.0f * a) + 1.0f);
    return x < 0.0f ? -r : r;
}

/* erf: Taylor series below 0.5 (error < 2e-8), Abramowitz & Stegun 7.1.26 above (absolute
 * error < 1.5e-7 where erf > 0.5). Only the exact GELU uses it. */
KILN_DEV float kiln_erff(float x)
{
    float a = kiln_fabsf(x);
    float r;
    if (a < 0.5f) {
        float x2 = x * x;
        return 1.1283791671f * x *
               (1.0f + x2 * (-1.0f / 3.0f + x2 * (0.1f + x2 * (-1.0f / 42.0f +
                x2 * (1.0f / 216.0f + x2 * (-1.0f / 1320.0f))))));
    }
    {
        float t = 1.0f / (1.0f + 0.3275911f * a);
        float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
                     t * (-1.453152027f + t * 1.061405429f))));
        r = 1.0f - poly * kiln_expf(-a * a);
    }
    return x < 0.0f ? -r : r;
}

#endif
