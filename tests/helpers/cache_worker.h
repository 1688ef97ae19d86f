/*
 * The fake compiler shared by tests/test_cache.c and tests/helpers/cache_worker.c: it
 * records each compile as a file in a counter folder (so compiles across processes can be
 * counted), sleeps to widen races, and returns bytes that depend only on the key.
 */
#ifndef KILN_TESTS_CACHE_WORKER_H
#define KILN_TESTS_CACHE_WORKER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cache.h"
#include "platform/platform.h"

#define FAKE_IMAGE_BYTES 6000

typedef struct fake_compiler {
    const char *counter_dir;
    unsigned sleep_ms;
    const char *seed; /* folded into the bytes */
} fake_compiler;

static void fake_image_fill(unsigned char *p, size_t n, const char *seed)
{
    unsigned x = 2166136261u;
    for (const char *s = seed; *s; s++) x = (x ^ (unsigned char)*s) * 16777619u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

static kiln_status fake_compile(void *user, void **image, size_t *len)
{
    fake_compiler *fc = user;
    static unsigned serial;
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s%ccompile-%lu-%u", fc->counter_dir, kiln_fs_sep(),
             (unsigned long)kiln_process_id(), serial++);
    kiln_fs_write_atomic(path, "1", 1, err, sizeof err);
    if (fc->sleep_ms) kiln_sleep_ms(fc->sleep_ms);
    unsigned char *p = malloc(FAKE_IMAGE_BYTES);
    if (!p) return KILN_OUT_OF_MEMORY;
    fake_image_fill(p, FAKE_IMAGE_BYTES, fc->seed);
    *image = p;
    *len = FAKE_IMAGE_BYTES;
    return KILN_OK;
}

static const char fake_source[] = "extern \"C\" __global__ void k() {}\n";

static kiln_cache_key fake_key(const char *options)
{
    kiln_cache_key k;
    memset(&k, 0, sizeof k);
    k.target = "sm_90";
    k.compiler = "fake";
    k.compiler_version = "1.0";
    k.variant = "attn_fwd.bf16.d64.full.fixed.generic";
    k.source = fake_source;
    k.source_len = sizeof fake_source - 1;
    k.options = options;
    k.aot_targets = "sm_80";
    return k;
}

#endif
