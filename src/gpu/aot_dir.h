/*
 * Shipped (ahead-of-time) code objects at run time. Layout of an AOT directory, as
 * `kiln build --out DIR` writes it:
 *   DIR/<target>/<variant key>.<source hash>.cubin  (NVIDIA), .hsaco (AMD)
 *   DIR/manifest.json                 (what was built, with resources; for people and tools)
 * The source hash is kiln_kernel_source_hash of the variant's kernel file: an object is used
 * only by a library whose kernels are the ones it was compiled from (a kernel's arguments
 * and launch contract, programmatic dependent launch included, change with them).
 * The directory searched is KILN_AOT_DIR when set, else aot/ (or kiln/aot/) in the folder
 * the library file was loaded from (a Python wheel's kiln/aot/), else the one this library
 * was installed with (KILN_AOT_INSTALL_DIR at build time), else none.
 */
#ifndef KILN_GPU_AOT_DIR_H
#define KILN_GPU_AOT_DIR_H

#include <stddef.h>

#include "json.h"
#include "kiln.h"

/* Writes the AOT directory in use; 0 on success, -1 when there is none. */
int kiln_aot_dir(char *buf, size_t cap);
/* 1 when the AOT directory holds code objects for target that this library would load
 * (built from its kernel sources). */
int kiln_gpu_aot_ships(const char *target);
/* The shipped object for (target, variant, source hash): KILN_OK with *image malloc'd, or
 * KILN_KERNEL_NOT_FOUND (message not set: a miss is normal), *stale set to 1 when the folder
 * holds an object for the variant built from other sources (an older or newer kiln's). */
kiln_status kiln_aot_load(const char *target, const char *variant_key, const char *source_hash,
                          void **image, size_t *len, int *stale);
/* Removes from target_dir the objects for variant_key other than keep_name (other source
 * hashes, or names without one): a rebuild replaces a variant's object instead of adding
 * one beside it. */
void kiln_aot_remove_stale(const char *target_dir, const char *variant_key,
                           const char *keep_name);
/* Names (into buf, comma-separated) the targets the AOT directory holds objects for that
 * this library would load, "" if none. */
void kiln_aot_targets(char *buf, size_t cap);
/* Adds "aot": {"dir": ..., "targets": [...]} to the open JSON object. */
void kiln_aot_describe(kiln_json *j);

#endif
