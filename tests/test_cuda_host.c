/*
 * The CUDA backend's host path on a stand-in driver (tests/helpers/fake_cuda.c) with the
 * real NVRTC, so it runs without a GPU:
 *   - every call leaves the caller's current CUDA context as it found it (another context,
 *     or none), while the fake driver refuses launches outside kiln's own context;
 *   - the dispatch report names what ran (formatted when asked);
 *   - KILN_GPU_TIER is read when a context starts, not per call; a bad value fails there;
 *   - on the (sm_90) device every launch allows programmatic dependencies, none does with
 *     KILN_GPU_PDL=0, and a bad value fails when the context starts; a driver that refuses
 *     the attribute gets the plain launch, then only plain ones;
 *   - while one thread compiles a new variant, another keeps calling a loaded one;
 *   - a shipped code object (KILN_AOT_DIR) is loaded only under the name that carries this
 *     library's kernel-source hash, never one built from other sources;
 *   - with "maps", on the stand-in built with tensor maps (auto: the hopper tier), the
 *     hopper launch encodes a call's maps once per thread and tensor: a call with the same
 *     tensors copies them, one whose pointer, shape or strides differ gets its own, another
 *     thread encodes its own.
 * Skipped where the fake driver is not built (Windows, builds without CUDA) or NVRTC is
 * missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_check.h"
#include "context.h"
#include "platform/platform.h"

#ifdef KILN_FAKE_CUDA
#include "gpu/aot.h"
#include "gpu/aot_dir.h"
#include "gpu/cache.h"

typedef int (*ctx_fn)(void **);
typedef int (*set_fn)(void *);
typedef long (*count_fn)(void);
typedef long (*mark_fn)(const char *);
typedef void (*refuse_fn)(int);
typedef long (*encodes_fn)(const void *);
static ctx_fn get_current;
static set_fn set_current;
static count_fn launches, pdl_launches;
static mark_fn marked_loads;
static refuse_fn refuse_pdl;

typedef struct {
    kiln_context *ctx;
    kiln_tensor q, k, v, out;
    kiln_attention_params prm;
} problem;

static void *zeros(kiln_context *ctx, size_t bytes)
{
    void *host = calloc(1, bytes), *dev = kiln_ctx_alloc(ctx, bytes);
    if (host && dev) kiln_ctx_copy_to_device(ctx, dev, host, bytes);
    free(host);
    return dev;
}

/* Zeroed bf16 q and out of shape qs, k and v of shape ks; default parameters. */
static void make_shaped(problem *p, kiln_context *ctx, const int64_t qs[4], const int64_t ks[4])
{
    const size_t qb = (size_t)(qs[0] * qs[1] * qs[2] * qs[3]) * 2;
    const size_t kb = (size_t)(ks[0] * ks[1] * ks[2] * ks[3]) * 2;
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    kiln_tensor_contiguous(&p->q, zeros(ctx, qb), KILN_BF16, 4, qs);
    kiln_tensor_contiguous(&p->k, zeros(ctx, kb), KILN_BF16, 4, ks);
    kiln_tensor_contiguous(&p->v, zeros(ctx, kb), KILN_BF16, 4, ks);
    kiln_tensor_contiguous(&p->out, zeros(ctx, qb), KILN_BF16, 4, qs);
    kiln_attention_params_init(&p->prm);
}

static void make(problem *p, kiln_context *ctx, int64_t seqlen, int64_t head_dim)
{
    const int64_t shape[4] = {1, seqlen, 4, head_dim};
    make_shaped(p, ctx, shape, shape);
    p->prm.num_splits = 1;
}

static void unmake(problem *p)
{
    kiln_ctx_free(p->ctx, p->q.data);
    kiln_ctx_free(p->ctx, p->k.data);
    kiln_ctx_free(p->ctx, p->v.data);
    kiln_ctx_free(p->ctx, p->out.data);
}

static kiln_status run(problem *p)
{
    return kiln_attention_fwd(p->ctx, &p->q, &p->k, &p->v, &p->out, NULL, &p->prm, NULL);
}

/* The split count auto gives a decode call (q length 1, 32 / 8 heads, D 128) of batch
 * sequences of seqlen_k keys on the stand-in's 132 multiprocessors. */
