/*
 * The CPU emulation of kernels/wmma.h's instructions (included there through
 * KILN_HOST_AMD_MATRIX_H): each lane of the wave publishes its registers and computes its own
 * result elements from the whole wave's, every matrix element looked up where the ISA puts
 * it. The layouts are transcribed here on their own, not taken from the kernel's helpers, so
 * a kernel that fills or reads a fragment in the wrong order computes wrong numbers:
 *
 *   v_wmma_f32_16x16x16_{f16,bf16}, gfx11 (wave32): "RDNA3" Instruction Set Architecture
 *     Reference Guide, section 7.9 "Wave Matrix Multiply Accumulate", and AMD GPUOpen's
 *     "How to accelerate AI applications on RDNA 3 using WMMA": A[m][k] is element k of lane
 *     m, B[k][n] element k of lane n, both repeated in lanes 16-31 (the emulation checks
 *     the copies agree: a kernel that leaves the upper half-wave different gets NaN);
 *     D[m][n] is element m / 2 of lane n + 16 (m % 2).
 *   the same instructions on gfx12 (wave32): "RDNA4" Instruction Set Architecture Reference
 *     Guide, WMMA matrix layouts: A[m][k] is element k % 8 of lane m + 16 (k / 8), B[k][n]
 *     element k % 8 of lane n + 16 (k / 8); D[m][n] element m % 8 of lane n + 16 (m / 8).
 *   v_mfma_f32_16x16x16_{f16,bf16} (CDNA3, wave64): "AMD Instinct MI300" ISA Reference
 *     Guide, "Matrix Arithmetic Instructions", and AMD's matrix instruction calculator
 *     (`--detail-instruction --register-layout` for the instruction): A[i][k] is item
 *     k % 4 of lane i + 16 (k / 4), B[k][j] item k % 4 of lane j + 16 (k / 4); D[i][j] item
 *     i % 4 of lane j + 16 (i / 4).
 * Products are exact in fp32 and summed in fp32, as the hardware accumulates.
 */
#ifndef KILN_TESTS_HOST_AMD_MATRIX_H
#define KILN_TESTS_HOST_AMD_MATRIX_H

#define KILN_WM_ALIGN16 _Alignas(16)
#define kiln_wm_grid_x() kiln_host_grid[0]

typedef unsigned short kiln_wm_ab __attribute__((vector_size(KILN_WM_AB_N * 2)));
typedef float kiln_wm_c __attribute__((vector_size(KILN_WM_C_N * 4)));
typedef unsigned short kiln_wm_u16x8 __attribute__((vector_size(16)));

KILN_DEV float kiln_wm_exp2f(float x) { return exp2f(x); }

KILN_DEV kiln_wm_u16x8 kiln_wm_load8(const kiln_elem *p)
{
    kiln_wm_u16x8 x;
    memcpy(&x, p, sizeof x);
    return x;
}
KILN_DEV void kiln_wm_store8(kiln_elem *p, kiln_wm_u16x8 x) { memcpy(p, &x, sizeof x); }

KILN_DEV kiln_u32 kiln_wm_shfl_xor(kiln_u32 x, kiln_i32 m)
{
    kiln_u32 all[KILN_WM_WAVE];
    kiln_host_wave_exchange(&x, all, sizeof x, KILN_WM_WAVE);
    return all[(kiln_thread_x() % KILN_WM_WAVE) ^ m];
}

/* Where the ISA keeps A[mn][k] (and B[k][mn]): lane and element. */
static inline void kiln_isa_ab_at(int mn, int k, int *lane, int *e)
{
#if KILN_WM_FAMILY == KILN_WM_GFX11
    *lane = mn;
    *e = k;
#elif KILN_WM_FAMILY == KILN_WM_GFX12
    *lane = mn + 16 * (k / 8);
    *e = k % 8;
#else
    *lane = mn + 16 * (k / 4);
    *e = k % 4;
#endif
}

/* Where the ISA keeps C[m][n] and D[m][n]. */
static inline void kiln_isa_c_at(int m, int n, int *lane, int *e)
{
#if KILN_WM_FAMILY == KILN_WM_GFX11
    *lane = n + 16 * (m % 2);
    *e = m / 2;
#elif KILN_WM_FAMILY == KILN_WM_GFX12
    *lane = n + 16 * (m / 8);
    *e = m % 8;
#else
    *lane = n + 16 * (m / 4);
    *e = m % 4;
#endif
}

typedef struct kiln_wm_lane {
    kiln_u16 a[KILN_WM_AB_N], b[KILN_WM_AB_N];
} kiln_wm_lane;

/* Element e of lane l's A (which 0) or B (which 1); on gfx11 NaN unless the upper
 * half-wave repeats the lower one, as the instruction requires. */
static inline float kiln_isa_operand(const kiln_wm_lane *all, int which, int l, int e)
{
    const kiln_u16 x = which ? all[l].b[e] : all[l].a[e];
#if KILN_WM_FAMILY == KILN_WM_GFX11
    if ((which ? all[l + 16].b[e] : all[l + 16].a[e]) != x) return nanf("");
#endif
    return kiln_elem_to_f32(x);
}

KILN_DEV kiln_wm_c kiln_wm_mma(kiln_wm_ab a, kiln_wm_ab b, kiln_wm_c c)
{
    kiln_wm_lane mine, all[KILN_WM_WAVE];
    const int lane = kiln_thread_x() % KILN_WM_WAVE;
    kiln_wm_c d = c;
    for (int e = 0; e < KILN_WM_AB_N; ++e) {
        mine.a[e] = a[e];
        mine.b[e] = b[e];
    }
    kiln_host_wave_exchange(&mine, all, sizeof mine, KILN_WM_WAVE);
    for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 16; ++n) {
            int l, e;
            float acc;
            kiln_isa_c_at(m, n, &l, &e);
            if (l != lane) continue;
            acc = c[e];
            for (int k = 0; k < 16; ++k) {
                int la, ea, lb, eb;
                kiln_isa_ab_at(m, k, &la, &ea);
                kiln_isa_ab_at(n, k, &lb, &eb);
                acc += kiln_isa_operand(all, 0, la, ea) * kiln_isa_operand(all, 1, lb, eb);
            }
            d[e] = acc;
        }
    return d;
}

#endif
