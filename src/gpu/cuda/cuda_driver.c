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

#define KILN_SYMBOL_ENTRY_(table, ret, name, params, required)                                 \
    {#name, offsetof(table, name), required},
#define KILN_CUDA_ENTRY_(ret, name, params, required)                                          \
    KILN_SYMBOL_ENTRY_(kiln_cuda_api, ret, name, params, required)
#define KILN_NVRTC_ENTRY_(ret, name, params, required)                                         \
    KILN_SYMBOL_ENTRY_(kiln_nvrtc_api, ret, name, params, required)

static const kiln_gpu_symbol cuda_symbols[] = {KILN_CUDA_DRIVER_SYMBOLS(KILN_CUDA_ENTRY_)};
static const kiln_gpu_symbol nvrtc_symbols[] = {KILN_NVRTC_SYMBOLS(KILN_NVRTC_ENTRY_)};

/* Process-wide load state: filled once under kiln_once, read-only afterwards. */
static kiln_once cu_once = KILN_ONCE_INIT;
static kiln_status cu_status;
static char cu_message[4096];
static kiln_cuda_api cu;
static kiln_dl *cu_lib;
static int cu_driver_version;

static kiln_once rtc_once = KILN_ONCE_INIT;
static kiln_status rtc_status;
static char rtc_message[4096];
static kiln_nvrtc_api rtc;
static kiln_dl *rtc_lib;
static int rtc_major, rtc_minor;

typedef struct cuda_device {
    CUdevice dev;
    CUcontext ctx;
    int ordinal;
} cuda_device;

static const char *cu_error_text(CUresult r)
{
    const char *name = NULL;
    if (!cu.cuGetErrorName || cu.cuGetErrorName(r, &name) != KILN_CUDA_SUCCESS || !name)
        return "unknown CUDA error";
    return name;
}

static kiln_status cu_fail(kiln_status status, CUresult r, const char *what)
{
    const char *text = NULL;
    if (cu.cuGetErrorString) cu.cuGetErrorString(r, &text);
    return kiln_fail(status, "%s failed: %s (%d: %s)", what, cu_error_text(r), (int)r,
                     text ? text : "no description");
}

static void load_driver(void)
{
    static const char *const linux_names[] = {"libcuda.so.1", "libcuda.so"};
    static const char *const windows_names[] = {"nvcuda.dll"};
    char tried[1536];
    int windows = kiln_gpu_is_windows();

    cu_lib =
        kiln_gpu_dl_open_first("KILN_CUDA_DRIVER_PATH", windows ? windows_names : linux_names,
                               windows ? 1 : 2, tried, sizeof tried);
    if (!cu_lib) {
        cu_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(cu_message, sizeof cu_message,
                 "the CUDA driver could not be loaded; looked for: %s. Install the NVIDIA "
                 "driver or set KILN_CUDA_DRIVER_PATH to the driver library",
                 tried);
        return;
    }
    const char *missing = kiln_gpu_dl_bind(cu_lib, &cu, cuda_symbols,
                                           sizeof cuda_symbols / sizeof cuda_symbols[0]);
    char path[512] = "";
    kiln_dl_path(cu_lib, path, sizeof path);
    if (missing) {
        cu_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(cu_message, sizeof cu_message,
                 "the CUDA driver %s lacks %s: it is older than CUDA 12.0, which kiln needs",
                 path, missing);
        return;
    }
    CUresult r = cu.cuInit(0);
    if (r != KILN_CUDA_SUCCESS) {
        const char *text = NULL;
        cu.cuGetErrorString(r, &text);
        cu_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(cu_message, sizeof cu_message, "cuInit failed in %s: %s (%d: %s)", path,
                 cu_error_text(r), (int)r, text ? text : "no description");
        return;
    }
    cu.cuDriverGetVersion(&cu_driver_version);
    if (cu_driver_version < KILN_CUDA_MIN_DRIVER) {
        cu_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(cu_message, sizeof cu_message,
                 "the CUDA driver %s supports CUDA %d.%d; kiln needs %d.%d or newer", path,
                 cu_driver_version / 1000, cu_driver_version % 1000 / 10,
                 KILN_CUDA_MIN_DRIVER / 1000, KILN_CUDA_MIN_DRIVER % 1000 / 10);
        return;
    }
    cu_status = KILN_OK;
}

static kiln_status cuda_load(void)
{
    kiln_once_run(&cu_once, load_driver);
    if (cu_status != KILN_OK) return kiln_fail(cu_status, "%s", cu_message);
    return KILN_OK;
}

/* NVRTC of a newer major than the driver emits code the driver cannot load, so only
 * majors up to the driver's are tried, newest first. */
static void load_nvrtc(void)
{
    char names[12][600];
    const char *list[12];
    char cuda_path[400] = "";
    int n = 0, windows = kiln_gpu_is_windows();
    int driver_major = cu_status == KILN_OK ? cu_driver_version / 1000 : 0;
    static const int majors[] = {13, 12};
    int have_cuda_path = kiln_env_get("CUDA_PATH", cuda_path, sizeof cuda_path) && cuda_path[0];

    for (int pass = 0; pass < 3; pass++) {
        for (int m = 0; m < 2; m++) {
            int major = majors[m];
            if (driver_major && major > driver_major) continue;
            if (n >= 12) break;
            if (windows) {
                if (pass == 0)
                    snprintf(names[n], sizeof names[n], "nvrtc64_%d0_0.dll", major);
                else if (pass == 1 && have_cuda_path)
                    snprintf(names[n], sizeof names[n], "%s\\bin\\x64\\nvrtc64_%d0_0.dll",
                             cuda_path, major);
                else if (pass == 2 && have_cuda_path)
                    snprintf(names[n], sizeof names[n], "%s\\bin\\nvrtc64_%d0_0.dll", cuda_path,
                             major);
                else
                    continue;
            } else {
                if (pass == 0)
                    snprintf(names[n], sizeof names[n], "libnvrtc.so.%d", major);
                else if (pass == 1 && have_cuda_path)
                    snprintf(names[n], sizeof names[n], "%s/lib64/libnvrtc.so.%d", cuda_path,
                             major);
                else if (pass == 2)
                    snprintf(names[n], sizeof names[n], "/usr/local/cuda/lib64/libnvrtc.so.%d",
                             major);
                else
                    continue;
            }
            list[n] = names[n];
            n++;
        }
    }

    char tried[1536];
    rtc_lib = kiln_gpu_dl_open_first("KILN_NVRTC_PATH", list, n, tried, sizeof tried);
    if (!rtc_lib) {
        rtc_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(rtc_message, sizeof rtc_message,
                 "NVRTC (the CUDA run-time compiler) could not be loaded; looked for: %s. "
                 "Install the CUDA toolkit's NVRTC or set KILN_NVRTC_PATH",
                 tried);
        return;
    }
    const char *missing = kiln_gpu_dl_bind(rtc_lib, &rtc, nvrtc_symbols,
                                           sizeof nvrtc_symbols / sizeof nvrtc_symbols[0]);
    if (missing) {
        char path[512] = "";
        kiln_dl_path(rtc_lib, path, sizeof path);
        rtc_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(rtc_message, sizeof rtc_message,
                 "NVRTC %s lacks %s: it is older than CUDA 12.0, which kiln needs", path,
                 missing);
        return;
    }
    rtc.nvrtcVersion(&rtc_major, &rtc_minor);
    if (rtc_major < 12) {
        rtc_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(rtc_message, sizeof rtc_message, "NVRTC %d.%d is too old; kiln needs 12.0+",
                 rtc_major, rtc_minor);
        return;
    }
    rtc_status = KILN_OK;
}

static kiln_status nvrtc_load(void)
{
    /* The driver's version decides which NVRTC fits, so it loads first when it can. */
    kiln_once_run(&cu_once, load_driver);
    kiln_once_run(&rtc_once, load_nvrtc);
    if (rtc_status != KILN_OK) return kiln_fail(rtc_status, "%s", rtc_message);
    return KILN_OK;
}

static kiln_status nvrtc_version_text(char *buf, size_t cap)
{
    KILN_FORWARD(nvrtc_load());
    snprintf(buf, cap, "%d.%d", rtc_major, rtc_minor);
    return KILN_OK;
}

static kiln_status cuda_device_count(int *count)
{
    *count = 0;
    KILN_FORWARD(cuda_load());
    CUresult r = cu.cuDeviceGetCount(count);
    if (r != KILN_CUDA_SUCCESS) return cu_fail(KILN_BACKEND_UNAVAILABLE, r, "cuDeviceGetCount");
    return KILN_OK;
}

static int attr(CUdevice dev, int which)
{
    int v = 0;
    if (cu.cuDeviceGetAttribute(&v, which, dev) != KILN_CUDA_SUCCESS) return 0;
    return v;
}

static kiln_status cuda_open(int ordinal, kiln_gpu_info *info, void **out)
{
    int count = 0;
    *out = NULL;
    KILN_FORWARD(cuda_device_count(&count));
    KILN_FAIL_IF(ordinal < 0 || ordinal >= count, KILN_BACKEND_UNAVAILABLE,
                 "CUDA device %d does not exist: the driver reports %d device(s)", ordinal,
                 count);
    cuda_device *d = calloc(1, sizeof *d);
    KILN_FAIL_IF(!d, KILN_OUT_OF_MEMORY, "out of host memory opening CUDA device %d", ordinal);
    d->ordinal = ordinal;
    CUresult r = cu.cuDeviceGet(&d->dev, ordinal);
    if (r == KILN_CUDA_SUCCESS) r = cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
    if (r != KILN_CUDA_SUCCESS) {
        free(d);
        return cu_fail(KILN_BACKEND_UNAVAILABLE, r, "opening the CUDA device");
    }

    memset(info, 0, sizeof *info);
    info->kind = KILN_BACKEND_CUDA;
    info->ordinal = ordinal;
    cu.cuDeviceGetName(info->name, (int)sizeof info->name - 1, d->dev);
    info->cc_major = attr(d->dev, KILN_CU_ATTR_COMPUTE_CAPABILITY_MAJOR);
    info->cc_minor = attr(d->dev, KILN_CU_ATTR_COMPUTE_CAPABILITY_MINOR);
    snprintf(info->target, sizeof info->target, "sm_%d%d", info->cc_major, info->cc_minor);
    snprintf(info->arch_reported, sizeof info->arch_reported, "compute capability %d.%d",
             info->cc_major, info->cc_minor);
    info->compute_units_reported = attr(d->dev, KILN_CU_ATTR_MULTIPROCESSOR_COUNT);
    kiln_status st = kiln_gpu_set_cus(info, info->compute_units_reported, "device");
    if (st != KILN_OK) {
        cu.cuDevicePrimaryCtxRelease_v2(d->dev);
        free(d);
        return st;
    }
    info->wave_size = attr(d->dev, KILN_CU_ATTR_WARP_SIZE);
    info->max_threads_per_block = attr(d->dev, KILN_CU_ATTR_MAX_THREADS_PER_BLOCK);
    info->smem_per_block = attr(d->dev, KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK);
    info->smem_per_block_optin = attr(d->dev, KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    info->smem_per_cu = attr(d->dev, KILN_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    info->l2_bytes = attr(d->dev, KILN_CU_ATTR_L2_CACHE_SIZE);
    size_t total = 0;
    cu.cuDeviceTotalMem_v2(&total, d->dev);
    info->total_mem = (int64_t)total;
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.0",
             attr(d->dev, KILN_CU_ATTR_PCI_DOMAIN_ID), attr(d->dev, KILN_CU_ATTR_PCI_BUS_ID),
             attr(d->dev, KILN_CU_ATTR_PCI_DEVICE_ID));
    info->driver_version = cu_driver_version;
    snprintf(info->driver_version_str, sizeof info->driver_version_str, "%d.%d",
             cu_driver_version / 1000, cu_driver_version % 1000 / 10);
    kiln_dl_path(cu_lib, info->driver_path, sizeof info->driver_path);
    snprintf(info->compiler, sizeof info->compiler, "nvrtc");
    if (nvrtc_load() == KILN_OK) {
        snprintf(info->compiler_version, sizeof info->compiler_version, "%d.%d", rtc_major,
                 rtc_minor);
        kiln_dl_path(rtc_lib, info->compiler_path, sizeof info->compiler_path);
    } else {
        snprintf(info->compiler_error, sizeof info->compiler_error, "%.500s", rtc_message);
        kiln_error_clear();
    }
    *out = d;
    return KILN_OK;
}

static void cuda_close(void *dev)
{
    cuda_device *d = dev;
    if (!d) return;
    cu.cuDevicePrimaryCtxRelease_v2(d->dev);
    free(d);
}

static kiln_status cuda_make_current(void *dev)
{
    cuda_device *d = dev;
    CUcontext cur = NULL;
    if (cu.cuCtxGetCurrent(&cur) == KILN_CUDA_SUCCESS && cur == d->ctx) return KILN_OK;
    CUresult r = cu.cuCtxSetCurrent(d->ctx);
    if (r != KILN_CUDA_SUCCESS) return cu_fail(KILN_DEVICE_ERROR, r, "cuCtxSetCurrent");
    return KILN_OK;
}

static kiln_status cuda_compile(const char *source, const char *program_name, const char *arch,
                                const char *const *options, int num_options, void **image,
                                size_t *image_len)
{
    const char *opts[64];
    char arch_opt[64];
    nvrtcProgram prog = NULL;
    *image = NULL;
    *image_len = 0;
    KILN_FORWARD(nvrtc_load());
    KILN_FAIL_IF(num_options > 62, KILN_INTERNAL, "too many NVRTC options (%d)", num_options);
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    opts[0] = arch_opt;
    for (int i = 0; i < num_options; i++)
        opts[i + 1] = options[i];

    nvrtcResult r = rtc.nvrtcCreateProgram(&prog, source, program_name, 0, NULL, NULL);
    KILN_FAIL_IF(r != 0, KILN_COMPILE_ERROR, "nvrtcCreateProgram failed for %s: %s",
                 program_name, rtc.nvrtcGetErrorString(r));
    r = rtc.nvrtcCompileProgram(prog, num_options + 1, opts);
    if (r != 0) {
        size_t log_len = 0;
        char *log = NULL;
        if (rtc.nvrtcGetProgramLogSize(prog, &log_len) == 0 && log_len > 0) {
            log = malloc(log_len + 1);
            if (log && rtc.nvrtcGetProgramLog(prog, log) != 0) log[0] = '\0';
            if (log) log[log_len] = '\0';
        }
        kiln_status st = kiln_fail(KILN_COMPILE_ERROR,
                                   "NVRTC %d.%d could not compile %s for %s (%s):\n%.3000s",
                                   rtc_major, rtc_minor, program_name, arch,
                                   rtc.nvrtcGetErrorString(r), log ? log : "(no log)");
        free(log);
        rtc.nvrtcDestroyProgram(&prog);
        return st;
    }
    size_t len = 0;
    r = rtc.nvrtcGetCUBINSize(prog, &len);
    char *bin = r == 0 && len ? malloc(len) : NULL;
    if (!bin || rtc.nvrtcGetCUBIN(prog, bin) != 0) {
        free(bin);
        rtc.nvrtcDestroyProgram(&prog);
        return kiln_fail(KILN_COMPILE_ERROR, "NVRTC produced no cubin for %s (%s)",
                         program_name, arch);
    }
    rtc.nvrtcDestroyProgram(&prog);
    *image = bin;
    *image_len = len;
    return KILN_OK;
}

static kiln_status cuda_module_load(void *dev, const void *image, size_t len, void **module)
{
    (void)len;
    CUmodule m = NULL;
    KILN_FORWARD(cuda_make_current(dev));
    CUresult r = cu.cuModuleLoadData(&m, image);
    if (r != KILN_CUDA_SUCCESS) return cu_fail(KILN_DEVICE_ERROR, r, "cuModuleLoadData");
    *module = m;
    return KILN_OK;
}

static void cuda_module_unload(void *dev, void *module)
{
    if (!module || cuda_make_current(dev) != KILN_OK) return;
    cu.cuModuleUnload((CUmodule)module);
}

static kiln_status cuda_function(void *module, const char *name, void **fn)
{
    CUfunction f = NULL;
    CUresult r = cu.cuModuleGetFunction(&f, (CUmodule)module, name);
    if (r != KILN_CUDA_SUCCESS) {
        kiln_status st = cu_fail(KILN_KERNEL_NOT_FOUND, r, "cuModuleGetFunction");
        char why[1024];
        snprintf(why, sizeof why, "%s", kiln_last_error()); /* kiln_fail rewrites it */
        return kiln_fail(st, "kernel %s is not in its module: %s", name, why);
    }
    *fn = f;
    return KILN_OK;
}

static kiln_status cuda_function_set_smem(void *fn, int bytes)
{
    CUresult r = cu.cuFuncSetAttribute((CUfunction)fn,
                                       KILN_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
    if (r != KILN_CUDA_SUCCESS) return cu_fail(KILN_DEVICE_ERROR, r, "cuFuncSetAttribute");
    return KILN_OK;
}

static kiln_status cuda_launch(void *fn, const unsigned grid[3], const unsigned block[3],
                               unsigned smem_bytes, void *stream, void **args)
{
    CUresult r =
        cu.cuLaunchKernel((CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1],
                          block[2], smem_bytes, (CUstream)stream, args, NULL);
    if (r != KILN_CUDA_SUCCESS) return cu_fail(KILN_DEVICE_ERROR, r, "cuLaunchKernel");
    return KILN_OK;
}

static kiln_status cuda_tensor_map(void *map, int is_bf16, const void *base, int rank,
                                   const uint64_t *dims, const uint64_t *strides,
                                   const uint32_t *box)
{
    unsigned long long d[5], st[4];
    unsigned bx[5], es[5];
    KILN_FAIL_IF(!cu.cuTensorMapEncodeTiled, KILN_UNSUPPORTED,
                 "the CUDA driver has no cuTensorMapEncodeTiled (needs CUDA 12.0 or newer)");
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
    if (r != KILN_CUDA_SUCCESS) return cu_fail(KILN_UNSUPPORTED, r, "cuTensorMapEncodeTiled");
    return KILN_OK;
}

static void *cuda_mem_alloc(void *dev, size_t bytes)
{
    CUdeviceptr p = 0;
    if (cuda_make_current(dev) != KILN_OK) return NULL;
    if (cu.cuMemAlloc_v2(&p, bytes ? bytes : 1) != KILN_CUDA_SUCCESS) return NULL;
    return (void *)(uintptr_t)p;
}

static void cuda_mem_free(void *dev, void *ptr)
{
    if (!ptr || cuda_make_current(dev) != KILN_OK) return;
    cu.cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr);
}

static kiln_status cuda_mem_copy(void *dev, void *dst, const void *src, size_t bytes,
                                 int to_device)
{
    KILN_FORWARD(cuda_make_current(dev));
    if (!bytes) return KILN_OK;
    CUresult r = to_device ? cu.cuMemcpyHtoD_v2((CUdeviceptr)(uintptr_t)dst, src, bytes)
                           : cu.cuMemcpyDtoH_v2(dst, (CUdeviceptr)(uintptr_t)src, bytes);
    if (r != KILN_CUDA_SUCCESS)
        return cu_fail(KILN_DEVICE_ERROR, r, to_device ? "cuMemcpyHtoD" : "cuMemcpyDtoH");
    return KILN_OK;
}

static kiln_status cuda_synchronize(void *dev, void *stream)
{
    KILN_FORWARD(cuda_make_current(dev));
    CUresult r = cu.cuStreamSynchronize((CUstream)stream);
    if (r != KILN_CUDA_SUCCESS) return cu_fail(KILN_DEVICE_ERROR, r, "cuStreamSynchronize");
    return KILN_OK;
}

static const kiln_gpu_driver cuda_driver = {
    .kind = KILN_BACKEND_CUDA,
    .name = "cuda",
    .compiler = "nvrtc",
    .load = cuda_load,
    .load_compiler = nvrtc_load,
    .compiler_version = nvrtc_version_text,
    .device_count = cuda_device_count,
    .open = cuda_open,
    .close = cuda_close,
    .make_current = cuda_make_current,
    .compile = cuda_compile,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .function = cuda_function,
    .function_set_smem = cuda_function_set_smem,
    .launch = cuda_launch,
    .tensor_map = cuda_tensor_map,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_copy = cuda_mem_copy,
    .synchronize = cuda_synchronize,
};

const kiln_gpu_driver *kiln_cuda_driver(void) { return &cuda_driver; }
