/*
 * kiln bench: times attention or the gated activations (BENCH.md suites 5 and 6 on the
 * tool's side). Each call is followed by the backend's synchronize and timed by the wall
 * clock; the calls of every sample are spread over rounds that alternate the order of the
 * samples, so slow drift of a shared machine lands on all of them alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench.h"
#include "bench_report.h"
#include "context.h"
#include "cpu/cpu.h"
#include "dtypes.h"
#include "platform/platform.h"

static const char *const kinds[] = {"attention", "activation", NULL};
static const char *const backends[] = {"auto", "cpu", "cuda", "hip", NULL};
static const kiln_backend backend_values[] = {KILN_BACKEND_AUTO, KILN_BACKEND_CPU,
                                              KILN_BACKEND_CUDA, KILN_BACKEND_HIP};
static const char *const acts[] = {"silu", "gelu", "gelu_tanh", NULL};
static const kiln_activation act_values[] = {KILN_ACT_SILU, KILN_ACT_GELU,
                                             KILN_ACT_GELU_TANH};

#define MAX_ITEMS (TOOL_LIST_MAX * TOOL_LIST_MAX)
/* Without --iters each sample gets about this much measured time, within the bounds. */
#define AUTO_SECONDS 1.0
#define AUTO_MIN_ITERS 10
#define AUTO_MAX_ITERS 500
/* Without --warmup each sample warms up for this long (at least 2 calls, at most 50). */
#define AUTO_WARMUP_SECONDS 0.2

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Appends count options after the first n of dst (which keeps a zeroed terminator). */
static size_t add_opts(tool_opt *dst, size_t n, const tool_opt *src, size_t count) {
    memcpy(dst + n, src, count * sizeof *src);
    return n + count;
}

static double now_us(void) { return (double)kiln_time_ns() * 1e-3; }

/* One call plus synchronize, timed; 0 on success. */
static int timed_call(kiln_context *ctx, const bench_shape *shape, bench_item *it, double *us) {
    double t0 = now_us();
    kiln_status st = bench_item_call(ctx, shape, it);
    if (st == KILN_OK) st = kiln_ctx_synchronize(ctx, NULL);
    *us = now_us() - t0;
    if (st == KILN_OK) return 0;
    fprintf(stderr, "kiln bench: the call failed: %s: %s\n", kiln_status_string(st),
            kiln_last_error());
    return -1;
}

static int warm_up(kiln_context *ctx, const bench_shape *shape, bench_item *it, int64_t warmup,
                   double *per_call_us) {
    double spent = 0.0, us = 0.0;
    int64_t calls = 0;
    for (;;) {
        if (warmup >= 0 && calls == warmup) break;
        if (warmup < 0 && calls >= 2 && (spent >= AUTO_WARMUP_SECONDS * 1e6 || calls == 50))
            break;
        if (timed_call(ctx, shape, it, &us)) return -1;
        spent += us;
        calls++;
    }
    if (calls == 0 && timed_call(ctx, shape, it, &us)) return -1; /* to size --iters auto */
    *per_call_us = us; /* the last call: caches and pools are warm by then */
    return 0;
}

