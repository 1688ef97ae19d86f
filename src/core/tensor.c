/* Version, dtypes and tensor views. */
#include <string.h>

#include "error.h"

unsigned kiln_version(void)
{
    return KILN_VERSION_NUMBER;
}

const char *kiln_version_string(void)
{
    return KILN_VERSION_STRING;
}

size_t kiln_dtype_size(kiln_dtype dtype)
{
    switch (dtype) {
    case KILN_F32: return 4;
    case KILN_F16: return 2;
    case KILN_BF16: return 2;
    case KILN_I32: return 4;
    }
    return 0;
}

const char *kiln_dtype_name(kiln_dtype dtype)
{
    switch (dtype) {
    case KILN_F32: return "f32";
    case KILN_F16: return "f16";
    case KILN_BF16: return "bf16";
    case KILN_I32: return "i32";
    }
    return "?";
}

void kiln_tensor_init(kiln_tensor *t)
{
    if (!t) return;
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
}

kiln_status kiln_tensor_contiguous(kiln_tensor *t, void *data, kiln_dtype dtype, int32_t rank,
                                   const int64_t *shape)
{
    int64_t stride = 1;
    int i;
    kiln_error_clear();
    KILN_FAIL_IF(!t, KILN_INVALID_ARGUMENT, "t is NULL");
    KILN_FAIL_IF(rank < 1 || rank > KILN_MAX_RANK, KILN_INVALID_ARGUMENT,
                 "rank is %d; it must be 1..%d", (int)rank, KILN_MAX_RANK);
    KILN_FAIL_IF(!shape, KILN_INVALID_ARGUMENT, "shape is NULL");
    KILN_FAIL_IF(kiln_dtype_size(dtype) == 0, KILN_INVALID_ARGUMENT, "dtype %d is unknown",
                 (int)dtype);
    for (i = 0; i < rank; i++)
        KILN_FAIL_IF(shape[i] < 0, KILN_INVALID_ARGUMENT, "shape[%d] is %lld; it must be >= 0",
                     i, (long long)shape[i]);
    t->struct_size = sizeof *t;
    t->data = data;
    t->dtype = dtype;
    t->rank = rank;
    for (i = KILN_MAX_RANK - 1; i >= 0; i--) {
        if (i >= rank) {
            t->shape[i] = 0;
            t->stride[i] = 0;
            continue;
        }
        t->shape[i] = shape[i];
        t->stride[i] = stride;
        stride *= shape[i] > 0 ? shape[i] : 1;
    }
    return KILN_OK;
}
