/*
 * test_conv_nd.c — aten::convolution.out over 1-d, 2-d and 3-d inputs
 * against a plain reference loop in double.
 *
 * One reference serves every rank and both directions (a gather for the
 * plain convolution, a scatter for the transposed one), so each case checks
 * the kernel's own index arithmetic: odd sizes, kernels larger than the
 * stride, dilation, groups up to depthwise, padding larger than half the
 * kernel, depth 1, batches, channels-last(-3d) input and out, transposed
 * convolutions with output_padding and groups, every dtype, with and without
 * scratch (the im2col product and the direct loop). Bad parameters and
 * shapes must fail with a clean status.
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

static double tol_of(int dtype) {
    switch (dtype) {
    case EMBER_FLOAT64: return 1e-12;
    case EMBER_FLOAT32: return 1e-5;
    case EMBER_FLOAT16:
    case EMBER_BFLOAT16: return 4e-2;
    default: return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* One case                                                                  */
/* ------------------------------------------------------------------------ */

enum { SCRATCH_FULL, SCRATCH_NONE, SCRATCH_SMALL };

typedef struct conv_case {
    int dtype;
    int nsp;                   /* spatial dims: 1, 2 or 3 */
    int32_t n, c, sz[3];       /* input (N, C, spatial...) */
    int32_t oc, groups, k[3];  /* out channels, groups, kernel */
    int64_t s[3], p[3], d[3];  /* stride, padding, dilation */
    bool transposed;
    int64_t op[3];             /* output_padding (transposed) */
    bool bias;
    bool x_last, out_last;     /* channels-last(-3d) input / out */
    int scratch;
} conv_case;

/* Output size along spatial dim i. */
static int64_t out_size(const conv_case *cc, int i) {
    if (!cc->transposed)
        return (cc->sz[i] + 2 * cc->p[i] - cc->d[i] * (cc->k[i] - 1) - 1) / cc->s[i] + 1;
    return (cc->sz[i] - 1) * cc->s[i] - 2 * cc->p[i] + cc->d[i] * (cc->k[i] - 1) + cc->op[i] + 1;
}

/* Row-major index of (n, c, z, y, x) in a (N, C, D, H, W) view of a tensor whose
 * missing leading spatial dims have size 1: the same as its own logical index. */
static int64_t lin(int64_t n, int64_t c, int64_t z, int64_t y, int64_t x, int64_t C,
                   const int64_t *dhw) {
    return (((n * C + c) * dhw[0] + z) * dhw[1] + y) * dhw[2] + x;
}

/* The reference in double: gather (plain) or scatter (transposed). */
static void reference(const conv_case *cc, const ember_tensor *x, const ember_tensor *w,
                      const ember_tensor *b, double *want, const int64_t *in3,
                      const int64_t *k3, const int64_t *o3, const int64_t *s3, const int64_t *p3,
                      const int64_t *d3) {
    const int64_t icg = cc->c / cc->groups, ocg = cc->oc / cc->groups;
    const int64_t total = (int64_t)cc->n * cc->oc * o3[0] * o3[1] * o3[2];
    for (int64_t i = 0; i < total; i++) {
        int64_t oc = i / (o3[0] * o3[1] * o3[2]) % cc->oc;
        want[i] = cc->bias ? tt_at(b, oc) : 0;
    }
    for (int64_t n = 0; n < cc->n; n++)
        for (int64_t c = 0; c < cc->c; c++)
            for (int64_t j = 0; j < ocg; j++)
                for (int64_t kz = 0; kz < k3[0]; kz++)
                    for (int64_t ky = 0; ky < k3[1]; ky++)
                        for (int64_t kx = 0; kx < k3[2]; kx++)
                            for (int64_t iz = 0; iz < in3[0]; iz++)
                                for (int64_t iy = 0; iy < in3[1]; iy++)
                                    for (int64_t ix = 0; ix < in3[2]; ix++) {
                                        const int64_t grp = c / icg, oc = grp * ocg + j;
                                        int64_t oz, oy, ox, wi;
                                        if (cc->transposed) {
                                            /* input ix feeds output ix * s - p + k * d */
                                            oz = iz * s3[0] - p3[0] + kz * d3[0];
                                            oy = iy * s3[1] - p3[1] + ky * d3[1];
                                            ox = ix * s3[2] - p3[2] + kx * d3[2];
                                            wi = lin(c, j, kz, ky, kx, ocg, k3);
                                        } else {
                                            /* output o reads input o * s - p + k * d */
                                            int64_t tz = iz + p3[0] - kz * d3[0];
                                            int64_t ty = iy + p3[1] - ky * d3[1];
                                            int64_t tx = ix + p3[2] - kx * d3[2];
                                            if (tz < 0 || ty < 0 || tx < 0 || tz % s3[0] ||
                                                ty % s3[1] || tx % s3[2])
                                                continue;
                                            oz = tz / s3[0], oy = ty / s3[1], ox = tx / s3[2];
                                            wi = lin(oc, c - grp * icg, kz, ky, kx, icg, k3);
                                        }
                                        if (oz < 0 || oz >= o3[0] || oy < 0 || oy >= o3[1] ||
                                            ox < 0 || ox >= o3[2])
                                            continue;
                                        want[lin(n, oc, oz, oy, ox, cc->oc, o3)] +=
                                            tt_at(x, lin(n, c, iz, iy, ix, cc->c, in3)) *
                                            tt_at(w, wi);
                                    }
    if (kt_is_int(cc->dtype)) /* wrap as the out dtype does */
        for (int64_t i = 0; i < total; i++) {
            uint64_t cell = 0;
            kt_put(cc->dtype, &cell, 0, want[i]);
            want[i] = kt_get(cc->dtype, &cell, 0);
        }
}

