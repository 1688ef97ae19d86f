/*
 * Attention fuzz target. The input bytes pick one case (mode, dtype, head dim, heads,
 * lengths, masks, layout, splits, pages) and, for half of the inputs, one argument to break.
 * A valid case must match the fp64 reference; a broken one must fail cleanly: a status, a
 * message, and not one output byte written. Any failed check aborts, so a fuzzer keeps the
 * input.
 *
 * Built two ways:
 *   - with libFuzzer (-DKILN_FUZZ_LIBFUZZER, -fsanitize=fuzzer): LLVMFuzzerTestOneInput;
 *   - as a plain program (ctest): replays the files and folders named on the command line
 *     (a corpus), or with none, KILN_FUZZ_RUNS (default 300) inputs drawn from
 *     KILN_TEST_SEED.
 * It runs on the CPU, or on the GPU backend KILN_TEST_BACKEND names (cuda, hip).
 */
#include "conformance.h"

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
} reader;

static int64_t take(reader *r, int64_t choices) {
    uint8_t b = r->at < r->n ? r->p[r->at] : 0;
    r->at++;
    return (int64_t)(b % (uint64_t)choices);
}

static tc_attn_case decode(const uint8_t *data, size_t size) {
    static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};
    static const int64_t dims[] = {8, 16, 32, 40, 64, 80, 96, 128, 192, 256};
    static const int32_t splits[] = {1, 2, 3, 7, 0};
    static const int pages[] = {16, 64, 8, 32};
    reader r = {data, size, 0};
    tc_attn_case c = tc_attn_defaults((kiln_attn_mode)take(&r, 3), dtypes[take(&r, 3)]);
    c.d = dims[take(&r, 10)];
    c.hkv = 1 + take(&r, 3);
    c.hq = c.hkv * (1 + take(&r, 4));
    c.batch = take(&r, 5);
    c.sq = take(&r, 24);
    c.sk = take(&r, 70);
    for (int64_t b = 0; b < c.batch; b++) {
        c.lq[b] = (int32_t)take(&r, 20);
        c.lk[b] = (int32_t)take(&r, 90);
    }
    if (c.mode == KILN_MODE_PAGED) {
        c.prefill = (int)take(&r, 2);
        if (!c.prefill) c.sq = 1 + take(&r, 4);
        c.page_size = pages[take(&r, 4)];
        c.shuffle = (int)take(&r, 2);
        c.shared_page = (int)take(&r, 4) == 0;
        c.nan_tail = (int)take(&r, 3) == 0;
    }
    if (c.mode != KILN_MODE_FIXED) c.extra_rows = take(&r, 3);
    c.max_q_slack = take(&r, 3);
    c.layout = (int)take(&r, 4);
    c.causal = (int)take(&r, 2);
    c.wl = (int)take(&r, 12) - 1;
    c.wr = (int)take(&r, 12) - 1;
    if (take(&r, 3) == 0) c.scale = 1.0f, c.softcap = (float)(1 + take(&r, 20));
    c.alibi = (int)take(&r, 3);
    c.lse = (int)take(&r, 3);
    c.num_splits = splits[take(&r, 5)];
    c.caller_ws = (int)take(&r, 2);
    c.corrupt = (int)take(&r, 2);
    c.seed = 1 + (uint64_t)take(&r, 256) * 256u + (uint64_t)take(&r, 256);
    return c;
}

static tc_env fuzz_env;

static void run_input(const uint8_t *data, size_t size) {
    tc_attn_case c = decode(data, size);
    if (c.dtype == KILN_F32 && fuzz_env.backend != KILN_BACKEND_CPU) c.dtype = KILN_BF16;
    tc_attn_run(&fuzz_env, &c);
}

/* The CPU, or the GPU backend KILN_TEST_BACKEND names (cuda, hip). */
static int open_context(void) {
    char want[16] = "";
    if (fuzz_env.ctx) return 0;
    kiln_env_get("KILN_TEST_BACKEND", want, sizeof want);
    fuzz_env.backend = strcmp(want, "cuda") == 0  ? KILN_BACKEND_CUDA
                       : strcmp(want, "hip") == 0 ? KILN_BACKEND_HIP
                                                  : KILN_BACKEND_CPU;
    snprintf(fuzz_env.label, sizeof fuzz_env.label, "%s", kiln_backend_name(fuzz_env.backend));
    if (kiln_context_create(fuzz_env.backend, 0, &fuzz_env.ctx) != KILN_OK) {
        fprintf(stderr, "fuzz_attention: no %s context: %s\n", fuzz_env.label, kiln_last_error());
        return -1;
    }
    return 0;
}

#if defined(KILN_FUZZ_LIBFUZZER)
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (open_context() != 0) abort();
    long before = check_state_.failures;
    run_input(data, size);
    if (check_state_.failures != before) abort();
    return 0;
}
#else

static int replay_file(const char *path) {
    void *data = NULL;
    size_t len = 0;
    char err[256];
    if (kiln_fs_read(path, &data, &len, err, sizeof err) != 0) {
        check_fail_(__FILE__, __LINE__, "cannot read %s: %s", path, err);
        return 0;
    }
    long before = check_state_.failures;
    run_input(data, len);
    if (check_state_.failures != before) fprintf(stderr, "  input: %s\n", path);
    free(data);
    return 0;
}

typedef struct dir_walk {
    const char *dir;
} dir_walk;

static int replay_entry(const char *name, void *user) {
    const dir_walk *w = user;
    char path[1024];
    snprintf(path, sizeof path, "%s%c%s", w->dir, kiln_fs_sep(), name);
    return replay_file(path);
}

int main(int argc, char **argv) {
    if (open_context() != 0) return 1;
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            dir_walk w = {argv[i]};
            if (kiln_fs_list(argv[i], replay_entry, &w) != 0) replay_file(argv[i]);
        }
    } else {
        char buf[32];
        uint64_t seed = 7, runs = 300;
        if (kiln_env_get("KILN_TEST_SEED", buf, sizeof buf)) seed = strtoull(buf, NULL, 10);
        if (kiln_env_get("KILN_FUZZ_RUNS", buf, sizeof buf)) runs = strtoull(buf, NULL, 10);
        printf("fuzz_attention: %llu inputs from seed %llu (KILN_FUZZ_RUNS, KILN_TEST_SEED)\n",
               (unsigned long long)runs, (unsigned long long)seed);
        tc_rng rng = {seed};
        for (uint64_t i = 0; i < runs; i++) {
            uint8_t input[48];
            for (size_t j = 0; j < sizeof input; j++) input[j] = (uint8_t)tc_next(&rng);
            long before = check_state_.failures;
            run_input(input, sizeof input);
            if (check_state_.failures != before) {
                fprintf(stderr, "  input %llu bytes:", (unsigned long long)i);
                for (size_t j = 0; j < sizeof input; j++) fprintf(stderr, " %02x", input[j]);
                fputc('\n', stderr);
            }
        }
    }
    kiln_context_free(fuzz_env.ctx);
    return check_finish("fuzz_attention");
}
#endif
