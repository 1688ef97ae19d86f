/*
 * The parts of the CUDA driver API that only the CUDA side uses (loading, describing a
 * device, its context), declared here so no CUDA header or library is needed to build:
 * the driver is loaded at run time. Values are the documented ones from cuda.h (CUDA 12
 * and 13 agree on all of them). The entry points CUDA shares with HIP (modules, launches,
 * memory) and NVRTC's are named in cuda_driver.c for the shared tables of src/gpu/gpu.h.
 *
 * The entry points are listed once (X-macro) and expanded into a struct of function
 * pointers and into the table that fills it.
 */
#ifndef KILN_GPU_CUDA_API_H
#define KILN_GPU_CUDA_API_H

#include <stddef.h>

typedef int CUresult;             /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

#define KILN_CUDA_SUCCESS 0

enum {
    KILN_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    KILN_CU_ATTR_WARP_SIZE = 10,
    KILN_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    KILN_CU_ATTR_PCI_BUS_ID = 33,
    KILN_CU_ATTR_PCI_DEVICE_ID = 34,
    KILN_CU_ATTR_L2_CACHE_SIZE = 38,
    KILN_CU_ATTR_PCI_DOMAIN_ID = 50,
    KILN_CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    KILN_CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
    KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
};

enum { KILN_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };

/* cuLaunchKernelEx's configuration (CUlaunchConfig, CUlaunchAttribute: an id, padding to 8
 * bytes, a 64-byte value) and the one attribute kiln sets:
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, value an int. */
enum { KILN_CU_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };
typedef struct kiln_cu_launch_attr {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int programmatic_stream_serialization;
    } value;
} kiln_cu_launch_attr;
typedef struct kiln_cu_launch_config {
    unsigned grid[3], block[3], smem;
    CUstream stream;
    kiln_cu_launch_attr *attrs;
    unsigned num_attrs;
} kiln_cu_launch_config;

/* cuTensorMapEncodeTiled's enums (CUtensorMapDataType, ...Swizzle, ...L2promotion). */
enum {
    KILN_CU_TENSOR_MAP_FLOAT16 = 6,
    KILN_CU_TENSOR_MAP_BFLOAT16 = 9,
    KILN_CU_TENSOR_MAP_SWIZZLE_128B = 3,
    KILN_CU_TENSOR_MAP_L2_PROMOTION_256B = 3
};

/* The oldest driver kiln accepts: CUDA 12.0 (NVRTC 12 output needs it). */
#define KILN_CUDA_MIN_DRIVER 12000

/* X(return type, name, parameters, required). Versioned names (_v2) are the ones cuda.h
 * maps the plain names to; the legacy-default-stream forms are used (no _ptsz), since the
 * caller's stream is always passed explicitly. */
#define KILN_CUDA_DRIVER_SYMBOLS(X)                                                          \
    X(CUresult, cuInit, (unsigned flags), 1)                                                 \
    X(CUresult, cuDriverGetVersion, (int *version), 1)                                       \
    X(CUresult, cuGetErrorString, (CUresult err, const char **text), 1)                      \
    X(CUresult, cuGetErrorName, (CUresult err, const char **text), 1)                        \
    X(CUresult, cuDeviceGet, (CUdevice *dev, int ordinal), 1)                                \
    X(CUresult, cuDeviceGetName, (char *name, int len, CUdevice dev), 1)                     \
    X(CUresult, cuDeviceGetAttribute, (int *value, int attribute, CUdevice dev), 1)          \
    X(CUresult, cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev), 1)                       \
    X(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *ctx, CUdevice dev), 1)                 \
    X(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice dev), 1)                             \
    X(CUresult, cuCtxGetCurrent, (CUcontext *ctx), 1)                                        \
    X(CUresult, cuCtxSetCurrent, (CUcontext ctx), 1)                                         \
    X(CUresult, cuFuncSetAttribute, (CUfunction fn, int attribute, int value), 1)            \
    X(CUresult, cuTensorMapEncodeTiled,                                                      \
      (void *map, int data_type, unsigned rank, void *base, const unsigned long long *dims,  \
       const unsigned long long *strides, const unsigned *box, const unsigned *elem_strides, \
       int interleave, int swizzle, int l2_promotion, int oob_fill),                         \
      0)                                                                                     \
    X(CUresult, cuLaunchKernelEx,                                                            \
      (const kiln_cu_launch_config *config, CUfunction fn, void **params, void **extra), 0)

#define KILN_API_FIELD_(ret, name, params, required) ret(*name) params;

typedef struct kiln_cuda_api {
    KILN_CUDA_DRIVER_SYMBOLS(KILN_API_FIELD_)
} kiln_cuda_api;

#endif
