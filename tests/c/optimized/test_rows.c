/*
 * test_rows.c — the row kernels of f32_rows.h and the drivers of
 * eltwise.h and rows.h against plain loops, at every instruction-set level
 * this CPU has and on pools of one, two and three threads.
 *
 * Every binary op (add, sub, mul, div, min, max, prelu) in all three
 * operand shapes (row op row, row op value, value op row) at lengths around
 * the vector widths, with NaN, inf and signed zeros, exactly as the scalar
 * expression (min and max give the second operand for a NaN, as XNNPACK's
 * x < y ? x : y); broadcasts through eko_nd of ranks 0 to 5 against an
 * index-by-index loop, in place too; clamp keeping NaN; where; unary arrays;
 * softmax, log-softmax and layer norm of single rows against double
 * precision. Values past the end of a row must stay untouched.
 */
#include "kernels/optimized/eltwise.h"
#include "kernels/optimized/rows.h"
#include "opt_test.h"

static float ref_binary(eko_binop op, float x, float y) {
    switch (op) {
    case EKO_BIN_ADD: return x + y;
    case EKO_BIN_SUB: return x - y;
    case EKO_BIN_MUL: return x * y;
    case EKO_BIN_DIV: return x / y;
    case EKO_BIN_MIN: return x < y ? x : y;
    case EKO_BIN_MAX: return x > y ? x : y;
    default: return x >= 0.0f ? x : x * y;
    }
}

/* Bit-equal, or both NaN. */
static bool same(float a, float b) {
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static const size_t g_lens[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000, 1031};
enum { CAP = 1040, GUARD = 8 };

static void fill_specials(float *x, size_t n, float scale) {
    const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f};
    for (size_t i = 0; i < n; i++) x[i] = i % 13 == 5 ? sp[(i / 13) % 7] : rng_float() * scale;
}

static void test_binary_rows(const eko_f32_rows *r) {
    static float a[CAP + GUARD], b[CAP + GUARD], y[CAP + GUARD];
    bool ok = true;
    for (int op = 0; op < EKO_BINOP_COUNT; op++)
        for (int sh = 0; sh < EKO_BSHAPE_COUNT; sh++)
            for (size_t t = 0; t < sizeof g_lens / sizeof g_lens[0]; t++) {
                const size_t n = g_lens[t];
                fill_specials(a, n + GUARD, 3.0f);
                fill_specials(b, n + GUARD, 3.0f);
                for (size_t i = 0; i < n + GUARD; i++) y[i] = -5.5f;
                r->binary[op][sh](n, a, b, y);
                for (size_t i = 0; i < n; i++) {
                    const float x = sh == EKO_SV ? a[0] : a[i], w = sh == EKO_VS ? b[0] : b[i];
                    if (!same(y[i], ref_binary((eko_binop)op, x, w))) {
                        CHECK_MSG(false, "op %d shape %d n %zu [%zu]: %g op %g = %g, want %g", op,
                                  sh, n, i, (double)x, (double)w, (double)y[i],
                                  (double)ref_binary((eko_binop)op, x, w));
                        ok = false;
                        break;
                    }
                }
                for (size_t i = n; i < n + GUARD; i++) ok = ok && y[i] == -5.5f;
                /* in place on a */
                if (sh != EKO_SV) {
                    float keep[CAP];
                    memcpy(keep, a, n * sizeof(float));
                    r->binary[op][sh](n, a, b, a);
                    for (size_t i = 0; i < n; i++)
                        ok = ok && same(a[i], ref_binary((eko_binop)op, keep[i],
                                                         sh == EKO_VS ? b[0] : b[i]));
                }
            }
    CHECK_MSG(ok, "binary rows: a result differs, or past the end written");
}

