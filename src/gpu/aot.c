#include "aot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_dir.h"
#include "code_object.h"
#include "error.h"
#include "gpu.h"
#include "json.h"
#include "kernel_source.h"
#include "platform/platform.h"
#include "targets.h"
#include "variants.h"

#define MAX_TARGETS 64
#define PATH_CAP 1024

typedef struct aot_job {
    const kiln_target *t;
    kiln_gpu_variant v;
    char key[128];
    char source_hash[17]; /* of the variant's kernel file, part of the object's name */
    kiln_status status;
    char message[1536];
    size_t bytes;
    kiln_code_object_info info;
} aot_job;

typedef struct aot_build {
    aot_job *jobs;
    size_t count, next, done, failed;
    kiln_mutex *lock;
    const char *out_dir;
    char clang[256]; /* "" when AMD objects come from hipRTC */
    kiln_aot_progress_fn progress;
    void *user;
    uint64_t start_ns;
} aot_build;

/* a + separator + b; an over-long path becomes "" so the file operation on it fails. */
static void join(char *buf, size_t cap, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb + 2 > cap) {
        buf[0] = '\0';
        return;
    }
    memcpy(buf, a, la);
    buf[la] = kiln_fs_sep();
    memcpy(buf + la + 1, b, lb + 1);
}

static int32_t block_threads(const kiln_gpu_variant *v) { return kiln_gpu_variant_threads(v); }

/* ---- clang -------------------------------------------------------------------------- */

/* Runs argv to completion; 0 when it exited with 0. */
static int run_child(const char *const *argv, char *err, size_t errcap)
{
    int code = -1;
    kiln_child *c = kiln_process_spawn(argv, err, errcap);
    if (!c) return -1;
    if (kiln_process_wait(c, KILN_WAIT_FOREVER, &code) != 0) code = -1;
    kiln_process_free(c);
    if (code != 0 && err && errcap) snprintf(err, errcap, "%s exited with code %d", argv[0], code);
    return code == 0 ? 0 : -1;
}

/* The first clang that runs, KILN_CLANG when set. tried lists what was looked for. */
static int find_clang(const char *scratch, char *clang, size_t cap, char *tried, size_t tcap)
{
    static const char *const names[] = {"clang-19", "clang-20", "clang-18", "clang"};
    char env[256], probe[PATH_CAP], err[256];
    const char *only = kiln_env_get("KILN_CLANG", env, sizeof env) && env[0] ? env : NULL;
    size_t n = only ? 1 : sizeof names / sizeof names[0];
    join(probe, sizeof probe, scratch, "probe.c");
    if (kiln_fs_write_atomic(probe, "int kiln_probe;\n", 16, err, sizeof err) != 0) {
        /* A long path may cut the message short; it still names the file. */
        if (snprintf(tried, tcap, "cannot write %s: %s", probe, err) < 0) tried[0] = '\0';
        return -1;
    }
    tried[0] = '\0';
    for (size_t i = 0; i < n; ++i) {
        const char *name = only ? only : names[i];
        const char *argv[] = {name, "-fsyntax-only", "-x", "c", probe, NULL};
        size_t len = strlen(tried);
        if (run_child(argv, err, sizeof err) == 0) {
            snprintf(clang, cap, "%s", name);
            return 0;
        }
        if (len + 1 < tcap)
            snprintf(tried + len, tcap - len, "%s%.200s (%.200s)", len ? ", " : "", name, err);
    }
    return -1;
}

static int clang_compile(const char *clang, const char *arch, const char *const *defines,
                         int ndefines, const char *src, const char *out, char *err, size_t cap)
{
    char arch_opt[96];
    const char *argv[32];
    int n = 0;
    snprintf(arch_opt, sizeof arch_opt, "--offload-arch=%s", arch);
    argv[n++] = clang;
    argv[n++] = "-x";
    argv[n++] = "hip";
    argv[n++] = arch_opt;
    argv[n++] = "-nogpulib";
    argv[n++] = "-nogpuinc";
    argv[n++] = "--cuda-device-only";
    argv[n++] = "--no-gpu-bundle-output";
    argv[n++] = "-O3";
    for (int i = 0; i < ndefines && n < 26; ++i) argv[n++] = defines[i];
    argv[n++] = "-o";
    argv[n++] = out;
    argv[n++] = src;
    argv[n] = NULL;
    return run_child(argv, err, cap);
}

