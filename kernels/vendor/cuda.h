/*
 * The CUDA side of the device rename layer, for NVRTC (no host headers: NVRTC predefines
 * threadIdx, __syncthreads and the math built-ins). kernels/vendor/hip.h provides the same
 * names for clang HIP / hipRTC.
 */
#ifndef KILN_VENDOR_CUDA_H
#define KILN_VENDOR_CUDA_H

typedef long long kiln_i64;
typedef int kiln_i32;
typedef unsigned int kiln_u32;
typedef unsigned short kiln_u16;

#define KILN_KERNEL(threads) extern "C" __global__ void __launch_bounds__(threads)
#define KILN_DEV static __device__ __forceinline__
#define KILN_SHARED __shared__

#define kiln_thread_x() ((kiln_i32)threadIdx.x)
/* The thread index read anew where it is used (a volatile read of %tid.x, PTX ISA 10.2), so
 * values derived from it, such as the addresses of a tile's copies, are recomputed in a loop
 * rather than hoisted out of it into registers held through the whole loop. */
KILN_DEV kiln_i32 kiln_thread_x_fresh(void)
{
    kiln_i32 t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    return t;
}
#define kiln_block_x() ((kiln_i64)blockIdx.x)
#define kiln_block_y() ((kiln_i64)blockIdx.y)
#define kiln_block_z() ((kiln_i64)blockIdx.z)
#define kiln_sync() __syncthreads()
/* Programmatic dependent launch (PTX ISA griddepcontrol, sm_90 and newer; nothing on older
 * targets): the host may queue a kernel with the attribute that lets it start while the
 * stream's previous kernel still runs (src/gpu/driver.c). kiln_grid_wait() returns once
 * every prerequisite grid has completed and its memory is visible, so each thread calls it
 * before its first global access, read or write; kiln_grid_release() lets the stream's next
 * kernel start being placed on the device (it, too, waits before touching memory). Both are
 * no-ops in a kernel launched without the attribute. */
KILN_DEV void kiln_grid_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
KILN_DEV void kiln_grid_release(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

KILN_DEV float kiln_expf(float x) { return expf(x); }
KILN_DEV float kiln_logf(float x) { return logf(x); }
KILN_DEV float kiln_fabsf(float x) { return fabsf(x); }
KILN_DEV float kiln_fmaxf(float a, float b) { return fmaxf(a, b); }
/* max that returns NaN when either input is NaN (fmaxf returns the other one): a softmax
 * row's running max, so a NaN score reaches the output. PTX ISA 9.7.3 max, .NaN (sm_80+). */
KILN_DEV float kiln_fmax_nan(float a, float b)
{
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
KILN_DEV kiln_u32 kiln_f32_bits(float x) { return __float_as_uint(x); }
KILN_DEV float kiln_bits_f32(kiln_u32 x) { return __uint_as_float(x); }

/* The hardware conversions, round to nearest even like the CPU reference. */
KILN_DEV float kiln_f16_to_f32(kiln_u16 h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
KILN_DEV kiln_u16 kiln_f32_to_f16(float f)
{
    kiln_u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

#endif