static int run_items(kiln_context *ctx, const bench_shape *shape, bench_item *items, int n,
                     int64_t warmup, int64_t iters, int64_t rounds) {
    for (int i = 0; i < n; i++) {
        double per_call = 0.0;
        if (warm_up(ctx, shape, &items[i], warmup, &per_call)) return -1;
        kiln_dispatch_init(&items[i].ran);
        if (kiln_last_dispatch(&items[i].ran) != KILN_OK) kiln_dispatch_init(&items[i].ran);
        int64_t want = iters;
        if (want <= 0) {
            want = per_call > 0.0 ? (int64_t)(AUTO_SECONDS * 1e6 / per_call) : AUTO_MAX_ITERS;
            if (want < AUTO_MIN_ITERS) want = AUTO_MIN_ITERS;
            if (want > AUTO_MAX_ITERS) want = AUTO_MAX_ITERS;
        }
        items[i].times_us = malloc((size_t)want * sizeof(double));
        if (!items[i].times_us) {
            fprintf(stderr, "kiln bench: out of memory\n");
            return -1;
        }
        items[i].ntimes = (int)want;
    }
    /* Round r makes calls [ntimes * r / rounds, ntimes * (r + 1) / rounds) of every
     * sample, visiting the samples forwards in even rounds and backwards in odd ones. */
    for (int64_t r = 0; r < rounds; r++) {
        for (int k = 0; k < n; k++) {
            bench_item *it = &items[r % 2 ? n - 1 - k : k];
            int64_t lo = it->ntimes * r / rounds, hi = it->ntimes * (r + 1) / rounds;
            for (int64_t c = lo; c < hi; c++)
                if (timed_call(ctx, shape, it, &it->times_us[c])) return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        tool_stats_compute(items[i].times_us, items[i].ntimes, &items[i].stats);
        if (bench_item_verify(ctx, shape, &items[i]))
            fprintf(stderr, "kiln bench: could not check sample %d against the reference\n", i);
    }
    return 0;
}

static int threads_in_use(int64_t threads_opt) {
    char buf[32];
    if (threads_opt > 0) return (int)threads_opt;
    if (kiln_env_get("KILN_NUM_THREADS", buf, sizeof buf) && atoi(buf) > 0) return atoi(buf);
    return kiln_cpu_count();
}

static int run(const tool_cmd *self, int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(self->usage, stdout);
        return TOOL_EXIT_OK;
    }
    /* The options depend on what is benchmarked, so that comes first. */
    if (argc < 2 || argv[1][0] == '-')
        tool_usage_error(self, "the first argument names what to benchmark: attention or "
                               "activation");
    bench_shape shape = {0};
    shape.kind = (bench_kind)tool_require_choice(self, "benchmark", argv[1], kinds);

    int64_t batch = 1, heads = 16, kv_heads = 0, head_dim = 64, rows = 8192, dim = 14336;
    int64_t warmup = -1, iters = 0, rounds = 7, threads = 0;
    int causal = 0, json = 0, backend = 0;
    const char *out_path = NULL;
    tool_int_list seqlens = {3, {128, 512, 1024}};
    tool_choice_list dtypes = {1, {0}};
    tool_choice_list act_list = {3, {0, 1, 2}};
    const tool_opt common[] = {
        {"dtype", TOOL_OPT_CHOICE_LIST, &dtypes, 0, 0, tool_dtype_names},
        {"backend", TOOL_OPT_CHOICE, &backend, 0, 0, backends},
        {"warmup", TOOL_OPT_INT, &warmup, 0, 100000, NULL},
        {"iters", TOOL_OPT_INT, &iters, 1, 1000000, NULL},
        {"rounds", TOOL_OPT_INT, &rounds, 1, 100, NULL},
        {"threads", TOOL_OPT_INT, &threads, 1, 4096, NULL},
        {"json", TOOL_OPT_FLAG, &json, 0, 0, NULL},
        {"out", TOOL_OPT_STRING, &out_path, 0, 0, NULL},
    };
    const tool_opt attention_only[] = {
        {"batch", TOOL_OPT_INT, &batch, 1, 1 << 20, NULL},
        {"heads", TOOL_OPT_INT, &heads, 1, 4096, NULL},
        {"kv-heads", TOOL_OPT_INT, &kv_heads, 1, 4096, NULL},
        {"seqlen", TOOL_OPT_INT_LIST, &seqlens, 1, 1 << 24, NULL},
        {"head-dim", TOOL_OPT_INT, &head_dim, 8, 256, NULL},
        {"causal", TOOL_OPT_FLAG, &causal, 0, 0, NULL},
    };
    const tool_opt activation_only[] = {
        {"rows", TOOL_OPT_INT, &rows, 1, (int64_t)1 << 32, NULL},
        {"dim", TOOL_OPT_INT, &dim, 1, (int64_t)1 << 32, NULL},
        {"act", TOOL_OPT_CHOICE_LIST, &act_list, 0, 0, acts},
    };
    tool_opt opts[ARRAY_LEN(common) + ARRAY_LEN(attention_only) + 1] = {{0}};
    size_t nopts = shape.kind == BENCH_ATTENTION
                       ? add_opts(opts, 0, attention_only, ARRAY_LEN(attention_only))
                       : add_opts(opts, 0, activation_only, ARRAY_LEN(activation_only));
    add_opts(opts, nopts, common, ARRAY_LEN(common));
    tool_parse(self, argc - 1, argv + 1, opts, NULL, 0);

    if (kv_heads == 0) kv_heads = heads;
    if (heads % kv_heads != 0)
        tool_usage_error(self, "--kv-heads: %lld does not divide --heads %lld",
                         (long long)kv_heads, (long long)heads);
    if (head_dim % 8 != 0)
        tool_usage_error(self, "--head-dim: %lld is not a multiple of 8 (allowed: 8 to 256 "
                               "in steps of 8)", (long long)head_dim);
    shape.batch = batch;
    shape.heads = heads;
    shape.kv_heads = kv_heads;
    shape.head_dim = head_dim;
    shape.causal = causal;
    shape.rows = rows;
    shape.dim = dim;

    if (threads > 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)threads);
        kiln_env_set("KILN_NUM_THREADS", buf);
    }
    kiln_context *ctx = NULL;
    kiln_status st = kiln_context_create(backend_values[backend], 0, &ctx);
    if (st != KILN_OK) {
        fprintf(stderr, "kiln bench: cannot start backend %s: %s: %s\n", backends[backend],
                kiln_status_string(st), kiln_last_error());
        return TOOL_EXIT_FAIL;
    }

    bench_item *items = calloc(MAX_ITEMS, sizeof *items);
    int n = 0, rc = TOOL_EXIT_OK;
    uint64_t seed = 0x6b696c6eull;
    const int per_dtype = shape.kind == BENCH_ATTENTION ? seqlens.n : act_list.n;
    if (!items) {
        fprintf(stderr, "kiln bench: out of memory\n");
        kiln_context_free(ctx);
        return TOOL_EXIT_FAIL;
    }
    for (int d = 0; d < dtypes.n; d++)
        for (int s = 0; s < per_dtype; s++, n++) {
            bench_item *it = &items[n];
            it->kind = shape.kind;
            it->dtype = tool_dtype_values[dtypes.v[d]];
            if (shape.kind == BENCH_ATTENTION) it->seqlen = seqlens.v[s];
            else it->act = act_values[act_list.v[s]];
            if (bench_item_setup(ctx, &shape, it, n ? &items[n - 1] : NULL, &seed)) {
                rc = TOOL_EXIT_FAIL;
                goto done;
            }
        }

    bench_run run = {0};
    run.shape = shape;
    run.backend = kiln_context_backend(ctx);
    run.threads = run.backend == KILN_BACKEND_CPU ? threads_in_use(threads) : 0;
    run.warmup = warmup;
    run.iters = iters;
    run.rounds = rounds;
    run.argc = argc;
    run.argv = argv;
    /* Measured once, before the samples, with as many threads as they use. */
    run.peak_gflops = run.backend == KILN_BACKEND_CPU && shape.kind == BENCH_ATTENTION
                          ? kiln_cpu_fma_peak_gflops(run.threads)
                          : 0.0;
    if (run_items(ctx, &shape, items, n, warmup, iters, rounds)) {
        rc = TOOL_EXIT_FAIL;
        goto done;
    }
    rc = bench_report(&run, items, n, json, out_path);

