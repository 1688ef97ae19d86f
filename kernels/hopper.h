/*
 * Hopper (sm_90a) primitives of the hopper tier (kernels/attention_hopper.cu): warpgroup
 * matrix multiply, its shared-memory descriptors, the tensor copy engine (TMA), mbarriers,
 * named barriers, proxy fences and register reallocation. The only place these
 * instructions appear; each cites the section of the PTX ISA (version 8.x, "Parallel Thread
 * Execution ISA") it follows. Needs --gpu-architecture=sm_90a (wgmma and setmaxnreg are
 * refused for plain sm_90). Include after mma.h (kiln_smem_addr).
 *
 * Shared-memory tiles are stored as the tensor copy engine writes them with 128-byte
 * swizzling: rows of 64 two-byte elements (128 bytes), 16-byte chunk c of row r at chunk
 * c ^ (r % 8), every tile 1024-byte aligned. A tile wider than 64 elements is several such
 * 64-column blocks one after the other.
 */
#ifndef KILN_HOPPER_H
#define KILN_HOPPER_H

#include "mma.h"

typedef unsigned long long kiln_u64;

#if KILN_DTYPE == 2
#define KILN_WG_TYPE "bf16"
#else
#define KILN_WG_TYPE "f16"
#endif

/* A tensor map made on the host by cuTensorMapEncodeTiled: 128 opaque bytes, passed by
 * value as a __grid_constant__ kernel parameter so its address is valid for TMA. */
typedef struct __align__(64) kiln_tmap {
    kiln_u64 opaque[16];
} kiln_tmap;

/* ---- matrix descriptors: PTX ISA "Matrix Descriptor Format" (9.7.15.5.1) ----------------
 * bits 0-13 start address >> 4, 16-29 leading-dimension byte offset >> 4, 32-45
 * stride-dimension byte offset >> 4, 49-51 base offset (0: tiles are 1024-byte aligned),
 * 62-63 swizzle mode (1 = 128-byte).
 * K-major operand (rows of 64 K-elements): sbo = 1024 (8 rows x 128 bytes) between groups
 *   of 8 rows, lbo unused; step k by 16 elements = 32 bytes inside a 128-byte row.
 * MN-major operand (rows of 64 MN-elements, one row per K index): lbo = bytes between
 *   64-wide MN blocks, sbo = 1024 between groups of 8 K rows. */
KILN_DEV kiln_u64 kiln_wg_desc(kiln_u32 smem_addr, kiln_u32 lbo, kiln_u32 sbo)
{
    kiln_u64 d = (kiln_u64)((smem_addr & 0x3FFFFu) >> 4);
    d |= (kiln_u64)((lbo >> 4) & 0x3FFFu) << 16;
    d |= (kiln_u64)((sbo >> 4) & 0x3FFFu) << 32;
    d |= (kiln_u64)1 << 62;
    return d;
}

/* The descriptor of the operand byte_off bytes past d's (byte_off a multiple of 16). The
 * start-address field is the low 14 bits and every shared-memory address is below 2^18, so
 * the sum never carries out of it: one 32-bit add, where building each descriptor anew
 * costs a mask, a shift and the merges. */
KILN_DEV kiln_u64 kiln_wg_desc_add(kiln_u64 d, kiln_u32 byte_off)
{
    kiln_u64 r;
    asm("mov.b64 %0, {%1, %2};" : "=l"(r)
        : "r"((kiln_u32)d + (byte_off >> 4)), "r"((kiln_u32)(d >> 32)));
    return r;
}

/* ---- wgmma ordering: PTX ISA "wgmma.fence" (9.7.15.7.1), "wgmma.commit_group"
 * (9.7.15.7.2), "wgmma.wait_group" (9.7.15.7.3). A fence comes before the first wgmma that
 * touches accumulator or A registers written by other instructions. */
KILN_DEV void kiln_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
KILN_DEV void kiln_wgmma_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
#define kiln_wgmma_wait(n) asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(n) : "memory")
/* Keeps the compiler from moving accumulator reads / writes across a wait. */
#define kiln_reg_fence(x) asm volatile("" : "+f"(x)::"memory")

