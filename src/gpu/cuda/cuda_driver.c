/* The CUDA driver and NVRTC behind kiln_gpu_driver, both loaded at run time. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "error.h"
#include "gpu/gpu.h"
#include "platform/platform.h"

#define KILN_CUDA_ENTRY_(ret, name, params, required)                                          \
    {#name, offsetof(kiln_cuda_api, name), required},

static const kiln_gpu_symbol cuda_symbols[] = {KILN_CUDA_DRIVER_SYMBOLS(KILN_CUDA_ENTRY_)};

/* The shared tables' entry points, in the order of KILN_GPU_ENTRIES / KILN_RTC_ENTRIES.
 * Versioned names (_v2) are the ones cuda.h maps the plain names to; the
 * legacy-default-stream forms (no _ptsz) do, since the caller's stream is always passed. */
static const char *const entry_names[KILN_GPU_ENTRY_COUNT] = {
    "cuModuleLoadData", "cuModuleUnload",  "cuModuleGetFunction", "cuLaunchKernel",
    "cuMemAlloc_v2",    "cuMemFree_v2",    "cuMemcpyHtoD_v2",     "cuMemcpyDtoH_v2",
    "cuStreamSynchronize", "cuDeviceGetCount"};
static const char *const rtc_names[KILN_RTC_ENTRY_COUNT] = {
    "nvrtcVersion",       "nvrtcCreateProgram", "nvrtcDestroyProgram", "nvrtcCompileProgram",
    "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
    "nvrtcGetErrorString"};

/* Process-wide load state: filled once under kiln_once, read-only afterwards. */
static kiln_gpu_lib cu_state = {.once = KILN_ONCE_INIT}, nvrtc_state = {.once = KILN_ONCE_INIT};
static kiln_cuda_api cu;
static kiln_gpu_entries shared;
static kiln_rtc_entries rtc;
static kiln_dl *cu_lib, *rtc_lib;
static int cu_driver_version, rtc_major, rtc_minor;

static const char *cu_error_text(CUresult r)
{
    const char *name = NULL;
    if (!cu.cuGetErrorName || cu.cuGetErrorName(r, &name) != KILN_CUDA_SUCCESS || !name)
        return "unknown CUDA error";
    return name;
}

static void cuda_error_text(int r, const char **name, const char **text)
{
    *name = cu_error_text(r);
    *text = NULL;
    if (cu.cuGetErrorString) cu.cuGetErrorString(r, text);
}

static const kiln_gpu_driver cuda_driver;

static void load_driver(void)
{
    static const char *const linux_names[] = {"libcuda.so.1", "libcuda.so"};
    static const char *const windows_names[] = {"nvcuda.dll"};
    static const kiln_gpu_lib_spec spec = {
        "the CUDA driver", "KILN_CUDA_DRIVER_PATH",
        "Install the NVIDIA driver or set KILN_CUDA_DRIVER_PATH to the driver library",
        "it is older than CUDA 12.0, which kiln needs", &cu, cuda_symbols,
        sizeof cuda_symbols / sizeof cuda_symbols[0], &shared, entry_names, KILN_GPU_ENTRY_COUNT};
    int windows = kiln_gpu_is_windows();
    char path[512] = "";

    cu_lib = kiln_gpu_lib_open(&cu_state, &spec, windows ? windows_names : linux_names,
                               windows ? 1 : 2);
    if (!cu_lib) return;
    kiln_dl_path(cu_lib, path, sizeof path);
    CUresult r = cu.cuInit(0);
    if (r != KILN_CUDA_SUCCESS) {
        kiln_gpu_lib_fail_call(&cu_state, &cuda_driver, r, "cuInit", cu_lib);
        return;
    }
    cu.cuDriverGetVersion(&cu_driver_version);
    if (cu_driver_version < KILN_CUDA_MIN_DRIVER) {
        kiln_gpu_lib_fail(&cu_state,
                          "the CUDA driver %s supports CUDA %d.%d; kiln needs %d.%d or newer", path,
                          cu_driver_version / 1000, cu_driver_version % 1000 / 10,
                          KILN_CUDA_MIN_DRIVER / 1000, KILN_CUDA_MIN_DRIVER % 1000 / 10);
        return;
    }
}

static kiln_status cuda_load(void) { return kiln_gpu_lib_ready(&cu_state, load_driver); }

/* NVRTC of a newer major than the driver emits code the driver cannot load, so only
 * majors up to the driver's are tried, newest first. */
