#include "hopper_launch.h"

#include <stdint.h>
#include <string.h>

#include "error.h"
#include "platform/platform.h"

/* What the kernel's kiln_tmap parameters hold: CUtensorMap, 128 bytes, 64-byte aligned. */
typedef struct hopper_map {
    _Alignas(64) uint64_t opaque[16];
} hopper_map;

/* What a map is encoded from: the driver's encoder is a pure function of these. */
typedef struct map_key {
    const kiln_gpu_driver *drv;
    const void *base;
    uint64_t dims[4], strides[3];
    uint32_t rows;
    int32_t is_bf16;
} map_key;

/* The maps this thread encoded last, so that a call repeating an earlier one's tensors
 * (a serving loop's static buffers, a benchmark) copies its maps instead of running the
 * driver's encoder on the host for each of its three or four. Per thread, so no lock;
 * round-robin replacement. A call that misses pays the scan of 16 keys on top
 * (bench/host_bench.c, fixed_rotating). */
#define MAP_CACHE_SLOTS 16
typedef struct map_slot {
    hopper_map map;
    map_key key;
} map_slot;
static KILN_THREAD_LOCAL map_slot map_cache[MAP_CACHE_SLOTS];
static KILN_THREAD_LOCAL unsigned map_cache_next;

/* [batch][seq][heads][head_dim] with element strides (row, head, batch) as a 4-d map,
 * boxes of 64 x rows x 1 x 1. A dimension of extent 1 is never stepped over, so its stride
 * may be anything the caller's tensor has; it is given one the copy engine accepts. */
static kiln_status make_map(const kiln_gpu_driver *drv, hopper_map *m, int is_bf16,
                            const void *base, int64_t d, int64_t seq, int64_t heads,
                            int64_t batch, int64_t s_row, int64_t s_head, int64_t s_batch,
                            uint32_t rows)
{
    map_key k;
    uint32_t box[4] = {64, rows, 1, 1};
    const int64_t ext[3] = {seq, heads, batch}, st[3] = {s_row, s_head, s_batch};
    memset(&k, 0, sizeof k); /* padding too: keys compare as bytes */
    k.drv = drv;
    k.base = base;
    k.rows = rows;
    k.is_bf16 = is_bf16;
    k.dims[0] = (uint64_t)d;
    for (int i = 0; i < 3; i++) {
        k.dims[i + 1] = (uint64_t)(ext[i] > 0 ? ext[i] : 1);
        k.strides[i] = ext[i] > 1 ? (uint64_t)st[i] * 2u : (uint64_t)d * 2u;
    }
    for (int i = 0; i < MAP_CACHE_SLOTS; i++) {
        const map_slot *c = &map_cache[i];
        if (c->key.base == base && c->key.drv == drv && !memcmp(&c->key, &k, sizeof k)) {
            *m = c->map;
            return KILN_OK;
        }
    }
    memset(m, 0, sizeof *m);
    KILN_FORWARD(drv->tensor_map(m->opaque, is_bf16, base, 4, k.dims, k.strides, box));
    map_slot *slot = &map_cache[map_cache_next++ % MAP_CACHE_SLOTS];
    slot->map = *m;
    slot->key = k;
    return KILN_OK;
}

kiln_status kiln_gpu_hopper_launch(kiln_gpu_device *dev, void *fn,
                                   const kiln_gpu_variant *v, kiln_attn_args *a,
                                   const unsigned grid[3], const unsigned block[3],
                                   unsigned smem, int compute_units, void *stream)
{
    unsigned g[3] = {grid[0], grid[1], grid[2]};
    const kiln_gpu_driver *drv = dev->drv;
    hopper_map mq, mk, mv, mo;
    const int bf16 = v->dtype == KILN_BF16;
    const uint32_t bq = (uint32_t)kiln_gpu_hopper_block_q(v);
    const uint32_t bk = (uint32_t)kiln_gpu_hopper_block_k(v);
    KILN_FAIL_IF(!drv->tensor_map, KILN_UNSUPPORTED,
                 "the hopper tier needs tensor maps, which the %s driver does not make",
                 drv->name);
    KILN_FORWARD(make_map(drv, &mq, bf16, a->q, a->head_dim, a->seqlen_q, a->heads_q,
                          a->batch, a->q_stride_row, a->q_stride_head, a->q_stride_batch, bq));
    if (a->seqlen_k > 0) {
        KILN_FORWARD(make_map(drv, &mk, bf16, a->k, a->head_dim, a->seqlen_k, a->heads_kv,
                              a->batch, a->k_stride_row, a->k_stride_head, a->k_stride_batch,
                              bk));
        KILN_FORWARD(make_map(drv, &mv, bf16, a->v, a->head_dim, a->seqlen_k, a->heads_kv,
                              a->batch, a->v_stride_row, a->v_stride_head, a->v_stride_batch,
                              bk));
    } else {
        /* No key is ever loaded: the kernel only writes empty rows. */
        mk = mq;
        mv = mq;
    }
    /* The output, for the copy engine's stores of unsplit calls: each consumer's 64 rows
     * (split calls write fp32 partials to the workspace themselves). */
    if (KILN_HOPPER_TMA_STORE(a->head_dim) && a->num_splits <= 1)
        KILN_FORWARD(make_map(drv, &mo, bf16, a->out, a->head_dim, a->seqlen_q, a->heads_q,
                              a->batch, a->o_stride_row, a->o_stride_head, a->o_stride_batch,
                              KILN_HOPPER_CONSUMER_ROWS));
    else
        mo = mq;
    if (KILN_HOPPER_PERSISTENT(a->head_dim, (int)v->mask)) {
        /* Every work item of grid on at most one block per SM (the kernel walks them). */
        const uint64_t items = (uint64_t)grid[0] * grid[1] * grid[2];
        const uint64_t cap = compute_units > 0 ? (uint64_t)compute_units : 1u;
        KILN_FAIL_IF(items >= ((uint64_t)1 << 31), KILN_UNSUPPORTED,
                     "the hopper tier's persistent grid numbers work items in 32 bits; "
                     "this call has %llu", (unsigned long long)items);
        g[0] = (unsigned)(items < cap ? items : cap);
        g[1] = g[2] = 1;
    }
    void *args[] = {a, &mq, &mk, &mv, &mo};
    return kiln_gpu_launch(dev, fn, g, block, smem, stream, args);
}