/* Broadcasts through eko_nd: a (rank ra) op b (rank rb) against an index loop. */
static void nd_case(const eko_f32_rows *r, ember_threadpool *pool, eko_binop op,
                    const size_t *as, size_t ra, const size_t *bs, size_t rb, bool inplace) {
    const size_t rank = ra > rb ? ra : rb;
    size_t ys[EKO_ND_MAX_DIM], st[EKO_ND_MAX_OPS][EKO_ND_MAX_DIM];
    for (size_t d = 0; d < rank; d++) {
        const size_t x = d + ra >= rank ? as[d + ra - rank] : 1;
        const size_t w = d + rb >= rank ? bs[d + rb - rank] : 1;
        ys[d] = x == 1 ? w : x;
    }
    size_t na = 1, nb = 1, ny = 1;
    for (size_t d = 0; d < ra; d++) na *= as[d];
    for (size_t d = 0; d < rb; d++) nb *= bs[d];
    for (size_t d = 0; d < rank; d++) ny *= ys[d];
    float *a = malloc((na + 1) * sizeof(float)), *b = malloc((nb + 1) * sizeof(float));
    float *y = malloc((ny + 1) * sizeof(float));
    fill_specials(a, na, 2.0f);
    fill_specials(b, nb, 2.0f);
    float *keep = NULL;
    if (inplace) { /* y is a (a must then have y's shape) */
        keep = malloc((na + 1) * sizeof(float));
        memcpy(keep, a, na * sizeof(float));
    }
    CHECK(eko_nd_broadcast(rank, ys, rank, ys, st[0]));
    CHECK(eko_nd_broadcast(rank, ys, ra, as, st[1]));
    CHECK(eko_nd_broadcast(rank, ys, rb, bs, st[2]));
    eko_nd nd;
    eko_nd_init(&nd, rank, ys, 3, (const size_t(*)[EKO_ND_MAX_DIM])st);
    CHECK(eko_nd_numel(&nd) == ny);
    eko_f32_binary_nd(pool, r, op, &nd, inplace ? a : y, a, b);
    const float *got = inplace ? a : y, *src = inplace ? keep : a;
    bool ok = true;
    size_t idx[EKO_ND_MAX_DIM] = {0};
    for (size_t i = 0; i < ny && ok; i++) {
        size_t oa = 0, ob = 0;
        for (size_t d = 0; d < rank; d++) {
            oa += idx[d] * st[1][d];
            ob += idx[d] * st[2][d];
        }
        ok = same(got[i], ref_binary(op, src[oa], b[ob]));
        for (size_t d = rank; d-- > 0;)
            if (++idx[d] < ys[d]) break;
            else idx[d] = 0;
    }
    CHECK_MSG(ok, "broadcast op %d, ranks %zu and %zu, %zu elements%s", (int)op, ra, rb, ny,
              inplace ? ", in place" : "");
    free(a);
    free(b);
    free(y);
    free(keep);
}

static void test_broadcast(const eko_f32_rows *r, ember_threadpool *pool) {
    const size_t s0[1] = {1}, s7[1] = {7}, s33[1] = {33}, s5_33[2] = {5, 33}, s5_1[2] = {5, 1},
                 s1_33[2] = {1, 33}, s3_1_17[3] = {3, 1, 17}, s1_4_17[3] = {1, 4, 17},
                 s2345[4] = {2, 3, 4, 5}, s315[3] = {3, 1, 5}, sbig[2] = {3, 20001},
                 sbig1[2] = {3, 1}, srows[2] = {4100, 9}, s9[1] = {9}, s5d[5] = {2, 1, 3, 1, 5},
                 s5e[5] = {1, 2, 1, 4, 1};
    for (int op = 0; op < EKO_BINOP_COUNT; op++) {
        const eko_binop o = (eko_binop)op;
        nd_case(r, pool, o, s0, 0, s7, 1, false);
        nd_case(r, pool, o, s7, 1, s0, 0, false);
        nd_case(r, pool, o, s5_33, 2, s33, 1, false);
        nd_case(r, pool, o, s5_33, 2, s5_1, 2, false);
        nd_case(r, pool, o, s5_1, 2, s1_33, 2, false);
        nd_case(r, pool, o, s33, 1, s5_33, 2, false);
        nd_case(r, pool, o, s3_1_17, 3, s1_4_17, 3, false);
        nd_case(r, pool, o, s2345, 4, s315, 3, false);
        nd_case(r, pool, o, sbig, 2, sbig1, 2, false);
        nd_case(r, pool, o, srows, 2, s9, 1, false);
        nd_case(r, pool, o, s5d, 5, s5e, 5, false);
        nd_case(r, pool, o, s5_33, 2, s33, 1, true);
        nd_case(r, pool, o, sbig, 2, sbig1, 2, true);
    }
    const size_t bad_a[2] = {5, 3}, bad_b[1] = {4};
    size_t st[EKO_ND_MAX_DIM];
    CHECK(!eko_nd_broadcast(2, bad_a, 1, bad_b, st));
}

