/* Gated activations vs the fp64 reference: silu, gelu (erf) and gelu_tanh in every dtype,
 * ranks 1 to 4, padded and permuted leading dimensions, widths that leave vector tails. */
#include "conformance.h"

typedef struct act_case {
    kiln_activation act;
    kiln_dtype dtype;
    int32_t rank;
    int64_t lead[3], d;
    int64_t pad;      /* padding after every dimension of x and out */
    int permute;      /* store the two outermost leading dimensions swapped */
    double gate_range, up_range;
    uint64_t seed;
} act_case;

static const char *act_names[] = {"silu", "gelu", "gelu_tanh"};

typedef struct cmp_ctx {
    const kiln_tensor *out;
    const double *ref;
    int64_t d, row, bad, worst_row, worst_col;
    double max_err, tol, worst_got, worst_ref;
    unsigned char *marks;
} cmp_ctx;

/* Called for every output element in row-major order, so the row counter matches the
 * reference's layout. */
static void cmp_one(int64_t off, const int64_t *idx, void *u) {
    cmp_ctx *c = u;
    const int64_t col = idx[c->out->rank - 1];
    const int64_t row = c->row + (col == c->d - 1 ? 1 : 0);
    const double got = kiln_ref_load(c->out->dtype, c->out->data, off);
    const double ref = c->ref[c->row * c->d + col];
    const double err = fabs(got - ref);
    c->marks[off] = 2;
    if (!(err <= c->tol)) c->bad++;
    if (!(err <= c->max_err)) {
        c->max_err = isnan(err) ? INFINITY : err;
        c->worst_row = c->row, c->worst_col = col, c->worst_got = got, c->worst_ref = ref;
    }
    c->row = row;
}

