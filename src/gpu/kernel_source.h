/*
 * The device code embedded in the library (kernels/ at build time, generated into
 * kiln_kernels.c). NVRTC and hipRTC get one self-contained text per kernel file: every
 * `#include "..."` of an embedded file is inlined once, with #line markers so compiler
 * messages name the original files. Variant macros are passed as options
 * (kiln_gpu_variant_defines), so one resolved text serves all variants of a file.
 */
#ifndef KILN_GPU_KERNEL_SOURCE_H
#define KILN_GPU_KERNEL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

/* Raw text of an embedded file by its path under kernels/ ("vendor/hip.h"); NULL if none. */
const char *kiln_kernel_file(const char *path, size_t *len);
/* Number of embedded files and the path of the i-th. */
size_t kiln_kernel_file_count(void);
const char *kiln_kernel_file_path(size_t i);

/* The resolved text of a kernel file ("attention.cu"), cached for the process (thread-safe);
 * the pointer stays valid until exit. KILN_INTERNAL if the file or an include is missing. */
kiln_status kiln_kernel_source(const char *file, const char **text, size_t *len);

/* 64-bit FNV-1a of the resolved text without its carriage returns, as 16 lower-case hex
 * digits plus NUL: the name shipped code objects carry (aot_dir.h). */
kiln_status kiln_kernel_source_hash(const char *file, char hex[17]);

#endif