/* ---- wgmma.mma_async: PTX ISA "wgmma.mma_async" (9.7.15.5.2), shape m64nNk16, fp32
 * accumulators, the element type from KILN_DTYPE. Accumulator layout ("Register Fragments
 * and Shared Memory Matrix Layouts", 9.7.15.5): warp w of the warpgroup owns rows
 * 16w..16w+15; with g = lane / 4, t = lane % 4, d[4i + x] is row g + 8 * (x >> 1), column
 * 8i + 2t + (x & 1). A from registers (the _rs forms) has the m16n8k16 A-fragment layout of
 * mma.h per warp. scale_d 0 ignores the accumulator's old value.
 *   _ss_nN:   A and B both K-major in shared memory (S = Q K^T), N = 64, 128, 160, 176 or 192 keys.
 *   _rs_nN:   A in registers, B MN-major in shared memory, transposed (O += P V), N = 64,
 *             128 or 256 (the head dim).
 * The asm statements' accumulator operands: register names eight at a time (KILN_WG_R<i>:
 * "%i, ..., %i+7") and the matching read-write operands d[i] .. d[i + 7]. */
#define KILN_WG_R0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define KILN_WG_R8 "%8, %9, %10, %11, %12, %13, %14, %15"
#define KILN_WG_R16 "%16, %17, %18, %19, %20, %21, %22, %23"
#define KILN_WG_R24 "%24, %25, %26, %27, %28, %29, %30, %31"
#define KILN_WG_R32 "%32, %33, %34, %35, %36, %37, %38, %39"
#define KILN_WG_R40 "%40, %41, %42, %43, %44, %45, %46, %47"
#define KILN_WG_R48 "%48, %49, %50, %51, %52, %53, %54, %55"
#define KILN_WG_R56 "%56, %57, %58, %59, %60, %61, %62, %63"
#define KILN_WG_R64 "%64, %65, %66, %67, %68, %69, %70, %71"
#define KILN_WG_R72 "%72, %73, %74, %75, %76, %77, %78, %79"
#define KILN_WG_R80 "%80, %81, %82, %83, %84, %85, %86, %87"
#define KILN_WG_R88 "%88, %89, %90, %91, %92, %93, %94, %95"
#define KILN_WG_R96 "%96, %97, %98, %99, %100, %101, %102, %103"
#define KILN_WG_R104 "%104, %105, %106, %107, %108, %109, %110, %111"
#define KILN_WG_R112 "%112, %113, %114, %115, %116, %117, %118, %119"
#define KILN_WG_R120 "%120, %121, %122, %123, %124, %125, %126, %127"
#define KILN_WG_D8(i)                                                                        \
    "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),   \
        "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define KILN_WG_D32(i) KILN_WG_D8(i), KILN_WG_D8((i) + 8), KILN_WG_D8((i) + 16), KILN_WG_D8((i) + 24)
#define KILN_WG_RX4(a, b, c, e) a ", " b ", " c ", " e
/* One m64nNk16 product: N, the accumulator register names, the operand number of scale_d
 * (made the predicate p), the A operand (a descriptor, or four registers in braces), the B
 * descriptor, the immediates after p (scale-a and scale-b 1, then the transpose flags:
 * "1, 1, 0, 0" with A in shared memory, both K-major; "1, 1, 1" with A in registers, B
 * transposed), then the operands themselves. */
#define KILN_WGMMA(n, regs, pred, a_op, b_op, tail, ...)                                    \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " pred ", 0;\n"                         \
                 "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32." KILN_WG_TYPE "."           \
                 KILN_WG_TYPE " {" regs "}, " a_op ", " b_op ", p, " tail ";\n}\n"          \
                 : __VA_ARGS__)

/* The same product issued only where the warpgroup-uniform guard is nonzero: a predicated
 * instruction, not a branch (ptxas serializes the products of a wgmma inside a branch it
 * cannot prove uniform; a guard it cannot prove uniform either is fine here, at the cost of a
 * warpgroup arrive it injects before each predicated product). guard is the operand number
 * of the guard. */
#define KILN_WGMMA_IF(n, regs, pred, guard, a_op, b_op, tail, ...)                           \
    asm volatile("{\n.reg .pred p, g;\nsetp.ne.b32 p, " pred ", 0;\nsetp.ne.b32 g, " guard    \
                 ", 0;\n@g wgmma.mma_async.sync.aligned.m64n" #n "k16.f32." KILN_WG_TYPE "."    \
                 KILN_WG_TYPE " {" regs "}, " a_op ", " b_op ", p, " tail ";\n}\n"            \
                 : __VA_ARGS__)

KILN_DEV void kiln_wgmma_rs_n64_if(float d[32], const kiln_u32 a[4], kiln_u64 db, int scale_d,
                                   int on)
{
    KILN_WGMMA_IF(64, KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24), "%37",
                  "%38", "{%32, %33, %34, %35}", "%36", "1, 1, 1", KILN_WG_D32(0)
                  : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "r"(on));
}

