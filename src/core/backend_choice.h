/*
 * Which backend KILN_BACKEND_AUTO resolves to. A pure function of its inputs, so every rule
 * (Linux and Windows) is unit-tested on any machine; the caller gathers the facts.
 *
 * How kiln_context_create() calls it:
 *
 *     char backend_env[32], hip_env[16], hip_target[32] = "";
 *     kiln_backend_choice_in in = {0};
 *     in.kiln_backend = kiln_env_get("KILN_BACKEND", backend_env, sizeof backend_env)
 *                           ? backend_env : NULL;
 *     in.enable_hip = kiln_env_get("KILN_ENABLE_HIP", hip_env, sizeof hip_env) ? hip_env : NULL;
 *     in.is_windows = kiln_fs_sep() == '\\';
 *     <each built backend's probe (src/core/backend.h) fills one kiln_backend_probe>
 *     in.cuda_available = cuda.devices > 0;
 *     in.hip_available = hip.devices > 0;
 *     in.hip_target = hip.target;
 *     in.hip_aot_for_target = hip.code_shipped;
 *     kiln_backend_choice out;
 *     kiln_backend_choose(&in, &out);
 *     if (out.status != KILN_OK) return kiln_fail(out.status, "%s", out.reason);
 *     backend = out.backend;   // never AUTO; out.reason goes into kiln_info_json()
 *
 * Probing loads driver libraries, so a caller
 * that already knows KILN_BACKEND names one backend may skip the probes: the choice for an
 * explicit value does not read them.
 */
#ifndef KILN_CORE_BACKEND_CHOICE_H
#define KILN_CORE_BACKEND_CHOICE_H

#include "kiln.h"

typedef struct kiln_backend_choice_in {
    const char *kiln_backend; /* KILN_BACKEND value; NULL or "" = unset (auto) */
    const char *enable_hip;   /* KILN_ENABLE_HIP value; NULL = unset */
    int is_windows;
    int cuda_available;       /* the CUDA driver loads and reports at least one device */
    int hip_available;        /* the HIP runtime loads and reports at least one device */
    int hip_aot_for_target;   /* code objects for the detected HIP target ship with kiln */
    const char *hip_target;   /* detected HIP target ("gfx1151"), for the reason; may be NULL */
} kiln_backend_choice_in;

typedef struct kiln_backend_choice {
    kiln_status status;   /* KILN_INVALID_ARGUMENT for an unknown KILN_BACKEND value */
    kiln_backend backend; /* CPU, CUDA or HIP; CPU when status is not KILN_OK */
    char reason[256];     /* one sentence, for kiln_info_json() and error messages */
} kiln_backend_choice;

/* Rules, in order:
 *  1. KILN_BACKEND=cpu|cuda|hip (any case, surrounding blanks ignored) picks that backend
 *     whether or not it is available: a named backend never falls back. Another value than
 *     those and auto is an error.
 *  2. auto: CUDA when available.
 *  3. auto: HIP when available, unless KILN_ENABLE_HIP=0. On Windows HIP is opt-in: it is
 *     picked only with KILN_ENABLE_HIP=1 or when code objects for the detected target ship.
 *  4. Otherwise the CPU, and the reason says why no GPU backend was picked. */
void kiln_backend_choose(const kiln_backend_choice_in *in, kiln_backend_choice *out);

#endif
