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

static const kiln_gpu_symbol hip_symbols[] = {KILN_HIP_RUNTIME_SYMBOLS(KILN_HIP_ENTRY_)};

/* The shared tables' entry points, in the order of KILN_GPU_ENTRIES / KILN_RTC_ENTRIES. */
static const char *const entry_names[KILN_GPU_ENTRY_COUNT] = {
    "hipModuleLoadData", "hipModuleUnload", "hipModuleGetFunction", "hipModuleLaunchKernel",
    "hipMalloc", "hipFree", "hipMemcpyHtoD", "hipMemcpyDtoH", "hipStreamSynchronize",
    "hipGetDeviceCount"};
static const char *const rtc_names[KILN_RTC_ENTRY_COUNT] = {
    "hiprtcVersion", "hiprtcCreateProgram", "hiprtcDestroyProgram", "hiprtcCompileProgram",
    "hiprtcGetProgramLogSize", "hiprtcGetProgramLog", "hiprtcGetCodeSize", "hiprtcGetCode",
    "hiprtcGetErrorString"};

/* Process-wide load state: filled once under kiln_once, read-only afterwards. */
static kiln_gpu_lib runtime_state = {.once = KILN_ONCE_INIT};
static kiln_gpu_lib hiprtc_state = {.once = KILN_ONCE_INIT};
static kiln_hip_api hip;
static kiln_gpu_entries shared;
static kiln_rtc_entries rtc;
static kiln_dl *hip_lib, *rtc_lib;
static char hip_dir[512]; /* folder the runtime came from, where its hipRTC lives */
static int hip_driver_version, hip_runtime_version;

static void hip_error_text(int r, const char **name, const char **text)
{
    *name = hip.hipGetErrorName ? hip.hipGetErrorName(r) : NULL;
    *text = hip.hipGetErrorString ? hip.hipGetErrorString(r) : NULL;
}

static const kiln_gpu_driver hip_driver;

static int version_major(int v) { return v / 10000000; }
static int version_minor(int v) { return v / 100000 % 100; }

static void load_runtime(void)
{
    kiln_gpu_names names = {.n = 0};
    char root[400] = "";
    int windows = kiln_gpu_is_windows();
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
                kiln_gpu_names_add(&names, windows ? "amdhip64_%d.dll" : "libamdhip64.so.%d",
                                   majors[m]);
            else if (have_root)
                kiln_gpu_names_add(
                    &names, windows ? "%s\\bin\\amdhip64_%d.dll" : "%s/lib/libamdhip64.so.%d", root,
                    majors[m]);
        }
    }

    static const kiln_gpu_lib_spec spec = {
        "the HIP runtime", "KILN_HIP_RUNTIME_PATH",
        "Install ROCm / the HIP SDK (6.0 or newer) or set KILN_HIP_RUNTIME_PATH",
        "it is older than HIP 6.0, which kiln needs", &hip, hip_symbols,
        sizeof hip_symbols / sizeof hip_symbols[0], &shared, entry_names, KILN_GPU_ENTRY_COUNT};
    hip_lib = kiln_gpu_lib_open(&runtime_state, &spec, names.list, names.n);
    if (!hip_lib) return;
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

    hipError_t r = hip.hipInit(0);
    if (r != KILN_HIP_SUCCESS) {
        kiln_gpu_lib_fail_call(&runtime_state, &hip_driver, r, "hipInit", hip_lib);
        return;
    }
    hip.hipDriverGetVersion(&hip_driver_version);
    hip.hipRuntimeGetVersion(&hip_runtime_version);
    if (hip_runtime_version < KILN_HIP_MIN_VERSION) {
        kiln_gpu_lib_fail(&runtime_state,
                          "the HIP runtime %s is version %d.%d; kiln needs 6.0 or newer", path,
                          version_major(hip_runtime_version), version_minor(hip_runtime_version));
        return;
    }
}

static kiln_status hip_load(void) { return kiln_gpu_lib_ready(&runtime_state, load_runtime); }

/* hipRTC must come from the same ROCm as the runtime (its code objects target that
 * runtime's ABI), so the runtime's own folder and version are tried first. */
