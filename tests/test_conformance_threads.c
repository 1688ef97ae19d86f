/*
 * One context used from several threads at once (kiln.h: "A context may be used from several
 * threads at once"): each thread repeats its own attention and activation calls, mixing
 * dtypes, modes and split counts, while the others run. Afterwards every output must match
 * the fp64 reference, and each thread's kiln_last_dispatch() must describe its own last call.
 */
#include "conformance.h"

enum { THREADS = 4, REPEATS = 40 };

typedef struct job {
    kiln_context *ctx;
    kiln_dtype dtype;
    int32_t num_splits;
    int causal;
    tc_tensor q, k, v, out, lse, x, y;
    kiln_status st_attn, st_act, st_sync;
    kiln_dispatch last;
    kiln_status st_last;
} job;

static void worker(void *arg) {
    job *j = arg;
    kiln_attention_params prm;
    kiln_attention_params_init(&prm);
    prm.causal = j->causal;
    prm.num_splits = j->num_splits;
    j->st_attn = j->st_act = KILN_OK;
    for (int r = 0; r < REPEATS; r++) {
        kiln_status s = kiln_attention_fwd(j->ctx, &j->q.dev, &j->k.dev, &j->v.dev, &j->out.dev,
                                           &j->lse.dev, &prm, NULL);
        if (s != KILN_OK) j->st_attn = s;
        s = kiln_silu_and_mul(j->ctx, &j->x.dev, &j->y.dev, NULL);
        if (s != KILN_OK) j->st_act = s;
    }
    /* The last call on this thread was the activation. */
    kiln_dispatch_init(&j->last);
    j->st_last = kiln_last_dispatch(&j->last);
    j->st_sync = kiln_ctx_synchronize(j->ctx, NULL);
}

static void body(tc_env *env) {
    static const kiln_dtype dtypes[THREADS] = {KILN_BF16, KILN_F16, KILN_F32, KILN_BF16};
    static const int32_t splits[THREADS] = {1, 3, 0, 2};
    job jobs[THREADS];
    tc_rng rng = {77};
    check_case("%s: %d threads x %d repeats on one context", env->label, THREADS, REPEATS);
    check_note_ran();
    for (int t = 0; t < THREADS; t++) {
        job *j = &jobs[t];
        memset(j, 0, sizeof *j);
        j->ctx = env->ctx;
        j->dtype = dtypes[t] == KILN_F32 && env->backend != KILN_BACKEND_CPU ? KILN_BF16 : dtypes[t];
        j->num_splits = splits[t];
        j->causal = t & 1;
        int64_t qs[4] = {2, 33, 4, 64}, ks[4] = {2, 97, 2, 64}, ls[3] = {2, 4, 33};
        int64_t xs[2] = {37, 2 * 72}, ys[2] = {37, 72};
        tc_tensor_make(&j->q, j->ctx, j->dtype, 4, qs, NULL, 0);
        tc_tensor_make(&j->k, j->ctx, j->dtype, 4, ks, NULL, 0);
        tc_tensor_make(&j->v, j->ctx, j->dtype, 4, ks, NULL, 0);
        tc_tensor_make(&j->out, j->ctx, j->dtype, 4, qs, NULL, 0);
        tc_tensor_make(&j->lse, j->ctx, KILN_F32, 3, ls, NULL, 0);
        tc_tensor_make(&j->x, j->ctx, j->dtype, 2, xs, NULL, 0);
        tc_tensor_make(&j->y, j->ctx, j->dtype, 2, ys, NULL, 0);
        tc_fill(&j->q, &rng, -1, 1), tc_fill(&j->k, &rng, -1, 1), tc_fill(&j->v, &rng, -1, 1);
        tc_fill(&j->x, &rng, -1, 1);
        tc_tensor *all[] = {&j->q, &j->k, &j->v, &j->out, &j->lse, &j->x, &j->y};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tc_upload(all[i]);
    }
    kiln_thread *th[THREADS];
    for (int t = 0; t < THREADS; t++) th[t] = kiln_thread_start(worker, &jobs[t]);
    for (int t = 0; t < THREADS; t++) {
        if (th[t]) kiln_thread_join(th[t]);
        else worker(&jobs[t]); /* no thread: still check the results */
    }

    for (int t = 0; t < THREADS; t++) {
        job *j = &jobs[t];
        check_case("%s thread %d: %s attention b2 sq33 sk97 hq4 hkv2 d64%s splits%d, silu 37x72",
                   env->label, t, kiln_dtype_name(j->dtype), j->causal ? " causal" : "",
                   j->num_splits);
        CHECK_OK(j->st_attn);
        CHECK_OK(j->st_act);
        CHECK_OK(j->st_sync);
        CHECK_OK(j->st_last);
        CHECK_EQ(j->last.backend, env->backend);
        char want[64];
        snprintf(want, sizeof want, "silu_and_mul.%s.", kiln_dtype_name(j->dtype));
        j->last.variant[sizeof j->last.variant - 1] = '\0';
        check_state_.checks++;
        if (strncmp(j->last.variant, want, strlen(want)) != 0)
            check_fail_(__FILE__, __LINE__, "this thread's last dispatch is \"%s\", not %s...",
                        j->last.variant, want);
        if (j->st_attn != KILN_OK || j->st_act != KILN_OK) continue;
        tc_download(&j->out);
        tc_download(&j->lse);
        tc_download(&j->y);

        kiln_attention_params prm;
        kiln_attention_params_init(&prm);
        prm.causal = j->causal;
        kiln_attn_problem p;
        kiln_ref_attn_problem(&p, KILN_MODE_FIXED, &j->q.host, &j->k.host, &j->v.host, NULL, NULL,
                              NULL, NULL, 0, 0, &j->out.host, &j->lse.host, &prm);
        double *ref = malloc((size_t)(2 * 33 * 4 * 64) * sizeof *ref);
        double *ref_lse = malloc((size_t)(2 * 33 * 4) * sizeof *ref_lse);
        double *ref_act = malloc((size_t)(37 * 72) * sizeof *ref_act);
        tc_marks mo = {NULL, 0}, ml = {NULL, 0};
        tc_marks_init(&mo, &j->out);
        tc_marks_init(&ml, &j->lse);
        if (ref && ref_lse && ref_act && mo.m && ml.m &&
            kiln_ref_attention(&p, ref, ref_lse) == KILN_OK) {
            tc_compare_attention(&p, ref, ref_lse, &mo, &ml, tc_tolerance(j->dtype), "attention");
            kiln_act_problem ap;
            kiln_ref_act_problem(&ap, KILN_ACT_SILU, &j->x.host, &j->y.host);
            kiln_ref_act_and_mul(&ap, ref_act);
            double worst = 0;
            for (int64_t i = 0; i < 37 * 72; i++) {
                double e = fabs(kiln_ref_load(j->dtype, j->y.host.data, i) - ref_act[i]);
                if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
            }
            CHECK_NEAR(worst, 0.0, tc_tolerance(j->dtype));
        }
        free(ref), free(ref_lse), free(ref_act), free(mo.m), free(ml.m);
        tc_tensor *all[] = {&j->q, &j->k, &j->v, &j->out, &j->lse, &j->x, &j->y};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tc_tensor_free(all[i]);
    }
}

int main(int argc, char **argv) { return tc_main(argc, argv, "conformance_threads", body); }
