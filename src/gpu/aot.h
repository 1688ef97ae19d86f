/*
 * Ahead-of-time builds: every generic variant (attention in all modes, split combine,
 * activations) for every listed target, in parallel, each object checked against the
 * target table's limits. Layout written (read back by aot_dir.h):
 *   OUT/<target>/<variant key>.<source hash>.cubin | .hsaco   (the hash: aot_dir.h)
 *   OUT/manifest.json   {"targets": [...], "objects": [{target, variant, kernel, file,
 *                        source_hash, bytes, registers, agprs, sgprs, shared_bytes,
 *                        stack_bytes, wave_size, ...}]}
 *   OUT/.src/<file>     the resolved sources handed to clang
 * Compilers: NVIDIA through NVRTC (loaded at run time, no GPU needed); AMD through clang
 * (KILN_CLANG, else clang-19, clang-20, clang-18, clang on PATH) run as a child process
 * with -nogpulib -nogpuinc, else hipRTC when no clang is found. A child compiler's
 * diagnostics go to this process's stderr.
 */
#ifndef KILN_GPU_AOT_H
#define KILN_GPU_AOT_H

#include <stddef.h>

#include "kiln.h"

typedef struct kiln_aot_progress {
    size_t done, total, failed; /* objects finished so far (failed included), of total */
    const char *target;         /* the object just finished */
    const char *variant;
    kiln_status status;         /* its outcome */
    const char *message;        /* "" or why it failed */
    double seconds;             /* since the build started */
} kiln_aot_progress;

/* Called once per finished object, from one thread at a time. */
typedef void (*kiln_aot_progress_fn)(const kiln_aot_progress *p, void *user);

/* Builds every variant for every target of targets_list (GPU_ARCHS syntax, see
 * kiln_targets_parse) into out_dir (created if missing). max_jobs <= 0: MAX_JOBS from the
 * environment, else the number of cores. Every object is attempted even after a failure.
 * @return KILN_OK when every object compiled and passed the resource check; else the first
 * failure's status with "N of M objects failed" and that object's message (variant, target,
 * numbers). KILN_INVALID_ARGUMENT for a bad target list, KILN_BACKEND_UNAVAILABLE when a
 * needed compiler is missing (naming what was looked for), KILN_UNSUPPORTED when clang does
 * not know a listed target (checked before anything is compiled). */
kiln_status kiln_aot_build(const char *targets_list, const char *out_dir, int max_jobs,
                           kiln_aot_progress_fn progress, void *user);

/* The same, restricted to variants whose key contains `filter` (NULL or "": all). */
kiln_status kiln_aot_build_filtered(const char *targets_list, const char *out_dir,
                                    int max_jobs, const char *filter,
                                    kiln_aot_progress_fn progress, void *user);

/* Whether the AMD compiler kiln_aot_build would use can compile for target (a tiny probe
 * kernel, scratch files in scratch_dir). Writes the compiler's name ("clang-19") to
 * compiler. 1 yes, 0 no, -1 no AMD compiler at all. */
int kiln_aot_amd_compiler_supports(const char *target, const char *scratch_dir, char *compiler,
                                   size_t cap);

#endif
