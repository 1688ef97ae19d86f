/*
 * BENCH.md suite 8, the C half: what a call costs on the host once its variant is loaded.
 * Each case makes one call and synchronizes (so the variant is compiled and loaded), then
 * times rounds of back-to-back calls with no synchronize inside a round, synchronizing
 * (untimed) between rounds so the launch queue never fills and blocks. Reported: the
 * median and best per-call time over the rounds, and calls per second at the median.
 *
 *   host_bench [--backend cpu|cuda|hip] [--calls N] [--rounds R] [--json FILE]
 *
 * Cases: "fixed" is the reference protocol's shape (B=1, H=16, D=64, S=128, bf16; f32 on
 * the CPU), "decode_paged" suite 3's (q length 1, B=64, 32 query / 8 KV heads, D=128, KV
 * 4096 in pages of 16, split-KV as chosen), "silu" a small silu_and_mul (8 x 2*4096),
 * "fixed_empty" the fixed case with no query rows: every check and the variant lookup
 * run but nothing is launched, so fixed minus fixed_empty is what the driver's launch
 * costs, and "fixed_rotating" the fixed call over 32 sets of tensors in turn (views at
 * different offsets of larger buffers), so that no call repeats the tensors of any of the
 * 16 calls before it: what a call costs where the hopper tier's per-thread cache of
 * tensor maps (src/gpu/hopper_launch.c) never hits.
 * On the CPU backend a call also does the work, so there the figures say little about the
 * host path; with KILN_CUDA_DRIVER_PATH naming tests' fake driver (libkiln_fake_cuda.so)
 * the CUDA backend's host path runs without a GPU: compare such figures only as ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "kiln.h"
#include "platform/platform.h"

typedef struct bench_case {
    const char *name;
    double median_us, best_us;
    int32_t splits;
    char variant[128];
} bench_case;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef kiln_status (*call_fn)(void *user);

#define ROTATE 32 /* tensor sets of fixed_rotating */

typedef struct {
    kiln_context *ctx;
    kiln_tensor q, k, v, out, x, xo, table, lens;
    kiln_tensor rot[ROTATE][4]; /* fixed_rotating's q, k, v, out */
    unsigned turn;
    kiln_attention_params prm;
    void *stream; /* the default stream */
} bench_data;

static kiln_status call_fixed(void *user)
{
    bench_data *d = user;
    return kiln_attention_fwd(d->ctx, &d->q, &d->k, &d->v, &d->out, NULL, &d->prm,
                              d->stream);
}

static kiln_status call_rotating(void *user)
{
    bench_data *d = user;
    kiln_tensor *t = d->rot[d->turn++ % ROTATE];
    return kiln_attention_fwd(d->ctx, &t[0], &t[1], &t[2], &t[3], NULL, &d->prm, d->stream);
}

static kiln_status call_paged(void *user)
{
    bench_data *d = user;
    return kiln_attention_fwd_paged(d->ctx, &d->q, &d->k, &d->v, &d->table, &d->lens, NULL, 0,
                                    &d->out, NULL, &d->prm, d->stream);
}

static kiln_status call_silu(void *user)
{
    bench_data *d = user;
    return kiln_silu_and_mul(d->ctx, &d->x, &d->xo, d->stream);
}

static int measure(bench_data *d, call_fn fn, int calls, int rounds, bench_case *c)
{
    double *per = malloc((size_t)rounds * sizeof *per);
    kiln_dispatch rep;
    if (!per) return 1;
    if (fn(d) != KILN_OK || kiln_ctx_synchronize(d->ctx, NULL) != KILN_OK) {
        fprintf(stderr, "%s: %s\n", c->name, kiln_last_error());
        free(per);
        return 1;
    }
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = kiln_time_ns();
        for (int i = 0; i < calls; i++)
            if (fn(d) != KILN_OK) {
                fprintf(stderr, "%s: %s\n", c->name, kiln_last_error());
                free(per);
                return 1;
            }
        per[r] = (double)(kiln_time_ns() - t0) * 1e-3 / calls;
        kiln_ctx_synchronize(d->ctx, NULL);
    }
    qsort(per, (size_t)rounds, sizeof *per, cmp_double);
    c->median_us = per[rounds / 2];
    c->best_us = per[0];
    free(per);
    kiln_dispatch_init(&rep);
    if (kiln_last_dispatch(&rep) == KILN_OK) {
        c->splits = rep.num_splits;
        snprintf(c->variant, sizeof c->variant, "%s", rep.variant);
    }
    return 0;
}