static int32_t decode_auto_splits(kiln_context *ctx, int64_t batch, int64_t seqlen_k)
{
    const int64_t qs[4] = {batch, 1, 32, 128}, ks[4] = {batch, seqlen_k, 8, 128};
    problem p;
    make_shaped(&p, ctx, qs, ks); /* num_splits 0: automatic */
    kiln_dispatch d;
    kiln_dispatch_init(&d);
    d.num_splits = -1;
    CHECK_OK(run(&p));
    CHECK_OK(kiln_last_dispatch(&d));
    CHECK_STR_EQ(d.variant, "attn_decode.bf16.d128.full.fixed.tensor");
    unmake(&p);
    return d.num_splits;
}

typedef struct {
    problem *loaded;
    volatile int stop;
    long calls;
    int errors;
} spinner;

static void spin(void *user)
{
    spinner *s = user;
    while (!s->stop) {
        if (run(s->loaded) != KILN_OK) s->errors++;
        s->calls++;
    }
}

/* One D = 64 call on a context of its own (created, used, freed), which loads its variant
 * afresh. */
static void call_in_new_context(void)
{
    kiln_context *c = NULL;
    CHECK_OK(kiln_context_create(KILN_BACKEND_CUDA, 0, &c));
    if (!c) return;
    problem g;
    make(&g, c, 128, 64);
    CHECK_OK(run(&g));
    unmake(&g);
    kiln_context_free(c);
}

/* The value of "programmatic_launch" in a context's description: 1 true, 0 false, -1 absent. */
static int pdl_in(const char *json)
{
    const char *at = strstr(json, "\"programmatic_launch\"");
    if (!at) return -1;
    at += strlen("\"programmatic_launch\"");
    while (*at == ':' || *at == ' ') at++;
    return strncmp(at, "true", 4) == 0 ? 1 : strncmp(at, "false", 5) == 0 ? 0 : -1;
}

/* Whether NVRTC loads for the context that buf describes; notes the skip where it does not. */
static int compiles(const char *buf)
{
    const char *compiler = strstr(buf, "\"compiler\"");
    const char *cache_dir = compiler ? strstr(compiler, "\"cache_dir\"") : NULL;
    const char *error = compiler ? strstr(compiler, "\"error\"") : NULL;
    if (!compiler || (error && (!cache_dir || error < cache_dir))) {
        check_note_skip("NVRTC is not loadable here: %s", buf);
        return 0;
    }
    return 1;
}

/* A context on the stand-in driver at path (the automatic tier, a cache of its own kept
 * between runs), its info JSON left in buf; NULL where it cannot be made or this build has
 * no compiler for the fake device (compiles() says why). */
static kiln_context *fake_context(const char *path, char *buf, size_t cap)
{
    kiln_context *ctx = NULL;
    kiln_env_set("KILN_CACHE_DIR", KILN_TEST_CACHE_DIR);
    kiln_env_set("KILN_CUDA_DRIVER_PATH", path);
    kiln_env_set("KILN_GPU_TIER", NULL);
    CHECK_OK(kiln_context_create(KILN_BACKEND_CUDA, 0, &ctx));
    if (!ctx) return NULL;
    CHECK_OK(kiln_info_json(ctx, buf, cap, NULL));
    if (!compiles(buf)) {
        kiln_context_free(ctx);
        return NULL;
    }
    return ctx;
}