static void test_clamp_where_unary(const eko_f32_rows *r, const eko_vmath *vm,
                                   ember_threadpool *pool) {
    enum { N = 40000 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    float *z = malloc(N * sizeof(float));
    uint8_t *c = malloc(N);
    fill_specials(x, N, 10.0f);
    bool ok = true;
    const size_t ns[] = {1, 7, 17, 1031, N};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        eko_f32_clamp(pool, r, ns[t], x, -2.5f, 6.0f, y);
        for (size_t i = 0; i < ns[t]; i++) {
            const float v = x[i] < -2.5f ? -2.5f : x[i] > 6.0f ? 6.0f : x[i];
            ok = ok && same(y[i], v);
        }
        eko_f32_unary(pool, vm->exp, ns[t], x, y);
        vm->exp(ns[t], x, z); /* split over threads or not: the same values */
        ok = ok && memcmp(y, z, ns[t] * sizeof(float)) == 0;
    }
    CHECK_MSG(ok, "clamp or unary over the pool differs");
    /* where over a broadcast: cond (N/8, 8), a (8), b a value */
    for (size_t i = 0; i < N; i++) c[i] = (uint8_t)(rng_float() > 0.0f);
    const size_t ys[2] = {N / 8, 8}, cs[2] = {N / 8, 8}, as[1] = {8};
    size_t st[EKO_ND_MAX_OPS][EKO_ND_MAX_DIM];
    CHECK(eko_nd_broadcast(2, ys, 2, ys, st[0]) && eko_nd_broadcast(2, ys, 2, cs, st[1]) &&
          eko_nd_broadcast(2, ys, 1, as, st[2]) && eko_nd_broadcast(2, ys, 0, as, st[3]));
    eko_nd nd;
    eko_nd_init(&nd, 2, ys, 4, (const size_t(*)[EKO_ND_MAX_DIM])st);
    eko_f32_where_nd(pool, &nd, y, c, x, x + 100);
    ok = true;
    for (size_t i = 0; i < N; i++) ok = ok && same(y[i], c[i] ? x[i % 8] : x[100]);
    CHECK_MSG(ok, "where over a broadcast differs");
    free(x);
    free(y);
    free(z);
    free(c);
}

static void test_softmax_rows(const eko_f32_rows *r, ember_threadpool *pool) {
    const size_t lens[] = {1, 3, 7, 16, 17, 33, 100, 1031};
    for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
        const size_t len = lens[t], rows = 41;
        float *x = malloc(rows * len * sizeof(float)), *y = malloc(rows * len * sizeof(float));
        float *l = malloc(rows * len * sizeof(float));
        for (size_t i = 0; i < rows * len; i++) x[i] = rng_float() * 30.0f;
        for (size_t i = 0; i < len; i++) x[len + i] = -INFINITY; /* row 1: all -inf */
        x[2 * len + len / 2] = NAN;                              /* row 2: a NaN */
        x[3 * len] = INFINITY;                                   /* row 3: +inf */
        if (len > 1) x[4 * len + 1] = -INFINITY;                 /* row 4: one -inf */
        eko_f32_softmax_rows(pool, r, rows, len, x, y, false);
        eko_f32_softmax_rows(pool, r, rows, len, x, l, true);
        bool ok = true;
        for (size_t row = 0; row < rows && ok; row++) {
            const float *xr = x + row * len;
            double max = -INFINITY, sum = 0;
            bool nan = false;
            for (size_t i = 0; i < len; i++) {
                nan = nan || isnan(xr[i]);
                max = xr[i] > max ? xr[i] : max;
            }
            for (size_t i = 0; i < len; i++) sum += exp((double)xr[i] - max);
            for (size_t i = 0; i < len && ok; i++) {
                const double e = exp((double)xr[i] - max), s = e / sum;
                const double ls = (double)xr[i] - max - log(sum);
                const float yi = y[row * len + i], li = l[row * len + i];
                if (nan || isinf(max) || isnan(s))
                    ok = isnan(yi) && isnan(li);
                else
                    ok = fabs(yi - s) <= 1e-6 * s + 1e-7 &&
                         (isinf(ls) ? li == ls : fabs(li - ls) <= 1e-6 * fabs(ls) + 2e-6);
                if (!ok)
                    CHECK_MSG(false, "softmax len %zu row %zu [%zu]: %g %g, want %g %g", len, row,
                              i, (double)yi, (double)li, s, ls);
            }
        }
        CHECK(ok);
        free(x);
        free(y);
        free(l);
    }
}

