/*
 * The parts of the HIP runtime that only the HIP side uses (loading, describing a device,
 * choosing it), declared here so no ROCm header or library is needed to build: the runtime
 * and hipRTC are loaded at run time; the entry points HIP shares with CUDA and hipRTC's are
 * named in hip_driver.c for the shared tables of src/gpu/gpu.h. Values and the layout of
 * hipDeviceProp_tR0600 follow ROCm 6.0+ hip_runtime_api.h (the R0600 ABI, kept by ROCm 7).
 * ROCm 5 exports only the older property layout, so kiln requires HIP 6.0 or newer.
 *
 * Each library's entry points are listed once (X-macro) and expanded into a struct of
 * function pointers and into the table that fills it.
 */
#ifndef KILN_GPU_HIP_API_H
#define KILN_GPU_HIP_API_H

#include <stddef.h>

typedef int hipError_t; /* hipSuccess = 0 */
typedef void *hipDeviceptr_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;

#define KILN_HIP_SUCCESS 0
#define KILN_HIP_MIN_VERSION 60000000 /* HIP_VERSION encoding: major * 1e7 + minor * 1e5 */

/* hipDeviceProp_tR0600 as laid out by the runtime; only the leading fields kiln reads are
 * named individually, the rest keep their types so every offset matches. */
typedef struct kiln_hip_device_prop {
    char name[256];
    char uuid[16];
    char luid[8];
    unsigned luid_node_mask;
    size_t total_global_mem;
    size_t shared_mem_per_block;
    int regs_per_block;
    int warp_size;
    size_t mem_pitch;
    int max_threads_per_block;
    int max_threads_dim[3];
    int max_grid_size[3];
    int clock_rate;
    size_t total_const_mem;
    int major, minor;
    size_t texture_alignment, texture_pitch_alignment;
    int device_overlap;
    int multi_processor_count;
    /* kernelExecTimeoutEnabled .. maxSurfaceCubemapLayered[2]: 44 ints */
    int ints_a[4 + 3 + 2 + 2 + 3 + 2 + 3 + 3 + 1 + 2 + 3 + 2 + 1 + 2 + 3 + 2 + 3 + 1 + 2];
    size_t surface_alignment;
    int concurrent_kernels, ecc_enabled;
    int pci_bus_id, pci_device_id, pci_domain_id;
    int tcc_driver, async_engine_count, unified_addressing, memory_clock_rate,
        memory_bus_width;
    int l2_cache_size;
    int ints_b[5]; /* persistingL2CacheMaxSize .. localL1CacheSupported */
    size_t shared_mem_per_multiprocessor;
    int ints_c[12]; /* regsPerMultiprocessor .. cooperativeMultiDeviceLaunch */
    size_t shared_mem_per_block_optin;
    int ints_d[4]; /* pageableMemoryAccessUsesHostPageTables .. accessPolicyMaxWindowSize */
    size_t reserved_shared_mem_per_block;
    int ints_e[6]; /* hostRegisterSupported .. gpuDirectRDMASupported */
    unsigned gpu_direct_rdma_flush_writes_options;
    int gpu_direct_rdma_writes_ordering;
    unsigned memory_pool_supported_handle_types;
    int ints_f[4]; /* deferredMappingHipArraySupported .. unifiedFunctionPointers */
    int reserved[63];
    int hip_reserved[32];
    char gcn_arch_name[256];
    size_t max_shared_memory_per_multiprocessor;
} kiln_hip_device_prop;

/* X(return type, name, parameters, required) */
#define KILN_HIP_RUNTIME_SYMBOLS(X)                                                          \
    X(hipError_t, hipInit, (unsigned flags), 1)                                              \
    X(hipError_t, hipDriverGetVersion, (int *version), 1)                                    \
    X(hipError_t, hipRuntimeGetVersion, (int *version), 1)                                   \
    X(const char *, hipGetErrorName, (hipError_t err), 1)                                    \
    X(const char *, hipGetErrorString, (hipError_t err), 1)                                  \
    X(hipError_t, hipGetDevicePropertiesR0600, (kiln_hip_device_prop * prop, int device), 1) \
    X(hipError_t, hipSetDevice, (int device), 1)                                             \
    X(hipError_t, hipGetDevice, (int *device), 1)

#define KILN_HIP_API_FIELD_(ret, name, params, required) ret(*name) params;

typedef struct kiln_hip_api {
    KILN_HIP_RUNTIME_SYMBOLS(KILN_HIP_API_FIELD_)
} kiln_hip_api;

#endif
