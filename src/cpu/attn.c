/*
 * Attention driver, one loop nest for the fixed, variable-length and paged modes.
 *
 * Work item: (sequence b, kv head, block of "combined rows", key split). A combined row is
 * one (query i, q head h) pair of the kv head's group, ordered i-major, so the heads that
 * share a kv head (GQA/MQA) share every packed K/V tile, and decode (one query row) still
 * gives a register block of `group` rows. Within an item the driver walks the visible key
 * range in tiles: it packs the K and V tile once (dtype conversion, paged gather), then
 * runs the level's register-block kernel over the block's rows. Register blocks whose tile
 * is wholly visible and plain take the kernel's fast path; the rest pass their scores
 * through fixup() (mask, soft-cap, ALiBi, short tile).
 *
 * Split-KV: the visible key range of an item is cut into `splits` runs of whole tiles; each
 * writes its normalised fp32 partial and LSE to the workspace, and combine() merges them:
 * out = sum_s exp(lse_s - M) o_s / sum_s exp(lse_s - M), lse = M + log(sum), M = max lse_s.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"
#include "error.h"

static size_t dtype_bytes(kiln_dtype dt) { return dt == KILN_F32 ? 4 : 2; }

/* Rows of q, k and v sit a whole token apart in memory (heads interleaved), a stride the
 * hardware prefetchers do not follow across pages, so the next rows are requested early. */
#if defined(__GNUC__) || defined(__clang__)
#define KILN_PREFETCH(ptr) __builtin_prefetch(ptr)
#define KILN_PREFETCH_W(ptr) __builtin_prefetch(ptr, 1)
#else
#define KILN_PREFETCH(ptr) ((void)(ptr))
#define KILN_PREFETCH_W(ptr) ((void)(ptr))
#endif

static void prefetch_row(const void *row, size_t bytes) {
    for (size_t off = 0; off < bytes; off += 64) KILN_PREFETCH((const unsigned char *)row + off);
}

typedef struct seq_info {
    int64_t sq, sk;
    int64_t q_row0; /* first global query row (workspace row index) */
} seq_info;

typedef struct attn_job {
    const kiln_attn_problem *p;
    const kiln_cpu_kernels *kr;
    int64_t group, bm, dpad;
    int32_t splits;
    int64_t *item_start; /* [batch + 1] */
    int64_t *blocks;     /* [batch] row blocks per kv head */
    float *ws_o, *ws_lse;
    unsigned char **scratch; /* per slot */
    size_t esize;          /* input element bytes */
} attn_job;

typedef struct fix_ctx {
    const kiln_attn_problem *p;
    const int64_t *row_i, *row_h;
    int64_t b, off, n_end; /* keys at or past n_end do not exist in this tile */
} fix_ctx;

static seq_info seq_of(const kiln_attn_problem *p, int64_t b) {
    seq_info s;
    if (p->cu_seqlens_q) {
        s.q_row0 = p->cu_seqlens_q[b];
        s.sq = p->cu_seqlens_q[b + 1] - p->cu_seqlens_q[b];
    } else {
        s.q_row0 = b * p->seqlen_q;
        s.sq = p->seqlen_q;
    }
    if (p->mode == KILN_MODE_PAGED)
        s.sk = p->seqlens_k[b];
    else if (p->cu_seqlens_k)
        s.sk = p->cu_seqlens_k[b + 1] - p->cu_seqlens_k[b];
    else
        s.sk = p->seqlen_k;
    return s;
}

static void fixup(const void *ctx, float *s, int r0, int64_t j0) {
    const fix_ctx *c = ctx;
    const kiln_attn_problem *p = c->p;
    float cap = p->softcap;
    for (int rr = 0; rr < KILN_CPU_ROWS; rr++) {
        int64_t diag = c->row_i[r0 + rr] + c->off;
        float slope = p->alibi ? p->alibi[c->b * p->alibi_stride_batch + c->row_h[r0 + rr]] : 0.0f;
        float *row = s + rr * KILN_CPU_TILE;
        for (int jj = 0; jj < KILN_CPU_TILE; jj++) {
            int64_t j = j0 + jj;
            if (j >= c->n_end || (p->window_right >= 0 && j > diag + p->window_right) ||
                (p->window_left >= 0 && j < diag - p->window_left)) {
                row[jj] = -INFINITY;
                continue;
            }
            float x = row[jj];
            if (cap != 0.0f) x = cap * tanhf(x / cap);
            if (p->alibi) x -= slope * (float)llabs(diag - j);
            row[jj] = x;
        }
    }
}

