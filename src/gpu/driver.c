/* The part of a GPU driver that CUDA and HIP share: compiling through the runtime
 * compiler, modules, functions, launches, memory and synchronization, over the entry
 * points each vendor names in its kiln_gpu_driver (gpu.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gpu.h"

_Static_assert(sizeof(kiln_gpu_entries) == KILN_GPU_ENTRY_COUNT * sizeof(void *),
               "kiln_gpu_entries is filled slot by slot from a list of names");
_Static_assert(sizeof(kiln_rtc_entries) == KILN_RTC_ENTRY_COUNT * sizeof(void *),
               "kiln_rtc_entries is filled slot by slot from a list of names");
_Static_assert(sizeof(void *) == sizeof(unsigned long long),
               "device pointers travel as void * (CUdeviceptr is 64 bits)");

static const char *name_of(const kiln_gpu_driver *drv, int slot) { return drv->entry_names[slot]; }

kiln_status kiln_gpu_fail(const kiln_gpu_driver *drv, kiln_status status, int result,
                          const char *what)
{
    const char *name = NULL, *text = NULL;
    drv->error_text(result, &name, &text);
    return kiln_fail(status, "%s failed: %s (%d: %s)", what, name ? name : "unknown error",
                     result, text ? text : "no description");
}

kiln_status kiln_gpu_device_count(const kiln_gpu_driver *drv, int *count)
{
    *count = 0;
    KILN_FORWARD(drv->load());
    int r = drv->api->device_count(count);
    if (r != 0) {
        *count = 0;
        return kiln_gpu_fail(drv, KILN_BACKEND_UNAVAILABLE, r,
                             name_of(drv, KILN_GPU_SLOT_device_count));
    }
    return KILN_OK;
}

kiln_status kiln_gpu_open(const kiln_gpu_driver *drv, int ordinal, kiln_gpu_info *info,
                          kiln_gpu_device **out)
{
    int count = 0;
    *out = NULL;
    KILN_FORWARD(kiln_gpu_device_count(drv, &count));
    KILN_FAIL_IF(ordinal < 0 || ordinal >= count, KILN_BACKEND_UNAVAILABLE,
                 "%s device %d does not exist: the driver reports %d device(s)", drv->name,
                 ordinal, count);
    kiln_gpu_device *d = calloc(1, sizeof *d);
    KILN_FAIL_IF(!d, KILN_OUT_OF_MEMORY, "out of host memory opening %s device %d",
                 drv->name, ordinal);
    d->drv = drv;
    d->ordinal = ordinal;
    memset(info, 0, sizeof *info);
    info->kind = drv->kind;
    info->ordinal = ordinal;
    snprintf(info->compiler, sizeof info->compiler, "%s", drv->compiler);
    kiln_status st = drv->open(d, info);
    if (st != KILN_OK) {
        free(d);
        return st;
    }
    if (kiln_gpu_compiler_version(drv, info->compiler_version, sizeof info->compiler_version) !=
        KILN_OK) {
        info->compiler_version[0] = '\0';
        snprintf(info->compiler_error, sizeof info->compiler_error, "%.500s",
                 kiln_last_error());
        kiln_error_clear();
    }
    *out = d;
    return KILN_OK;
}

void kiln_gpu_close(kiln_gpu_device *dev)
{
    if (!dev) return;
    dev->drv->close(dev);
    free(dev);
}

kiln_status kiln_gpu_compiler_version(const kiln_gpu_driver *drv, char *buf, size_t cap)
{
    int major = 0, minor = 0;
    KILN_FORWARD(drv->load_compiler());
    drv->rtc->version(&major, &minor);
    snprintf(buf, cap, "%d.%d", major, minor);
    return KILN_OK;
}

/* The compiler's log for a program, malloc'd; NULL when there is none. */
static char *program_log(const kiln_rtc_entries *rtc, void *prog)
{
    size_t len = 0;
    char *log = NULL;
    if (rtc->log_size(prog, &len) != 0 || len == 0 || !(log = malloc(len + 1))) return NULL;
    if (rtc->log(prog, log) != 0) log[0] = '\0';
    log[len] = '\0';
    return log;
}

