/* Files: the cache directory, atomic replacement, listing. Paths arrive as UTF-8 and reach
 * the system as UTF-16 (the W functions), so any name the file system allows works,
 * whatever the user's code page. */
#include "platform/platform.h"
#include "platform/win/wide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static void set_err(char *err, size_t errcap, const char *what, const char *path, DWORD code)
{
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s '%s'", what, path);
    kiln_win_error(err, errcap, prefix, code);
}

static int is_sep(wchar_t c) { return c == L'\\' || c == L'/'; }

int kiln_fs_default_cache_dir(char *buf, size_t cap)
{
    /* %LOCALAPPDATA% is per machine (not roamed to a server at logon), the right home for
     * compiled code objects. USERPROFILE is the fallback if a service strips it. */
    static const wchar_t *const vars[] = {L"LOCALAPPDATA", L"USERPROFILE"};
    static const wchar_t *const tails[] = {L"\\kiln", L"\\AppData\\Local\\kiln"};
    for (int i = 0; i < 2; i++) {
        DWORD n = GetEnvironmentVariableW(vars[i], NULL, 0);
        if (n <= 1) continue;
        size_t tail = wcslen(tails[i]);
        wchar_t *w = malloc(((size_t)n + tail) * sizeof *w);
        if (!w) return -1;
        DWORD got = GetEnvironmentVariableW(vars[i], w, n);
        if (got == 0 || got >= n) {
            free(w);
            continue;
        }
        while (got > 0 && is_sep(w[got - 1])) got--;
        memcpy(w + got, tails[i], (tail + 1) * sizeof *w);
        int r = kiln_win_utf8_into(w, buf, cap);
        free(w);
        return r;
    }
    if (cap) buf[0] = '\0';
    return -1;
}

static int is_dir_w(const wchar_t *w)
{
    DWORD a = GetFileAttributesW(w);
    return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY);
}

static size_t skip_server_share(const wchar_t *p, size_t i)
{
    for (int part = 0; part < 2; part++) {
        while (p[i] && !is_sep(p[i])) i++;
        if (p[i]) i++;
    }
    return i;
}

/* Length of the part of a path that is a root and cannot be created: "C:\",
 * "\\server\share\", the same behind "\\?\", a leading "\". */
static size_t root_length(const wchar_t *p)
{
    if (wcsncmp(p, L"\\\\?\\UNC\\", 8) == 0) return skip_server_share(p, 8);
    size_t i = wcsncmp(p, L"\\\\?\\", 4) == 0 ? 4 : 0;
    if (p[i] && p[i + 1] == L':') return i + (is_sep(p[i + 2]) ? 3 : 2);
    if (i == 0 && is_sep(p[0]) && is_sep(p[1])) return skip_server_share(p, 2);
    return i + (is_sep(p[i]) ? 1 : 0);
}

int kiln_fs_mkdirs(const char *path)
{
    wchar_t *w = kiln_win_path(path);
    int rc = 0;
    if (!w || !*w) {
        free(w);
        return -1;
    }
    size_t n = wcslen(w);
    for (size_t i = root_length(w); i <= n && rc == 0; i++) {
        if (w[i] && !is_sep(w[i])) continue;
        if (i == 0 || is_sep(w[i - 1])) continue;
        wchar_t saved = w[i];
        w[i] = 0;
        /* Failure is fine if the folder is there: it existed, a concurrent creator made
         * it, or (C:\Users) creating it is denied but it exists. */
        if (!CreateDirectoryW(w, NULL) && !is_dir_w(w)) rc = -1;
        w[i] = saved;
    }
    free(w);
    return rc;
}

int kiln_fs_exists(const char *path)
{
    wchar_t *w = kiln_win_path(path);
    int r = w && GetFileAttributesW(w) != INVALID_FILE_ATTRIBUTES;
    free(w);
    return r;
}

int kiln_fs_read(const char *path, void **data, size_t *len, char *err, size_t errcap)
{
    wchar_t *w = kiln_win_path(path);
    LARGE_INTEGER size;
    if (!w) {
        if (errcap) snprintf(err, errcap, "'%s' is not a valid UTF-8 path", path);
        return -1;
    }
    /* FILE_SHARE_DELETE: a writer may rename a new version over this file while it is
     * being read; the reader keeps the old contents and the writer does not fail. */
    HANDLE h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    free(w);
    if (h == INVALID_HANDLE_VALUE) {
        set_err(err, errcap, "cannot open", path, GetLastError());
        return -1;
    }
    if (!GetFileSizeEx(h, &size) || (uint64_t)size.QuadPart >= (uint64_t)SIZE_MAX) {
        set_err(err, errcap, "cannot size", path, GetLastError());
        CloseHandle(h);
        return -1;
    }
    size_t total = (size_t)size.QuadPart, got = 0;
    char *buf = malloc(total + 1); /* + 1: an empty file still yields a pointer to free */
    if (!buf) {
        set_err(err, errcap, "cannot read", path, ERROR_NOT_ENOUGH_MEMORY);
        CloseHandle(h);
        return -1;
    }
    while (got < total) {
        DWORD want = total - got > 0x40000000u ? 0x40000000u : (DWORD)(total - got), r = 0;
        if (!ReadFile(h, buf + got, want, &r, NULL) || r == 0) {
            set_err(err, errcap, "cannot read", path, r == 0 ? ERROR_HANDLE_EOF : GetLastError());
            free(buf);
            CloseHandle(h);
            return -1;
        }
        got += r;
    }
    CloseHandle(h);
    buf[total] = '\0';
    *data = buf;
    *len = total;
    return 0;
}

