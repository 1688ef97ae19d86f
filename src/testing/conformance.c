/* The conformance driver (src/testing/conformance.h). */
#include "conformance.h"


uint64_t tc_next(tc_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tc_uniform(tc_rng *r) { /* [-1, 1) */
    return (double)(tc_next(r) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

int64_t tc_below(tc_rng *r, int64_t n) { return (int64_t)(tc_next(r) % (uint64_t)n); }

int tc_cpu_has(const char *level) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (strcmp(level, "avx2") == 0)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (strcmp(level, "avx512") == 0)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
    if (strcmp(level, "avx512bf16") == 0)
        return tc_cpu_has("avx512") && __builtin_cpu_supports("avx512bf16");
#endif
    return strcmp(level, "scalar") == 0;
}

int tc_targets(const char *which, tc_target *t) {
    static const char *const levels[] = {"scalar", "avx2", "avx512", "avx512bf16"};
    char want[16] = "";
    int n = 0, cpu = 1, gpu = 1;
    if (which && strcmp(which, "cpu") == 0) gpu = 0;
    if (which && strcmp(which, "gpu") == 0) cpu = 0;
    kiln_env_get("KILN_TEST_BACKEND", want, sizeof want);
    if (cpu)
        for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
            if (tc_cpu_has(levels[i])) t[n++] = (tc_target){KILN_BACKEND_CPU, levels[i], 1};
    if (gpu) {
        if (strcmp(want, "cuda") == 0) {
            t[n++] = (tc_target){KILN_BACKEND_CUDA, NULL, 1};
        } else if (strcmp(want, "hip") == 0) {
            t[n++] = (tc_target){KILN_BACKEND_HIP, NULL, 1};
        } else if (strcmp(want, "cpu") != 0) {
            t[n++] = (tc_target){KILN_BACKEND_CUDA, NULL, 0};
            t[n++] = (tc_target){KILN_BACKEND_HIP, NULL, 0};
        }
    }
    return n;
}

/* Runs body(env) once per target this machine has; returns the exit code for ctest. */
int tc_main(int argc, char **argv, const char *program, void (*body)(tc_env *)) {
    tc_target targets[8];
    int n = tc_targets(argc > 1 ? argv[1] : NULL, targets);
    for (int i = 0; i < n; i++) {
        tc_env env;
        memset(&env, 0, sizeof env);
        env.backend = targets[i].backend;
        env.simd = targets[i].simd;
        snprintf(env.label, sizeof env.label, "%s%s%s", kiln_backend_name(env.backend),
                 env.simd ? "/" : "", env.simd ? env.simd : "");
        if (env.simd) kiln_env_set("KILN_CPU_SIMD", env.simd);
        kiln_status st = kiln_context_create(env.backend, 0, &env.ctx);
        if (env.simd) kiln_env_set("KILN_CPU_SIMD", NULL);
        if (st != KILN_OK) {
            if (targets[i].required) {
                check_case("%s", env.label);
                check_fail_(__FILE__, __LINE__, "kiln_context_create(%s) returned %s: %s",
                            env.label, kiln_status_name(st), kiln_last_error());
            } else {
                check_note_skip("%s: %s (%s)", env.label, kiln_status_name(st), kiln_last_error());
            }
            continue;
        }
        printf("%s: running on %s\n", program, env.label);
        fflush(stdout);
        long failures = check_state_.failures;
        uint64_t t0 = kiln_time_ns();
        body(&env);
        printf("%s: %s done in %.2f s, %ld failures\n", program, env.label,
               (double)(kiln_time_ns() - t0) * 1e-9, check_state_.failures - failures);
        kiln_context_free(env.ctx);
    }
    return check_finish(program);
}

double tc_nan_value(void) { return NAN; }

/*
 * Allocates a view of shape laid out in memory in the given order (outermost dimension
 * first; NULL = row-major) with pad extra elements after every dimension's extent, so pad
 * > 0 gives strides that are not a dense packing. Every element starts as NaN.
 */
int tc_tensor_make(tc_tensor *t, kiln_context *ctx, kiln_dtype dtype,
                                 int32_t rank, const int64_t *shape, const int *order,
                                 int64_t pad) {
    memset(t, 0, sizeof *t);
    kiln_tensor_init(&t->host);
    kiln_tensor_init(&t->dev);
    t->ctx = ctx;
    t->host.dtype = t->dev.dtype = dtype;
    t->host.rank = t->dev.rank = rank;
    int64_t running = 1;
    for (int l = rank - 1; l >= 0; l--) {
        int dim = order ? order[l] : l;
        t->host.shape[dim] = shape[dim];
        t->host.stride[dim] = running;
        running *= shape[dim] + pad;
    }
    memcpy(t->dev.shape, t->host.shape, sizeof t->host.shape);
    memcpy(t->dev.stride, t->host.stride, sizeof t->host.stride);
    t->elems = (size_t)(running > 0 ? running : 1);
    t->bytes = t->elems * kiln_dtype_size(dtype);
    t->host.data = malloc(t->bytes);
    t->dev.data = kiln_ctx_alloc(ctx, t->bytes);
    if (!t->host.data || !t->dev.data) {
        check_fail_(__FILE__, __LINE__, "cannot allocate %zu bytes", t->bytes);
        return -1;
    }
    for (size_t i = 0; i < t->elems; i++) {
        if (dtype == KILN_I32)
            ((int32_t *)t->host.data)[i] = -12345;
        else
            kiln_ref_store(dtype, t->host.data, (int64_t)i, tc_nan_value());
    }
    return 0;
}

void tc_tensor_free(tc_tensor *t) {
    free(t->host.data);
    if (t->dev.data) kiln_ctx_free(t->ctx, t->dev.data);
    memset(t, 0, sizeof *t);
}

/* Calls fn(offset, index, user) for every element of the view, in row-major index order. */
void tc_each(const kiln_tensor *t, void (*fn)(int64_t off, const int64_t *idx, void *u),
                           void *u) {
    int64_t idx[KILN_MAX_RANK] = {0};
    for (int32_t l = 0; l < t->rank; l++)
        if (t->shape[l] == 0) return;
    for (;;) {
        int64_t off = 0;
        for (int32_t l = 0; l < t->rank; l++) off += idx[l] * t->stride[l];
        fn(off, idx, u);
        int32_t l = t->rank - 1;
        while (l >= 0 && ++idx[l] == t->shape[l]) idx[l--] = 0;
        if (l < 0) return;
    }
}

void tc_fill_one_(int64_t off, const int64_t *idx, void *u) {
    tc_fill_ctx *f = u;
    (void)idx;
    double x = f->lo + (tc_uniform(f->rng) + 1.0) * 0.5 * (f->hi - f->lo);
    kiln_ref_store(f->t->dtype, f->t->data, off, x);
}

/* Random values in [lo, hi) over the view (rounded to the dtype); padding keeps its NaN. */
void tc_fill(tc_tensor *t, tc_rng *rng, double lo, double hi) {
    tc_fill_ctx f = {&t->host, rng, lo, hi};
    tc_each(&t->host, tc_fill_one_, &f);
}

int tc_upload(tc_tensor *t) {
    kiln_status st = kiln_ctx_copy_to_device(t->ctx, t->dev.data, t->host.data, t->bytes);
    if (st != KILN_OK) check_fail_(__FILE__, __LINE__, "copy to device: %s", kiln_last_error());
    return st == KILN_OK ? 0 : -1;
}

int tc_download(tc_tensor *t) {
    kiln_status st = kiln_ctx_copy_to_host(t->ctx, t->host.data, t->dev.data, t->bytes);
    if (st != KILN_OK) check_fail_(__FILE__, __LINE__, "copy to host: %s", kiln_last_error());
    return st == KILN_OK ? 0 : -1;
}

/* Tolerances on max |error| vs fp64 at unit-scale inputs (DESIGN.md, Testing). */
double tc_tolerance(kiln_dtype dtype) {
    switch (dtype) {
    case KILN_F32: return 1e-5;
    case KILN_F16: return 1e-3;
    case KILN_BF16: return 8e-3;
    default: return 0.0;
    }
}

static void tc_mark_one_(int64_t off, const int64_t *idx, void *u) {
    (void)idx;
    ((tc_marks *)u)->m[off] = 1;
}

void tc_marks_init(tc_marks *mk, const tc_tensor *t) {
    mk->n = t->elems;
    mk->m = calloc(t->elems, 1);
    if (mk->m) tc_each(&t->host, tc_mark_one_, mk);
}

/* Everything outside the view still holds its NaN poison: nothing wrote past the view. */
void tc_check_untouched(const tc_tensor *t, const tc_marks *mk, const char *name) {
    size_t es = kiln_dtype_size(t->host.dtype);
    unsigned char poison[4];
    kiln_ref_store(t->host.dtype, poison, 0, tc_nan_value());
    check_state_.checks++;
    for (size_t i = 0; i < mk->n; i++) {
        if (mk->m[i] != 0) continue;
        if (memcmp((const unsigned char *)t->host.data + i * es, poison, es) != 0) {
            check_fail_(__FILE__, __LINE__, "%s: element %zu outside the view was written", name, i);
            return;
        }
    }
}

/* ---- dispatch report ------------------------------------------------------------------ */

/* Checks kiln_last_dispatch() names this backend and a variant key starting with prefix,
 * naming a head dim >= head_dim (when > 0) and holding ".<mode>" when mode is not NULL. */
void tc_check_dispatch(tc_env *env, kiln_dtype dtype, int bf16_level,
                                     const char *prefix, int64_t head_dim, const char *mode,
                                     int32_t asked_splits) {
    kiln_dispatch d;
    kiln_dispatch_init(&d);
    CHECK_OK(kiln_last_dispatch(&d));
    CHECK_EQ(d.backend, env->backend);
    d.variant[sizeof d.variant - 1] = '\0';
    d.target[sizeof d.target - 1] = '\0';
    d.tier[sizeof d.tier - 1] = '\0';
    check_state_.checks++;
    /* Decode-shaped attention may run on the decode kernel: attn_decode.<as attn_fwd>. */
    const int decode = strncmp(prefix, "attn_fwd.", 9) == 0 &&
                       strncmp(d.variant, "attn_decode.", 12) == 0;
    if (decode ? strncmp(d.variant + 12, prefix + 9, strlen(prefix) - 9) != 0
               : strncmp(d.variant, prefix, strlen(prefix)) != 0)
        check_fail_(__FILE__, __LINE__, "dispatch variant \"%s\" does not start with \"%s\"",
                    d.variant, prefix);
    if (head_dim > 0) {
        /* A kernel may serve a range of head dims (d80 on a d128 kernel): the key names the
         * kernel, which must cover the problem's head dim. */
        const char *p = strstr(d.variant, ".d");
        long kd = p ? strtol(p + 2, NULL, 10) : 0;
        check_state_.checks++;
        if (kd < head_dim || kd > 256)
            check_fail_(__FILE__, __LINE__,
                        "dispatch variant \"%s\" names no head dim covering d%lld",
                        d.variant, (long long)head_dim);
    }
    if (mode) {
        char tok[32];
        snprintf(tok, sizeof tok, ".%s", mode);
        CHECK_STR_CONTAINS(d.variant, tok);
    }
    CHECK(d.tier[0] != '\0');
    CHECK(d.target[0] != '\0');
    if (asked_splits >= 0) {
        CHECK_GE(d.num_splits, 1);
        if (asked_splits > 0) CHECK_LE(d.num_splits, asked_splits);
    }
    if (env->simd && !env->simd_mismatch) {
        /* The SIMD level asked for is the one that ran: the target names it last. Reported
         * once per target; every later case would say the same. avx512bf16 changes only the
         * bf16 kernels of ops with dot products (bf16_level); the rest run the avx512 ones. */
        const int plain512 = strcmp(env->simd, "avx512bf16") == 0 &&
                             (dtype != KILN_BF16 || !bf16_level);
        const char *want = plain512 ? "avx512" : env->simd;
        size_t tl = strlen(d.target), sl = strlen(want);
        if (strcmp(want, "scalar") != 0) {
            check_state_.checks++;
            if (tl < sl || strcmp(d.target + tl - sl, want) != 0) {
                check_fail_(__FILE__, __LINE__,
                            "KILN_CPU_SIMD=%s with %s but the dispatch target is \"%s\" "
                            "(reported once per target)",
                            env->simd, kiln_dtype_name(dtype), d.target);
                env->simd_mismatch = 1;
            }
        }
    }
    if (!env->reported_target) {
        printf("  %s: target %s, tier %s, e.g. %s\n", env->label, d.target, d.tier, d.variant);
        env->reported_target = 1;
    }
}

tc_attn_case tc_attn_defaults(kiln_attn_mode mode, kiln_dtype dtype) {
    tc_attn_case c;
    memset(&c, 0, sizeof c);
    c.mode = mode;
    c.dtype = dtype;
    c.batch = 1;
    c.hq = c.hkv = 2;
    c.d = 64;
    c.sq = c.sk = 16;
    c.wl = c.wr = -1;
    c.lse = 1;
    c.num_splits = 1;
    c.page_size = 16;
    c.seed = 1;
    return c;
}

const char *tc_mode_name(kiln_attn_mode m) {
    return m == KILN_MODE_FIXED ? "fixed" : m == KILN_MODE_VARLEN ? "varlen" : "paged";
}

void tc_describe(const tc_env *env, const tc_attn_case *c, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s %s %s b%lld hq%lld hkv%lld d%lld", env->label,
                     tc_mode_name(c->mode), kiln_dtype_name(c->dtype), (long long)c->batch,
                     (long long)c->hq, (long long)c->hkv, (long long)c->d);
    size_t at = n > 0 ? (size_t)n : 0;
#define TC_APPEND(...)                                                                       \
    do {                                                                                     \
        if (at < cap) {                                                                      \
            int m_ = snprintf(buf + at, cap - at, __VA_ARGS__);                              \
            if (m_ > 0) at += (size_t)m_;                                                    \
        }                                                                                    \
    } while (0)
    if (c->mode == KILN_MODE_FIXED || (c->mode == KILN_MODE_PAGED && !c->prefill))
        TC_APPEND(" sq%lld", (long long)c->sq);
    if (c->mode == KILN_MODE_FIXED) TC_APPEND(" sk%lld", (long long)c->sk);
    if (c->mode != KILN_MODE_FIXED) {
        TC_APPEND(" lens");
        for (int64_t b = 0; b < c->batch; b++) {
            if (c->mode == KILN_MODE_VARLEN || c->prefill)
                TC_APPEND(" %d/%d", c->lq[b], c->lk[b]);
            else
                TC_APPEND(" %d", c->lk[b]);
        }
    }
    if (c->mode == KILN_MODE_PAGED)
        TC_APPEND(" page%d%s%s%s%s", c->page_size, c->shuffle ? " shuffled" : "",
                  c->prefill ? " prefill" : " decode", c->nan_tail ? " nan-tail" : "",
                  c->shared_page ? " shared-page" : "");
    if (c->extra_rows) TC_APPEND(" extra_rows%lld", (long long)c->extra_rows);
    if (c->layout) TC_APPEND(" layout%d", c->layout);
    if (c->causal) TC_APPEND(" causal");
    if (c->wl >= 0 || c->wr >= 0) TC_APPEND(" window(%d,%d)", c->wl, c->wr);
    if (c->softcap > 0) TC_APPEND(" softcap%g", (double)c->softcap);
    if (c->scale != 0) TC_APPEND(" scale%g", (double)c->scale);
    if (c->alibi) TC_APPEND(" alibi%s", c->alibi == 2 ? "[b,h]" : "[h]");
    TC_APPEND(" lse%d splits%d%s seed%llu", c->lse, c->num_splits, c->caller_ws ? " ws" : "",
              (unsigned long long)c->seed);
    if (c->nonfinite) TC_APPEND(" with %s", tc_nonfinite_name(c->nonfinite));
#undef TC_APPEND
}

/* Dense q/out layout for [b, s, h, d] views: memory order and padding. */
void tc_layout_of(int layout, const int **order, int64_t *pad) {
    static const int bhsd[4] = {0, 2, 1, 3};
    *order = (layout == TC_BHSD || layout == TC_BHSD_PAD) ? bhsd : NULL;
    *pad = (layout == TC_PADDED || layout == TC_BHSD_PAD) ? 3 : 0;
}

/* Compares out (and lse) of the host problem p with the reference, marking what it saw. */
void tc_compare_attention(const kiln_attn_problem *p, const double *ref_out,
                                        const double *ref_lse, tc_marks *mo, tc_marks *ml,
                                        double tol, const char *what) {
    tc_cmp co = {0, {0, 0, 0, 0}, 0, 0, 0}, cl = co;
    for (int64_t b = 0; b < p->batch; b++) {
        const int64_t sq = kiln_ref_seqlen_q(p, b), row0 = kiln_ref_row0(p, b);
        for (int64_t i = 0; i < sq; i++)
            for (int64_t h = 0; h < p->heads_q; h++) {
                const int64_t obase = (p->cu_seqlens_q ? row0 * p->o_stride_row
                                                       : b * p->o_stride_batch) +
                                      i * p->o_stride_row + h * p->o_stride_head;
                for (int64_t d = 0; d < p->head_dim; d++) {
                    const double got = kiln_ref_load(p->dtype, p->out, obase + d);
                    const double ref = ref_out[((row0 + i) * p->heads_q + h) * p->head_dim + d];
                    const double err = fabs(got - ref);
                    mo->m[obase + d] = 2;
                    if (!tc_nonfinite_close(got, ref, tol)) co.bad++;
                    if (!(err <= co.max_err)) {
                        co.max_err = isnan(err) ? INFINITY : err;
                        co.worst[0] = b, co.worst[1] = i, co.worst[2] = h, co.worst[3] = d;
                        co.worst_got = got, co.worst_ref = ref;
                    }
                }
                if (p->lse && ref_lse) {
                    const int64_t lo = (p->cu_seqlens_q ? row0 * p->lse_stride_row
                                                        : b * p->lse_stride_batch) +
                                       h * p->lse_stride_head + i * p->lse_stride_row;
                    const double got = (double)p->lse[lo];
                    const double ref = ref_lse[(row0 + i) * p->heads_q + h];
                    double err = (isinf(ref) && got == ref) ? 0.0 : fabs(got - ref);
                    ml->m[lo] = 2;
                    if (!tc_nonfinite_close(got, ref, tol)) cl.bad++;
                    if (!(err <= cl.max_err)) {
                        cl.max_err = isnan(err) ? INFINITY : err;
                        cl.worst[0] = b, cl.worst[1] = i, cl.worst[2] = h;
                        cl.worst_got = got, cl.worst_ref = ref;
                    }
                }
            }
    }
    check_state_.checks++;
    if (co.bad)
        check_fail_(__FILE__, __LINE__,
                    "%s out: %lld elements off by more than %g; max |err| %.3g at b=%lld i=%lld "
                    "h=%lld d=%lld (got %.9g, fp64 %.9g)",
                    what, (long long)co.bad, tol, co.max_err, (long long)co.worst[0],
                    (long long)co.worst[1], (long long)co.worst[2], (long long)co.worst[3],
                    co.worst_got, co.worst_ref);
    if (p->lse && ref_lse) {
        check_state_.checks++;
        if (cl.bad)
            check_fail_(__FILE__, __LINE__,
                        "%s lse: %lld entries off by more than %g; max |err| %.3g at b=%lld "
                        "i=%lld h=%lld (got %.9g, fp64 %.9g)",
                        what, (long long)cl.bad, tol, cl.max_err, (long long)cl.worst[0],
                        (long long)cl.worst[1], (long long)cl.worst[2], cl.worst_got,
                        cl.worst_ref);
    }
}

/* Breaks one argument in a way the contract rejects in every mode; which one is drawn from
 * rng among those that apply. Integer tensors are broken in their host copy, before upload,
 * and only where the library can read them (host_data: the CPU); a GPU call cannot check
 * device-resident contents without synchronising. Returns a description, or NULL if the
 * drawn corruption does not apply to this case. */
const char *tc_corrupt(const tc_attn_case *c, tc_rng *rng, tc_attn_args *a,
                                     int host_data) {
    const int64_t hd = a->q->dev.shape[a->q->dev.rank - 1];
    const int64_t which = tc_below(rng, 16);
    if (!host_data && which >= 9 && which <= 13) return NULL;
    switch (which) {
    case 0: {
        kiln_tensor *t[4] = {&a->q->dev, &a->k->dev, &a->v->dev, &a->out->dev};
        for (int i = 0; i < 4; i++) t[i]->shape[t[i]->rank - 1] = hd - 4;
        return "head dim not a multiple of 8";
    }
    case 1: {
        /* An empty view's strides are never read, so they are not checked. */
        int64_t nk = 1;
        for (int32_t i = 0; i < a->k->dev.rank; i++) nk *= a->k->dev.shape[i];
        if (nk == 0) return NULL;
        a->k->dev.stride[a->k->dev.rank - 1] = 2;
        return "k's last dim not contiguous";
    }
    case 2: {
        /* Empty views span no bytes, so they overlap nothing. */
        int64_t nq = 1, no = 1;
        for (int32_t i = 0; i < a->q->dev.rank; i++) nq *= a->q->dev.shape[i];
        for (int32_t i = 0; i < a->out->dev.rank; i++) no *= a->out->dev.shape[i];
        if (nq == 0 || no == 0) return NULL;
        a->out->dev.data = a->q->dev.data;
        return "out aliases q";
    }
    case 3: a->prm->window_left = -2 - (int32_t)tc_below(rng, 5); return "window_left < -1";
    case 4: a->prm->softcap = -0.5f; return "softcap < 0";
    case 5: a->prm->num_splits = -1 - (int32_t)tc_below(rng, 3); return "num_splits < 0";
    case 6:
        if (c->hq % 3 == 0) return NULL;
        a->k->dev.shape[a->k->dev.rank - 2] = a->v->dev.shape[a->v->dev.rank - 2] = 3;
        return "heads_q not a multiple of heads_kv";
    case 7: a->v->dev.dtype = c->dtype == KILN_F16 ? KILN_BF16 : KILN_F16; return "v dtype";
    case 8:
        if (!c->lse) return NULL;
        a->lse->dev.dtype = KILN_F16;
        return "lse not f32";
    case 9:
        if (!a->cuq->host.data) return NULL;
        ((int32_t *)a->cuq->host.data)[c->batch] = (int32_t)a->q->dev.shape[0] + 1;
        return "cu_seqlens_q last entry > total_q";
    case 10:
        if (!a->cuq->host.data || c->batch < 1) return NULL;
        ((int32_t *)a->cuq->host.data)[0] = 1;
        return "cu_seqlens_q[0] != 0";
    case 11:
        if (!a->cuk->host.data || c->batch < 2) return NULL;
        ((int32_t *)a->cuk->host.data)[1] = ((int32_t *)a->cuk->host.data)[2] + 1;
        return "cu_seqlens_k decreasing";
    case 12: {
        if (!a->bt->host.data || c->batch < 1) return NULL;
        /* An entry a sequence uses: columns past a sequence's end are never read. */
        int32_t *bt = a->bt->host.data;
        const int64_t b = tc_below(rng, c->batch), P = a->k->dev.shape[1];
        const int64_t used = (c->lk[b] + P - 1) / P;
        if (used == 0) return NULL;
        bt[b * a->bt->host.stride[0] + tc_below(rng, used)] =
            tc_below(rng, 2) ? (int32_t)a->k->dev.shape[0] : -1;
        return "block_table entry outside [0, num_pages)";
    }
    case 13: {
        if (!a->slk->host.data || c->batch < 1) return NULL;
        int64_t b = tc_below(rng, c->batch);
        ((int32_t *)a->slk->host.data)[b] =
            (int32_t)(a->bt->host.shape[1] * a->k->dev.shape[1] + 1);
        return "seqlens_k beyond the table's capacity";
    }
    case 14:
        if (c->mode == KILN_MODE_FIXED || c->mode == KILN_MODE_PAGED) {
            a->out->dev.shape[0] += 1;
            return "out shape differs from q";
        }
        *a->max_k = -1;
        return "max_seqlen_k negative";
    default:
        a->q->dev.dtype = KILN_I32;
        a->k->dev.dtype = a->v->dev.dtype = a->out->dev.dtype = KILN_I32;
        return "i32 attention";
    }
}

void tc_attn_run(tc_env *env, const tc_attn_case *c) {
    char what[400];
    tc_describe(env, c, what, sizeof what);
    check_case("%s", what);
    check_note_ran();
    const long failures_before = check_state_.failures;

    kiln_context *ctx = env->ctx;
    tc_rng rng = {c->seed * 7919u + (uint64_t)c->d * 31u + (uint64_t)c->dtype};
    const int packed_q = c->mode == KILN_MODE_VARLEN || (c->mode == KILN_MODE_PAGED && c->prefill);
    const int64_t B = c->batch, D = c->d;
    int64_t total_q = 0, total_k = 0, max_lq = 0, max_lk = 0;
    for (int64_t b = 0; b < B; b++) {
        total_q += c->lq[b];
        total_k += c->lk[b];
        if (c->lq[b] > max_lq) max_lq = c->lq[b];
        if (c->lk[b] > max_lk) max_lk = c->lk[b];
    }
    if (c->mode == KILN_MODE_FIXED) max_lq = c->sq, max_lk = c->sk;
    if (c->mode == KILN_MODE_PAGED && !c->prefill) max_lq = c->sq;

    tc_tensor q, k, v, out, lse, cuq, cuk, bt, slk, alibi, ws;
    memset(&lse, 0, sizeof lse);
    memset(&cuq, 0, sizeof cuq);
    memset(&cuk, 0, sizeof cuk);
    memset(&bt, 0, sizeof bt);
    memset(&slk, 0, sizeof slk);
    memset(&alibi, 0, sizeof alibi);
    memset(&ws, 0, sizeof ws);
    const int *order;
    int64_t pad;
    tc_layout_of(c->layout, &order, &pad);
    static const int hsd3[3] = {1, 0, 2}; /* packed [rows, h, d] stored head-major */
    const int *order3 = order ? hsd3 : NULL;

    /* q and out */
    if (packed_q) {
        int64_t shp[3] = {total_q + c->extra_rows, c->hq, D};
        tc_tensor_make(&q, ctx, c->dtype, 3, shp, order3, pad);
        tc_tensor_make(&out, ctx, c->dtype, 3, shp, order3, pad);
    } else {
        int64_t shp[4] = {B, max_lq, c->hq, D};
        tc_tensor_make(&q, ctx, c->dtype, 4, shp, order, pad);
        tc_tensor_make(&out, ctx, c->dtype, 4, shp, order, pad);
    }
    tc_fill(&q, &rng, -1, 1);

    /* k and v */
    tc_pages pages = {NULL, 0, 0};
    if (c->mode == KILN_MODE_FIXED) {
        int64_t shp[4] = {B, c->sk, c->hkv, D};
        tc_tensor_make(&k, ctx, c->dtype, 4, shp, order, pad);
        tc_tensor_make(&v, ctx, c->dtype, 4, shp, order, pad);
    } else if (c->mode == KILN_MODE_VARLEN) {
        int64_t shp[3] = {total_k + c->extra_rows, c->hkv, D};
        tc_tensor_make(&k, ctx, c->dtype, 3, shp, order3, pad);
        tc_tensor_make(&v, ctx, c->dtype, 3, shp, order3, pad);
    } else {
        const int64_t P = c->page_size;
        pages.max_pages = (max_lk + P - 1) / P + 1; /* one spare column per row */
        for (int64_t b = 0; b < B; b++) pages.num_pages += (c->lk[b] + P - 1) / P;
        pages.num_pages += 2; /* pages no sequence uses */
        int32_t *pool = malloc((size_t)pages.num_pages * sizeof *pool);
        pages.table = malloc((size_t)(B * pages.max_pages + 1) * sizeof *pages.table);
        for (int64_t i = 0; i < pages.num_pages; i++) pool[i] = (int32_t)i;
        if (c->shuffle)
            for (int64_t i = pages.num_pages - 1; i > 0; i--) {
                int64_t j = tc_below(&rng, i + 1);
                int32_t t = pool[i];
                pool[i] = pool[j], pool[j] = t;
            }
        int64_t next = 0;
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < pages.max_pages; j++) {
                const int used = j * P < c->lk[b];
                /* Unused columns point at the spare page at the end of the pool. */
                pages.table[b * pages.max_pages + j] =
                    used ? pool[next++] : pool[pages.num_pages - 1];
            }
        if (c->shared_page && B > 1 && c->lk[0] > 0 && c->lk[1] > 0)
            pages.table[1 * pages.max_pages] = pages.table[0]; /* both start on one page */
        free(pool);
        int64_t shp[4] = {pages.num_pages, P, c->hkv, D};
        tc_tensor_make(&k, ctx, c->dtype, 4, shp, order, pad);
        tc_tensor_make(&v, ctx, c->dtype, 4, shp, order, pad);
    }
    tc_fill(&k, &rng, -1, 1);
    tc_fill(&v, &rng, -1, 1);
    if (c->mode == KILN_MODE_PAGED && c->nan_tail) {
        /* Slots past each sequence's end and unused pages hold NaN, as a stale cache may. */
        int64_t P = c->page_size;
        unsigned char *used = calloc((size_t)(pages.num_pages * P), 1);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < c->lk[b]; j++)
                used[pages.table[b * pages.max_pages + j / P] * P + j % P] = 1;
        for (int64_t pg = 0; pg < pages.num_pages; pg++)
            for (int64_t s = 0; s < P; s++)
                if (!used[pg * P + s])
                    for (int64_t h = 0; h < c->hkv; h++)
                        for (int64_t d = 0; d < D; d++) {
                            int64_t off = pg * k.host.stride[0] + s * k.host.stride[1] +
                                          h * k.host.stride[2] + d;
                            kiln_ref_store(c->dtype, k.host.data, off, NAN);
                            kiln_ref_store(c->dtype, v.host.data, off, NAN);
                        }
        free(used);
    }

    /* integer inputs */
    if (packed_q || c->mode == KILN_MODE_VARLEN) {
        int64_t n = B + 1;
        tc_tensor_make(&cuq, ctx, KILN_I32, 1, &n, NULL, 0);
        int32_t *cq = cuq.host.data, acc = 0;
        for (int64_t b = 0; b <= B; b++) {
            cq[b] = acc;
            if (b < B) acc += c->lq[b];
        }
    }
    if (c->mode == KILN_MODE_VARLEN) {
        int64_t n = B + 1;
        tc_tensor_make(&cuk, ctx, KILN_I32, 1, &n, NULL, 0);
        int32_t *ck = cuk.host.data, acc = 0;
        for (int64_t b = 0; b <= B; b++) {
            ck[b] = acc;
            if (b < B) acc += c->lk[b];
        }
    }
    if (c->mode == KILN_MODE_PAGED) {
        int64_t shp[2] = {B, pages.max_pages};
        tc_tensor_make(&bt, ctx, KILN_I32, 2, shp, NULL, 0);
        memcpy(bt.host.data, pages.table, (size_t)(B * pages.max_pages) * sizeof(int32_t));
        tc_tensor_make(&slk, ctx, KILN_I32, 1, &shp[0], NULL, 0);
        for (int64_t b = 0; b < B; b++) ((int32_t *)slk.host.data)[b] = c->lk[b];
    }

    /* lse: [b, h, s] or [h, total_q]; the strided variant stores it transposed + padded. */
    if (c->lse) {
        static const int shb[3] = {0, 2, 1}, th[2] = {1, 0};
        if (packed_q) {
            int64_t shp[2] = {c->hq, total_q + c->extra_rows};
            tc_tensor_make(&lse, ctx, KILN_F32, 2, shp, c->lse == 2 ? th : NULL, c->lse == 2);
        } else {
            int64_t shp[3] = {B, c->hq, max_lq};
            tc_tensor_make(&lse, ctx, KILN_F32, 3, shp, c->lse == 2 ? shb : NULL, c->lse == 2);
        }
    }

    kiln_attention_params prm;
    kiln_attention_params_init(&prm);
    prm.softmax_scale = c->scale;
    prm.causal = c->causal;
    prm.window_left = c->wl;
    prm.window_right = c->wr;
    prm.softcap = c->softcap;
    prm.num_splits = c->num_splits;
    kiln_tensor alibi_host;
    kiln_tensor_init(&alibi_host);
    if (c->alibi) {
        int64_t shp[2] = {B, c->hq};
        if (c->alibi == 1)
            tc_tensor_make(&alibi, ctx, KILN_F32, 1, &shp[1], NULL, 0);
        else
            tc_tensor_make(&alibi, ctx, KILN_F32, 2, shp, NULL, 0);
        tc_fill(&alibi, &rng, 0.05, 1.0);
        prm.alibi_slopes = alibi.dev;
        alibi_host = alibi.host;
    }
    int64_t rows_q = packed_q ? total_q + c->extra_rows : B * max_lq;
    /* Bounds passed to the call and to the workspace query alike; for a paged cache the
     * query's key bound is the table's capacity (kiln_attention_workspace_size). */
    const int64_t mq = max_lq + (packed_q ? c->max_q_slack : 0);
    const int64_t mk = c->mode == KILN_MODE_PAGED
                           ? pages.max_pages * c->page_size
                           : max_lk + (c->mode == KILN_MODE_VARLEN ? c->max_q_slack : 0);
    if (c->caller_ws) {
        size_t need = 0;
        kiln_attention_plan plan;
        kiln_attention_plan_init(&plan);
        plan.batch = B;
        plan.rows_q = rows_q;
        plan.max_seqlen_q = mq;
        plan.max_seqlen_k = mk;
        plan.heads_q = c->hq;
        plan.heads_kv = c->hkv;
        plan.head_dim = D;
        plan.num_splits = c->num_splits;
        CHECK_OK(kiln_attention_workspace_size(ctx, &plan, &need));
        if (need > 0) {
            int64_t n = (int64_t)need;
            tc_tensor_make(&ws, ctx, KILN_F32, 1, &n, NULL, 0); /* bytes >= need */
            prm.workspace = ws.dev.data;
            prm.workspace_size = need;
        }
    }

    if (c->nonfinite) {
        /* Plant the NaN / inf in the host inputs before they travel. */
        kiln_attn_problem hp;
        kiln_attention_params pp = prm;
        pp.alibi_slopes = alibi_host;
        kiln_ref_attn_problem(&hp, c->mode, &q.host, &k.host, &v.host,
                              (packed_q || c->mode == KILN_MODE_VARLEN) ? &cuq.host : NULL,
                              c->mode == KILN_MODE_VARLEN ? &cuk.host : NULL,
                              c->mode == KILN_MODE_PAGED ? &bt.host : NULL,
                              c->mode == KILN_MODE_PAGED ? &slk.host : NULL, mq, mk, &out.host,
                              NULL, &pp);
        check_state_.checks++;
        if (!tc_nonfinite_plant(&hp, c->nonfinite, (float *)alibi.host.data,
                                (int64_t)(c->seed * 13u)))
            check_fail_(__FILE__, __LINE__, "case has no entry to plant %s in",
                        tc_nonfinite_name(c->nonfinite));
    }

    int64_t mq_call = mq, mk_call = mk;
    const char *broken = NULL;
    void *out_data = out.dev.data;
    if (c->corrupt) {
        tc_attn_args args = {&q, &k, &v, &out, &lse, &cuq, &cuk, &bt, &slk, &prm, &mq_call, &mk_call};
        tc_rng crng = {c->seed ^ 0x5bd1e995u};
        for (int tries = 0; !broken && tries < 32; tries++)
            broken = tc_corrupt(c, &crng, &args, env->backend == KILN_BACKEND_CPU);
        check_case("%s, broken: %s", what, broken ? broken : "nothing");
    }

    tc_tensor *ups[] = {&q, &k, &v, &out, &lse, &cuq, &cuk, &bt, &slk, &alibi};
    for (size_t i = 0; i < sizeof ups / sizeof ups[0]; i++) {
        /* out's own buffer even when a corruption pointed the view elsewhere */
        void *dst = ups[i] == &out ? out_data : ups[i]->dev.data;
        if (dst && kiln_ctx_copy_to_device(ctx, dst, ups[i]->host.data, ups[i]->bytes) != KILN_OK)
            check_fail_(__FILE__, __LINE__, "copy to device: %s", kiln_last_error());
    }

    kiln_status st = KILN_INTERNAL;
    if (c->mode == KILN_MODE_FIXED)
        st = kiln_attention_fwd(ctx, &q.dev, &k.dev, &v.dev, &out.dev, c->lse ? &lse.dev : NULL,
                                &prm, NULL);
    else if (c->mode == KILN_MODE_VARLEN)
        st = kiln_attention_fwd_varlen(ctx, &q.dev, &k.dev, &v.dev, &cuq.dev, &cuk.dev, mq_call,
                                       mk_call,
                                       &out.dev, c->lse ? &lse.dev : NULL, &prm, NULL);
    else
        st = kiln_attention_fwd_paged(ctx, &q.dev, &k.dev, &v.dev, &bt.dev, &slk.dev,
                                      c->prefill ? &cuq.dev : NULL, mq_call, &out.dev,
                                      c->lse ? &lse.dev : NULL, &prm, NULL);
    if (c->corrupt) {
        /* A clean error: a status, a message, and not one output byte written. */
        check_state_.checks++;
        if (st == KILN_OK || st == KILN_INTERNAL || st == KILN_DEVICE_ERROR)
            check_fail_(__FILE__, __LINE__, "returned %s (\"%s\"); expected an argument error",
                        kiln_status_name(st), kiln_last_error());
        CHECK(kiln_last_error()[0] != '\0');
        out.dev.data = out_data;
        tc_tensor *outs[] = {&out, &lse};
        for (size_t i = 0; i < 2; i++) {
            if (!outs[i]->dev.data) continue;
            unsigned char *now = malloc(outs[i]->bytes);
            if (now && kiln_ctx_copy_to_host(ctx, now, outs[i]->dev.data, outs[i]->bytes) == KILN_OK)
                CHECK_MEM_EQ(now, outs[i]->host.data, outs[i]->bytes);
            free(now);
        }
    } else if (st == KILN_UNSUPPORTED && env->backend != KILN_BACKEND_CPU &&
               strncmp(kiln_last_error(), "KILN_GPU_TIER=", 14) == 0) {
        /* A forced tier that does not cover the case refuses it by name (DESIGN.md: no
         * silent fallback): the refusal is the contract, nothing was written. */
        check_note_skip("%s: %s", what, kiln_last_error());
        unsigned char *now = malloc(out.bytes);
        if (now && kiln_ctx_copy_to_host(ctx, now, out.dev.data, out.bytes) == KILN_OK)
            CHECK_MEM_EQ(now, out.host.data, out.bytes);
        free(now);
    } else {
        CHECK_OK(st);
    }
    if (st == KILN_OK && !c->corrupt) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "attn_fwd.%s.d", kiln_dtype_name(c->dtype));
        int64_t q_elems = 1;
        for (int32_t l = 0; l < q.dev.rank; l++) q_elems *= q.dev.shape[l];
        if (q_elems == 0) {
            /* No query row: a successful no-op, reported as such. */
            kiln_dispatch d;
            kiln_dispatch_init(&d);
            CHECK_OK(kiln_last_dispatch(&d));
            CHECK_EQ(d.backend, env->backend);
            CHECK_STR_EQ(d.variant, "none");
        } else {
            tc_check_dispatch(env, c->dtype, 1, prefix, D, tc_mode_name(c->mode),
                              c->num_splits);
        }
        CHECK_OK(kiln_ctx_synchronize(ctx, NULL));
        tc_download(&out);
        if (c->lse) tc_download(&lse);

        kiln_attn_problem p;
        kiln_attention_params hp = prm;
        hp.alibi_slopes = alibi_host;
        kiln_ref_attn_problem(&p, c->mode, &q.host, &k.host, &v.host,
                              (packed_q || c->mode == KILN_MODE_VARLEN) ? &cuq.host : NULL,
                              c->mode == KILN_MODE_VARLEN ? &cuk.host : NULL,
                              c->mode == KILN_MODE_PAGED ? &bt.host : NULL,
                              c->mode == KILN_MODE_PAGED ? &slk.host : NULL, mq, mk, &out.host,
                              c->lse ? &lse.host : NULL, &hp);
        double *ref_out = calloc((size_t)(rows_q * c->hq * D + 1), sizeof *ref_out);
        double *ref_lse = calloc((size_t)(rows_q * c->hq + 1), sizeof *ref_lse);
        tc_marks mo = {NULL, 0}, ml = {NULL, 0};
        tc_marks_init(&mo, &out);
        if (c->lse) tc_marks_init(&ml, &lse);
        if (ref_out && ref_lse && mo.m && (!c->lse || ml.m) &&
            kiln_ref_attention(&p, ref_out, c->lse ? ref_lse : NULL) == KILN_OK) {
            tc_compare_attention(&p, ref_out, c->lse ? ref_lse : NULL, &mo, &ml,
                                 tc_tolerance(c->dtype), what);
            tc_check_untouched(&out, &mo, "out");
            if (c->lse) tc_check_untouched(&lse, &ml, "lse");
        } else {
            check_fail_(__FILE__, __LINE__, "out of memory in the reference");
        }
        free(mo.m);
        free(ml.m);
        free(ref_out);
        free(ref_lse);
    }
    free(pages.table);
    tc_tensor *all[] = {&q, &k, &v, &out, &lse, &cuq, &cuk, &bt, &slk, &alibi, &ws};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->host.data || all[i]->dev.data) tc_tensor_free(all[i]);
    if (check_state_.failures != failures_before) fflush(stderr);
}