static void test_host_path(void)
{
    kiln_context *ctx = NULL;
    char err[512], buf[16384], cache[1024];
    kiln_dl *lib = kiln_dl_open(KILN_FAKE_CUDA, err, sizeof err);
    CHECK(lib != NULL);
    if (!lib) return;
    get_current = (ctx_fn)kiln_dl_sym(lib, "cuCtxGetCurrent");
    set_current = (set_fn)kiln_dl_sym(lib, "cuCtxSetCurrent");
    launches = (count_fn)kiln_dl_sym(lib, "fake_cuda_launches");
    pdl_launches = (count_fn)kiln_dl_sym(lib, "fake_cuda_pdl_launches");
    marked_loads = (mark_fn)kiln_dl_sym(lib, "fake_cuda_marked_loads");
    refuse_pdl = (refuse_fn)kiln_dl_sym(lib, "fake_cuda_refuse_pdl");
    check_case("cuda host: a context on the stand-in driver");
    ctx = fake_context(KILN_FAKE_CUDA, buf, sizeof buf);
    if (!ctx) return;
    check_note_ran();

    check_case("cuda host: the caller's current context is put back");
    problem p;
    void *foreign = (void *)(uintptr_t)0x1234, *now = NULL;
    make(&p, ctx, 128, 64);
    set_current(foreign);
    long before = launches();
    CHECK_OK(run(&p));
    CHECK_EQ(launches() - before, 1);
    get_current(&now);
    CHECK(now == foreign);
    set_current(NULL);
    CHECK_OK(run(&p));
    get_current(&now);
    CHECK(now == NULL);
    kiln_dispatch d;
    kiln_dispatch_init(&d);
    CHECK_OK(kiln_last_dispatch(&d));
    CHECK_EQ(d.backend, KILN_BACKEND_CUDA);
    CHECK_STR_EQ(d.target, "sm_90");
    CHECK_STR_EQ(d.tier, "tensor");
    CHECK_STR_EQ(d.variant, "attn_fwd.bf16.d64.full.fixed.tensor");
    CHECK_EQ(d.num_splits, 1);
    /* Split-KV with kiln's own workspace: two launches, context still put back. */
    p.prm.num_splits = 4;
    set_current(foreign);
    before = launches();
    CHECK_OK(run(&p));
    CHECK_EQ(launches() - before, 2);
    get_current(&now);
    CHECK(now == foreign);
    CHECK_OK(kiln_ctx_synchronize(ctx, NULL));
    get_current(&now);
    CHECK(now == foreign);
    set_current(NULL);
    check_note_ran();

    check_case("cuda host: KILN_GPU_TIER is read when a context starts");
    kiln_env_set("KILN_GPU_TIER", "generic");
    p.prm.num_splits = 1;
    CHECK_OK(run(&p));
    CHECK_OK(kiln_last_dispatch(&d));
    CHECK_STR_EQ(d.tier, "tensor");
    kiln_context *generic = NULL;
    CHECK_OK(kiln_context_create(KILN_BACKEND_CUDA, 0, &generic));
    if (generic) {
        problem g;
        make(&g, generic, 128, 64);
        CHECK_OK(run(&g));
        CHECK_OK(kiln_last_dispatch(&d));
        CHECK_STR_EQ(d.variant, "attn_fwd.bf16.d64.full.fixed.generic");
        unmake(&g);
        kiln_context_free(generic);
    }
    kiln_env_set("KILN_GPU_TIER", "fastest");
    kiln_context *bad = NULL;
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_CUDA, 0, &bad), KILN_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(kiln_last_error(), "KILN_GPU_TIER=fastest");
    CHECK(bad == NULL);
    kiln_env_set("KILN_GPU_TIER", NULL);
    check_note_ran();

    check_case("cuda host: programmatic dependent launch, and KILN_GPU_PDL");
    CHECK_EQ(pdl_in(buf), 1);
    before = launches();
    long pdl_before = pdl_launches();
    CHECK_OK(run(&p));
    p.prm.num_splits = 4; /* the split launch and the combine */
    CHECK_OK(run(&p));
    p.prm.num_splits = 1;
    CHECK_EQ(launches() - before, 3);
    CHECK_EQ(pdl_launches() - pdl_before, 3);
    kiln_env_set("KILN_GPU_PDL", "0");
    kiln_context *plain = NULL;
    CHECK_OK(kiln_context_create(KILN_BACKEND_CUDA, 0, &plain));
    if (plain) {
        problem g;
        char info[16384];
        make(&g, plain, 128, 64);
        CHECK_OK(kiln_info_json(plain, info, sizeof info, NULL));
        CHECK_EQ(pdl_in(info), 0);
        before = launches();
        pdl_before = pdl_launches();
        CHECK_OK(run(&g));
        CHECK_EQ(launches() - before, 1);
        CHECK_EQ(pdl_launches() - pdl_before, 0);
        unmake(&g);
        kiln_context_free(plain);
    }
    /* A driver that refuses the attribute: the call still runs (plain), and so do the
     * next ones, without trying it again; the description says so. */
    kiln_env_set("KILN_GPU_PDL", NULL);
    {
        kiln_context *refusing = NULL;
        CHECK_OK(kiln_context_create(KILN_BACKEND_CUDA, 0, &refusing));
        if (refusing) {
            problem g;
            char info[16384];
            make(&g, refusing, 128, 64);
            CHECK_OK(kiln_info_json(refusing, info, sizeof info, NULL));
            CHECK_EQ(pdl_in(info), 1);
            refuse_pdl(1);
            before = launches();
            pdl_before = pdl_launches();
            CHECK_OK(run(&g));
            /* The refusal is not the successful call's error. */
            CHECK_STR_EQ(kiln_last_error(), "");
            CHECK_OK(run(&g));
            refuse_pdl(0);
            CHECK_OK(run(&g));
            CHECK_EQ(launches() - before, 3);
            CHECK_EQ(pdl_launches() - pdl_before, 0);
            CHECK_OK(kiln_info_json(refusing, info, sizeof info, NULL));
            CHECK_EQ(pdl_in(info), 0);
            unmake(&g);
            kiln_context_free(refusing);
        }
    }
    kiln_env_set("KILN_GPU_PDL", "yes");
    bad = NULL;
    CHECK_STATUS(kiln_context_create(KILN_BACKEND_CUDA, 0, &bad), KILN_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(kiln_last_error(), "KILN_GPU_PDL=yes");
    CHECK(bad == NULL);
    kiln_env_set("KILN_GPU_PDL", NULL);
    check_note_ran();

    check_case("cuda host: shipped code objects only from this library's kernel sources");
    {
        /* kiln build of the call's one variant, its object's bytes replaced by a marker
         * under the name it was written with, and markers under the names of objects from
         * other sources beside it (another hash; no hash, as builds before hashes wrote). */
        kiln_dispatch disp;
        char aot[1024], dir[1100], path[1400], fresh[1400], werr[256];
        kiln_dispatch_init(&disp);
        CHECK_OK(run(&p));
        CHECK_OK(kiln_last_dispatch(&disp));
        snprintf(aot, sizeof aot, "%s-aot", KILN_TEST_CACHE_DIR);
        snprintf(dir, sizeof dir, "%s%csm_90", aot, kiln_fs_sep());
        CHECK_OK(kiln_aot_build_filtered("sm_90", aot, 1, disp.variant, NULL, NULL));
        /* The object's name: KEY.<source hash>.cubin, the hash as the manifest gives it. */
        char hash[17] = "";
        {
            char manifest[1200];
            void *text = NULL;
            size_t len = 0;
            snprintf(manifest, sizeof manifest, "%s%cmanifest.json", aot, kiln_fs_sep());
            CHECK(kiln_fs_read(manifest, &text, &len, werr, sizeof werr) == 0);
            const char *at = text ? strstr((const char *)text, "\"source_hash\"") : NULL;
            if (at) at = strchr(at + 13, '"');
            if (at) snprintf(hash, sizeof hash, "%.16s", at + 1);
            free(text);
        }
        CHECK_EQ((int)strlen(hash), 16);
        snprintf(fresh, sizeof fresh, "%s%c%s.%s.cubin", dir, kiln_fs_sep(), disp.variant, hash);
        CHECK(kiln_fs_exists(fresh));
        CHECK(kiln_fs_write_atomic(fresh, "KILNTEST-fresh", 14, werr, sizeof werr) == 0);
        snprintf(path, sizeof path, "%s%c%s.0123456789abcdef.cubin", dir, kiln_fs_sep(),
                 disp.variant);
        CHECK(kiln_fs_write_atomic(path, "KILNTEST-stale", 14, werr, sizeof werr) == 0);
        snprintf(path, sizeof path, "%s%c%s.cubin", dir, kiln_fs_sep(), disp.variant);
        CHECK(kiln_fs_write_atomic(path, "KILNTEST-stale", 14, werr, sizeof werr) == 0);
        kiln_env_set("KILN_AOT_DIR", aot);
        CHECK_EQ(kiln_gpu_aot_ships("sm_90"), 1);
        long fresh0 = marked_loads("fresh"), stale0 = marked_loads("stale");
        call_in_new_context();
        CHECK_EQ(marked_loads("fresh") - fresh0, 1);
        CHECK_EQ(marked_loads("stale") - stale0, 0);
        /* Only objects from other sources: they do not count as shipped, and the variant is
         * compiled (NVRTC), none loaded. */
        kiln_fs_remove(fresh);
        CHECK_EQ(kiln_gpu_aot_ships("sm_90"), 0);
        call_in_new_context();
        CHECK_EQ(marked_loads("fresh") - fresh0, 1);
        CHECK_EQ(marked_loads("stale") - stale0, 0);
        /* A rebuild writes the object and takes the other-source ones away. */
        CHECK_OK(kiln_aot_build_filtered("sm_90", aot, 1, disp.variant, NULL, NULL));
        CHECK(kiln_fs_exists(fresh));
        CHECK(!kiln_fs_exists(path)); /* the unhashed name */
        snprintf(path, sizeof path, "%s%c%s.0123456789abcdef.cubin", dir, kiln_fs_sep(),
                 disp.variant);
        CHECK(!kiln_fs_exists(path));
        kiln_env_set("KILN_AOT_DIR", NULL);
    }
    check_note_ran();

    check_case("cuda host: a compile does not stall calls of loaded variants");
    /* A context that starts with an empty cache of its own really compiles d128. */
    unmake(&p);
    kiln_context_free(ctx);
    size_t removed = 0;
    snprintf(cache, sizeof cache, "%s-empty", KILN_TEST_CACHE_DIR);
    kiln_env_set("KILN_CACHE_DIR", cache);
    CHECK_OK(kiln_cache_clear(&removed));
    ctx = NULL;
    CHECK_OK(kiln_context_create(KILN_BACKEND_CUDA, 0, &ctx));
    if (!ctx) return;
    make(&p, ctx, 128, 64);
    problem fresh;
    make(&fresh, ctx, 128, 128);
    fresh.prm.causal = 1;
    spinner sp = {&p, 0, 0, 0};
    CHECK_OK(run(&p)); /* loaded (compiled too, the cache being new) */
    kiln_thread *t = kiln_thread_start(spin, &sp);
    while (sp.calls < 100 && !sp.errors) kiln_sleep_ms(1);
    uint64_t t0 = kiln_time_ns();
    long calls_before = sp.calls;
    CHECK_OK(run(&fresh));
    double compile_ms = (double)(kiln_time_ns() - t0) * 1e-6;
    long during = sp.calls - calls_before;
    sp.stop = 1;
    kiln_thread_join(t);
    CHECK_EQ(sp.errors, 0);
    printf("  compile + first call %.0f ms; the other thread made %ld calls meanwhile\n",
           compile_ms, during);
    /* A stalled thread would make none while the compile runs. */
    CHECK(during > 10);
    check_note_ran();

    check_case("cuda host: decode splits fill one wave of two blocks per multiprocessor");
    /* 264 places: as many splits of each (KV head, sequence) group as fit (any count up to
     * 16, then 32 or 64: whole merge rounds), each of at least 128 keys. */
    CHECK_EQ(decode_auto_splits(ctx, 3, 8192), 11);  /* 24 groups: 264 blocks (8 left 72 empty) */
    CHECK_EQ(decode_auto_splits(ctx, 5, 4096), 6);   /* 40 groups: 240 blocks (4: 160) */
    CHECK_EQ(decode_auto_splits(ctx, 1, 8448), 32);  /* 8 groups: 33 fit, a merge round less */
    CHECK_EQ(decode_auto_splits(ctx, 1, 2048), 16);  /* 128 keys a split at least */
    CHECK_EQ(decode_auto_splits(ctx, 1, 1024), 8);
    CHECK_EQ(decode_auto_splits(ctx, 8, 1024), 4);   /* 64 groups: 256 blocks */
    CHECK_EQ(decode_auto_splits(ctx, 40, 256), 1);   /* 320 groups: a wave without splitting */
    check_note_ran();

    unmake(&p);
    unmake(&fresh);
    kiln_context_free(ctx);
}