static int write_all(HANDLE h, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        DWORD want = len > 0x40000000u ? 0x40000000u : (DWORD)len, w = 0;
        if (!WriteFile(h, p, want, &w, NULL) || w == 0) return -1;
        p += w;
        len -= w;
    }
    return 0;
}

int kiln_fs_write_atomic(const char *path, const void *data, size_t len, char *err,
                         size_t errcap)
{
    static volatile LONG counter;
    size_t n = strlen(path);
    char *tmp = malloc(n + 64);
    wchar_t *wtmp = NULL, *wpath = kiln_win_path(path);
    HANDLE h = INVALID_HANDLE_VALUE;
    DWORD code = 0;
    int rc = -1;
    if (!tmp || !wpath) {
        if (errcap) snprintf(err, errcap, "cannot write '%s': bad path or out of memory", path);
        goto done;
    }
    /* Beside the target, so the move stays on one volume and is a rename, not a copy. */
    for (int attempt = 0; attempt < 100 && h == INVALID_HANDLE_VALUE; attempt++) {
        snprintf(tmp, n + 64, "%s.tmp%lu.%ld", path, (unsigned long)GetCurrentProcessId(),
                 (long)InterlockedIncrement(&counter));
        free(wtmp);
        wtmp = kiln_win_path(tmp);
        if (!wtmp) break;
        h = CreateFileW(wtmp, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        code = GetLastError();
        if (h == INVALID_HANDLE_VALUE && code != ERROR_FILE_EXISTS) break;
    }
    if (h == INVALID_HANDLE_VALUE) {
        set_err(err, errcap, "cannot create temporary file for", path, code);
        goto done;
    }
    /* FlushFileBuffers before the move: MOVEFILE_WRITE_THROUGH makes the rename durable,
     * not the data, and a crash must never leave the new name on a partial file. */
    if (write_all(h, data, len) != 0 || !FlushFileBuffers(h)) {
        set_err(err, errcap, "cannot write", tmp, GetLastError());
        CloseHandle(h);
        DeleteFileW(wtmp);
        goto done;
    }
    CloseHandle(h);
    /* A reader without FILE_SHARE_DELETE, or a virus scanner looking at the new file, makes
     * the move fail for a moment with a sharing error; retry briefly before giving up. */
    for (int attempt = 0;; attempt++) {
        if (MoveFileExW(wtmp, wpath, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
            rc = 0;
            break;
        }
        code = GetLastError();
        if (attempt >= 20 || (code != ERROR_ACCESS_DENIED && code != ERROR_SHARING_VIOLATION)) {
            set_err(err, errcap, "cannot move a new version onto", path, code);
            DeleteFileW(wtmp);
            break;
        }
        Sleep(5 + attempt * 5);
    }
done:
    free(tmp);
    free(wtmp);
    free(wpath);
    return rc;
}

int kiln_fs_remove(const char *path)
{
    wchar_t *w = kiln_win_path(path);
    int rc = -1;
    if (w) {
        if (DeleteFileW(w)) rc = 0;
        else {
            DWORD code = GetLastError();
            if (code == ERROR_FILE_NOT_FOUND || code == ERROR_PATH_NOT_FOUND) rc = 0;
        }
    }
    free(w);
    return rc;
}

int kiln_fs_list(const char *dir, int (*fn)(const char *name, void *user), void *user)
{
    size_t n = strlen(dir);
    char *pattern = malloc(n + 3);
    WIN32_FIND_DATAW fd;
    if (!pattern) return -1;
    memcpy(pattern, dir, n);
    if (n > 0 && dir[n - 1] != '\\' && dir[n - 1] != '/') pattern[n++] = '\\';
    memcpy(pattern + n, "*", 2);
    wchar_t *w = kiln_win_path(pattern);
    free(pattern);
    if (!w) return -1;
    HANDLE h = FindFirstFileExW(w, FindExInfoBasic, &fd, FindExSearchNameMatch, NULL, 0);
    free(w);
    if (h == INVALID_HANDLE_VALUE) return GetLastError() == ERROR_FILE_NOT_FOUND ? 0 : -1;
    int rc = 0;
    do {
        if (!wcscmp(fd.cFileName, L".") || !wcscmp(fd.cFileName, L"..")) continue;
        char *name = kiln_win_utf8(fd.cFileName);
        if (!name) {
            rc = -1;
            break;
        }
        int stop = fn(name, user);
        free(name);
        if (stop) break;
    } while (FindNextFileW(h, &fd));
    FindClose(h);
    return rc;
}

char kiln_fs_sep(void) { return '\\'; }

int kiln_fs_writable_dir(const char *path)
{
    static volatile LONG counter;
    size_t n = strlen(path);
    char *probe = malloc(n + 64);
    int ok = 0;
    if (!probe) return 0;
    snprintf(probe, n + 64, "%s\\.kiln-probe%lu.%ld", path, (unsigned long)GetCurrentProcessId(),
             (long)InterlockedIncrement(&counter));
    wchar_t *wdir = kiln_win_path(path), *w = kiln_win_path(probe);
    free(probe);
    /* Creating a file is the real question; ACLs, read-only media and controlled-folder
     * access all answer it, where the read-only attribute of a folder means nothing. */
    if (wdir && w && is_dir_w(wdir)) {
        HANDLE h = CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_NEW,
                               FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
        if (h != INVALID_HANDLE_VALUE) {
            ok = 1;
            CloseHandle(h);
        }
    }
    free(wdir);
    free(w);
    return ok;
}
