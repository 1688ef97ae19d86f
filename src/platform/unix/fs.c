/* Files: the cache directory, atomic replacement, listing. Paths are bytes (UTF-8 by
 * convention) and go to the system unchanged. */
#define _POSIX_C_SOURCE 200809L
#include "platform/platform.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void set_err(char *err, size_t errcap, const char *what, const char *path, int code)
{
    if (errcap) snprintf(err, errcap, "%s '%s': %s", what, path, strerror(code));
}

static int join(char *buf, size_t cap, const char *a, const char *b)
{
    int n = snprintf(buf, cap, "%s/%s", a, b);
    if (n >= 0 && (size_t)n < cap) return 0;
    /* A cut-off path names some other folder; leave nothing a caller could use by mistake. */
    if (cap) buf[0] = '\0';
    return -1;
}

int kiln_fs_default_cache_dir(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    /* The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored. */
    if (xdg && xdg[0] == '/') return join(buf, cap, xdg, "kiln");
    const char *home = getenv("HOME");
    if (!home || home[0] != '/') {
        struct passwd *pw = getpwuid(getuid());
        home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
    }
    if (!home) {
        if (cap) buf[0] = '\0';
        return -1;
    }
    return join(buf, cap, home, ".cache/kiln");
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int kiln_fs_mkdirs(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (n == 0) return -1;
    char *p = malloc(n + 1);
    if (!p) return -1;
    memcpy(p, path, n + 1);
    /* Create each prefix in turn; EEXIST is fine as long as it is a directory, and a
     * concurrent creator of the same prefix produces exactly that. */
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        if (p[i - 1] == '/') continue;
        char saved = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && !(errno == EEXIST && is_dir(p))) {
            free(p);
            return -1;
        }
        p[i] = saved;
    }
    free(p);
    return 0;
}

int kiln_fs_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0;
}

int kiln_fs_read(const char *path, void **data, size_t *len, char *err, size_t errcap)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errcap, "cannot open", path, errno);
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        set_err(err, errcap, "cannot stat", path, errno);
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        if (errcap) snprintf(err, errcap, "'%s' is not a regular file", path);
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size + 1); /* + 1: an empty file still yields a pointer to free */
    if (!buf) {
        set_err(err, errcap, "cannot read", path, ENOMEM);
        close(fd);
        return -1;
    }
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            set_err(err, errcap, "cannot read", path, r < 0 ? errno : EIO);
            free(buf);
            close(fd);
            return -1;
        }
        got += (size_t)r;
    }
    close(fd);
    buf[size] = '\0';
    *data = buf;
    *len = size;
    return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* fsync of the directory makes the rename itself durable; some file systems refuse it,
 * which costs durability, not correctness, so the result is ignored. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) {
        dir = malloc(2);
        if (dir) memcpy(dir, ".", 2);
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
        }
    }
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

int kiln_fs_write_atomic(const char *path, const void *data, size_t len, char *err,
                         size_t errcap)
{
    static unsigned counter;
    size_t n = strlen(path);
    char *tmp = malloc(n + 64);
    int fd = -1;
    if (!tmp) {
        set_err(err, errcap, "cannot write", path, ENOMEM);
        return -1;
    }
    /* The temporary sits beside the target so rename stays within one file system; pid and
     * a counter keep concurrent writers (other processes, other threads) apart, and O_EXCL
     * catches any remaining collision. */
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        unsigned c = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
        snprintf(tmp, n + 64, "%s.tmp%ld.%u", path, (long)getpid(), c);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        set_err(err, errcap, "cannot create temporary file for", path, errno);
        free(tmp);
        return -1;
    }
    /* fsync before rename: otherwise a crash can leave the new name pointing at an empty
     * or partial file on file systems that reorder metadata and data (ext4 delalloc). */
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        set_err(err, errcap, "cannot write", tmp, errno);
        close(fd);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    if (close(fd) != 0) {
        set_err(err, errcap, "cannot write", tmp, errno);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        set_err(err, errcap, "cannot rename onto", path, errno);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    sync_parent(path);
    return 0;
}

int kiln_fs_remove(const char *path)
{
    if (unlink(path) == 0 || errno == ENOENT) return 0;
    return -1;
}

int kiln_fs_list(const char *dir, int (*fn)(const char *name, void *user), void *user)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (fn(e->d_name, user)) break;
    }
    closedir(d);
    return 0;
}

char kiln_fs_sep(void) { return '/'; }

int kiln_fs_writable_dir(const char *path)
{
    /* access(W_OK) answers for the real uid and misses read-only mounts under some
     * sandboxes; creating a file is the question that matters. */
    static unsigned counter;
    if (!path || !is_dir(path)) return 0;
    size_t n = strlen(path);
    char *probe = malloc(n + 64);
    if (!probe) return 0;
    unsigned c = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    snprintf(probe, n + 64, "%s/.kiln-probe%ld.%u", path, (long)getpid(), c);
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    int ok = fd >= 0;
    if (ok) {
        close(fd);
        unlink(probe);
    }
    free(probe);
    return ok;
}
