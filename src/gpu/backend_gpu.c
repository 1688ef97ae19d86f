/*
 * The CUDA and HIP backends: one implementation of kiln_backend_iface over
 * kiln_gpu_driver. A context holds the device, its target and tier (fixed when it
 * starts), the functions it has loaded (one per variant, by integer id, loaded on first
 * use: shipped ahead of time for the exact target, else compiled through the on-disk
 * cache) and, per stream, a workspace for split-KV calls that bring none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_dir.h"
#include "backend.h"
#include "cache.h"
#include "error.h"
#include "gpu.h"
#include "hopper_launch.h"
#include "kernel_source.h"
#include "platform/platform.h"
#include "targets.h"
#include "variants.h"

/* A loaded variant. Immutable once published in the context's table. */
typedef struct gpu_kernel {
    uint32_t id; /* kiln_gpu_variant_id */
    void *module;
    void *fn;
    unsigned smem; /* dynamic shared memory of each launch, opted in to when loaded */
} gpu_kernel;

/* Split-KV scratch for one stream. Work on one stream runs in order, so one buffer per
 * stream is never read and written by two calls at once; two streams need two buffers. */
typedef struct gpu_workspace {
    void *stream;
    void *buf;
    size_t bytes;
} gpu_workspace;

#define GPU_WORKSPACE_SLOTS 8
/* Open addressing over every variant a target has (a few hundred at most). */
#define GPU_KERNEL_SLOTS 1024
#define GPU_LOADING_MAX 16

typedef struct gpu_state {
    const kiln_gpu_driver *drv;
    kiln_gpu_device *dev;
    kiln_gpu_info info;
    const kiln_target *target;  /* fixed when the context starts */
    kiln_gpu_tier_request tier; /* KILN_GPU_TIER, read when the context starts */
    /* Loaded variants by id: read without a lock (a slot, once set, never changes), written
     * under mutex. */
    gpu_kernel *kernels[GPU_KERNEL_SLOTS];
    /* Variants being compiled right now, so each compiles once; waiters sleep on loaded. */
    uint32_t loading[GPU_LOADING_MAX];
    int num_loading;
    kiln_mutex *mutex; /* guards kernels' writers, loading and workspaces */
    kiln_cond *loaded;
    gpu_workspace workspaces[GPU_WORKSPACE_SLOTS];
    unsigned next_evict;
} gpu_state;

/* ---- compiling and loading variants --------------------------------------------------- */

typedef struct compile_job {
    const kiln_gpu_driver *drv;
    const char *source;
    const char *file;
    const char *arch;
    const char *const *options;
    int num_options;
} compile_job;

static kiln_status compile_cb(void *user, void **image, size_t *len)
{
    compile_job *j = user;
    return kiln_gpu_compile(j->drv, j->source, j->file, j->arch, j->options, j->num_options, image,
                            len);
}

kiln_status kiln_gpu_variant_image(const kiln_gpu_driver *drv, const char *target,
                                   const char *compiler_version, const kiln_gpu_variant *v,
                                   void **image, size_t *len, kiln_cache_origin *origin)
{
    kiln_gpu_defines defs;
    char key[128], options[256] = "";
    const char *source = NULL;
    size_t source_len = 0;
    const char *file = kiln_gpu_variant_file(v);
    int n = kiln_gpu_variant_defines(v, &defs);

    kiln_gpu_variant_key(v, key, sizeof key);
    KILN_FORWARD(kiln_kernel_source(file, &source, &source_len));
    for (int i = 0; i < n; i++) {
        size_t used = strlen(options);
        snprintf(options + used, sizeof options - used, "%s%s", i ? " " : "", defs.ptr[i]);
    }
    char shipped[512];
    kiln_aot_targets(shipped, sizeof shipped);
    /* The hopper tier's instructions (wgmma, setmaxnreg) exist only for the target's
     * arch-specific name (sm_90a). */
    const kiln_target *tt = kiln_target_find(target);
    const char *arch = v->tier == KILN_GPU_TIER_ID_HOPPER && tt ? tt->compile_arch : target;
    compile_job job = {drv, source, file, arch, defs.ptr, n};
    kiln_cache_key k = {.target = target,
                        .compiler = drv->compiler,
                        .compiler_version = compiler_version,
                        .variant = key,
                        .source = source,
                        .source_len = source_len,
                        .options = options,
                        .aot_targets = shipped};
    return kiln_cache_get(&k, compile_cb, &job, image, len, origin);
}

