/*
 * test_kernels_speed_paths.c — the fast paths of the portable kernels
 * against plain reference loops in double.
 *
 * The register-tiled matrix product (mm, bmm, addmm: full tiles, row and
 * column remainders), convolution as a matrix product (1x1 on x itself,
 * im2col tiles in scratch, several tiles, groups, stride, padding, dilation,
 * channels-last input, and the direct loop it falls back to: no scratch,
 * channels-last out, integers), softmax and log_softmax rows (NaN, -inf,
 * all -inf, +inf, rows longer than a lane block, half types) and float32
 * sums (rows longer than a block, columns, inner dims reduced), and the
 * elementwise engine's broadcast runs (an input constant along the last
 * dim, with and without scratch; the in-place row loop). Every case
 * runs for the dtypes the path serves, with sizes chosen to cross the block
 * boundaries of the kernels.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#define KC_SCRATCH_BYTES (1 << 18)
#include "kernel_call.h"

/* ------------------------------------------------------------------------ */
/* Fixtures                                                                  */
/* ------------------------------------------------------------------------ */

/* Relative-and-absolute tolerance of a dtype for sums of ~1-sized terms. */
static double tol_of(int dtype) {
    switch (dtype) {
    case EMBER_FLOAT64: return 1e-12;
    case EMBER_FLOAT32: return 1e-5;
    case EMBER_INT32:
    case EMBER_INT64: return 0;
    default: return 1e-2;
    }
}

/* ------------------------------------------------------------------------ */
/* mm, bmm, addmm                                                            */
/* ------------------------------------------------------------------------ */

/* out = alpha * a @ b + beta * bias for one (n, k) @ (k, m), checked in double. */
static void check_mm(int dtype, int32_t n, int32_t k, int32_t m, bool addmm) {
    tt a, b, o, c;
    tt_new(&a, dtype, DIMS(n, k), NULL, false);
    tt_new(&b, dtype, DIMS(k, m), NULL, false);
    tt_new(&o, dtype, DIMS(n, m), NULL, true);
    tt_new(&c, dtype, DIMS(m), NULL, false);
    kc_fill(&a.t);
    kc_fill(&b.t);
    kc_fill(&c.t);
    bool is_int = dtype == EMBER_INT32 || dtype == EMBER_INT64;
    double alpha = addmm ? (is_int ? 3 : 0.5) : 1, beta = addmm ? (is_int ? -2 : 1.5) : 0;
    ember_status st;
    if (addmm)
        st = CALL("aten::addmm.out", &c.v, &a.v, &b.v, is_int ? v_int((int64_t)beta) : v_dbl(beta),
                  is_int ? v_int((int64_t)alpha) : v_dbl(alpha), &o.v, &o.v);
    else
        st = CALL("aten::mm.out", &a.v, &b.v, &o.v, &o.v);
    double *want = calloc((size_t)n * (size_t)m + 1, sizeof(double));
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < m; j++) {
            double s = 0;
            for (int32_t p = 0; p < k; p++) s += tt_at(&a.t, i * k + p) * tt_at(&b.t, p * m + j);
            want[i * m + j] = alpha * s + beta * tt_at(&c.t, j);
        }
    char what[96];
    snprintf(what, sizeof what, "%s %s (%d,%d)@(%d,%d)", addmm ? "addmm" : "mm",
             ember_dtype_name(dtype), n, k, k, m);
    if (CHECK_OK(st))
        CHECK_MSG(tt_close(&o.t, want, (int64_t)n * m, tol_of(dtype), what), "%s", what);
    free(want);
    tt_free(&a);
    tt_free(&b);
    tt_free(&o);
    tt_free(&c);
}

static void test_mm(void) {
    check_section("mm register tiles");
    /* full 4x32 tiles, row remainders 1..3, column remainders, k = 0 and 1 */
    const int32_t shapes[][3] = {{4, 8, 32},  {5, 7, 33}, {7, 40, 70}, {8, 64, 64}, {3, 5, 96},
                                 {1, 17, 31}, {6, 0, 40}, {9, 1, 65},  {2, 130, 2}, {13, 33, 100}};
    const int dtypes[] = {EMBER_FLOAT32, EMBER_FLOAT64, EMBER_FLOAT16, EMBER_BFLOAT16, EMBER_INT32};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            check_mm(dtypes[d], shapes[s][0], shapes[s][1], shapes[s][2], false);
            check_mm(dtypes[d], shapes[s][0], shapes[s][1], shapes[s][2], true);
        }

    /* bmm: every batch its own tiles */
    tt a, b, o;
    tt_new(&a, EMBER_FLOAT32, DIMS(3, 6, 10), NULL, false);
    tt_new(&b, EMBER_FLOAT32, DIMS(3, 10, 35), NULL, false);
    tt_new(&o, EMBER_FLOAT32, DIMS(3, 6, 35), NULL, true);
    kc_fill(&a.t);
    kc_fill(&b.t);
    if (CHECK_OK(CALL("aten::bmm.out", &a.v, &b.v, &o.v, &o.v))) {
        double want[3 * 6 * 35];
        for (int bt = 0; bt < 3; bt++)
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 35; j++) {
                    double s = 0;
                    for (int p = 0; p < 10; p++)
                        s += tt_at(&a.t, (bt * 6 + i) * 10 + p) *
                             tt_at(&b.t, (bt * 10 + p) * 35 + j);
                    want[(bt * 6 + i) * 35 + j] = s;
                }
        CHECK(tt_close(&o.t, want, 3 * 6 * 35, 1e-5, "bmm"));
    }
    tt_free(&a);
    tt_free(&b);
    tt_free(&o);
}