static void load_nvrtc(void)
{
    kiln_gpu_names names = {.n = 0};
    char cuda_path[400] = "";
    int windows = kiln_gpu_is_windows();
    int driver_major = cu_state.status == KILN_OK ? cu_driver_version / 1000 : 0;
    static const int majors[] = {13, 12};
    int have_cuda_path = kiln_env_get("CUDA_PATH", cuda_path, sizeof cuda_path) && cuda_path[0];

    for (int pass = 0; pass < 3; pass++) {
        for (int m = 0; m < 2; m++) {
            int major = majors[m];
            if (driver_major && major > driver_major) continue;
            if (windows) {
                if (pass == 0)
                    kiln_gpu_names_add(&names, "nvrtc64_%d0_0.dll", major);
                else if (pass == 1 && have_cuda_path)
                    kiln_gpu_names_add(&names, "%s\\bin\\x64\\nvrtc64_%d0_0.dll", cuda_path, major);
                else if (pass == 2 && have_cuda_path)
                    kiln_gpu_names_add(&names, "%s\\bin\\nvrtc64_%d0_0.dll", cuda_path, major);
            } else {
                if (pass == 0)
                    kiln_gpu_names_add(&names, "libnvrtc.so.%d", major);
                else if (pass == 1 && have_cuda_path)
                    kiln_gpu_names_add(&names, "%s/lib64/libnvrtc.so.%d", cuda_path, major);
                else if (pass == 2)
                    kiln_gpu_names_add(&names, "/usr/local/cuda/lib64/libnvrtc.so.%d", major);
            }
        }
    }

    static const kiln_gpu_lib_spec spec = {
        "NVRTC (the CUDA run-time compiler)", "KILN_NVRTC_PATH",
        "Install the CUDA toolkit's NVRTC or set KILN_NVRTC_PATH",
        "it is older than CUDA 12.0, which kiln needs", NULL, NULL, 0, &rtc, rtc_names,
        KILN_RTC_ENTRY_COUNT};
    rtc_lib = kiln_gpu_lib_open(&nvrtc_state, &spec, names.list, names.n);
    if (!rtc_lib) return;
    rtc.version(&rtc_major, &rtc_minor);
    if (rtc_major < 12) {
        kiln_gpu_lib_fail(&nvrtc_state, "NVRTC %d.%d is too old; kiln needs 12.0+",
                 rtc_major, rtc_minor);
        return;
    }
}

static kiln_status cuda_load_compiler(void)
{
    /* The driver's version decides which NVRTC fits, so it loads first when it can. */
    kiln_once_run(&cu_state.once, load_driver);
    return kiln_gpu_lib_ready(&nvrtc_state, load_nvrtc);
}

static int attr(CUdevice dev, int which)
{
    int v = 0;
    if (cu.cuDeviceGetAttribute(&v, which, dev) != KILN_CUDA_SUCCESS) return 0;
    return v;
}

static kiln_status cuda_open(kiln_gpu_device *d, kiln_gpu_info *info)
{
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    CUresult r = cu.cuDeviceGet(&dev, d->ordinal);
    if (r == KILN_CUDA_SUCCESS) r = cu.cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r != KILN_CUDA_SUCCESS)
        return kiln_gpu_fail(&cuda_driver, KILN_BACKEND_UNAVAILABLE, r, "opening the CUDA device");
    d->handle = dev;
    d->ctx = ctx;

    cu.cuDeviceGetName(info->name, (int)sizeof info->name - 1, dev);
    info->cc_major = attr(dev, KILN_CU_ATTR_COMPUTE_CAPABILITY_MAJOR);
    info->cc_minor = attr(dev, KILN_CU_ATTR_COMPUTE_CAPABILITY_MINOR);
    snprintf(info->target, sizeof info->target, "sm_%d%d", info->cc_major, info->cc_minor);
    snprintf(info->arch_reported, sizeof info->arch_reported, "compute capability %d.%d",
             info->cc_major, info->cc_minor);
    info->compute_units_reported = attr(dev, KILN_CU_ATTR_MULTIPROCESSOR_COUNT);
    kiln_status st = kiln_gpu_set_cus(info, info->compute_units_reported, "device");
    if (st != KILN_OK) {
        cu.cuDevicePrimaryCtxRelease_v2(dev);
        return st;
    }
    /* griddepcontrol (the kernels' kiln_grid_wait) exists from sm_90 on. */
    d->pdl = info->cc_major >= 9 && cu.cuLaunchKernelEx != NULL;
    info->wave_size = attr(dev, KILN_CU_ATTR_WARP_SIZE);
    info->max_threads_per_block = attr(dev, KILN_CU_ATTR_MAX_THREADS_PER_BLOCK);
    info->smem_per_block = attr(dev, KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK);
    info->smem_per_block_optin = attr(dev, KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    info->smem_per_cu = attr(dev, KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    info->l2_bytes = attr(dev, KILN_CU_ATTR_L2_CACHE_SIZE);
    size_t total = 0;
    cu.cuDeviceTotalMem_v2(&total, dev);
    info->total_mem = (int64_t)total;
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.0",
             attr(dev, KILN_CU_ATTR_PCI_DOMAIN_ID), attr(dev, KILN_CU_ATTR_PCI_BUS_ID),
             attr(dev, KILN_CU_ATTR_PCI_DEVICE_ID));
    info->driver_version = cu_driver_version;
    snprintf(info->driver_version_str, sizeof info->driver_version_str, "%d.%d",
             cu_driver_version / 1000, cu_driver_version % 1000 / 10);
    kiln_dl_path(cu_lib, info->driver_path, sizeof info->driver_path);
    if (cuda_load_compiler() == KILN_OK)
        kiln_dl_path(rtc_lib, info->compiler_path, sizeof info->compiler_path);
    return KILN_OK;
}

