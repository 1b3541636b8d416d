/*
 * test_matmul.c — the optimized mm, bmm, addmm and linear kernels (and so
 * matmul.h's streaming and packed paths, f32_gemv.h's kernels) against a
 * product in double and against the portable kernels of the same keys, at
 * every instruction-set level this CPU has, on pools of one, two and three
 * threads.
 *
 * Row counts on both sides of the streaming limit (1..4 rows stream, more
 * pack) and of the 64-row tile; column counts around the vector widths and
 * the 16-column cache line; k from 0; scratch large, small (fewer panels
 * per block) and absent (the streaming path for every row count). Outside
 * the fast paths (float64, alpha 2, a full bias matrix, bad shapes) the
 * results and statuses must be the portable kernels'.
 */
#include "opt_test.h"

/* |got - want| <= 1e-5 (sum |a w| + |bias|) for every element of c (m, n):
 * want = bias + a (m, k) x W, W(j, p) at w[j * sn + p * sk]. */
static bool check_product(const float *c, const float *a, const float *w, size_t sn, size_t sk,
                          const float *bias, size_t m, size_t n, size_t k, size_t *bad_i,
                          size_t *bad_j) {
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double want = bias != NULL ? bias[j] : 0.0, mag = fabs(want);
            for (size_t p = 0; p < k; p++) {
                const double t = (double)a[i * k + p] * w[j * sn + p * sk];
                want += t;
                mag += fabs(t);
            }
            if (!(fabs(c[i * n + j] - want) <= 1e-5 * (mag + 1e-30))) {
                *bad_i = i;
                *bad_j = j;
                return false;
            }
        }
    return true;
}

/* Calls key's optimized and portable kernels; statuses must match. */
static bool both(const char *key, const char *what, ember_value **ao, ember_value **ar,
                 size_t nargs, ember_status *st) {
    const ember_status so = ot_call(ot_optimized(key), ao, nargs);
    char msg[EMBER_ERROR_MESSAGE_SIZE];
    snprintf(msg, sizeof msg, "%s", ember_last_error());
    const ember_status sr = ot_call(kt_kernel(key), ar, nargs);
    *st = so;
    return CHECK_MSG(so == sr, "%s %s: status %s (%s), portable %s", key, what,
                     ember_status_str(so), msg, ember_status_str(sr));
}

static void check_outputs(const char *key, const char *what, ot *o, ot *r, const float *a,
                          const float *w, size_t sn, size_t sk, const float *bias, size_t m,
                          size_t n, size_t k, size_t batch) {
    CHECK_MSG(o->x.t.numel == r->x.t.numel && o->x.t.dim == r->x.t.dim, "%s %s: shape", key, what);
    for (size_t b = 0; b < batch; b++) {
        size_t bi = 0, bj = 0;
        const bool ok_o = check_product(ot_f(o) + b * m * n, a + b * m * k, w + b * n * k, sn, sk,
                                        bias, m, n, k, &bi, &bj);
        CHECK_MSG(ok_o, "%s %s: batch %zu (%zu, %zu) = %.9g", key, what, b, bi, bj,
                  (double)ot_f(o)[b * m * n + bi * n + bj]);
        const bool ok_r = check_product(ot_f(r) + b * m * n, a + b * m * k, w + b * n * k, sn, sk,
                                        bias, m, n, k, &bi, &bj);
        CHECK_MSG(ok_r, "%s %s: portable batch %zu (%zu, %zu)", key, what, b, bi, bj);
    }
}

static ember_value g_v[4];

/* mm (batch 0) or bmm (batch >= 1): (m, k) @ (k, n) */
static void mm_case(size_t batch, size_t m, size_t k, size_t n) {
    const bool bmm = batch > 0;
    const size_t bt = bmm ? batch : 1;
    const int32_t as[3] = {(int32_t)bt, (int32_t)m, (int32_t)k};
    const int32_t bs[3] = {(int32_t)bt, (int32_t)k, (int32_t)n};
    const int32_t cs[3] = {(int32_t)bt, (int32_t)m, (int32_t)n};
    const size_t r = bmm ? 3 : 2, off = bmm ? 0 : 1;
    ot a, b, o, rr;
    ember_value *va = ot_new(&a, EMBER_FLOAT32, as + off, r, false);
    ember_value *vb = ot_new(&b, EMBER_FLOAT32, bs + off, r, false);
    ember_value *vo = ot_new(&o, EMBER_FLOAT32, cs + off, r, true);
    ember_value *vr = ot_new(&rr, EMBER_FLOAT32, cs + off, r, true);
    ot_fill(&a, 1.0f, false);
    ot_fill(&b, 1.0f, false);
    const char *key = bmm ? "aten::bmm.out" : "aten::mm.out";
    char what[96];
    snprintf(what, sizeof what, "batch %zu, (%zu, %zu) @ (%zu, %zu)", bt, m, k, k, n);
    ember_value *ao[4] = {va, vb, vo, vo}, *ar[4] = {va, vb, vr, vr};
    ember_status st;
    if (both(key, what, ao, ar, 4, &st) && st == EMBER_OK)
        check_outputs(key, what, &o, &rr, ot_f(&a), ot_f(&b), 1, n, NULL, m, n, k, bt);
    ot_free(&a);
    ot_free(&b);
    ot_free(&o);
    ot_free(&rr);
}

