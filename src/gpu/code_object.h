/*
 * Resources of a compiled kernel read straight from its code object, with no vendor tool:
 *   NVIDIA cubin (ELF): registers and stack (local memory) from the EIATTR_REGCOUNT and
 *     EIATTR_FRAME_SIZE records of .nv.info for the kernel's symbol (older cubins also keep
 *     the register count in the high byte of .text.<kernel>'s sh_info), static shared memory
 *     from the size of .nv.shared.<kernel>.
 *   AMD HSA code object (ELF): the msgpack NT_AMDGPU_METADATA note (what
 *     `llvm-readelf --notes` prints): .group_segment_fixed_size, .vgpr_count, .agpr_count,
 *     .sgpr_count, .private_segment_fixed_size, .wavefront_size, .max_flat_workgroup_size.
 * and the check of those resources against a target's limits (failure 6 of DESIGN.md).
 */
#ifndef KILN_GPU_CODE_OBJECT_H
#define KILN_GPU_CODE_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "targets.h"

typedef struct kiln_code_object_info {
    kiln_vendor vendor;
    int64_t registers;    /* NVIDIA: per thread; AMD: architected VGPRs */
    int64_t agprs;        /* AMD accumulation VGPRs (CDNA), else 0 */
    int64_t sgprs;        /* AMD, else 0 */
    int64_t shared_bytes; /* static shared memory / LDS */
    int64_t stack_bytes;  /* local memory / private segment (spills, arrays) */
    int32_t wave_size;    /* AMD: from the metadata; NVIDIA: 32 */
    int32_t max_threads;  /* AMD .max_flat_workgroup_size; NVIDIA 0 (not recorded) */
} kiln_code_object_info;

/* Reads the resources of kernel `kernel` from an ELF code object of either vendor.
 * KILN_INVALID_ARGUMENT naming what is missing when the image is not a code object or lacks
 * the kernel. */
kiln_status kiln_code_object_inspect(const void *image, size_t len, const char *kernel,
                                     kiln_code_object_info *info);

/* Checks info against target t for a kernel launched with block_threads threads: shared
 * memory within the static limit, registers within the per-thread / per-block file, wave
 * size equal to the table's, the block size within the compiled maximum.
 * KILN_COMPILE_ERROR naming variant, target and the numbers on a violation. */
kiln_status kiln_code_object_check(const kiln_target *t, const char *variant_key,
                                   int32_t block_threads, const kiln_code_object_info *info);

#endif
