/*
 * A second process for tests/test_cache.c: asks the kernel cache (KILN_CACHE_DIR from the
 * environment) for the fake entry, as a process using kiln would.
 *
 *   cache_worker <compile ms> [options]
 *
 * The folder for compile marks and the file for the bytes it got come in the environment
 * (CACHE_WORKER_COUNTER_DIR, CACHE_WORKER_OUT): paths with non-ASCII names survive that on
 * every OS, where Windows' argv would squeeze them into the ANSI code page. Prints where
 * the bytes came from. Exit codes: 0 done, 2 bad usage, 3 the cache call failed, 4 the out
 * file could not be written.
 */
#include "cache_worker.h"

int main(int argc, char **argv)
{
    char counter[1200], out[1200];
    if (argc < 2 || !kiln_env_get("CACHE_WORKER_COUNTER_DIR", counter, sizeof counter) ||
        !kiln_env_get("CACHE_WORKER_OUT", out, sizeof out)) {
        fprintf(stderr, "usage: cache_worker <compile ms> [options], with "
                        "CACHE_WORKER_COUNTER_DIR and CACHE_WORKER_OUT set\n");
        return 2;
    }
    const char *options = argc > 2 ? argv[2] : "-DKILN_DTYPE=2";
    fake_compiler fc = {counter, (unsigned)strtoul(argv[1], NULL, 10), options};
    kiln_cache_key key = fake_key(options);
    void *image = NULL;
    size_t len = 0;
    kiln_cache_origin origin = KILN_CACHE_MEMORY;
    kiln_status st = kiln_cache_get(&key, fake_compile, &fc, &image, &len, &origin);
    if (st != KILN_OK) {
        fprintf(stderr, "cache_worker: %s: %s\n", kiln_status_name(st), kiln_last_error());
        return 3;
    }
    char err[512];
    if (kiln_fs_write_atomic(out, image, len, err, sizeof err) != 0) {
        fprintf(stderr, "cache_worker: %s\n", err);
        return 4;
    }
    printf("cache_worker %lu: %s\n", (unsigned long)kiln_process_id(),
           origin == KILN_CACHE_HIT ? "hit" : origin == KILN_CACHE_BUILT ? "built" : "memory");
    free(image);
    return 0;
}