KILN_DEV void kiln_wgmma_rs_n128_if(float d[64], const kiln_u32 a[4], kiln_u64 db, int scale_d,
                                    int on)
{
    KILN_WGMMA_IF(128,
                  KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24) ", "
                  KILN_WG_RX4(KILN_WG_R32, KILN_WG_R40, KILN_WG_R48, KILN_WG_R56),
                  "%69", "%70", "{%64, %65, %66, %67}", "%68", "1, 1, 1", KILN_WG_D32(0),
                  KILN_WG_D32(32)
                  : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "r"(on));
}

/* N = 256: 128 accumulators, in four groups of 32 register names. */
#define KILN_WG_R256                                                                         \
    KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24) ", "                       \
    KILN_WG_RX4(KILN_WG_R32, KILN_WG_R40, KILN_WG_R48, KILN_WG_R56) ", "                     \
    KILN_WG_RX4(KILN_WG_R64, KILN_WG_R72, KILN_WG_R80, KILN_WG_R88) ", "                     \
    KILN_WG_RX4(KILN_WG_R96, KILN_WG_R104, KILN_WG_R112, KILN_WG_R120)

KILN_DEV void kiln_wgmma_rs_n256_if(float d[128], const kiln_u32 a[4], kiln_u64 db,
                                    int scale_d, int on)
{
    KILN_WGMMA_IF(256, KILN_WG_R256, "%133", "%134", "{%128, %129, %130, %131}", "%132",
                  "1, 1, 1", KILN_WG_D32(0), KILN_WG_D32(32), KILN_WG_D32(64), KILN_WG_D32(96)
                  : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "r"(on));
}