kiln_status kiln_gpu_compile(const kiln_gpu_driver *drv, const char *source,
                             const char *program_name, const char *arch,
                             const char *const *options, int num_options, void **image,
                             size_t *image_len)
{
    const char *opts[64];
    char arch_opt[64], version[32];
    void *prog = NULL;
    *image = NULL;
    *image_len = 0;
    KILN_FORWARD(kiln_gpu_compiler_version(drv, version, sizeof version));
    const kiln_rtc_entries *rtc = drv->rtc;
    KILN_FAIL_IF(num_options > 62, KILN_INTERNAL, "too many %s options (%d)",
                 drv->compiler_label, num_options);
    snprintf(arch_opt, sizeof arch_opt, "%s%s", drv->arch_option, arch);
    opts[0] = arch_opt;
    for (int i = 0; i < num_options; i++)
        opts[i + 1] = options[i];

    int r = rtc->create(&prog, source, program_name, 0, NULL, NULL);
    KILN_FAIL_IF(r != 0, KILN_COMPILE_ERROR, "%s could not create a program for %s: %s",
                 drv->compiler_label, program_name, rtc->error_string(r));
    r = rtc->compile(prog, num_options + 1, opts);
    if (r != 0) {
        char *log = program_log(rtc, prog);
        kiln_status st = kiln_fail(KILN_COMPILE_ERROR,
                                   "%s %s could not compile %s for %s (%s):\n%.3000s",
                                   drv->compiler_label, version, program_name, arch,
                                   rtc->error_string(r), log ? log : "(no log)");
        free(log);
        rtc->destroy(&prog);
        return st;
    }
    /* ptxas reports warpgroup MMAs it had to serialize (wgmma waits it inserted, CUDA's
     * C7520) only in the log of a compile that succeeded: such a kernel runs, but at a
     * fraction of its speed, so it is an error here rather than a slow tier. */
    char *ok_log = program_log(rtc, prog);
    const char *ser = ok_log ? strstr(ok_log, "(C7520)") : NULL;
    if (ser) {
        const char *end = strchr(ser, '\n');
        kiln_status st = kiln_fail(KILN_COMPILE_ERROR, "%s %s compiled %s for %s with its "
                                   "warpgroup MMAs serialized (a kiln bug with this compiler; "
                                   "KILN_GPU_TIER picks another tier): %.*s",
                                   drv->compiler_label, version, program_name, arch,
                                   (int)(end ? (size_t)(end - ser) : strlen(ser)), ser);
        free(ok_log);
        rtc->destroy(&prog);
        return st;
    }
    free(ok_log);
    size_t len = 0;
    r = rtc->code_size(prog, &len);
    char *bin = r == 0 && len ? malloc(len) : NULL;
    if (!bin || rtc->code(prog, bin) != 0) {
        free(bin);
        rtc->destroy(&prog);
        return kiln_fail(KILN_COMPILE_ERROR, "%s produced no %s for %s (%s)",
                         drv->compiler_label, drv->image_label, program_name, arch);
    }
    rtc->destroy(&prog);
    *image = bin;
    *image_len = len;
    return KILN_OK;
}

kiln_status kiln_gpu_enter(kiln_gpu_device *dev, kiln_gpu_saved *saved)
{
    const kiln_gpu_driver *drv = dev->drv;
    saved->prev = NULL;
    saved->switched = 0;
    if (drv->current_get(&saved->prev) == 0 && saved->prev == dev->ctx) return KILN_OK;
    int r = drv->current_set(dev->ctx);
    if (r != 0) return kiln_gpu_fail(drv, KILN_DEVICE_ERROR, r, "making the device current");
    saved->switched = 1;
    return KILN_OK;
}

void kiln_gpu_leave(kiln_gpu_device *dev, const kiln_gpu_saved *saved)
{
    /* No context before (prev NULL) is restored too: a thread that had none has none. */
    if (saved->switched) dev->drv->current_set(saved->prev);
}

kiln_status kiln_gpu_module_load(kiln_gpu_device *dev, const void *image, size_t len,
                                 void **module)
{
    kiln_gpu_saved saved;
    (void)len;
    KILN_FORWARD(kiln_gpu_enter(dev, &saved));
    int r = dev->drv->api->module_load(module, image);
    kiln_gpu_leave(dev, &saved);
    if (r != 0)
        return kiln_gpu_fail(dev->drv, KILN_DEVICE_ERROR, r,
                             name_of(dev->drv, KILN_GPU_SLOT_module_load));
    return KILN_OK;
}

void kiln_gpu_module_unload(kiln_gpu_device *dev, void *module)
{
    kiln_gpu_saved saved;
    if (!module || kiln_gpu_enter(dev, &saved) != KILN_OK) return;
    dev->drv->api->module_unload(module);
    kiln_gpu_leave(dev, &saved);
}

