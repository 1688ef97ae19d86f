/*
 * The CUDA and HIP backends: one implementation of kiln_backend_iface over
 * kiln_gpu_driver. A context holds the device, the modules it has loaded (one per
 * variant, loaded on first use: shipped ahead of time for the exact target, else compiled
 * through the on-disk cache) and, per stream, a workspace for split-KV calls that bring
 * none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_dir.h"
#include "backend.h"
#include "cache.h"
#include "error.h"
#include "gpu.h"
#include "kernel_source.h"
#include "platform/platform.h"
#include "targets.h"
#include "variants.h"

typedef struct gpu_kernel {
    char key[128];
    void *module;
    void *fn;
} gpu_kernel;

/* Split-KV scratch for one stream. Work on one stream runs in order, so one buffer per
 * stream is never read and written by two calls at once; two streams need two buffers. */
typedef struct gpu_workspace {
    void *stream;
    void *buf;
    size_t bytes;
} gpu_workspace;

#define GPU_WORKSPACE_SLOTS 8

typedef struct gpu_state {
    const kiln_gpu_driver *drv;
    void *dev;
    kiln_gpu_info info;
    kiln_mutex *mutex; /* guards kernels and workspaces */
    gpu_kernel *kernels;
    size_t num_kernels, cap_kernels;
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
    return j->drv->compile(j->source, j->file, j->arch, j->options, j->num_options, image, len);
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
    compile_job job = {drv, source, file, target, defs.ptr, n};
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

/* Caller holds s->mutex. */
static kiln_status kernel_for(gpu_state *s, const kiln_gpu_variant *v, void **fn)
{
    char key[128];
    kiln_gpu_variant_key(v, key, sizeof key);
    for (size_t i = 0; i < s->num_kernels; i++)
        if (strcmp(s->kernels[i].key, key) == 0) {
            *fn = s->kernels[i].fn;
            return KILN_OK;
        }
    if (s->num_kernels == s->cap_kernels) {
        size_t cap = s->cap_kernels ? s->cap_kernels * 2 : 16;
        gpu_kernel *k = realloc(s->kernels, cap * sizeof *k);
        KILN_FAIL_IF(!k, KILN_OUT_OF_MEMORY, "out of host memory loading %s", key);
        s->kernels = k;
        s->cap_kernels = cap;
    }
    void *image = NULL, *module = NULL, *f = NULL;
    size_t len = 0;
    kiln_status st = KILN_KERNEL_NOT_FOUND;
    /* A code object shipped for this exact target comes first; one the driver refuses
     * (built by a newer compiler, say) is compiled again rather than failing the call. */
    if (kiln_aot_load(s->info.target, key, &image, &len) == KILN_OK) {
        st = s->drv->module_load(s->dev, image, len, &module);
        free(image);
        image = NULL;
        if (st != KILN_OK)
            kiln_log(KILN_LOG_INFO,
                     "kiln: the shipped %s for %s does not load (%s); compiling it", key,
                     s->info.target, kiln_last_error());
    }
    if (st != KILN_OK) {
        char version[32] = "";
        if (s->drv->compiler_version(version, sizeof version) != KILN_OK) {
            char shipped[512], why[1024];
            snprintf(why, sizeof why, "%s", kiln_last_error()); /* kiln_fail rewrites it */
            kiln_aot_targets(shipped, sizeof shipped);
            return kiln_fail(KILN_KERNEL_NOT_FOUND,
                             "no code object for %s on %s: this build ships code objects for "
                             "[%s], and compiling one needs %s: %s",
                             key, s->info.target, shipped, s->drv->compiler, why);
        }
        KILN_FORWARD(
            kiln_gpu_variant_image(s->drv, s->info.target, version, v, &image, &len, NULL));
        st = s->drv->module_load(s->dev, image, len, &module);
        free(image);
        KILN_FORWARD(st);
    }
    st = s->drv->function(module, kiln_gpu_variant_kernel(v), &f);
    /* Dynamic shared memory above the default needs the function's opt-in, once. */
    if (st == KILN_OK && kiln_gpu_variant_dynamic_smem(v) > 0)
        st = s->drv->function_set_smem(f, kiln_gpu_variant_dynamic_smem(v));
    if (st != KILN_OK) {
        s->drv->module_unload(s->dev, module);
        return st;
    }
    gpu_kernel *k = &s->kernels[s->num_kernels++];
    snprintf(k->key, sizeof k->key, "%s", key);
    k->module = module;
    k->fn = f;
    *fn = f;
    return KILN_OK;
}

/* ---- the backend table ---------------------------------------------------------------- */

static kiln_status gpu_init(const kiln_gpu_driver *drv, int device, void **state)
{
    *state = NULL;
    KILN_FORWARD(drv->load());
    gpu_state *s = calloc(1, sizeof *s);
    KILN_FAIL_IF(!s, KILN_OUT_OF_MEMORY, "out of host memory starting the %s backend",
                 drv->name);
    s->drv = drv;
    s->mutex = kiln_mutex_create();
    kiln_status st = s->mutex ? drv->open(device, &s->info, &s->dev)
                              : kiln_fail(KILN_OUT_OF_MEMORY, "cannot create a mutex");
    if (st != KILN_OK) {
        kiln_mutex_free(s->mutex);
        free(s);
        return st;
    }
    *state = s;
    return KILN_OK;
}

static kiln_status cuda_init(int device, void **state)
{
    return gpu_init(kiln_cuda_driver(), device, state);
}

static kiln_status hip_init(int device, void **state)
{
    return gpu_init(kiln_hip_driver(), device, state);
}

static void gpu_free(void *state)
{
    gpu_state *s = state;
    if (!s) return;
    for (size_t i = 0; i < s->num_kernels; i++)
        s->drv->module_unload(s->dev, s->kernels[i].module);
    for (int i = 0; i < GPU_WORKSPACE_SLOTS; i++)
        if (s->workspaces[i].buf) s->drv->mem_free(s->dev, s->workspaces[i].buf);
    free(s->kernels);
    s->drv->close(s->dev);
    kiln_mutex_free(s->mutex);
    free(s);
}

/* Decode-shaped calls (kernels/decode.cu): a block per 8 rows of one KV head and split.
 * Split until the grid has KILN_DECODE_BLOCKS_PER_CU blocks per compute unit, so the
 * last, partly filled wave costs little, keeping at least KILN_DECODE_MIN_KEYS keys per
 * split (a block's four warps then stream four or more steps each). Powers of two, like
 * the other kernels' choice. */
#define KILN_DECODE_BLOCKS_PER_CU 4
#define KILN_DECODE_MIN_KEYS 256
static int32_t decode_splits(gpu_state *s, int64_t batch, int64_t max_seqlen_q,
                             int64_t max_seqlen_k, int64_t heads_q, int64_t heads_kv)
{
    const int64_t group = heads_kv > 0 ? heads_q / heads_kv : 1;
    const int64_t row_blocks = (max_seqlen_q * group + KILN_DECODE_ROWS - 1) / KILN_DECODE_ROWS;
    const int64_t blocks = batch * (heads_kv > 0 ? heads_kv : 1) * row_blocks;
    const int64_t want =
        KILN_DECODE_BLOCKS_PER_CU * (int64_t)(s->info.compute_units > 0 ? s->info.compute_units : 1);
    int64_t splits = 1;
    if (blocks <= 0) return 1;
    while (blocks * splits < want && splits * 2 * KILN_DECODE_MIN_KEYS <= max_seqlen_k &&
           splits < 64)
        splits *= 2;
    return (int32_t)splits;
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

static void report_fill(gpu_state *s, const kiln_gpu_variant *v, int32_t splits,
                        kiln_dispatch *report)
{
    memset(report, 0, sizeof *report);
    report->backend = s->drv->kind;
    snprintf(report->target, sizeof report->target, "%s", s->info.target);
    snprintf(report->tier, sizeof report->tier, "%s", kiln_gpu_variant_tier_name(v));
    kiln_gpu_variant_key(v, report->variant, sizeof report->variant);
    report->num_splits = splits;
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
        if (w->buf) s->drv->mem_free(s->dev, w->buf);
        w->stream = stream;
        w->buf = s->drv->mem_alloc(s->dev, bytes);
        w->bytes = w->buf ? bytes : 0;
        KILN_FAIL_IF(!w->buf, KILN_OUT_OF_MEMORY,
                     "cannot allocate %lu MiB of split-KV workspace on %s device %d",
                     (unsigned long)(bytes >> 20), s->drv->name, s->info.ordinal);
    }
    *ws = w->buf;
    return KILN_OK;
}

static kiln_status gpu_attention(void *state, const kiln_attn_problem *p, kiln_dispatch *report)
{
    gpu_state *s = state;
    kiln_gpu_variant v, vc;
    kiln_attn_args a;
    unsigned grid[3], block[3];
    void *fn = NULL, *combine = NULL, *ws = NULL;
    int32_t splits = p->num_splits < 1 ? 1 : p->num_splits;
    kiln_status st;

    KILN_FORWARD(kiln_gpu_variant_for_attn_on(p, kiln_target_find(s->info.target), &v));
    /* The decode kernel merges its splits itself. */
    const int combine_launch = splits > 1 && v.kind != KILN_KERNEL_DECODE;
    if (combine_launch) KILN_FORWARD(kiln_gpu_variant_for_combine(p->dtype, p->head_dim, &vc));
    KILN_FORWARD(s->drv->make_current(s->dev));

    kiln_mutex_lock(s->mutex);
    st = kernel_for(s, &v, &fn);
    if (st == KILN_OK && combine_launch) st = kernel_for(s, &vc, &combine);
    if (st == KILN_OK && splits > 1) {
        size_t need = kiln_split_workspace_bytes(splits, p->rows_q, p->heads_q, p->head_dim);
        if (p->workspace)
            ws = p->workspace;
        else
            st = workspace_for(s, p->stream, need, &ws);
    }
    /* Held through the launches: two threads on one stream then queue their split and
     * combine pairs one after the other, never interleaved on the stream's workspace. */
    if (st == KILN_OK) {
        kiln_gpu_attn_args(&a, p, splits, ws);
        st = kiln_gpu_attn_grid_for(&v, &a, grid, block);
    }
    if (st == KILN_OK && !grid_empty(grid)) {
        void *args[] = {&a};
        st = s->drv->launch(fn, grid, block, (unsigned)kiln_gpu_variant_dynamic_smem(&v),
                            p->stream, args);
        if (st == KILN_OK && combine_launch) {
            st = kiln_gpu_combine_grid(&a, grid, block);
            if (st == KILN_OK && !grid_empty(grid))
                st = s->drv->launch(combine, grid, block, 0, p->stream, args);
        }
    }
    kiln_mutex_unlock(s->mutex);
    KILN_FORWARD(st);
    report_fill(s, &v, splits, report);
    return KILN_OK;
}

static kiln_status gpu_act_and_mul(void *state, const kiln_act_problem *p,
                                   kiln_dispatch *report)
{
    gpu_state *s = state;
    kiln_gpu_variant v;
    kiln_act_args a;
    unsigned grid[3], block[3];
    void *fn = NULL;

    KILN_FORWARD(kiln_gpu_variant_for_act(p->act, p->dtype, &v));
    KILN_FORWARD(s->drv->make_current(s->dev));
    kiln_mutex_lock(s->mutex);
    kiln_status st = kernel_for(s, &v, &fn);
    kiln_mutex_unlock(s->mutex);
    KILN_FORWARD(st);
    kiln_gpu_act_args(&a, p);
    KILN_FORWARD(kiln_gpu_act_grid(&a, grid, block));
    if (!grid_empty(grid)) {
        void *args[] = {&a};
        KILN_FORWARD(s->drv->launch(fn, grid, block, 0, p->stream, args));
    }
    report_fill(s, &v, 1, report);
    return KILN_OK;
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
    return s->drv->mem_alloc(s->dev, bytes);
}

static void gpu_mem_free(void *state, void *ptr)
{
    gpu_state *s = state;
    s->drv->mem_free(s->dev, ptr);
}

static kiln_status gpu_mem_copy(void *state, void *dst, const void *src, size_t bytes,
                                int to_device)
{
    gpu_state *s = state;
    return s->drv->mem_copy(s->dev, dst, src, bytes, to_device);
}

static kiln_status gpu_synchronize(void *state, void *stream)
{
    gpu_state *s = state;
    return s->drv->synchronize(s->dev, stream);
}

static const kiln_backend_iface cuda_iface = {
    .version = KILN_BACKEND_IFACE_VERSION,
    .kind = KILN_BACKEND_CUDA,
    .name = "cuda",
    .init = cuda_init,
    .free = gpu_free,
    .choose_splits = gpu_choose_splits,
    .attention = gpu_attention,
    .act_and_mul = gpu_act_and_mul,
    .describe = gpu_describe,
    .mem_alloc = gpu_mem_alloc,
    .mem_free = gpu_mem_free,
    .mem_copy = gpu_mem_copy,
    .synchronize = gpu_synchronize,
};

static const kiln_backend_iface hip_iface = {
    .version = KILN_BACKEND_IFACE_VERSION,
    .kind = KILN_BACKEND_HIP,
    .name = "hip",
    .init = hip_init,
    .free = gpu_free,
    .choose_splits = gpu_choose_splits,
    .attention = gpu_attention,
    .act_and_mul = gpu_act_and_mul,
    .describe = gpu_describe,
    .mem_alloc = gpu_mem_alloc,
    .mem_free = gpu_mem_free,
    .mem_copy = gpu_mem_copy,
    .synchronize = gpu_synchronize,
};

const kiln_backend_iface *kiln_cuda_backend_iface(void) { return &cuda_iface; }
const kiln_backend_iface *kiln_hip_backend_iface(void) { return &hip_iface; }

/* ---- kiln cache warm ------------------------------------------------------------------ */

kiln_status kiln_cache_warm(kiln_backend backend, int device, const char *target,
                            kiln_cache_progress_fn progress, void *user)
{
    const kiln_gpu_driver *drv = backend == KILN_BACKEND_CUDA  ? kiln_cuda_driver()
                                 : backend == KILN_BACKEND_HIP ? kiln_hip_driver()
                                                               : NULL;
    char name[32], version[32] = "";
    KILN_FAIL_IF(!drv, KILN_INVALID_ARGUMENT, "kiln cache warm needs the cuda or hip backend");
    if (!target) {
        kiln_gpu_info info;
        void *dev = NULL;
        KILN_FORWARD(drv->load());
        KILN_FORWARD(drv->open(device, &info, &dev));
        drv->close(dev);
        snprintf(name, sizeof name, "%s", info.target);
        target = name;
    }
    const kiln_target *t = kiln_target_find(target);
    KILN_FAIL_IF(!t, KILN_INVALID_ARGUMENT, "unknown target '%s'", target);
    KILN_FORWARD(drv->load_compiler());
    KILN_FORWARD(drv->compiler_version(version, sizeof version));

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
