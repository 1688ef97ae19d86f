/* Windows half of file locks (lockfile.h): LockFileEx on a handle of the lock file. Locks
 * belong to the handle, so two handles in one process exclude each other as two processes
 * do, and the system drops the lock when the handle closes or the process ends. Windows
 * locks are mandatory, so the locked byte lies far past the text (the holder's id), which
 * stays readable. Every handle shares delete, so a holder can remove the file on release:
 * until the last handle closes the name is "pending deletion", which opening reports as
 * access denied (BUSY here) and a handle reports as DeletePending (not current). */
#include "platform/lockfile.h"
#include "platform/win/wide.h"

#include <stdio.h>
#include <stdlib.h>

#define LOCK_OFFSET_HIGH 0x40000000u /* the byte at 2^62: never part of the text */

int kiln_lockfile_open(const char *path, int create, kiln_lockfile *f, char *err,
                       size_t errcap)
{
    if (errcap) err[0] = '\0';
    wchar_t *w = kiln_win_path(path);
    if (!w) {
        if (errcap) snprintf(err, errcap, "lock path '%s' is not valid UTF-8", path);
        return KILN_LOCKFILE_ERROR;
    }
    HANDLE h = CreateFileW(w, GENERIC_READ | GENERIC_WRITE | DELETE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           create ? OPEN_ALWAYS : OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    DWORD code = GetLastError();
    free(w);
    if (h == INVALID_HANDLE_VALUE) {
        if (code == ERROR_ACCESS_DENIED || code == ERROR_DELETE_PENDING)
            return create ? KILN_LOCKFILE_BUSY : KILN_LOCKFILE_ERROR;
        if (create) kiln_win_error(err, errcap, path, code);
        return KILN_LOCKFILE_ERROR;
    }
    f->handle = (intptr_t)h;
    return KILN_LOCKFILE_OK;
}

int kiln_lockfile_try(kiln_lockfile *f, char *err, size_t errcap)
{
    OVERLAPPED at = {0};
    at.OffsetHigh = LOCK_OFFSET_HIGH;
    if (LockFileEx((HANDLE)f->handle, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at))
        return KILN_LOCKFILE_OK;
    DWORD code = GetLastError();
    if (code == ERROR_LOCK_VIOLATION || code == ERROR_IO_PENDING) return KILN_LOCKFILE_BUSY;
    kiln_win_error(err, errcap, "LockFileEx", code);
    return KILN_LOCKFILE_ERROR;
}

int kiln_lockfile_current(kiln_lockfile *f, const char *path)
{
    FILE_STANDARD_INFO info;
    (void)path;
    if (!GetFileInformationByHandleEx((HANDLE)f->handle, FileStandardInfo, &info, sizeof info)) return 1;
    return !info.DeletePending;
}

int kiln_lockfile_write(kiln_lockfile *f, const char *text, size_t n)
{
    LARGE_INTEGER zero = {0};
    DWORD written = 0;
    if (!SetFilePointerEx((HANDLE)f->handle, zero, NULL, FILE_BEGIN) || !SetEndOfFile((HANDLE)f->handle)) return -1;
    if (!WriteFile((HANDLE)f->handle, text, (DWORD)n, &written, NULL) || written != n) return -1;
    return 0;
}

long kiln_lockfile_read(kiln_lockfile *f, char *buf, size_t cap)
{
    LARGE_INTEGER zero = {0};
    DWORD got = 0;
    if (!SetFilePointerEx((HANDLE)f->handle, zero, NULL, FILE_BEGIN)) return -1;
    if (!ReadFile((HANDLE)f->handle, buf, (DWORD)(cap - 1), &got, NULL)) return -1;
    buf[got] = '\0';
    return (long)got;
}

void kiln_lockfile_close(kiln_lockfile *f, const char *remove_path)
{
    if (remove_path) {
        FILE_DISPOSITION_INFO gone = {TRUE};
        SetFileInformationByHandle((HANDLE)f->handle, FileDispositionInfo, &gone, sizeof gone);
    }
    CloseHandle((HANDLE)f->handle);
}
