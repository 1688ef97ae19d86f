/* Shipped code objects at run time (layout in aot_dir.h). */
#include <stdio.h>
#include <string.h>

#include "gpu/aot_dir.h"
#include "gpu/kernel_source.h"
#include "platform/platform.h"

#ifndef KILN_AOT_INSTALL_DIR
#define KILN_AOT_INSTALL_DIR ""
#endif

/* aot/ beside the library file (the Python wheel's layout: kiln/libkiln.so, kiln/aot/), or
 * kiln/aot/ beside it (an installed lib/libkiln.so with lib/kiln/aot/). */
static int beside_library(char *buf, size_t cap)
{
    static const char *subdirs[] = {"aot", "kiln%caot"};
    char self[1024], sub[16];
    size_t i;
    if (kiln_dl_self_dir(self, sizeof self) != 0) return -1;
    for (i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        int n;
        snprintf(sub, sizeof sub, subdirs[i], kiln_fs_sep());
        n = snprintf(buf, cap, "%s%c%s", self, kiln_fs_sep(), sub);
        if (n > 0 && (size_t)n < cap && kiln_fs_exists(buf)) return 0;
    }
    return -1;
}

int kiln_aot_dir(char *buf, size_t cap)
{
    if (kiln_env_get("KILN_AOT_DIR", buf, cap) && buf[0]) return 0;
    /* Objects shipped with this very library come before the install prefix's. */
    if (beside_library(buf, cap) == 0) return 0;
    if (KILN_AOT_INSTALL_DIR[0] && kiln_fs_exists(KILN_AOT_INSTALL_DIR)) {
        snprintf(buf, cap, "%s", KILN_AOT_INSTALL_DIR);
        return 0;
    }
    return -1;
}