KILN_DEV void kiln_wgmma_ss_n64(float d[32], kiln_u64 da, kiln_u64 db, int scale_d)
{
    KILN_WGMMA(64, KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24), "%34", "%32",
               "%33", "1, 1, 0, 0", KILN_WG_D32(0) : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n128(float d[64], kiln_u64 da, kiln_u64 db, int scale_d)
{
    KILN_WGMMA(128,
               KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24) ", "
               KILN_WG_RX4(KILN_WG_R32, KILN_WG_R40, KILN_WG_R48, KILN_WG_R56),
               "%66", "%64", "%65", "1, 1, 0, 0", KILN_WG_D32(0), KILN_WG_D32(32)
               : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n160(float d[80], kiln_u64 da, kiln_u64 db, int scale_d)
{
    KILN_WGMMA(160,
               KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24) ", "
               KILN_WG_RX4(KILN_WG_R32, KILN_WG_R40, KILN_WG_R48, KILN_WG_R56) ", "
               KILN_WG_R64 ", " KILN_WG_R72,
               "%82", "%80", "%81", "1, 1, 0, 0", KILN_WG_D32(0), KILN_WG_D32(32), KILN_WG_D8(64),
               KILN_WG_D8(72) : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n176(float d[88], kiln_u64 da, kiln_u64 db, int scale_d)
{
    KILN_WGMMA(176,
               KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24) ", "
               KILN_WG_RX4(KILN_WG_R32, KILN_WG_R40, KILN_WG_R48, KILN_WG_R56) ", "
               KILN_WG_R64 ", " KILN_WG_R72 ", " KILN_WG_R80,
               "%90", "%88", "%89", "1, 1, 0, 0", KILN_WG_D32(0), KILN_WG_D32(32), KILN_WG_D8(64),
               KILN_WG_D8(72), KILN_WG_D8(80) : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n192(float d[96], kiln_u64 da, kiln_u64 db, int scale_d)
{
    KILN_WGMMA(192,
               KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24) ", "
               KILN_WG_RX4(KILN_WG_R32, KILN_WG_R40, KILN_WG_R48, KILN_WG_R56) ", "
               KILN_WG_RX4(KILN_WG_R64, KILN_WG_R72, KILN_WG_R80, KILN_WG_R88),
               "%98", "%96", "%97", "1, 1, 0, 0", KILN_WG_D32(0), KILN_WG_D32(32), KILN_WG_D32(64)
               : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_rs_n64(float d[32], const kiln_u32 a[4], kiln_u64 db, int scale_d)
{
    KILN_WGMMA(64, KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24), "%37",
               "{%32, %33, %34, %35}", "%36", "1, 1, 1", KILN_WG_D32(0)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_rs_n128(float d[64], const kiln_u32 a[4], kiln_u64 db, int scale_d)
{
    KILN_WGMMA(128,
               KILN_WG_RX4(KILN_WG_R0, KILN_WG_R8, KILN_WG_R16, KILN_WG_R24) ", "
               KILN_WG_RX4(KILN_WG_R32, KILN_WG_R40, KILN_WG_R48, KILN_WG_R56),
               "%69", "{%64, %65, %66, %67}", "%68", "1, 1, 1", KILN_WG_D32(0), KILN_WG_D32(32)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_rs_n256(float d[128], const kiln_u32 a[4], kiln_u64 db, int scale_d)
{
    KILN_WGMMA(256, KILN_WG_R256, "%133", "{%128, %129, %130, %131}", "%132", "1, 1, 1",
               KILN_WG_D32(0), KILN_WG_D32(32), KILN_WG_D32(64), KILN_WG_D32(96)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

/* 2^x in one MUFU op (PTX ISA "ex2" (9.7.3.21), .approx.ftz: about 2 ulp, subnormal results
 * flushed to 0; inf, -inf and NaN behave as in exp2f). */
KILN_DEV float kiln_hp_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* 2^x without the MUFU unit, on the FMA and integer pipes (ten instructions): x = n + f with n
 * the nearest integer (the 1.5 x 2^23 rounding trick) and f in [-0.5, 0.5]; 2^f from a
 * degree-3 polynomial (least relative error on that interval, about 7.5e-5: below half an
 * ulp of the bf16 and f16 weights it feeds, 2^-9 and 2^-11); times 2^n built in the
 * exponent field. x is first raised to -127 by a max that keeps NaN (kiln_fmax_nan), so
 * -inf gives exactly 0 (2^-127's field is 0), NaN gives NaN (p is NaN) and, as with .ftz,
 * results below 2^-126 are 0 or a subnormal of no weight. Valid up to x = 128 (the
 * softmax's arguments stay below its rescale slack). */
KILN_DEV float kiln_hp_exp2_fma(float x)
{
    const float c = kiln_fmax_nan(x, -127.0f);
    const float t = c + 12582912.0f; /* 1.5 x 2^23: n in t's low mantissa bits */
    const float f = c - (t - 12582912.0f);
    const float p =
        ((0.05517150089144707f * f + 0.24261096119880676f) * f + 0.6932609677314758f) * f +
        0.9999280571937561f; /* three FFMA */
    /* t's bits are 0x4b400000 + n; shifted left by 23 that is n << 23 (mod 2^32), so
     * (bits + 127) << 23 is 2^n's (0 at n = -127). */
    const float s = kiln_bits_f32((kiln_f32_bits(t) + 127u) << 23);
    return p * s;
}

/* 1 / x and log2 x in one MUFU op each (PTX ISA "rcp" (9.7.3.15) and "lg2" (9.7.3.20),
 * .approx.ftz: 1 and 2^-22 relative error, subnormal inputs flushed to 0; 0, inf and NaN
 * behave as in the exact functions). */
KILN_DEV float kiln_hp_rcp(float x)
{
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
KILN_DEV float kiln_hp_log2(float x)
{
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* ---- mbarrier: PTX ISA "mbarrier" (9.7.13.15): init, arrive, expect_tx, try_wait.parity. */
KILN_DEV void kiln_mbar_init(kiln_u64 *bar, kiln_u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(kiln_smem_addr(bar)),
                 "r"(count) : "memory");
}
/* Makes initialised barriers visible to the copy engine: PTX ISA "membar / fence"
 * (9.7.13.4), fence.mbarrier_init. */
KILN_DEV void kiln_mbar_init_fence(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
KILN_DEV void kiln_mbar_arrive(kiln_u64 *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(kiln_smem_addr(bar))
                 : "memory");
}
/* Arrives and announces bytes the copy engine will complete on this barrier. */
KILN_DEV void kiln_mbar_expect_tx(kiln_u64 *bar, kiln_u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(kiln_smem_addr(bar)), "r"(bytes) : "memory");
}
/* Waits until the phase with the given parity has completed. A fresh barrier counts as
 * having completed the phase of parity 1, so a producer's first wait on an empty slot
 * (parity 1) passes at once. */
KILN_DEV void kiln_mbar_wait(kiln_u64 *bar, kiln_u32 parity)
{
    asm volatile("{\n.reg .pred done;\n"
                 "kiln_wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra kiln_wait_%=;\n}\n" ::"r"(kiln_smem_addr(bar)), "r"(parity)
                 : "memory");
}

/* The same wait for a thread that has nothing else to issue (the producer): between polls
 * it sleeps about ns nanoseconds (PTX ISA "nanosleep" (9.7.13.9)), so its retries do not
 * take issue slots from the warps on its scheduler that compute. ns = 0: kiln_mbar_wait. */
KILN_DEV void kiln_mbar_wait_idle(kiln_u64 *bar, kiln_u32 parity, kiln_u32 ns)
{
    if (ns == 0) {
        kiln_mbar_wait(bar, parity);
        return;
    }
    asm volatile("{\n.reg .pred done;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@done bra kiln_idle_ok_%=;\n"
                 "kiln_idle_%=:\n"
                 "nanosleep.u32 %2;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra kiln_idle_%=;\n"
                 "kiln_idle_ok_%=:\n}\n" ::"r"(kiln_smem_addr(bar)), "r"(parity), "r"(ns)
                 : "memory");
}

/* The same wait with a suspend-time hint (PTX ISA "mbarrier" (9.7.13.15), try_wait's
 * optional suspendTimeHint operand, sm_90 and PTX ISA 7.8 on): a thread whose phase has not
 * completed is suspended until it completes or about ns nanoseconds pass, rather than
 * for the system's short default, so a waiting warp retries (and takes its scheduler's
 * issue slots) seldom, and wakes when the phase completes, not after a fixed sleep. */
KILN_DEV void kiln_mbar_wait_hint(kiln_u64 *bar, kiln_u32 parity, kiln_u32 ns)
{
    asm volatile("{\n.reg .pred done;\n"
                 "kiln_hint_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
                 "@!done bra kiln_hint_%=;\n}\n" ::"r"(kiln_smem_addr(bar)), "r"(parity),
                 "r"(ns)
                 : "memory");
}

/* ---- TMA: PTX ISA "cp.async.bulk.tensor" (9.7.9.25.5.1). One box of a 4-d tensor map
 * (coordinates innermost first, in elements; out-of-range elements are written as zeros)
 * into shared memory, completing bytes on bar. */
KILN_DEV void kiln_tma_load_4d(void *dst, const kiln_tmap *map, kiln_u64 *bar, kiln_i32 c0,
                               kiln_i32 c1, kiln_i32 c2, kiln_i32 c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5, %6}], [%2];"
                 ::"r"(kiln_smem_addr(dst)), "l"((kiln_u64)map), "r"(kiln_smem_addr(bar)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}

/* The other way (PTX ISA "cp.async.bulk.tensor" (9.7.9.25.5.1), .global.shared::cta,
 * bulk_group completion): one box of shared memory, laid out as the load writes it, into a
 * 4-d tensor map; elements outside the map's extents are not written. Its completion is
 * tracked per thread in bulk groups: kiln_bulk_commit closes one, kiln_bulk_wait_read(0)
 * waits until every committed group has read its shared memory (which may then be
 * written again), kiln_bulk_wait(0) until their writes are done (PTX ISA
 * "cp.async.bulk.commit_group", "cp.async.bulk.wait_group"). The shared-memory writes a
 * store reads must be ordered before it with kiln_fence_proxy_async by the threads that
 * made them. */
KILN_DEV void kiln_tma_store_4d(const kiln_tmap *map, const void *src, kiln_i32 c0,
                                kiln_i32 c1, kiln_i32 c2, kiln_i32 c3)
{
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group"
                 " [%0, {%2, %3, %4, %5}], [%1];"
                 ::"l"((kiln_u64)map), "r"(kiln_smem_addr(src)), "r"(c0), "r"(c1), "r"(c2),
                 "r"(c3) : "memory");
}
KILN_DEV void kiln_bulk_commit(void) { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
#define kiln_bulk_wait_read(n) \
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(n) : "memory")
#define kiln_bulk_wait(n) asm volatile("cp.async.bulk.wait_group %0;" ::"n"(n) : "memory")

/* ---- proxy fence: PTX ISA "membar / fence" (9.7.13.4), fence.proxy.async: orders this
 * thread's ordinary shared-memory accesses before later accesses of the async proxy (TMA,
 * wgmma operands). */
KILN_DEV void kiln_fence_proxy_async(void)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* ---- named barriers: PTX ISA "bar / barrier" (9.7.13.1): threads (a multiple of 32) of
 * the block meet at barrier id (1..15; 0 is __syncthreads). */
KILN_DEV void kiln_bar_sync(kiln_u32 id, kiln_u32 threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/* Arrives at barrier id without waiting (the threads that bar_sync on it wait for these
 * arrivals too): PTX ISA "bar / barrier" (9.7.13.1), barrier.arrive. */
KILN_DEV void kiln_bar_arrive(kiln_u32 id, kiln_u32 threads)
{
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/* ---- register reallocation: PTX ISA "setmaxnreg" (9.7.17.1). Every thread of a
 * warpgroup executes the same one; the kernel needs a register cap at entry
 * (__launch_bounds__(threads, 1)). */
#define kiln_setmaxnreg_dec(n) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(n))
#define kiln_setmaxnreg_inc(n) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(n))

#endif
