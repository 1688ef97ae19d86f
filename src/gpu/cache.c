#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "platform/platform.h"

#define ENTRY_MAGIC "KILNKCO\0"
#define HEADER_BYTES 40
#define ENTRY_SUFFIX ".kco"
#define LOCK_SUFFIX ".lock"
/* A variant compiles in seconds; a waiter gives up (and compiles in memory) long after. */
#define LOCK_TIMEOUT_MS (10u * 60u * 1000u)

/* FNV-1a with a final avalanche: stable across platforms and versions, which is all the
 * entry names and checksums need (the stored key text guards against collisions). */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t hash_finish(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static uint64_t hash64(const void *data, size_t len)
{
    return hash_finish(hash_bytes(0xcbf29ce484222325ull, data, len));
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* printf's 64-bit formats differ between C runtimes (MinGW's msvcrt), so hex is spelled out. */
static void hex64(char out[17], uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = digits[v & 15];
    out[16] = '\0';
}

static int path_join(char *buf, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(buf, cap, "%s%c%s", dir, kiln_fs_sep(), name);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int kiln_cache_root(char *buf, size_t cap)
{
    if (kiln_env_get("KILN_CACHE_DIR", buf, cap) && buf[0]) return 0;
    return kiln_fs_default_cache_dir(buf, cap);
}

int kiln_cache_dir(char *buf, size_t cap)
{
    char root[1024], name[32];
    if (kiln_cache_root(root, sizeof root) != 0) return -1;
    snprintf(name, sizeof name, "jit-v%d", KILN_CACHE_FORMAT);
    return path_join(buf, cap, root, name);
}

/* The key in plain text: stored in the entry (checked on every read, shown by `ls`). */
static char *key_text(const kiln_cache_key *key)
{
    char src[17];
    hex64(src, hash64(key->source, key->source_len));
    const char *opts = key->options ? key->options : "";
    size_t cap = strlen(key->target) + strlen(key->compiler) + strlen(key->compiler_version) +
                 strlen(key->variant) + strlen(opts) + 256;
    char *text = malloc(cap);
    if (!text) return NULL;
    snprintf(text, cap,
             "format=%d\nkiln=%s\ntarget=%s\ncompiler=%s %s\nvariant=%s\nsource=%s:%lu\n"
             "options=%s\n",
             KILN_CACHE_FORMAT, KILN_VERSION_STRING, key->target, key->compiler,
             key->compiler_version, key->variant, src, (unsigned long)key->source_len, opts);
    return text;
}

/* Only characters every file system accepts reach the file name. */
static void sanitize(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; *src && n + 1 < cap; src++) {
        char c = *src;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        dst[n++] = ok ? c : '_';
    }
    dst[n] = '\0';
}

static int entry_path_for(const kiln_cache_key *key, const char *text, char *buf, size_t cap)
{
    char dir[1024], name[400], target[40], variant[160], hash[17];
    if (kiln_cache_dir(dir, sizeof dir) != 0) return -1;
    sanitize(target, sizeof target, key->target);
    sanitize(variant, sizeof variant, key->variant);
    hex64(hash, hash64(text, strlen(text)));
    snprintf(name, sizeof name, "%s.%s.%s" ENTRY_SUFFIX, target, variant, hash);
    return path_join(buf, cap, dir, name);
}

int kiln_cache_entry_path(const kiln_cache_key *key, char *buf, size_t cap)
{
    char *text = key_text(key);
    if (!text) return -1;
    int r = entry_path_for(key, text, buf, cap);
    free(text);
    return r;
}

/* Checks a whole entry file; on success points *key_out / *payload into data. */
static int entry_parse(const unsigned char *data, size_t len, const char **key_out,
                       size_t *key_len, const unsigned char **payload, size_t *payload_len)
{
    if (len < HEADER_BYTES || memcmp(data, ENTRY_MAGIC, 8) != 0) return -1;
    if (get_u32(data + 8) != KILN_CACHE_FORMAT) return -1;
    uint64_t klen = get_u32(data + 12), plen = get_u64(data + 16);
    if (klen > len || plen > len || HEADER_BYTES + klen + plen != len) return -1;
    uint64_t h = hash_bytes(0xcbf29ce484222325ull, data, 32);
    h = hash_finish(hash_bytes(h, data + HEADER_BYTES, (size_t)klen));
    if (h != get_u64(data + 32)) return -1;
    if (hash64(data + HEADER_BYTES + klen, (size_t)plen) != get_u64(data + 24)) return -1;
    *key_out = (const char *)data + HEADER_BYTES;
    *key_len = (size_t)klen;
    *payload = data + HEADER_BYTES + klen;
    *payload_len = (size_t)plen;
    return 0;
}

static unsigned char *entry_build(const char *text, const void *image, size_t len,
                                  size_t *out_len)
{
    size_t klen = strlen(text);
    unsigned char *e = malloc(HEADER_BYTES + klen + len);
    if (!e) return NULL;
    memcpy(e, ENTRY_MAGIC, 8);
    put_u32(e + 8, KILN_CACHE_FORMAT);
    put_u32(e + 12, (uint32_t)klen);
    put_u64(e + 16, len);
    put_u64(e + 24, hash64(image, len));
    memcpy(e + HEADER_BYTES, text, klen);
    memcpy(e + HEADER_BYTES + klen, image, len);
    uint64_t h = hash_bytes(0xcbf29ce484222325ull, e, 32);
    put_u64(e + 32, hash_finish(hash_bytes(h, text, klen)));
    *out_len = HEADER_BYTES + klen + len;
    return e;
}

/* 1: a valid entry for text was read into *image; 0: missing; -1: present but unusable. */
static int entry_read(const char *path, const char *text, void **image, size_t *len)
{
    void *data = NULL;
    size_t n = 0;
    char err[256];
    const char *k;
    const unsigned char *payload;
    size_t klen, plen;
    if (!kiln_fs_exists(path)) return 0;
    if (kiln_fs_read(path, &data, &n, err, sizeof err) != 0) return -1;
    if (entry_parse(data, n, &k, &klen, &payload, &plen) != 0 || klen != strlen(text) ||
        memcmp(k, text, klen) != 0) {
        free(data);
        return -1;
    }
    void *copy = malloc(plen ? plen : 1);
    if (!copy) {
        free(data);
        return -1;
    }
    memcpy(copy, payload, plen);
    free(data);
    *image = copy;
    *len = plen;
    return 1;
}

/* One warning per process for an unusable cache: the first cause is the one reported. */
static kiln_once warn_once = KILN_ONCE_INIT;
static kiln_mutex *warn_mutex;
static int warned;

static void warn_init(void) { warn_mutex = kiln_mutex_create(); }

static void warn_unwritable(const char *dir, const char *why)
{
    int first = 0;
    kiln_once_run(&warn_once, warn_init);
    if (warn_mutex) kiln_mutex_lock(warn_mutex);
    if (!warned) {
        warned = 1;
        first = 1;
    }
    if (warn_mutex) kiln_mutex_unlock(warn_mutex);
    if (first)
        kiln_log(KILN_LOG_WARN,
                 "kiln: the kernel cache %s cannot be used (%s); compiling in memory, so "
                 "each process compiles again. Set KILN_CACHE_DIR to a writable folder.",
                 dir, why);
}

static int jit_allowed(void)
{
    char v[16];
    if (!kiln_env_get("KILN_JIT", v, sizeof v)) return 1;
    return !(strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0 ||
             strcmp(v, "no") == 0);
}

kiln_status kiln_cache_get(const kiln_cache_key *key, kiln_cache_compile_fn compile, void *user,
                           void **image, size_t *len, kiln_cache_origin *origin)
{
    char dir[1024], path[1400], lock_path[1500], err[512];
    kiln_cache_origin where = KILN_CACHE_MEMORY;
    kiln_status st;
    kiln_lock *lock = NULL;
    int usable, r;

    *image = NULL;
    *len = 0;
    char *text = key_text(key);
    KILN_FAIL_IF(!text, KILN_OUT_OF_MEMORY, "out of memory building a cache key");
    if (kiln_cache_dir(dir, sizeof dir) != 0 || entry_path_for(key, text, path, sizeof path)) {
        free(text);
        return kiln_fail(KILN_IO_ERROR,
                         "no kernel cache folder: set KILN_CACHE_DIR (the default needs HOME, "
                         "XDG_CACHE_HOME or LOCALAPPDATA)");
    }
    snprintf(lock_path, sizeof lock_path, "%s" LOCK_SUFFIX, path);
    usable = kiln_fs_mkdirs(dir) == 0 && kiln_fs_writable_dir(dir);

    r = entry_read(path, text, image, len);
    if (r == 1) {
        free(text);
        if (origin) *origin = KILN_CACHE_HIT;
        return KILN_OK;
    }

    if (!jit_allowed()) {
        const char *built = key->aot_targets && key->aot_targets[0] ? key->aot_targets : "none";
        free(text);
        return kiln_fail(KILN_KERNEL_NOT_FOUND,
                         "no code object for variant %s on target %s: this build ships code "
                         "objects for [%s] and the kernel cache (%s) has none, and KILN_JIT=0 "
                         "forbids compiling. Unset KILN_JIT to compile it on first use, run "
                         "`kiln cache warm`, or rebuild kiln with %s in GPU_ARCHS",
                         key->variant, key->target, built, dir, key->target);
    }

    if (!usable) {
        warn_unwritable(dir, "the folder cannot be created or written");
    } else {
        int got = kiln_lock_acquire(lock_path, LOCK_TIMEOUT_MS, &lock, err, sizeof err);
        if (got == 0) {
            /* Another process may have built it while this one waited. */
            r = entry_read(path, text, image, len);
            if (r == 1) {
                kiln_lock_release(lock);
                free(text);
                if (origin) *origin = KILN_CACHE_HIT;
                return KILN_OK;
            }
            if (r == -1)
                kiln_log(KILN_LOG_INFO, "kiln: rebuilding the damaged cache entry %s", path);
        } else if (got == 1) {
            kiln_log(KILN_LOG_WARN,
                     "kiln: waited %u s for the cache lock %s; compiling %s in memory",
                     LOCK_TIMEOUT_MS / 1000, lock_path, key->variant);
        } else {
            warn_unwritable(dir, err);
        }
    }

    *image = NULL;
    *len = 0;
    st = compile(user, image, len);
    if (st != KILN_OK) {
        kiln_lock_release(lock);
        free(text);
        return st;
    }
    if (lock) {
        size_t elen = 0;
        unsigned char *entry = entry_build(text, *image, *len, &elen);
        if (entry && kiln_fs_write_atomic(path, entry, elen, err, sizeof err) == 0)
            where = KILN_CACHE_BUILT;
        else
            warn_unwritable(dir, entry ? err : "out of memory");
        free(entry);
        kiln_lock_release(lock);
    }
    free(text);
    if (origin) *origin = where;
    return KILN_OK;
}

/* ---- ls / clear ----------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void key_field(const char *text, size_t len, const char *field, char *out, size_t cap)
{
    size_t flen = strlen(field);
    out[0] = '\0';
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && text[end] != '\n')
            end++;
        if (end - i > flen && memcmp(text + i, field, flen) == 0 && text[i + flen] == '=') {
            size_t n = end - i - flen - 1;
            if (n >= cap) n = cap - 1;
            memcpy(out, text + i + flen + 1, n);
            out[n] = '\0';
            return;
        }
        i = end + 1;
    }
}

typedef struct list_state {
    const char *dir;
    int (*fn)(const kiln_cache_entry *e, void *user);
    void *user;
    size_t count;
    int stopped;
} list_state;

static int list_one(const char *name, void *user)
{
    list_state *s = user;
    char path[1600];
    void *data = NULL;
    size_t n = 0;
    char err[256];
    kiln_cache_entry e;
    if (!ends_with(name, ENTRY_SUFFIX)) return 0;
    memset(&e, 0, sizeof e);
    snprintf(e.file, sizeof e.file, "%s", name);
    if (path_join(path, sizeof path, s->dir, name) == 0 &&
        kiln_fs_read(path, &data, &n, err, sizeof err) == 0) {
        const char *k;
        const unsigned char *payload;
        size_t klen, plen;
        if (entry_parse(data, n, &k, &klen, &payload, &plen) == 0) {
            e.valid = 1;
            e.bytes = plen;
            key_field(k, klen, "target", e.target, sizeof e.target);
            key_field(k, klen, "variant", e.variant, sizeof e.variant);
            key_field(k, klen, "compiler", e.compiler, sizeof e.compiler);
            key_field(k, klen, "kiln", e.kiln_version, sizeof e.kiln_version);
        }
        free(data);
    }
    s->count++;
    if (s->fn && s->fn(&e, s->user)) {
        s->stopped = 1;
        return 1;
    }
    return 0;
}

kiln_status kiln_cache_list(int (*fn)(const kiln_cache_entry *e, void *user), void *user,
                            size_t *count)
{
    char dir[1024];
    list_state s = {dir, fn, user, 0, 0};
    if (count) *count = 0;
    KILN_FAIL_IF(kiln_cache_dir(dir, sizeof dir) != 0, KILN_IO_ERROR,
                 "no kernel cache folder: set KILN_CACHE_DIR");
    if (!kiln_fs_exists(dir)) return KILN_OK;
    KILN_FAIL_IF(kiln_fs_list(dir, list_one, &s) != 0 && !s.stopped, KILN_IO_ERROR,
                 "cannot list the kernel cache %s", dir);
    if (count) *count = s.count;
    return KILN_OK;
}

typedef struct clear_state {
    const char *dir;
    size_t removed;
    char failed[1600];
} clear_state;

static int clear_one(const char *name, void *user)
{
    clear_state *s = user;
    char path[1600], err[256];
    if (path_join(path, sizeof path, s->dir, name) != 0) return 0;
    if (ends_with(name, LOCK_SUFFIX)) {
        /* A lock file goes only while this process holds it (releasing removes it), so
         * one that a compiler has just taken is never pulled from under it. */
        kiln_lock *lock = NULL;
        if (kiln_lock_acquire(path, 0, &lock, err, sizeof err) != 0) return 0;
        kiln_lock_release(lock);
        if (!kiln_fs_exists(path)) {
            s->removed++;
            return 0;
        }
    }
    if (!ends_with(name, ENTRY_SUFFIX) && !ends_with(name, LOCK_SUFFIX) &&
        !strstr(name, ".tmp"))
        return 0;
    /* kiln_fs_write_atomic names its temporary "<entry>.tmp<pid>.<n>": one whose writer
     * still runs is about to be renamed into place, so it is not ours to remove. */
    if (!ends_with(name, ENTRY_SUFFIX) && !ends_with(name, LOCK_SUFFIX)) {
        const char *t = strstr(name, ".tmp");
        char *end;
        unsigned long long pid = strtoull(t + 4, &end, 10);
        if (end != t + 4 && *end == '.' && kiln_process_alive((uint64_t)pid)) return 0;
    }
    if (kiln_fs_remove(path) != 0) {
        if (!s->failed[0]) snprintf(s->failed, sizeof s->failed, "%s", path);
        return 0;
    }
    s->removed++;
    return 0;
}

kiln_status kiln_cache_clear(size_t *removed)
{
    char dir[1024];
    clear_state s;
    memset(&s, 0, sizeof s);
    s.dir = dir;
    if (removed) *removed = 0;
    KILN_FAIL_IF(kiln_cache_dir(dir, sizeof dir) != 0, KILN_IO_ERROR,
                 "no kernel cache folder: set KILN_CACHE_DIR");
    if (!kiln_fs_exists(dir)) return KILN_OK;
    KILN_FAIL_IF(kiln_fs_list(dir, clear_one, &s) != 0, KILN_IO_ERROR,
                 "cannot list the kernel cache %s", dir);
    if (removed) *removed = s.removed;
    KILN_FAIL_IF(s.failed[0], KILN_IO_ERROR, "cannot remove %s from the kernel cache",
                 s.failed);
    return KILN_OK;
}