kiln_status kiln_gpu_function(kiln_gpu_device *dev, void *module, const char *name, void **fn)
{
    int r = dev->drv->api->module_function(fn, module, name);
    if (r != 0) {
        char why[1024];
        kiln_status st = kiln_gpu_fail(dev->drv, KILN_KERNEL_NOT_FOUND, r,
                                       name_of(dev->drv, KILN_GPU_SLOT_module_function));
        snprintf(why, sizeof why, "%s", kiln_last_error()); /* kiln_fail rewrites it */
        return kiln_fail(st, "kernel %s is not in its module: %s", name, why);
    }
    return KILN_OK;
}

kiln_status kiln_gpu_function_smem(kiln_gpu_device *dev, void *fn, unsigned bytes)
{
    const kiln_gpu_driver *drv = dev->drv;
    if (!drv->smem_optin_attribute || !drv->func_set_attribute) return KILN_OK;
    int r = drv->func_set_attribute(fn, drv->smem_optin_attribute, (int)bytes);
    if (r != 0)
        return kiln_gpu_fail(drv, KILN_DEVICE_ERROR, r, "opting a kernel in to shared memory");
    return KILN_OK;
}

kiln_status kiln_gpu_launch(kiln_gpu_device *dev, void *fn, const unsigned grid[3],
                            const unsigned block[3], unsigned smem_bytes, void *stream,
                            void **args)
{
    int refused = 0;
    char why[512] = "";
    if (kiln_atomic_load_int(&dev->pdl)) {
        int r = dev->drv->launch_pdl(fn, grid, block, smem_bytes, stream, args);
        if (r == 0) return KILN_OK;
        /* A driver with cuLaunchKernelEx that refuses the attribute (a virtualised device,
         * say) gets the same launch without it; if that goes through, this context launches
         * without it from then on. The refusal is logged, not left as the call's error. */
        kiln_gpu_fail(dev->drv, KILN_DEVICE_ERROR, r, "cuLaunchKernelEx");
        snprintf(why, sizeof why, "%s", kiln_last_error());
        kiln_error_clear();
        refused = 1;
    }
    int r = dev->drv->api->launch(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                  smem_bytes, stream, args, NULL);
    if (r != 0)
        return kiln_gpu_fail(dev->drv, KILN_DEVICE_ERROR, r,
                             name_of(dev->drv, KILN_GPU_SLOT_launch));
    if (refused && kiln_atomic_load_int(&dev->pdl)) {
        kiln_atomic_store_int(&dev->pdl, 0);
        kiln_log(KILN_LOG_INFO,
                 "kiln: the driver refused a programmatic dependent launch (%s) and took the "
                 "plain one; launching without it in this context from now on",
                 why);
    }
    return KILN_OK;
}

void *kiln_gpu_mem_alloc(kiln_gpu_device *dev, size_t bytes)
{
    kiln_gpu_saved saved;
    void *p = NULL;
    if (kiln_gpu_enter(dev, &saved) != KILN_OK) return NULL;
    if (dev->drv->api->mem_alloc(&p, bytes ? bytes : 1) != 0) p = NULL;
    kiln_gpu_leave(dev, &saved);
    return p;
}

void kiln_gpu_mem_free(kiln_gpu_device *dev, void *ptr)
{
    kiln_gpu_saved saved;
    if (!ptr || kiln_gpu_enter(dev, &saved) != KILN_OK) return;
    dev->drv->api->mem_free(ptr);
    kiln_gpu_leave(dev, &saved);
}

kiln_status kiln_gpu_mem_copy(kiln_gpu_device *dev, void *dst, const void *src, size_t bytes,
                              int to_device)
{
    kiln_gpu_saved saved;
    if (!bytes) return KILN_OK;
    KILN_FORWARD(kiln_gpu_enter(dev, &saved));
    const kiln_gpu_entries *api = dev->drv->api;
    int r = to_device ? api->copy_htod(dst, src, bytes) : api->copy_dtoh(dst, src, bytes);
    kiln_gpu_leave(dev, &saved);
    if (r != 0)
        return kiln_gpu_fail(
            dev->drv, KILN_DEVICE_ERROR, r,
            name_of(dev->drv, to_device ? KILN_GPU_SLOT_copy_htod : KILN_GPU_SLOT_copy_dtoh));
    return KILN_OK;
}

kiln_status kiln_gpu_synchronize(kiln_gpu_device *dev, void *stream)
{
    kiln_gpu_saved saved;
    KILN_FORWARD(kiln_gpu_enter(dev, &saved));
    int r = dev->drv->api->stream_sync(stream);
    kiln_gpu_leave(dev, &saved);
    if (r != 0)
        return kiln_gpu_fail(dev->drv, KILN_DEVICE_ERROR, r,
                             name_of(dev->drv, KILN_GPU_SLOT_stream_sync));
    return KILN_OK;
}