/* Per-slot scratch: packed q, accumulators, row state, packed K and V tiles. */
typedef struct scratch_view {
    unsigned char *q;
    float *o, *m, *l;
    int64_t *row_i, *row_h;
    unsigned char *k, *v;
    const void **krows, **vrows;
} scratch_view;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t scratch_bytes(int64_t bm, int64_t dpad, size_t elem) {
    size_t rows = (size_t)bm + KILN_CPU_ROWS;
    return align64(rows * (size_t)dpad * elem) + align64(rows * (size_t)dpad * 4) +
           align64(rows * 4) + align64(rows * 4 * KILN_CPU_LSTRIDE) + 2 * align64(rows * 8) +
           2 * align64((size_t)KILN_CPU_TILE * (size_t)dpad * elem) +
           2 * align64(KILN_CPU_TILE * sizeof(void *)) + 64;
}

static scratch_view scratch_at(unsigned char *base, int64_t bm, int64_t dpad, size_t elem) {
    scratch_view v;
    size_t rows = (size_t)bm + KILN_CPU_ROWS;
    unsigned char *c = (unsigned char *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
    v.q = c, c += align64(rows * (size_t)dpad * elem);
    v.o = (float *)c, c += align64(rows * (size_t)dpad * 4);
    v.m = (float *)c, c += align64(rows * 4);
    v.l = (float *)c, c += align64(rows * 4 * KILN_CPU_LSTRIDE);
    v.row_i = (int64_t *)c, c += align64(rows * 8);
    v.row_h = (int64_t *)c, c += align64(rows * 8);
    v.k = c, c += align64((size_t)KILN_CPU_TILE * (size_t)dpad * elem);
    v.v = c, c += align64((size_t)KILN_CPU_TILE * (size_t)dpad * elem);
    v.krows = (const void **)c, c += align64(KILN_CPU_TILE * sizeof(void *));
    v.vrows = (const void **)c;
    return v;
}

static void kv_rows(const attn_job *job, const void **krows, const void **vrows, int64_t b,
                    int64_t hkv, int64_t j0, int n) {
    const kiln_attn_problem *p = job->p;
    const unsigned char *k = p->k, *v = p->v;
    size_t es = job->esize;
    if (p->mode == KILN_MODE_PAGED) {
        const int32_t *bt = p->block_table + b * p->block_table_stride;
        for (int t = 0; t < n; t++) {
            int64_t j = j0 + t, page = bt[j / p->page_size], slot = j % p->page_size;
            krows[t] = k + (size_t)(page * p->k_stride_batch + slot * p->k_stride_row +
                                    hkv * p->k_stride_head) * es;
            vrows[t] = v + (size_t)(page * p->v_stride_batch + slot * p->v_stride_row +
                                    hkv * p->v_stride_head) * es;
        }
        return;
    }
    int64_t kb = p->cu_seqlens_k ? p->cu_seqlens_k[b] * p->k_stride_row : b * p->k_stride_batch;
    int64_t vb = p->cu_seqlens_k ? p->cu_seqlens_k[b] * p->v_stride_row : b * p->v_stride_batch;
    kb += hkv * p->k_stride_head;
    vb += hkv * p->v_stride_head;
    for (int t = 0; t < n; t++) {
        krows[t] = k + (size_t)(kb + (j0 + t) * p->k_stride_row) * es;
        vrows[t] = v + (size_t)(vb + (j0 + t) * p->v_stride_row) * es;
    }
}

static void write_row(const attn_job *job, const seq_info *sq, int64_t b, int64_t i, int64_t h,
                      int32_t split, const float *o, float m, float l) {
    const kiln_attn_problem *p = job->p;
    int64_t d = p->head_dim;
    /* l is 0 exactly when no visible key contributed (m still -inf); a NaN l (a NaN or
     * +inf score) makes the row NaN, as in the reference. */
    float inv = l != 0.0f ? 1.0f / l : 0.0f;
    float lse = l != 0.0f ? m + logf(l) : -INFINITY;
    if (job->splits > 1) {
        int64_t grow = sq->q_row0 + i;
        size_t idx = ((size_t)split * (size_t)p->rows_q + (size_t)grow) * (size_t)p->heads_q +
                     (size_t)h;
        job->kr->store_row(job->ws_o + idx * (size_t)d, o, inv, (int)d, KILN_F32);
        job->ws_lse[idx] = lse;
        return;
    }
    int64_t ob = p->cu_seqlens_q ? p->cu_seqlens_q[b] * p->o_stride_row : b * p->o_stride_batch;
    unsigned char *dst = (unsigned char *)p->out +
                         (size_t)(ob + i * p->o_stride_row + h * p->o_stride_head) * job->esize;
    job->kr->store_row(dst, o, inv, (int)d, p->dtype);
    if (p->lse) {
        int64_t lb = p->cu_seqlens_q ? p->cu_seqlens_q[b] * p->lse_stride_row
                                     : b * p->lse_stride_batch;
        p->lse[lb + h * p->lse_stride_head + i * p->lse_stride_row] = lse;
    }
}

static void attn_item(void *ctx, int64_t item, int slot) {
    const attn_job *job = ctx;
    const kiln_attn_problem *p = job->p;
    const kiln_cpu_kernels *kr = job->kr;

    /* item -> (b, kv head, row block, split) */
    int64_t lo = 0, hi = p->batch;
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (job->item_start[mid] <= item) lo = mid; else hi = mid;
    }
    int64_t b = lo, rem = item - job->item_start[b];
    int32_t split = (int32_t)(rem % job->splits);
    rem /= job->splits;
    int64_t blk = rem % job->blocks[b], hkv = rem / job->blocks[b];

    seq_info sq = seq_of(p, b);
    int64_t combined = sq.sq * job->group;
    int64_t c0 = blk * job->bm, c1 = c0 + job->bm < combined ? c0 + job->bm : combined;
    int nrows = (int)(c1 - c0);
    int padded = (nrows + KILN_CPU_ROWS - 1) / KILN_CPU_ROWS * KILN_CPU_ROWS;
    int64_t d = p->head_dim, dpad = job->dpad;
    size_t elem = kr->elem;
    scratch_view s = scratch_at(job->scratch[slot], job->bm, dpad, elem);

    int64_t qb = p->cu_seqlens_q ? p->cu_seqlens_q[b] * p->q_stride_row : b * p->q_stride_batch;
    for (int r = 0; r < padded; r++) {
        int rr = r < nrows ? r : nrows - 1;
        int64_t c = c0 + rr;
        s.row_i[r] = c / job->group;
        s.row_h[r] = hkv * job->group + c % job->group;
        unsigned char *qdst = s.q + (size_t)r * (size_t)dpad * elem;
        if (r + 8 < nrows) {
            int64_t cn = c0 + r + 8, in = cn / job->group, hn = hkv * job->group + cn % job->group;
            prefetch_row((const unsigned char *)p->q +
                             (size_t)(qb + in * p->q_stride_row + hn * p->q_stride_head) * job->esize,
                         (size_t)d * job->esize);
        }
        if (r < nrows) {
            const unsigned char *qsrc =
                (const unsigned char *)p->q +
                (size_t)(qb + s.row_i[r] * p->q_stride_row + s.row_h[r] * p->q_stride_head) *
                    job->esize;
            kr->pack_q(qdst, qsrc, (int)d, (int)dpad, p->dtype);
        } else {
            memset(qdst, 0, (size_t)dpad * elem);
        }
        memset(s.o + (size_t)r * (size_t)dpad, 0, (size_t)dpad * sizeof(float));
        s.m[r] = -INFINITY;
        memset(s.l + (size_t)r * KILN_CPU_LSTRIDE, 0, KILN_CPU_LSTRIDE * sizeof(float));
    }

    /* Keys visible to any row of the block, then this split's share of whole tiles. */
    int64_t off = sq.sk - sq.sq;
    int64_t imin = s.row_i[0], imax = s.row_i[nrows - 1];
    int64_t jlo = 0, jhi = sq.sk;
    if (p->window_left >= 0 && imin + off - p->window_left > jlo) jlo = imin + off - p->window_left;
    if (p->window_right >= 0 && imax + off + p->window_right + 1 < jhi)
        jhi = imax + off + p->window_right + 1;
    if (jhi > jlo) {
        int64_t ntiles = (jhi - jlo + KILN_CPU_TILE - 1) / KILN_CPU_TILE;
        int64_t per = (ntiles + job->splits - 1) / job->splits;
        int64_t t0 = per * split, t1 = t0 + per < ntiles ? t0 + per : ntiles;
        int64_t a = jlo + t0 * KILN_CPU_TILE, e = jlo + t1 * KILN_CPU_TILE;
        if (e > jhi) e = jhi;
        jlo = a;
        jhi = e;
    }
    int plain = p->softcap == 0.0f && !p->alibi;
    fix_ctx fc = {p, s.row_i, s.row_h, b, off, 0};
    kiln_cpu_block blkargs;
    blkargs.q_ld = dpad;
    blkargs.k = s.k;
    blkargs.v = s.v;
    blkargs.o_ld = dpad;
    blkargs.d = (int)d;
    blkargs.dpad = (int)dpad;
    blkargs.scale = p->scale;
    blkargs.fixup_ctx = &fc;

    for (int64_t j0 = jlo; j0 < jhi; j0 += KILN_CPU_TILE) {
        int n = jhi - j0 < KILN_CPU_TILE ? (int)(jhi - j0) : KILN_CPU_TILE;
        kv_rows(job, s.krows, s.vrows, b, hkv, j0, n);
        kr->pack_k(s.k, s.krows, n, (int)d, p->dtype);
        kr->pack_v(s.v, s.vrows, n, (int)d, (int)dpad, p->dtype);
        if (j0 + KILN_CPU_TILE < jhi) {
            int nn = jhi - j0 - KILN_CPU_TILE < KILN_CPU_TILE ? (int)(jhi - j0 - KILN_CPU_TILE) : KILN_CPU_TILE;
            kv_rows(job, s.krows, s.vrows, b, hkv, j0 + KILN_CPU_TILE, nn);
            for (int t = 0; t < nn; t++) {
                prefetch_row(s.krows[t], (size_t)d * job->esize);
                prefetch_row(s.vrows[t], (size_t)d * job->esize);
            }
        }
        fc.n_end = j0 + n;
        int64_t jlast = j0 + n - 1;
        for (int r0 = 0; r0 < nrows; r0 += KILN_CPU_ROWS) {
            int rl = r0 + KILN_CPU_ROWS - 1 < nrows ? r0 + KILN_CPU_ROWS - 1 : nrows - 1;
            int64_t da = s.row_i[r0] + off, db = s.row_i[rl] + off;
            if ((p->window_right >= 0 && j0 > db + p->window_right) ||
                (p->window_left >= 0 && jlast < da - p->window_left))
                continue;
            int full = n == KILN_CPU_TILE && plain &&
                       (p->window_right < 0 || jlast <= da + p->window_right) &&
                       (p->window_left < 0 || j0 >= db - p->window_left);
            blkargs.q = s.q + (size_t)r0 * (size_t)dpad * elem;
            blkargs.o = s.o + (size_t)r0 * (size_t)dpad;
            blkargs.m = s.m + r0;
            blkargs.l = s.l + (size_t)r0 * KILN_CPU_LSTRIDE;
            blkargs.fixup = full ? NULL : fixup;
            blkargs.r0 = r0;
            blkargs.j0 = j0;
            kr->block(&blkargs);
        }
    }

    for (int r = 0; r < nrows; r++) {
        if (r + 4 < nrows && job->splits == 1) {
            int64_t ob = p->cu_seqlens_q ? p->cu_seqlens_q[b] * p->o_stride_row : b * p->o_stride_batch;
            const unsigned char *dst =
                (const unsigned char *)p->out +
                (size_t)(ob + s.row_i[r + 4] * p->o_stride_row + s.row_h[r + 4] * p->o_stride_head) *
                    job->esize;
            for (size_t at = 0; at < (size_t)d * job->esize; at += 64) KILN_PREFETCH_W(dst + at);
        }
        float l = 0.0f;
        for (int t = 0; t < KILN_CPU_LSTRIDE; t++) l += s.l[(size_t)r * KILN_CPU_LSTRIDE + t];
        write_row(job, &sq, b, s.row_i[r], s.row_h[r], split, s.o + (size_t)r * (size_t)dpad,
                  s.m[r], l);
    }
}

