/* Shipped code objects at run time (layout in aot_dir.h). */
#include <stdio.h>
#include <string.h>

#include "gpu/aot_dir.h"
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

/* Stops the listing at the first code object, noting it in *found. */
static int find_object(const char *name, void *user)
{
    size_t n = strlen(name);
    int *found = user;
    *found = n > 6 && (!strcmp(name + n - 6, ".cubin") || !strcmp(name + n - 6, ".hsaco"));
    return *found;
}

int kiln_gpu_aot_ships(const char *target)
{
    char dir[1024], sub[1200];
    int found = 0;
    if (kiln_aot_dir(dir, sizeof dir) != 0) return 0;
    snprintf(sub, sizeof sub, "%s%c%s", dir, kiln_fs_sep(), target);
    kiln_fs_list(sub, find_object, &found);
    return found;
}

typedef struct stale_search {
    const char *key;
    int found;
} stale_search;

static int is_hex16(const char *s)
{
    for (int i = 0; i < 16; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

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
