/*
 * The OS layer (src/platform): library loading errors, atomic file replacement, the cache
 * directory under a path with spaces and non-ASCII characters, listing, mkdirs,
 * environment variables, threads, mutexes, condition variables, once, time.
 *
 * Runs natively and, in the MinGW build, under Wine, where it exercises the Windows code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "platform/platform.h"

static int on_windows(void) { return kiln_fs_sep() == '\\'; }

static void path_join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s%c%s", dir, kiln_fs_sep(), name);
    if (n < 0 || (size_t)n >= cap) {
        fprintf(stderr, "path too long for the test's buffers: %s%c%s\n", dir, kiln_fs_sep(),
                name);
        exit(1);
    }
}

/* An absolute scratch folder unique to this run, beside the test program when ctest gave
 * its full path (so a clean build folder removes it), else in the temporary folder. */
static void scratch_dir(char *out, size_t cap, const char *argv0, const char *tag)
{
    char base[512] = "";
    const char *slash = NULL;
    int absolute = argv0 && (argv0[0] == '/' || argv0[0] == '\\' ||
                             (argv0[0] && argv0[1] == ':'));
    for (const char *p = argv0; absolute && *p; p++)
        if (*p == '/' || *p == '\\') slash = p;
    if (slash && (size_t)(slash - argv0) < sizeof base) {
        memcpy(base, argv0, (size_t)(slash - argv0));
        base[slash - argv0] = '\0';
    } else if (!kiln_env_get("TMPDIR", base, sizeof base) &&
               !kiln_env_get("TEMP", base, sizeof base) && !kiln_env_get("TMP", base, sizeof base)) {
        snprintf(base, sizeof base, "%s", on_windows() ? "." : "/tmp");
    }
    snprintf(out, cap, "%s%c%s-%llu-%llu", base, kiln_fs_sep(), tag,
             (unsigned long long)kiln_process_id(), (unsigned long long)(kiln_time_ns() % 1000000));
}

/* ---- dl ---------------------------------------------------------------------------- */

static void test_dl(void)
{
    char err[1024] = "";
    const char *missing = on_windows() ? "kiln_no_such_library.dll" : "libkiln_no_such_library.so";
    check_case("dl: open a missing library");
    kiln_dl *lib = kiln_dl_open(missing, err, sizeof err);
    CHECK(lib == NULL);
    CHECK_STR_CONTAINS(err, "kiln_no_such_library");
    /* Windows reports ERROR_MOD_NOT_FOUND, whose text the message keeps along with the
     * number a user can search for. */
    if (on_windows()) CHECK_STR_CONTAINS(err, "error 126");
    check_note_ran();

    check_case("dl: open an empty name");
    err[0] = '\0';
    CHECK(kiln_dl_open("", err, sizeof err) == NULL);
    CHECK(err[0] != '\0');

    check_case("dl: open a system library, find a symbol and its path");
    const char *sys = on_windows() ? "kernel32.dll" : "libc.so.6";
    err[0] = '\0';
    lib = kiln_dl_open(sys, err, sizeof err);
    if (!lib && !on_windows()) {
        check_note_skip("no %s on this system (%s)", sys, err);
        return;
    }
    CHECK(lib != NULL);
    if (!lib) return;
    CHECK(kiln_dl_sym(lib, on_windows() ? "GetCurrentProcessId" : "getpid") != NULL);
    CHECK(kiln_dl_sym(lib, "kiln_no_such_symbol") == NULL);
    char path[1024] = "";
    CHECK_EQ(kiln_dl_path(lib, path, sizeof path), 0);
    CHECK_STR_CONTAINS(path, on_windows() ? "kernel32" : "libc");
    CHECK_EQ(kiln_dl_path(lib, path, 4), -1);
    kiln_dl_close(lib);
    check_note_ran();
}

/* ---- files ------------------------------------------------------------------------- */

static int count_entry(const char *name, void *user)
{
    int *counts = user;
    counts[0]++;
    /* Any leftover temporary file from an atomic write would show up here. */
    if (strstr(name, ".tmp")) counts[1]++;
    if (!strcmp(name, "entrée 日本.bin")) counts[2]++;
    return 0;
}

static int stop_at_first(const char *name, void *user)
{
    (void)name;
    (*(int *)user)++;
    return 1;
}