/* ------------------------------------------------------------------------ */
/* convolution                                                               */
/* ------------------------------------------------------------------------ */

typedef struct conv_case {
    int dtype;
    int32_t n, c, h, w; /* h == 0: a 1-d convolution over (n, c, w) */
    int32_t oc, groups, kh, kw;
    int64_t sh, sw, ph, pw, dh, dw;
    bool bias;
    bool x_last, out_last; /* channels-last input / out (2-d only) */
    size_t scratch;        /* bytes of scratch the kernel gets */
} conv_case;

static void check_conv(const conv_case *cc, const char *what) {
    const bool two = cc->h > 0;
    const int32_t h = two ? cc->h : 1, kh = two ? cc->kh : 1;
    const int64_t sh = two ? cc->sh : 1, ph = two ? cc->ph : 0, dh = two ? cc->dh : 1;
    const int32_t icg = cc->c / cc->groups, ocg = cc->oc / cc->groups;
    const int32_t oh = (int32_t)((h + 2 * ph - dh * (kh - 1) - 1) / sh + 1);
    const int32_t ow = (int32_t)((cc->w + 2 * cc->pw - cc->dw * (cc->kw - 1) - 1) / cc->sw + 1);
    static const uint8_t last[4] = {0, 2, 3, 1};
    tt x, wt, b, o;
    if (two) {
        tt_new(&x, cc->dtype, DIMS(cc->n, cc->c, h, cc->w), cc->x_last ? last : NULL, false);
        tt_new(&wt, cc->dtype, DIMS(cc->oc, icg, kh, cc->kw), NULL, false);
        tt_new(&o, cc->dtype, DIMS(cc->n, cc->oc, oh, ow), cc->out_last ? last : NULL, true);
    } else {
        tt_new(&x, cc->dtype, DIMS(cc->n, cc->c, cc->w), NULL, false);
        tt_new(&wt, cc->dtype, DIMS(cc->oc, icg, cc->kw), NULL, false);
        tt_new(&o, cc->dtype, DIMS(cc->n, cc->oc, ow), NULL, true);
    }
    tt_new(&b, cc->dtype, DIMS(cc->oc), NULL, false);
    kc_fill(&x.t);
    kc_fill(&wt.t);
    kc_fill(&b.t);

    kc_set_scratch(cc->scratch);
    ember_status st = two ? CALL("aten::convolution.out", &x.v, &wt.v, cc->bias ? &b.v : v_none(),
                                 INTS(cc->sh, cc->sw), INTS(cc->ph, cc->pw), INTS(cc->dh, cc->dw),
                                 v_bool(false), INTS(0, 0), v_int(cc->groups), &o.v, &o.v)
                          : CALL("aten::convolution.out", &x.v, &wt.v, cc->bias ? &b.v : v_none(),
                                 INTS(cc->sw), INTS(cc->pw), INTS(cc->dw), v_bool(false), INTS(0),
                                 v_int(cc->groups), &o.v, &o.v);
    kc_set_scratch(KC_SCRATCH_BYTES);

    const int64_t total = (int64_t)cc->n * cc->oc * oh * ow;
    double *want = calloc((size_t)total + 1, sizeof(double));
    for (int32_t n = 0; n < cc->n; n++)
        for (int32_t oc = 0; oc < cc->oc; oc++)
            for (int32_t oy = 0; oy < oh; oy++)
                for (int32_t ox = 0; ox < ow; ox++) {
                    double s = cc->bias ? tt_at(&b.t, oc) : 0;
                    int32_t grp = oc / ocg;
                    for (int32_t ic = 0; ic < icg; ic++)
                        for (int32_t ky = 0; ky < kh; ky++)
                            for (int32_t kx = 0; kx < cc->kw; kx++) {
                                int64_t iy = oy * sh - ph + ky * dh;
                                int64_t ix = ox * cc->sw - cc->pw + kx * cc->dw;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= cc->w) continue;
                                int64_t c = grp * icg + ic;
                                int64_t xi = ((n * (int64_t)cc->c + c) * h + iy) * cc->w + ix;
                                int64_t wi = ((oc * (int64_t)icg + ic) * kh + ky) * cc->kw + kx;
                                s += tt_at(&x.t, xi) * tt_at(&wt.t, wi);
                            }
                    want[((n * (int64_t)cc->oc + oc) * oh + oy) * ow + ox] = s;
                }
    if (CHECK_MSG(st == EMBER_OK, "%s: %s", what, ember_last_error()))
        CHECK_MSG(tt_close(&o.t, want, total, tol_of(cc->dtype) * 4, what), "%s", what);
    free(want);
    tt_free(&x);
    tt_free(&wt);
    tt_free(&b);
    tt_free(&o);
}