typedef struct {
    problem *p;
    kiln_status st;
} call_job;

static void call_on_thread(void *user)
{
    call_job *j = user;
    j->st = run(j->p);
}

/* On the stand-in driver with tensor maps (kiln_fake_cuda_tmap), where auto takes the
 * hopper tier. */
static void test_tensor_map_cache(void)
{
    char err[512], buf[16384];
    kiln_dl *lib = kiln_dl_open(KILN_FAKE_CUDA_TMAP, err, sizeof err);
    CHECK(lib != NULL);
    if (!lib) return;
    encodes_fn encodes = (encodes_fn)kiln_dl_sym(lib, "fake_cuda_encodes");
    CHECK(encodes != NULL);
    if (!encodes) return;
    check_case("cuda host: the hopper tier's tensor maps, encoded once per thread and tensor");
    kiln_context *ctx = fake_context(KILN_FAKE_CUDA_TMAP, buf, sizeof buf);
    if (!ctx) return;
    problem a, b;
    make(&a, ctx, 128, 64);
    make(&b, ctx, 128, 64);
    const long e0 = encodes(NULL);
    CHECK_OK(run(&a));
    kiln_dispatch d;
    kiln_dispatch_init(&d);
    CHECK_OK(kiln_last_dispatch(&d));
    CHECK_STR_EQ(d.tier, "hopper");
    /* q, k and v (head dim 64 writes its output without a map) */
    CHECK_EQ(encodes(NULL) - e0, 3);
    CHECK_EQ(encodes(a.q.data), 1);
    CHECK_OK(run(&a));
    CHECK_OK(run(&a));
    CHECK_EQ(encodes(NULL) - e0, 3);
    /* Other tensors of the same shape: maps of their own. */
    CHECK_OK(run(&b));
    CHECK_EQ(encodes(NULL) - e0, 6);
    CHECK_EQ(encodes(b.q.data), 1);
    CHECK_EQ(encodes(b.k.data), 1);
    CHECK_EQ(encodes(b.v.data), 1);
    /* a's q and out with fewer rows at the same addresses: q's map again, k and v kept. */
    problem c = a;
    int64_t shorter[4] = {1, 64, 4, 64};
    kiln_tensor_contiguous(&c.q, a.q.data, KILN_BF16, 4, shorter);
    kiln_tensor_contiguous(&c.out, a.out.data, KILN_BF16, 4, shorter);
    CHECK_OK(run(&c));
    CHECK_EQ(encodes(a.q.data), 2);
    CHECK_EQ(encodes(NULL) - e0, 7);
    /* a's k with the same shape and address, laid out [batch][heads][seq][dim]. */
    problem e = a;
    e.k.stride[1] = 64;
    e.k.stride[2] = 128 * 64;
    CHECK_OK(run(&e));
    CHECK_EQ(encodes(a.k.data), 2);
    CHECK_EQ(encodes(NULL) - e0, 8);
    CHECK_OK(run(&a));
    CHECK_EQ(encodes(NULL) - e0, 8);
    /* Another thread encodes its own. */
    call_job job = {&a, KILN_INTERNAL};
    kiln_thread *t = kiln_thread_start(call_on_thread, &job);
    CHECK(t != NULL);
    if (t) kiln_thread_join(t);
    CHECK_OK(job.st);
    CHECK_EQ(encodes(NULL) - e0, 11);
    /* Twenty calls with q at other addresses put a's q out of this thread's 16 maps. */
    const size_t q_bytes = (size_t)128 * 4 * 64 * 2;
    char *many = zeros(ctx, 20 * q_bytes);
    CHECK(many != NULL);
    if (many) {
        problem f = a;
        for (int i = 0; i < 20; i++) {
            f.q.data = many + (size_t)i * q_bytes;
            CHECK_OK(run(&f));
            CHECK_EQ(encodes(f.q.data), 1);
        }
        CHECK(encodes(NULL) - e0 >= 31); /* k and v were put out too */
        const long aq = encodes(a.q.data);
        CHECK_OK(run(&a));
        CHECK_EQ(encodes(a.q.data), aq + 1);
        kiln_ctx_free(ctx, many);
    }
    unmake(&a);
    unmake(&b);
    kiln_context_free(ctx);
    check_note_ran();
}
#endif

int main(int argc, char **argv)
{
#ifdef KILN_FAKE_CUDA
    /* "maps": the entry on the stand-in with tensor maps (a process loads one driver). */
    if (argc > 1 && !strcmp(argv[1], "maps"))
        test_tensor_map_cache();
    else
        test_host_path();
    return check_finish("test_cuda_host");
#else
    (void)argc;
    (void)argv;
    printf("SKIP the stand-in CUDA driver is built only on Unix with the cuda backend\n");
    return CHECK_SKIP_CODE;
#endif
}