static unsigned slot_of(uint32_t id) { return (id * 2654435761u) >> 22; /* 10 bits */ }

/* The published kernel of id, or NULL. No lock: slots are only ever set, with release. */
static const gpu_kernel *table_find(gpu_state *s, uint32_t id)
{
    for (unsigned i = slot_of(id), n = 0; n < GPU_KERNEL_SLOTS;
         i = (i + 1) % GPU_KERNEL_SLOTS, n++) {
        const gpu_kernel *k = kiln_atomic_load_ptr((void *const *)&s->kernels[i]);
        if (!k || k->id == id) return k;
    }
    return NULL;
}

/* Caller holds s->mutex. */
static kiln_status table_insert(gpu_state *s, gpu_kernel *k)
{
    for (unsigned i = slot_of(k->id), n = 0; n < GPU_KERNEL_SLOTS;
         i = (i + 1) % GPU_KERNEL_SLOTS, n++)
        if (!s->kernels[i]) {
            kiln_atomic_store_ptr((void **)&s->kernels[i], k);
            return KILN_OK;
        }
    return kiln_fail(KILN_INTERNAL, "more than %d kernel variants loaded", GPU_KERNEL_SLOTS);
}

/* The code object of v for this device: shipped for the exact target, else compiled
 * through the cache. Then loaded. No lock held: a compile may take a second. */
static kiln_status build(gpu_state *s, const kiln_gpu_variant *v, const char *key,
                         gpu_kernel *k)
{
    void *image = NULL;
    size_t len = 0;
    kiln_status st = KILN_KERNEL_NOT_FOUND;
    char hash[17];
    int stale = 0;
    /* A code object shipped for this exact target, built from this library's kernel sources,
     * comes first; one the driver refuses (built by a newer compiler, say) is compiled again
     * rather than failing the call. One built from other sources is never loaded: its
     * arguments or its launch contract may differ (aot_dir.h). */
    KILN_FORWARD(kiln_kernel_source_hash(kiln_gpu_variant_file(v), hash));
    if (kiln_aot_load(s->info.target, key, hash, &image, &len, &stale) == KILN_OK) {
        st = kiln_gpu_module_load(s->dev, image, len, &k->module);
        free(image);
        image = NULL;
        if (st != KILN_OK)
            kiln_log(KILN_LOG_INFO,
                     "kiln: the shipped %s for %s does not load (%s); compiling it", key,
                     s->info.target, kiln_last_error());
    } else if (stale) {
        kiln_log(KILN_LOG_INFO,
                 "kiln: the shipped %s for %s was built from other kernel sources than this "
                 "library's; compiling it",
                 key, s->info.target);
    }
    if (st != KILN_OK) {
        char version[32] = "";
        if (kiln_gpu_compiler_version(s->drv, version, sizeof version) != KILN_OK) {
            char shipped[512], why[1024];
            snprintf(why, sizeof why, "%s", kiln_last_error()); /* kiln_fail rewrites it */
            kiln_aot_targets(shipped, sizeof shipped);
            return kiln_fail(KILN_KERNEL_NOT_FOUND,
                             "no code object for %s on %s: this build ships code objects for "
                             "[%s]%s, and compiling one needs %s: %s",
                             key, s->info.target, shipped,
                             stale ? " (its one for this variant was built from other kernel "
                                     "sources than this library's)"
                                   : "",
                             s->drv->compiler, why);
        }
        KILN_FORWARD(
            kiln_gpu_variant_image(s->drv, s->info.target, version, v, &image, &len, NULL));
        st = kiln_gpu_module_load(s->dev, image, len, &k->module);
        free(image);
        KILN_FORWARD(st);
    }
    st = kiln_gpu_function(s->dev, k->module, kiln_gpu_variant_kernel(v), &k->fn);
    /* Dynamic shared memory above the default needs the function's opt-in, once. */
    k->smem = (unsigned)kiln_gpu_variant_dynamic_smem(v);
    if (st == KILN_OK && k->smem > 0) st = kiln_gpu_function_smem(s->dev, k->fn, k->smem);
    if (st != KILN_OK) kiln_gpu_module_unload(s->dev, k->module);
    return st;
}

