#include "dtypes.h"

const char *const tool_dtype_names[] = {"bf16", "f16", "f32", NULL};
const kiln_dtype tool_dtype_values[] = {KILN_BF16, KILN_F16, KILN_F32};

double tool_tolerance(kiln_dtype dtype) {
    switch (dtype) {
    case KILN_F32: return 1e-5;
    case KILN_F16: return 1e-3;
    case KILN_BF16: return 8e-3;
    case KILN_I32: break;
    }
    return 0.0;
}
