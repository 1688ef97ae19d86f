/*
 * Warp-level matrix and lane-exchange operations of the NVIDIA tensor tier (sm_80+), the
 * only place their instructions appear, so the CPU emulation (tests/gpu/host_vendor.h)
 * runs the same kernel code with nothing but these replaced.
 *
 * kiln_mma16816(d, a, b, c): D = A B + C for one 16 x 8 x 16 tile with fp32 accumulation
 * (mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32, the element type from
 * KILN_DTYPE). Fragments follow the PTX ISA ("Matrix Fragments for mma.m16n8k16 with
 * floating point type"); with g = lane / 4 and t = lane % 4, each 32-bit register holding
 * two elements, the lower-indexed one in the low half:
 *   a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]
 *   a[2] = A[g][2t+8..2t+9]  a[3] = A[g+8][2t+8..2t+9]
 *   b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]
 *   c[0], c[1] = C[g][2t], C[g][2t+1]    c[2], c[3] = C[g+8][2t], C[g+8][2t+1]
 * kiln_shfl_xor(x, m): x from lane (lane ^ m) of the same warp.
 * kiln_warp_any(pred): whether pred is nonzero in any lane of the warp (PTX ISA
 * "vote.sync", mode .any, all 32 lanes).
 * kiln_exp2f(x): 2^x (on the GPU the hardware approximation: relative error about 2^-22,
 * results below 2^-126 flushed to 0).
 * kiln_pack2(lo, hi): two floats rounded to the element type in one 32-bit register.
 * kiln_lds32(p): the two elements at p (4-byte aligned) as one register.
 * kiln_sptr: a shared-memory address (kiln_sptr_of(p) of a pointer into shared memory,
 * kiln_sptr_add(a, n) n elements further); the copies and ldmatrix take these.
 * kiln_cp_async16(dst, src, valid): copies 8 elements (16-byte aligned both sides) from
 * global to shared memory without waiting (cp.async.cg), or zeros them when !valid;
 * kiln_cp_async_commit() closes a group of such copies and kiln_cp_async_wait1() /
 * kiln_cp_async_wait0() / kiln_cp_async_wait_n(N) (N a constant) wait until at most 1 / 0 /
 * N groups of this thread are in flight. Other threads see the data only after a
 * kiln_sync() that follows the wait.
 * kiln_ldmatrix_x4(r, row): four 8 x 8 16-bit matrices from shared memory, lane 8i + j
 * giving the address of row j of matrix i; r[i] holds M_i[g][2t] in the low half and
 * M_i[g][2t+1] in the high half (the A-fragment layout of one 8 x 8 quarter, and the
 * B-fragment layout of a matrix stored n-major).
 * kiln_ldmatrix_x4_trans(r, row): the same matrices transposed into the B-fragment layout:
 * M_i[2t][g] in the low half and M_i[2t+1][g] in the high half.
 * KILN_DYNAMIC_SHARED(name, bytes): declares the block's dynamic shared memory as the
 * 16-byte aligned byte array name (bytes is the size the host launches with).
 * kiln_movmatrix_trans(r): movmatrix.sync.aligned.m8n8.trans.b16 (sm_75+): the 8 x 8 16-bit
 * matrix whose row g, columns 2t..2t+1 lane (g, t) holds in r, transposed: the result in
 * lane (g, t) is M[2t][g] (low half) and M[2t+1][g] (high half).
 * kiln_grid_x(), kiln_grid_y(), kiln_grid_z(): the grid's x, y and z sizes.
 * Every lane of the warp must make each call (warp-uniform control flow).
 */
#ifndef KILN_MMA_H
#define KILN_MMA_H

#include "kiln_device.h"

#if defined(KILN_HOST_VENDOR_H)

#define KILN_ALIGN16 _Alignas(16)
#define kiln_grid_x() kiln_host_grid[0]
#define kiln_grid_y() kiln_host_grid[1]
#define kiln_grid_z() kiln_host_grid[2]
#define KILN_DYNAMIC_SHARED(name, bytes) static _Alignas(16) unsigned char name[bytes]
typedef kiln_elem *kiln_sptr;
KILN_DEV kiln_sptr kiln_sptr_of(kiln_elem *p) { return p; }
#define kiln_sptr_add(a, elems) ((a) + (elems))

KILN_DEV float kiln_exp2f(float x) { return exp2f(x); }

KILN_DEV kiln_u32 kiln_lds32(const kiln_elem *p)
{
    kiln_u32 r;
    memcpy(&r, p, sizeof r);
    return r;
}