/* linear: x (lead..., k) with weight (n, k) and bias (n) or none */
static void linear_case(const int32_t *lead, size_t nlead, size_t k, size_t n, bool with_bias,
                        int dtype) {
    int32_t xs[6], os[6];
    size_t m = 1;
    for (size_t i = 0; i < nlead; i++) {
        xs[i] = os[i] = lead[i];
        m *= (size_t)lead[i];
    }
    xs[nlead] = (int32_t)k;
    os[nlead] = (int32_t)n;
    const int32_t ws[2] = {(int32_t)n, (int32_t)k}, bs[1] = {(int32_t)n};
    ot x, w, b, o, r;
    ember_value *vx = ot_new(&x, dtype, xs, nlead + 1, false);
    ember_value *vw = ot_new(&w, dtype, ws, 2, false);
    ember_value *vb = ot_new(&b, dtype, bs, 1, false);
    ember_value *vo = ot_new(&o, dtype, os, nlead + 1, true);
    ember_value *vr = ot_new(&r, dtype, os, nlead + 1, true);
    if (dtype == EMBER_FLOAT32) {
        ot_fill(&x, 1.0f, false);
        ot_fill(&w, 1.0f, false);
        ot_fill(&b, 1.0f, false);
    }
    memset(&g_v[0], 0, sizeof g_v[0]);
    g_v[0].tag = EMBER_TAG_NONE;
    ember_value *vbias = with_bias ? vb : &g_v[0];
    ember_value *ao[5] = {vx, vw, vbias, vo, vo}, *ar[5] = {vx, vw, vbias, vr, vr};
    char what[96];
    snprintf(what, sizeof what, "%zu rows x %zu -> %zu, bias %d, %s", m, k, n, with_bias,
             ember_dtype_name(dtype));
    ember_status st;
    if (both("aten::linear.out", what, ao, ar, 5, &st) && st == EMBER_OK) {
        if (dtype == EMBER_FLOAT32)
            check_outputs("aten::linear.out", what, &o, &r, ot_f(&x), ot_f(&w), k, 1,
                          with_bias ? ot_f(&b) : NULL, m, n, k, 1);
        else
            CHECK(memcmp(o.data, r.data, o.bytes) == 0);
    }
    ot_free(&x);
    ot_free(&w);
    ot_free(&b);
    ot_free(&o);
    ot_free(&r);
}

/* addmm: bias shape bs (rank bdim) + (m, k) @ (k, n), with beta and alpha */
static void addmm_case(size_t m, size_t k, size_t n, const int32_t *bsz, size_t bdim, double beta,
                       double alpha) {
    const int32_t as[2] = {(int32_t)m, (int32_t)k}, ws[2] = {(int32_t)k, (int32_t)n},
                  cs[2] = {(int32_t)m, (int32_t)n};
    ot s, a, w, o, r;
    ember_value *vs = ot_new(&s, EMBER_FLOAT32, bsz, bdim, false);
    ember_value *va = ot_new(&a, EMBER_FLOAT32, as, 2, false);
    ember_value *vw = ot_new(&w, EMBER_FLOAT32, ws, 2, false);
    ember_value *vo = ot_new(&o, EMBER_FLOAT32, cs, 2, true);
    ember_value *vr = ot_new(&r, EMBER_FLOAT32, cs, 2, true);
    ot_fill(&s, 1.0f, false);
    if (beta == 0) ot_f(&s)[0] = NAN; /* ignored when beta is 0 */
    ot_fill(&a, 1.0f, false);
    ot_fill(&w, 1.0f, false);
    g_v[1].tag = EMBER_TAG_DOUBLE;
    g_v[1].u.d = beta;
    g_v[2].tag = EMBER_TAG_DOUBLE;
    g_v[2].u.d = alpha;
    ember_value *ao[7] = {vs, va, vw, &g_v[1], &g_v[2], vo, vo};
    ember_value *ar[7] = {vs, va, vw, &g_v[1], &g_v[2], vr, vr};
    char what[96];
    snprintf(what, sizeof what, "(%zu, %zu) @ (%zu, %zu), bias rank %zu, beta %g alpha %g", m, k,
             k, n, bdim, beta, alpha);
    ember_status st;
    if (both("aten::addmm.out", what, ao, ar, 7, &st) && st == EMBER_OK) {
        const bool row = beta == 1 && alpha == 1 && (size_t)bsz[bdim - 1] == n &&
                         (bdim == 1 || bsz[0] == 1);
        if (row || beta == 0) {
            check_outputs("aten::addmm.out", what, &o, &r, ot_f(&a), ot_f(&w), 1, n,
                          beta == 0 ? NULL : ot_f(&s), m, n, k, 1);
        } else { /* the portable kernel ran for both */
            CHECK_MSG(memcmp(o.data, r.data, o.bytes) == 0, "%s: differs from portable", what);
        }
    }
    ot_free(&s);
    ot_free(&a);
    ot_free(&w);
    ot_free(&o);
    ot_free(&r);
}