static void test_layer_norm_rows(const eko_f32_rows *r, ember_threadpool *pool) {
    const size_t lens[] = {1, 2, 7, 17, 33, 768, 1031};
    for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
        const size_t cols = lens[t], rows = 37;
        float *x = malloc(rows * cols * sizeof(float)), *y = malloc(rows * cols * sizeof(float));
        float *w = malloc(cols * sizeof(float)), *b = malloc(cols * sizeof(float));
        float mean[37], rstd[37];
        for (size_t i = 0; i < rows * cols; i++)
            x[i] = rng_float() * 3.0f + (float)(i / cols) * 5.0f;
        for (size_t i = 0; i < cols; i++) {
            w[i] = rng_float();
            b[i] = rng_float();
        }
        for (int wb = 0; wb < 4; wb++) {
            const float *wp = wb & 1 ? w : NULL, *bp = wb & 2 ? b : NULL;
            eko_f32_layer_norm_rows(pool, r, rows, cols, x, wp, bp, 1e-5f, y, mean, rstd);
            bool ok = true;
            for (size_t row = 0; row < rows && ok; row++) {
                const float *xr = x + row * cols;
                double m = 0, v = 0;
                for (size_t i = 0; i < cols; i++) m += xr[i];
                m /= (double)cols;
                for (size_t i = 0; i < cols; i++) v += (xr[i] - m) * (xr[i] - m);
                const double rs = 1.0 / sqrt(v / (double)cols + (double)1e-5f);
                ok = fabs(mean[row] - m) <= 1e-6 * fabs(m) + 1e-6 && fabs(rstd[row] - rs) <= 1e-5 * rs;
                for (size_t i = 0; i < cols && ok; i++) {
                    const double want = (xr[i] - m) * rs * (wp ? wp[i] : 1.0) + (bp ? bp[i] : 0.0);
                    /* x - mean is taken in float: an ulp of the mean, times rstd */
                    const double mean_ulp = 1.2e-7 * fabs(m) * rs * (wp ? fabs(wp[i]) : 1.0);
                    ok = fabs(y[row * cols + i] - want) <= 2e-5 * (fabs(want) + 1.0) + mean_ulp;
                }
            }
            CHECK_MSG(ok, "layer norm, %zu cols, weight %d bias %d", cols, wb & 1, wb >> 1);
        }
        free(x);
        free(y);
        free(w);
        free(b);
    }
}

int main(void) {
    const size_t npools = ot_pools_init();
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        const eko_f32_rows *r = eko_f32_rows_for((eko_isa)isa);
        if (!eko_isa_supported((eko_isa)isa) || r == NULL) {
            printf("-- %s: skipped (not on this CPU or not in this build)\n",
                   eko_isa_name((eko_isa)isa));
            continue;
        }
        CHECK(r->isa == (eko_isa)isa);
        for (size_t p = 0; p < npools; p++) {
            char name[64];
            snprintf(name, sizeof name, "rows %s, %zu thread(s)", eko_isa_name((eko_isa)isa),
                     ember_threadpool_size(g_ot_pools[p]));
            check_section(name);
            if (p == 0) test_binary_rows(r);
            test_broadcast(r, g_ot_pools[p]);
            test_clamp_where_unary(r, eko_vmath_for((eko_isa)isa), g_ot_pools[p]);
            test_softmax_rows(r, g_ot_pools[p]);
            test_layer_norm_rows(r, g_ot_pools[p]);
        }
    }
    check_section("rows active");
    CHECK(eko_isa_set(EKO_ISA_SCALAR));
    CHECK(eko_f32_rows_active() == eko_f32_rows_for(EKO_ISA_SCALAR));
    ot_pools_free();
    return check_finish();
}
