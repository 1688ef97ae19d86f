/*
 * The vendor-neutral face of a GPU driver. src/gpu/cuda/ (CUDA driver + NVRTC) and
 * src/gpu/hip/ (HIP runtime + hipRTC) each fill one kiln_gpu_driver: how to load the
 * libraries, open and describe a device, and the names of their entry points. The rest is
 * written once: src/gpu/driver.c over the entry points, src/gpu/backend_gpu.c (device
 * state, variant choice, JIT through the cache, launches) over driver.c.
 *
 * Every function that returns kiln_status sets kiln_last_error() on failure via kiln_fail().
 */
#ifndef KILN_GPU_GPU_H
#define KILN_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "error.h"
#include "kiln.h"
#include "platform/platform.h"

typedef struct kiln_gpu_driver kiln_gpu_driver;

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

/* ---- the per-vendor table --------------------------------------------------------------
 *
 * CUDA's driver API and HIP's module API agree in meaning and in C signature for
 * everything kiln does once a device is open, and so do NVRTC and hipRTC. Each vendor
 * therefore names its entry points for two shared tables (X-macros below, filled from its
 * libraries at load time), and one implementation above them (driver.c) compiles, loads
 * modules, looks up functions, launches, allocates, copies and synchronizes for both.
 * Device pointers are void * in these signatures: CUDA's CUdeviceptr is a 64-bit integer,
 * passed exactly like a pointer on the 64-bit hosts kiln supports. */

/* X(name, parameters) of the driver entry points both vendors have. */
#define KILN_GPU_ENTRIES(X)                                                                   \
    X(module_load, (void **module, const void *image))                                        \
    X(module_unload, (void *module))                                                          \
    X(module_function, (void **fn, void *module, const char *name))                           \
    X(launch, (void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,     \
               unsigned bz, unsigned smem, void *stream, void **params, void **extra))        \
    X(mem_alloc, (void **ptr, size_t bytes))                                                  \
    X(mem_free, (void *ptr))                                                                  \
    X(copy_htod, (void *dst, const void *src, size_t bytes))                                  \
    X(copy_dtoh, (void *dst, const void *src, size_t bytes))                                  \
    X(stream_sync, (void *stream))                                                            \
    X(device_count, (int *count))

/* X(name, parameters) of the runtime compiler (NVRTC, hipRTC). error_string returns text,
 * the others a status (0 = success). */
#define KILN_RTC_ENTRIES(X)                                                                   \
    X(version, (int *major, int *minor))                                                      \
    X(create, (void **prog, const char *src, const char *name, int num_headers,              \
               const char *const *headers, const char *const *include_names))                 \
    X(destroy, (void **prog))                                                                 \
    X(compile, (void *prog, int num_options, const char *const *options))                     \
    X(log_size, (void *prog, size_t *size))                                                   \
    X(log, (void *prog, char *log))                                                           \
    X(code_size, (void *prog, size_t *size))                                                  \
    X(code, (void *prog, char *code))

#define KILN_GPU_ENTRY_FIELD_(name, params) int (*name) params;
#define KILN_GPU_ENTRY_SLOT_(name, params) KILN_GPU_SLOT_##name,
typedef struct kiln_gpu_entries {
    KILN_GPU_ENTRIES(KILN_GPU_ENTRY_FIELD_)
} kiln_gpu_entries;
typedef struct kiln_rtc_entries {
    KILN_RTC_ENTRIES(KILN_GPU_ENTRY_FIELD_)
    const char *(*error_string)(int result);
} kiln_rtc_entries;
enum { KILN_GPU_ENTRIES(KILN_GPU_ENTRY_SLOT_) KILN_GPU_ENTRY_COUNT };
enum { KILN_RTC_ENTRIES(KILN_GPU_ENTRY_SLOT_) KILN_GPU_SLOT_error_string, KILN_RTC_ENTRY_COUNT };

typedef struct kiln_gpu_device kiln_gpu_device;

