/* Resolving KILN_BACKEND / auto into one backend: gathers the facts, applies the pure rule
 * of backend_choice.h. */
#include <stdio.h>
#include <string.h>

#include "backend_choice.h"
#include "context.h"
#include "error.h"
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
    char backend_env[32], hip_env[16];
    kiln_backend_probe cuda, hip;
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
    memset(&cuda, 0, sizeof cuda);
    memset(&hip, 0, sizeof hip);
    if (!names_backend(in.kiln_backend)) {
        size_t n;
        const kiln_backend_iface *const *all = kiln_backends(&n);
        for (size_t i = 0; i < n; i++) {
            kiln_backend_probe *pr = all[i]->kind == KILN_BACKEND_CUDA  ? &cuda
                                     : all[i]->kind == KILN_BACKEND_HIP ? &hip
                                                                        : NULL;
            if (pr && all[i]->probe) all[i]->probe(pr);
        }
        in.cuda_available = cuda.devices > 0;
        in.hip_available = hip.devices > 0;
        in.hip_target = hip.target;
        in.hip_aot_for_target = hip.target[0] && hip.code_shipped;
    }
    kiln_backend_choose(&in, &choice);
    if (choice.status != KILN_OK) return kiln_fail(choice.status, "%s", choice.reason);
    out->backend = choice.backend;
    snprintf(out->reason, sizeof out->reason, "%s", choice.reason);
    return KILN_OK;
}
