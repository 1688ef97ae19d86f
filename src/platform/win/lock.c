/* Cross-process locks: a file created with CREATE_NEW that holds its owner's process id.
 *
 * Breaking a stale lock is the delicate part. Two waiters can both find the same dead
 * owner; if each simply deleted the file, the slower one could delete the lock a third
 * process has just created after the faster one's removal. So breaking is itself done under
 * a second exclusive file (path + ".break"): its holder re-reads the lock and deletes it only
 * if it is still stale. Nothing else can change the lock in between: the dead owner cannot
 * release it and no one can create it while it exists. A ".break" file lives for
 * microseconds; one left by a process that died inside that window is deleted once its
 * owner is dead. That step is not itself guarded: exclusion rests on no process dying
 * inside those microseconds while others wait on the same lock.
 *
 * Liveness is kiln_process_alive: OpenProcess + GetExitCodeProcess, never a POSIX-style
 * probe, and access denied counts as alive, so a live owner's lock is never broken. Windows
 * reuses process ids quickly, so the file also records when its owner started
 * (GetProcessTimes); a live process with the owner's id but another creation time is a
 * newcomer, and the lock is stale. Where the time cannot be read, the id alone decides, and
 * a reused id makes the lock look held: the waiter times out, which its caller must handle
 * anyway. */
#include "platform/platform.h"
#include "platform/win/wide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A lock file with no readable pid is one whose creator has not written it yet, or died
 * between creating and writing it (a window of microseconds). Only the second kind is
 * stale, and only it can be this old. */
#define KILN_LOCK_UNWRITTEN_GRACE_S 5

struct kiln_lock {
    char *path;
};

enum { CREATED = 0, EXISTS = 1, FAILED = -1 };

/* Creation time of a process (FILETIME ticks); 0 when it cannot be read. */
static uint64_t start_time_of(HANDLE process)
{
    FILETIME created, exited, kernel, user;
    if (!process || !GetProcessTimes(process, &created, &exited, &kernel, &user)) return 0;
    return (uint64_t)created.dwHighDateTime << 32 | created.dwLowDateTime;
}

static uint64_t start_time(uint64_t pid)
{
    if (pid == 0 || pid > 0xffffffffu) return 0;
    HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    uint64_t t = start_time_of(h);
    if (h) CloseHandle(h);
    return t;
}

static int create_exclusive(const char *path, char *err, size_t errcap)
{
    char text[64];
    wchar_t *w = kiln_win_path(path);
    if (!w) {
        if (errcap) snprintf(err, errcap, "lock path '%s' is not valid UTF-8", path);
        return FAILED;
    }
    HANDLE h = CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD code = GetLastError();
        int r = FAILED;
        if (code == ERROR_FILE_EXISTS || code == ERROR_ALREADY_EXISTS) r = EXISTS;
        /* A lock deleted while someone still had it open stays "delete pending" until the
         * last handle closes, and creating it meanwhile is denied: that is a lock about to
         * disappear, not a permission problem, so the name must still be there. */
        else if (code == ERROR_ACCESS_DENIED) {
            DWORD attributes = GetFileAttributesW(w);
            if (attributes != INVALID_FILE_ATTRIBUTES || GetLastError() == ERROR_ACCESS_DENIED)
                r = EXISTS;
        }
        free(w);
        if (r == FAILED && errcap) {
            char what[1024];
            snprintf(what, sizeof what, "cannot create lock '%s'", path);
            kiln_win_error(err, errcap, what, code);
        }
        return r;
    }
    int n = snprintf(text, sizeof text, "%llu %llu\n", (unsigned long long)kiln_process_id(),
                     (unsigned long long)start_time_of(GetCurrentProcess()));
    DWORD written = 0;
    BOOL ok = WriteFile(h, text, (DWORD)n, &written, NULL) && written == (DWORD)n;
    DWORD code = GetLastError();
    CloseHandle(h);
    if (!ok) {
        DeleteFileW(w);
        if (errcap) {
            char what[1024];
            snprintf(what, sizeof what, "cannot write lock '%s'", path);
            kiln_win_error(err, errcap, what, code);
        }
    }
    free(w);
    return ok ? CREATED : FAILED;
}

/* 0 with *pid set; 1 if the file exists but holds no pid; -1 if it cannot be read (gone, or
 * still held open by its creator). */
static int read_owner(const char *path, uint64_t *pid, uint64_t *start)
{
    char buf[64];
    DWORD n = 0;
    wchar_t *w = kiln_win_path(path);
    if (!w) return -1;
    HANDLE h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    free(w);
    if (h == INVALID_HANDLE_VALUE) return -1;
    BOOL ok = ReadFile(h, buf, sizeof buf - 1, &n, NULL);
    CloseHandle(h);
    if (!ok) return -1;
    buf[n] = '\0';
    /* "<pid> <start>\n"; a start of 0 or none at all means unknown. */
    char *end;
    if (buf[0] < '0' || buf[0] > '9') return 1;
    unsigned long long v = strtoull(buf, &end, 10), t = 0;
    if (*end == ' ') {
        if (end[1] < '0' || end[1] > '9') return 1;
        t = strtoull(end + 1, &end, 10);
    }
    if (*end != '\n' && *end != '\0') return 1;
    *pid = v;
    if (start) *start = t;
    return 0;
}

