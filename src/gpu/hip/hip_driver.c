/* The HIP runtime and hipRTC behind kiln_gpu_driver, both loaded at run time. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gpu/gpu.h"
#include "gpu/targets.h"
#include "hip_api.h"
#include "platform/platform.h"

#define KILN_HIP_ENTRY_(ret, name, params, required)                                           \
    {#name, offsetof(kiln_hip_api, name), required},
#define KILN_HIPRTC_ENTRY_(ret, name, params, required)                                        \
    {#name, offsetof(kiln_hiprtc_api, name), required},

static const kiln_gpu_symbol hip_symbols[] = {KILN_HIP_RUNTIME_SYMBOLS(KILN_HIP_ENTRY_)};
static const kiln_gpu_symbol hiprtc_symbols[] = {KILN_HIPRTC_SYMBOLS(KILN_HIPRTC_ENTRY_)};

/* Process-wide load state: filled once under kiln_once, read-only afterwards. */
static kiln_once hip_once = KILN_ONCE_INIT;
static kiln_status hip_status;
static char hip_message[4096];
static kiln_hip_api hip;
static kiln_dl *hip_lib;
static char hip_dir[512]; /* folder the runtime came from, where its hipRTC lives */
static int hip_driver_version, hip_runtime_version;

static kiln_once rtc_once = KILN_ONCE_INIT;
static kiln_status rtc_status;
static char rtc_message[4096];
static kiln_hiprtc_api rtc;
static kiln_dl *rtc_lib;
static int rtc_major, rtc_minor;

typedef struct hip_device {
    int ordinal;
} hip_device;

static kiln_status hip_fail(kiln_status status, hipError_t r, const char *what)
{
    return kiln_fail(status, "%s failed: %s (%d: %s)", what,
                     hip.hipGetErrorName ? hip.hipGetErrorName(r) : "?", (int)r,
                     hip.hipGetErrorString ? hip.hipGetErrorString(r) : "no description");
}

static int version_major(int v) { return v / 10000000; }
static int version_minor(int v) { return v / 100000 % 100; }

static void load_runtime(void)
{
    char names[8][600];
    const char *list[8];
    char root[400] = "";
    int n = 0, windows = kiln_gpu_is_windows();
    static const int majors[] = {7, 6};
    int have_root = windows ? kiln_env_get("HIP_PATH", root, sizeof root) && root[0]
                            : kiln_env_get("ROCM_PATH", root, sizeof root) && root[0];
    if (!windows && !have_root) {
        snprintf(root, sizeof root, "/opt/rocm");
        have_root = 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int m = 0; m < 2; m++) {
            if (pass == 0)
                snprintf(names[n], sizeof names[n],
                         windows ? "amdhip64_%d.dll" : "libamdhip64.so.%d", majors[m]);
            else if (have_root)
                snprintf(names[n], sizeof names[n],
                         windows ? "%s\\bin\\amdhip64_%d.dll" : "%s/lib/libamdhip64.so.%d",
                         root, majors[m]);
            else
                continue;
            list[n] = names[n];
            n++;
        }
    }

    char tried[2048];
    hip_lib = kiln_gpu_dl_open_first("KILN_HIP_RUNTIME_PATH", list, n, tried, sizeof tried);
    if (!hip_lib) {
        hip_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(hip_message, sizeof hip_message,
                 "the HIP runtime could not be loaded; looked for: %s. Install ROCm / the HIP "
                 "SDK (6.0 or newer) or set KILN_HIP_RUNTIME_PATH",
                 tried);
        return;
    }
    char path[512] = "";
    kiln_dl_path(hip_lib, path, sizeof path);
    snprintf(hip_dir, sizeof hip_dir, "%s", path);
    char *slash = strrchr(hip_dir, '/');
    char *bslash = strrchr(hip_dir, '\\');
    if (bslash && (!slash || bslash > slash)) slash = bslash;
    if (slash)
        *slash = '\0';
    else
        hip_dir[0] = '\0';

    const char *missing = kiln_gpu_dl_bind(hip_lib, &hip, hip_symbols,
                                           sizeof hip_symbols / sizeof hip_symbols[0]);
    if (missing) {
        hip_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(hip_message, sizeof hip_message,
                 "the HIP runtime %s lacks %s: it is older than HIP 6.0, which kiln needs",
                 path, missing);
        return;
    }
    hipError_t r = hip.hipInit(0);
    if (r != KILN_HIP_SUCCESS) {
        hip_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(hip_message, sizeof hip_message, "hipInit failed in %s: %s (%d: %s)", path,
                 hip.hipGetErrorName(r), (int)r, hip.hipGetErrorString(r));
        return;
    }
    hip.hipDriverGetVersion(&hip_driver_version);
    hip.hipRuntimeGetVersion(&hip_runtime_version);
    if (hip_runtime_version < KILN_HIP_MIN_VERSION) {
        hip_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(hip_message, sizeof hip_message,
                 "the HIP runtime %s is version %d.%d; kiln needs 6.0 or newer", path,
                 version_major(hip_runtime_version), version_minor(hip_runtime_version));
        return;
    }
    hip_status = KILN_OK;
}

