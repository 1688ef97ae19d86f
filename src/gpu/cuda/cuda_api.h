/*
 * The parts of the CUDA driver API and NVRTC that kiln uses, declared here so no CUDA
 * header or library is needed to build: both libraries are loaded at run time. Values are
 * the documented ones from cuda.h / nvrtc.h (CUDA 12 and 13 agree on all of them).
 *
 * Each library's entry points are listed once (X-macro) and expanded into a struct of
 * function pointers and into the table that fills it.
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
    X(CUresult, cuDeviceGetCount, (int *count), 1)                                           \
    X(CUresult, cuDeviceGet, (CUdevice *dev, int ordinal), 1)                                \
    X(CUresult, cuDeviceGetName, (char *name, int len, CUdevice dev), 1)                     \
    X(CUresult, cuDeviceGetAttribute, (int *value, int attribute, CUdevice dev), 1)          \
    X(CUresult, cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev), 1)                       \
    X(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *ctx, CUdevice dev), 1)                 \
    X(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice dev), 1)                             \
    X(CUresult, cuCtxGetCurrent, (CUcontext *ctx), 1)                                        \
    X(CUresult, cuCtxSetCurrent, (CUcontext ctx), 1)                                         \
    X(CUresult, cuCtxSynchronize, (void), 1)                                                 \
    X(CUresult, cuModuleLoadData, (CUmodule *mod, const void *image), 1)                     \
    X(CUresult, cuModuleUnload, (CUmodule mod), 1)                                           \
    X(CUresult, cuModuleGetFunction, (CUfunction *fn, CUmodule mod, const char *name), 1)   \
    X(CUresult, cuFuncSetAttribute, (CUfunction fn, int attribute, int value), 1)            \
    X(CUresult, cuLaunchKernel,                                                              \
      (CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,       \
       unsigned bz, unsigned smem, CUstream stream, void **params, void **extra),            \
      1)                                                                                     \
    X(CUresult, cuMemAlloc_v2, (CUdeviceptr *ptr, size_t bytes), 1)                          \
    X(CUresult, cuMemFree_v2, (CUdeviceptr ptr), 1)                                          \
    X(CUresult, cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t bytes), 1)        \
    X(CUresult, cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t bytes), 1)              \
    X(CUresult, cuStreamSynchronize, (CUstream stream), 1)                                \
    X(CUresult, cuTensorMapEncodeTiled,                                                      \
      (void *map, int data_type, unsigned rank, void *base, const unsigned long long *dims,  \
       const unsigned long long *strides, const unsigned *box, const unsigned *elem_strides, \
       int interleave, int swizzle, int l2_promotion, int oob_fill),                         \
      0)

typedef int nvrtcResult; /* NVRTC_SUCCESS = 0, NVRTC_ERROR_COMPILATION = 6 */
typedef struct _nvrtcProgram *nvrtcProgram;

#define KILN_NVRTC_SYMBOLS(X)                                                                \
    X(nvrtcResult, nvrtcVersion, (int *major, int *minor), 1)                                \
    X(const char *, nvrtcGetErrorString, (nvrtcResult result), 1)                            \
    X(nvrtcResult, nvrtcCreateProgram,                                                       \
      (nvrtcProgram * prog, const char *src, const char *name, int num_headers,             \
       const char *const *headers, const char *const *include_names),                        \
      1)                                                                                     \
    X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * prog), 1)                            \
    X(nvrtcResult, nvrtcCompileProgram,                                                      \
      (nvrtcProgram prog, int num_options, const char *const *options), 1)                   \
    X(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *size), 1)             \
    X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log), 1)                    \
    X(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t *size), 1)                  \
    X(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char *cubin), 1)

#define KILN_API_FIELD_(ret, name, params, required) ret(*name) params;

typedef struct kiln_cuda_api {
    KILN_CUDA_DRIVER_SYMBOLS(KILN_API_FIELD_)
} kiln_cuda_api;

typedef struct kiln_nvrtc_api {
    KILN_NVRTC_SYMBOLS(KILN_API_FIELD_)
} kiln_nvrtc_api;

#endif