static int is_loading(const gpu_state *s, uint32_t id)
{
    for (int i = 0; i < s->num_loading; i++)
        if (s->loading[i] == id) return 1;
    return 0;
}

/* The first call of a variant: compiles it once, outside the lock, while calls of other
 * variants go on; callers of the same variant wait for that one compile. */
static kiln_status kernel_load(gpu_state *s, const kiln_gpu_variant *v, uint32_t id,
                               const gpu_kernel **out)
{
    const gpu_kernel *found;
    kiln_mutex_lock(s->mutex);
    while (!(found = table_find(s, id)) && is_loading(s, id)) kiln_cond_wait(s->loaded, s->mutex);
    if (found || s->num_loading == GPU_LOADING_MAX) {
        kiln_mutex_unlock(s->mutex);
        KILN_FAIL_IF(!found, KILN_INTERNAL, "%d variants are being compiled at once",
                     GPU_LOADING_MAX);
        *out = found;
        return KILN_OK;
    }
    s->loading[s->num_loading++] = id;
    kiln_mutex_unlock(s->mutex);

    char key[128];
    kiln_gpu_variant_key(v, key, sizeof key);
    gpu_kernel *k = calloc(1, sizeof *k);
    kiln_status st = k ? build(s, v, key, k)
                       : kiln_fail(KILN_OUT_OF_MEMORY, "out of host memory loading %s", key);

    kiln_mutex_lock(s->mutex);
    for (int i = 0; i < s->num_loading; i++)
        if (s->loading[i] == id) s->loading[i] = s->loading[--s->num_loading];
    if (st == KILN_OK) {
        k->id = id;
        st = table_insert(s, k);
        if (st != KILN_OK) kiln_gpu_module_unload(s->dev, k->module);
    }
    kiln_cond_broadcast(s->loaded);
    kiln_mutex_unlock(s->mutex);
    if (st != KILN_OK) {
        free(k);
        return st;
    }
    *out = k;
    return KILN_OK;
}

static kiln_status kernel_for(gpu_state *s, const kiln_gpu_variant *v, const gpu_kernel **out)
{
    uint32_t id = kiln_gpu_variant_id(v);
    *out = table_find(s, id);
    return *out ? KILN_OK : kernel_load(s, v, id, out);
}

/* ---- the backend table ---------------------------------------------------------------- */

/* KILN_GPU_PDL=0 queues kernels without the programmatic-dependency attribute (each starts
 * only when the stream's previous work has finished); 1, the default, uses it where the
 * device has it. Read once, when the context starts. */
static kiln_status pdl_from_env(int *off)
{
    char env[16];
    *off = 0;
    if (!kiln_env_get("KILN_GPU_PDL", env, sizeof env) || !env[0] || strcmp(env, "1") == 0)
        return KILN_OK;
    KILN_FAIL_IF(strcmp(env, "0") != 0, KILN_INVALID_ARGUMENT,
                 "KILN_GPU_PDL=%s: expected 0 or 1", env);
    *off = 1;
    return KILN_OK;
}

static kiln_status gpu_init(const kiln_gpu_driver *drv, int device, void **state)
{
    *state = NULL;
    KILN_FORWARD(drv->load());
    gpu_state *s = calloc(1, sizeof *s);
    KILN_FAIL_IF(!s, KILN_OUT_OF_MEMORY, "out of host memory starting the %s backend",
                 drv->name);
    s->drv = drv;
    s->mutex = kiln_mutex_create();
    s->loaded = kiln_cond_create();
    kiln_status st = s->mutex && s->loaded
                         ? kiln_gpu_tier_from_env(&s->tier)
                         : kiln_fail(KILN_OUT_OF_MEMORY, "cannot create a mutex");
    int pdl_off = 0;
    if (st == KILN_OK) st = pdl_from_env(&pdl_off);
    if (st == KILN_OK) st = kiln_gpu_open(drv, device, &s->info, &s->dev);
    if (st != KILN_OK) {
        kiln_cond_free(s->loaded);
        kiln_mutex_free(s->mutex);
        free(s);
        return st;
    }
    if (pdl_off || !drv->launch_pdl) s->dev->pdl = 0;
    s->target = kiln_target_find(s->info.target);
    /* auto takes the hopper tier only where the driver makes tensor maps (a map-less
     * query answers whether it can). */
    if (s->tier == KILN_GPU_TIER_AUTO &&
        (!drv->tensor_map || drv->tensor_map(NULL, 0, NULL, 0, NULL, NULL, NULL) != KILN_OK))
        s->tier = KILN_GPU_TIER_AUTO_NO_HOPPER;
    *state = s;
    return KILN_OK;
}

