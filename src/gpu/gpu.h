/*
 * The vendor-neutral face of a GPU driver. src/gpu/cuda/ (CUDA driver + NVRTC) and
 * src/gpu/hip/ (HIP runtime + hipRTC) each fill one kiln_gpu_driver; the backend logic in
 * src/gpu/backend_gpu.c (device state, variant choice, JIT through the cache, launches) is
 * written once against it.
 *
 * Every function that returns kiln_status sets kiln_last_error() on failure via kiln_fail().
 */
#ifndef KILN_GPU_GPU_H
#define KILN_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "kiln.h"

/* What the driver says about one device, for dispatch and for kiln_info_json(). */
typedef struct kiln_gpu_info {
    kiln_backend kind;
    int ordinal;
    char name[256];           /* "NVIDIA H200", "AMD Radeon 8060S" */
    char target[32];          /* sm_90, gfx1151: what code objects are built for */
    char arch_reported[96];   /* as the driver reported it (gcnArchName with features) */
    int cc_major, cc_minor;   /* NVIDIA compute capability; AMD: the runtime's major/minor */
    /* Always compute units (SMs on NVIDIA). compute_units_reported is the driver's own
     * figure; cu_source says where compute_units came from ("device", "device WGPs x 2",
     * "CU_NUM"). */
    int compute_units;
    int compute_units_reported;
    const char *cu_source;
    int wave_size;
    int max_threads_per_block;
    int64_t smem_per_block;       /* without opt-in */
    int64_t smem_per_block_optin; /* the most a kernel may ask for after opting in */
    int64_t smem_per_cu;
    int64_t l2_bytes;
    int64_t total_mem;
    int driver_version;           /* the driver's integer (CUDA: 13000; HIP: 60443483) */
    char driver_version_str[32];  /* "13.0", "6.4.43483" */
    int runtime_version;          /* HIP runtime version (0 on CUDA) */
    char driver_path[512];        /* file the driver library came from */
    char compiler[16];            /* "nvrtc", "hiprtc" */
    char compiler_version[32];    /* "13.0"; "" when the compiler is not loaded */
    char compiler_path[512];
    char compiler_error[512];     /* why the compiler did not load, else "" */
    char pci_bus_id[32];          /* "0000:19:00.0" */
} kiln_gpu_info;

typedef struct kiln_gpu_driver {
    kiln_backend kind;
    const char *name;     /* "cuda", "hip" */
    const char *compiler; /* "nvrtc", "hiprtc" */

    /* Loads the driver library once per process (thread-safe); KILN_BACKEND_UNAVAILABLE
     * naming every file looked for and the loader's text when it cannot. */
    kiln_status (*load)(void);
    /* Loads the runtime compiler once per process; same failure rules. */
    kiln_status (*load_compiler)(void);
    /* "13.0": the loaded compiler's version (loads it first). */
    kiln_status (*compiler_version)(char *buf, size_t cap);
    kiln_status (*device_count)(int *count);

    /* Opens device ordinal (CUDA: retains the primary context, the one PyTorch uses, so
     * pointers are shared) and describes it. The compiler is optional at this point: its
     * fields in *info stay empty when it does not load. */
    kiln_status (*open)(int ordinal, kiln_gpu_info *info, void **dev);
    void (*close)(void *dev);
    /* Makes dev current on the calling thread (cheap when it already is). */
    kiln_status (*make_current)(void *dev);

    /* Compiles source for arch (a target name, possibly with a feature suffix such as
     * sm_90a) with extra options; *image is malloc'd. KILN_COMPILE_ERROR carries the log. */
    kiln_status (*compile)(const char *source, const char *program_name, const char *arch,
                           const char *const *options, int num_options, void **image,
                           size_t *image_len);

    kiln_status (*module_load)(void *dev, const void *image, size_t len, void **module);
    void (*module_unload)(void *dev, void *module);
    kiln_status (*function)(void *module, const char *name, void **fn);
    /* Lets fn use up to bytes of dynamic shared memory (opt-in above the default). */
    kiln_status (*function_set_smem)(void *fn, int bytes);

    /* Queues fn on stream (NULL = default stream); never synchronizes. */
    kiln_status (*launch)(void *fn, const unsigned grid[3], const unsigned block[3],
                          unsigned smem_bytes, void *stream, void **args);

    /* Fills map (128 bytes, 64-byte aligned) with a tiled tensor map over a tensor of
     * 2-byte elements (bf16 when is_bf16, else f16) for the tensor copy engine: rank
     * dimensions innermost first, the byte strides of dimensions 1.., boxes of box[]
     * elements, 128-byte swizzling, zeros out of range. NULL where the driver has none
     * (HIP); KILN_UNSUPPORTED when the loaded driver lacks it. */
    kiln_status (*tensor_map)(void *map, int is_bf16, const void *base, int rank,
                              const uint64_t *dims, const uint64_t *strides,
                              const uint32_t *box);

    void *(*mem_alloc)(void *dev, size_t bytes);
    void (*mem_free)(void *dev, void *ptr);
    kiln_status (*mem_copy)(void *dev, void *dst, const void *src, size_t bytes,
                            int to_device);
    kiln_status (*synchronize)(void *dev, void *stream);
} kiln_gpu_driver;

const kiln_gpu_driver *kiln_cuda_driver(void);
const kiln_gpu_driver *kiln_hip_driver(void);

/* Number of devices the backend's driver reports, 0 when the driver does not load or has
 * none (kiln_last_error() then says why). With target non-NULL, device 0's target name is
 * written there. Used by backend choice (src/core/backend_choice.h) and kiln info. */
int kiln_gpu_probe(kiln_backend kind, char *target, size_t cap);

/* The code object of a variant for target, from the JIT cache or compiled with drv's
 * runtime compiler (compiler_version as drv->compiler_version gives it). *image is
 * malloc'd. No device is needed. Implemented in backend_gpu.c. */
struct kiln_gpu_variant;
kiln_status kiln_gpu_variant_image(const kiln_gpu_driver *drv, const char *target,
                                   const char *compiler_version,
                                   const struct kiln_gpu_variant *v, void **image,
                                   size_t *len, kiln_cache_origin *origin);

/* ---- shared helpers for the two drivers (gpu_load.c) ------------------------------- */

typedef struct kiln_dl kiln_dl;

/* One entry of a driver's symbol list: where in its table of pointers the symbol goes. */
typedef struct kiln_gpu_symbol {
    const char *name;
    size_t offset;
    int required;
} kiln_gpu_symbol;

/* Opens the first library of names[] that loads. When override_var is set in the
 * environment only its value is tried. On failure *lib is NULL and tried holds every file
 * looked for with the loader's text ("libcuda.so.1 (libcuda.so.1: cannot open ...)"). */
kiln_dl *kiln_gpu_dl_open_first(const char *override_var, const char *const *names, int n,
                                char *tried, size_t cap);
/* Fills the table from lib. Returns NULL when all required symbols resolved, else the name
 * of the first missing one. */
const char *kiln_gpu_dl_bind(kiln_dl *lib, void *table, const kiln_gpu_symbol *symbols,
                             size_t n);
/* 1 when running on Windows (library names differ). */
int kiln_gpu_is_windows(void);

/* Sets info->compute_units from the CUs the driver reported (already converted from WGPs
 * where needed) after the CU_NUM override; fails on a malformed CU_NUM. */
kiln_status kiln_gpu_set_cus(kiln_gpu_info *info, int64_t cus, const char *source);

#endif
