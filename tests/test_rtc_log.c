/*
 * kiln_gpu_compile against a stand-in runtime compiler (no GPU, no NVRTC): ptxas reports
 * warpgroup MMAs it had to serialize (CUDA's C7520) only in the log of a compile that
 * succeeded, so such a compile must fail with KILN_COMPILE_ERROR naming the program, the
 * target and the log's line, and hand back no image; a successful compile whose log has
 * other lines, or none, returns its image.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "gpu/gpu.h"
#include "helpers/stand_in_rtc.h"

static const char *g_log = ""; /* what the stand-in's log holds after a compile */
static int g_destroyed;

static int rtc_version(int *major, int *minor) { *major = 13, *minor = 0; return 0; }
static int rtc_create(void **prog, const char *src, const char *name, int num_headers,
                      const char *const *headers, const char *const *include_names)
{
    (void)src, (void)name, (void)num_headers, (void)headers, (void)include_names;
    *prog = &g_log;
    return 0;
}
static int rtc_destroy(void **prog) { *prog = NULL; ++g_destroyed; return 0; }
static int rtc_compile(void *prog, int num_options, const char *const *options)
{
    (void)prog, (void)num_options, (void)options;
    return 0;
}
static int rtc_log_size(void *prog, size_t *size)
{
    (void)prog;
    *size = strlen(g_log) + 1;
    return 0;
}
static int rtc_log(void *prog, char *log)
{
    (void)prog;
    memcpy(log, g_log, strlen(g_log) + 1);
    return 0;
}
static kiln_rtc_entries stand_in_rtc = {rtc_version, rtc_create, rtc_destroy, rtc_compile,
                                        rtc_log_size, rtc_log, rtc_code_size, rtc_code,
                                        rtc_error};

static kiln_status compile_with_log(const kiln_gpu_driver *drv, const char *log, void **image,
                                    size_t *len)
{
    g_log = log;
    g_destroyed = 0;
    return kiln_gpu_compile(drv, "extern \"C\" __global__ void k() {}", "attn.hopper.cu",
                            "sm_90a", NULL, 0, image, len);
}

int main(void)
{
    /* The CUDA driver's own table (labels, target option), its compiler swapped for the
     * stand-in. */
    const kiln_gpu_driver *cuda = kiln_gpu_driver_for(KILN_BACKEND_CUDA);
    kiln_gpu_driver fake;
    void *image = NULL;
    size_t len = 0;
    if (!cuda) {
        check_case("serialized warpgroup MMAs fail the compile");
        check_note_skip("this build leaves the CUDA backend out");
        return check_finish("test_rtc_log");
    }
    fake = *cuda;
    fake.rtc = &stand_in_rtc;
    fake.load_compiler = rtc_load;

    check_case("a compile with an empty log, or other ptxas lines, gives its image");
    CHECK_OK(compile_with_log(&fake, "", &image, &len));
    CHECK(image != NULL);
    CHECK_EQ(len, 16);
    free(image);
    CHECK_OK(compile_with_log(&fake,
                              "ptxas info    : (C7519) warpgroup.arrive is injected in around "
                              "line 12509 by compiler to allow use of registers in GMMA in "
                              "function 'kiln_attn_fwd'\n",
                              &image, &len));
    CHECK(image != NULL);
    CHECK_EQ(g_destroyed, 1);
    free(image);
    check_note_ran();

    check_case("serialized warpgroup MMAs (C7520) fail the compile, naming what and where");
    image = (void *)&fake; /* must come back NULL */
    len = 99;
    CHECK_STATUS(compile_with_log(&fake,
                                  "ptxas info    : (C7519) warpgroup.arrive is injected\n"
                                  "ptxas info    : (C7520) Potential Performance Loss: "
                                  "wgmma.mma_async instructions are serialized due to program "
                                  "dependence on compiler-inserted WG.AR in divergent path in "
                                  "the function 'kiln_attn_fwd'\n"
                                  "ptxas info    : a later line\n",
                                  &image, &len),
                 KILN_COMPILE_ERROR);
    CHECK(image == NULL);
    CHECK_EQ(len, 0);
    CHECK_EQ(g_destroyed, 1);
    CHECK_STR_CONTAINS(kiln_last_error(), "attn.hopper.cu");
    CHECK_STR_CONTAINS(kiln_last_error(), "sm_90a");
    CHECK_STR_CONTAINS(kiln_last_error(), "warpgroup MMAs serialized");
    CHECK_STR_CONTAINS(kiln_last_error(), "(C7520) Potential Performance Loss");
    CHECK_STR_CONTAINS(kiln_last_error(), "KILN_GPU_TIER");
    CHECK(strstr(kiln_last_error(), "a later line") == NULL);
    check_note_ran();

    return check_finish("test_rtc_log");
}
