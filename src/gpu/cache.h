/*
 * The on-disk store of code objects compiled just in time.
 *
 * Root: KILN_CACHE_DIR, else kiln_fs_default_cache_dir() ($XDG_CACHE_HOME/kiln,
 * ~/.cache/kiln, %LOCALAPPDATA%\kiln). Entries live in <root>/jit-v<format>/ as
 *     <target>.<variant key>.<16 hex digits>.kco
 * so a listing is readable; the hex digits hash the whole key: cache-format version, kiln
 * version, target, compiler and its version, variant key, a hash of the source and the
 * compiler options. An entry is a header (magic, format version, lengths, checksums of the
 * header and of the code object), the key in plain text, then the code object. Anything
 * that does not check out (short file, wrong magic, other key, bad checksum) is rebuilt.
 *
 * Concurrency: entries are written to a temporary file and renamed into place
 * (kiln_fs_write_atomic); a miss is built under a per-entry lock file (<entry>.lock,
 * kiln_lock_acquire), so N processes asking at once compile once, and a lock whose owner
 * died is broken by the OS's own liveness check. A directory that cannot be created or
 * written means the object is compiled in memory, with one warning per process.
 * KILN_JIT=0 forbids compiling: a miss is then KILN_KERNEL_NOT_FOUND naming the target,
 * the variant, the targets built ahead of time and the setting that changes it.
 */
#ifndef KILN_GPU_CACHE_H
#define KILN_GPU_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

#define KILN_CACHE_FORMAT 1

typedef struct kiln_cache_key {
    const char *target;           /* "sm_90", "gfx1151" (the device's exact target) */
    const char *compiler;         /* "nvrtc", "hiprtc" */
    const char *compiler_version; /* "13.0" */
    const char *variant;          /* canonical variant key */
    const char *source;           /* the complete text compiled (hashed, not stored) */
    size_t source_len;
    const char *options;          /* every compiler option, joined */
    /* For the KILN_JIT=0 message only: the targets this build ships code objects for
     * ("sm_80, sm_90"); NULL or "" = none. */
    const char *aot_targets;
} kiln_cache_key;

/* Builds the code object on a miss: *image malloc'd, owned by the cache afterwards. On
 * failure returns the status with kiln_last_error() set; nothing is stored. */
typedef kiln_status (*kiln_cache_compile_fn)(void *user, void **image, size_t *len);

typedef enum kiln_cache_origin {
    KILN_CACHE_HIT = 0,    /* read from the cache */
    KILN_CACHE_BUILT = 1,  /* compiled here and stored */
    KILN_CACHE_MEMORY = 2  /* compiled here, not stored (cache unwritable or lock timed out) */
} kiln_cache_origin;

/* Returns the code object for key: from the cache, else compiled by compile (at most once
 * across processes) and stored. *image is malloc'd (caller frees), *len its size; origin
 * (may be NULL) says where it came from.
 * @return KILN_OK; KILN_KERNEL_NOT_FOUND on a miss with KILN_JIT=0; compile's status. */
kiln_status kiln_cache_get(const kiln_cache_key *key, kiln_cache_compile_fn compile,
                           void *user, void **image, size_t *len, kiln_cache_origin *origin);

/* The cache root (KILN_CACHE_DIR or the default) and the folder holding entries.
 * 0 on success. */
int kiln_cache_root(char *buf, size_t cap);
int kiln_cache_dir(char *buf, size_t cap);
/* Full path of key's entry (the lock is the same path + ".lock"). 0 on success. */
int kiln_cache_entry_path(const kiln_cache_key *key, char *buf, size_t cap);

/* ---- `kiln cache ls | clear | warm` --------------------------------------------------- */

typedef struct kiln_cache_entry {
    char file[512];     /* name inside kiln_cache_dir() */
    char target[32];
    char variant[128];
    char compiler[64];  /* "nvrtc 13.0" */
    char kiln_version[16];
    uint64_t bytes;     /* code-object size */
    int valid;          /* 0: corrupt or from another format; it would be rebuilt */
} kiln_cache_entry;

/* Calls fn for every entry (in directory order) until fn returns nonzero. *count (may be
 * NULL) gets the number of entries seen. An absent cache is empty, not an error.
 * @return KILN_OK or KILN_IO_ERROR. */
kiln_status kiln_cache_list(int (*fn)(const kiln_cache_entry *e, void *user), void *user,
                            size_t *count);

/* Removes every entry, leftover temporary file and stale lock under kiln_cache_dir()
 * (locks held by live processes are left alone). *removed (may be NULL) counts files.
 * @return KILN_OK or KILN_IO_ERROR naming the file that could not be removed. */
kiln_status kiln_cache_clear(size_t *removed);

/* Compiles into the cache every variant the backend's generic tier has for the device's
 * target (or for target when not NULL: compiling needs no GPU), one at a time. progress
 * (may be NULL) is called after each variant with its key, index, total, seconds spent and
 * origin. Implemented by the GPU backend (src/gpu/backend_gpu.c).
 * @return KILN_OK, or the first failure (the remaining variants are not tried). */
typedef void (*kiln_cache_progress_fn)(const char *variant, size_t index, size_t total,
                                       double seconds, kiln_cache_origin origin, void *user);
kiln_status kiln_cache_warm(kiln_backend backend, int device, const char *target,
                            kiln_cache_progress_fn progress, void *user);

#endif
