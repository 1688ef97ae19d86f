/*
 * The AMD side of the device rename layer. It uses only clang built-ins so that the same
 * text compiles with `clang -x hip -nogpuinc -nogpulib` (no HIP headers, no device
 * libraries) and under hipRTC (whose implicit runtime header is never relied on: every name
 * here is kiln_-prefixed or a raw attribute, so nothing clashes with it).
 */
#ifndef KILN_VENDOR_HIP_H
#define KILN_VENDOR_HIP_H

typedef long long kiln_i64;
typedef int kiln_i32;
typedef unsigned int kiln_u32;
typedef unsigned short kiln_u16;

/* The block size bound lets the compiler budget VGPRs for the real block instead of 1024
 * threads (clang ignores CUDA's launch_bounds without the HIP headers). */
#define KILN_KERNEL(threads)                                                                 \
    extern "C" __attribute__((global))                                                       \
    __attribute__((amdgpu_flat_work_group_size(1, threads))) void
#define KILN_DEV static __attribute__((device)) __attribute__((always_inline)) inline
#define KILN_SHARED __attribute__((shared))

#define kiln_thread_x() ((kiln_i32)__builtin_amdgcn_workitem_id_x())
#define kiln_thread_x_fresh() kiln_thread_x() /* as in cuda.h, without the forced re-read */
#define kiln_block_x() ((kiln_i64)__builtin_amdgcn_workgroup_id_x())
#define kiln_block_y() ((kiln_i64)__builtin_amdgcn_workgroup_id_y())
#define kiln_block_z() ((kiln_i64)__builtin_amdgcn_workgroup_id_z())

/* __syncthreads(): workgroup-scope release, barrier, acquire (as HIP defines it). */
KILN_DEV void kiln_sync(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/* Programmatic dependent launch is NVIDIA's (kernels/vendor/cuda.h): nothing here. */
KILN_DEV void kiln_grid_wait(void) {}
KILN_DEV void kiln_grid_release(void) {}

/* The AMDGPU backend expands these built-ins inline (v_exp_f32 / v_log_f32 with range
 * reduction), so they link with -nogpulib. */
KILN_DEV float kiln_expf(float x) { return __builtin_expf(x); }
KILN_DEV float kiln_logf(float x) { return __builtin_logf(x); }
KILN_DEV float kiln_fabsf(float x) { return __builtin_fabsf(x); }
KILN_DEV float kiln_fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
/* max that returns NaN when either input is NaN (fmaxf returns the other one): a softmax
 * row's running max, so a NaN score reaches the output. */
KILN_DEV float kiln_fmax_nan(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
KILN_DEV kiln_u32 kiln_f32_bits(float x) { return __builtin_bit_cast(kiln_u32, x); }
KILN_DEV float kiln_bits_f32(kiln_u32 x) { return __builtin_bit_cast(float, x); }

/* _Float16 conversions are single hardware instructions, round to nearest even. */
KILN_DEV float kiln_f16_to_f32(kiln_u16 h) { return (float)__builtin_bit_cast(_Float16, h); }
KILN_DEV kiln_u16 kiln_f32_to_f16(float f) { return __builtin_bit_cast(kiln_u16, (_Float16)f); }

#endif
