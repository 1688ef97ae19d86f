/* The data types the tool accepts on its command line, and what error each may show
 * against the fp64 reference. */
#ifndef KILN_TOOL_DTYPES_H
#define KILN_TOOL_DTYPES_H

#include "kiln.h"

/* NULL-terminated, in the order of tool_dtype_values: "bf16", "f16", "f32". */
extern const char *const tool_dtype_names[];
extern const kiln_dtype tool_dtype_values[];

/* Largest max-abs error accepted for outputs of magnitude up to about 1: fp32 1e-5,
 * fp16 1e-3, bf16 8e-3 (a few units in the last place of the output format). */
double tool_tolerance(kiln_dtype dtype);

#endif
