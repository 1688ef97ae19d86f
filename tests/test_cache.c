/*
 * The JIT kernel cache (src/gpu/cache.c) with a fake compiler, no GPU needed:
 *   - a hit returns the stored bytes, other options make another entry;
 *   - 8 processes asking for one entry at once compile it exactly once and all get the
 *     same bytes;
 *   - an owner killed in the middle of compiling does not block the next process;
 *   - a corrupted or truncated entry is rebuilt;
 *   - an unusable cache folder still works (compiled in memory) with one warning;
 *   - KILN_JIT=0 turns a miss into KILN_KERNEL_NOT_FOUND with the fix in the message;
 *   - list and clear.
 * The child is tests/helpers/cache_worker; the build passes its path as KILN_CACHE_WORKER.
 */
#include "cache_worker.h"
#include "test_check.h"

static char worker[1200];

static void path_join(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s%c%s", dir, kiln_fs_sep(), name);
}

/* Folder of the test program when ctest gave its full path; else the temporary folder. */
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
    } else if (!kiln_env_get("TMPDIR", out, cap) && !kiln_env_get("TEMP", out, cap)) {
        snprintf(out, cap, "%s", kiln_fs_sep() == '\\' ? "." : "/tmp");
    }
}

static void find_worker(const char *argv0)
{
#ifdef KILN_CACHE_WORKER
    snprintf(worker, sizeof worker, "%s", KILN_CACHE_WORKER);
    if (kiln_fs_exists(worker)) return;
#endif
    char dir[1024];
    base_dir(dir, sizeof dir, argv0);
    path_join(worker, sizeof worker, dir, "cache_worker");
    if (kiln_fs_exists(worker)) return;
    path_join(worker, sizeof worker, dir, "cache_worker.exe");
    if (!kiln_fs_exists(worker)) worker[0] = '\0';
}

static int count_one(const char *name, void *user)
{
    if (!strncmp(name, "compile-", 8)) ++*(int *)user;
    return 0;
}

static int compiles(const char *counter_dir)
{
    int n = 0;
    kiln_fs_list(counter_dir, count_one, &n);
    return n;
}

static void fresh_dirs(const char *base, const char *name, char *cache, char *counter,
                       size_t cap)
{
    char dir[1400];
    path_join(dir, sizeof dir, base, name);
    path_join(cache, cap, dir, "cache");
    path_join(counter, cap, dir, "compiles");
    kiln_fs_mkdirs(counter);
    kiln_env_set("KILN_CACHE_DIR", cache);
}

static int expected_bytes(const void *image, size_t len, const char *seed)
{
    unsigned char want[FAKE_IMAGE_BYTES];
    fake_image_fill(want, sizeof want, seed);
    return len == sizeof want && memcmp(image, want, len) == 0;
}

static kiln_status get(const char *counter, const char *options, unsigned sleep_ms,
                       void **image, size_t *len, kiln_cache_origin *origin)
{
    fake_compiler fc = {counter, sleep_ms, options};
    kiln_cache_key key = fake_key(options);
    return kiln_cache_get(&key, fake_compile, &fc, image, len, origin);
}

static void test_hit_and_keys(const char *base)
{
    char cache[1500], counter[1500];
    void *image = NULL;
    size_t len = 0;
    kiln_cache_origin origin;
    check_case("hit and keys");
    fresh_dirs(base, "hit", cache, counter, sizeof cache);

    CHECK_OK(get(counter, "-DA", 0, &image, &len, &origin));
    CHECK_EQ(origin, KILN_CACHE_BUILT);
    CHECK(expected_bytes(image, len, "-DA"));
    free(image);
    CHECK_OK(get(counter, "-DA", 0, &image, &len, &origin));
    CHECK_EQ(origin, KILN_CACHE_HIT);
    CHECK(expected_bytes(image, len, "-DA"));
    free(image);
    CHECK_EQ(compiles(counter), 1);

    CHECK_OK(get(counter, "-DB", 0, &image, &len, &origin));
    CHECK_EQ(origin, KILN_CACHE_BUILT);
    CHECK(expected_bytes(image, len, "-DB"));
    free(image);
    CHECK_EQ(compiles(counter), 2);

    /* The entry name shows target and variant, for `kiln cache ls` and for people. */
    kiln_cache_key key = fake_key("-DA");
    char path[1600];
    CHECK_EQ(kiln_cache_entry_path(&key, path, sizeof path), 0);
    CHECK_STR_CONTAINS(path, "sm_90.attn_fwd.bf16.d64.full.fixed.generic.");
    CHECK(kiln_fs_exists(path));
    check_note_ran();
}

