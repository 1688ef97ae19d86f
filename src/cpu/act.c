/* Gated activations: rows of x [.., 2d] -> out [.., d], cut into slabs of about CHUNK
 * elements so big inputs spread over the pool and small ones run on the caller's thread. */
#include "cpu.h"

#define CHUNK 16384

typedef struct act_job {
    const kiln_act_problem *p;
    const kiln_cpu_kernels *kr;
    int64_t cols, col_chunks, rows_per_item;
    size_t esize;
} act_job;

static void act_item(void *ctx, int64_t item, int slot) {
    (void)slot;
    const act_job *j = ctx;
    const kiln_act_problem *p = j->p;
    int64_t cc = item % j->col_chunks, rb = item / j->col_chunks;
    int64_t c0 = cc * j->cols, c1 = c0 + j->cols < p->d ? c0 + j->cols : p->d;
    int64_t r0 = rb * j->rows_per_item, r1 = r0 + j->rows_per_item < p->rows ? r0 + j->rows_per_item : p->rows;
    for (int64_t r = r0; r < r1; r++) {
        /* Row index -> offsets through the (up to 3) flattened leading dims, last fastest. */
        int64_t xo = 0, oo = 0, rest = r;
        for (int k = p->lead_rank - 1; k >= 0; k--) {
            int64_t idx = rest % p->lead_shape[k];
            rest /= p->lead_shape[k];
            xo += idx * p->x_stride[k];
            oo += idx * p->o_stride[k];
        }
        const unsigned char *x = (const unsigned char *)p->x + (size_t)xo * j->esize;
        unsigned char *o = (unsigned char *)p->out + (size_t)oo * j->esize;
        j->kr->act(p->act, p->dtype, x + (size_t)c0 * j->esize, x + (size_t)(p->d + c0) * j->esize,
                   o + (size_t)c0 * j->esize, c1 - c0);
    }
}

kiln_status kiln_cpu_act(kiln_cpu_state *st, const kiln_act_problem *p,
                         const kiln_cpu_kernels **used) {
    act_job j;
    j.p = p;
    j.kr = kiln_cpu_kernels_for(st->level, KILN_F32);
    j.esize = p->dtype == KILN_F32 ? 4 : 2;
    *used = j.kr;
    if (p->rows <= 0 || p->d <= 0) return KILN_OK;
    j.cols = p->d < CHUNK ? p->d : CHUNK;
    j.col_chunks = (p->d + j.cols - 1) / j.cols;
    j.rows_per_item = CHUNK / j.cols;
    if (j.rows_per_item < 1) j.rows_per_item = 1;
    int64_t row_items = (p->rows + j.rows_per_item - 1) / j.rows_per_item;
    kiln_cpu_pool_run(st->pool, row_items * j.col_chunks, act_item, &j);
    return KILN_OK;
}
