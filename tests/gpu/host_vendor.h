/*
 * A CPU stand-in for kernels/vendor/{cuda,hip}.h: the kernels compile as C11 and each block
 * runs on real threads (one per GPU thread) that meet at kiln_sync(), so the indexing,
 * masking, online softmax, split and combine logic is checked against the fp64 reference
 * with no GPU. Shared memory becomes static storage: blocks run one after another.
 */
#ifndef KILN_TESTS_HOST_VENDOR_H
#define KILN_TESTS_HOST_VENDOR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The host's own fixed-width types, so kiln_args.h means the same struct in the emulated
 * kernels and in the test that fills it. */
typedef int64_t kiln_i64;
typedef int32_t kiln_i32;
typedef uint32_t kiln_u32;
typedef uint16_t kiln_u16;

#define KILN_KERNEL(threads) void
#define KILN_DEV static inline
#define KILN_SHARED static

extern _Thread_local int kiln_host_thread;
extern _Thread_local long long kiln_host_block[3];
extern _Thread_local long long kiln_host_grid[3];
void kiln_host_sync(void);
/* Warp-synchronous exchange for the emulated warp instructions (kernels/mma.h): every lane
 * of the calling thread's warp (32 consecutive threads) deposits bytes (at most 64) from
 * mine and, once all have, receives the 32 deposits in lane order in all. */
void kiln_host_warp_exchange(const void *mine, void *all, size_t bytes);
/* The same for waves of `wave` lanes (32 or 64: AMD's matrix instructions, kernels/wmma.h). */
void kiln_host_wave_exchange(const void *mine, void *all, size_t bytes, int wave);

#define kiln_thread_x() kiln_host_thread
#define kiln_thread_x_fresh() kiln_host_thread
#define kiln_block_x() kiln_host_block[0]
#define kiln_block_y() kiln_host_block[1]
#define kiln_block_z() kiln_host_block[2]
#define kiln_sync() kiln_host_sync()
/* Launch dependencies (kernels/vendor/cuda.h) do not exist on the host: one grid at a time. */
#define kiln_grid_wait() ((void)0)
#define kiln_grid_release() ((void)0)

KILN_DEV float kiln_expf(float x) { return expf(x); }
KILN_DEV float kiln_logf(float x) { return logf(x); }
KILN_DEV float kiln_fabsf(float x) { return fabsf(x); }
KILN_DEV float kiln_fmaxf(float a, float b) { return fmaxf(a, b); }
/* PTX max.NaN.f32: NaN when either input is NaN. */
KILN_DEV float kiln_fmax_nan(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
KILN_DEV kiln_u32 kiln_f32_bits(float x)
{
    kiln_u32 u;
    memcpy(&u, &x, sizeof u);
    return u;
}
KILN_DEV float kiln_bits_f32(kiln_u32 u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
KILN_DEV float kiln_f16_to_f32(kiln_u16 h)
{
    _Float16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
}
KILN_DEV kiln_u16 kiln_f32_to_f16(float x)
{
    _Float16 f = (_Float16)x;
    kiln_u16 h;
    memcpy(&h, &f, sizeof h);
    return h;
}

#endif