static void test_conv(void) {
    check_section("convolution as a matrix product");
    const size_t big = KC_SCRATCH_BYTES;
    const conv_case cases[] = {
        /* 1x1, stride 1, no padding: x itself is the col matrix */
        {EMBER_FLOAT32, 2, 8, 6, 7, 12, 1, 1, 1, 1, 1, 0, 0, 1, 1, true, false, false, big},
        {EMBER_FLOAT32, 1, 64, 16, 16, 64, 1, 1, 1, 1, 1, 0, 0, 1, 1, false, false, false, big},
        /* 1x1 with groups, and without any scratch (needs none) */
        {EMBER_FLOAT32, 2, 6, 5, 9, 9, 3, 1, 1, 1, 1, 0, 0, 1, 1, true, false, false, big},
        {EMBER_FLOAT32, 1, 8, 4, 40, 8, 2, 1, 1, 1, 1, 0, 0, 1, 1, true, false, false, 0},
        /* 1x1 strided or padded: im2col */
        {EMBER_FLOAT32, 1, 5, 9, 9, 7, 1, 1, 1, 2, 2, 0, 0, 1, 1, true, false, false, big},
        {EMBER_FLOAT32, 1, 5, 4, 6, 3, 1, 1, 1, 1, 1, 1, 2, 1, 1, false, false, false, big},
        /* 3x3 padded, as in the benchmark (small), with bias */
        {EMBER_FLOAT32, 1, 3, 20, 20, 16, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false, big},
        {EMBER_FLOAT32, 2, 8, 9, 11, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, false, false, false, big},
        /* stride, dilation, asymmetric kernel and padding, groups */
        {EMBER_FLOAT32, 1, 6, 13, 17, 4, 2, 3, 2, 2, 3, 2, 1, 2, 1, true, false, false, big},
        {EMBER_FLOAT32, 2, 4, 10, 12, 8, 4, 3, 3, 1, 2, 0, 3, 1, 2, true, false, false, big},
        /* several col tiles, the last one short: scratch for 40 columns of
         * col, then a col too wide for the tile budget */
        {EMBER_FLOAT32, 1, 8, 15, 17, 6, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false,
         8 * 9 * 4 * 40},
        {EMBER_FLOAT32, 1, 64, 9, 11, 6, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false, big},
        /* no scratch at all: the direct loop */
        {EMBER_FLOAT32, 1, 4, 9, 10, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false, 0},
        {EMBER_FLOAT32, 1, 4, 9, 10, 5, 1, 3, 3, 2, 2, 1, 0, 1, 1, true, false, false, 0},
        /* channels-last input (im2col walks its strides), channels-last out (direct) */
        {EMBER_FLOAT32, 2, 6, 7, 8, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, true, false, big},
        {EMBER_FLOAT32, 1, 6, 7, 8, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1, true, true, false, big},
        {EMBER_FLOAT32, 2, 6, 7, 8, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true, big},
        {EMBER_FLOAT32, 1, 6, 7, 8, 6, 3, 1, 1, 1, 1, 0, 0, 1, 1, true, true, true, big},
        /* 1-d */
        {EMBER_FLOAT32, 2, 4, 0, 50, 6, 1, 0, 5, 1, 2, 0, 2, 1, 1, true, false, false, big},
        {EMBER_FLOAT32, 1, 4, 0, 70, 6, 2, 0, 1, 1, 1, 0, 0, 1, 1, true, false, false, big},
        /* other dtypes: the same paths */
        {EMBER_FLOAT64, 1, 5, 9, 10, 7, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false, big},
        {EMBER_FLOAT64, 1, 8, 6, 6, 8, 2, 1, 1, 1, 1, 0, 0, 1, 1, true, false, false, big},
        {EMBER_FLOAT16, 1, 5, 9, 10, 7, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false, big},
        {EMBER_BFLOAT16, 1, 8, 6, 6, 8, 1, 1, 1, 1, 1, 0, 0, 1, 1, true, false, false, big},
        {EMBER_INT32, 1, 3, 7, 9, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false, big},
        {EMBER_INT64, 1, 4, 5, 6, 4, 2, 1, 1, 1, 1, 0, 0, 1, 1, false, false, false, big},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "conv case %zu (%s)", i, ember_dtype_name(cases[i].dtype));
        check_conv(&cases[i], what);
    }
}