int kiln_aot_amd_compiler_supports(const char *target, const char *scratch_dir, char *compiler,
                                   size_t cap)
{
    char clang[256], tried[1024], src[PATH_CAP], out[PATH_CAP], name[96], err[256];
    static const char probe[] =
        "extern \"C\" __attribute__((global)) void kiln_probe(int *x) { *x = 1; }\n";
    if (kiln_fs_mkdirs(scratch_dir) != 0 || find_clang(scratch_dir, clang, sizeof clang, tried,
                                                       sizeof tried) != 0)
        return -1;
    snprintf(compiler, cap, "%s", clang);
    snprintf(name, sizeof name, "probe_%s.hip", target);
    join(src, sizeof src, scratch_dir, name);
    snprintf(name, sizeof name, "probe_%s.hsaco", target);
    join(out, sizeof out, scratch_dir, name);
    if (kiln_fs_write_atomic(src, probe, sizeof probe - 1, err, sizeof err) != 0) return 0;
    return clang_compile(clang, target, NULL, 0, src, out, err, sizeof err) == 0 ? 1 : 0;
}

/* ---- one object --------------------------------------------------------------------- */

/* The runtime compiler of a vendor's driver, or why this build has none. */
static kiln_status driver_for(kiln_vendor vendor, const kiln_gpu_driver **out)
{
    int nvidia = vendor == KILN_VENDOR_NVIDIA;
    *out = kiln_gpu_driver_for(nvidia ? KILN_BACKEND_CUDA : KILN_BACKEND_HIP);
    KILN_FAIL_IF(!*out, KILN_BACKEND_UNAVAILABLE,
                 "%s targets are compiled by %s, and this build leaves the %s backend out "
                 "(configure with -DKILN_WITH_%s=ON)",
                 nvidia ? "NVIDIA" : "AMD", nvidia ? "NVRTC" : "hipRTC",
                 nvidia ? "cuda" : "hip", nvidia ? "CUDA" : "HIP");
    return KILN_OK;
}

static kiln_status compile_job(aot_build *b, aot_job *j, void **image, size_t *len)
{
    kiln_gpu_defines defs;
    int nd = kiln_gpu_variant_defines(&j->v, &defs);
    const char *file = kiln_gpu_variant_file(&j->v);
    const char *text;
    char name[160];
    snprintf(name, sizeof name, "%s.cu", j->key);
    KILN_FORWARD(kiln_kernel_source(file, &text, NULL));
    if (j->t->vendor == KILN_VENDOR_NVIDIA || !b->clang[0]) {
        const kiln_gpu_driver *drv;
        KILN_FORWARD(driver_for(j->t->vendor, &drv));
        return kiln_gpu_compile(drv, text, name, j->t->compile_arch, defs.ptr, nd, image, len);
    }
    {
        char src_dir[PATH_CAP], src[PATH_CAP], tdir[PATH_CAP], tmp[PATH_CAP], err[512];
        char errbuf[512];
        join(src_dir, sizeof src_dir, b->out_dir, ".src");
        join(src, sizeof src, src_dir, file);
        join(tdir, sizeof tdir, b->out_dir, j->t->name);
        snprintf(name, sizeof name, "%s.hsaco.tmp", j->key);
        join(tmp, sizeof tmp, tdir, name);
        if (clang_compile(b->clang, j->t->compile_arch, defs.ptr, nd, src, tmp, err,
                          sizeof err) != 0)
            return kiln_fail(KILN_COMPILE_ERROR, "%s could not compile %s for %s: %s", b->clang,
                             j->key, j->t->name, err);
        if (kiln_fs_read(tmp, image, len, errbuf, sizeof errbuf) != 0) {
            kiln_fs_remove(tmp);
            return kiln_fail(KILN_IO_ERROR, "cannot read %s: %s", tmp, errbuf);
        }
        kiln_fs_remove(tmp);
        return KILN_OK;
    }
}

