/*
 * A second process for tests/test_cache.c: asks the kernel cache (KILN_CACHE_DIR from the
 * environment) for the fake entry, as a process using kiln would.
 *
 *   cache_worker <counter dir> <out file> <compile ms> [options]
 *
 * Writes the bytes it got to <out file> and prints where they came from. Exit codes: 0
 * done, 2 bad usage, 3 the cache call failed, 4 the out file could not be written.
 */
#include "cache_worker.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: cache_worker <counter dir> <out file> <compile ms> [options]\n");
        return 2;
    }
    const char *options = argc > 4 ? argv[4] : "-DKILN_DTYPE=2";
    fake_compiler fc = {argv[1], (unsigned)strtoul(argv[3], NULL, 10), options};
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
    if (kiln_fs_write_atomic(argv[2], image, len, err, sizeof err) != 0) {
        fprintf(stderr, "cache_worker: %s\n", err);
        return 4;
    }
    printf("cache_worker %llu: %s\n", (unsigned long long)kiln_process_id(),
           origin == KILN_CACHE_HIT ? "hit" : origin == KILN_CACHE_BUILT ? "built" : "memory");
    free(image);
    return 0;
}