static void gpu_free(void *state)
{
    gpu_state *s = state;
    if (!s) return;
    for (int i = 0; i < GPU_KERNEL_SLOTS; i++)
        if (s->kernels[i]) {
            kiln_gpu_module_unload(s->dev, s->kernels[i]->module);
            free(s->kernels[i]);
        }
    for (int i = 0; i < GPU_WORKSPACE_SLOTS; i++)
        if (s->workspaces[i].buf) kiln_gpu_mem_free(s->dev, s->workspaces[i].buf);
    kiln_gpu_close(s->dev);
    kiln_cond_free(s->loaded);
    kiln_mutex_free(s->mutex);
    free(s);
}

/* Decode-shaped calls (kernels/decode.cu): a block per 8 rows of one KV head and split.
 * As many splits as fill one wave of resident blocks (KILN_DECODE_BLOCKS_PER_CU: the
 * kernel's 246 registers x 128 threads leave room for two blocks on a 64K-register
 * multiprocessor) without starting a second, keeping at least KILN_DECODE_MIN_KEYS keys per
 * split. A second wave or more splits cost more than they add: each block's stream is then
 * shorter than its start and its merge (on an H200, 32 / 8 heads, D 128: B 8, 4k keys ran at
 * 2.98 TB/s with 4 splits, one wave, 1.86 with 16; B 1, 32k keys 2.40 with 32, 1.60 with
 * 64; bench/decode_splits.py). Up to 16 splits, any count: the kernel shares a group's steps
 * out evenly (each split within one step of the others), and with 24 groups (3 sequences of
 * 8 KV heads) on 132 multiprocessors the powers of two this rule took before left 72 of the
 * wave's 264 places empty (8 splits) where 11 fill it. Past 16, a power of two (16, 32,
 * 64): the last block merges 16 or 32 splits per round trip (kernels/decode.cu), and one more
 * round costs more than the few blocks it adds (33 splits at B 1, 32k keys, every
 * multiprocessor holding two blocks, ran at 3.19 TB/s against 32's 3.24 on an H200; 2.53
 * against 2.54-2.57 on an H100). On an H100 (bench/results/decode-splits_rule_*), the
 * counts this rule adds: 24 groups (B 3, 8k keys) 11 splits 2.43 TB/s against 8's 2.29, 40
 * (B 5, 8k) 6 against 4: 2.62 / 2.29, 72 (B 9, 4k) 3 against 2: 2.49 / 2.08; and 128 keys
 * a split where 256 were the floor: B 1, 4k keys 32 splits 1.42-1.45 against 16's
 * 1.28-1.34 (each warp's two steps then go out at once). */
#define KILN_DECODE_BLOCKS_PER_CU 2
#define KILN_DECODE_MIN_KEYS 128
#define KILN_DECODE_AUTO_MAX_SPLITS 64
#define KILN_DECODE_ANY_SPLITS 16 /* any count up to this; powers of two past it */
static int32_t decode_splits(gpu_state *s, int64_t batch, int64_t max_seqlen_q,
                             int64_t max_seqlen_k, int64_t heads_q, int64_t heads_kv)
{
    const int64_t group = heads_kv > 0 ? heads_q / heads_kv : 1;
    const int64_t row_blocks = (max_seqlen_q * group + KILN_DECODE_ROWS - 1) / KILN_DECODE_ROWS;
    const int64_t blocks = batch * (heads_kv > 0 ? heads_kv : 1) * row_blocks;
    const int64_t wave =
        KILN_DECODE_BLOCKS_PER_CU * (int64_t)(s->info.compute_units > 0 ? s->info.compute_units : 1);
    if (blocks <= 0) return 1;
    int64_t splits = wave / blocks;
    if (splits > max_seqlen_k / KILN_DECODE_MIN_KEYS) splits = max_seqlen_k / KILN_DECODE_MIN_KEYS;
    if (splits > KILN_DECODE_AUTO_MAX_SPLITS) splits = KILN_DECODE_AUTO_MAX_SPLITS;
    if (splits > KILN_DECODE_ANY_SPLITS) {
        int64_t pow2 = KILN_DECODE_ANY_SPLITS;
        while (pow2 * 2 <= splits) pow2 *= 2;
        splits = pow2;
    }
    return splits < 1 ? 1 : (int32_t)splits;
}

