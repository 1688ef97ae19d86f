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

kiln_status kiln_gpu_set_cus(kiln_gpu_info *info, int64_t cus, const char *source)
{
    int64_t n = 0;
    const char *from = NULL;
    KILN_FORWARD(kiln_target_cu_count(kiln_target_find(info->target), cus, &n, &from));
    info->compute_units = (int)n;
    info->cu_source = strcmp(from, "device") == 0 ? source : from;
    return KILN_OK;
}
