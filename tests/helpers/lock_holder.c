/*
 * A second process for tests/test_lock.c, so that lock liveness is tested across real
 * processes (a thread shares its process's id and proves nothing).
 *
 *   lock_holder hold <lock> <ms>          take the lock, keep it <ms>, release it
 *   lock_holder leak <lock>               take the lock and exit without releasing it
 *   lock_holder contend <lock> <n> <file> n times: take the lock, add 1 to the number in
 *                                          <file>, release
 *   lock_holder exit                      exit at once (leaves a dead process id behind)
 *   lock_holder args <file> <arg>...      write each <arg> and a newline to <file>, to check
 *                                          that arguments reach a child unchanged
 *
 * Exit codes: 0 done, 2 bad usage, 3 the lock could not be taken, 4 counter file error,
 * 5 the counter was changed by someone else while this process held the lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"

static int take(const char *path, kiln_lock **lock)
{
    char err[512] = "";
    int r = kiln_lock_acquire(path, 60000, lock, err, sizeof err);
    if (r != 0) fprintf(stderr, "lock_holder: cannot take %s (%d): %s\n", path, r, err);
    return r == 0;
}

static int read_count(const char *file, long *value)
{
    void *data = NULL;
    size_t len = 0;
    char err[512];
    *value = 0;
    if (!kiln_fs_exists(file)) return 0;
    if (kiln_fs_read(file, &data, &len, err, sizeof err) != 0) {
        fprintf(stderr, "lock_holder: %s\n", err);
        return -1;
    }
    *value = strtol(data, NULL, 10);
    free(data);
    return 0;
}

static int contend(const char *path, int rounds, const char *file)
{
    for (int i = 0; i < rounds; i++) {
        kiln_lock *lock = NULL;
        char text[32], err[512];
        long before, after;
        if (!take(path, &lock)) return 3;
        if (read_count(file, &before) != 0) return 4;
        int n = snprintf(text, sizeof text, "%ld\n", before + 1);
        if (kiln_fs_write_atomic(file, text, (size_t)n, err, sizeof err) != 0) {
            fprintf(stderr, "lock_holder: %s\n", err);
            return 4;
        }
        kiln_sleep_ms(1);
        if (read_count(file, &after) != 0) return 4;
        if (after != before + 1) {
            fprintf(stderr, "lock_holder: counter went %ld -> %ld under the lock\n", before,
                    after);
            return 5;
        }
        kiln_lock_release(lock);
    }
    return 0;
}

static int write_args(const char *file, int n, char **args)
{
    size_t total = 1, at = 0;
    char err[512];
    for (int i = 0; i < n; i++) total += strlen(args[i]) + 1;
    char *text = malloc(total);
    if (!text) return 4;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(args[i]);
        memcpy(text + at, args[i], len);
        at += len;
        text[at++] = '\n';
    }
    int r = kiln_fs_write_atomic(file, text, at, err, sizeof err);
    if (r != 0) fprintf(stderr, "lock_holder: %s\n", err);
    free(text);
    return r == 0 ? 0 : 4;
}

int main(int argc, char **argv)
{
    kiln_lock *lock = NULL;
    argv = kiln_process_utf8_args(argc, argv); /* the lock path may be any file name */
    if (argc >= 2 && !strcmp(argv[1], "exit")) return 0;
    if (argc >= 3 && !strcmp(argv[1], "args")) return write_args(argv[2], argc - 3, argv + 3);
    if (argc == 4 && !strcmp(argv[1], "hold")) {
        if (!take(argv[2], &lock)) return 3;
        kiln_sleep_ms((unsigned)strtoul(argv[3], NULL, 10));
        kiln_lock_release(lock);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "leak")) return take(argv[2], &lock) ? 0 : 3;
    if (argc == 5 && !strcmp(argv[1], "contend"))
        return contend(argv[2], atoi(argv[3]), argv[4]);
    fprintf(stderr, "usage: lock_holder hold <lock> <ms> | leak <lock> | "
                    "contend <lock> <n> <file> | args <file> <arg>... | exit\n");
    return 2;
}
