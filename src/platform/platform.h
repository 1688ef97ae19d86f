/*
 * The one internal interface to the operating system. src/platform/unix/ and
 * src/platform/win/ implement it with matching file names (dl.c, fs.c, lock.c, process.c,
 * thread.c, time.c, env.c); the build picks one folder. Nothing outside src/platform/ uses
 * an OS header or #ifdef _WIN32.
 *
 * Strings are UTF-8 everywhere; the Windows side converts to UTF-16 at the system call.
 * Functions that can fail return 0 on success and -1 on failure and, where they take an
 * err/errcap pair, write the system's own error text there (never NULL-terminated beyond
 * errcap).
 */
#ifndef KILN_PLATFORM_H
#define KILN_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* Storage class of a variable with one instance per thread. */
#if defined(_MSC_VER) && !defined(__clang__)
#define KILN_THREAD_LOCAL __declspec(thread)
#else
#define KILN_THREAD_LOCAL _Thread_local
#endif

/* ---- dynamic libraries (dl.c) ------------------------------------------------------- */
typedef struct kiln_dl kiln_dl;
/* Loads a shared library by name or path: dlopen(RTLD_NOW | RTLD_LOCAL) / LoadLibraryExW
 * under SetErrorMode(SEM_FAILCRITICALERRORS). NULL on failure with the loader's text. */
kiln_dl *kiln_dl_open(const char *name, char *err, size_t errcap);
void *kiln_dl_sym(kiln_dl *lib, const char *symbol);
void kiln_dl_close(kiln_dl *lib);
/* Full path of the file a loaded library came from (for `kiln info`); 0 on success. */
int kiln_dl_path(kiln_dl *lib, char *buf, size_t cap);
/* The folder of the file kiln's own code was loaded from (libkiln.so / kiln.dll, or the
 * program it is linked into), without a trailing separator; 0 on success. */
int kiln_dl_self_dir(char *buf, size_t cap);

/* ---- threads, mutexes, condition variables, once (thread.c) ------------------------- */
typedef struct kiln_thread kiln_thread;
typedef struct kiln_mutex kiln_mutex;
typedef struct kiln_cond kiln_cond;

kiln_thread *kiln_thread_start(void (*fn)(void *), void *arg); /* NULL on failure */
void kiln_thread_join(kiln_thread *t);                         /* frees t */

kiln_mutex *kiln_mutex_create(void); /* NULL on failure */
void kiln_mutex_free(kiln_mutex *m);
void kiln_mutex_lock(kiln_mutex *m);
void kiln_mutex_unlock(kiln_mutex *m);

/* A pointer read with acquire and written with release ordering: a reader that sees the
 * pointer sees everything written before it was published. */
void *kiln_atomic_load_ptr(void *const *p);
void kiln_atomic_store_ptr(void **p, void *value);
/* The same for an int flag. */
int kiln_atomic_load_int(const int *p);
void kiln_atomic_store_int(int *p, int value);

kiln_cond *kiln_cond_create(void);
void kiln_cond_free(kiln_cond *c);
void kiln_cond_wait(kiln_cond *c, kiln_mutex *m);
void kiln_cond_signal(kiln_cond *c);
void kiln_cond_broadcast(kiln_cond *c);

/* Static, thread-safe one-time initialisation. */
typedef struct kiln_once {
    volatile long state;
} kiln_once;
#define KILN_ONCE_INIT {0}
void kiln_once_run(kiln_once *once, void (*fn)(void));

/* Number of cores this process may run on (affinity mask honoured), at least 1. */
int kiln_cpu_count(void);

/* ---- time (time.c) ------------------------------------------------------------------ */
uint64_t kiln_time_ns(void);        /* monotonic, high resolution */
void kiln_sleep_ms(unsigned ms);

/* ---- environment (env.c) ------------------------------------------------------------ */
/* Copies the UTF-8 value of an environment variable into buf. Returns 1 if set (even if
 * empty), 0 if unset. A value longer than cap - 1 is truncated. */
int kiln_env_get(const char *name, char *buf, size_t cap);
/* Sets (value non-NULL) or removes an environment variable of this process. */
int kiln_env_set(const char *name, const char *value);

