/* Argument checks shared by the public entry points (src/core/check.c). Each returns
 * KILN_OK or sets a message naming the argument and returns the status. */
#ifndef KILN_CORE_CHECK_H
#define KILN_CORE_CHECK_H

#include "kiln.h"

/* The growth rule of kiln.h's structures: KILN_OK when size (the caller's struct_size) is
 * a size this library knows for the structure (own: sizeof here; every released size of a
 * structure is listed in check.c), else KILN_ABI_MISMATCH naming the argument. Call it
 * before reading any other field. */
kiln_status kiln_check_struct_size(size_t size, size_t own, const char *name,
                                   const char *type);

/* t non-NULL, struct_size known, data non-NULL (unless empty), rank as given, dtype known,
 * strides >= 0, and the last dimension contiguous when last_contiguous. */
kiln_status kiln_check_tensor(const kiln_tensor *t, const char *name, int32_t rank,
                              int last_contiguous);
kiln_status kiln_check_dtype(const kiln_tensor *t, const char *name, kiln_dtype want);
/* Checks t->shape[dim] == want; what names the dimension ("heads_kv"). */
kiln_status kiln_check_dim(const kiln_tensor *t, const char *name, int dim, int64_t want,
                           const char *what);
int64_t kiln_tensor_numel(const kiln_tensor *t);
/* Fails if the byte spans of a (written) and b overlap. */
kiln_status kiln_check_no_overlap(const kiln_tensor *a, const char *an, const kiln_tensor *b,
                                  const char *bn);

#endif
