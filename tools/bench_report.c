#include "bench_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "cpu/cpu.h"
#include "describe.h"
#include "dtypes.h"
#include "json.h"
#include "jsonv.h"
#include "platform/platform.h"
#include "variant_key.h"

static int over_tolerance(const bench_item *it) {
    return it->verified && !(it->max_err <= tool_tolerance(it->dtype));
}

static double rate(const bench_item *it) {
    double seconds = it->stats.median * 1e-6;
    if (seconds <= 0.0) return 0.0;
    return it->kind == BENCH_ATTENTION ? it->flops / seconds * 1e-9 : it->bytes / seconds * 1e-9;
}

/* Microseconds with the digits that matter at that size. */
static void fmt_us(char *buf, size_t cap, double us) {
    snprintf(buf, cap, us < 100.0 ? "%.2f" : us < 10000.0 ? "%.1f" : "%.0f", us);
}

static void print_table(FILE *f, const bench_run *run, const bench_item *items, int n) {
    const bench_shape *s = &run->shape;
    char model[128] = "";
    fprintf(f, "kiln %s bench %s on %s", kiln_version_string(),
            s->kind == BENCH_ATTENTION ? "attention" : "activation",
            kiln_backend_name(run->backend));
    if (run->backend == KILN_BACKEND_CPU) {
        kiln_cpu_model_name(model, sizeof model);
        fprintf(f, ", %d thread%s, %s", run->threads, run->threads == 1 ? "" : "s",
                model[0] ? model : "unknown CPU");
    }
    fputc('\n', f);
    if (s->kind == BENCH_ATTENTION)
        fprintf(f, "batch %lld, heads %lld (kv %lld), head_dim %lld, %s; ", (long long)s->batch,
                (long long)s->heads, (long long)s->kv_heads, (long long)s->head_dim,
                s->causal ? "causal" : "non-causal");
    else
        fprintf(f, "x [%lld, %lld] -> out [%lld, %lld]; ", (long long)s->rows,
                (long long)(2 * s->dim), (long long)s->rows, (long long)s->dim);
    fprintf(f, "calls over %lld rounds, synchronized, median per call\n", (long long)run->rounds);
    if (run->peak_gflops > 0.0)
        fprintf(f, "fp32 FMA peak of this machine, measured now: %.1f GFLOP/s\n",
                run->peak_gflops);
    fputc('\n', f);

    if (s->kind == BENCH_ATTENTION)
        fprintf(f, "%-5s %7s %10s %26s %6s %9s %8s %9s  %s\n", "dtype", "seqlen", "median us",
                "p25 - p75 (min) us", "calls", "GFLOP/s", "of peak", "max err", "ran");
    else
        fprintf(f, "%-9s %-5s %10s %26s %6s %9s %9s  %s\n", "act", "dtype", "median us",
                "p25 - p75 (min) us", "calls", "GB/s", "max err", "ran");
    for (int i = 0; i < n; i++) {
        const bench_item *it = &items[i];
        char spread[96], peak[16] = "-", err[24] = "-", med[24], p25[24], p75[24], mn[24];
        fmt_us(med, sizeof med, it->stats.median);
        fmt_us(p25, sizeof p25, it->stats.p25);
        fmt_us(p75, sizeof p75, it->stats.p75);
        fmt_us(mn, sizeof mn, it->stats.min);
        snprintf(spread, sizeof spread, "%s - %s (%s)", p25, p75, mn);
        if (it->verified)
            snprintf(err, sizeof err, "%.1e%s", it->max_err, over_tolerance(it) ? "!" : "");
        if (s->kind == BENCH_ATTENTION) {
            if (run->peak_gflops > 0.0)
                snprintf(peak, sizeof peak, "%.0f%%", 100.0 * rate(it) / run->peak_gflops);
            fprintf(f, "%-5s %7lld %10s %26s %6d %9.1f %8s %9s  %s", kiln_dtype_name(it->dtype),
                    (long long)it->seqlen, med, spread, it->ntimes, rate(it), peak, err,
                    it->ran.variant);
        } else {
            fprintf(f, "%-9s %-5s %10s %26s %6d %9.1f %9s  %s", kiln_activation_name(it->act),
                    kiln_dtype_name(it->dtype), med, spread, it->ntimes, rate(it), err,
                    it->ran.variant);
        }
        if (it->ran.target[0]) fprintf(f, " [%s]", it->ran.target);
        fputc('\n', f);
    }
    for (int i = 0; i < n; i++)
        if (over_tolerance(&items[i]))
            fprintf(f, "! max err beyond the %s tolerance %.0e: these timings are of a wrong "
                       "result\n",
                    kiln_dtype_name(items[i].dtype), tool_tolerance(items[i].dtype));
}