/* ------------------------------------------------------------------------ */
/* softmax, log_softmax                                                      */
/* ------------------------------------------------------------------------ */

/* Reference softmax (or log_softmax) of in along dim d, as PyTorch defines it:
 * max over the row, NaN anywhere makes the row NaN, so does a max of +inf
 * or -inf (inf - inf). in is (outer, len, inner) around d. The rest in
 * double, except x - max: the kernels (and PyTorch) round it to float for
 * every dtype but float64, an error exp magnifies by |x - max|. */
static double sm_arg(const ember_tensor *in, double x, double m) {
    return in->dtype == EMBER_FLOAT64 ? x - m : (double)(float)(x - m);
}

static void ref_softmax(const ember_tensor *in, size_t d, bool log_out, double *want) {
    int64_t outer = 1, len = in->sizes[d], inner = 1;
    for (size_t i = 0; i < in->dim; i++) {
        if (i < d) outer *= in->sizes[i];
        if (i > d) inner *= in->sizes[i];
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double m = -INFINITY;
            bool nan = false;
            for (int64_t k = 0; k < len; k++) {
                double v = tt_at(in, (o * len + k) * inner + i);
                if (isnan(v)) nan = true;
                if (v > m) m = v;
            }
            double s = 0;
            for (int64_t k = 0; k < len; k++)
                s += exp(sm_arg(in, tt_at(in, (o * len + k) * inner + i), m));
            for (int64_t k = 0; k < len; k++) {
                double a = sm_arg(in, tt_at(in, (o * len + k) * inner + i), m);
                double r = log_out ? a - log(s) : exp(a) / s;
                want[(o * len + k) * inner + i] = nan ? NAN : r;
            }
        }
}

/* got against want: relative rel, plus abs for results near zero (denormals). */
static bool close_rel(const ember_tensor *got, const double *want, int64_t n, double rel,
                      double abs, const char *what) {
    for (int64_t i = 0; i < n; i++) {
        double g = tt_at(got, i), w = want[i];
        if (isnan(w) ? isnan(g) : (isinf(w) ? g == w : fabs(g - w) <= rel * fabs(w) + abs))
            continue;
        printf("  %s: element %lld: got %.9g, want %.9g\n", what, (long long)i, g, w);
        return false;
    }
    return true;
}

/* Runs softmax / log_softmax of x along dim, checks against the reference. */
static void check_softmax_of(tt *x, int64_t dim, bool log_out, double rel, double abs,
                             const char *what) {
    tt o;
    int32_t sizes[MAXD];
    for (size_t i = 0; i < x->t.dim; i++) sizes[i] = x->t.sizes[i];
    tt_new(&o, x->t.dtype, sizes, x->t.dim, NULL, true);
    ember_status st = CALL(log_out ? "aten::_log_softmax.out" : "aten::_softmax.out", &x->v,
                           v_int(dim), v_bool(false), &o.v, &o.v);
    double *want = calloc((size_t)x->t.numel + 1, sizeof(double));
    ref_softmax(&x->t, (size_t)(dim < 0 ? dim + (int64_t)x->t.dim : dim), log_out, want);
    if (CHECK_MSG(st == EMBER_OK, "%s: %s", what, ember_last_error()))
        CHECK_MSG(close_rel(&o.t, want, x->t.numel, rel, abs, what), "%s", what);
    free(want);
    tt_free(&o);
}

static double sm_rel(int dtype) {
    return dtype == EMBER_FLOAT32 ? 1e-6 : dtype == EMBER_FLOAT64 ? 1e-13 : 1e-2;
}