/* The launch with programmatic stream serialization allowed (see kiln_gpu_driver). */
static int cuda_launch_pdl(void *fn, const unsigned grid[3], const unsigned block[3],
                           unsigned smem, void *stream, void **params)
{
    kiln_cu_launch_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.id = KILN_CU_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmatic_stream_serialization = 1;
    const kiln_cu_launch_config config = {{grid[0], grid[1], grid[2]},
                                          {block[0], block[1], block[2]},
                                          smem,
                                          (CUstream)stream,
                                          &attr,
                                          1};
    return cu.cuLaunchKernelEx(&config, (CUfunction)fn, params, NULL);
}

static void cuda_close(kiln_gpu_device *d) { cu.cuDevicePrimaryCtxRelease_v2(d->handle); }

static int cuda_current_get(void **ctx) { return cu.cuCtxGetCurrent((CUcontext *)ctx); }
static int cuda_current_set(void *ctx) { return cu.cuCtxSetCurrent((CUcontext)ctx); }
static int cuda_func_set_attribute(void *fn, int attribute, int value)
{
    return cu.cuFuncSetAttribute((CUfunction)fn, attribute, value);
}

static kiln_status cuda_tensor_map(void *map, int is_bf16, const void *base, int rank,
                                   const uint64_t *dims, const uint64_t *strides,
                                   const uint32_t *box)
{
    unsigned long long d[5], st[4];
    unsigned bx[5], es[5];
    KILN_FAIL_IF(!cu.cuTensorMapEncodeTiled, KILN_UNSUPPORTED,
                 "the CUDA driver has no cuTensorMapEncodeTiled (needs CUDA 12.0 or newer)");
    if (!map) return KILN_OK; /* the query: maps can be made */
    KILN_FAIL_IF(rank < 1 || rank > 5, KILN_INTERNAL, "tensor map of rank %d", rank);
    for (int i = 0; i < rank; i++) {
        d[i] = dims[i];
        bx[i] = box[i];
        es[i] = 1;
        if (i) st[i - 1] = strides[i - 1];
    }
    CUresult r = cu.cuTensorMapEncodeTiled(
        map, is_bf16 ? KILN_CU_TENSOR_MAP_BFLOAT16 : KILN_CU_TENSOR_MAP_FLOAT16,
        (unsigned)rank, (void *)(uintptr_t)base, d, st, bx, es, 0,
        KILN_CU_TENSOR_MAP_SWIZZLE_128B, KILN_CU_TENSOR_MAP_L2_PROMOTION_256B, 0);
    if (r != KILN_CUDA_SUCCESS)
        return kiln_gpu_fail(&cuda_driver, KILN_UNSUPPORTED, r, "cuTensorMapEncodeTiled");
    return KILN_OK;
}

static const kiln_gpu_driver cuda_driver =
    KILN_GPU_DRIVER_TABLE(cuda, KILN_BACKEND_CUDA, "cuda", "nvrtc", "NVRTC", "--gpu-architecture=",
                          "cubin", KILN_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          cuda_func_set_attribute, cuda_tensor_map, cuda_launch_pdl);

const kiln_gpu_driver *kiln_cuda_driver(void) { return &cuda_driver; }
