#include "kernel_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kiln_kernels.h"
#include "platform/platform.h"

const char *kiln_kernel_file(const char *path, size_t *len)
{
    for (size_t i = 0; i < kiln_kernel_blob_count; ++i)
        if (strcmp(kiln_kernel_blobs[i].path, path) == 0) {
            if (len) *len = kiln_kernel_blobs[i].size;
            return kiln_kernel_blobs[i].text;
        }
    return NULL;
}

size_t kiln_kernel_file_count(void) { return kiln_kernel_blob_count; }

const char *kiln_kernel_file_path(size_t i)
{
    return i < kiln_kernel_blob_count ? kiln_kernel_blobs[i].path : NULL;
}

/* The embedded copy of a path, which lives as long as the process. */
static const char *stable_path(const char *path)
{
    for (size_t i = 0; i < kiln_kernel_blob_count; ++i)
        if (strcmp(kiln_kernel_blobs[i].path, path) == 0) return kiln_kernel_blobs[i].path;
    return NULL;
}

typedef struct text_buf {
    char *data;
    size_t len, cap;
    int oom;
} text_buf;

static void append(text_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16384;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void appendf_line(text_buf *b, int line, const char *path)
{
    char tmp[300];
    int n = snprintf(tmp, sizeof tmp, "#line %d \"%s\"\n", line, path);
    if (n > 0) append(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Include names are resolved like a compiler with -I kernels/: relative to the including
 * file's folder first, then to kernels/. */
static const char *find_include(const char *from, const char *name, char *path, size_t cap)
{
    const char *slash = strrchr(from, '/');
    if (slash) {
        snprintf(path, cap, "%.*s/%s", (int)(slash - from), from, name);
        if (kiln_kernel_file(path, NULL)) return path;
    }
    snprintf(path, cap, "%s", name);
    return kiln_kernel_file(path, NULL) ? path : NULL;
}

#define MAX_FILES 32

typedef struct resolver {
    text_buf out;
    const char *done[MAX_FILES];
    int ndone;
    char missing[200];
} resolver;

static void resolve(resolver *r, const char *path, int depth)
{
    size_t len = 0;
    const char *text = kiln_kernel_file(path, &len);
    const char *p = text, *end = text + len;
    int line = 1;
    for (int i = 0; i < r->ndone; ++i)
        if (strcmp(r->done[i], path) == 0) return; /* every header is include-guarded */
    if (r->ndone < MAX_FILES) r->done[r->ndone++] = path;
    appendf_line(&r->out, 1, path);
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *next = eol ? eol + 1 : end;
        const char *s = p;
        while (s < next && (*s == ' ' || *s == '\t')) ++s;
        if (next - s > 10 && strncmp(s, "#include \"", 10) == 0) {
            const char *q0 = s + 10, *q1 = memchr(q0, '"', (size_t)(next - q0));
            char name[128], full[160];
            const char *found = NULL;
            if (q1 && (size_t)(q1 - q0) < sizeof name) {
                memcpy(name, q0, (size_t)(q1 - q0));
                name[q1 - q0] = '\0';
                found = find_include(path, name, full, sizeof full);
            }
            if (!found || depth > 8) {
                snprintf(r->missing, sizeof r->missing, "%.*s (included from %s)",
                         (int)(next - s - 1), s, path);
                return;
            }
            resolve(r, stable_path(found), depth + 1);
            appendf_line(&r->out, line + 1, path);
        } else {
            append(&r->out, p, (size_t)(next - p));
        }
        ++line;
        p = next;
    }
    if (len > 0 && text[len - 1] != '\n') append(&r->out, "\n", 1);
}

typedef struct resolved_entry {
    const char *file;
    char *text;
    size_t len;
} resolved_entry;

static kiln_once g_once = KILN_ONCE_INIT;
static kiln_mutex *g_lock;
static resolved_entry g_cache[MAX_FILES];
static int g_cached;

static void init_lock(void) { g_lock = kiln_mutex_create(); }

kiln_status kiln_kernel_source(const char *file, const char **text, size_t *len)
{
    kiln_status st = KILN_OK;
    kiln_once_run(&g_once, init_lock);
    KILN_FAIL_IF(!g_lock, KILN_OUT_OF_MEMORY, "cannot create the kernel-source lock");
    kiln_mutex_lock(g_lock);
    for (int i = 0; i < g_cached; ++i)
        if (strcmp(g_cache[i].file, file) == 0) {
            *text = g_cache[i].text;
            if (len) *len = g_cache[i].len;
            kiln_mutex_unlock(g_lock);
            return KILN_OK;
        }
    if (!stable_path(file)) {
        st = kiln_fail(KILN_INTERNAL, "kernel file '%s' is not embedded in this library", file);
    } else {
        resolver r;
        memset(&r, 0, sizeof r);
        resolve(&r, stable_path(file), 0);
        if (r.missing[0]) {
            st = kiln_fail(KILN_INTERNAL, "kernel source %s: cannot resolve %s", file,
                           r.missing);
            free(r.out.data);
        } else if (r.out.oom || g_cached == MAX_FILES) {
            st = kiln_fail(KILN_OUT_OF_MEMORY, "cannot hold the resolved source of %s", file);
            free(r.out.data);
        } else {
            g_cache[g_cached].file = stable_path(file);
            g_cache[g_cached].text = r.out.data;
            g_cache[g_cached].len = r.out.len;
            *text = r.out.data;
            if (len) *len = r.out.len;
            ++g_cached;
        }
    }
    kiln_mutex_unlock(g_lock);
    return st;
}

kiln_status kiln_kernel_source_hash(const char *file, char hex[17])
{
    const char *text = NULL;
    size_t len = 0;
    uint64_t h = 14695981039346656037ULL;
    KILN_FORWARD(kiln_kernel_source(file, &text, &len));
    for (size_t i = 0; i < len; ++i) {
        if (text[i] == '\r') continue; /* the same sources checked out with CRLF endings */
        h ^= (unsigned char)text[i];
        h *= 1099511628211ULL;
    }
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
    return KILN_OK;
}
