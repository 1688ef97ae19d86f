/*
 * BENCH.md suite 7, the JIT part: per variant, the cold compile time (NVRTC / hipRTC into
 * an empty cache) and the warm load time (read and check the cache entry, and with a GPU
 * present also load the module and find the kernel), plus the time to compile every
 * variant of the target one at a time (`kiln cache warm`).
 *
 *   jit_bench [--backend cuda|hip] [--target sm_90] [--all] [--reps 20] [--json FILE]
 *
 * It uses a fresh cache folder under the system's temporary folder (KILN_CACHE_DIR is
 * overridden) so "cold" really is cold. Without a GPU it still measures compiling (no GPU
 * is needed for that) when --target names the target.
 *
 * With a GPU it also times the stall a user sees, before anything else in the process: the
 * first kiln_attention_fwd of the reference shape (B=1, S=512, H=16, D=64, bf16) on a new
 * context with an empty cache (loads NVRTC / hipRTC and compiles the one variant the call
 * needs), then on another new context with the entry on disk, then a later call on one
 * context; each call is followed by a synchronize. The per-variant table leaves that
 * variant out, so its cold figures are not flattered by work already done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "gpu/cache.h"
#include "gpu/gpu.h"
#include "gpu/targets.h"
#include "gpu/variants.h"
#include "platform/platform.h"

typedef struct row {
    char key[128];
    double cold_s;
    size_t bytes;
    double warm_read_ms, warm_load_ms;
} row;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double ms_since(uint64_t t0) { return (double)(kiln_time_ns() - t0) * 1e-6; }

typedef struct first_call {
    int ran;
    double cold_ms, disk_ms, steady_ms;
    char variant[128];
} first_call;

/* One attention call on a new context (or on ctx when given), synchronized; ms. */
static double attention_ms(kiln_backend backend, kiln_context *ctx, char *variant, size_t cap)
{
    const int64_t shape[4] = {1, 512, 16, 64};
    size_t n = 1 * 512 * 16 * 64, bytes = n * 2;
    kiln_context *own = NULL;
    if (!ctx && kiln_context_create(backend, 0, &own) != KILN_OK) return -1;
    kiln_context *c = ctx ? ctx : own;
    uint16_t *host = malloc(bytes);
    void *q = kiln_ctx_alloc(c, bytes), *k = kiln_ctx_alloc(c, bytes);
    void *v = kiln_ctx_alloc(c, bytes), *o = kiln_ctx_alloc(c, bytes);
    double ms = -1;
    if (host && q && k && v && o) {
        unsigned x = 12345;
        for (size_t i = 0; i < n; i++) { /* bf16 in [-1, 1) */
            x = x * 1103515245u + 12345u;
            float f = (float)((x >> 8) & 0xffff) / 32768.0f - 1.0f;
            uint32_t u;
            memcpy(&u, &f, 4);
            host[i] = (uint16_t)(u >> 16);
        }
        kiln_ctx_copy_to_device(c, q, host, bytes);
        kiln_ctx_copy_to_device(c, k, host, bytes);
        kiln_ctx_copy_to_device(c, v, host, bytes);
        kiln_ctx_synchronize(c, NULL);
        kiln_tensor tq, tk, tv, to;
        kiln_tensor_contiguous(&tq, q, KILN_BF16, 4, shape);
        kiln_tensor_contiguous(&tk, k, KILN_BF16, 4, shape);
        kiln_tensor_contiguous(&tv, v, KILN_BF16, 4, shape);
        kiln_tensor_contiguous(&to, o, KILN_BF16, 4, shape);
        /* Context start-up and the copies are not part of the call's stall. */
        uint64_t t0 = kiln_time_ns();
        kiln_status st = kiln_attention_fwd(c, &tq, &tk, &tv, &to, NULL, NULL, NULL);
        if (st == KILN_OK) st = kiln_ctx_synchronize(c, NULL);
        ms = st == KILN_OK ? ms_since(t0) : -1;
        if (st != KILN_OK) fprintf(stderr, "attention: %s\n", kiln_last_error());
        kiln_dispatch d;
        kiln_dispatch_init(&d);
        if (st == KILN_OK && kiln_last_dispatch(&d) == KILN_OK)
            snprintf(variant, cap, "%s", d.variant);
    }
    kiln_ctx_free(c, q);
    kiln_ctx_free(c, k);
    kiln_ctx_free(c, v);
    kiln_ctx_free(c, o);
    free(host);
    kiln_context_free(own);
    return ms;
}