/* Split the keys until the grid has about two blocks per compute unit (one wave with room
 * for imbalance), keeping at least 256 keys per split so the combine stays cheap. */
static int32_t gpu_choose_splits(void *state, int64_t batch, int64_t max_seqlen_q,
                                 int64_t max_seqlen_k, int64_t heads_q, int64_t heads_kv,
                                 int64_t head_dim)
{
    gpu_state *s = state;
    (void)head_dim;
    if (kiln_gpu_decode_shaped(max_seqlen_q, heads_q, heads_kv))
        return decode_splits(s, batch, max_seqlen_q, max_seqlen_k, heads_q, heads_kv);
    /* A block's rows are (query, head) pairs of the query heads sharing one KV head, so
     * blocks count per KV head: decode with 4 query heads per KV head fills one block, not
     * four (counting query heads chose 2 splits where 4-8 doubled an H200's bandwidth). */
    const int64_t group = heads_kv > 0 ? heads_q / heads_kv : 1;
    int64_t q_blocks = (max_seqlen_q * group + KILN_ATTN_BLOCK_Q - 1) / KILN_ATTN_BLOCK_Q;
    int64_t blocks = q_blocks * (heads_kv > 0 ? heads_kv : heads_q) * batch;
    int64_t want = 2 * (int64_t)(s->info.compute_units > 0 ? s->info.compute_units : 1);
    if (blocks <= 0 || blocks >= want) return 1;
    int64_t splits = (want + blocks - 1) / blocks;
    /* Powers of two: key ranges that are not whole 64-key tiles cost more than the blocks
     * they add (5 splits of 4k keys ran at 1.0 TB/s on an H200 where 4 ran at 1.5 and 8 at
     * 1.4). */
    int64_t pow2 = 1;
    while (pow2 < splits) pow2 *= 2;
    splits = pow2;
    int64_t by_keys = max_seqlen_k / 256;
    if (splits > by_keys) splits = by_keys;
    if (splits > 64) splits = 64;
    if (batch > 0 && splits * batch > 65535) splits = 65535 / batch;
    return splits < 1 ? 1 : (int32_t)splits;
}

static void note_fill(const gpu_state *s, const kiln_gpu_variant *v, int32_t splits,
                      kiln_dispatch_note *note)
{
    memcpy(note->target, s->info.target, sizeof note->target);
    kiln_gpu_variant_desc(v, &note->variant);
    note->num_splits = splits;
}

static int grid_empty(const unsigned grid[3]) { return !grid[0] || !grid[1] || !grid[2]; }

/* Caller holds s->mutex. The stream's workspace, grown to bytes. Freeing a buffer (to grow
 * it, or to give its slot to a ninth stream) waits for the work queued on it: the
 * driver's free synchronizes. */
static kiln_status workspace_for(gpu_state *s, void *stream, size_t bytes, void **ws)
{
    gpu_workspace *w = NULL;
    for (int i = 0; i < GPU_WORKSPACE_SLOTS && !w; i++)
        if (s->workspaces[i].buf && s->workspaces[i].stream == stream) w = &s->workspaces[i];
    for (int i = 0; i < GPU_WORKSPACE_SLOTS && !w; i++)
        if (!s->workspaces[i].buf) w = &s->workspaces[i];
    if (!w) w = &s->workspaces[s->next_evict++ % GPU_WORKSPACE_SLOTS];
    if (w->stream != stream || w->bytes < bytes) {
        if (w->buf) kiln_gpu_mem_free(s->dev, w->buf);
        w->stream = stream;
        w->buf = kiln_gpu_mem_alloc(s->dev, bytes);
        w->bytes = w->buf ? bytes : 0;
        KILN_FAIL_IF(!w->buf, KILN_OUT_OF_MEMORY,
                     "cannot allocate %lu MiB of split-KV workspace on %s device %d",
                     (unsigned long)(bytes >> 20), s->drv->name, s->info.ordinal);
    }
    *ws = w->buf;
    return KILN_OK;
}

