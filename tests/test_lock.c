/*
 * Cross-process file locks (src/platform/lock.c over the kernel's flock / LockFileEx), with
 * real processes: a lock held by a live child is never taken (the waiter times out), also
 * when the child runs in another pid namespace; a lock whose holder died is free at once,
 * whether it was killed or exited without releasing, and whatever the file says. Several
 * threads and processes contending for one lock, starting from a left-over file, never
 * overlap.
 *
 * The child is tests/helpers/lock_holder; the build passes its path as KILN_LOCK_HOLDER.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "platform/platform.h"

static char holder[1024];

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

/* Folder of the test program, when ctest gave its full path; else the temporary folder. */
static void base_dir(char *out, size_t cap, const char *argv0)
{
    const char *slash = NULL;
    int absolute = argv0 && (argv0[0] == '/' || argv0[0] == '\\' ||
                             (argv0[0] && argv0[1] == ':'));
    for (const char *p = argv0; absolute && *p; p++)
        if (*p == '/' || *p == '\\') slash = p;
    if (slash && (size_t)(slash - argv0) < cap) {
        memcpy(out, argv0, (size_t)(slash - argv0));
        out[slash - argv0] = '\0';
    } else if (!kiln_env_get("TMPDIR", out, cap) && !kiln_env_get("TEMP", out, cap) &&
               !kiln_env_get("TMP", out, cap)) {
        snprintf(out, cap, "%s", on_windows() ? "." : "/tmp");
    }
}

static void find_holder(const char *argv0)
{
#ifdef KILN_LOCK_HOLDER
    snprintf(holder, sizeof holder, "%s", KILN_LOCK_HOLDER);
    if (kiln_fs_exists(holder)) return;
#endif
    /* Beside this program, as tests/helpers/helpers.cmake places it. */
    char dir[1024];
    base_dir(dir, sizeof dir, argv0);
    path_join(holder, sizeof holder, dir, "lock_holder");
    if (kiln_fs_exists(holder)) return;
    path_join(holder, sizeof holder, dir, "lock_holder.exe");
    if (!kiln_fs_exists(holder)) holder[0] = '\0';
}

static kiln_child *run_holder(const char *a1, const char *a2, const char *a3, const char *a4)
{
    const char *argv[] = {holder, a1, a2, a3, a4, NULL};
    char err[1024] = "";
    /* Three tries: Wine's process creation has failed now and then (error 1359) when
     * several children start at once; what the cases test is the lock, not the spawn, and
     * a spawn that keeps failing still fails them. */
    kiln_child *c = NULL;
    for (int attempt = 0; attempt < 3 && !c; attempt++) {
        if (attempt) kiln_sleep_ms(200);
        c = kiln_process_spawn(argv, err, sizeof err);
        if (!c) fprintf(stderr, "  spawn %s (try %d of 3): %s\n", holder, attempt + 1, err);
    }
    return c;
}

/* Waits until the lock file names the given process; 1 when it does. */
static int wait_for_owner(const char *lock, uint64_t pid, unsigned timeout_ms)
{
    uint64_t deadline = kiln_time_ns() + (uint64_t)timeout_ms * 1000000u, owner = 0;
    while (kiln_time_ns() < deadline) {
        if (kiln_lock_owner(lock, &owner) == 0 && owner == pid) return 1;
        kiln_sleep_ms(5);
    }
    return 0;
}

/* A child that has exited. Its handle stays open until the caller frees it, because
 * Windows (and Wine, eagerly) may give the id to a new process once no handle refers to the
 * old one; on Unix the id was released when the child was reaped. */
static kiln_child *exited_child(void)
{
    kiln_child *c = run_holder("exit", NULL, NULL, NULL);
    int code = -1;
    if (c) kiln_process_wait(c, KILN_WAIT_FOREVER, &code);
    return c;
}

static void plant(const char *lock, uint64_t pid)
{
    char text[32], err[512];
    int n = snprintf(text, sizeof text, "%llu\n", (unsigned long long)pid);
    CHECK_EQ(kiln_fs_write_atomic(lock, text, (size_t)n, err, sizeof err), 0);
}