static void run_job(aot_build *b, aot_job *j)
{
    void *image = NULL;
    size_t len = 0;
    kiln_status st = kiln_kernel_source_hash(kiln_gpu_variant_file(&j->v), j->source_hash);
    if (st == KILN_OK) st = compile_job(b, j, &image, &len);
    if (st == KILN_OK)
        st = kiln_code_object_inspect(image, len, kiln_gpu_variant_kernel(&j->v), &j->info);
    if (st == KILN_OK) st = kiln_code_object_check(j->t, j->key, block_threads(&j->v), &j->info);
    if (st == KILN_OK) {
        char dir[PATH_CAP], path[PATH_CAP], name[160], err[512];
        join(dir, sizeof dir, b->out_dir, j->t->name);
        snprintf(name, sizeof name, "%s.%s.%s", j->key, j->source_hash,
                 j->t->vendor == KILN_VENDOR_NVIDIA ? "cubin" : "hsaco");
        join(path, sizeof path, dir, name);
        if (kiln_fs_write_atomic(path, image, len, err, sizeof err) != 0)
            st = kiln_fail(KILN_IO_ERROR, "cannot write %s: %s", path, err);
        else
            kiln_aot_remove_stale(dir, j->key, name); /* an earlier build's, other sources */
        j->bytes = len;
    }
    free(image);
    j->status = st;
    snprintf(j->message, sizeof j->message, "%s", st == KILN_OK ? "" : kiln_last_error());
}

static void worker(void *arg)
{
    aot_build *b = arg;
    for (;;) {
        aot_job *j;
        kiln_mutex_lock(b->lock);
        j = b->next < b->count ? &b->jobs[b->next++] : NULL;
        kiln_mutex_unlock(b->lock);
        if (!j) return;
        run_job(b, j);
        kiln_mutex_lock(b->lock);
        ++b->done;
        if (j->status != KILN_OK) ++b->failed;
        if (b->progress) {
            kiln_aot_progress p;
            p.done = b->done;
            p.total = b->count;
            p.failed = b->failed;
            p.target = j->t->name;
            p.variant = j->key;
            p.status = j->status;
            p.message = j->message;
            p.seconds = (double)(kiln_time_ns() - b->start_ns) / 1e9;
            b->progress(&p, b->user);
        }
        kiln_mutex_unlock(b->lock);
    }
}

/* ---- the build ---------------------------------------------------------------------- */

static int resolve_jobs(const char *env_or_arg_text, int max_jobs)
{
    char env[32];
    if (max_jobs > 0) return max_jobs;
    if (kiln_env_get("MAX_JOBS", env, sizeof env)) {
        int v = atoi(env);
        if (v > 0) return v;
    }
    (void)env_or_arg_text;
    return kiln_cpu_count();
}

static kiln_status write_manifest(const aot_build *b, const kiln_target *const *targets,
                                  size_t ntargets)
{
    kiln_json j;
    char path[PATH_CAP], err[512];
    kiln_status st = KILN_OK;
    kiln_json_init(&j);
    kiln_json_object_begin(&j, NULL);
    kiln_json_string(&j, "kiln_version", kiln_version_string());
    kiln_json_string(&j, "amd_compiler", b->clang[0] ? b->clang : "hiprtc");
    kiln_json_array_begin(&j, "targets");
    for (size_t i = 0; i < ntargets; ++i) kiln_json_string(&j, NULL, targets[i]->name);
    kiln_json_array_end(&j);
    kiln_json_array_begin(&j, "objects");
    for (size_t i = 0; i < b->count; ++i) {
        const aot_job *o = &b->jobs[i];
        char file[200];
        if (o->status != KILN_OK) continue;
        snprintf(file, sizeof file, "%s/%s.%s.%s", o->t->name, o->key, o->source_hash,
                 o->t->vendor == KILN_VENDOR_NVIDIA ? "cubin" : "hsaco");
        kiln_json_object_begin(&j, NULL);
        kiln_json_string(&j, "target", o->t->name);
        kiln_json_string(&j, "variant", o->key);
        kiln_json_string(&j, "tier", kiln_gpu_variant_tier_name(&o->v));
        kiln_json_string(&j, "kernel", kiln_gpu_variant_kernel(&o->v));
        kiln_json_string(&j, "file", file);
        kiln_json_string(&j, "source_hash", o->source_hash);
        kiln_json_int(&j, "bytes", (int64_t)o->bytes);
        kiln_json_int(&j, "registers", o->info.registers);
        kiln_json_int(&j, "agprs", o->info.agprs);
        kiln_json_int(&j, "sgprs", o->info.sgprs);
        kiln_json_int(&j, "shared_bytes", o->info.shared_bytes);
        kiln_json_int(&j, "dynamic_shared_bytes", kiln_gpu_variant_dynamic_smem(&o->v));
        kiln_json_int(&j, "stack_bytes", o->info.stack_bytes);
        kiln_json_int(&j, "wave_size", o->info.wave_size);
        kiln_json_int(&j, "block_threads", block_threads(&o->v));
        kiln_json_int(&j, "waves_per_simd",
                      kiln_target_waves_per_simd(o->t, o->info.registers, o->info.shared_bytes,
                                                 block_threads(&o->v)));
        {
            /* What the compiler was given: the embedded file (OUT/.src/ for clang) and the
             * variant's options, the same pair a JIT compile hands to hipRTC / NVRTC. */
            kiln_gpu_defines defs;
            char options[256] = "";
            int nd = kiln_gpu_variant_defines(&o->v, &defs);
            for (int d = 0; d < nd; ++d) {
                size_t used = strlen(options);
                snprintf(options + used, sizeof options - used, "%s%s", d ? " " : "",
                         defs.ptr[d]);
            }
            kiln_json_string(&j, "source", kiln_gpu_variant_file(&o->v));
            kiln_json_string(&j, "options", options);
        }
        kiln_json_object_end(&j);
    }
    kiln_json_array_end(&j);
    kiln_json_object_end(&j);
    join(path, sizeof path, b->out_dir, "manifest.json");
    if (j.oom)
        st = kiln_fail(KILN_OUT_OF_MEMORY, "cannot build the manifest");
    else if (kiln_fs_write_atomic(path, j.buf, j.len, err, sizeof err) != 0)
        st = kiln_fail(KILN_IO_ERROR, "cannot write %s: %s", path, err);
    kiln_json_free(&j);
    return st;
}

