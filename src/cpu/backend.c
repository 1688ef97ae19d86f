/* The CPU backend's entry in the backend table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu.h"
#include "error.h"
#include "platform/platform.h"
#include "variant_key.h"

static int level_compiled(kiln_cpu_level level) {
    switch (level) {
    case KILN_CPU_AVX512BF16: return kiln_cpu_kernels_avx512bf16() != NULL;
    case KILN_CPU_AVX512: return kiln_cpu_kernels_avx512() != NULL;
    case KILN_CPU_AVX2: return kiln_cpu_kernels_avx2() != NULL;
    default: return 1;
    }
}

/* Highest level the CPU, the OS and this build all support. */
static kiln_cpu_level best_level(void) {
    int top = (int)kiln_cpu_detect_level();
    while (top > 0 && !level_compiled((kiln_cpu_level)top)) top--;
    return (kiln_cpu_level)top;
}

/* The level used when none is forced (cpu.h says why bf16 dot products may be passed over). */
static kiln_cpu_level default_level(void) {
    kiln_cpu_level best = best_level();
    if (best == KILN_CPU_AVX512BF16 && !kiln_cpu_bf16_dot_is_fast()) return KILN_CPU_AVX512;
    return best;
}

static kiln_status pick_level(kiln_cpu_level *out) {
    kiln_cpu_level best = best_level();
    char want[32];
    *out = default_level();
    if (!kiln_env_get("KILN_CPU_SIMD", want, sizeof want) || want[0] == '\0') return KILN_OK;
    for (int l = 0; l < KILN_CPU_LEVEL_COUNT; l++) {
        if (strcmp(want, kiln_cpu_level_name((kiln_cpu_level)l)) != 0) continue;
        if (l > (int)best)
            return kiln_fail(KILN_BACKEND_UNAVAILABLE,
                             "KILN_CPU_SIMD=%s: this CPU and build support levels up to %s "
                             "(scalar < avx2 < avx512 < avx512bf16)",
                             want, kiln_cpu_level_name(best));
        *out = (kiln_cpu_level)l;
        return KILN_OK;
    }
    return kiln_fail(KILN_BACKEND_UNAVAILABLE,
                     "KILN_CPU_SIMD=%s is not a level; use scalar, avx2, avx512 or avx512bf16 "
                     "(this CPU supports up to %s)",
                     want, kiln_cpu_level_name(best));
}

static kiln_status pick_threads(int *out) {
    char buf[32];
    *out = kiln_cpu_count();
    if (!kiln_env_get("KILN_NUM_THREADS", buf, sizeof buf) || buf[0] == '\0') return KILN_OK;
    char *end = NULL;
    long n = strtol(buf, &end, 10);
    if (!end || *end != '\0' || n < 1 || n > 4096)
        return kiln_fail(KILN_BACKEND_UNAVAILABLE,
                         "KILN_NUM_THREADS=%s: expected a thread count from 1 to 4096", buf);
    *out = (int)n;
    return KILN_OK;
}

static kiln_status cpu_init(int device, void **state) {
    (void)device;
    *state = NULL;
    kiln_cpu_state *st = calloc(1, sizeof *st);
    if (!st) return kiln_fail(KILN_OUT_OF_MEMORY, "cpu backend: out of memory");
    kiln_status s = pick_level(&st->level);
    if (s == KILN_OK) s = pick_threads(&st->threads);
    if (s != KILN_OK) {
        free(st);
        return s;
    }
    st->pool = kiln_cpu_pool_create(st->threads);
    st->scratch_lock = st->pool ? kiln_mutex_create() : NULL;
    if (!st->scratch_lock) {
        kiln_cpu_pool_free(st->pool);
        int n = st->threads;
        free(st);
        return kiln_fail(KILN_OUT_OF_MEMORY, "cpu backend: could not start %d threads", n);
    }
    kiln_cpu_model_name(st->model, sizeof st->model);
    *state = st;
    return KILN_OK;
}

static void cpu_free(void *state) {
    kiln_cpu_state *st = state;
    if (!st) return;
    kiln_cpu_pool_free(st->pool);
    kiln_mutex_free(st->scratch_lock);
    free(st->scratch);
    free(st);
}

static int32_t cpu_choose_splits(void *state, int64_t batch, int64_t max_seqlen_q,
                                 int64_t max_seqlen_k, int64_t heads_q, int64_t heads_kv,
                                 int64_t head_dim) {
    kiln_cpu_state *st = state;
    (void)heads_kv;
    return kiln_cpu_choose_splits(kiln_cpu_pool_size(st->pool), batch, max_seqlen_q,
                                  max_seqlen_k, heads_q, head_dim);
}

static kiln_status cpu_attention(void *state, const kiln_attn_problem *p,
                                 kiln_dispatch_note *note) {
    const kiln_cpu_kernels *kr = NULL;
    int32_t splits = 1;
    KILN_FORWARD(kiln_cpu_attention(state, p, &kr, &splits));
    kiln_dispatch_note_target(note, kr->target);
    note->variant = (kiln_variant_desc){KILN_VARIANT_ATTN, p->dtype, (int32_t)p->head_dim,
                                        kiln_mask_index(p), p->mode, KILN_ACT_SILU, "cpu", 0, 0};
    note->num_splits = splits;
    return KILN_OK;
}

static kiln_status cpu_act(void *state, const kiln_act_problem *p, kiln_dispatch_note *note) {
    const kiln_cpu_kernels *kr = NULL;
    KILN_FORWARD(kiln_cpu_act(state, p, &kr));
    kiln_dispatch_note_target(note, kr->target);
    note->variant = (kiln_variant_desc){KILN_VARIANT_ACT, p->dtype, 0, 0, KILN_MODE_FIXED,
                                        p->act, "cpu", 0, 0};
    note->num_splits = 1;
    return KILN_OK;
}

static void cpu_describe(void *state, kiln_json *out) {
    kiln_cpu_state *st = state;
    kiln_json_string(out, "simd", kiln_cpu_level_name(st->level));
    kiln_json_string(out, "simd_default", kiln_cpu_level_name(default_level()));
    kiln_json_string(out, "simd_max", kiln_cpu_level_name(best_level()));
    kiln_json_int(out, "threads", kiln_cpu_pool_size(st->pool));
    kiln_json_int(out, "cores", kiln_cpu_count());
    kiln_json_string(out, "cpu_model", st->model[0] ? st->model : NULL);
}

static void *cpu_mem_alloc(void *state, size_t bytes) {
    (void)state;
    return malloc(bytes ? bytes : 1);
}

static void cpu_mem_free(void *state, void *ptr) {
    (void)state;
    free(ptr);
}

static kiln_status cpu_mem_copy(void *state, void *dst, const void *src, size_t bytes,
                                int to_device) {
    (void)state;
    (void)to_device;
    if (bytes) memcpy(dst, src, bytes);
    return KILN_OK;
}

static kiln_status cpu_synchronize(void *state, void *stream) {
    (void)state;
    (void)stream;
    return KILN_OK;
}

const kiln_backend_iface kiln_cpu_backend = {
    .version = KILN_BACKEND_IFACE_VERSION,
    .kind = KILN_BACKEND_CPU,
    .name = "cpu",
    .description = "this machine's CPU: threads, SIMD level chosen at run time",
    .init = cpu_init,
    .free = cpu_free,
    .choose_splits = cpu_choose_splits,
    .attention = cpu_attention,
    .act_and_mul = cpu_act,
    .describe = cpu_describe,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_copy = cpu_mem_copy,
    .synchronize = cpu_synchronize,
};