struct kiln_gpu_driver {
    kiln_backend kind;
    const char *name;      /* "cuda", "hip" */
    const char *compiler;  /* "nvrtc", "hiprtc" */
    const char *compiler_label; /* "NVRTC", "hipRTC" (messages) */
    const char *arch_option;    /* "--gpu-architecture=", "--offload-arch=" */
    const char *image_label;    /* "cubin", "code object" */

    /* Entry point names, in the order of KILN_GPU_ENTRIES and KILN_RTC_ENTRIES (then
     * error_string). */
    const char *const *entry_names;
    const char *const *rtc_names;
    /* The tables those names fill: api when load() succeeded, rtc when load_compiler()
     * did. */
    kiln_gpu_entries *api;
    kiln_rtc_entries *rtc;

    /* Loads the driver library once per process (thread-safe); KILN_BACKEND_UNAVAILABLE
     * naming every file looked for and the loader's text when it cannot. */
    kiln_status (*load)(void);
    /* Loads the runtime compiler once per process; same failure rules. */
    kiln_status (*load_compiler)(void);
    /* Fills *dev (ctx, handle; drv and ordinal are set) and describes the device. CUDA
     * retains the primary context, the one PyTorch uses, so pointers are shared. The
     * compiler is optional here: its fields in *info stay empty when it does not load. */
    kiln_status (*open)(kiln_gpu_device *dev, kiln_gpu_info *info);
    void (*close)(kiln_gpu_device *dev);

    /* The calling thread's current context (CUDA) or device (HIP, as ordinal + 1). */
    int (*current_get)(void **ctx);
    int (*current_set)(void *ctx);
    /* The driver's name and description of a status. */
    void (*error_text)(int result, const char **name, const char **text);
    /* Attribute number for a kernel's dynamic shared memory limit (0: no opt-in exists,
     * every kernel may use all the workgroup's memory, as on AMD). */
    int smem_optin_attribute;
    int (*func_set_attribute)(void *fn, int attribute, int value);
    /* (NVIDIA only, NULL elsewhere) Fills map (128 bytes, 64-byte aligned) with a tiled
     * tensor map over a tensor of 2-byte elements (bf16 when is_bf16, else f16) for the
     * tensor copy engine: rank dimensions innermost first, the byte strides of dimensions
     * 1.., boxes of box[] elements, 128-byte swizzling, zeros out of range.
     * KILN_UNSUPPORTED when the loaded driver lacks it; map NULL only asks whether maps can
     * be made. */
    kiln_status (*tensor_map)(void *map, int is_bf16, const void *base, int rank,
                              const uint64_t *dims, const uint64_t *strides,
                              const uint32_t *box);
    /* (NVIDIA only, NULL elsewhere) launch's arguments, queued so that the kernel may start
     * while the stream's previous kernel still runs (programmatic dependent launch): every
     * kiln kernel waits for it before touching memory (kiln_grid_wait, kernels/vendor/cuda.h).
     * Used where open() set the device's pdl. */
    int (*launch_pdl)(void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
                      void *stream, void **params);
};

/* A vendor's table from its functions, named <prefix>_load, _load_compiler, _open, _close,
 * _current_get, _current_set, _error_text, and its static entry_names, rtc_names, shared
 * and rtc. */
#define KILN_GPU_DRIVER_TABLE(prefix, kind_, name_, compiler_, label_, arch_option_, image_,    \
                              smem_attribute_, set_attribute_, tensor_map_, launch_pdl_)       \
    {                                                                                          \
        .kind = kind_, .name = name_, .compiler = compiler_, .compiler_label = label_,         \
        .arch_option = arch_option_, .image_label = image_, .entry_names = entry_names,        \
        .rtc_names = rtc_names, .api = &shared, .rtc = &rtc, .load = prefix##_load,            \
        .load_compiler = prefix##_load_compiler, .open = prefix##_open,                        \
        .close = prefix##_close, .current_get = prefix##_current_get,                          \
        .current_set = prefix##_current_set, .error_text = prefix##_error_text,                \
        .smem_optin_attribute = smem_attribute_, .func_set_attribute = set_attribute_,        \
        .tensor_map = tensor_map_, .launch_pdl = launch_pdl_,                                  \
    }

