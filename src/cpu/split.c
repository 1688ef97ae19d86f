/* Split-KV planning for the CPU (the workspace layout itself is kiln_split_workspace_bytes,
 * shared by every backend). */
#include "cpu.h"

/* Splitting only pays when the unsplit call has fewer work items than threads (decode:
 * one query row per head over a long cache); each split keeps at least a few key tiles so
 * the combine stays small next to the attention itself. */
int32_t kiln_cpu_choose_splits(int threads, int64_t batch, int64_t max_seqlen_q,
                               int64_t max_seqlen_k, int64_t heads_q, int64_t head_dim) {
    (void)head_dim;
    if (threads <= 1 || batch <= 0 || heads_q <= 0 || max_seqlen_q <= 0) return 1;
    const int64_t min_keys_per_split = 4 * KILN_CPU_TILE;
    int64_t q_blocks = (max_seqlen_q + KILN_CPU_TILE - 1) / KILN_CPU_TILE;
    int64_t items = batch * heads_q * q_blocks;
    if (items >= threads || max_seqlen_k < 2 * min_keys_per_split) return 1;
    int64_t splits = (threads + items - 1) / items;
    int64_t by_keys = max_seqlen_k / min_keys_per_split;
    if (splits > by_keys) splits = by_keys;
    if (splits > 128) splits = 128;
    return splits < 1 ? 1 : (int32_t)splits;
}