static void test_softmax(void) {
    check_section("softmax rows and columns");
    const int dtypes[] = {EMBER_FLOAT32, EMBER_FLOAT64, EMBER_FLOAT16, EMBER_BFLOAT16};
    /* rows shorter than, equal to and longer than the lanes, long rows */
    const int32_t lens[] = {1, 7, 32, 33, 100, 1000};
    for (size_t d = 0; d < 4; d++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
            for (int lg = 0; lg < 2; lg++) {
                tt x;
                tt_new(&x, dtypes[d], DIMS(3, lens[l]), NULL, false);
                for (int64_t i = 0; i < x.t.numel; i++) tt_set(&x.t, i, 8 * rng_double());
                char what[80];
                snprintf(what, sizeof what, "%s %s rows of %d", lg ? "log_softmax" : "softmax",
                         ember_dtype_name(dtypes[d]), lens[l]);
                check_softmax_of(&x, -1, lg, sm_rel(dtypes[d]), 1e-6, what);
                /* and along dim 0: the column path */
                snprintf(what, sizeof what, "%s %s columns of %d", lg ? "log_softmax" : "softmax",
                         ember_dtype_name(dtypes[d]), lens[l]);
                check_softmax_of(&x, 0, lg, sm_rel(dtypes[d]), 1e-6, what);
                tt_free(&x);
            }

    /* special rows (each 40 long, so lanes and tail both see them):
     * NaN, -inf among finite, all -inf, +inf, and x - max from 0 down to
     * -1000 (exp of -87 .. -104 is denormal, below -104 it is 0) */
    const double ninf = -INFINITY;
    for (size_t d = 0; d < 4; d++)
        for (int lg = 0; lg < 2; lg++) {
            tt x;
            tt_new(&x, dtypes[d], DIMS(5, 40), NULL, false);
            for (int64_t i = 0; i < 40; i++) {
                tt_set(&x.t, i, i == 37 ? NAN : rng_double());
                tt_set(&x.t, 40 + i, i % 3 == 0 ? ninf : rng_double());
                tt_set(&x.t, 80 + i, ninf);
                tt_set(&x.t, 120 + i, i == 5 ? INFINITY : rng_double());
            }
            const double deep[] = {0,    -1,   -20,  -80,  -87,    -87.5, -88,  -90,
                                   -95,  -100, -102, -103, -103.5, -104,  -105, -110,
                                   -120, -149, -150, -151, -200,   -1000, ninf};
            for (int64_t i = 0; i < 40; i++)
                tt_set(&x.t, 160 + i, deep[i % (int64_t)(sizeof deep / sizeof deep[0])]);
            char what[80];
            snprintf(what, sizeof what, "%s %s special rows", lg ? "log_softmax" : "softmax",
                     ember_dtype_name(dtypes[d]));
            /* float32: relative 1e-6 and 3 denormal steps near 0 */
            check_softmax_of(&x, -1, lg, sm_rel(dtypes[d]),
                             dtypes[d] == EMBER_FLOAT32 ? 3 * 1.401298464324817e-45 : 1e-6, what);
            snprintf(what, sizeof what, "%s %s special columns", lg ? "log_softmax" : "softmax",
                     ember_dtype_name(dtypes[d]));
            check_softmax_of(&x, 0, lg, sm_rel(dtypes[d]),
                             dtypes[d] == EMBER_FLOAT32 ? 3 * 1.401298464324817e-45 : 1e-6, what);
            tt_free(&x);
        }

    /* The float exponential itself, to a few ulp: rows (0, x, ...) with every
     * x <= -17.5, so that the sum is 1 to within 1e-6 and out = exp(x) / sum.
     * 32-long rows run the vectorized lanes, 2-long rows the scalar tail. */
    const int32_t rowlen[] = {32, 2};
    for (size_t r = 0; r < 2; r++) {
        const int32_t rows = 1200 / rowlen[r] * 2;
        tt x;
        tt_new(&x, EMBER_FLOAT32, DIMS(rows, rowlen[r]), NULL, false);
        for (int32_t i = 0; i < rows; i++)
            for (int32_t j = 0; j < rowlen[r]; j++)
                tt_set(&x.t, (int64_t)i * rowlen[r] + j,
                       j == 0 ? 0.0 : -17.5 - 86.4 * (0.5 + 0.5 * rng_double()));
        check_softmax_of(&x, -1, false, 4 * 1.2e-7, 2 * 1.401298464324817e-45,
                         rowlen[r] == 32 ? "softmax exp accuracy (lanes)"
                                         : "softmax exp accuracy (tail)");
        tt_free(&x);
    }

    /* empty rows and an empty tensor */
    tt x;
    tt_new(&x, EMBER_FLOAT32, DIMS(4, 0), NULL, false);
    check_softmax_of(&x, -1, false, 0, 0, "softmax of (4, 0)");
    tt_free(&x);
}

/* ------------------------------------------------------------------------ */
/* sum, mean (float32 fast paths)                                            */
/* ------------------------------------------------------------------------ */

/* sum (or mean) of x over dims[0..nd) vs double loops, tolerance relative to
 * the sum of magnitudes (float partial sums). */
static void check_sum_of(tt *x, const int64_t *dims, size_t nd, bool mean, const char *what) {
    const ember_tensor *t = &x->t;
    bool red[MAXD] = {false};
    for (size_t i = 0; i < nd; i++) red[dims[i] < 0 ? dims[i] + (int64_t)t->dim : dims[i]] = true;
    if (nd == 0)
        for (size_t i = 0; i < t->dim; i++) red[i] = true;
    int32_t osz[MAXD];
    size_t od = 0;
    int64_t onum = 1;
    for (size_t i = 0; i < t->dim; i++)
        if (!red[i]) {
            osz[od++] = t->sizes[i];
            onum *= t->sizes[i];
        }
    tt o;
    tt_new(&o, EMBER_FLOAT32, osz, od, NULL, true);
    double *want = calloc((size_t)onum + 1, sizeof(double));
    double *mag = calloc((size_t)onum + 1, sizeof(double));
    int64_t *cnt = calloc((size_t)onum + 1, sizeof(int64_t));
    for (int64_t i = 0; i < t->numel; i++) {
        /* output index of input element i */
        int64_t rem = i, oi = 0, scale = 1;
        for (size_t d = t->dim; d-- > 0;) {
            int64_t c = rem % t->sizes[d];
            rem /= t->sizes[d];
            if (!red[d]) {
                oi += c * scale;
                scale *= t->sizes[d];
            }
        }
        double v = tt_at(t, i);
        want[oi] += v;
        mag[oi] += fabs(v);
        cnt[oi]++;
    }
    if (mean)
        for (int64_t i = 0; i < onum; i++) want[i] /= (double)cnt[i];
    ember_value *dl = nd == 0 ? v_none() : kc_ints(dims, nd);
    ember_status st = CALL(mean ? "aten::mean.out" : "aten::sum.IntList_out", &x->v, dl,
                           v_bool(false), v_none(), &o.v, &o.v);
    if (CHECK_MSG(st == EMBER_OK, "%s: %s", what, ember_last_error())) {
        bool ok = o.t.numel == onum;
        for (int64_t i = 0; ok && i < onum; i++) {
            double g = tt_at(&o.t, i), w = want[i];
            double tol =
                1e-6 * mag[i] / (mean && cnt[i] > 0 ? (double)cnt[i] : 1) + 2e-7 * fabs(w) + 1e-30;
            if (isnan(w) ? isnan(g) : (isinf(w) ? g == w : fabs(g - w) <= tol)) continue;
            printf("  %s: element %lld: got %.9g, want %.9g\n", what, (long long)i, g, w);
            ok = false;
        }
        CHECK_MSG(ok, "%s", what);
    }
    free(want);
    free(mag);
    free(cnt);
    tt_free(&o);
}

static void test_sum(void) {
    check_section("float32 sum and mean");
    typedef struct {
        int32_t sizes[4];
        size_t dim;
        int64_t dims[4];
        size_t nd;
        size_t scratch;
        bool last; /* channels-last (4-d): the reduced run is not contiguous */
    } sum_case;
    const size_t big = KC_SCRATCH_BYTES;
    const sum_case cases[] = {
        /* contiguous runs: short, one block, several blocks, lanes folded across runs */
        {{4, 37}, 2, {-1}, 1, big, false},
        {{3, 1000}, 2, {-1}, 1, big, false},
        {{2, 5000}, 2, {1}, 1, big, false},
        {{5, 7, 300}, 3, {0, 2}, 2, big, false},
        {{64, 3, 20}, 3, {0, 2}, 2, big, false},
        {{33, 77}, 2, {0}, 0, big, false},
        {{2, 3, 4, 5}, 4, {1, 3}, 2, big, false},
        /* columns: narrow, wide from scratch, wider than the scratch block,
         * on the stack without scratch, several reduced dims */
        {{1000, 70}, 2, {0}, 1, big, false},
        {{50, 5000}, 2, {0}, 1, big, false},
        {{40, 600}, 2, {0}, 1, 0, false},
        {{3, 40, 300}, 3, {0, 1}, 2, big, false},
        {{17, 5, 33}, 3, {0}, 1, big, false},
        /* empty reductions and outputs */
        {{4, 0}, 2, {-1}, 1, big, false},
        {{0, 6}, 2, {0}, 1, big, false},
        /* not contiguous along the reduced run: the general loop */
        {{2, 6, 5, 4}, 4, {2, 3}, 2, big, true},
        {{2, 6, 5, 4}, 4, {1}, 1, big, true},
    };
    static const uint8_t last[4] = {0, 2, 3, 1};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int mean = 0; mean < 2; mean++) {
            const sum_case *sc = &cases[c];
            tt x;
            tt_new(&x, EMBER_FLOAT32, sc->sizes, sc->dim, sc->last ? last : NULL, false);
            kc_fill(&x.t);
            char what[64];
            snprintf(what, sizeof what, "%s case %zu", mean ? "mean" : "sum", c);
            kc_set_scratch(sc->scratch);
            check_sum_of(&x, sc->dims, sc->nd, mean, what);
            kc_set_scratch(KC_SCRATCH_BYTES);
            tt_free(&x);
        }

    /* NaN and infinities go through the float partial sums */
    tt x;
    tt_new(&x, EMBER_FLOAT32, DIMS(4, 600), NULL, false);
    kc_fill(&x.t);
    tt_set(&x.t, 0 * 600 + 450, NAN);
    tt_set(&x.t, 1 * 600 + 3, INFINITY);
    tt_set(&x.t, 2 * 600 + 10, INFINITY);
    tt_set(&x.t, 2 * 600 + 590, -INFINITY);
    tt_set(&x.t, 3 * 600 + 599, -INFINITY);
    check_sum_of(&x, (const int64_t[]){1}, 1, false, "sum with NaN and inf (rows)");
    check_sum_of(&x, (const int64_t[]){0}, 1, false, "sum with NaN and inf (columns)");
    tt_free(&x);
}