/* An open device. */
struct kiln_gpu_device {
    const kiln_gpu_driver *drv;
    void *ctx;   /* what drv->current_set makes current */
    int ordinal;
    int handle;  /* the driver's device handle (CUdevice) */
    /* Launches go through drv->launch_pdl: set by open() where the device and driver can
     * (compute capability 9.0 or newer, cuLaunchKernelEx), cleared by the backend when
     * KILN_GPU_PDL=0, and by the first launch the driver refuses with the attribute but
     * takes without it (read and cleared atomically: launches run without a lock). */
    int pdl;
};

/* ---- the shared implementation (driver.c) ------------------------------------------- */

/* Devices the driver reports (loads it first). */
kiln_status kiln_gpu_device_count(const kiln_gpu_driver *drv, int *count);
kiln_status kiln_gpu_open(const kiln_gpu_driver *drv, int ordinal, kiln_gpu_info *info,
                          kiln_gpu_device **dev);
void kiln_gpu_close(kiln_gpu_device *dev); /* NULL accepted */

/* "13.0": the loaded compiler's version (loads it first). */
kiln_status kiln_gpu_compiler_version(const kiln_gpu_driver *drv, char *buf, size_t cap);
/* Compiles source for arch (a target name, possibly with a feature suffix such as sm_90a)
 * with extra options; *image is malloc'd. KILN_COMPILE_ERROR carries the log. */
kiln_status kiln_gpu_compile(const kiln_gpu_driver *drv, const char *source,
                             const char *program_name, const char *arch,
                             const char *const *options, int num_options, void **image,
                             size_t *image_len);

/* Makes dev current on the calling thread, remembering what was; kiln_gpu_leave puts that
 * back. Every call below that needs a current device brackets itself with the two, so a
 * caller's current context (CUDA) or device (HIP) is the same after any kiln call. */
typedef struct kiln_gpu_saved {
    void *prev;
    int switched;
} kiln_gpu_saved;
kiln_status kiln_gpu_enter(kiln_gpu_device *dev, kiln_gpu_saved *saved);
void kiln_gpu_leave(kiln_gpu_device *dev, const kiln_gpu_saved *saved);

kiln_status kiln_gpu_module_load(kiln_gpu_device *dev, const void *image, size_t len,
                                 void **module);
void kiln_gpu_module_unload(kiln_gpu_device *dev, void *module);
kiln_status kiln_gpu_function(kiln_gpu_device *dev, void *module, const char *name,
                              void **fn);
/* Lets fn use up to bytes of dynamic shared memory: needed on NVIDIA above 48 KiB, a no-op
 * where the vendor has no opt-in. */
kiln_status kiln_gpu_function_smem(kiln_gpu_device *dev, void *fn, unsigned bytes);
/* Queues fn on stream (NULL = default stream); never synchronizes. The caller has entered
 * dev (kiln_gpu_enter). */
kiln_status kiln_gpu_launch(kiln_gpu_device *dev, void *fn, const unsigned grid[3],
                            const unsigned block[3], unsigned smem_bytes, void *stream,
                            void **args);
void *kiln_gpu_mem_alloc(kiln_gpu_device *dev, size_t bytes);
void kiln_gpu_mem_free(kiln_gpu_device *dev, void *ptr);
/* to_device nonzero: host src -> device dst; zero: device src -> host dst. Synchronous. */
kiln_status kiln_gpu_mem_copy(kiln_gpu_device *dev, void *dst, const void *src, size_t bytes,
                              int to_device);
kiln_status kiln_gpu_synchronize(kiln_gpu_device *dev, void *stream);

