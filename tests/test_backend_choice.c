/* Every rule of kiln_backend_choose(), Linux and Windows, on any machine. */
#include "backend_choice.h"
#include "test_check.h"

#define EXPECT_CHOICE(in_, backend_, status_, reason_part_)                                  \
    do {                                                                                     \
        kiln_backend_choice c_;                                                              \
        kiln_backend_choose(&(in_), &c_);                                                    \
        CHECK_STR_EQ(kiln_backend_name(c_.backend), kiln_backend_name(backend_));            \
        CHECK_STR_EQ(kiln_status_name(c_.status), kiln_status_name(status_));                \
        CHECK_STR_CONTAINS(c_.reason, reason_part_);                                         \
    } while (0)

static kiln_backend_choice_in machine(int is_windows, int cuda, int hip, int aot)
{
    kiln_backend_choice_in in;
    memset(&in, 0, sizeof in);
    in.is_windows = is_windows;
    in.cuda_available = cuda;
    in.hip_available = hip;
    in.hip_aot_for_target = aot;
    in.hip_target = hip ? "gfx1151" : NULL;
    return in;
}

static void explicit_values(void)
{
    check_case("KILN_BACKEND named");
    for (int win = 0; win <= 1; win++) {
        kiln_backend_choice_in in = machine(win, 0, 0, 0);
        in.kiln_backend = "cpu";
        EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "KILN_BACKEND=cpu");
        /* A named backend is honoured even where it is missing: no silent fallback. */
        in.kiln_backend = "cuda";
        EXPECT_CHOICE(in, KILN_BACKEND_CUDA, KILN_OK, "KILN_BACKEND=cuda");
        in.kiln_backend = " HIP ";
        EXPECT_CHOICE(in, KILN_BACKEND_HIP, KILN_OK, "KILN_BACKEND=hip");
        in = machine(win, 1, 1, 0);
        in.kiln_backend = "cpu";
        EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "KILN_BACKEND=cpu");
        in.kiln_backend = "metal";
        EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_INVALID_ARGUMENT, "'metal' is not one of");
    }
    check_note_ran();
}

static void auto_linux(void)
{
    check_case("auto on Linux");
    kiln_backend_choice_in in = machine(0, 0, 0, 0);
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "no GPU was found");
    in.kiln_backend = "auto";
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "no GPU was found");
    in.kiln_backend = "";
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "no GPU was found");

    in = machine(0, 1, 0, 0);
    EXPECT_CHOICE(in, KILN_BACKEND_CUDA, KILN_OK, "NVIDIA");
    in = machine(0, 1, 1, 0);
    EXPECT_CHOICE(in, KILN_BACKEND_CUDA, KILN_OK, "NVIDIA");

    /* On Linux HIP needs no opt-in and no shipped code objects. */
    in = machine(0, 0, 1, 0);
    EXPECT_CHOICE(in, KILN_BACKEND_HIP, KILN_OK, "AMD GPU");
    in.enable_hip = "0";
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "KILN_ENABLE_HIP=0");
    in.enable_hip = "1";
    EXPECT_CHOICE(in, KILN_BACKEND_HIP, KILN_OK, "AMD GPU");
    check_note_ran();
}

static void auto_windows(void)
{
    check_case("auto on Windows");
    kiln_backend_choice_in in = machine(1, 0, 0, 0);
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "no GPU was found");
    in = machine(1, 1, 0, 0);
    EXPECT_CHOICE(in, KILN_BACKEND_CUDA, KILN_OK, "NVIDIA");

    /* An AMD GPU with neither opt-in nor shipped code objects stays on the CPU, and the
     * reason names the target and both ways to change it. */
    in = machine(1, 0, 1, 0);
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "KILN_ENABLE_HIP=1");
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "none for gfx1151");
    in.enable_hip = "yes";
    EXPECT_CHOICE(in, KILN_BACKEND_HIP, KILN_OK, "KILN_ENABLE_HIP=1");
    in.enable_hip = "maybe";
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "running on the CPU");

    in = machine(1, 0, 1, 1);
    EXPECT_CHOICE(in, KILN_BACKEND_HIP, KILN_OK, "code objects for it ship");
    in.enable_hip = "0";
    EXPECT_CHOICE(in, KILN_BACKEND_CPU, KILN_OK, "KILN_ENABLE_HIP=0");
    check_note_ran();
}

int main(void)
{
    explicit_values();
    auto_linux();
    auto_windows();
    return check_finish("test_backend_choice");
}
