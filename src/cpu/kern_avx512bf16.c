/* AVX-512 BF16 kernels: bf16 inputs, S = Q K^T and O += P V on vdpbf16ps. */
#include "cpu.h"

const kiln_cpu_kernels *kiln_cpu_kernels_avx512bf16(void) { return NULL; }
