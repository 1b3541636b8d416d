/*
 * test_kernels_batch_a.c — unit tests of the portable kernels for inverse and
 * hyperbolic math, atan2, fmod, pow of a Scalar base, clamp with tensor
 * bounds, fill, empty_strided, prod, var.out, sort, topk, nonzero, and the
 * random kernels (rand, randn, randperm, native_dropout).
 *
 * Tensors are built by hand over arrays owned by each test; kernels are
 * called through the portable table by key. Expected values come from the C
 * library, from hand computation, or (for the random kernels) from the
 * distribution: range, mean and standard deviation within a few standard
 * errors, permutation validity, and reproducibility after seeding. Every
 * error case expects a clean status and a message naming the problem.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#define KC_SCRATCH_BYTES (1 << 12)
#include "kernel_call.h"

/* ------------------------------------------------------------------------ */
/* Fixtures                                                                  */
/* ------------------------------------------------------------------------ */

/* The TensorList a multi-output op gets last. */
static ember_value *pair(tl *l, tt *a, tt *b) {
    return tl_init(l, (tt *[]){a, b}, 2, false);
}

/* |got - want| <= tol * (1 + |want|), NaN matching NaN, inf matching inf. */
static bool near_rel(double got, double want, double tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* ------------------------------------------------------------------------ */
/* Unary float math                                                          */
/* ------------------------------------------------------------------------ */

typedef struct unary_case {
    const char *key;
    double (*ref)(double);
    float lo, hi; /* domain the test samples */
} unary_case;

static void test_unary(void) {
    check_section("acos, acosh, asin, asinh, atanh, cosh, sinh, log10");
    const unary_case cases[] = {
        {"aten::acos.out", acos, -1.0f, 1.0f},    {"aten::acosh.out", acosh, 1.0f, 9.0f},
        {"aten::asin.out", asin, -1.0f, 1.0f},    {"aten::asinh.out", asinh, -9.0f, 9.0f},
        {"aten::atanh.out", atanh, -0.99f, 0.99f}, {"aten::cosh.out", cosh, -5.0f, 5.0f},
        {"aten::sinh.out", sinh, -5.0f, 5.0f},    {"aten::log10.out", log10, 0.001f, 1000.0f},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const unary_case *u = &cases[c];
        tt x, o, xd64, od64, xi, oh, oi;
        float xd[9], od[9];
        double want[9], dd[9], dod[9];
        for (int i = 0; i < 9; i++) {
            xd[i] = u->lo + (u->hi - u->lo) * (float)i / 8.0f;
            dd[i] = xd[i];
            want[i] = u->ref(xd[i]);
        }
        IN(x, EMBER_FLOAT32, xd, 3, 3);
        OUT(o, EMBER_FLOAT32, od, 3, 3);
        CHECK_MSG(CALL(u->key, &x.v, &o.v, &o.v) == EMBER_OK, "%s: %s", u->key,
                  ember_last_error());
        CHECK_MSG(close_fd(od, want, 9, 1e-6), "%s float32", u->key);
        CHECK(SHAPE_IS(&o.t, 3, 3));
        /* float64 in, float64 out */
        IN(xd64, EMBER_FLOAT64, dd, 9);
        OUT(od64, EMBER_FLOAT64, dod, 9);
        CHECK_OK(CALL(u->key, &xd64.v, &od64.v, &od64.v));
        bool ok = true;
        for (int i = 0; i < 9; i++) ok &= near_rel(dod[i], want[i], 1e-14);
        CHECK_MSG(ok, "%s float64", u->key);
        /* int32 in gives float32; written to a float16 out it rounds */
        int32_t id[2] = {1, 2};
        uint16_t hd[2];
        IN(xi, EMBER_INT32, id, 2);
        OUT(oh, EMBER_FLOAT16, hd, 2);
        CHECK_OK(CALL(u->key, &xi.v, &oh.v, &oh.v));
        CHECK_MSG(near_rel(ember_half_to_float(hd[1]), u->ref(2.0), 1e-3), "%s int->half",
                  u->key);
        /* ... but never to an integer out */
        int32_t iod[2];
        OUT(oi, EMBER_INT32, iod, 2);
        CHECK_ERR(CALL(u->key, &xi.v, &oi.v, &oi.v), EMBER_ERR_TYPE_MISMATCH, "can't be cast");
    }
    /* out of domain gives NaN, the poles infinities */
    tt x, o;
    float xd[4] = {2.0f, -1.0f, 1.0f, 0.0f}, od[4];
    IN(x, EMBER_FLOAT32, xd, 4);
    OUT(o, EMBER_FLOAT32, od, 4);
    CHECK_OK(CALL("aten::acos.out", &x.v, &o.v, &o.v));
    CHECK(isnan(od[0]) && near_rel(od[1], acos(-1.0), 1e-6) && od[2] == 0.0f);
    CHECK_OK(CALL("aten::atanh.out", &x.v, &o.v, &o.v));
    CHECK(isnan(od[0]) && isinf(od[1]) && od[1] < 0 && isinf(od[2]) && od[2] > 0 && od[3] == 0);
    CHECK_OK(CALL("aten::log10.out", &x.v, &o.v, &o.v));
    CHECK(near_rel(od[0], log10(2.0), 1e-6) && isnan(od[1]) && od[2] == 0 && isinf(od[3]));
    CHECK_OK(CALL("aten::acosh.out", &x.v, &o.v, &o.v));
    CHECK(isnan(od[1]) && isnan(od[3]) && od[2] == 0);
    /* bfloat16 in, bfloat16 out */
    tt bx, bo;
    uint16_t bxd[2] = {ember_float_to_bf16(0.5f), ember_float_to_bf16(-2.0f)}, bod[2];
    IN(bx, EMBER_BFLOAT16, bxd, 2);
    OUT(bo, EMBER_BFLOAT16, bod, 2);
    CHECK_OK(CALL("aten::sinh.out", &bx.v, &bo.v, &bo.v));
    CHECK(near_rel(ember_bf16_to_float(bod[0]), sinh(0.5), 1e-2) &&
          near_rel(ember_bf16_to_float(bod[1]), sinh(-2.0), 1e-2));
    /* bool in gives float32: cosh(true) = cosh(1) */
    tt bb, bf;
    uint8_t bbd[2] = {0, 1};
    float bfd[2];
    IN(bb, EMBER_BOOL, bbd, 2);
    OUT(bf, EMBER_FLOAT32, bfd, 2);
    CHECK_OK(CALL("aten::cosh.out", &bb.v, &bf.v, &bf.v));
    CHECK(bfd[0] == 1.0f && near_rel(bfd[1], cosh(1.0), 1e-6));
    /* errors: out too small, wrong argument count, a non-tensor, unsupported dtype */
    tt small;
    float sd[2];
    OUT(small, EMBER_FLOAT32, sd, 2);
    CHECK_ERR(CALL("aten::asin.out", &x.v, &small.v, &small.v), EMBER_ERR_SHAPE_MISMATCH, "");
    CHECK_STATUS(CALL("aten::asin.out", &x.v, &o.v), EMBER_ERR_INVALID_PROGRAM);
    CHECK_STATUS(CALL("aten::asin.out", v_int(1), &o.v, &o.v), EMBER_ERR_INVALID_PROGRAM);
    tt q;
    uint8_t qd[4] = {0};
    IN(q, EMBER_QINT8, qd, 4);
    CHECK_STATUS(CALL("aten::asin.out", &q.v, &o.v, &o.v), EMBER_ERR_NOT_SUPPORTED);
}

/* ------------------------------------------------------------------------ */
/* Binary: atan2, fmod, pow of a Scalar base                                 */
/* ------------------------------------------------------------------------ */

static void test_atan2(void) {
    check_section("atan2");
    tt a, b, o;
    float ad[6] = {1, -1, 0, 2, -2, 0}, bd[3] = {1, -1, 0}, od[6];
    IN(a, EMBER_FLOAT32, ad, 2, 3);
    IN(b, EMBER_FLOAT32, bd, 3);
    OUT(o, EMBER_FLOAT32, od, 2, 3);
    CHECK_OK(CALL("aten::atan2.out", &a.v, &b.v, &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 2, 3));
    double want[6];
    for (int i = 0; i < 6; i++) want[i] = atan2(ad[i], bd[i % 3]);
    CHECK(close_fd(od, want, 6, 1e-6));
    /* integers promote to float32; int64 with a 0-dim float64 gives float64 */
    tt ia, ib, fo, z, d;
    int64_t iad[2] = {1, -3}, ibd[2] = {-1, 4};
    float fod[2];
    double zd = 2.0, dd[2];
    IN(ia, EMBER_INT64, iad, 2);
    IN(ib, EMBER_INT64, ibd, 2);
    OUT(fo, EMBER_FLOAT32, fod, 2);
    CHECK_OK(CALL("aten::atan2.out", &ia.v, &ib.v, &fo.v, &fo.v));
    CHECK(near_rel(fod[0], atan2(1, -1), 1e-6) && near_rel(fod[1], atan2(-3, 4), 1e-6));
    IN0(z, EMBER_FLOAT64, zd);
    OUT(d, EMBER_FLOAT64, dd, 2);
    CHECK_OK(CALL("aten::atan2.out", &ia.v, &z.v, &d.v, &d.v));
    CHECK(dd[0] == atan2(1.0, 2.0) && dd[1] == atan2(-3.0, 2.0));
    /* errors: int out, shapes that do not broadcast */
    tt io, c;
    int64_t iod[2];
    float cd[4] = {0};
    OUT(io, EMBER_INT64, iod, 2);
    CHECK_ERR(CALL("aten::atan2.out", &ia.v, &ib.v, &io.v, &io.v), EMBER_ERR_TYPE_MISMATCH,
              "can't be cast");
    IN(c, EMBER_FLOAT32, cd, 4);
    CHECK_STATUS(CALL("aten::atan2.out", &a.v, &c.v, &o.v, &o.v), EMBER_ERR_SHAPE_MISMATCH);
}

static void test_fmod(void) {
    check_section("fmod");
    tt a, b, o;
    float ad[5] = {5.5f, -5.5f, 5.5f, -5.5f, 1.0f}, bd[5] = {2, 2, -2, -2, 0}, od[5];
    IN(a, EMBER_FLOAT32, ad, 5);
    IN(b, EMBER_FLOAT32, bd, 5);
    OUT(o, EMBER_FLOAT32, od, 5);
    CHECK_OK(CALL("aten::fmod.Tensor_out", &a.v, &b.v, &o.v, &o.v));
    CHECK(od[0] == 1.5f && od[1] == -1.5f && od[2] == 1.5f && od[3] == -1.5f && isnan(od[4]));
    CHECK_OK(CALL("aten::fmod.Scalar_out", &a.v, v_dbl(-4.0), &o.v, &o.v));
    CHECK(od[0] == 1.5f && od[1] == -1.5f && od[4] == 1.0f);
    /* integers truncate toward zero; INT64_MIN % -1 is 0 */
    tt ia, ib, io;
    int64_t iad[4] = {7, -7, 7, INT64_MIN}, ibd[4] = {3, 3, -3, -1}, iod[4];
    IN(ia, EMBER_INT64, iad, 4);
    IN(ib, EMBER_INT64, ibd, 4);
    OUT(io, EMBER_INT64, iod, 4);
    CHECK_OK(CALL("aten::fmod.Tensor_out", &ia.v, &ib.v, &io.v, &io.v));
    CHECK(EQ_I64(iod, 1, -1, 1, 0));
    /* int8 tensor % int scalar stays int8 */
    tt c, co;
    int8_t cd[3] = {-100, 100, 7}, cod[3];
    IN(c, EMBER_INT8, cd, 3);
    OUT(co, EMBER_INT8, cod, 3);
    CHECK_OK(CALL("aten::fmod.Scalar_out", &c.v, v_int(-3), &co.v, &co.v));
    CHECK(cod[0] == -1 && cod[1] == 1 && cod[2] == 1);
    /* a float scalar makes an int tensor float */
    tt fo;
    float fod[3];
    OUT(fo, EMBER_FLOAT32, fod, 3);
    CHECK_OK(CALL("aten::fmod.Scalar_out", &c.v, v_dbl(2.5), &fo.v, &fo.v));
    CHECK(fod[0] == -0.0f && fod[1] == 0.0f && fod[2] == 2.0f);
    CHECK_ERR(CALL("aten::fmod.Scalar_out", &c.v, v_dbl(2.5), &co.v, &co.v),
              EMBER_ERR_TYPE_MISMATCH, "can't be cast");
    /* errors: integer division by zero, bool result */
    ibd[1] = 0;
    CHECK_ERR(CALL("aten::fmod.Tensor_out", &ia.v, &ib.v, &io.v, &io.v), EMBER_ERR_KERNEL_FAILED,
              "division by zero");
    CHECK_ERR(CALL("aten::fmod.Scalar_out", &c.v, v_int(0), &co.v, &co.v),
              EMBER_ERR_KERNEL_FAILED, "division by zero");
    tt bb, bo;
    uint8_t bbd[2] = {1, 0}, bod[2];
    IN(bb, EMBER_BOOL, bbd, 2);
    OUT(bo, EMBER_BOOL, bod, 2);
    CHECK_ERR(CALL("aten::fmod.Tensor_out", &bb.v, &bb.v, &bo.v, &bo.v), EMBER_ERR_NOT_SUPPORTED,
              "bool");
    /* bool tensor % int scalar computes in int64 */
    tt lo;
    int64_t lod[2];
    OUT(lo, EMBER_INT64, lod, 2);
    CHECK_OK(CALL("aten::fmod.Scalar_out", &bb.v, v_int(2), &lo.v, &lo.v));
    CHECK(EQ_I64(lod, 1, 0));
}

static void test_pow_scalar(void) {
    check_section("pow.Scalar_out, integer pow to negative powers");
    tt e, o;
    int64_t ed[5] = {0, 1, 3, -1, -2}, od[5];
    IN(e, EMBER_INT64, ed, 5);
    OUT(o, EMBER_INT64, od, 5);
    CHECK_OK(CALL("aten::pow.Scalar_out", v_int(2), &e.v, &o.v, &o.v));
    CHECK(EQ_I64(od, 1, 2, 8, 0, 0)); /* 2 ** -1 truncates to 0, as in PyTorch */
    CHECK_OK(CALL("aten::pow.Scalar_out", v_int(-1), &e.v, &o.v, &o.v));
    CHECK(EQ_I64(od, 1, -1, -1, -1, 1));
    CHECK_OK(CALL("aten::pow.Scalar_out", v_int(1), &e.v, &o.v, &o.v));
    CHECK(EQ_I64(od, 1, 1, 1, 1, 1));
    /* a float base makes the result float32 */
    tt f;
    float fd[5];
    OUT(f, EMBER_FLOAT32, fd, 5);
    CHECK_OK(CALL("aten::pow.Scalar_out", v_dbl(2.5), &e.v, &f.v, &f.v));
    double want[5] = {1, 2.5, 15.625, 0.4, 0.16};
    CHECK(close_fd(fd, want, 5, 1e-6));
    CHECK_ERR(CALL("aten::pow.Scalar_out", v_dbl(2.5), &e.v, &o.v, &o.v),
              EMBER_ERR_TYPE_MISMATCH, "can't be cast");
    /* float16 exponent keeps float16 */
    tt h, ho;
    uint16_t hd[2] = {ember_float_to_half(0.5f), ember_float_to_half(-1.0f)}, hod[2];
    IN(h, EMBER_FLOAT16, hd, 2);
    OUT(ho, EMBER_FLOAT16, hod, 2);
    CHECK_OK(CALL("aten::pow.Scalar_out", v_int(4), &h.v, &ho.v, &ho.v));
    CHECK(ember_half_to_float(hod[0]) == 2.0f && ember_half_to_float(hod[1]) == 0.25f);
    /* bool exponent with an int base: int64; with a bool base: not supported */
    tt b;
    uint8_t bd[2] = {1, 0};
    IN(b, EMBER_BOOL, bd, 2);
    OUT(o, EMBER_INT64, od, 2);
    CHECK_OK(CALL("aten::pow.Scalar_out", v_int(3), &b.v, &o.v, &o.v));
    CHECK(EQ_I64(od, 3, 1));
    CHECK_ERR(CALL("aten::pow.Scalar_out", v_bool(true), &b.v, &o.v, &o.v),
              EMBER_ERR_NOT_SUPPORTED, "bool");
    CHECK_STATUS(CALL("aten::pow.Scalar_out", &b.v, &b.v, &o.v, &o.v), EMBER_ERR_INVALID_PROGRAM);
    /* Tensor_Tensor: integer bases to negative powers, without error */
    tt base, ex, to;
    int64_t based[5] = {2, 1, -1, -1, 0}, exd[5] = {-1, -5, -1, -2, -1}, tod[5];
    IN(base, EMBER_INT64, based, 5);
    IN(ex, EMBER_INT64, exd, 5);
    OUT(to, EMBER_INT64, tod, 5);
    CHECK_OK(CALL("aten::pow.Tensor_Tensor_out", &base.v, &ex.v, &to.v, &to.v));
    CHECK(EQ_I64(tod, 0, 1, -1, 1, 0));
    /* Tensor_Scalar with a negative integer scalar still fails, as PyTorch does */
    CHECK_ERR(CALL("aten::pow.Tensor_Scalar_out", &base.v, v_int(-1), &to.v, &to.v),
              EMBER_ERR_INVALID_ARGUMENT, "negative integer powers");
}

/* ------------------------------------------------------------------------ */
/* clamp.Tensor_out, fill, empty_strided                                     */
/* ------------------------------------------------------------------------ */

static void test_clamp_tensor(void) {
    check_section("clamp.Tensor_out");
    tt x, lo, hi, o;
    float xd[6] = {-5, 0, 5, NAN, 1, 3}, lod[3] = {-1, 0.5f, NAN}, hid[2] = {2, -2}, od[6];
    IN(x, EMBER_FLOAT32, xd, 2, 3);
    IN(lo, EMBER_FLOAT32, lod, 3);
    IN(hi, EMBER_FLOAT32, hid, 2, 1);
    OUT(o, EMBER_FLOAT32, od, 2, 3);
    /* lo broadcast over rows, hi over columns; NaN anywhere gives NaN; lo > hi gives hi */
    CHECK_OK(CALL("aten::clamp.Tensor_out", &x.v, &lo.v, &hi.v, &o.v, &o.v));
    CHECK(od[0] == -1 && od[1] == 0.5f && isnan(od[2]) && isnan(od[3]) && od[4] == -2 &&
          isnan(od[5]));
    CHECK_OK(CALL("aten::clamp.Tensor_out", &x.v, &lo.v, v_none(), &o.v, &o.v));
    CHECK(od[0] == -1 && od[1] == 0.5f && isnan(od[2]) && isnan(od[3]) && od[4] == 1 &&
          isnan(od[5]));
    CHECK_OK(CALL("aten::clamp.Tensor_out", &x.v, v_none(), &hi.v, &o.v, &o.v));
    CHECK(od[0] == -5 && od[1] == 0 && od[2] == 2 && isnan(od[3]) && od[4] == -2 && od[5] == -2);
    /* int self with a 0-dim float bound: the 0-dim float sets the category */
    tt ix, fz, fo;
    int32_t ixd[3] = {1, 2, 3};
    double fzd = 1.5;
    double fod[3];
    IN(ix, EMBER_INT32, ixd, 3);
    IN0(fz, EMBER_FLOAT64, fzd);
    OUT(fo, EMBER_FLOAT64, fod, 3);
    CHECK_OK(CALL("aten::clamp.Tensor_out", &ix.v, &fz.v, v_none(), &fo.v, &fo.v));
    CHECK(fod[0] == 1.5 && fod[1] == 2 && fod[2] == 3);
    tt io;
    int32_t iod[3];
    OUT(io, EMBER_INT32, iod, 3);
    CHECK_ERR(CALL("aten::clamp.Tensor_out", &ix.v, &fz.v, v_none(), &io.v, &io.v),
              EMBER_ERR_TYPE_MISMATCH, "can't be cast");
    /* integers */
    tt il_, ih;
    int32_t ild[3] = {2, 2, 2}, ihd[1] = {2};
    IN(il_, EMBER_INT32, ild, 3);
    IN(ih, EMBER_INT32, ihd, 1);
    CHECK_OK(CALL("aten::clamp.Tensor_out", &ix.v, &il_.v, &ih.v, &io.v, &io.v));
    CHECK(iod[0] == 2 && iod[1] == 2 && iod[2] == 2);
    /* bool: one bound works, both are not supported (as in PyTorch) */
    tt b, bo;
    uint8_t bd[2] = {0, 1}, bod[2];
    IN(b, EMBER_BOOL, bd, 2);
    OUT(bo, EMBER_BOOL, bod, 2);
    CHECK_OK(CALL("aten::clamp.Tensor_out", &b.v, &b.v, v_none(), &bo.v, &bo.v));
    CHECK(bod[0] == 0 && bod[1] == 1);
    CHECK_ERR(CALL("aten::clamp.Tensor_out", &b.v, &b.v, &b.v, &bo.v, &bo.v),
              EMBER_ERR_NOT_SUPPORTED, "bool");
    /* errors: no bound, shapes that do not broadcast, out too small */
    CHECK_ERR(CALL("aten::clamp.Tensor_out", &x.v, v_none(), v_none(), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "at least one");
    tt bad;
    float badd[4] = {0};
    IN(bad, EMBER_FLOAT32, badd, 4);
    CHECK_STATUS(CALL("aten::clamp.Tensor_out", &x.v, &bad.v, v_none(), &o.v, &o.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    tt small;
    float sd[3];
    OUT(small, EMBER_FLOAT32, sd, 3);
    CHECK_STATUS(CALL("aten::clamp.Tensor_out", &x.v, &lo.v, v_none(), &small.v, &small.v),
                 EMBER_ERR_SHAPE_MISMATCH);
}

static void test_fill(void) {
    check_section("fill.Scalar_out, fill.Tensor_out, empty_strided.out");
    tt s, o;
    float sd[6] = {0}, od[12];
    IN(s, EMBER_FLOAT32, sd, 2, 3);
    OUT(o, EMBER_FLOAT32, od, 4, 3); /* resized within its bounds */
    CHECK_OK(CALL("aten::fill.Scalar_out", &s.v, v_dbl(2.5), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 2, 3));
    bool ok = true;
    for (int i = 0; i < 6; i++) ok &= od[i] == 2.5f;
    CHECK(ok);
    /* the value goes through self's dtype first: int self truncates 2.7 to 2 */
    tt is, fo;
    int32_t isd[3] = {0};
    float fod[3];
    IN(is, EMBER_INT32, isd, 3);
    OUT(fo, EMBER_FLOAT32, fod, 3);
    CHECK_OK(CALL("aten::fill.Scalar_out", &is.v, v_dbl(2.7), &fo.v, &fo.v));
    CHECK(fod[0] == 2.0f && fod[2] == 2.0f);
    /* bool self */
    tt bs, bo;
    uint8_t bsd[2] = {0}, bod[2] = {7, 7};
    IN(bs, EMBER_BOOL, bsd, 2);
    OUT(bo, EMBER_BOOL, bod, 2);
    CHECK_OK(CALL("aten::fill.Scalar_out", &bs.v, v_int(5), &bo.v, &bo.v));
    CHECK(bod[0] == 1 && bod[1] == 1);
    /* a Scalar that overflows self's dtype fails; integers may wrap into unsigned */
    tt u8, u8o;
    uint8_t u8d[2] = {0}, u8od[2];
    IN(u8, EMBER_UINT8, u8d, 2);
    OUT(u8o, EMBER_UINT8, u8od, 2);
    CHECK_OK(CALL("aten::fill.Scalar_out", &u8.v, v_int(-1), &u8o.v, &u8o.v));
    CHECK(u8od[0] == 255 && u8od[1] == 255);
    CHECK_ERR(CALL("aten::fill.Scalar_out", &u8.v, v_int(256), &u8o.v, &u8o.v),
              EMBER_ERR_INVALID_ARGUMENT, "overflow");
    CHECK_STATUS(CALL("aten::fill.Scalar_out", &u8.v, v_int(-256), &u8o.v, &u8o.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::fill.Scalar_out", &u8.v, v_dbl(-1.5), &u8o.v, &u8o.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::fill.Scalar_out", &is.v, v_dbl(NAN), &fo.v, &fo.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::fill.Scalar_out", &is.v, v_int(2147483648LL), &fo.v, &fo.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    tt hs, hso;
    uint16_t hsd[2] = {0}, hsod[2];
    IN(hs, EMBER_FLOAT16, hsd, 2);
    OUT(hso, EMBER_FLOAT16, hsod, 2);
    CHECK_STATUS(CALL("aten::fill.Scalar_out", &hs.v, v_dbl(70000.0), &hso.v, &hso.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(CALL("aten::fill.Scalar_out", &hs.v, v_dbl(-INFINITY), &hso.v, &hso.v));
    CHECK(isinf(ember_half_to_float(hsod[0])) && ember_half_to_float(hsod[0]) < 0);
    CHECK_OK(CALL("aten::fill.Scalar_out", &bs.v, v_dbl(-7.5), &bo.v, &bo.v));
    CHECK(bod[0] == 1);
    /* Tensor value: 0-dim, any dtype; converted like the scalar */
    tt v, hv, ho;
    double vd = -3.75;
    IN0(v, EMBER_FLOAT64, vd);
    CHECK_OK(CALL("aten::fill.Tensor_out", &s.v, &v.v, &o.v, &o.v));
    CHECK(od[0] == -3.75f && od[5] == -3.75f);
    uint16_t hvd = ember_float_to_half(1.5f), hod[3];
    IN0(hv, EMBER_FLOAT16, hvd);
    int16_t dummy[3];
    tt i16s;
    IN(i16s, EMBER_INT16, dummy, 3);
    OUT(ho, EMBER_FLOAT16, hod, 3);
    CHECK_OK(CALL("aten::fill.Tensor_out", &i16s.v, &hv.v, &ho.v, &ho.v));
    CHECK(ember_half_to_float(hod[1]) == 1.0f);
    /* zero-size self */
    tt e, eo;
    tt_init(&e, EMBER_FLOAT32, DIMS(0, 3), NULL, 0, false, NULL);
    OUT(eo, EMBER_FLOAT32, od, 4, 3);
    CHECK_OK(CALL("aten::fill.Scalar_out", &e.v, v_int(1), &eo.v, &eo.v));
    CHECK(SHAPE_IS(&eo.t, 0, 3));
    /* errors: a value with dims, out too small, non-scalar value argument */
    tt v1;
    float v1d[1] = {1};
    IN(v1, EMBER_FLOAT32, v1d, 1);
    CHECK_ERR(CALL("aten::fill.Tensor_out", &s.v, &v1.v, &o.v, &o.v), EMBER_ERR_SHAPE_MISMATCH,
              "0-dim");
    tt small;
    float smd[4];
    OUT(small, EMBER_FLOAT32, smd, 4);
    CHECK_STATUS(CALL("aten::fill.Scalar_out", &s.v, v_int(1), &small.v, &small.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::fill.Scalar_out", &s.v, &s.v, &o.v, &o.v), EMBER_ERR_INVALID_PROGRAM);

    /* empty_strided: resizes, checks the stride list */
    il size, stride;
    tt es;
    float esd[12];
    OUT(es, EMBER_FLOAT32, esd, 3, 4);
    CHECK_OK(CALL("aten::empty_strided.out", IL(size, 2, 4), IL(stride, 4, 1), &es.v, &es.v));
    CHECK(SHAPE_IS(&es.t, 2, 4));
    CHECK_ERR(CALL("aten::empty_strided.out", IL(size, 2, 4), IL(stride, 1), &es.v, &es.v),
              EMBER_ERR_INVALID_ARGUMENT, "strides");
    CHECK_ERR(CALL("aten::empty_strided.out", IL(size, 2, 4), IL(stride, 4, -1), &es.v, &es.v),
              EMBER_ERR_INVALID_ARGUMENT, "negative");
    CHECK_STATUS(CALL("aten::empty_strided.out", IL(size, 4, 4), IL(stride, 4, 1), &es.v, &es.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::empty_strided.out", IL(size, -2, 4), IL(stride, 4, 1), &es.v, &es.v),
                 EMBER_ERR_SHAPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* Reductions: prod, var.out                                                 */
/* ------------------------------------------------------------------------ */

static void test_prod(void) {
    check_section("prod.out, prod.int_out");
    tt x, o, od_;
    float xd[6] = {1, 2, 3, -4, 5, 0.5f}, o0 = 0, odd[3];
    IN(x, EMBER_FLOAT32, xd, 2, 3);
    IN0(o, EMBER_FLOAT32, o0);
    CHECK_OK(CALL("aten::prod.out", &x.v, v_none(), &o.v, &o.v));
    CHECK(o0 == -60.0f);
    OUT(od_, EMBER_FLOAT32, odd, 3);
    CHECK_OK(CALL("aten::prod.int_out", &x.v, v_int(0), v_bool(false), v_none(), &od_.v, &od_.v));
    CHECK(SHAPE_IS(&od_.t, 3) && odd[0] == -4 && odd[1] == 10 && odd[2] == 1.5f);
    tt ok_;
    float okd[2];
    OUT(ok_, EMBER_FLOAT32, okd, 2, 1);
    CHECK_OK(CALL("aten::prod.int_out", &x.v, v_int(-1), v_bool(true), v_none(), &ok_.v, &ok_.v));
    CHECK(SHAPE_IS(&ok_.t, 2, 1) && okd[0] == 6 && okd[1] == -10);
    /* integers multiply in int64, wrapping; int8 self into an int64 out */
    tt ix, lo;
    int8_t ixd[4] = {100, 100, 100, -3};
    int64_t lod = 0;
    IN(ix, EMBER_INT8, ixd, 4);
    IN0(lo, EMBER_INT64, lod);
    CHECK_OK(CALL("aten::prod.out", &ix.v, v_int(EMBER_INT64), &lo.v, &lo.v));
    CHECK(lod == -3000000);
    tt big;
    int64_t bigd[2] = {INT64_MAX, 2};
    IN(big, EMBER_INT64, bigd, 2);
    CHECK_OK(CALL("aten::prod.out", &big.v, v_none(), &lo.v, &lo.v));
    CHECK(lod == -2); /* wraps */
    /* bool self: the product is 1 only if all are true */
    tt b;
    uint8_t bd[3] = {1, 1, 0};
    IN(b, EMBER_BOOL, bd, 3);
    CHECK_OK(CALL("aten::prod.out", &b.v, v_none(), &lo.v, &lo.v));
    CHECK(lod == 0);
    /* empty: product of nothing is 1 */
    tt e, eo;
    float eod[4] = {9, 9, 9, 9};
    tt_init(&e, EMBER_FLOAT32, DIMS(0, 4), NULL, 0, false, NULL);
    OUT(eo, EMBER_FLOAT32, eod, 4);
    CHECK_OK(CALL("aten::prod.int_out", &e.v, v_int(0), v_bool(false), v_none(), &eo.v, &eo.v));
    CHECK(SHAPE_IS(&eo.t, 4) && eod[0] == 1 && eod[3] == 1);
    /* float16 */
    tt h, ho;
    uint16_t hd[3] = {ember_float_to_half(1.5f), ember_float_to_half(2.0f),
                      ember_float_to_half(-0.5f)},
             hod = 0;
    IN(h, EMBER_FLOAT16, hd, 3);
    IN0(ho, EMBER_FLOAT16, hod);
    CHECK_OK(CALL("aten::prod.out", &h.v, v_none(), &ho.v, &ho.v));
    CHECK(ember_half_to_float(hod) == -1.5f);
    /* errors: float into int out, dtype argument against out, bad dim */
    CHECK_ERR(CALL("aten::prod.out", &x.v, v_none(), &lo.v, &lo.v), EMBER_ERR_TYPE_MISMATCH,
              "cannot write");
    CHECK_STATUS(CALL("aten::prod.out", &x.v, v_int(EMBER_FLOAT64), &o.v, &o.v),
                 EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(CALL("aten::prod.int_out", &x.v, v_int(2), v_bool(false), v_none(), &od_.v,
                      &od_.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::prod.int_out", &x.v, v_int(0), v_bool(false), v_none(), &o.v, &o.v),
                 EMBER_ERR_SHAPE_MISMATCH);
}

static void test_var_out(void) {
    check_section("var.out");
    tt x, o;
    float xd[6] = {1, 2, 3, 4, 6, 8}, od[2];
    IN(x, EMBER_FLOAT32, xd, 2, 3);
    OUT(o, EMBER_FLOAT32, od, 2);
    il dims;
    CHECK_OK(CALL("aten::var.out", &x.v, IL(dims, 1), v_bool(true), v_bool(false), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 2) && fabsf(od[0] - 1.0f) < 1e-6f && fabsf(od[1] - 4.0f) < 1e-6f);
    CHECK_OK(CALL("aten::var.out", &x.v, IL(dims, -1), v_bool(false), v_bool(false), &o.v, &o.v));
    CHECK(fabsf(od[0] - 2.0f / 3) < 1e-6f && fabsf(od[1] - 8.0f / 3) < 1e-6f);
    /* every dim (None), keepdim */
    tt k;
    float kd[1];
    OUT(k, EMBER_FLOAT32, kd, 1, 1);
    CHECK_OK(CALL("aten::var.out", &x.v, v_none(), v_bool(true), v_bool(true), &k.v, &k.v));
    /* mean 4, squares 9+4+1+0+4+16 = 34, / 5 */
    CHECK(SHAPE_IS(&k.t, 1, 1) && fabsf(kd[0] - 6.8f) < 1e-5f);
    /* errors: integer self, wrong argument tag */
    tt ix, io;
    int32_t ixd[2] = {1, 2}, iod[1];
    IN(ix, EMBER_INT32, ixd, 2);
    OUT(io, EMBER_INT32, iod, 1);
    CHECK_STATUS(CALL("aten::var.out", &ix.v, v_none(), v_bool(true), v_bool(false), &io.v, &io.v),
                 EMBER_ERR_NOT_SUPPORTED);
    CHECK_STATUS(CALL("aten::var.out", &x.v, v_none(), v_int(1), v_bool(false), &o.v, &o.v),
                 EMBER_ERR_INVALID_PROGRAM);
}

/* ------------------------------------------------------------------------ */
/* sort, topk                                                                */
/* ------------------------------------------------------------------------ */

static void test_sort(void) {
    check_section("sort.values, sort.values_stable");
    tt x, v, i;
    tl ret;
    float xd[9] = {1, NAN, 2, 2, -0.0f, 0.0f, INFINITY, -INFINITY, NAN}, vd[9];
    int64_t id[9];
    IN(x, EMBER_FLOAT32, xd, 9);
    OUT(v, EMBER_FLOAT32, vd, 9);
    OUT(i, EMBER_INT64, id, 9);
    /* ascending: NaN last, -0.0 and 0.0 equal (kept in order), ties by index */
    CHECK_OK(CALL("aten::sort.values", &x.v, v_int(-1), v_bool(false), &v.v, &i.v,
                  pair(&ret, &v, &i)));
    CHECK(EQ_I64(id, 7, 4, 5, 0, 2, 3, 6, 1, 8));
    bool ok = true;
    for (int k = 0; k < 9; k++) ok &= (isnan(vd[k]) && isnan(xd[id[k]])) || vd[k] == xd[id[k]];
    CHECK(ok);
    CHECK(signbit(vd[1]) && !signbit(vd[2]));
    /* descending: NaN first, equal values still in index order */
    CHECK_OK(CALL("aten::sort.values_stable", &x.v, v_bool(true), v_int(0), v_bool(true), &v.v,
                  &i.v, pair(&ret, &v, &i)));
    CHECK(EQ_I64(id, 1, 8, 6, 2, 3, 0, 4, 5, 7));
    CHECK_OK(CALL("aten::sort.values_stable", &x.v, v_none(), v_int(0), v_bool(true), &v.v, &i.v,
                  pair(&ret, &v, &i)));
    CHECK(EQ_I64(id, 1, 8, 6, 2, 3, 0, 4, 5, 7));

    /* 2-d int32 along dim 0, with a transposed (column-major) values out */
    tt m, mv, mi;
    int32_t md[6] = {3, 1, 2, 1, 5, 2}, mvd[6];
    int64_t mid[6];
    IN(m, EMBER_INT32, md, 2, 3);
    tt_init(&mv, EMBER_INT32, DIMS(2, 3), mvd, sizeof mvd, true, (const uint8_t[]){1, 0});
    OUT(mi, EMBER_INT64, mid, 2, 3);
    CHECK_OK(CALL("aten::sort.values", &m.v, v_int(0), v_bool(false), &mv.v, &mi.v,
                  pair(&ret, &mv, &mi)));
    /* columns (3,1) (1,5) (2,2): values column-major in mvd */
    CHECK(mvd[0] == 1 && mvd[1] == 3 && mvd[2] == 1 && mvd[3] == 5 && mvd[4] == 2 && mvd[5] == 2);
    CHECK(EQ_I64(mid, 1, 0, 0, 0, 1, 1));
    /* int64 extremes, bool, uint8 */
    tt l, lv, li;
    int64_t ld[4] = {INT64_MAX, INT64_MIN, 0, INT64_MAX - 1}, lvd[4], lid[4];
    IN(l, EMBER_INT64, ld, 4);
    OUT(lv, EMBER_INT64, lvd, 4);
    OUT(li, EMBER_INT64, lid, 4);
    CHECK_OK(CALL("aten::sort.values", &l.v, v_int(0), v_bool(true), &lv.v, &li.v,
                  pair(&ret, &lv, &li)));
    CHECK(EQ_I64(lvd, INT64_MAX, INT64_MAX - 1, 0, INT64_MIN) && EQ_I64(lid, 0, 3, 2, 1));
    tt b, bv, bi;
    uint8_t bd[5] = {1, 0, 1, 0, 1}, bvd[5];
    int64_t bid[5];
    IN(b, EMBER_BOOL, bd, 5);
    OUT(bv, EMBER_BOOL, bvd, 5);
    OUT(bi, EMBER_INT64, bid, 5);
    CHECK_OK(CALL("aten::sort.values", &b.v, v_int(0), v_bool(false), &bv.v, &bi.v,
                  pair(&ret, &bv, &bi)));
    CHECK(EQ_I64(bid, 1, 3, 0, 2, 4) && bvd[0] == 0 && bvd[2] == 1);
    /* bfloat16 */
    tt h, hv, hi;
    uint16_t hd[3] = {ember_float_to_bf16(2.0f), ember_float_to_bf16(-1.0f),
                      ember_float_to_bf16(0.5f)},
             hvd[3];
    int64_t hid[3];
    IN(h, EMBER_BFLOAT16, hd, 3);
    OUT(hv, EMBER_BFLOAT16, hvd, 3);
    OUT(hi, EMBER_INT64, hid, 3);
    CHECK_OK(CALL("aten::sort.values", &h.v, v_int(0), v_bool(false), &hv.v, &hi.v,
                  pair(&ret, &hv, &hi)));
    CHECK(EQ_I64(hid, 1, 2, 0) && ember_bf16_to_float(hvd[0]) == -1.0f);
    /* a longer row against a check of order and permutation */
    enum { N = 300 };
    static float rd[N], rvd[N];
    static int64_t rid[N];
    for (int k = 0; k < N; k++) rd[k] = (float)((k * 37) % 101) - 50.0f; /* many ties */
    tt r, rv, ri;
    IN(r, EMBER_FLOAT32, rd, N);
    OUT(rv, EMBER_FLOAT32, rvd, N);
    OUT(ri, EMBER_INT64, rid, N);
    CHECK_OK(CALL("aten::sort.values", &r.v, v_int(0), v_bool(false), &rv.v, &ri.v,
                  pair(&ret, &rv, &ri)));
    ok = true;
    static bool seen[N];
    memset(seen, 0, sizeof seen);
    for (int k = 0; k < N; k++) {
        ok &= rid[k] >= 0 && rid[k] < N && !seen[rid[k]] && rvd[k] == rd[rid[k]];
        if (rid[k] >= 0 && rid[k] < N) seen[rid[k]] = true;
        if (k > 0) ok &= rvd[k - 1] < rvd[k] || (rvd[k - 1] == rvd[k] && rid[k - 1] < rid[k]);
    }
    CHECK_MSG(ok, "300 elements: sorted, stable permutation");
    /* 0-dim and zero-size */
    tt z, zv, zi;
    float zd = 4, zvd = 0;
    int64_t zid = 9;
    IN0(z, EMBER_FLOAT32, zd);
    IN0(zv, EMBER_FLOAT32, zvd);
    IN0(zi, EMBER_INT64, zid);
    CHECK_OK(CALL("aten::sort.values", &z.v, v_int(-1), v_bool(false), &zv.v, &zi.v,
                  pair(&ret, &zv, &zi)));
    CHECK(zvd == 4 && zid == 0);
    tt e, ev, ei;
    tt_init(&e, EMBER_FLOAT32, DIMS(2, 0), NULL, 0, false, NULL);
    OUT(ev, EMBER_FLOAT32, vd, 2, 4);
    OUT(ei, EMBER_INT64, id, 2, 4);
    CHECK_OK(CALL("aten::sort.values", &e.v, v_int(1), v_bool(false), &ev.v, &ei.v,
                  pair(&ret, &ev, &ei)));
    CHECK(SHAPE_IS(&ev.t, 2, 0) && SHAPE_IS(&ei.t, 2, 0));
    /* errors */
    tt i32;
    int32_t i32d[9];
    OUT(i32, EMBER_INT32, i32d, 9);
    OUT(v, EMBER_FLOAT32, vd, 9);
    OUT(i, EMBER_INT64, id, 9);
    CHECK_ERR(CALL("aten::sort.values", &x.v, v_int(0), v_bool(false), &v.v, &i32.v,
                   pair(&ret, &v, &i32)),
              EMBER_ERR_TYPE_MISMATCH, "int64");
    CHECK_STATUS(CALL("aten::sort.values", &x.v, v_int(0), v_bool(false), &i32.v, &i.v,
                      pair(&ret, &i32, &i)),
                 EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(CALL("aten::sort.values", &x.v, v_int(1), v_bool(false), &v.v, &i.v,
                      pair(&ret, &v, &i)),
                 EMBER_ERR_INVALID_ARGUMENT);
    tt sv;
    float svd[4];
    OUT(sv, EMBER_FLOAT32, svd, 4);
    CHECK_STATUS(CALL("aten::sort.values", &x.v, v_int(0), v_bool(false), &sv.v, &i.v,
                      pair(&ret, &sv, &i)),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::sort.values", &x.v, v_int(0), v_bool(false), &x.v, &i.v,
                      pair(&ret, &x, &i)),
                 EMBER_ERR_INVALID_PROGRAM); /* values aliases self */
    CHECK_STATUS(CALL("aten::sort.values_stable", &x.v, v_int(1), v_int(0), v_bool(false), &v.v,
                      &i.v, pair(&ret, &v, &i)),
                 EMBER_ERR_INVALID_PROGRAM);
    CHECK_STATUS(CALL("aten::sort.values", &x.v, v_int(0), v_bool(false), &v.v, &i.v),
                 EMBER_ERR_INVALID_PROGRAM);
}

static void test_topk(void) {
    check_section("topk.values");
    tt x, v, i;
    tl ret;
    float xd[9] = {1, NAN, 2, 2, -0.0f, 0.0f, INFINITY, -INFINITY, NAN}, vd[9];
    int64_t id[9];
    IN(x, EMBER_FLOAT32, xd, 9);
    OUT(v, EMBER_FLOAT32, vd, 9);
    OUT(i, EMBER_INT64, id, 9);
    CHECK_OK(CALL("aten::topk.values", &x.v, v_int(4), v_int(-1), v_bool(true), v_bool(true),
                  &v.v, &i.v, pair(&ret, &v, &i)));
    CHECK(SHAPE_IS(&v.t, 4) && SHAPE_IS(&i.t, 4));
    CHECK(EQ_I64(id, 1, 8, 6, 2));
    CHECK(isnan(vd[0]) && isnan(vd[1]) && isinf(vd[2]) && vd[3] == 2);
    CHECK_OK(CALL("aten::topk.values", &x.v, v_int(4), v_int(0), v_bool(false), v_bool(false),
                  &v.v, &i.v, pair(&ret, &v, &i)));
    CHECK(EQ_I64(id, 7, 4, 5, 0));
    CHECK(vd[0] == -INFINITY && signbit(vd[1]) && vd[2] == 0 && vd[3] == 1);
    /* k = n is a full sort; k = 0 is empty */
    CHECK_OK(CALL("aten::topk.values", &x.v, v_int(9), v_int(0), v_bool(false), v_bool(true),
                  &v.v, &i.v, pair(&ret, &v, &i)));
    CHECK(EQ_I64(id, 7, 4, 5, 0, 2, 3, 6, 1, 8));
    CHECK_OK(CALL("aten::topk.values", &x.v, v_int(0), v_int(0), v_bool(true), v_bool(true),
                  &v.v, &i.v, pair(&ret, &v, &i)));
    CHECK(SHAPE_IS(&v.t, 0) && SHAPE_IS(&i.t, 0));
    /* a 0-dim self gives itself, for k 1 and (as PyTorch) k 0 */
    tt z, zv, zi;
    float zd = 4, zvd = 0;
    int64_t zid = 9;
    IN0(z, EMBER_FLOAT32, zd);
    IN0(zv, EMBER_FLOAT32, zvd);
    IN0(zi, EMBER_INT64, zid);
    CHECK_OK(CALL("aten::topk.values", &z.v, v_int(0), v_int(-1), v_bool(true), v_bool(true),
                  &zv.v, &zi.v, pair(&ret, &zv, &zi)));
    CHECK(zvd == 4 && zid == 0);
    CHECK_STATUS(CALL("aten::topk.values", &z.v, v_int(2), v_int(0), v_bool(true), v_bool(true),
                      &zv.v, &zi.v, pair(&ret, &zv, &zi)),
                 EMBER_ERR_INVALID_ARGUMENT);
    /* 2-d along dim 0, int16 */
    tt m, mv, mi;
    int16_t md[8] = {5, 1, 7, 3, 2, 8, 7, 0}, mvd[8];
    int64_t mid[8];
    IN(m, EMBER_INT16, md, 4, 2);
    OUT(mv, EMBER_INT16, mvd, 4, 2);
    OUT(mi, EMBER_INT64, mid, 4, 2);
    CHECK_OK(CALL("aten::topk.values", &m.v, v_int(2), v_int(0), v_bool(true), v_bool(true),
                  &mv.v, &mi.v, pair(&ret, &mv, &mi)));
    CHECK(SHAPE_IS(&mv.t, 2, 2));
    /* column 0: 5 7 2 7 -> 7 (1), 7 (3); column 1: 1 3 8 0 -> 8 (2), 3 (1) */
    CHECK(mvd[0] == 7 && mvd[1] == 8 && mvd[2] == 7 && mvd[3] == 3);
    CHECK(EQ_I64(mid, 1, 2, 3, 1));
    /* a longer row: the k best, in order, ties by index */
    enum { N = 257 };
    static double rd[N], rvd[N];
    static int64_t rid[N];
    for (int k = 0; k < N; k++) rd[k] = (double)((k * 53) % 61);
    tt r, rv, ri;
    IN(r, EMBER_FLOAT64, rd, N);
    OUT(rv, EMBER_FLOAT64, rvd, N);
    OUT(ri, EMBER_INT64, rid, N);
    CHECK_OK(CALL("aten::topk.values", &r.v, v_int(20), v_int(0), v_bool(true), v_bool(true),
                  &rv.v, &ri.v, pair(&ret, &rv, &ri)));
    bool ok = true;
    int64_t rank = 0; /* elements strictly better than the 20th */
    for (int k = 0; k < 20; k++) {
        ok &= rvd[k] == rd[rid[k]];
        if (k > 0) ok &= rvd[k - 1] > rvd[k] || (rvd[k - 1] == rvd[k] && rid[k - 1] < rid[k]);
    }
    for (int k = 0; k < N; k++) rank += rd[k] > rvd[19];
    CHECK(ok && rank < 20);
    /* errors: k out of range, bool, indices dtype */
    CHECK_ERR(CALL("aten::topk.values", &x.v, v_int(10), v_int(0), v_bool(true), v_bool(true),
                   &v.v, &i.v, pair(&ret, &v, &i)),
              EMBER_ERR_INVALID_ARGUMENT, "out of range");
    CHECK_STATUS(CALL("aten::topk.values", &x.v, v_int(-1), v_int(0), v_bool(true), v_bool(true),
                      &v.v, &i.v, pair(&ret, &v, &i)),
                 EMBER_ERR_INVALID_ARGUMENT);
    tt b, bv;
    uint8_t bd[2] = {0, 1}, bvd[2];
    IN(b, EMBER_BOOL, bd, 2);
    OUT(bv, EMBER_BOOL, bvd, 2);
    CHECK_ERR(CALL("aten::topk.values", &b.v, v_int(1), v_int(0), v_bool(true), v_bool(true),
                   &bv.v, &i.v, pair(&ret, &bv, &i)),
              EMBER_ERR_NOT_SUPPORTED, "bool");
    tt small;
    float sd[2];
    OUT(small, EMBER_FLOAT32, sd, 2);
    CHECK_STATUS(CALL("aten::topk.values", &x.v, v_int(3), v_int(0), v_bool(true), v_bool(true),
                      &small.v, &i.v, pair(&ret, &small, &i)),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::topk.values", &x.v, v_int(3), v_int(0), v_bool(true), v_bool(true),
                      &v.v, &v.v, pair(&ret, &v, &v)),
                 EMBER_ERR_TYPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* nonzero                                                                   */
/* ------------------------------------------------------------------------ */

static void test_nonzero(void) {
    check_section("nonzero.out");
    tt x, o;
    float xd[6] = {0, NAN, -0.0f, 3, 0, -1};
    int64_t od[12];
    IN(x, EMBER_FLOAT32, xd, 2, 3);
    OUT(o, EMBER_INT64, od, 6, 2);
    CHECK_OK(CALL("aten::nonzero.out", &x.v, &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 3, 2));
    CHECK(EQ_I64(od, 0, 1, 1, 0, 1, 2));
    /* column-major self: indices still come in row-major order */
    tt c;
    float cd[6] = {1, 0, 0, 1, 1, 0}; /* (2, 3) stored by columns: [[1,0,1],[0,1,0]] */
    tt_init(&c, EMBER_FLOAT32, DIMS(2, 3), cd, sizeof cd, false, (const uint8_t[]){1, 0});
    CHECK_OK(CALL("aten::nonzero.out", &c.v, &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 3, 2) && EQ_I64(od, 0, 0, 0, 2, 1, 1));
    /* bool, 3-d */
    tt b;
    uint8_t bd[8] = {0, 0, 0, 1, 1, 0, 0, 0};
    IN(b, EMBER_BOOL, bd, 2, 2, 2);
    tt o3;
    OUT(o3, EMBER_INT64, od, 4, 3);
    CHECK_OK(CALL("aten::nonzero.out", &b.v, &o3.v, &o3.v));
    CHECK(SHAPE_IS(&o3.t, 2, 3) && EQ_I64(od, 0, 1, 1, 1, 0, 0));
    /* all zero: (0, 2); 0-dim: (1, 0) or (0, 0) */
    int32_t zd[4] = {0, 0, 0, 0};
    tt z;
    IN(z, EMBER_INT32, zd, 2, 2);
    CHECK_OK(CALL("aten::nonzero.out", &z.v, &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 0, 2));
    tt s;
    int64_t sd = 5;
    IN0(s, EMBER_INT64, sd);
    tt o0;
    OUT(o0, EMBER_INT64, od, 2, 0);
    CHECK_OK(CALL("aten::nonzero.out", &s.v, &o0.v, &o0.v));
    CHECK(SHAPE_IS(&o0.t, 1, 0));
    /* errors: more rows than out's bound, wrong out dtype, wrong rank */
    tt small;
    int64_t smd[4];
    OUT(small, EMBER_INT64, smd, 2, 2);
    CHECK_ERR(CALL("aten::nonzero.out", &x.v, &small.v, &small.v), EMBER_ERR_SHAPE_MISMATCH, "");
    tt io;
    int32_t iod[12];
    OUT(io, EMBER_INT32, iod, 6, 2);
    CHECK_ERR(CALL("aten::nonzero.out", &x.v, &io.v, &io.v), EMBER_ERR_TYPE_MISMATCH, "int64");
    tt o1;
    OUT(o1, EMBER_INT64, od, 12);
    CHECK_STATUS(CALL("aten::nonzero.out", &x.v, &o1.v, &o1.v), EMBER_ERR_SHAPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* Random kernels                                                            */
/* ------------------------------------------------------------------------ */

static void moments_f(const float *x, size_t n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = sqrt(q / (double)(n - 1));
}

static void test_rand(void) {
    check_section("rand.out, randn.out");
    enum { N = 20000 };
    static float u[N], u2[N];
    tt o;
    il size;
    ember_portable_kernels_seed(1234);
    OUT(o, EMBER_FLOAT32, u, 100, 200);
    CHECK_OK(CALL("aten::rand.out", IL(size, 100, 200), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 100, 200));
    bool in_range = true;
    for (int i = 0; i < N; i++) in_range &= u[i] >= 0.0f && u[i] < 1.0f;
    CHECK(in_range);
    double mean, sd;
    moments_f(u, N, &mean, &sd);
    /* standard errors: mean 0.002, sd about 0.0012; allow 5 of them */
    CHECK_NEAR(mean, 0.5, 0.01);
    CHECK_NEAR(sd, sqrt(1.0 / 12.0), 0.006);
    /* the same seed gives the same values; the next call different ones */
    ember_portable_kernels_seed(1234);
    tt o2;
    OUT(o2, EMBER_FLOAT32, u2, 100, 200);
    CHECK_OK(CALL("aten::rand.out", IL(size, 100, 200), &o2.v, &o2.v));
    CHECK(memcmp(u, u2, sizeof u) == 0);
    CHECK_OK(CALL("aten::rand.out", IL(size, 100, 200), &o2.v, &o2.v));
    CHECK(memcmp(u, u2, sizeof u) != 0);
    ember_portable_kernels_seed(99);
    CHECK_OK(CALL("aten::rand.out", IL(size, 100, 200), &o2.v, &o2.v));
    CHECK(memcmp(u, u2, sizeof u) != 0);

    /* randn */
    CHECK_OK(CALL("aten::randn.out", IL(size, 100, 200), &o.v, &o.v));
    moments_f(u, N, &mean, &sd);
    CHECK_NEAR(mean, 0.0, 0.04);
    CHECK_NEAR(sd, 1.0, 0.03);
    int within1 = 0;
    bool finite = true;
    for (int i = 0; i < N; i++) {
        within1 += fabsf(u[i]) < 1.0f;
        finite &= isfinite(u[i]);
    }
    CHECK(finite);
    CHECK_NEAR((double)within1 / N, 0.6827, 0.02);
    /* odd sizes, float16 / bfloat16 / float64 (rand stays below 1 after rounding) */
    uint16_t hd[1001];
    tt h;
    OUT(h, EMBER_FLOAT16, hd, 1001);
    CHECK_OK(CALL("aten::rand.out", IL(size, 1001), &h.v, &h.v));
    bool ok = true;
    for (int i = 0; i < 1001; i++) {
        float f = ember_half_to_float(hd[i]);
        ok &= f >= 0.0f && f < 1.0f;
    }
    CHECK(ok);
    OUT(h, EMBER_BFLOAT16, hd, 1001);
    CHECK_STATUS(CALL("aten::rand.out", IL(size, 7, 11), &h.v, &h.v), EMBER_ERR_SHAPE_MISMATCH);
    OUT(h, EMBER_BFLOAT16, hd, 1001);
    CHECK_OK(CALL("aten::rand.out", IL(size, 1001), &h.v, &h.v));
    ok = true;
    for (int i = 0; i < 1001; i++) {
        float f = ember_bf16_to_float(hd[i]);
        ok &= f >= 0.0f && f < 1.0f;
    }
    CHECK(ok);
    double dd[3];
    tt d;
    OUT(d, EMBER_FLOAT64, dd, 3);
    CHECK_OK(CALL("aten::randn.out", IL(size, 3), &d.v, &d.v));
    CHECK(isfinite(dd[0]) && isfinite(dd[2]) && dd[0] != dd[1]);
    /* zero-size and 0-dim */
    tt z;
    float zd = -1;
    IN0(z, EMBER_FLOAT32, zd);
    il none_list;
    CHECK_OK(CALL("aten::rand.out", il_init(&none_list, NULL, 0), &z.v, &z.v));
    CHECK(zd >= 0 && zd < 1);
    OUT(o, EMBER_FLOAT32, u, 100, 200);
    CHECK_OK(CALL("aten::randn.out", IL(size, 0, 200), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 0, 200));
    /* errors: integer out, too big, negative size */
    int32_t id[4];
    tt io;
    OUT(io, EMBER_INT32, id, 4);
    CHECK_ERR(CALL("aten::rand.out", IL(size, 4), &io.v, &io.v), EMBER_ERR_NOT_SUPPORTED,
              "int32");
    CHECK_STATUS(CALL("aten::randn.out", IL(size, 4), &io.v, &io.v), EMBER_ERR_NOT_SUPPORTED);
    CHECK_STATUS(CALL("aten::rand.out", IL(size, 101, 200), &o.v, &o.v), EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::rand.out", IL(size, -1), &o.v, &o.v), EMBER_ERR_SHAPE_MISMATCH);
}

static bool is_perm_i64(const int64_t *p, int64_t n) {
    static bool seen[4096];
    if (n > 4096) return false;
    memset(seen, 0, sizeof seen);
    for (int64_t i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) return false;
        seen[p[i]] = true;
    }
    return true;
}

static void test_randperm(void) {
    check_section("randperm.out");
    static int64_t p[4096];
    tt o;
    OUT(o, EMBER_INT64, p, 4096);
    CHECK_OK(CALL("aten::randperm.out", v_int(1000), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1000) && is_perm_i64(p, 1000));
    int fixed = 0;
    for (int i = 0; i < 1000; i++) fixed += p[i] == i;
    CHECK(fixed < 10); /* a shuffle (expected 1 fixed point) */
    /* each position's value is uniform: position 0 over 4000 draws of n = 4 */
    int counts[4] = {0, 0, 0, 0};
    for (int t = 0; t < 4000; t++) {
        OUT(o, EMBER_INT64, p, 4096);
        if (CALL("aten::randperm.out", v_int(4), &o.v, &o.v) != EMBER_OK) break;
        counts[p[0]]++;
    }
    bool uniform = true;
    for (int k = 0; k < 4; k++) uniform &= counts[k] > 850 && counts[k] < 1150;
    CHECK_MSG(uniform, "%d %d %d %d", counts[0], counts[1], counts[2], counts[3]);
    /* small dtypes up to their limit */
    int8_t c[128];
    tt co;
    OUT(co, EMBER_INT8, c, 128);
    CHECK_OK(CALL("aten::randperm.out", v_int(128), &co.v, &co.v));
    int64_t wide[128];
    for (int i = 0; i < 128; i++) wide[i] = c[i];
    CHECK(is_perm_i64(wide, 128));
    CHECK_ERR(CALL("aten::randperm.out", v_int(129), &co.v, &co.v), EMBER_ERR_INVALID_ARGUMENT,
              "too large");
    static uint16_t h[2049];
    tt ho;
    OUT(ho, EMBER_FLOAT16, h, 2049);
    CHECK_OK(CALL("aten::randperm.out", v_int(2049), &ho.v, &ho.v));
    static int64_t hw[2049];
    for (int i = 0; i < 2049; i++) hw[i] = (int64_t)ember_half_to_float(h[i]);
    CHECK(is_perm_i64(hw, 2049));
    CHECK_STATUS(CALL("aten::randperm.out", v_int(2050), &ho.v, &ho.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    /* n = 0 and n = 1 */
    OUT(o, EMBER_INT64, p, 4096);
    CHECK_OK(CALL("aten::randperm.out", v_int(0), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 0));
    CHECK_OK(CALL("aten::randperm.out", v_int(1), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1) && p[0] == 0);
    /* errors: negative n, bool out, out too small */
    CHECK_ERR(CALL("aten::randperm.out", v_int(-3), &o.v, &o.v), EMBER_ERR_INVALID_ARGUMENT,
              "non-negative");
    uint8_t bd[4];
    tt bo;
    OUT(bo, EMBER_BOOL, bd, 4);
    CHECK_STATUS(CALL("aten::randperm.out", v_int(2), &bo.v, &bo.v), EMBER_ERR_NOT_SUPPORTED);
    CHECK_STATUS(CALL("aten::randperm.out", v_int(5000), &o.v, &o.v), EMBER_ERR_SHAPE_MISMATCH);
}

static void test_dropout(void) {
    check_section("native_dropout.out");
    enum { N = 10000 };
    static float x[N], y[N];
    static uint8_t m[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 17) - 8.0f;
    tt in, out, mask;
    tl ret;
    IN(in, EMBER_FLOAT32, x, 100, 100);
    OUT(out, EMBER_FLOAT32, y, 100, 100);
    OUT(mask, EMBER_BOOL, m, 100, 100);
    CHECK_OK(CALL("aten::native_dropout.out", &in.v, v_dbl(0.3), v_bool(true), &out.v, &mask.v,
                  pair(&ret, &out, &mask)));
    int kept = 0;
    bool ok = true;
    for (int i = 0; i < N; i++) {
        kept += m[i];
        float want = m[i] ? (float)(x[i] / 0.7) : 0.0f;
        ok &= fabsf(y[i] - want) <= 1e-6f * (1 + fabsf(want)) && m[i] <= 1;
    }
    CHECK(ok);
    CHECK_NEAR((double)kept / N, 0.7, 0.025); /* 5 standard errors */
    /* train None trains too; p = 0 keeps all, p = 1 drops all */
    CHECK_OK(CALL("aten::native_dropout.out", &in.v, v_dbl(0.0), v_none(), &out.v, &mask.v,
                  pair(&ret, &out, &mask)));
    ok = true;
    for (int i = 0; i < N; i++) ok &= m[i] == 1 && y[i] == x[i];
    CHECK(ok);
    CHECK_OK(CALL("aten::native_dropout.out", &in.v, v_dbl(1.0), v_bool(true), &out.v, &mask.v,
                  pair(&ret, &out, &mask)));
    ok = true;
    for (int i = 0; i < N; i++) ok &= m[i] == 0 && y[i] == 0.0f;
    CHECK(ok);
    /* evaluation: a copy and an all-true mask, any dtype */
    int32_t ix[6] = {1, -2, 3, 0, 5, 6}, iy[6];
    uint8_t im[6];
    tt ii, io, imask;
    IN(ii, EMBER_INT32, ix, 2, 3);
    OUT(io, EMBER_INT32, iy, 2, 3);
    OUT(imask, EMBER_BOOL, im, 2, 3);
    CHECK_OK(CALL("aten::native_dropout.out", &ii.v, v_dbl(0.5), v_bool(false), &io.v, &imask.v,
                  pair(&ret, &io, &imask)));
    ok = true;
    for (int i = 0; i < 6; i++) ok &= iy[i] == ix[i] && im[i] == 1;
    CHECK(ok);
    /* a NaN input stays NaN whether kept or dropped */
    float nx[64], ny[64];
    uint8_t nm[64];
    for (int i = 0; i < 64; i++) nx[i] = NAN;
    tt ni, no, nmask;
    IN(ni, EMBER_FLOAT32, nx, 64);
    OUT(no, EMBER_FLOAT32, ny, 64);
    OUT(nmask, EMBER_BOOL, nm, 64);
    CHECK_OK(CALL("aten::native_dropout.out", &ni.v, v_dbl(0.5), v_bool(true), &no.v, &nmask.v,
                  pair(&ret, &no, &nmask)));
    ok = true;
    for (int i = 0; i < 64; i++) ok &= isnan(ny[i]);
    CHECK(ok);
    /* errors: int input when training, p out of range, mask dtype, out dtype, sizes */
    CHECK_ERR(CALL("aten::native_dropout.out", &ii.v, v_dbl(0.5), v_bool(true), &io.v, &imask.v,
                   pair(&ret, &io, &imask)),
              EMBER_ERR_NOT_SUPPORTED, "int32");
    CHECK_ERR(CALL("aten::native_dropout.out", &in.v, v_dbl(1.5), v_bool(true), &out.v, &mask.v,
                   pair(&ret, &out, &mask)),
              EMBER_ERR_INVALID_ARGUMENT, "p must be");
    CHECK_STATUS(CALL("aten::native_dropout.out", &in.v, v_dbl(NAN), v_bool(true), &out.v,
                      &mask.v, pair(&ret, &out, &mask)),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_ERR(CALL("aten::native_dropout.out", &in.v, v_dbl(0.5), v_bool(true), &out.v, &out.v,
                   pair(&ret, &out, &out)),
              EMBER_ERR_TYPE_MISMATCH, "bool");
    CHECK_STATUS(CALL("aten::native_dropout.out", &ii.v, v_dbl(0.5), v_bool(false), &out.v,
                      &imask.v, pair(&ret, &out, &imask)),
                 EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(CALL("aten::native_dropout.out", &in.v, v_dbl(0.5), v_bool(true), &out.v,
                      &imask.v, pair(&ret, &out, &imask)),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::native_dropout.out", &in.v, v_dbl(0.5), v_int(1), &out.v, &mask.v,
                      pair(&ret, &out, &mask)),
                 EMBER_ERR_INVALID_PROGRAM);
}

int main(void) {
    kc_init();

    test_unary();
    test_atan2();
    test_fmod();
    test_pow_scalar();
    test_clamp_tensor();
    test_fill();
    test_prod();
    test_var_out();
    test_sort();
    test_topk();
    test_nonzero();
    test_rand();
    test_randperm();
    test_dropout();
    return check_finish();
}