static void test_basic(const char *dir)
{
    char lock_path[2048], err[512] = "";
    kiln_lock *lock = NULL, *second = NULL;
    path_join(lock_path, sizeof lock_path, dir, "entry ü 日本.lock");

    check_case("lock: take, see the owner, time out on a second take, release");
    CHECK_EQ(kiln_lock_acquire(lock_path, 1000, &lock, err, sizeof err), 0);
    uint64_t owner = 0;
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), 0);
    CHECK_EQ(owner, kiln_process_id());
    uint64_t t0 = kiln_time_ns();
    CHECK_EQ(kiln_lock_acquire(lock_path, 200, &second, err, sizeof err), 1);
    CHECK(second == NULL);
    CHECK_GE(kiln_time_ns() - t0, 150000000u);
    kiln_lock_release(lock);
    CHECK_EQ(kiln_fs_exists(lock_path), 0);
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), -1);
    kiln_lock_release(NULL);
    check_note_ran();

    check_case("lock: a folder that does not exist is an error, not a wait");
    char bad[2048];
    path_join(bad, sizeof bad, dir, "no such folder");
    path_join(bad + strlen(bad), sizeof bad - strlen(bad), "", "x.lock");
    err[0] = '\0';
    CHECK_EQ(kiln_lock_acquire(bad, 5000, &lock, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "x.lock");
    check_note_ran();

    check_case("lock: a left-over file is free whatever it names (an id, garbage, nothing)");
    /* The kernel lock decides, not the text: ids of dead, live (this very process) and
     * impossible processes, text that is no id, and an empty file. */
    const char *texts[] = {"4294967290\n", NULL, "not an id\n", ""};
    char mine[32];
    snprintf(mine, sizeof mine, "%llu 12345\n", (unsigned long long)kiln_process_id());
    texts[1] = mine;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        CHECK_EQ(kiln_fs_write_atomic(lock_path, texts[i], strlen(texts[i]), err, sizeof err), 0);
        CHECK_EQ(kiln_lock_owner(lock_path, &owner), -1);
        CHECK_EQ(kiln_lock_acquire(lock_path, 0, &lock, err, sizeof err), 0);
        CHECK_EQ(kiln_lock_owner(lock_path, &owner), 0);
        CHECK_EQ(owner, kiln_process_id());
        kiln_lock_release(lock);
    }
    check_note_ran();

    check_case("lock: two handles in one process exclude each other");
    CHECK_EQ(kiln_lock_acquire(lock_path, 0, &lock, err, sizeof err), 0);
    CHECK_EQ(kiln_lock_acquire(lock_path, 50, &second, err, sizeof err), 1);
    kiln_lock_release(lock);
    CHECK_EQ(kiln_lock_acquire(lock_path, 0, &second, err, sizeof err), 0);
    kiln_lock_release(second);
    check_note_ran();
}