static kiln_status hip_load(void)
{
    kiln_once_run(&hip_once, load_runtime);
    if (hip_status != KILN_OK) return kiln_fail(hip_status, "%s", hip_message);
    return KILN_OK;
}

/* hipRTC must come from the same ROCm as the runtime (its code objects target that
 * runtime's ABI), so the runtime's own folder and version are tried first. */
static void load_hiprtc(void)
{
    char names[24][600];
    const char *list[24];
    int n = 0, windows = kiln_gpu_is_windows();
    int major = version_major(hip_runtime_version), minor = version_minor(hip_runtime_version);
    if (hip_status != KILN_OK) major = 0;

    if (windows) {
        /* The HIP SDK names hipRTC by major and minor: hiprtc0602.dll for 6.2. */
        for (int mi = minor; major && mi >= 0 && n + 2 <= 24; mi--) {
            if (hip_dir[0]) {
                snprintf(names[n], sizeof names[n], "%s\\hiprtc%02d%02d.dll", hip_dir, major,
                         mi);
                list[n] = names[n];
                n++;
            }
            snprintf(names[n], sizeof names[n], "hiprtc%02d%02d.dll", major, mi);
            list[n] = names[n];
            n++;
        }
    } else if (major) {
        if (hip_dir[0]) {
            snprintf(names[n], sizeof names[n], "%s/libhiprtc.so.%d", hip_dir, major);
            list[n] = names[n];
            n++;
        }
        snprintf(names[n], sizeof names[n], "libhiprtc.so.%d", major);
        list[n] = names[n];
        n++;
    } else {
        snprintf(names[n], sizeof names[n], "libhiprtc.so.7");
        list[n] = names[n];
        n++;
        snprintf(names[n], sizeof names[n], "libhiprtc.so.6");
        list[n] = names[n];
        n++;
    }

    char tried[2048];
    rtc_lib = kiln_gpu_dl_open_first("KILN_HIPRTC_PATH", list, n, tried, sizeof tried);
    if (!rtc_lib) {
        rtc_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(rtc_message, sizeof rtc_message,
                 "hipRTC (the HIP run-time compiler) matching HIP %d.%d could not be loaded; "
                 "looked for: %s. Install ROCm's hiprtc or set KILN_HIPRTC_PATH",
                 major, minor, tried[0] ? tried : "(no candidate: the HIP runtime is missing)");
        return;
    }
    const char *missing = kiln_gpu_dl_bind(rtc_lib, &rtc, hiprtc_symbols,
                                           sizeof hiprtc_symbols / sizeof hiprtc_symbols[0]);
    if (missing) {
        char path[512] = "";
        kiln_dl_path(rtc_lib, path, sizeof path);
        rtc_status = KILN_BACKEND_UNAVAILABLE;
        snprintf(rtc_message, sizeof rtc_message, "hipRTC %s lacks %s", path, missing);
        return;
    }
    rtc.hiprtcVersion(&rtc_major, &rtc_minor);
    rtc_status = KILN_OK;
}