/* Device buffer of n elements of size es, filled with a small constant pattern. */
static void *device_buffer(kiln_context *ctx, size_t n, size_t es, int is_index, int32_t value)
{
    size_t bytes = n * es;
    unsigned char *host = malloc(bytes ? bytes : 1);
    void *dev = kiln_ctx_alloc(ctx, bytes);
    if (!host || !dev) {
        free(host);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (is_index) {
            int32_t v = value < 0 ? (int32_t)i : value;
            memcpy(host + i * es, &v, sizeof v);
        } else if (es == 2) {
            uint16_t one_tenth = 0x3dcd; /* bf16 0.1 */
            memcpy(host + i * es, &one_tenth, 2);
        } else {
            float f = 0.1f;
            memcpy(host + i * es, &f, sizeof f);
        }
    }
    kiln_ctx_copy_to_device(ctx, dev, host, bytes);
    free(host);
    return dev;
}

static int tensor(kiln_tensor *t, void *data, kiln_dtype dt, int rank, int64_t a, int64_t b,
                  int64_t c, int64_t e)
{
    int64_t shape[4] = {a, b, c, e};
    return data && kiln_tensor_contiguous(t, data, dt, rank, shape) == KILN_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *backend_name = "auto", *json = NULL;
    int calls = 200, rounds = 31;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend_name = argv[++i];
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: host_bench [--backend cpu|cuda|hip] [--calls N] "
                            "[--rounds R] [--json FILE]\n");
            return 2;
        }
    }
    if (calls < 1) calls = 1;
    if (rounds < 1) rounds = 1;
    kiln_backend backend = !strcmp(backend_name, "cpu")    ? KILN_BACKEND_CPU
                           : !strcmp(backend_name, "cuda") ? KILN_BACKEND_CUDA
                           : !strcmp(backend_name, "hip")  ? KILN_BACKEND_HIP
                                                           : KILN_BACKEND_AUTO;
    bench_data d;
    memset(&d, 0, sizeof d);
    if (kiln_context_create(backend, 0, &d.ctx) != KILN_OK) {
        fprintf(stderr, "host_bench: %s\n", kiln_last_error());
        return 1;
    }
    int cpu = kiln_context_backend(d.ctx) == KILN_BACKEND_CPU;
    kiln_dtype dt = cpu ? KILN_F32 : KILN_BF16;
    size_t es = cpu ? 4 : 2;
    kiln_attention_params_init(&d.prm);
    enum { NCASES = 5 };
    bench_case cases[NCASES];
    memset(cases, 0, sizeof cases);
    cases[0].name = "fixed";
    cases[1].name = "decode_paged";
    cases[2].name = "silu";
    cases[3].name = "fixed_empty";
    cases[4].name = "fixed_rotating";
    int failed = 0;

    /* fixed: q, k, v, out [1, 128, 16, 64] */
    size_t n = (size_t)128 * 16 * 64;
    failed |= tensor(&d.q, device_buffer(d.ctx, n, es, 0, 0), dt, 4, 1, 128, 16, 64);
    failed |= tensor(&d.k, device_buffer(d.ctx, n, es, 0, 0), dt, 4, 1, 128, 16, 64);
    failed |= tensor(&d.v, device_buffer(d.ctx, n, es, 0, 0), dt, 4, 1, 128, 16, 64);
    failed |= tensor(&d.out, device_buffer(d.ctx, n, es, 0, 0), dt, 4, 1, 128, 16, 64);
    if (!failed) failed |= measure(&d, call_fixed, calls, rounds, &cases[0]);
    kiln_tensor q_full = d.q, k_full = d.k, v_full = d.v, out_full = d.out;
    failed |= tensor(&d.q, q_full.data, dt, 4, 1, 0, 16, 64);
    failed |= tensor(&d.out, out_full.data, dt, 4, 1, 0, 16, 64);
    if (!failed) failed |= measure(&d, call_fixed, calls, rounds, &cases[3]);
    (void)k_full;
    (void)v_full;

    /* fixed_rotating: the same shape at ROTATE offsets of buffers ROTATE times as large */
    kiln_tensor *set0 = d.rot[0];
    for (int j = 0; j < 4 && !failed; j++)
        failed |= tensor(&set0[j], device_buffer(d.ctx, n * ROTATE, es, 0, 0), dt, 4, 1, 128,
                         16, 64);
    for (int r = 1; r < ROTATE && !failed; r++)
        for (int j = 0; j < 4; j++) {
            d.rot[r][j] = set0[j];
            d.rot[r][j].data = (char *)set0[j].data + (size_t)r * n * es;
        }
    if (!failed) failed |= measure(&d, call_rotating, calls, rounds, &cases[4]);

    /* decode_paged: q, out [64, 1, 32, 128]; caches [64 * 256 pages, 16, 8, 128] */
    const int64_t B = 64, pages = 4096 / 16;
    failed |= tensor(&d.q, device_buffer(d.ctx, (size_t)B * 32 * 128, es, 0, 0), dt, 4, B, 1,
                     32, 128);
    failed |= tensor(&d.out, device_buffer(d.ctx, (size_t)B * 32 * 128, es, 0, 0), dt, 4, B, 1,
                     32, 128);
    failed |= tensor(&d.k, device_buffer(d.ctx, (size_t)B * pages * 16 * 8 * 128, es, 0, 0), dt,
                     4, B * pages, 16, 8, 128);
    failed |= tensor(&d.v, device_buffer(d.ctx, (size_t)B * pages * 16 * 8 * 128, es, 0, 0), dt,
                     4, B * pages, 16, 8, 128);
    failed |= tensor(&d.table, device_buffer(d.ctx, (size_t)(B * pages), 4, 1, -1), KILN_I32, 2,
                     B, pages, 0, 0);
    failed |= tensor(&d.lens, device_buffer(d.ctx, (size_t)B, 4, 1, 4096), KILN_I32, 1, B, 0, 0,
                     0);
    if (!failed) failed |= measure(&d, call_paged, cpu ? 3 : calls, cpu ? 3 : rounds, &cases[1]);

    /* silu: x [8, 8192] -> out [8, 4096] */
    failed |= tensor(&d.x, device_buffer(d.ctx, 8 * 8192, es, 0, 0), dt, 2, 8, 8192, 0, 0);
    failed |= tensor(&d.xo, device_buffer(d.ctx, 8 * 4096, es, 0, 0), dt, 2, 8, 4096, 0, 0);
    if (!failed) failed |= measure(&d, call_silu, calls, rounds, &cases[2]);

    printf("backend %s, %d rounds of %d calls without synchronizing\n",
           kiln_backend_name(kiln_context_backend(d.ctx)), rounds, calls);
    printf("%-14s %10s %10s %12s %7s  %s\n", "case", "median us", "best us", "calls/s",
           "splits", "variant");
    for (int i = 0; i < NCASES; i++)
        printf("%-14s %10.3f %10.3f %12.0f %7d  %s\n", cases[i].name, cases[i].median_us,
               cases[i].best_us, cases[i].median_us > 0 ? 1e6 / cases[i].median_us : 0,
               (int)cases[i].splits, cases[i].variant);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\n  \"suite\": \"host per-call cost (BENCH.md 8)\",\n  \"kiln\": \"%s\",\n"
                   "  \"backend\": \"%s\",\n  \"calls_per_round\": %d,\n  \"rounds\": %d,\n"
                   "  \"cases\": [\n",
                kiln_version_string(), kiln_backend_name(kiln_context_backend(d.ctx)), calls,
                rounds);
        for (int i = 0; i < NCASES; i++)
            fprintf(f,
                    "    {\"name\": \"%s\", \"median_us\": %.4f, \"best_us\": %.4f, "
                    "\"splits\": %d, \"variant\": \"%s\"}%s\n",
                    cases[i].name, cases[i].median_us, cases[i].best_us, (int)cases[i].splits,
                    cases[i].variant, i < NCASES - 1 ? "," : "");
        fprintf(f, "  ]\n}\n");
        fclose(f);
    }
    kiln_context_free(d.ctx);
    return failed;
}