static void json_config(kiln_json *j, const bench_run *run) {
    const bench_shape *s = &run->shape;
    kiln_json_object_begin(j, "config");
    if (s->kind == BENCH_ATTENTION) {
        kiln_json_int(j, "batch", s->batch);
        kiln_json_int(j, "heads", s->heads);
        kiln_json_int(j, "kv_heads", s->kv_heads);
        kiln_json_int(j, "head_dim", s->head_dim);
        kiln_json_bool(j, "causal", s->causal);
    } else {
        kiln_json_int(j, "rows", s->rows);
        kiln_json_int(j, "dim", s->dim);
    }
    if (run->warmup >= 0) kiln_json_int(j, "warmup", run->warmup);
    else kiln_json_string(j, "warmup", "auto");
    if (run->iters > 0) kiln_json_int(j, "iters", run->iters);
    else kiln_json_string(j, "iters", "auto");
    kiln_json_int(j, "rounds", run->rounds);
    kiln_json_object_end(j);
}

static void json_sample(kiln_json *j, const bench_run *run, const bench_item *it) {
    kiln_json_object_begin(j, NULL);
    kiln_json_string(j, "dtype", kiln_dtype_name(it->dtype));
    if (it->kind == BENCH_ATTENTION) kiln_json_int(j, "seqlen", it->seqlen);
    else kiln_json_string(j, "act", kiln_activation_name(it->act));
    kiln_json_int(j, "calls", it->ntimes);
    kiln_json_number(j, "median_us", it->stats.median);
    kiln_json_number(j, "p25_us", it->stats.p25);
    kiln_json_number(j, "p75_us", it->stats.p75);
    kiln_json_number(j, "min_us", it->stats.min);
    kiln_json_number(j, "max_us", it->stats.max);
    if (it->kind == BENCH_ATTENTION) {
        kiln_json_number(j, "gflops", rate(it));
        if (run->peak_gflops > 0.0)
            kiln_json_number(j, "fraction_of_peak", rate(it) / run->peak_gflops);
    } else {
        kiln_json_number(j, "gbytes_per_s", rate(it));
    }
    if (it->verified) kiln_json_number(j, "max_abs_err", it->max_err);
    else kiln_json_null(j, "max_abs_err");
    kiln_json_number(j, "tolerance", tool_tolerance(it->dtype));
    kiln_json_string(j, "variant", it->ran.variant);
    kiln_json_string(j, "tier", it->ran.tier);
    kiln_json_string(j, "target", it->ran.target);
    kiln_json_int(j, "num_splits", it->ran.num_splits);
    kiln_json_object_end(j);
}

/* The results as indented JSON text (malloc'd), or NULL when out of memory. */
static char *results_json(const bench_run *run, const bench_item *items, int n) {
    kiln_json j;
    char text[512], model[128] = "";
    size_t len = 0;
    time_t t = time(NULL);
    struct tm *utc = gmtime(&t);

    tool_json_init(&j);
    kiln_json_object_begin(&j, NULL);
    kiln_json_string(&j, "suite", run->shape.kind == BENCH_ATTENTION
                                     ? (run->backend == KILN_BACKEND_CPU ? "cpu attention"
                                                                         : "attention")
                                     : "activation");
    text[0] = '\0';
    for (int i = 0; i < run->argc && len < sizeof text; i++) {
        int w = snprintf(text + len, sizeof text - len, "%s%s", i ? " " : "kiln ", run->argv[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
    kiln_json_string(&j, "command", text);
    if (utc) strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", utc);
    kiln_json_string(&j, "date", utc ? text : NULL);
    kiln_json_string(&j, "kiln_version", kiln_version_string());
    kiln_json_object_begin(&j, "machine");
    kiln_cpu_model_name(model, sizeof model);
    kiln_json_string(&j, "cpu", model);
    kiln_json_int(&j, "cores", kiln_cpu_count());
    kiln_json_object_end(&j);
    kiln_json_string(&j, "backend", kiln_backend_name(run->backend));
    if (run->threads > 0) kiln_json_int(&j, "threads", run->threads);
    if (run->peak_gflops > 0.0) kiln_json_number(&j, "fp32_fma_peak_gflops", run->peak_gflops);
    json_config(&j, run);
    kiln_json_array_begin(&j, "samples");
    for (int i = 0; i < n; i++) json_sample(&j, run, &items[i]);
    kiln_json_array_end(&j);
    /* The library's own description: devices, drivers, compilers and versions. */
    kiln_info_write(&j, "library", NULL);
    kiln_json_object_end(&j);

    char *pretty = tool_json_text(&j);
    kiln_json_free(&j);
    return pretty;
}

int bench_report(const bench_run *run, const bench_item *items, int n, int json,
                 const char *out_path) {
    int rc = TOOL_EXIT_OK;
    if (!json || out_path) print_table(stdout, run, items, n);
    for (int i = 0; i < n; i++)
        if (over_tolerance(&items[i])) rc = TOOL_EXIT_FAIL;
    if (!json && !out_path) return rc;

    char *text = results_json(run, items, n);
    if (!text) {
        fprintf(stderr, "kiln bench: out of memory writing the results\n");
        return TOOL_EXIT_FAIL;
    }
    if (!out_path) {
        fputs(text, stdout);
    } else {
        char err[256];
        if (kiln_fs_write_atomic(out_path, text, strlen(text), err, sizeof err) != 0) {
            fprintf(stderr, "kiln bench: cannot write %s: %s\n", out_path, err);
            rc = TOOL_EXIT_FAIL;
        } else {
            printf("\nresults: %s\n", out_path);
        }
    }
    free(text);
    return rc;
}
