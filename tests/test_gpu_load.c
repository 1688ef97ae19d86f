/*
 * Loading the GPU drivers when they are not there: a named GPU backend fails with
 * KILN_BACKEND_UNAVAILABLE and a message naming the file looked for, the loader's own text
 * and the setting to change; auto falls back to the CPU and says why. The override
 * variables point at files that do not exist, so this runs the same on machines with and
 * without GPUs (and under Wine, where the loader fails with error 126 as on Windows).
 */
#include "test_check.h"
#include "platform/platform.h"

int main(void)
{
    kiln_context *ctx = NULL;
    char buf[8192];
    kiln_env_set("KILN_CUDA_DRIVER_PATH", "no-such-dir/libcuda-kiln-test.so.1");
    kiln_env_set("KILN_NVRTC_PATH", "no-such-dir/libnvrtc-kiln-test.so.13");
    kiln_env_set("KILN_HIP_RUNTIME_PATH", "no-such-dir/libamdhip64-kiln-test.so.6");
    kiln_env_set("KILN_HIPRTC_PATH", "no-such-dir/libhiprtc-kiln-test.so.6");
    kiln_env_set("KILN_BACKEND", NULL);

    check_case("cuda missing");
#if KILN_WITH_CUDA
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_CUDA, 0, &ctx), KILN_BACKEND_UNAVAILABLE);
    CHECK(ctx == NULL);
    CHECK_STR_CONTAINS(kiln_last_error(), "CUDA driver could not be loaded");
    CHECK_STR_CONTAINS(kiln_last_error(),
                       "KILN_CUDA_DRIVER_PATH=no-such-dir/libcuda-kiln-test.so.1 (");
    /* The loader's own words come through (dlerror / FormatMessage), not just "failed". */
    CHECK(strlen(kiln_last_error()) > 120);
    /* Loading is resolved once per process; asking again gives the same answer. */
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_CUDA, 0, &ctx), KILN_BACKEND_UNAVAILABLE);
    CHECK_STR_CONTAINS(kiln_last_error(), "libcuda-kiln-test.so.1");
#else
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_CUDA, 0, &ctx), KILN_BACKEND_UNAVAILABLE);
    CHECK_STR_CONTAINS(kiln_last_error(), "backend 'cuda' is not built into this library");
#endif
    check_note_ran();

    check_case("hip missing");
#if KILN_WITH_HIP
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_HIP, 0, &ctx), KILN_BACKEND_UNAVAILABLE);
    CHECK(ctx == NULL);
    CHECK_STR_CONTAINS(kiln_last_error(), "HIP runtime could not be loaded");
    CHECK_STR_CONTAINS(kiln_last_error(),
                       "KILN_HIP_RUNTIME_PATH=no-such-dir/libamdhip64-kiln-test.so.6 (");
#else
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_HIP, 0, &ctx), KILN_BACKEND_UNAVAILABLE);
    CHECK_STR_CONTAINS(kiln_last_error(), "backend 'hip' is not built into this library");
#endif
    check_note_ran();

    check_case("auto and info");
    CHECK_OK(kiln_context_create(KILN_BACKEND_AUTO, 0, &ctx));
    CHECK_EQ(kiln_context_backend(ctx), KILN_BACKEND_CPU);
    kiln_context_free(ctx);
    CHECK_OK(kiln_info_json(NULL, buf, sizeof buf, NULL));
#if KILN_WITH_CUDA
    CHECK_STR_CONTAINS(buf, "libcuda-kiln-test.so.1");
#endif
#if KILN_WITH_HIP
    CHECK_STR_CONTAINS(buf, "libamdhip64-kiln-test.so.6");
#endif
#if !KILN_WITH_CUDA || !KILN_WITH_HIP
    CHECK_STR_CONTAINS(buf, "not built into this library");
#endif
    CHECK_STR_CONTAINS(buf, "no GPU was found");
    check_note_ran();
    return check_finish("test_gpu_load");
}