/* ------------------------------------------------------------------------ */
/* Elementwise engine: broadcast runs                                        */
/* ------------------------------------------------------------------------ */

/* Logical index of input t for output index i of shape osz[0..od), by
 * broadcasting (t's dims align to the right; size-1 dims repeat). */
static int64_t bcast_index(const ember_tensor *t, const int32_t *osz, size_t od, int64_t i) {
    int64_t ti = 0, scale = 1;
    for (size_t d = od; d-- > 0;) {
        int64_t c = i % osz[d];
        i /= osz[d];
        size_t lead = od - t->dim;
        if (d < lead) continue;
        int32_t s = t->sizes[d - lead];
        ti += (s == 1 ? 0 : c) * scale;
        scale *= s;
    }
    return ti;
}

typedef enum { BIN_ADD, BIN_MUL, BIN_WHERE } bin_op;

/* out = op(a, b[, c]) for broadcastable a, b (c: where's condition) against
 * double loops; out has dtype odt and the broadcast shape osz. */
static void check_bin(bin_op op, tt *a, tt *b, tt *c, int odt, const int32_t *osz, size_t od,
                      double alpha, const char *what) {
    tt o;
    tt_new(&o, odt, osz, od, NULL, true);
    ember_status st;
    if (op == BIN_ADD)
        st = CALL("aten::add.out", &a->v, &b->v, alpha == 1 ? v_int(1) : v_dbl(alpha), &o.v, &o.v);
    else if (op == BIN_MUL)
        st = CALL("aten::mul.out", &a->v, &b->v, &o.v, &o.v);
    else
        st = CALL("aten::where.self_out", &c->v, &a->v, &b->v, &o.v, &o.v);
    double *want = calloc((size_t)o.t.numel + 1, sizeof(double));
    for (int64_t i = 0; i < o.t.numel; i++) {
        double x = tt_at(&a->t, bcast_index(&a->t, osz, od, i));
        double y = tt_at(&b->t, bcast_index(&b->t, osz, od, i));
        double w =
            op == BIN_ADD ? x + alpha * y
            : op == BIN_MUL
                ? x * y
                : (((const uint8_t *)c->t.data)[tt_offset(&c->t, bcast_index(&c->t, osz, od, i))]
                       ? x
                       : y);
        want[i] = w;
    }
    if (CHECK_MSG(st == EMBER_OK, "%s: %s", what, ember_last_error()))
        CHECK_MSG(tt_close(&o.t, want, o.t.numel, tol_of(odt), what), "%s", what);
    free(want);
    tt_free(&o);
}