static void load_hiprtc(void)
{
    kiln_gpu_names names = {.n = 0};
    int windows = kiln_gpu_is_windows();
    int major = version_major(hip_runtime_version), minor = version_minor(hip_runtime_version);
    if (runtime_state.status != KILN_OK) major = 0;

    if (windows) {
        /* The HIP SDK names hipRTC by major and minor: hiprtc0602.dll for 6.2. */
        for (int mi = minor; major && mi >= 0; mi--) {
            if (hip_dir[0]) {
                kiln_gpu_names_add(&names, "%s\\hiprtc%02d%02d.dll", hip_dir, major, mi);
            }
            kiln_gpu_names_add(&names, "hiprtc%02d%02d.dll", major, mi);
        }
    } else if (major) {
        if (hip_dir[0]) {
            kiln_gpu_names_add(&names, "%s/libhiprtc.so.%d", hip_dir, major);
        }
        kiln_gpu_names_add(&names, "libhiprtc.so.%d", major);
    } else {
        kiln_gpu_names_add(&names, "libhiprtc.so.7");
        kiln_gpu_names_add(&names, "libhiprtc.so.6");
    }

    char what[96];
    snprintf(what, sizeof what, "hipRTC (the HIP run-time compiler) matching HIP %d.%d", major,
             minor);
    const kiln_gpu_lib_spec spec = {what, "KILN_HIPRTC_PATH",
                                    "Install ROCm's hiprtc or set KILN_HIPRTC_PATH", "", NULL,
                                    NULL, 0, &rtc, rtc_names, KILN_RTC_ENTRY_COUNT};
    rtc_lib = kiln_gpu_lib_open(&hiprtc_state, &spec, names.list, names.n);
    if (!rtc_lib) return;
}

static kiln_status hip_load_compiler(void)
{
    kiln_once_run(&runtime_state.once, load_runtime);
    return kiln_gpu_lib_ready(&hiprtc_state, load_hiprtc);
}

static kiln_status hip_open(kiln_gpu_device *d, kiln_gpu_info *info)
{
    /* The runtime may write a newer, longer property struct than kiln declares. */
    union {
        kiln_hip_device_prop prop;
        char room[16384];
    } u;
    memset(&u, 0, sizeof u);
    hipError_t r = hip.hipGetDevicePropertiesR0600(&u.prop, d->ordinal);
    if (r != KILN_HIP_SUCCESS)
        return kiln_gpu_fail(&hip_driver, KILN_BACKEND_UNAVAILABLE, r, "hipGetDeviceProperties");
    /* HIP's "current" is a device ordinal; + 1 keeps 0 free to mean none. */
    d->ctx = (void *)(intptr_t)(d->ordinal + 1);
    d->handle = d->ordinal;

    const kiln_hip_device_prop *p = &u.prop;
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
    if (st != KILN_OK) return st;
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
    if (hip_load_compiler() == KILN_OK)
        kiln_dl_path(rtc_lib, info->compiler_path, sizeof info->compiler_path);
    return KILN_OK;
}

static void hip_close(kiln_gpu_device *d) { (void)d; }

static int hip_current_get(void **ctx)
{
    int dev = -1;
    hipError_t r = hip.hipGetDevice(&dev);
    *ctx = r == KILN_HIP_SUCCESS ? (void *)(intptr_t)(dev + 1) : NULL;
    return r;
}

static int hip_current_set(void *ctx)
{
    /* A thread always has a HIP device; "none" (0) leaves the one it has. */
    return ctx ? hip.hipSetDevice((int)(intptr_t)ctx - 1) : KILN_HIP_SUCCESS;
}

/* AMD lets a kernel use all of a workgroup's LDS without opting in (no smem attribute);
 * the module's own limit was checked against the target table when it was built. */
static const kiln_gpu_driver hip_driver =
    KILN_GPU_DRIVER_TABLE(hip, KILN_BACKEND_HIP, "hip", "hiprtc", "hipRTC", "--offload-arch=",
                          "code object", 0, NULL, NULL, NULL);

const kiln_gpu_driver *kiln_hip_driver(void) { return &hip_driver; }