/* The hot path: with the variant loaded, a call reads the table without a lock, fills
 * the arguments and launches; the lock is taken only to share a stream's split-KV
 * workspace (held through both launches, so two threads on one stream queue their split
 * and combine pairs one after the other, never interleaved on that workspace). */
static kiln_status gpu_attention(void *state, const kiln_attn_problem *p,
                                 kiln_dispatch_note *note)
{
    gpu_state *s = state;
    kiln_gpu_variant v, vc;
    kiln_attn_args a;
    unsigned grid[3], block[3], cgrid[3], cblock[3];
    const gpu_kernel *k = NULL, *kc = NULL;
    int32_t splits = p->num_splits < 1 ? 1 : p->num_splits;
    int shared_ws = splits > 1 && !p->workspace;
    kiln_gpu_saved saved;
    kiln_status st = KILN_OK;

    KILN_FORWARD(kiln_gpu_variant_for_attn_tier(p, s->target, s->tier, &v));
    KILN_FORWARD(kernel_for(s, &v, &k));
    /* The decode kernel merges its splits itself. */
    const int combine_launch = splits > 1 && v.kind != KILN_KERNEL_DECODE;
    if (combine_launch) {
        KILN_FORWARD(kiln_gpu_variant_for_combine(p->dtype, p->head_dim, &vc));
        KILN_FORWARD(kernel_for(s, &vc, &kc));
    }
    kiln_gpu_attn_args(&a, p, splits, p->workspace);
    KILN_FORWARD(kiln_gpu_attn_grid_for(&v, &a, grid, block));
    if (combine_launch) KILN_FORWARD(kiln_gpu_combine_grid(&a, cgrid, cblock));
    note_fill(s, &v, splits, note);
    if (grid_empty(grid)) return KILN_OK;

    KILN_FORWARD(kiln_gpu_enter(s->dev, &saved));
    if (shared_ws) {
        void *ws = NULL;
        kiln_mutex_lock(s->mutex);
        st = workspace_for(s, p->stream,
                           kiln_split_workspace_bytes(splits, p->rows_q, p->heads_q, p->head_dim),
                           &ws);
        if (st == KILN_OK) kiln_gpu_attn_args(&a, p, splits, ws);
    }
    void *args[] = {&a};
    if (st == KILN_OK && v.tier == KILN_GPU_TIER_ID_HOPPER)
        st = kiln_gpu_hopper_launch(s->dev, k->fn, &v, &a, grid, block, k->smem,
                                    s->info.compute_units, p->stream);
    else if (st == KILN_OK)
        st = kiln_gpu_launch(s->dev, k->fn, grid, block, k->smem, p->stream, args);
    if (st == KILN_OK && combine_launch && !grid_empty(cgrid))
        st = kiln_gpu_launch(s->dev, kc->fn, cgrid, cblock, 0, p->stream, args);
    if (shared_ws) kiln_mutex_unlock(s->mutex);
    kiln_gpu_leave(s->dev, &saved);
    return st;
}

static kiln_status gpu_act_and_mul(void *state, const kiln_act_problem *p,
                                   kiln_dispatch_note *note)
{
    gpu_state *s = state;
    kiln_gpu_variant v;
    kiln_act_args a;
    unsigned grid[3], block[3];
    const gpu_kernel *k = NULL;
    kiln_gpu_saved saved;

    KILN_FORWARD(kiln_gpu_variant_for_act(p->act, p->dtype, &v));
    KILN_FORWARD(kernel_for(s, &v, &k));
    kiln_gpu_act_args(&a, p);
    KILN_FORWARD(kiln_gpu_act_grid(&a, grid, block));
    note_fill(s, &v, 1, note);
    if (grid_empty(grid)) return KILN_OK;
    void *args[] = {&a};
    KILN_FORWARD(kiln_gpu_enter(s->dev, &saved));
    kiln_status st = kiln_gpu_launch(s->dev, k->fn, grid, block, 0, p->stream, args);
    kiln_gpu_leave(s->dev, &saved);
    return st;
}

