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
 *   _rs_nN:   A in registers, B MN-major in shared memory, transposed (O += P V). */
KILN_DEV void kiln_wgmma_ss_n64(float d[32], kiln_u64 da, kiln_u64 db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." KILN_WG_TYPE "." KILN_WG_TYPE " "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n128(float d[64], kiln_u64 da, kiln_u64 db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." KILN_WG_TYPE "." KILN_WG_TYPE " "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n160(float d[80], kiln_u64 da, kiln_u64 db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n160k16.f32." KILN_WG_TYPE "." KILN_WG_TYPE " "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
                 "}, %80, %81, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
                 : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n176(float d[88], kiln_u64 da, kiln_u64 db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n176k16.f32." KILN_WG_TYPE "." KILN_WG_TYPE " "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
                 "%80, %81, %82, %83, %84, %85, %86, %87"
                 "}, %88, %89, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
                 : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_ss_n192(float d[96], kiln_u64 da, kiln_u64 db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32." KILN_WG_TYPE "." KILN_WG_TYPE " "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
                 "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "l"(da), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_rs_n64(float d[32], const kiln_u32 a[4], kiln_u64 db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." KILN_WG_TYPE "." KILN_WG_TYPE " "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

KILN_DEV void kiln_wgmma_rs_n128(float d[64], const kiln_u32 a[4], kiln_u64 db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." KILN_WG_TYPE "." KILN_WG_TYPE " "
                 "{"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}


/* Whether pred holds in any lane of the warp: PTX ISA "vote.sync" (parallel synchronization
 * and communication instructions), mode .any, all 32 lanes. */
KILN_DEV int kiln_warp_any(int pred) { return __any_sync(0xffffffffu, pred); }

/* 2^x in one MUFU op (PTX ISA "ex2" (9.7.3.21), .approx.ftz: about 2 ulp, subnormal results
 * flushed to 0; inf, -inf and NaN behave as in exp2f). */
KILN_DEV float kiln_hp_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
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