/* Copies are queued per thread and done only when a wait retires their group, so a kernel
 * that reads shared memory before the wait and barrier sees stale data in the emulation
 * too. */
#define KILN_CP_QUEUE 128
static _Thread_local struct {
    kiln_elem *dst;
    const kiln_elem *src;
    int valid;
    unsigned group;
} kiln_cp_queue[KILN_CP_QUEUE];
static _Thread_local int kiln_cp_count;
static _Thread_local unsigned kiln_cp_group;

KILN_DEV void kiln_cp_retire(unsigned below)
{
    int kept = 0;
    for (int i = 0; i < kiln_cp_count; ++i) {
        if (kiln_cp_queue[i].group < below) {
            if (kiln_cp_queue[i].valid)
                memcpy(kiln_cp_queue[i].dst, kiln_cp_queue[i].src, 16);
            else
                memset(kiln_cp_queue[i].dst, 0, 16);
        } else {
            kiln_cp_queue[kept++] = kiln_cp_queue[i];
        }
    }
    kiln_cp_count = kept;
}

KILN_DEV void kiln_cp_async16(kiln_sptr dst, const kiln_elem *src, int valid)
{
    if (kiln_cp_count == KILN_CP_QUEUE) kiln_cp_retire(kiln_cp_group + 1); /* full: copy now */
    kiln_cp_queue[kiln_cp_count].dst = dst;
    kiln_cp_queue[kiln_cp_count].src = src;
    kiln_cp_queue[kiln_cp_count].valid = valid;
    kiln_cp_queue[kiln_cp_count].group = kiln_cp_group;
    ++kiln_cp_count;
}
KILN_DEV void kiln_cp_async_commit(void) { ++kiln_cp_group; }
KILN_DEV void kiln_cp_async_wait1(void) { kiln_cp_retire(kiln_cp_group - 1); }
KILN_DEV void kiln_cp_async_wait0(void) { kiln_cp_retire(kiln_cp_group); }
#define kiln_cp_async_wait_n(n) kiln_cp_retire(kiln_cp_group - (n))

KILN_DEV void kiln_ldmatrix_x4(kiln_u32 r[4], kiln_sptr row)
{
    kiln_sptr rows[32];
    const int lane = kiln_thread_x() % 32, g = lane / 4, t = lane % 4;
    kiln_host_warp_exchange(&row, rows, sizeof row);
    for (int i = 0; i < 4; ++i)
        r[i] = (kiln_u32)rows[8 * i + g][2 * t] | ((kiln_u32)rows[8 * i + g][2 * t + 1] << 16);
}

KILN_DEV void kiln_ldmatrix_x4_trans(kiln_u32 r[4], kiln_sptr row)
{
    kiln_sptr rows[32];
    const int lane = kiln_thread_x() % 32, g = lane / 4, t = lane % 4;
    kiln_host_warp_exchange(&row, rows, sizeof row);
    for (int i = 0; i < 4; ++i)
        r[i] = (kiln_u32)rows[8 * i + 2 * t][g] | ((kiln_u32)rows[8 * i + 2 * t + 1][g] << 16);
}

KILN_DEV kiln_u32 kiln_pack2(float lo, float hi)
{
    return (kiln_u32)kiln_f32_to_elem(lo) | ((kiln_u32)kiln_f32_to_elem(hi) << 16);
}

KILN_DEV kiln_u32 kiln_movmatrix_trans(kiln_u32 r)
{
    kiln_u32 all[32];
    const int lane = kiln_thread_x() % 32, g = lane / 4, t = lane % 4;
    kiln_host_warp_exchange(&r, all, sizeof r);
    /* M[row][col] is half col % 2 of lane 4 row + col / 2. */
    return ((all[8 * t + g / 2] >> (16 * (g % 2))) & 0xffffu) |
           (((all[8 * t + 4 + g / 2] >> (16 * (g % 2))) & 0xffffu) << 16);
}

KILN_DEV float kiln_half_f32(kiln_u32 r, int hi)
{
    return kiln_elem_to_f32((kiln_elem)(hi ? r >> 16 : r & 0xffffu));
}

typedef struct kiln_mma_lane {
    kiln_u32 a[4], b[2];
} kiln_mma_lane;

/* Each lane publishes its A and B registers; then computes its own four outputs from the
 * whole warp's registers, element (row, k) of A found where the layout above puts it. */