static void gpu_describe(void *state, kiln_json *j)
{
    gpu_state *s = state;
    const kiln_gpu_info *i = &s->info;
    char dir[1024];
    kiln_json_string(j, "device_name", i->name);
    kiln_json_string(j, "target", i->target);
    kiln_json_string(j, "arch_reported", i->arch_reported);
    kiln_json_int(j, "compute_units", i->compute_units);
    kiln_json_bool(j, "programmatic_launch", kiln_atomic_load_int(&s->dev->pdl));
    kiln_json_int(j, "compute_units_reported", i->compute_units_reported);
    kiln_json_string(j, "compute_units_source", i->cu_source);
    kiln_json_int(j, "wave_size", i->wave_size);
    kiln_json_int(j, "max_threads_per_block", i->max_threads_per_block);
    kiln_json_int(j, "shared_memory_per_block", i->smem_per_block);
    kiln_json_int(j, "shared_memory_per_block_optin", i->smem_per_block_optin);
    kiln_json_int(j, "shared_memory_per_cu", i->smem_per_cu);
    kiln_json_int(j, "l2_bytes", i->l2_bytes);
    kiln_json_int(j, "total_memory", i->total_mem);
    kiln_json_string(j, "pci_bus_id", i->pci_bus_id);
    kiln_json_string(j, "driver_version", i->driver_version_str);
    kiln_json_int(j, "driver_version_number", i->driver_version);
    kiln_json_string(j, "driver_path", i->driver_path);
    kiln_json_object_begin(j, "compiler");
    kiln_json_string(j, "name", i->compiler);
    kiln_json_string(j, "version", i->compiler_version[0] ? i->compiler_version : NULL);
    kiln_json_string(j, "path", i->compiler_path[0] ? i->compiler_path : NULL);
    if (i->compiler_error[0]) kiln_json_string(j, "error", i->compiler_error);
    kiln_json_object_end(j);
    kiln_json_string(j, "cache_dir", kiln_cache_dir(dir, sizeof dir) == 0 ? dir : NULL);
}

static void *gpu_mem_alloc(void *state, size_t bytes)
{
    gpu_state *s = state;
    return kiln_gpu_mem_alloc(s->dev, bytes);
}

static void gpu_mem_free(void *state, void *ptr)
{
    gpu_state *s = state;
    kiln_gpu_mem_free(s->dev, ptr);
}

static kiln_status gpu_mem_copy(void *state, void *dst, const void *src, size_t bytes,
                                int to_device)
{
    gpu_state *s = state;
    return kiln_gpu_mem_copy(s->dev, dst, src, bytes, to_device);
}

static kiln_status gpu_synchronize(void *state, void *stream)
{
    gpu_state *s = state;
    return kiln_gpu_synchronize(s->dev, stream);
}

/* What kiln_info_json() shows whatever the device: the target table and the code objects
 * shipped. */
static void gpu_describe_build(kiln_json *j)
{
    size_t n, i;
    const kiln_target *t = kiln_targets(&n);
    kiln_json_array_begin(j, "targets_known");
    for (i = 0; i < n; i++) kiln_json_string(j, NULL, t[i].name);
    kiln_json_array_end(j);
    kiln_aot_describe(j);
}

static void gpu_probe(const kiln_gpu_driver *drv, kiln_backend_probe *out)
{
    int count = 0;
    if (kiln_gpu_device_count(drv, &count) != KILN_OK || count <= 0) return;
    out->devices = count;
    kiln_gpu_info info;
    kiln_gpu_device *dev = NULL;
    if (kiln_gpu_open(drv, 0, &info, &dev) == KILN_OK) {
        snprintf(out->target, sizeof out->target, "%s", info.target);
        kiln_gpu_close(dev);
        out->code_shipped = kiln_gpu_aot_ships(out->target);
    }
}