static kiln_status hiprtc_load(void)
{
    kiln_once_run(&hip_once, load_runtime);
    kiln_once_run(&rtc_once, load_hiprtc);
    if (rtc_status != KILN_OK) return kiln_fail(rtc_status, "%s", rtc_message);
    return KILN_OK;
}

static kiln_status hiprtc_version_text(char *buf, size_t cap)
{
    KILN_FORWARD(hiprtc_load());
    snprintf(buf, cap, "%d.%d", rtc_major, rtc_minor);
    return KILN_OK;
}

static kiln_status hip_device_count(int *count)
{
    *count = 0;
    KILN_FORWARD(hip_load());
    hipError_t r = hip.hipGetDeviceCount(count);
    if (r != KILN_HIP_SUCCESS) {
        *count = 0;
        return hip_fail(KILN_BACKEND_UNAVAILABLE, r, "hipGetDeviceCount");
    }
    return KILN_OK;
}

static kiln_status hip_open(int ordinal, kiln_gpu_info *info, void **out)
{
    int count = 0;
    /* The runtime may write a newer, longer property struct than kiln declares. */
    union {
        kiln_hip_device_prop prop;
        char room[16384];
    } u;
    *out = NULL;
    KILN_FORWARD(hip_device_count(&count));
    KILN_FAIL_IF(ordinal < 0 || ordinal >= count, KILN_BACKEND_UNAVAILABLE,
                 "HIP device %d does not exist: the runtime reports %d device(s)", ordinal,
                 count);
    memset(&u, 0, sizeof u);
    hipError_t r = hip.hipGetDevicePropertiesR0600(&u.prop, ordinal);
    if (r != KILN_HIP_SUCCESS)
        return hip_fail(KILN_BACKEND_UNAVAILABLE, r, "hipGetDeviceProperties");
    hip_device *d = calloc(1, sizeof *d);
    KILN_FAIL_IF(!d, KILN_OUT_OF_MEMORY, "out of host memory opening HIP device %d", ordinal);
    d->ordinal = ordinal;

    const kiln_hip_device_prop *p = &u.prop;
    memset(info, 0, sizeof *info);
    info->kind = KILN_BACKEND_HIP;
    info->ordinal = ordinal;
    snprintf(info->name, sizeof info->name, "%.255s", p->name);
    snprintf(info->arch_reported, sizeof info->arch_reported, "%.95s", p->gcn_arch_name);
    /* "gfx90a:sramecc+:xnack-": code objects are built for the processor name alone. */
    snprintf(info->target, sizeof info->target, "%.31s", p->gcn_arch_name);
    char *colon = strchr(info->target, ':');
    if (colon) *colon = '\0';
    info->cc_major = p->major;
    info->cc_minor = p->minor;
    info->compute_units_reported = p->multi_processor_count;
    /* RDNA (gfx10, gfx11, gfx12) runs in WGP mode, where the runtime counts workgroup
     * processors of two CUs each: 30 on a 60-CU RX 7800 XT. kiln always speaks of CUs; the
     * target table knows which targets report WGPs. */
    const kiln_target *t = kiln_target_find(info->target);
    int64_t cus = kiln_target_wgp_to_cu(t, p->multi_processor_count);
    kiln_status st = kiln_gpu_set_cus(
        info, cus, cus != p->multi_processor_count ? "device WGPs x 2" : "device");
    if (st != KILN_OK) {
        free(d);
        return st;
    }
    info->wave_size = p->warp_size;
    info->max_threads_per_block = p->max_threads_per_block;
    info->smem_per_block = (int64_t)p->shared_mem_per_block;
    info->smem_per_block_optin =
        (int64_t)(p->shared_mem_per_block_optin ? p->shared_mem_per_block_optin
                                                : p->shared_mem_per_block);
    info->smem_per_cu = (int64_t)p->max_shared_memory_per_multiprocessor;
    info->l2_bytes = p->l2_cache_size;
    info->total_mem = (int64_t)p->total_global_mem;
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.0", p->pci_domain_id,
             p->pci_bus_id, p->pci_device_id);
    info->driver_version = hip_driver_version;
    info->runtime_version = hip_runtime_version;
    snprintf(info->driver_version_str, sizeof info->driver_version_str, "%d.%d.%d",
             version_major(hip_runtime_version), version_minor(hip_runtime_version),
             hip_runtime_version % 100000);
    kiln_dl_path(hip_lib, info->driver_path, sizeof info->driver_path);
    snprintf(info->compiler, sizeof info->compiler, "hiprtc");
    if (hiprtc_load() == KILN_OK) {
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

static void hip_close(void *dev) { free(dev); }

static kiln_status hip_make_current(void *dev)
{
    hip_device *d = dev;
    int cur = -1;
    if (hip.hipGetDevice(&cur) == KILN_HIP_SUCCESS && cur == d->ordinal) return KILN_OK;
    hipError_t r = hip.hipSetDevice(d->ordinal);
    if (r != KILN_HIP_SUCCESS) return hip_fail(KILN_DEVICE_ERROR, r, "hipSetDevice");
    return KILN_OK;
}

static kiln_status hip_compile(const char *source, const char *program_name, const char *arch,
                               const char *const *options, int num_options, void **image,
                               size_t *image_len)
{
    const char *opts[64];
    char arch_opt[64];
    hiprtcProgram prog = NULL;
    *image = NULL;
    *image_len = 0;
    KILN_FORWARD(hiprtc_load());
    KILN_FAIL_IF(num_options > 62, KILN_INTERNAL, "too many hipRTC options (%d)", num_options);
    snprintf(arch_opt, sizeof arch_opt, "--offload-arch=%s", arch);
    opts[0] = arch_opt;
    for (int i = 0; i < num_options; i++)
        opts[i + 1] = options[i];

    hiprtcResult r = rtc.hiprtcCreateProgram(&prog, source, program_name, 0, NULL, NULL);
    KILN_FAIL_IF(r != 0, KILN_COMPILE_ERROR, "hiprtcCreateProgram failed for %s: %s",
                 program_name, rtc.hiprtcGetErrorString(r));
    r = rtc.hiprtcCompileProgram(prog, num_options + 1, opts);
    if (r != 0) {
        size_t log_len = 0;
        char *log = NULL;
        if (rtc.hiprtcGetProgramLogSize(prog, &log_len) == 0 && log_len > 0) {
            log = malloc(log_len + 1);
            if (log && rtc.hiprtcGetProgramLog(prog, log) != 0) log[0] = '\0';
            if (log) log[log_len] = '\0';
        }
        kiln_status st = kiln_fail(KILN_COMPILE_ERROR,
                                   "hipRTC %d.%d could not compile %s for %s (%s):\n%.3000s",
                                   rtc_major, rtc_minor, program_name, arch,
                                   rtc.hiprtcGetErrorString(r), log ? log : "(no log)");
        free(log);
        rtc.hiprtcDestroyProgram(&prog);
        return st;
    }
    size_t len = 0;
    r = rtc.hiprtcGetCodeSize(prog, &len);
    char *bin = r == 0 && len ? malloc(len) : NULL;
    if (!bin || rtc.hiprtcGetCode(prog, bin) != 0) {
        free(bin);
        rtc.hiprtcDestroyProgram(&prog);
        return kiln_fail(KILN_COMPILE_ERROR, "hipRTC produced no code object for %s (%s)",
                         program_name, arch);
    }
    rtc.hiprtcDestroyProgram(&prog);
    *image = bin;
    *image_len = len;
    return KILN_OK;
}

static kiln_status hip_module_load(void *dev, const void *image, size_t len, void **module)
{
    (void)len;
    hipModule_t m = NULL;
    KILN_FORWARD(hip_make_current(dev));
    hipError_t r = hip.hipModuleLoadData(&m, image);
    if (r != KILN_HIP_SUCCESS) return hip_fail(KILN_DEVICE_ERROR, r, "hipModuleLoadData");
    *module = m;
    return KILN_OK;
}

static void hip_module_unload(void *dev, void *module)
{
    if (!module || hip_make_current(dev) != KILN_OK) return;
    hip.hipModuleUnload((hipModule_t)module);
}

static kiln_status hip_function(void *module, const char *name, void **fn)
{
    hipFunction_t f = NULL;
    hipError_t r = hip.hipModuleGetFunction(&f, (hipModule_t)module, name);
    if (r != KILN_HIP_SUCCESS) {
        kiln_status st = hip_fail(KILN_KERNEL_NOT_FOUND, r, "hipModuleGetFunction");
        char why[1024];
        snprintf(why, sizeof why, "%s", kiln_last_error()); /* kiln_fail rewrites it */
        return kiln_fail(st, "kernel %s is not in its module: %s", name, why);
    }
    *fn = f;
    return KILN_OK;
}

/* AMD lets a kernel use all of a workgroup's LDS without opting in; the module's own
 * limit was checked against the target table when it was built. */
static kiln_status hip_function_set_smem(void *fn, int bytes)
{
    (void)fn;
    (void)bytes;
    return KILN_OK;
}

static kiln_status hip_launch(void *fn, const unsigned grid[3], const unsigned block[3],
                              unsigned smem_bytes, void *stream, void **args)
{
    hipError_t r = hip.hipModuleLaunchKernel((hipFunction_t)fn, grid[0], grid[1], grid[2],
                                             block[0], block[1], block[2], smem_bytes,
                                             (hipStream_t)stream, args, NULL);
    if (r != KILN_HIP_SUCCESS) return hip_fail(KILN_DEVICE_ERROR, r, "hipModuleLaunchKernel");
    return KILN_OK;
}

static void *hip_mem_alloc(void *dev, size_t bytes)
{
    void *p = NULL;
    if (hip_make_current(dev) != KILN_OK) return NULL;
    if (hip.hipMalloc(&p, bytes ? bytes : 1) != KILN_HIP_SUCCESS) return NULL;
    return p;
}

static void hip_mem_free(void *dev, void *ptr)
{
    if (!ptr || hip_make_current(dev) != KILN_OK) return;
    hip.hipFree(ptr);
}

static kiln_status hip_mem_copy(void *dev, void *dst, const void *src, size_t bytes,
                                int to_device)
{
    KILN_FORWARD(hip_make_current(dev));
    if (!bytes) return KILN_OK;
    hipError_t r = to_device ? hip.hipMemcpyHtoD(dst, src, bytes)
                             : hip.hipMemcpyDtoH(dst, (hipDeviceptr_t)src, bytes);
    if (r != KILN_HIP_SUCCESS)
        return hip_fail(KILN_DEVICE_ERROR, r, to_device ? "hipMemcpyHtoD" : "hipMemcpyDtoH");
    return KILN_OK;
}

static kiln_status hip_synchronize(void *dev, void *stream)
{
    KILN_FORWARD(hip_make_current(dev));
    hipError_t r = hip.hipStreamSynchronize((hipStream_t)stream);
    if (r != KILN_HIP_SUCCESS) return hip_fail(KILN_DEVICE_ERROR, r, "hipStreamSynchronize");
    return KILN_OK;
}

static const kiln_gpu_driver hip_driver = {
    .kind = KILN_BACKEND_HIP,
    .name = "hip",
    .compiler = "hiprtc",
    .load = hip_load,
    .load_compiler = hiprtc_load,
    .compiler_version = hiprtc_version_text,
    .device_count = hip_device_count,
    .open = hip_open,
    .close = hip_close,
    .make_current = hip_make_current,
    .compile = hip_compile,
    .module_load = hip_module_load,
    .module_unload = hip_module_unload,
    .function = hip_function,
    .function_set_smem = hip_function_set_smem,
    .launch = hip_launch,
    .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free,
    .mem_copy = hip_mem_copy,
    .synchronize = hip_synchronize,
};

const kiln_gpu_driver *kiln_hip_driver(void) { return &hip_driver; }