/* Creates OUT/<target>/ for every target and, for clang, OUT/.src/ with the sources. */
static kiln_status prepare_dirs(aot_build *b, const kiln_target *const *targets, size_t n,
                                int need_amd)
{
    char dir[PATH_CAP], err[512];
    KILN_FAIL_IF(kiln_fs_mkdirs(b->out_dir) != 0, KILN_IO_ERROR, "cannot create %s",
                 b->out_dir);
    for (size_t i = 0; i < n; ++i) {
        join(dir, sizeof dir, b->out_dir, targets[i]->name);
        KILN_FAIL_IF(kiln_fs_mkdirs(dir) != 0, KILN_IO_ERROR, "cannot create %s", dir);
    }
    join(dir, sizeof dir, b->out_dir, ".src");
    KILN_FAIL_IF(kiln_fs_mkdirs(dir) != 0, KILN_IO_ERROR, "cannot create %s", dir);
    if (need_amd) {
        char tried[1024];
        if (find_clang(dir, b->clang, sizeof b->clang, tried, sizeof tried) != 0) {
            const kiln_gpu_driver *hip = kiln_gpu_driver_for(KILN_BACKEND_HIP);
            b->clang[0] = '\0';
            if (!hip || hip->load_compiler() != KILN_OK)
                return kiln_fail(KILN_BACKEND_UNAVAILABLE,
                                 "no AMD compiler: tried clang (%s) and hipRTC (%s); install "
                                 "clang 18+ or set KILN_CLANG",
                                 tried, hip ? kiln_last_error() : "the hip backend is not built");
        }
        if (b->clang[0]) {
            /* One tiny probe per target turns "this clang does not know gfx950" into one
             * message instead of a failure per variant. */
            for (size_t i = 0; i < n; ++i) {
                char name[64];
                if (targets[i]->vendor != KILN_VENDOR_AMD) continue;
                KILN_FAIL_IF(kiln_aot_amd_compiler_supports(targets[i]->compile_arch, dir, name,
                                                            sizeof name) != 1,
                             KILN_UNSUPPORTED,
                             "%s cannot compile for %s (a tiny probe kernel failed); use a "
                             "clang that knows the target (KILN_CLANG) or drop it from the list",
                             b->clang, targets[i]->name);
            }
        }
        if (b->clang[0]) {
            static const char *const files[] = {"attention.cu", "attention_wmma.cu", "combine.cu",
                                                "activation.cu"};
            for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
                const char *text;
                size_t len;
                char path[PATH_CAP];
                KILN_FORWARD(kiln_kernel_source(files[i], &text, &len));
                join(path, sizeof path, dir, files[i]);
                KILN_FAIL_IF(kiln_fs_write_atomic(path, text, len, err, sizeof err) != 0,
                             KILN_IO_ERROR, "cannot write %s: %s", path, err);
            }
        }
    }
    return KILN_OK;
}