static int is_hex16(const char *s)
{
    for (int i = 0; i < 16; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* The source hashes of this library's kernel files (the top-level .cu files it embeds). */
#define MAX_KERNEL_FILES 32
typedef struct own_hashes {
    char hex[MAX_KERNEL_FILES][17];
    int n;
    int found;
} own_hashes;

static void own_hashes_init(own_hashes *h)
{
    h->n = 0;
    h->found = 0;
    for (size_t i = 0; i < kiln_kernel_file_count() && h->n < MAX_KERNEL_FILES; i++) {
        const char *path = kiln_kernel_file_path(i);
        size_t len = strlen(path);
        if (strchr(path, '/') || len < 4 || strcmp(path + len - 3, ".cu") != 0) continue;
        if (kiln_kernel_source_hash(path, h->hex[h->n]) == KILN_OK) h->n++;
    }
}

/* Stops the listing at the first code object this library would load (KEY.HASH.EXT, HASH
 * one of its kernel files'), noting it in found: objects built from other sources do not
 * count as shipped. */
static int find_object(const char *name, void *user)
{
    own_hashes *h = user;
    size_t n = strlen(name);
    if (n < 6 + 18 || (strcmp(name + n - 6, ".cubin") && strcmp(name + n - 6, ".hsaco")))
        return 0;
    const char *hex = name + n - 6 - 16;
    if (hex[-1] != '.' || !is_hex16(hex)) return 0;
    for (int i = 0; i < h->n; i++)
        if (!strncmp(hex, h->hex[i], 16)) return h->found = 1;
    return 0;
}

int kiln_gpu_aot_ships(const char *target)
{
    char dir[1024], sub[1200];
    own_hashes h;
    if (kiln_aot_dir(dir, sizeof dir) != 0) return 0;
    own_hashes_init(&h);
    snprintf(sub, sizeof sub, "%s%c%s", dir, kiln_fs_sep(), target);
    kiln_fs_list(sub, find_object, &h);
    return h.found;
}

typedef struct stale_search {
    const char *key;
    int found;
} stale_search;

/* An object for the key under another source hash (KEY.HASH.EXT), or under the names of
 * builds before hashes were part of them (KEY.EXT). */
static int find_stale(const char *name, void *user)
{
    stale_search *q = user;
    static const char *exts[] = {".cubin", ".hsaco"};
    size_t k = strlen(q->key), n = strlen(name);
    if (n <= k || strncmp(name, q->key, k) != 0) return 0;
    for (int i = 0; i < 2; i++) {
        size_t e = strlen(exts[i]);
        if (n == k + e && !strcmp(name + k, exts[i])) q->found = 1;
        if (n == k + 17 + e && name[k] == '.' && is_hex16(name + k + 1) &&
            !strcmp(name + k + 17, exts[i]))
            q->found = 1;
    }
    return q->found;
}

typedef struct stale_names {
    const char *key;
    char names[8][200];
    int n;
} stale_names;

static int collect_stale(const char *name, void *user)
{
    stale_names *q = user;
    stale_search one;
    one.key = q->key;
    one.found = 0;
    find_stale(name, &one);
    if (one.found && q->n < 8 && strlen(name) < sizeof q->names[0])
        strcpy(q->names[q->n++], name);
    return 0;
}

void kiln_aot_remove_stale(const char *target_dir, const char *variant_key,
                           const char *keep_name)
{
    char path[1400];
    stale_names q;
    q.key = variant_key;
    q.n = 0;
    kiln_fs_list(target_dir, collect_stale, &q);
    for (int i = 0; i < q.n; i++) {
        if (!strcmp(q.names[i], keep_name)) continue;
        snprintf(path, sizeof path, "%s%c%s", target_dir, kiln_fs_sep(), q.names[i]);
        kiln_fs_remove(path);
    }
}

kiln_status kiln_aot_load(const char *target, const char *variant_key, const char *source_hash,
                          void **image, size_t *len, int *stale)
{
    static const char *exts[] = {"cubin", "hsaco"};
    char dir[1024], path[1400], err[256];
    size_t i;
    *stale = 0;
    if (kiln_aot_dir(dir, sizeof dir) != 0) return KILN_KERNEL_NOT_FOUND;
    for (i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s%c%s%c%s.%s.%s", dir, kiln_fs_sep(), target,
                 kiln_fs_sep(), variant_key, source_hash, exts[i]);
        if (kiln_fs_exists(path) && kiln_fs_read(path, image, len, err, sizeof err) == 0)
            return KILN_OK;
    }
    {
        stale_search q;
        q.key = variant_key;
        q.found = 0;
        snprintf(path, sizeof path, "%s%c%s", dir, kiln_fs_sep(), target);
        kiln_fs_list(path, find_stale, &q);
        *stale = q.found;
    }
    return KILN_KERNEL_NOT_FOUND;
}

typedef struct target_list {
    char *buf;
    size_t cap;
} target_list;

static int add_target(const char *name, void *user)
{
    target_list *l = user;
    size_t n = strlen(l->buf);
    if (name[0] == '.' || strchr(name, '.')) return 0; /* manifest.json and the like */
    if (!kiln_gpu_aot_ships(name)) return 0;
    snprintf(l->buf + n, l->cap - n, "%s%s", n ? "," : "", name);
    return 0;
}

void kiln_aot_targets(char *buf, size_t cap)
{
    char dir[1024];
    target_list l;
    buf[0] = '\0';
    if (kiln_aot_dir(dir, sizeof dir) != 0) return;
    l.buf = buf;
    l.cap = cap;
    kiln_fs_list(dir, add_target, &l);
}

void kiln_aot_describe(kiln_json *j)
{
    char dir[1024], targets[1024], *s, *comma;
    kiln_json_object_begin(j, "aot");
    if (kiln_aot_dir(dir, sizeof dir) == 0) kiln_json_string(j, "dir", dir);
    else kiln_json_null(j, "dir");
    kiln_aot_targets(targets, sizeof targets);
    kiln_json_array_begin(j, "targets");
    for (s = targets; *s; s = comma + 1) {
        comma = strchr(s, ',');
        if (!comma) {
            kiln_json_string(j, NULL, s);
            break;
        }
        *comma = '\0';
        kiln_json_string(j, NULL, s);
    }
    kiln_json_array_end(j);
    kiln_json_object_end(j);
}