static void test_spawn_args(const char *dir)
{
    char out[2048];
    path_join(out, sizeof out, dir, "args ü.txt");
    /* Blanks, quotes, backslashes before quotes and at the end, an empty argument and
     * non-ASCII text: the cases a hand-built Windows command line gets wrong. */
    const char *args[] = {"plain", "two words", "", "quote\"inside", "back\\slash",
                          "trailing\\", "\\\"mixed\\\\\"", "日本 ü", NULL};
    const char *argv[16] = {holder, "args", out};
    size_t n = 0, want_len = 0;
    char want[512] = "";
    for (; args[n]; n++) {
        argv[3 + n] = args[n];
        want_len += (size_t)snprintf(want + want_len, sizeof want - want_len, "%s\n", args[n]);
    }
    argv[3 + n] = NULL;

    check_case("process: arguments reach a child unchanged");
    char err[512] = "";
    int code = -1;
    kiln_child *c = kiln_process_spawn(argv, err, sizeof err);
    CHECK(c != NULL);
    if (!c) return;
    CHECK_EQ(kiln_process_wait(c, 60000, &code), 0);
    CHECK_EQ(code, 0);
    kiln_process_free(c);
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ(kiln_fs_read(out, &data, &len, err, sizeof err), 0);
    CHECK_STR_EQ(data, want);
    free(data);
    kiln_fs_remove(out);

    check_case("process: a program that does not exist");
    const char *none[] = {"kiln no such program", NULL};
    err[0] = '\0';
    CHECK(kiln_process_spawn(none, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "kiln no such program");
    check_note_ran();
}

static void test_children(const char *dir)
{
    char lock_path[2048], err[512] = "";
    kiln_lock *lock = NULL;
    uint64_t owner = 0;
    int code = -1;
    path_join(lock_path, sizeof lock_path, dir, "held by child.lock");

    check_case("lock: a live child's lock is never broken; killed, it is recovered");
    kiln_child *child = run_holder("hold", lock_path, "60000", NULL);
    CHECK(child != NULL);
    if (!child) return;
    uint64_t pid = kiln_process_child_id(child);
    CHECK_EQ(wait_for_owner(lock_path, pid, 30000), 1);
    CHECK_EQ(kiln_process_alive(pid), 1);
    CHECK_EQ(kiln_lock_acquire(lock_path, 1500, &lock, err, sizeof err), 1);
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), 0);
    CHECK_EQ(owner, pid);
    CHECK_EQ(kiln_process_wait(child, 0, &code), 1); /* still running */

    check_case("lock: a copy of a live child's lock file is just a file");
    /* The id inside proves nothing: only the kernel's lock on the file itself counts. */
    char copy[2048];
    void *text = NULL;
    size_t len = 0;
    path_join(copy, sizeof copy, dir, "copy of child.lock");
    CHECK_EQ(kiln_fs_read(lock_path, &text, &len, err, sizeof err), 0);
    if (text) {
        CHECK_EQ(kiln_fs_write_atomic(copy, text, len, err, sizeof err), 0);
        CHECK_EQ(kiln_lock_acquire(copy, 0, &lock, err, sizeof err), 0);
        kiln_lock_release(lock);
        free(text);
    }

    CHECK_EQ(kiln_process_kill(child), 0);
    CHECK_EQ(kiln_process_wait(child, 30000, &code), 0);
    CHECK_EQ(code, 137);
    CHECK_EQ(kiln_process_alive(pid), 0);
    kiln_process_free(child);
    CHECK_EQ(kiln_fs_exists(lock_path), 1); /* the killed child could not clean up */
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), -1); /* but the kernel let go */
    CHECK_EQ(kiln_lock_acquire(lock_path, 0, &lock, err, sizeof err), 0);
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), 0);
    CHECK_EQ(owner, kiln_process_id());
    kiln_lock_release(lock);
    check_note_ran();

    check_case("lock: a child that exits without releasing leaves a recoverable lock");
    child = run_holder("leak", lock_path, NULL, NULL);
    CHECK(child != NULL);
    if (!child) return;
    pid = kiln_process_child_id(child);
    CHECK_EQ(kiln_process_wait(child, 30000, &code), 0);
    CHECK_EQ(code, 0);
    kiln_process_free(child);
    CHECK_EQ(kiln_fs_exists(lock_path), 1);
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), -1);
    CHECK_EQ(kiln_lock_acquire(lock_path, 0, &lock, err, sizeof err), 0);
    kiln_lock_release(lock);
    check_note_ran();

    check_case("lock: a lock naming a process that has exited is free");
    kiln_child *gone = exited_child();
    CHECK(gone != NULL);
    if (!gone) return;
    CHECK_EQ(kiln_process_alive(kiln_process_child_id(gone)), 0);
    plant(lock_path, kiln_process_child_id(gone));
    CHECK_EQ(kiln_lock_acquire(lock_path, 0, &lock, err, sizeof err), 0);
    kiln_lock_release(lock);
    kiln_process_free(gone);
    check_note_ran();

    check_case("lock: a released child lock is taken without waiting for a timeout");
    child = run_holder("hold", lock_path, "300", NULL);
    CHECK(child != NULL);
    if (!child) return;
    CHECK_EQ(wait_for_owner(lock_path, kiln_process_child_id(child), 30000), 1);
    CHECK_EQ(kiln_lock_acquire(lock_path, 30000, &lock, err, sizeof err), 0);
    CHECK_EQ(kiln_process_wait(child, 30000, &code), 0);
    CHECK_EQ(code, 0);
    kiln_process_free(child);
    kiln_lock_release(lock);
    check_note_ran();
}

/* A holder in another pid namespace (as in a container sharing the cache folder): its id
 * means nothing here, and a pid-probing lock would think it dead. Needs unshare(1) and
 * unprivileged user namespaces; skipped with the reason where the machine has neither. */
static void test_other_namespace(const char *dir)
{
    check_case("lock: a holder in another pid namespace is respected; killed, it lets go");
    if (on_windows()) {
        check_note_skip("pid namespaces are a Linux feature");
        return;
    }
    char lock_path[2048], err[512] = "";
    path_join(lock_path, sizeof lock_path, dir, "held from a namespace.lock");
    kiln_lock *lock = NULL;
    uint64_t owner = 0;
    int code = -1;
    const char *probe[] = {"unshare", "--user", "--map-root-user", "--pid", "--fork", "true",
                           NULL};
    kiln_child *c = kiln_process_spawn(probe, err, sizeof err);
    if (!c || kiln_process_wait(c, 30000, &code) != 0 || code != 0) {
        check_note_skip("unshare cannot make a user + pid namespace here (%s)",
                        c ? "it exited with an error" : err);
        kiln_process_free(c);
        return;
    }
    kiln_process_free(c);
    const char *argv[] = {"unshare", "--user", "--map-root-user", "--pid", "--fork",
                          "--kill-child", holder, "hold", lock_path, "60000", NULL};
    c = kiln_process_spawn(argv, err, sizeof err);
    CHECK(c != NULL);
    if (!c) return;
    uint64_t deadline = kiln_time_ns() + 30000000000ull;
    while (kiln_lock_owner(lock_path, &owner) != 0 && kiln_time_ns() < deadline)
        kiln_sleep_ms(5);
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), 0);
    /* The first process of a new pid namespace is its 1; unshare itself is the child here. */
    CHECK(owner != kiln_process_child_id(c));
    CHECK_EQ(kiln_lock_acquire(lock_path, 1000, &lock, err, sizeof err), 1);
    CHECK_EQ(kiln_process_kill(c), 0);
    CHECK_EQ(kiln_process_wait(c, 30000, &code), 0);
    kiln_process_free(c);
    CHECK_EQ(kiln_lock_acquire(lock_path, 10000, &lock, err, sizeof err), 0);
    kiln_lock_release(lock);
    check_note_ran();
}

