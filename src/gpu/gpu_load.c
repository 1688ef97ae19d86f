#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gpu.h"
#include "targets.h"
#include "platform/platform.h"

int kiln_gpu_is_windows(void) { return kiln_fs_sep() == '\\'; }

static void append(char *buf, size_t cap, const char *text)
{
    size_t len = strlen(buf);
    if (len + 1 < cap) snprintf(buf + len, cap - len, "%s", text);
}

kiln_dl *kiln_gpu_dl_open_first(const char *override_var, const char *const *names, int n,
                                char *tried, size_t cap)
{
    char override[1024];
    char err[512];
    tried[0] = '\0';
    if (override_var && kiln_env_get(override_var, override, sizeof override) && override[0]) {
        kiln_dl *lib = kiln_dl_open(override, err, sizeof err);
        if (lib) return lib;
        snprintf(tried, cap, "%s=%s (%s)", override_var, override, err);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0]) continue;
        err[0] = '\0';
        kiln_dl *lib = kiln_dl_open(names[i], err, sizeof err);
        if (lib) return lib;
        if (tried[0]) append(tried, cap, "; ");
        append(tried, cap, names[i]);
        append(tried, cap, " (");
        append(tried, cap, err[0] ? err : "not found");
        append(tried, cap, ")");
    }
    return NULL;
}

const char *kiln_gpu_dl_bind(kiln_dl *lib, void *table, const kiln_gpu_symbol *symbols,
                             size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *p = kiln_dl_sym(lib, symbols[i].name);
        /* Function and data pointers have one size on every platform kiln runs on; the
         * table holds function pointers written through their bytes. */
        memcpy((char *)table + symbols[i].offset, &p, sizeof p);
        if (!p && symbols[i].required) return symbols[i].name;
    }
    return NULL;
}

void kiln_gpu_lib_fail(kiln_gpu_lib *lib, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lib->message, sizeof lib->message, fmt, ap);
    va_end(ap);
    lib->status = KILN_BACKEND_UNAVAILABLE;
}

kiln_status kiln_gpu_lib_ready(kiln_gpu_lib *lib, void (*load)(void))
{
    kiln_once_run(&lib->once, load);
    if (lib->status != KILN_OK) return kiln_fail(lib->status, "%s", lib->message);
    return KILN_OK;
}

const char *kiln_gpu_dl_bind_names(kiln_dl *lib, void *table, const char *const *names,
                                   size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *p = kiln_dl_sym(lib, names[i]);
        memcpy((char *)table + i * sizeof p, &p, sizeof p);
        if (!p) return names[i];
    }
    return NULL;
}

void kiln_gpu_names_add(kiln_gpu_names *names, const char *fmt, ...)
{
    va_list ap;
    if (names->n >= (int)(sizeof names->list / sizeof names->list[0])) return;
    va_start(ap, fmt);
    vsnprintf(names->text[names->n], sizeof names->text[0], fmt, ap);
    va_end(ap);
    names->list[names->n] = names->text[names->n];
    names->n++;
}

kiln_dl *kiln_gpu_lib_open(kiln_gpu_lib *lib, const kiln_gpu_lib_spec *spec,
                           const char *const *names, int n)
{
    char tried[2048], path[512] = "";
    kiln_dl *dl = kiln_gpu_dl_open_first(spec->override_var, names, n, tried, sizeof tried);
    if (!dl) {
        kiln_gpu_lib_fail(lib, "%s could not be loaded; looked for: %s. %s", spec->what,
                          tried[0] ? tried : "(no candidate)", spec->advice);
        return NULL;
    }
    const char *missing = NULL;
    if (spec->table) missing = kiln_gpu_dl_bind(dl, spec->table, spec->symbols, spec->num_symbols);
    if (!missing)
        missing = kiln_gpu_dl_bind_names(dl, spec->entries, spec->entry_names, spec->num_entries);
    if (missing) {
        kiln_dl_path(dl, path, sizeof path);
        kiln_gpu_lib_fail(lib, "%s %s lacks %s%s%s", spec->what, path, missing,
                          spec->too_old[0] ? ": " : "", spec->too_old);
        return NULL;
    }
    return dl;
}

void kiln_gpu_lib_fail_call(kiln_gpu_lib *lib, const kiln_gpu_driver *drv, int result,
                            const char *call, kiln_dl *dl)
{
    const char *name = NULL, *text = NULL;
    char path[512] = "";
    kiln_dl_path(dl, path, sizeof path);
    drv->error_text(result, &name, &text);
    kiln_gpu_lib_fail(lib, "%s failed in %s: %s (%d: %s)", call, path, name ? name : "?",
                      result, text ? text : "no description");
}

kiln_status kiln_gpu_set_cus(kiln_gpu_info *info, int64_t cus, const char *source)
{
    int64_t n = 0;
    const char *from = NULL;
    KILN_FORWARD(kiln_target_cu_count(kiln_target_find(info->target), cus, &n, &from));
    info->compute_units = (int)n;
    info->cu_source = strcmp(from, "device") == 0 ? source : from;
    return KILN_OK;
}