/* The CUDA and HIP tables differ only in the driver under them. */
#define KILN_GPU_BACKEND(kind_, name_, description_, init_, probe_)                           \
    {                                                                                         \
        .version = KILN_BACKEND_IFACE_VERSION, .kind = kind_, .name = name_,                  \
        .description = description_, .probe = probe_, .describe_build = gpu_describe_build, \
        .init = init_, .free = gpu_free, .choose_splits = gpu_choose_splits,                 \
        .attention = gpu_attention, .act_and_mul = gpu_act_and_mul,                           \
        .describe = gpu_describe, .mem_alloc = gpu_mem_alloc, .mem_free = gpu_mem_free,       \
        .mem_copy = gpu_mem_copy, .synchronize = gpu_synchronize,                             \
    }

#if KILN_WITH_CUDA
static kiln_status cuda_init(int device, void **state)
{
    return gpu_init(kiln_cuda_driver(), device, state);
}
static void cuda_probe(kiln_backend_probe *out) { gpu_probe(kiln_cuda_driver(), out); }
const kiln_backend_iface kiln_cuda_backend = KILN_GPU_BACKEND(
    KILN_BACKEND_CUDA, "cuda", "NVIDIA GPUs: CUDA driver and NVRTC, loaded at run time", cuda_init,
    cuda_probe);
#endif

#if KILN_WITH_HIP
static kiln_status hip_init(int device, void **state)
{
    return gpu_init(kiln_hip_driver(), device, state);
}
static void hip_probe(kiln_backend_probe *out) { gpu_probe(kiln_hip_driver(), out); }
const kiln_backend_iface kiln_hip_backend =
    KILN_GPU_BACKEND(KILN_BACKEND_HIP, "hip",
                     "AMD GPUs: HIP runtime and hipRTC, loaded at run time", hip_init, hip_probe);
#endif

/* ---- kiln cache warm ------------------------------------------------------------------ */

kiln_status kiln_cache_warm(kiln_backend backend, int device, const char *target,
                            kiln_cache_progress_fn progress, void *user)
{
    const kiln_gpu_driver *drv = kiln_gpu_driver_for(backend);
    char name[32], version[32] = "";
    KILN_FAIL_IF(backend != KILN_BACKEND_CUDA && backend != KILN_BACKEND_HIP,
                 KILN_INVALID_ARGUMENT, "kiln cache warm needs the cuda or hip backend");
    KILN_FAIL_IF(!drv, KILN_BACKEND_UNAVAILABLE, "backend '%s' is not built into this library",
                 kiln_backend_name(backend));
    if (!target) {
        kiln_gpu_info info;
        kiln_gpu_device *dev = NULL;
        KILN_FORWARD(drv->load());
        KILN_FORWARD(kiln_gpu_open(drv, device, &info, &dev));
        kiln_gpu_close(dev);
        snprintf(name, sizeof name, "%s", info.target);
        target = name;
    }
    const kiln_target *t = kiln_target_find(target);
    KILN_FAIL_IF(!t, KILN_INVALID_ARGUMENT, "unknown target '%s'", target);
    KILN_FORWARD(drv->load_compiler());
    KILN_FORWARD(kiln_gpu_compiler_version(drv, version, sizeof version));

    size_t total = kiln_gpu_variant_list(t, NULL, 0);
    kiln_gpu_variant *all = malloc((total ? total : 1) * sizeof *all);
    KILN_FAIL_IF(!all, KILN_OUT_OF_MEMORY, "out of host memory listing variants");
    kiln_gpu_variant_list(t, all, total);
    kiln_status st = KILN_OK;
    for (size_t i = 0; i < total && st == KILN_OK; i++) {
        void *image = NULL;
        size_t len = 0;
        kiln_cache_origin origin = KILN_CACHE_MEMORY;
        uint64_t t0 = kiln_time_ns();
        st = kiln_gpu_variant_image(drv, target, version, &all[i], &image, &len, &origin);
        free(image);
        if (st == KILN_OK && progress) {
            char key[128];
            kiln_gpu_variant_key(&all[i], key, sizeof key);
            progress(key, i, total, (double)(kiln_time_ns() - t0) * 1e-9, origin, user);
        }
    }
    free(all);
    return st;
}