static void run(tc_env *env, const act_case *a) {
    char what[256];
    snprintf(what, sizeof what, "%s %s_and_mul %s rank%d lead %lldx%lldx%lld d%lld pad%lld%s "
             "gate+-%g seed%llu", env->label, act_names[a->act], kiln_dtype_name(a->dtype),
             a->rank, (long long)a->lead[0], (long long)a->lead[1], (long long)a->lead[2],
             (long long)a->d, (long long)a->pad, a->permute ? " permuted" : "", a->gate_range,
             (unsigned long long)a->seed);
    check_case("%s", what);
    check_note_ran();

    int64_t xs[4], os[4];
    for (int32_t l = 0; l < a->rank - 1; l++) xs[l] = os[l] = a->lead[l];
    xs[a->rank - 1] = 2 * a->d;
    os[a->rank - 1] = a->d;
    static const int swap4[4] = {1, 0, 2, 3}, swap3[3] = {1, 0, 2};
    const int *order = NULL;
    if (a->permute) order = a->rank == 4 ? swap4 : a->rank == 3 ? swap3 : NULL;

    tc_tensor x, out;
    tc_rng rng = {a->seed};
    tc_tensor_make(&x, env->ctx, a->dtype, a->rank, xs, order, a->pad);
    tc_tensor_make(&out, env->ctx, a->dtype, a->rank, os, order, a->pad + 1);
    /* Gate half and up half with their own ranges: wide gates reach the saturated parts of
     * the curves while the product stays at unit scale. */
    {
        kiln_tensor gate = x.host, up = x.host;
        gate.shape[a->rank - 1] = up.shape[a->rank - 1] = a->d;
        up.data = (char *)x.host.data + (size_t)a->d * kiln_dtype_size(a->dtype);
        tc_fill_ctx fg = {&gate, &rng, -a->gate_range, a->gate_range};
        tc_fill_ctx fu = {&up, &rng, -a->up_range, a->up_range};
        tc_each(&gate, tc_fill_one_, &fg);
        tc_each(&up, tc_fill_one_, &fu);
    }
    tc_upload(&x);
    tc_upload(&out);

    kiln_status st;
    switch (a->act) {
    case KILN_ACT_SILU: st = kiln_silu_and_mul(env->ctx, &x.dev, &out.dev, NULL); break;
    case KILN_ACT_GELU: st = kiln_gelu_and_mul(env->ctx, &x.dev, &out.dev, NULL); break;
    default: st = kiln_act_and_mul(env->ctx, a->act, &x.dev, &out.dev, NULL); break;
    }
    CHECK_OK(st);
    if (st == KILN_OK) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s_and_mul.%s.", act_names[a->act],
                 kiln_dtype_name(a->dtype));
        int64_t elems = 1;
        for (int32_t l = 0; l < out.dev.rank; l++) elems *= out.dev.shape[l];
        if (elems == 0) { /* nothing to compute: a no-op, reported as such */
            kiln_dispatch d;
            kiln_dispatch_init(&d);
            CHECK_OK(kiln_last_dispatch(&d));
            CHECK_STR_EQ(d.variant, "none");
        } else {
            tc_check_dispatch(env, a->dtype, 0, prefix, 0, NULL, -1);
        }
        CHECK_OK(kiln_ctx_synchronize(env->ctx, NULL));
        tc_download(&out);

        kiln_act_problem p;
        kiln_ref_act_problem(&p, a->act, &x.host, &out.host);
        double *ref = malloc((size_t)(p.rows * p.d + 1) * sizeof *ref);
        tc_marks mk = {NULL, 0};
        tc_marks_init(&mk, &out);
        if (ref && mk.m) {
            kiln_ref_act_and_mul(&p, ref);
            cmp_ctx c = {&out.host, ref, a->d, 0, 0, 0, 0, 0, tc_tolerance(a->dtype), 0, 0, mk.m};
            tc_each(&out.host, cmp_one, &c);
            check_state_.checks++;
            if (c.bad)
                check_fail_(__FILE__, __LINE__,
                            "%lld elements off by more than %g; max |err| %.3g at row %lld col "
                            "%lld (got %.9g, fp64 %.9g)",
                            (long long)c.bad, c.tol, c.max_err, (long long)c.worst_row,
                            (long long)c.worst_col, c.worst_got, c.worst_ref);
            tc_check_untouched(&out, &mk, "out");
        }
        free(ref);
        free(mk.m);
    }
    tc_tensor_free(&x);
    tc_tensor_free(&out);
}

static void body(tc_env *env) {
    static const kiln_dtype dtypes[] = {KILN_BF16, KILN_F16, KILN_F32};
    static const struct {
        int32_t rank;
        int64_t lead[3], d;
    } shapes[] = {
        {1, {0, 0, 0}, 8},    {2, {5, 0, 0}, 13},  {2, {3, 0, 0}, 1000},
        {3, {2, 7, 0}, 64},   {4, {2, 3, 4}, 24}, {2, {1, 0, 0}, 1},
        {3, {0, 4, 0}, 16},   {2, {17, 0, 0}, 40},
    };
    for (int act = KILN_ACT_SILU; act <= KILN_ACT_GELU_TANH; act++)
        for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                act_case a;
                memset(&a, 0, sizeof a);
                a.act = (kiln_activation)act;
                a.dtype = dtypes[t];
                a.rank = shapes[s].rank;
                memcpy(a.lead, shapes[s].lead, sizeof a.lead);
                a.d = shapes[s].d;
                a.gate_range = a.up_range = 1.0;
                a.seed = 400 + s;
                run(env, &a);
                if (a.rank >= 2) {
                    /* strided: padded (and for ranks 3-4 permuted) leading dimensions */
                    a.pad = 2;
                    a.permute = a.rank >= 3;
                    run(env, &a);
                }
                a.pad = 0, a.permute = 0;
                a.gate_range = 8.0, a.up_range = 0.125;
                run(env, &a);
            }
}

int main(int argc, char **argv) { return tc_main(argc, argv, "activation", body); }