/* ---- files (fs.c) ------------------------------------------------------------------- */
/* The per-user cache root: $XDG_CACHE_HOME/kiln or ~/.cache/kiln; %LOCALAPPDATA%\kiln.
 * KILN_CACHE_DIR, when set, is handled by the caller, not here. */
int kiln_fs_default_cache_dir(char *buf, size_t cap);
int kiln_fs_mkdirs(const char *path);           /* like mkdir -p; 0 if it exists */
int kiln_fs_exists(const char *path);           /* 1 / 0 */
/* Reads a whole file into a malloc'd buffer (*data, *len); caller frees. */
int kiln_fs_read(const char *path, void **data, size_t *len, char *err, size_t errcap);
/* Writes data to a unique temporary file beside path, flushes it, then renames it over path
 * atomically (rename / MoveFileExW with MOVEFILE_REPLACE_EXISTING | WRITE_THROUGH). */
int kiln_fs_write_atomic(const char *path, const void *data, size_t len, char *err,
                         size_t errcap);
int kiln_fs_remove(const char *path);          /* file; 0 if it did not exist */
/* Calls fn for each entry name (not . or ..) in dir; stops early if fn returns nonzero. */
int kiln_fs_list(const char *dir, int (*fn)(const char *name, void *user), void *user);
char kiln_fs_sep(void);                        /* '/' or '\\' */
/* 1 if the directory exists and a file can be created in it. */
int kiln_fs_writable_dir(const char *path);

/* ---- processes (process.c) ---------------------------------------------------------- */
uint64_t kiln_process_id(void);
/* 1 if a process with this id is running, 0 if it is not (kill(pid, 0) + ESRCH on Unix;
 * OpenProcess + GetExitCodeProcess == STILL_ACTIVE on Windows, never signals). */
int kiln_process_alive(uint64_t pid);

/* Child processes (the lock and cache tests run a second kiln process). argv[0] is the
 * program's path, argv ends with NULL; the child inherits the environment and the standard
 * streams. NULL on failure with the system's text in err. */
typedef struct kiln_child kiln_child;
kiln_child *kiln_process_spawn(const char *const *argv, char *err, size_t errcap);
uint64_t kiln_process_child_id(const kiln_child *child);
/* Ends the child at once (SIGKILL / TerminateProcess): it gets no chance to clean up. */
int kiln_process_kill(kiln_child *child);
/* Waits up to timeout_ms (KILN_WAIT_FOREVER: no limit) for the child to exit. Returns 0 with
 * its exit code in *code (128 + signal number when a signal ended it), 1 on timeout, -1 on
 * error. The child is reaped once it has exited. */
#define KILN_WAIT_FOREVER 0xffffffffu
int kiln_process_wait(kiln_child *child, unsigned timeout_ms, int *code);
/* Releases the handle; a child still running keeps running. NULL accepted. */
void kiln_process_free(kiln_child *child);
/* main()'s arguments as UTF-8. On Windows argv arrives in the ANSI code page, which cannot
 * hold every file name, so it is rebuilt from the UTF-16 command line; on Unix argv is
 * returned as it is. The result lives until the process exits; argv itself on failure. */
char **kiln_process_utf8_args(int argc, char **argv);

/* ---- file locks (lock.c) ------------------------------------------------------------ */
/* A lock is a file with a lock on it that the kernel holds for the owner (flock /
 * LockFileEx) and drops when the owner closes it or dies; the file's text is the owner's
 * process id, for people and tools (src/platform/lock.c, over lockfile.h).
 * kiln_lock_acquire waits up to timeout_ms (polling) and returns 0 when held, 1 on timeout,
 * -1 on error (err set). */
typedef struct kiln_lock kiln_lock;
int kiln_lock_acquire(const char *path, unsigned timeout_ms, kiln_lock **out, char *err,
                      size_t errcap);
void kiln_lock_release(kiln_lock *lock); /* removes the file; NULL accepted */
/* The id of the process holding the lock at path: 0 with *pid set while someone holds it,
 * -1 when nobody does (or there is no such file). The id is as the holder saw it: from
 * another pid namespace it names no process here. */
int kiln_lock_owner(const char *path, uint64_t *pid);

#endif