static void check_case(const conv_case *cc, const char *what) {
    const int nsp = cc->nsp, first = 3 - nsp;
    /* (D, H, W) views: the dims a lower rank lacks are trivial */
    int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, o3[3] = {1, 1, 1}, s3[3] = {1, 1, 1};
    int64_t p3[3] = {0, 0, 0}, d3[3] = {1, 1, 1};
    int32_t xs[5], ws[5], os[5];
    const int32_t icg = cc->c / cc->groups, ocg = cc->oc / cc->groups;
    xs[0] = cc->n, xs[1] = cc->c;
    ws[0] = cc->transposed ? cc->c : cc->oc, ws[1] = cc->transposed ? ocg : icg;
    os[0] = cc->n, os[1] = cc->oc;
    for (int i = 0; i < nsp; i++) {
        in3[first + i] = cc->sz[i], k3[first + i] = cc->k[i], o3[first + i] = out_size(cc, i);
        s3[first + i] = cc->s[i], p3[first + i] = cc->p[i], d3[first + i] = cc->d[i];
        xs[2 + i] = cc->sz[i], ws[2 + i] = cc->k[i], os[2 + i] = (int32_t)o3[first + i];
    }
    /* channels last: (0, 2, ..., 1) */
    uint8_t last[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < nsp; i++) last[1 + i] = (uint8_t)(2 + i);
    last[1 + nsp] = 1;
    tt x, w, b, o;
    const size_t dim = (size_t)nsp + 2;
    tt_new(&x, cc->dtype, xs, dim, cc->x_last ? last : NULL, false);
    tt_new(&w, cc->dtype, ws, dim, NULL, false);
    tt_new(&o, cc->dtype, os, dim, cc->out_last ? last : NULL, true);
    tt_new(&b, cc->dtype, (const int32_t[]){cc->oc}, 1, NULL, false);
    kc_fill(&x.t);
    kc_fill(&w.t);
    kc_fill(&b.t);

    int64_t sl[3], pl[3], dl[3], opl[3];
    for (int i = 0; i < nsp; i++) sl[i] = cc->s[i], pl[i] = cc->p[i], dl[i] = cc->d[i];
    for (int i = 0; i < nsp; i++) opl[i] = cc->transposed ? cc->op[i] : 0;
    ember_value none = kt_none();
    switch (cc->scratch) {
    case SCRATCH_NONE: kc_set_scratch(0); break;
    case SCRATCH_SMALL: kc_set_scratch(4096); break; /* a few short col tiles */
    default: kc_set_scratch(KC_SCRATCH_BYTES); break;
    }
    ember_status st =
        CALL("aten::convolution.out", &x.v, &w.v, cc->bias ? &b.v : &none, kc_ints(sl, (size_t)nsp),
             kc_ints(pl, (size_t)nsp), kc_ints(dl, (size_t)nsp), v_bool(cc->transposed),
             kc_ints(opl, (size_t)nsp), v_int(cc->groups), &o.v, &o.v);
    kc_set_scratch(KC_SCRATCH_BYTES);

    const int64_t total = (int64_t)cc->n * cc->oc * o3[0] * o3[1] * o3[2];
    double *want = calloc((size_t)total + 1, sizeof(double));
    reference(cc, &x.t, &w.t, &b.t, want, in3, k3, o3, s3, p3, d3);
    if (CHECK_MSG(st == EMBER_OK, "%s: %s", what, ember_last_error())) {
        bool shape_ok = o.t.dim == dim;
        for (size_t i = 0; shape_ok && i < dim; i++) shape_ok = o.t.sizes[i] == os[i];
        if (CHECK_MSG(shape_ok, "%s: out shape", what))
            CHECK_MSG(tt_close(&o.t, want, total, tol_of(cc->dtype), what), "%s", what);
    }
    free(want);
    tt_free(&x);
    tt_free(&w);
    tt_free(&b);
    tt_free(&o);
}