static void test_broadcast(void) {
    check_section("elementwise broadcast runs");
    /* (N, M) op (N, 1): the splat input, its run shorter and longer than a
     * chunk and than the scratch buffer; with and without scratch */
    const int32_t ms[] = {1, 5, 64, 65, 300, 2500};
    const size_t scr[] = {KC_SCRATCH_BYTES, 0};
    for (size_t si = 0; si < 2; si++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            kc_set_scratch(scr[si]);
            tt a, b;
            tt_new(&a, EMBER_FLOAT32, DIMS(7, ms[mi]), NULL, false);
            tt_new(&b, EMBER_FLOAT32, DIMS(7, 1), NULL, false);
            kc_fill(&a.t);
            kc_fill(&b.t);
            char what[80];
            snprintf(what, sizeof what, "add (7,%d)+(7,1) scratch %zu", ms[mi], scr[si]);
            check_bin(BIN_ADD, &a, &b, NULL, EMBER_FLOAT32, DIMS(7, ms[mi]), 1, what);
            snprintf(what, sizeof what, "add (7,1)+(7,%d) alpha 2.5 scratch %zu", ms[mi], scr[si]);
            check_bin(BIN_ADD, &b, &a, NULL, EMBER_FLOAT32, DIMS(7, ms[mi]), 2.5, what);
            snprintf(what, sizeof what, "mul (7,%d)*(7,1) scratch %zu", ms[mi], scr[si]);
            check_bin(BIN_MUL, &a, &b, NULL, EMBER_FLOAT32, DIMS(7, ms[mi]), 1, what);
            tt_free(&a);
            tt_free(&b);
            kc_set_scratch(KC_SCRATCH_BYTES);
        }

    /* both inputs splat along the last dim of a 3-d broadcast, and a
     * converted splat (int32 into float math), float16 out (not in place) */
    {
        tt a, b;
        tt_new(&a, EMBER_FLOAT32, DIMS(3, 4, 1), NULL, false);
        tt_new(&b, EMBER_INT32, DIMS(4, 1), NULL, false);
        kc_fill(&a.t);
        kc_fill(&b.t);
        tt x;
        tt_new(&x, EMBER_FLOAT32, DIMS(3, 4, 200), NULL, false);
        kc_fill(&x.t);
        check_bin(BIN_ADD, &a, &b, NULL, EMBER_FLOAT32, DIMS(3, 4, 1), 1, "add (3,4,1)+(4,1)");
        check_bin(BIN_ADD, &x, &b, NULL, EMBER_FLOAT32, DIMS(3, 4, 200), 1,
                  "add (3,4,200)+(4,1) int32 splat");
        tt h, hb;
        tt_new(&h, EMBER_FLOAT16, DIMS(3, 4, 200), NULL, false);
        tt_new(&hb, EMBER_FLOAT16, DIMS(3, 4, 1), NULL, false);
        kc_fill(&h.t);
        kc_fill(&hb.t);
        check_bin(BIN_ADD, &h, &hb, NULL, EMBER_FLOAT16, DIMS(3, 4, 200), 1,
                  "add float16 (3,4,200)+(3,4,1)");
        tt_free(&a);
        tt_free(&b);
        tt_free(&x);
        tt_free(&h);
        tt_free(&hb);
    }

    /* three inputs: where(cond (5,1), x (5,70), y (70,)) */
    {
        tt cnd, x, y;
        tt_new(&cnd, EMBER_BOOL, DIMS(5, 1), NULL, false);
        tt_new(&x, EMBER_FLOAT32, DIMS(5, 70), NULL, false);
        tt_new(&y, EMBER_FLOAT32, DIMS(70), NULL, false);
        for (int i = 0; i < 5; i++) ((uint8_t *)cnd.t.data)[i] = (uint8_t)(i % 2);
        kc_fill(&x.t);
        kc_fill(&y.t);
        check_bin(BIN_WHERE, &x, &y, &cnd, EMBER_FLOAT32, DIMS(5, 70), 1,
                  "where (5,1) (5,70) (70,)");
        tt_free(&cnd);
        tt_free(&x);
        tt_free(&y);
    }

    /* in-place runs of the next-to-last dim (the tight row loop): (N,) rows,
     * (A,1,M) + (1,B,M), a 1-d run, and a transposed (not contiguous) input */
    {
        tt a, b;
        tt_new(&a, EMBER_FLOAT32, DIMS(6, 9, 33), NULL, false);
        tt_new(&b, EMBER_FLOAT32, DIMS(33), NULL, false);
        kc_fill(&a.t);
        kc_fill(&b.t);
        check_bin(BIN_ADD, &a, &b, NULL, EMBER_FLOAT32, DIMS(6, 9, 33), 1, "add (6,9,33)+(33,)");
        tt_free(&a);
        tt_free(&b);
        tt_new(&a, EMBER_FLOAT32, DIMS(5, 1, 40), NULL, false);
        tt_new(&b, EMBER_FLOAT32, DIMS(1, 7, 40), NULL, false);
        kc_fill(&a.t);
        kc_fill(&b.t);
        check_bin(BIN_MUL, &a, &b, NULL, EMBER_FLOAT32, DIMS(5, 7, 40), 1, "mul (5,1,40)*(1,7,40)");
        tt_free(&a);
        tt_free(&b);
        tt_new(&a, EMBER_FLOAT64, DIMS(100), NULL, false);
        tt_new(&b, EMBER_FLOAT64, DIMS(100), NULL, false);
        kc_fill(&a.t);
        kc_fill(&b.t);
        check_bin(BIN_ADD, &a, &b, NULL, EMBER_FLOAT64, DIMS(100), 0.5, "add (100,)+(100,)");
        tt_free(&a);
        tt_free(&b);
        static const uint8_t tr[2] = {1, 0};
        tt_new(&a, EMBER_FLOAT32, DIMS(12, 30), tr, false);
        tt_new(&b, EMBER_FLOAT32, DIMS(12, 30), NULL, false);
        kc_fill(&a.t);
        kc_fill(&b.t);
        check_bin(BIN_ADD, &a, &b, NULL, EMBER_FLOAT32, DIMS(12, 30), 1,
                  "add transposed + (12,30)");
        tt_free(&a);
        tt_free(&b);
    }
}

int main(void) {
    kc_init();
    rng_seed(12345);

    test_mm();
    test_conv();
    test_softmax();
    test_sum();
    test_broadcast();
    return check_finish();
}