typedef struct combine_job {
    const kiln_attn_problem *p;
    const float *ws_o, *ws_lse;
    int32_t splits;
    size_t esize;
} combine_job;

#define COMBINE_ROWS 16

static void combine_item(void *ctx, int64_t item, int slot) {
    (void)slot;
    const combine_job *cj = ctx;
    const kiln_attn_problem *p = cj->p;
    int64_t d = p->head_dim, hq = p->heads_q;
    float acc[256];
    int64_t g0 = item * COMBINE_ROWS, g1 = g0 + COMBINE_ROWS;
    if (g1 > p->rows_q) g1 = p->rows_q;
    for (int64_t g = g0; g < g1; g++) {
        int64_t b, i;
        if (p->cu_seqlens_q) {
            int64_t lo = 0, hi = p->batch;
            if (g >= p->cu_seqlens_q[p->batch]) continue; /* row of no sequence */
            while (hi - lo > 1) {
                int64_t mid = (lo + hi) / 2;
                if (p->cu_seqlens_q[mid] <= g) lo = mid; else hi = mid;
            }
            b = lo;
            i = g - p->cu_seqlens_q[b];
        } else {
            b = g / p->seqlen_q;
            i = g % p->seqlen_q;
        }
        int64_t ob = p->cu_seqlens_q ? p->cu_seqlens_q[b] * p->o_stride_row : b * p->o_stride_batch;
        int64_t lb = p->cu_seqlens_q ? p->cu_seqlens_q[b] * p->lse_stride_row : b * p->lse_stride_batch;
        for (int64_t h = 0; h < hq; h++) {
            size_t stride = (size_t)p->rows_q * (size_t)hq;
            size_t idx0 = (size_t)g * (size_t)hq + (size_t)h;
            float mx = -INFINITY;
            for (int32_t sp = 0; sp < cj->splits; sp++) {
                mx = kiln_cpu_max_nan(mx, cj->ws_lse[sp * stride + idx0]);
            }
            float sum = 0.0f;
            for (int64_t t = 0; t < d; t++) acc[t] = 0.0f;
            if (mx != -INFINITY) {
                for (int32_t sp = 0; sp < cj->splits; sp++) {
                    float v = cj->ws_lse[sp * stride + idx0];
                    if (v == -INFINITY) continue;
                    float w = expf(v - mx);
                    sum += w;
                    const float *o = cj->ws_o + (sp * stride + idx0) * (size_t)d;
                    for (int64_t t = 0; t < d; t++) acc[t] += w * o[t];
                }
            }
            float inv = sum != 0.0f ? 1.0f / sum : 0.0f;
            unsigned char *dst = (unsigned char *)p->out +
                                 (size_t)(ob + i * p->o_stride_row + h * p->o_stride_head) * cj->esize;
            for (int64_t t = 0; t < d; t++) kiln_store_f32(dst, t, p->dtype, acc[t] * inv);
            if (p->lse)
                p->lse[lb + h * p->lse_stride_head + i * p->lse_stride_row] =
                    sum != 0.0f ? mx + logf(sum) : -INFINITY;
        }
    }
}

