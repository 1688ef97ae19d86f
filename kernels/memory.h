/*
 * Global- and shared-memory vector instructions of the decode kernel (kernels/decode.cu) and
 * of the tensor tier's output stores (kernels/attention_mma.cu), kept here so the CPU
 * emulation (tests/gpu/host_vendor.h) runs those kernels with nothing but these replaced.
 *
 * kiln_v4: 16 bytes as four 32-bit words (c[0] holds the lowest-addressed two elements).
 * kiln_ldg16(p): the 8 elements at p (16-byte aligned), through the read-only path without
 * allocating in L1 (each byte of the cache is read once).
 * kiln_lds16(p): the 8 elements at p (16-byte aligned) in shared memory.
 * kiln_ldcg(p): one float from L2, never a stale L1 line (data other blocks wrote);
 * kiln_ldcg16(p): the same for 4 floats at a 16-byte aligned p, as raw bits.
 * kiln_stg16(p, x): stores the 4 floats x holds (raw bits) at a 16-byte aligned p.
 * kiln_cas64(p, cmp, val): atomic compare-and-swap of a 64-bit word; returns the old value.
 * kiln_arrive64(p, val): atomic add to a 64-bit word at GPU scope with acquire and release
 * semantics (PTX ISA "Memory Consistency Model": the writes this thread has observed,
 * those of its block before a block barrier included, are visible to whoever reads the
 * count it leaves, and what the blocks that counted before it wrote is visible to it);
 * returns the old value.
 * kiln_st64(p, val): atomic store of a 64-bit word.
 * kiln_reload_barrier(): the compiler forgets what it read from memory, so a value needed
 * again later is loaded again rather than kept in registers across a long stretch.
 * kiln_prmt(x, y, sel): PTX prmt.b32: byte i of the result is byte (sel >> 4i) & 7 of the
 * 8 bytes y:x (x the low four).
 */
#ifndef KILN_MEMORY_H
#define KILN_MEMORY_H

#include "kiln_device.h"
#include "mma.h" /* kiln_smem_addr */

typedef struct kiln_v4 {
    kiln_u32 c[4];
} kiln_v4;

#if defined(KILN_HOST_VENDOR_H)

typedef unsigned long long kiln_u64;

KILN_DEV kiln_v4 kiln_ldg16(const kiln_elem *p)
{
    kiln_v4 r;
    memcpy(&r, p, sizeof r);
    return r;
}
KILN_DEV kiln_v4 kiln_lds16(const kiln_elem *p)
{
    kiln_v4 r;
    memcpy(&r, p, sizeof r);
    return r;
}
KILN_DEV float kiln_ldcg(const float *p) { return *p; }
KILN_DEV kiln_v4 kiln_ldcg16(const float *p)
{
    kiln_v4 r;
    memcpy(&r, p, sizeof r);
    return r;
}
KILN_DEV void kiln_stg16(float *p, kiln_v4 x) { memcpy(p, &x, sizeof x); }
KILN_DEV void kiln_reload_barrier(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
KILN_DEV kiln_u64 kiln_cas64(kiln_u64 *p, kiln_u64 cmp, kiln_u64 val)
{
    __atomic_compare_exchange_n(p, &cmp, val, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
KILN_DEV kiln_u64 kiln_arrive64(kiln_u64 *p, kiln_u64 val)
{
    return __atomic_fetch_add(p, val, __ATOMIC_ACQ_REL);
}
KILN_DEV void kiln_st64(kiln_u64 *p, kiln_u64 val) { __atomic_store_n(p, val, __ATOMIC_SEQ_CST); }
KILN_DEV kiln_u32 kiln_prmt(kiln_u32 x, kiln_u32 y, kiln_u32 sel)
{
    const unsigned long long xy = (unsigned long long)y << 32 | x;
    kiln_u32 r = 0;
    for (int i = 0; i < 4; ++i) r |= (kiln_u32)((xy >> (8 * ((sel >> (4 * i)) & 7))) & 0xffu) << (8 * i);
    return r;
}

#else /* NVRTC, sm_80 and later */

typedef unsigned long long kiln_u64;

KILN_DEV kiln_v4 kiln_ldg16(const kiln_elem *p)
{
    kiln_v4 r;
    /* volatile: issued where the kernel puts it, not hoisted above the matrix
     * instructions, so the kernel's load schedule bounds its live registers. The L2 hint
     * (fetch whole 128-byte lines: a lane's 16 bytes are half of a line the next load
     * instruction reads the other half of) ran 1% faster on an H200 at B = 8 and 64 of
     * suite 3; 256-byte lines ran 4-6% slower. */
    asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.c[0]), "=r"(r.c[1]), "=r"(r.c[2]), "=r"(r.c[3])
        : "l"(p));
    return r;
}
KILN_DEV kiln_v4 kiln_lds16(const kiln_elem *p)
{
    kiln_v4 r;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.c[0]), "=r"(r.c[1]), "=r"(r.c[2]), "=r"(r.c[3])
                 : "r"(kiln_smem_addr(p)));
    return r;
}
KILN_DEV float kiln_ldcg(const float *p)
{
    float r;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(r) : "l"(p) : "memory");
    return r;
}
KILN_DEV kiln_v4 kiln_ldcg16(const float *p)
{
    kiln_v4 r;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.c[0]), "=r"(r.c[1]), "=r"(r.c[2]), "=r"(r.c[3])
                 : "l"(p)
                 : "memory");
    return r;
}
KILN_DEV void kiln_stg16(float *p, kiln_v4 x)
{
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(x.c[0]), "r"(x.c[1]),
                 "r"(x.c[2]), "r"(x.c[3])
                 : "memory");
}
KILN_DEV void kiln_reload_barrier(void) { asm volatile("" ::: "memory"); }
KILN_DEV kiln_u64 kiln_cas64(kiln_u64 *p, kiln_u64 cmp, kiln_u64 val)
{
    return atomicCAS(p, cmp, val);
}
KILN_DEV kiln_u64 kiln_arrive64(kiln_u64 *p, kiln_u64 val)
{
    /* One instruction where __threadfence() and atomicAdd would be two: the fence is
     * sequentially consistent (fence.sc.gpu), more than the count needs. */
    kiln_u64 r;
    asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(r) : "l"(p), "l"(val)
                 : "memory");
    return r;
}
KILN_DEV void kiln_st64(kiln_u64 *p, kiln_u64 val) { atomicExch(p, val); }
KILN_DEV kiln_u32 kiln_prmt(kiln_u32 x, kiln_u32 y, kiln_u32 sel) { return __byte_perm(x, y, sel); }

#endif

#endif