static kiln_child *spawn_worker(const char *counter, const char *out, const char *ms)
{
    const char *argv[] = {worker, ms, "-DKILN_DTYPE=2", NULL};
    char err[1024] = "";
    kiln_env_set("CACHE_WORKER_COUNTER_DIR", counter);
    kiln_env_set("CACHE_WORKER_OUT", out);
    kiln_child *c = kiln_process_spawn(argv, err, sizeof err);
    if (!c) fprintf(stderr, "  spawn %s: %s\n", worker, err);
    return c;
}

static void test_eight_processes(const char *base)
{
    enum { N = 8 };
    char cache[1500], counter[1500], out[N][1600], name[32];
    kiln_child *kids[N];
    check_case("8 processes, one entry");
    fresh_dirs(base, "eight", cache, counter, sizeof cache);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "out-%d", i);
        path_join(out[i], sizeof out[i], counter, name);
        kids[i] = spawn_worker(counter, out[i], "1500");
        CHECK(kids[i] != NULL);
    }
    for (int i = 0; i < N; i++) {
        int code = -1;
        if (!kids[i]) continue;
        CHECK_EQ(kiln_process_wait(kids[i], 120000, &code), 0);
        CHECK_EQ(code, 0);
        kiln_process_free(kids[i]);
    }
    CHECK_EQ(compiles(counter), 1);
    for (int i = 0; i < N; i++) {
        void *data = NULL;
        size_t len = 0;
        char err[256];
        CHECK_EQ(kiln_fs_read(out[i], &data, &len, err, sizeof err), 0);
        CHECK(data && expected_bytes(data, len, "-DKILN_DTYPE=2"));
        free(data);
    }
    check_note_ran();
}

static void test_killed_owner(const char *base)
{
    char cache[1500], counter[1500], out1[1600], out2[1600];
    int code = -1;
    check_case("owner killed while compiling");
    fresh_dirs(base, "killed", cache, counter, sizeof cache);
    path_join(out1, sizeof out1, counter, "out-1");
    path_join(out2, sizeof out2, counter, "out-2");

    kiln_child *owner = spawn_worker(counter, out1, "60000");
    CHECK(owner != NULL);
    if (!owner) return;
    /* The compile has begun (so the entry lock is held) once its mark appears. */
    uint64_t deadline = kiln_time_ns() + 30ull * 1000000000ull;
    while (compiles(counter) == 0 && kiln_time_ns() < deadline) kiln_sleep_ms(20);
    CHECK_EQ(compiles(counter), 1);
    CHECK_EQ(kiln_process_kill(owner), 0);
    CHECK_EQ(kiln_process_wait(owner, 30000, &code), 0);
    kiln_process_free(owner);

    uint64_t t0 = kiln_time_ns();
    kiln_child *next = spawn_worker(counter, out2, "10");
    CHECK(next != NULL);
    if (!next) return;
    CHECK_EQ(kiln_process_wait(next, 60000, &code), 0);
    CHECK_EQ(code, 0);
    kiln_process_free(next);
    double seconds = (double)(kiln_time_ns() - t0) * 1e-9;
    if (seconds > 20) CHECK(seconds <= 20); /* a blocked waiter would sit out the timeout */
    CHECK_EQ(compiles(counter), 2);
    void *data = NULL;
    size_t len = 0;
    char err[256];
    CHECK_EQ(kiln_fs_read(out2, &data, &len, err, sizeof err), 0);
    CHECK(data && expected_bytes(data, len, "-DKILN_DTYPE=2"));
    free(data);
    check_note_ran();
}