kiln_status kiln_cpu_attention(kiln_cpu_state *st, const kiln_attn_problem *p,
                               const kiln_cpu_kernels **used, int32_t *splits_used) {
    const kiln_cpu_kernels *kr = kiln_cpu_kernels_for(st->level, p->dtype);
    int threads = kiln_cpu_pool_size(st->pool);
    int32_t splits = p->num_splits > 0
                         ? p->num_splits
                         : kiln_cpu_choose_splits(threads, p->batch, p->seqlen_q, p->seqlen_k,
                                                  p->heads_q, p->head_dim);
    if (splits < 1) splits = 1;
    *used = kr;
    *splits_used = splits;

    attn_job job;
    memset(&job, 0, sizeof job);
    job.p = p;
    job.kr = kr;
    job.group = p->heads_q / p->heads_kv;
    job.splits = splits;
    job.esize = dtype_bytes(p->dtype);
    job.dpad = (p->head_dim + kr->dpad_align - 1) / kr->dpad_align * kr->dpad_align;

    /* Bigger row blocks amortise K/V packing; smaller ones feed more threads. */
    int64_t bm = p->head_dim <= 64 ? 1024 : p->head_dim <= 128 ? 512 : 256;
    job.item_start = malloc(((size_t)p->batch + 1) * sizeof(int64_t));
    job.blocks = malloc(((size_t)p->batch + 1) * sizeof(int64_t));
    if (!job.item_start || !job.blocks) {
        free(job.item_start);
        free(job.blocks);
        return kiln_fail(KILN_OUT_OF_MEMORY, "cpu attention: out of memory for the work plan");
    }
    for (;;) {
        int64_t total = 0;
        for (int64_t b = 0; b < p->batch; b++) {
            seq_info sq = seq_of(p, b);
            int64_t nb = (sq.sq * job.group + bm - 1) / bm;
            job.blocks[b] = nb > 0 ? nb : 1;
            job.item_start[b] = total;
            total += nb * p->heads_kv * splits;
        }
        job.item_start[p->batch] = total;
        if (bm <= KILN_CPU_TILE || total >= 2 * (int64_t)threads) break;
        bm /= 2;
    }
    job.bm = bm;
    int64_t n_items = job.item_start[p->batch];

    size_t per_slot = scratch_bytes(bm, job.dpad, kr->elem);
    unsigned char *scratch = malloc(per_slot * (size_t)threads);
    unsigned char **slots = malloc(sizeof(unsigned char *) * (size_t)threads);
    size_t ws_need = kiln_split_workspace_bytes(splits, p->rows_q, p->heads_q, p->head_dim);
    void *ws = NULL, *ws_owned = NULL;
    if (ws_need > 0) {
        if (p->workspace) {
            if (p->workspace_size < ws_need) {
                free(scratch);
                free(slots);
                free(job.item_start);
                free(job.blocks);
                return kiln_fail(KILN_WORKSPACE_TOO_SMALL,
                                 "cpu attention: workspace of %llu bytes, %d splits need %llu",
                                 (unsigned long long)p->workspace_size, (int)splits,
                                 (unsigned long long)ws_need);
            }
            ws = p->workspace;
        } else {
            ws = ws_owned = malloc(ws_need);
        }
    }
    if (!scratch || !slots || (ws_need > 0 && !ws)) {
        free(scratch);
        free(slots);
        free(ws_owned);
        free(job.item_start);
        free(job.blocks);
        return kiln_fail(KILN_OUT_OF_MEMORY, "cpu attention: out of memory for scratch");
    }
    for (int t = 0; t < threads; t++) slots[t] = scratch + per_slot * (size_t)t;
    job.scratch = slots;
    if (ws) {
        job.ws_o = ws;
        job.ws_lse = job.ws_o + (size_t)splits * (size_t)p->rows_q * (size_t)p->heads_q *
                                    (size_t)p->head_dim;
        /* Rows of no sequence (packed q past the last cu_seqlens entry) and items with no
         * visible key still need defined partials for the combine. */
        size_t nl = (size_t)splits * (size_t)p->rows_q * (size_t)p->heads_q;
        for (size_t t = 0; t < nl; t++) job.ws_lse[t] = -INFINITY;
    }

    kiln_cpu_pool_run(st->pool, n_items, attn_item, &job);

    if (splits > 1) {
        combine_job cj = {p, job.ws_o, job.ws_lse, splits, job.esize};
        kiln_cpu_pool_run(st->pool, (p->rows_q + COMBINE_ROWS - 1) / COMBINE_ROWS, combine_item,
                          &cj);
    }
    free(ws_owned);
    free(scratch);
    free(slots);
    free(job.item_start);
    free(job.blocks);
    return KILN_OK;
}
