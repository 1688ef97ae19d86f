/* The compile-time list of backends: the only place that knows which ones a build has. */
#include "backend.h"

#ifndef KILN_WITH_CUDA
#define KILN_WITH_CUDA 0
#endif
#ifndef KILN_WITH_HIP
#define KILN_WITH_HIP 0
#endif

static const kiln_backend_iface *const registry[] = {
    &kiln_cpu_backend,
#if KILN_WITH_CUDA
    &kiln_cuda_backend,
#endif
#if KILN_WITH_HIP
    &kiln_hip_backend,
#endif
};

const kiln_backend_iface *const *kiln_backends(size_t *count)
{
    *count = sizeof registry / sizeof registry[0];
    return registry;
}
