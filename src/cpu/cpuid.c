/* Run-time SIMD detection: CPUID for what the CPU has, XGETBV for what the OS saves on a
 * context switch (AVX state, and opmask + upper ZMM state for AVX-512). */
#include <string.h>

#include "cpu.h"

#if defined(_MSC_VER) && !defined(__clang__) && (defined(_M_X64) || defined(_M_IX86))
#include <intrin.h>
#include <immintrin.h>
#define KILN_X86 1
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    for (int i = 0; i < 4; i++) r[i] = (unsigned)v[i];
}
static unsigned long long xgetbv0(void) { return _xgetbv(0); }
#elif (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#define KILN_X86 1
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    r[0] = r[1] = r[2] = r[3] = 0;
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
/* Inline asm rather than _xgetbv(), which GCC only offers under -mxsave. */
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

kiln_cpu_level kiln_cpu_detect_level(void) {
#ifdef KILN_X86
    unsigned r[4];
    cpuid(0, 0, r);
    unsigned max_leaf = r[0];
    if (max_leaf < 7) return KILN_CPU_SCALAR;
    cpuid(1, 0, r);
    int osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1, fma = (r[2] >> 12) & 1;
    int f16c = (r[2] >> 29) & 1;
    if (!osxsave || !avx) return KILN_CPU_SCALAR;
    unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return KILN_CPU_SCALAR;
    cpuid(7, 0, r);
    int avx2 = (r[1] >> 5) & 1;
    int avx512f = (r[1] >> 16) & 1, avx512dq = (r[1] >> 17) & 1;
    int avx512bw = (r[1] >> 30) & 1, avx512vl = (r[1] >> 31) & 1;
    unsigned max_sub = r[0];
    if (!(avx2 && fma && f16c)) return KILN_CPU_SCALAR;
    if (!(avx512f && avx512dq && avx512bw && avx512vl) || (xcr0 & 0xe6) != 0xe6)
        return KILN_CPU_AVX2;
    if (max_sub >= 1) {
        cpuid(7, 1, r);
        if ((r[0] >> 5) & 1) return KILN_CPU_AVX512BF16;
    }
    return KILN_CPU_AVX512;
#else
    return KILN_CPU_SCALAR;
#endif
}

int kiln_cpu_bf16_dot_is_fast(void) {
#ifdef KILN_X86
    unsigned r[4];
    cpuid(0, 0, r);
    char vendor[13];
    memcpy(vendor, &r[1], 4);
    memcpy(vendor + 4, &r[3], 4);
    memcpy(vendor + 8, &r[2], 4);
    vendor[12] = '\0';
    return strcmp(vendor, "AuthenticAMD") == 0;
#else
    return 0;
#endif
}

const char *kiln_cpu_level_name(kiln_cpu_level level) {
    switch (level) {
    case KILN_CPU_AVX2: return "avx2";
    case KILN_CPU_AVX512: return "avx512";
    case KILN_CPU_AVX512BF16: return "avx512bf16";
    default: return "scalar";
    }
}

void kiln_cpu_model_name(char *buf, size_t cap) {
    if (cap == 0) return;
    buf[0] = '\0';
#ifdef KILN_X86
    unsigned r[4];
    cpuid(0x80000000u, 0, r);
    if (r[0] < 0x80000004u) return;
    char name[49];
    for (unsigned i = 0; i < 3; i++) {
        cpuid(0x80000002u + i, 0, r);
        memcpy(name + 16 * i, r, 16);
    }
    name[48] = '\0';
    const char *s = name;
    while (*s == ' ') s++;
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == ' ') n--;
    if (n >= cap) n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
#endif
}

const kiln_cpu_kernels *kiln_cpu_kernels_for(kiln_cpu_level level, kiln_dtype dt) {
    const kiln_cpu_kernels *k = NULL;
    if (level >= KILN_CPU_AVX512BF16 && dt == KILN_BF16) k = kiln_cpu_kernels_avx512bf16();
    if (!k && level >= KILN_CPU_AVX512) k = kiln_cpu_kernels_avx512();
    if (!k && level >= KILN_CPU_AVX2) k = kiln_cpu_kernels_avx2();
    if (!k) k = kiln_cpu_kernels_scalar();
    return k;
}