kiln_status kiln_aot_build_filtered(const char *targets_list, const char *out_dir,
                                    int max_jobs, const char *filter,
                                    kiln_aot_progress_fn progress, void *user)
{
    const kiln_target *targets[MAX_TARGETS];
    size_t ntargets = 0, per = 0, n = 0;
    int need_nvidia = 0, need_amd = 0, threads;
    aot_build b;
    kiln_status st;
    kiln_gpu_variant *vars = NULL;

    KILN_FAIL_IF(!out_dir || !out_dir[0], KILN_INVALID_ARGUMENT, "no output directory");
    KILN_FORWARD(kiln_targets_parse(targets_list, targets, MAX_TARGETS, &ntargets));
    memset(&b, 0, sizeof b);
    b.out_dir = out_dir;
    b.progress = progress;
    b.user = user;
    for (size_t i = 0; i < ntargets; ++i) {
        need_nvidia |= targets[i]->vendor == KILN_VENDOR_NVIDIA;
        need_amd |= targets[i]->vendor == KILN_VENDOR_AMD;
        per += kiln_gpu_variant_list(targets[i], NULL, 0);
    }
    if (need_nvidia) {
        const kiln_gpu_driver *cuda;
        KILN_FORWARD(driver_for(KILN_VENDOR_NVIDIA, &cuda));
        KILN_FORWARD(cuda->load_compiler());
    }
    KILN_FORWARD(prepare_dirs(&b, targets, ntargets, need_amd));

    b.jobs = calloc(per ? per : 1, sizeof *b.jobs);
    KILN_FAIL_IF(!b.jobs, KILN_OUT_OF_MEMORY, "cannot plan %zu objects", per);
    for (size_t i = 0; i < ntargets; ++i) {
        size_t nv = kiln_gpu_variant_list(targets[i], NULL, 0);
        free(vars);
        vars = calloc(nv ? nv : 1, sizeof *vars);
        if (!vars) {
            free(b.jobs);
            return kiln_fail(KILN_OUT_OF_MEMORY, "cannot list variants");
        }
        kiln_gpu_variant_list(targets[i], vars, nv);
        for (size_t k = 0; k < nv; ++k) {
            aot_job *j = &b.jobs[n];
            j->t = targets[i];
            j->v = vars[k];
            kiln_gpu_variant_key(&vars[k], j->key, sizeof j->key);
            if (filter && filter[0] && !strstr(j->key, filter)) continue;
            ++n;
        }
    }
    free(vars);
    b.count = n;

    b.lock = kiln_mutex_create();
    if (!b.lock) {
        free(b.jobs);
        return kiln_fail(KILN_OUT_OF_MEMORY, "cannot create a mutex");
    }
    threads = resolve_jobs(NULL, max_jobs);
    if ((size_t)threads > n) threads = n ? (int)n : 1;
    b.start_ns = kiln_time_ns();
    {
        kiln_thread **pool = calloc((size_t)threads, sizeof *pool);
        int started = 0;
        for (int i = 0; pool && i < threads; ++i)
            if ((pool[i] = kiln_thread_start(worker, &b)) != NULL) ++started;
        if (started == 0) worker(&b); /* no threads: build on this one */
        for (int i = 0; pool && i < threads; ++i)
            if (pool[i]) kiln_thread_join(pool[i]);
        free(pool);
    }
    kiln_mutex_free(b.lock);

    st = write_manifest(&b, targets, ntargets);
    if (st == KILN_OK && b.failed) {
        for (size_t i = 0; i < b.count; ++i)
            if (b.jobs[i].status != KILN_OK) {
                st = kiln_fail(b.jobs[i].status, "%zu of %zu objects failed; first: %s",
                               b.failed, b.count, b.jobs[i].message);
                break;
            }
    }
    free(b.jobs);
    return st;
}

kiln_status kiln_aot_build(const char *targets_list, const char *out_dir, int max_jobs,
                           kiln_aot_progress_fn progress, void *user)
{
    return kiln_aot_build_filtered(targets_list, out_dir, max_jobs, NULL, progress, user);
}