static void measure_first_call(kiln_backend backend, const char *cache_root, first_call *fc)
{
    char dir[900];
    snprintf(dir, sizeof dir, "%s-first-call", cache_root);
    kiln_env_set("KILN_CACHE_DIR", dir);
    fc->cold_ms = attention_ms(backend, NULL, fc->variant, sizeof fc->variant);
    fc->disk_ms = attention_ms(backend, NULL, fc->variant, sizeof fc->variant);
    kiln_context *ctx = NULL;
    if (kiln_context_create(backend, 0, &ctx) == KILN_OK) {
        attention_ms(backend, ctx, fc->variant, sizeof fc->variant);
        double best = -1;
        for (int i = 0; i < 20; i++) {
            double ms = attention_ms(backend, ctx, fc->variant, sizeof fc->variant);
            if (best < 0 || (ms >= 0 && ms < best)) best = ms;
        }
        fc->steady_ms = best;
        kiln_context_free(ctx);
    }
    fc->ran = fc->cold_ms >= 0 && fc->disk_ms >= 0;
    kiln_env_set("KILN_CACHE_DIR", cache_root);
    printf("first attention call (%s): empty cache %.1f ms, entry on disk %.2f ms, later "
           "calls %.3f ms (best of 20, incl. synchronize)\n",
           fc->variant, fc->cold_ms, fc->disk_ms, fc->steady_ms);
}