KILN_DEV void kiln_mma16816(float d[4], const kiln_u32 a[4], const kiln_u32 b[2],
                            const float c[4])
{
    kiln_mma_lane mine, all[32];
    const int lane = kiln_thread_x() % 32, g = lane / 4, t = lane % 4;
    memcpy(mine.a, a, sizeof mine.a);
    memcpy(mine.b, b, sizeof mine.b);
    kiln_host_warp_exchange(&mine, all, sizeof mine);
    for (int i = 0; i < 4; ++i) {
        const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
        float acc = c[i];
        for (int k = 0; k < 16; ++k) {
            const int kk = k % 8;
            const kiln_mma_lane *la = &all[(row % 8) * 4 + kk / 2];
            const kiln_mma_lane *lb = &all[col * 4 + kk / 2];
            float x = kiln_half_f32(la->a[(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k & 1);
            float y = kiln_half_f32(lb->b[k >= 8 ? 1 : 0], k & 1);
            acc += x * y;
        }
        d[i] = acc;
    }
}

KILN_DEV float kiln_shfl_xor(float x, int m)
{
    float all[32];
    kiln_host_warp_exchange(&x, all, sizeof x);
    return all[(kiln_thread_x() % 32) ^ m];
}

KILN_DEV kiln_i32 kiln_shfl_idx(kiln_i32 x, int src)
{
    kiln_i32 all[32];
    kiln_host_warp_exchange(&x, all, sizeof x);
    return all[src % 32];
}

KILN_DEV int kiln_warp_any(int pred)
{
    int all[32], any = 0;
    kiln_host_warp_exchange(&pred, all, sizeof pred);
    for (int i = 0; i < 32; ++i) any |= all[i] != 0;
    return any;
}

#else /* NVRTC, sm_80 and later */

#define KILN_ALIGN16 __align__(16)
#define kiln_grid_x() ((kiln_i64)gridDim.x)
#define kiln_grid_y() ((kiln_i64)gridDim.y)
#define kiln_grid_z() ((kiln_i64)gridDim.z)
#define KILN_DYNAMIC_SHARED(name, bytes) extern __shared__ __align__(16) unsigned char name[]

/* The hardware 2^x (relative error about 2^-22, results below 2^-126 flushed to 0; -inf
 * gives 0 and NaN stays NaN): one instruction where exp2f, without fast math, is several. */
KILN_DEV float kiln_exp2f(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

KILN_DEV kiln_u32 kiln_lds32(const kiln_elem *p) { return *(const kiln_u32 *)p; }

KILN_DEV kiln_u32 kiln_smem_addr(const void *p)
{
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (kiln_u32)a;
}

/* Shared-memory addresses as the 32-bit offsets the instructions take, so address
 * arithmetic stays 32-bit and folds into immediates. */
typedef kiln_u32 kiln_sptr;
KILN_DEV kiln_sptr kiln_sptr_of(kiln_elem *p) { return kiln_smem_addr(p); }
#define kiln_sptr_add(a, elems) ((a) + (kiln_u32)(elems) * 2u)

KILN_DEV void kiln_cp_async16(kiln_sptr dst, const kiln_elem *src, int valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst),
                 "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
KILN_DEV void kiln_cp_async_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
KILN_DEV void kiln_cp_async_wait1(void) { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
KILN_DEV void kiln_cp_async_wait0(void) { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
#define kiln_cp_async_wait_n(n) asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory")

KILN_DEV void kiln_ldmatrix_x4(kiln_u32 r[4], kiln_sptr row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row)
                 : "memory");
}

KILN_DEV void kiln_ldmatrix_x4_trans(kiln_u32 r[4], kiln_sptr row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row)
                 : "memory");
}

KILN_DEV kiln_u32 kiln_movmatrix_trans(kiln_u32 r)
{
    kiln_u32 d;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(r));
    return d;
}

KILN_DEV kiln_u32 kiln_pack2(float lo, float hi)
{
    kiln_u32 r;
#if KILN_DTYPE == 2
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

KILN_DEV void kiln_mma16816(float d[4], const kiln_u32 a[4], const kiln_u32 b[2],
                            const float c[4])
{
#if KILN_DTYPE == 2
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}

KILN_DEV float kiln_shfl_xor(float x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
/* Lane src's x (every lane calls it). */
KILN_DEV kiln_i32 kiln_shfl_idx(kiln_i32 x, int src) { return __shfl_sync(0xffffffffu, x, src); }
KILN_DEV int kiln_warp_any(int pred) { return __any_sync(0xffffffffu, pred); }

#endif

#endif