static void check_file_is(const char *path, const void *want, size_t want_len)
{
    void *data = NULL;
    size_t len = 0;
    char err[1024] = "";
    int r = kiln_fs_read(path, &data, &len, err, sizeof err);
    CHECK_EQ(r, 0);
    if (r != 0) {
        fprintf(stderr, "  read %s: %s\n", path, err);
        return;
    }
    CHECK_EQ(len, want_len);
    if (len == want_len) CHECK_MEM_EQ(data, want, len);
    free(data);
}

static void test_files(const char *root)
{
    char dir[1024], file[2048], nested[4096], err[1024] = "";
    unsigned char blob[70000];
    for (size_t i = 0; i < sizeof blob; i++) blob[i] = (unsigned char)(i * 131u + (i >> 8));

    check_case("fs: mkdirs of a nested path with spaces and non-ASCII names");
    path_join(dir, sizeof dir, root, "kiln cache ü 日本");
    snprintf(nested, sizeof nested, "%s%cdeeper%cstill deeper", dir, kiln_fs_sep(), '/');
    CHECK_EQ(kiln_fs_mkdirs(nested), 0);
    CHECK_EQ(kiln_fs_exists(nested), 1);
    CHECK_EQ(kiln_fs_mkdirs(nested), 0); /* already there */
    CHECK_EQ(kiln_fs_writable_dir(dir), 1);
    check_note_ran();

    check_case("fs: atomic write, read back, replace an existing file");
    path_join(file, sizeof file, dir, "entrée 日本.bin");
    CHECK_EQ(kiln_fs_exists(file), 0);
    CHECK_EQ(kiln_fs_write_atomic(file, blob, sizeof blob, err, sizeof err), 0);
    check_file_is(file, blob, sizeof blob);
    CHECK_EQ(kiln_fs_write_atomic(file, "short", 5, err, sizeof err), 0);
    check_file_is(file, "short", 5);
    CHECK_EQ(kiln_fs_write_atomic(file, "", 0, err, sizeof err), 0);
    check_file_is(file, "", 0);
    CHECK_EQ(kiln_fs_write_atomic(file, blob, 1000, err, sizeof err), 0);
    check_file_is(file, blob, 1000);
    check_note_ran();

    check_case("fs: list the folder: exact UTF-8 name, no temporary files left");
    int counts[3] = {0, 0, 0};
    CHECK_EQ(kiln_fs_list(dir, count_entry, counts), 0);
    CHECK_EQ(counts[0], 2); /* the file and "deeper" */
    CHECK_EQ(counts[1], 0);
    CHECK_EQ(counts[2], 1);
    int visited = 0;
    CHECK_EQ(kiln_fs_list(dir, stop_at_first, &visited), 0);
    CHECK_EQ(visited, 1);
    check_note_ran();

    check_case("fs: errors name the file and the reason");
    char missing[2048];
    void *data = NULL;
    size_t len = 0;
    path_join(missing, sizeof missing, dir, "missing ü.bin");
    err[0] = '\0';
    CHECK_EQ(kiln_fs_read(missing, &data, &len, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "missing ü.bin");
    err[0] = '\0';
    char in_missing_dir[2048];
    path_join(in_missing_dir, sizeof in_missing_dir, missing, "x");
    CHECK_EQ(kiln_fs_write_atomic(in_missing_dir, "x", 1, err, sizeof err), -1);
    CHECK(err[0] != '\0');
    CHECK_EQ(kiln_fs_writable_dir(missing), 0);
    /* A component that is a file cannot become a folder. */
    path_join(nested, sizeof nested, file, "sub");
    CHECK_EQ(kiln_fs_mkdirs(nested), -1);
    check_note_ran();

    check_case("fs: remove");
    CHECK_EQ(kiln_fs_remove(file), 0);
    CHECK_EQ(kiln_fs_exists(file), 0);
    CHECK_EQ(kiln_fs_remove(file), 0); /* already gone */
    check_note_ran();
}

static void test_long_path(const char *root)
{
    char dir[2048], file[2048], err[1024] = "";
    check_case("fs: a path longer than Windows' MAX_PATH (260)");
    snprintf(dir, sizeof dir, "%s", root);
    for (int i = 0; i < 6; i++) {
        size_t n = strlen(dir);
        snprintf(dir + n, sizeof dir - n, "%cfolder %d with a rather long name ü 日本 %032d",
                 kiln_fs_sep(), i, i);
    }
    path_join(file, sizeof file, dir, "entry.bin");
    CHECK_GT(strlen(file), 300);
    CHECK_EQ(kiln_fs_mkdirs(dir), 0);
    CHECK_EQ(kiln_fs_writable_dir(dir), 1);
    CHECK_EQ(kiln_fs_write_atomic(file, "long", 4, err, sizeof err), 0);
    CHECK_EQ(kiln_fs_write_atomic(file, "longer", 6, err, sizeof err), 0);
    check_file_is(file, "longer", 6);
    int counts[3] = {0, 0, 0};
    CHECK_EQ(kiln_fs_list(dir, count_entry, counts), 0);
    CHECK_EQ(counts[0], 1);
    CHECK_EQ(counts[1], 0);
    CHECK_EQ(kiln_fs_remove(file), 0);
    CHECK_EQ(kiln_fs_exists(file), 0);
    check_note_ran();
}

static void test_cache_dir(const char *root)
{
    char saved_xdg[2048], saved_local[2048], base[2048], got[2048], want[2048];
    int had_xdg = kiln_env_get("XDG_CACHE_HOME", saved_xdg, sizeof saved_xdg);
    int had_local = kiln_env_get("LOCALAPPDATA", saved_local, sizeof saved_local);

    check_case("fs: default cache dir under a path with spaces and non-ASCII characters");
    path_join(base, sizeof base, root, "kiln cache ü 日本");
    /* Each OS reads its own variable; setting both keeps the test free of OS checks. */
    CHECK_EQ(kiln_env_set("XDG_CACHE_HOME", base), 0);
    CHECK_EQ(kiln_env_set("LOCALAPPDATA", base), 0);
    path_join(want, sizeof want, base, "kiln");
    CHECK_EQ(kiln_fs_default_cache_dir(got, sizeof got), 0);
    CHECK_STR_EQ(got, want);
    char small[8];
    CHECK_EQ(kiln_fs_default_cache_dir(small, sizeof small), -1);
    CHECK_STR_EQ(small, "");
    CHECK_EQ(kiln_fs_mkdirs(got), 0);
    CHECK_EQ(kiln_fs_writable_dir(got), 1);
    char entry[2048], err[1024];
    path_join(entry, sizeof entry, got, "attn_fwd.bf16.d128.causal.tensor.bin");
    CHECK_EQ(kiln_fs_write_atomic(entry, "code object", 11, err, sizeof err), 0);
    check_file_is(entry, "code object", 11);
    CHECK_EQ(kiln_fs_remove(entry), 0);
    check_note_ran();

    kiln_env_set("XDG_CACHE_HOME", had_xdg ? saved_xdg : NULL);
    kiln_env_set("LOCALAPPDATA", had_local ? saved_local : NULL);
}

/* ---- environment ------------------------------------------------------------------- */

static void test_env(void)
{
    char buf[64];
    check_case("env: set, get, truncate, empty, unset");
    CHECK_EQ(kiln_env_set("KILN_TEST_PLATFORM_VAR", "välue 日本"), 0);
    CHECK_EQ(kiln_env_get("KILN_TEST_PLATFORM_VAR", buf, sizeof buf), 1);
    CHECK_STR_EQ(buf, "välue 日本");
    /* 10 bytes hold "välue " (7 bytes) but not the 3-byte 日: cut before it. */
    CHECK_EQ(kiln_env_get("KILN_TEST_PLATFORM_VAR", buf, 10), 1);
    CHECK_STR_EQ(buf, "välue ");
    /* 3 bytes: "v" and the first byte of "ä" would fit; the partial character must not. */
    CHECK_EQ(kiln_env_get("KILN_TEST_PLATFORM_VAR", buf, 3), 1);
    CHECK_STR_EQ(buf, "v");
    CHECK_EQ(kiln_env_set("KILN_TEST_PLATFORM_VAR", ""), 0);
    CHECK_EQ(kiln_env_get("KILN_TEST_PLATFORM_VAR", buf, sizeof buf), 1);
    CHECK_STR_EQ(buf, "");
    CHECK_EQ(kiln_env_set("KILN_TEST_PLATFORM_VAR", NULL), 0);
    CHECK_EQ(kiln_env_get("KILN_TEST_PLATFORM_VAR", buf, sizeof buf), 0);
    CHECK_STR_EQ(buf, "");
    CHECK_EQ(kiln_env_set("KILN=BAD", "x"), -1);
    check_note_ran();
}

/* ---- threads ----------------------------------------------------------------------- */

typedef struct {
    kiln_mutex *m;
    kiln_cond *c;
    long counter;
    int ready, consumed;
} shared_state;

static void add_many(void *p)
{
    shared_state *s = p;
    for (int i = 0; i < 20000; i++) {
        kiln_mutex_lock(s->m);
        s->counter++;
        kiln_mutex_unlock(s->m);
    }
}

static void consumer(void *p)
{
    shared_state *s = p;
    kiln_mutex_lock(s->m);
    while (!s->ready) kiln_cond_wait(s->c, s->m);
    s->consumed = 1;
    kiln_cond_broadcast(s->c);
    kiln_mutex_unlock(s->m);
}

static kiln_once once_flag = KILN_ONCE_INIT;
static volatile long once_calls;
static volatile long once_done;

static void once_body(void)
{
    once_calls++;
    kiln_sleep_ms(30); /* long enough that the other threads arrive while it runs */
    once_done = 1;
}

static void once_racer(void *p)
{
    int *saw_done = p;
    kiln_once_run(&once_flag, once_body);
    *saw_done = once_done == 1;
}

static void test_threads(void)
{
    shared_state s = {kiln_mutex_create(), kiln_cond_create(), 0, 0, 0};
    kiln_thread *t[8];
    CHECK(s.m != NULL && s.c != NULL);
    if (!s.m || !s.c) return;

    check_case("thread: four threads add under one mutex");
    for (int i = 0; i < 4; i++) t[i] = kiln_thread_start(add_many, &s);
    for (int i = 0; i < 4; i++) {
        CHECK(t[i] != NULL);
        kiln_thread_join(t[i]);
    }
    CHECK_EQ(s.counter, 80000);
    check_note_ran();

    check_case("thread: condition variable hand-off");
    t[0] = kiln_thread_start(consumer, &s);
    CHECK(t[0] != NULL);
    kiln_sleep_ms(10);
    kiln_mutex_lock(s.m);
    s.ready = 1;
    kiln_cond_signal(s.c);
    while (!s.consumed) kiln_cond_wait(s.c, s.m);
    kiln_mutex_unlock(s.m);
    kiln_thread_join(t[0]);
    CHECK_EQ(s.consumed, 1);
    check_note_ran();

    check_case("thread: once runs its function exactly once, and every caller waits for it");
    int saw_done[8] = {0};
    for (int i = 0; i < 8; i++) t[i] = kiln_thread_start(once_racer, &saw_done[i]);
    for (int i = 0; i < 8; i++) kiln_thread_join(t[i]);
    CHECK_EQ(once_calls, 1);
    for (int i = 0; i < 8; i++) CHECK_EQ(saw_done[i], 1);
    kiln_once_run(&once_flag, once_body);
    CHECK_EQ(once_calls, 1);
    check_note_ran();

    kiln_thread_join(NULL);
    kiln_mutex_free(s.m);
    kiln_cond_free(s.c);
}

static void test_time_and_process(void)
{
    check_case("time: monotonic clock and sleep");
    uint64_t t0 = kiln_time_ns();
    kiln_sleep_ms(25);
    uint64_t t1 = kiln_time_ns();
    CHECK_GE(t1 - t0, 20000000u);
    CHECK_LE(t1 - t0, 5000000000u);
    CHECK_GE(kiln_cpu_count(), 1);
    check_note_ran();

    check_case("process: this process is alive, id 0 is not");
    CHECK(kiln_process_id() != 0);
    CHECK_EQ(kiln_process_alive(kiln_process_id()), 1);
    CHECK_EQ(kiln_process_alive(0), 0);
    check_note_ran();
}

int main(int argc, char **argv)
{
    argv = kiln_process_utf8_args(argc, argv);
    char root[1024];
    scratch_dir(root, sizeof root, argc > 0 ? argv[0] : NULL, "scratch platform");
    if (kiln_fs_mkdirs(root) != 0) {
        fprintf(stderr, "cannot create %s\n", root);
        return 1;
    }
    printf("scratch folder: %s\n", root);
    test_dl();
    test_files(root);
    test_long_path(root);
    test_cache_dir(root);
    test_env();
    test_threads();
    test_time_and_process();
    return check_finish("test_platform");
}