done:
    /* Every slot, so a sample that failed half-way through its setup is freed too. */
    for (int i = 0; i < MAX_ITEMS; i++) bench_item_free(ctx, &items[i]);
    free(items);
    kiln_context_free(ctx);
    return rc;
}

const tool_cmd tool_cmd_bench = {
    "bench",
    "time attention or the gated activations (table, and JSON results)",
    "usage: kiln bench attention [options]\n"
    "       kiln bench activation [options]\n"
    "\n"
    "Times calls on one backend. Each call is followed by the backend's synchronize; the\n"
    "calls of all samples are spread over rounds that alternate their order. Reports the\n"
    "median time per call and its spread; one more call of each sample is then checked\n"
    "against the fp64 reference on a slice of its output (kiln check covers every op\n"
    "fully). On the CPU, attention is also reported against this machine's fp32 FMA peak,\n"
    "measured once per run.\n"
    "\n"
    "attention: q [batch, seqlen, heads, head-dim], k and v [batch, seqlen, kv-heads,\n"
    "head-dim]; GFLOP/s counts 4*batch*heads*seqlen^2*head-dim, halved with --causal.\n"
    "  --batch N          default 1\n"
    "  --heads N          default 16\n"
    "  --kv-heads N       default: --heads (fewer gives GQA; must divide --heads)\n"
    "  --seqlen LIST      comma-separated, default 128,512,1024\n"
    "  --head-dim N       multiple of 8 up to 256, default 64\n"
    "  --causal           bottom-right causal mask\n"
    "\n"
    "activation: x [rows, 2*dim] -> out [rows, dim]; GB/s counts bytes read and written.\n"
    "  --rows N           default 8192\n"
    "  --dim N            default 14336\n"
    "  --act LIST         silu,gelu,gelu_tanh (default all three)\n"
    "\n"
    "common:\n"
    "  --dtype LIST       bf16,f16,f32 (default bf16)\n"
    "  --backend B        auto|cpu|cuda|hip (default auto)\n"
    "  --warmup N         unmeasured calls per sample (default: 0.2 s worth, 2 to 50)\n"
    "  --iters N          measured calls per sample (default: 1 s worth, 10 to 500)\n"
    "  --rounds N         rounds the measured calls are spread over (default 7)\n"
    "  --threads N        CPU threads (default: KILN_NUM_THREADS, else every core)\n"
    "  --json             print results as JSON instead of the table\n"
    "  --out FILE         write the JSON results to FILE (the table still prints)\n"
    "\n"
    "BENCH.md reference protocol: --warmup 50 --iters 500 --rounds 7.\n",
    run,
};
