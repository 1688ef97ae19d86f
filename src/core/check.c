/* Argument checks shared by the public entry points. */
#include <stdint.h>

#include "check.h"
#include "error.h"

int64_t kiln_tensor_numel(const kiln_tensor *t)
{
    int64_t n = 1;
    int i;
    for (i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

kiln_status kiln_check_struct_size(size_t size, size_t own, const char *name,
                                   const char *type)
{
    /* 0.2 is the first layout with a size field, so every structure has one known size for
     * now; a structure that grows keeps its older sizes accepted here, reading the fields
     * they lack as defaults. */
    if (size == own) return KILN_OK;
    KILN_FAIL_IF(size == 0, KILN_ABI_MISMATCH,
                 "%s.struct_size is 0: fill the %s with its init function (kiln_tensor_init, "
                 "kiln_tensor_contiguous, kiln_attention_params_init, ...) before use",
                 name, type);
    return kiln_fail(KILN_ABI_MISMATCH,
                     "%s.struct_size is %zu, not a size of %s this library (kiln %s) knows "
                     "(%zu): the program was built against another kiln.h (one before 0.2 "
                     "had no size field); rebuild it against this library's header",
                     name, size, type, KILN_VERSION_STRING, own);
}

kiln_status kiln_check_tensor(const kiln_tensor *t, const char *name, int32_t rank,
                              int last_contiguous)
{
    int i;
    KILN_FAIL_IF(!t, KILN_INVALID_ARGUMENT, "%s is NULL", name);
    KILN_FORWARD(kiln_check_struct_size(t->struct_size, sizeof *t, name, "kiln_tensor"));
    KILN_FAIL_IF(kiln_dtype_size(t->dtype) == 0, KILN_INVALID_ARGUMENT,
                 "%s has unknown dtype %d", name, (int)t->dtype);
    KILN_FAIL_IF(t->rank != rank, KILN_INVALID_ARGUMENT, "%s has rank %d; expected %d", name,
                 (int)t->rank, (int)rank);
    for (i = 0; i < rank; i++)
        KILN_FAIL_IF(t->shape[i] < 0, KILN_INVALID_ARGUMENT, "%s.shape[%d] is %lld (negative)",
                     name, i, (long long)t->shape[i]);
    /* An empty tensor addresses no element: its data and strides are never used (numpy
     * gives such arrays zero strides), so they are not checked. */
    if (kiln_tensor_numel(t) == 0) return KILN_OK;
    for (i = 0; i < rank; i++)
        KILN_FAIL_IF(t->stride[i] < 0, KILN_INVALID_ARGUMENT,
                     "%s.stride[%d] is %lld (negative strides are not supported)", name, i,
                     (long long)t->stride[i]);
    KILN_FAIL_IF(!t->data, KILN_INVALID_ARGUMENT, "%s.data is NULL", name);
    KILN_FAIL_IF(last_contiguous && t->shape[rank - 1] > 1 && t->stride[rank - 1] != 1,
                 KILN_INVALID_ARGUMENT,
                 "%s's last dimension has stride %lld; it must be contiguous (stride 1)", name,
                 (long long)t->stride[rank - 1]);
    return KILN_OK;
}

kiln_status kiln_check_dtype(const kiln_tensor *t, const char *name, kiln_dtype want)
{
    KILN_FAIL_IF(t->dtype != want, KILN_INVALID_ARGUMENT, "%s has dtype %s; expected %s", name,
                 kiln_dtype_name(t->dtype), kiln_dtype_name(want));
    return KILN_OK;
}

kiln_status kiln_check_dim(const kiln_tensor *t, const char *name, int dim, int64_t want,
                           const char *what)
{
    KILN_FAIL_IF(t->shape[dim] != want, KILN_INVALID_ARGUMENT,
                 "%s.shape[%d] (%s) is %lld; expected %lld", name, dim, what,
                 (long long)t->shape[dim], (long long)want);
    return KILN_OK;
}

/* [first, last] byte addresses a tensor can touch; returns 0 for an empty tensor. */
static int span(const kiln_tensor *t, uintptr_t *lo, uintptr_t *hi)
{
    int64_t extent = 0;
    int i;
    if (!t->data || kiln_tensor_numel(t) == 0) return 0;
    for (i = 0; i < t->rank; i++) extent += (t->shape[i] - 1) * t->stride[i];
    *lo = (uintptr_t)t->data;
    *hi = *lo + (uintptr_t)((extent + 1) * (int64_t)kiln_dtype_size(t->dtype)) - 1;
    return 1;
}

kiln_status kiln_check_no_overlap(const kiln_tensor *a, const char *an, const kiln_tensor *b,
                                  const char *bn)
{
    uintptr_t alo, ahi, blo, bhi;
    if (!a || !b || !span(a, &alo, &ahi) || !span(b, &blo, &bhi)) return KILN_OK;
    KILN_FAIL_IF(alo <= bhi && blo <= ahi, KILN_INVALID_ARGUMENT,
                 "%s overlaps %s in memory; outputs must not alias inputs", an, bn);
    return KILN_OK;
}