static void test_corrupt(const char *base)
{
    char cache[1500], counter[1500], path[1600], err[256];
    void *image = NULL, *data = NULL;
    size_t len = 0, n = 0;
    kiln_cache_origin origin;
    check_case("corrupt entry rebuilt");
    fresh_dirs(base, "corrupt", cache, counter, sizeof cache);
    CHECK_OK(get(counter, "-DC", 0, &image, &len, &origin));
    free(image);
    kiln_cache_key key = fake_key("-DC");
    CHECK_EQ(kiln_cache_entry_path(&key, path, sizeof path), 0);

    /* One flipped bit in the code object. */
    CHECK_EQ(kiln_fs_read(path, &data, &n, err, sizeof err), 0);
    if (!data) return;
    ((unsigned char *)data)[n - 100] ^= 0x10;
    CHECK_EQ(kiln_fs_write_atomic(path, data, n, err, sizeof err), 0);
    CHECK_OK(get(counter, "-DC", 0, &image, &len, &origin));
    CHECK_EQ(origin, KILN_CACHE_BUILT);
    CHECK(expected_bytes(image, len, "-DC"));
    free(image);
    CHECK_EQ(compiles(counter), 2);

    /* A truncated file (a crash mid-copy elsewhere, a full disk). */
    CHECK_EQ(kiln_fs_write_atomic(path, data, n / 2, err, sizeof err), 0);
    CHECK_OK(get(counter, "-DC", 0, &image, &len, &origin));
    CHECK_EQ(origin, KILN_CACHE_BUILT);
    CHECK(expected_bytes(image, len, "-DC"));
    free(image);
    CHECK_EQ(compiles(counter), 3);

    /* And the rebuilt entry is a plain hit again. */
    CHECK_OK(get(counter, "-DC", 0, &image, &len, &origin));
    CHECK_EQ(origin, KILN_CACHE_HIT);
    free(image);
    free(data);
    check_note_ran();
}

static int warnings;
static char last_warning[1024];

static void on_log(kiln_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == KILN_LOG_WARN) {
        warnings++;
        snprintf(last_warning, sizeof last_warning, "%s", message);
    }
}

static void test_unwritable(const char *base)
{
    char dir[1400], file[1500], cache[1600], counter[1600], err[256];
    void *image = NULL;
    size_t len = 0;
    kiln_cache_origin origin;
    check_case("unwritable cache");
    /* A cache folder below a regular file can never be created, whoever runs the test
     * (root ignores read-only permissions) and on every OS. */
    path_join(dir, sizeof dir, base, "unwritable");
    path_join(counter, sizeof counter, dir, "compiles");
    kiln_fs_mkdirs(counter);
    path_join(file, sizeof file, dir, "a-file");
    CHECK_EQ(kiln_fs_write_atomic(file, "x", 1, err, sizeof err), 0);
    path_join(cache, sizeof cache, file, "cache");
    kiln_env_set("KILN_CACHE_DIR", cache);

    kiln_set_log_callback(on_log, KILN_LOG_WARN, NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(get(counter, "-DU", 0, &image, &len, &origin));
        CHECK_EQ(origin, KILN_CACHE_MEMORY);
        CHECK(expected_bytes(image, len, "-DU"));
        free(image);
    }
    kiln_set_log_callback(NULL, KILN_LOG_WARN, NULL);
    CHECK_EQ(compiles(counter), 3);
    CHECK_EQ(warnings, 1);
    CHECK_STR_CONTAINS(last_warning, "KILN_CACHE_DIR");
    check_note_ran();
}

