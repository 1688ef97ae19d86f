/* Cross-process locks: a file created with O_EXCL that holds its owner's process id.
 *
 * Breaking a stale lock is the delicate part. Two waiters can both find the same dead
 * owner; if each simply removed the file, the slower one could remove the lock a third
 * process has just created after the faster one's removal. So breaking is itself done under
 * a second exclusive file (path + ".break"): its holder re-reads the lock and removes it only
 * if it is still stale. Nothing else can change the lock in between: the dead owner cannot
 * release it and no one can create it while it exists. A ".break" file lives for
 * microseconds; one left by a process that died inside that window is removed once its
 * owner is dead. That step is not itself guarded: exclusion rests on no process dying
 * inside those microseconds while others wait on the same lock.
 *
 * A lock is never broken while kiln_process_alive says its owner runs. Process ids are
 * reused, so the file also records when its owner started (Linux: /proc/<pid>/stat); a live
 * process with the owner's id but another start time is a newcomer, and the lock is stale.
 * Where the start time cannot be read, the id alone decides, and a reused id makes the lock
 * look held: the waiter times out, which its caller must handle anyway. */
#define _POSIX_C_SOURCE 200809L
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A lock file with no readable pid is one whose creator has not written it yet, or died
 * between creating and writing it (a window of microseconds). Only the second kind is
 * stale, and only it can be this old. */
#define KILN_LOCK_UNWRITTEN_GRACE_S 5

struct kiln_lock {
    char *path;
};

enum { CREATED = 0, EXISTS = 1, FAILED = -1 };

/* Start of a process in clock ticks since boot, from field 22 of /proc/<pid>/stat; 0 when
 * unknown. Any doubt gives 0, since a wrong value would make a live owner look replaced. */
static uint64_t start_time(uint64_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold blanks and ')'; fields count from the last ')'. */
    const char *p = strrchr(buf, ')');
    if (!p) return 0;
    p++;
    for (int field = 3; field < 22; field++) {
        if (*p != ' ') return 0;
        p++;
        while (*p && *p != ' ') p++;
    }
    if (*p != ' ' || p[1] < '0' || p[1] > '9') return 0;
    char *end;
    unsigned long long v = strtoull(p + 1, &end, 10);
    return *end == ' ' || *end == '\n' || *end == '\0' ? (uint64_t)v : 0;
}

static int create_exclusive(const char *path, char *err, size_t errcap)
{
    char text[64];
    int fd;
    do fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        if (errno == EEXIST) return EXISTS;
        if (errcap) snprintf(err, errcap, "cannot create lock '%s': %s", path, strerror(errno));
        return FAILED;
    }
    uint64_t self = kiln_process_id();
    int n = snprintf(text, sizeof text, "%llu %llu\n", (unsigned long long)self,
                     (unsigned long long)start_time(self));
    ssize_t w;
    do w = write(fd, text, (size_t)n);
    while (w < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (w != n) {
        unlink(path);
        if (errcap)
            snprintf(err, errcap, "cannot write lock '%s': %s", path,
                     w < 0 ? strerror(saved) : "short write");
        return FAILED;
    }
    return CREATED;
}

/* 0 with *pid set; 1 if the file exists but holds no pid; -1 if it cannot be read (gone). */
static int read_owner(const char *path, uint64_t *pid, uint64_t *start)
{
    char buf[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do n = read(fd, buf, sizeof buf - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0) return -1;
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
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    return difftime(time(NULL), st.st_mtime) > KILN_LOCK_UNWRITTEN_GRACE_S;
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

int kiln_lock_owner(const char *path, uint64_t *pid)
{
    return read_owner(path, pid, NULL) == 0 ? 0 : -1;
}

/* 1 if the lock file was removed, so that trying to create it again at once makes sense. */
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
        if (is_stale(path)) removed = unlink(path) == 0;
        unlink(brk);
    } else if (r == EXISTS && is_stale(brk)) {
        unlink(brk);
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
    if (!(lock = malloc(sizeof *lock)) || !(lock->path = malloc(n + 1))) {
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
        kiln_sleep_ms(pause_ms < left_ms ? pause_ms : (unsigned)left_ms);
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
    /* Remove only a lock that is still ours; should it ever have been broken, the file now
     * belongs to someone else. */
    if (kiln_lock_owner(lock->path, &owner) == 0 && owner == kiln_process_id())
        unlink(lock->path);
    free(lock->path);
    free(lock);
}
