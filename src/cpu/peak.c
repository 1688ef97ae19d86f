/* Measured fp32 FMA peak: the level's register-blocked FMA loop on every thread, handed out
 * in many short chunks so a late-starting thread does not stretch the wall time. */
#include "cpu.h"
#include "platform/platform.h"

typedef struct peak_job {
    const kiln_cpu_kernels *kr;
    int64_t iters;
} peak_job;

static void peak_item(void *ctx, int64_t item, int slot) {
    (void)item;
    (void)slot;
    const peak_job *j = ctx;
    j->kr->fma_loop(j->iters);
}

double kiln_cpu_fma_peak_gflops(int threads) {
    if (threads <= 0) threads = kiln_cpu_count();
    peak_job j = {kiln_cpu_kernels_for(kiln_cpu_detect_level(), KILN_F32), 1 << 16};

    /* Size one chunk to about 4 ms on one thread (after a warm-up that lifts the clock). */
    double flops = 0.0;
    uint64_t t0 = kiln_time_ns(), dt = 0;
    while ((dt = kiln_time_ns() - t0) < 20000000u) flops += j.kr->fma_loop(j.iters);
    double flops_per_ns = flops / (double)dt;
    double flops_per_iter = j.kr->fma_loop(1);
    j.iters = (int64_t)(4e6 * flops_per_ns / flops_per_iter);
    if (j.iters < 1024) j.iters = 1024;

    kiln_cpu_pool *pool = kiln_cpu_pool_create(threads);
    if (!pool) return 0.0;
    int64_t items = 48 * (int64_t)threads;
    kiln_cpu_pool_run(pool, threads, peak_item, &j); /* wake every thread */
    uint64_t a = kiln_time_ns();
    kiln_cpu_pool_run(pool, items, peak_item, &j);
    uint64_t b = kiln_time_ns();
    kiln_cpu_pool_free(pool);
    return (double)items * (double)j.iters * flops_per_iter / (double)(b - a);
}
