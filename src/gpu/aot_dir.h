/*
 * Shipped (ahead-of-time) code objects at run time. Layout of an AOT directory, as
 * `kiln build --out DIR` writes it:
 *   DIR/<target>/<variant key>.cubin  (NVIDIA)   DIR/<target>/<variant key>.hsaco  (AMD)
 *   DIR/manifest.json                 (what was built, with resources; for people and tools)
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
/* 1 when the AOT directory holds code objects for target. */
int kiln_gpu_aot_ships(const char *target);
/* The shipped object for (target, variant): KILN_OK with *image malloc'd, or
 * KILN_KERNEL_NOT_FOUND (message not set: a miss is normal). */
kiln_status kiln_aot_load(const char *target, const char *variant_key, void **image,
                          size_t *len);
/* Names (into buf, comma-separated) the targets the AOT directory holds, "" if none. */
void kiln_aot_targets(char *buf, size_t cap);
/* Adds "aot": {"dir": ..., "targets": [...]} to the open JSON object. */
void kiln_aot_describe(kiln_json *j);

#endif