/* Threads of one process share its id: among themselves only the kernel lock on each
 * thread's own handle keeps them apart. They start from a left-over file each round. */
typedef struct {
    const char *path;
    kiln_mutex *m;
    int inside, overlaps, taken, errors;
} race_state;

static void racer(void *p)
{
    race_state *s = p;
    for (int i = 0; i < 10; i++) {
        kiln_lock *lock = NULL;
        char err[512];
        if (kiln_lock_acquire(s->path, 30000, &lock, err, sizeof err) != 0) {
            kiln_mutex_lock(s->m);
            s->errors++;
            kiln_mutex_unlock(s->m);
            continue;
        }
        kiln_mutex_lock(s->m);
        if (s->inside++) s->overlaps++;
        s->taken++;
        kiln_mutex_unlock(s->m);
        kiln_sleep_ms(1);
        kiln_mutex_lock(s->m);
        s->inside--;
        kiln_mutex_unlock(s->m);
        kiln_lock_release(lock);
    }
}

static void test_contention(const char *dir)
{
    char lock_path[2048], counter[2048], err[512];
    path_join(lock_path, sizeof lock_path, dir, "contended.lock");
    path_join(counter, sizeof counter, dir, "counter.txt");
    kiln_child *gone = exited_child();
    uint64_t gone_pid = gone ? kiln_process_child_id(gone) : 4294967290u;

    check_case("lock: threads racing for one lock never overlap");
    race_state s = {lock_path, kiln_mutex_create(), 0, 0, 0, 0};
    kiln_thread *t[4];
    for (int round = 0; round < 5; round++) {
        plant(lock_path, gone_pid);
        for (int i = 0; i < 4; i++) t[i] = kiln_thread_start(racer, &s);
        for (int i = 0; i < 4; i++) kiln_thread_join(t[i]);
    }
    CHECK_EQ(s.overlaps, 0);
    CHECK_EQ(s.errors, 0);
    CHECK_EQ(s.taken, 5 * 4 * 10);
    kiln_mutex_free(s.m);
    check_note_ran();

    check_case("lock: three processes incrementing a file under the lock lose no update");
    plant(lock_path, gone_pid);
    CHECK_EQ(kiln_fs_write_atomic(counter, "0\n", 2, err, sizeof err), 0);
    kiln_child *c[3];
    for (int i = 0; i < 3; i++) c[i] = run_holder("contend", lock_path, "25", counter);
    for (int i = 0; i < 3; i++) {
        int code = -1;
        CHECK(c[i] != NULL);
        if (!c[i]) continue;
        CHECK_EQ(kiln_process_wait(c[i], 120000, &code), 0);
        CHECK_EQ(code, 0);
        kiln_process_free(c[i]);
    }
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ(kiln_fs_read(counter, &data, &len, err, sizeof err), 0);
    CHECK_EQ(data ? strtol(data, NULL, 10) : -1, 75);
    free(data);
    CHECK_EQ(kiln_fs_exists(lock_path), 0);
    uint64_t owner = 0;
    CHECK_EQ(kiln_lock_owner(lock_path, &owner), -1);
    kiln_fs_remove(counter);
    kiln_process_free(gone);
    check_note_ran();
}

int main(int argc, char **argv)
{
    argv = kiln_process_utf8_args(argc, argv);
    char base[1024], dir[2048];
    base_dir(base, sizeof base, argc > 0 ? argv[0] : NULL);
    snprintf(dir, sizeof dir, "%s%cscratch lock ü-%llu", base, kiln_fs_sep(),
             (unsigned long long)kiln_process_id());
    if (kiln_fs_mkdirs(dir) != 0) {
        fprintf(stderr, "cannot create %s\n", dir);
        return 1;
    }
    find_holder(argc > 0 ? argv[0] : NULL);
    test_basic(dir);
    if (!holder[0]) {
        /* Without the child program the central property goes untested: fail loudly. */
        fprintf(stderr, "FAIL: lock_holder not found; tests/helpers/helpers.cmake builds it\n");
        return 1;
    }
    printf("child program: %s\n", holder);
    test_spawn_args(dir);
    test_children(dir);
    test_other_namespace(dir);
    test_contention(dir);
    return check_finish("test_lock");
}