/* "<what> failed: <name> (<code>: <text>)" with the driver's words for result. */
kiln_status kiln_gpu_fail(const kiln_gpu_driver *drv, kiln_status status, int result,
                          const char *what);

/* Defined only in builds with that backend (KILN_WITH_CUDA, KILN_WITH_HIP). */
const kiln_gpu_driver *kiln_cuda_driver(void);
const kiln_gpu_driver *kiln_hip_driver(void);
/* The driver of a GPU backend, NULL when this build leaves that backend out. */
const kiln_gpu_driver *kiln_gpu_driver_for(kiln_backend kind);

/* The code object of a variant for target, from the JIT cache or compiled with drv's
 * runtime compiler (compiler_version as kiln_gpu_compiler_version gives it). *image is
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
/* Fills a table of n function pointers from lib by names[i] (every one required); same
 * result as kiln_gpu_dl_bind. */
const char *kiln_gpu_dl_bind_names(kiln_dl *lib, void *table, const char *const *names,
                                   size_t n);
/* One library's process-wide load state: filled once under once, read-only afterwards;
 * loaded unless a failure was recorded. */
typedef struct kiln_gpu_lib {
    kiln_once once;
    kiln_status status;
    char message[4096];
} kiln_gpu_lib;
/* Records why the library did not load (status KILN_BACKEND_UNAVAILABLE). */
void kiln_gpu_lib_fail(kiln_gpu_lib *lib, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(KILN_PRINTF_FORMAT, 2, 3)))
#endif
    ;
/* How one library is found and bound (kiln_gpu_lib_open). */
typedef struct kiln_gpu_lib_spec {
    const char *what;         /* "the CUDA driver", for messages */
    const char *override_var; /* "KILN_CUDA_DRIVER_PATH": when set, only its value is tried */
    const char *advice;       /* what to do when no file loads */
    const char *too_old;      /* why a missing symbol matters ("" when nothing to add) */
    void *table;              /* the vendor's own symbols (NULL: none) */
    const kiln_gpu_symbol *symbols;
    size_t num_symbols;
    void *entries;            /* a shared table (kiln_gpu_entries, kiln_rtc_entries) */
    const char *const *entry_names;
    size_t num_entries;
} kiln_gpu_lib_spec;
/* Candidate files for kiln_gpu_lib_open, formatted in place; names past the room are
 * dropped. */
typedef struct kiln_gpu_names {
    char text[24][600];
    const char *list[24];
    int n;
} kiln_gpu_names;
void kiln_gpu_names_add(kiln_gpu_names *names, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(KILN_PRINTF_FORMAT, 2, 3)))
#endif
    ;
/* Opens the first of names[] that loads and fills both tables from it. On failure records
 * in lib "<what> could not be loaded; looked for: <files and loader text>. <advice>" or
 * "<what> <path> lacks <symbol>: <too_old>" and returns NULL. */
kiln_dl *kiln_gpu_lib_open(kiln_gpu_lib *lib, const kiln_gpu_lib_spec *spec,
                           const char *const *names, int n);
/* Records "<call> failed in <path>: <driver's words>" for a failed first call (cuInit). */
void kiln_gpu_lib_fail_call(kiln_gpu_lib *lib, const kiln_gpu_driver *drv, int result,
                            const char *call, kiln_dl *dl);

/* Runs load once per process, then: KILN_OK when it recorded no failure, else that failure
 * with its message. */
kiln_status kiln_gpu_lib_ready(kiln_gpu_lib *lib, void (*load)(void));

/* 1 when running on Windows (library names differ). */
int kiln_gpu_is_windows(void);

/* Sets info->compute_units from the CUs the driver reported (already converted from WGPs
 * where needed) after the CU_NUM override; fails on a malformed CU_NUM. */
kiln_status kiln_gpu_set_cus(kiln_gpu_info *info, int64_t cus, const char *source);

#endif