static void test_products(void) {
    const size_t ms[] = {1, 2, 3, 4, 5, 7, 17, 64, 65, 130};
    const size_t ks[] = {0, 1, 7, 33, 129};
    const size_t ns[] = {1, 7, 16, 17, 33, 100};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t p = 0; p < sizeof ks / sizeof ks[0]; p++)
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) mm_case(0, ms[i], ks[p], ns[j]);
    mm_case(0, 1, 768, 1031);
    mm_case(0, 3, 0, 0);
    mm_case(3, 1, 64, 40);
    mm_case(3, 9, 64, 9);
    mm_case(2, 70, 33, 129);
    const int32_t lead1[1] = {1}, lead3[1] = {3}, lead70[1] = {70}, lead23[2] = {2, 3};
    for (int bias = 0; bias < 2; bias++) {
        linear_case(NULL, 0, 33, 17, bias, EMBER_FLOAT32);
        linear_case(lead1, 1, 768, 100, bias, EMBER_FLOAT32);
        linear_case(lead3, 1, 129, 33, bias, EMBER_FLOAT32);
        linear_case(lead23, 2, 7, 5, bias, EMBER_FLOAT32);
        linear_case(lead70, 1, 65, 47, bias, EMBER_FLOAT32);
        linear_case(lead3, 1, 0, 9, bias, EMBER_FLOAT32);
        linear_case(lead3, 1, 9, 4, bias, EMBER_FLOAT64); /* the portable kernel */
    }
    const int32_t b1[1] = {17}, b2[2] = {1, 17}, bfull[2] = {5, 17}, bbad[1] = {16};
    addmm_case(5, 33, 17, b1, 1, 1, 1);
    addmm_case(2, 33, 17, b2, 2, 1, 1);
    addmm_case(65, 33, 17, b1, 1, 0, 1);
    addmm_case(5, 33, 17, bfull, 2, 1, 1); /* the portable kernel */
    addmm_case(5, 33, 17, b1, 1, 1, 2);
    addmm_case(5, 33, 17, b1, 1, 0.5, 1);
    addmm_case(5, 33, 17, bbad, 1, 1, 1);  /* refused by both */
}

/* Bad shapes: both kernels refuse them the same way. */
static void test_refusals(void) {
    const int32_t a_s[2] = {3, 4}, b_s[2] = {5, 6}, o_s[2] = {3, 6};
    ot a, b, o, r;
    ember_value *va = ot_new(&a, EMBER_FLOAT32, a_s, 2, false);
    ember_value *vb = ot_new(&b, EMBER_FLOAT32, b_s, 2, false);
    ember_value *vo = ot_new(&o, EMBER_FLOAT32, o_s, 2, true);
    ember_value *vr = ot_new(&r, EMBER_FLOAT32, o_s, 2, true);
    ember_value *ao[4] = {va, vb, vo, vo}, *ar[4] = {va, vb, vr, vr};
    ember_status st;
    both("aten::mm.out", "inner sizes differ", ao, ar, 4, &st);
    CHECK(st == EMBER_ERR_SHAPE_MISMATCH);
    both("aten::bmm.out", "2-d operands", ao, ar, 4, &st);
    CHECK(st == EMBER_ERR_SHAPE_MISMATCH);
    both("aten::mm.out", "three arguments", ao, ar, 3, &st);
    CHECK(st != EMBER_OK);
    ot_free(&a);
    ot_free(&b);
    ot_free(&o);
    ot_free(&r);
}

int main(void) {
    const size_t npools = ot_pools_init();
    /* scratch: plenty, a few panels (blocks of one panel per thread), none */
    const size_t scratch[] = {4u << 20, 24u * 1024u, 0};
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        if (!eko_isa_set((eko_isa)isa)) {
            printf("-- %s: skipped (not on this CPU or not in this build)\n",
                   eko_isa_name((eko_isa)isa));
            continue;
        }
        for (size_t p = 0; p < npools; p++)
            for (size_t s = 0; s < sizeof scratch / sizeof scratch[0]; s++) {
                char name[96];
                snprintf(name, sizeof name, "%s, %zu thread(s), %zu bytes of scratch",
                         eko_isa_name((eko_isa)isa), ember_threadpool_size(g_ot_pools[p]),
                         scratch[s]);
                check_section(name);
                ot_ctx_set(g_ot_pools[p], scratch[s]);
                test_products();
                test_refusals();
            }
    }
    ot_pools_free();
    return check_finish();
}