static void test_jit_off(const char *base)
{
    char cache[1500], counter[1500];
    void *image = NULL;
    size_t len = 0;
    kiln_cache_origin origin;
    check_case("KILN_JIT=0");
    fresh_dirs(base, "jitoff", cache, counter, sizeof cache);
    CHECK_OK(get(counter, "-DJ", 0, &image, &len, &origin));
    free(image);

    kiln_env_set("KILN_JIT", "0");
    CHECK_OK(get(counter, "-DJ", 0, &image, &len, &origin)); /* hits are still fine */
    CHECK_EQ(origin, KILN_CACHE_HIT);
    free(image);
    image = NULL;
    CHECK_STATUS(get(counter, "-DK", 0, &image, &len, &origin), KILN_KERNEL_NOT_FOUND);
    CHECK(image == NULL);
    const char *msg = kiln_last_error();
    CHECK_STR_CONTAINS(msg, "sm_90");
    CHECK_STR_CONTAINS(msg, "attn_fwd.bf16.d64.full.fixed.generic");
    CHECK_STR_CONTAINS(msg, "[sm_80]");
    CHECK_STR_CONTAINS(msg, "KILN_JIT");
    CHECK_STR_CONTAINS(msg, "GPU_ARCHS");
    kiln_env_set("KILN_JIT", NULL);
    CHECK_EQ(compiles(counter), 1);
    check_note_ran();
}

static int list_cb(const kiln_cache_entry *e, void *user)
{
    int *valid = user;
    if (e->valid && !strcmp(e->target, "sm_90") &&
        !strcmp(e->variant, "attn_fwd.bf16.d64.full.fixed.generic") &&
        !strcmp(e->compiler, "fake 1.0") && e->bytes == FAKE_IMAGE_BYTES)
        ++*valid;
    return 0;
}

static void test_list_clear(const char *base)
{
    char cache[1500], counter[1500];
    void *image = NULL;
    size_t len = 0, count = 0, removed = 0;
    int valid = 0;
    check_case("list and clear");
    fresh_dirs(base, "list", cache, counter, sizeof cache);
    CHECK_OK(kiln_cache_list(list_cb, &valid, &count)); /* absent: empty */
    CHECK_EQ(count, 0);
    CHECK_OK(get(counter, "-DL1", 0, &image, &len, NULL));
    free(image);
    CHECK_OK(get(counter, "-DL2", 0, &image, &len, NULL));
    free(image);
    CHECK_OK(kiln_cache_list(list_cb, &valid, &count));
    CHECK_EQ(count, 2);
    CHECK_EQ(valid, 2);
    CHECK_OK(kiln_cache_clear(&removed));
    CHECK_EQ(removed, 2);
    CHECK_OK(kiln_cache_list(list_cb, &valid, &count));
    CHECK_EQ(count, 0);
    check_note_ran();
}

int main(int argc, char **argv)
{
    char base[1024], dir[1300];
    base_dir(base, sizeof base, argc > 0 ? argv[0] : NULL);
    /* Process ids repeat (Wine's soon), so the clock makes the folder new. */
    snprintf(dir, sizeof dir, "%s%cscratch cache ü-%lu-%lu", base, kiln_fs_sep(),
             (unsigned long)kiln_process_id(), (unsigned long)(kiln_time_ns() % 1000000007u));
    if (kiln_fs_mkdirs(dir) != 0) {
        fprintf(stderr, "cannot create %s\n", dir);
        return 1;
    }
    kiln_env_set("KILN_JIT", NULL);
    find_worker(argc > 0 ? argv[0] : NULL);

    test_unwritable(dir); /* first: the warning is once per process */
    test_hit_and_keys(dir);
    test_corrupt(dir);
    test_jit_off(dir);
    test_list_clear(dir);
    if (!worker[0]) {
        fprintf(stderr, "FAIL: cache_worker not found; tests/helpers/helpers.cmake builds it\n");
        return 1;
    }
    test_eight_processes(dir);
    test_killed_owner(dir);
    return check_finish("test_cache");
}
