/* Resolving KILN_BACKEND / auto into one backend: gathers the facts, applies the pure rule
 * of backend_choice.h. */
#include <stdio.h>
#include <string.h>

#include "backend_choice.h"
#include "context.h"
#include "error.h"
#include "gpu/aot_dir.h"
#include "gpu/gpu.h"
#include "platform/platform.h"

/* 1 when value is a backend name other than auto (blanks and case ignored). */
static int names_backend(const char *value)
{
    char v[16];
    size_t n = 0;
    if (!value) return 0;
    while (*value == ' ' || *value == '\t') value++;
    while (*value && *value != ' ' && *value != '\t' && n + 1 < sizeof v) {
        char c = *value++;
        v[n++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    v[n] = '\0';
    return n > 0 && strcmp(v, "auto") != 0;
}

kiln_status kiln_backend_decide(kiln_backend_decision *out)
{
    char backend_env[32], hip_env[16], hip_target[32] = "";
    kiln_backend_choice_in in;
    kiln_backend_choice choice;
    int named;

    memset(&in, 0, sizeof in);
    named = kiln_env_get("KILN_BACKEND", backend_env, sizeof backend_env);
    in.kiln_backend = named ? backend_env : NULL;
    in.enable_hip = kiln_env_get("KILN_ENABLE_HIP", hip_env, sizeof hip_env) ? hip_env : NULL;
    in.is_windows = kiln_fs_sep() == '\\';
    /* Probing loads driver libraries: skip it when KILN_BACKEND already names a backend
     * (the rule for an explicit name reads no probe). */
    if (!names_backend(in.kiln_backend)) {
        in.cuda_available = kiln_gpu_probe(KILN_BACKEND_CUDA, NULL, 0) > 0;
        in.hip_available = kiln_gpu_probe(KILN_BACKEND_HIP, hip_target, sizeof hip_target) > 0;
        in.hip_target = hip_target;
        in.hip_aot_for_target = hip_target[0] && kiln_gpu_aot_ships(hip_target);
    }
    kiln_backend_choose(&in, &choice);
    if (choice.status != KILN_OK) return kiln_fail(choice.status, "%s", choice.reason);
    out->backend = choice.backend;
    snprintf(out->reason, sizeof out->reason, "%s", choice.reason);
    return KILN_OK;
}
