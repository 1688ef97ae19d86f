/* Cross-process locks over the kernel's own file locks (lockfile.h): one protocol for every
 * OS. To take a lock: open (creating) the file, try the kernel lock, check that the name
 * still leads to the file locked (a releaser may have removed it in between), then write
 * this process's id into it for people and tools; on contention back off from 1 to 50 ms
 * until the deadline. Whoever holds the kernel lock holds the kiln lock, so a holder that
 * dies releases it at once, and nothing is judged from process ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/lockfile.h"
#include "platform/platform.h"

struct kiln_lock {
    kiln_lockfile file;
    char *path;
};

/* One attempt: OK with f holding the lock, BUSY, or ERROR (err set). */
static int try_once(const char *path, kiln_lockfile *f, char *err, size_t errcap)
{
    int r = kiln_lockfile_open(path, 1, f, err, errcap);
    if (r != KILN_LOCKFILE_OK) return r;
    r = kiln_lockfile_try(f, err, errcap);
    if (r == KILN_LOCKFILE_OK && !kiln_lockfile_current(f, path)) r = KILN_LOCKFILE_BUSY;
    if (r != KILN_LOCKFILE_OK) {
        kiln_lockfile_close(f, NULL);
        return r;
    }
    char text[32];
    int n = snprintf(text, sizeof text, "%llu\n", (unsigned long long)kiln_process_id());
    if (kiln_lockfile_write(f, text, (size_t)n) != 0) {
        if (errcap) snprintf(err, errcap, "cannot write lock '%s'", path);
        kiln_lockfile_close(f, path);
        return KILN_LOCKFILE_ERROR;
    }
    return KILN_LOCKFILE_OK;
}

int kiln_lock_acquire(const char *path, unsigned timeout_ms, kiln_lock **out, char *err,
                      size_t errcap)
{
    uint64_t deadline = kiln_time_ns() + (uint64_t)timeout_ms * 1000000u;
    unsigned pause_ms = 1;
    if (!path || !out) {
        if (errcap) snprintf(err, errcap, "no lock path");
        return -1;
    }
    *out = NULL;
    size_t n = strlen(path);
    kiln_lock *lock = malloc(sizeof *lock);
    if (!lock || !(lock->path = malloc(n + 1))) {
        free(lock);
        if (errcap) snprintf(err, errcap, "out of memory");
        return -1;
    }
    memcpy(lock->path, path, n + 1);
    for (;;) {
        int r = try_once(path, &lock->file, err, errcap);
        if (r == KILN_LOCKFILE_OK) {
            *out = lock;
            return 0;
        }
        uint64_t now = kiln_time_ns();
        if (r == KILN_LOCKFILE_ERROR || now >= deadline) {
            free(lock->path);
            free(lock);
            return r == KILN_LOCKFILE_ERROR ? -1 : 1;
        }
        /* Short critical sections are caught quickly, long ones (a kernel compile) are not
         * polled hard. */
        uint64_t left_ms = (deadline - now) / 1000000u + 1;
        kiln_sleep_ms(pause_ms < left_ms ? pause_ms : (unsigned)left_ms);
        if (pause_ms < 50) pause_ms *= 2;
    }
}

void kiln_lock_release(kiln_lock *lock)
{
    if (!lock) return;
    kiln_lockfile_close(&lock->file, lock->path);
    free(lock->path);
    free(lock);
}

int kiln_lock_owner(const char *path, uint64_t *pid)
{
    kiln_lockfile f;
    char text[32], err[8];
    if (kiln_lockfile_open(path, 0, &f, err, sizeof err) != KILN_LOCKFILE_OK) return -1;
    /* Taking it means nobody holds it: whatever id the file names is history. */
    int held = kiln_lockfile_try(&f, err, sizeof err) == KILN_LOCKFILE_BUSY;
    long n = held ? kiln_lockfile_read(&f, text, sizeof text) : -1;
    kiln_lockfile_close(&f, NULL);
    if (n <= 0 || text[0] < '0' || text[0] > '9') return -1;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\n' && *end != '\0') return -1;
    *pid = v;
    return 0;
}
