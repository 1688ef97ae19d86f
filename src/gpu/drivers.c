/* Which GPU drivers this build holds (CMake's KILN_WITH_CUDA / KILN_WITH_HIP). */
#include "gpu.h"

const kiln_gpu_driver *kiln_gpu_driver_for(kiln_backend kind)
{
#if KILN_WITH_CUDA
    if (kind == KILN_BACKEND_CUDA) return kiln_cuda_driver();
#endif
#if KILN_WITH_HIP
    if (kind == KILN_BACKEND_HIP) return kiln_hip_driver();
#endif
    (void)kind;
    return NULL;
}