/* ------------------------------------------------------------------------ */
/* Cases                                                                     */
/* ------------------------------------------------------------------------ */

#define F32 EMBER_FLOAT32
#define V3(a, b, c) {a, b, c}

static void test_conv3d(void) {
    check_section("convolution 3-d");
    const conv_case cases[] = {
        /* dtype nsp  n  c  sizes           oc g  kernel       stride       padding      dilation
         *   transposed output_padding  bias x_last out_last scratch */
        /* odd sizes, 3x3x3 padded: the im2col product */
        {F32, 3, 1, 3, V3(5, 7, 6), 4, 1, V3(3, 3, 3), V3(1, 1, 1), V3(1, 1, 1), V3(1, 1, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        /* kernel larger than the stride, mixed strides, batch 2 */
        {F32, 3, 2, 2, V3(7, 9, 8), 3, 1, V3(3, 2, 3), V3(2, 1, 2), V3(1, 0, 1), V3(1, 1, 1),
         false, V3(0, 0, 0), false, false, false, SCRATCH_FULL},
        /* dilation > 1, padding larger than half the kernel */
        {F32, 3, 1, 2, V3(6, 5, 7), 2, 1, V3(2, 3, 2), V3(1, 2, 1), V3(2, 3, 2), V3(3, 1, 2),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        /* depthwise (groups = C), and grouped with 2 channels a group */
        {F32, 3, 2, 4, V3(5, 6, 5), 4, 4, V3(3, 3, 3), V3(1, 2, 1), V3(1, 1, 1), V3(1, 1, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {F32, 3, 1, 6, V3(3, 5, 4), 9, 3, V3(1, 3, 3), V3(1, 1, 1), V3(0, 1, 1), V3(1, 1, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        /* depth 1, a (1, 3, 3) kernel: a 2-d convolution in a 3-d tensor */
        {F32, 3, 2, 3, V3(1, 6, 7), 4, 1, V3(1, 3, 3), V3(1, 1, 1), V3(0, 1, 1), V3(1, 1, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        /* (3, 1, 1) temporal kernel of a (2+1)-d block, and a 1x1x1 one (x is col) */
        {F32, 3, 2, 4, V3(5, 3, 4), 5, 1, V3(3, 1, 1), V3(1, 1, 1), V3(1, 0, 0), V3(1, 1, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {F32, 3, 2, 6, V3(3, 4, 5), 4, 2, V3(1, 1, 1), V3(1, 1, 1), V3(0, 0, 0), V3(1, 1, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        /* channels-last-3d input (im2col walks its strides), and out (direct loop) */
        {F32, 3, 2, 3, V3(4, 5, 6), 4, 1, V3(3, 3, 3), V3(1, 2, 1), V3(1, 1, 1), V3(1, 1, 1),
         false, V3(0, 0, 0), true, true, false, SCRATCH_FULL},
        {F32, 3, 1, 4, V3(3, 4, 5), 4, 2, V3(2, 3, 3), V3(1, 1, 2), V3(1, 1, 1), V3(1, 2, 1),
         false, V3(0, 0, 0), true, true, true, SCRATCH_FULL},
        {F32, 3, 2, 4, V3(3, 3, 3), 6, 1, V3(1, 1, 1), V3(1, 1, 1), V3(0, 0, 0), V3(1, 1, 1),
         false, V3(0, 0, 0), false, true, false, SCRATCH_FULL},
        /* several short col tiles, and no scratch at all (the direct loop) */
        {F32, 3, 1, 3, V3(5, 7, 9), 4, 1, V3(3, 3, 3), V3(1, 1, 1), V3(1, 1, 1), V3(1, 1, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_SMALL},
        {F32, 3, 2, 4, V3(5, 6, 7), 4, 2, V3(3, 2, 3), V3(2, 1, 2), V3(2, 1, 0), V3(1, 2, 1),
         false, V3(0, 0, 0), true, false, false, SCRATCH_NONE},
        /* transposed: stride 2 with output_padding, groups, dilation, depthwise */
        {F32, 3, 1, 2, V3(3, 4, 3), 3, 1, V3(3, 3, 3), V3(2, 2, 2), V3(1, 1, 1), V3(1, 1, 1),
         true, V3(1, 0, 1), true, false, false, SCRATCH_FULL},
        {F32, 3, 2, 4, V3(2, 3, 4), 6, 2, V3(2, 3, 2), V3(2, 1, 3), V3(0, 1, 1), V3(1, 2, 1),
         true, V3(1, 0, 2), true, false, false, SCRATCH_FULL},
        {F32, 3, 1, 3, V3(3, 3, 3), 3, 3, V3(3, 3, 3), V3(1, 2, 1), V3(2, 0, 1), V3(2, 1, 1),
         true, V3(0, 1, 0), false, true, true, SCRATCH_FULL},
        /* other dtypes, plain and transposed */
        {EMBER_FLOAT64, 3, 1, 2, V3(4, 5, 3), 3, 1, V3(2, 3, 2), V3(1, 1, 2), V3(1, 1, 1),
         V3(1, 1, 1), false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {EMBER_FLOAT16, 3, 1, 2, V3(3, 5, 4), 2, 2, V3(3, 3, 3), V3(1, 1, 1), V3(1, 1, 1),
         V3(1, 1, 1), false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {EMBER_BFLOAT16, 3, 1, 2, V3(3, 4, 4), 2, 1, V3(1, 3, 3), V3(1, 2, 2), V3(0, 1, 1),
         V3(1, 1, 1), true, V3(0, 1, 1), true, false, false, SCRATCH_FULL},
        {EMBER_INT64, 3, 1, 2, V3(3, 4, 5), 2, 1, V3(3, 3, 3), V3(1, 1, 2), V3(1, 1, 1),
         V3(1, 1, 1), false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {EMBER_INT32, 3, 1, 2, V3(3, 3, 3), 2, 2, V3(2, 2, 2), V3(2, 2, 2), V3(0, 0, 0),
         V3(1, 1, 1), true, V3(1, 1, 1), true, false, false, SCRATCH_FULL},
        {EMBER_INT16, 3, 2, 2, V3(3, 3, 4), 2, 1, V3(2, 2, 2), V3(1, 1, 1), V3(1, 1, 1),
         V3(1, 1, 1), false, V3(0, 0, 0), false, true, false, SCRATCH_FULL},
        {EMBER_INT8, 3, 1, 3, V3(3, 4, 3), 3, 3, V3(3, 3, 3), V3(1, 1, 1), V3(1, 1, 1),
         V3(1, 1, 1), false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {EMBER_UINT8, 3, 1, 2, V3(2, 3, 3), 2, 1, V3(2, 2, 2), V3(2, 1, 1), V3(1, 0, 1),
         V3(1, 1, 1), true, V3(1, 0, 0), true, false, false, SCRATCH_FULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "3-d case %zu (%s)", i, ember_dtype_name(cases[i].dtype));
        check_case(&cases[i], what);
    }
}

/* The same loops for lower ranks: regressions of 1-d and 2-d. */
static void test_conv_low_rank(void) {
    check_section("convolution 1-d and 2-d");
    const conv_case cases[] = {
        {F32, 2, 2, 4, V3(7, 9, 0), 6, 2, V3(3, 2, 0), V3(2, 1, 0), V3(2, 1, 0), V3(1, 2, 0),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {F32, 2, 1, 3, V3(6, 5, 0), 3, 3, V3(3, 3, 0), V3(1, 2, 0), V3(1, 1, 0), V3(1, 1, 0),
         false, V3(0, 0, 0), true, true, true, SCRATCH_NONE},
        {F32, 2, 2, 4, V3(3, 4, 0), 6, 2, V3(3, 2, 0), V3(2, 3, 0), V3(1, 0, 0), V3(1, 1, 0),
         true, V3(1, 2, 0), true, false, false, SCRATCH_FULL},
        {EMBER_FLOAT16, 2, 1, 3, V3(5, 6, 0), 4, 1, V3(3, 3, 0), V3(1, 1, 0), V3(1, 1, 0),
         V3(1, 1, 0), false, V3(0, 0, 0), true, true, false, SCRATCH_SMALL},
        {EMBER_INT32, 2, 1, 2, V3(4, 5, 0), 2, 1, V3(2, 3, 0), V3(1, 2, 0), V3(1, 1, 0),
         V3(1, 1, 0), false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {F32, 1, 2, 4, V3(11, 0, 0), 6, 2, V3(3, 0, 0), V3(2, 0, 0), V3(2, 0, 0), V3(2, 0, 0),
         false, V3(0, 0, 0), true, false, false, SCRATCH_FULL},
        {F32, 1, 1, 3, V3(9, 0, 0), 3, 3, V3(4, 0, 0), V3(3, 0, 0), V3(1, 0, 0), V3(1, 0, 0),
         true, V3(2, 0, 0), true, false, false, SCRATCH_FULL},
        {EMBER_FLOAT64, 1, 1, 2, V3(8, 0, 0), 3, 1, V3(3, 0, 0), V3(1, 0, 0), V3(1, 0, 0),
         V3(1, 0, 0), false, V3(0, 0, 0), false, true, true, SCRATCH_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "%d-d case %zu (%s)", cases[i].nsp, i,
                 ember_dtype_name(cases[i].dtype));
        check_case(&cases[i], what);
    }
}

/* ------------------------------------------------------------------------ */
/* Bad input                                                                 */
/* ------------------------------------------------------------------------ */

/* convolution.out on x (1, 2, 4, 4, 4) and weight wsz with the given lists. */
static ember_status call_bad(const int32_t *xsz, size_t xdim, const int32_t *wsz, size_t wdim,
                             const int64_t *s, size_t ns, const int64_t *p, size_t np,
                             const int64_t *d, size_t nd, bool transposed, const int64_t *op,
                             size_t nop, int64_t groups, const int32_t *bsz) {
    static float xb[4096], wb[4096], ob[65536], bb[64];
    tt x, w, o, b;
    const int32_t osz[5] = {1, 1, 1, 1, 1};
    tt_init(&x, F32, xsz, xdim, xb, sizeof xb, false, NULL);
    tt_init(&w, F32, wsz, wdim, wb, sizeof wb, false, NULL);
    tt_init(&o, F32, osz, xdim < 5 ? xdim : 5, ob, sizeof ob, true, NULL);
    o.t.capacity = sizeof ob;
    ember_value none = kt_none();
    if (bsz != NULL) tt_init(&b, F32, bsz, 1, bb, sizeof bb, false, NULL);
    return CALL("aten::convolution.out", &x.v, &w.v, bsz != NULL ? &b.v : &none, kc_ints(s, ns),
                kc_ints(p, np), kc_ints(d, nd), v_bool(transposed), kc_ints(op, nop), v_int(groups),
                &o.v, &o.v);
}

static void test_conv_bad_input(void) {
    check_section("convolution: bad input");
    const int32_t x5[5] = {1, 2, 4, 4, 4}, w5[5] = {2, 2, 3, 3, 3};
    const int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0}, two[3] = {2, 2, 2};
    /* rank 6 input and weight; weight rank other than the input's */
    const int32_t x6[6] = {1, 2, 2, 2, 2, 2}, w6[6] = {2, 2, 1, 1, 1, 1};
    CHECK_ERR(call_bad(x6, 6, w6, 6, one, 1, zero, 1, one, 1, false, zero, 1, 1, NULL),
              EMBER_ERR_NOT_SUPPORTED, "1-d, 2-d and 3-d");
    CHECK_ERR(call_bad(x5, 5, (const int32_t[]){2, 2, 3, 3}, 4, one, 1, zero, 1, one, 1, false,
                       zero, 1, 1, NULL),
              EMBER_ERR_NOT_SUPPORTED, "weight rank 4");
    /* two strides for three spatial dims; stride 0; negative padding */
    CHECK_ERR(call_bad(x5, 5, w5, 5, one, 2, zero, 3, one, 3, false, zero, 3, 1, NULL),
              EMBER_ERR_INVALID_ARGUMENT, "stride has 2 values for 3 spatial dims");
    CHECK_ERR(call_bad(x5, 5, w5, 5, (const int64_t[]){1, 0, 1}, 3, zero, 3, one, 3, false, zero,
                       3, 1, NULL),
              EMBER_ERR_INVALID_ARGUMENT, "stride value 0");
    CHECK_ERR(call_bad(x5, 5, w5, 5, one, 3, (const int64_t[]){0, 0, -1}, 3, one, 3, false, zero,
                       3, 1, NULL),
              EMBER_ERR_INVALID_ARGUMENT, "padding value -1");
    /* huge dilation: bounded before any size is computed */
    CHECK_ERR(call_bad(x5, 5, w5, 5, one, 3, zero, 3, (const int64_t[]){INT64_MAX / 2, 1, 1}, 3,
                       false, zero, 3, 1, NULL),
              EMBER_ERR_INVALID_ARGUMENT, "dilation value");
    /* kernel deeper than the padded input: depth 4, kernel 3 dilated by 2 */
    CHECK_ERR(call_bad(x5, 5, w5, 5, one, 3, zero, 3, (const int64_t[]){2, 1, 1}, 3, false, zero,
                       3, 1, NULL),
              EMBER_ERR_SHAPE_MISMATCH, "kernel larger than padded input in spatial dim 0");
    /* a zero-size kernel dim */
    CHECK_ERR(call_bad(x5, 5, (const int32_t[]){2, 2, 3, 0, 3}, 5, one, 3, zero, 3, one, 3, false,
                       zero, 3, 1, NULL),
              EMBER_ERR_SHAPE_MISMATCH, "kernel size 0 in spatial dim 1");
    /* channels: 3 groups of 2 channels; weight for 1 channel a group */
    CHECK_ERR(call_bad(x5, 5, w5, 5, one, 3, zero, 3, one, 3, false, zero, 3, 3, NULL),
              EMBER_ERR_SHAPE_MISMATCH, "not divisible by 3 groups");
    CHECK_ERR(call_bad(x5, 5, (const int32_t[]){2, 1, 3, 3, 3}, 5, one, 3, zero, 3, one, 3, false,
                       zero, 3, 1, NULL),
              EMBER_ERR_SHAPE_MISMATCH, "does not fit");
    /* bias of the wrong length */
    CHECK_ERR(call_bad(x5, 5, w5, 5, one, 3, zero, 3, one, 3, false, zero, 3, 1,
                       (const int32_t[]){3}),
              EMBER_ERR_SHAPE_MISMATCH, "bias must have shape (2)");
    /* transposed: output_padding not below stride or dilation (depth) */
    CHECK_ERR(call_bad(x5, 5, w5, 5, two, 3, zero, 3, one, 3, true, (const int64_t[]){2, 0, 0}, 3,
                       1, NULL),
              EMBER_ERR_INVALID_ARGUMENT, "output_padding");
    /* transposed: padding that leaves a negative output size */
    CHECK_ERR(call_bad(x5, 5, w5, 5, one, 3, (const int64_t[]){9, 0, 0}, 3, one, 3, true, zero, 3,
                       1, NULL),
              EMBER_ERR_SHAPE_MISMATCH, "negative");
    /* transposed weight for other input channels */
    CHECK_ERR(call_bad(x5, 5, (const int32_t[]){3, 2, 3, 3, 3}, 5, one, 3, zero, 3, one, 3, true,
                       zero, 3, 1, NULL),
              EMBER_ERR_SHAPE_MISMATCH, "transposed weight has 3 input channels");
}

int main(void) {
    kc_init();
    rng_seed(4242);

    test_conv3d();
    test_conv_low_rank();
    test_conv_bad_input();
    return check_finish();
}
