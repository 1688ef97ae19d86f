/* Summaries of repeated timings. */
#ifndef KILN_TOOL_STATS_H
#define KILN_TOOL_STATS_H

typedef struct tool_stats {
    int n;
    double median, min, max;
    double p25, p75; /* quartiles (linear interpolation), the spread the results report */
} tool_stats;

/* Sorts v[0..n) in place and summarises it; n == 0 gives all zeros. */
void tool_stats_compute(double *v, int n, tool_stats *out);

#endif
