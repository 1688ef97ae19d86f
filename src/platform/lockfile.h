/*
 * The OS half of file locks (src/platform/lock.c has the protocol, written once): a file
 * opened by every contender and a lock on it that the kernel releases when its handle is
 * closed or its process dies (flock on Unix, LockFileEx on Windows). No liveness probe, no
 * stale-lock breaking: a dead holder cannot keep a lock, and a holder in another pid
 * namespace (a container sharing the cache folder) still holds it.
 */
#ifndef KILN_PLATFORM_LOCKFILE_H
#define KILN_PLATFORM_LOCKFILE_H

#include <stddef.h>
#include <stdint.h>

/* An open lock file: a descriptor (Unix) or a HANDLE (Windows). */
typedef struct kiln_lockfile {
    intptr_t handle;
} kiln_lockfile;

enum { KILN_LOCKFILE_OK = 0, KILN_LOCKFILE_BUSY = 1, KILN_LOCKFILE_ERROR = -1 };

/* Opens path for reading and writing, shared with every other opener; create: make it when
 * missing. BUSY when the name cannot be opened just now but will be (Windows: a file
 * pending deletion), ERROR with err set otherwise (a missing file without create is an
 * ERROR with err empty). */
int kiln_lockfile_open(const char *path, int create, kiln_lockfile *f, char *err,
                       size_t errcap);
/* Takes the lock without waiting: OK, BUSY (held through another handle, in this process
 * or another) or ERROR. */
int kiln_lockfile_try(kiln_lockfile *f, char *err, size_t errcap);
/* 1 when path still names the file f has open (no releaser removed it in between). */
int kiln_lockfile_current(kiln_lockfile *f, const char *path);
/* Replaces the file's text (the holder's id, for kiln_lock_owner); 0 on success. */
int kiln_lockfile_write(kiln_lockfile *f, const char *text, size_t n);
/* Reads the file's text into buf (NUL-terminated); the length, or -1. */
long kiln_lockfile_read(kiln_lockfile *f, char *buf, size_t cap);
/* Releases and closes. remove_path non-NULL: the holder removes the file first where that
 * is safe (Unix: a waiter that then gets the lock on the removed file sees it is no longer
 * current and opens the name again; Windows keeps the file, since a deleted file that
 * others hold open stays in the way until the last of them closes it). */
void kiln_lockfile_close(kiln_lockfile *f, const char *remove_path);

#endif