static void json_escape(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

int main(int argc, char **argv)
{
    const char *backend = "cuda", *target = NULL, *json = NULL;
    int all = 0, reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--target") && i + 1 < argc)
            target = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--all"))
            all = 1;
        else {
            fprintf(stderr, "usage: jit_bench [--backend cuda|hip] [--target T] [--all] "
                            "[--reps N] [--json FILE]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    const kiln_gpu_driver *drv = kiln_gpu_driver_for(
        strcmp(backend, "hip") == 0 ? KILN_BACKEND_HIP : KILN_BACKEND_CUDA);
    if (!drv) {
        fprintf(stderr, "jit_bench: this build leaves the %s backend out\n", backend);
        return 2;
    }

    kiln_gpu_info info;
    kiln_gpu_device *dev = NULL;
    memset(&info, 0, sizeof info);
    if (drv->load() == KILN_OK && kiln_gpu_open(drv, 0, &info, &dev) == KILN_OK) {
        if (!target) target = info.target;
    } else {
        printf("no %s device (%s): measuring compiles only\n", drv->name, kiln_last_error());
        dev = NULL;
    }
    if (!target) {
        fprintf(stderr, "jit_bench: no device and no --target\n");
        return 2;
    }
    const kiln_target *t = kiln_target_find(target);
    char version[32] = "";
    if (!t || kiln_gpu_compiler_version(drv, version, sizeof version) != KILN_OK) {
        fprintf(stderr, "jit_bench: %s\n", t ? kiln_last_error() : "unknown target");
        return 1;
    }

    char tmp[600] = "", cache[800];
    if (!kiln_env_get("TMPDIR", tmp, sizeof tmp) && !kiln_env_get("TEMP", tmp, sizeof tmp))
        snprintf(tmp, sizeof tmp, "%s", kiln_fs_sep() == '\\' ? "." : "/tmp");
    snprintf(cache, sizeof cache, "%s%ckiln-jit-bench-%lu", tmp, kiln_fs_sep(),
             (unsigned long)kiln_process_id());
    kiln_env_set("KILN_CACHE_DIR", cache);
    kiln_env_set("KILN_JIT", NULL);

    size_t total = kiln_gpu_variant_list(t, NULL, 0);
    kiln_gpu_variant *vars = malloc(total * sizeof *vars);
    row *rows = calloc(total, sizeof *rows);
    double *samples = malloc((size_t)reps * 2 * sizeof *samples);
    if (!vars || !rows || !samples) return 1;
    kiln_gpu_variant_list(t, vars, total);

    /* The default set: what the reference shapes and a decode step touch. */
    size_t n = 0;
    for (size_t i = 0; i < total; i++) {
        char key[128];
        kiln_gpu_variant_key(&vars[i], key, sizeof key);
        /* The first-call variant is left out: it was compiled above already. */
        int pick = all || !strcmp(key, "attn_fwd.bf16.d64.causal.fixed.generic") ||
                   !strcmp(key, "attn_fwd.bf16.d128.causal.fixed.generic") ||
                   !strcmp(key, "attn_fwd.bf16.d64.full.fixed.hopper") ||
                   !strcmp(key, "attn_fwd.bf16.d128.causal.fixed.hopper") ||
                   !strcmp(key, "attn_fwd.bf16.d128.full.paged.generic") ||
                   !strcmp(key, "attn_fwd.f16.d256.window.varlen.generic") ||
                   !strcmp(key, "attn_combine.bf16.d128.generic") ||
                   !strcmp(key, "silu_and_mul.bf16.generic");
        if (pick) vars[n++] = vars[i];
    }

    /* First, while this process has compiled nothing: loading and starting the compiler
     * is part of a real first call. */
    first_call fc;
    memset(&fc, 0, sizeof fc);
    if (dev) measure_first_call(drv->kind, cache, &fc);

    printf("%-44s %10s %10s %12s %12s\n", "variant", "cold s", "bytes", "warm read ms",
           "warm load ms");
    double total_cold = 0;
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[i];
        void *image = NULL;
        size_t len = 0;
        kiln_cache_origin origin;
        kiln_gpu_variant_key(&vars[i], r->key, sizeof r->key);
        uint64_t t0 = kiln_time_ns();
        kiln_status st =
            kiln_gpu_variant_image(drv, target, version, &vars[i], &image, &len, &origin);
        r->cold_s = ms_since(t0) * 1e-3;
        if (st != KILN_OK || origin != KILN_CACHE_BUILT) {
            fprintf(stderr, "%s: %s (origin %d)\n", r->key,
                    st != KILN_OK ? kiln_last_error() : "not compiled cold", (int)origin);
            failed = 1;
            free(image);
            continue;
        }
        free(image);
        r->bytes = len;
        total_cold += r->cold_s;
        for (int k = 0; k < reps; k++) {
            void *module = NULL, *fn = NULL;
            t0 = kiln_time_ns();
            st = kiln_gpu_variant_image(drv, target, version, &vars[i], &image, &len, &origin);
            samples[k] = ms_since(t0);
            if (st == KILN_OK && dev) {
                st = kiln_gpu_module_load(dev, image, len, &module);
                if (st == KILN_OK)
                    st = kiln_gpu_function(dev, module, kiln_gpu_variant_kernel(&vars[i]), &fn);
                samples[reps + k] = ms_since(t0);
                if (module) kiln_gpu_module_unload(dev, module);
            }
            free(image);
            if (st != KILN_OK || origin != KILN_CACHE_HIT) {
                fprintf(stderr, "%s warm: %s\n", r->key, st ? kiln_last_error() : "missed");
                failed = 1;
                break;
            }
        }
        r->warm_read_ms = median(samples, reps);
        r->warm_load_ms = dev ? median(samples + reps, reps) : -1;
        printf("%-44s %10.3f %10lu %12.3f %12.3f\n", r->key, r->cold_s, (unsigned long)r->bytes,
               r->warm_read_ms, r->warm_load_ms);
    }
    printf("%lu variants compiled cold in %.2f s (one at a time); %lu in the target's full "
           "list\n",
           (unsigned long)n, total_cold, (unsigned long)total);

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "jit_bench: cannot write %s\n", json);
            return 1;
        }
        time_t now = time(NULL);
        char date[32];
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        fprintf(f,
                "{\n  \"suite\": \"jit\",\n  \"date\": \"%s\",\n  \"machine\": {\"cpus\": %d, "
                "\"device\": ",
                date, kiln_cpu_count());
        json_escape(f, dev ? info.name : "none");
        fprintf(f, ", \"target\": ");
        json_escape(f, target);
        fprintf(f, ", \"compute_units\": %d, \"driver\": ", info.compute_units);
        json_escape(f, info.driver_version_str);
        fprintf(f, "},\n  \"compiler\": {\"name\": \"%s\", \"version\": ", drv->compiler);
        json_escape(f, version);
        fprintf(f, "},\n  \"kiln\": \"%s\",\n  \"warm_reps\": %d,\n  \"variants\": [\n",
                KILN_VERSION_STRING, reps);
        for (size_t i = 0; i < n; i++)
            fprintf(f,
                    "    {\"key\": \"%s\", \"cold_compile_s\": %.4f, \"bytes\": %lu, "
                    "\"warm_read_ms_median\": %.4f, \"warm_load_ms_median\": %.4f}%s\n",
                    rows[i].key, rows[i].cold_s, (unsigned long)rows[i].bytes,
                    rows[i].warm_read_ms, rows[i].warm_load_ms, i + 1 < n ? "," : "");
        fprintf(f, "  ],\n  \"total_cold_s\": %.3f", total_cold);
        if (fc.ran)
            fprintf(f,
                    ",\n  \"first_call\": {\"shape\": \"B1 S512 H16 D64 bf16\", \"variant\": "
                    "\"%s\", \"empty_cache_ms\": %.3f, \"entry_on_disk_ms\": %.3f, "
                    "\"later_call_best_ms\": %.4f}",
                    fc.variant, fc.cold_ms, fc.disk_ms, fc.steady_ms);
        fprintf(f, "\n}\n");
        fclose(f);
    }
    kiln_gpu_close(dev);
    free(vars);
    free(rows);
    free(samples);
    return failed;
}
