/* What `kiln bench` prints and writes once the samples are measured. */
#ifndef KILN_TOOL_BENCH_REPORT_H
#define KILN_TOOL_BENCH_REPORT_H

#include "bench.h"

typedef struct bench_run {
    bench_shape shape;
    kiln_backend backend;
    int threads;        /* CPU threads, 0 on a GPU */
    double peak_gflops; /* measured fp32 FMA peak; 0 when not measured */
    int64_t warmup, iters, rounds; /* as asked: -1 / 0 mean automatic */
    int argc;           /* the command line, recorded in the results */
    char **argv;
} bench_run;

/* Prints the table (unless json without out_path, which prints the JSON instead) and writes
 * the JSON to out_path when given. Returns the process exit status: 1 if a sample's output
 * is beyond its tolerance or a file could not be written. */
int bench_report(const bench_run *run, const bench_item *items, int n, int json,
                 const char *out_path);

#endif
