#include "stats.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, int n, double q) {
    double pos = q * (double)(n - 1);
    int i = (int)pos;
    if (i >= n - 1) return sorted[n - 1];
    return sorted[i] + (pos - (double)i) * (sorted[i + 1] - sorted[i]);
}

void tool_stats_compute(double *v, int n, tool_stats *out) {
    memset(out, 0, sizeof *out);
    if (n <= 0) return;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    out->n = n;
    out->min = v[0];
    out->max = v[n - 1];
    out->median = quantile(v, n, 0.5);
    out->p25 = quantile(v, n, 0.25);
    out->p75 = quantile(v, n, 0.75);
}
