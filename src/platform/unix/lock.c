/* Unix half of file locks (lockfile.h): flock(2) on a descriptor of the lock file. flock
 * locks belong to the open file description, so two opens in one process exclude each
 * other as two processes do, and the kernel drops the lock when the last descriptor closes
 * or the process dies. */
#define _DEFAULT_SOURCE
#include "platform/lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int kiln_lockfile_open(const char *path, int create, kiln_lockfile *f, char *err,
                       size_t errcap)
{
    int fd;
    if (errcap) err[0] = '\0';
    do fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        if (create && errcap)
            snprintf(err, errcap, "cannot open lock '%s': %s", path, strerror(errno));
        return KILN_LOCKFILE_ERROR;
    }
    f->handle = fd;
    return KILN_LOCKFILE_OK;
}

int kiln_lockfile_try(kiln_lockfile *f, char *err, size_t errcap)
{
    int r;
    do r = flock((int)f->handle, LOCK_EX | LOCK_NB);
    while (r != 0 && errno == EINTR);
    if (r == 0) return KILN_LOCKFILE_OK;
    if (errno == EWOULDBLOCK) return KILN_LOCKFILE_BUSY;
    if (errcap) snprintf(err, errcap, "flock failed: %s", strerror(errno));
    return KILN_LOCKFILE_ERROR;
}

int kiln_lockfile_current(kiln_lockfile *f, const char *path)
{
    struct stat held, named;
    if (fstat((int)f->handle, &held) != 0 || stat(path, &named) != 0) return 0;
    return held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

int kiln_lockfile_write(kiln_lockfile *f, const char *text, size_t n)
{
    if (ftruncate((int)f->handle, 0) != 0) return -1;
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite((int)f->handle, text + done, n - done, (off_t)done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

long kiln_lockfile_read(kiln_lockfile *f, char *buf, size_t cap)
{
    ssize_t n;
    do n = pread((int)f->handle, buf, cap - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    buf[n] = '\0';
    return (long)n;
}

void kiln_lockfile_close(kiln_lockfile *f, const char *remove_path)
{
    if (remove_path) unlink(remove_path);
    close((int)f->handle);
}
