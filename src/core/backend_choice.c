#include "backend_choice.h"

#include <stdio.h>
#include <string.h>

/* Lower-cases and trims value into buf so "  CUDA " and "cuda" mean the same. */
static void normalise(const char *value, char *buf, size_t cap)
{
    size_t n = 0;
    if (!value) value = "";
    while (*value == ' ' || *value == '\t') value++;
    for (; *value && n + 1 < cap; value++) {
        char c = *value;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        buf[n++] = c;
    }
    while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r' ||
                     buf[n - 1] == '\n'))
        n--;
    buf[n] = '\0';
}

/* 1 for on, 0 for off, -1 when unset or not a boolean word. */
static int flag_value(const char *value)
{
    char v[16];
    if (!value) return -1;
    normalise(value, v, sizeof v);
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on"))
        return 1;
    if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"))
        return 0;
    return -1;
}

static void pick(kiln_backend_choice *out, kiln_backend backend, const char *reason)
{
    out->status = KILN_OK;
    out->backend = backend;
    snprintf(out->reason, sizeof out->reason, "%s", reason);
}

void kiln_backend_choose(const kiln_backend_choice_in *in, kiln_backend_choice *out)
{
    char want[32];
    const char *target = in->hip_target && in->hip_target[0] ? in->hip_target : "unknown";
    int enable_hip = flag_value(in->enable_hip);

    normalise(in->kiln_backend, want, sizeof want);
    if (!strcmp(want, "cpu")) {
        pick(out, KILN_BACKEND_CPU, "KILN_BACKEND=cpu");
        return;
    }
    if (!strcmp(want, "cuda")) {
        pick(out, KILN_BACKEND_CUDA, "KILN_BACKEND=cuda");
        return;
    }
    if (!strcmp(want, "hip")) {
        pick(out, KILN_BACKEND_HIP, "KILN_BACKEND=hip");
        return;
    }
    if (want[0] && strcmp(want, "auto") != 0) {
        out->status = KILN_INVALID_ARGUMENT;
        out->backend = KILN_BACKEND_CPU;
        snprintf(out->reason, sizeof out->reason,
                 "KILN_BACKEND='%s' is not one of auto, cpu, cuda, hip", in->kiln_backend);
        return;
    }

    if (in->cuda_available) {
        pick(out, KILN_BACKEND_CUDA, "auto: an NVIDIA GPU was found through the CUDA driver");
        return;
    }
    if (in->hip_available) {
        if (enable_hip == 0) {
            snprintf(out->reason, sizeof out->reason,
                     "auto: an AMD GPU (%s) was found but KILN_ENABLE_HIP=0 turns HIP off; "
                     "running on the CPU",
                     target);
            out->status = KILN_OK;
            out->backend = KILN_BACKEND_CPU;
            return;
        }
        if (!in->is_windows) {
            pick(out, KILN_BACKEND_HIP, "auto: an AMD GPU was found through the HIP runtime");
            return;
        }
        if (enable_hip == 1) {
            pick(out, KILN_BACKEND_HIP,
                 "auto: an AMD GPU was found and KILN_ENABLE_HIP=1 turns HIP on (Windows)");
            return;
        }
        if (in->hip_aot_for_target) {
            snprintf(out->reason, sizeof out->reason,
                     "auto: an AMD GPU (%s) was found and code objects for it ship with kiln",
                     target);
            out->status = KILN_OK;
            out->backend = KILN_BACKEND_HIP;
            return;
        }
        snprintf(out->reason, sizeof out->reason,
                 "auto: an AMD GPU (%s) was found, but on Windows HIP is used only with "
                 "KILN_ENABLE_HIP=1 or when code objects for the target ship with kiln "
                 "(none for %s); running on the CPU",
                 target, target);
        out->status = KILN_OK;
        out->backend = KILN_BACKEND_CPU;
        return;
    }
    pick(out, KILN_BACKEND_CPU,
         "auto: no GPU was found (no CUDA driver or HIP runtime with a device); running on the "
         "CPU");
}