static int older_than_grace(const char *path)
{
    WIN32_FILE_ATTRIBUTE_DATA data;
    FILETIME now_ft;
    wchar_t *w = kiln_win_path(path);
    BOOL ok = w && GetFileAttributesExW(w, GetFileExInfoStandard, &data);
    free(w);
    if (!ok) return 0;
    GetSystemTimeAsFileTime(&now_ft);
    ULARGE_INTEGER now, then;
    now.LowPart = now_ft.dwLowDateTime;
    now.HighPart = now_ft.dwHighDateTime;
    then.LowPart = data.ftLastWriteTime.dwLowDateTime;
    then.HighPart = data.ftLastWriteTime.dwHighDateTime;
    /* FILETIME counts 100 ns ticks. */
    return now.QuadPart > then.QuadPart &&
           now.QuadPart - then.QuadPart > (ULONGLONG)KILN_LOCK_UNWRITTEN_GRACE_S * 10000000u;
}

/* Stale: the owner is dead (or its id now names a later process), or the file never got a
 * pid and is past the grace period. */
static int is_stale(const char *path)
{
    uint64_t pid = 0, start = 0;
    int r = read_owner(path, &pid, &start);
    if (r < 0) return 0;
    if (r == 1) return older_than_grace(path);
    if (!kiln_process_alive(pid)) return 1;
    uint64_t now = start ? start_time(pid) : 0;
    return now != 0 && now != start;
}

static int delete_file(const char *path)
{
    wchar_t *w = kiln_win_path(path);
    BOOL ok = w && DeleteFileW(w);
    free(w);
    return ok ? 0 : -1;
}

int kiln_lock_owner(const char *path, uint64_t *pid)
{
    return read_owner(path, pid, NULL) == 0 ? 0 : -1;
}

/* 1 if the lock file was deleted, so that trying to create it again at once makes sense. */
static int try_break(const char *path)
{
    size_t n = strlen(path);
    char *brk = malloc(n + sizeof ".break");
    int removed = 0;
    if (!brk) return 0;
    memcpy(brk, path, n);
    memcpy(brk + n, ".break", sizeof ".break");
    int r = create_exclusive(brk, NULL, 0);
    if (r == CREATED) {
        /* The first look happened before this breaker held ".break"; judge again now that
         * no other breaker can act. */
        if (is_stale(path)) removed = delete_file(path) == 0;
        delete_file(brk);
    } else if (r == EXISTS && is_stale(brk)) {
        delete_file(brk);
    }
    free(brk);
    return removed;
}

int kiln_lock_acquire(const char *path, unsigned timeout_ms, kiln_lock **out, char *err,
                      size_t errcap)
{
    uint64_t deadline = kiln_time_ns() + (uint64_t)timeout_ms * 1000000u;
    unsigned pause_ms = 1;
    kiln_lock *lock;
    size_t n;
    if (!path || !out) {
        if (errcap) snprintf(err, errcap, "no lock path");
        return -1;
    }
    *out = NULL;
    n = strlen(path);
    lock = malloc(sizeof *lock);
    if (lock) lock->path = malloc(n + 1);
    if (!lock || !lock->path) {
        free(lock);
        if (errcap) snprintf(err, errcap, "out of memory");
        return -1;
    }
    memcpy(lock->path, path, n + 1);
    for (;;) {
        int r = create_exclusive(path, err, errcap);
        if (r == CREATED) {
            *out = lock;
            return 0;
        }
        if (r == FAILED) break;
        if (is_stale(path) && try_break(path)) continue;
        uint64_t now = kiln_time_ns();
        if (now >= deadline) {
            free(lock->path);
            free(lock);
            return 1;
        }
        /* Back off from 1 ms to 50 ms: short critical sections are caught quickly, long
         * ones (a kernel compile) are not polled hard. */
        uint64_t left_ms = (deadline - now) / 1000000u + 1;
        Sleep(pause_ms < left_ms ? pause_ms : (DWORD)left_ms);
        if (pause_ms < 50) pause_ms *= 2;
    }
    free(lock->path);
    free(lock);
    return -1;
}

void kiln_lock_release(kiln_lock *lock)
{
    uint64_t owner;
    if (!lock) return;
    /* Delete only a lock that is still ours; should it ever have been broken, the file now
     * belongs to someone else. */
    if (kiln_lock_owner(lock->path, &owner) == 0 && owner == kiln_process_id())
        delete_file(lock->path);
    free(lock->path);
    free(lock);
}
