/* AVX2 + FMA kernels, f32 compute format. */
#include "cpu.h"

const kiln_cpu_kernels *kiln_cpu_kernels_avx2(void) { return NULL; }
